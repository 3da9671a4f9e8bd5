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
            "(allow pseudo-tty)\n",
            "(allow file-read* file-write* file-ioctl (literal \"/dev/ptmx\") (literal \"/dev/tty\"))\n",
            "(allow file-read* file-write* (require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))\n",
            "(allow file-ioctl (regex #\"^/dev/ttys[0-9]+$\"))\n",
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

/// A test double for macOS (sandbox-exec cannot run here): the argument vector the
/// executor hands to `Command` for a folder with quotes, spaces and non-ASCII letters.
#[test]
fn macos_double_sandbox_exec_argv_keeps_the_folder_out_of_the_profile() {
    let mut p = policy(SandboxMode::WorkspaceWrite, NetworkMode::Deny);
    p.folder = PathBuf::from("/Users/ann/Dokumente/Ärger \"mit\" (allow default) 'Zoë' 日本");
    let tmp = Path::new("/private/var/folders/x y/T/autogpt-shim-cmd-2");
    let prof = profile(&p, tmp).unwrap();
    let (program, argv) = sandbox_exec_command(
        &prof,
        "/bin/zsh".into(),
        &[
            "zsh".into(),
            "-c".into(),
            "echo \"$HOME\" > 'a b.txt'".into(),
        ],
    );
    assert_eq!(program, SANDBOX_EXEC);
    assert_eq!(argv[0], SANDBOX_EXEC);
    assert_eq!(argv[1], "-p");
    // The profile is one argument and holds no part of any path.
    let text = argv[2].to_str().unwrap();
    assert_eq!(text, prof.profile);
    for needle in ["Ärger", "mit", "Zoë", "日本", "Dokumente", "x y", "/Users"] {
        assert!(!text.contains(needle), "{needle} in the profile");
    }
    assert!(text.contains("(deny network*)"));
    // Each path is exactly one `-D NAME=VALUE` argument, byte for byte.
    let dashes = argv.iter().position(|a| a == "--").unwrap();
    let defines: Vec<&OsString> = argv[3..dashes].iter().skip(1).step_by(2).collect();
    assert!(argv[3..dashes].iter().step_by(2).all(|a| a == "-D"));
    let mut folder = OsString::from("FOLDER=");
    folder.push(&p.folder);
    let mut tmp_d = OsString::from("TMP_DIR=");
    tmp_d.push(tmp);
    assert!(defines.contains(&&folder), "{defines:?}");
    assert!(defines.contains(&&tmp_d), "{defines:?}");
    assert_eq!(defines.len(), prof.params.len());
    // After `--`: the resolved program, then the command's arguments unchanged.
    assert_eq!(
        &argv[dashes + 1..],
        ["/bin/zsh", "-c", "echo \"$HOME\" > 'a b.txt'"]
    );
    // Network allow: no deny rule in the profile.
    let open = profile(
        &policy(SandboxMode::WorkspaceWrite, NetworkMode::Allow),
        tmp,
    )
    .unwrap();
    let (_, argv) = sandbox_exec_command(&open, "/bin/sh".into(), &["sh".into()]);
    assert!(!argv[2].to_str().unwrap().contains("deny network"));
}
