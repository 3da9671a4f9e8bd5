//! `shim-audit`: the audit log tool (AUDIT_AUTH_CLI.md 5.3.7-5.3.8).
//!
//! Thin on purpose: parse arguments, print the [H-17] warning, call
//! [`shim_audit::cli::run`] with the credential-store key loader. `autogpt-shim audit ...`
//! calls the same function.

use std::io::IsTerminal;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use shim_audit::cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{}", cli::EXPERIMENTAL_WARNING);
    let Some(log_path) = cli::resolve_log_path(args.log_path) else {
        let _ = writeln!(
            stderr,
            "Cannot determine the audit log location: no home directory."
        );
        let _ = writeln!(
            stderr,
            "hint: pass --log-path or set AUTOGPT_SHIM_AUDIT_LOG_PATH"
        );
        return ExitCode::from(cli::EXIT_USAGE);
    };
    let machine_id = std::env::var("AUTOGPT_SHIM_MACHINE_ID")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| shim_audit::NO_ID.to_owned());
    let ctx = cli::Context {
        log_path,
        keys: &shim_auth::audit_key::StoreKeyLoader,
        machine_id,
        shim_version: env!("CARGO_PKG_VERSION").to_owned(),
        color: cli::color_wanted(std::io::stdout().is_terminal()),
    };
    let mut stdout = std::io::stdout().lock();
    let mut stdin = std::io::stdin().lock();
    let mut io = cli::Io {
        stdout: &mut stdout,
        stderr: &mut stderr,
        stdin: &mut stdin,
    };
    ExitCode::from(cli::run(&args.command, &ctx, &mut io))
}
