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

/// The records of every line that parses in `log` and in the files rotated aside beside it
/// (a torn last line, set aside by recovery, does not parse and has no id).
fn recorded_ids(log: &Path) -> HashSet<String> {
    let mut files = shim_audit::files::list_rotated(log).unwrap();
    files.push(log.to_path_buf());
    let mut ids = HashSet::new();
    for f in files {
        let text = std::fs::read(&f).unwrap();
        for line in text.split(|&b| b == b'\n') {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
                && let Some(id) = v["request_id"].as_str()
            {
                ids.insert(id.to_owned());
            }
        }
    }
    ids
}

/// A tiny xorshift, so the kill moments differ without another dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The daemon is killed (SIGKILL) during a burst of 32 concurrent `FILE_WRITE`s, 100 times,
/// on one audit log. Every request the peer saw answered has its record, and the log
/// verifies: the current file is clean, and a rotated file is clean or is a torn tail that
/// the next start set aside (1.12), whose only finding is its cut last line.
#[cfg(unix)]
#[tokio::test]
async fn killed_during_a_burst_of_writes_every_answer_has_its_record() {
    use shim_audit::ViolationKind;
    let env = Env::new(PeerConfig {
        ack: shim_platform_peer::AckConfig {
            max_concurrent: 32,
            ..shim_platform_peer::AckConfig::default()
        },
        ..PeerConfig::default()
    })
    .await;
    let log = env.audit_log();
    let root = env.root_str().to_owned();
    let mut rng = 0x2545_f491_4f6c_dd1du64 ^ u64::from(std::process::id());
    let started = std::time::Instant::now();
    let mut answered_total = 0usize;
    for round in 0..100 {
        let mut cmd = env.legacy_command(SID, &[]);
        cmd.env("AUTOGPT_SHIM_MAX_CONCURRENT", "32");
        let mut child = cmd.spawn().unwrap();
        let conn = Arc::new(env.next().await);
        let answered = Arc::new(Mutex::new(Vec::new()));
        let first = Arc::new(tokio::sync::Notify::new());
        let mut burst = Vec::new();
        for i in 0..32 {
            let (conn, root, answered, first) =
                (conn.clone(), root.clone(), answered.clone(), first.clone());
            burst.push(tokio::spawn(async move {
                let id = format!("crash-{round}-{i}");
                let msg = crate::suite::harness::write(&format!("{root}/b/{i}.txt"), &id);
                if let Ok(r) = conn.request_with_id(&id, msg, T).await
                    && !matches!(r.frame.message, Message::Error(_))
                {
                    answered.lock().unwrap().push(id);
                    first.notify_one();
                }
            }));
        }
        // Kill in the middle of the burst: once the first answer is in, after 0-6 ms more
        // (its group commits go on meanwhile); every 10th round before any answer.
        if round % 10 != 0 {
            let _ = tokio::time::timeout(T, first.notified()).await;
        }
        tokio::time::sleep(Duration::from_micros(next(&mut rng) % 6_000)).await;
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        // Answers the daemon wrote before it died are already in the socket.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for b in burst {
            b.abort();
        }
        let answered = answered.lock().unwrap().clone();
        answered_total += answered.len();
        let ids = recorded_ids(&log);
        for id in &answered {
            assert!(
                ids.contains(id),
                "round {round}: {id} was answered without a record"
            );
        }
    }
    // One more start recovers the last tail; then the whole log verifies.
    let child = env.start_legacy(SID, &[]);
    let _conn = env.next().await;
    env.stop(child).await;
    let key = shim_audit::AuditKey::from_hex(&env.audit_key_hex).unwrap();
    let all = shim_audit::verify_all(&log, &key).unwrap();
    for f in &all.files {
        if f.path == log {
            assert!(f.is_clean(), "current file: {:?}", f.violations);
            continue;
        }
        let data = std::fs::read(&f.path).unwrap();
        let last_line = data.split(|&c| c == b'\n').count() as u64;
        let only_torn_tail = f.violations.iter().all(|v| {
            matches!(v.kind, ViolationKind::Truncated | ViolationKind::ParseError)
                && v.line == last_line
        });
        assert!(
            f.is_clean() || only_torn_tail,
            "{:?}: {:?}",
            f.path,
            f.violations
        );
    }
    assert!(
        answered_total > 0,
        "no request was ever answered before a kill"
    );
    eprintln!(
        "100 kills in {:?}: {answered_total} answered writes, all recorded; {} files",
        started.elapsed(),
        all.files.len()
    );
}
