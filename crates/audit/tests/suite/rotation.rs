//! Rotation (1.13) and verify-all links (1.15).

use super::common::*;
use shim_audit::AuditLog;
use shim_audit::verify_all;

#[test]
fn size_rotation_links_segments_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let mut c = cfg(&p);
    c.rotate_bytes = 2_000;
    let log = AuditLog::open(c, key()).unwrap();
    for i in 0..40 {
        log.append_blocking(event(i)).unwrap();
    }
    drop(log);
    let rotated = shim_audit::files::list_rotated(&p).unwrap();
    assert!(rotated.len() >= 3, "{rotated:?}");
    let all = verify_all(&p, &key()).unwrap();
    assert!(all.is_clean(), "{all:?}");
    for f in &rotated {
        // A file may exceed the threshold by one record only.
        let len = std::fs::metadata(f).unwrap().len();
        let last = lines(f).last().unwrap().len() as u64 + 1;
        assert!(len - last < 2_000);
    }
    let l = lines(&p);
    assert!(l[0].contains("\"reason\": \"size\""));
    let rl = lines(rotated.last().unwrap());
    let last = rl.last().unwrap();
    let last_hmac = &last.rsplit_once("\"hmac\": \"").unwrap().1[..64];
    assert!(l[0].contains(&format!("\"previous_last_hmac\": \"{last_hmac}\"")));
}

#[test]
fn age_rotation_triggers_on_old_first_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let mut c = cfg(&p);
    c.rotate_age_secs = 0.0;
    let log = AuditLog::open(c, key()).unwrap();
    log.append_blocking(event(1)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    log.append_blocking(event(2)).unwrap();
    drop(log);
    assert_eq!(shim_audit::files::list_rotated(&p).unwrap().len(), 1);
    assert!(lines(&p)[0].contains("\"reason\": \"age\""));
    assert!(verify_all(&p, &key()).unwrap().is_clean());
}

#[test]
fn rotation_names_never_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    let mut names = Vec::new();
    for i in 0..3 {
        log.append_blocking(event(i)).unwrap();
        names.push(
            log.rotate_blocking(shim_audit::RotateReason::Explicit)
                .unwrap()
                .unwrap(),
        );
    }
    drop(log);
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 3);
    let listed = shim_audit::files::list_rotated(&p).unwrap();
    assert_eq!(listed.len(), 3);
    assert!(verify_all(&p, &key()).unwrap().is_clean());
}
