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
    /// Allow computer use (screen, input, windows, apps; Linux needs an X11 session).
    #[arg(long)]
    pub enable_computer_use: bool,
    /// Allow clipboard access during computer use.
    #[arg(long)]
    pub enable_clipboard: bool,
    /// Allow reading clipboard content the daemon did not write.
    #[arg(long)]
    pub enable_clipboard_read_foreign: bool,
    /// The recording design preview; `start` refuses to run with it.
    #[arg(long)]
    pub enable_recording: bool,
    /// Confinement of shell commands: off, workspace-write (the default where supported)
    /// or read-only.
    #[arg(long, value_name = "MODE")]
    pub shell_sandbox: Option<String>,
    /// Network for shell commands: allow (the default) or deny.
    #[arg(long, value_name = "MODE")]
    pub shell_network: Option<String>,
    /// The display computer use drives: user (the default), isolated (a private X server
    /// the daemon starts; Linux) or an X display name such as :77.
    #[arg(long, value_name = "MODE")]
    pub computer_use_display: Option<String>,
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
    /// What the running daemon is doing (connections, chats, operations, audit log), and the
    /// configuration summary.
    Status {
        /// Print the live state as JSON (shape: docs/status.md).
        #[arg(long)]
        json: bool,
    },
    /// Revoke the stored tokens on the platform, then delete them locally.
    Revoke,
    /// Check the machine: configuration, credentials, audit log, platform, desktop, hardware.
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
    /// Run a command that waits for your approval (see `approvals`).
    Approve {
        /// The approval id `approvals` shows.
        id: u64,
        /// Also allow this exact command from now on: adds an `argv` allow rule to the
        /// `command_policy_file` (its text and comments are kept).
        #[arg(long)]
        always: bool,
    },
    /// Refuse a command that waits for your approval; it is never run.
    Deny {
        /// The approval id `approvals` shows.
        id: u64,
    },
    /// List the commands waiting for your approval.
    Approvals {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Refuse new operations until `resume` (running commands go on).
    Pause,
    /// Serve operations again after `pause`.
    Resume,
    /// End every running command and its whole process tree now.
    Kill,
    /// Take the computer-use desktop over from the agent (docs/console.md): its input
    /// actions, window focus, app launches and clipboard writes are refused until
    /// `handback`; screenshots stay allowed.
    Takeover {
        /// Hand the desktop back on its own after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u64>,
    },
    /// Give the desktop back to the agent after `takeover`.
    Handback,
    /// Replace this installation's binaries with the newest signed release (docs/update.md).
    Update {
        /// Only report the installed and the available version.
        #[arg(long)]
        check: bool,
        /// Install the offered release even when it is older than this one.
        #[arg(long)]
        allow_downgrade: bool,
        /// The release folder to update from (default: the project's latest release).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// Open the local web console of the running daemon (docs/console.md): prints a
    /// one-time login URL and opens it in the browser.
    Console {
        /// Print the URL (the first line of standard output) and open no browser.
        #[arg(long)]
        no_open: bool,
    },
    /// The command policy (`command_policy_file`).
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// End a chat's runtime on this machine, as the platform's detach does (machine control
    /// mode); the chat needs its folder granted again to continue.
    Detach {
        /// The chat's session id (as `status` shows it).
        session_id: String,
    },
}

/// `policy` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum PolicyCommand {
    /// Print what the policy decides for a command, and which rule decided.
    Check {
        /// Print JSON (`decision`, `rule_line`, `rule`, `justification`, `reason`).
        #[arg(long)]
        json: bool,
        /// The policy file (default: the configured `command_policy_file`).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// A shell command string.
        #[arg(long, value_name = "STRING")]
        command: Option<String>,
        /// An argv run without a shell (after `--`).
        #[arg(last = true, value_name = "ARGV")]
        argv: Vec<String>,
    },
}
