//! Fuzz the jail with random plans: a small tree (files, directories, symlinks inside,
//! outside, dangling and chained, hard links to an outside file) built from the input,
//! then random operations on paths assembled from tokens. Invariant after every
//! operation: nothing outside the root was created, changed or deleted; no outside secret
//! was read; every reported path is inside; every refusal carries a specified code, and a
//! path that can only be outside is refused with PATH_OUTSIDE_ALLOWED_ROOT.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailError;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_jail::ReadFormat;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

const SECRET: &str = "SECRET-OUTSIDE";
const SPOTS: &[&str] = &[
    "a", "b", "l1", "l2", "a/c.txt", "a/d", "a/l3", "b/e", "a/d/f",
];
const TARGETS: &[&str] = &[
    "a",
    "b",
    "c.txt",
    "l2",
    "l1",
    "nowhere",
    "..",
    "../..",
    ".",
    "/",
    "a/d",
    "{O}",
    "{O}/secret.txt",
    "{O}/deep",
    "{O}/nope",
    "{O}/back",
    "{O}/back/a",
    "{O}/to_secret",
    "{R}",
    "{R}/a",
    "{R}/l1",
    "{T}/root/../outside/secret.txt",
    "../outside/secret.txt",
    "../../outside",
    "/proc/self/root{R}/a",
    "d/../../..",
    "l3/..",
];
const TOKENS: &[&str] = &[
    "a",
    "b",
    "c.txt",
    "d",
    "e",
    "f",
    "l1",
    "l2",
    "l3",
    "..",
    ".",
    "",
    "new",
    "outside",
    "root",
    "secret.txt",
    "back",
    "deep",
    "to_secret",
    "CON",
    "x\0y",
    "~",
];

struct Fx {
    r: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    before: BTreeMap<PathBuf, (u64, Vec<u8>, bool)>,
}

fn fixture() -> &'static Fx {
    static FX: OnceLock<Fx> = OnceLock::new();
    FX.get_or_init(|| {
        let r = std::env::temp_dir().join(format!("jail-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        std::fs::create_dir_all(&r).unwrap();
        let r = std::fs::canonicalize(&r).unwrap();
        let root = r.join("root");
        let outside = r.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::create_dir_all(r.join("rootx")).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        std::fs::write(outside.join("deep/s2.txt"), SECRET).unwrap();
        std::fs::write(outside.join("hl.txt"), "HARDLINK").unwrap();
        std::os::unix::fs::symlink(&root, outside.join("back")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), outside.join("to_secret")).unwrap();
        let mut fx = Fx {
            r,
            root,
            outside,
            before: BTreeMap::new(),
        };
        fx.before = state(&fx);
        fx
    })
}

/// Everything under R except the root's children: (ino, content, is_link).
fn state(fx: &Fx) -> BTreeMap<PathBuf, (u64, Vec<u8>, bool)> {
    use std::os::unix::fs::MetadataExt;
    fn walk(p: &Path, root: &Path, out: &mut BTreeMap<PathBuf, (u64, Vec<u8>, bool)>) {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return;
        };
        if p.starts_with(root) && p != root {
            return;
        }
        let ft = m.file_type();
        let content = if ft.is_symlink() {
            std::fs::read_link(p)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else if ft.is_file() {
            std::fs::read(p).unwrap()
        } else {
            Vec::new()
        };
        if ft.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), root, out);
            }
        }
        out.insert(p.to_path_buf(), (m.ino(), content, ft.is_symlink()));
    }
    let mut out = BTreeMap::new();
    walk(&fx.r, &fx.root, &mut out);
    out
}

struct Input<'a> {
    data: &'a [u8],
}

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(*b)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> Option<T> {
        Some(xs[usize::from(self.byte()?) % xs.len()])
    }
}

struct P {
    wire: String,
    surely_outside: bool,
}

fn path(fx: &Fx, inp: &mut Input<'_>) -> Option<P> {
    let b = inp.byte()?;
    let (mut wire, base) = match b % 8 {
        0 => (fx.r.to_str().unwrap().to_owned(), 1),
        1 => (fx.outside.to_str().unwrap().to_owned(), 2),
        2 => (String::new(), 3),
        _ => (fx.root.to_str().unwrap().to_owned(), 0),
    };
    let n = usize::from(b >> 3) % 6;
    let mut toks = Vec::new();
    for _ in 0..n {
        let t = inp.pick(TOKENS)?;
        toks.push(t);
        wire.push('/');
        wire.push_str(t);
    }
    let clean: Vec<_> = toks.iter().filter(|t| !matches!(**t, "." | "")).collect();
    let nul = toks.iter().any(|t| t.contains('\0'));
    let surely_outside = !nul
        && match base {
            1 => clean
                .first()
                .is_none_or(|t| !matches!(**t, "root" | "outside" | "..")),
            2 => !clean.iter().any(|t| matches!(**t, ".." | "back")),
            _ => false,
        };
    Some(P {
        wire,
        surely_outside,
    })
}

fn reset(fx: &Fx, inp: &mut Input<'_>) {
    for e in std::fs::read_dir(&fx.root).unwrap() {
        let p = e.unwrap().path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let sub = |t: &str| {
        t.replace("{O}", fx.outside.to_str().unwrap())
            .replace("{R}", fx.root.to_str().unwrap())
            .replace("{T}", fx.r.to_str().unwrap())
    };
    let n = inp.byte().map_or(0, |b| b % 14);
    for _ in 0..n {
        let (Some(kind), Some(spot)) = (inp.byte(), inp.pick(SPOTS)) else {
            return;
        };
        let at = fx.root.join(spot);
        // The harness itself must not write through links it planted: only build under
        // real directories, and never open an existing name.
        let parent_real = at
            .parent()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.is_dir());
        if !parent_real {
            continue;
        }
        let _ = match kind % 4 {
            0 => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&at)
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"inside")),
            1 => std::fs::create_dir(&at),
            2 => match inp.pick(TARGETS) {
                Some(t) => std::os::unix::fs::symlink(sub(t), &at),
                None => return,
            },
            _ => std::fs::hard_link(fx.outside.join("hl.txt"), &at),
        };
    }
}

fn check<T>(r: &Result<T, JailError>, first: &P) {
    if let Err(e) = r {
        assert!(
            matches!(
                e.code(),
                ErrorCode::PathOutsideAllowedRoot
                    | ErrorCode::PathInvalidChars
                    | ErrorCode::PathNotFound
                    | ErrorCode::PathExists
                    | ErrorCode::PathNotEmpty
                    | ErrorCode::FileTooLarge
                    | ErrorCode::InternalError
            ),
            "unexpected code {}",
            e.code()
        );
        assert!(!e.to_string().contains(SECRET));
    }
    if first.surely_outside {
        let code = r.as_ref().err().map(JailError::code);
        assert_eq!(
            code,
            Some(ErrorCode::PathOutsideAllowedRoot),
            "{:?}",
            first.wire
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    let mut inp = Input { data };
    reset(fx, &mut inp);
    let cfg = JailConfig {
        max_file_size_bytes: 64,
        ..JailConfig::default()
    };
    let jail = JailRoot::open(&fx.root, cfg, shim_jail::ambient_authority()).unwrap();
    let rp = jail.root_path().to_owned();
    let inside = |p: &str| p == rp || p.starts_with(&format!("{rp}/"));
    for _ in 0..16 {
        let Some(op) = inp.byte() else { break };
        let Some(p) = path(fx, &mut inp) else { break };
        let flag = op & 0x10 != 0;
        let flag2 = op & 0x20 != 0;
        match op % 7 {
            0 => {
                let o = ReadOptions {
                    format: if flag {
                        ReadFormat::Bytes
                    } else {
                        ReadFormat::Text
                    },
                    offset: u64::from(op >> 6),
                    length: if flag2 { Some(8) } else { None },
                };
                let r = jail.read(&p.wire, &o);
                if let Ok(v) = &r {
                    assert!(!v.content.contains(SECRET) && !v.content.contains("U0VDUkVU"));
                    assert!(inside(&v.path));
                }
                check(&r, &p);
            }
            1 => {
                let o = WriteOptions {
                    create_parents: flag,
                    ..Default::default()
                };
                let r = jail.write(&p.wire, if flag2 { "w" } else { "written content" }, &o);
                if let Ok(v) = &r {
                    assert!(inside(&v.path));
                }
                check(&r, &p);
            }
            2 => {
                let r = jail.stat(&p.wire, flag);
                if let Ok(Some(v)) = &r {
                    assert!(inside(&v.path));
                }
                check(&r, &p);
            }
            3 => {
                let o = ListOptions {
                    recursive: flag,
                    include_hidden: flag2,
                    max_entries: 50,
                    glob: None,
                };
                let r = jail.list(&p.wire, &o);
                if let Ok(v) = &r {
                    assert!(v.entries.iter().all(|e| inside(&e.path)));
                }
                check(&r, &p);
            }
            4 | 5 => {
                let o = DeleteOptions {
                    recursive: flag,
                    missing_ok: flag2,
                };
                check(&jail.delete(&p.wire, &o), &p);
            }
            _ => {
                let Some(q) = path(fx, &mut inp) else { break };
                let r = jail.rename(&p.wire, &q.wire, &MoveOptions { overwrite: flag });
                if let Ok(v) = &r {
                    assert!(inside(&v.src) && inside(&v.dst));
                }
                check(&r, &p);
            }
        }
        assert!(fx.root.is_dir(), "the root survived");
        let now = state(fx);
        if now != fx.before {
            for (k, v) in &now {
                if fx.before.get(k) != Some(v) {
                    eprintln!("changed/new: {k:?} {v:?} was {:?}", fx.before.get(k));
                }
            }
            for k in fx.before.keys() {
                if !now.contains_key(k) {
                    eprintln!("removed: {k:?}");
                }
            }
            panic!("something outside the root changed");
        }
    }
});
