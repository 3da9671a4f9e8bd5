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

/// A report with every field present, as docs/status.md shows it.
fn sample_status() -> shim_daemon::ipc::StatusReport {
    use shim_daemon::ipc::*;
    StatusReport {
        schema: STATUS_SCHEMA,
        pid: 4242,
        version: "0.1.0".into(),
        uptime_seconds: 3600,
        mode: "machine_control".into(),
        paused: false,
        session_id: None,
        policy_file: Some("/home/ada/.config/autogpt-shim/policy.toml".into()),
        pending_approvals: 1,
        sandbox: SandboxStatus {
            mode: "workspace-write".into(),
            network: "allow".into(),
            description: "shell sandbox workspace-write (landlock ABI 7), network allow".into(),
        },
        connections: vec![
            ConnectionStatus {
                kind: "control".into(),
                session_id: None,
                folder: None,
                state: "connected".into(),
                state_seconds: 3590,
                granted_capabilities: vec!["directory_browse".into()],
                connects: 1,
                last_disconnect: None,
                problem: None,
                retry_in_seconds: None,
            },
            ConnectionStatus {
                kind: "chat".into(),
                session_id: Some("3f0c9a52-chat".into()),
                folder: Some("/home/ada/projects/site".into()),
                state: "connected".into(),
                state_seconds: 120,
                granted_capabilities: vec!["files".into(), "shell".into()],
                connects: 2,
                last_disconnect: Some("the connection was lost".into()),
                problem: None,
                retry_in_seconds: None,
            },
        ],
        operations: vec![OperationStatus {
            id: 17,
            session_id: Some("3f0c9a52-chat".into()),
            request_id: "b1e2c3d4-request".into(),
            kind: "EXECUTE_COMMAND".into(),
            summary: "npm test".into(),
            age_ms: 5300,
            killable: true,
        }],
        command_rate: RateStatus {
            window_seconds: 60,
            in_window: 4,
            max_per_window: 60,
            running: 1,
            max_concurrent: 10,
        },
        audit: AuditStatus {
            path: "/home/ada/.local/state/autogpt-shim/audit.log".into(),
            last_seq: Some(1234),
            chain: "verified".into(),
            problem: None,
            records_written: 87,
            bytes: 456789,
        },
        last_errors: vec![ErrorStatus {
            at_unix: 1764633600,
            session_id: Some("3f0c9a52-chat".into()),
            source: "FILE_READ".into(),
            code: "PATH_NOT_FOUND".into(),
            message: "No such file: notes.txt".into(),
        }],
        desktop: DesktopStatus {
            held_by: Some("console".into()),
            held_since_unix: Some(1764633500),
            seconds_left: Some(240),
            last_action: Some(ActionStatus {
                session_id: Some("3f0c9a52-chat".into()),
                action: "left_click".into(),
                point: Some([640, 412]),
                chord: None,
                typed_chars: None,
                age_ms: 2100,
            }),
            viewers: vec![ViewerStatus {
                id: 1,
                since_unix: 1764633450,
                frames: 312,
            }],
        },
    }
}

/// docs/status.md shows `status --json` of [`sample_status`] byte for byte between its
/// markers: a renamed, removed or added field fails here until the page (and, for a change
/// that is not an addition, `STATUS_SCHEMA`) is updated.
#[test]
fn status_json_example_matches_the_report() {
    let mut out = Vec::new();
    let code = shim_daemon::commands::local::status_json(Some(&sample_status()), &mut out);
    assert_eq!(code, 0);
    let json = String::from_utf8(out).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/status.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (
        "<!-- status-example -->\n```json\n",
        "```\n<!-- /status-example -->",
    );
    let a = page
        .find(start)
        .expect("docs/status.md lost its example markers")
        + start.len();
    let b = page[a..]
        .find(end)
        .expect("docs/status.md lost its example markers")
        + a;
    if std::env::var_os("SHIM_UPDATE_DOCS").is_some() {
        let updated = format!("{}{json}{}", &page[..a], &page[b..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &page[a..b],
        json,
        "docs/status.md's example is not what `status --json` prints.\n\
         hint: run `SHIM_UPDATE_DOCS=1 cargo test -p shim-daemon --test all docs` and commit it; \
         renaming or removing a field breaks users: raise STATUS_SCHEMA and say so in the page"
    );
}
