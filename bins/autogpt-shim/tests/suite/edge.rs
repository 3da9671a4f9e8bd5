//! Remaining pinned edge cases against the real binary: a platform that stops answering
//! WebSocket pings (2.4), NUL-heavy output near the frame limit (13.20), the command environment (JAIL_FILES_EXEC.md
//! 12.5), many invalid restores (13.18), a replacement child that cannot start (13.17).

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
use tokio::io::AsyncBufReadExt;
use tokio::process::Child;

#[cfg(target_os = "linux")]
use crate::suite::control;
use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::stop_cleanly;
#[cfg(target_os = "linux")]
use crate::suite::harness::with_op;

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

/// Collects the daemon's stderr lines while it runs (so a chatty log never fills the pipe);
/// the task ends with the lines when the daemon closes stderr.
fn collect_stderr(child: &mut Child) -> tokio::task::JoinHandle<Vec<String>> {
    let stderr = child.stderr.take().unwrap();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let mut out = Vec::new();
        while let Ok(Some(l)) = lines.next_line().await {
            out.push(l);
        }
        out
    })
}

#[tokio::test]
async fn a_hundred_invalid_restores_leave_no_session_mutexes_behind() {
    // 13.18: each invalid grant is refused with ROOT_GRANT_INVALID, the daemon's DEBUG
    // line after each session request reports no session mutex left (the map itself is
    // unit-tested in shim-daemon's session_locks_tests.rs), and the daemon then still
    // answers normally.
    let env = Env::new(PeerConfig::default()).await;
    let mut child = env
        .command(&["--log-level", "DEBUG", "start"])
        .spawn()
        .unwrap();
    let log = collect_stderr(&mut child);
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
    stop_cleanly(child).await;
    let lines = log.await.unwrap();
    let served: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("session request served"))
        .collect();
    assert_eq!(served.len(), 100, "{lines:#?}");
    for l in served {
        assert!(l.ends_with("session_locks=0"), "{l}");
    }
    env.verify_audit();
}

/// Sets the daemon's soft limit of open files; returns the previous limits (prlimit is
/// Linux-only).
#[cfg(target_os = "linux")]
fn limit_open_files(child: &Child, current: u64) -> rustix::process::Rlimit {
    use rustix::process::Resource;
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    // The daemon inherited this process's limits and does not change them.
    let mine = rustix::process::getrlimit(Resource::Nofile);
    rustix::process::prlimit(
        Some(pid),
        Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(current),
            maximum: mine.maximum,
        },
    )
    .unwrap()
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_newer_grant_whose_child_cannot_start_keeps_the_old_child_and_binding() {
    // 13.17, second half, with a real fault: the daemon may not open any new file
    // descriptor (RLIMIT_NOFILE 0, so every open fails with EMFILE). Verifying the grant
    // needs none (lstat, realpath, access, HMAC), so the restore gets as far as opening
    // the new root for the replacement child, and fails there.
    let env = Env::new(PeerConfig::default()).await;
    let (child, conn, g1, g2) = control::two_revisions(&env).await;
    // Bring the session back at revision 1 with a live child (as a_newer_grant_replaces_a_live_child).
    conn.request(control::detach(control::SID), T)
        .await
        .unwrap();
    control::restored(&conn, g1.root_grant.as_str()).await;
    let old = env.next().await;
    assert_eq!(
        old.hello.allowed_root.as_deref(),
        Some(g1.allowed_root.as_str())
    );

    let saved = limit_open_files(&child, 0);
    let r = conn
        .request_with_id(
            "restore-without-fds",
            control::restore(control::SID, g2.root_grant.as_str()),
            T,
        )
        .await;
    let restored = rustix::process::prlimit(
        Some(rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap()),
        rustix::process::Resource::Nofile,
        saved,
    );
    restored.unwrap();
    let r = r.unwrap();
    // 9.7 step 4: a child that cannot start is INTERNAL_ERROR.
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    match &r.frame.message {
        Message::Error(e) => assert!(
            // The cause is named: the root exists, the descriptors ran out.
            e.message.starts_with("cannot open the session root")
                && e.message.contains("open files")
                && !e.message.contains("does not exist"),
            "{}",
            e.message
        ),
        _ => unreachable!(),
    }

    // The old child was never stopped: its connection still answers, and no child
    // connects again (a stopped-and-restarted child would).
    let r = old.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    env.assert_no_connection(Duration::from_secs(1)).await;
    // The new binding was not retained: the old grant is still the current one (a kept
    // revision 2 would answer SESSION_REVISION_MISMATCH), and it matches the live child,
    // which is kept.
    let s = control::restored(&conn, g1.root_grant.as_str()).await;
    assert_eq!(s.revision, 1);
    assert_eq!(s.allowed_root, g1.allowed_root);
    env.assert_no_connection(Duration::from_millis(500)).await;
    old.request(Message::Ping(Empty {}), T).await.unwrap();

    // With descriptors available again, the newer grant replaces the child as usual.
    assert_eq!(
        control::restored(&conn, g2.root_grant.as_str())
            .await
            .revision,
        2
    );
    old.closed(T).await.unwrap();
    let new = env.next().await;
    assert_eq!(
        new.hello.allowed_root.as_deref(),
        Some(g2.allowed_root.as_str())
    );
    env.assert_no_violations();
    env.stop(child).await;

    // The failed restore is audited, and the log verifies.
    env.verify_audit();
    let records = env.audit_records();
    let failed: Vec<_> = with_op(&records, "RESTORE_SESSION")
        .into_iter()
        .filter(|r| r["request_id"] == "restore-without-fds")
        .collect();
    assert_eq!(failed.len(), 1, "{records:#?}");
    assert_eq!(failed[0]["session_id"], control::SID);
    assert_eq!(failed[0]["result"]["ok"], false);
    assert_eq!(failed[0]["result"]["error_code"], "INTERNAL_ERROR");
}
