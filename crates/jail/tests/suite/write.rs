//! Section 7: FILE_WRITE.

use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::PermissionsExt;

use shim_jail::ContentEncoding;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

const PLAIN: WriteOptions = WriteOptions {
    encoding: ContentEncoding::Utf8,
    create_parents: false,
};
const PARENTS: WriteOptions = WriteOptions {
    encoding: ContentEncoding::Utf8,
    create_parents: true,
};
const B64: WriteOptions = WriteOptions {
    encoding: ContentEncoding::Base64,
    create_parents: false,
};

fn names(fx: &Fx, rel: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fx.at(rel))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn creates_and_replaces_byte_for_byte() {
    let fx = Fx::new();
    let r = fx
        .jail
        .write(&fx.p("a.txt"), "line1\r\nline2", &PLAIN)
        .unwrap();
    assert_eq!(r.path, fx.p("a.txt"));
    assert_eq!(r.size_bytes_written, 12);
    assert_eq!(std::fs::read(fx.at("a.txt")).unwrap(), b"line1\r\nline2");
    fx.jail.write(&fx.p("a.txt"), "x", &PLAIN).unwrap();
    assert_eq!(std::fs::read(fx.at("a.txt")).unwrap(), b"x");
    fx.jail.write(&fx.p("b.bin"), "AAEC/w==", &B64).unwrap();
    assert_eq!(std::fs::read(fx.at("b.bin")).unwrap(), [0, 1, 2, 255]);
    // No stray temporary files.
    assert_eq!(names(&fx, ""), ["a.txt", "b.bin"]);
}

#[test]
fn base64_is_strict_and_nothing_is_created_on_failure() {
    let fx = Fx::new();
    for bad in [
        "AAEC/w",
        "AAEC /w==",
        "AAEC\n/w==",
        "@@@@",
        "AAEC/w=="[..7].as_ref(),
    ] {
        let e = fx
            .jail
            .write(
                &fx.p("new/x.bin"),
                bad,
                &WriteOptions {
                    create_parents: true,
                    ..B64
                },
            )
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InternalError, "{bad:?}");
        assert!(e.to_string().starts_with("Bad base64"));
    }
    assert!(
        names(&fx, "").is_empty(),
        "no parent created before decoding"
    );
}

#[test]
fn size_limit_before_anything_is_created() {
    let fx = Fx::new();
    fx.jail.lower_max_file_size(4);
    fx.jail.write(&fx.p("ok"), "abcd", &PLAIN).unwrap();
    assert_eq!(
        code(fx.jail.write(&fx.p("d/big"), "abcde", &PARENTS)),
        ErrorCode::FileTooLarge
    );
    assert_eq!(
        code(fx.jail.write(&fx.p("ok"), "AAAAAAAA", &B64)),
        ErrorCode::FileTooLarge
    );
    assert_eq!(std::fs::read(fx.at("ok")).unwrap(), b"abcd");
    assert_eq!(names(&fx, ""), ["ok"]);
}

#[test]
fn section_7_2_final_component_rules() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    fx.dir("d");
    // Missing parent without create_parents.
    assert_eq!(
        code(fx.jail.write(&fx.p("m/f.txt"), "x", &PLAIN)),
        ErrorCode::PathNotFound
    );
    // A parent that is a file: INTERNAL_ERROR with or without create_parents.
    for o in [PLAIN, PARENTS] {
        assert_eq!(
            code(fx.jail.write(&fx.p("a.txt/b"), "x", &o)),
            ErrorCode::InternalError
        );
        assert_eq!(
            code(fx.jail.write(&fx.p("a.txt/b/c"), "x", &o)),
            ErrorCode::InternalError
        );
    }
    // Target is a directory.
    assert_eq!(
        code(fx.jail.write(&fx.p("d"), "x", &PLAIN)),
        ErrorCode::InternalError
    );
    // Final symlink inside: the target is written, the link preserved.
    fx.link("l", "a.txt");
    let r = fx.jail.write(&fx.p("l"), "via link", &PLAIN).unwrap();
    assert_eq!(r.path, fx.p("a.txt"));
    assert!(
        std::fs::symlink_metadata(fx.at("l"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(fx.at("a.txt")).unwrap(), "via link");
    // Dangling link inside whose target does not exist yet: created.
    fx.link("dl", "created.txt");
    fx.jail.write(&fx.p("dl"), "new", &PLAIN).unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.at("created.txt")).unwrap(),
        "new"
    );
    // A link whose target directory is missing: never created, even with create_parents.
    fx.link("dl2", "nodir/f.txt");
    assert_eq!(
        code(fx.jail.write(&fx.p("dl2"), "x", &PARENTS)),
        ErrorCode::PathNotFound
    );
    assert!(!fx.at("nodir").exists());
    // A link to a directory.
    fx.link("ld", "d");
    assert_eq!(
        code(fx.jail.write(&fx.p("ld"), "x", &PLAIN)),
        ErrorCode::InternalError
    );
}

#[test]
fn section_7_3_create_parents() {
    let mut fx = Fx::new();
    fx.jail
        .write(&fx.p("n1/n2/n3/f.txt"), "deep", &PARENTS)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.at("n1/n2/n3/f.txt")).unwrap(),
        "deep"
    );
    // `..` anywhere in the missing suffix: not found, nothing created.
    assert_eq!(
        code(fx.jail.write(&fx.p("m1/../f.txt"), "x", &PARENTS)),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.write(&fx.p("m1/m2/../f.txt"), "x", &PARENTS)),
        ErrorCode::PathNotFound
    );
    assert!(!fx.at("m1").exists());
    assert!(!fx.at("f.txt").exists());
    // Existing prefix followed by `..` is physical and fine.
    fx.jail
        .write(&fx.p("n1/../top.txt"), "t", &PARENTS)
        .unwrap();
    assert!(fx.at("top.txt").exists());
    // The pinned escapes.
    fx.mark();
    assert_eq!(
        code(
            fx.jail
                .write(&fx.p("newdir/../../outside/pwned.txt"), "x", &PARENTS)
        ),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(!fx.at("newdir").exists());
    fx.link("outlink", fx.outside.to_str().unwrap());
    assert_eq!(
        code(fx.jail.write(&fx.p("outlink/deep/new.txt"), "x", &PARENTS)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(fx.jail.write(&fx.p("outlink/newd/new.txt"), "x", &PARENTS)),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_untouched();
    // Created directories get default permissions (0777 & ~umask).
    let mode = std::fs::metadata(fx.at("n1/n2")).unwrap().mode() & 0o777;
    assert_eq!(mode & 0o700, 0o700);
}

#[test]
fn section_7_4_permissions_and_atomic_replace() {
    let fx = Fx::new();
    fx.file("p.sh", "old");
    std::fs::set_permissions(fx.at("p.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    let ino = std::fs::metadata(fx.at("p.sh")).unwrap().ino();
    fx.jail.write(&fx.p("p.sh"), "new", &PLAIN).unwrap();
    let m = std::fs::metadata(fx.at("p.sh")).unwrap();
    assert_eq!(m.mode() & 0o777, 0o751, "permission bits copied");
    assert_ne!(m.ino(), ino, "replaced, not rewritten in place");
    // New file: 0666 & ~umask.
    fx.jail.write(&fx.p("n.txt"), "n", &PLAIN).unwrap();
    let umask = current_umask();
    assert_eq!(
        std::fs::metadata(fx.at("n.txt")).unwrap().mode() & 0o777,
        0o666 & !umask
    );
    assert_eq!(names(&fx, ""), ["n.txt", "p.sh"]);
}

fn current_umask() -> u32 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(l["Umask:".len()..].trim(), 8).unwrap()
}

#[test]
fn writing_over_a_directory_changes_nothing() {
    // The failure of the rename itself (after the temporary was written) is pinned by the
    // unit test ops::write::tests::a_failed_replace_leaves_neither_partial_file_nor_temporary.
    let fx = Fx::new();
    fx.dir("d");
    fx.file("d/keep.txt", "keep");
    fx.dir("d/target.txt");
    fx.file("d/target.txt/inner", "i");
    assert_eq!(
        code(fx.jail.write(&fx.p("d/target.txt"), "x", &PLAIN)),
        ErrorCode::InternalError
    );
    assert_eq!(names(&fx, "d"), ["keep.txt", "target.txt"]);
    assert_eq!(names(&fx, "d/target.txt"), ["inner"]);
}

#[test]
fn a_removed_parent_is_not_found() {
    let fx = Fx::new();
    fx.dir("gone");
    std::fs::remove_dir(fx.at("gone")).unwrap();
    assert_eq!(
        code(fx.jail.write(&fx.p("gone/f"), "x", &PLAIN)),
        ErrorCode::PathNotFound
    );
    assert!(!fx.at("gone").exists());
}
