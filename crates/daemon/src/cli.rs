//! The command line of AUDIT_AUTH_CLI.md 5.1 (clap derive). The binary parses it and calls
//! [`crate::run`].

use std::path::PathBuf;

use clap::Parser;
use clap::Subcommand;
use shim_audit::cli::AuditCommand;

/// `--log-level` values (case-insensitive; `WARN` is accepted for `WARNING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// DEBUG.
    Debug,
    /// INFO (default).
    Info,
    /// WARNING / WARN.
    Warning,
    /// ERROR.
    Error,
}

impl LogLevel {
    /// The tracing filter directive.
    pub fn directive(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// Parses a `--log-level` value.
pub fn parse_log_level(s: &str) -> Result<LogLevel, String> {
    match s.to_ascii_uppercase().as_str() {
        "DEBUG" => Ok(LogLevel::Debug),
        "INFO" => Ok(LogLevel::Info),
        "WARNING" | "WARN" => Ok(LogLevel::Warning),
        "ERROR" => Ok(LogLevel::Error),
        _ => Err(format!(
            "invalid log level {s:?}: use DEBUG, INFO, WARNING (or WARN) or ERROR"
        )),
    }
}

/// `autogpt-shim [--version] [GLOBAL OPTIONS] COMMAND [COMMAND OPTIONS]`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "autogpt-shim",
    version,
    about = "The AutoGPT local executor: lets the AutoGPT platform use this computer as its execution backend."
)]
pub struct Cli {
    /// Legacy-mode file jail root.
    #[arg(long, value_name = "PATH")]
    pub allowed_root: Option<PathBuf>,
    /// TOML configuration file.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Platform base URL.
    #[arg(long, value_name = "URL")]
    pub platform_url: Option<String>,
    /// Legacy direct-session mode (also accepted after `start`).
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// DEBUG, INFO, WARNING (or WARN), ERROR.
    #[arg(long, value_name = "LEVEL", value_parser = parse_log_level)]
    pub log_level: Option<LogLevel>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `start` options.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct StartArgs {
    /// Legacy direct-session mode; wins over the global option.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Allow shell commands (they can do anything your user account can do).
    #[arg(long)]
    pub enable_shell: bool,
    /// Allow computer use (not available in this build; never advertised).
    #[arg(long)]
    pub enable_computer_use: bool,
    /// Allow clipboard access (not available in this build).
    #[arg(long)]
    pub enable_clipboard: bool,
    /// Allow reading clipboard content the daemon did not write.
    #[arg(long)]
    pub enable_clipboard_read_foreign: bool,
    /// The recording design preview; `start` refuses to run with it.
    #[arg(long)]
    pub enable_recording: bool,
}

/// `demo` options.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct DemoArgs {
    /// Also run a shell command in the demo chat.
    #[arg(long)]
    pub enable_shell: bool,
}

/// The commands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Log in: authorize this machine in a browser (OAuth, PKCE) and store the tokens.
    Auth {
        /// Only print the authorization URL; do not try to open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Run the daemon.
    Start(StartArgs),
    /// Print the configuration summary.
    Status,
    /// Revoke the stored tokens on the platform, then delete them locally.
    Revoke,
    /// Check the machine; not available in this build.
    Doctor,
    /// Write the per-user autostart entry (launchd agent on macOS, systemd user unit on
    /// Linux/WSL2, Task Scheduler XML on Windows); prints how to activate it.
    Install {
        /// Start at login.
        #[arg(long)]
        at_login: bool,
    },
    /// Remove the autostart entry.
    Uninstall,
    /// Read, verify and export the audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Play a chat against an embedded loopback platform: no account, no network.
    Demo(DemoArgs),
}
