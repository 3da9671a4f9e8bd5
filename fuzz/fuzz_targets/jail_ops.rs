//! Fuzz the jail with random plans: a small tree (files, directories, symlinks inside,
//! outside, dangling and chained, hard links to an outside file) built from the input,
//! then random operations on paths assembled from tokens. Invariant after every
//! operation: nothing outside the root was created, changed or deleted; no outside secret
//! was read; every reported path is inside; every refusal carries a specified code, and a
//! path that can only be outside is refused with PATH_OUTSIDE_ALLOWED_ROOT. The vocabulary
//! and the invariants are shared with the property test (`shim_jail::testing`).
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_jail::ReadFormat;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_jail::testing::Base;
use shim_jail::testing::Layout;
use shim_jail::testing::Node;
use shim_jail::testing::PlanPath;
use shim_jail::testing::SECRET;
use shim_jail::testing::SPOTS;
use shim_jail::testing::TARGETS;
use shim_jail::testing::TOKENS;
use shim_jail::testing::check_result;

struct Fx {
    l: Layout,
    before: BTreeMap<PathBuf, (u64, Vec<u8>, bool)>,
}

fn fixture() -> &'static Fx {
    static FX: OnceLock<Fx> = OnceLock::new();
    FX.get_or_init(|| {
        let r = std::env::temp_dir().join(format!("jail-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        std::fs::create_dir_all(&r).unwrap();
        let l = Layout::create(&r);
        let before = state(&l);
        Fx { l, before }
    })
}

/// Everything under R except the root's children: (ino, content, is_link).
fn state(l: &Layout) -> BTreeMap<PathBuf, (u64, Vec<u8>, bool)> {
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
    walk(&l.r, &l.root, &mut out);
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

fn path(inp: &mut Input<'_>) -> Option<PlanPath> {
    let b = inp.byte()?;
    let base = match b % 8 {
        0 => Base::Parent,
        1 => Base::Outside,
        2 => Base::Slash,
        _ => Base::Root,
    };
    let n = usize::from(b >> 3) % 6;
    let mut toks = Vec::new();
    for _ in 0..n {
        toks.push(inp.pick(TOKENS)?);
    }
    Some(PlanPath { base, toks })
}

fn reset(l: &Layout, inp: &mut Input<'_>) {
    for e in std::fs::read_dir(&l.root).unwrap() {
        let p = e.unwrap().path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let n = inp.byte().map_or(0, |b| b % 14);
    for _ in 0..n {
        let (Some(kind), Some(spot)) = (inp.byte(), inp.pick(SPOTS)) else {
            return;
        };
        let node = match kind % 4 {
            0 => Node::File(spot),
            1 => Node::Dir(spot),
            2 => match inp.pick(TARGETS) {
                Some(t) => Node::Link(spot, t),
                None => return,
            },
            _ => Node::HardLink(spot),
        };
        l.plant(node);
    }
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    let mut inp = Input { data };
    let l = &fx.l;
    reset(l, &mut inp);
    let cfg = JailConfig {
        max_file_size_bytes: 64,
        ..JailConfig::default()
    };
    let jail = JailRoot::open(&l.root, cfg, shim_jail::ambient_authority()).unwrap();
    let rp = jail.root_path().to_owned();
    let inside = |p: &str| l.reports_inside(&rp, p);
    for _ in 0..16 {
        let Some(op) = inp.byte() else { break };
        let Some(p) = path(&mut inp) else { break };
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
                let r = jail.read(&p.wire(l), &o);
                if let Ok(v) = &r {
                    assert!(!v.content.contains(SECRET) && !v.content.contains("U0VDUkVU"));
                    assert!(inside(&v.path));
                }
                check_result(&r, &p, l, "");
            }
            1 => {
                let o = WriteOptions {
                    create_parents: flag,
                    ..Default::default()
                };
                let r = jail.write(&p.wire(l), if flag2 { "w" } else { "written content" }, &o);
                if let Ok(v) = &r {
                    assert!(inside(&v.path));
                }
                check_result(&r, &p, l, "");
            }
            2 => {
                let r = jail.stat(&p.wire(l), flag);
                if let Ok(Some(v)) = &r {
                    assert!(inside(&v.path));
                }
                check_result(&r, &p, l, "");
            }
            3 => {
                let o = ListOptions {
                    recursive: flag,
                    include_hidden: flag2,
                    max_entries: 50,
                    glob: None,
                };
                let r = jail.list(&p.wire(l), &o);
                if let Ok(v) = &r {
                    assert!(v.entries.iter().all(|e| inside(&e.path)));
                }
                check_result(&r, &p, l, "");
            }
            4 | 5 => {
                let o = DeleteOptions {
                    recursive: flag,
                    missing_ok: flag2,
                };
                check_result(&jail.delete(&p.wire(l), &o), &p, l, "");
            }
            _ => {
                let Some(q) = path(&mut inp) else { break };
                let r = jail.rename(&p.wire(l), &q.wire(l), &MoveOptions { overwrite: flag });
                if let Ok(v) = &r {
                    assert!(inside(&v.src) && inside(&v.dst));
                }
                check_result(&r, &p, l, "");
            }
        }
        assert!(l.root.is_dir(), "the root survived");
        let now = state(l);
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
