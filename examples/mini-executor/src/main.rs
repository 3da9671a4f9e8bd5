//! mini-executor: `shim-jail`, `shim-exec` and `shim-audit` composed without `shim-daemon`.
//!
//! `mini-executor ROOT AUDIT_LOG` with the audit key (hex) in `MINI_EXECUTOR_KEY`. One
//! request per line on stdin, one answer per line on stdout (see README.md). Every request
//! is audited before it is answered; if the record cannot be written, the executor stops.

use std::io::BufRead;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use std::time::Instant;

use shim_audit::AuditError;
use shim_audit::AuditEvent;
use shim_audit::AuditKey;
use shim_audit::AuditLog;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_audit::WriterConfig;
use shim_exec::CommandLimiter;
use shim_exec::CommandLimits;
use shim_exec::CommandRequest;
use shim_exec::CwdError;
use shim_exec::ExecConfig;
use shim_exec::Executor;
use shim_exec::WorkDir;
use shim_jail::JailConfig;
use shim_jail::JailError;
use shim_jail::JailRoot;
use shim_jail::ListOptions;
use shim_jail::ReadOptions;
use shim_jail::WriteOptions;

/// A fatal error: the message for stderr and the exit status (sysexits).
struct Fatal(String, u8);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fatal(message, code)) => {
            let _ = writeln!(std::io::stderr(), "mini-executor: {message}");
            ExitCode::from(code)
        }
    }
}

fn run() -> Result<(), Fatal> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, log_path] = args.as_slice() else {
        return Err(Fatal(
            "usage: mini-executor ROOT AUDIT_LOG (audit key as hex in MINI_EXECUTOR_KEY)".into(),
            64,
        ));
    };
    let config = |what: &str, e: &dyn std::fmt::Display| Fatal(format!("{what}: {e}"), 78);
    let key_hex =
        std::env::var("MINI_EXECUTOR_KEY").map_err(|e| config("MINI_EXECUTOR_KEY", &e))?;
    let key = AuditKey::from_hex(&key_hex).map_err(|e| config("MINI_EXECUTOR_KEY", &e))?;
    // Fail closed: no audit log, no executor.
    let log = AuditLog::open(WriterConfig::new(log_path, "-", "mini-executor 0.2"), key)
        .map_err(|e| config("cannot open the audit log", &e))?;
    let jail = JailRoot::open(
        std::path::Path::new(root),
        JailConfig::default(),
        shim_jail::ambient_authority(),
    )
    .map_err(|e| config("cannot open the root", &e))?;
    let executor = Executor::new(
        ExecConfig::from_process(true),
        CommandLimiter::new(CommandLimits::default()),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| config("cannot start the runtime", &e))?;
    let mini = Mini {
        jail,
        executor,
        log,
        runtime,
        next_id: 0,
    };
    mini.serve()
}

struct Mini {
    jail: JailRoot,
    executor: Executor,
    log: AuditLog,
    runtime: tokio::runtime::Runtime,
    next_id: u64,
}

impl Mini {
    fn serve(mut self) -> Result<(), Fatal> {
        let io = |e: std::io::Error| Fatal(format!("stdin/stdout: {e}"), 74);
        let mut out = std::io::stdout().lock();
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(io)?;
            if line.trim().is_empty() {
                continue;
            }
            let answer = self
                .handle(&line)
                .map_err(|e| Fatal(format!("audit failed, stopping: {e}"), 74))?;
            writeln!(out, "{answer}").map_err(io)?;
            out.flush().map_err(io)?;
        }
        Ok(())
    }

    /// Answers one request after auditing it. `Err` only when the record was not written.
    fn handle(&mut self, line: &str) -> Result<String, AuditError> {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        let (verb, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        let (path_arg, text) = rest.split_once(' ').unwrap_or((rest, ""));
        let path = self.wire_path(path_arg);
        let details = Map::new().with("path", path.as_str());
        match verb {
            "write" => self.file_op("FILE_WRITE", &id, &path, details, |j, p| {
                let opts = WriteOptions {
                    create_parents: true,
                    ..WriteOptions::default()
                };
                let w = j.write(p, &format!("{text}\n"), &opts)?;
                Ok(format!(
                    "wrote {} bytes to {}",
                    w.size_bytes_written, w.path
                ))
            }),
            "read" => self.file_op("FILE_READ", &id, &path, details, |j, p| {
                let r = j.read(p, &ReadOptions::default())?;
                Ok(json(&r.content))
            }),
            "list" => self.file_op("FILE_LIST", &id, &path, details, |j, p| {
                let l = j.list(p, &ListOptions::default())?;
                let names: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
                Ok(serde_json::to_string(&names).unwrap_or_default())
            }),
            "run" => self.run_command(&id, rest),
            _ => {
                let ev = AuditEvent::new("UNKNOWN_REQUEST")
                    .request_id(id)
                    .details(Map::new().with("verb", verb))
                    .result(AuditResult::failed(
                        &shim_protocol::ErrorCode::FeatureNotSupported,
                    ));
                self.log.append_blocking(ev)?;
                Ok(format!(
                    "err FEATURE_NOT_SUPPORTED unknown request {verb:?}"
                ))
            }
        }
    }

    /// Paths are relative to the root unless absolute; the jail decides what is inside.
    fn wire_path(&self, arg: &str) -> String {
        if arg.starts_with('/') {
            arg.to_owned()
        } else {
            format!("{}/{arg}", self.jail.root_path())
        }
    }

    fn file_op(
        &self,
        op: &str,
        id: &str,
        path: &str,
        details: Map,
        f: impl FnOnce(&JailRoot, &str) -> Result<String, JailError>,
    ) -> Result<String, AuditError> {
        let started = Instant::now();
        let outcome = f(&self.jail, path);
        let event = match &outcome {
            Ok(_) => AuditEvent::new(op)
                .details(details)
                .result(AuditResult::ok_after(started.elapsed())),
            // Escapes and invalid names are audited as violations (AUDIT_AUTH_CLI.md 1.7).
            Err(e) if e.is_jail_violation() => AuditEvent::new("JAIL_VIOLATION")
                .details(
                    Map::new()
                        .with("code", e.code().as_str())
                        .with("path", path)
                        .with("attempted_op", op),
                )
                .result(AuditResult::failed(&e.code())),
            Err(e) => AuditEvent::new(op).details(details).result(AuditResult {
                duration_ms: millis(started.elapsed()),
                ..AuditResult::failed(&e.code())
            }),
        };
        self.log.append_blocking(event.request_id(id))?;
        Ok(match outcome {
            Ok(answer) => format!("ok {answer}"),
            Err(e) => format!("err {} {e}", e.code().as_str()),
        })
    }

    fn run_command(&self, id: &str, args: &str) -> Result<String, AuditError> {
        let request = CommandRequest {
            argv: Some(args.split_whitespace().map(str::to_owned).collect()),
            timeout_seconds: Some(30),
            ..CommandRequest::default()
        };
        let jail = &self.jail;
        // The command starts in a directory the jail opened (here always the root).
        let resolve_cwd = |cwd: Option<&str>| -> Result<WorkDir, CwdError> {
            let (dir, display) = jail.open_dir(cwd).map_err(|e| {
                let mut c = CwdError::new(e.code(), e.to_string());
                c.jail_violation = e.is_jail_violation();
                c
            })?;
            WorkDir::new(dir, display).map_err(|e| CwdError::new(e.code(), e.to_string()))
        };
        let execution = self.runtime.block_on(self.executor.execute(
            &request,
            jail.root_path(),
            resolve_cwd,
        ));
        if let Some(ev) = execution.audit {
            self.log
                .append_blocking(AuditEvent::from(ev).request_id(id))?;
        }
        Ok(match execution.result {
            Ok(r) => format!("ok exit={} {}", r.exit_code, json(&r.stdout)),
            Err(e) => format!("err {} {e}", e.code().as_str()),
        })
    }
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
