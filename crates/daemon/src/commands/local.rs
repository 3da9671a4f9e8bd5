//! The commands that steer a running daemon through its local control socket
//! ([`crate::ipc`]): `approve`, `deny`, `approvals`, `pause`, `resume`, `kill`, `console`, the
//! live part of `status`; and `policy check`, which needs no daemon.

use std::io::Write;
use std::path::Path;

use crate::error::EXIT_CONFIG;
use crate::error::EXIT_FAIL;
use crate::error::EXIT_OK;
use crate::ipc::ClientError;
use crate::ipc::Request;
use crate::ipc::Response;
use crate::ipc::StatusReport;
use crate::policy::Policy;

/// Exit status when no daemon runs (`status` and the steering commands): 3, as the LSB
/// `status` convention says for "not running".
pub const EXIT_NOT_RUNNING: u8 = 3;

/// Sends `r` and maps the answer to printed lines and an exit status.
fn send(
    socket: &Path,
    r: &Request,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Response, u8> {
    match crate::ipc::request(socket, r) {
        Ok(Response::Error { kind, message }) => {
            let _ = writeln!(err, "error: {message} ({kind:?})");
            Err(EXIT_FAIL)
        }
        Ok(resp) => Ok(resp),
        Err(e @ ClientError::NotRunning(_)) => {
            let _ = writeln!(err, "error: {e}\nhint: start it with `autogpt-shim start`");
            let _ = out.flush();
            Err(EXIT_NOT_RUNNING)
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            Err(EXIT_FAIL)
        }
    }
}

/// `approve ID` / `deny ID`.
pub fn decide(
    socket: &Path,
    id: u64,
    approve: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    match send(socket, &Request::Decide { id, approve }, out, err) {
        Ok(_) => {
            let _ = writeln!(
                out,
                "{} command {id}.",
                if approve { "Approved" } else { "Denied" }
            );
            EXIT_OK
        }
        Err(code) => code,
    }
}

/// `approve --always ID`: runs the command and adds a rule to the policy file that allows it
/// from now on.
pub fn always_allow(socket: &Path, id: u64, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match send(socket, &Request::AlwaysAllow { id }, out, err) {
        Ok(Response::RuleAdded { file, rules }) => {
            let _ = writeln!(out, "Approved command {id}.");
            if rules.is_empty() {
                let _ = writeln!(out, "{file} already allows it; no rule was added.");
            }
            for (line, rule) in rules {
                let _ = writeln!(out, "Added to {file}:{line}: allow {rule}");
            }
            EXIT_OK
        }
        Ok(other) => {
            let _ = writeln!(err, "error: unexpected answer {other:?}");
            EXIT_FAIL
        }
        Err(code) => code,
    }
}

/// `detach SESSION_ID`: ends that chat's runtime.
pub fn detach(socket: &Path, session_id: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let r = Request::Detach {
        session_id: session_id.to_owned(),
    };
    match send(socket, &r, out, err) {
        Ok(_) => {
            let _ = writeln!(out, "Detached chat {session_id}: its runtime ended.");
            EXIT_OK
        }
        Err(code) => code,
    }
}

/// `approvals [--json]`: the commands waiting for an answer.
pub fn list(socket: &Path, json: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match send(socket, &Request::ListApprovals, out, err) {
        Ok(Response::Approvals(list)) => {
            if json {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&list).unwrap_or_default()
                );
            } else if list.is_empty() {
                let _ = writeln!(out, "No command is waiting for approval.");
            } else {
                for p in list {
                    let _ = writeln!(
                        out,
                        "{}\tsession {}\t{} s left\t{}\n\twhy: {}",
                        p.id, p.session_id, p.seconds_left, p.command, p.reason
                    );
                }
            }
            EXIT_OK
        }
        Ok(other) => {
            let _ = writeln!(err, "error: unexpected answer {other:?}");
            EXIT_FAIL
        }
        Err(code) => code,
    }
}

/// `pause` / `resume`.
pub fn pause(socket: &Path, pause: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let r = if pause {
        Request::Pause
    } else {
        Request::Resume
    };
    match send(socket, &r, out, err) {
        Ok(_) => {
            let _ = writeln!(
                out,
                "{}",
                if pause {
                    "Paused: new operations are refused until `autogpt-shim resume`."
                } else {
                    "Resumed: operations are served again."
                }
            );
            EXIT_OK
        }
        Err(code) => code,
    }
}

/// `takeover [--timeout SECONDS]` (`Some(timeout)`) or `handback` (`None`).
pub fn takeover(
    socket: &Path,
    takeover: Option<Option<u64>>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let r = match takeover {
        Some(timeout_seconds) => Request::Takeover { timeout_seconds },
        None => Request::Handback,
    };
    match send(socket, &r, out, err) {
        Ok(_) => {
            let said = match takeover {
                Some(Some(s)) => format!(
                    "You hold the desktop: the agent's input is refused until `autogpt-shim handback` (or {s} s from now)."
                ),
                Some(None) => "You hold the desktop: the agent's input is refused until `autogpt-shim handback`.".to_owned(),
                None => "Handed back: the agent may use the desktop again.".to_owned(),
            };
            let _ = writeln!(out, "{said}");
            EXIT_OK
        }
        Err(code) => code,
    }
}

/// `kill`: ends every running command now.
pub fn kill(socket: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match send(socket, &Request::Kill, out, err) {
        Ok(Response::Killed(n)) => {
            let _ = writeln!(out, "Ended {n} running command(s) and their processes.");
            EXIT_OK
        }
        Ok(other) => {
            let _ = writeln!(err, "error: unexpected answer {other:?}");
            EXIT_FAIL
        }
        Err(code) => code,
    }
}

/// `console [--no-open]`: asks the daemon for a one-time login URL, prints it as the first
/// line of standard output, and (unless `--no-open`) opens it in the browser.
pub fn console(socket: &Path, open: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match send(socket, &Request::ConsoleUrl, out, err) {
        Ok(Response::ConsoleUrl(url)) => {
            let _ = writeln!(out, "{url}");
            let _ = writeln!(
                out,
                "This link logs in once and expires in two minutes; anyone who has it before you open it can use the console."
            );
            let _ = out.flush();
            if open && let Err(e) = open::that_detached(&url) {
                let _ = writeln!(
                    err,
                    "error: cannot open a browser: {e}\nhint: open the URL above yourself"
                );
            }
            EXIT_OK
        }
        Ok(other) => {
            let _ = writeln!(err, "error: unexpected answer {other:?}");
            EXIT_FAIL
        }
        Err(code) => code,
    }
}

/// The live state for `status`, or `None` when no daemon answers.
pub fn live_status(socket: &Path) -> Option<StatusReport> {
    match crate::ipc::request(socket, &Request::Status) {
        Ok(Response::Status(s)) => Some(*s),
        _ => None,
    }
}

/// `status --json`: the live state as JSON (docs/status.md), with `"running": true`; or
/// `{"schema": 1, "running": false}` and exit 3 when no daemon answers.
pub fn status_json(live: Option<&StatusReport>, out: &mut dyn Write) -> u8 {
    let value = match live {
        Some(s) => match serde_json::to_value(s) {
            Ok(serde_json::Value::Object(mut m)) => {
                m.insert("running".to_owned(), serde_json::Value::Bool(true));
                serde_json::Value::Object(m)
            }
            _ => serde_json::json!({ "schema": crate::ipc::STATUS_SCHEMA, "running": true }),
        },
        None => serde_json::json!({ "schema": crate::ipc::STATUS_SCHEMA, "running": false }),
    };
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&value).unwrap_or_default()
    );
    if live.is_some() {
        EXIT_OK
    } else {
        EXIT_NOT_RUNNING
    }
}

fn age(ms: u64) -> String {
    if ms < 10_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} s", ms / 1000)
    }
}

/// `status`: the live state for people.
pub fn print_status(s: &StatusReport, out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "Daemon: running (pid {}, version {}, up {} s){}",
        s.pid,
        s.version,
        s.uptime_seconds,
        if s.paused { ", PAUSED" } else { "" }
    );
    let _ = writeln!(out, "Shell commands: {}", s.sandbox.description);
    let _ = writeln!(
        out,
        "Command policy: {}",
        s.policy_file
            .as_deref()
            .unwrap_or("none (every command is allowed)")
    );
    let _ = writeln!(
        out,
        "Commands waiting for approval: {}",
        s.pending_approvals
    );
    if s.connections.is_empty() {
        let _ = writeln!(out, "Connections: none");
    } else {
        let _ = writeln!(out, "Connections:");
    }
    for c in &s.connections {
        let who = match (&c.session_id, &c.folder) {
            (Some(sid), Some(f)) => format!("chat {sid} in {f}"),
            (Some(sid), None) => format!("chat {sid}"),
            _ => "control connection".to_owned(),
        };
        let _ = writeln!(
            out,
            "  {who}: {}{}",
            match c.words() {
                w if w == c.state => format!("{w} for {} s", c.state_seconds),
                w => format!("{w} ({} for {} s)", c.state, c.state_seconds),
            },
            if c.granted_capabilities.is_empty() {
                String::new()
            } else {
                format!("; granted {}", c.granted_capabilities.join(", "))
            }
        );
        if let Some(why) = &c.last_disconnect {
            let _ = writeln!(out, "    last disconnect: {why}");
        }
    }
    let d = &s.desktop;
    if let Some(by) = &d.held_by {
        let _ = writeln!(
            out,
            "Desktop: taken over by the local user ({by}); agent input is refused{}",
            d.seconds_left
                .map(|l| format!(" for {l} s more"))
                .unwrap_or_else(|| " until `autogpt-shim handback`".to_owned())
        );
    }
    if !d.viewers.is_empty() {
        let _ = writeln!(
            out,
            "Live views of the desktop open: {} (web console)",
            d.viewers.len()
        );
    }
    if s.operations.is_empty() {
        let _ = writeln!(out, "Operations in flight: none");
    } else {
        let _ = writeln!(out, "Operations in flight:");
    }
    for o in &s.operations {
        let _ = writeln!(
            out,
            "  #{} {} {} ({}{})",
            o.id,
            o.kind,
            o.summary,
            age(o.age_ms),
            o.session_id
                .as_deref()
                .map(|sid| format!(", chat {sid}"))
                .unwrap_or_default()
        );
    }
    let r = &s.command_rate;
    let _ = writeln!(
        out,
        "Command rate: {} of {} in the last {} s; {} of {} running",
        r.in_window, r.max_per_window, r.window_seconds, r.running, r.max_concurrent
    );
    let a = &s.audit;
    let _ = writeln!(
        out,
        "Audit log: {} (last seq {}, chain {}{})",
        a.path,
        a.last_seq
            .map_or_else(|| "none".to_owned(), |q| q.to_string()),
        a.chain,
        a.problem
            .as_deref()
            .map(|p| format!(": {p}"))
            .unwrap_or_default()
    );
    if s.last_errors.is_empty() {
        let _ = writeln!(out, "Last errors: none");
    } else {
        let _ = writeln!(out, "Last errors (newest last):");
    }
    for e in &s.last_errors {
        let _ = writeln!(
            out,
            "  {} {}{}: {} {}",
            e.at_unix,
            e.source,
            e.session_id
                .as_deref()
                .map(|sid| format!(" (chat {sid})"))
                .unwrap_or_default(),
            e.code,
            e.message
        );
    }
}

/// `policy check [--json] [--policy FILE] (--command STRING | -- ARGV...)`.
pub fn policy_check(
    policy_file: Option<&Path>,
    command: Option<&str>,
    argv: &[String],
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let policy = match policy_file {
        Some(p) => match Policy::load(p) {
            Ok(p) => p,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_CONFIG;
            }
        },
        None => Policy::allow_all(),
    };
    let verdict = match (command, argv.is_empty()) {
        (Some(c), true) => policy.check_command(c),
        (None, false) => policy.check_argv(argv),
        _ => {
            let _ = writeln!(
                err,
                "error: give either --command \"STRING\" or -- ARGV...\nhint: autogpt-shim policy check --command \"git push\""
            );
            return crate::error::EXIT_USAGE;
        }
    };
    if json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&verdict).unwrap_or_default()
        );
    } else {
        let _ = writeln!(out, "{}", verdict.decision);
        if let (Some(r), Some(l)) = (&verdict.rule, verdict.rule_line) {
            let _ = writeln!(out, "rule: line {l}: {r}");
        }
        if let Some(j) = &verdict.justification {
            let _ = writeln!(out, "justification: {j}");
        }
        let _ = writeln!(out, "reason: {}", verdict.reason);
        if policy.path.is_none() {
            let _ = writeln!(out, "(no command_policy_file: every command is allowed)");
        }
    }
    EXIT_OK
}
