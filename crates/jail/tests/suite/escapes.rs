//! Section 3 (and 14): each of the incumbent's escapes, now refused or contained.

use std::os::unix::fs::MetadataExt;

use shim_jail::DeleteOptions;
use shim_jail::MoveOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

const PARENTS: WriteOptions = WriteOptions {
    encoding: shim_jail::ContentEncoding::Utf8,
    create_parents: true,
};

#[test]
fn escape_2_write_through_a_dangling_symlink_to_outside() {
    let fx = Fx::new();
    let target = fx.outside.join("created.txt");
    fx.link("dangling", target.to_str().unwrap());
    fx.link("rel_dangling", "../outside/created2.txt");
    for opts in [WriteOptions::default(), PARENTS] {
        let e = fx
            .jail
            .write(&fx.p("dangling"), "pwned", &opts)
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
        assert_eq!(
            code(fx.jail.write(&fx.p("rel_dangling"), "pwned", &opts)),
            ErrorCode::PathOutsideAllowedRoot
        );
    }
    assert!(!target.exists());
    assert!(!fx.outside.join("created2.txt").exists());
    fx.assert_outside_untouched();
}

#[test]
fn escape_3_create_parents_with_dotdot() {
    let fx = Fx::new();
    let wire = fx.p("newdir/../../outside/pwned.txt");
    assert_eq!(
        code(fx.jail.write(&wire, "x", &PARENTS)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(!fx.at("newdir").exists());
    assert!(!fx.outside.join("pwned.txt").exists());
    // Through an outside link with create_parents: nothing is created outside.
    fx.link("outlink", fx.outside.to_str().unwrap());
    let wire = fx.p("outlink/newdeep/new.txt");
    assert_eq!(
        code(fx.jail.write(&wire, "x", &PARENTS)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(!fx.outside.join("newdeep").exists());
    fx.assert_outside_untouched();
}

#[test]
fn escape_1_string_check_then_use_is_gone_handles_only() {
    // A check-then-use jail would read outside if `sub` became a link after the check;
    // ours never re-resolves: the race test (race.rs) swaps continuously. Here the static
    // form: a link in the middle of the path pointing outside is refused.
    let fx = Fx::new();
    fx.link("sub", fx.outside.to_str().unwrap());
    assert_eq!(
        code(fx.jail.read(&fx.p("sub/secret.txt"), &Default::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_untouched();
}

#[test]
fn escape_4_leaf_of_a_new_file_is_validated() {
    let fx = Fx::new();
    assert_eq!(
        code(fx.jail.write(&fx.p("new\0.txt"), "x", &PARENTS)),
        ErrorCode::PathInvalidChars
    );
    // Windows leaf rules are pure functions tested in lexical_tests.rs; on POSIX these
    // names are ordinary (4.2).
    fx.jail
        .write(&fx.p("CON"), "x", &WriteOptions::default())
        .unwrap();
    fx.jail
        .write(&fx.p("a.txt:stream"), "x", &WriteOptions::default())
        .unwrap();
    assert!(fx.at("a.txt:stream").exists());
    fx.assert_outside_untouched();
}

#[test]
fn escape_5_delete_and_move_act_on_links_not_targets() {
    let fx = Fx::new();
    fx.file("in.txt", "inside");
    fx.dir("d");
    fx.file("d/child.txt", "c");
    fx.link("to_in", "in.txt");
    fx.link("to_out", fx.outside.join("secret.txt").to_str().unwrap());
    fx.link("to_dir", "d");
    fx.link("to_outdir", fx.outside.to_str().unwrap());
    // Delete a link to an inside file: the file stays.
    fx.jail
        .delete(&fx.p("to_in"), &DeleteOptions::default())
        .unwrap();
    assert_eq!(std::fs::read_to_string(fx.at("in.txt")).unwrap(), "inside");
    // A link pointing outside can be removed; its target stays.
    fx.jail
        .delete(&fx.p("to_out"), &DeleteOptions::default())
        .unwrap();
    // Recursive delete of a link to a directory removes only the link.
    fx.jail
        .delete(
            &fx.p("to_dir"),
            &DeleteOptions {
                recursive: true,
                missing_ok: false,
            },
        )
        .unwrap();
    assert!(fx.at("d/child.txt").exists());
    fx.jail
        .delete(
            &fx.p("to_outdir"),
            &DeleteOptions {
                recursive: true,
                missing_ok: false,
            },
        )
        .unwrap();
    assert!(std::fs::symlink_metadata(fx.at("to_outdir")).is_err());
    // Move a link: the link moves, its target stays.
    fx.link("to_in2", "in.txt");
    fx.jail
        .rename(
            &fx.p("to_in2"),
            &fx.p("moved_link"),
            &MoveOptions::default(),
        )
        .unwrap();
    assert!(
        std::fs::symlink_metadata(fx.at("moved_link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(fx.at("in.txt").exists());
    // STAT without following describes the link.
    fx.link("to_out2", fx.outside.join("secret.txt").to_str().unwrap());
    let st = fx.jail.stat(&fx.p("to_out2"), false).unwrap().unwrap();
    assert!(st.is_symlink && !st.is_file && !st.is_dir && st.mime_type.is_none());
    assert_eq!(
        code(fx.jail.stat(&fx.p("to_out2"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_untouched();
}

#[test]
fn escape_6_root_destruction_and_destructive_overwrite() {
    let fx = Fx::new();
    fx.file("a.txt", "A");
    for rec in [false, true] {
        assert_eq!(
            code(fx.jail.delete(
                &fx.p(""),
                &DeleteOptions {
                    recursive: rec,
                    missing_ok: true
                }
            )),
            ErrorCode::PathOutsideAllowedRoot
        );
    }
    assert_eq!(
        code(
            fx.jail
                .rename(&fx.p("a.txt"), &fx.p(""), &MoveOptions { overwrite: true })
        ),
        ErrorCode::PathOutsideAllowedRoot
    );
    // src == dst with overwrite keeps the file.
    fx.jail
        .rename(
            &fx.p("a.txt"),
            &fx.p("a.txt"),
            &MoveOptions { overwrite: true },
        )
        .unwrap();
    assert_eq!(std::fs::read_to_string(fx.at("a.txt")).unwrap(), "A");
    assert!(fx.root.is_dir());
    fx.assert_outside_untouched();
}

#[test]
fn escape_hard_link_write_does_not_modify_the_other_name() {
    let fx = Fx::new();
    let outside_file = fx.outside.join("secret.txt");
    std::fs::hard_link(&outside_file, fx.at("hl.txt")).unwrap();
    let ino = std::fs::metadata(&outside_file).unwrap().ino();
    fx.jail
        .write(&fx.p("hl.txt"), "new content", &WriteOptions::default())
        .unwrap();
    assert_eq!(std::fs::read_to_string(&outside_file).unwrap(), "secret");
    assert_eq!(
        std::fs::read_to_string(fx.at("hl.txt")).unwrap(),
        "new content"
    );
    // Deleting a hard link removes only the inside name (10.3).
    std::fs::hard_link(&outside_file, fx.at("hl2.txt")).unwrap();
    fx.jail
        .delete(&fx.p("hl2.txt"), &DeleteOptions::default())
        .unwrap();
    assert!(outside_file.exists());
    assert_eq!(std::fs::metadata(&outside_file).unwrap().nlink(), 1);
    // Only the link count of the outside inode changed (its other names went away).
    assert_eq!(std::fs::metadata(&outside_file).unwrap().ino(), ino);
    assert_eq!(std::fs::read_to_string(&outside_file).unwrap(), "secret");
}

// mknodat is Linux-only in rustix.
#[cfg(target_os = "linux")]
#[test]
fn escape_8_fifo_read_does_not_block() {
    let fx = Fx::new();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.at("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert_eq!(
        code(fx.jail.read(&fx.p("fifo"), &Default::default())),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(fx.jail.write(&fx.p("fifo"), "x", &Default::default())),
        ErrorCode::InternalError
    );
}

#[test]
fn escape_13_14_relative_and_tilde_user_are_outside() {
    let fx = Fx::new();
    for p in ["a.txt", "", ".", "~root/x", "../outside/secret.txt"] {
        assert_eq!(
            code(fx.jail.read(p, &Default::default())),
            ErrorCode::PathOutsideAllowedRoot,
            "{p:?}"
        );
    }
}
