//! The Windows jail on a real NTFS-like volume (run under Wine in CI, `cargo xtask
//! wine-test`): the Windows attack list of JAIL_FILES_EXEC.md 4.2-4.5 and every FILE_*
//! operation with the error codes of 5.4. Fixture per 15: a fresh `R` with the root
//! `R\root`, a sibling `R\outside` and a look-alike `R\rootx`; after every case nothing
//! outside the root may have changed.
#![cfg(windows)]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use shim_jail::ContentEncoding;
use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

struct Fx {
    _t: tempfile::TempDir,
    r: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    jail: Option<JailRoot>,
    before: BTreeMap<PathBuf, Option<Vec<u8>>>,
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() && !m.file_type().is_symlink() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
            out.insert(p, None);
        } else if m.is_file() {
            out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
        } else {
            out.insert(p, None);
        }
    }
    out
}

impl Fx {
    fn new() -> Fx {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().to_path_buf();
        let root = r.join("root");
        let outside = r.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(r.join("rootx")).unwrap();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        std::fs::write(root.join("sub").join("b.txt"), "bee").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        std::fs::write(r.join("rootx").join("x.txt"), "x").unwrap();
        let jail =
            JailRoot::open(&root, JailConfig::default(), shim_jail::ambient_authority()).unwrap();
        let mut fx = Fx {
            _t: t,
            r,
            root,
            outside,
            jail: Some(jail),
            before: BTreeMap::new(),
        };
        fx.before = fx.outside_snapshot();
        fx
    }

    fn jail(&self) -> &JailRoot {
        self.jail.as_ref().unwrap()
    }

    /// The root as the jail spells it (final path), and the `R` beside it.
    fn rp(&self) -> String {
        self.jail().root_path().to_owned()
    }

    fn p(&self, rel: &str) -> String {
        format!("{}\\{rel}", self.rp())
    }

    fn outside_snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut s = snapshot(&self.outside);
        s.extend(snapshot(&self.r.join("rootx")));
        let mut top: Vec<_> = std::fs::read_dir(&self.r)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        top.sort();
        s.insert(PathBuf::from(format!("top:{top:?}")), None);
        s
    }

    fn assert_outside_unchanged(&self) {
        assert_eq!(
            self.outside_snapshot(),
            self.before,
            "something outside the root changed"
        );
    }
}

impl Drop for Fx {
    fn drop(&mut self) {
        // Drop the root handle before the directory is deleted (Windows sharing rules).
        self.jail = None;
    }
}

fn code<T: std::fmt::Debug>(r: Result<T, shim_jail::JailError>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn plain() -> WriteOptions {
    WriteOptions {
        encoding: ContentEncoding::Utf8,
        create_parents: false,
    }
}

fn parents() -> WriteOptions {
    WriteOptions {
        encoding: ContentEncoding::Utf8,
        create_parents: true,
    }
}

/// A directory junction `link` → `target` (no privilege needed on Windows). `None` when
/// this Windows (or Wine) cannot create one.
fn junction(link: &Path, target: &Path) -> Option<()> {
    let out = std::process::Command::new("cmd")
        .args(["/C", "mklink", "/J"])
        .arg(link)
        .arg(target)
        .output()
        .ok()?;
    let made = out.status.success()
        && std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink());
    if made {
        return Some(());
    }
    let _ = std::fs::remove_dir(link);
    std::os::windows::fs::symlink_dir(target, link).ok()?;
    std::fs::symlink_metadata(link)
        .is_ok_and(|m| m.file_type().is_symlink())
        .then_some(())
}

macro_rules! need_links {
    ($e:expr, $name:literal) => {
        if $e.is_none() {
            eprintln!(
                "SKIP {}: this Windows cannot create junctions or symlinks",
                $name
            );
            return;
        }
    };
}

#[test]
fn reads_writes_and_reads_back_inside() {
    let fx = Fx::new();
    let j = fx.jail();
    let r = j.read(&fx.p("a.txt"), &ReadOptions::default()).unwrap();
    assert_eq!(r.content, "hello");
    assert_eq!(r.path, fx.p("a.txt"));
    let w = j.write(&fx.p("new.txt"), "fresh", &plain()).unwrap();
    assert_eq!(w.size_bytes_written, 5);
    assert_eq!(std::fs::read(fx.root.join("new.txt")).unwrap(), b"fresh");
    // Replace keeps no temporary file behind.
    j.write(&fx.p("new.txt"), "second", &plain()).unwrap();
    assert_eq!(std::fs::read(fx.root.join("new.txt")).unwrap(), b"second");
    let names: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.to_string_lossy().starts_with(".~agpt")),
        "{names:?}"
    );
    // Forward slashes and mixed separators are the same path (J-LEX-1).
    let fwd = fx.p("sub/b.txt");
    assert_eq!(
        j.read(&fwd, &ReadOptions::default()).unwrap().content,
        "bee"
    );
    fx.assert_outside_unchanged();
}

#[test]
fn outside_paths_and_dotdot_escapes_are_refused() {
    let fx = Fx::new();
    let j = fx.jail();
    let outside = fx.outside.join("secret.txt");
    let cases = [
        outside.to_string_lossy().into_owned(),
        fx.p("..\\outside\\secret.txt"),
        fx.p("sub\\..\\..\\outside\\secret.txt"),
        fx.p("..\\rootx\\x.txt"),
        fx.p("SUB\\..\\..\\OUTSIDE\\secret.txt"),
    ];
    for c in &cases {
        assert_eq!(
            code(j.read(c, &ReadOptions::default())),
            ErrorCode::PathOutsideAllowedRoot,
            "{c}"
        );
        assert_eq!(
            code(j.write(c, "pwned", &parents())),
            ErrorCode::PathOutsideAllowedRoot,
            "{c}"
        );
        assert_eq!(
            code(j.delete(c, &DeleteOptions::default())),
            ErrorCode::PathOutsideAllowedRoot,
            "{c}"
        );
        assert_eq!(
            code(j.stat(c, true)),
            ErrorCode::PathOutsideAllowedRoot,
            "{c}"
        );
    }
    // 7.3: a missing directory and `..` may not carry a write outside.
    assert_eq!(
        code(j.write(&fx.p("newdir\\..\\..\\outside\\pwned.txt"), "x", &parents())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert!(!fx.root.join("newdir").exists());
    // A missing path outside is a jail error, never exists:false.
    assert_eq!(
        code(j.stat(&fx.outside.join("nope").to_string_lossy(), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_unchanged();
}

#[test]
fn leave_and_reenter_and_case_variants_reach_the_root() {
    let fx = Fx::new();
    let j = fx.jail();
    // J-WALK-4: out and back in by the root's own name; case variants (J-ID-1).
    assert_eq!(
        j.read(&fx.p("..\\root\\a.txt"), &ReadOptions::default())
            .unwrap()
            .content,
        "hello"
    );
    let upper = fx.rp().to_uppercase() + "\\A.TXT";
    assert_eq!(
        j.read(&upper, &ReadOptions::default()).unwrap().content,
        "hello"
    );
    let lower = fx.rp().to_lowercase() + "\\sub\\..\\a.txt";
    assert_eq!(
        j.read(&lower, &ReadOptions::default()).unwrap().content,
        "hello"
    );
    // Look-alike sibling (prefix confusion).
    let x = format!("{}x\\x.txt", fx.rp());
    assert_eq!(
        code(j.read(&x, &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn relative_drive_relative_rooted_and_device_prefixes_are_refused() {
    let fx = Fx::new();
    let j = fx.jail();
    let drive = fx.rp().chars().next().unwrap();
    for c in [
        "a.txt",
        "",
        ".",
        "C:a.txt",
        &format!("{drive}:a.txt"),
        "\\Users\\x",
        "~x\\y",
    ] {
        assert_eq!(
            code(j.read(c, &ReadOptions::default())),
            ErrorCode::PathOutsideAllowedRoot,
            "{c:?}"
        );
    }
    let verbatim = format!(r"\\?\{}", fx.p("a.txt"));
    let device = format!(r"\\.\{}", fx.p("a.txt"));
    let nt = format!(r"\??\{}", fx.p("a.txt"));
    for c in [
        verbatim.as_str(),
        device.as_str(),
        nt.as_str(),
        r"\\.\C:",
        r"\\server",
        r"\\server\",
    ] {
        assert_eq!(
            code(j.read(c, &ReadOptions::default())),
            ErrorCode::PathInvalidChars,
            "{c:?}"
        );
        assert_eq!(
            code(j.write(c, "x", &parents())),
            ErrorCode::PathInvalidChars,
            "{c:?}"
        );
    }
    // UNC paths are absolute; an unreachable share cannot enter the root.
    assert_eq!(
        code(j.read(r"\\no-such-server-i13\share\a.txt", &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.assert_outside_unchanged();
}

#[test]
fn streams_reserved_names_and_trailing_dots_are_refused_and_nothing_is_created() {
    let fx = Fx::new();
    let j = fx.jail();
    let reserved = [
        "CON",
        "con.txt",
        "Nul.tar.gz",
        "aux\\x.txt",
        "COM1",
        "com9.log",
        "LPT1",
        "lpt0.x",
        "COM0",
        "PRN",
        "CONIN$",
        "conout$.txt",
        "CON .txt",
        "COM\u{b9}",
        "sub\\NUL",
        "CON:x",
    ];
    for n in reserved {
        let p = fx.p(n);
        assert_eq!(
            code(j.write(&p, "x", &parents())),
            ErrorCode::PathReservedName,
            "{n}"
        );
        assert_eq!(
            code(j.read(&p, &ReadOptions::default())),
            ErrorCode::PathReservedName,
            "{n}"
        );
    }
    let invalid = [
        "a.txt:hidden",
        "a.txt::$DATA",
        "sub:s\\x",
        "a.txt.",
        "dir \\x.txt",
        "x.txt ",
        "a<b",
        "a>b",
        "a\"b",
        "a|b",
        "a?b",
        "a*b",
        "a\u{1}b",
    ];
    for n in invalid {
        let p = fx.p(n);
        assert_eq!(
            code(j.write(&p, "x", &parents())),
            ErrorCode::PathInvalidChars,
            "{n}"
        );
        assert_eq!(code(j.stat(&p, true)), ErrorCode::PathInvalidChars, "{n}");
    }
    // Not reserved.
    for n in ["CONSOLE", "con_x", "xcon.txt"] {
        j.write(&fx.p(n), "ok", &plain()).unwrap();
    }
    let mut names: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["CONSOLE", "a.txt", "con_x", "sub", "xcon.txt"]);
    // The stream was not written either.
    assert_eq!(std::fs::read(fx.root.join("a.txt")).unwrap(), b"hello");
    fx.assert_outside_unchanged();
}

#[test]
fn the_root_itself_cannot_be_written_deleted_or_moved() {
    let fx = Fx::new();
    let j = fx.jail();
    let root = fx.rp();
    assert_eq!(
        code(j.write(&root, "x", &plain())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.delete(
            &root,
            &DeleteOptions {
                recursive: true,
                missing_ok: false
            }
        )),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.delete(
            &fx.p("sub\\.."),
            &DeleteOptions {
                recursive: true,
                missing_ok: false
            }
        )),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.rename(&root, &fx.p("moved"), &MoveOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.rename(&fx.p("sub"), &root, &MoveOptions { overwrite: true })),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.read(&root, &ReadOptions::default())),
        ErrorCode::InternalError
    );
    let st = j.stat(&root, true).unwrap().unwrap();
    assert!(st.is_dir);
    assert!(fx.root.join("a.txt").exists() && fx.root.join("sub").exists());
    fx.assert_outside_unchanged();
}

#[test]
fn junctions_and_symlinks_pointing_out_are_refused_and_removed_as_entries() {
    let fx = Fx::new();
    let j = fx.jail();
    need_links!(
        junction(&fx.root.join("jl"), &fx.outside),
        "junctions_and_symlinks_pointing_out"
    );
    assert_eq!(
        code(j.read(&fx.p("jl\\secret.txt"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.write(&fx.p("jl\\pwned.txt"), "x", &parents())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.write(&fx.p("jl\\deep\\pwned.txt"), "x", &parents())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.list(&fx.p("jl"), &ListOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.stat(&fx.p("jl"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.delete(&fx.p("jl\\secret.txt"), &DeleteOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(j.open_dir(Some(&fx.p("jl")))),
        ErrorCode::PathOutsideAllowedRoot
    );
    // Not following: the link is an inside entry.
    let st = j.stat(&fx.p("jl"), false).unwrap().unwrap();
    assert!(st.is_symlink && !st.is_dir && !st.is_file);
    let l = j.list(&fx.rp(), &ListOptions::default()).unwrap();
    let e = l.entries.iter().find(|e| e.name == "jl").unwrap();
    assert!(e.is_symlink && !e.is_dir && !e.is_file, "{e:?}");
    fx.assert_outside_unchanged();
    // Deleting the link (even recursively) removes the link, never the target's content.
    j.delete(
        &fx.p("jl"),
        &DeleteOptions {
            recursive: true,
            missing_ok: false,
        },
    )
    .unwrap();
    assert!(std::fs::symlink_metadata(fx.root.join("jl")).is_err());
    fx.assert_outside_unchanged();
}

#[test]
fn a_link_inside_pointing_inside_is_followed() {
    let fx = Fx::new();
    let j = fx.jail();
    need_links!(
        junction(&fx.root.join("in"), &fx.root.join("sub")),
        "a_link_inside_pointing_inside"
    );
    let r = j.read(&fx.p("in\\b.txt"), &ReadOptions::default()).unwrap();
    assert_eq!(r.content, "bee");
    assert_eq!(r.path, fx.p("sub\\b.txt"));
    j.write(&fx.p("in\\c.txt"), "sea", &plain()).unwrap();
    assert_eq!(
        std::fs::read(fx.root.join("sub").join("c.txt")).unwrap(),
        b"sea"
    );
    // Windows collapses `..` lexically (J-LEX-4): in\..\a.txt is <root>\a.txt.
    assert_eq!(
        j.read(&fx.p("in\\..\\a.txt"), &ReadOptions::default())
            .unwrap()
            .content,
        "hello"
    );
    let l = j.list(&fx.rp(), &ListOptions::default()).unwrap();
    let e = l.entries.iter().find(|e| e.name == "in").unwrap();
    assert!(e.is_symlink && e.is_dir);
}

#[test]
fn short_8_3_names_reach_the_root() {
    let fx = Fx::new();
    let long = fx.root.join("LongDirectoryName");
    std::fs::create_dir(&long).unwrap();
    std::fs::write(long.join("f.txt"), "long").unwrap();
    let Some(short) = short_name(&long) else {
        eprintln!("SKIP short_8_3_names_reach_the_root: no 8.3 name on this volume");
        return;
    };
    let j = fx.jail();
    let r = j
        .read(&format!("{short}\\f.txt"), &ReadOptions::default())
        .unwrap();
    assert_eq!(r.content, "long");
}

fn short_name(p: &Path) -> Option<String> {
    let out = std::process::Command::new("cmd")
        .arg("/C")
        .arg(format!("for %I in (\"{}\") do @echo %~sI", p.display()))
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let long = p.to_string_lossy();
    (!s.is_empty() && !s.eq_ignore_ascii_case(&long) && s.contains('~')).then_some(s)
}

#[test]
fn file_operations_keep_the_unix_error_codes() {
    let fx = Fx::new();
    let j = fx.jail();
    // Missing and missing parents.
    assert_eq!(
        code(j.read(&fx.p("nope.txt"), &ReadOptions::default())),
        ErrorCode::PathNotFound
    );
    assert!(j.stat(&fx.p("nope\\deeper"), true).unwrap().is_none());
    assert_eq!(
        code(j.write(&fx.p("nope\\x.txt"), "x", &plain())),
        ErrorCode::PathNotFound
    );
    j.write(&fx.p("made\\deep\\x.txt"), "x", &parents())
        .unwrap();
    assert_eq!(
        std::fs::read(fx.root.join("made\\deep\\x.txt")).unwrap(),
        b"x"
    );
    // A file used as a directory.
    assert_eq!(
        code(j.write(&fx.p("a.txt\\b"), "x", &parents())),
        ErrorCode::InternalError
    );
    // Directories.
    assert_eq!(
        code(j.write(&fx.p("sub"), "x", &plain())),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(j.read(&fx.p("sub"), &ReadOptions::default())),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(j.delete(&fx.p("sub"), &DeleteOptions::default())),
        ErrorCode::PathNotEmpty
    );
    assert_eq!(
        code(j.delete(&fx.p("gone"), &DeleteOptions::default())),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        j.delete(
            &fx.p("gone"),
            &DeleteOptions {
                recursive: false,
                missing_ok: true
            }
        )
        .unwrap()
        .path,
        None
    );
    // Size budget.
    j.lower_max_file_size(3);
    assert_eq!(
        code(j.write(&fx.p("big.txt"), "four", &plain())),
        ErrorCode::FileTooLarge
    );
    assert!(!fx.root.join("big.txt").exists());
    fx.assert_outside_unchanged();
}

#[test]
fn stat_list_move_and_delete_work_on_entries() {
    let fx = Fx::new();
    let j = fx.jail();
    let st = j.stat(&fx.p("a.txt"), true).unwrap().unwrap();
    assert!(st.is_file && !st.is_dir && !st.is_symlink);
    assert_eq!(st.size_bytes, 5);
    assert_eq!(st.mode, "0644");
    assert_eq!(st.mime_type, Some("text/plain"));
    assert_eq!(st.owner_uid, None);
    assert_eq!(st.path, fx.p("a.txt"));
    let dir = j.stat(&fx.p("sub"), true).unwrap().unwrap();
    assert_eq!(dir.mode, "0755");
    // Listing: sorted, hidden skipped, recursion pre-order, glob case-insensitive.
    std::fs::write(fx.root.join(".hidden"), "h").unwrap();
    std::fs::write(fx.root.join("B.md"), "b").unwrap();
    let l = j
        .list(
            &fx.rp(),
            &ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .unwrap();
    let names: Vec<_> = l.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["B.md", "a.txt", "sub", "b.txt"]);
    assert_eq!(l.entries[3].path, fx.p("sub\\b.txt"));
    let g = j
        .list(
            &fx.rp(),
            &ListOptions {
                glob: Some("*.TXT".into()),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(g.entries.len(), 1);
    let t = j
        .list(
            &fx.rp(),
            &ListOptions {
                max_entries: 2,
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert!(t.truncated);
    let t = j
        .list(
            &fx.rp(),
            &ListOptions {
                max_entries: 3,
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert!(!t.truncated);
    // Moves: exists without overwrite, overwrite, case-only rename, into itself.
    assert_eq!(
        code(j.rename(&fx.p("a.txt"), &fx.p("B.md"), &MoveOptions::default())),
        ErrorCode::PathExists
    );
    j.rename(
        &fx.p("a.txt"),
        &fx.p("B.md"),
        &MoveOptions { overwrite: true },
    )
    .unwrap();
    assert_eq!(std::fs::read(fx.root.join("B.md")).unwrap(), b"hello");
    assert!(!fx.root.join("a.txt").exists());
    j.rename(&fx.p("B.md"), &fx.p("b.MD"), &MoveOptions::default())
        .unwrap();
    let names: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.contains(&"b.MD".to_owned()), "{names:?}");
    assert_eq!(
        code(j.rename(&fx.p("sub"), &fx.p("sub\\inner"), &MoveOptions::default())),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(j.rename(&fx.p("sub"), &fx.p("nope\\x"), &MoveOptions::default())),
        ErrorCode::PathNotFound
    );
    // Directory over a non-empty directory with overwrite: set-aside, then removed.
    std::fs::create_dir(fx.root.join("d2")).unwrap();
    std::fs::write(fx.root.join("d2").join("old.txt"), "old").unwrap();
    j.rename(&fx.p("sub"), &fx.p("d2"), &MoveOptions { overwrite: true })
        .unwrap();
    assert_eq!(
        std::fs::read(fx.root.join("d2").join("b.txt")).unwrap(),
        b"bee"
    );
    assert!(!fx.root.join("d2").join("old.txt").exists());
    // Recursive delete.
    j.delete(
        &fx.p("d2"),
        &DeleteOptions {
            recursive: true,
            missing_ok: false,
        },
    )
    .unwrap();
    assert!(!fx.root.join("d2").exists());
    let names: Vec<_> = std::fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".~agpt")), "{names:?}");
    fx.assert_outside_unchanged();
}

#[test]
fn a_hard_link_elsewhere_is_not_modified_by_a_write() {
    let fx = Fx::new();
    let j = fx.jail();
    let out = fx.r.join("hl-outside.txt");
    std::fs::write(&out, "original").unwrap();
    if std::fs::hard_link(&out, fx.root.join("hl.txt")).is_err() {
        eprintln!("SKIP a_hard_link_elsewhere_is_not_modified_by_a_write: no hard links here");
        return;
    }
    j.write(&fx.p("hl.txt"), "replaced", &plain()).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"original");
    assert_eq!(std::fs::read(fx.root.join("hl.txt")).unwrap(), b"replaced");
}

#[test]
fn a_renamed_or_replaced_root_fails_closed() {
    let mut fx = Fx::new();
    let moved = fx.r.join("moved");
    std::fs::rename(&fx.root, &moved).unwrap();
    std::fs::create_dir(&fx.root).unwrap();
    std::fs::write(fx.root.join("a.txt"), "impostor").unwrap();
    let j = fx.jail();
    let p = fx.p("a.txt");
    assert_eq!(
        code(j.read(&p, &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    fx.jail = None;
}

#[test]
fn open_dir_gives_the_verified_directory() {
    let fx = Fx::new();
    let j = fx.jail();
    let (_d, shown) = j.open_dir(None).unwrap();
    assert_eq!(shown, fx.rp());
    let (_d, shown) = j.open_dir(Some(&fx.p("sub"))).unwrap();
    assert_eq!(shown, fx.p("sub"));
    assert_eq!(
        code(j.open_dir(Some(&fx.p("a.txt")))),
        ErrorCode::InternalError
    );
    assert_eq!(
        code(j.open_dir(Some(&fx.p("nope")))),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(j.open_dir(Some(&fx.outside.to_string_lossy()))),
        ErrorCode::PathOutsideAllowedRoot
    );
}

/// Links Wine can show: `cargo xtask wine-test` creates, from the Linux side, a fixture
/// `<dir>\root` with Unix symlinks `out` → `../outside` and `in` → `sub` (Wine cannot
/// create junctions or symlinks itself, but it follows Unix ones). The jail must judge them
/// by where they lead, like junctions on Windows.
#[test]
fn links_seen_through_wine_are_judged_by_where_they_lead() {
    let Some(dir) = std::env::var_os("SHIM_JAIL_WINE_LINK_FIXTURE") else {
        eprintln!("SKIP links_seen_through_wine: no link fixture (set by cargo xtask wine-test)");
        return;
    };
    let dir = PathBuf::from(dir);
    let jail = JailRoot::open(
        &dir.join("root"),
        JailConfig::default(),
        shim_jail::ambient_authority(),
    )
    .unwrap();
    let p = |rel: &str| format!("{}\\{rel}", jail.root_path());
    assert_eq!(
        code(jail.read(&p("out\\secret.txt"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(jail.write(&p("out\\pwned.txt"), "x", &parents())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(jail.list(&p("out"), &ListOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        jail.read(&p("in\\b.txt"), &ReadOptions::default())
            .unwrap()
            .content,
        "bee"
    );
    assert!(!dir.join("outside").join("pwned.txt").exists());
    assert_eq!(
        std::fs::read(dir.join("outside").join("secret.txt")).unwrap(),
        b"secret"
    );
}
