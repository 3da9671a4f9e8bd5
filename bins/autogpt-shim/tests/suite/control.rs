//! Machine control mode end to end: browse, attach, activate, data on the child, detach,
//! restore, reconnect invalidation, idle stop, revocation.

use std::time::Duration;

use shim_platform_peer::Connection;
use shim_platform_peer::PeerConfig;
use shim_platform_peer::Response;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::hello_rules::Route;
use shim_protocol::messages::control::ActivateSession;
use shim_protocol::messages::control::AttachSession;
use shim_protocol::messages::control::DetachSession;
use shim_protocol::messages::control::DirectoryListRequest;
use shim_protocol::messages::control::DirectoryListResponse;
use shim_protocol::messages::control::RestoreSession;
use shim_protocol::messages::control::SessionAttached;
use shim_protocol::messages::control::SessionRestored;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::messages::handshake::RevokeReason;
use shim_protocol::values::BrowseToken;
use shim_protocol::values::RootGrant;
use shim_protocol::values::SessionId;
use tokio::process::Child;

use crate::suite::harness::Env;
use crate::suite::harness::MACHINE_ID;
use crate::suite::harness::T;
use crate::suite::harness::error_code;
use crate::suite::harness::finish;
use crate::suite::harness::ops;
use crate::suite::harness::raw_request;
use crate::suite::harness::stat;
use crate::suite::harness::with_op;

pub(super) const SID: &str = "0b6c7a52-4f3e-4d1c-9a35-0c1f8e2d7a11";

fn tok(s: &str) -> BrowseToken {
    BrowseToken::new(s).unwrap()
}

pub(super) fn list(browse: Option<&str>, dref: Option<&str>, cursor: Option<&str>) -> Message {
    Message::DirectoryListRequest(DirectoryListRequest {
        browse_id: browse.map(tok),
        directory_ref: dref.map(tok),
        cursor: cursor.map(tok),
    })
}

pub(super) fn listing(r: &Response) -> DirectoryListResponse {
    match &r.frame.message {
        Message::DirectoryListResponse(l) => l.clone(),
        other => panic!("expected DIRECTORY_LIST_RESPONSE, got {other:?}"),
    }
}

fn attach(sid: &str, browse: &str, dref: &str) -> Message {
    Message::AttachSession(AttachSession {
        session_id: SessionId::new(sid).unwrap(),
        browse_id: tok(browse),
        directory_ref: tok(dref),
        expected_connection_id: None,
    })
}

fn activate(sid: &str, revision: u64) -> Message {
    Message::ActivateSession(ActivateSession {
        session_id: SessionId::new(sid).unwrap(),
        revision,
    })
}

pub(super) fn restore(sid: &str, grant: &str) -> Message {
    Message::RestoreSession(RestoreSession {
        session_id: SessionId::new(sid).unwrap(),
        root_grant: RootGrant::new(grant).unwrap(),
    })
}

/// Restores `SID` with `grant` and returns the `SESSION_RESTORED` payload (panics on any
/// other answer).
pub(super) async fn restored(conn: &Connection, grant: &str) -> SessionRestored {
    let r = conn.request(restore(SID, grant), T).await.unwrap();
    match r.frame.message {
        Message::SessionRestored(s) => s,
        other => panic!("expected SESSION_RESTORED, got {other:?}"),
    }
}

pub(super) fn detach(sid: &str) -> Message {
    Message::DetachSession(DetachSession {
        session_id: SessionId::new(sid).unwrap(),
    })
}

async fn control_conn(env: &Env) -> Connection {
    let c = env.next().await;
    assert_eq!(c.route, Route::Control);
    c
}

/// Starts the daemon in control mode and waits for its control connection.
pub(super) async fn start(env: &Env, extra_env: &[(&str, &str)]) -> (Child, Connection) {
    let child = env.start_control(extra_env);
    (child, control_conn(env).await)
}

/// Activates revision 1 of `sid` and waits for its child's data connection.
pub(super) async fn activate_child(env: &Env, conn: &Connection, sid: &str) -> Connection {
    let r = conn.request(activate(sid, 1), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
    env.next().await
}

/// Starts the daemon, then attaches `SID` to folder A (revision 1) and re-attaches it to
/// folder B (revision 2, 13.12); returns both attachments.
pub(super) async fn two_revisions(
    env: &Env,
) -> (Child, Connection, SessionAttached, SessionAttached) {
    env.home_dirs(&["A", "B"]);
    let (child, conn) = start(env, &[]).await;
    let g1 = browse_and_attach(&conn, SID, "A").await;
    let g2 = browse_and_attach(&conn, SID, "B").await;
    assert_eq!(g2.revision, 2);
    assert_ne!(g1.allowed_root, g2.allowed_root);
    (child, conn, g1, g2)
}

/// Browses home → `name`, attaches `sid` there.
pub(super) async fn browse_and_attach(conn: &Connection, sid: &str, name: &str) -> SessionAttached {
    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    let home = &top.entries[0];
    let l = listing(
        &conn
            .request(
                list(
                    Some(top.browse_id.as_str()),
                    Some(home.directory_ref.as_str()),
                    None,
                ),
                T,
            )
            .await
            .unwrap(),
    );
    let target = l
        .entries
        .iter()
        .find(|e| e.name == name)
        .expect("folder listed");
    let r = conn
        .request(
            attach(sid, l.browse_id.as_str(), target.directory_ref.as_str()),
            T,
        )
        .await
        .unwrap();
    match r.frame.message {
        Message::SessionAttached(a) => a,
        other => panic!("expected SESSION_ATTACHED, got {other:?}"),
    }
}

#[tokio::test]
async fn control_connection_refuses_execution_and_answers_ping() {
    let env = Env::new(PeerConfig::default()).await;
    let (child, conn) = start(&env, &[]).await;
    assert_eq!(conn.hello.allowed_root, None);
    assert!(
        conn.hello
            .capabilities
            .contains(&Capability::DirectoryBrowse)
    );
    assert_eq!(conn.hello.machine_id, MACHINE_ID);
    let r = conn.request(Message::Ping(Empty {}), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Pong);
    // 13.9: FILE_STAT on the control connection, even with files granted.
    assert!(conn.ack.granted_capabilities.contains(&Capability::Files));
    let r = conn.request(stat("/tmp"), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "FEATURE_NOT_SUPPORTED");
    env.assert_no_violations();
    env.stop(child).await;
    env.verify_audit();
}

#[cfg(unix)]
#[tokio::test]
async fn browse_lists_only_real_directories_sorted_and_paged() {
    let env = Env::new(PeerConfig::default()).await;
    let home = env.dir.path().join("home");
    let big = home.join("big");
    for i in 0..210 {
        std::fs::create_dir_all(big.join(format!("d{i:03}"))).unwrap();
    }
    std::fs::create_dir(home.join("beta")).unwrap();
    std::fs::create_dir(home.join("Alpha")).unwrap();
    std::fs::create_dir_all(home.join("Alpha").join("grandchild")).unwrap();
    std::fs::write(home.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(home.join("beta"), home.join("link")).unwrap();
    let (child, conn) = start(&env, &[]).await;

    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    assert!(top.current.is_none() && top.parent_ref.is_none() && top.next_cursor.is_none());
    let canon_home = std::fs::canonicalize(&home).unwrap();
    assert_eq!(top.entries[0].path, canon_home.to_str().unwrap());
    assert_eq!(top.entries[0].name, "home");
    assert_eq!(top.browse_id.as_str().len(), 32);

    let bid = top.browse_id.as_str().to_owned();
    let l = listing(
        &conn
            .request(
                list(
                    Some(&bid),
                    Some(top.entries[0].directory_ref.as_str()),
                    None,
                ),
                T,
            )
            .await
            .unwrap(),
    );
    let names: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["Alpha", "beta", "big"]);
    assert_eq!(
        l.current.as_ref().unwrap().path,
        canon_home.to_str().unwrap()
    );
    let big_ref = l.entries[2].directory_ref.as_str().to_owned();
    let p1 = listing(
        &conn
            .request(list(Some(&bid), Some(&big_ref), None), T)
            .await
            .unwrap(),
    );
    assert_eq!(p1.entries.len(), 200);
    assert!(!p1.truncated);
    // The parent reference is the one through which `big` was reached (the home's).
    assert_eq!(
        p1.parent_ref.as_ref().unwrap().as_str(),
        top.entries[0].directory_ref.as_str()
    );
    assert!(l.parent_ref.is_none(), "a root has no parent reference");
    let cursor = p1.next_cursor.clone().expect("a second page");
    let p2 = listing(
        &conn
            .request(list(Some(&bid), Some(&big_ref), Some(cursor.as_str())), T)
            .await
            .unwrap(),
    );
    assert_eq!(p2.entries.len(), 10);
    assert!(p2.next_cursor.is_none());
    assert_eq!(p1.entries[0].name, "d000");
    assert_eq!(p2.entries[9].name, "d209");
    assert!(p1.entries.iter().all(|a| {
        p2.entries
            .iter()
            .all(|b| a.directory_ref != b.directory_ref)
    }));
    // A cursor minted for another directory, unknown refs, unknown browse ids.
    let r = conn
        .request(
            list(
                Some(&bid),
                Some(top.entries[0].directory_ref.as_str()),
                Some(cursor.as_str()),
            ),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    let r = conn
        .request(list(Some(&bid), Some("nope"), None), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    let r = conn
        .request(list(Some("nope"), Some(&big_ref), None), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    // Half a pair is a malformed request, answered with its id (3.6).
    let r = conn
        .expect_raw_reply(
            "half",
            MessageType::DirectoryListRequest,
            r#"{"type":"DIRECTORY_LIST_REQUEST","id":"half","ts":1.0,"payload":{"browse_id":"abc"}}"#,
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    // A directory that vanished.
    std::fs::remove_dir_all(&big).unwrap();
    let r = conn
        .request(list(Some(&bid), Some(&big_ref), None), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_UNAVAILABLE");
    env.assert_no_violations();
    let records = env.audit_records();
    let dl = with_op(&records, "DIRECTORY_LIST");
    assert!(dl.len() >= 4);
    assert!(
        records.iter().all(|r| !r.to_string().contains(&big_ref)),
        "references must never be logged"
    );
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn attach_activate_data_detach_restore() {
    let env = Env::new(PeerConfig::default()).await;
    let home = env.home_dirs(&["Projects", "Other"]);
    let (child, conn) = start(&env, &[]).await;

    let a = browse_and_attach(&conn, SID, "Projects").await;
    let projects = crate::suite::harness::canonical(&home.join("Projects"));
    assert_eq!(a.allowed_root, projects.to_str().unwrap());
    assert_eq!(a.revision, 1);
    assert!(a.root_grant.as_str().starts_with("v1."));
    // Activation before the right revision fails; the right one starts a child.
    let r = conn.request(activate(SID, 2), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_REVISION_MISMATCH");
    let r = conn
        .request(activate("never-attached", 1), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_NOT_ATTACHED");
    let r = conn.request(activate(SID, 1), T).await.unwrap();
    match &r.frame.message {
        Message::SessionActivated(s) => {
            assert_eq!(s.allowed_root, a.allowed_root);
            assert_eq!(s.revision, 1);
        }
        other => panic!("{other:?}"),
    }
    let data = env.next().await;
    assert_eq!(data.route, Route::Data);
    assert_eq!(data.session_id.as_deref(), Some(SID));
    assert_eq!(
        data.hello.allowed_root.as_deref(),
        Some(a.allowed_root.as_str())
    );
    assert_eq!(data.hello.machine_id, MACHINE_ID);
    assert!(
        !data
            .hello
            .capabilities
            .contains(&Capability::DirectoryBrowse)
    );
    // Data on the child, jailed to the attached folder.
    let r = data.request(stat(&a.allowed_root), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::FileStatResponse);
    let other = crate::suite::harness::canonical(&home.join("Other"));
    let r = data
        .request(stat(other.to_str().unwrap()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "PATH_OUTSIDE_ALLOWED_ROOT");
    // Activation is idempotent: no second child.
    let r = conn.request(activate(SID, 1), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
    env.assert_no_connection(Duration::from_millis(500)).await;
    // Attaching an active session is refused.
    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    let r = conn
        .request(
            attach(
                SID,
                top.browse_id.as_str(),
                top.entries[0].directory_ref.as_str(),
            ),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_ALREADY_ACTIVE");

    // Detach: ACK, the child's connection ends, the binding is gone.
    let r = conn.request(detach(SID), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);
    data.closed(T).await.unwrap();
    let r = conn.request(activate(SID, 1), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_NOT_ATTACHED");
    // Detaching again still answers ACK.
    let r = conn.request(detach(SID), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::Ack);

    // Restore with the grant (as after a daemon restart): a new child, same binding.
    let s = restored(&conn, a.root_grant.as_str()).await;
    assert_eq!(s.root_grant.as_str(), a.root_grant.as_str());
    assert_eq!(s.allowed_root, a.allowed_root);
    assert_eq!(s.revision, 1);
    assert_eq!(s.fingerprint, a.fingerprint);
    let data2 = env.next().await;
    assert_eq!(
        data2.hello.allowed_root.as_deref(),
        Some(a.allowed_root.as_str())
    );
    // A tampered grant, and a grant for another session.
    let mut bad = a.root_grant.as_str().to_owned();
    let last = bad.pop().unwrap();
    bad.push(if last == 'A' { 'B' } else { 'A' });
    let r = conn.request(restore(SID, &bad), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "ROOT_GRANT_INVALID");
    let r = conn
        .request(restore("other-session", a.root_grant.as_str()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "ROOT_GRANT_INVALID");

    env.assert_no_violations();
    env.stop(child).await;
    let records = env.audit_records();
    let o = ops(&records);
    for op in [
        "SESSION_ALLOWED_ROOT_SET",
        "ACTIVATE_SESSION",
        "DETACH_SESSION",
        "RESTORE_SESSION",
    ] {
        assert!(o.contains(&op.to_owned()), "{op} missing: {o:?}");
    }
    let set = records
        .iter()
        .find(|r| r["op"] == "SESSION_ALLOWED_ROOT_SET")
        .unwrap();
    assert_eq!(set["session_id"], SID);
    assert_eq!(set["details"]["revision"], 1);
    assert!(
        records
            .iter()
            .all(|r| !r.to_string().contains(a.root_grant.as_str())),
        "grants must never be logged"
    );
    env.verify_audit();
}

#[tokio::test]
async fn reattach_replaced_folder_and_reconnect_invalidation() {
    let env = Env::new(PeerConfig::default()).await;
    // 13.12: re-attaching to another folder yields revision 2 and the new root.
    let (child, conn, _, _) = two_revisions(&env).await;
    let home = env.dir.path().join("home");
    // A consumed browse's references fail (13.11).
    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    let bid = top.browse_id.as_str().to_owned();
    let home_ref = top.entries[0].directory_ref.as_str().to_owned();
    let l = listing(
        &conn
            .request(list(Some(&bid), Some(&home_ref), None), T)
            .await
            .unwrap(),
    );
    let a_ref = l
        .entries
        .iter()
        .find(|e| e.name == "A")
        .unwrap()
        .directory_ref
        .clone();
    conn.request(attach("s-two", &bid, a_ref.as_str()), T)
        .await
        .unwrap();
    let r = conn
        .request(list(Some(&bid), Some(&home_ref), None), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    // 13.14: the folder replaced (renamed away, recreated) → ROOT_GRANT_INVALID, no child.
    let b = home.join("B");
    std::fs::rename(&b, home.join("B-old")).unwrap();
    std::fs::create_dir(&b).unwrap();
    let r = conn.request(activate(SID, 2), T).await.unwrap();
    assert_eq!(error_code(&r.frame.message), "ROOT_GRANT_INVALID");
    env.assert_no_connection(Duration::from_millis(500)).await;
    // Activate s-two (child up), then a control reconnect: the child stops, old refs die,
    // the binding survives.
    let r = conn.request(activate("s-two", 1), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
    let data = env.next().await;
    let top = listing(&conn.request(list(None, None, None), T).await.unwrap());
    conn.close(1011, "server error");
    let conn2 = control_conn(&env).await;
    data.closed(T).await.unwrap();
    let r = conn2
        .request(
            list(
                Some(top.browse_id.as_str()),
                Some(top.entries[0].directory_ref.as_str()),
                None,
            ),
            T,
        )
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "DIRECTORY_REFERENCE_INVALID");
    let r = conn2.request(activate("s-two", 1), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
    let data2 = env.next().await;
    assert_eq!(data2.session_id.as_deref(), Some("s-two"));
    env.assert_no_violations();
    env.stop(child).await;
    env.verify_audit();
}

#[tokio::test]
async fn idle_children_stop_and_restore_revives_them() {
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["P"]);
    let idle = [
        ("AUTOGPT_SHIM_IDLE_TIMEOUT_SECONDS", "1"),
        ("AUTOGPT_SHIM_IDLE_CHECK_INTERVAL_SECONDS", "0.3"),
    ];
    let (child, conn) = start(&env, &idle).await;
    let a = browse_and_attach(&conn, SID, "P").await;
    let data = activate_child(&env, &conn, SID).await;
    data.closed(Duration::from_secs(10)).await.unwrap();
    let records = env.audit_records();
    let idle = records
        .iter()
        .find(|r| r["op"] == "IDLE_SESSION_DETACH")
        .expect("idle record");
    assert_eq!(idle["session_id"], SID);
    assert!(idle["details"]["idle_seconds"].as_f64().unwrap() >= 1.0);
    let r = conn
        .request(restore(SID, a.root_grant.as_str()), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionRestored);
    let data2 = env.next().await;
    data2.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
    drop(child);
}

#[tokio::test]
async fn control_revocation_stops_children_and_the_process() {
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["P"]);
    let (child, conn) = start(&env, &[]).await;
    browse_and_attach(&conn, SID, "P").await;
    let data = activate_child(&env, &conn, SID).await;
    conn.revoke(RevokeReason::UserRevoked).unwrap();
    let (code, out, err) = finish(child, T).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Shim stopped."));
    data.closed(T).await.unwrap();
    env.assert_no_connection(Duration::from_millis(500)).await;
    let o = ops(&env.audit_records());
    assert!(o.contains(&"SESSION_REVOKED".to_owned()));
    assert_eq!(o.last().map(String::as_str), Some("SHIM_STOP"));
    env.assert_no_violations();
    env.verify_audit();
}

#[tokio::test]
async fn restore_rules_for_revisions_and_live_children() {
    let env = Env::new(PeerConfig::default()).await;
    let (child, conn, g1, g2) = two_revisions(&env).await;
    // An older grant than the binding → SESSION_REVISION_MISMATCH with current_revision.
    let r = conn
        .request(restore(SID, g1.root_grant.as_str()), T)
        .await
        .unwrap();
    assert_eq!(error_code(&r.frame.message), "SESSION_REVISION_MISMATCH");
    match &r.frame.message {
        Message::Error(e) => assert_eq!(e.details.as_ref().unwrap()["current_revision"], 2),
        _ => unreachable!(),
    }
    // The current grant starts a child; restoring it again keeps that child.
    restored(&conn, g2.root_grant.as_str()).await;
    let data = env.next().await;
    assert_eq!(
        data.hello.allowed_root.as_deref(),
        Some(g2.allowed_root.as_str())
    );
    restored(&conn, g2.root_grant.as_str()).await;
    env.assert_no_connection(Duration::from_millis(500)).await;
    data.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
    env.stop(child).await;
    data.closed(T).await.unwrap();
    env.verify_audit();
}

#[tokio::test]
async fn children_share_the_machine_wide_work_limit() {
    // max_concurrent 1 everywhere: each child admits one request, and the machine-wide
    // semaphore (sized to the control connection's limit) makes the second child's
    // request wait instead of running concurrently (10.3).
    let env = Env::with_ack(shim_platform_peer::AckConfig {
        max_concurrent: 1,
        ..shim_platform_peer::AckConfig::default()
    })
    .await;
    env.home_dirs(&["A", "B"]);
    let mut c = env.command(&["start", "--enable-shell"]);
    c.env("AUTOGPT_SHIM_MAX_CONCURRENT_COMMANDS", "10");
    let child = c.spawn().unwrap();
    let conn = control_conn(&env).await;
    browse_and_attach(&conn, "s-a", "A").await;
    browse_and_attach(&conn, "s-b", "B").await;
    let a = std::sync::Arc::new(activate_child(&env, &conn, "s-a").await);
    let b = std::sync::Arc::new(activate_child(&env, &conn, "s-b").await);
    let cmd = || crate::suite::harness::sleep_command(1);
    let started = std::time::Instant::now();
    let (ra, rb) = tokio::join!(a.request(cmd(), T), b.request(cmd(), T));
    let elapsed = started.elapsed();
    assert_eq!(ra.unwrap().frame.message_type(), MessageType::CommandResult);
    assert_eq!(rb.unwrap().frame.message_type(), MessageType::CommandResult);
    assert!(
        elapsed >= Duration::from_millis(1900),
        "ran concurrently: {elapsed:?}"
    );
    env.assert_no_violations();
    env.stop(child).await;
}

#[tokio::test]
async fn at_most_eight_children_run_at_once() {
    let env = Env::new(PeerConfig::default()).await;
    let home = env.dir.path().join("home");
    for i in 0..9 {
        std::fs::create_dir(home.join(format!("f{i}"))).unwrap();
    }
    let (child, conn) = start(&env, &[]).await;
    let mut data = Vec::new();
    for i in 0..9 {
        let sid = format!("s-{i}");
        browse_and_attach(&conn, &sid, &format!("f{i}")).await;
        let r = conn.request(activate(&sid, 1), T).await.unwrap();
        if i < 8 {
            assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
            data.push(env.next().await);
        } else {
            assert_eq!(error_code(&r.frame.message), "INTERNAL_ERROR");
            match &r.frame.message {
                Message::Error(e) => {
                    assert_eq!(e.message, "Active local-executor session limit reached");
                }
                _ => unreachable!(),
            }
        }
    }
    // Detaching one frees a slot; the ninth binding was kept and can now start.
    conn.request(detach("s-0"), T).await.unwrap();
    data[0].closed(T).await.unwrap();
    let r = conn.request(activate("s-8", 1), T).await.unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionActivated);
    let ninth = env.next().await;
    assert_eq!(ninth.session_id.as_deref(), Some("s-8"));
    env.assert_no_violations();
    env.stop(child).await;
    for d in &data[1..] {
        d.closed(T).await.unwrap();
    }
    env.verify_audit();
}

#[tokio::test]
async fn a_revoked_child_stops_alone() {
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["A", "B"]);
    let (child, conn) = start(&env, &[]).await;
    let ga = browse_and_attach(&conn, "s-a", "A").await;
    browse_and_attach(&conn, "s-b", "B").await;
    let a = activate_child(&env, &conn, "s-a").await;
    let b = activate_child(&env, &conn, "s-b").await;
    // The platform revokes chat A's data connection: only that child stops.
    a.revoke(RevokeReason::AnotherShimConnected).unwrap();
    a.closed(T).await.unwrap();
    env.assert_no_connection(Duration::from_millis(600)).await;
    b.request(Message::Ping(Empty {}), T).await.unwrap();
    conn.request(Message::Ping(Empty {}), T).await.unwrap();
    // Its binding remains: a restore starts a fresh child.
    let r = conn
        .request(restore("s-a", ga.root_grant.as_str()), T)
        .await
        .unwrap();
    assert_eq!(r.frame.message_type(), MessageType::SessionRestored);
    let a2 = env.next().await;
    assert_eq!(a2.session_id.as_deref(), Some("s-a"));
    let records = env.audit_records();
    let rev = with_op(&records, "SESSION_REVOKED");
    assert_eq!(rev.len(), 1);
    assert_eq!(rev[0]["session_id"], "s-a");
    env.assert_no_violations();
    env.stop(child).await;
}

#[tokio::test]
async fn every_execution_type_is_refused_on_the_control_connection() {
    let env = Env::new(PeerConfig::default()).await;
    let (_child, conn) = start(&env, &[]).await;
    let types = [
        ("FILE_READ", r#"{"path":"/tmp/x"}"#),
        ("FILE_WRITE", r#"{"path":"/tmp/x","content":""}"#),
        ("FILE_LIST", r#"{"path":"/tmp"}"#),
        ("FILE_DELETE", r#"{"path":"/tmp/x"}"#),
        ("FILE_MOVE", r#"{"src":"/tmp/x","dst":"/tmp/y"}"#),
        ("EXECUTE_COMMAND", r#"{"argv":["true"]}"#),
        ("SCREENSHOT_REQUEST", "{}"),
        ("CLIPBOARD_READ", "{}"),
        (
            "LOCAL_LLM_COMPLETION",
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        ),
        ("RECORDING_FETCH", r#"{"recording_id":"rec_1"}"#),
    ];
    for (i, (ty, payload)) in types.iter().enumerate() {
        let id = format!("c-{i}");
        let r = raw_request(&conn, &id, ty, payload).await;
        assert_eq!(
            error_code(&r.frame.message),
            "FEATURE_NOT_SUPPORTED",
            "{ty}"
        );
    }
    env.assert_no_violations();
}

#[cfg(unix)]
#[tokio::test]
async fn sigint_stops_cleanly_with_children() {
    let env = Env::new(PeerConfig::default()).await;
    env.home_dirs(&["P"]);
    let (child, conn) = start(&env, &[]).await;
    browse_and_attach(&conn, SID, "P").await;
    let data = activate_child(&env, &conn, SID).await;
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let (code, out, err) = finish(child, T).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Shim stopped."), "{out}");
    assert_eq!(conn.closed(T).await.unwrap().map(|c| c.0), Some(1000));
    assert_eq!(data.closed(T).await.unwrap().map(|c| c.0), Some(1000));
    let o = ops(&env.audit_records());
    assert_eq!(o.last().map(String::as_str), Some("SHIM_STOP"));
    env.verify_audit();
}

#[tokio::test]
async fn control_without_directory_browse_is_terminal() {
    // 13.7: the platform's HELLO_ACK grants only `files` on the control connection.
    let env = Env::granting(&[Capability::Files]).await;
    let (child, conn) = start(&env, &[]).await;
    let closed = conn.closed(T).await.unwrap().unwrap();
    assert_eq!(closed.0, 4426);
    assert_eq!(
        closed.1,
        "Machine control requires protocol 1.1 and directory_browse"
    );
    let (code, _, err) = finish(child, T).await;
    assert_eq!(code, 0, "{err}");
    env.assert_no_connection(Duration::from_millis(600)).await;
    env.assert_no_violations();
}

#[tokio::test]
async fn a_newer_grant_replaces_a_live_child() {
    // 13.17: restore with a newer grant for a live child stops it once and starts one
    // child with the new binding.
    let env = Env::new(PeerConfig::default()).await;
    let (child, conn, g1, g2) = two_revisions(&env).await;
    // Forget the binding, then bring the session back at revision 1 with a live child.
    conn.request(detach(SID), T).await.unwrap();
    restored(&conn, g1.root_grant.as_str()).await;
    let old = env.next().await;
    assert_eq!(
        old.hello.allowed_root.as_deref(),
        Some(g1.allowed_root.as_str())
    );
    let s = restored(&conn, g2.root_grant.as_str()).await;
    assert_eq!(s.revision, 2);
    assert_eq!(s.allowed_root, g2.allowed_root);
    old.closed(T).await.unwrap();
    let new = env.next().await;
    assert_eq!(
        new.hello.allowed_root.as_deref(),
        Some(g2.allowed_root.as_str())
    );
    env.assert_no_connection(Duration::from_millis(500)).await;
    new.request(Message::Ping(Empty {}), T).await.unwrap();
    env.assert_no_violations();
    env.stop(child).await;
}
