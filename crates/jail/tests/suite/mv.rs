//! Section 11: FILE_MOVE.

use shim_jail::MoveOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

const NO: MoveOptions = MoveOptions { overwrite: false };
const YES: MoveOptions = MoveOptions { overwrite: true };

#[test]
fn rename_and_move_between_directories() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    fx.dir("d");
    let r = fx
        .jail
        .rename(&fx.p("a.txt"), &fx.p("d/b.txt"), &NO)
        .unwrap();
    assert_eq!((r.src, r.dst), (fx.p("a.txt"), fx.p("d/b.txt")));
    assert_eq!(std::fs::read_to_string(fx.at("d/b.txt")).unwrap(), "A");
    assert!(!fx.at("a.txt").exists());
}

#[test]
fn existence_rules() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    fx.file("b.txt", "B");
    fx.dir("d");
    assert_eq!(
        code(fx.jail.rename(&fx.p("nope"), &fx.p("x"), &NO)),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.rename(&fx.p("a.txt"), &fx.p("m/x"), &NO)),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.rename(&fx.p("a.txt"), &fx.p("b.txt"), &NO)),
        ErrorCode::PathExists
    );
    // dst is never "move into this directory".
    assert_eq!(
        code(fx.jail.rename(&fx.p("a.txt"), &fx.p("d"), &NO)),
        ErrorCode::PathExists
    );
    // A dangling symlink at dst is an existing entry.
    fx.link("dl", "nowhere");
    assert_eq!(
        code(fx.jail.rename(&fx.p("a.txt"), &fx.p("dl"), &NO)),
        ErrorCode::PathExists
    );
    assert_eq!(std::fs::read_to_string(fx.at("a.txt")).unwrap(), "A");
}

#[test]
fn precedence_src_jail_error_first() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    let out = fx.outside.join("secret.txt");
    let e = fx
        .jail
        .rename(out.to_str().unwrap(), "rel", &NO)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
    assert!(e.to_string().contains("secret.txt"));
    let e = fx
        .jail
        .rename(&fx.p("nope"), out.to_str().unwrap(), &NO)
        .unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::PathOutsideAllowedRoot,
        "jail error beats src missing"
    );
    assert_eq!(
        code(fx.jail.rename(&fx.p("a.txt"), &fx.rp("outside/new"), &YES)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(fx.at("a.txt").exists());
    fx.assert_outside_untouched();
}

#[test]
fn overwrite_replaces_entries_not_link_targets() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    fx.file("b.txt", "B");
    fx.jail
        .rename(&fx.p("a.txt"), &fx.p("b.txt"), &YES)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.at("b.txt")).unwrap(),
        "B".replace('B', "A")
    );
    // A symlink at dst is replaced; its target directory is untouched.
    fx.file("keepdir/k", "k");
    fx.link("ldst", "keepdir");
    fx.file("c.txt", "C");
    fx.jail.rename(&fx.p("c.txt"), &fx.p("ldst"), &YES).unwrap();
    assert_eq!(std::fs::read_to_string(fx.at("ldst")).unwrap(), "C");
    assert!(fx.at("keepdir/k").exists());
    // Directory over a non-empty directory; file over a directory; directory over a file.
    fx.file("s/new.txt", "new");
    fx.file("t/old.txt", "old");
    fx.jail.rename(&fx.p("s"), &fx.p("t"), &YES).unwrap();
    assert!(fx.at("t/new.txt").exists() && !fx.at("t/old.txt").exists() && !fx.at("s").exists());
    fx.file("f", "f");
    fx.jail.rename(&fx.p("f"), &fx.p("t"), &YES).unwrap();
    assert_eq!(std::fs::read_to_string(fx.at("t")).unwrap(), "f");
    fx.file("dd/x", "x");
    fx.jail.rename(&fx.p("dd"), &fx.p("t"), &YES).unwrap();
    assert!(fx.at("t/x").exists());
    // No set-aside leftovers.
    let leftovers: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".~agpt")
        })
        .collect();
    assert!(leftovers.is_empty());
    // Overwrite with an outside link at dst: only the link entry is replaced.
    fx.link("lo", fx.outside.to_str().unwrap());
    fx.file("g", "g");
    fx.jail.rename(&fx.p("g"), &fx.p("lo"), &YES).unwrap();
    fx.assert_outside_untouched();
}

#[test]
fn same_entry_and_hard_links() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    for o in [NO, YES] {
        fx.jail.rename(&fx.p("a.txt"), &fx.p("a.txt"), &o).unwrap();
        fx.jail
            .rename(&fx.p("a.txt"), &fx.p("./a.txt"), &o)
            .unwrap();
        assert_eq!(std::fs::read_to_string(fx.at("a.txt")).unwrap(), "A");
    }
    // Case-only rename on a case-sensitive filesystem is an ordinary rename.
    fx.jail.rename(&fx.p("a.txt"), &fx.p("A.TXT"), &NO).unwrap();
    assert!(fx.at("A.TXT").exists() && !fx.at("a.txt").exists());
    // Two hard links of one file are not the same entry.
    std::fs::hard_link(fx.at("A.TXT"), fx.at("h.txt")).unwrap();
    assert_eq!(
        code(fx.jail.rename(&fx.p("A.TXT"), &fx.p("h.txt"), &NO)),
        ErrorCode::PathExists
    );
    fx.jail
        .rename(&fx.p("A.TXT"), &fx.p("h.txt"), &YES)
        .unwrap();
    assert!(!fx.at("A.TXT").exists());
    assert_eq!(std::fs::read_to_string(fx.at("h.txt")).unwrap(), "A");
}

#[test]
fn links_move_as_links_even_pointing_outside() {
    let fx = Fx::new();
    fx.dir("d");
    fx.link("lo", fx.outside.to_str().unwrap());
    fx.jail.rename(&fx.p("lo"), &fx.p("d/lo2"), &NO).unwrap();
    assert_eq!(std::fs::read_link(fx.at("d/lo2")).unwrap(), fx.outside);
    fx.assert_outside_untouched();
}

#[test]
fn a_directory_cannot_move_into_itself() {
    let fx = Fx::new();
    fx.dir("a/b");
    assert_eq!(
        code(fx.jail.rename(&fx.p("a"), &fx.p("a/b/c"), &NO)),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(fx.jail.rename(&fx.p("a"), &fx.p("a/c"), &NO)),
        ErrorCode::InternalError
    );
    fx.file("a/b/f", "");
    assert_eq!(
        code(fx.jail.rename(&fx.p("a"), &fx.p("a/b"), &YES)),
        ErrorCode::InternalError
    );
    assert!(fx.at("a/b/f").exists());
}
