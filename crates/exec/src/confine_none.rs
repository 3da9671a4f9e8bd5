//! Kernel confinement of one command, on an OS where this build has none (Windows and
//! the BSDs; Linux has `confine.rs`, macOS `confine_macos.rs`).
//!
//! [`Confinement::prepare`] refuses every active policy, so no [`Confinement`] value exists
//! here and a command is never run unconfined when a sandbox was asked for (STYLE.md
//! item 21). The executor and the spawn path use the same names on every OS.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use crate::sandbox::SandboxPolicy;

/// Why a command's confinement could not be prepared (the command is refused).
#[derive(Debug, thiserror::Error)]
#[error("cannot confine the command: {0}")]
pub struct SandboxError(pub String);

/// A command's confinement; uninhabited on this OS.
#[derive(Debug)]
pub enum Confinement {}

impl Confinement {
    /// Always fails: this OS has no command sandbox in this build.
    pub fn prepare(_policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
        Err(SandboxError(
            "no command sandbox on this OS in this build".into(),
        ))
    }

    /// Never called: no [`Confinement`] exists here.
    pub fn tmpdir(&self) -> Option<&Path> {
        match *self {}
    }

    /// Never called: no [`Confinement`] exists here.
    pub fn command(&self, _program: OsString, _argv: Vec<OsString>) -> (OsString, Vec<OsString>) {
        match *self {}
    }
}

/// Applies `c` to the command; never called, since no [`Confinement`] exists here.
#[cfg(unix)]
pub(crate) fn install(_cmd: &mut std::process::Command, c: Arc<Confinement>) {
    match *c {}
}

/// Uses up a confinement that cannot exist (the Windows spawn path).
#[cfg(windows)]
pub(crate) fn unreachable(c: Arc<Confinement>) -> ! {
    match *c {}
}
