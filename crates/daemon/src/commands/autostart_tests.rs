#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn linux_paths_and_commands() {
    let a = for_platform(Platform::Linux, Path::new("/home/ada"), None).unwrap();
    assert_eq!(
        a.file,
        PathBuf::from("/home/ada/.config/systemd/user/autogpt-shim.service")
    );
    assert_eq!(
        a.enable,
        "systemctl --user enable --now autogpt-shim.service"
    );
    assert!(a.notes.iter().any(|n| n.contains("daemon-reload")));
    assert!(a.notes.iter().any(|n| n.contains("enable-linger")));
    let w = for_platform(Platform::Wsl2, Path::new("/h"), Some(Path::new("/x"))).unwrap();
    assert_eq!(
        w.file,
        PathBuf::from("/x/systemd/user/autogpt-shim.service")
    );
    assert!(w.notes.iter().any(|n| n.contains("enable-linger")));
    assert!(for_platform(Platform::Darwin, Path::new("/h"), None).is_none());
}

#[test]
fn unit_escapes_substituted_values() {
    let unit = systemd_unit(
        Path::new("/opt/my \"shim\"/bin\\x%y"),
        Path::new("/c/config%.toml"),
        Path::new("/l/out%.log"),
        Path::new("/l/err.log"),
    );
    assert!(
        unit.contains(
            r#"ExecStart="/opt/my \"shim\"/bin\\x%%y" --config "/c/config%%.toml" start"#
        )
    );
    assert!(unit.contains("StandardOutput=append:/l/out%%.log\n"));
    assert!(unit.contains("RestartPreventExitStatus=77 78\n"));
    assert!(unit.contains("Restart=on-failure\n"));
    assert!(unit.contains("WantedBy=default.target\n"));
}
