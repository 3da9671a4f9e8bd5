use super::*;

fn hits() -> u32 {
    FAST_HITS.with(std::cell::Cell::get)
}

#[test]
fn the_openat2_fast_path_serves_link_free_paths() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap().join("root");
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::write(root.join("a/b/c/f.txt"), b"x").unwrap();
    std::os::unix::fs::symlink("a", root.join("l")).unwrap();
    let jail = JailRoot::open(
        &root,
        crate::JailConfig::default(),
        cap_std::ambient_authority(),
    )
    .unwrap();
    let f = format!("{}/a/b/c/f.txt", root.display());
    let before = hits();
    assert!(jail.stat(&f, true).unwrap().is_some());
    assert_eq!(hits(), before + 1, "stat");
    jail.read(&f, &crate::ReadOptions::default()).unwrap();
    assert_eq!(hits(), before + 2, "read");
    jail.write(&f, "y", &crate::WriteOptions::default())
        .unwrap();
    assert_eq!(hits(), before + 3, "write (parent)");
    jail.list(
        &format!("{}/a/b", root.display()),
        &crate::ListOptions::default(),
    )
    .unwrap();
    assert_eq!(hits(), before + 4, "list");
    // Links and `..` take the full walk (and still resolve).
    let via_link = format!("{}/l/b/c/f.txt", root.display());
    assert!(jail.stat(&via_link, true).unwrap().is_some());
    let dotdot = format!("{}/a/../a/b/c/f.txt", root.display());
    assert!(jail.stat(&dotdot, true).unwrap().is_some());
    assert_eq!(hits(), before + 4);
}

#[test]
fn a_root_can_be_shared_between_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<JailRoot>();
    assert_send_sync::<crate::JailError>();
}
