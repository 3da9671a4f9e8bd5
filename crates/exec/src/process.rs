//! One process handle for pipes and PTYs (STYLE.md 11): spawn, write, read, resize, wait,
//! and kill-the-tree on drop.

use std::ffi::OsString;
use std::io::Read;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::sync::Mutex;
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::env::ChildEnv;
use crate::error::ExecError;
use crate::output::CHUNK;
use crate::output::Channel;
use crate::supervise;

/// Grace period between SIGTERM and SIGKILL, and each later wait (12.9).
pub const GRACE: Duration = Duration::from_secs(2);

/// A working directory handle the daemon obtained through the jail.
///
/// The child starts in exactly this directory, on the pipe and the PTY path alike: by
/// `fchdir` on this descriptor in the child before `execve` (no path string is resolved
/// again, so a rename or symlink swap after the jail check cannot redirect it,
/// J-TOCTOU-1).
#[derive(Debug)]
pub struct WorkDir {
    fd: OwnedFd,
    display: String,
}

impl WorkDir {
    /// Wraps a directory opened by the jail, with its canonical display path (4.8) for the
    /// audit record. Fails with `INTERNAL_ERROR` if the handle is not a directory (12.2).
    pub fn new(dir: cap_std::fs::Dir, display: impl Into<String>) -> Result<WorkDir, ExecError> {
        WorkDir::from_fd(OwnedFd::from(dir.into_std_file()), display)
    }

    /// Same as [`WorkDir::new`] for a raw directory descriptor.
    pub fn from_fd(fd: OwnedFd, display: impl Into<String>) -> Result<WorkDir, ExecError> {
        let st = rustix::fs::fstat(&fd).map_err(|e| ExecError::Spawn(e.into()))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
            return Err(ExecError::CwdNotDirectory);
        }
        Ok(WorkDir {
            fd,
            display: display.into(),
        })
    }

    /// The display path.
    pub fn display(&self) -> &str {
        &self.display
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

/// What to start: a resolved program and its full context.
#[derive(Debug)]
pub struct SpawnSpec {
    /// Path or name of the executable to run (already resolved, see [`crate::shell`]).
    pub program: OsString,
    /// The complete argument vector, `argv[0]` included.
    pub argv: Vec<OsString>,
    /// The complete environment (nothing else is inherited).
    pub env: ChildEnv,
    /// The starting directory.
    pub cwd: WorkDir,
}

/// A chunk of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// The stream (a PTY has only [`Channel::Stdout`]).
    pub channel: Channel,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Terminal size for [`spawn_pty`] and [`ProcessHandle::resize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// Exit status as reported on the wire (12.8): the exit status, `-N` for death by
/// signal N, `-1` when no status is obtainable.
pub type ExitCode = i64;

enum ExitSource {
    /// The command is our direct child, started by std (the fork path, PTYs).
    Child(tokio::process::Child),
    /// The command is our direct child, started by `vfork.rs`.
    #[cfg(target_os = "linux")]
    Pidfd(crate::vfork::PidfdWaiter),
}

fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(sig)) => -i64::from(sig),
        (None, None) => -1,
    }
}

impl ExitSource {
    /// Cancel-safe.
    async fn wait(&mut self) -> ExitCode {
        match self {
            ExitSource::Child(c) => c.wait().await.map_or(-1, exit_code_of),
            #[cfg(target_os = "linux")]
            ExitSource::Pidfd(w) => w.wait().await.map_or(-1, exit_code_of),
        }
    }
}

/// Whether any live (not zombie) process is still in group `pgid`.
fn group_alive(pgid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // Fields after the parenthesised command: state ppid pgrp ...
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let mut f = rest.split_ascii_whitespace();
            let state = f.next();
            let pgrp = f.nth(1).and_then(|g| g.parse::<i32>().ok());
            if pgrp == Some(pgid) && !matches!(state, Some("Z" | "X")) {
                return true;
            }
        }
        false
    }
    #[cfg(not(target_os = "linux"))]
    {
        rustix::process::Pid::from_raw(pgid)
            .is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
    }
}

/// A running process (pipe or PTY). Dropping it before its exit was observed runs the
/// termination sequence of 12.9 on its process group (SIGTERM, up to 2 s, SIGKILL).
pub struct ProcessHandle {
    pid: i32,
    input: Option<mpsc::Sender<Vec<u8>>>,
    pub(crate) output: OutputSource,
    pub(crate) exit: ExitWaiter,
    master: Option<Box<dyn portable_pty::MasterPty + Send>>,
    /// What must live until the command is over (see [`Held`]).
    held: Option<Held>,
}

/// What a handle started by the executor keeps alive until its command is over: the
/// confinement (whose drop removes the private temporary directory) and the running slot.
pub(crate) struct Held {
    /// The command's confinement, if any.
    pub(crate) _confine: Option<std::sync::Arc<crate::confine::Confinement>>,
    /// The machine-wide running slot.
    pub(crate) _permit: crate::limits::CommandPermit,
}

/// The exit side of a [`ProcessHandle`], separate so that output and exit can be awaited
/// at the same time.
pub(crate) struct ExitWaiter {
    pid: i32,
    source: Option<ExitSource>,
    code: Option<ExitCode>,
}

/// How long a timeout waits, after the final SIGKILL, for every member of the group to be
/// gone (normally a few milliseconds).
const REAP_WAIT: Duration = Duration::from_millis(500);

impl std::fmt::Debug for ProcessHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessHandle")
            .field("pid", &self.pid)
            .field("pty", &self.master.is_some())
            .field("exit_code", &self.exit.code)
            .finish_non_exhaustive()
    }
}

struct Sentinel {
    writer: std::io::PipeWriter,
    child: std::process::Child,
}

fn spawn_sentinel() -> std::io::Result<Sentinel> {
    use std::process::Stdio;
    let (r, w) = std::io::pipe()?;
    // The program is never executed: the sentinel lives in the pre_exec hook.
    let mut cmd = std::process::Command::new("shim-exec-sentinel");
    cmd.env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    supervise::install_sentinel(&mut cmd, r.as_raw_fd());
    let child = cmd.spawn()?;
    drop(r);
    Ok(Sentinel { writer: w, child })
}

static SENTINEL: Mutex<Option<Sentinel>> = Mutex::new(None);

/// Starts the per-daemon sentinel that kills every command tree when the daemon dies
/// (README.md, "Process layout"). Call it once at daemon start, before enabling the shell:
/// the sentinel is a fork of the daemon that never execs, so starting it while the daemon
/// is small keeps its memory small, and a failure can refuse `--enable-shell` up front
/// (fail closed). Idempotent; spawning a command starts it too if needed.
pub fn start_sentinel() -> Result<(), ExecError> {
    let mut guard = SENTINEL.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        *guard = Some(spawn_sentinel().map_err(ExecError::Spawn)?);
    }
    Ok(())
}

/// How long [`stop_sentinel`] waits for the sentinel to exit before it kills it.
const SENTINEL_STOP_WAIT: Duration = Duration::from_secs(2);

/// Ends the daemon's sentinel and reaps it, for a clean stop (call it last, after every
/// command has finished): closing the registration pipe makes the sentinel kill every
/// command group still registered and exit at once, as it would if the daemon died. If it
/// has not exited after a while it is killed. On Linux it also removes the directory that
/// held the commands' private temporary directories. Idempotent; a later command would
/// start a new sentinel.
pub fn stop_sentinel() {
    #[cfg(target_os = "linux")]
    crate::private_tmp::remove_parent();
    let taken = SENTINEL.lock().unwrap_or_else(|p| p.into_inner()).take();
    let Some(Sentinel { writer, mut child }) = taken else {
        return;
    };
    drop(writer);
    let deadline = std::time::Instant::now() + SENTINEL_STOP_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(None) => {
                tracing::warn!("exec sentinel did not exit when the daemon stopped; killing it");
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
        }
    }
}

/// Registers a process group the caller started itself (an application launched for
/// computer use, say) with the daemon's sentinel, so that it is killed when the daemon
/// dies, even by SIGKILL, like every command. Starts the sentinel if needed. On `Err` the
/// group is not protected; the caller should end it (fail closed).
pub fn register_process_group(pgid: i32) -> Result<(), ExecError> {
    register_group(pgid)
}

/// Registers a command's process group with the daemon's sentinel (see
/// `supervise.rs`), starting or restarting the sentinel if needed.
fn register_group(pgid: i32) -> Result<(), ExecError> {
    let mut guard = SENTINEL.lock().unwrap_or_else(|p| p.into_inner());
    let mut last_err = None;
    for _ in 0..2 {
        if guard.is_none() {
            *guard = Some(spawn_sentinel().map_err(ExecError::Spawn)?);
        }
        if let Some(s) = guard.as_mut() {
            match s.writer.write_all(&pgid.to_ne_bytes()) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    // The sentinel died (EPIPE): reap it and start a new one. Groups it
                    // was watching are no longer protected against the daemon's death.
                    tracing::warn!(error = %e, "exec sentinel died; starting a new one");
                    let _ = s.child.try_wait();
                    last_err = Some(e);
                }
            }
        }
        *guard = None;
    }
    Err(ExecError::Spawn(last_err.unwrap_or_else(|| {
        std::io::Error::other("sentinel unavailable")
    })))
}

/// Where a handle's output comes from.
pub(crate) enum OutputSource {
    /// Both pipes, read directly (no task, no channel) in arrival order.
    Pipes {
        out: Option<tokio::process::ChildStdout>,
        err: Option<tokio::process::ChildStderr>,
        out_buf: Box<[u8]>,
        err_buf: Box<[u8]>,
    },
    /// The PTY reader thread.
    Channel(mpsc::Receiver<OutputChunk>),
}

impl OutputSource {
    /// The next chunk from whichever stream has data; `None` at EOF of all. Cancel-safe
    /// (tokio pipe reads are).
    pub(crate) async fn next(&mut self) -> Option<OutputChunk> {
        let (out, err, out_buf, err_buf) = match self {
            OutputSource::Channel(rx) => return rx.recv().await,
            OutputSource::Pipes {
                out,
                err,
                out_buf,
                err_buf,
            } => (out, err, out_buf, err_buf),
        };
        loop {
            let (channel, read) = match (out.as_mut(), err.as_mut()) {
                (None, None) => return None,
                (Some(o), None) => (Channel::Stdout, o.read(out_buf).await),
                (None, Some(e)) => (Channel::Stderr, e.read(err_buf).await),
                (Some(o), Some(e)) => tokio::select! {
                    r = o.read(out_buf) => (Channel::Stdout, r),
                    r = e.read(err_buf) => (Channel::Stderr, r),
                },
            };
            match read {
                Ok(n) if n > 0 => {
                    let buf = match channel {
                        Channel::Stdout => &out_buf[..n],
                        Channel::Stderr => &err_buf[..n],
                    };
                    return Some(OutputChunk {
                        channel,
                        data: buf.to_vec(),
                    });
                }
                // EOF or a read error: that stream is finished; its pipe closes now.
                _ => match channel {
                    Channel::Stdout => *out = None,
                    Channel::Stderr => *err = None,
                },
            }
        }
    }
}

/// Starts `spec` with pipes: stdin closed (the null device, 12.6) unless `stdin` is true,
/// stdout and stderr piped and drained concurrently into [`ProcessHandle::next_output`].
///
/// The command runs in its own session and process group, registered with the daemon's
/// sentinel (see `supervise.rs`), so its whole tree can be signalled and dies with the
/// daemon.
/// Must be called inside a tokio runtime.
pub fn spawn_pipe(spec: SpawnSpec, stdin: bool) -> Result<ProcessHandle, ExecError> {
    spawn_pipe_confined(spec, stdin, None)
}

/// [`spawn_pipe`], applying `confine` in the child after the session setup (see
/// `confine.rs`); the spawn fails rather than run the command unconfined.
pub(crate) fn spawn_pipe_confined(
    spec: SpawnSpec,
    stdin: bool,
    confine: Option<std::sync::Arc<crate::confine::Confinement>>,
) -> Result<ProcessHandle, ExecError> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    #[cfg(target_os = "linux")]
    if crate::vfork::usable() {
        return spawn_pipe_vfork(&spec, stdin, confine.as_deref());
    }
    let mut cmd = std::process::Command::new(&spec.program);
    if let Some((first, rest)) = spec.argv.split_first() {
        cmd.arg0(first).args(rest);
    }
    cmd.env_clear()
        .envs(spec.env.entries().iter().map(|(k, v)| (k, v)))
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    supervise::install_child_setup(&mut cmd, spec.cwd.fd().as_raw_fd());
    if let Some(c) = confine {
        crate::confine::install(&mut cmd, c);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(false);
    let mut child = cmd.spawn().map_err(ExecError::Spawn)?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| ExecError::Spawn(std::io::Error::other("no pid")))?;
    if let Err(e) = register_group(pid) {
        // Fail closed: a command that would not die with the daemon does not run.
        supervise::signal_group(pid, Signal::KILL);
        return Err(e);
    }
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    Ok(pipe_handle(
        pid,
        stdin,
        stdout,
        stderr,
        ExitSource::Child(child),
    ))
}

/// [`spawn_pipe_confined`] without `fork` (see `vfork.rs`).
#[cfg(target_os = "linux")]
fn spawn_pipe_vfork(
    spec: &SpawnSpec,
    stdin: bool,
    confine: Option<&crate::confine::Confinement>,
) -> Result<ProcessHandle, ExecError> {
    let s = crate::vfork::spawn(spec, stdin, confine).map_err(ExecError::Spawn)?;
    let pid = s.pid;
    let waiter = crate::vfork::PidfdWaiter::new(pid, s.pidfd);
    let streams = (|| -> std::io::Result<_> {
        let input = s
            .stdin
            .map(|fd| tokio::process::ChildStdin::from_std(std::process::ChildStdin::from(fd)))
            .transpose()?;
        let out = tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(s.stdout))?;
        let err = tokio::process::ChildStderr::from_std(std::process::ChildStderr::from(s.stderr))?;
        Ok((input, out, err))
    })();
    let (waiter, (input, out, err)) = match (waiter, streams) {
        (Ok(w), Ok(st)) => (w, st),
        (w, st) => {
            // Fail closed: a command we cannot watch does not run (the waiter, if made,
            // reaps it when dropped).
            supervise::signal_group(pid, Signal::KILL);
            drop(w);
            let e = st.err().unwrap_or_else(|| std::io::Error::other("pidfd"));
            return Err(ExecError::Spawn(e));
        }
    };
    if let Err(e) = register_group(pid) {
        // Fail closed: a command that would not die with the daemon does not run.
        supervise::signal_group(pid, Signal::KILL);
        return Err(e);
    }
    Ok(pipe_handle(
        pid,
        input,
        Some(out),
        Some(err),
        ExitSource::Pidfd(waiter),
    ))
}

/// The handle of a pipe command: output read in arrival order, input through a task.
fn pipe_handle(
    pid: i32,
    stdin: Option<tokio::process::ChildStdin>,
    out: Option<tokio::process::ChildStdout>,
    err: Option<tokio::process::ChildStderr>,
    exit: ExitSource,
) -> ProcessHandle {
    let output = OutputSource::Pipes {
        out,
        err,
        out_buf: vec![0u8; CHUNK].into_boxed_slice(),
        err_buf: vec![0u8; CHUNK].into_boxed_slice(),
    };
    let input = stdin.map(|mut w| {
        let (itx, mut irx) = mpsc::channel::<Vec<u8>>(16);
        tokio::spawn(async move {
            while let Some(data) = irx.recv().await {
                if w.write_all(&data).await.is_err() {
                    break;
                }
            }
        });
        itx
    });
    ProcessHandle {
        pid,
        input,
        output,
        exit: ExitWaiter {
            pid,
            source: Some(exit),
            code: None,
        },
        master: None,
        held: None,
    }
}

fn pty_size(size: TermSize) -> portable_pty::PtySize {
    portable_pty::PtySize {
        rows: size.rows,
        cols: size.cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn pty_err(e: impl std::fmt::Display) -> ExecError {
    ExecError::Spawn(std::io::Error::other(e.to_string()))
}

/// Starts `spec` on a new pseudo-terminal of `size`; the same handle type as
/// [`spawn_pipe`], with all output on [`Channel::Stdout`] and [`ProcessHandle::resize`].
///
/// The child is spawned by the same code as a pipe command (own session, parent-death
/// signal, `fchdir` to the jailed directory, sentinel registration), with the terminal's
/// slave side as its stdin, stdout and stderr and as its controlling terminal. This
/// function applies **no sandbox**: the executor's confined PTY is
/// [`crate::PreparedCommand::spawn_pty`]. Must be called inside a tokio runtime.
pub fn spawn_pty(spec: SpawnSpec, size: TermSize) -> Result<ProcessHandle, ExecError> {
    spawn_pty_confined(spec, size, None)
}

/// Opens the slave side of `master`'s terminal (portable-pty keeps its own descriptor
/// private): by name, without making it our controlling terminal, close-on-exec.
fn open_slave(master: &dyn portable_pty::MasterPty) -> Result<OwnedFd, ExecError> {
    let name = master
        .tty_name()
        .ok_or_else(|| pty_err("the terminal has no name"))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .map_err(ExecError::Spawn)?;
    Ok(OwnedFd::from(file))
}

/// [`spawn_pty`], applying `confine` in the child exactly as on the pipe path (see
/// `confine.rs`); the spawn fails rather than run the command unconfined.
pub(crate) fn spawn_pty_confined(
    spec: SpawnSpec,
    size: TermSize,
    confine: Option<std::sync::Arc<crate::confine::Confinement>>,
) -> Result<ProcessHandle, ExecError> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    let system = portable_pty::native_pty_system();
    let pair = system.openpty(pty_size(size)).map_err(pty_err)?;
    let slave = open_slave(pair.master.as_ref())?;
    drop(pair.slave);
    let stdio = |fd: &OwnedFd| -> Result<Stdio, ExecError> {
        Ok(Stdio::from(fd.try_clone().map_err(ExecError::Spawn)?))
    };
    let mut cmd = std::process::Command::new(&spec.program);
    if let Some((first, rest)) = spec.argv.split_first() {
        cmd.arg0(first).args(rest);
    }
    cmd.env_clear()
        .envs(spec.env.entries().iter().map(|(k, v)| (k, v)))
        .stdin(stdio(&slave)?)
        .stdout(stdio(&slave)?)
        .stderr(Stdio::from(slave));
    supervise::install_child_setup(&mut cmd, spec.cwd.fd().as_raw_fd());
    supervise::install_controlling_tty(&mut cmd);
    if let Some(c) = confine {
        crate::confine::install(&mut cmd, c);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(false);
    let spawned = cmd.spawn();
    // The parent's copies of the slave: closed now, so that the master reads EOF once
    // every process of the command has closed the terminal.
    drop(cmd);
    let child = spawned.map_err(ExecError::Spawn)?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| pty_err("no pid"))?;
    if let Err(e) = register_group(pid) {
        // Fail closed: a command that would not die with the daemon does not run.
        supervise::signal_group(pid, Signal::KILL);
        return Err(e);
    }
    let mut reader = pair.master.try_clone_reader().map_err(pty_err)?;
    let mut writer = pair.master.take_writer().map_err(pty_err)?;

    let (tx, output) = mpsc::channel(16);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = OutputChunk {
                        channel: Channel::Stdout,
                        data: buf[..n].to_vec(),
                    };
                    if tx.blocking_send(chunk).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (itx, mut irx) = mpsc::channel::<Vec<u8>>(16);
    std::thread::spawn(move || {
        while let Some(data) = irx.blocking_recv() {
            if writer
                .write_all(&data)
                .and_then(|()| writer.flush())
                .is_err()
            {
                break;
            }
        }
    });
    Ok(ProcessHandle {
        pid,
        input: Some(itx),
        output: OutputSource::Channel(output),
        exit: ExitWaiter {
            pid,
            source: Some(ExitSource::Child(child)),
            code: None,
        },
        master: Some(pair.master),
        held: None,
    })
}

impl ProcessHandle {
    /// Keeps `held` alive until the command is over (dropped with the handle, or after the
    /// termination of a cancelled command).
    pub(crate) fn hold(&mut self, held: Held) {
        self.held = Some(held);
    }

    /// The pid of the command, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Sends bytes to the command's stdin (or terminal). Fails if input is closed or was
    /// never opened.
    pub async fn write(&self, data: impl Into<Vec<u8>>) -> Result<(), ExecError> {
        let tx = self.input.as_ref().ok_or_else(|| {
            ExecError::Spawn(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ))
        })?;
        tx.send(data.into()).await.map_err(|_| {
            ExecError::Spawn(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ))
        })
    }

    /// Closes stdin (EOF for the command). For a PTY this only stops writing; send `^D`
    /// to signal end of input to the terminal.
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// The next output chunk; `None` once every output stream reached EOF.
    /// Cancel-safe.
    pub async fn next_output(&mut self) -> Option<OutputChunk> {
        self.output.next().await
    }

    /// Resizes the terminal (PTY only; pipes → [`ExecError::NotATerminal`]).
    pub fn resize(&self, size: TermSize) -> Result<(), ExecError> {
        let master = self.master.as_ref().ok_or(ExecError::NotATerminal)?;
        master.resize(pty_size(size)).map_err(pty_err)
    }

    /// Waits for the command (the main process) to exit and returns its wire exit code
    /// (12.8). Cancel-safe; returns the same value again after the first time.
    pub async fn wait(&mut self) -> ExitCode {
        self.exit.wait().await
    }

    /// Whether the exit was observed.
    pub fn has_exited(&self) -> bool {
        self.exit.code.is_some()
    }

    /// Sends `signal` to the command's whole process group.
    pub fn signal(&self, signal: Signal) {
        supervise::signal_group(self.pid, signal);
    }

    /// The termination sequence of 12.9: SIGTERM to the group, wait up to 2 s for the main
    /// process, then SIGKILL to the group and wait up to 2 s more; finally SIGKILL to
    /// whatever is left in the group (members that ignored SIGTERM while the main process
    /// exited), so nothing of the group survives. Returns the exit code, `-1` if none
    /// could be obtained.
    pub async fn terminate(&mut self) -> ExitCode {
        self.exit.terminate().await
    }
}

impl ExitWaiter {
    pub(crate) async fn wait(&mut self) -> ExitCode {
        if let Some(code) = self.code {
            return code;
        }
        let code = match self.source.as_mut() {
            Some(src) => src.wait().await,
            None => -1,
        };
        self.code = Some(code);
        self.source = None;
        code
    }

    pub(crate) async fn terminate(&mut self) -> ExitCode {
        if self.code.is_none() {
            tracing::debug!(pgid = self.pid, "terminating command process group");
            supervise::signal_group(self.pid, Signal::TERM);
            if tokio::time::timeout(GRACE, self.wait()).await.is_err() {
                supervise::signal_group(self.pid, Signal::KILL);
                if tokio::time::timeout(GRACE, self.wait()).await.is_err() {
                    self.code = Some(-1);
                    self.source = None;
                }
            }
        }
        supervise::signal_group(self.pid, Signal::KILL);
        // A killed process closes its pipes before it is gone; wait until no member of the
        // group is alive so that nothing of it is left when we return.
        let deadline = tokio::time::Instant::now() + REAP_WAIT;
        while group_alive(self.pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.code.unwrap_or(-1)
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        if self.exit.code.is_some() {
            // The main process exited (or was given up on after SIGKILL): stragglers of a
            // normal exit keep running in their registered group (12.7 step 3).
            return;
        }
        // Cancellation (12.10): start the termination sequence now, finish it in the
        // background if a runtime is available, else kill at once.
        self.signal(Signal::TERM);
        let pid = self.pid;
        let exit = self.exit.source.take();
        let master = self.master.take();
        let held = self.held.take();
        match (tokio::runtime::Handle::try_current(), exit) {
            (Ok(rt), Some(exit)) => {
                rt.spawn(async move {
                    let mut exit = exit;
                    let _ = tokio::time::timeout(GRACE, exit.wait()).await;
                    // Whether or not the main process went on SIGTERM, nothing of the group
                    // may survive a cancellation.
                    supervise::signal_group(pid, Signal::KILL);
                    drop(master);
                    // Last: the private temporary directory goes once the group is dead.
                    drop(held);
                });
            }
            _ => {
                supervise::signal_group(pid, Signal::KILL);
                drop(master);
                drop(held);
            }
        }
    }
}
