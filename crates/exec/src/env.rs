//! The child environment: the per-OS safe baseline (J-ENV-1) and the wire merge (J-ENV-2).

use std::ffi::OsStr;
use std::ffi::OsString;

use crate::spec::HostOs;
use crate::spec::WireEnv;

const POSIX_KEEP: &[&str] = &["HOME", "PATH", "LANG", "TZ", "TMPDIR", "USER", "SHELL"];
const WINDOWS_KEEP: &[&str] = &[
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "PATH",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "COMSPEC",
    "OS",
    "WINDIR",
    "LOCALAPPDATA",
    "APPDATA",
    // MAY keep (12.5): needed for the PATHEXT search of 12.4.
    "PATHEXT",
    "SYSTEMDRIVE",
];

/// Whether a daemon variable passes into a child (J-ENV-1). Everything else, in particular
/// every `AUTOGPT_SHIM_*` secret, proxies and tokens, is dropped.
pub fn baseline_keeps(os: HostOs, name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    match os {
        HostOs::Posix => POSIX_KEEP.contains(&name) || name.starts_with("LC_"),
        HostOs::Windows => WINDOWS_KEEP.iter().any(|k| k.eq_ignore_ascii_case(name)),
    }
}

/// The filtered daemon environment, captured once when the daemon starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaseEnv(Vec<(OsString, OsString)>);

impl BaseEnv {
    /// Filters `vars` (e.g. `std::env::vars_os()`) through the baseline of `os`.
    pub fn filter(os: HostOs, vars: impl IntoIterator<Item = (OsString, OsString)>) -> BaseEnv {
        BaseEnv(
            vars.into_iter()
                .filter(|(k, _)| baseline_keeps(os, k))
                .collect(),
        )
    }

    /// The daemon's own environment through the baseline of this OS.
    pub fn from_process() -> BaseEnv {
        BaseEnv::filter(HostOs::current(), std::env::vars_os())
    }

    /// The kept entries.
    pub fn entries(&self) -> &[(OsString, OsString)] {
        &self.0
    }
}

/// The final child environment, in a deterministic order (sorted by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildEnv(Vec<(OsString, OsString)>);

fn same_name(os: HostOs, a: &OsStr, b: &OsStr) -> bool {
    match os {
        HostOs::Posix => a == b,
        HostOs::Windows => match (a.to_str(), b.to_str()) {
            // Case-insensitive for the ASCII variable names that matter; non-UTF-8 names
            // compare exactly.
            (Some(a), Some(b)) => a.to_lowercase() == b.to_lowercase(),
            _ => a == b,
        },
    }
}

impl ChildEnv {
    /// J-ENV-2: wire entries override baseline entries of the same name (ignoring case on
    /// Windows, where the wire spelling wins and the last of several equal wire names is
    /// the only one kept); finally `PYTHONIOENCODING=utf-8` is forced.
    pub fn merge(os: HostOs, base: &BaseEnv, wire: &WireEnv) -> ChildEnv {
        let mut out: Vec<(OsString, OsString)> = base.entries().to_vec();
        let mut set = |name: &OsStr, value: &OsStr| {
            out.retain(|(k, _)| !same_name(os, k, name));
            out.push((name.to_owned(), value.to_owned()));
        };
        for (k, v) in wire.entries() {
            set(OsStr::new(k), OsStr::new(v));
        }
        set(OsStr::new("PYTHONIOENCODING"), OsStr::new("utf-8"));
        out.sort();
        ChildEnv(out)
    }

    /// The entries, sorted by name.
    pub fn entries(&self) -> &[(OsString, OsString)] {
        &self.0
    }

    /// Sets `name` (POSIX: exact name), replacing any value; keeps the order sorted.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn set(&mut self, name: &str, value: &OsStr) {
        self.0.retain(|(k, _)| k != name);
        self.0.push((name.into(), value.to_owned()));
        self.0.sort();
    }

    /// The value of `name` (compared as the OS compares names).
    pub fn get(&self, os: HostOs, name: &str) -> Option<&OsStr> {
        self.0
            .iter()
            .find(|(k, _)| same_name(os, k, OsStr::new(name)))
            .map(|(_, v)| v.as_os_str())
    }

    /// Sorted names, as the audit record's `env_keys` (12.11). Values are never exposed here.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .0
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        keys.sort();
        keys
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
