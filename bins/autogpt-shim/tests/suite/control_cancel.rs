//! Cancelled control-plane work finishes and is recorded: a `RESTORE_SESSION` whose control
//! connection drops while the old child runtime is being stopped still starts the new child
//! and writes its audit record (as cancelled file operations already are).

use std::sync::Arc;
use std::time::Duration;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::hello_rules::Route;
use shim_protocol::messages::handshake::Empty;

use crate::suite::control::SID;
use crate::suite::control::detach;
use crate::suite::control::restore;
use crate::suite::control::restored;
use crate::suite::control::two_revisions;
use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::read;
use crate::suite::harness::with_op;

#[tokio::test]
async fn a_restore_dropped_while_the_old_child_stops_is_finished_and_recorded() {
    let env = Env::new(PeerConfig::default()).await;
    let (child, conn, g1, g2) = two_revisions(&env).await;
    // A live child at revision 1 (folder A).
    conn.request(detach(SID), T).await.unwrap();
    restored(&conn, g1.root_grant.as_str()).await;
    let old = Arc::new(env.next().await);
    let big = std::path::Path::new(&g1.allowed_root).join("big.txt");
    std::fs::write(&big, "x".repeat(1 << 20)).unwrap();
    let big = big.to_str().unwrap().to_owned();
    // Make stopping the old child slow: its platform stops reading while up to 24 MiB of
    // answers are on their way, so the child's writer stays blocked until its 2 s limit.
    old.stop_reading();
    let answered_reads = || {
        with_op(&env.audit_records(), "FILE_READ")
            .iter()
            .filter(|r| r["result"]["ok"] == true)
            .count()
    };
    'fill: for batch in 1..=6 {
        // Four at a time (the connection's limit); each answer stays unread. Once the
        // buffers are full the daemon stops answering: its writer is blocked, as wanted.
        for _ in 0..4 {
            let (old, big) = (old.clone(), big.clone());
            tokio::spawn(async move {
                let _ = old.request(read(&big), Duration::from_secs(60)).await;
            });
        }
        for _ in 0..30 {
            if answered_reads() >= 4 * batch {
                continue 'fill;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        break;
    }

    // Restore revision 2: the daemon starts stopping the old child ...
    let conn = Arc::new(conn);
    let id = "restore-dropped-0001";
    let c = conn.clone();
    let grant = g2.root_grant.as_str().to_owned();
    let pending = tokio::spawn(async move {
        c.request_with_id(id, restore(SID, &grant), Duration::from_secs(3))
            .await
    });
    // The stop takes 2 s (the blocked writer's limit); drop the connection inside it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    // ... and its control connection drops meanwhile.
    conn.close(1011, "server error");
    let answer = pending.await.unwrap();
    assert!(
        answer.is_err(),
        "the restore was answered before the drop: {answer:?}"
    );

    // The daemon reconnects; the restore it was doing finished and was recorded.
    let again = loop {
        let c = env.next().await;
        if c.route == Route::Control {
            break c;
        }
    };
    again.request(Message::Ping(Empty {}), T).await.unwrap();
    let recorded = || {
        let records = env.audit_records();
        with_op(&records, "RESTORE_SESSION")
            .iter()
            .any(|r| r["request_id"] == id && r["details"]["revision"] == g2.revision)
    };
    for _ in 0..100 {
        if recorded() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let records = env.audit_records();
    let tail: Vec<_> = records
        .iter()
        .rev()
        .take(12)
        .map(|r| {
            (
                r["op"].clone(),
                r["session_id"].clone(),
                r["request_id"].clone(),
            )
        })
        .collect();
    assert!(
        recorded(),
        "the dropped RESTORE_SESSION was not recorded; last records: {tail:?}"
    );
    env.verify_audit();
    env.stop(child).await;
}
