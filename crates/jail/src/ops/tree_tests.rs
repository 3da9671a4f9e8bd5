use super::*;
use std::os::fd::AsFd;

fn dirfd(p: &std::path::Path) -> std::os::fd::OwnedFd {
    rustix::fs::open(
        p,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap()
}

#[test]
fn cross_device_procedure_copies_then_deletes() {
    // 11.3 cannot be provoked without a mount; exercise the copy-then-delete procedure
    // directly on one device.
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    std::fs::create_dir_all(a.join("src/sub")).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("src/sub/f.txt"), b"hello").unwrap();
    std::os::unix::fs::symlink("../../outside", a.join("src/sub/l")).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(a.join("src/sub/f.txt"))
            .unwrap()
            .permissions(),
        0o640,
    );
    let (fa, fb) = (dirfd(&a), dirfd(&b));
    move_across_devices(fa.as_fd(), "src".as_ref(), fb.as_fd(), "dst".as_ref(), "/x").unwrap();
    assert!(!a.join("src").exists());
    assert_eq!(std::fs::read(b.join("dst/sub/f.txt")).unwrap(), b"hello");
    assert_eq!(
        std::fs::read_link(b.join("dst/sub/l")).unwrap(),
        std::path::PathBuf::from("../../outside")
    );
}

// mknodat is Linux-only in rustix.
#[cfg(target_os = "linux")]
#[test]
fn cross_device_copy_of_a_fifo_fails_and_leaves_src() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    std::fs::create_dir_all(a.join("src")).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("src/f"), b"x").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        a.join("src/zfifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let (fa, fb) = (dirfd(&a), dirfd(&b));
    let e = move_across_devices(fa.as_fd(), "src".as_ref(), fb.as_fd(), "dst".as_ref(), "/x")
        .unwrap_err();
    assert_eq!(e.code(), shim_protocol::ErrorCode::InternalError);
    assert!(a.join("src/f").exists());
    assert!(!b.join("dst").exists(), "partial copy removed");
}
