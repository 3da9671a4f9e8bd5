//! Section 9: FILE_LIST.

use shim_jail::ListOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

fn names(r: &shim_jail::ListResult) -> Vec<String> {
    r.entries.iter().map(|e| e.path.clone()).collect()
}

fn tree(fx: &Fx) {
    fx.file("b.txt", "bb");
    fx.file("a.md", "a");
    fx.file(".hidden", "h");
    fx.file("sub/c.txt", "c");
    fx.file("sub/.dot.txt", "d");
    fx.file(".git/config.txt", "g");
    fx.file("sub/inner/d.txt", "d");
}

#[test]
fn sorted_hidden_skipped_and_directory_level_preorder() {
    let fx = Fx::new();
    tree(&fx);
    let r = fx.jail.list(&fx.p(""), &ListOptions::default()).unwrap();
    assert_eq!(names(&r), [fx.p("a.md"), fx.p("b.txt"), fx.p("sub")]);
    assert!(!r.truncated);
    assert_eq!(r.path, fx.p(""));
    let e = &r.entries[1];
    assert_eq!(
        (
            e.name.as_str(),
            e.is_file,
            e.is_dir,
            e.is_symlink,
            e.size_bytes
        ),
        ("b.txt", true, false, false, 2)
    );
    assert!(e.mtime > 0.0);
    let rec = ListOptions {
        recursive: true,
        ..Default::default()
    };
    let r = fx.jail.list(&fx.p(""), &rec).unwrap();
    assert_eq!(
        names(&r),
        [
            fx.p("a.md"),
            fx.p("b.txt"),
            fx.p("sub"),
            fx.p("sub/c.txt"),
            fx.p("sub/inner"),
            fx.p("sub/inner/d.txt")
        ]
    );
    // Hidden directories are not descended into unless include_hidden.
    let all = ListOptions {
        recursive: true,
        include_hidden: true,
        ..Default::default()
    };
    let r = fx.jail.list(&fx.p(""), &all).unwrap();
    assert!(names(&r).contains(&fx.p(".git/config.txt")));
    assert!(names(&r).contains(&fx.p("sub/.dot.txt")));
    assert_eq!(names(&r)[0], fx.p(".git"));
}

#[test]
fn glob_filters_reports_not_descent() {
    let fx = Fx::new();
    tree(&fx);
    let o = ListOptions {
        glob: Some("*.txt".into()),
        recursive: true,
        ..Default::default()
    };
    let r = fx.jail.list(&fx.p(""), &o).unwrap();
    assert_eq!(
        names(&r),
        [fx.p("b.txt"), fx.p("sub/c.txt"), fx.p("sub/inner/d.txt")]
    );
    // Case-sensitive here (ext4/tmpfs without casefold).
    let o = ListOptions {
        glob: Some("*.TXT".into()),
        ..Default::default()
    };
    assert!(fx.jail.list(&fx.p(""), &o).unwrap().entries.is_empty());
    // A pattern with a separator matches nothing.
    let o = ListOptions {
        glob: Some("sub/*".into()),
        recursive: true,
        ..Default::default()
    };
    assert!(fx.jail.list(&fx.p(""), &o).unwrap().entries.is_empty());
}

#[test]
fn truncated_only_when_more_exist() {
    let fx = Fx::new();
    for n in ["a", "b", "c"] {
        fx.file(n, "");
    }
    let o = |m| ListOptions {
        max_entries: m,
        ..Default::default()
    };
    let r = fx.jail.list(&fx.p(""), &o(3)).unwrap();
    assert_eq!((r.entries.len(), r.truncated), (3, false));
    let r = fx.jail.list(&fx.p(""), &o(2)).unwrap();
    assert_eq!((r.entries.len(), r.truncated), (2, true));
    assert_eq!(
        code(fx.jail.list(&fx.p(""), &o(0))),
        ErrorCode::InternalError
    );
    // Hidden or glob-filtered leftovers do not make it truncated.
    fx.file(".z", "");
    let r = fx.jail.list(&fx.p(""), &o(3)).unwrap();
    assert!(!r.truncated);
}

#[test]
fn link_entries_reveal_only_inside_targets_and_are_never_descended() {
    let fx = Fx::new();
    fx.file("t.txt", "t");
    fx.file("d/x.txt", "x");
    fx.link("l_file", "t.txt");
    fx.link("l_dir", "d");
    fx.link("l_out", fx.outside.to_str().unwrap());
    fx.link("l_outfile", fx.outside.join("secret.txt").to_str().unwrap());
    fx.link("l_dangling", "nope");
    fx.link("l_abs_in", fx.at("t.txt").to_str().unwrap());
    let o = ListOptions {
        recursive: true,
        ..Default::default()
    };
    let r = fx.jail.list(&fx.p(""), &o).unwrap();
    let get = |n: &str| r.entries.iter().find(|e| e.name == n).unwrap().clone();
    let f = |n: &str| {
        let e = get(n);
        (e.is_symlink, e.is_file, e.is_dir)
    };
    assert_eq!(f("l_file"), (true, true, false));
    assert_eq!(f("l_dir"), (true, false, true));
    assert_eq!(f("l_out"), (true, false, false));
    assert_eq!(f("l_outfile"), (true, false, false));
    assert_eq!(f("l_dangling"), (true, false, false));
    assert_eq!(f("l_abs_in"), (true, true, false));
    assert_eq!(get("l_file").size_bytes, 5, "lstat size of the link");
    assert!(
        !names(&r)
            .iter()
            .any(|p| p.contains("l_dir/") || p.contains("l_out/"))
    );
}

#[test]
fn errors_and_followed_base() {
    let fx = Fx::new();
    fx.file("f.txt", "");
    fx.file("d/x", "");
    fx.link("ld", "d");
    fx.link("lo", fx.outside.to_str().unwrap());
    assert_eq!(
        code(fx.jail.list(&fx.p("nope"), &Default::default())),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.list(&fx.p("f.txt"), &Default::default())),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(fx.jail.list(&fx.p("lo"), &Default::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(
            fx.jail
                .list(fx.outside.to_str().unwrap(), &Default::default())
        ),
        ErrorCode::PathOutsideAllowedRoot
    );
    let r = fx.jail.list(&fx.p("ld"), &Default::default()).unwrap();
    assert_eq!(r.path, fx.p("d"));
    assert_eq!(names(&r), [fx.p("d/x")]);
}

#[test]
fn non_utf8_names_are_omitted() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    fx.file("ok", "");
    std::fs::write(fx.root.join(std::ffi::OsStr::from_bytes(b"bad\xff")), b"").unwrap();
    let r = fx
        .jail
        .list(
            &fx.p(""),
            &ListOptions {
                max_entries: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names(&r), [fx.p("ok")]);
    assert!(!r.truncated);
}

#[test]
fn recursive_listing_of_a_very_deep_tree_uses_no_deep_recursion() {
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
    drop(fd);
    let wire = fx.p("deep");
    let o = ListOptions {
        recursive: true,
        max_entries: 10_000,
        ..Default::default()
    };
    let r = std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn_scoped(s, || fx.jail.list(&wire, &o).unwrap())
            .unwrap()
            .join()
            .unwrap()
    });
    assert_eq!(r.entries.len(), 3000);
    assert!(r.entries[2999].path.ends_with(&"/d".repeat(3000)));
}
