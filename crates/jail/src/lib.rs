//! The path jail: file operations that can never touch anything outside one folder.
//!
//! # What it is for
//!
//! An executor that lets a remote agent read and write files must keep every operation
//! inside the folder the user chose, even against `..`, absolute paths, symlinks planted
//! inside the folder, Windows device names and a folder that is swapped for a symlink while
//! a request is in flight. This crate is that boundary (`JAIL_FILES_EXEC.md` sections 1-11
//! of the specification; section numbers in doc comments refer to it). It is synchronous
//! and has no async runtime.
//!
//! # The one way in
//!
//! [`JailRoot::open`] is the single ambient entry point; it takes the explicit
//! [`ambient_authority`] token so that a call site that opens a root is easy to find.
//! Every later call takes a *wire path* (an absolute path string as the platform sends
//! it), validates it into a [`JailPath`] (4.2), resolves it on directory handles (4.4) and
//! acts only on those handles (4.10). No API accepts or returns a host path outside the
//! root: results carry display paths (4.8). Errors are [`JailError`], an enum whose
//! variants name what went wrong; [`JailError::code`] gives the protocol's wire code for
//! those who speak it.
//!
//! # Example
//!
//! ```
//! use shim_jail::JailConfig;
//! use shim_jail::JailError;
//! use shim_jail::JailRoot;
//! use shim_jail::ListOptions;
//! use shim_jail::ReadOptions;
//! use shim_jail::WriteOptions;
//!
//! let folder = tempfile::tempdir()?;
//! let jail = JailRoot::open(folder.path(), JailConfig::default(), shim_jail::ambient_authority())?;
//! // Wire paths are absolute; the root's canonical path is their base.
//! let root = jail.root_path().to_owned();
//!
//! let opts = WriteOptions { create_parents: true, ..WriteOptions::default() };
//! let written = jail.write(&format!("{root}/notes/todo.txt"), "buy milk\n", &opts)?;
//! assert_eq!(written.size_bytes_written, 9);
//!
//! let read = jail.read(&written.path, &ReadOptions::default())?;
//! assert_eq!(read.content, "buy milk\n");
//!
//! let listing = jail.list(&format!("{root}/notes"), &ListOptions::default())?;
//! assert_eq!(listing.entries.len(), 1);
//!
//! // Escapes are refused with a typed error, and nothing outside is touched.
//! let escape = jail.read(&format!("{root}/../etc/passwd"), &ReadOptions::default());
//! assert!(matches!(&escape, Err(JailError::Outside { .. })));
//! assert!(escape.is_err_and(|e| e.is_jail_violation()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A command's working directory is opened with [`JailRoot::open_dir`], which returns a
//! directory handle ([`Dir`]) for `shim-exec` to start the child in.
//!
//! # Feature flags
//!
//! * `testing` (off by default): the module `testing`, the plan vocabulary and invariants
//!   shared by this crate's property test and its fuzz target. Not for production use.
//!
//! # Platforms
//!
//! The handle-based operations ([`JailRoot`] and everything it returns) exist on Unix.
//! On other platforms only the lexical rules ([`JailPath`], [`Glob`], ...) are available
//! so far.
//!
//! # Stability
//!
//! The public API is checked against a baseline in CI (see the repository README): a
//! breaking change needs a version bump.

#![deny(missing_docs)]
#![cfg_attr(not(unix), allow(unused))]

mod config;
mod error;
mod glob;
mod lexical;
mod mime;

#[cfg(unix)]
mod dir;
#[cfg(unix)]
mod ops;
#[cfg(unix)]
mod root;
#[cfg(unix)]
mod sys;
#[cfg(all(unix, feature = "testing"))]
pub mod testing;
mod types;
#[cfg(unix)]
mod walk;
#[cfg(windows)]
mod win;

pub use config::JailConfig;
pub use error::JailError;
pub use glob::Glob;
pub use lexical::Component;
pub use lexical::JailPath;
pub use lexical::PathOs;
pub use lexical::Prefix;
pub use lexical::is_invalid_windows_char;
pub use lexical::is_reserved_windows_name;
pub use mime::mime_for_name;
#[cfg(unix)]
pub use ops::MAX_BYTES_READ_BYTES;
#[cfg(unix)]
pub use ops::MAX_TEXT_READ_BYTES;
#[cfg(unix)]
pub use root::JailRoot;
pub use types::*;
#[cfg(windows)]
pub use win::JailRoot;
#[cfg(windows)]
pub use win::MAX_BYTES_READ_BYTES;
#[cfg(windows)]
pub use win::MAX_TEXT_READ_BYTES;

/// The authority token [`JailRoot::open`] takes, re-exported so callers need not depend
/// on cap-std to name it.
pub use cap_std::AmbientAuthority;
/// Obtains the ambient-authority token (cap-std); call it only where opening a root is
/// intended.
pub use cap_std::ambient_authority;
/// The directory handle [`JailRoot::open_dir`] returns (cap-std), re-exported so callers
/// need not depend on cap-std to name it.
pub use cap_std::fs::Dir;
/// The wire error codes [`JailError::code`] returns, re-exported so callers need not depend
/// on shim-protocol to match on them.
pub use shim_protocol::ErrorCode;
