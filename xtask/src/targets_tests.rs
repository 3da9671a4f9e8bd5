#![allow(clippy::unwrap_used)]

use std::path::Path;

use super::*;

#[test]
fn every_supported_target_is_covered_once() {
    let triples: Vec<&str> = TARGETS.iter().map(|t| t.triple).collect();
    assert_eq!(
        triples,
        [
            "x86_64-pc-windows-gnu",
            "aarch64-apple-darwin",
            "aarch64-unknown-linux-gnu"
        ]
    );
    for t in TARGETS {
        assert!(!t.why.is_empty(), "{} says why it is not built", t.triple);
        // Whatever is tested has a runner that can run it here.
        assert_eq!(t.test.is_empty(), t.runner.is_none(), "{}", t.triple);
    }
    let aarch64 = TARGETS.last().unwrap();
    assert!(aarch64.check.is_empty(), "the whole workspace is checked");
    assert_eq!(aarch64.test, AARCH64_TEST_PACKAGES);
}

#[test]
fn runner_variable_follows_cargo_naming() {
    assert_eq!(
        runner_var("aarch64-unknown-linux-gnu"),
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER"
    );
}

/// Why one macOS target is enough here: the two macOS targets differ only in `target_arch`,
/// and no code outside the Linux sandbox (whose seccomp filter is per architecture) looks at
/// it. A `target_arch` cfg anywhere else would need x86_64-apple-darwin back in [`TARGETS`].
#[test]
fn only_the_linux_sandbox_depends_on_the_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("bins")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&path)
                    .unwrap()
                    .contains("target_arch")
            {
                found.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    assert_eq!(found, ["crates/exec/src/confine.rs"]);
}
