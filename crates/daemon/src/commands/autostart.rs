//! Autostart entries (AUDIT_AUTH_CLI.md 5.4) for Linux and WSL2: a systemd user unit that
//! `install` writes and `status` reports. `install` never runs `systemctl` itself.
//! macOS (launchd) and Windows (Task Scheduler) are not in this build.

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::handshake::Platform;

/// Where the entry lives and how the user turns it on and off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autostart {
    /// The service definition file.
    pub file: PathBuf,
    /// The command that activates it.
    pub enable: String,
    /// The command that deactivates it.
    pub disable: String,
    /// Notes printed after the commands.
    pub notes: Vec<String>,
}

/// The entry for `platform`, or `None` where this build cannot write one.
pub fn for_platform(
    platform: Platform,
    home: &Path,
    xdg_config_home: Option<&Path>,
) -> Option<Autostart> {
    let mut notes = vec!["run `systemctl --user daemon-reload` first".to_owned()];
    match platform {
        Platform::Linux => notes.push(
            "run `loginctl enable-linger $USER` to start it without a login session".to_owned(),
        ),
        Platform::Wsl2 => notes.push(
            "run `loginctl enable-linger $USER` to keep it alive with no WSL shell open".to_owned(),
        ),
        _ => return None,
    }
    let base = xdg_config_home.map_or_else(|| home.join(".config"), Path::to_path_buf);
    Some(Autostart {
        file: base
            .join("systemd")
            .join("user")
            .join("autogpt-shim.service"),
        enable: "systemctl --user enable --now autogpt-shim.service".to_owned(),
        disable: "systemctl --user disable --now autogpt-shim.service".to_owned(),
        notes,
    })
}

/// Quotes a value for `ExecStart=` ([H-20]): inside double quotes, `\` and `"` escaped,
/// `%` doubled.
pub fn systemd_quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit of 5.4.
pub fn systemd_unit(program: &Path, config: &Path, out_log: &Path, err_log: &Path) -> String {
    let pct = |p: &Path| p.to_string_lossy().replace('%', "%%");
    format!(
        "[Unit]\nDescription=AutoGPT Local PC Executor shim\nAfter=network-online.target\nWants=network-online.target\n\n\
[Service]\nType=simple\nExecStart={} --config {} start\nRestart=on-failure\nRestartSec=5\nRestartPreventExitStatus=77 78\n\
StandardOutput=append:{}\nStandardError=append:{}\n\n[Install]\nWantedBy=default.target\n",
        systemd_quote(&program.to_string_lossy()),
        systemd_quote(&config.to_string_lossy()),
        pct(out_log),
        pct(err_log),
    )
}

#[cfg(test)]
#[path = "autostart_tests.rs"]
mod tests;
