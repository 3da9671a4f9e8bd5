//! Session classification (COMPUTER_USE_HW.md 2.2) and the advertised feature lists.

use crate::backend::HostKind;

/// The Linux session kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinuxSession {
    /// Wayland (never advertised, even with `DISPLAY` set: XWayland only reaches X clients).
    Wayland,
    /// `DISPLAY` set (the X connection is tried by the caller).
    X11,
    /// Nothing usable.
    None,
}

/// Classifies from the environment values (rule 1 and the first half of rule 2).
pub fn classify_linux(
    xdg_session_type: Option<&str>,
    wayland_display: Option<&str>,
    display: Option<&str>,
) -> LinuxSession {
    if xdg_session_type.is_some_and(|s| s.trim().eq_ignore_ascii_case("wayland"))
        || wayland_display.is_some_and(|s| !s.is_empty())
    {
        return LinuxSession::Wayland;
    }
    if display.is_some_and(|s| !s.is_empty()) {
        return LinuxSession::X11;
    }
    LinuxSession::None
}

/// The feature lists of one connection, fixed until the next HELLO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// `computer_use_features_coarse`.
    pub coarse: Vec<&'static str>,
    /// `computer_use_features`.
    pub fine: Vec<&'static str>,
}

impl Features {
    /// Builds the lists of 2.2 in the order given there: the host's base list, then (on
    /// X11) `windows` if a window manager is present, then `clipboard` if enabled.
    pub fn for_host(kind: HostKind, windows: bool, clipboard: bool) -> Features {
        const INPUT: [&str; 9] = [
            "input.click.modifiers",
            "input.click.button",
            "input.drag.path",
            "input.key.hold",
            "input.mouse.down_up",
            "input.scroll.amount",
            "input.wait",
            "cursor.position",
            "display.info",
        ];
        let (mut coarse, mut fine) = match kind {
            HostKind::X11 => {
                let mut coarse = vec!["screenshot", "input", "apps", "permissions"];
                let mut fine = vec!["screenshot.region"];
                fine.extend(INPUT);
                fine.extend(["app.list", "app.launch", "permissions.check"]);
                if windows {
                    coarse.push("windows");
                    fine.extend(["window.list", "window.focus"]);
                }
                (coarse, fine)
            }
            HostKind::MacOs | HostKind::Windows => {
                let coarse = vec!["screenshot", "input", "windows", "apps", "permissions"];
                let mut fine = vec!["screenshot.region", "screenshot.window"];
                fine.extend(INPUT);
                fine.extend([
                    "window.list",
                    "window.focus",
                    "app.list",
                    "app.launch",
                    "permissions.check",
                ]);
                (coarse, fine)
            }
        };
        if clipboard {
            coarse.push("clipboard");
            fine.extend(["clipboard.read", "clipboard.write"]);
        }
        Features { coarse, fine }
    }

    /// Whether `name` (coarse or fine) is advertised.
    pub fn has(&self, name: &str) -> bool {
        self.coarse.contains(&name) || self.fine.contains(&name)
    }

    /// Owned strings for the HELLO.
    pub fn to_wire(&self) -> (Vec<String>, Vec<String>) {
        (
            self.fine.iter().map(|s| (*s).to_owned()).collect(),
            self.coarse.iter().map(|s| (*s).to_owned()).collect(),
        )
    }
}

/// The fine features of 2.2 that the portable backend (`src/portable.rs`) always refuses
/// on `kind`, so a HELLO from it leaves them out. Windows answers them all. macOS has had
/// its own backend (`src/mac.rs`) since issue 27, which answers them too; the portable one
/// on macOS (xcap and rdev) could read neither the pointer nor focus a window.
pub fn portable_refuses(kind: HostKind) -> &'static [&'static str] {
    match kind {
        HostKind::MacOs => &["cursor.position", "window.focus"],
        HostKind::Windows | HostKind::X11 => &[],
    }
}

/// What the computer-use backend of `kind` cannot do in this build, for `doctor` (the
/// requests answer with `FEATURE_NOT_SUPPORTED`, or the clipboard without a marker).
/// Nothing on any OS now; on macOS a window is focused by activating its application
/// (4.5.3), without the optional raise of the window itself.
pub fn not_available(kind: HostKind) -> &'static [&'static str] {
    match kind {
        HostKind::X11 | HostKind::Windows | HostKind::MacOs => &[],
    }
}

#[cfg(test)]
#[path = "features_tests.rs"]
mod tests;
