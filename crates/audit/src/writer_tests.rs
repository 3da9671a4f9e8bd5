//! A short write (a disk that fills up in the middle of a group commit), injected through the
//! writer's test seams: the failed records are cut off again, so the log still verifies; and
//! the group commit itself, with the sync leader held at its `fdatasync`.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use super::*;
use crate::testing::sample_event;
use crate::verify::verify_file;

fn key() -> AuditKey {
    AuditKey::from_bytes(&[3u8; 32]).unwrap()
}

fn open(path: &Path) -> AuditLog {
    AuditLog::open(WriterConfig::new(path, "machine", "0.0.0-test"), key()).unwrap()
}

fn state(log: &AuditLog) -> MutexGuard<'_, State> {
    log.inner.state.lock().unwrap()
}

/// The next write of `log` writes `n` bytes of its line, then fails as a full disk would.
fn cut_next_write(log: &AuditLog, n: usize) {
    state(log).core.short_write = Some(n);
}

/// Checks what a failed write must leave: the file is `good` exactly, verifies with
/// `records` records, the writer is terminal, and the next writer continues the chain.
fn assert_undone(p: &Path, log: AuditLog, good: &[u8], records: u64) {
    assert_eq!(
        std::fs::read(p).unwrap(),
        good,
        "the failed write was not undone"
    );
    let report = verify_file(p, &key()).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.records, records);
    // Terminal, and nothing more reaches the file.
    assert!(matches!(
        log.append_blocking(sample_event(99)),
        Err(AuditError::Poisoned)
    ));
    assert_eq!(std::fs::read(p).unwrap(), good);
    drop(log);
    // The next writer continues the chain instead of rotating the file aside.
    let next = open(p);
    assert_eq!(state(&next).core.next_seq, records + 1);
    assert!(files::list_rotated(p).unwrap().is_empty());
}

/// A lone append whose write is cut after `cut` bytes of its line.
fn lone_short_write(cut: usize) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    for i in 1..=3 {
        log.append_blocking(sample_event(i)).unwrap();
    }
    let good = std::fs::read(&p).unwrap();
    cut_next_write(&log, cut);
    let err = log.append_blocking(sample_event(4)).unwrap_err();
    assert!(matches!(err, AuditError::Write { .. }), "{err:?}");
    assert_undone(&p, log, &good, 3);
}

#[test]
fn a_write_cut_inside_a_record_is_undone() {
    lone_short_write(37);
}

#[test]
fn a_write_that_wrote_nothing_leaves_the_file_as_it_was() {
    lone_short_write(0);
}

#[test]
fn a_write_that_wrote_the_whole_line_but_failed_is_undone() {
    lone_short_write(usize::MAX);
}

/// Holds the first sync leader just before its `fdatasync` until `release` is sent.
fn hold_first_sync(log: &AuditLog) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
    let first = AtomicBool::new(true);
    state(log).before_sync = Some(Arc::new(move || {
        if first.swap(false, Ordering::SeqCst) {
            entered_tx.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
        }
    }));
    (entered, release)
}

/// Waits until `n` records have been written (whole, not yet durable) since `log` opened.
fn wait_written(log: &AuditLog, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while state(log).appended < n {
        assert!(std::time::Instant::now() < deadline, "appends never wrote");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A group of records that fail together: while a leader syncs record 4, records 5 and 6 are
/// written whole and wait for the next sync; record 7's write is cut short after `cut`
/// bytes. Records 5-7 all fail and are all cut off; record 4, whose sync began before the
/// failure, is durable and answered.
fn group_short_write(cut: usize) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    for i in 1..=3 {
        log.append_blocking(sample_event(i)).unwrap();
    }
    let (entered, release) = hold_first_sync(&log);
    let spawn = |i: u64| {
        let log = log.clone();
        std::thread::spawn(move || log.append_blocking(sample_event(i)))
    };
    let leader = spawn(4);
    entered.recv().unwrap();
    let with_leader = std::fs::read(&p).unwrap();
    let waiting = [spawn(5), spawn(6)];
    wait_written(&log, 3 + 3);
    assert_eq!(
        log.stats().records,
        3,
        "nothing of the group is durable yet"
    );
    cut_next_write(&log, cut);
    let failing = spawn(7).join().unwrap();
    assert!(
        matches!(failing, Err(AuditError::Write { .. })),
        "{failing:?}"
    );
    for w in waiting {
        let r = w.join().unwrap();
        assert!(matches!(r, Err(AuditError::Write { .. })), "{r:?}");
    }
    release.send(()).unwrap();
    assert_eq!(leader.join().unwrap(), Ok(4));
    assert_eq!(log.stats().records, 4);
    assert_undone(&p, log, &with_leader, 4);
}

#[test]
fn records_of_one_group_fail_together_when_a_write_is_cut_inside_a_record() {
    group_short_write(37);
}

#[test]
fn records_of_one_group_fail_together_when_a_write_wrote_nothing() {
    group_short_write(0);
}

#[test]
fn records_written_during_a_sync_share_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let (entered, release) = hold_first_sync(&log);
    let spawn = |i: u64| {
        let log = log.clone();
        std::thread::spawn(move || log.append_blocking(sample_event(i)))
    };
    let leader = spawn(1);
    entered.recv().unwrap();
    let followers: Vec<_> = (2..=6).map(spawn).collect();
    wait_written(&log, 6);
    release.send(()).unwrap();
    assert_eq!(leader.join().unwrap(), Ok(1));
    let mut seqs: Vec<u64> = followers
        .into_iter()
        .map(|f| f.join().unwrap().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, vec![2, 3, 4, 5, 6]);
    // One sync for the leader's record, one shared by the five written while it ran.
    assert_eq!(
        log.stats(),
        WriterStats {
            records: 6,
            fsyncs: 2
        }
    );
    drop(log);
    let report = verify_file(&p, &key()).unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(report.records, 6);
}
