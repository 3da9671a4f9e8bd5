//! The daemon's error type and its mapping to process exit codes (AUDIT_AUTH_CLI.md 5.2).

use std::fmt;

/// Exit code: success, or an orderly stop (signal, revoked session, protocol mismatch).
pub const EXIT_OK: u8 = 0;
/// Exit code: the operation failed.
pub const EXIT_FAIL: u8 = 1;
/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code (EX_NOPERM): terminal authentication or authorization failure of `start`.
pub const EXIT_NOPERM: u8 = 77;
/// Exit code (EX_CONFIG): invalid configuration, preflight or audit failure.
pub const EXIT_CONFIG: u8 = 78;

/// Why the daemon stopped or could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// The configuration could not be loaded (exit 78).
    #[error("Invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// A preflight check or the audit initialisation failed (exit 78).
    #[error("Preflight failed: {0}")]
    Preflight(String),
    /// An audit append failed after `SHIM_START` (exit 78, [H-7]).
    #[error("audit log write failed: {0}")]
    Audit(String),
    /// Terminal authentication or authorization failure (exit 77).
    #[error("Authentication failed: {0}")]
    Auth(String),
    /// The runtime stopped on a protocol failure it caused itself (exit 1).
    #[error("{0}")]
    Protocol(String),
    /// Anything else (exit 1).
    #[error("{0}")]
    Other(String),
}

impl DaemonError {
    /// The process exit code of 5.2.
    pub fn exit_code(&self) -> u8 {
        match self {
            DaemonError::Config(_) | DaemonError::Preflight(_) | DaemonError::Audit(_) => {
                EXIT_CONFIG
            }
            DaemonError::Auth(_) => EXIT_NOPERM,
            DaemonError::Protocol(_) | DaemonError::Other(_) => EXIT_FAIL,
        }
    }
}

/// A configuration error: where (a key, a variable or a file location) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The key, environment variable or file location.
    pub location: String,
    /// What is wrong.
    pub reason: String,
}

impl ConfigError {
    /// An error at `location`.
    pub fn new(location: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            location: location.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.reason)
    }
}

impl std::error::Error for ConfigError {}
