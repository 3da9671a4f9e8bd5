//! What the audit log looks like after the daemon stops badly: its file system fills up, or it
//! is killed in the middle of a burst. Every request the peer saw answered has its record, and
//! the log verifies (AUDIT_AUTH_CLI.md 1.11, 1.19).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::finish;
use crate::suite::harness::read_records;
use crate::suite::harness::small_tmpfs;
use crate::suite::harness::stat;

const SID: &str = "5a0c7f35-2f7e-4d7b-9f1e-6c1d2b3a4f50";

/// `autogpt-shim audit verify --file log` with the key from the credential store: exit 0.
async fn cli_verifies(env: &Env, log: &Path) {
    let path = log.to_str().unwrap();
    let (code, out, err) = finish(
        env.command(&["audit", "verify", "--file", path])
            .spawn()
            .unwrap(),
        T,
    )
    .await;
    assert_eq!(code, 0, "audit verify failed:\n{out}\n{err}");
}

/// Asserts that every id in `answered` has a record in `log`.
fn every_answer_recorded(log: &Path, answered: &[String]) {
    let ids: HashSet<String> = read_records(log)
        .iter()
        .filter_map(|r| r["request_id"].as_str().map(str::to_owned))
        .collect();
    for id in answered {
        assert!(
            ids.contains(id),
            "request {id} was answered without a record"
        );
    }
}

/// The audit log's file system fills up while four requests are in flight: the daemon fails
/// closed (1011, exit 78) and the log it leaves ends at a whole record and verifies.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_full_audit_disk_leaves_a_log_that_verifies() {
    let env = Env::new(PeerConfig::default()).await;
    let Some(fs) = small_tmpfs(env.dir.path(), "auditfs", "24k") else {
        return;
    };
    let log = fs.path.join("audit.log");
    let mut cmd = env.legacy_command(SID, &[]);
    cmd.env("AUTOGPT_SHIM_AUDIT_LOG_PATH", &log);
    let child = cmd.spawn().unwrap();
    let conn = Arc::new(env.next().await);
    let root = env.root_str().to_owned();
    let answered = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (conn, root, answered) = (conn.clone(), root.clone(), answered.clone());
        workers.push(tokio::spawn(async move {
            for i in 0..500 {
                let id = format!("full-{w}-{i}");
                match conn
                    .request_with_id(&id, stat(&root), Duration::from_secs(5))
                    .await
                {
                    Ok(r) if !matches!(r.frame.message, Message::Error(_)) => {
                        answered.lock().unwrap().push(id);
                    }
                    _ => return,
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let closed = conn.closed(T).await.unwrap();
    assert_eq!(closed.map(|c| c.0), Some(1011));
    let (exit, _, err) = finish(child, T).await;
    assert_eq!(exit, 78, "{err}");
    let answered = answered.lock().unwrap().clone();
    assert!(
        answered.len() < 2000,
        "the audit file system never filled up"
    );
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'), "the log ends in half a record");
    cli_verifies(&env, &log).await;
    every_answer_recorded(&log, &answered);
}
