//! Property test: random trees (files, directories, symlinks inside, outside, dangling
//! and chained, hard links to outside files) and random operation sequences. Nothing
//! outside the root is created, changed or deleted; nothing secret is read; every result
//! names an inside path; refusals carry the specified code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use shim_jail::DeleteOptions;
use shim_jail::JailError;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::Snap;
use super::common::snapshot;

const SECRET: &str = "SECRET-OUTSIDE";

#[derive(Debug, Clone)]
enum Node {
    File(&'static str),
    Dir(&'static str),
    Link(&'static str, &'static str),
    HardLink(&'static str),
}

const SPOTS: &[&str] = &["a", "b", "l1", "l2", "a/c.txt", "a/d", "a/l3", "b/e"];
/// `{O}` = outside, `{R}` = root, `{T}` = R.
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
];
const TOKENS: &[&str] = &[
    "a",
    "b",
    "c.txt",
    "d",
    "e",
    "l1",
    "l2",
    "l3",
    "..",
    ".",
    "new",
    "outside",
    "root",
    "secret.txt",
    "back",
    "deep",
    "to_secret",
];

fn node() -> impl Strategy<Value = Node> {
    let spot = prop::sample::select(SPOTS);
    prop_oneof![
        spot.clone().prop_map(Node::File),
        spot.clone().prop_map(Node::Dir),
        (spot.clone(), prop::sample::select(TARGETS)).prop_map(|(s, t)| Node::Link(s, t)),
        spot.prop_map(Node::HardLink),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Root,
    R,
    Outside,
}

#[derive(Debug, Clone)]
struct P {
    base: Base,
    toks: Vec<&'static str>,
}

fn path() -> impl Strategy<Value = P> {
    (
        prop_oneof![6 => Just(Base::Root), 1 => Just(Base::R), 1 => Just(Base::Outside)],
        prop::collection::vec(prop::sample::select(TOKENS), 0..5),
    )
        .prop_map(|(base, toks)| P { base, toks })
}

#[derive(Debug, Clone)]
enum Op {
    Read(P),
    Write(P, bool),
    Stat(P, bool),
    List(P, bool),
    Delete(P, bool, bool),
    Move(P, P, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        path().prop_map(Op::Read),
        (path(), any::<bool>()).prop_map(|(p, b)| Op::Write(p, b)),
        (path(), any::<bool>()).prop_map(|(p, b)| Op::Stat(p, b)),
        (path(), any::<bool>()).prop_map(|(p, b)| Op::List(p, b)),
        (path(), any::<bool>(), any::<bool>()).prop_map(|(p, a, b)| Op::Delete(p, a, b)),
        (path(), path(), any::<bool>()).prop_map(|(a, b, o)| Op::Move(a, b, o)),
    ]
}

impl P {
    fn wire(&self, fx: &Fx) -> String {
        let mut s = match self.base {
            Base::Root => fx.root.to_str().unwrap().to_owned(),
            Base::R => fx.r.to_str().unwrap().to_owned(),
            Base::Outside => fx.outside.to_str().unwrap().to_owned(),
        };
        for t in &self.toks {
            s.push('/');
            s.push_str(t);
        }
        s
    }

    /// Paths that can only name something outside: they must be refused with exactly
    /// PATH_OUTSIDE_ALLOWED_ROOT (never not-found, never exists:false).
    fn surely_outside(&self) -> bool {
        let toks: Vec<_> = self.toks.iter().filter(|t| **t != ".").collect();
        match self.base {
            Base::Root => false,
            Base::Outside => !toks.iter().any(|t| matches!(**t, ".." | "back")),
            Base::R => match toks.first() {
                None => true,
                Some(t) => !matches!(**t, "root" | "outside" | ".."),
            },
        }
    }
}

fn outside_state(fx: &Fx) -> BTreeMap<PathBuf, Snap> {
    let mut s = snapshot(&fx.r);
    s.retain(|p, _| !p.starts_with(&fx.root) || p == &fx.root);
    for v in s.values_mut() {
        // Link counts of outside inodes legitimately drop when an inside hard link is
        // replaced or removed (4.9); everything else must stay identical.
        if let Snap::File { nlink, .. } = v {
            *nlink = 0;
        }
    }
    s
}

fn build(nodes: &[Node]) -> Fx {
    let fx = Fx::new();
    std::fs::write(fx.outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(fx.outside.join("hl.txt"), "HARDLINK").unwrap();
    std::os::unix::fs::symlink(&fx.root, fx.outside.join("back")).unwrap();
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.outside.join("to_secret"))
        .unwrap();
    let sub = |t: &str| {
        t.replace("{O}", fx.outside.to_str().unwrap())
            .replace("{R}", fx.root.to_str().unwrap())
            .replace("{T}", fx.r.to_str().unwrap())
    };
    for n in nodes {
        let (spot, res) = match n {
            Node::File(s) => (s, std::fs::write(fx.at(s), "inside")),
            Node::Dir(s) => (s, std::fs::create_dir(fx.at(s))),
            Node::Link(s, t) => (s, std::os::unix::fs::symlink(sub(t), fx.at(s))),
            Node::HardLink(s) => (s, std::fs::hard_link(fx.outside.join("hl.txt"), fx.at(s))),
        };
        let _ = (spot, res);
    }
    fx
}

fn check<T>(fx: &Fx, r: &Result<T, JailError>, paths: &[&P], what: &str) {
    if let Err(e) = r {
        let c = e.code();
        assert!(
            matches!(
                c,
                ErrorCode::PathOutsideAllowedRoot
                    | ErrorCode::PathInvalidChars
                    | ErrorCode::PathNotFound
                    | ErrorCode::PathExists
                    | ErrorCode::PathNotEmpty
                    | ErrorCode::InternalError
            ),
            "{what}: unexpected code {c}"
        );
        if c == ErrorCode::InternalError {
            assert!(!e.to_string().contains(SECRET));
        }
    }
    // A path that can only be outside is refused with the jail code. (For a move, the
    // first path that is surely outside decides only if the other resolved inside.)
    if paths.len() == 1 && paths[0].surely_outside() {
        match r {
            Err(e) => assert_eq!(
                e.code(),
                ErrorCode::PathOutsideAllowedRoot,
                "{what} {}",
                paths[0].wire(fx)
            ),
            Ok(_) => panic!("{what}: outside path accepted: {}", paths[0].wire(fx)),
        }
    }
    if paths.len() == 2 && paths[0].surely_outside() {
        assert_eq!(
            r.as_ref().err().map(JailError::code),
            Some(ErrorCode::PathOutsideAllowedRoot),
            "{what}"
        );
    }
}

fn run(fx: &Fx, op: &Op) {
    let rp = fx.jail.root_path().to_owned();
    let inside = |p: &str| p == rp || p.starts_with(&format!("{rp}/"));
    let what = format!("{op:?}");
    match op {
        Op::Read(p) => {
            let r = fx.jail.read(&p.wire(fx), &ReadOptions::default());
            if let Ok(v) = &r {
                assert!(!v.content.contains(SECRET), "{what}: secret read");
                assert!(inside(&v.path));
            }
            check(fx, &r, &[p], &what);
        }
        Op::Write(p, parents) => {
            let o = WriteOptions {
                create_parents: *parents,
                ..Default::default()
            };
            let r = fx.jail.write(&p.wire(fx), "written", &o);
            if let Ok(v) = &r {
                assert!(inside(&v.path));
            }
            check(fx, &r, &[p], &what);
        }
        Op::Stat(p, follow) => {
            let r = fx.jail.stat(&p.wire(fx), *follow);
            if let Ok(Some(v)) = &r {
                assert!(inside(&v.path));
            }
            check(fx, &r, &[p], &what);
        }
        Op::List(p, recursive) => {
            let o = ListOptions {
                recursive: *recursive,
                include_hidden: true,
                ..Default::default()
            };
            let r = fx.jail.list(&p.wire(fx), &o);
            if let Ok(v) = &r {
                assert!(v.entries.iter().all(|e| inside(&e.path)));
            }
            check(fx, &r, &[p], &what);
        }
        Op::Delete(p, recursive, missing_ok) => {
            let o = DeleteOptions {
                recursive: *recursive,
                missing_ok: *missing_ok,
            };
            let r = fx.jail.delete(&p.wire(fx), &o);
            check(fx, &r, &[p], &what);
        }
        Op::Move(a, b, overwrite) => {
            let r = fx.jail.rename(
                &a.wire(fx),
                &b.wire(fx),
                &MoveOptions {
                    overwrite: *overwrite,
                },
            );
            if let Ok(v) = &r {
                assert!(inside(&v.src) && inside(&v.dst));
            }
            check(fx, &r, &[a, b], &what);
        }
    }
    assert!(fx.root.is_dir(), "{what}: the root survived");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_trees_and_operations_never_touch_the_outside(
        nodes in prop::collection::vec(node(), 0..12),
        ops in prop::collection::vec(op(), 1..24),
    ) {
        let fx = build(&nodes);
        let before = outside_state(&fx);
        for op in &ops {
            run(&fx, op);
            prop_assert_eq!(&before, &outside_state(&fx), "after {:?}", op);
        }
    }
}
