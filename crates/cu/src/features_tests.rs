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
fn x11_lists_follow_the_table() {
    let f = Features::for_host(HostKind::X11, false, false);
    assert_eq!(f.coarse, ["screenshot", "input", "apps", "permissions"]);
    assert!(!f.has("screenshot.window"));
    assert!(!f.has("window.list"));
    let f = Features::for_host(HostKind::X11, true, true);
    assert_eq!(
        f.coarse,
        [
            "screenshot",
            "input",
            "windows",
            "apps",
            "clipboard",
            "permissions"
        ]
    );
    assert_eq!(f.fine.len(), 17);
    let f = Features::for_host(HostKind::MacOs, false, false);
    assert!(f.has("screenshot.window") && f.has("window.focus"));
}
