//! Property test: random trees (files, directories, symlinks inside, outside, dangling
//! and chained, hard links to outside files) and random operation sequences. Nothing
//! outside the root is created, changed or deleted; nothing secret is read; every result
//! names an inside path; refusals carry the specified code. The vocabulary and the
//! invariants are shared with the `jail_ops` fuzz target (`shim_jail::testing`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use shim_jail::DeleteOptions;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::MoveOptions;
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

use super::common::Snap;
use super::common::snapshot;

fn node() -> impl Strategy<Value = Node> {
    let spot = prop::sample::select(SPOTS);
    prop_oneof![
        spot.clone().prop_map(Node::File),
        spot.clone().prop_map(Node::Dir),
        (spot.clone(), prop::sample::select(TARGETS)).prop_map(|(s, t)| Node::Link(s, t)),
        spot.prop_map(Node::HardLink),
    ]
}

fn path() -> impl Strategy<Value = PlanPath> {
    (
        prop_oneof![
            6 => Just(Base::Root),
            1 => Just(Base::Parent),
            1 => Just(Base::Outside),
            1 => Just(Base::Slash),
        ],
        prop::collection::vec(prop::sample::select(TOKENS), 0..5),
    )
        .prop_map(|(base, toks)| PlanPath { base, toks })
}

#[derive(Debug, Clone)]
enum Op {
    Read(PlanPath),
    Write(PlanPath, bool),
    Stat(PlanPath, bool),
    List(PlanPath, bool),
    Delete(PlanPath, bool, bool),
    Move(PlanPath, PlanPath, bool),
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

struct Case {
    _t: tempfile::TempDir,
    l: Layout,
    jail: JailRoot,
}

fn build(nodes: &[Node]) -> Case {
    let t = tempfile::tempdir().unwrap();
    let l = Layout::create(t.path());
    for n in nodes {
        l.plant(*n);
    }
    let jail =
        JailRoot::open(&l.root, JailConfig::default(), cap_std::ambient_authority()).unwrap();
    Case { _t: t, l, jail }
}

fn outside_state(l: &Layout) -> BTreeMap<PathBuf, Snap> {
    let mut s = snapshot(&l.r);
    s.retain(|p, _| !p.starts_with(&l.root) || p == &l.root);
    for v in s.values_mut() {
        // Link counts of outside inodes legitimately drop when an inside hard link is
        // replaced or removed (4.9); everything else must stay identical.
        if let Snap::File { nlink, .. } = v {
            *nlink = 0;
        }
    }
    s
}

fn run(c: &Case, op: &Op) {
    let (l, jail) = (&c.l, &c.jail);
    let rp = jail.root_path().to_owned();
    let inside = |p: &str| l.reports_inside(&rp, p);
    let what = format!("{op:?}");
    match op {
        Op::Read(p) => {
            let r = jail.read(&p.wire(l), &ReadOptions::default());
            if let Ok(v) = &r {
                assert!(!v.content.contains(SECRET), "{what}: secret read");
                assert!(inside(&v.path));
            }
            check_result(&r, p, l, &what);
        }
        Op::Write(p, parents) => {
            let o = WriteOptions {
                create_parents: *parents,
                ..Default::default()
            };
            let r = jail.write(&p.wire(l), "written", &o);
            if let Ok(v) = &r {
                assert!(inside(&v.path));
            }
            check_result(&r, p, l, &what);
        }
        Op::Stat(p, follow) => {
            let r = jail.stat(&p.wire(l), *follow);
            if let Ok(Some(v)) = &r {
                assert!(inside(&v.path));
            }
            check_result(&r, p, l, &what);
        }
        Op::List(p, recursive) => {
            let o = ListOptions {
                recursive: *recursive,
                include_hidden: true,
                ..Default::default()
            };
            let r = jail.list(&p.wire(l), &o);
            if let Ok(v) = &r {
                assert!(v.entries.iter().all(|e| inside(&e.path)));
            }
            check_result(&r, p, l, &what);
        }
        Op::Delete(p, recursive, missing_ok) => {
            let o = DeleteOptions {
                recursive: *recursive,
                missing_ok: *missing_ok,
            };
            check_result(&jail.delete(&p.wire(l), &o), p, l, &what);
        }
        Op::Move(a, b, overwrite) => {
            let o = MoveOptions {
                overwrite: *overwrite,
            };
            let r = jail.rename(&a.wire(l), &b.wire(l), &o);
            if let Ok(v) = &r {
                assert!(inside(&v.src) && inside(&v.dst));
            }
            check_result(&r, a, l, &what);
        }
    }
    assert!(l.root.is_dir(), "{what}: the root survived");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_trees_and_operations_never_touch_the_outside(
        nodes in prop::collection::vec(node(), 0..12),
        ops in prop::collection::vec(op(), 1..24),
    ) {
        let case = build(&nodes);
        let before = outside_state(&case.l);
        for op in &ops {
            run(&case, op);
            prop_assert_eq!(&before, &outside_state(&case.l), "after {:?}", op);
        }
    }
}
