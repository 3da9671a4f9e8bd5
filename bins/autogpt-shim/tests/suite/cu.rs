//! Computer use through the real binary and the platform peer on a private Xvfb
//! (COMPUTER_USE_HW.md 11.2): advertisement, gating, screenshot, typing, click, window
//! list and clipboard, with independent evidence and the audit log checked.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use serde_json::json;
use shim_cu::testing::Recorder;
use shim_cu::testing::Xvfb;
use shim_cu::testing::run;
use shim_cu::testing::wait_for;
use shim_platform_peer::AckConfig;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::messages::handshake::Empty;
use tokio::process::Child;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::ask;
use crate::suite::harness::error_code;
use crate::suite::harness::stop_cleanly;
use crate::suite::harness::wire as msg;

const SID: &str = "cu-session-0001";

fn start(env: &Env, vars: &[(&str, &str)], flags: &[&str]) -> Child {
    let root = env.root.to_str().unwrap().to_owned();
    let mut args = vec![
        "--allowed-root",
        root.as_str(),
        "start",
        "--session-id",
        SID,
        "--enable-computer-use",
    ];
    args.extend_from_slice(flags);
    let mut c = env.command(&args);
    for (k, v) in vars {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

async fn stop(child: Child) {
    stop_cleanly(child).await;
}

fn payload(v: &Value) -> &Value {
    &v["payload"]
}

#[tokio::test]
async fn advertisement_follows_the_session_and_the_window_manager() {
    let x = Xvfb::start(1280, 800);
    let env = Env::new(PeerConfig::default()).await;
    let d = x.display.as_str();

    // X11 without a window manager, clipboard off.
    let child = start(&env, &[("DISPLAY", d)], &[]);
    let conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));
    assert_eq!(conn.hello.screen_resolution, Some([1280, 800]));
    assert_eq!(
        conn.hello.computer_use_features_coarse,
        ["screenshot", "input", "apps", "permissions"]
    );
    assert_eq!(
        conn.hello.computer_use_features,
        [
            "screenshot.region",
            "input.click.modifiers",
            "input.click.button",
            "input.drag.path",
            "input.key.hold",
            "input.mouse.down_up",
            "input.scroll.amount",
            "input.wait",
            "cursor.position",
            "display.info",
            "app.list",
            "app.launch",
            "permissions.check"
        ]
    );
    let r = ask(&conn, "WINDOW_LIST_REQUEST", json!({})).await;
    assert_eq!(r["type"], "ERROR");
    stop(child).await;

    // With openbox and the clipboard.
    x.openbox();
    let child = start(&env, &[("DISPLAY", d)], &["--enable-clipboard"]);
    let conn = env.next().await;
    assert_eq!(
        conn.hello.computer_use_features_coarse,
        [
            "screenshot",
            "input",
            "apps",
            "permissions",
            "windows",
            "clipboard"
        ]
    );
    // 2.2: the base list, then the window and clipboard flags, in that order.
    assert_eq!(
        conn.hello.computer_use_features[12..],
        [
            "permissions.check",
            "window.list",
            "window.focus",
            "clipboard.read",
            "clipboard.write"
        ]
    );
    assert_eq!(conn.hello.computer_use_features.len(), 17);
    assert!(
        conn.hello
            .computer_use_features
            .contains(&"window.focus".to_owned())
    );
    assert!(
        !conn
            .hello
            .computer_use_features
            .contains(&"screenshot.window".to_owned())
    );
    stop(child).await;

    // Wayland, even with a working DISPLAY: nothing.
    for vars in [
        vec![("DISPLAY", d), ("WAYLAND_DISPLAY", "wayland-0")],
        vec![("DISPLAY", d), ("XDG_SESSION_TYPE", "wayland")],
    ] {
        let child = start(&env, &vars, &["--enable-clipboard"]);
        let conn = env.next().await;
        assert!(
            !conn.hello.capabilities.contains(&Capability::ComputerUse),
            "{vars:?}"
        );
        assert!(conn.hello.computer_use_features.is_empty());
        assert!(conn.hello.computer_use_features_coarse.is_empty());
        assert_eq!(conn.hello.screen_resolution, None);
        stop(child).await;
    }
}

#[tokio::test]
async fn gating_control_connection_and_missing_grant() {
    let x = Xvfb::start(640, 480);
    // Data connection without the grant: CAPABILITY_NOT_GRANTED with sorted grants.
    let env = Env::new(PeerConfig {
        ack: AckConfig {
            grant: Some(vec![Capability::Files]),
            ..AckConfig::default()
        },
        ..PeerConfig::default()
    })
    .await;
    let child = start(&env, &[("DISPLAY", x.display.as_str())], &[]);
    let conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));
    let r = conn
        .request(Message::CursorPositionRequest(Empty {}), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    let Message::Error(e) = &r.frame.message else {
        unreachable!()
    };
    let d = e.details.as_ref().unwrap();
    assert_eq!(d["required_capability"], "computer_use");
    assert_eq!(d["granted_capabilities"], json!(["files"]));
    stop(child).await;
    let records = env.audit_records();
    assert!(
        !records.iter().any(|r| r["op"] == "CURSOR_POSITION_REQUEST"),
        "gate refusals are not audited"
    );

    // Control connection: FEATURE_NOT_SUPPORTED with the specified message.
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.command(&["start", "--enable-computer-use"]);
    c.env("DISPLAY", &x.display);
    let child = c.spawn().unwrap();
    let conn = env.next().await;
    assert!(
        conn.hello.capabilities.contains(&Capability::ComputerUse),
        "shown in the machine list"
    );
    let r = conn
        .request(msg("SCREENSHOT_REQUEST", json!({})), T)
        .await
        .unwrap();
    let Message::Error(e) = &r.frame.message else {
        panic!("{:?}", r.frame.message)
    };
    assert_eq!(e.code.as_str(), "FEATURE_NOT_SUPPORTED");
    assert_eq!(
        e.message,
        "Execution operations require an activated per-session data connection."
    );
    assert!(e.details.is_none());
    stop(child).await;
}

#[tokio::test]
async fn screenshot_typing_click_windows_and_clipboard_through_the_daemon() {
    let x = Xvfb::start(1280, 800);
    x.openbox();
    run(&x.display, "xsetroot", &["-solid", "#ff0000"]);
    let env = Env::new(PeerConfig::default()).await;
    let sink = env.dir.path().join("sink.txt");
    let cmd = format!("cat > '{}'", sink.display());
    x.spawn(
        "xterm",
        &[
            "-T",
            "sinkwin",
            "-geometry",
            "60x10+700+500",
            "-e",
            "sh",
            "-c",
            &cmd,
        ],
    );
    wait_for(T, || sink.exists().then_some(())).expect("sink");
    // The private display is configured, not inherited: DISPLAY stays unset.
    let child = start(
        &env,
        &[
            ("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", x.display.as_str()),
            (
                "AUTOGPT_SHIM_COMPUTER_USE_MASKED_REGIONS",
                r#"["0,0,50,40"]"#,
            ),
        ],
        &["--enable-clipboard"],
    );
    let conn = env.next().await;
    assert!(conn.hello.capabilities.contains(&Capability::ComputerUse));

    // Screenshot: red root, masked corner black.
    let r = ask(
        &conn,
        "SCREENSHOT_REQUEST",
        json!({"format": "png", "include_cursor": false}),
    )
    .await;
    assert_eq!(r["type"], "SCREENSHOT_RESPONSE", "{r}");
    let p = payload(&r);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(p["image_base64"].as_str().unwrap())
        .unwrap();
    let dec = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = |x: usize, y: usize| {
        let i = (y * info.width as usize + x) * 3;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    assert_eq!((info.width, info.height), (1280, 800));
    assert_eq!(px(10, 10), [0, 0, 0], "masked");
    assert_eq!(px(60, 50), [255, 0, 0]);
    assert_eq!(p["meta"], json!({"origin": [0, 0], "display_id": 0}));

    // Window list: the sink xterm with its title and pid.
    let r = ask(&conn, "WINDOW_LIST_REQUEST", json!({})).await;
    let windows = payload(&r)["windows"].as_array().unwrap().clone();
    let w = windows
        .iter()
        .find(|w| w["title"] == "sinkwin")
        .expect("sink listed")
        .clone();
    assert!(w["pid"].as_i64().unwrap() > 0);
    let id = w["window_id"].as_str().unwrap().to_owned();
    let r = ask(&conn, "WINDOW_FOCUS", json!({"window_id": id})).await;
    assert_eq!(r["type"], "ACK");

    // Typing into the focused sink.
    let r = ask(
        &conn,
        "INPUT_ACTION",
        json!({"action": "type", "text": "typed secret 42"}),
    )
    .await;
    assert_eq!(r["type"], "ACK", "{r}");
    ask(
        &conn,
        "INPUT_ACTION",
        json!({"action": "key", "key": "enter"}),
    )
    .await;
    ask(
        &conn,
        "INPUT_ACTION",
        json!({"action": "key", "key": "ctrl+d"}),
    )
    .await;
    let got = wait_for(T, || {
        let s = std::fs::read_to_string(&sink).ok()?;
        s.ends_with('\n').then_some(s)
    });
    assert_eq!(got.as_deref(), Some("typed secret 42\n"));

    // Click: seen by the recorder.
    let rec = Recorder::start(&x.display, [100, 100, 300, 200]);
    let r = ask(
        &conn,
        "INPUT_ACTION",
        json!({"action": "left_click", "coordinate": [150, 160]}),
    )
    .await;
    assert_eq!(r["type"], "ACK");
    let ev = rec.wait(T, |e| e.iter().any(|e| e.kind == "button_release"));
    let press = ev.iter().find(|e| e.kind == "button_press").expect("press");
    assert_eq!((press.detail, press.root), (1, [150, 160]));
    let r = ask(
        &conn,
        "INPUT_ACTION",
        json!({"action": "left_click", "coordinate": [1280, 0]}),
    )
    .await;
    assert_eq!(r["type"], "ERROR");
    assert_eq!(payload(&r)["code"], "INPUT_OUT_OF_BOUNDS");
    assert_eq!(
        payload(&r)["details"],
        json!({"requested_coordinate": [1280, 0], "displays": [{"index": 0, "origin": [0, 0], "size": [1280, 800]}]})
    );

    // Clipboard: write, independent read, writeback read.
    let r = ask(&conn, "CLIPBOARD_WRITE", json!({"content": "clip secret"})).await;
    assert_eq!(r["type"], "ACK");
    assert_eq!(
        run(&x.display, "xclip", &["-selection", "clipboard", "-o"]),
        "clip secret"
    );
    let r = ask(&conn, "CLIPBOARD_READ", json!({})).await;
    assert_eq!(payload(&r)["content"], "clip secret");

    // A reconnect makes every window id stale.
    conn.close(1000, "");
    let conn = env.next().await;
    let r = ask(&conn, "WINDOW_FOCUS", json!({"window_id": w["window_id"]})).await;
    assert_eq!(payload(&r)["code"], "WINDOW_STALE");
    // ... but the writeback record survives the HELLO.
    let r = ask(&conn, "CLIPBOARD_READ", json!({})).await;
    assert_eq!(payload(&r)["content"], "clip secret");
    // Unknown action: FEATURE_NOT_SUPPORTED, not audited.
    let r = ask(&conn, "INPUT_ACTION", json!({"action": "warp"})).await;
    assert_eq!(payload(&r)["code"], "FEATURE_NOT_SUPPORTED");
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop(child).await;

    // The audit log: one record per request, never typed text, clipboard or titles.
    env.verify_audit();
    let text = std::fs::read_to_string(env.audit_log()).unwrap();
    for secret in ["typed secret", "clip secret", "sinkwin"] {
        assert!(!text.contains(secret), "{secret} leaked into the audit log");
    }
    let records = env.audit_records();
    let of = |op: &str| {
        records
            .iter()
            .filter(|r| r["op"] == op)
            .cloned()
            .collect::<Vec<_>>()
    };
    let typed = of("INPUT_ACTION")
        .into_iter()
        .find(|r| r["details"]["action"] == "type")
        .unwrap();
    assert_eq!(typed["details"]["text_length"], 15);
    assert_eq!(typed["result"]["ok"], true);
    let shot = &of("SCREENSHOT_REQUEST")[0];
    assert_eq!(shot["details"]["width"], 1280);
    assert_eq!(shot["details"]["format"], "png");
    let list = &of("WINDOW_LIST_REQUEST")[0];
    assert!(list["details"]["windows_returned"].as_u64().unwrap() >= 1);
    let oob = of("INPUT_ACTION")
        .into_iter()
        .find(|r| r["details"]["coordinate"] == json!([1280, 0]))
        .unwrap();
    assert_eq!(oob["result"]["error_code"], "INPUT_OUT_OF_BOUNDS");
    assert_eq!(
        of("CLIPBOARD_WRITE")[0]["details"],
        // [addition] A configured display is named in every record (docs/desktop.md).
        json!({"format": "text", "size_bytes": 11, "display": "named"})
    );
    assert_eq!(of("WINDOW_FOCUS").len(), 2);
    assert!(!records.iter().any(|r| r["details"]["action"] == "warp"));
}

#[tokio::test]
async fn hello_ack_file_size_limits_screenshots() {
    let x = Xvfb::start(640, 480);
    x.spawn("xterm", &["-geometry", "60x20+0+0"]);
    let env = Env::new(PeerConfig {
        ack: AckConfig {
            max_file_size_bytes: 1000,
            ..AckConfig::default()
        },
        ..PeerConfig::default()
    })
    .await;
    let child = start(&env, &[("DISPLAY", x.display.as_str())], &[]);
    let conn = env.next().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = ask(&conn, "SCREENSHOT_REQUEST", json!({"format": "png"})).await;
    assert_eq!(payload(&r)["code"], "FILE_TOO_LARGE", "{r}");
    let r = ask(
        &conn,
        "PERMISSIONS_CHECK_REQUEST",
        json!({"permissions": ["accessibility", "bogus"]}),
    )
    .await;
    assert_eq!(
        payload(&r)["permissions"],
        json!({"accessibility": "granted", "bogus": "not_applicable"})
    );
    stop(child).await;
    let records = env.audit_records();
    let shot = records
        .iter()
        .find(|r| r["op"] == "SCREENSHOT_REQUEST")
        .unwrap();
    assert_eq!(shot["result"]["error_code"], "FILE_TOO_LARGE");
    assert!(shot["details"]["image_bytes_returned"].as_u64().unwrap() > 1000);
    let perm = records
        .iter()
        .find(|r| r["op"] == "PERMISSIONS_CHECK_REQUEST")
        .unwrap();
    assert_eq!(
        perm["details"],
        json!({"permissions": ["accessibility", "bogus"]})
    );
}

#[tokio::test]
async fn an_action_cancelled_by_a_lost_connection_is_still_audited() {
    // The action runs on a blocking thread that a lost connection cannot stop: it still
    // happens, so it is still audited, once, with `cancelled: true`.
    let x = Xvfb::start(640, 480);
    let env = Env::new(PeerConfig::default()).await;
    let child = start(
        &env,
        &[("AUTOGPT_SHIM_COMPUTER_USE_DISPLAY", x.display.as_str())],
        &[],
    );
    let conn = std::sync::Arc::new(env.next().await);
    let id = "0d3c9b1e-7a2f-4c5d-8e6b-1f2a3b4c5d6e";
    let c = conn.clone();
    let wait = msg(
        "INPUT_ACTION",
        json!({"action": "wait", "duration_ms": 2000}),
    );
    let _pending = tokio::spawn(async move {
        let _ = c.request_with_id(id, wait, T).await;
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    conn.close(1011, "server error");
    let _again = env.next().await;
    let ours = |r: &Value| r["request_id"] == id;
    crate::suite::harness::wait_until("the cancelled action is audited", || {
        env.audit_records().iter().any(ours)
    })
    .await;
    let records: Vec<Value> = env.audit_records().into_iter().filter(ours).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["details"]["cancelled"], true, "{records:?}");
    assert_eq!(records[0]["result"]["ok"], true, "{records:?}");
    stop(child).await;
    env.verify_audit();
    env.assert_no_violations();
}
