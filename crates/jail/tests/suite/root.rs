//! Section 2: the root.

use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_jail::MoveOptions;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

#[test]
fn j_root_1_root_path_is_canonical_and_opened_through_an_alias() {
    let fx = Fx::new();
    assert_eq!(fx.jail.root_path(), fx.root.to_str().unwrap());
    // A spelling with `..` and doubled separators is canonicalised.
    let odd = fx.r.join("rootx/../root/");
    let j = JailRoot::open(&odd, JailConfig::default(), cap_std::ambient_authority()).unwrap();
    assert_eq!(j.root_path(), fx.root.to_str().unwrap());
}

#[test]
fn j_root_1_refuses_missing_file_and_symlink_roots() {
    let fx = Fx::new();
    let open = |p: &std::path::Path, refuse| {
        let cfg = JailConfig {
            refuse_symlink_root: refuse,
            ..JailConfig::default()
        };
        JailRoot::open(p, cfg, cap_std::ambient_authority())
    };
    assert_eq!(
        code(open(&fx.r.join("nope"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    std::fs::write(fx.r.join("f"), b"x").unwrap();
    assert_eq!(
        code(open(&fx.r.join("f"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    std::os::unix::fs::symlink(&fx.root, fx.r.join("lnroot")).unwrap();
    let e = open(&fx.r.join("lnroot"), true).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
    assert_eq!(e.to_string(), "allowed root does not exist");
    // Legacy mode may follow a symlinked root; root_path is then the resolved path.
    let j = open(&fx.r.join("lnroot"), false).unwrap();
    assert_eq!(j.root_path(), fx.root.to_str().unwrap());
}

#[test]
fn j_id_1_any_spelling_that_reaches_the_root_identity_is_accepted() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    std::os::unix::fs::symlink(&fx.root, fx.r.join("alias")).unwrap();
    let via_alias = fx.rp("alias/a.txt");
    assert_eq!(
        fx.jail
            .read(&via_alias, &ReadOptions::default())
            .unwrap()
            .content,
        "A"
    );
    // Display paths are always based on root_path.
    assert_eq!(
        fx.jail.stat(&via_alias, true).unwrap().unwrap().path,
        fx.p("a.txt")
    );
    let dotted = fx.rp("rootx/../root/./a.txt");
    assert_eq!(
        fx.jail
            .read(&dotted, &ReadOptions::default())
            .unwrap()
            .content,
        "A"
    );
    // Prefix confusion: the look-alike sibling is outside.
    std::fs::write(fx.r.join("rootx/a.txt"), b"X").unwrap();
    assert_eq!(
        code(fx.jail.read(&fx.rp("rootx/a.txt"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn j_root_3_a_root_replaced_by_a_symlink_is_not_rebound() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    std::fs::rename(&fx.root, fx.r.join("moved")).unwrap();
    std::os::unix::fs::symlink(&fx.outside, &fx.root).unwrap();
    for p in [fx.p("secret.txt"), fx.p("")] {
        assert_eq!(
            code(fx.jail.read(&p, &ReadOptions::default())),
            ErrorCode::PathOutsideAllowedRoot
        );
        assert_eq!(
            code(fx.jail.stat(&p, true)),
            ErrorCode::PathOutsideAllowedRoot
        );
    }
    assert_eq!(
        code(
            fx.jail
                .write(&fx.p("new.txt"), "x", &WriteOptions::default())
        ),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(!fx.outside.join("new.txt").exists());
}

#[test]
fn j_root_3_a_root_replaced_by_another_directory_is_not_rebound() {
    let fx = Fx::new();
    std::fs::rename(&fx.root, fx.r.join("moved")).unwrap();
    std::fs::create_dir(&fx.root).unwrap();
    std::fs::write(fx.root.join("b.txt"), b"impostor").unwrap();
    assert_eq!(
        code(fx.jail.read(&fx.p("b.txt"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    // The moved root is still reachable by a spelling that reaches its identity.
    std::fs::write(fx.r.join("moved/c.txt"), b"C").unwrap();
    assert_eq!(
        fx.jail
            .read(&fx.rp("moved/c.txt"), &ReadOptions::default())
            .unwrap()
            .content,
        "C"
    );
}

#[test]
fn j_root_2_a_deleted_root_fails_every_request() {
    let fx = Fx::new();
    std::fs::remove_dir(&fx.root).unwrap();
    let e = fx.jail.stat(&fx.p("a"), true).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
    assert_eq!(e.to_string(), "allowed root no longer exists");
    assert_eq!(
        code(fx.jail.open_dir(None)),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn section_2_3_the_root_as_an_operation_target() {
    let mut fx = Fx::new();
    fx.file("keep.txt", "k");
    fx.mark();
    let spellings = [
        fx.p(""),
        fx.p("."),
        format!("{}/", fx.p("")),
        fx.p("sub/.."),
        fx.rp("root"),
    ];
    fx.dir("sub");
    for root in &spellings {
        // STAT and LIST allowed.
        let st = fx.jail.stat(root, true).unwrap().unwrap();
        assert!(st.is_dir);
        assert_eq!(st.path, fx.p(""));
        assert!(fx.jail.list(root, &Default::default()).is_ok());
        // READ: a directory.
        assert_eq!(
            code(fx.jail.read(root, &ReadOptions::default())),
            ErrorCode::InternalError
        );
        // WRITE / DELETE / MOVE: refused as jail violations.
        for wo in [false, true] {
            let o = WriteOptions {
                create_parents: wo,
                ..Default::default()
            };
            let e = fx.jail.write(root, "x", &o).unwrap_err();
            assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
            assert!(e.is_jail_violation());
        }
        for recursive in [false, true] {
            for missing_ok in [false, true] {
                let o = DeleteOptions {
                    recursive,
                    missing_ok,
                };
                assert_eq!(
                    code(fx.jail.delete(root, &o)),
                    ErrorCode::PathOutsideAllowedRoot
                );
            }
        }
        for overwrite in [false, true] {
            let o = MoveOptions { overwrite };
            assert_eq!(
                code(fx.jail.rename(root, &fx.p("x"), &o)),
                ErrorCode::PathOutsideAllowedRoot
            );
            assert_eq!(
                code(fx.jail.rename(&fx.p("keep.txt"), root, &o)),
                ErrorCode::PathOutsideAllowedRoot
            );
        }
        // EXECUTE_COMMAND cwd allowed.
        let (_d, disp) = fx.jail.open_dir(Some(root)).unwrap();
        assert_eq!(disp, fx.p(""));
    }
    assert!(fx.at("keep.txt").exists());
    assert!(fx.root.is_dir());
    fx.assert_outside_untouched();
}

#[test]
fn a_symlink_to_the_root_inside_the_root_is_an_ordinary_entry_for_no_follow_ops() {
    let fx = Fx::new();
    fx.link("self", fx.root.to_str().unwrap());
    let st = fx.jail.stat(&fx.p("self"), false).unwrap().unwrap();
    assert!(st.is_symlink);
    fx.jail
        .delete(&fx.p("self"), &DeleteOptions::default())
        .unwrap();
    assert!(fx.root.is_dir());
    assert!(!fx.at("self").exists());
}

#[test]
fn open_dir_gives_a_handle_for_a_commands_cwd() {
    let fx = Fx::new();
    fx.file("sub/f.txt", "x");
    let (d, disp) = fx.jail.open_dir(Some(&fx.p("sub"))).unwrap();
    assert_eq!(disp, fx.p("sub"));
    assert!(d.exists("f.txt"));
    let (d, disp) = fx.jail.open_dir(None).unwrap();
    assert_eq!(disp, fx.p(""));
    assert!(d.exists("sub"));
    assert_eq!(
        code(fx.jail.open_dir(Some(&fx.p("nope")))),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.open_dir(Some(&fx.p("sub/f.txt")))),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(fx.jail.open_dir(Some(fx.outside.to_str().unwrap()))),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.link("out", fx.outside.to_str().unwrap());
    assert_eq!(
        code(fx.jail.open_dir(Some(&fx.p("out")))),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn max_file_size_is_only_ever_lowered() {
    let fx = Fx::new();
    let before = fx.jail.max_file_size();
    fx.jail.lower_max_file_size(before + 1);
    assert_eq!(fx.jail.max_file_size(), before);
    fx.jail.lower_max_file_size(3);
    assert_eq!(fx.jail.max_file_size(), 3);
    assert_eq!(
        code(fx.jail.write(&fx.p("f"), "abcd", &WriteOptions::default())),
        ErrorCode::FileTooLarge
    );
}
