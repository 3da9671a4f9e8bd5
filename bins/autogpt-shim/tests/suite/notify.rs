//! Desktop notifications for approvals, for real: a private D-Bus session bus
//! (`dbus-daemon --session`), a small notification server in the test (zbus serving
//! `org.freedesktop.Notifications`) that records each notification and presses its buttons,
//! and the real daemon and peer.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use tokio::sync::mpsc;
use zbus::zvariant::OwnedValue;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::with_op;

const NAME: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// What the server saw.
#[derive(Debug)]
enum Seen {
    Notify {
        id: u32,
        summary: String,
        body: String,
        actions: Vec<String>,
    },
    Close(u32),
}

/// The notification server: records, never shows anything.
struct Server {
    next: u32,
    seen: mpsc::UnboundedSender<Seen>,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Server {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &mut self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        self.next += 1;
        let _ = self.seen.send(Seen::Notify {
            id: self.next,
            summary,
            body,
            actions,
        });
        self.next
    }

    fn close_notification(&self, id: u32) {
        let _ = self.seen.send(Seen::Close(id));
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["actions".into(), "body".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "test-notifications".into(),
            "autogpt".into(),
            "1".into(),
            "1.2".into(),
        )
    }
}

/// A private session bus; killed on drop.
struct Bus {
    child: std::process::Child,
    address: String,
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[allow(clippy::print_stderr)] // the skip message is the point
fn session_bus() -> Option<Bus> {
    let spawned = std::process::Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--print-address=1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            // CI installs dbus (xtask TEST_PACKAGES) and sets SHIM_REQUIRE_KEYRING=1 for
            // its D-Bus tests; then a missing dbus-daemon fails the test.
            let required = std::env::var("SHIM_REQUIRE_KEYRING").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "SHIM_REQUIRE_KEYRING=1 but dbus-daemon cannot start: {e}"
            );
            eprintln!("skipping: dbus-daemon cannot start ({e}); apt-get install dbus");
            return None;
        }
    };
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Some(Bus {
        child,
        address: line.trim().to_owned(),
    })
}

fn shell(cmd: &str) -> Message {
    Message::ExecuteCommand(ExecuteCommand {
        command: Some(cmd.into()),
        ..ExecuteCommand::default()
    })
}

async fn next_seen(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(T, rx.recv())
        .await
        .expect("no notification")
        .unwrap()
}

#[tokio::test]
async fn approve_and_deny_from_the_desktop_notification() {
    let Some(bus) = session_bus() else { return };
    let (seen, mut rx) = mpsc::unbounded_channel();
    let server = zbus::connection::Builder::address(bus.address.as_str())
        .unwrap()
        .name(NAME)
        .unwrap()
        .serve_at(PATH, Server { next: 0, seen })
        .unwrap()
        .build()
        .await
        .unwrap();

    let env = Env::new(PeerConfig::default()).await;
    let policy = env.dir.path().join("policy.toml");
    std::fs::write(&policy, "default = \"prompt\"\n").unwrap();
    let mut c = env.legacy_command("notify-session", &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy)
        .env("AUTOGPT_SHIM_APPROVAL_TIMEOUT_SECONDS", "20")
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    let child = c.spawn().unwrap();
    let conn = Arc::new(env.next().await);

    // A prompted command shows a notification with Approve and Deny; Approve runs it.
    let ask = |cmd: &'static str| {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(shell(cmd), T).await })
    };
    let r = ask("touch from-notification '<b>&</b>'");
    let Seen::Notify {
        id,
        summary,
        body,
        actions,
    } = next_seen(&mut rx).await
    else {
        panic!("expected a notification")
    };
    assert!(summary.contains("approve command"), "{summary}");
    // The command is shown, escaped for services that read markup.
    assert!(
        body.contains("touch from-notification '&lt;b&gt;&amp;&lt;/b&gt;'"),
        "{body}"
    );
    assert_eq!(actions, ["approve", "Approve", "deny", "Deny"]);
    server
        .emit_signal(None::<&str>, PATH, NAME, "ActionInvoked", &(id, "approve"))
        .await
        .unwrap();
    let resp = r.await.unwrap().unwrap();
    assert!(
        matches!(resp.frame.message, Message::CommandResult(_)),
        "{:?}",
        resp.frame.message
    );
    assert!(env.root.join("from-notification").exists());
    // Answered: the notification is closed.
    assert!(matches!(next_seen(&mut rx).await, Seen::Close(n) if n == id));

    // Deny: refused, never run.
    let r = ask("touch denied-from-notification");
    let Seen::Notify { id, .. } = next_seen(&mut rx).await else {
        panic!("expected a notification")
    };
    // A button of another notification, and an unknown button, change nothing.
    server
        .emit_signal(
            None::<&str>,
            PATH,
            NAME,
            "ActionInvoked",
            &(id + 100, "approve"),
        )
        .await
        .unwrap();
    server
        .emit_signal(None::<&str>, PATH, NAME, "ActionInvoked", &(id, "default"))
        .await
        .unwrap();
    server
        .emit_signal(None::<&str>, PATH, NAME, "ActionInvoked", &(id, "deny"))
        .await
        .unwrap();
    let resp = r.await.unwrap().unwrap();
    assert_eq!(error_code(&resp.frame.message), "PERMISSION_PENDING");
    assert!(matches!(next_seen(&mut rx).await, Seen::Close(n) if n == id));

    // Answered from the CLI instead: the notification is closed too.
    let r = ask("touch from-cli");
    let Seen::Notify { id, .. } = next_seen(&mut rx).await else {
        panic!("expected a notification")
    };
    let (code, out, err) =
        crate::suite::harness::finish(env.command(&["approve", "3"]).spawn().unwrap(), T).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(matches!(
        r.await.unwrap().unwrap().frame.message,
        Message::CommandResult(_)
    ));
    assert!(matches!(next_seen(&mut rx).await, Seen::Close(n) if n == id));
    // A late click on it changes nothing (the command ran once).
    server
        .emit_signal(None::<&str>, PATH, NAME, "ActionInvoked", &(id, "deny"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    env.stop(child).await;

    let records = env.audit_records();
    let by: Vec<(String, String)> = with_op(&records, "COMMAND_POLICY")
        .iter()
        .map(|r| {
            (
                r["details"]["answer"].as_str().unwrap().to_owned(),
                r["details"]["decided_by"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("approved".to_owned(), "notification".to_owned()),
            ("denied".to_owned(), "notification".to_owned()),
            ("approved".to_owned(), "cli".to_owned()),
        ]
    );
    env.verify_audit();
}

#[tokio::test]
async fn without_a_notification_service_approvals_still_work() {
    let Some(bus) = session_bus() else { return };
    let env = Env::new(PeerConfig::default()).await;
    let policy = env.dir.path().join("policy.toml");
    std::fs::write(&policy, "default = \"prompt\"\n").unwrap();
    let root = env.root_str().to_owned();
    let mut c = env.command(&[
        "--log-level",
        "DEBUG",
        "--allowed-root",
        &root,
        "start",
        "--session-id",
        "notify-session",
        "--enable-shell",
    ]);
    c.env("AUTOGPT_SHIM_COMMAND_POLICY_FILE", &policy)
        .env("AUTOGPT_SHIM_APPROVAL_TIMEOUT_SECONDS", "20")
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    let child = c.spawn().unwrap();
    let conn = Arc::new(env.next().await);
    let r = {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(shell("touch no-service"), T).await })
    };
    for _ in 0..100 {
        let (_, out, _) = crate::suite::harness::finish(
            env.command(&["approvals", "--json"]).spawn().unwrap(),
            T,
        )
        .await;
        if out.contains("no-service") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, out, err) =
        crate::suite::harness::finish(env.command(&["approve", "1"]).spawn().unwrap(), T).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(matches!(
        r.await.unwrap().unwrap().frame.message,
        Message::CommandResult(_)
    ));
    let (_, stderr) = crate::suite::harness::stop_cleanly(child).await;
    assert!(
        stderr.contains("no desktop notification"),
        "expected the debug line: {stderr}"
    );
}
