//! Host identity (PROTOCOL.md 5.1.1, 5.1.2): machine id, platform and architecture
//! normalisation, host name, home directory. The machine id per OS is JAIL_FILES_EXEC.md 1.3.

use std::path::Path;
use std::path::PathBuf;

use shim_protocol::messages::handshake::Arch;
use shim_protocol::messages::handshake::Platform;

/// The user's home directory (JAIL_FILES_EXEC.md 1.4): `HOME` on POSIX; on Windows
/// `USERPROFILE`, else `HOMEDRIVE` + `HOMEPATH`.
pub fn home_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        return crate::paths::home(crate::paths::Os::Windows, &|k| std::env::var(k).ok());
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
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

/// The `IOPlatformUUID` in the output of `ioreg -rd1 -c IOPlatformExpertDevice` (macOS,
/// JAIL_FILES_EXEC.md 1.3): the first line containing `IOPlatformUUID`, the text after its
/// first `=`, trimmed, surrounding `"` removed, lower-cased. `None` when there is no such
/// line, no `=` on it, or an empty value (the caller then uses the fallback file).
pub fn parse_ioreg_platform_uuid(output: &str) -> Option<String> {
    let line = output.lines().find(|l| l.contains("IOPlatformUUID"))?;
    let (_, value) = line.split_once('=')?;
    let v = value.trim();
    let v = v.strip_prefix('"').unwrap_or(v);
    let v = v.strip_suffix('"').unwrap_or(v).trim();
    (!v.is_empty()).then(|| v.to_lowercase())
}

/// The Windows `MachineGuid` registry value (JAIL_FILES_EXEC.md 1.3) as the id: trimmed
/// (also of the `NUL` a `REG_SZ` may end with) and lower-cased; `None` if empty.
pub fn normalize_machine_guid(raw: &str) -> Option<String> {
    let v = raw.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!v.is_empty()).then(|| v.to_lowercase())
}

/// How long `ioreg` may take on macOS before the fallback is used (1.3: 5 s).
#[cfg(target_os = "macos")]
const IOREG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The OS's own machine id (1.3), `None` on any failure (then the fallback file is used).
#[cfg(target_os = "macos")]
fn os_machine_id() -> Option<String> {
    use std::io::Read;
    let mut child = std::process::Command::new("ioreg")
        .args(["-rd1", "-c", "IOPlatformExpertDevice"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    // Read on a thread so that a stuck ioreg cannot hold us past the timeout.
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let out = rx.recv_timeout(IOREG_TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    parse_ioreg_platform_uuid(&String::from_utf8_lossy(&out.ok()?))
}

/// The OS's own machine id (1.3), `None` on any failure (then the fallback file is used).
/// Read from the 64-bit registry view so that a 32-bit build is not redirected by WOW64.
#[cfg(windows)]
fn os_machine_id() -> Option<String> {
    use winreg::RegKey;
    use winreg::enums::HKEY_LOCAL_MACHINE;
    use winreg::enums::KEY_READ;
    use winreg::enums::KEY_WOW64_64KEY;
    let key = RegKey::predef(HKEY_LOCAL_MACHINE)
        .open_subkey_with_flags(
            r"SOFTWARE\Microsoft\Cryptography",
            KEY_READ | KEY_WOW64_64KEY,
        )
        .ok()?;
    let raw: String = key.get_value("MachineGuid").ok()?;
    normalize_machine_guid(&raw)
}

/// The OS's own machine id (1.3), `None` on any failure (then the fallback file is used).
#[cfg(not(any(target_os = "macos", windows)))]
fn os_machine_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|f| normalize_linux_machine_id(&std::fs::read_to_string(f).ok()?))
}

/// Detects the machine id (JAIL_FILES_EXEC.md 1.3): the OS's own id (macOS `IOPlatformUUID`,
/// Windows `MachineGuid`, Linux/WSL2 `/etc/machine-id`), else the fallback file under `home`.
pub fn detect_machine_id(home: Option<&Path>) -> Result<String, String> {
    if let Some(id) = os_machine_id() {
        return Ok(id);
    }
    let home = home.ok_or("no machine id and no home directory for the fallback file")?;
    Ok(fallback_machine_id(home, &hostname()))
}

/// The fallback id of 1.3: the trimmed content of `<home>/.autogpt-local-executor-machine-id`
/// if it is non-empty, else a fresh `<hostname>-<uuid4>` written there. If writing fails the
/// fresh id is still returned (it then changes on every start, as the spec allows).
pub fn fallback_machine_id(home: &Path, hostname: &str) -> String {
    let path = home.join(".autogpt-local-executor-machine-id");
    if let Ok(raw) = std::fs::read_to_string(&path) {
        let t = raw.trim();
        if !t.is_empty() {
            return t.to_owned();
        }
    }
    let id = new_fallback_id(hostname);
    if let Err(e) = std::fs::write(&path, &id) {
        tracing::warn!(
            "cannot write {}: {e}; the machine id will change on every start",
            path.display()
        );
    }
    id
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
