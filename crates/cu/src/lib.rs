//! Computer use (COMPUTER_USE_HW.md sections 0-7): screenshots, input, windows,
//! applications, the clipboard and permission checks.
//!
//! One trait per concern lives in [`backend`]; each OS implements them in its own module
//! and [`open`] chooses the backend in one place by `cfg(target_os)`. The
//! OS-independent rules (gating, bounds, rate limit, window ids, clipboard policy, audit
//! details) live in [`engine`].

pub mod backend;
pub mod encode;
pub mod engine;
pub mod error;
pub mod features;
mod jpeg_bands;
pub mod keys;
pub mod mac;
pub mod policy;
#[cfg(target_os = "linux")]
pub mod testing;
pub mod vdesk;

#[cfg(target_os = "linux")]
pub mod x11;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(any(target_os = "macos", target_os = "windows"))]
mod portable;
#[cfg(target_os = "windows")]
mod win32;
#[cfg(target_os = "windows")]
mod windows;

/// Whether this process runs elevated on Windows (`TokenElevation`); `None` elsewhere or
/// when the token cannot be read. `doctor` reports it (a process that is not elevated
/// cannot drive elevated windows).
pub fn process_elevated() -> Option<bool> {
    #[cfg(target_os = "windows")]
    return win32::elevated();
    #[cfg(not(target_os = "windows"))]
    None
}

/// The macOS start-up preflight (COMPUTER_USE_HW.md 1.5): `None` when this process is a
/// trusted Accessibility client (and on every other OS), else the missing permission for
/// `details.missing_permissions` and the error code. Never prompts.
pub fn macos_preflight() -> Option<(&'static str, shim_protocol::ErrorCode)> {
    #[cfg(target_os = "macos")]
    return mac::preflight_refusal(macos::accessibility_trusted(false));
    #[cfg(not(target_os = "macos"))]
    None
}

/// The macOS permission states for `doctor`; with `prompt`, the Accessibility check shows
/// the system's consent dialog (once). `None` on every other OS.
pub fn macos_permissions(prompt: bool) -> Option<mac::MacPermissions> {
    #[cfg(target_os = "macos")]
    return Some(mac::MacPermissions {
        accessibility: macos::accessibility_trusted(prompt),
        screen_recording: macos::screen_capture_allowed(),
        input_monitoring: macos::input_monitoring(),
    });
    #[cfg(not(target_os = "macos"))]
    {
        let _ = prompt;
        None
    }
}

pub use backend::Desktop;
pub use engine::Engine;
pub use engine::EngineConfig;
pub use error::CuError;

/// Why no backend could be opened; the capability is then not advertised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// A Wayland session (never advertised).
    #[error("Wayland session: computer use needs X11")]
    Wayland,
    /// No display server reachable.
    #[error("no display: {0}")]
    NoDisplay(String),
    /// WSL2 or an OS without a backend.
    #[error("computer use is not available on this OS")]
    UnsupportedOs,
}

/// Where the backend should connect.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// `computer_use_display`: an X display name (`:77`) to drive instead of `DISPLAY`.
    pub display: Option<String>,
    /// Called with the process group of every application `APP_LAUNCH` starts (X11), so
    /// the caller can make it die with the daemon. When it fails, the application is
    /// killed and the launch fails.
    pub on_launch: Option<LaunchHook>,
    /// An `MIT-MAGIC-COOKIE-1` to authenticate with, instead of the `XAUTHORITY` lookup
    /// (the isolated desktop's; X11).
    pub cookie: Option<Cookie>,
    /// Extra environment for launched applications (the isolated desktop's `XAUTHORITY`).
    pub launch_env: Vec<(String, String)>,
    /// `display` is the daemon's own private X server (the isolated desktop), which shows
    /// nothing of the user's session: the user's session type does not matter, so a
    /// Wayland session does not refuse it (COMPUTER_USE_HW.md 2.2). False for the user's
    /// display and for a named one, which a Wayland session refuses.
    pub private_display: bool,
}

/// An X authorization cookie; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Cookie(pub Vec<u8>);

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cookie(..)")
    }
}

/// See [`OpenOptions::on_launch`].
#[derive(Clone)]
pub struct LaunchHook(pub std::sync::Arc<dyn Fn(u32) -> Result<(), String> + Send + Sync>);

impl std::fmt::Debug for LaunchHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LaunchHook")
    }
}

/// Opens the backend of this OS, or says why there is none.
pub fn open(opts: &OpenOptions) -> Result<Desktop, Unavailable> {
    #[cfg(target_os = "linux")]
    {
        x11::open(opts)
    }
    #[cfg(target_os = "macos")]
    {
        let _ = opts;
        Ok(macos::open())
    }
    #[cfg(target_os = "windows")]
    {
        let _ = opts;
        Ok(windows::open())
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
    {
        let _ = opts;
        Err(Unavailable::UnsupportedOs)
    }
}
