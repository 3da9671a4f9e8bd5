//! Shared vocabulary of the jail's randomised tests (`tests/suite/prop.rs`) and its fuzz
//! target (`fuzz/fuzz_targets/jail_ops.rs`): the fixture layout, the tree spots, link
//! targets and path tokens plans are drawn from, and the invariants both check. Only
//! built with the `testing` feature; never used by the daemon.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::ErrorCode;

use crate::JailError;

/// Content of the files outside the root; no operation may ever return it.
pub const SECRET: &str = "SECRET-OUTSIDE";

/// Where a plan may plant a node, relative to the root.
pub const SPOTS: &[&str] = &[
    "a", "b", "l1", "l2", "a/c.txt", "a/d", "a/l3", "b/e", "a/d/f",
];

/// Symlink targets: `{O}` = the outside directory, `{R}` = the root, `{T}` = their parent.
pub const TARGETS: &[&str] = &[
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

/// Path components plans assemble request paths from.
pub const TOKENS: &[&str] = &[
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

/// The fixture: `r` (canonical) holds the jail root `r/root`, a sibling `r/outside` with
/// the secret, a hard-link source, a link back into the root and a link to the secret,
/// and a look-alike `r/rootx`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The canonical parent of everything.
    pub r: PathBuf,
    /// The jail root.
    pub root: PathBuf,
    /// The outside sibling.
    pub outside: PathBuf,
}

impl Layout {
    /// Creates the fixture in the existing directory `r`.
    pub fn create(r: &Path) -> Layout {
        let r = std::fs::canonicalize(r).unwrap();
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
        Layout { r, root, outside }
    }

    /// `target` with `{O}`, `{R}` and `{T}` substituted.
    pub fn target(&self, target: &str) -> String {
        target
            .replace("{O}", self.outside.to_str().unwrap())
            .replace("{R}", self.root.to_str().unwrap())
            .replace("{T}", self.r.to_str().unwrap())
    }

    /// Plants `node` under the root. Only builds under real directories and never opens
    /// an existing name, so the planting itself cannot write through a planted link.
    /// Failures (a spot already taken, a missing parent) are ignored: plans are random.
    pub fn plant(&self, node: Node) {
        let spot = node.spot();
        let at = self.root.join(spot);
        let parent_real = at
            .parent()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.is_dir());
        if !parent_real {
            return;
        }
        let _ = match node {
            Node::File(_) => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&at)
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"inside")),
            Node::Dir(_) => std::fs::create_dir(&at),
            Node::Link(_, t) => std::os::unix::fs::symlink(self.target(t), &at),
            Node::HardLink(_) => std::fs::hard_link(self.outside.join("hl.txt"), &at),
        };
    }

    /// Whether `display` (a path the jail reported) is the root or inside it.
    pub fn reports_inside(&self, root_display: &str, display: &str) -> bool {
        display == root_display || display.starts_with(&format!("{root_display}/"))
    }
}

/// One node of a random tree.
#[derive(Debug, Clone, Copy)]
pub enum Node {
    /// A regular file.
    File(&'static str),
    /// A directory.
    Dir(&'static str),
    /// A symlink to one of [`TARGETS`].
    Link(&'static str, &'static str),
    /// A hard link to a file outside the root.
    HardLink(&'static str),
}

impl Node {
    fn spot(self) -> &'static str {
        match self {
            Node::File(s) | Node::Dir(s) | Node::Link(s, _) | Node::HardLink(s) => s,
        }
    }
}

/// Where a request path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The jail root.
    Root,
    /// The root's parent.
    Parent,
    /// The outside sibling.
    Outside,
    /// The filesystem root (`/` followed by tokens).
    Slash,
}

/// A request path of a plan: a base and tokens joined with `/`.
#[derive(Debug, Clone)]
pub struct PlanPath {
    /// Where it starts.
    pub base: Base,
    /// The components.
    pub toks: Vec<&'static str>,
}

impl PlanPath {
    /// The wire path.
    pub fn wire(&self, l: &Layout) -> String {
        let mut s = match self.base {
            Base::Root => l.root.to_str().unwrap().to_owned(),
            Base::Parent => l.r.to_str().unwrap().to_owned(),
            Base::Outside => l.outside.to_str().unwrap().to_owned(),
            Base::Slash => String::new(),
        };
        for t in &self.toks {
            s.push('/');
            s.push_str(t);
        }
        s
    }

    /// Paths that can only name something outside: they must be refused with exactly
    /// `PATH_OUTSIDE_ALLOWED_ROOT` (never not-found, never `exists: false`).
    pub fn surely_outside(&self) -> bool {
        if self.toks.iter().any(|t| t.contains('\0')) {
            return false;
        }
        let clean: Vec<_> = self
            .toks
            .iter()
            .filter(|t| !matches!(**t, "." | ""))
            .collect();
        match self.base {
            Base::Root | Base::Slash => false,
            Base::Outside => !clean.iter().any(|t| matches!(**t, ".." | "back")),
            Base::Parent => clean
                .first()
                .is_none_or(|t| !matches!(**t, "root" | "outside" | "..")),
        }
    }
}

/// Asserts the refusal invariants: a specified code, no secret in the message, and
/// `PATH_OUTSIDE_ALLOWED_ROOT` when `first` can only be outside.
pub fn check_result<T>(r: &Result<T, JailError>, first: &PlanPath, l: &Layout, what: &str) {
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
            "{what}: unexpected code {}",
            e.code()
        );
        assert!(!e.to_string().contains(SECRET), "{what}: secret in message");
    }
    if first.surely_outside() {
        assert_eq!(
            r.as_ref().err().map(JailError::code),
            Some(ErrorCode::PathOutsideAllowedRoot),
            "{what}: {}",
            first.wire(l)
        );
    }
}
