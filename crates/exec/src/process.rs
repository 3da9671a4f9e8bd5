//! One process handle for pipes and PTYs (STYLE.md 11): spawn, write, read, resize, wait,
//! and kill-the-tree on drop.

use std::ffi::OsString;
use std::io::Read;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::sync::oneshot;

use crate::env::ChildEnv;
use crate::error::ExecError;
use crate::output::CHUNK;
use crate::output::Channel;
use crate::supervise;

/// Grace period between SIGTERM and SIGKILL, and each later wait (12.9).
pub const GRACE: Duration = Duration::from_secs(2);

/// A working directory handle the daemon obtained through the jail.
///
/// The child starts in exactly this directory: on the pipe path by `fchdir` on this
/// descriptor in the child before `execve` (no path string is resolved again, so a rename
/// or symlink swap after the jail check cannot redirect it, J-TOCTOU-1); on the PTY path
/// by `chdir("/proc/self/fd/N")`, which the kernel resolves through the same open
/// descriptor (needs procfs, Linux).
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
    /// Pipe path: B's pid then B's wait status arrive on the supervisor's status pipe.
    Supervised(StatusReader),
    /// PTY path: a thread waits on the portable-pty child.
    Pty(oneshot::Receiver<ExitCode>),
}

struct StatusReader {
    rx: tokio::net::unix::pipe::Receiver,
    buf: [u8; 4],
    have: usize,
}

impl StatusReader {
    /// Cancel-safe: partial reads are kept in `self`.
    async fn next(&mut self) -> Option<i32> {
        while self.have < 4 {
            match self.rx.read(&mut self.buf[self.have..]).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.have += n,
            }
        }
        self.have = 0;
        Some(i32::from_ne_bytes(self.buf))
    }
}

fn decode_wait_status(st: i32) -> ExitCode {
    if libc::WIFEXITED(st) {
        i64::from(libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        -i64::from(libc::WTERMSIG(st))
    } else {
        -1
    }
}

/// A running process (pipe or PTY). Dropping it before its exit was observed runs the
/// termination sequence of 12.9 on its process group (SIGTERM, up to 2 s, SIGKILL).
pub struct ProcessHandle {
    pid: i32,
    input: Option<mpsc::Sender<Vec<u8>>>,
    pub(crate) output: mpsc::Receiver<OutputChunk>,
    pub(crate) exit: ExitWaiter,
    master: Option<Box<dyn portable_pty::MasterPty + Send>>,
}

/// The exit side of a [`ProcessHandle`], separate so that output and exit can be awaited
/// at the same time.
pub(crate) struct ExitWaiter {
    pid: i32,
    source: Option<ExitSource>,
    code: Option<ExitCode>,
    /// The supervisor (pipe path). It exits once every descendant it adopted is reaped.
    supervisor: Option<tokio::process::Child>,
}

/// How long a timeout or cancellation waits, after the final SIGKILL, for the supervisor
/// to have reaped every member of the group (normally a few milliseconds).
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

/// The daemon's lifeline pipe (see [`crate::supervise`]): the write end lives as long as
/// this process; supervisors watch the read end.
fn lifeline() -> Result<&'static (OwnedFd, OwnedFd), ExecError> {
    static LIFELINE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();
    if let Some(l) = LIFELINE.get() {
        return Ok(l);
    }
    let (r, w) = std::io::pipe().map_err(ExecError::Spawn)?;
    let _ = LIFELINE.set((OwnedFd::from(r), OwnedFd::from(w)));
    LIFELINE
        .get()
        .ok_or_else(|| ExecError::Spawn(std::io::Error::other("lifeline unavailable")))
}

fn spawn_reader<R>(mut r: R, ch: Channel, tx: mpsc::Sender<OutputChunk>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let read = tokio::select! {
                r = r.read(&mut buf) => r,
                // The consumer stopped listening (12.7 step 3): close the pipe.
                () = tx.closed() => break,
            };
            match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = OutputChunk {
                        channel: ch,
                        data: buf[..n].to_vec(),
                    };
                    if tx.send(chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// Starts `spec` with pipes: stdin closed (the null device, 12.6) unless `stdin` is true,
/// stdout and stderr piped and drained concurrently into [`ProcessHandle::next_output`].
///
/// The command runs in its own session and process group under a supervisor (see
/// [`crate::supervise`]), so its whole tree can be signalled and dies with the daemon.
/// Must be called inside a tokio runtime.
pub fn spawn_pipe(spec: SpawnSpec, stdin: bool) -> Result<ProcessHandle, ExecError> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;

    let lifeline = lifeline()?;
    let (status_r, status_w) = std::io::pipe().map_err(ExecError::Spawn)?;
    let mut cmd = std::process::Command::new(&spec.program);
    if let Some((first, rest)) = spec.argv.split_first() {
        cmd.arg0(first).args(rest);
    }
    cmd.env_clear()
        .envs(spec.env.entries().iter().map(|(k, v)| (k, v)))
        .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    supervise::install(
        &mut cmd,
        supervise::SupervisorFds {
            status_w: status_w.as_raw_fd(),
            lifeline_r: lifeline.0.as_raw_fd(),
            cwd: spec.cwd.fd().as_raw_fd(),
        },
    );
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(false);
    let spawned = cmd.spawn();
    drop(status_w);
    let mut child = spawned.map_err(ExecError::Spawn)?;
    // The supervisor writes B's pid before it closes its copy of std's exec-error pipe, and
    // `spawn` returns only after every copy is closed: the pid is already in the pipe.
    let mut status_r = status_r;
    let mut pid_buf = [0u8; 4];
    status_r
        .read_exact(&mut pid_buf)
        .map_err(ExecError::Spawn)?;
    let pid = i32::from_ne_bytes(pid_buf);
    let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(status_r))
        .map_err(ExecError::Spawn)?;

    let (tx, output) = mpsc::channel(16);
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, Channel::Stdout, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, Channel::Stderr, tx);
    }
    let input = child.stdin.take().map(|mut w| {
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
    Ok(ProcessHandle {
        pid,
        input,
        output,
        exit: ExitWaiter {
            pid,
            source: Some(ExitSource::Supervised(StatusReader {
                rx,
                buf: [0; 4],
                have: 0,
            })),
            code: None,
            supervisor: Some(child),
        },
        master: None,
    })
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
/// The child is a session leader with the terminal as its controlling terminal
/// (portable-pty). It is not under the supervisor: if the daemon dies, the kernel closes
/// the master and hangs up the terminal, which sends SIGHUP to the session; a process that
/// ignores SIGHUP survives that (documented limitation). Must be called inside a tokio
/// runtime.
pub fn spawn_pty(spec: SpawnSpec, size: TermSize) -> Result<ProcessHandle, ExecError> {
    let system = portable_pty::native_pty_system();
    let pair = system.openpty(pty_size(size)).map_err(pty_err)?;
    let mut builder = portable_pty::CommandBuilder::from_argv(spec.argv.clone());
    builder.env_clear();
    for (k, v) in spec.env.entries() {
        builder.env(k, v);
    }
    // Resolved by the kernel through the open descriptor, in the child (after fork the
    // descriptor number is the same).
    builder.cwd(format!("/proc/self/fd/{}", spec.cwd.fd().as_raw_fd()));
    let mut child = pair.slave.spawn_command(builder).map_err(pty_err)?;
    drop(pair.slave);
    let pid = child
        .process_id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| pty_err("no pid"))?;
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
    let (etx, erx) = oneshot::channel();
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(st) => match st.signal() {
                Some(_) => -1,
                None => i64::from(st.exit_code()),
            },
            Err(_) => -1,
        };
        let _ = etx.send(code);
    });
    Ok(ProcessHandle {
        pid,
        input: Some(itx),
        output,
        exit: ExitWaiter {
            pid,
            source: Some(ExitSource::Pty(erx)),
            code: None,
            supervisor: None,
        },
        master: Some(pair.master),
    })
}

impl ProcessHandle {
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
        self.output.recv().await
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
            Some(ExitSource::Supervised(r)) => r.next().await.map_or(-1, decode_wait_status),
            Some(ExitSource::Pty(rx)) => rx.await.unwrap_or(-1),
            None => -1,
        };
        self.code = Some(code);
        self.source = None;
        code
    }

    pub(crate) async fn terminate(&mut self) -> ExitCode {
        if self.code.is_none() {
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
        // A killed process closes its pipes before it is reaped; wait until the supervisor
        // has reaped the whole tree so that nothing of the group is left when we return.
        if let Some(sup) = self.supervisor.as_mut() {
            let _ = tokio::time::timeout(REAP_WAIT, sup.wait()).await;
        }
        self.code.unwrap_or(-1)
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        if self.exit.code.is_some() {
            // The main process exited (or was given up on after SIGKILL): stragglers of a
            // normal exit are left to run under their supervisor (12.7 step 3).
            return;
        }
        // Cancellation (12.10): start the termination sequence now, finish it in the
        // background if a runtime is available, else kill at once.
        self.signal(Signal::TERM);
        let pid = self.pid;
        let exit = self.exit.source.take();
        let master = self.master.take();
        let supervisor = self.exit.supervisor.take();
        match (tokio::runtime::Handle::try_current(), exit) {
            (Ok(rt), Some(exit)) => {
                rt.spawn(async move {
                    let _supervisor = supervisor;
                    let _ = match exit {
                        ExitSource::Supervised(mut r) => {
                            tokio::time::timeout(GRACE, r.next()).await.is_ok()
                        }
                        ExitSource::Pty(rx) => tokio::time::timeout(GRACE, rx).await.is_ok(),
                    };
                    // Whether or not the main process went on SIGTERM, nothing of the group
                    // may survive a cancellation.
                    supervise::signal_group(pid, Signal::KILL);
                    drop(master);
                });
            }
            _ => {
                supervise::signal_group(pid, Signal::KILL);
                drop(master);
            }
        }
    }
}
