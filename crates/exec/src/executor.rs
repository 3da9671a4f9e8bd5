//! `EXECUTE_COMMAND` end to end: the order of checks of 12.1, then spawn, output and
//! timeout (12.2-12.9).

use std::ffi::OsStr;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use crate::audit::AuditEvent;
use crate::audit::AuditResult;
use crate::audit::ExecAuditDetails;
use crate::confine::Confinement;
use crate::env::BaseEnv;
use crate::env::ChildEnv;
use crate::error::CwdError;
use crate::error::ExecError;
use crate::limits::CommandLimiter;
use crate::limits::CommandPermit;
use crate::output;
use crate::output::Collector;
use crate::process::GRACE;
use crate::process::SpawnSpec;
use crate::process::WorkDir;
use crate::process::spawn_pipe_confined;
use crate::sandbox::SandboxPolicy;
use crate::shell;
use crate::spec::CommandRequest;
use crate::spec::CommandResult;
use crate::spec::HostOs;
use crate::spec::Program;
use crate::spec::Timeout;
use crate::spec::WireEnv;

/// Daemon-side settings, resolved once (effective values, PROTOCOL.md 10.2).
/// Non-exhaustive so settings can be added in a minor version: start from
/// [`ExecConfig::from_process`] and assign the fields to change.
///
/// ```
/// let mut config = shim_exec::ExecConfig::from_process(true);
/// config.command_timeout_seconds = 10;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `enable_shell` (`--enable-shell`); false refuses every command (12.1 step 1).
    pub enable_shell: bool,
    /// Effective `command_timeout_seconds` `C` (min(local, platform)).
    pub command_timeout_seconds: u64,
    /// Effective `max_file_size_bytes` (the output budget is min(this, 2 785 280)).
    pub max_file_size_bytes: u64,
    /// The filtered daemon environment (J-ENV-1).
    pub base_env: BaseEnv,
    /// The daemon's own `PATH`, where shells are looked up (12.3).
    pub shell_search_path: Option<OsString>,
    /// Which OS rules apply.
    pub os: HostOs,
    /// The confinement of every command (`shell_sandbox`, `shell_network`); off unless
    /// the daemon sets it.
    pub sandbox: SandboxPolicy,
}

impl ExecConfig {
    /// Defaults of 1.5 with the daemon's own environment and `PATH`.
    pub fn from_process(enable_shell: bool) -> ExecConfig {
        ExecConfig {
            enable_shell,
            command_timeout_seconds: 30,
            max_file_size_bytes: 10_485_760,
            base_env: BaseEnv::from_process(),
            shell_search_path: std::env::var_os("PATH"),
            os: HostOs::current(),
            sandbox: SandboxPolicy::off(),
        }
    }
}

/// A request refused before anything ran, with the audit record to write (if any).
#[derive(Debug)]
pub struct Rejection {
    /// Why; `error.code()` is the wire code.
    pub error: ExecError,
    /// The record to write before answering; `None` only for the step-1 refusal
    /// (disabled shell), which is not audited here (12.11).
    pub audit: Option<AuditEvent>,
}

/// A request that passed every check and holds its running slot; nothing has started yet.
#[derive(Debug)]
pub struct PreparedCommand {
    spawn: SpawnSpec,
    confine: Option<Arc<Confinement>>,
    timeout: Timeout,
    budget: usize,
    started: Instant,
    audit: ExecAuditDetails,
    _permit: CommandPermit,
}

/// The outcome of [`Executor::execute`]: the response and the audit record to write first.
#[derive(Debug)]
pub struct Execution {
    /// `COMMAND_RESULT` or the `ERROR` to send.
    pub result: Result<CommandResult, ExecError>,
    /// The audit record (`None` only when the shell is disabled).
    pub audit: Option<AuditEvent>,
}

/// Runs `EXECUTE_COMMAND`s. One per daemon configuration; the [`CommandLimiter`] is shared
/// by every executor of the machine.
#[derive(Debug, Clone)]
pub struct Executor {
    config: ExecConfig,
    limiter: Arc<CommandLimiter>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn round3(d: Duration) -> f64 {
    // Integer milliseconds, rounded half up, then as seconds with 3 decimals.
    let micros = d.as_micros();
    let ms = (micros + 500) / 1000;
    // ms fits f64 exactly for any realistic duration.
    (ms as f64) / 1000.0
}

impl Executor {
    /// An executor with `config`, sharing `limiter`.
    pub fn new(config: ExecConfig, limiter: Arc<CommandLimiter>) -> Executor {
        Executor { config, limiter }
    }

    /// The configuration.
    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// Steps 1-7 of 12.1 in order, without starting anything.
    ///
    /// `root_display` is the root's display path (for audit records of requests rejected
    /// before the cwd is known). `resolve_cwd` is called exactly once, at step 6, with the
    /// raw wire `cwd` (`None` = the root); it is the jail's job to refuse a cwd outside the
    /// root and to return an opened directory handle.
    pub fn prepare<F>(
        &self,
        req: &CommandRequest,
        root_display: &str,
        resolve_cwd: F,
    ) -> Result<PreparedCommand, Box<Rejection>>
    where
        F: FnOnce(Option<&str>) -> Result<WorkDir, CwdError>,
    {
        // Step 1: not audited here (12.11: records only for requests past step 1).
        if !self.config.enable_shell {
            return Err(Box::new(Rejection {
                error: ExecError::ShellDisabled,
                audit: None,
            }));
        }
        let ceiling = self.config.command_timeout_seconds;
        let mut wire_keys: Vec<String> = req.env.iter().map(|(k, _)| k.clone()).collect();
        wire_keys.sort();
        wire_keys.dedup();
        let mut details = ExecAuditDetails {
            command: req.command.clone(),
            argv: req.argv.clone(),
            shell: req.shell.as_str().to_owned(),
            cwd: req.cwd.clone().unwrap_or_else(|| root_display.to_owned()),
            env_keys: wire_keys,
            timeout_seconds: Timeout::effective(req.timeout_seconds, ceiling)
                .map_or(ceiling, Timeout::secs),
            sandbox: self.config.sandbox.mode.as_str(),
            network: self.config.sandbox.network.as_str(),
        };
        let reject = |error: ExecError, details: ExecAuditDetails, started: Option<Instant>| {
            let duration_ms = started.map_or(0, |s| millis(s.elapsed()));
            let code = error.code();
            Box::new(Rejection {
                error,
                audit: Some(AuditEvent::ExecuteCommand {
                    details,
                    result: AuditResult {
                        ok: false,
                        exit_code: None,
                        duration_ms,
                        error_code: Some(code),
                    },
                    cancelled: false,
                }),
            })
        };
        // Steps 2-3 (duration 0: the handler has not started).
        let permit = match self.limiter.admit() {
            Ok(p) => p,
            Err(e) => return Err(reject(e, details, None)),
        };
        // The handler start time is taken before step 4.
        let started = Instant::now();
        // Step 4.
        let program =
            match Program::from_wire(req.command.as_deref(), req.argv.as_deref(), req.shell) {
                Ok(p) => p,
                Err(e) => return Err(reject(e, details, Some(started))),
            };
        // Step 5.
        let wire_env = match WireEnv::new(req.env.clone()) {
            Ok(w) => w,
            Err(e) => return Err(reject(e, details, Some(started))),
        };
        // Step 6.
        let cwd = match resolve_cwd(req.cwd.as_deref()) {
            Ok(c) => c,
            Err(e) if e.jail_violation => {
                return Err(Box::new(Rejection {
                    audit: Some(AuditEvent::JailViolation {
                        code: e.code.clone(),
                        path: details.cwd.clone(),
                    }),
                    error: ExecError::Cwd(e),
                }));
            }
            Err(e) => return Err(reject(ExecError::Cwd(e), details, Some(started))),
        };
        details.cwd = cwd.display().to_owned();
        // Step 7: timeout, environment, program resolution.
        let timeout = match Timeout::effective(req.timeout_seconds, ceiling) {
            Ok(t) => t,
            Err(e) => return Err(reject(e, details, Some(started))),
        };
        details.timeout_seconds = timeout.secs();
        let mut env = ChildEnv::merge(self.config.os, &self.config.base_env, &wire_env);
        let (program, argv) = match self.resolve_program(&program, &env, &cwd) {
            Ok(p) => p,
            Err(e) => {
                details.env_keys = env.keys();
                return Err(reject(e, details, Some(started)));
            }
        };
        // The sandbox, built here where a failure is a typed refusal (STYLE.md item 21).
        let confine = match self.confinement() {
            Ok(c) => c,
            Err(e) => {
                details.env_keys = env.keys();
                return Err(reject(e, details, Some(started)));
            }
        };
        if let Some(tmp) = confine.as_ref().and_then(|c| c.tmpdir()) {
            env.set("TMPDIR", tmp.as_os_str());
        }
        // macOS: the command runs under `sandbox-exec` (elsewhere it is unchanged).
        let (program, argv) = match &confine {
            Some(c) => c.command(program, argv),
            None => (program, argv),
        };
        details.env_keys = env.keys();
        Ok(PreparedCommand {
            spawn: SpawnSpec {
                program,
                argv,
                env,
                cwd,
            },
            confine,
            timeout,
            budget: output::budget(self.config.max_file_size_bytes),
            started,
            audit: details,
            _permit: permit,
        })
    }

    /// The confinement of one command, or `None` when nothing is confined.
    fn confinement(&self) -> Result<Option<Arc<Confinement>>, ExecError> {
        if !self.config.sandbox.is_active() {
            return Ok(None);
        }
        crate::confine::Confinement::prepare(&self.config.sandbox)
            .map(|c| Some(Arc::new(c)))
            .map_err(|e| ExecError::Sandbox(e.0))
    }

    fn resolve_program(
        &self,
        program: &Program,
        env: &ChildEnv,
        cwd: &WorkDir,
    ) -> Result<(OsString, Vec<OsString>), ExecError> {
        if self.config.os != HostOs::current() {
            return Err(ExecError::Unsupported);
        }
        #[cfg(windows)]
        let resolved = crate::process::resolve_windows(
            program,
            env,
            cwd,
            self.config.shell_search_path.as_deref(),
        );
        #[cfg(unix)]
        let resolved = self.resolve_unix(program, env, cwd);
        resolved
    }

    #[cfg(unix)]
    fn resolve_unix(
        &self,
        program: &Program,
        env: &ChildEnv,
        cwd: &WorkDir,
    ) -> Result<(OsString, Vec<OsString>), ExecError> {
        match program {
            Program::Shell { command, shell } => {
                let exe = shell::resolve_shell(
                    self.config.os,
                    *shell,
                    self.config.shell_search_path.as_deref(),
                )?;
                let argv = shell::shell_argv(&exe, *shell, command);
                Ok((exe.into_os_string(), argv))
            }
            Program::Argv(argv) => {
                let name = argv.program();
                let not_found = || ExecError::ExecutableNotFound {
                    program: name.to_owned(),
                };
                let resolved: OsString = if name.contains('/') {
                    let path = Path::new(name);
                    let exists = if path.is_absolute() {
                        std::fs::metadata(path).is_ok_and(|m| m.is_file())
                    } else {
                        // Relative with a separator: against the validated cwd handle.
                        rustix::fs::statat(cwd.fd(), path, rustix::fs::AtFlags::empty()).is_ok_and(
                            |st| {
                                rustix::fs::FileType::from_raw_mode(st.st_mode)
                                    == rustix::fs::FileType::RegularFile
                            },
                        )
                    };
                    if !exists {
                        return Err(not_found());
                    }
                    name.into()
                } else {
                    shell::search_path(OsStr::new(name), env.get(self.config.os, "PATH"))
                        .ok_or_else(not_found)?
                        .into_os_string()
                };
                let argv = argv.as_slice().iter().map(OsString::from).collect();
                Ok((resolved, argv))
            }
        }
    }

    /// [`Executor::prepare`], then [`PreparedCommand::run`], with the audit record.
    ///
    /// Cancel-safe: dropping the future kills the command's whole process group (12.10);
    /// a daemon that must audit cancellations uses `prepare` + `run` itself.
    pub async fn execute<F>(
        &self,
        req: &CommandRequest,
        root_display: &str,
        resolve_cwd: F,
    ) -> Execution
    where
        F: FnOnce(Option<&str>) -> Result<WorkDir, CwdError>,
    {
        match self.prepare(req, root_display, resolve_cwd) {
            Err(r) => Execution {
                result: Err(r.error),
                audit: r.audit,
            },
            Ok(p) => {
                let details = p.audit_details().clone();
                let started = p.started_at();
                let result = p.run().await;
                let audit = AuditEvent::finished(details, &result, millis(started.elapsed()));
                Execution {
                    result,
                    audit: Some(audit),
                }
            }
        }
    }
}

impl PreparedCommand {
    /// The audit `details` (keep a clone to audit a cancellation, 12.10).
    pub fn audit_details(&self) -> &ExecAuditDetails {
        &self.audit
    }

    /// The handler start (12.1), for `duration_ms` of the audit record.
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// The program about to be executed and its argument vector.
    pub fn argv(&self) -> &[OsString] {
        &self.spawn.argv
    }

    /// Starts the command on a new pseudo-terminal of `size` instead of pipes, under the
    /// same confinement as [`PreparedCommand::run`] (the sandbox is applied in the child
    /// before `execve`; the spawn fails rather than run the command unconfined). The
    /// handle keeps the running slot and the private temporary directory until the
    /// command is over; the caller reads, writes, waits or drops it, and writes the audit
    /// record from [`PreparedCommand::audit_details`] (taken before this call), which
    /// names the sandbox and network mode that applied. The timeout is the caller's.
    ///
    /// Must be called inside a tokio runtime.
    #[cfg(unix)]
    pub fn spawn_pty(self, size: crate::TermSize) -> Result<crate::ProcessHandle, ExecError> {
        let PreparedCommand {
            spawn,
            confine,
            _permit,
            ..
        } = self;
        let mut handle = crate::process::spawn_pty_confined(spawn, size, confine.clone())?;
        handle.hold(crate::process::Held {
            _confine: confine,
            _permit,
        });
        Ok(handle)
    }

    /// Spawns, collects output under the budget, enforces the timeout (12.6-12.9).
    ///
    /// Cancel-safe: dropping the future kills the command's process group (SIGTERM, then
    /// SIGKILL after at most 2 s, 12.10). Spawn failures are `INTERNAL_ERROR` (12.4).
    pub async fn run(self) -> Result<CommandResult, ExecError> {
        let PreparedCommand {
            spawn,
            confine,
            timeout,
            budget,
            started,
            audit: _,
            _permit,
        } = self;
        // `confine` (and its private temporary directory) lives until the output is
        // collected; dropping it at the end removes the directory.
        let mut handle = spawn_pipe_confined(spawn, false, confine.clone())?;
        let deadline = tokio::time::Instant::now() + timeout.duration();
        let mut collector = Collector::new(budget);
        let mut out_done = false;
        let mut timed_out = false;
        let exit_code;
        {
            let out = &mut handle.output;
            let exit = &mut handle.exit;
            let sleep = tokio::time::sleep_until(deadline);
            tokio::pin!(sleep);
            // Main process running: drain both pipes until it exits or the timer fires.
            let code = loop {
                tokio::select! {
                    chunk = out.next(), if !out_done => match chunk {
                        Some(c) => collector.push(c.channel, &c.data),
                        None => out_done = true,
                    },
                    code = exit.wait() => break Some(code),
                    () = &mut sleep => break None,
                }
            };
            exit_code = match code {
                Some(c) => c,
                None => {
                    timed_out = true;
                    let term = exit.terminate();
                    tokio::pin!(term);
                    loop {
                        tokio::select! {
                            chunk = out.next(), if !out_done => match chunk {
                                Some(c) => collector.push(c.channel, &c.data),
                                None => out_done = true,
                            },
                            code = &mut term => break code,
                        }
                    }
                }
            };
            // 12.7 step 3: at most 2 s more for both pipes to reach EOF.
            let drain = tokio::time::sleep(GRACE);
            tokio::pin!(drain);
            while !out_done {
                tokio::select! {
                    chunk = out.next() => match chunk {
                        Some(c) => collector.push(c.channel, &c.data),
                        None => out_done = true,
                    },
                    () = &mut drain => break,
                }
            }
        }
        drop(handle);
        // Removes the private temporary directory.
        drop(confine);
        let raw = collector.finish();
        Ok(CommandResult {
            stdout: output::decode(&raw.stdout),
            stderr: output::decode(&raw.stderr),
            exit_code,
            timed_out,
            duration_seconds: round3(started.elapsed()),
            output_truncated: raw.truncated,
        })
    }
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
