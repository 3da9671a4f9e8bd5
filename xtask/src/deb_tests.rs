#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn the_highest_glibc_version_is_found() {
    let bin = b"..GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0GLIBC_PRIVATE\0GLIBC_2.";
    assert_eq!(glibc_needed(bin), Some(34));
    assert_eq!(glibc_needed(b"no libc here"), None);
}

#[test]
fn control_names_the_package_arch_and_libc() {
    let c = control("0.3.0", "amd64", Some(34), 12);
    assert!(c.starts_with("Package: autogpt-shim\nVersion: 0.3.0\nArchitecture: amd64\n"));
    assert!(c.contains("\nDepends: libc6 (>= 2.34), libgcc-s1\n"));
    assert!(c.contains("\nInstalled-Size: 12\n"));
    // Continuation lines of the description start with one space.
    assert!(
        c.lines()
            .skip_while(|l| !l.starts_with("Description:"))
            .skip(1)
            .all(|l| l.starts_with(' '))
    );
    assert_eq!(debian_arch("aarch64-unknown-linux-gnu"), Some("arm64"));
    assert_eq!(debian_arch("x86_64-pc-windows-gnu"), None);
}

#[test]
fn the_packaged_unit_keeps_the_restart_rules_of_autogpt_shim_install() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let source =
        std::fs::read_to_string(root.join("crates/daemon/src/commands/autostart.rs")).unwrap();
    for line in [
        "Restart=on-failure",
        "RestartSec=5",
        "RestartPreventExitStatus=77 78",
        "WantedBy=default.target",
        "Description=AutoGPT Local PC Executor shim",
    ] {
        assert!(source.contains(line), "autostart.rs no longer has {line}");
        assert!(USER_UNIT.contains(line), "the packaged unit lacks {line}");
    }
}
