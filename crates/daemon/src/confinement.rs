//! The effective confinement of shell commands (docs/sandbox.md): what `shell_sandbox`
//! and `shell_network` resolve to on this machine, used by `start` (refuse or announce),
//! by each connection (the executor's policy) and by `doctor`.

use std::path::Path;

use shim_exec::sandbox::NetMechanism;
use shim_exec::sandbox::NetworkMode;
use shim_exec::sandbox::SandboxMode;
use shim_exec::sandbox::SandboxPolicy;

use crate::config::Settings;

/// What this OS and kernel can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// The file-system mechanism (`landlock ABI 7`), or `None` with the reason.
    pub file_system: Result<String, String>,
    /// The network mechanism, or `None` with the reason.
    pub network: Result<NetMechanism, String>,
}

impl Platform {
    /// This machine (probed once; on Linux a throw-away child tries the namespaces).
    pub fn current() -> Platform {
        #[cfg(target_os = "linux")]
        {
            let s = shim_exec::confine::support();
            Platform {
                file_system: if s.file_system() {
                    Ok(format!("landlock ABI {}", s.landlock_abi))
                } else if s.landlock_abi == 0 {
                    Err("Landlock is not enabled in this kernel".into())
                } else {
                    Err(format!(
                        "Landlock ABI {} is older than the minimum {} (Linux 6.2)",
                        s.landlock_abi,
                        shim_exec::confine::MIN_LANDLOCK_ABI
                    ))
                },
                network: s
                    .network()
                    .ok_or_else(|| "seccomp is not available in this kernel".to_owned()),
            }
        }
        #[cfg(target_os = "macos")]
        {
            Platform::macos(shim_exec::confine::sandbox_exec_available())
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        {
            let why = "no command sandbox is available on this OS yet";
            Platform {
                file_system: Err(why.into()),
                network: Err(why.into()),
            }
        }
    }

    /// macOS: the Seatbelt profile applied by `sandbox-exec`, if that program is
    /// installed (pure, so that it is tested on every OS).
    pub fn macos(sandbox_exec_present: bool) -> Platform {
        let exe = shim_exec::seatbelt::SANDBOX_EXEC;
        if sandbox_exec_present {
            Platform {
                file_system: Ok(format!("seatbelt ({exe})")),
                network: Ok(NetMechanism::Seatbelt),
            }
        } else {
            let why = format!("{exe} is missing, so no Seatbelt profile can be applied");
            Platform {
                file_system: Err(why.clone()),
                network: Err(why),
            }
        }
    }
}

/// The resolved confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// `shell_sandbox` in force.
    pub mode: SandboxMode,
    /// `shell_network` in force.
    pub network: NetworkMode,
    /// How `deny` is enforced (meaningful only for `deny`).
    pub net_mechanism: NetMechanism,
    /// The file-system mechanism's name (`landlock ABI 7`, or `none`).
    pub fs_mechanism: String,
    /// A warning for the user (the default fell back to `off`).
    pub warning: Option<String>,
}

/// Resolves the requested modes against `platform` (pure). An explicit request the
/// platform cannot enforce is an error with a hint (exit 78 at start); only the
/// *default* falls back to `off`, with a warning.
pub fn resolve(
    mode: Option<SandboxMode>,
    network: Option<NetworkMode>,
    platform: &Platform,
) -> Result<Effective, String> {
    let (mode, fs_mechanism, warning) = match (mode, &platform.file_system) {
        (None, Ok(m)) => (SandboxMode::WorkspaceWrite, m.clone(), None),
        (None, Err(why)) => (
            SandboxMode::Off,
            "none".to_owned(),
            Some(format!(
                "shell commands are not confined: {why}; set shell_sandbox = \"off\" to silence this warning"
            )),
        ),
        (Some(SandboxMode::Off), Ok(m)) => (SandboxMode::Off, m.clone(), None),
        (Some(SandboxMode::Off), Err(_)) => (SandboxMode::Off, "none".to_owned(), None),
        (Some(m), Ok(mech)) => (m, mech.clone(), None),
        (Some(m), Err(why)) => {
            return Err(format!(
                "shell_sandbox = \"{}\" cannot be enforced here: {why}\nhint: set shell_sandbox = \"off\" (or --shell-sandbox off) to run commands unconfined, or see docs/sandbox.md",
                m.as_str()
            ));
        }
    };
    let network = network.unwrap_or_default();
    let net_mechanism = match (network, &platform.network) {
        (_, Ok(m)) => *m,
        (NetworkMode::Allow, Err(_)) => NetMechanism::Seccomp,
        (NetworkMode::Deny, Err(why)) => {
            return Err(format!(
                "shell_network = \"deny\" cannot be enforced here: {why}\nhint: set shell_network = \"allow\" (or --shell-network allow), or see docs/sandbox.md"
            ));
        }
    };
    Ok(Effective {
        mode,
        network,
        net_mechanism,
        fs_mechanism,
        warning,
    })
}

/// The effective confinement of `settings` on this machine.
pub fn effective(settings: &Settings) -> Result<Effective, String> {
    resolve(
        settings.shell_sandbox,
        settings.shell_network,
        &Platform::current(),
    )
}

impl Effective {
    /// The executor's policy for commands in `folder`.
    pub fn policy(&self, settings: &Settings, folder: &Path) -> SandboxPolicy {
        SandboxPolicy {
            mode: self.mode,
            network: self.network,
            net_mechanism: self.net_mechanism,
            folder: folder.to_owned(),
            home: settings.home.clone(),
            writable: settings.shell_sandbox_writable.clone(),
            readable: settings.shell_sandbox_readable.clone(),
        }
    }

    /// One line for people: `workspace-write (landlock ABI 7), network deny
    /// (network-namespace+seccomp)`.
    pub fn describe(&self) -> String {
        let fs = if self.mode.confines() {
            format!("{} ({})", self.mode.as_str(), self.fs_mechanism)
        } else {
            "off".to_owned()
        };
        let net = match self.network {
            NetworkMode::Allow => "allow".to_owned(),
            NetworkMode::Deny => format!("deny ({})", self.net_mechanism.as_str()),
        };
        format!("shell sandbox {fs}, network {net}")
    }
}

#[cfg(test)]
#[path = "confinement_tests.rs"]
mod tests;
