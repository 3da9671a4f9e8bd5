//! macOS confinement of one command: the Seatbelt profile of [`crate::seatbelt`], applied
//! by running the command under `/usr/bin/sandbox-exec`.
//!
//! [`Confinement::prepare`] checks that `sandbox-exec` exists, creates the private
//! temporary directory and generates the profile for the policy with canonical paths
//! (Seatbelt matches resolved paths: `/var` is `/private/var`). The executor then asks
//! [`Confinement::command`] for the program to execute: `sandbox-exec -p PROFILE -D
//! NAME=VALUE ... -- PROGRAM ARGS`, the paths travelling only as `-D` parameters (see
//! [`crate::seatbelt::sandbox_exec_command`]). `sandbox-exec` applies the profile to
//! itself and then executes the command, so the pipe and the PTY path are confined alike
//! and a failure to apply the profile is a failure of the command, never an unconfined
//! run. Nothing is applied in the forked child: [`install`] adds no hook.

use std::ffi::OsString;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use crate::sandbox::NetworkMode;
use crate::sandbox::SandboxMode;
use crate::sandbox::SandboxPolicy;
use crate::seatbelt::SANDBOX_EXEC;
use crate::seatbelt::SeatbeltProfile;

/// Why a command's confinement could not be prepared (the command is refused).
#[derive(Debug, thiserror::Error)]
#[error("cannot confine the command: {0}")]
pub struct SandboxError(pub String);

/// Whether `sandbox-exec` is installed (it ships with macOS; a stripped system may lack
/// it, and then no sandbox can be applied).
pub fn sandbox_exec_available() -> bool {
    Path::new(SANDBOX_EXEC).is_file()
}

/// Everything one command's confinement needs: the private temporary directory, if any
/// (removed when this value is dropped), and the generated profile.
#[derive(Debug)]
pub struct Confinement {
    mode: SandboxMode,
    network: NetworkMode,
    tmpdir: Option<tempfile::TempDir>,
    profile: SeatbeltProfile,
}

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

impl Confinement {
    /// Builds the confinement of `policy` for one command. Fails if `sandbox-exec` is
    /// missing or the temporary directory cannot be made; never degrades silently.
    pub fn prepare(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
        if !sandbox_exec_available() {
            return Err(SandboxError(format!("{SANDBOX_EXEC} is missing")));
        }
        // As on Linux, only a file-system sandbox gets a private temporary directory
        // (`off` + `deny` confines the network alone; the profile then names no path).
        let tmpdir = if policy.mode.confines() {
            Some(
                tempfile::Builder::new()
                    .prefix("autogpt-shim-cmd-")
                    .tempdir()
                    .map_err(|e| SandboxError(format!("private temporary directory: {e}")))?,
            )
        } else {
            None
        };
        let tmp = match &tmpdir {
            Some(t) => canonical(t.path()).unwrap_or_else(|| t.path().to_owned()),
            None => PathBuf::new(),
        };
        let canonical_policy = SandboxPolicy {
            folder: canonical(&policy.folder).unwrap_or_else(|| policy.folder.clone()),
            home: policy.home.as_deref().and_then(canonical),
            // Listed paths that do not exist grant nothing.
            writable: policy
                .writable
                .iter()
                .filter_map(|p| canonical(p))
                .collect(),
            readable: policy
                .readable
                .iter()
                .filter_map(|p| canonical(p))
                .collect(),
            ..policy.clone()
        };
        let profile = crate::seatbelt::profile(&canonical_policy, &tmp)
            .ok_or_else(|| SandboxError("the policy confines nothing".into()))?;
        Ok(Confinement {
            mode: policy.mode,
            network: policy.network,
            tmpdir,
            profile,
        })
    }

    /// The private temporary directory (given to the command as `TMPDIR`), if any.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmpdir.as_ref().map(tempfile::TempDir::path)
    }

    /// The program and argument vector to execute for `program` / `argv`:
    /// `sandbox-exec` with the profile, then the command.
    pub fn command(&self, program: OsString, argv: Vec<OsString>) -> (OsString, Vec<OsString>) {
        crate::seatbelt::sandbox_exec_command(&self.profile, program, &argv)
    }

    /// The file-system mode applied.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The network mode applied.
    pub fn network(&self) -> NetworkMode {
        self.network
    }
}

/// Nothing to do in the child: `sandbox-exec` (the program [`Confinement::command`]
/// returned) applies the profile before it executes the command.
pub(crate) fn install(_cmd: &mut std::process::Command, _c: Arc<Confinement>) {}
