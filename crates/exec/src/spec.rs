//! The request as the daemon hands it over, and the parsed newtypes (STYLE.md 6).

use crate::error::ExecError;

/// The host family whose rules apply (JAIL_FILES_EXEC.md 1.1: `wsl2` is POSIX).
///
/// The pure rules (shell table, environment baseline and merge) take it as a value so that
/// both tables are testable on any host; [`HostOs::current`] is what the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOs {
    /// linux, wsl2, darwin.
    Posix,
    /// windows.
    Windows,
}

impl HostOs {
    /// The OS this build runs on.
    pub const fn current() -> HostOs {
        if cfg!(windows) {
            HostOs::Windows
        } else {
            HostOs::Posix
        }
    }
}

/// The `shell` field of `EXECUTE_COMMAND` (PROTOCOL.md 7.3.1). Any other wire value is an
/// invalid frame, rejected by the protocol layer before this crate is involved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Shell {
    /// `auto` (the default).
    #[default]
    Auto,
    /// `bash`.
    Bash,
    /// `sh`.
    Sh,
    /// `zsh`.
    Zsh,
    /// `pwsh`.
    Pwsh,
    /// `powershell`.
    Powershell,
    /// `cmd`.
    Cmd,
}

impl Shell {
    /// Every value, in the order of the table in 12.3.
    pub const ALL: [Shell; 7] = [
        Shell::Auto,
        Shell::Bash,
        Shell::Sh,
        Shell::Zsh,
        Shell::Pwsh,
        Shell::Powershell,
        Shell::Cmd,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Shell::Auto => "auto",
            Shell::Bash => "bash",
            Shell::Sh => "sh",
            Shell::Zsh => "zsh",
            Shell::Pwsh => "pwsh",
            Shell::Powershell => "powershell",
            Shell::Cmd => "cmd",
        }
    }

    /// Parses a wire spelling (exact, case-sensitive); `None` for anything else.
    pub fn from_wire(s: &str) -> Option<Shell> {
        Shell::ALL.into_iter().find(|sh| sh.as_str() == s)
    }
}

impl std::fmt::Display for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The wire fields of one `EXECUTE_COMMAND`, unvalidated, exactly as received.
///
/// The daemon maps the protocol payload to this; [`Executor::prepare`](crate::Executor::prepare)
/// validates it in the order of JAIL_FILES_EXEC.md 12.1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRequest {
    /// `command` (shell form), or `None`.
    pub command: Option<String>,
    /// `argv` (direct form), or `None`.
    pub argv: Option<Vec<String>>,
    /// `shell` (ignored for `argv`, but recorded in the audit record).
    pub shell: Shell,
    /// The raw wire `cwd`, or `None` for the root.
    pub cwd: Option<String>,
    /// `timeout_seconds` as received (`None` = the configured ceiling).
    pub timeout_seconds: Option<i64>,
    /// `env` in JSON object order (order matters for Windows duplicate names, 12.5).
    pub env: Vec<(String, String)>,
}

/// A validated argument vector: non-empty, no NUL bytes (STYLE.md 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(Vec<String>);

impl Argv {
    /// Validates an `argv` array.
    pub fn new(argv: Vec<String>) -> Result<Argv, ExecError> {
        if argv.is_empty() {
            return Err(ExecError::EmptyArgv);
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Err(ExecError::NulInArgument { field: "argv" });
        }
        Ok(Argv(argv))
    }

    /// `argv[0]`.
    pub fn program(&self) -> &str {
        // Invariant: `new` refuses an empty vector.
        self.0.first().map_or("", String::as_str)
    }

    /// The whole vector.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

/// What to run: exactly one of the two forms (12.1 step 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// `command` through a shell.
    Shell {
        /// The command line (may be empty: runs an empty shell command).
        command: String,
        /// The requested shell.
        shell: Shell,
    },
    /// `argv`, executed directly.
    Argv(Argv),
}

impl Program {
    /// 12.1 step 4: exactly one of `command` / `argv`, `argv` non-empty, no NUL bytes.
    pub fn from_wire(
        command: Option<&str>,
        argv: Option<&[String]>,
        shell: Shell,
    ) -> Result<Program, ExecError> {
        match (command, argv) {
            (Some(c), None) => {
                if c.contains('\0') {
                    return Err(ExecError::NulInArgument { field: "command" });
                }
                Ok(Program::Shell {
                    command: c.to_owned(),
                    shell,
                })
            }
            (None, Some(a)) => Ok(Program::Argv(Argv::new(a.to_vec())?)),
            _ => Err(ExecError::CommandOrArgv),
        }
    }
}

/// Wire `env` entries that passed 12.1 step 5, in wire order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireEnv(Vec<(String, String)>);

impl WireEnv {
    /// 12.1 step 5: names non-empty, without `=` and NUL; values without NUL.
    pub fn new(env: Vec<(String, String)>) -> Result<WireEnv, ExecError> {
        for (name, value) in &env {
            if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0')
            {
                return Err(ExecError::InvalidEnv {
                    name: name.replace('\0', "\\0"),
                });
            }
        }
        Ok(WireEnv(env))
    }

    /// The entries in wire order.
    pub fn entries(&self) -> &[(String, String)] {
        &self.0
    }
}

/// The effective timeout `T` in whole seconds (12.9), always > 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timeout(u64);

impl Timeout {
    /// `T = min(timeout_seconds if given else C, C)`; a value ≤ 0 is refused.
    pub fn effective(requested: Option<i64>, ceiling_secs: u64) -> Result<Timeout, ExecError> {
        let ceiling = ceiling_secs.max(1);
        match requested {
            None => Ok(Timeout(ceiling)),
            Some(t) if t <= 0 => Err(ExecError::InvalidTimeout),
            Some(t) => Ok(Timeout(u64::try_from(t).unwrap_or(ceiling).min(ceiling))),
        }
    }

    /// Whole seconds.
    pub fn secs(self) -> u64 {
        self.0
    }

    /// As a duration.
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.0)
    }
}

/// `COMMAND_RESULT` (12.8), before the daemon puts it on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandResult {
    /// Retained stdout, decoded.
    pub stdout: String,
    /// Retained stderr (plus the truncation marker), decoded.
    pub stderr: String,
    /// Exit status; `-N` for death by signal N; `-1` if unobtainable.
    pub exit_code: i64,
    /// True iff the timeout fired.
    pub timed_out: bool,
    /// Seconds from the handler start to the end of output collection, 3 decimals.
    pub duration_seconds: f64,
    /// Whether output was discarded.
    pub output_truncated: bool,
}
