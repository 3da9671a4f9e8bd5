use super::*;

#[test]
fn a_failed_replace_leaves_neither_partial_file_nor_temporary() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("target/inner")).unwrap();
    let jail = JailRoot::open(
        &root,
        crate::JailConfig::default(),
        cap_std::ambient_authority(),
    )
    .unwrap();
    // The rename over a non-empty directory fails after the temporary was written.
    let e = jail
        .replace(
            jail.root_fd(),
            std::ffi::OsStr::new("target"),
            b"data",
            None,
            "/x",
        )
        .unwrap_err();
    assert_eq!(e.code(), shim_protocol::ErrorCode::InternalError);
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("target")]);
    assert!(root.join("target/inner").is_dir());
}

#[test]
fn temporary_names_are_short_and_unpredictable() {
    let a = super::super::random_hex(16);
    let b = super::super::random_hex(16);
    assert_eq!(a.len(), 16);
    assert_ne!(a, b);
}
