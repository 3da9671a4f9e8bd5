//! Per-OS default locations (JAIL_FILES_EXEC.md 1.4, AUDIT_AUTH_CLI.md 3.9.1, 4.2, 5.4) as
//! pure functions of the OS, the home directory and the environment, so that every OS's
//! rules are tested on every host.
//!
//! An environment variable that is unset or empty is unset; on Linux and WSL2 an `XDG_*`
//! value that is not an absolute path is ignored too ([Rust extension] of 1.4).

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::handshake::Platform;

/// The directory name used under every per-OS base.
pub const APP_DIR: &str = "autogpt-local-executor";

/// The OS whose path rules apply (WSL2 follows Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// macOS.
    MacOs,
    /// Linux and WSL2 (and any other Unix: XDG rules).
    Linux,
    /// Windows.
    Windows,
}

impl Os {
    /// The OS this binary was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    /// The rules a normalised platform follows.
    pub fn of(platform: Platform) -> Os {
        match platform {
            Platform::Darwin => Os::MacOs,
            Platform::Windows => Os::Windows,
            _ => Os::Linux,
        }
    }

    fn separator(self) -> char {
        match self {
            Os::Windows => '\\',
            _ => '/',
        }
    }
}

/// Environment lookup: the value of a variable, if set.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `base` joined with `parts` using `os`'s separator. On a host of the same family this is
/// `Path::join` (lossless); otherwise (tests of another OS's rules) the text is joined.
pub fn join(os: Os, base: &Path, parts: &[&str]) -> PathBuf {
    if os.separator() == std::path::MAIN_SEPARATOR {
        let mut p = base.to_path_buf();
        for part in parts {
            p.push(part);
        }
        return p;
    }
    let mut s = base.to_string_lossy().into_owned();
    for part in parts {
        if !s.ends_with(os.separator()) {
            s.push(os.separator());
        }
        s.push_str(part);
    }
    PathBuf::from(s)
}

fn var(env: Env<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// An `XDG_*` base: set, non-empty and absolute.
fn xdg(env: Env<'_>, name: &str) -> Option<PathBuf> {
    var(env, name)
        .filter(|v| v.starts_with('/'))
        .map(PathBuf::from)
}

/// `<home>` (1.4): POSIX `HOME`; Windows `USERPROFILE`, else `HOMEDRIVE` + `HOMEPATH`.
/// (The POSIX password-database fallback is not a pure function; see `host::home_dir`.)
pub fn home(os: Os, env: Env<'_>) -> Option<PathBuf> {
    match os {
        Os::Windows => var(env, "USERPROFILE")
            .or_else(|| Some(var(env, "HOMEDRIVE")? + &var(env, "HOMEPATH")?))
            .map(PathBuf::from),
        _ => var(env, "HOME").map(PathBuf::from),
    }
}

/// The per-user configuration base: `$XDG_CONFIG_HOME` (Linux), `%APPDATA%` (Windows).
fn config_base(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    match os {
        Os::MacOs => Some(join(os, home?, &["Library", "Application Support"])),
        Os::Linux => xdg(env, "XDG_CONFIG_HOME").or_else(|| Some(join(os, home?, &[".config"]))),
        Os::Windows => var(env, "APPDATA")
            .map(PathBuf::from)
            .or_else(|| Some(join(os, home?, &["AppData", "Roaming"]))),
    }
}

/// The per-user state base: `$XDG_STATE_HOME` (Linux), `%LOCALAPPDATA%` (Windows).
fn state_base(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    match os {
        Os::MacOs => Some(join(os, home?, &["Library", "Application Support"])),
        Os::Linux => {
            xdg(env, "XDG_STATE_HOME").or_else(|| Some(join(os, home?, &[".local", "state"])))
        }
        Os::Windows => var(env, "LOCALAPPDATA")
            .map(PathBuf::from)
            .or_else(|| Some(join(os, home?, &["AppData", "Local"]))),
    }
}

/// The config file (4.2).
pub fn config_file(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    Some(join(
        os,
        &config_base(os, home, env)?,
        &[APP_DIR, "config.toml"],
    ))
}

/// The directory of the daemon's own logs and the service's stdout/stderr files (1.4, 5.4):
/// macOS `~/Library/Logs/…`, Linux the state dir, Windows `%LOCALAPPDATA%\…\logs`.
pub fn log_dir(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    match os {
        Os::MacOs => Some(join(os, home?, &["Library", "Logs", APP_DIR])),
        Os::Linux => Some(join(os, &state_base(os, home, env)?, &[APP_DIR])),
        Os::Windows => Some(join(os, &state_base(os, home, env)?, &[APP_DIR, "logs"])),
    }
}

/// The audit log (1.4): `audit.log` in [`log_dir`].
pub fn audit_log(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    Some(join(os, &log_dir(os, home, env)?, &["audit.log"]))
}

/// The directory of the encrypted credential file `tokens.enc` (3.9.1), used when the OS
/// store (Keychain, Credential Manager, Secret Service) is unavailable or not chosen:
/// `AUTOGPT_SHIM_FALLBACK_DIR`, else the per-OS state directory.
pub fn credential_dir(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    if let Some(d) = var(env, "AUTOGPT_SHIM_FALLBACK_DIR") {
        return Some(PathBuf::from(d));
    }
    Some(join(os, &state_base(os, home, env)?, &[APP_DIR]))
}

/// The autostart service definition (5.4).
pub fn service_file(os: Os, home: Option<&Path>, env: Env<'_>) -> Option<PathBuf> {
    match os {
        Os::MacOs => Some(join(
            os,
            home?,
            &["Library", "LaunchAgents", "net.autogpt.shim.plist"],
        )),
        Os::Linux => Some(join(
            os,
            &config_base(os, home, env)?,
            &["systemd", "user", "autogpt-shim.service"],
        )),
        Os::Windows => Some(join(
            os,
            &state_base(os, home, env)?,
            &[APP_DIR, "autogpt-shim.xml"],
        )),
    }
}

/// The default allowed root of legacy direct mode (1.4).
pub fn default_allowed_root(os: Os, home: &Path) -> PathBuf {
    match os {
        Os::MacOs => join(os, home, &["Documents", "autogpt-workspace"]),
        _ => join(os, home, &["autogpt-workspace"]),
    }
}

/// The machine-id fallback file (JAIL_FILES_EXEC.md 1.3).
pub fn machine_id_file(os: Os, home: &Path) -> PathBuf {
    join(os, home, &[".autogpt-local-executor-machine-id"])
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
