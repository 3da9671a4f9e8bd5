//! Audited command execution on the host: clean environment, own process group,
//! whole-tree kill, bounded output, machine-wide limits, pipes and PTYs.
//!
//! # What it is for
//!
//! An executor that runs commands for a remote agent must start them in a folder it
//! chose, without leaking its own secrets through the environment, stop them on timeout
//! or cancellation *with every process they started*, never block on their output, and
//! produce an audit record for each one. This crate does that for `EXECUTE_COMMAND`
//! (`JAIL_FILES_EXEC.md` sections 12-13 and `PROTOCOL.md` 7.3 of the specification;
//! section numbers in doc comments refer to them). It is not a sandbox: the jail
//! constrains where a command starts, not what it does (12.12).
//!
//! # The one way in
//!
//! Create one [`CommandLimiter`] per machine and an [`Executor`] per configuration
//! ([`ExecConfig`]). For each request, fill a [`CommandRequest`] and call
//! [`Executor::execute`] with a closure that turns the request's `cwd` into an opened
//! directory ([`WorkDir`]); normally that closure asks `shim-jail`
//! (`JailRoot::open_dir`). The result is an [`Execution`]: the [`CommandResult`] (or the
//! [`ExecError`] that refused it) and the [`AuditEvent`] to record before answering. A
//! daemon that must also audit cancellations calls [`Executor::prepare`] and
//! [`PreparedCommand::run`] itself. [`spawn_pipe`] and [`spawn_pty`] are the lower-level
//! process API (one [`ProcessHandle`] type for both).
//!
//! # Example
//!
//! ```
//! # #[cfg(unix)]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use shim_exec::CommandLimiter;
//! use shim_exec::CommandLimits;
//! use shim_exec::CommandRequest;
//! use shim_exec::CwdError;
//! use shim_exec::ExecConfig;
//! use shim_exec::Executor;
//! use shim_exec::WorkDir;
//!
//! let folder = tempfile::tempdir()?;
//! let executor = Executor::new(
//!     ExecConfig::from_process(true), // true: commands are enabled
//!     CommandLimiter::new(CommandLimits::default()),
//! );
//! let request = CommandRequest {
//!     argv: Some(vec!["sh".into(), "-c".into(), "echo hello; exit 3".into()]),
//!     timeout_seconds: Some(10),
//!     ..CommandRequest::default()
//! };
//! // Here the cwd is always our folder; an executor asks shim-jail instead.
//! let resolve_cwd = |_cwd: Option<&str>| -> Result<WorkDir, CwdError> {
//!     let dir = shim_exec::Dir::open_ambient_dir(folder.path(), cap_std::ambient_authority())
//!         .map_err(|e| CwdError::new(shim_exec::ErrorCode::PathNotFound, e.to_string()))?;
//!     WorkDir::new(dir, folder.path().display().to_string())
//!         .map_err(|e| CwdError::new(e.code(), e.to_string()))
//! };
//! let runtime = tokio::runtime::Runtime::new()?;
//! let execution = runtime.block_on(executor.execute(&request, "/", resolve_cwd));
//!
//! let result = execution.result?;
//! assert_eq!(result.stdout, "hello\n");
//! assert_eq!(result.exit_code, 3); // a failing command is a result, not an error
//! assert!(!result.timed_out);
//! // The audit record to write before answering.
//! match execution.audit {
//!     Some(shim_exec::AuditEvent::ExecuteCommand { details, result, .. }) => {
//!         assert_eq!(details.argv.as_deref().map(<[String]>::len), Some(3));
//!         assert_eq!(result.exit_code, Some(3));
//!     }
//!     other => panic!("unexpected audit event {other:?}"),
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(unix))]
//! # fn main() {}
//! ```
//!
//! # Feature flags
//!
//! - `audit` (off by default): `impl From<AuditEvent> for shim_audit::AuditEvent`, the
//!   record to append to a `shim-audit` log, exactly as the daemon writes it.
//!
//! # Platforms
//!
//! Linux is implemented and tested; macOS compiles the same code path and confines
//! commands with `sandbox-exec` (`confine_macos.rs`, built and unit-tested on Linux). On
//! Windows [`Executor`] runs commands through pipes in a Job Object (tested under Wine);
//! PTYs and a command sandbox are Unix-only.
//!
//! # Stability
//!
//! The public API is checked against a baseline in CI (see the repository README): a
//! breaking change needs a version bump.

#![deny(missing_docs)]
#![cfg_attr(not(unix), allow(unused))]

pub mod audit;
// The command sandbox: one module per OS, selected here and only here.
#[cfg(target_os = "linux")]
pub mod confine;
#[cfg(target_os = "macos")]
#[path = "confine_macos.rs"]
pub mod confine;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
#[path = "confine_none.rs"]
pub mod confine;
pub mod env;
mod error;
#[cfg(any(unix, windows))]
mod executor;
pub mod limits;
pub mod output;
#[cfg(target_os = "linux")]
mod private_tmp;
#[cfg(unix)]
mod process;
#[cfg(windows)]
#[path = "process_windows.rs"]
mod process;
pub mod sandbox;
pub mod seatbelt;
pub mod shell;
pub mod spec;
#[cfg(unix)]
mod supervise;
#[cfg(target_os = "linux")]
mod vfork;

pub use audit::AuditEvent;
pub use audit::AuditResult;
pub use audit::ExecAuditDetails;
pub use env::BaseEnv;
pub use env::ChildEnv;
pub use error::CwdError;
pub use error::ExecError;
#[cfg(any(unix, windows))]
pub use executor::ExecConfig;
#[cfg(any(unix, windows))]
pub use executor::Execution;
#[cfg(any(unix, windows))]
pub use executor::Executor;
#[cfg(any(unix, windows))]
pub use executor::PreparedCommand;
#[cfg(any(unix, windows))]
pub use executor::Rejection;
pub use limits::CommandLimiter;
pub use limits::CommandLimits;
pub use limits::CommandPermit;
pub use output::Channel;
#[cfg(any(unix, windows))]
pub use process::ExitCode;
#[cfg(any(unix, windows))]
pub use process::GRACE;
#[cfg(any(unix, windows))]
pub use process::OutputChunk;
#[cfg(any(unix, windows))]
pub use process::ProcessHandle;
#[cfg(any(unix, windows))]
pub use process::SpawnSpec;
#[cfg(unix)]
pub use process::TermSize;
#[cfg(any(unix, windows))]
pub use process::WorkDir;
#[cfg(unix)]
pub use process::register_process_group;
#[cfg(any(unix, windows))]
pub use process::spawn_pipe;
#[cfg(unix)]
pub use process::spawn_pty;
#[cfg(unix)]
pub use process::start_sentinel;
#[cfg(unix)]
pub use process::stop_sentinel;
pub use spec::Argv;
pub use spec::CommandRequest;
pub use spec::CommandResult;
pub use spec::HostOs;
pub use spec::Program;
pub use spec::Shell;
pub use spec::Timeout;
pub use spec::WireEnv;

/// The wire error codes [`ExecError::code`] returns and [`CwdError::new`] takes,
/// re-exported so callers need not depend on shim-protocol to name them.
pub use shim_protocol::ErrorCode;

/// The directory handle [`WorkDir::new`] takes (cap-std; the same type `shim-jail`'s
/// `JailRoot::open_dir` returns), re-exported so callers need not depend on cap-std.
#[cfg(unix)]
pub use cap_std::fs::Dir;
/// The signal [`ProcessHandle::signal`] sends (rustix), re-exported so callers need not
/// depend on rustix.
#[cfg(unix)]
pub use rustix::process::Signal;
