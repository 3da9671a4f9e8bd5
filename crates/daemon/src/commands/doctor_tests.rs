use super::*;

#[test]
fn the_session_type_comes_from_xdg_then_wayland_then_display() {
    assert_eq!(
        linux_session_type(Some("Wayland"), None, Some(":0")).as_deref(),
        Some("wayland")
    );
    assert_eq!(
        linux_session_type(Some("tty"), Some("wayland-0"), None).as_deref(),
        Some("tty")
    );
    assert_eq!(
        linux_session_type(None, Some("wayland-0"), Some(":0")).as_deref(),
        Some("wayland")
    );
    assert_eq!(
        linux_session_type(None, None, Some(":0")).as_deref(),
        Some("x11")
    );
    assert_eq!(linux_session_type(None, None, None), None);
}

#[test]
fn the_report_pads_markers_and_labels_and_exits_78_only_when_a_check_blocks() {
    let mut checks = vec![
        check("audit_log", Marker::Ok, "fine"),
        check("display", Marker::Warn, "no displays detected"),
        check("recording", Marker::Fail, "a FAIL that does not block"),
    ];
    let mut out = Vec::new();
    assert_eq!(report(&checks, &mut out), crate::error::EXIT_OK);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "[OK  ] audit_log  fine\n\
         [WARN] display    no displays detected\n\
         [FAIL] recording  a FAIL that does not block\n"
    );
    checks.push(blocking("keychain", Marker::Fail, "unavailable"));
    assert_eq!(report(&checks, &mut Vec::new()), crate::error::EXIT_CONFIG);
}

/// A test double for macOS (doctor probes `/usr/bin/sandbox-exec` there): the lines it
/// prints with and without `sandbox-exec`.
#[test]
fn macos_double_doctor_names_seatbelt_and_blocks_a_sandbox_without_sandbox_exec() {
    use crate::confinement::Platform;
    use shim_exec::sandbox::NetworkMode;
    use shim_exec::sandbox::SandboxMode;
    let lines = confinement_lines(None, Some(NetworkMode::Deny), &Platform::macos(true));
    assert_eq!(lines[0].label, "shell_sandbox");
    assert_eq!(lines[0].marker, Marker::Ok);
    assert_eq!(
        lines[0].detail,
        "workspace-write via seatbelt (/usr/bin/sandbox-exec)"
    );
    assert_eq!(lines[1].marker, Marker::Ok);
    assert!(
        lines[1]
            .detail
            .starts_with("deny via seatbelt; deny is a Seatbelt rule"),
        "{}",
        lines[1].detail
    );
    assert!(!lines.iter().any(|c| c.blocking));
    // Asked for, but sandbox-exec is missing: a blocking line (start and doctor exit 78).
    let lines = confinement_lines(
        Some(SandboxMode::WorkspaceWrite),
        None,
        &Platform::macos(false),
    );
    assert!(lines[0].blocking && lines[0].marker == Marker::Fail);
    assert!(
        lines[0].detail.contains("/usr/bin/sandbox-exec is missing"),
        "{}",
        lines[0].detail
    );
    // Not asked for: the default falls back to off, with a warning.
    let lines = confinement_lines(None, None, &Platform::macos(false));
    assert_eq!(lines[0].marker, Marker::Warn);
    assert!(!lines.iter().any(|c| c.blocking));
}

#[test]
fn uac_is_ok_when_elevated_and_information_otherwise() {
    let c = uac_check(Some(true));
    assert_eq!((c.label, c.marker), ("UAC", Marker::Ok));
    assert!(c.detail.starts_with("elevated"), "{}", c.detail);
    let c = uac_check(Some(false));
    assert_eq!((c.label, c.marker), ("UAC", Marker::Info));
    assert!(c.detail.starts_with("not elevated"), "{}", c.detail);
    let c = uac_check(None);
    assert_eq!(c.marker, Marker::Info);
    assert!(c.detail.contains("unknown"), "{}", c.detail);
    assert!(![true, false].iter().any(|e| uac_check(Some(*e)).blocking));
}

/// Issue 27 point 1: the darwin checks come from the probes, blocking iff computer use.
#[test]
fn darwin_reports_accessibility_and_screen_recording_from_the_probes() {
    let probes = |ax, screen| {
        Some(shim_cu::mac::MacPermissions {
            accessibility: ax,
            screen_recording: screen,
            input_monitoring: None,
        })
    };
    let summary = |v: Vec<Check>| -> Vec<(&'static str, Marker, bool)> {
        v.into_iter()
            .map(|c| (c.label, c.marker, c.blocking))
            .collect()
    };
    assert_eq!(
        summary(darwin_checks(true, probes(Some(true), true))),
        [
            ("Accessibility", Marker::Ok, false),
            ("Screen Recording", Marker::Ok, false),
            ("computer_use", Marker::Ok, false),
        ]
    );
    let v = darwin_checks(true, probes(Some(false), true));
    assert!(v[0].detail.contains("Privacy & Security > Accessibility"));
    assert_eq!(v[2].detail, "degraded - missing: Accessibility");
    assert_eq!(
        summary(v),
        [
            ("Accessibility", Marker::Fail, true),
            ("Screen Recording", Marker::Ok, false),
            ("computer_use", Marker::Warn, false),
        ]
    );
    assert_eq!(
        summary(darwin_checks(true, None)),
        [
            ("Accessibility", Marker::Warn, true),
            ("Screen Recording", Marker::Warn, true),
            ("computer_use", Marker::Warn, false),
        ]
    );
    // Computer use off: nothing blocks.
    let off = darwin_checks(false, probes(Some(false), false));
    assert!(off.iter().all(|c| !c.blocking));
    assert_eq!(off[2].marker, Marker::Info);
}
