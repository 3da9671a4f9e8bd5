//! Remaining pinned edge cases against the real binary: a platform that stops answering
//! WebSocket pings (2.4), NUL-heavy output near the frame limit (13.20), the command environment (JAIL_FILES_EXEC.md
//! 12.5), many invalid restores (13.18, observable part).

use std::collections::BTreeMap;
use std::time::Duration;
use std::time::Instant;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::messages::control::RestoreSession;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::values::RootGrant;
use shim_protocol::values::SessionId;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;

const SID: &str = "9a4c2f7e-5d3b-4e1a-8c6f-2b7d9e0a1c34";

fn shell(command: &str) -> Message {
    Message::ExecuteCommand(ExecuteCommand {
        command: Some(command.to_owned()),
        ..ExecuteCommand::default()
    })
}

#[tokio::test]
async fn unanswered_websocket_pings_make_the_daemon_reconnect() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_WS_PING_INTERVAL_SECONDS", "0.2");
    c.env("AUTOGPT_SHIM_WS_PONG_TIMEOUT_SECONDS", "1");
    let _child = c.spawn().unwrap();
    let first = env.next().await;
    // Answered pings keep the connection up past several pong deadlines.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    first.request(Message::Ping(Empty {}), T).await.unwrap();
    assert!(
        env.peer
            .next_connection(Duration::from_millis(10))
            .await
            .is_none(),
        "reconnected although pongs were answered"
    );
    // A hung platform: pings go unanswered, the daemon gives up and reconnects.
    let hung_at = Instant::now();
    first.stop_reading();
    let second = env.next().await;
    let waited = hung_at.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "reconnected before the pong deadline: {waited:?}"
    );
    assert_eq!(second.session_id.as_deref(), Some(SID));
    second.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
}

#[tokio::test]
async fn nul_heavy_command_output_is_bounded_below_the_frame_limit() {
    // 13.20: NUL escapes to six bytes in JSON, so 2 x 2 796 202 NULs would make a
    // COMMAND_RESULT far over 16 MiB. The output budget (JAIL_FILES_EXEC.md 12.7) keeps it
    // under the limit, so the platform gets the (truncated) result under the same id;
    // the ERROR replacement itself is unit-tested in shim-protocol (frame_tests.rs).
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = env.next().await;
    let r = conn
        .request_with_id(
            "big-1",
            shell("head -c 2796202 /dev/zero; head -c 2796202 /dev/zero >&2"),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.frame.id, "big-1");
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert!(c.output_truncated);
            assert_eq!(c.exit_code, 0);
        }
        other => panic!("{other:?}"),
    }
    // The connection is still usable.
    let r = conn.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    env.assert_no_violations();
}

#[tokio::test]
async fn commands_never_inherit_the_daemons_loader_or_secret_variables() {
    // JAIL_FILES_EXEC.md 12.5: the baseline keeps only an allowlist; the wire may set
    // anything (not a security boundary), and PYTHONIOENCODING is forced.
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("LD_LIBRARY_PATH", "/nonexistent-shim-ld-path");
    c.env("DYLD_INSERT_LIBRARIES", "/nonexistent-shim-dyld.dylib");
    c.env("SHIM_TEST_UNLISTED", "1");
    c.env("LC_ALL", "C");
    let _child = c.spawn().unwrap();
    let conn = env.next().await;
    let mut wire_env = BTreeMap::new();
    wire_env.insert("LD_FROM_WIRE".to_owned(), "kept".to_owned());
    wire_env.insert("PYTHONIOENCODING".to_owned(), "latin-1".to_owned());
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                argv: Some(vec!["env".to_owned()]),
                env: wire_env,
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    let out = match &r.frame.message {
        Message::CommandResult(c) => c.stdout.clone(),
        other => panic!("{other:?}"),
    };
    let names: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
    for dropped in [
        "LD_LIBRARY_PATH",
        "DYLD_INSERT_LIBRARIES",
        "SHIM_TEST_UNLISTED",
        "AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE",
        "AUTOGPT_SHIM_PLATFORM_WS_URL",
    ] {
        assert!(!names.contains(&dropped), "{dropped} leaked: {out}");
    }
    assert!(out.lines().any(|l| l == "LD_FROM_WIRE=kept"), "{out}");
    assert!(out.lines().any(|l| l == "PYTHONIOENCODING=utf-8"), "{out}");
    assert!(out.lines().any(|l| l == "LC_ALL=C"), "{out}");
    assert!(names.contains(&"PATH") && names.contains(&"HOME"), "{out}");
    env.assert_no_violations();
}

#[tokio::test]
async fn a_hundred_invalid_restores_leave_the_control_plane_working() {
    // 13.18, as far as it is observable from outside: each invalid grant is refused
    // with ROOT_GRANT_INVALID, and the daemon then still attaches and restores normally.
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_control(&[]);
    let conn = env.next().await;
    for i in 0..100 {
        let r = conn
            .request(
                Message::RestoreSession(RestoreSession {
                    session_id: SessionId::new(format!("bad-{i}")).unwrap(),
                    root_grant: RootGrant::new(format!("v1.not-a-grant-{i}")).unwrap(),
                }),
                T,
            )
            .await
            .unwrap();
        assert_eq!(error_code(&r.frame.message), "ROOT_GRANT_INVALID", "{i}");
    }
    let r = conn.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    env.assert_no_violations();
}
