//! Legacy direct mode (`--session-id`): one data connection, every data message type and
//! error path, limits, close codes, reconnects, revocation, shutdown.

use std::time::Duration;

use shim_platform_peer::AckConfig;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileDelete;
use shim_protocol::messages::files::FileList;
use shim_protocol::messages::files::FileMove;
use shim_protocol::messages::files::FileWrite;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::messages::handshake::RevokeReason;

use crate::suite::harness::Env;
use crate::suite::harness::MACHINE_ID;
use crate::suite::harness::T;
use crate::suite::harness::argv;
use crate::suite::harness::error_code;
use crate::suite::harness::finish;
use crate::suite::harness::ops;
use crate::suite::harness::pgrep;
use crate::suite::harness::raw_request;
use crate::suite::harness::read;
use crate::suite::harness::sleep_command;
use crate::suite::harness::start_marked_command;
use crate::suite::harness::stat;
use crate::suite::harness::wait_until;
use crate::suite::harness::with_op;
use crate::suite::harness::write;

const SID: &str = "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0aa";

#[tokio::test]
async fn files_end_to_end_with_audit_before_response() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    // HELLO (5.1): data capabilities, the canonical root, no directory_browse.
    assert_eq!(conn.hello.allowed_root.as_deref(), env.root.to_str());
    assert_eq!(conn.hello.machine_id, MACHINE_ID);
    assert_eq!(conn.hello.capabilities, vec![Capability::Files]);
    assert_eq!(conn.session_id.as_deref(), Some(SID));
    let root = env.root_str();
    let p = |name: &str| format!("{root}/{name}");

    // FILE_WRITE → ACK, then FILE_READ → FILE_CONTENTS.
    let r = conn
        .request(write(&p("notes/a.txt"), "hello"), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    assert_eq!(r.frame.pending_capacity, Some(4));
    let r = conn.request(read(&p("notes/a.txt")), T).await.unwrap();
    match &r.frame.message {
        Message::FileContents(c) => {
            assert_eq!(c.content, "hello");
            assert_eq!(c.size_bytes, 5);
        }
        other => panic!("{other:?}"),
    }
    // FILE_STAT existing and missing.
    let r = conn.request(stat(&p("notes/a.txt")), T).await.unwrap();
    match &r.frame.message {
        Message::FileStatResponse(s) => {
            assert!(s.exists);
            assert_eq!(s.size_bytes, Some(5));
            assert_eq!(s.path.as_deref(), Some(p("notes/a.txt").as_str()));
        }
        other => panic!("{other:?}"),
    }
    let r = conn.request(stat(&p("missing")), T).await.unwrap();
    match &r.frame.message {
        Message::FileStatResponse(s) => {
            assert!(!s.exists);
            assert!(s.path.is_none());
        }
        other => panic!("{other:?}"),
    }
    // FILE_LIST.
    let r = conn
        .request(
            Message::FileList(FileList {
                path: p("notes"),
                glob: None,
                recursive: false,
                include_hidden: false,
                max_entries: 1000,
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::FileListResponse(l) => {
            assert_eq!(l.entries.len(), 1);
            assert_eq!(l.entries[0].name, "a.txt");
        }
        other => panic!("{other:?}"),
    }
    // FILE_MOVE, then PATH_EXISTS without overwrite.
    let mv = |src: String, dst: String, overwrite: bool| {
        Message::FileMove(FileMove {
            src,
            dst,
            overwrite,
        })
    };
    let r = conn
        .request(mv(p("notes/a.txt"), p("b.txt"), false), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    conn.request(write(&p("c.txt"), "c"), T).await.unwrap();
    let r = conn
        .request(mv(p("b.txt"), p("c.txt"), false), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_EXISTS");
    match &r.frame.message {
        Message::Error(e) => {
            let d = e.details.as_ref().unwrap();
            assert_eq!(d["src"], p("b.txt").as_str());
            assert_eq!(d["dst"], p("c.txt").as_str());
        }
        _ => unreachable!(),
    }
    // FILE_DELETE: non-empty dir without recursive, missing path, then success.
    conn.request(write(&p("d/x"), "x"), T).await.unwrap();
    let del = |path: String, recursive: bool, missing_ok: bool| {
        Message::FileDelete(FileDelete {
            path,
            recursive,
            missing_ok,
        })
    };
    let r = conn.request(del(p("d"), false, false), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_NOT_EMPTY");
    let r = conn.request(del(p("nope"), false, false), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_NOT_FOUND");
    let r = conn.request(del(p("nope"), false, true), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    let r = conn.request(del(p("d"), true, false), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    assert!(!env.root.join("d").exists());
    // FILE_READ missing → PATH_NOT_FOUND with details.path.
    let r = conn.request(read(&p("gone.txt")), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_NOT_FOUND");
    // Escape attempts → PATH_OUTSIDE_ALLOWED_ROOT, audited as JAIL_VIOLATION.
    let r = conn.request(read("/etc/passwd"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");
    match &r.frame.message {
        Message::Error(e) => assert_eq!(e.details.as_ref().unwrap()["path"], "/etc/passwd"),
        _ => unreachable!(),
    }
    let r = conn
        .request(read(&format!("{root}/../x")), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");

    let records = env.audit_records();
    let o = ops(&records);
    assert_eq!(o[0], "SHIM_START");
    assert!(o.contains(&"WS_CONNECTED".to_owned()));
    assert!(o.contains(&"CONFIG_RELOADED".to_owned()));
    for op in [
        "FILE_WRITE",
        "FILE_READ",
        "FILE_STAT",
        "FILE_LIST",
        "FILE_MOVE",
        "FILE_DELETE",
        "JAIL_VIOLATION",
    ] {
        assert!(o.contains(&op.to_owned()), "{op} not audited: {o:?}");
    }
    let jv = with_op(&records, "JAIL_VIOLATION");
    assert_eq!(jv.len(), 2);
    assert_eq!(jv[0]["details"]["path"], "/etc/passwd");
    assert_eq!(jv[0]["details"]["attempted_op"], "FILE_READ");
    assert_eq!(jv[0]["session_id"], SID);
    env.assert_no_violations();

    let out = env.stop(child).await;
    assert!(out.contains("Shim stopped."), "{out}");
    let o = ops(&env.audit_records());
    assert_eq!(o.last().map(String::as_str), Some("SHIM_STOP"));
    env.verify_audit();
}

#[tokio::test]
async fn ping_capabilities_malformed_and_status() {
    let cfg = PeerConfig {
        ack: AckConfig {
            grant: Some(vec![]),
            ..AckConfig::default()
        },
        ..PeerConfig::default()
    };
    let env = Env::new(cfg).await;
    let mut c = env.legacy_command(SID, &["--enable-shell", "--enable-computer-use"]);
    c.env("AUTOGPT_SHIM_STATUS_INTERVAL_SECONDS", "0.5");
    // Frequent WebSocket pings: the peer's pongs keep the connection up.
    c.env("AUTOGPT_SHIM_WS_PING_INTERVAL_SECONDS", "0.1");
    c.env("AUTOGPT_SHIM_WS_PONG_TIMEOUT_SECONDS", "2");
    let child = c.spawn().unwrap();
    let conn = env.next().await;
    assert_eq!(
        conn.hello.capabilities,
        vec![Capability::Shell, Capability::Files]
    );
    // Computer use is enabled locally but not available in this build: not advertised.
    assert!(conn.hello.computer_use_features.is_empty() && conn.hello.screen_resolution.is_none());
    // PING → PONG with pending_capacity null.
    let r = conn.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    assert_eq!(r.frame.pending_capacity, None);
    // Nothing granted: FILE_STAT and EXECUTE_COMMAND → CAPABILITY_NOT_GRANTED (13.6).
    let root = env.root_str();
    let r = conn.request(stat(root), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    match &r.frame.message {
        Message::Error(e) => {
            let d = e.details.as_ref().unwrap();
            assert_eq!(d["capability"], "files");
            assert_eq!(d["required_capability"], "files");
            assert_eq!(d["granted_capabilities"], serde_json::json!([]));
        }
        _ => unreachable!(),
    }
    let r = conn.request(argv(&["true"]), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    // Control requests and computer use on a data connection.
    let r = conn
        .request(Message::DirectoryListRequest(Default::default()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    let r = conn
        .request(Message::CursorPositionRequest(Empty {}), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    // A malformed request with a usable id gets ERROR with that id (3.6).
    let r = conn
        .expect_raw_reply(
            "bad-1",
            MessageType::ExecuteCommand,
            r#"{"type":"EXECUTE_COMMAND","id":"bad-1","ts":1.0,"payload":{"command":"x","timeout_seconds":0}}"#,
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.frame.id, "bad-1");
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    // Frames without a usable id are dropped; the connection stays usable.
    conn.send_raw("not json").unwrap();
    conn.send_raw(r#"{"type":"NOPE","id":"x","ts":1,"payload":{}}"#)
        .unwrap();
    let r = conn.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    // STATUS arrives on its cadence.
    let s = conn.next_unsolicited(T).await.unwrap();
    match &s.message {
        Message::Status(st) => {
            assert_eq!(st.max_concurrent, 4);
            assert!(st.audit_log_bytes > 0);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.pending_capacity, Some(4));
    env.assert_no_violations();
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn commands_run_in_the_root_and_report_results() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = env.next().await;
    let r = conn.request(argv(&["pwd"]), T).await.unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert_eq!(c.stdout.trim(), env.root_str());
            assert_eq!(c.exit_code, 0);
            assert!(!c.timed_out);
        }
        other => panic!("{other:?}"),
    }
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("echo out; echo err >&2; exit 3".into()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => {
            assert_eq!(c.stdout, "out\n");
            assert_eq!(c.stderr, "err\n");
            assert_eq!(c.exit_code, 3);
        }
        other => panic!("{other:?}"),
    }
    // cwd outside the root → PATH_OUTSIDE_ALLOWED_ROOT; unknown program → SHELL_NOT_AVAILABLE.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                argv: Some(vec!["pwd".into()]),
                cwd: Some("/etc".into()),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");
    let r = conn
        .request(argv(&["definitely-not-a-program-xyz"]), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SHELL_NOT_AVAILABLE");
    // A timeout is a COMMAND_RESULT with timed_out.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                argv: Some(vec!["sleep".into(), "30".into()]),
                timeout_seconds: Some(1),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    match &r.frame.message {
        Message::CommandResult(c) => assert!(c.timed_out),
        other => panic!("{other:?}"),
    }
    let records = env.audit_records();
    let cmds = with_op(&records, "EXECUTE_COMMAND");
    assert!(cmds.len() >= 3, "{cmds:?}");
    assert_eq!(cmds[0]["details"]["argv"], serde_json::json!(["pwd"]));
    assert_eq!(cmds[0]["result"]["exit_code"], 0);
    env.assert_no_violations();
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn shell_disabled_locally_is_refused() {
    let env = Env::granting(&[Capability::Files]).await;
    let child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    let r = conn.request(argv(&["true"]), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "CAPABILITY_NOT_GRANTED");
    env.assert_no_violations();
    drop(conn);
    drop(child);
}

#[tokio::test]
async fn overload_with_max_concurrent_4_and_edge_status() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_MAX_CONCURRENT_COMMANDS", "10");
    let child = c.spawn().unwrap();
    let conn = std::sync::Arc::new(env.next().await);
    let mut slow = Vec::new();
    for _ in 0..4 {
        let conn = conn.clone();
        slow.push(tokio::spawn(async move {
            conn.request(sleep_command(2), T).await.unwrap()
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    assert_eq!(r.frame.pending_capacity, Some(0));
    match &r.frame.message {
        Message::Error(e) => assert_eq!(e.details.as_ref().unwrap()["max_concurrent"], 4),
        _ => unreachable!(),
    }
    let mut caps = Vec::new();
    for s in slow {
        let r = s.await.unwrap();
        assert_eq!(r.frame.message_type(), MessageType::CommandResult);
        caps.push(r.frame.pending_capacity.unwrap());
    }
    assert!(caps.iter().all(|c| (0..=4).contains(c)), "{caps:?}");
    // The full-to-free edge emits STATUS with a positive capacity.
    let s = conn.next_unsolicited(T).await.unwrap();
    assert_eq!(s.message_type(), MessageType::Status);
    assert!(s.pending_capacity.unwrap() >= 1);
    // Capacity is back.
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert_eq!(r.frame.pending_capacity, Some(4));
    env.assert_no_violations();
    drop(child);
}

/// File requests are answered by the thread that wrote their audit record, before their
/// task runs again; the request's slot must be free by then, or a platform that sends the
/// next request as soon as an answer arrives would be told `SHIM_OVERLOADED`.
#[tokio::test]
async fn file_requests_kept_at_max_concurrent_are_never_refused() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let conn = std::sync::Arc::new(env.next().await);
    let mut lanes = Vec::new();
    for lane in 0..4 {
        let (conn, root) = (conn.clone(), env.root_str().to_owned());
        lanes.push(tokio::spawn(async move {
            let mut caps = Vec::new();
            for i in 0..150 {
                let m = match i % 3 {
                    0 => stat(&root),
                    1 => write(&format!("{root}/lane{lane}.txt"), "x"),
                    _ => read(&format!("{root}/lane{lane}.txt")),
                };
                let r = conn.request(m, T).await.unwrap();
                assert!(
                    !matches!(r.frame.message, Message::Error(_)),
                    "lane {lane} request {i}: {:?}",
                    r.frame.message
                );
                caps.push(r.frame.pending_capacity.unwrap());
            }
            caps
        }));
    }
    for lane in lanes {
        let caps = lane.await.unwrap();
        assert!(caps.iter().all(|c| (0..=4).contains(c)), "{caps:?}");
    }
    env.assert_no_violations();
    drop(child);
}

#[tokio::test]
async fn reconnects_after_1011_with_a_fresh_hello() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let first = env.next().await;
    first.close(1011, "server error");
    let second = env.next().await;
    assert_eq!(second.session_id.as_deref(), Some(SID));
    let r = second.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    // Clean close (1000) reconnects too.
    second.close(1000, "");
    let third = env.next().await;
    third.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
    let records = env.audit_records();
    assert_eq!(
        ops(&records)
            .iter()
            .filter(|o| *o == "WS_CONNECTED")
            .count(),
        3
    );
    assert!(!ops(&records).contains(&"SESSION_REVOKED".to_owned()));
    drop(child);
}

async fn fatal_close(code: u16, reason: &str) {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    conn.close(code, "bye");
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 0, "{err}");
    env.assert_no_connection(Duration::from_millis(600)).await;
    let records = env.audit_records();
    let rev = with_op(&records, "SESSION_REVOKED");
    assert_eq!(rev.len(), 1);
    assert_eq!(rev[0]["details"]["source"], "ws_close_code");
    assert_eq!(rev[0]["details"]["close_code"], code);
    assert_eq!(rev[0]["details"]["reason"], reason);
    assert_eq!(ops(&records).last().map(String::as_str), Some("SHIM_STOP"));
    env.verify_audit();
}

#[tokio::test]
async fn close_4426_is_terminal() {
    fatal_close(4426, "protocol_version_mismatch").await;
}

#[tokio::test]
async fn close_4427_is_terminal() {
    fatal_close(4427, "session_taken_over").await;
}

#[tokio::test]
async fn close_4428_is_terminal() {
    fatal_close(4428, "session_revoked").await;
}

#[tokio::test]
async fn close_4429_is_terminal() {
    fatal_close(4429, "platform_shutdown").await;
}

#[tokio::test]
async fn session_revoked_closes_4428_and_stops() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    conn.revoke(RevokeReason::from_wire("future_reason_xyz"))
        .unwrap();
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 0, "{err}");
    env.assert_no_connection(Duration::from_millis(600)).await;
    let records = env.audit_records();
    let rev = with_op(&records, "SESSION_REVOKED");
    assert_eq!(rev.len(), 1, "{:?}", ops(&records));
    assert_eq!(rev[0]["details"]["source"], "frame");
    assert_eq!(rev[0]["details"]["reason"], "future_reason_xyz");
    env.assert_no_violations();
    env.verify_audit();
}

#[tokio::test]
async fn upgrade_403_is_terminal_77() {
    // The feature disabled for the user: HTTP 403 on upgrade, no refresh, exit 77.
    let env = Env::new(PeerConfig {
        feature_enabled: false,
        ..PeerConfig::default()
    })
    .await;
    let child = env.start_legacy(SID, &[]);
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 77, "{err}");
    assert!(err.contains("403"), "{err}");
}

#[tokio::test]
async fn sigkill_during_a_long_command_leaves_no_descendant() {
    let env = Env::new(PeerConfig::default()).await;
    let mut child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);
    let marker = format!("shim-orphan-check-{}", std::process::id());
    let _pending = start_marked_command(&conn, &marker).await;
    child.kill().await.unwrap();
    let _ = child.wait().await;
    wait_until("no descendant survives SIGKILL of the daemon", || {
        !pgrep(&marker)
    })
    .await;
}

#[tokio::test]
async fn max_concurrent_1_refuses_a_second_request_immediately() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_MAX_CONCURRENT", "1");
    let _child = c.spawn().unwrap();
    let conn = std::sync::Arc::new(env.next().await);
    let c2 = conn.clone();
    let slow = tokio::spawn(async move { c2.request(sleep_command(2), T).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let started = std::time::Instant::now();
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "not refused immediately"
    );
    assert_eq!(error_code(&r.frame.message), "SHIM_OVERLOADED");
    assert_eq!(r.frame.pending_capacity, Some(0));
    let done = slow.await.unwrap();
    assert_eq!(done.frame.message_type(), MessageType::CommandResult);
    assert_eq!(done.frame.pending_capacity, Some(1));
    let r = conn.request(stat(env.root_str()), T).await.unwrap();
    assert_eq!(r.frame.pending_capacity, Some(1));
    env.assert_no_violations();
}

#[tokio::test]
async fn a_command_cancelled_by_a_lost_connection_is_killed_and_audited() {
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = std::sync::Arc::new(env.next().await);
    let marker = format!("shim-cancel-check-{}", std::process::id());
    let _pending = start_marked_command(&conn, &marker).await;
    conn.close(1011, "server error");
    let _again = env.next().await;
    wait_until("the cancelled command is gone", || !pgrep(&marker)).await;
    let cancelled =
        |r: &serde_json::Value| r["op"] == "EXECUTE_COMMAND" && r["details"]["cancelled"] == true;
    wait_until("the cancellation is audited", || {
        env.audit_records().iter().any(cancelled)
    })
    .await;
    let rec = env.audit_records().into_iter().find(cancelled).unwrap();
    assert_eq!(rec["result"]["ok"], false);
    assert_eq!(rec["result"]["error_code"], "INTERNAL_ERROR");
    env.assert_no_violations();
}

#[tokio::test]
async fn repeated_4403_on_the_handshake_stops_with_77() {
    let mut bindings = std::collections::HashMap::new();
    bindings.insert(
        SID.to_owned(),
        (MACHINE_ID.to_owned(), "/somewhere/else".to_owned()),
    );
    let env = Env::new(PeerConfig {
        bindings,
        ..PeerConfig::default()
    })
    .await;
    let child = env.start_legacy(SID, &[]);
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 77, "{err}");
    assert!(err.contains("4403"), "{err}");
    let refusals = env
        .peer
        .rejections()
        .iter()
        .filter(|r| r.code == 4403)
        .count();
    assert_eq!(refusals, 3);
}

#[tokio::test]
async fn a_missing_allowed_root_refuses_to_start() {
    let env = Env::new(PeerConfig::default()).await;
    let missing = env.dir.path().join("missing");
    let mut c = env.command(&[
        "--allowed-root",
        missing.to_str().unwrap(),
        "start",
        "--session-id",
        SID,
    ]);
    let (exit, _, err) = finish(c.spawn().unwrap(), T).await;
    assert_eq!(exit, 78, "{err}");
    assert!(err.contains("Preflight failed"), "{err}");
    env.assert_no_connection(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn session_id_after_start_wins() {
    let env = Env::new(PeerConfig::default()).await;
    let root = env.root_str().to_owned();
    let mut c = env.command(&[
        "--allowed-root",
        &root,
        "--session-id",
        "before-start",
        "start",
        "--session-id",
        SID,
    ]);
    let _child = c.spawn().unwrap();
    let conn = env.next().await;
    assert_eq!(conn.session_id.as_deref(), Some(SID));
    // Only before `start`: kept.
    let env2 = Env::new(PeerConfig::default()).await;
    let root2 = env2.root.to_str().unwrap().to_owned();
    let mut c = env2.command(&[
        "--allowed-root",
        &root2,
        "--session-id",
        "before-start",
        "start",
    ]);
    let _child2 = c.spawn().unwrap();
    let conn2 = env2.next().await;
    assert_eq!(conn2.session_id.as_deref(), Some("before-start"));
}

#[tokio::test]
async fn an_audit_write_failure_stops_the_daemon_with_78() {
    let env = Env::new(PeerConfig::default()).await;
    // Run the daemon with a small file-size limit (SIGXFSZ ignored) so that appends to the
    // audit log start failing with EFBIG after a few records.
    let bin = env!("CARGO_BIN_EXE_autogpt-shim");
    let root = env.root_str().to_owned();
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec '{bin}' --allowed-root '{root}' start --session-id {SID}"
    );
    let c = env.command(&[]);
    let mut sh = tokio::process::Command::new("sh");
    sh.arg("-c").arg(&script).env_clear();
    for (k, v) in c.as_std().get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    sh.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = sh.spawn().unwrap();
    let conn = env.next().await;
    let mut answered = 0;
    for _ in 0..200 {
        match conn.request(stat(&root), Duration::from_secs(2)).await {
            Ok(_) => answered += 1,
            Err(_) => break,
        }
    }
    assert!(answered < 200, "the audit log never filled up");
    let closed = conn.closed(T).await.unwrap();
    assert_eq!(closed.map(|c| c.0), Some(1011));
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 78, "{err}");
    // The failed append was undone: the log ends at a whole record and verifies.
    env.verify_audit();
    env.assert_no_connection(Duration::from_millis(300)).await;
    env.assert_no_violations();
}

async fn refused_ack(ack: AckConfig, want_close: u16, want_exit: i32) {
    let env = Env::new(PeerConfig {
        ack,
        ..PeerConfig::default()
    })
    .await;
    let child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    let closed = conn.closed(T).await.unwrap();
    assert_eq!(closed.as_ref().map(|c| c.0), Some(want_close), "{closed:?}");
    assert!(closed.unwrap().1.len() <= 123);
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, want_exit, "{err}");
    // Terminal: no reconnect.
    env.assert_no_connection(Duration::from_millis(600)).await;
}

#[tokio::test]
async fn hello_ack_with_the_wrong_id_is_refused_with_4400() {
    refused_ack(
        AckConfig {
            wrong_id: true,
            ..AckConfig::default()
        },
        4400,
        1,
    )
    .await;
}

#[tokio::test]
async fn hello_ack_granting_an_unadvertised_capability_is_refused() {
    refused_ack(
        AckConfig {
            grant: Some(vec![Capability::Files, Capability::Shell]),
            ..AckConfig::default()
        },
        4400,
        1,
    )
    .await;
}

#[tokio::test]
async fn hello_ack_with_another_major_version_stops_cleanly() {
    refused_ack(
        AckConfig {
            protocol_version: Some("2.0".into()),
            ..AckConfig::default()
        },
        4426,
        0,
    )
    .await;
}

#[tokio::test]
async fn upgrade_401_uses_a_token_stored_meanwhile_without_refreshing() {
    let env = Env::new(PeerConfig::default()).await;
    let child = env.start_legacy(SID, &[]);
    let first = env.next().await;
    // Another process (e.g. `auth`) stored a new access token; the old one stops working.
    env.store_access_token("rotated-access-token");
    env.peer
        .configure(|c| c.tokens = vec!["rotated-access-token".into()]);
    first.close(4401, "Access token expired");
    let second = env.next().await;
    second.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(env.peer.token_requests("refresh_token"), 0);
    assert!(env.peer.rejections().iter().any(|r| r.code == 401));
    env.assert_no_violations();
    drop(child);
}

/// Every request type this build does not serve, with a minimal valid payload.
const UNSERVED: &[(&str, &str, &str)] = &[
    ("SCREENSHOT_REQUEST", "{}", "computer_use"),
    ("INPUT_ACTION", r#"{"action":"wait"}"#, "computer_use"),
    ("CURSOR_POSITION_REQUEST", "{}", "computer_use"),
    ("DISPLAY_INFO_REQUEST", "{}", "computer_use"),
    ("WINDOW_LIST_REQUEST", "{}", "computer_use"),
    ("WINDOW_FOCUS", r#"{"window_id":"win_1"}"#, "computer_use"),
    ("APP_LIST_REQUEST", "{}", "computer_use"),
    ("APP_LAUNCH", "{}", "computer_use"),
    ("CLIPBOARD_READ", "{}", "computer_use"),
    ("CLIPBOARD_WRITE", r#"{"content":"x"}"#, "computer_use"),
    (
        "PERMISSIONS_CHECK_REQUEST",
        r#"{"permissions":[]}"#,
        "computer_use",
    ),
    (
        "LOCAL_LLM_COMPLETION",
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        "local_llm",
    ),
    (
        "REQUEST_RECORDING_CONSENT",
        r#"{"mode":"demonstration"}"#,
        "recording",
    ),
    ("STOP_RECORDING", r#"{"recording_id":"rec_1"}"#, "recording"),
    (
        "RECORDING_FETCH",
        r#"{"recording_id":"rec_1"}"#,
        "recording",
    ),
];

#[tokio::test]
async fn unserved_request_types_get_the_specified_refusal() {
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_legacy(SID, &[]);
    let conn = env.next().await;
    for (i, (ty, payload, cap)) in UNSERVED.iter().enumerate() {
        let id = format!("u-{i}");
        let r = raw_request(&conn, &id, ty, payload).await;
        assert_eq!(
            error_code(&r.frame.message),
            "CAPABILITY_NOT_GRANTED",
            "{ty}"
        );
        match &r.frame.message {
            Message::Error(e) => {
                assert_eq!(
                    e.details.as_ref().unwrap()["required_capability"],
                    *cap,
                    "{ty}"
                );
            }
            _ => unreachable!(),
        }
    }
    env.assert_no_violations();
}

#[tokio::test]
async fn file_and_command_error_paths() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &["--enable-shell"]);
    c.env("AUTOGPT_SHIM_MAX_FILE_SIZE_BYTES", "16");
    let _child = c.spawn().unwrap();
    let conn = env.next().await;
    let root = env.root_str();
    // Over max_file_size_bytes (min(local 16, platform 10 MiB)).
    let r = conn
        .request(write(&format!("{root}/big"), &"x".repeat(17)), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "FILE_TOO_LARGE");
    // Bad base64.
    let r = conn
        .request(
            Message::FileWrite(FileWrite {
                path: format!("{root}/b64"),
                content: "!!!".into(),
                encoding: ContentEncoding::Base64,
                create_parents: true,
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    // Reading a directory.
    let r = conn.request(read(root), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    // NUL in a path.
    let r = conn
        .request(read(&format!("{root}/a\u{0}b")), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_INVALID_CHARS");
    // Neither command nor argv.
    let r = conn
        .request(Message::ExecuteCommand(ExecuteCommand::default()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    // Both.
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some("true".into()),
                argv: Some(vec!["true".into()]),
                ..ExecuteCommand::default()
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    // An unknown shell is an invalid frame, answered with its id.
    let r = conn
        .expect_raw_reply(
            "sh-1",
            MessageType::ExecuteCommand,
            r#"{"type":"EXECUTE_COMMAND","id":"sh-1","ts":1.0,"payload":{"command":"true","shell":"fish"}}"#,
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
    env.assert_no_violations();
}

#[tokio::test]
async fn a_clean_disconnect_waits_the_base_delay() {
    let env = Env::new(PeerConfig::default()).await;
    let mut c = env.legacy_command(SID, &[]);
    c.env("AUTOGPT_SHIM_RECONNECT_BASE_DELAY", "1.0");
    c.env("AUTOGPT_SHIM_RECONNECT_MAX_DELAY", "5.0");
    let _child = c.spawn().unwrap();
    let first = env.next().await;
    let closed_at = std::time::Instant::now();
    first.close(1000, "");
    let second = env.next().await;
    let waited = closed_at.elapsed();
    assert!(
        waited >= Duration::from_millis(950),
        "reconnected after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(4),
        "reconnected after {waited:?}"
    );
    second.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_file_operation_cancelled_by_a_lost_connection_is_still_audited() {
    // Blocking file work cannot be aborted: a write the connection no longer waits for still
    // lands on disk, so it must still be audited (with `cancelled: true`), and exactly once.
    use rustix::fs::inotify;
    let env = Env::new(PeerConfig::default()).await;
    let dir = std::path::Path::new(env.root_str()).join("big");
    std::fs::create_dir(&dir).unwrap();
    // The jail writes through a temporary file in the target's directory: its creation
    // proves the operation has started; 8 MiB and an fsync keep it running a while after.
    let ino =
        inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
    inotify::add_watch(&ino, &dir, inotify::WatchFlags::CREATE).unwrap();
    let child = env.start_legacy(SID, &[]);
    let conn = std::sync::Arc::new(env.next().await);
    let id = "5f0c2a4e-3c7d-4b8e-9a1f-6d2e8b7c4a01";
    let target = dir.join("big.txt");
    let content = "x".repeat(8 << 20);
    let c = conn.clone();
    let msg = write(target.to_str().unwrap(), &content);
    let _pending = tokio::spawn(async move {
        let _ = c.request_with_id(id, msg, T).await;
    });
    let deadline = std::time::Instant::now() + T;
    let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
    while inotify::Reader::new(&ino, &mut buf).next().is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon never started writing"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    conn.close(1011, "server error");
    let _again = env.next().await;
    let ours = |r: &serde_json::Value| r["request_id"] == id;
    wait_until("the cancelled write is audited", || {
        env.audit_records().iter().any(ours)
    })
    .await;
    let records: Vec<_> = env.audit_records().into_iter().filter(ours).collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["op"], "FILE_WRITE");
    assert_eq!(records[0]["details"]["cancelled"], true, "{records:?}");
    assert_eq!(records[0]["details"]["path"], target.to_str().unwrap());
    assert_eq!(records[0]["result"]["ok"], true);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 8 << 20);
    env.stop(child).await;
    env.verify_audit();
    env.assert_no_violations();
}

/// permessage-deflate (issue 29): with the platform accepting it, a 1 MB text `FILE_READ`
/// reaches the platform compressed; `websocket_compression = false`, or a platform that
/// declines, sends it plain. Bytes counted as the peer reads them off its socket.
#[tokio::test]
async fn large_frames_travel_compressed_unless_turned_off() {
    let text: String = (0..20_000)
        .map(|i| {
            format!(
                "2026-12-05T00:00:{:02} INFO worker-{} request {i} done in {}ms\n",
                i % 60,
                i % 8,
                i % 250
            )
        })
        .collect();
    let mut wire = Vec::new();
    for (setting, peer_accepts) in [("true", true), ("false", true), ("true", false)] {
        let mut config = PeerConfig::default();
        if !peer_accepts {
            config.compression = None;
        }
        let env = Env::new(config).await;
        let mut cmd = env.legacy_command(SID, &[]);
        cmd.env("AUTOGPT_SHIM_WEBSOCKET_COMPRESSION", setting);
        let child = cmd.spawn().unwrap();
        let conn = env.next().await;
        let path = format!("{}/big.log", env.root_str());
        std::fs::write(&path, &text).unwrap();
        let before = conn.bytes_received();
        let r = conn.request(read(&path), T).await.unwrap();
        match &r.frame.message {
            Message::FileContents(c) => assert_eq!(c.content, text),
            other => panic!("{other:?}"),
        }
        wire.push(conn.bytes_received() - before);
        env.stop(child).await;
        env.assert_no_violations();
    }
    let len = text.len() as u64;
    assert!(wire[0] < len / 4, "compressed: {} bytes for {len}", wire[0]);
    assert!(wire[1] > len, "turned off: {} bytes for {len}", wire[1]);
    assert!(wire[2] > len, "declined: {} bytes for {len}", wire[2]);
}
