//! Linux: starting a pipe command the way `posix_spawn` does, with
//! `clone(CLONE_VM | CLONE_VFORK)`, instead of std's `fork`.
//!
//! std takes its `fork` path as soon as a command has a `pre_exec` hook, and ours always has
//! one (new session, parent-death signal, `fchdir` to the jailed directory, the sandbox).
//! `fork` copies the daemon's page tables and leaves the parent and the child to be scheduled
//! side by side; measured by `cargo xtask bench e2e` (its spawn floors) it roughly doubles
//! the cost of starting `true` on this machine kind. Here the child borrows the daemon's
//! memory and the calling thread sleeps until the child has called `execve` (or failed), as
//! in glibc's `posix_spawn`, and the child makes exactly the system calls of the fork path,
//! in the same order, before `execve`.
//!
//! Rules for [`child`], which runs on a stack of its own but in the daemon's memory and
//! with the calling thread's thread-local storage: no allocation, no lock, no thread-local,
//! nothing but system calls on data prepared by the parent. Every signal is blocked around
//! the `clone`; the child resets caught signals to their default before it unblocks them,
//! so that no handler of the daemon ever runs on the child's stack.
//!
//! The child is waited for through a pidfd (tokio cannot adopt a process it did not
//! start); where the kernel has none ([`usable`]), the fork path runs, unchanged. Joining
//! the shared user and network namespaces of `deny` works here too: `setns` into a user
//! namespace refuses only a task that shares its thread group or its file-system
//! information, and the child shares neither (no `CLONE_THREAD`, no `CLONE_FS`).

// The clone(2) call and the child's system calls are OS APIs; each block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::ffi::c_int;
use std::ffi::c_void;
use std::io;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use crate::confine::Confinement;
use crate::process::SpawnSpec;

/// The child's stack. It runs only the set-up system calls and the sandbox's (a few
/// hundred bytes of frames); the pages are touched only as far as it goes.
const STACK: usize = 64 * 1024;

/// Whether commands can be started here without `fork`: pidfds exist (Linux 5.3).
pub(crate) fn usable() -> bool {
    static PIDFD: OnceLock<bool> = OnceLock::new();
    *PIDFD.get_or_init(|| {
        rustix::process::pidfd_open(
            rustix::process::getpid(),
            rustix::process::PidfdFlags::empty(),
        )
        .is_ok()
    })
}

/// A started command: its pid (also its process group and session), the parent's ends of
/// its pipes, and a pidfd to wait on.
pub(crate) struct Spawned {
    pub(crate) pid: i32,
    pub(crate) stdin: Option<OwnedFd>,
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    pub(crate) pidfd: OwnedFd,
}

/// What the child needs, prepared by the parent; the child only reads it.
struct ChildArgs<'a> {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// Descriptors (all ≥ 3) to place on 0, 1 and 2.
    stdio: [RawFd; 3],
    cwd: RawFd,
    parent: libc::pid_t,
    confine: Option<&'a Confinement>,
    /// The write end of the report pipe (close-on-exec): the errno of a failed step.
    report: RawFd,
}

/// A pipe whose ends are close-on-exec and numbered 3 or above (so that placing the
/// child's ends on 0, 1 and 2 never overwrites another of them): (read, write).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((above_stdio(r.into())?, above_stdio(w.into())?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Starts `spec` with its stdout and stderr on pipes, its stdin on a pipe (`stdin`) or
/// `/dev/null`, in a new session, with the parent-death signal, in the directory of
/// `spec.cwd` and under `confine`. The caller registers the group with the sentinel.
pub(crate) fn spawn(
    spec: &SpawnSpec,
    stdin: bool,
    confine: Option<&Confinement>,
) -> io::Result<Spawned> {
    // Everything the child reads is built here: it must not allocate.
    let program = c_string(spec.program.as_bytes())?;
    let argv: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| c_string(a.as_bytes()))
        .collect::<io::Result<_>>()?;
    let envs: Vec<CString> = spec
        .env
        .entries()
        .iter()
        .map(|(k, v)| {
            let mut kv = Vec::with_capacity(k.len() + v.len() + 1);
            kv.extend_from_slice(k.as_bytes());
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            c_string(&kv)
        })
        .collect::<io::Result<_>>()?;
    let argv_p: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = envs
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();

    let (in_r, in_w) = if stdin {
        let (r, w) = pipe()?;
        (r, Some(w))
    } else {
        let null = std::fs::File::open("/dev/null")?;
        (above_stdio(OwnedFd::from(null))?, None)
    };
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // A failed step is reported through a pipe, not the shared memory, so that it is seen
    // also where clone(CLONE_VM) is emulated by a fork (qemu-user): `execve` closes the
    // write end, a failure writes its errno first.
    let (report_r, report_w) = pipe()?;

    let args = ChildArgs {
        program: program.as_ptr(),
        argv: argv_p.as_ptr(),
        envp: envp.as_ptr(),
        stdio: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        cwd: spec.cwd.fd().as_raw_fd(),
        parent: libc::pid_t::try_from(std::process::id())
            .map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?,
        confine,
        report: report_w.as_raw_fd(),
    };
    let mut stack = vec![0u8; STACK];
    // The stack grows down: pass its end, aligned to 16 bytes as the ABI requires.
    let top = {
        let end = stack.as_mut_ptr().wrapping_add(STACK);
        end.wrapping_sub(end as usize % 16)
    };

    let pid = with_signals_blocked(|| {
        // SAFETY: `child` follows the rules of the module documentation; `top` is the
        // aligned end of `stack`, which outlives the call; CLONE_VFORK suspends this thread
        // until the child has called `execve` or `_exit`, so `args` and everything it points
        // to stay valid and untouched while the child reads them.
        unsafe {
            libc::clone(
                child,
                top.cast::<c_void>(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&args).cast_mut().cast::<c_void>(),
            )
        }
    })?;
    drop(stack);
    drop(report_w);
    if let Some(error) = reported(report_r)? {
        // The child has exited (`_exit(127)`): reap it.
        let _ = rustix::process::waitpid(
            rustix::process::Pid::from_raw(pid),
            rustix::process::WaitOptions::empty(),
        );
        return Err(io::Error::from_raw_os_error(error));
    }
    // clone returned a pid, so it is positive.
    let child_pid = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    let pidfd = match rustix::process::pidfd_open(child_pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(e) => {
            // Nothing could ever wait for it: it does not run.
            let _ = rustix::process::kill_process_group(child_pid, rustix::process::Signal::KILL);
            let _ =
                rustix::process::waitpid(Some(child_pid), rustix::process::WaitOptions::empty());
            return Err(e.into());
        }
    };
    Ok(Spawned {
        pid,
        stdin: in_w,
        stdout: out_r,
        stderr: err_r,
        pidfd,
    })
}

/// The errno the child wrote to the report pipe, `None` when it reached `execve` (the pipe
/// closed empty).
fn reported(pipe: OwnedFd) -> io::Result<Option<i32>> {
    use std::io::Read;
    let mut buf = [0u8; 4];
    let mut got = 0;
    let mut pipe = std::fs::File::from(pipe);
    while got < buf.len() {
        match pipe.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((got == buf.len()).then(|| i32::from_ne_bytes(buf)))
}

/// Runs `f` (which returns a pid or -1) with every signal blocked in this thread.
fn with_signals_blocked(f: impl FnOnce() -> c_int) -> io::Result<i32> {
    // SAFETY: sigfillset and pthread_sigmask on sigset_t values owned by this frame.
    unsafe {
        let mut all = std::mem::zeroed::<libc::sigset_t>();
        let mut old = std::mem::zeroed::<libc::sigset_t>();
        libc::sigfillset(&mut all);
        let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let pid = f();
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid == -1 { Err(err) } else { Ok(pid) }
    }
}

/// The child: the set-up of the fork path, then `execve`. On any failure it writes errno
/// to the report pipe and exits 127 (the parent reaps it and reports the error).
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` of `spawn`, alive and unchanged while this runs.
    let a = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    let fail = |a: &ChildArgs<'_>| -> c_int {
        let errno = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
            .to_ne_bytes();
        // SAFETY: write(2) of a 4-byte array on this frame to the report pipe, then _exit,
        // which ends this process without running anything of the daemon's. A pipe write
        // of 4 bytes is atomic.
        unsafe {
            libc::write(a.report, errno.as_ptr().cast::<c_void>(), errno.len());
            libc::_exit(127)
        }
    };
    // SAFETY (whole block): system calls on integers and on pointers prepared by the
    // parent; no allocation, lock or thread-local (module documentation).
    unsafe {
        // Caught signals back to the default before anything can unblock them; SIGPIPE,
        // which the Rust runtime ignores, back to the default as std's fork path does.
        // 1..=64: every signal number Linux has (NSIG is 65).
        for sig in 1..65 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut old = std::mem::zeroed::<libc::sigaction>();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let handled = old.sa_sigaction != libc::SIG_IGN && old.sa_sigaction != libc::SIG_DFL;
            if handled || sig == libc::SIGPIPE {
                let mut dfl = std::mem::zeroed::<libc::sigaction>();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        for (fd, target) in a.stdio.iter().zip(0..) {
            if libc::dup2(*fd, target) == -1 {
                return fail(a);
            }
        }
        if libc::setsid() == -1 {
            return fail(a);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // The daemon died before prctl: do not run orphaned.
        if libc::getppid() != a.parent {
            *libc::__errno_location() = libc::ESRCH;
            return fail(a);
        }
        if libc::fchdir(a.cwd) == -1 {
            return fail(a);
        }
        if let Some(c) = a.confine
            && let Err(e) = crate::confine::apply(c)
        {
            *libc::__errno_location() = e.raw_os_error().unwrap_or(libc::EPERM);
            return fail(a);
        }
        let mut none = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(a.program, a.argv, a.envp);
        fail(a)
    }
}

/// Waits for a process started by [`spawn`] through its pidfd. Dropped before the process
/// was reaped, it hands the reaping to a thread, so no zombie is left.
pub(crate) struct PidfdWaiter {
    pid: i32,
    fd: Option<tokio::io::unix::AsyncFd<OwnedFd>>,
}

impl PidfdWaiter {
    /// Must be called inside a tokio runtime.
    pub(crate) fn new(pid: i32, pidfd: OwnedFd) -> io::Result<Self> {
        Ok(Self {
            pid,
            // SAFETY: an OwnedFd is open for as long as it lives and always returns the
            // same descriptor, which is what registration requires.
            fd: Some(
                unsafe {
                    tokio::io::unix::AsyncFd::register_with_interest(
                        pidfd,
                        tokio::io::Interest::READABLE,
                    )
                }
                .map_err(|e| e.into_parts().1)?,
            ),
        })
    }

    /// The exit status; cancel-safe.
    pub(crate) async fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        let Some(fd) = &self.fd else {
            return Err(io::Error::from_raw_os_error(libc::ECHILD));
        };
        loop {
            let mut ready = fd.readable().await?;
            if let Some(status) = reap(self.pid, false)? {
                self.fd = None;
                return Ok(status);
            }
            ready.clear_ready();
        }
    }
}

/// `waitpid` for `pid`: `None` while it runs (unless `block`).
fn reap(pid: i32, block: bool) -> io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let opts = if block {
        rustix::process::WaitOptions::empty()
    } else {
        rustix::process::WaitOptions::NOHANG
    };
    let got = rustix::process::waitpid(rustix::process::Pid::from_raw(pid), opts)?;
    Ok(got.map(|(_, s)| std::process::ExitStatus::from_raw(s.as_raw())))
}

impl Drop for PidfdWaiter {
    fn drop(&mut self) {
        if self.fd.take().is_none() {
            return;
        }
        if matches!(reap(self.pid, false), Ok(Some(_)) | Err(_)) {
            return;
        }
        // Still running (the caller has signalled its group): a thread waits for it. Not a
        // task: a runtime shutting down drops new tasks at once.
        let pid = self.pid;
        std::thread::spawn(move || reap(pid, true));
    }
}

#[cfg(test)]
#[path = "vfork_tests.rs"]
mod tests;
