use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use super::*;

/// A fake file-system tree: directory → canonical children.
fn tree(entries: &[(&str, &[&str])]) -> BTreeMap<PathBuf, Vec<PathBuf>> {
    entries
        .iter()
        .map(|(d, kids)| (PathBuf::from(d), kids.iter().map(PathBuf::from).collect()))
        .collect()
}

fn policy(mode: SandboxMode, home: Option<&str>) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        network: NetworkMode::Allow,
        net_mechanism: NetMechanism::Namespace,
        folder: PathBuf::from("/home/ann/work/chat"),
        home: home.map(PathBuf::from),
        writable: vec![PathBuf::from("/home/ann/.cache/pip")],
        readable: vec![PathBuf::from("/home/ann/.gitconfig")],
    }
}

fn rules_of(p: &SandboxPolicy, fs: &BTreeMap<PathBuf, Vec<PathBuf>>) -> Vec<(String, FsAccess)> {
    let list = |d: &Path| fs.get(d).cloned().unwrap_or_default();
    fs_rules(p, Path::new("/tmp/autogpt-shim-cmd-1"), &list)
        .into_iter()
        .map(|r| (r.path.display().to_string(), r.access))
        .collect()
}

fn root_fs() -> BTreeMap<PathBuf, Vec<PathBuf>> {
    tree(&[
        (
            "/",
            &[
                "/usr",
                "/etc",
                "/home",
                "/dev",
                "/tmp",
                "/proc",
                "/usr/bin",  // /bin -> usr/bin
                "/",         // a loop: /self -> /
                "/home/ann", // /ann -> /home/ann (a symlink into the home)
            ],
        ),
        ("/home", &["/home/ann", "/home/bob"]),
        ("/home/ann", &["/home/ann/.ssh", "/home/ann/work"]),
    ])
}

#[test]
fn off_has_no_rules() {
    let p = policy(SandboxMode::Off, Some("/home/ann"));
    assert!(rules_of(&p, &root_fs()).is_empty());
}

#[test]
fn workspace_write_table() {
    use FsAccess::*;
    let p = policy(SandboxMode::WorkspaceWrite, Some("/home/ann"));
    let got = rules_of(&p, &root_fs());
    let mut want: Vec<(String, FsAccess)> = vec![
        // The system: every top-level entry but /dev and the branch to the home; the
        // symlinks to / and into the home are dropped, /usr/bin is kept.
        ("/etc", Read),
        ("/home/bob", Read),
        ("/proc", Read),
        ("/tmp", Read),
        ("/usr", Read),
        ("/usr/bin", Read),
        // The folder, the private tmp, the listed paths.
        ("/home/ann/work/chat", Write),
        ("/tmp/autogpt-shim-cmd-1", Write),
        ("/home/ann/.cache/pip", Write),
        ("/home/ann/.gitconfig", Read),
    ]
    .into_iter()
    .map(|(p, a)| (p.to_owned(), a))
    .collect();
    want.extend(DEVICES.iter().map(|d| ((*d).to_owned(), Device)));
    want.sort();
    assert_eq!(got, want);
    // Nothing grants the home itself, its .ssh, or /dev as a whole.
    for bad in ["/home/ann", "/home/ann/.ssh", "/home", "/dev", "/"] {
        assert!(got.iter().all(|(p, _)| p != bad), "{bad} granted");
    }
}

#[test]
fn read_only_writes_only_the_private_tmp() {
    let p = policy(SandboxMode::ReadOnly, Some("/home/ann"));
    let got = rules_of(&p, &root_fs());
    let writes: Vec<&str> = got
        .iter()
        .filter(|(_, a)| *a == FsAccess::Write)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(writes, ["/tmp/autogpt-shim-cmd-1"]);
    assert!(got.contains(&("/home/ann/work/chat".into(), FsAccess::Read)));
    assert!(got.contains(&("/home/ann/.cache/pip".into(), FsAccess::Read)));
}

#[test]
fn no_home_reads_the_whole_system_but_dev() {
    let p = policy(SandboxMode::WorkspaceWrite, None);
    let got = rules_of(&p, &root_fs());
    assert!(got.contains(&("/home".into(), FsAccess::Read)));
    assert!(!got.iter().any(|(p, _)| p == "/" || p == "/dev"));
}

#[test]
fn a_home_deep_in_tmp_hides_only_its_branch() {
    // As in the integration tests: HOME=/tmp/x/home, folder /tmp/x/root.
    let fs = tree(&[
        ("/", &["/tmp", "/usr"]),
        ("/tmp", &["/tmp/x", "/tmp/other"]),
        ("/tmp/x", &["/tmp/x/home", "/tmp/x/root", "/tmp/x/state"]),
    ]);
    let mut p = policy(SandboxMode::WorkspaceWrite, Some("/tmp/x/home"));
    p.folder = PathBuf::from("/tmp/x/root");
    p.writable.clear();
    p.readable.clear();
    let got = rules_of(&p, &fs);
    let reads: Vec<&str> = got
        .iter()
        .filter(|(_, a)| *a == FsAccess::Read)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        reads,
        ["/tmp/other", "/tmp/x/root", "/tmp/x/state", "/usr"],
        "siblings along the branch stay readable"
    );
}

#[test]
fn setting_spellings_round_trip() {
    for m in SandboxMode::ALL {
        assert_eq!(SandboxMode::parse(m.as_str()), Some(m));
    }
    for bad in ["", "on", "Workspace-Write", "workspace_write", "readonly"] {
        assert_eq!(SandboxMode::parse(bad), None, "{bad}");
    }
    assert_eq!(NetworkMode::parse("deny"), Some(NetworkMode::Deny));
    assert_eq!(NetworkMode::parse("allow"), Some(NetworkMode::Allow));
    assert_eq!(NetworkMode::parse("off"), None);
}
