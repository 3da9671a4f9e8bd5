//! The `audit` commands of AUDIT_AUTH_CLI.md 5.3.7 and 5.3.8, shared by the `shim-audit`
//! binary and `autogpt-shim audit ...`.
//!
//! The caller parses [`AuditCommand`] (embed it as a clap subcommand), resolves the log path,
//! supplies a [`KeyLoader`] that loads the key without ever creating one (1.16), and calls
//! [`run`] with the process's streams. All output goes through [`Io`], so tests and the daemon
//! can capture it. Exit codes follow 5.2.

use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::export;
use crate::files;
use crate::key::AuditKey;
use crate::parse;
use crate::verify;
use crate::verify::FileReport;
use crate::writer::AuditLog;
use crate::writer::RotateReason;
use crate::writer::WriterConfig;

/// The experimental-software warning every command prints to stderr first ([H-17]).
pub const EXPERIMENTAL_WARNING: &str = "warning: autogpt-shim is experimental software. When shell access is enabled, \
commands run unrestricted with your user account's permissions.";

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: the operation failed or found a problem.
pub const EXIT_FAIL: u8 = 1;
/// Exit code: usage error, or the audit key could not be loaded.
pub const EXIT_USAGE: u8 = 2;

/// The audit subcommands.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum AuditCommand {
    /// Print one summary line per record, then follow appended records.
    Tail {
        /// Exit after the existing records instead of following the file.
        #[arg(long)]
        no_follow: bool,
    },
    /// Pretty-print the record with this seq (current file first, then rotated files).
    Show {
        /// The record's seq.
        seq: i64,
    },
    /// Verify the HMAC chain of one file.
    Verify {
        /// The file to verify (default: the current log).
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
        /// Read the key as hex from this file (`-` for stdin) instead of the credential store.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Verify the current file, every rotated file and the links between them.
    VerifyAll {
        /// Read the key as hex from this file (`-` for stdin) instead of the credential store.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a signed ZIP bundle of every log file.
    Export {
        /// Where to write the bundle (default ./audit-export-<local time>.zip).
        // The doc comment is the CLI help text, not HTML.
        #[allow(rustdoc::invalid_html_tags)]
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Print the audit key as hex (or write it to a new file). Anyone holding it can forge
    /// records.
    ExportKey {
        /// Write the key to this new file (mode 0600) instead of stdout.
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Rotate the current file now (refused while a running shim holds the log).
    Rotate,
    /// Delete rotated files whose newest record is older than the given age.
    Prune {
        /// Age such as 90d, 12h, 30m, 45s.
        #[arg(long, value_name = "DURATION", default_value = "90d")]
        older_than: String,
    },
}

/// The standalone `shim-audit` command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "shim-audit",
    version,
    about = "Read, verify and export the AutoGPT local executor's audit log."
)]
pub struct Cli {
    /// The current audit log file (default: AUTOGPT_SHIM_AUDIT_LOG_PATH, else the per-OS
    /// default of the specification).
    #[arg(long, global = true, value_name = "PATH")]
    pub log_path: Option<PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: AuditCommand,
}

/// Loads the audit key for a command. Implementations MUST NOT create a key (1.16).
pub trait KeyLoader {
    /// The stored key, or a reason it could not be loaded (absent, unreadable, corrupt).
    /// The reason must not contain the key or any other secret.
    fn load_audit_key(&self) -> Result<AuditKey, String>;
}

/// What the commands need besides their arguments.
pub struct Context<'a> {
    /// The current log file.
    pub log_path: PathBuf,
    /// Where the key comes from when no `--key-file` is given.
    pub keys: &'a dyn KeyLoader,
    /// `machine_id` for records written by `rotate`.
    pub machine_id: String,
    /// `shim_version` for records written by `rotate`.
    pub shim_version: String,
    /// Colour human output (only when stdout is a terminal and NO_COLOR is unset).
    pub color: bool,
}

/// The process streams, injectable for tests.
pub struct Io<'a> {
    /// Data.
    pub stdout: &'a mut dyn Write,
    /// Messages, warnings, hints.
    pub stderr: &'a mut dyn Write,
    /// Read by `--key-file -`.
    pub stdin: &'a mut dyn Read,
}

/// The log path: `explicit` (flag or config), else `AUTOGPT_SHIM_AUDIT_LOG_PATH` if set and
/// non-empty, else the per-OS default (1.2).
pub fn resolve_log_path(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit
        .filter(|p| !p.as_os_str().is_empty())
        .or_else(|| {
            std::env::var_os("AUTOGPT_SHIM_AUDIT_LOG_PATH")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(files::default_log_path)
}

/// Whether human output should be coloured: stdout is a terminal and `NO_COLOR` is unset.
pub fn color_wanted(stdout_is_terminal: bool) -> bool {
    stdout_is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Runs one command and returns its exit code (5.2).
pub fn run(cmd: &AuditCommand, ctx: &Context<'_>, io: &mut Io<'_>) -> u8 {
    let r = match cmd {
        AuditCommand::Tail { no_follow } => tail(ctx, io, !*no_follow),
        AuditCommand::Show { seq } => show(ctx, io, *seq),
        AuditCommand::Verify {
            file,
            key_file,
            json,
        } => verify_one(ctx, io, file.as_deref(), key_file.as_deref(), *json),
        AuditCommand::VerifyAll { key_file, json } => {
            verify_all(ctx, io, key_file.as_deref(), *json)
        }
        AuditCommand::Export { output } => export_cmd(ctx, io, output.as_deref()),
        AuditCommand::ExportKey { output } => export_key(ctx, io, output.as_deref()),
        AuditCommand::Rotate => rotate(ctx, io),
        AuditCommand::Prune { older_than } => prune(ctx, io, older_than),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(io.stderr, "{}", e.message);
            if let Some(h) = e.hint {
                let _ = writeln!(io.stderr, "hint: {h}");
            }
            e.code
        }
    }
}

/// A failed command: message, optional hint, exit code.
struct Fail {
    message: String,
    hint: Option<String>,
    code: u8,
}

fn fail(code: u8, message: impl Into<String>, hint: Option<&str>) -> Fail {
    Fail {
        message: message.into(),
        hint: hint.map(str::to_owned),
        code,
    }
}

type CmdResult = Result<u8, Fail>;

fn not_found(path: &Path) -> Fail {
    fail(
        EXIT_FAIL,
        format!("Audit log not found: {}", path.display()),
        Some(
            "the daemon creates the log when it starts; pass --log-path or set AUTOGPT_SHIM_AUDIT_LOG_PATH for another location",
        ),
    )
}

fn load_key(ctx: &Context<'_>, io: &mut Io<'_>, key_file: Option<&Path>) -> Result<AuditKey, Fail> {
    let loaded = match key_file {
        Some(p) => read_key_file(p, io),
        None => ctx.keys.load_audit_key(),
    };
    loaded.map_err(|reason| {
        fail(
            EXIT_USAGE,
            format!("Could not load audit key: {reason}"),
            Some("the key is created by `autogpt-shim start`; check AUTOGPT_SHIM_CREDENTIAL_STORE and AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE, or pass --key-file"),
        )
    })
}

fn read_key_file(p: &Path, io: &mut Io<'_>) -> Result<AuditKey, String> {
    let mut text = zeroize::Zeroizing::new(String::new());
    if p == Path::new("-") {
        io.stdin
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the key from stdin: {e}"))?;
    } else {
        let f = std::fs::File::open(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        // A key file is a few dozen bytes; refuse to slurp anything huge.
        f.take(64 * 1024)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    }
    AuditKey::from_hex(&text)
        .map_err(|e| format!("{} does not hold a usable key: {e}", display_key_src(p)))
}

fn display_key_src(p: &Path) -> String {
    if p == Path::new("-") {
        "stdin".to_owned()
    } else {
        p.display().to_string()
    }
}

fn paint(ctx: &Context<'_>, code: &str, text: &str) -> String {
    if ctx.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

// ---------------------------------------------------------------- tail

fn summary_line(ctx: &Context<'_>, line: &[u8]) -> Option<String> {
    if files::is_blank(line) {
        return None;
    }
    let parsed = parse::parse(line)
        .ok()
        .filter(|n| matches!(n, parse::Node::Object(_)));
    let Some(node) = parsed else {
        return Some(format!(
            "{} {}",
            paint(ctx, "33", "[unparseable]"),
            String::from_utf8_lossy(line).trim_end_matches('\r')
        ));
    };
    let seq = match node.get("seq") {
        Some(parse::Node::Int(t)) => (*t).to_owned(),
        Some(other) => {
            let mut v = Vec::new();
            parse::write_canonical_node(&mut v, other, None);
            String::from_utf8_lossy(&v).into_owned()
        }
        None => "?".to_owned(),
    };
    let op = node.get("op").and_then(parse::Node::as_str).unwrap_or("?");
    let result = node.get("result");
    let ok = result
        .and_then(|r| r.get("ok"))
        .and_then(parse::Node::as_bool)
        .unwrap_or(false);
    let marker = if ok {
        paint(ctx, "32", "ok")
    } else {
        let code = result
            .and_then(|r| r.get("error_code"))
            .and_then(parse::Node::as_str)
            .unwrap_or("None");
        paint(ctx, "31", &format!("err:{code}"))
    };
    Some(format!("seq={seq:>5}  {op:<22}  {marker}"))
}

fn print_lines(ctx: &Context<'_>, io: &mut Io<'_>, data: &[u8]) -> std::io::Result<()> {
    for line in data.split(|&c| c == b'\n') {
        if let Some(s) = summary_line(ctx, line) {
            writeln!(io.stdout, "{s}")?;
        }
    }
    io.stdout.flush()
}

fn file_identity(m: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        m.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        0
    }
}

fn tail(ctx: &Context<'_>, io: &mut Io<'_>, follow: bool) -> CmdResult {
    let path = &ctx.log_path;
    let io_err = |e: std::io::Error| {
        fail(
            EXIT_FAIL,
            format!("Cannot read {}: {e}", path.display()),
            None,
        )
    };
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(path)),
        Err(e) => return Err(io_err(e)),
    };
    let mut ident = file.metadata().map(|m| file_identity(&m)).map_err(io_err)?;
    let mut pending: Vec<u8> = Vec::new();
    let mut offset: u64 = 0;
    loop {
        let mut chunk = Vec::new();
        file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
        file.read_to_end(&mut chunk).map_err(io_err)?;
        offset += chunk.len() as u64;
        pending.extend_from_slice(&chunk);
        if let Some(i) = pending.iter().rposition(|&c| c == b'\n') {
            print_lines(ctx, io, &pending[..i]).map_err(io_err)?;
            pending.drain(..=i);
        }
        if !follow {
            if !pending.is_empty() {
                print_lines(ctx, io, &pending).map_err(io_err)?;
            }
            return Ok(EXIT_OK);
        }
        std::thread::sleep(Duration::from_millis(500));
        // [H-18]: follow the new current file after a rotation.
        if let Ok(m) = std::fs::metadata(path)
            && (file_identity(&m) != ident || m.len() < offset)
            && let Ok(f) = std::fs::File::open(path)
        {
            // Drain what the old file got before it was renamed.
            let mut rest = Vec::new();
            if file.seek(SeekFrom::Start(offset)).is_ok() && file.read_to_end(&mut rest).is_ok() {
                pending.extend_from_slice(&rest);
                print_lines(ctx, io, &pending).map_err(io_err)?;
            }
            pending.clear();
            file = f;
            ident = file_identity(&m);
            offset = 0;
        }
    }
}

// ---------------------------------------------------------------- show

fn show(ctx: &Context<'_>, io: &mut Io<'_>, seq: i64) -> CmdResult {
    let path = &ctx.log_path;
    let mut candidates = Vec::new();
    if path.is_file() {
        candidates.push(path.clone());
    }
    candidates.extend(files::list_rotated(path).unwrap_or_default());
    for p in &candidates {
        let Ok(data) = std::fs::read(p) else { continue };
        for line in data.split(|&c| c == b'\n') {
            let Ok(node) = parse::parse(line) else {
                continue;
            };
            if node.get("seq").and_then(parse::Node::as_i64) == Some(seq) {
                let mut out = Vec::new();
                parse::write_pretty(&mut out, &node, 0);
                let mut w = || -> std::io::Result<()> {
                    writeln!(io.stdout, "# from {}", files::file_name(p))?;
                    io.stdout.write_all(&out)?;
                    writeln!(io.stdout)
                };
                w().map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
                return Ok(EXIT_OK);
            }
        }
    }
    Err(fail(
        EXIT_FAIL,
        format!(
            "No record with seq={seq} in {} or rotated files.",
            path.display()
        ),
        None,
    ))
}

// ---------------------------------------------------------------- verify

/// The stable `--json` shape of one file (5.3.7).
#[derive(Serialize)]
struct FileJson<'a> {
    file: String,
    ok: bool,
    last_seq: Option<i64>,
    last_hmac: Option<&'a str>,
    violations: &'a [crate::verify::Violation],
}

fn file_json(r: &FileReport) -> FileJson<'_> {
    FileJson {
        file: r.name(),
        ok: r.is_clean(),
        last_seq: r.last_seq,
        last_hmac: r.last_hmac.as_deref(),
        violations: &r.violations,
    }
}

fn print_report(ctx: &Context<'_>, out: &mut dyn Write, r: &FileReport) -> std::io::Result<()> {
    if r.is_clean() {
        writeln!(out, "{}: {}", r.name(), paint(ctx, "32", "OK"))?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: {}",
        r.name(),
        paint(ctx, "31", &format!("{} violation(s)", r.violations.len()))
    )?;
    for v in &r.violations {
        let seq = v.seq.map_or_else(|| "?".to_owned(), |s| s.to_string());
        writeln!(
            out,
            "  {} seq={seq} line={}: {}",
            paint(ctx, "31", &format!("[{}]", v.kind.as_str())),
            v.line,
            v.message
        )?;
    }
    Ok(())
}

fn write_json(io: &mut Io<'_>, v: &impl Serialize) -> Result<(), Fail> {
    let s = serde_json::to_string(v).map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
    writeln!(io.stdout, "{s}").map_err(|e| fail(EXIT_FAIL, e.to_string(), None))
}

fn verify_one(
    ctx: &Context<'_>,
    io: &mut Io<'_>,
    file: Option<&Path>,
    key_file: Option<&Path>,
    json: bool,
) -> CmdResult {
    let target = file.unwrap_or(&ctx.log_path);
    if !target.is_file() {
        return Err(not_found(target));
    }
    let key = load_key(ctx, io, key_file)?;
    let report = verify::verify_file(target, &key).map_err(|e| {
        fail(
            EXIT_FAIL,
            format!("Cannot read {}: {e}", target.display()),
            None,
        )
    })?;
    if json {
        write_json(io, &file_json(&report))?;
    } else {
        print_report(ctx, io.stdout, &report).map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
    }
    Ok(if report.is_clean() {
        EXIT_OK
    } else {
        EXIT_FAIL
    })
}

fn verify_all(
    ctx: &Context<'_>,
    io: &mut Io<'_>,
    key_file: Option<&Path>,
    json: bool,
) -> CmdResult {
    let key = load_key(ctx, io, key_file)?;
    let report = verify::verify_all(&ctx.log_path, &key).map_err(|e| {
        fail(
            EXIT_FAIL,
            format!(
                "Cannot read the audit logs next to {}: {e}",
                ctx.log_path.display()
            ),
            None,
        )
    })?;
    let n = report.files.len();
    let bad = report.files.iter().filter(|f| !f.is_clean()).count();
    if json {
        #[derive(Serialize)]
        struct AllJson<'a> {
            ok: bool,
            files: Vec<FileJson<'a>>,
        }
        write_json(
            io,
            &AllJson {
                ok: bad == 0,
                files: report.files.iter().map(file_json).collect(),
            },
        )?;
        return Ok(if bad == 0 { EXIT_OK } else { EXIT_FAIL });
    }
    let w = |io: &mut Io<'_>| -> std::io::Result<()> {
        if n == 0 {
            return writeln!(io.stdout, "No audit logs found.");
        }
        for r in &report.files {
            print_report(ctx, io.stdout, r)?;
        }
        if bad > 0 {
            writeln!(io.stdout, "{bad} of {n} files have violations.")
        } else {
            writeln!(io.stdout, "All {n} files verified clean.")
        }
    };
    w(io).map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
    Ok(if bad == 0 { EXIT_OK } else { EXIT_FAIL })
}

// ---------------------------------------------------------------- export

fn export_cmd(ctx: &Context<'_>, io: &mut Io<'_>, output: Option<&Path>) -> CmdResult {
    let key = load_key(ctx, io, None)?;
    let output = output.map_or_else(
        || PathBuf::from(format!("./audit-export-{}.zip", files::local_stamp())),
        Path::to_path_buf,
    );
    match export::export_bundle(&ctx.log_path, &key, &output) {
        Ok(s) => {
            let mut w = || -> std::io::Result<()> {
                writeln!(io.stdout, "Wrote {}", s.output.display())?;
                writeln!(io.stdout, "  files: {}", s.files)?;
                writeln!(io.stdout, "  signature (HMAC-SHA256): {}", s.signature)
            };
            w().map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
            Ok(EXIT_OK)
        }
        Err(export::ExportError::Nothing) => Err(fail(
            EXIT_FAIL,
            "Nothing to export \u{2014} no audit logs present.",
            None,
        )),
        Err(e) => Err(fail(EXIT_FAIL, format!("Export failed: {e}"), None)),
    }
}

fn export_key(ctx: &Context<'_>, io: &mut Io<'_>, output: Option<&Path>) -> CmdResult {
    let key = load_key(ctx, io, None)?;
    let hex = key.to_hex();
    match output {
        None => {
            let _ = writeln!(
                io.stderr,
                "warning: anyone holding this key can forge audit records; share it only with whoever verifies your logs."
            );
            writeln!(io.stdout, "{}", hex.as_str())
                .map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
            Ok(EXIT_OK)
        }
        Some(p) => {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                o.mode(0o600);
            }
            let mut f = match o.open(p) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(fail(
                        EXIT_FAIL,
                        format!("Refusing to overwrite {}", p.display()),
                        Some("choose a path that does not exist yet"),
                    ));
                }
                Err(e) => {
                    return Err(fail(
                        EXIT_FAIL,
                        format!("Cannot create {}: {e}", p.display()),
                        None,
                    ));
                }
            };
            f.write_all(hex.as_bytes())
                .and_then(|()| f.write_all(b"\n"))
                .and_then(|()| f.sync_all())
                .map_err(|e| {
                    fail(
                        EXIT_FAIL,
                        format!("Cannot write {}: {e}", p.display()),
                        None,
                    )
                })?;
            let _ = writeln!(
                io.stderr,
                "warning: anyone holding this key can forge audit records; share it only with whoever verifies your logs."
            );
            writeln!(io.stdout, "Wrote the audit key to {}", p.display())
                .map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
            Ok(EXIT_OK)
        }
    }
}

// ---------------------------------------------------------------- rotate

fn rotate(ctx: &Context<'_>, io: &mut Io<'_>) -> CmdResult {
    let path = &ctx.log_path;
    if !path.is_file() {
        return Err(not_found(path));
    }
    let key = load_key(ctx, io, None)?;
    // Probe the lock first so that a running daemon is reported before anything else.
    match crate::writer::take_lock(path) {
        Ok(lock) => drop(lock),
        Err(crate::AuditError::Locked { .. }) => {
            return Err(fail(
                EXIT_FAIL,
                format!(
                    "A running shim holds the audit log {}; not rotating.",
                    path.display()
                ),
                Some("stop the daemon first, or let it rotate by size or age"),
            ));
        }
        Err(e) => return Err(fail(EXIT_FAIL, e.to_string(), None)),
    }
    let empty = std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(false);
    if empty {
        let _ = writeln!(io.stdout, "Audit log was empty; nothing to rotate.");
        return Ok(EXIT_OK);
    }
    let cfg = WriterConfig::new(path.clone(), &ctx.machine_id, &ctx.shim_version);
    let log = AuditLog::open(cfg, key).map_err(|e| match e {
        crate::AuditError::Locked { .. } => fail(
            EXIT_FAIL,
            format!(
                "A running shim holds the audit log {}; not rotating.",
                path.display()
            ),
            Some("stop the daemon first, or let it rotate by size or age"),
        ),
        other => fail(EXIT_FAIL, other.to_string(), None),
    })?;
    let rotated = log
        .rotate_blocking(RotateReason::Explicit)
        .map_err(|e| fail(EXIT_FAIL, e.to_string(), None))?;
    drop(log);
    match rotated {
        Some(p) => {
            let _ = writeln!(io.stdout, "Rotated to {}", p.display());
            Ok(EXIT_OK)
        }
        None => Err(fail(
            EXIT_FAIL,
            "Could not rename the audit log aside; nothing was rotated.",
            None,
        )),
    }
}

// ---------------------------------------------------------------- prune

/// Parses `90d`, `12h`, `30m`, `45s` ([H-19]): ASCII digits then one unit letter.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let (num, unit) = s.split_at(s.len().checked_sub(1)?);
    if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    let mult = match unit {
        "d" | "D" => 86_400,
        "h" | "H" => 3_600,
        "m" | "M" => 60,
        "s" | "S" => 1,
        _ => return None,
    };
    Some(Duration::from_secs(n.checked_mul(mult)?))
}

fn prune(ctx: &Context<'_>, io: &mut Io<'_>, older_than: &str) -> CmdResult {
    let Some(age) = parse_duration(older_than) else {
        return Err(fail(
            EXIT_USAGE,
            format!("Could not parse duration: '{older_than}'. Use e.g. 90d, 12h, 30m."),
            None,
        ));
    };
    let rotated = files::list_rotated(&ctx.log_path)
        .map_err(|e| fail(EXIT_FAIL, format!("Cannot list rotated files: {e}"), None))?;
    let w = |r: std::io::Result<()>| r.map_err(|e| fail(EXIT_FAIL, e.to_string(), None));
    if rotated.is_empty() {
        w(writeln!(io.stdout, "No rotated audit files to prune."))?;
        return Ok(EXIT_OK);
    }
    let cutoff = files::now_ts() - age.as_secs_f64();
    let mut deleted = 0usize;
    for p in &rotated {
        let ts = std::fs::File::open(p)
            .and_then(|mut f| files::read_last_line(&mut f))
            .ok()
            .and_then(|(l, _)| l)
            .and_then(|l| {
                parse::parse(&l)
                    .ok()
                    .and_then(|n| n.get("ts").and_then(parse::Node::as_f64))
            });
        let Some(ts) = ts else { continue };
        if ts < cutoff {
            match std::fs::remove_file(p) {
                Ok(()) => {
                    deleted += 1;
                    w(writeln!(
                        io.stdout,
                        "Deleted {} (newest_ts={})",
                        files::file_name(p),
                        ts.round_ties_even() as i64
                    ))?;
                }
                Err(e) => w(writeln!(
                    io.stdout,
                    "Could not delete {}: {e}",
                    files::file_name(p)
                ))?,
            }
        }
    }
    w(writeln!(
        io.stdout,
        "Pruned {deleted} of {} rotated files.",
        rotated.len()
    ))?;
    Ok(EXIT_OK)
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
