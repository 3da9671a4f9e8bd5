//! Fixture per 15: a fresh `R` with the root `R/root`, a sibling `R/outside` and a
//! look-alike `R/rootx`; `snapshot` proves nothing outside changed.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::path::PathBuf;

use shim_jail::JailConfig;
use shim_jail::JailError;
use shim_jail::JailRoot;
use shim_protocol::ErrorCode;

pub(crate) struct Fx {
    pub(crate) _t: tempfile::TempDir,
    /// Canonical `R`.
    pub(crate) r: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) jail: JailRoot,
    before: BTreeMap<PathBuf, Snap>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Snap {
    File {
        ino: u64,
        mode: u32,
        nlink: u64,
        content: Vec<u8>,
        mtime: (i64, i64),
    },
    Dir {
        ino: u64,
        mode: u32,
    },
    Link(PathBuf),
    Other,
}

/// Everything under `dir` (not following links), keyed by path.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Snap> {
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

fn walk(p: &Path, out: &mut BTreeMap<PathBuf, Snap>) {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return;
    };
    let ft = m.file_type();
    let s = if ft.is_symlink() {
        Snap::Link(std::fs::read_link(p).unwrap())
    } else if ft.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for n in names {
            walk(&n, out);
        }
        Snap::Dir {
            ino: m.ino(),
            mode: m.mode(),
        }
    } else if ft.is_file() {
        Snap::File {
            ino: m.ino(),
            mode: m.mode(),
            nlink: m.nlink(),
            content: std::fs::read(p).unwrap(),
            mtime: (m.mtime(), m.mtime_nsec()),
        }
    } else {
        Snap::Other
    };
    out.insert(p.to_path_buf(), s);
}

impl Fx {
    pub(crate) fn new() -> Fx {
        let t = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap();
        let root = r.join("root");
        let outside = r.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::create_dir_all(r.join("rootx")).unwrap();
        std::fs::write(outside.join("secret.txt"), b"secret").unwrap();
        std::fs::write(outside.join("deep/s2.txt"), b"s2").unwrap();
        let jail =
            JailRoot::open(&root, JailConfig::default(), cap_std::ambient_authority()).unwrap();
        let mut fx = Fx {
            _t: t,
            r,
            root,
            outside,
            jail,
            before: BTreeMap::new(),
        };
        fx.mark();
        fx
    }

    /// Records the state of everything outside the root (R minus R/root).
    pub(crate) fn mark(&mut self) {
        self.before = self.outside_state();
    }

    fn outside_state(&self) -> BTreeMap<PathBuf, Snap> {
        let mut s = snapshot(&self.r);
        s.retain(|p, _| !p.starts_with(&self.root) || p == &self.root);
        // The root directory's own mode/ino is part of "outside must not change".
        s
    }

    /// Asserts nothing outside the root was created, modified or removed since `mark`.
    pub(crate) fn assert_outside_untouched(&self) {
        let now = self.outside_state();
        assert_eq!(self.before, now, "something outside the root changed");
    }

    /// `<root>/rel` as a wire string.
    pub(crate) fn p(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root.to_str().unwrap().to_owned()
        } else {
            format!("{}/{}", self.root.to_str().unwrap(), rel)
        }
    }

    /// `R/rel` as a wire string.
    pub(crate) fn rp(&self, rel: &str) -> String {
        format!("{}/{}", self.r.to_str().unwrap(), rel)
    }

    pub(crate) fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub(crate) fn file(&self, rel: &str, content: &str) {
        let p = self.at(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, content).unwrap();
        self.remark();
    }

    pub(crate) fn dir(&self, rel: &str) {
        std::fs::create_dir_all(self.at(rel)).unwrap();
    }

    pub(crate) fn link(&self, rel: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.at(rel)).unwrap();
    }

    fn remark(&self) {}
}

pub(crate) fn code<T: std::fmt::Debug>(r: Result<T, JailError>) -> ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code(),
    }
}
