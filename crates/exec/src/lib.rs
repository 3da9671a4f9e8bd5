//! shim-exec: `EXECUTE_COMMAND` on the host (JAIL_FILES_EXEC.md sections 12-13,
//! PROTOCOL.md 7.3). See README.md for what this crate owns and must never do.
//!
//! The daemon creates one [`CommandLimiter`] per machine and an [`Executor`] per
//! configuration, maps each wire request to a [`CommandRequest`] and calls
//! [`Executor::prepare`] then [`PreparedCommand::run`] (or [`Executor::execute`]).
//! [`spawn_pipe`] and [`spawn_pty`] are the lower-level process API (one
//! [`ProcessHandle`] type for both).

#![cfg_attr(not(unix), allow(unused))]

pub mod audit;
#[cfg(target_os = "linux")]
pub mod confine;
pub mod env;
mod error;
#[cfg(unix)]
mod executor;
pub mod limits;
pub mod output;
#[cfg(unix)]
mod process;
pub mod sandbox;
pub mod seatbelt;
pub mod shell;
pub mod spec;
#[cfg(unix)]
mod supervise;

pub use audit::AuditEvent;
pub use audit::AuditResult;
pub use audit::ExecAuditDetails;
pub use env::BaseEnv;
pub use env::ChildEnv;
pub use error::CwdError;
pub use error::ExecError;
#[cfg(unix)]
pub use executor::ExecConfig;
#[cfg(unix)]
pub use executor::Execution;
#[cfg(unix)]
pub use executor::Executor;
#[cfg(unix)]
pub use executor::PreparedCommand;
#[cfg(unix)]
pub use executor::Rejection;
pub use limits::CommandLimiter;
pub use limits::CommandLimits;
pub use limits::CommandPermit;
pub use output::Channel;
#[cfg(unix)]
pub use process::ExitCode;
#[cfg(unix)]
pub use process::GRACE;
#[cfg(unix)]
pub use process::OutputChunk;
#[cfg(unix)]
pub use process::ProcessHandle;
#[cfg(unix)]
pub use process::SpawnSpec;
#[cfg(unix)]
pub use process::TermSize;
#[cfg(unix)]
pub use process::WorkDir;
#[cfg(unix)]
pub use process::spawn_pipe;
#[cfg(unix)]
pub use process::spawn_pty;
#[cfg(unix)]
pub use process::start_sentinel;
pub use spec::Argv;
pub use spec::CommandRequest;
pub use spec::CommandResult;
pub use spec::HostOs;
pub use spec::Program;
pub use spec::Shell;
pub use spec::Timeout;
pub use spec::WireEnv;
