//! The isolated desktop (`computer_use_display = "isolated"`, docs/desktop.md): which X
//! server and window manager this machine would start for computer use. Shared by `start`
//! (refuse where it cannot exist), `doctor` (report the mechanism) and the runtime (start
//! it, `runtime::desktop`).

use std::ffi::OsStr;
use std::path::PathBuf;

/// The window manager the isolated desktop runs (EWMH, so window list and focus work).
pub const WINDOW_MANAGER: &str = "openbox";

/// The X server of an isolated desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// A virtual framebuffer nobody sees (no user desktop is reachable).
    Xvfb,
    /// A nested server shown as a window on the user's desktop `parent`, so the user can
    /// watch the agent work.
    Xephyr {
        /// The user's display the window opens on.
        parent: String,
    },
}

impl Server {
    /// The program name.
    pub fn program(&self) -> &'static str {
        match self {
            Server::Xvfb => "Xvfb",
            Server::Xephyr { .. } => "Xephyr",
        }
    }
}

/// What would be started: the server and the window manager, each resolved on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Which server.
    pub server: Server,
    /// Its executable.
    pub server_path: PathBuf,
    /// The window manager's executable.
    pub wm_path: PathBuf,
}

/// A program the isolated desktop needs is not installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{program} is not installed (not found on PATH); install the {package} package")]
pub struct Missing {
    /// The program (`Xvfb`, `openbox`).
    pub program: &'static str,
    /// The Debian/Ubuntu package that has it.
    pub package: &'static str,
}

/// `name` on the search path `path`.
pub fn on_path(path: Option<&OsStr>, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Chooses the server: Xephyr when the user's display `user_display` is set and reachable
/// (`reachable` decides) and Xephyr is installed, else Xvfb. `path` is the search path.
pub fn plan(
    path: Option<&OsStr>,
    user_display: Option<&str>,
    reachable: impl Fn(&str) -> bool,
) -> Result<Plan, Missing> {
    let wm_path = on_path(path, WINDOW_MANAGER).ok_or(Missing {
        program: WINDOW_MANAGER,
        package: "openbox",
    })?;
    let parent = user_display.filter(|d| !d.is_empty());
    if let (Some(parent), Some(xephyr)) = (parent, on_path(path, "Xephyr"))
        && reachable(parent)
    {
        return Ok(Plan {
            server: Server::Xephyr {
                parent: parent.to_owned(),
            },
            server_path: xephyr,
            wm_path,
        });
    }
    let xvfb = on_path(path, "Xvfb").ok_or(Missing {
        program: "Xvfb",
        package: "xvfb",
    })?;
    Ok(Plan {
        server: Server::Xvfb,
        server_path: xvfb,
        wm_path,
    })
}

/// [`plan`] for this process: its `PATH` and `DISPLAY`, with a real X connection test.
#[cfg(target_os = "linux")]
pub fn plan_here() -> Result<Plan, Missing> {
    let path = std::env::var_os("PATH");
    let display = std::env::var("DISPLAY").ok();
    plan(path.as_deref(), display.as_deref(), shim_cu::x11::reachable)
}

/// Whether this OS can run an isolated desktop; `Err` says why not (for `start`, exit 78).
pub fn supported() -> Result<(), String> {
    if cfg!(target_os = "linux") {
        Ok(())
    } else {
        Err(format!(
            "computer_use_display = \"isolated\" is not available on {}: it needs a private X server (Linux)\nhint: set computer_use_display = \"user\" (or --computer-use-display user), or see docs/desktop.md",
            std::env::consts::OS
        ))
    }
}

#[cfg(test)]
#[path = "desktop_tests.rs"]
mod tests;
