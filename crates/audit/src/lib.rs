//! The tamper-evident audit log of the local executor (AUDIT_AUTH_CLI.md section 1).
//!
//! * [`AuditLog`]: the process's single writer (open fail-closed, group-committed durable
//!   appends, rotation, tail recovery, lock file).
//! * [`verify_file`], [`verify_all`]: the verifiers of 1.14 and 1.15.
//! * [`canon`]: canonical JSON (1.9), the MAC input.
//! * [`export`]: the signed ZIP bundle (1.18).
//! * [`cli`]: the `audit` commands (5.3.7, 5.3.8) shared by `shim-audit` and `autogpt-shim`.
//!
//! See README.md for what this crate owns and must never do.

pub mod canon;
pub mod cli;
mod error;
pub mod export;
mod fast;
pub mod files;
mod key;
pub mod parse;
mod record;
pub mod testing;
mod value;
mod verify;
mod writer;

pub use error::AuditError;
pub use key::AuditKey;
pub use key::KEY_LEN;
pub use key::KeyError;
pub use key::MIN_KEY_LEN;
pub use record::AuditEvent;
pub use record::AuditResult;
pub use record::NO_ID;
pub use record::OP_AUDIT_ROTATED;
pub use value::Map;
pub use value::Value;
pub use verify::AllReport;
pub use verify::FileReport;
pub use verify::RotatedHead;
pub use verify::Violation;
pub use verify::ViolationKind;
pub use verify::default_threads;
pub use verify::log_files;
pub use verify::verify_all;
pub use verify::verify_bytes;
pub use verify::verify_file;
pub use verify::verify_file_threads;
pub use writer::AuditLog;
pub use writer::ROTATE_AGE_SECS;
pub use writer::ROTATE_BYTES;
pub use writer::RotateReason;
pub use writer::SessionAudit;
pub use writer::WriterConfig;
pub use writer::WriterStats;
