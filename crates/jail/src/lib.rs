//! shim-jail: the path jail. See README.md.
//!
//! [`JailRoot::open`] is the single ambient entry point. Every later call takes a wire
//! path, validates it into a [`JailPath`] (JAIL_FILES_EXEC.md 4.2), resolves it on
//! directory handles (4.4) and acts only on those handles (4.10). No API accepts or
//! returns a host path outside the root: results carry display paths (4.8).

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
