//! `autogpt-shim`: the AutoGPT local executor daemon and its command line
//! (AUDIT_AUTH_CLI.md 5). Thin on purpose: parse the arguments and call
//! [`shim_daemon::run`], which returns the exit code of 5.2, after the pre-main hardening
//! of [`shim_daemon::runtime::harden`].

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let hardening = shim_daemon::runtime::harden::apply();
    let cli = shim_daemon::cli::Cli::parse();
    for problem in hardening {
        let _ = writeln!(std::io::stderr(), "warning: {problem}");
    }
    ExitCode::from(shim_daemon::run(cli))
}
