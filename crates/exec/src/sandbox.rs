//! Confinement of shell commands: the policy (`shell_sandbox`, `shell_network`, extra
//! writable and readable paths) and the pure step that turns it into file-system rules.
//!
//! The policy-to-rules step ([`fs_rules`]) is a pure function with table tests
//! (`sandbox_tests.rs`). On Linux, `crate::confine` builds the kernel objects from these
//! rules in the daemon (a Landlock ruleset, a seccomp program, the user-namespace maps, a
//! private temporary directory) and applies them in the child between `fork` and `execve`
//! (STYLE.md item 21). On macOS, [`crate::seatbelt`] generates the Seatbelt profile. Other
//! systems have no sandbox: asking for one there is refused at start.

use std::path::Path;
use std::path::PathBuf;

/// `shell_sandbox`: what a command may touch on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// No confinement: the command can do what the user can.
    Off,
    /// Read the system and the chat's folder; write only the folder, a private temporary
    /// directory and `shell_sandbox_writable`. The home directory is hidden except the
    /// folder and `shell_sandbox_readable`.
    WorkspaceWrite,
    /// Like `WorkspaceWrite`, but the folder is read-only too; only the private temporary
    /// directory is writable.
    ReadOnly,
}

impl SandboxMode {
    /// Every value, in the order the setting lists them.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::Off,
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
    ];

    /// The setting's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }

    /// Parses the setting's spelling (exact); `None` for anything else.
    pub fn parse(s: &str) -> Option<SandboxMode> {
        SandboxMode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// True unless `Off`.
    pub const fn confines(self) -> bool {
        !matches!(self, SandboxMode::Off)
    }
}

/// `shell_network`: whether a command may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NetworkMode {
    /// The command has the user's network.
    #[default]
    Allow,
    /// No route off the machine and no way to reach services on it (TCP, UDP, IPv4, IPv6,
    /// Unix sockets).
    Deny,
}

impl NetworkMode {
    /// The setting's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Allow => "allow",
            NetworkMode::Deny => "deny",
        }
    }

    /// Parses the setting's spelling (exact); `None` for anything else.
    pub fn parse(s: &str) -> Option<NetworkMode> {
        [NetworkMode::Allow, NetworkMode::Deny]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// How `shell_network = "deny"` is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NetMechanism {
    /// A fresh user and network namespace per command, with only a loopback interface,
    /// plus a seccomp filter refusing Unix-domain sockets (their paths are not namespaced).
    Namespace,
    /// Unprivileged user namespaces are not available: a seccomp filter refuses every
    /// `socket(2)` (all families), and Landlock refuses TCP bind/connect where the kernel
    /// has it (ABI 4).
    Seccomp,
    /// macOS: the Seatbelt profile run by `sandbox-exec` denies `network*` except Unix
    /// sockets inside the folder.
    Seatbelt,
}

impl NetMechanism {
    /// A short name for `doctor`, the docs and the audit log.
    pub const fn as_str(self) -> &'static str {
        match self {
            NetMechanism::Namespace => "network-namespace+seccomp",
            NetMechanism::Seccomp => "seccomp+landlock-tcp",
            NetMechanism::Seatbelt => "seatbelt",
        }
    }
}

/// The effective confinement of every command of one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// `shell_sandbox`.
    pub mode: SandboxMode,
    /// `shell_network`.
    pub network: NetworkMode,
    /// How `Deny` is enforced (ignored for `Allow`).
    pub net_mechanism: NetMechanism,
    /// The chat's folder (the jail root).
    pub folder: PathBuf,
    /// The user's home directory: hidden, except what is listed.
    pub home: Option<PathBuf>,
    /// `shell_sandbox_writable`.
    pub writable: Vec<PathBuf>,
    /// `shell_sandbox_readable`.
    pub readable: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// No confinement at all (the default of the executor library; the daemon sets its
    /// own).
    pub fn off() -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::Off,
            network: NetworkMode::Allow,
            net_mechanism: NetMechanism::Namespace,
            folder: PathBuf::from("/"),
            home: None,
            writable: Vec::new(),
            readable: Vec::new(),
        }
    }

    /// True if anything is confined (file system or network).
    pub fn is_active(&self) -> bool {
        self.mode.confines() || self.network == NetworkMode::Deny
    }
}

/// What a rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FsAccess {
    /// Read files, list directories, execute programs.
    Read,
    /// Everything: read, write, create, remove, rename within, truncate.
    Write,
    /// A device file: read, write, truncate and device ioctls (the terminal, `/dev/null`).
    Device,
}

/// One file-system rule: `access` beneath `path` (a directory) or on `path` (a file).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FsRule {
    /// The path, canonical.
    pub path: PathBuf,
    /// What it grants.
    pub access: FsAccess,
}

/// Device files every command may read and write (nothing else under `/dev`: no disks,
/// no `/dev/shm`, no `/dev/mem`, and no `/dev/pts`: through it a command could read and
/// write the user's other terminals). A command on a terminal keeps it through its
/// inherited descriptors and `/dev/tty`; it cannot make new terminals (`script`, `tmux`).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Paths that are never readable as part of "the system": `/dev` is granted file by file
/// ([`DEVICES`]).
const HIDDEN_SYSTEM: &[&str] = &["/dev"];

/// The file-system rules of `policy` for one command whose private temporary directory
/// is `tmpdir` (pure; no I/O except through `list`).
///
/// `list(dir)` returns the canonical paths of `dir`'s entries (symlinks resolved). The
/// system is readable except the home directory and `/dev`: every entry along the path
/// from `/` to a hidden path is granted except the branch that leads to it. Then the
/// folder (written unless read-only), the private temporary directory (written), the
/// listed writable (written, or read in read-only mode) and readable paths, and the
/// device files. Paths must be canonical; the result is sorted and has no duplicates.
/// Returns nothing when the file system is not confined.
pub fn fs_rules(
    policy: &SandboxPolicy,
    tmpdir: &Path,
    list: &dyn Fn(&Path) -> Vec<PathBuf>,
) -> Vec<FsRule> {
    if !policy.mode.confines() {
        return Vec::new();
    }
    let mut hidden: Vec<PathBuf> = HIDDEN_SYSTEM.iter().map(PathBuf::from).collect();
    if let Some(h) = &policy.home {
        hidden.push(h.clone());
    }
    let mut rules = Vec::new();
    system_read(Path::new("/"), &hidden, list, &mut rules);
    let write_or_read = match policy.mode {
        SandboxMode::ReadOnly => FsAccess::Read,
        _ => FsAccess::Write,
    };
    let mut push = |path: &Path, access| {
        rules.push(FsRule {
            path: path.to_path_buf(),
            access,
        })
    };
    push(&policy.folder, write_or_read);
    push(tmpdir, FsAccess::Write);
    for p in &policy.writable {
        push(p, write_or_read);
    }
    for p in &policy.readable {
        push(p, FsAccess::Read);
    }
    for d in DEVICES {
        push(Path::new(d), FsAccess::Device);
    }
    rules.sort();
    rules.dedup();
    rules
}

/// Grants `Read` on everything beneath `dir` except the `hidden` paths.
fn system_read(
    dir: &Path,
    hidden: &[PathBuf],
    list: &dyn Fn(&Path) -> Vec<PathBuf>,
    rules: &mut Vec<FsRule>,
) {
    if hidden.iter().any(|h| h == dir) {
        return;
    }
    let leads_to_hidden = hidden.iter().any(|h| h.starts_with(dir));
    if !leads_to_hidden {
        rules.push(FsRule {
            path: dir.to_path_buf(),
            access: FsAccess::Read,
        });
        return;
    }
    for child in list(dir) {
        if child == dir || !child.starts_with(dir) {
            // A symlink out of `dir`: grant it only if it leads nowhere hidden.
            if !hidden
                .iter()
                .any(|h| child.starts_with(h) || h.starts_with(&child))
            {
                rules.push(FsRule {
                    path: child,
                    access: FsAccess::Read,
                });
            }
            continue;
        }
        system_read(&child, hidden, list, rules);
    }
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
