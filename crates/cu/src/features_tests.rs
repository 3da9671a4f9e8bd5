use super::*;

#[test]
fn wayland_wins_over_display() {
    assert_eq!(
        classify_linux(None, Some("wayland-0"), Some(":0")),
        LinuxSession::Wayland
    );
    assert_eq!(
        classify_linux(Some("Wayland"), None, Some(":0")),
        LinuxSession::Wayland
    );
    assert_eq!(
        classify_linux(Some("x11"), Some(""), Some(":0")),
        LinuxSession::X11
    );
    assert_eq!(classify_linux(None, None, None), LinuxSession::None);
    assert_eq!(classify_linux(None, None, Some("")), LinuxSession::None);
}

#[test]
fn x11_lists_follow_the_table_in_its_order() {
    let f = Features::for_host(HostKind::X11, false, false);
    assert_eq!(f.coarse, ["screenshot", "input", "apps", "permissions"]);
    assert!(!f.has("screenshot.window"));
    assert!(!f.has("window.list"));
    // 2.1-2.2: the base list, then `windows`, then `clipboard`.
    let f = Features::for_host(HostKind::X11, true, true);
    assert_eq!(
        f.coarse,
        [
            "screenshot",
            "input",
            "apps",
            "permissions",
            "windows",
            "clipboard"
        ]
    );
    assert_eq!(
        f.fine,
        [
            "screenshot.region",
            "input.click.modifiers",
            "input.click.button",
            "input.drag.path",
            "input.key.hold",
            "input.mouse.down_up",
            "input.scroll.amount",
            "input.wait",
            "cursor.position",
            "display.info",
            "app.list",
            "app.launch",
            "permissions.check",
            "window.list",
            "window.focus",
            "clipboard.read",
            "clipboard.write",
        ]
    );
    let f = Features::for_host(HostKind::X11, false, true);
    assert_eq!(
        f.coarse,
        ["screenshot", "input", "apps", "permissions", "clipboard"]
    );
}

#[test]
fn macos_and_windows_lists_follow_the_table_in_its_order() {
    for kind in [HostKind::MacOs, HostKind::Windows] {
        let f = Features::for_host(kind, false, true);
        assert_eq!(
            f.coarse,
            [
                "screenshot",
                "input",
                "windows",
                "apps",
                "permissions",
                "clipboard"
            ]
        );
        assert_eq!(
            f.fine,
            [
                "screenshot.region",
                "screenshot.window",
                "input.click.modifiers",
                "input.click.button",
                "input.drag.path",
                "input.key.hold",
                "input.mouse.down_up",
                "input.scroll.amount",
                "input.wait",
                "cursor.position",
                "display.info",
                "window.list",
                "window.focus",
                "app.list",
                "app.launch",
                "permissions.check",
                "clipboard.read",
                "clipboard.write",
            ]
        );
    }
}

#[test]
fn doctor_lists_what_each_backend_cannot_do() {
    // X11 does everything it advertises; Windows reads the pointer (GetCursorPos), types
    // any character, reads concealment formats (win32.rs); macOS does all of that on its own
    // backend (mac.rs, issue 27).
    for kind in [HostKind::X11, HostKind::Windows, HostKind::MacOs] {
        assert!(not_available(kind).is_empty(), "{kind:?}");
    }
}
