//! One test per tamper class (1.14 table, 1.15): each is detected, and the first violation
//! names the first bad seq and line.

use super::common::*;
use shim_audit::verify_all;
use shim_audit::verify_file;

#[test]
fn untouched_log_verifies_clean() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 10);
    let r = verify_file(&p, &key()).unwrap();
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(r.records, 10);
    assert_eq!(r.last_seq, Some(10));
}

#[test]
fn edited_field_is_an_hmac_mismatch_at_that_record_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 10);
    let mut l = lines(&p);
    l[4] = l[4].replace("/home/u/project/file-4.txt", "/home/u/project/other.txt");
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(kinds(&r), vec![("hmac_mismatch", Some(5), 5)]);
}

#[test]
fn deleted_record_is_a_gap_and_break_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 10);
    let mut l = lines(&p);
    l.remove(3);
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(
        kinds(&r),
        vec![("sequence_gap", Some(5), 4), ("chain_break", Some(5), 4)]
    );
}

#[test]
fn swapped_records_are_detected_at_the_first_swapped_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 10);
    let mut l = lines(&p);
    l.swap(5, 6);
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    let first = r.first_violation().unwrap();
    assert_eq!(
        (first.kind.as_str(), first.seq, first.line),
        ("sequence_gap", Some(7), 6)
    );
    assert!(kinds(&r).contains(&("chain_break", Some(6), 7)));
}

#[test]
fn inserted_record_is_a_gap_and_break_on_the_insert() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 10);
    let mut l = lines(&p);
    // A replayed copy of record 2 inserted after record 7.
    let copy = l[1].clone();
    l.insert(7, copy);
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    let first = r.first_violation().unwrap();
    assert_eq!(
        (first.kind.as_str(), first.seq, first.line),
        ("sequence_gap", Some(2), 8)
    );
    assert_eq!(kinds(&r)[1], ("chain_break", Some(2), 8));
}

#[test]
fn forged_insert_with_a_wrong_key_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 3);
    // Build a record with another key that claims to continue the chain.
    let forged_dir = tempfile::tempdir().unwrap();
    let fp = forged_dir.path().join("audit.log");
    let log = shim_audit::AuditLog::open(cfg(&fp), other_key()).unwrap();
    for i in 0..4 {
        log.append_blocking(event(i)).unwrap();
    }
    drop(log);
    let mut l = lines(&p);
    l.push(lines(&fp)[3].clone());
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(
        kinds(&r),
        vec![("chain_break", Some(4), 4), ("hmac_mismatch", Some(4), 4)]
    );
}

#[test]
fn tail_cut_mid_line_is_truncated_then_parse_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 5);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 40]).unwrap();
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(
        kinds(&r),
        vec![("truncated", None, 5), ("parse_error", None, 5)]
    );
    // Only the final LF removed: truncated only.
    std::fs::write(&p, &bytes[..bytes.len() - 1]).unwrap();
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(kinds(&r), vec![("truncated", None, 5)]);
}

#[test]
fn whole_records_cut_from_a_rotated_segment_are_a_segment_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    for i in 0..6 {
        log.append_blocking(event(i)).unwrap();
    }
    let rotated = log
        .rotate_blocking(shim_audit::RotateReason::Explicit)
        .unwrap()
        .unwrap();
    for i in 0..3 {
        log.append_blocking(event(i)).unwrap();
    }
    drop(log);
    assert!(verify_all(&p, &key()).unwrap().is_clean());
    // Cut the last two whole records of the rotated segment at a line boundary.
    let mut l = lines(&rotated);
    l.truncate(4);
    write_lines(&rotated, &l);
    // The segment alone still verifies (undetectable from the file alone) ...
    assert!(verify_file(&rotated, &key()).unwrap().is_clean());
    // ... but the next file's head does not match its end.
    let all = verify_all(&p, &key()).unwrap();
    assert!(!all.is_clean());
    let cur = &all.files[0];
    assert_eq!(kinds(cur), vec![("segment_mismatch", Some(1), 1)]);
}

#[test]
fn segment_removed_from_the_middle_is_a_missing_segment() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let mut segs = Vec::new();
    for _ in 0..3 {
        log.append_blocking(event(1)).unwrap();
        segs.push(
            log.rotate_blocking(shim_audit::RotateReason::Explicit)
                .unwrap()
                .unwrap(),
        );
    }
    log.append_blocking(event(2)).unwrap();
    drop(log);
    assert_eq!(verify_all(&p, &key()).unwrap().files.len(), 4);
    assert!(verify_all(&p, &key()).unwrap().is_clean());
    // Deleting the oldest segment looks like pruning: not a violation.
    let oldest = segs.remove(0);
    std::fs::remove_file(&oldest).unwrap();
    assert!(verify_all(&p, &key()).unwrap().is_clean());
    // Deleting one from the middle is detected in the file that links to it.
    std::fs::remove_file(&segs[1]).unwrap();
    let all = verify_all(&p, &key()).unwrap();
    let bad: Vec<_> = all.files.iter().filter(|f| !f.is_clean()).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].path, p);
    assert_eq!(kinds(bad[0]), vec![("missing_segment", Some(1), 1)]);
}

#[test]
fn different_key_is_an_hmac_mismatch_on_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 4);
    let r = verify_file(&p, &other_key()).unwrap();
    assert_eq!(
        kinds(&r),
        (1..=4)
            .map(|i| ("hmac_mismatch", Some(i), i as u64))
            .collect::<Vec<_>>()
    );
}

#[test]
fn stored_hmac_edit_breaks_the_next_link_and_case_matters() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 4);
    let mut l = lines(&p);
    let h = l[1].rsplit_once("\"hmac\": \"").unwrap().1[..64].to_owned();
    l[1] = l[1].replace(&h, &h.to_uppercase());
    write_lines(&p, &l);
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(
        kinds(&r),
        vec![("hmac_mismatch", Some(2), 2), ("chain_break", Some(3), 3)]
    );
}

#[test]
fn formatting_changes_are_not_violations_but_number_types_are() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 3);
    let mut l = lines(&p);
    // Whitespace, member order and escaping: no violation.
    l[0] = l[0]
        .replace(", ", ",")
        .replace("\"op\"", "\"\\u006fp\"")
        .replace("/home", "\\/home");
    write_lines(&p, &l);
    assert!(verify_file(&p, &key()).unwrap().is_clean());
    // Integer rewritten as float.
    l[2] = l[2].replace("\"offset\": 0", "\"offset\": 0.0");
    write_lines(&p, &l);
    assert_eq!(
        kinds(&verify_file(&p, &key()).unwrap()),
        vec![("hmac_mismatch", Some(3), 3)]
    );
}

#[test]
fn not_jsonl_duplicate_keys_and_missing_fields_stop_verification() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 4);
    let mut l = lines(&p);
    l[1] = l[1].replacen("{", "{\"seq\": 2, ", 1);
    write_lines(&p, &l);
    assert_eq!(
        kinds(&verify_file(&p, &key()).unwrap()),
        vec![("parse_error", None, 2)]
    );
    let mut l = lines(&write_log(tempfile::tempdir().unwrap().path(), 3));
    l[1] = l[1].replace("\"seq\": 2", "\"seq\": \"2\"");
    write_lines(&p, &l);
    assert_eq!(
        kinds(&verify_file(&p, &key()).unwrap()),
        vec![("missing_field", None, 2)]
    );
    std::fs::write(&p, b"\x00\x01binary garbage\xff\n").unwrap();
    assert_eq!(
        kinds(&verify_file(&p, &key()).unwrap()),
        vec![("parse_error", None, 1)]
    );
}

#[test]
fn blank_lines_and_crlf_are_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_log(dir.path(), 3);
    let l = lines(&p);
    let s = format!("{}\r\n\n \t\r\n{}\r\n{}\r\n", l[0], l[1], l[2]);
    std::fs::write(&p, s).unwrap();
    assert!(verify_file(&p, &key()).unwrap().is_clean());
}

/// 1.17: logs of earlier releases need no special case; their quirks show up as 1.14 says.
#[test]
fn earlier_release_quirks_are_reported_as_specified() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_log(dir.path(), 3);
    let first = lines(&a);
    let dir2 = tempfile::tempdir().unwrap();
    let b = write_log(dir2.path(), 2);
    let second = lines(&b);
    // A chain restarted at seq 1 in the middle of a file (restart after a long final record).
    let mut l = first.clone();
    l.extend(second.iter().cloned());
    write_lines(&a, &l);
    assert_eq!(
        kinds(&verify_file(&a, &key()).unwrap()),
        vec![("sequence_gap", Some(1), 4), ("chain_break", Some(1), 4)]
    );
    // A record glued onto a torn previous line.
    let torn = &first[2][..first[2].len() - 20];
    let glued = vec![
        first[0].clone(),
        first[1].clone(),
        format!("{torn}{}", second[0]),
    ];
    write_lines(&a, &glued);
    assert_eq!(
        kinds(&verify_file(&a, &key()).unwrap()),
        vec![("parse_error", None, 3)]
    );
    // No AUDIT_ROTATED heads: files are verified alone, without link checks.
    let rotated = dir.path().join("audit.log.20250101-000000");
    std::fs::write(&rotated, first.join("\n") + "\n").unwrap();
    std::fs::write(&a, second.join("\n") + "\n").unwrap();
    assert!(shim_audit::verify_all(&a, &key()).unwrap().is_clean());
}

/// A parse error stops verification, but a cut last line of a large file (several read
/// blocks) is still reported first, with the number of the file's last line.
#[test]
fn truncation_is_reported_with_the_last_line_even_after_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    shim_audit::testing::synthesize_log(&p, &key(), 20_000).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    assert!(bytes.len() > 9 * 1024 * 1024);
    let second = bytes.iter().position(|&c| c == b'\n').unwrap() + 1;
    bytes[second] = b'#';
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&p, &bytes).unwrap();
    let r = verify_file(&p, &key()).unwrap();
    assert_eq!(
        kinds(&r),
        vec![("truncated", None, 20_000), ("parse_error", None, 2)]
    );
}

/// The parallel path (used from three cores up) reports exactly what the serial one does.
#[test]
fn parallel_and_serial_verification_agree() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    shim_audit::testing::synthesize_log(&p, &key(), 30_000).unwrap();
    let mut l = lines(&p);
    l[12_345] = l[12_345].replace("\"offset\": 0", "\"offset\": 1");
    l.remove(20_000);
    l.swap(25_000, 25_001);
    write_lines(&p, &l);
    let serial = shim_audit::verify_file_threads(&p, &key(), 1).unwrap();
    let parallel = shim_audit::verify_file_threads(&p, &key(), 4).unwrap();
    assert!(!serial.is_clean());
    assert_eq!(serial, parallel);
    assert_eq!(kinds(&serial)[0], ("hmac_mismatch", Some(12_346), 12_346));
}
