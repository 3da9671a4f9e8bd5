use super::*;

fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

fn wire(pairs: &[(&str, &str)]) -> WireEnv {
    WireEnv::new(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
    .unwrap()
}

#[test]
fn posix_baseline_keeps_exactly_the_listed_names_and_lc() {
    let base = BaseEnv::filter(
        HostOs::Posix,
        os(&[
            ("HOME", "/h"),
            ("PATH", "/bin"),
            ("LANG", "C"),
            ("TZ", "UTC"),
            ("TMPDIR", "/t"),
            ("USER", "u"),
            ("SHELL", "/bin/sh"),
            ("LC_ALL", "C"),
            ("LC_CTYPE", "C"),
            ("lc_all", "x"),
            ("home", "x"),
            ("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "secret"),
            ("AUTOGPT_SHIM_TOKEN", "secret"),
            ("GITHUB_TOKEN", "secret"),
            ("HTTPS_PROXY", "p"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("USERPROFILE", "x"),
        ]),
    );
    let mut names: Vec<_> = base
        .entries()
        .iter()
        .map(|(k, _)| k.to_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "HOME", "LANG", "LC_ALL", "LC_CTYPE", "PATH", "SHELL", "TMPDIR", "TZ", "USER"
        ]
    );
}

#[test]
fn windows_baseline_is_case_insensitive_and_keeps_spelling() {
    let base = BaseEnv::filter(
        HostOs::Windows,
        os(&[
            ("Path", "C:\\w"),
            ("SystemRoot", "C:\\Windows"),
            ("userprofile", "C:\\u"),
            ("HOME", "x"),
            ("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", "s"),
        ]),
    );
    let names: Vec<_> = base
        .entries()
        .iter()
        .map(|(k, _)| k.to_str().unwrap())
        .collect();
    assert_eq!(names, ["Path", "SystemRoot", "userprofile"]);
}

#[test]
fn posix_merge_overrides_exact_name_adds_others_and_forces_pythonioencoding() {
    let base = BaseEnv::filter(HostOs::Posix, os(&[("PATH", "/bin"), ("HOME", "/h")]));
    let env = ChildEnv::merge(
        HostOs::Posix,
        &base,
        &wire(&[
            ("PATH", "/x"),
            ("path", "lower"),
            ("FOO", "1"),
            ("PYTHONIOENCODING", "latin1"),
        ]),
    );
    assert_eq!(env.get(HostOs::Posix, "PATH").unwrap(), "/x");
    assert_eq!(env.get(HostOs::Posix, "path").unwrap(), "lower");
    assert_eq!(env.get(HostOs::Posix, "HOME").unwrap(), "/h");
    assert_eq!(env.get(HostOs::Posix, "PYTHONIOENCODING").unwrap(), "utf-8");
    assert_eq!(
        env.keys(),
        ["FOO", "HOME", "PATH", "PYTHONIOENCODING", "path"]
    );
}

#[test]
fn windows_merge_case_folds_last_wire_duplicate_wins_with_wire_spelling() {
    let base = BaseEnv::filter(HostOs::Windows, os(&[("Path", "C:\\base"), ("TEMP", "t")]));
    let env = ChildEnv::merge(
        HostOs::Windows,
        &base,
        &wire(&[
            ("PATH", "first"),
            ("path", "second"),
            ("pythonioencoding", "x"),
        ]),
    );
    assert_eq!(env.keys(), ["PYTHONIOENCODING", "TEMP", "path"]);
    assert_eq!(env.get(HostOs::Windows, "Path").unwrap(), "second");
    assert_eq!(
        env.get(HostOs::Windows, "pythonioencoding").unwrap(),
        "utf-8"
    );
}
