//! `autogpt-shim`: the AutoGPT local executor daemon and its command line
//! (AUDIT_AUTH_CLI.md 5). Thin on purpose: parse the arguments and call
//! [`shim_daemon::run`], which returns the exit code of 5.2.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = shim_daemon::cli::Cli::parse();
    ExitCode::from(shim_daemon::run(cli))
}
