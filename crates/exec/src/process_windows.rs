//! Windows processes (JAIL_FILES_EXEC.md 12.6-12.9): each command in its own Job Object
//! with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, assigned while the command is still
//! suspended, so that nothing it starts can escape the job; `CREATE_NEW_PROCESS_GROUP`
//! for `CTRL_BREAK_EVENT`; termination of the whole job on timeout and cancellation.
//!
//! When the daemon dies (even by `TerminateProcess`, `taskkill /F`), the kernel closes its
//! job handles and every process of every command dies with them. Stragglers of a
//! *normal* exit keep running (12.7 step 3), but their job handle is kept in a registry
//! so that they still die with the daemon.

#![allow(unsafe_code)]

use std::ffi::OsString;
use std::os::windows::io::AsRawHandle;
use std::os::windows::io::FromRawHandle;
use std::os::windows::io::OwnedHandle;
use std::os::windows::io::RawHandle;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use windows_sys::Win32::Foundation::CloseHandle;
use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Console::CTRL_BREAK_EVENT;
use windows_sys::Win32::System::Console::GenerateConsoleCtrlEvent;
use windows_sys::Win32::System::Console::GetConsoleWindow;
use windows_sys::Win32::System::Diagnostics::ToolHelp::CreateToolhelp32Snapshot;
use windows_sys::Win32::System::Diagnostics::ToolHelp::TH32CS_SNAPTHREAD;
use windows_sys::Win32::System::Diagnostics::ToolHelp::THREADENTRY32;
use windows_sys::Win32::System::Diagnostics::ToolHelp::Thread32First;
use windows_sys::Win32::System::Diagnostics::ToolHelp::Thread32Next;
use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
use windows_sys::Win32::System::JobObjects::CreateJobObjectW;
use windows_sys::Win32::System::JobObjects::JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
use windows_sys::Win32::System::JobObjects::JOBOBJECT_BASIC_ACCOUNTING_INFORMATION;
use windows_sys::Win32::System::JobObjects::JOBOBJECT_EXTENDED_LIMIT_INFORMATION;
use windows_sys::Win32::System::JobObjects::JobObjectBasicAccountingInformation;
use windows_sys::Win32::System::JobObjects::JobObjectExtendedLimitInformation;
use windows_sys::Win32::System::JobObjects::QueryInformationJobObject;
use windows_sys::Win32::System::JobObjects::SetInformationJobObject;
use windows_sys::Win32::System::JobObjects::TerminateJobObject;
use windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;
use windows_sys::Win32::System::Threading::CREATE_NO_WINDOW;
use windows_sys::Win32::System::Threading::CREATE_SUSPENDED;
use windows_sys::Win32::System::Threading::OpenThread;
use windows_sys::Win32::System::Threading::ResumeThread;
use windows_sys::Win32::System::Threading::THREAD_SUSPEND_RESUME;

use crate::env::ChildEnv;
use crate::error::ExecError;
use crate::output::CHUNK;
use crate::output::Channel;

/// Grace period between `CTRL_BREAK_EVENT` and terminating the job, and each later wait
/// (12.9).
pub const GRACE: Duration = Duration::from_secs(2);

/// Exit status as reported on the wire (12.8): the 32-bit exit code as an unsigned value
/// (e.g. 3221225786 for `STATUS_CONTROL_C_EXIT`), `-1` when no status is obtainable.
pub type ExitCode = i64;

/// Marks an `argv[1]` that is passed to the program as a raw command-line tail, without
/// per-argument quoting (the cmd.exe form of 12.3). NUL can never come from the wire
/// (12.1), so no request can produce it.
pub(crate) const RAW_TAIL: &str = "\0raw\0";

/// A working directory the daemon obtained through the jail: the opened directory handle
/// (held while the command starts, so the directory cannot be replaced) and its verified
/// final path, which is what Windows' `CreateProcessW` takes (12.2).
#[derive(Debug)]
pub struct WorkDir {
    _dir: std::fs::File,
    display: String,
}

impl WorkDir {
    /// Wraps a directory opened by the jail, with its canonical display path (4.8), which
    /// on Windows is the verified final path of that handle. Fails with `INTERNAL_ERROR`
    /// if the handle is not a directory (12.2).
    pub fn new(dir: cap_std::fs::Dir, display: impl Into<String>) -> Result<WorkDir, ExecError> {
        let f = dir.into_std_file();
        let meta = f.metadata().map_err(ExecError::Spawn)?;
        if !meta.is_dir() {
            return Err(ExecError::CwdNotDirectory);
        }
        Ok(WorkDir {
            _dir: f,
            display: display.into(),
        })
    }

    /// The display path.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Whether `rel` names a regular file relative to this directory (12.4, `argv[0]`
    /// with a separator).
    pub(crate) fn has_file(&self, rel: &std::path::Path) -> bool {
        std::fs::metadata(std::path::Path::new(&self.display).join(rel)).is_ok_and(|m| m.is_file())
    }
}

/// What to start: a resolved program and its full context.
#[derive(Debug)]
pub struct SpawnSpec {
    /// Path of the executable to run (already resolved, see [`crate::shell`]).
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
    /// The stream.
    pub channel: Channel,
    /// The bytes.
    pub data: Vec<u8>,
}

/// A Job Object with `KILL_ON_JOB_CLOSE`.
#[derive(Debug)]
struct Job(OwnedHandle);

impl Job {
    fn new() -> std::io::Result<Job> {
        // SAFETY: both pointers may be null (default security, unnamed job).
        let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if h.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `h` is a freshly created, owned job handle.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(h as RawHandle) });
        let mut info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the handle is valid; `info` is a JOBOBJECT_EXTENDED_LIMIT_INFORMATION of
        // the size passed.
        let ok = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&raw const info).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }

    fn raw(&self) -> windows_sys::Win32::Foundation::HANDLE {
        self.0.as_raw_handle()
    }

    fn assign(&self, process: RawHandle) -> std::io::Result<()> {
        // SAFETY: both handles are valid for the duration of the call.
        if unsafe { AssignProcessToJobObject(self.raw(), process) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends every process in the job (12.9).
    fn terminate(&self) {
        // SAFETY: the job handle is valid.
        unsafe { TerminateJobObject(self.raw(), 1) };
    }

    /// Processes still running in the job.
    fn active(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: the handle is valid; `info` is writable and of the size passed.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }
}

/// Jobs whose main process exited normally but which still have processes (12.7 step 3):
/// kept open so that those die with the daemon.
static LINGERING: Mutex<Vec<Job>> = Mutex::new(Vec::new());

fn linger(job: Job) {
    let mut jobs = LINGERING.lock().unwrap_or_else(|p| p.into_inner());
    jobs.retain(|j| j.active() > 0);
    if job.active() > 0 {
        jobs.push(job);
    }
}

/// Resumes every thread of a process started with `CREATE_SUSPENDED` (std does not expose
/// the main thread handle).
fn resume_process(pid: u32) -> std::io::Result<()> {
    // SAFETY: a plain snapshot call; the handle is closed below.
    let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snap == INVALID_HANDLE_VALUE {
        return Err(std::io::Error::last_os_error());
    }
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: `snap` is a valid snapshot; `entry` has its dwSize set.
    let mut more = unsafe { Thread32First(snap, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a plain open; the handle is closed right after use.
            let t = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !t.is_null() {
                // SAFETY: `t` is a valid thread handle with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(t) } != u32::MAX {
                    resumed += 1;
                }
                // SAFETY: `t` is owned here and not used afterwards.
                unsafe { CloseHandle(t) };
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap, &mut entry) } != 0;
    }
    // SAFETY: `snap` is owned here and not used afterwards.
    unsafe { CloseHandle(snap) };
    if resumed == 0 {
        return Err(std::io::Error::other("could not resume the new process"));
    }
    Ok(())
}

/// Where a handle's output comes from: both pipes, read in arrival order.
pub(crate) struct OutputSource {
    out: Option<tokio::process::ChildStdout>,
    err: Option<tokio::process::ChildStderr>,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
}

impl OutputSource {
    /// The next chunk from whichever stream has data; `None` at EOF of all. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<OutputChunk> {
        loop {
            let (channel, read) = match (self.out.as_mut(), self.err.as_mut()) {
                (None, None) => return None,
                (Some(o), None) => (Channel::Stdout, o.read(&mut self.out_buf).await),
                (None, Some(e)) => (Channel::Stderr, e.read(&mut self.err_buf).await),
                (Some(o), Some(e)) => tokio::select! {
                    r = o.read(&mut self.out_buf) => (Channel::Stdout, r),
                    r = e.read(&mut self.err_buf) => (Channel::Stderr, r),
                },
            };
            match read {
                Ok(n) if n > 0 => {
                    let buf = match channel {
                        Channel::Stdout => &self.out_buf[..n],
                        Channel::Stderr => &self.err_buf[..n],
                    };
                    return Some(OutputChunk {
                        channel,
                        data: buf.to_vec(),
                    });
                }
                _ => match channel {
                    Channel::Stdout => self.out = None,
                    Channel::Stderr => self.err = None,
                },
            }
        }
    }
}

/// The exit side of a [`ProcessHandle`].
pub(crate) struct ExitWaiter {
    child: tokio::process::Child,
    pid: u32,
    job: Option<Job>,
    code: Option<ExitCode>,
}

fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    status.code().map_or(-1, |c| i64::from(c as u32))
}

impl ExitWaiter {
    /// Waits for the main process. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> ExitCode {
        if let Some(c) = self.code {
            return c;
        }
        let c = self.child.wait().await.map_or(-1, exit_code_of);
        self.code = Some(c);
        c
    }

    /// 12.9: `CTRL_BREAK_EVENT` to the group, up to 2 s, then the whole job is
    /// terminated, then up to 2 s for the main process to be reaped.
    pub(crate) async fn terminate(&mut self) -> ExitCode {
        if self.code.is_none() {
            // SAFETY: a plain call; it fails harmlessly when no console is shared.
            unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.pid) };
            if let Ok(Ok(s)) = tokio::time::timeout(GRACE, self.child.wait()).await {
                self.code = Some(exit_code_of(s));
            }
        }
        // The timeout ends the whole job, also what the main process left behind.
        if let Some(job) = &self.job {
            job.terminate();
        }
        if let Some(c) = self.code {
            return c;
        }
        let c = match tokio::time::timeout(GRACE, self.child.wait()).await {
            Ok(Ok(s)) => exit_code_of(s),
            _ => -1,
        };
        self.code = Some(c);
        c
    }
}

impl Drop for ExitWaiter {
    fn drop(&mut self) {
        let Some(job) = self.job.take() else {
            return;
        };
        if self.code.is_some() {
            // A normal exit: stragglers keep running, but die with the daemon.
            linger(job);
        } else {
            // Cancelled (12.10): the whole job ends now.
            job.terminate();
        }
    }
}

/// A running process. Dropping it before its exit was observed terminates its job.
pub struct ProcessHandle {
    pid: u32,
    pub(crate) output: OutputSource,
    pub(crate) exit: ExitWaiter,
}

impl std::fmt::Debug for ProcessHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessHandle")
            .field("pid", &self.pid)
            .field("exit_code", &self.exit.code)
            .finish_non_exhaustive()
    }
}

impl ProcessHandle {
    /// The process id of the main process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The next output chunk; `None` once both pipes reached EOF.
    pub async fn next_output(&mut self) -> Option<OutputChunk> {
        self.output.next().await
    }

    /// Waits for the main process to exit.
    pub async fn wait(&mut self) -> ExitCode {
        self.exit.wait().await
    }

    /// Runs the termination sequence of 12.9 and returns the exit code.
    pub async fn terminate(&mut self) -> ExitCode {
        self.exit.terminate().await
    }
}

/// [`spawn_pipe`]; `confine` is always `None` here: Windows has no command sandbox yet (the
/// executor refuses an active one before it spawns), so no `Confinement` exists.
pub(crate) fn spawn_pipe_confined(
    spec: SpawnSpec,
    stdin: bool,
    confine: Option<std::sync::Arc<crate::confine::Confinement>>,
) -> Result<ProcessHandle, ExecError> {
    if let Some(c) = confine {
        crate::confine::unreachable(c);
    }
    spawn_pipe(spec, stdin)
}

/// Starts `spec` with stdin on the null device (12.6; `stdin` must be false on Windows),
/// stdout and stderr piped, in a new process group and its own Job Object. Must be called
/// inside a tokio runtime.
pub fn spawn_pipe(spec: SpawnSpec, stdin: bool) -> Result<ProcessHandle, ExecError> {
    use std::os::windows::process::CommandExt;
    use std::process::Stdio;
    if stdin {
        return Err(ExecError::Unsupported);
    }
    let mut cmd = std::process::Command::new(&spec.program);
    let mut args = spec.argv.iter().skip(1).peekable();
    if args.peek().is_some_and(|a| a.to_str() == Some(RAW_TAIL)) {
        args.next();
        for a in args {
            cmd.raw_arg(a);
        }
    } else {
        cmd.args(args);
    }
    cmd.env_clear();
    for (k, v) in spec.env.entries() {
        cmd.env(k, v);
    }
    cmd.current_dir(spec.cwd.display());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: a plain query without arguments.
    let no_console = unsafe { GetConsoleWindow() }.is_null();
    let mut flags = CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED;
    if no_console {
        flags |= CREATE_NO_WINDOW;
    }
    cmd.creation_flags(flags);
    let job = Job::new().map_err(ExecError::Spawn)?;
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .map_err(ExecError::Spawn)?;
    let pid = child.id().unwrap_or(0);
    let started = child
        .raw_handle()
        .ok_or_else(|| std::io::Error::other("no process handle"))
        .and_then(|h| job.assign(h))
        .and_then(|()| resume_process(pid));
    if let Err(e) = started {
        job.terminate();
        let _ = child.start_kill();
        return Err(ExecError::Spawn(e));
    }
    let out = child.stdout.take();
    let err = child.stderr.take();
    drop(spec.cwd);
    Ok(ProcessHandle {
        pid,
        output: OutputSource {
            out,
            err,
            out_buf: vec![0u8; CHUNK].into_boxed_slice(),
            err_buf: vec![0u8; CHUNK].into_boxed_slice(),
        },
        exit: ExitWaiter {
            child,
            pid,
            job: Some(job),
            code: None,
        },
    })
}

/// 12.3 and 12.4 on Windows: the program and argument vector for `program`, with shells
/// looked up on the daemon's own `PATH` and `argv[0]` on the merged child `PATH` with the
/// `PATHEXT` extensions (never the daemon's or the child's current directory).
pub(crate) fn resolve_windows(
    program: &crate::spec::Program,
    env: &ChildEnv,
    cwd: &WorkDir,
    daemon_path: Option<&std::ffi::OsStr>,
) -> Result<(OsString, Vec<OsString>), ExecError> {
    use crate::spec::HostOs;
    use crate::spec::Program;
    use std::path::Path;
    match program {
        Program::Shell { command, shell } => {
            let exe = crate::shell::resolve_shell(HostOs::Windows, *shell, daemon_path)?;
            let name = exe
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let argv = if name == "cmd.exe" {
                // The raw form of 12.3: `"<exe>" /D /S /C "chcp 65001 >NUL & <command>"`.
                vec![
                    exe.clone().into_os_string(),
                    RAW_TAIL.into(),
                    format!("/D /S /C \"chcp 65001 >NUL & {command}\"").into(),
                ]
            } else {
                crate::shell::shell_argv(&exe, *shell, command)
            };
            Ok((exe.into_os_string(), argv))
        }
        Program::Argv(argv) => {
            let name = argv.program();
            let not_found = || ExecError::ExecutableNotFound {
                program: name.to_owned(),
            };
            let resolved: OsString = if name.contains(['/', '\\']) {
                let path = Path::new(name);
                if path.is_absolute() {
                    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                        return Err(not_found());
                    }
                    name.into()
                } else {
                    // Relative with a separator: against the validated cwd.
                    if !cwd.has_file(path) {
                        return Err(not_found());
                    }
                    Path::new(cwd.display()).join(path).into_os_string()
                }
            } else {
                search_with_pathext(name, env)
                    .ok_or_else(not_found)?
                    .into_os_string()
            };
            let argv = argv.as_slice().iter().map(OsString::from).collect();
            Ok((resolved, argv))
        }
    }
}

/// `name` on the child's `PATH`; without an extension, each `PATHEXT` extension (default
/// `.COM;.EXE;.BAT;.CMD`) is tried in each directory, in order.
fn search_with_pathext(name: &str, env: &ChildEnv) -> Option<std::path::PathBuf> {
    use crate::spec::HostOs;
    let path = env.get(HostOs::Windows, "PATH")?;
    let has_ext = std::path::Path::new(name).extension().is_some();
    let pathext = env
        .get(HostOs::Windows, "PATHEXT")
        .and_then(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .unwrap_or(".COM;.EXE;.BAT;.CMD")
        .to_owned();
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .find_map(|dir| {
            if has_ext {
                let c = dir.join(name);
                return c.is_file().then_some(c);
            }
            pathext
                .split(';')
                .filter(|e| !e.is_empty())
                .map(|e| dir.join(format!("{name}{e}")))
                .find(|c| c.is_file())
        })
}
