use super::*;

#[test]
fn table_matches_12_3_for_both_families() {
    use HostOs::*;
    use Shell::*;
    let expect: &[(HostOs, Shell, &[&str])] = &[
        (Posix, Auto, &["bash", "sh"]),
        (Posix, Bash, &["bash"]),
        (Posix, Sh, &["sh"]),
        (Posix, Zsh, &["zsh"]),
        (Posix, Pwsh, &["pwsh"]),
        (Posix, Powershell, &[]),
        (Posix, Cmd, &[]),
        (Windows, Auto, &["cmd.exe"]),
        (Windows, Bash, &["bash"]),
        (Windows, Sh, &[]),
        (Windows, Zsh, &[]),
        (Windows, Pwsh, &["pwsh"]),
        (Windows, Powershell, &["powershell.exe"]),
        (Windows, Cmd, &["cmd.exe"]),
    ];
    for (os, sh, c) in expect {
        assert_eq!(candidates(*os, *sh), *c, "{os:?} {sh}");
    }
}

#[test]
fn argument_vectors() {
    let v = shell_argv(Path::new("/bin/bash"), Shell::Bash, "echo hi");
    assert_eq!(v, ["/bin/bash", "-c", "echo hi"]);
    let v = shell_argv(Path::new("/usr/bin/pwsh"), Shell::Pwsh, "Get-Date");
    assert_eq!(
        v,
        [
            "/usr/bin/pwsh",
            "-NoLogo",
            "-NoProfile",
            "-Command",
            "Get-Date"
        ]
    );
    assert_eq!(
        cmd_command_line(Path::new("C:\\Windows\\System32\\cmd.exe"), "echo \"a b\""),
        "\"C:\\Windows\\System32\\cmd.exe\" /D /S /C \"chcp 65001 >NUL & echo \"a b\"\""
    );
}

#[cfg(unix)]
#[test]
fn auto_prefers_bash_then_sh_and_refuses_when_neither() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().as_os_str().to_owned();
    assert!(matches!(
        resolve_shell(HostOs::Posix, Shell::Auto, Some(&path)),
        Err(ExecError::ShellNotAvailable { shell }) if shell == "auto"
    ));
    let mk = |name: &str| {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.path().join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    mk("sh");
    assert_eq!(
        resolve_shell(HostOs::Posix, Shell::Auto, Some(&path)).unwrap(),
        dir.path().join("sh")
    );
    mk("bash");
    assert_eq!(
        resolve_shell(HostOs::Posix, Shell::Auto, Some(&path)).unwrap(),
        dir.path().join("bash")
    );
}

#[cfg(unix)]
#[test]
fn search_skips_relative_and_empty_entries_and_non_executables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool"), "x").unwrap(); // not executable
    let path = std::env::join_paths([Path::new(""), Path::new("."), dir.path()]).unwrap();
    assert_eq!(search_path(OsStr::new("tool"), Some(&path)), None);
    assert_eq!(search_path(OsStr::new("tool"), None), None);
}
