//! Host identity (PROTOCOL.md 5.1.1, 5.1.2): machine id, platform and architecture
//! normalisation, host name, home directory.

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::handshake::Arch;
use shim_protocol::messages::handshake::Platform;

/// The user's home directory: POSIX `HOME`; Windows `%USERPROFILE%`, else
/// `%HOMEDRIVE%%HOMEPATH%` (JAIL_FILES_EXEC.md 1.4). Empty values count as unset.
pub fn home_dir() -> Option<PathBuf> {
    let var = |n: &str| std::env::var_os(n).filter(|h| !h.is_empty());
    if cfg!(windows) {
        return var("USERPROFILE").map(PathBuf::from).or_else(|| {
            let mut p = var("HOMEDRIVE")?;
            p.push(var("HOMEPATH")?);
            Some(PathBuf::from(p))
        });
    }
    var("HOME").map(PathBuf::from)
}

/// The host name (`uname` nodename; Windows `%COMPUTERNAME%`), or `"localhost"` if it is
/// empty.
pub fn hostname() -> String {
    #[cfg(unix)]
    let name = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    #[cfg(not(unix))]
    let name = std::env::var("COMPUTERNAME").unwrap_or_default();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

/// Normalises the OS (5.1.2). `proc_version` is the content of `/proc/version` on Linux.
/// `None` = unsupported (the daemon refuses to start).
pub fn normalize_platform(os: &str, proc_version: Option<&str>) -> Option<Platform> {
    match os {
        "macos" => Some(Platform::Darwin),
        "windows" => Some(Platform::Windows),
        "linux" => {
            if proc_version.is_some_and(|v| v.to_ascii_lowercase().contains("microsoft")) {
                Some(Platform::Wsl2)
            } else {
                Some(Platform::Linux)
            }
        }
        _ => None,
    }
}

/// Normalises the machine architecture (5.1.2); `None` = unsupported.
pub fn normalize_arch(arch: &str) -> Option<Arch> {
    match arch.to_ascii_lowercase().as_str() {
        "x86_64" | "amd64" => Some(Arch::X86_64),
        "arm64" | "aarch64" => Some(Arch::Arm64),
        _ => None,
    }
}

/// This host's platform.
pub fn platform() -> Option<Platform> {
    let pv = std::fs::read_to_string("/proc/version").ok();
    normalize_platform(std::env::consts::OS, pv.as_deref())
}

/// This host's architecture.
pub fn arch() -> Option<Arch> {
    normalize_arch(std::env::consts::ARCH)
}

/// Normalises a Linux machine-id file's content (5.1.1): 32 hex digits (dashes ignored)
/// become a lower-case 8-4-4-4-12 UUID; anything else is kept verbatim (trimmed).
pub fn normalize_linux_machine_id(raw: &str) -> Option<String> {
    let t = raw.trim();
    if t.is_empty() {
        return None;
    }
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        let h = hex.to_ascii_lowercase();
        return Some(format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        ));
    }
    Some(t.to_owned())
}

/// A fresh fallback id `<hostname>-<uuid4>` with disallowed characters replaced by `-`
/// and at most 128 characters ([Rust extension] of 5.1.1).
pub fn new_fallback_id(hostname: &str) -> String {
    let raw = format!("{hostname}-{}", uuid::Uuid::new_v4());
    let mut out: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    // The first character must be alphanumeric.
    if !out.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        out.insert(0, 'h');
    }
    out.chars().take(128).collect()
}

/// Detects the machine id (5.1.1) for Linux/WSL2, with the fallback file under `home`.
pub fn detect_machine_id(home: Option<&Path>) -> Result<String, String> {
    for f in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        if let Ok(raw) = std::fs::read_to_string(f)
            && let Some(id) = normalize_linux_machine_id(&raw)
        {
            return Ok(id);
        }
    }
    let home = home.ok_or("no machine id and no home directory for the fallback file")?;
    let path = home.join(".autogpt-local-executor-machine-id");
    if let Ok(raw) = std::fs::read_to_string(&path) {
        let t = raw.trim();
        if !t.is_empty() {
            return Ok(t.to_owned());
        }
    }
    let id = new_fallback_id(&hostname());
    std::fs::write(&path, &id).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(id)
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
