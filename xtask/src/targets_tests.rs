#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn every_supported_target_is_covered_once() {
    let triples: Vec<&str> = TARGETS.iter().map(|t| t.triple).collect();
    assert_eq!(
        triples,
        [
            "x86_64-pc-windows-gnu",
            "x86_64-apple-darwin",
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
