#![allow(clippy::unwrap_used)]

use super::*;

/// Lines as cargo 1.95 prints them with `--message-format=json` (shortened): a dependency,
/// a library's unit tests, an integration test and a package whose folder has its name.
const MESSAGES: &str = r#"{"reason":"compiler-artifact","package_id":"registry+https://github.com/rust-lang/crates.io-index#serde@1.0.229","manifest_path":"/r/serde/Cargo.toml","target":{"kind":["lib"],"name":"serde"},"profile":{"test":false},"executable":null}
{"reason":"compiler-artifact","package_id":"path+file:///w/crates/jail#shim-jail@0.3.0","manifest_path":"/w/crates/jail/Cargo.toml","target":{"kind":["lib"],"name":"shim_jail"},"profile":{"test":true},"executable":"/w/target/x/debug/deps/shim_jail-1.exe"}
{"reason":"compiler-artifact","package_id":"path+file:///w/crates/jail#shim-jail@0.3.0","manifest_path":"/w/crates/jail/Cargo.toml","target":{"kind":["test"],"name":"windows"},"profile":{"test":true},"executable":"/w/target/x/debug/deps/windows-2.exe"}
{"reason":"compiler-artifact","package_id":"path+file:///w/bins/autogpt-shim#0.3.0","manifest_path":"/w/bins/autogpt-shim/Cargo.toml","target":{"kind":["test"],"name":"all"},"profile":{"test":true},"executable":"/w/target/x/debug/deps/all-3.exe"}
{"reason":"compiler-artifact","package_id":"path+file:///w/bins/autogpt-shim#0.3.0","manifest_path":"/w/bins/autogpt-shim/Cargo.toml","target":{"kind":["bin"],"name":"autogpt-shim"},"profile":{"test":false},"executable":"/w/target/x/debug/autogpt-shim.exe"}
{"reason":"build-finished","success":true}"#;

#[test]
fn test_binaries_are_read_from_cargos_messages() {
    let tests = test_binaries(MESSAGES);
    let names: Vec<(&str, &str, bool)> = tests
        .iter()
        .map(|t| (t.package.as_str(), t.name.as_str(), t.lib))
        .collect();
    assert_eq!(
        names,
        [
            ("shim-jail", "shim_jail", true),
            ("shim-jail", "windows", false),
            ("autogpt-shim", "all", false),
        ]
    );
    assert_eq!(tests[0].dir, Path::new("/w/crates/jail"));
    assert_eq!(
        tests[2].executable,
        Path::new("/w/target/x/debug/deps/all-3.exe")
    );
}

#[test]
fn selectors_pick_the_library_and_the_named_tests() {
    let tests = test_binaries(MESSAGES);
    let jail: Vec<&str> = tests
        .iter()
        .filter(|t| selector_matches(&["--lib", "--test", "windows"], t))
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(jail, ["shim_jail", "windows"]);
    assert!(!selector_matches(&["--lib"], &tests[1]));
    assert!(!selector_matches(&["--test", "windows"], &tests[0]));
    assert_eq!(selected_count(&["--lib", "--test", "all"]), 2);
    assert_eq!(selector_groups(&["--test", "all"]), [vec!["--test", "all"]]);
}

#[test]
fn every_run_names_a_package_and_at_least_one_binary() {
    for (package, selector) in RUNS {
        assert!(!package.is_empty());
        assert!(selected_count(selector) >= 1, "{package}: {selector:?}");
    }
}

#[test]
fn every_test_run_alone_is_in_an_all_binary_of_a_run_and_not_skipped() {
    for (package, name, var) in WINE_ALONE {
        let run = RUNS.iter().find(|(p, _)| p == package);
        assert!(
            run.is_some_and(|(_, selector)| selector.windows(2).any(|w| w == ["--test", "all"])),
            "{package}: {name} needs the `all` test binary in RUNS"
        );
        assert!(!WINE_SKIPS.iter().any(|(p, n, _)| p == package && n == name));
        assert!(name.starts_with("suite::") && !var.is_empty());
    }
}
