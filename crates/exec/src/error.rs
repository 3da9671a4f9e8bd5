//! The crate's error type and its one internal → wire code mapping.

use shim_protocol::ErrorCode;

/// A `cwd` that the jail refused or could not open, as reported by the daemon's resolver.
///
/// The jail crate owns the resolution (JAIL_FILES_EXEC.md 12.2 and 4.x); this crate only
/// carries its verdict so that the order of checks of 12.1 stays in one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CwdError {
    /// The wire code the jail chose (`PATH_OUTSIDE_ALLOWED_ROOT`, `PATH_NOT_FOUND`, ...).
    pub code: ErrorCode,
    /// Short message for the model (no host details beyond the requested path).
    pub message: String,
    /// True for a jail violation (`PATH_OUTSIDE_ALLOWED_ROOT`, `PATH_RESERVED_NAME`,
    /// `PATH_INVALID_CHARS`): audited as `JAIL_VIOLATION`, not `EXECUTE_COMMAND`.
    pub jail_violation: bool,
}

impl CwdError {
    /// A jail error for `code`; `jail_violation` is derived from the code (JAIL_FILES_EXEC.md
    /// conventions: the three jail error codes).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let jail_violation = matches!(
            code,
            ErrorCode::PathOutsideAllowedRoot
                | ErrorCode::PathReservedName
                | ErrorCode::PathInvalidChars
        );
        CwdError {
            code,
            message: message.into(),
            jail_violation,
        }
    }
}

/// Why an `EXECUTE_COMMAND` was refused or failed before producing a `COMMAND_RESULT`.
///
/// A non-zero exit status or a timeout is never an error: both are a
/// [`CommandResult`](crate::CommandResult) (JAIL_FILES_EXEC.md 12.8).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// 12.1 step 1: `--enable-shell` was not given.
    #[error(
        "Shell execution is disabled on this machine (start the executor with --enable-shell)."
    )]
    ShellDisabled,
    /// 12.1 step 2: the machine-wide sliding window is full.
    #[error("Command rate limit exceeded ({per_minute}/minute).")]
    RateLimited {
        /// The configured `max_commands_per_minute`.
        per_minute: u32,
    },
    /// 12.1 step 3: `max_concurrent_commands` commands are already running.
    #[error("Concurrent command limit exceeded.")]
    TooManyConcurrent,
    /// 12.1 step 4: both or neither of `command` / `argv`.
    #[error("Exactly one of `command` or `argv` must be set.")]
    CommandOrArgv,
    /// 12.1 step 4 [Rust extension]: `argv: []`.
    #[error("`argv` must not be empty.")]
    EmptyArgv,
    /// A NUL byte in `command` or an `argv` element (it cannot reach `execve`).
    #[error("`{field}` contains a NUL byte.")]
    NulInArgument {
        /// `command` or `argv`.
        field: &'static str,
    },
    /// 12.1 step 5: an `env` name that is empty or contains `=` or NUL, or a value with NUL.
    #[error("Invalid environment variable name or value: {name:?}.")]
    InvalidEnv {
        /// The offending name (values are never echoed).
        name: String,
    },
    /// 12.1 step 6: the jail refused or could not open `cwd`.
    #[error(transparent)]
    Cwd(#[from] CwdError),
    /// 12.2: the resolved `cwd` is not a directory.
    #[error("`cwd` is not a directory.")]
    CwdNotDirectory,
    /// `timeout_seconds` present but not > 0 (PROTOCOL.md 7.3.1).
    #[error("`timeout_seconds` must be greater than 0.")]
    InvalidTimeout,
    /// 12.3: the shell is not in this OS's table or not found on the daemon's PATH.
    #[error("Shell '{shell}' is not available on this OS.")]
    ShellNotAvailable {
        /// The request's `shell` value.
        shell: String,
    },
    /// 12.4: `argv[0]` not found.
    #[error("Executable not found: {program}")]
    ExecutableNotFound {
        /// `argv[0]` as received.
        program: String,
    },
    /// 12.4: any other spawn failure (permission denied, resource limits, ...).
    #[error("Failed to start the command: {0}")]
    Spawn(#[source] std::io::Error),
    /// The command's sandbox (`shell_sandbox`, `shell_network`) could not be prepared or
    /// applied; the command did not run.
    #[error("The command sandbox could not be set up: {0}")]
    Sandbox(String),
    /// Process creation is not implemented for this OS yet.
    #[error("Command execution is not supported on this OS by this build.")]
    Unsupported,
    /// `resize` on a handle that has no terminal.
    #[error("This process has no terminal.")]
    NotATerminal,
}

impl ExecError {
    /// The wire `ERROR.code`. This is the only place the mapping lives.
    pub fn code(&self) -> ErrorCode {
        match self {
            ExecError::ShellDisabled => ErrorCode::CapabilityNotGranted,
            ExecError::RateLimited { .. } | ExecError::TooManyConcurrent => {
                ErrorCode::ShimOverloaded
            }
            ExecError::Cwd(e) => e.code.clone(),
            ExecError::ShellNotAvailable { .. } | ExecError::ExecutableNotFound { .. } => {
                ErrorCode::ShellNotAvailable
            }
            ExecError::CommandOrArgv
            | ExecError::EmptyArgv
            | ExecError::NulInArgument { .. }
            | ExecError::InvalidEnv { .. }
            | ExecError::CwdNotDirectory
            | ExecError::InvalidTimeout
            | ExecError::Spawn(_)
            | ExecError::Sandbox(_)
            | ExecError::Unsupported
            | ExecError::NotATerminal => ErrorCode::InternalError,
        }
    }
}
