//! The audit log in plain words for the console: the last records of the current file,
//! each turned into one sentence a person can read. The log itself stays the proof; this is
//! only a view of it (`shim-audit verify` checks the chain, `status` shows whether it holds).

use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// How many records the console shows.
pub(crate) const SHOWN: usize = 200;

/// How much of the file's end is read to find them (records are small; a longer record is
/// shown as "(record too long to show)").
const TAIL_BYTES: u64 = 512 * 1024;

/// One record in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Line {
    /// The record's `seq`.
    pub(crate) seq: i64,
    /// `HH:MM:SS` in UTC.
    pub(crate) time: String,
    /// The chat's session, if any.
    pub(crate) session_id: Option<String>,
    /// The op name, as in the log.
    pub(crate) op: String,
    /// Whether it succeeded.
    pub(crate) ok: bool,
    /// The sentence.
    pub(crate) text: String,
}

/// The last [`SHOWN`] records of `path`, oldest first (empty if the file cannot be read).
pub(crate) fn tail(path: &Path) -> Vec<Line> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        // The first line is probably cut.
        lines.remove(0);
    }
    let from = lines.len().saturating_sub(SHOWN);
    lines[from..]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| line(&v))
        .collect()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn clock(ts: f64) -> String {
    if !ts.is_finite() || ts < 0.0 {
        return String::new();
    }
    let secs = ts as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// What a command record ran: its argv or its command string.
fn command(d: &Value) -> String {
    if let Some(argv) = d.get("argv").and_then(Value::as_array) {
        return argv
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" ");
    }
    s(d, "command").to_owned()
}

/// One record as a [`Line`].
pub(crate) fn line(v: &Value) -> Line {
    let op = s(v, "op");
    let d = v.get("details").cloned().unwrap_or(Value::Null);
    let r = v.get("result").cloned().unwrap_or(Value::Null);
    let ok = r.get("ok").and_then(Value::as_bool).unwrap_or(true);
    let path = s(&d, "path");
    let by = s(&d, "decided_by");
    let mut text = match op {
        "SHIM_START" => "The daemon started.".to_owned(),
        "SHIM_STOP" => "The daemon stopped.".to_owned(),
        "WS_CONNECTED" => "Connected to the platform.".to_owned(),
        "WS_DISCONNECTED" => format!("Disconnected from the platform ({}).", s(&d, "reason")),
        "CONFIG_RELOADED" => {
            let caps: Vec<&str> = d
                .get("granted_capabilities")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!("The platform granted: {}.", caps.join(", "))
        }
        "SESSION_REVOKED" => format!("The platform revoked the session ({}).", s(&d, "reason")),
        "EXECUTE_COMMAND" => {
            let exit = r
                .get("exit_code")
                .and_then(Value::as_i64)
                .map(|c| format!(", exit code {c}"))
                .unwrap_or_default();
            match command(&d) {
                c if c.is_empty() => "A command was asked for.".to_owned(),
                c => format!("Ran the command `{c}`{exit}."),
            }
        }
        "COMMAND_KILLED" => format!("The local user ({by}) ended a running command."),
        "COMMAND_POLICY" => match (s(&d, "decision"), s(&d, "answer")) {
            ("forbid", _) => "The command policy forbade a command.".to_owned(),
            ("prompt", "approved") => format!("A command was approved (by {by})."),
            ("prompt", "denied") => format!("A command was denied (by {by})."),
            ("prompt", "timed_out") => "A command waited for approval and timed out.".to_owned(),
            (decision, _) => format!("Command policy: {decision}."),
        },
        "LOCAL_CONTROL" => match s(&d, "action") {
            "pause" => format!("The local user paused the executor ({by})."),
            "resume" => format!("The local user resumed the executor ({by})."),
            "kill" => format!("The local user ended every running command ({by})."),
            "kill_operation" => format!("The local user ended one operation ({by})."),
            other => format!("Local action {other} ({by})."),
        },
        "FILE_READ" => format!("Read the file {path}."),
        "FILE_WRITE" => format!("Wrote the file {path}."),
        "FILE_STAT" => format!("Looked at {path}."),
        "FILE_LIST" => format!("Listed the folder {path}."),
        "FILE_DELETE" => format!("Deleted {path}."),
        "FILE_MOVE" => format!("Moved {} to {}.", s(&d, "src"), s(&d, "dst")),
        "ATTACH_SESSION" => "A chat was given a folder.".to_owned(),
        "SESSION_ALLOWED_ROOT_SET" => {
            format!("A chat was given the folder {}.", s(&d, "allowed_root"))
        }
        "DIRECTORY_LIST" => "The platform browsed your folders to choose one.".to_owned(),
        "ACTIVATE_SESSION" => "A chat was activated.".to_owned(),
        "DETACH_SESSION" => "A chat was detached from its folder.".to_owned(),
        "SCREENSHOT" | "SCREENSHOT_REQUEST" => "Took a screenshot.".to_owned(),
        other => format!("{}.", other.replace('_', " ").to_lowercase()),
    };
    if !ok {
        let code = r
            .get("error_code")
            .and_then(Value::as_str)
            .unwrap_or("error");
        text.push_str(&format!(" Refused or failed: {code}."));
    }
    Line {
        seq: v.get("seq").and_then(Value::as_i64).unwrap_or(-1),
        time: clock(v.get("ts").and_then(Value::as_f64).unwrap_or(-1.0)),
        session_id: v
            .get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && *s != shim_audit::NO_ID)
            .map(str::to_owned),
        op: op.to_owned(),
        ok,
        text,
    }
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
