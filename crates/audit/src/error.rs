//! Errors of the audit writer.

use std::path::PathBuf;

use shim_protocol::ErrorCode;

use crate::canon::NonFiniteFloat;

/// Why the audit log could not be opened or written. Every variant is fatal for the daemon
/// (1.19): it must not start, or must enter the terminal "audit failed" state and exit 78.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// Creating the log directory, the log file or the lock file failed.
    #[error("cannot open the mandatory audit log {}: {message}", path.display())]
    Open {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// Another process holds the lock ([H-8]).
    #[error("the mandatory audit log {} is in use by another shim process", path.display())]
    Locked {
        /// The current log file.
        path: PathBuf,
    },
    /// The existing tail could not be recovered (reading it or rotating it aside failed).
    #[error("cannot recover the tail of the mandatory audit log {}: {message}", path.display())]
    Recovery {
        /// The current log file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// An append could not be written. The writer accepts nothing more afterwards.
    #[error("audit append to {} failed: {message}", path.display())]
    Write {
        /// The current log file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// An earlier append failed; the writer is in its terminal state.
    #[error("the audit writer failed earlier and accepts no more records")]
    Poisoned,
    /// A float in `details` is NaN or infinite (a programming error; nothing was written).
    #[error("invalid audit record: {0}")]
    InvalidRecord(#[from] NonFiniteFloat),
    /// A session-bound view was asked to write another session's record (1.6).
    #[error("session-bound audit view for {bound:?} cannot write a record for {requested:?}")]
    SessionMismatch {
        /// The view's session.
        bound: String,
        /// The session the caller asked for.
        requested: String,
    },
    /// The writer stopped before the append ran (its runtime is shutting down).
    #[error("the audit writer has stopped")]
    Closed,
}

impl AuditError {
    /// The wire code for a request whose audit append failed: always `INTERNAL_ERROR` (1.19).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InternalError
    }

    /// The process exit code the daemon uses when this stops it (5.2: 78).
    pub fn exit_code(&self) -> u8 {
        78
    }
}
