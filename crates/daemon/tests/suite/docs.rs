//! The generated references in docs/reference/ match the code: the command line (from the
//! clap definition, as `--help` prints it) and the configuration keys (from the key table).
//! After changing either, regenerate with
//! `SHIM_UPDATE_DOCS=1 cargo test -p shim-daemon --test all docs` and commit the result.

use std::fmt::Write as _;
use std::path::Path;

use clap::CommandFactory;

fn commands_md() -> String {
    let mut out = String::from(
        "# Command reference\n\n<!-- Generated from the code by crates/daemon/tests/suite/docs.rs; do not edit. -->\n\n\
This is what `autogpt-shim [COMMAND] --help` prints. The user guide is [daemon.md](../daemon.md).\n",
    );
    let mut root = shim_daemon::cli::Cli::command();
    root.build();
    fn walk(cmd: &clap::Command, path: &str, out: &mut String) {
        let mut c = cmd.clone();
        let _ = write!(
            out,
            "\n## `{path}`\n\n```text\n{}```\n",
            c.render_long_help().to_string().trim_end().to_owned() + "\n"
        );
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() {
                continue;
            }
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    walk(&root, "autogpt-shim", &mut out);
    out
}

fn config_md() -> String {
    let mut out = String::from(
        "# Configuration reference\n\n<!-- Generated from the code by crates/daemon/tests/suite/docs.rs; do not edit. -->\n\n\
Every key can be set in the config file (TOML), or with its environment variable; the command \
line wins over the environment, which wins over the file (see [daemon.md](../daemon.md) for \
what each setting does and the install pages for where the file lives).\n\n\
| key | type | environment variable |\n|---|---|---|\n",
    );
    for (key, ty, env) in shim_daemon::config::reference() {
        let _ = writeln!(out, "| `{key}` | {ty} | `{env}` |");
    }
    out
}

fn check(name: &str, generated: String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/reference")
        .join(name);
    if std::env::var_os("SHIM_UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != generated {
        let line = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || current.lines().count().min(generated.lines().count()) + 1,
                |i| i + 1,
            );
        panic!(
            "docs/reference/{name} is out of date (first difference at line {line}).\n\
             hint: run `SHIM_UPDATE_DOCS=1 cargo test -p shim-daemon --test all docs` and commit it"
        );
    }
}

#[test]
fn command_reference_matches_the_cli() {
    check("commands.md", commands_md());
}

#[test]
fn config_reference_matches_the_key_table() {
    check("config.md", config_md());
}
