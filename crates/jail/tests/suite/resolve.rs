//! Section 4: the resolver on real trees.

use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

fn read(fx: &Fx, p: &str) -> Result<String, ErrorCode> {
    fx.jail
        .read(p, &ReadOptions::default())
        .map(|r| r.content)
        .map_err(|e| e.code())
}

#[test]
fn j_lex_4_dotdot_is_physical_on_posix() {
    let fx = Fx::new();
    fx.file("sub/deep/x", "");
    fx.file("sub/a.txt", "sub-a");
    fx.file("a.txt", "root-a");
    fx.link("lnk", fx.at("sub/deep").to_str().unwrap());
    assert_eq!(read(&fx, &fx.p("lnk/../a.txt")).unwrap(), "sub-a");
    let st = fx.jail.stat(&fx.p("lnk/../a.txt"), true).unwrap().unwrap();
    assert_eq!(st.path, fx.p("sub/a.txt"));
}

#[test]
fn j_walk_3_missing_components() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    // child/../../outside → v goes negative.
    assert_eq!(
        read(&fx, &fx.p("child/../../outside/secret.txt")),
        Err(ErrorCode::PathOutsideAllowedRoot)
    );
    // child/../a.txt: missing/.. does not exist on POSIX.
    assert_eq!(
        read(&fx, &fx.p("child/../a.txt")),
        Err(ErrorCode::PathNotFound)
    );
    assert!(
        fx.jail
            .stat(&fx.p("child/../a.txt"), true)
            .unwrap()
            .is_none()
    );
    // A missing path outside the root is a jail error, never exists:false.
    assert_eq!(
        code(fx.jail.stat(&fx.rp("outside/nope"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(fx.jail.stat(&fx.rp("nope/x"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(fx.jail.stat("/definitely-missing-dir/x", true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    // Traversing a file is "missing".
    assert!(fx.jail.stat(&fx.p("a.txt/b"), true).unwrap().is_none());
    assert_eq!(read(&fx, &fx.p("a.txt/b")), Err(ErrorCode::PathNotFound));
}

#[test]
fn j_walk_4_leave_and_reenter() {
    let mut fx = Fx::new();
    fx.file("a.txt", "A");
    // <root>/../root/a.txt
    assert_eq!(read(&fx, &fx.p("../root/a.txt")).unwrap(), "A");
    // An absolute symlink inside the root whose target is spelled through root_path.
    fx.link("abs", fx.at("a.txt").to_str().unwrap());
    assert_eq!(read(&fx, &fx.p("abs")).unwrap(), "A");
    // A chain leaving and re-entering: <root>/l1 → <outside>/l2 → <root>/a.txt.
    std::os::unix::fs::symlink(fx.at("a.txt"), fx.outside.join("l2")).unwrap();
    fx.mark();
    fx.link("l1", fx.outside.join("l2").to_str().unwrap());
    assert_eq!(read(&fx, &fx.p("l1")).unwrap(), "A");
    let st = fx.jail.stat(&fx.p("l1"), true).unwrap().unwrap();
    assert_eq!(st.path, fx.p("a.txt"));
    assert!(st.is_symlink);
    // Outside link to outside file: outside.
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.outside.join("l3")).unwrap();
    fx.mark();
    fx.link("l4", fx.outside.join("l3").to_str().unwrap());
    assert_eq!(
        read(&fx, &fx.p("l4")),
        Err(ErrorCode::PathOutsideAllowedRoot)
    );
    // Path spelled from outside that walks through an outside link into the root.
    std::os::unix::fs::symlink(&fx.root, fx.outside.join("toroot")).unwrap();
    fx.mark();
    assert_eq!(read(&fx, &fx.rp("outside/toroot/a.txt")).unwrap(), "A");
    fx.assert_outside_untouched();
}

#[test]
fn symlink_loops_and_long_chains_are_invalid_chars() {
    let fx = Fx::new();
    fx.link("loop1", "loop2");
    fx.link("loop2", "loop1");
    fx.link("self", "self");
    for p in ["loop1", "self", "loop1/x"] {
        assert_eq!(read(&fx, &fx.p(p)), Err(ErrorCode::PathInvalidChars), "{p}");
    }
    assert_eq!(
        code(fx.jail.stat(&fx.p("loop1"), true)),
        ErrorCode::PathInvalidChars
    );
    // Not following: the loop is just a link.
    assert!(
        fx.jail
            .stat(&fx.p("loop1"), false)
            .unwrap()
            .unwrap()
            .is_symlink
    );
    // A chain of 40 links resolves; 41 does not.
    fx.file("t.txt", "T");
    let mut prev = "t.txt".to_owned();
    for i in 0..41 {
        let name = format!("c{i}");
        fx.link(&name, &prev);
        prev = name;
    }
    assert_eq!(read(&fx, &fx.p("c39")).unwrap(), "T");
    assert_eq!(read(&fx, &fx.p("c40")), Err(ErrorCode::PathInvalidChars));
}

#[test]
fn over_long_names_are_invalid_chars() {
    let fx = Fx::new();
    let long = "x".repeat(256);
    assert_eq!(read(&fx, &fx.p(&long)), Err(ErrorCode::PathInvalidChars));
    assert_eq!(
        code(fx.jail.write(&fx.p(&long), "x", &WriteOptions::default())),
        ErrorCode::PathInvalidChars
    );
    let deep = format!("{}/f", "d/".repeat(2100));
    assert_eq!(
        code(fx.jail.stat(&fx.p(&deep), true)),
        ErrorCode::PathInvalidChars
    );
}

#[test]
fn j_str_1_nul_and_error_precedence() {
    let fx = Fx::new();
    // String checks before resolution: NUL in an outside path is invalid chars.
    assert_eq!(read(&fx, "/etc/\0passwd"), Err(ErrorCode::PathInvalidChars));
    assert_eq!(read(&fx, "rel\0"), Err(ErrorCode::PathInvalidChars));
}

#[test]
fn j_lex_1_trailing_separator_does_not_force_following() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    assert_eq!(read(&fx, &format!("{}/", fx.p("a.txt"))).unwrap(), "A");
    fx.link("l", fx.outside.to_str().unwrap());
    let st = fx
        .jail
        .stat(&format!("{}/", fx.p("l")), false)
        .unwrap()
        .unwrap();
    assert!(st.is_symlink);
}

#[test]
fn j_lex_2_tilde_expands_to_home() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    let cfg = shim_jail::JailConfig {
        home: Some(fx.r.to_str().unwrap().to_owned()),
        ..Default::default()
    };
    let j = shim_jail::JailRoot::open(&fx.root, cfg, cap_std::ambient_authority()).unwrap();
    assert_eq!(
        j.read("~/root/a.txt", &ReadOptions::default())
            .unwrap()
            .content,
        "A"
    );
    assert_eq!(
        code(j.read("~/outside/secret.txt", &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn display_path_follows_the_walk() {
    let fx = Fx::new();
    fx.file("d1/d2/f.txt", "F");
    fx.link("ld", "d1/d2");
    let st = fx.jail.stat(&fx.p("ld/f.txt"), true).unwrap().unwrap();
    assert_eq!(st.path, fx.p("d1/d2/f.txt"));
    assert!(!st.is_symlink, "only the named final component counts");
    let st = fx
        .jail
        .stat(&fx.p("d1//./d2/../d2/f.txt"), true)
        .unwrap()
        .unwrap();
    assert_eq!(st.path, fx.p("d1/d2/f.txt"));
}

#[test]
fn magic_links_are_followed_as_text() {
    // /proc/self/root is an ordinary absolute link in the walk ("/"), so
    // /proc/self/root<root>/a.txt reaches the root again.
    let fx = Fx::new();
    fx.file("a.txt", "A");
    let via_proc = format!("/proc/self/root{}", fx.p("a.txt"));
    if std::path::Path::new("/proc/self/root").exists() {
        assert_eq!(read(&fx, &via_proc).unwrap(), "A");
        assert_eq!(
            read(&fx, "/proc/self/root/etc/hostname"),
            Err(ErrorCode::PathOutsideAllowedRoot)
        );
    }
}

#[test]
fn error_messages_name_the_requested_path_on_every_route() {
    let fx = Fx::new();
    fx.dir("a/b");
    fx.link("a/b/loop", "loop");
    fx.link("a/b/out", fx.outside.join("x").to_str().unwrap());
    for (p, c) in [
        ("a/b/loop", ErrorCode::PathInvalidChars),
        ("a/b/out", ErrorCode::PathOutsideAllowedRoot),
    ] {
        let wire = fx.p(p);
        let e = fx
            .jail
            .write(&wire, "x", &WriteOptions::default())
            .unwrap_err();
        assert_eq!(e.code(), c);
        assert!(e.to_string().contains(&wire), "{e}");
        let e = fx.jail.read(&wire, &ReadOptions::default()).unwrap_err();
        assert!(e.to_string().contains(&wire), "{e}");
    }
}
