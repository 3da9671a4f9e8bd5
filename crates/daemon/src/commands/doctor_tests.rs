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
