//! The platform traits, one per concern, and the plain data they exchange. Each OS
//! backend implements them; [`crate::open`] picks the backend in one place.

use shim_protocol::messages::cu::PermissionState;

use crate::error::CuResult;
use crate::keys::Key;

/// One display (COMPUTER_USE_HW.md 3.2), in desktop coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    /// The OS primary display.
    pub primary: bool,
    /// Top-left corner.
    pub origin: [i64; 2],
    /// Size in desktop units.
    pub logical_size: [i64; 2],
    /// Size in device pixels.
    pub physical_size: [i64; 2],
    /// Physical width / logical width.
    pub scale: f64,
}

impl Monitor {
    /// Half-open containment (3.3).
    pub fn contains(&self, p: [i64; 2]) -> bool {
        let [x, y] = p;
        let [ox, oy] = self.origin;
        let [w, h] = self.logical_size;
        ox <= x && x < ox + w && oy <= y && y < oy + h
    }
}

/// Orders monitors as 3.2 requires: the primary first, then ascending (x, y).
pub fn order_monitors(mut v: Vec<Monitor>) -> Vec<Monitor> {
    v.sort_by_key(|m| (!m.primary, m.origin[0], m.origin[1]));
    if let Some(first) = v.first_mut() {
        // Exactly one primary: the first one when the OS names none.
        if !first.primary {
            first.primary = true;
        }
    }
    for m in v.iter_mut().skip(1) {
        m.primary = false;
    }
    v
}

/// An RGB image, 8 bits per channel, rows top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

impl Image {
    /// The pixel at (x, y), if inside.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 3]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Some([self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]])
    }
}

/// Display enumeration and the pointer.
pub trait Displays: Send + Sync {
    /// Every active display, unordered.
    fn monitors(&self) -> CuResult<Vec<Monitor>>;
    /// The pointer in desktop coordinates.
    fn cursor(&self) -> CuResult<[i64; 2]>;
    /// Whether [`Displays::cursor`] answers on this backend. False withholds
    /// `cursor.position` from the HELLO: nothing is advertised that always refuses.
    fn cursor_answers(&self) -> bool {
        true
    }
}

/// Screen capture.
pub trait Capture: Send + Sync {
    /// Captures `[x1, y1, x2, y2)` of the desktop; composites the real pointer image when
    /// `cursor` is set and the pointer lies inside.
    fn capture(&self, rect: [i64; 4], cursor: bool) -> CuResult<Image>;
    /// Captures one window's own pixels (macOS, Windows); the origin is its top-left.
    fn capture_window(&self, handle: u64) -> CuResult<(Image, [i64; 2])>;
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    /// Left.
    Left,
    /// Middle.
    Middle,
    /// Right.
    Right,
}

/// One wheel detent direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wheel {
    /// Up.
    Up,
    /// Down.
    Down,
    /// Left.
    Left,
    /// Right.
    Right,
}

/// Event injection. Every call is one OS event (or one press/release pair for a wheel
/// tick); the engine sequences them.
pub trait Input: Send + Sync {
    /// Moves the pointer.
    fn move_to(&self, p: [i64; 2]) -> CuResult<()>;
    /// Presses or releases a button.
    fn button(&self, b: Button, down: bool) -> CuResult<()>;
    /// Presses or releases a button as click `count` of a multi-click (2 on the second
    /// press of a double click): macOS carries it on the event (`kCGMouseEventClickState`);
    /// elsewhere the OS counts, so the default is [`Input::button`].
    fn click_button(&self, b: Button, down: bool, count: u32) -> CuResult<()> {
        let _ = count;
        self.button(b, down)
    }
    /// Whether [`Input::button`] can press `b` here. The engine checks it before the first
    /// event of an action, so an action with a button the OS cannot press sends nothing.
    fn has_button(&self, b: Button) -> bool {
        let _ = b;
        true
    }
    /// Presses or releases a key.
    fn key(&self, k: Key, down: bool) -> CuResult<()>;
    /// Whether the key producing `c` on the active layout needs Shift.
    fn needs_shift(&self, c: char) -> bool;
    /// Types one character, whether or not the layout has it.
    fn type_char(&self, c: char) -> CuResult<()>;
    /// Called once after a run of [`Input::type_char`] (X11 restores its key map).
    fn end_typing(&self) {}
    /// One wheel detent at the pointer.
    fn scroll(&self, w: Wheel) -> CuResult<()>;
}

/// A window's identity for use-time verification (4.5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// Owning process, 0 when unknown.
    pub pid: i64,
    /// Class name.
    pub class: Option<String>,
    /// Creation time, when the OS has one.
    pub created: Option<i64>,
}

/// A window as the OS reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeWindow {
    /// The OS handle.
    pub handle: u64,
    /// Fingerprint at list time.
    pub fingerprint: Fingerprint,
    /// Application name.
    pub app_name: Option<String>,
    /// Bundle id (macOS).
    pub app_bundle_id: Option<String>,
    /// Title, `None` when empty.
    pub title: Option<String>,
    /// Bounds in desktop coordinates, exclusive.
    pub bounds: [i64; 4],
    /// Has focus.
    pub is_focused: bool,
    /// Minimised.
    pub is_minimized: bool,
    /// Full screen.
    pub is_fullscreen: bool,
    /// On another virtual desktop.
    pub other_desktop: bool,
}

/// Window enumeration and focus.
pub trait Windows: Send + Sync {
    /// Whether window management is possible (X11: an EWMH window manager).
    fn available(&self) -> bool;
    /// Top-level client windows.
    fn list(&self) -> CuResult<Vec<NativeWindow>>;
    /// A fresh fingerprint, or `None` when the window is gone.
    fn fingerprint(&self, handle: u64) -> CuResult<Option<Fingerprint>>;
    /// Activates the window.
    fn focus(&self, handle: u64, raise: bool) -> CuResult<()>;
    /// Whether [`Windows::focus`] answers on this backend. False withholds `window.focus`
    /// from the HELLO.
    fn focus_answers(&self) -> bool {
        true
    }
}

/// A running application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeApp {
    /// Process id.
    pub pid: i64,
    /// Name.
    pub name: String,
    /// Bundle id (macOS).
    pub bundle_id: Option<String>,
    /// Executable path.
    pub executable_path: Option<String>,
    /// Owns the active window.
    pub is_frontmost: bool,
    /// Windows owned.
    pub window_count: u32,
}

/// Application listing and launching.
pub trait Apps: Send + Sync {
    /// Running applications.
    fn list(&self, include_background: bool) -> CuResult<Vec<NativeApp>>;
    /// Starts `executable_path` with `args` (or a bundle on macOS); returns the pid.
    fn launch(
        &self,
        bundle_id: Option<&str>,
        executable_path: Option<&str>,
        args: &[String],
    ) -> CuResult<u32>;
}

/// What the clipboard holds right now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClipboardState {
    /// Text, `None` when empty or not text.
    pub text: Option<String>,
    /// Change counter, when the OS has one.
    pub counter: Option<u64>,
    /// The first concealment marker offered (4.7.3).
    pub marker: Option<String>,
}

/// The system clipboard.
pub trait Clipboard: Send + Sync {
    /// Whether a backend is usable.
    fn available(&self) -> bool;
    /// Reads text, counter and markers.
    fn read(&self) -> CuResult<ClipboardState>;
    /// Only the change counter (cheap).
    fn counter(&self) -> Option<u64>;
    /// Writes text; returns the counter after the write when known.
    fn write(&self, text: &str) -> CuResult<Option<u64>>;
    /// How many text conversions of our own content were served so far, when the
    /// backend can tell (X11): the paste path then restores as soon as the target
    /// application fetched the pasted text instead of after a fixed delay.
    fn served(&self) -> Option<u64> {
        None
    }
}

/// Read-only OS permission probes (4.8).
pub trait Permissions: Send + Sync {
    /// The state of `name`.
    fn check(&self, name: &str) -> PermissionState;
    /// `Err(PERMISSION_PENDING)` when input injection is not allowed (macOS).
    fn input_allowed(&self) -> CuResult<()> {
        Ok(())
    }
}

/// Which host family a backend drives (selects the feature table of 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// Linux with an X11 session.
    X11,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
}

/// One backend: an implementation of every concern.
#[derive(Clone)]
pub struct Desktop {
    /// Host family.
    pub kind: HostKind,
    /// Displays and pointer.
    pub displays: std::sync::Arc<dyn Displays>,
    /// Capture.
    pub capture: std::sync::Arc<dyn Capture>,
    /// Input.
    pub input: std::sync::Arc<dyn Input>,
    /// Windows.
    pub windows: std::sync::Arc<dyn Windows>,
    /// Applications.
    pub apps: std::sync::Arc<dyn Apps>,
    /// Clipboard.
    pub clipboard: std::sync::Arc<dyn Clipboard>,
    /// Permissions.
    pub permissions: std::sync::Arc<dyn Permissions>,
    /// Whether the backend connection is still usable (re-checked at every HELLO).
    pub alive: std::sync::Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for Desktop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desktop")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}
