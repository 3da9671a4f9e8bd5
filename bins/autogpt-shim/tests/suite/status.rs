//! `autogpt-shim status [--json]` against a live daemon through the real binary and the
//! platform peer: connections and chats with their folders, operations in flight with their
//! age, the command rate window, the audit chain, the last errors; and the JSON's shape
//! against the documented example (docs/status.md).

use std::collections::BTreeMap;

use serde_json::Value;
use shim_platform_peer::PeerConfig;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::finish;
use crate::suite::harness::pgrep;
use crate::suite::harness::read;
use crate::suite::harness::start_marked_command;
use crate::suite::harness::wait_until;

const SID: &str = "status-session";

/// Runs `autogpt-shim ARGS` to the end.
async fn cli(env: &Env, args: &[&str]) -> (i32, String, String) {
    finish(env.command(args).spawn().unwrap(), T).await
}

async fn status_json(env: &Env) -> Value {
    let (code, out, err) = cli(env, &["status", "--json"]).await;
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

/// The documented example of `status --json`.
fn documented() -> Value {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/status.md"),
    )
    .unwrap();
    let start = "<!-- status-example -->\n```json\n";
    let a = page.find(start).unwrap() + start.len();
    let b = page[a..].find("```").unwrap() + a;
    serde_json::from_str(&page[a..b]).unwrap()
}

/// The shape of a JSON value: object keys with their shapes, the element shape of arrays
/// (from their first element), the type of scalars. `null` is "optional" and matches any
/// shape where the other side has a value.
#[derive(Debug, PartialEq)]
enum Shape {
    Object(BTreeMap<String, Shape>),
    Array(Option<Box<Shape>>),
    Scalar(&'static str),
    Null,
}

fn shape(v: &Value) -> Shape {
    match v {
        Value::Object(m) => Shape::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Shape::Array(a.first().map(|v| Box::new(shape(v)))),
        Value::String(_) => Shape::Scalar("string"),
        Value::Number(_) => Shape::Scalar("number"),
        Value::Bool(_) => Shape::Scalar("bool"),
        Value::Null => Shape::Null,
    }
}

/// Panics with the path of the first difference between the live and documented shapes.
fn same_shape(path: &str, live: &Shape, doc: &Shape) {
    match (live, doc) {
        (Shape::Null, _) | (_, Shape::Null) => {}
        (Shape::Object(a), Shape::Object(b)) => {
            let ka: Vec<_> = a.keys().collect();
            let kb: Vec<_> = b.keys().collect();
            assert_eq!(ka, kb, "the keys of {path} differ from docs/status.md");
            for (k, v) in a {
                same_shape(&format!("{path}.{k}"), v, &b[k]);
            }
        }
        (Shape::Array(Some(a)), Shape::Array(Some(b))) => same_shape(&format!("{path}[]"), a, b),
        (Shape::Array(_), Shape::Array(_)) => {}
        (a, b) => assert_eq!(a, b, "{path} has another type than in docs/status.md"),
    }
}

#[tokio::test]
async fn live_status_shows_the_chat_its_operations_the_rate_window_audit_and_errors() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);

    // A command in flight and an error.
    let marker = "status-test-marker-4711";
    let pending = start_marked_command(&conn, marker).await;
    let r = conn
        .request(read(&format!("{}/missing.txt", env.root_str())), T)
        .await
        .unwrap();
    assert_eq!(
        crate::suite::harness::error_code(&r.frame.message),
        "PATH_NOT_FOUND"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let s = status_json(&env).await;
    same_shape("status", &shape(&s), &shape(&documented()));
    assert_eq!(s["running"], true);
    assert_eq!(s["schema"], 1);
    assert_eq!(s["mode"], "legacy");
    assert_eq!(s["session_id"], SID);
    assert_eq!(s["paused"], false);
    let conns = s["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{s:#}");
    assert_eq!(conns[0]["kind"], "chat");
    assert_eq!(conns[0]["session_id"], SID);
    assert_eq!(conns[0]["folder"], env.root_str());
    assert_eq!(conns[0]["state"], "connected");
    assert_eq!(conns[0]["connects"], 1);
    let granted: Vec<&str> = conns[0]["granted_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(granted.contains(&"shell"), "{granted:?}");
    let ops = s["operations"].as_array().unwrap();
    let cmd = ops
        .iter()
        .find(|o| o["kind"] == "EXECUTE_COMMAND")
        .unwrap_or_else(|| panic!("no command in flight: {s:#}"));
    assert!(cmd["summary"].as_str().unwrap().contains(marker));
    assert_eq!(cmd["killable"], true);
    assert_eq!(cmd["session_id"], SID);
    assert!(cmd["age_ms"].as_u64().unwrap() >= 200, "{cmd}");
    assert_eq!(s["command_rate"]["running"], 1);
    assert_eq!(s["command_rate"]["in_window"], 1);
    assert_eq!(s["command_rate"]["window_seconds"], 60);
    assert_eq!(s["audit"]["chain"], "verified", "{s:#}");
    assert!(s["audit"]["last_seq"].as_u64().unwrap() >= 3);
    let errors = s["last_errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["code"] == "PATH_NOT_FOUND" && e["source"] == "FILE_READ"),
        "{errors:?}"
    );
    assert_eq!(s["sandbox"]["network"], "allow");

    // The age grows while it runs.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let later = status_json(&env).await;
    let cmd2 = later["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == cmd["id"])
        .unwrap();
    assert!(cmd2["age_ms"].as_u64().unwrap() > cmd["age_ms"].as_u64().unwrap());

    // The text form says the same for people.
    let (code, out, err) = cli(&env, &["status"]).await;
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "Daemon: running".to_owned(),
        format!("chat {SID} in {}: connected", env.root_str()),
        "EXECUTE_COMMAND".to_owned(),
        "Command rate: 1 of 60 in the last 60 s; 1 of 10 running".to_owned(),
        "chain verified".to_owned(),
        "PATH_NOT_FOUND".to_owned(),
    ] {
        assert!(out.contains(&line), "{line:?} not in:\n{out}");
    }

    // The command ends; the operation goes away.
    let (code, _, _) = cli(&env, &["kill"]).await;
    assert_eq!(code, 0);
    pending.await.unwrap();
    wait_until("the command is gone", || !pgrep(marker)).await;
    let s = status_json(&env).await;
    assert!(s["operations"].as_array().unwrap().is_empty(), "{s:#}");
    assert_eq!(s["command_rate"]["running"], 0);
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn status_json_without_a_daemon_says_not_running_with_exit_3() {
    let env = Env::new(PeerConfig::default()).await;
    let (code, out, err) = cli(&env, &["status", "--json"]).await;
    assert_eq!(code, 3, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, serde_json::json!({"schema": 1, "running": false}));
    let (code, out, _) = cli(&env, &["status"]).await;
    assert_eq!(code, 3);
    assert!(out.starts_with("Daemon: not running"), "{out}");
    // The console needs the daemon too.
    let (code, out, err) = cli(&env, &["console", "--no-open"]).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no daemon is running"), "{err}");
}

#[tokio::test]
async fn a_chat_attached_in_control_mode_shows_with_its_folder_then_connected() {
    let env = Env::new(PeerConfig::default()).await;
    let home = env.home_dirs(&["Site"]);
    let (child, conn) = crate::suite::control::start(&env, &[]).await;
    let a = crate::suite::control::browse_and_attach(&conn, "chat-1", "Site").await;
    let folder = std::fs::canonicalize(home.join("Site")).unwrap();
    assert_eq!(a.allowed_root, folder.to_str().unwrap());

    let s = status_json(&env).await;
    assert_eq!(s["mode"], "machine_control");
    let conns = s["connections"].as_array().unwrap();
    let control = conns.iter().find(|c| c["kind"] == "control").unwrap();
    assert_eq!(control["state"], "connected");
    let chat = conns.iter().find(|c| c["kind"] == "chat").unwrap();
    assert_eq!(chat["session_id"], "chat-1");
    assert_eq!(chat["folder"], folder.to_str().unwrap());
    assert_eq!(chat["state"], "attached");

    let _data = crate::suite::control::activate_child(&env, &conn, "chat-1").await;
    let mut state = String::new();
    for _ in 0..50 {
        let s = status_json(&env).await;
        let chat = s["connections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == "chat")
            .cloned()
            .unwrap();
        state = chat["state"].as_str().unwrap().to_owned();
        if state == "connected" {
            assert_eq!(chat["folder"], folder.to_str().unwrap());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(state, "connected");
    env.stop(child).await;
}
