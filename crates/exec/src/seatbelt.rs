//! macOS: the Seatbelt profile of a [`SandboxPolicy`], for `sandbox-exec -p PROFILE -D
//! NAME=VALUE ... -- PROGRAM ARGS`.
//!
//! Paths never enter the profile text: the profile refers to parameters (`(param
//! "FOLDER")`), and the values travel as separate `-D` arguments, so a folder named
//! `a "b") (allow default` is just a path. The generator is pure and compiled and tested
//! on every OS; it runs only on macOS.

use std::ffi::OsString;
use std::path::Path;

use crate::sandbox::NetworkMode;
use crate::sandbox::SandboxMode;
use crate::sandbox::SandboxPolicy;

/// The path of `sandbox-exec` on macOS.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A generated profile and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatbeltProfile {
    /// The profile text (no path in it).
    pub profile: String,
    /// `(name, value)` pairs, passed as `-D name=value`.
    pub params: Vec<(String, OsString)>,
}

impl SeatbeltProfile {
    /// The full argument vector: `sandbox-exec -p PROFILE -D ... -- argv...`.
    pub fn wrap(&self, argv: &[OsString]) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![SANDBOX_EXEC.into(), "-p".into(), (&self.profile).into()];
        for (k, v) in &self.params {
            let mut kv = OsString::from(k);
            kv.push("=");
            kv.push(v);
            out.push("-D".into());
            out.push(kv);
        }
        out.push("--".into());
        out.extend(argv.iter().cloned());
        out
    }
}

/// What the executor runs for `program` / `argv` under `profile`: the program
/// `sandbox-exec` and its argument vector `sandbox-exec -p PROFILE -D NAME=VALUE ... --
/// PROGRAM ARGV[1..]`. The resolved `program` replaces `argv[0]` after `--`, because
/// `sandbox-exec` executes its first operand (searching `PATH` only for a bare name).
pub fn sandbox_exec_command(
    profile: &SeatbeltProfile,
    program: OsString,
    argv: &[OsString],
) -> (OsString, Vec<OsString>) {
    let command: Vec<OsString> = std::iter::once(program)
        .chain(argv.iter().skip(1).cloned())
        .collect();
    (SANDBOX_EXEC.into(), profile.wrap(&command))
}

/// The profile of `policy` for a command whose private temporary directory is `tmpdir`;
/// `None` when nothing is confined.
pub fn profile(policy: &SandboxPolicy, tmpdir: &Path) -> Option<SeatbeltProfile> {
    if !policy.is_active() {
        return None;
    }
    let mut p = String::from("(version 1)\n");
    let mut params: Vec<(String, OsString)> = Vec::new();
    let mut param = |name: String, value: &Path| {
        params.push((name.clone(), value.as_os_str().to_owned()));
        format!("(subpath (param \"{name}\"))")
    };
    if policy.mode.confines() {
        p.push_str(concat!(
            "(deny default)\n",
            "(allow process-exec)\n",
            "(allow process-fork)\n",
            "(allow signal (target same-sandbox))\n",
            "(allow sysctl-read)\n",
            "(allow mach-lookup)\n",
            "(allow ipc-posix-shm-read-data)\n",
            "(allow file-read*)\n",
        ));
        if let Some(home) = &policy.home {
            let h = param("HOME_DIR".into(), home);
            p.push_str(&format!("(deny file-read* {h})\n"));
        }
        let mut reads = Vec::new();
        let mut writes = vec![param("TMP_DIR".into(), tmpdir)];
        let folder = param("FOLDER".into(), &policy.folder);
        match policy.mode {
            SandboxMode::ReadOnly => reads.push(folder),
            _ => writes.push(folder),
        }
        for (i, w) in policy.writable.iter().enumerate() {
            let r = param(format!("WRITABLE_{i}"), w);
            match policy.mode {
                SandboxMode::ReadOnly => reads.push(r),
                _ => writes.push(r),
            }
        }
        for (i, r) in policy.readable.iter().enumerate() {
            reads.push(param(format!("READABLE_{i}"), r));
        }
        // Listed after the home's deny: the last matching rule wins.
        if !reads.is_empty() || !writes.is_empty() {
            let all: Vec<&String> = reads.iter().chain(writes.iter()).collect();
            p.push_str(&format!(
                "(allow file-read* {})\n",
                all.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
            ));
        }
        p.push_str(&format!("(allow file-write* {})\n", writes.join(" ")));
        p.push_str(
            "(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\"))\n",
        );
        // Terminals: a command on a PTY (the daemon's, opened before the sandbox) must be
        // able to set its modes; terminals it opens itself carry the pty extension.
        p.push_str(concat!(
            "(allow pseudo-tty)\n",
            "(allow file-read* file-write* file-ioctl (literal \"/dev/ptmx\") (literal \"/dev/tty\"))\n",
            "(allow file-read* file-write* (require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))\n",
            "(allow file-ioctl (regex #\"^/dev/ttys[0-9]+$\"))\n",
        ));
    } else {
        p.push_str("(allow default)\n");
    }
    match policy.network {
        NetworkMode::Allow if policy.mode.confines() => {
            p.push_str("(allow network*)\n");
        }
        NetworkMode::Allow => {}
        NetworkMode::Deny => {
            p.push_str("(deny network*)\n(allow network* (remote unix-socket (subpath (param \"FOLDER\"))))\n");
            if !policy.mode.confines() {
                params.push(("FOLDER".into(), policy.folder.as_os_str().to_owned()));
            }
        }
    }
    Some(SeatbeltProfile { profile: p, params })
}

#[cfg(test)]
#[path = "seatbelt_tests.rs"]
mod tests;
