//! Shell execution (section 7.3).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::Serialize;

use crate::wire_enum::wire_enum;

wire_enum! {
    /// `EXECUTE_COMMAND.shell`; any other value makes the frame invalid.
    closed Shell {
        /// `bash -c` if on PATH, else `sh -c` (POSIX); `cmd.exe /C` (Windows).
        Auto => "auto",
        /// `bash -c`.
        Bash => "bash",
        /// `sh -c`.
        Sh => "sh",
        /// `zsh -c`.
        Zsh => "zsh",
        /// `pwsh -NoLogo -NoProfile -Command`.
        Pwsh => "pwsh",
        /// Windows PowerShell.
        Powershell => "powershell",
        /// `cmd.exe /C`.
        Cmd => "cmd",
    }
}

#[allow(clippy::derivable_impls)] // the enum comes from wire_enum!
impl Default for Shell {
    fn default() -> Self {
        Shell::Auto
    }
}

/// `EXECUTE_COMMAND` (section 7.3.1). Exactly one of `command` and `argv` must be set,
/// but that is checked by the handler after the rate limits (step 4), not here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ExecuteCommand {
    /// A shell command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Executed directly, without a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The shell for `command`; ignored with `argv`.
    #[serde(default)]
    pub shell: Shell,
    /// Working directory (jailed); null means the allowed root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Timeout in seconds; must be > 0 when present.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::values::positive_opt"
    )]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "proptest::option::of(1u64..100_000)")
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub timeout_seconds: Option<u64>,
    /// Variables merged over the safe baseline.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<BTreeMap<String, String>>")
    )]
    pub env: BTreeMap<String, String>,
}

/// `COMMAND_RESULT` (section 7.3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct CommandResult {
    /// Retained, decoded stdout.
    pub stdout: String,
    /// Retained stderr, plus the truncation marker.
    pub stderr: String,
    /// Exit status; `-signal` for a signalled POSIX process; `-1` if unknown.
    pub exit_code: i64,
    /// True when the timeout fired.
    pub timed_out: bool,
    /// Wall time, rounded to 3 decimals.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub duration_seconds: f64,
    /// True when output beyond the budget was discarded.
    #[serde(default)]
    pub output_truncated: bool,
}
