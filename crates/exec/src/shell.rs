//! Shell selection (12.3) and executable lookup (12.4).

use std::ffi::OsStr;
use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;

use crate::error::ExecError;
use crate::spec::HostOs;
use crate::spec::Shell;

/// Candidate executable names for `shell` on `os`, in preference order; empty when the
/// table of 12.3 says `SHELL_NOT_AVAILABLE` for this OS.
pub fn candidates(os: HostOs, shell: Shell) -> &'static [&'static str] {
    match (os, shell) {
        (HostOs::Posix, Shell::Auto) => &["bash", "sh"],
        (HostOs::Posix, Shell::Bash) | (HostOs::Windows, Shell::Bash) => &["bash"],
        (HostOs::Posix, Shell::Sh) => &["sh"],
        (HostOs::Posix, Shell::Zsh) => &["zsh"],
        (_, Shell::Pwsh) => &["pwsh"],
        (HostOs::Windows, Shell::Powershell) => &["powershell.exe"],
        (HostOs::Windows, Shell::Auto) | (HostOs::Windows, Shell::Cmd) => &["cmd.exe"],
        (HostOs::Posix, Shell::Powershell)
        | (HostOs::Posix, Shell::Cmd)
        | (HostOs::Windows, Shell::Sh)
        | (HostOs::Windows, Shell::Zsh) => &[],
    }
}

/// The argument vector of 12.3 for a resolved shell executable (POSIX and PowerShell forms;
/// the raw cmd.exe command line is [`cmd_command_line`]).
pub fn shell_argv(shell_exe: &Path, shell: Shell, command: &str) -> Vec<OsString> {
    let exe = shell_exe.as_os_str().to_owned();
    let name = shell_exe
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.starts_with("pwsh") || name.starts_with("powershell") || shell == Shell::Pwsh {
        vec![
            exe,
            "-NoLogo".into(),
            "-NoProfile".into(),
            "-Command".into(),
            command.into(),
        ]
    } else {
        vec![exe, "-c".into(), command.into()]
    }
}

/// The raw cmd.exe command line of 12.3: `"<exe>" /D /S /C "chcp 65001 >NUL & <command>"`.
pub fn cmd_command_line(exe: &Path, command: &str) -> String {
    format!(
        "\"{}\" /D /S /C \"chcp 65001 >NUL & {}\"",
        exe.display(),
        command
    )
}

fn is_executable_file(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(p).is_ok_and(|m| m.is_file())
    }
}

/// Searches `name` on a `PATH` value. Empty and relative entries are skipped: the daemon's
/// current directory and the child's `cwd` are never searched implicitly (12.4).
pub fn search_path(name: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|cand| is_executable_file(cand))
}

/// 12.3: resolves `shell` on the daemon's own PATH (`daemon_path`).
pub fn resolve_shell(
    os: HostOs,
    shell: Shell,
    daemon_path: Option<&OsStr>,
) -> Result<PathBuf, ExecError> {
    candidates(os, shell)
        .iter()
        .find_map(|name| search_path(OsStr::new(name), daemon_path))
        .ok_or_else(|| ExecError::ShellNotAvailable {
            shell: shell.as_str().to_owned(),
        })
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
