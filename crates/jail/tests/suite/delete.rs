//! Section 10: FILE_DELETE.

use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

const REC: DeleteOptions = DeleteOptions {
    recursive: true,
    missing_ok: false,
};
const PLAIN: DeleteOptions = DeleteOptions {
    recursive: false,
    missing_ok: false,
};
const MISSING_OK: DeleteOptions = DeleteOptions {
    recursive: false,
    missing_ok: true,
};

#[test]
fn files_dirs_and_not_empty() {
    let fx = Fx::new();
    fx.file("f.txt", "");
    fx.dir("empty");
    fx.file("full/a/b.txt", "");
    let r = fx.jail.delete(&fx.p("f.txt"), &PLAIN).unwrap();
    assert_eq!(r.path, Some(fx.p("f.txt")));
    fx.jail.delete(&fx.p("empty"), &PLAIN).unwrap();
    assert_eq!(
        code(fx.jail.delete(&fx.p("full"), &PLAIN)),
        ErrorCode::PathNotEmpty
    );
    assert!(fx.at("full/a/b.txt").exists());
    fx.jail.delete(&fx.p("full"), &REC).unwrap();
    assert!(!fx.at("full").exists());
}

#[test]
fn missing_ok_and_idempotency() {
    let fx = Fx::new();
    assert_eq!(
        code(fx.jail.delete(&fx.p("nope"), &PLAIN)),
        ErrorCode::PathNotFound
    );
    let r = fx.jail.delete(&fx.p("nope"), &MISSING_OK).unwrap();
    assert_eq!(r.path, None);
    fx.jail.delete(&fx.p("nope/deeper/x"), &MISSING_OK).unwrap();
    fx.file("x", "");
    fx.jail.delete(&fx.p("x"), &MISSING_OK).unwrap();
    fx.jail.delete(&fx.p("x"), &MISSING_OK).unwrap();
    // Jail errors take precedence over missing_ok.
    assert_eq!(
        code(fx.jail.delete(&fx.rp("outside/nope"), &MISSING_OK)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(fx.jail.delete(&fx.rp("outside/secret.txt"), &MISSING_OK)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(fx.outside.join("secret.txt").exists());
}

#[test]
fn links_of_every_kind_are_removed_as_links() {
    let fx = Fx::new();
    fx.file("d/keep.txt", "k");
    fx.link("a", "d");
    fx.link("b", fx.outside.to_str().unwrap());
    fx.link("c", "dangling");
    fx.link("loop", "loop");
    for n in ["a", "b", "c", "loop"] {
        fx.jail.delete(&fx.p(n), &REC).unwrap();
        assert!(std::fs::symlink_metadata(fx.at(n)).is_err());
    }
    assert!(fx.at("d/keep.txt").exists());
    fx.assert_outside_untouched();
}

#[test]
fn recursive_removal_never_follows_links_inside_the_tree() {
    let fx = Fx::new();
    fx.file("t/a/b.txt", "");
    fx.file("keep/k.txt", "k");
    fx.link("t/out", fx.outside.to_str().unwrap());
    fx.link("t/a/in", "../../keep");
    fx.jail.delete(&fx.p("t"), &REC).unwrap();
    assert!(!fx.at("t").exists());
    assert!(fx.at("keep/k.txt").exists());
    fx.assert_outside_untouched();
}

#[test]
fn deleting_through_a_linked_parent_stays_inside() {
    let fx = Fx::new();
    fx.file("d/x.txt", "");
    fx.link("ld", "d");
    fx.jail.delete(&fx.p("ld/x.txt"), &PLAIN).unwrap();
    assert!(!fx.at("d/x.txt").exists());
    fx.link("lo", fx.outside.to_str().unwrap());
    assert_eq!(
        code(fx.jail.delete(&fx.p("lo/secret.txt"), &PLAIN)),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_untouched();
}

#[test]
fn dir_reached_by_dotdot_is_deleted_by_its_own_entry() {
    let fx = Fx::new();
    fx.file("a/b/x", "");
    fx.dir("a/c");
    fx.jail.delete(&fx.p("a/c/../b"), &REC).unwrap();
    assert!(!fx.at("a/b").exists());
    assert!(fx.at("a/c").exists());
}

#[test]
fn trash_mode_moves_entries_out_of_the_root() {
    let fx = Fx::new();
    let trash = fx._t.path().join("state").join("trash");
    let cfg = JailConfig {
        trash_dir: Some(trash.clone()),
        ..Default::default()
    };
    let j = JailRoot::open(&fx.root, cfg, cap_std::ambient_authority()).unwrap();
    fx.file("f.txt", "F");
    fx.file("d/x", "X");
    fx.dir("e");
    fx.link("l", fx.outside.to_str().unwrap());
    let r = j.delete(&fx.p("f.txt"), &PLAIN).unwrap();
    let to = r.trashed_to.unwrap();
    assert!(to.ends_with("/f.txt"));
    assert_eq!(std::fs::read_to_string(&to).unwrap(), "F");
    let bucket = std::path::Path::new(&to)
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(bucket.len(), "20260101T000000Z-0123abcd".len());
    assert!(bucket.as_bytes()[8] == b'T' && bucket.as_bytes()[15] == b'Z');
    assert!(!fx.at("f.txt").exists());
    assert_eq!(code(j.delete(&fx.p("d"), &PLAIN)), ErrorCode::PathNotEmpty);
    j.delete(&fx.p("d"), &REC).unwrap();
    j.delete(&fx.p("e"), &PLAIN).unwrap();
    let to = j.delete(&fx.p("l"), &PLAIN).unwrap().trashed_to.unwrap();
    assert!(
        std::fs::symlink_metadata(&to)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(fx.outside.join("secret.txt").exists());
    // The trash is never reachable through the jail.
    assert_eq!(code(j.stat(&to, false)), ErrorCode::PathOutsideAllowedRoot);
}

#[test]
fn recursive_delete_of_a_very_deep_tree_uses_no_deep_recursion() {
    use rustix::fs::Mode;
    use rustix::fs::OFlags;
    let fx = Fx::new();
    fx.dir("deep");
    let mut fd = rustix::fs::open(
        fx.at("deep"),
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .unwrap();
    for _ in 0..3000 {
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, "d", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
            .unwrap();
    }
    rustix::fs::openat(
        &fd,
        "f",
        OFlags::WRONLY | OFlags::CREATE,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    drop(fd);
    let wire = fx.p("deep");
    // A small stack (like a runtime worker thread's) must suffice.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn_scoped(s, || fx.jail.delete(&wire, &REC).unwrap())
            .unwrap()
            .join()
            .unwrap();
    });
    assert!(!fx.at("deep").exists());
}
