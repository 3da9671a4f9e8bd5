//! A short write (a disk that fills up in the middle of a group commit), injected through the
//! writer's test seam: the failed records are cut off again, so the log still verifies.

use super::*;
use crate::testing::sample_event;
use crate::verify::verify_file;

fn key() -> AuditKey {
    AuditKey::from_bytes(&[3u8; 32]).unwrap()
}

fn core(path: &Path) -> Core {
    let cfg = WriterConfig::new(path, "machine", "0.0.0-test");
    Core::open(cfg, key(), Arc::new(Shared::default())).unwrap()
}

fn batch(from: u64, n: u64) -> Vec<(Prepared, String)> {
    (from..from + n)
        .map(|i| (Prepared::new(&sample_event(i)).unwrap(), "chat".to_owned()))
        .collect()
}

/// Cuts the next group commit after `cut(len)` of its `len` bytes; checks the outcome.
fn short_write_leaves_a_whole_log(cut: impl Fn(usize) -> usize) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let mut c = core(&p);
    for r in c.append_batch(&batch(1, 3)) {
        r.unwrap();
    }
    let good = std::fs::read(&p).unwrap();
    // Measure the next group commit's size without writing it.
    let mut probe = core(&dir.path().join("probe.log"));
    let before = probe.size;
    for r in probe.append_batch(&batch(4, 5)) {
        r.unwrap();
    }
    let len = (probe.size - before) as usize;
    c.short_write = Some(cut(len));
    let results = c.append_batch(&batch(4, 5));
    assert_eq!(results.len(), 5);
    for r in &results {
        assert!(matches!(r, Err(AuditError::Write { .. })), "{r:?}");
    }
    assert_eq!(
        std::fs::read(&p).unwrap(),
        good,
        "the failed batch was not undone"
    );
    let report = verify_file(&p, &key()).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.records, 3);
    // Terminal, and nothing more reaches the file.
    assert!(matches!(
        c.append_batch(&batch(9, 1))[0],
        Err(AuditError::Poisoned)
    ));
    drop(c);
    // The next writer continues the chain instead of rotating the file aside.
    let next = core(&p);
    assert_eq!(next.next_seq, 4);
    assert!(files::list_rotated(&p).unwrap().is_empty());
}

#[test]
fn a_write_cut_inside_the_first_record_is_undone() {
    short_write_leaves_a_whole_log(|_| 37);
}

#[test]
fn a_write_cut_after_some_whole_records_of_a_group_is_undone() {
    // Several records of one group commit fail together, some of them written in full.
    short_write_leaves_a_whole_log(|len| len * 3 / 5 + 11);
}

#[test]
fn a_write_that_wrote_nothing_leaves_the_file_as_it_was() {
    short_write_leaves_a_whole_log(|_| 0);
}
