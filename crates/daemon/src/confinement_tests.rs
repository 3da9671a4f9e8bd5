use super::*;

fn linux() -> Platform {
    Platform {
        file_system: Ok("landlock ABI 7".into()),
        network: Ok(NetMechanism::Namespace),
    }
}

fn none() -> Platform {
    Platform {
        file_system: Err("no command sandbox is available on this OS yet".into()),
        network: Err("no command sandbox is available on this OS yet".into()),
    }
}

#[test]
fn the_default_is_workspace_write_where_supported() {
    let e = resolve(None, None, &linux()).unwrap();
    assert_eq!(e.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(e.network, NetworkMode::Allow);
    assert!(e.warning.is_none());
    assert_eq!(
        e.describe(),
        "shell sandbox workspace-write (landlock ABI 7), network allow"
    );
}

#[test]
fn the_default_falls_back_to_off_with_a_warning() {
    let e = resolve(None, None, &none()).unwrap();
    assert_eq!(e.mode, SandboxMode::Off);
    assert!(e.warning.unwrap().contains("not confined"));
}

#[test]
fn an_explicit_request_that_cannot_be_enforced_is_refused_with_a_hint() {
    for m in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let err = resolve(Some(m), None, &none()).unwrap_err();
        assert!(
            err.contains(m.as_str()) && err.contains("\nhint: "),
            "{err}"
        );
    }
    let err = resolve(Some(SandboxMode::Off), Some(NetworkMode::Deny), &none()).unwrap_err();
    assert!(
        err.contains("shell_network") && err.contains("\nhint: "),
        "{err}"
    );
    // Off and allow are always possible.
    let e = resolve(Some(SandboxMode::Off), Some(NetworkMode::Allow), &none()).unwrap();
    assert_eq!(e.describe(), "shell sandbox off, network allow");
}

#[test]
fn deny_names_its_mechanism() {
    let mut p = linux();
    let e = resolve(Some(SandboxMode::ReadOnly), Some(NetworkMode::Deny), &p).unwrap();
    assert_eq!(
        e.describe(),
        "shell sandbox read-only (landlock ABI 7), network deny (network-namespace+seccomp)"
    );
    p.network = Ok(NetMechanism::Seccomp);
    let e = resolve(None, Some(NetworkMode::Deny), &p).unwrap();
    assert!(
        e.describe()
            .ends_with("network deny (seccomp+landlock-tcp)")
    );
}

/// A test double for macOS (`Platform::current` probes `/usr/bin/sandbox-exec` there).
#[test]
fn macos_double_uses_sandbox_exec_and_refuses_a_request_without_it() {
    let mac = Platform::macos(true);
    let e = resolve(None, Some(NetworkMode::Deny), &mac).unwrap();
    assert_eq!(
        e.describe(),
        "shell sandbox workspace-write (seatbelt (/usr/bin/sandbox-exec)), network deny (seatbelt)"
    );
    let missing = Platform::macos(false);
    // Asked for: refused (start exits 78) with a hint.
    let err = resolve(Some(SandboxMode::WorkspaceWrite), None, &missing).unwrap_err();
    assert!(
        err.contains("/usr/bin/sandbox-exec is missing") && err.contains("\nhint: "),
        "{err}"
    );
    let err = resolve(Some(SandboxMode::Off), Some(NetworkMode::Deny), &missing).unwrap_err();
    assert!(err.contains("shell_network"), "{err}");
    // The default falls back to off, with the reason as a warning.
    let e = resolve(None, None, &missing).unwrap();
    assert_eq!(e.mode, SandboxMode::Off);
    assert!(e.warning.unwrap().contains("sandbox-exec is missing"));
}
