//! Fail closed (1.19): an append that cannot be written is a fatal error, and the writer
//! accepts nothing afterwards.

use super::common::*;
use shim_audit::AuditError;
use shim_audit::AuditLog;

#[cfg(target_os = "linux")]
#[test]
fn disk_full_append_is_the_fatal_error() {
    // /dev/full answers every write with ENOSPC: a full disk.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    std::os::unix::fs::symlink("/dev/full", &p).unwrap();
    let log = open(&p);
    let err = log.append_blocking(event(1)).unwrap_err();
    assert!(matches!(err, AuditError::Write { .. }), "{err:?}");
    assert!(err.to_string().contains("No space left on device"), "{err}");
    assert_eq!(err.exit_code(), 78);
    assert_eq!(err.code(), shim_protocol::ErrorCode::InternalError);
    // Terminal: later appends fail too, without touching the disk.
    assert!(matches!(
        log.append_blocking(event(2)),
        Err(AuditError::Poisoned)
    ));
}

#[cfg(target_os = "linux")]
#[test]
fn tiny_tmpfs_fills_up_and_fails_closed() {
    // Needs mount rights (root in a private mount namespace is typical in CI containers);
    // otherwise the /dev/full test above covers the same path.
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("SHIM_REQUIRE_TMPFS").map_or(true, |v| v != "1"),
            "SHIM_REQUIRE_TMPFS=1 but a tmpfs cannot be mounted"
        );
        eprintln!("skipping tiny_tmpfs_fills_up_and_fails_closed: cannot mount a tmpfs here");
        return;
    }
    // Unmount even if an assertion below fails.
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Umount(mnt.clone());
    let p = mnt.join("audit.log");
    let log = open(&p);
    let mut failed = None;
    for i in 0..1000 {
        match log.append_blocking(event(i)) {
            Ok(_) => {}
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    drop(log);
    assert!(
        matches!(failed, Some(AuditError::Write { .. })),
        "{failed:?}"
    );
    // The failed append was cut off again: the log ends at a whole record and verifies.
    let report = shim_audit::verify_file(&p, &key()).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(report.records > 0);
}

#[test]
fn unusable_directory_fails_open_with_the_preflight_wording() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = AuditLog::open(cfg(&file.join("audit.log")), key()).unwrap_err();
    assert!(matches!(err, AuditError::Open { .. }));
    assert!(err.to_string().contains("mandatory audit log"), "{err}");
}
