//! The crate's layout stays readable (see `src/lib.rs`): the runtime never uses the user's
//! commands, and no two source files use each other, directly or through others.
//!
//! Edges are the `crate::a::b` paths a file names; `lib.rs`, `mod.rs` and `*_tests.rs` files
//! are not nodes (the crate root and module lists name everything; tests may use anything).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;

/// Module path (`runtime::conn`) to the module paths it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn module_of(rel: &Path) -> Option<String> {
    let s = rel.to_str()?.strip_suffix(".rs")?;
    if s == "lib" || s.ends_with("mod") || s.ends_with("_tests") {
        return None;
    }
    Some(s.replace('/', "::"))
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let mut nodes = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(f.strip_prefix(&src).unwrap()) {
            nodes.insert(m, f.clone());
        }
    }
    let mut g = Graph::new();
    for (m, f) in &nodes {
        let text = std::fs::read_to_string(f).unwrap();
        let mut uses = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let path: String = text[i + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // The longest prefix of the path that is a file of the crate.
            let parts: Vec<&str> = path.split("::").collect();
            let target = (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|p| nodes.contains_key(p));
            if let Some(t) = target.filter(|t| t != m) {
                uses.insert(t);
            }
        }
        g.insert(m.clone(), uses);
    }
    g
}

#[test]
fn the_runtime_never_uses_the_commands() {
    for (m, uses) in graph() {
        if m.starts_with("runtime::") {
            let bad: Vec<_> = uses
                .iter()
                .filter(|u| u.starts_with("commands::"))
                .collect();
            assert!(bad.is_empty(), "{m} uses {bad:?}");
        }
    }
}

#[test]
fn no_two_files_use_each_other() {
    let g = graph();
    assert!(g.len() > 20, "the graph found too few files: {g:?}");
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        g: &Graph,
        m: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == m) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(m.to_owned());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        stack.push(m.to_owned());
        for u in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, u, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(m.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for m in g.keys() {
        if let Some(cycle) = visit(&g, m, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}
