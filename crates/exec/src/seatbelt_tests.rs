use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;

use super::*;
use crate::sandbox::NetMechanism;

fn policy(mode: SandboxMode, network: NetworkMode) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        network,
        net_mechanism: NetMechanism::Namespace,
        folder: PathBuf::from("/Users/ann/My \"chat\") (allow default) 'x'"),
        home: Some(PathBuf::from("/Users/ann")),
        writable: vec![PathBuf::from("/Users/ann/Library/Caches/pip")],
        readable: vec![PathBuf::from("/Users/ann/.gitconfig")],
    }
}

#[test]
fn a_folder_with_quotes_and_spaces_stays_a_parameter() {
    let p = policy(SandboxMode::WorkspaceWrite, NetworkMode::Deny);
    let tmp = Path::new("/private/var/folders/x y/T/autogpt-shim-cmd-1");
    let prof = profile(&p, tmp).unwrap();
    // No path (and none of the folder's quotes or parentheses) in the profile text.
    for needle in ["/Users", "chat", "allow default", "'x'", "x y"] {
        assert!(
            !prof.profile.contains(needle),
            "{needle} in\n{}",
            prof.profile
        );
    }
    assert_eq!(
        prof.profile,
        concat!(
            "(version 1)\n",
            "(deny default)\n",
            "(allow process-exec)\n",
            "(allow process-fork)\n",
            "(allow signal (target same-sandbox))\n",
            "(allow sysctl-read)\n",
            "(allow mach-lookup)\n",
            "(allow ipc-posix-shm-read-data)\n",
            "(allow file-read*)\n",
            "(deny file-read* (subpath (param \"HOME_DIR\")))\n",
            "(allow file-read* (subpath (param \"READABLE_0\")) (subpath (param \"TMP_DIR\")) (subpath (param \"FOLDER\")) (subpath (param \"WRITABLE_0\")))\n",
            "(allow file-write* (subpath (param \"TMP_DIR\")) (subpath (param \"FOLDER\")) (subpath (param \"WRITABLE_0\")))\n",
            "(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\"))\n",
            "(deny network*)\n",
            "(allow network* (remote unix-socket (subpath (param \"FOLDER\"))))\n",
        )
    );
    let params: Vec<(&str, &OsString)> = prof.params.iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(
        params,
        [
            ("HOME_DIR", &OsString::from("/Users/ann")),
            ("TMP_DIR", &OsString::from(tmp)),
            ("FOLDER", &OsString::from(p.folder.clone())),
            (
                "WRITABLE_0",
                &OsString::from("/Users/ann/Library/Caches/pip")
            ),
            ("READABLE_0", &OsString::from("/Users/ann/.gitconfig")),
        ]
    );
    // The folder reaches sandbox-exec as one argument, verbatim.
    let argv = prof.wrap(&["sh".into(), "-c".into(), "true".into()]);
    let mut want_d = OsString::from("FOLDER=");
    want_d.push(&p.folder);
    assert!(argv.contains(&want_d));
    assert_eq!(argv[0], SANDBOX_EXEC);
    assert_eq!(&argv[argv.len() - 4..], ["--", "sh", "-c", "true"]);
}

#[test]
fn read_only_writes_only_tmp() {
    let p = policy(SandboxMode::ReadOnly, NetworkMode::Allow);
    let prof = profile(&p, Path::new("/tmp/t")).unwrap();
    assert!(
        prof.profile
            .contains("(allow file-write* (subpath (param \"TMP_DIR\")))\n")
    );
    assert!(prof.profile.contains("(allow network*)\n"));
}

#[test]
fn off_with_network_deny_only_denies_the_network() {
    let p = policy(SandboxMode::Off, NetworkMode::Deny);
    let prof = profile(&p, Path::new("/tmp/t")).unwrap();
    assert!(
        prof.profile
            .starts_with("(version 1)\n(allow default)\n(deny network*)\n")
    );
    assert_eq!(prof.params.len(), 1);
    assert!(
        profile(
            &policy(SandboxMode::Off, NetworkMode::Allow),
            Path::new("/t")
        )
        .is_none()
    );
}
