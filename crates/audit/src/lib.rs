//! The tamper-evident audit log of the local executor (AUDIT_AUTH_CLI.md section 1).
//!
//! # What it is for
//!
//! An executor that acts for a remote agent must be able to show afterwards what it did,
//! in a way that an agent (or anyone else without the key) cannot rewrite. This crate keeps
//! that log: one JSON line per operation, each carrying a sequence number and an
//! HMAC-SHA256 over its canonical form chained to the previous record, written durably
//! *before* the operation's result is sent. It also verifies such logs, exports them as a
//! signed bundle and implements the `audit` commands of the CLI. Records hold what was done
//! (operation, paths, argv, environment keys, sizes, exit codes, durations), never contents
//! or secrets: what goes in is up to the caller, so keep it that way.
//!
//! # The one way in
//!
//! * Write: [`AuditLog::open`] with a [`WriterConfig`] and an [`AuditKey`] (fail closed:
//!   an error means no log, so refuse to run). Then, for each operation, build an
//!   [`AuditEvent`] (op name, request id, `details` as a [`Map`], an [`AuditResult`]) and
//!   call [`AuditLog::append`] (async) or [`AuditLog::append_blocking`]. Either returns the
//!   record's `seq` once it is on disk; an error means the operation must fail too.
//! * Check: [`verify_file`] (one file) or [`verify_all`] (a directory of rotated segments)
//!   report every [`Violation`] with the first broken `seq`.
//!
//! The key should live somewhere the agent cannot read; `shim-auth` keeps it in the OS
//! credential store.
//!
//! # Example
//!
//! ```
//! use shim_audit::AuditEvent;
//! use shim_audit::AuditKey;
//! use shim_audit::AuditLog;
//! use shim_audit::AuditResult;
//! use shim_audit::Map;
//! use shim_audit::WriterConfig;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("audit.log");
//! let key = AuditKey::from_bytes(&[7u8; 32])?; // normally AuditKey::generate(), kept safe
//!
//! let log = AuditLog::open(WriterConfig::new(&path, "machine-1", "my-executor 1.0"), key.clone())?;
//! let seq = log.append_blocking(
//!     AuditEvent::new("FILE_READ")
//!         .request_id("req-1")
//!         .details(Map::new().with("path", "/home/me/notes.txt").with("size_bytes", 42u64))
//!         .result(AuditResult::ok_after(std::time::Duration::from_millis(3))),
//! )?;
//! assert_eq!(seq, 1);
//! drop(log); // closes the file and releases the lock
//!
//! let report = shim_audit::verify_file(&path, &key)?;
//! assert!(report.is_clean());
//! assert_eq!(report.records, 1);
//!
//! // Any edit breaks the chain, and the verifier says where.
//! let text = std::fs::read_to_string(&path)?.replace("notes.txt", "other.txt");
//! std::fs::write(&path, text)?;
//! let report = shim_audit::verify_file(&path, &key)?;
//! assert!(!report.is_clean());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules
//!
//! * [`canon`]: canonical JSON (1.9), the MAC input.
//! * [`export`]: the signed ZIP bundle (1.18).
//! * [`cli`]: the `audit` commands (5.3.7, 5.3.8) shared by the `shim-audit` and
//!   `autogpt-shim` binaries; an embedder that has its own CLI does not need it.
//! * [`files`], [`parse`]: log file naming and the strict line parser.
//! * [`testing`]: building large valid logs quickly, for benchmarks, tests and fuzz
//!   targets only (public for the fuzz targets; not meant for embedders).
//!
//! # Feature flags
//!
//! None.
//!
//! # Stability
//!
//! The public API is checked against a baseline in CI (see the repository README): a
//! breaking change needs a version bump.
//!
//! See README.md for what this crate owns and must never do.

#![deny(missing_docs)]

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

/// The JSON crate of [`Value::from_json`], re-exported so callers use the same version.
pub use serde_json;
/// The wire error codes [`AuditResult::failed`] takes, re-exported so callers need not
/// depend on shim-protocol to name them.
pub use shim_protocol::ErrorCode;
/// The zeroising wrapper [`AuditKey::to_hex`] returns, re-exported so callers need not
/// depend on zeroize to name it.
pub use zeroize::Zeroizing;
