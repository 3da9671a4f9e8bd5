//! 64 tasks appending 1,000 records each produce one gap-free chain that verifies.

use std::sync::Arc;

use super::common::*;
use shim_audit::verify_file;

#[test]
fn sixty_four_tasks_times_one_thousand_records_make_one_clean_chain() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    let per_task: Vec<Vec<u64>> = rt.block_on(async {
        let log = Arc::new(log.clone());
        let mut handles = Vec::new();
        for t in 0..64usize {
            let log = log.clone();
            handles.push(tokio::spawn(async move {
                let mut seqs = Vec::with_capacity(1000);
                for i in 0..1000usize {
                    let ev = event(t * 1000 + i).session(format!("task-{t}"));
                    seqs.push(log.append(ev).await.unwrap());
                }
                seqs
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    drop(log);
    // Each task saw its own records in increasing seq order, and all seqs are distinct.
    let mut all: Vec<u64> = per_task.iter().flatten().copied().collect();
    for s in &per_task {
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }
    all.sort_unstable();
    assert_eq!(all, (1..=64_000).collect::<Vec<u64>>());
    let r = verify_file(&p, &key()).unwrap();
    assert!(r.is_clean(), "{:?}", r.violations.first());
    assert_eq!(r.records, 64_000);
    assert_eq!(r.last_seq, Some(64_000));
    // Order in the file equals seq order, and each line's session matches the task that
    // received that seq.
    let mut owner = vec![0usize; 64_001];
    for (t, s) in per_task.iter().enumerate() {
        for &q in s {
            owner[q as usize] = t;
        }
    }
    for (i, line) in lines(&p).iter().enumerate() {
        let seq = i + 1;
        assert!(line.contains(&format!("\"seq\": {seq}, ")));
        assert!(line.contains(&format!("\"session_id\": \"task-{}\"", owner[seq])));
    }
}

/// Group commit: concurrent appends share fsyncs (far fewer fsyncs than records), while a
/// lone writer gets one fsync per record.
#[test]
fn concurrent_appends_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir.path().join("audit.log"));
    for i in 0..20 {
        log.append_blocking(event(i)).unwrap();
    }
    let s = log.stats();
    assert_eq!((s.records, s.fsyncs), (20, 20));
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    log.append_blocking(event(t * 100 + i)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = log.stats();
    assert_eq!(s.records, 20 + 32 * 50);
    let batched = s.fsyncs - 20;
    assert!(
        batched * 4 < 32 * 50,
        "{batched} fsyncs for 1600 concurrent records"
    );
}

/// Size rotations in the middle of concurrent group commits: every segment verifies, the
/// segments link up, and every record appended is in exactly one of them.
#[test]
fn concurrent_appends_across_size_rotations_keep_linked_chains() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let mut c = cfg(&p);
    c.rotate_bytes = 16_000;
    let log = shim_audit::AuditLog::open(c, key()).unwrap();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..60 {
                    log.append_blocking(event(t * 100 + i)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    drop(log);
    let all = shim_audit::verify_all(&p, &key()).unwrap();
    assert!(all.is_clean(), "{all:?}");
    assert!(all.files.len() >= 4, "{} files", all.files.len());
    let mut req: Vec<String> = Vec::new();
    for f in shim_audit::log_files(&p).unwrap() {
        for l in lines(&f) {
            if let Some(rest) = l.split_once("\"request_id\": \"req-") {
                req.push(rest.1.split('"').next().unwrap().to_owned());
            }
        }
    }
    req.sort_unstable();
    let mut want: Vec<String> = (0..16)
        .flat_map(|t| (0..60).map(move |i| (t * 100 + i).to_string()))
        .collect();
    want.sort_unstable();
    assert_eq!(req, want);
}
