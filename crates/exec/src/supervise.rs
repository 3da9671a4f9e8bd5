//! The per-command supervisor that makes "never leaves an orphan" true on POSIX.
//!
//! This is the only module of the crate that uses `unsafe` (see README.md). Everything in
//! here runs in a forked child of a multi-threaded process, between `fork` and `execve`,
//! where only async-signal-safe operations are allowed: no allocation, no locks, no
//! `std` I/O machinery. Every call below is a raw system-call wrapper from `libc`.
//!
//! Process layout for one command:
//!
//! ```text
//! daemon ── A (supervisor: own session, child subreaper, never execs)
//!             └── B (the command: own session and process group, PDEATHSIG=SIGKILL,
//!                    fchdir to the jailed cwd handle, then execve)
//!                    └── grandchildren (same process group unless they leave it)
//! ```
//!
//! * The daemon signals B's process group for timeouts and cancellation (12.9, 12.10).
//! * A reaps B and reports B's pid and wait status to the daemon through a status pipe,
//!   then stays alive while any descendant lives (it is their subreaper), so that
//!   backgrounded stragglers that are allowed to outlive a normal exit (12.7 step 3) are
//!   still watched.
//! * A holds the read end of the daemon's process-wide *lifeline* pipe. Only the daemon
//!   holds the write end (it is close-on-exec, and A closes every other descriptor). When
//!   the daemon dies for any reason, including SIGKILL, the kernel closes the write end,
//!   A sees POLLHUP and SIGKILLs B's whole process group. `PR_SET_PDEATHSIG` alone cannot
//!   do this: it is cleared on fork (grandchildren never get it) and fires when the
//!   *thread* that forked exits, not the process. It is still set on B (parent = A) so
//!   that B dies if A is killed.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// Descriptors the supervisor needs, as raw numbers valid in the forked child. The caller
/// keeps the owning handles alive until `spawn` returns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SupervisorFds {
    /// Write end of the status pipe (daemon reads B's pid, then B's wait status).
    pub(crate) status_w: RawFd,
    /// Read end of the daemon's lifeline pipe.
    pub(crate) lifeline_r: RawFd,
    /// The jailed working directory.
    pub(crate) cwd: RawFd,
}

/// Installs the supervisor as the `pre_exec` hook of `cmd`.
pub(crate) fn install(cmd: &mut std::process::Command, fds: SupervisorFds) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child after fork. `fork_supervised` only calls
    // async-signal-safe system calls (setsid, sigprocmask, prctl, fork, fchdir, write,
    // dup2, close, waitpid, poll, read, kill, _exit), performs no allocation and takes no
    // lock; the values it captures are plain integers.
    unsafe {
        cmd.pre_exec(move || fork_supervised(fds));
    }
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// Runs in A. Forks B; returns `Ok(())` in B (which then execs), never returns in A.
fn fork_supervised(fds: SupervisorFds) -> io::Result<()> {
    // SAFETY: async-signal-safe system calls on valid arguments; the sigset_t values are
    // initialised by sigfillset/sigemptyset before use.
    unsafe {
        if libc::setsid() == -1 {
            return Err(last_err());
        }
        let a_pid = libc::getpid();
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        // A handles signals synchronously (signalfd/poll); nothing may kill it but SIGKILL.
        libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

        let pid = libc::fork();
        if pid < 0 {
            return Err(last_err());
        }
        if pid == 0 {
            // B.
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            if libc::setsid() == -1 {
                return Err(last_err());
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != a_pid {
                    // A already died: do not run unsupervised.
                    libc::_exit(127);
                }
            }
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            let _ = a_pid;
            if libc::fchdir(fds.cwd) == -1 {
                return Err(last_err());
            }
            return Ok(());
        }
        supervisor_loop(pid, fds)
    }
}

/// Writes all of `buf` to `fd`, retrying on EINTR; errors (EPIPE: the daemon stopped
/// listening) are ignored.
///
/// SAFETY (caller): async-signal-safe; `buf` is valid for its length.
unsafe fn write_all(fd: RawFd, buf: &[u8]) {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: pointer and length come from a live slice.
        let n = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if n > 0 {
            off += n.unsigned_abs();
        } else if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return;
        }
    }
}

/// Closes every descriptor `>= from`.
///
/// SAFETY (caller): only called in A, which owns no Rust objects wrapping these fds.
unsafe fn close_from(from: RawFd) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: close_range(2) with plain integer arguments.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                from as libc::c_uint,
                libc::c_uint::MAX,
                0,
            )
        };
        if r == 0 {
            return;
        }
    }
    // SAFETY: sysconf and close are async-signal-safe.
    let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    let max = if max <= 0 { 1024 } else { max.min(65_536) };
    let max = RawFd::try_from(max).unwrap_or(1024);
    for fd in from..max {
        // SAFETY: closing a possibly unused descriptor number is harmless (EBADF).
        unsafe { libc::close(fd) };
    }
}

/// A's main loop: report B's status, reap every adopted descendant, kill B's group when
/// the daemon dies, exit when nothing is left.
///
/// SAFETY (caller): runs in A after fork; async-signal-safe calls only.
unsafe fn supervisor_loop(main: libc::pid_t, fds: SupervisorFds) -> ! {
    const STATUS: RawFd = 0;
    const LIFELINE: RawFd = 1;
    // SAFETY: see the function contract; every call is a raw system call.
    unsafe {
        write_all(fds.status_w, &main.to_ne_bytes());
        // Keep exactly the status pipe (as 0) and the lifeline (as 1); close the daemon's
        // sockets, other commands' pipes, std's exec-error pipe and our stdout/stderr.
        if fds.lifeline_r == STATUS {
            libc::dup2(fds.lifeline_r, 3);
            libc::dup2(fds.status_w, STATUS);
            libc::dup2(3, LIFELINE);
        } else {
            libc::dup2(fds.status_w, STATUS);
            libc::dup2(fds.lifeline_r, LIFELINE);
        }
        close_from(2);

        #[cfg(any(target_os = "linux", target_os = "android"))]
        let sigfd = {
            let mut chld: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut chld);
            libc::sigaddset(&mut chld, libc::SIGCHLD);
            libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
        };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let sigfd: RawFd = -1;
        // Without a signalfd, poll with a short period instead.
        let period: libc::c_int = if sigfd >= 0 { -1 } else { 20 };

        let mut status_open = true;
        loop {
            loop {
                let mut st: libc::c_int = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r > 0 {
                    if r == main && status_open {
                        write_all(STATUS, &st.to_ne_bytes());
                        libc::close(STATUS);
                        status_open = false;
                    }
                    continue;
                }
                if r == 0 {
                    break;
                }
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                // ECHILD: no descendant left to supervise.
                libc::_exit(0);
            }
            let mut pfds = [
                libc::pollfd {
                    fd: LIFELINE,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: sigfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let n = libc::poll(pfds.as_mut_ptr(), 2, period);
            if n <= 0 {
                continue;
            }
            if pfds[0].revents != 0 {
                // The daemon is gone: kill the command's whole process group, then reap
                // until nothing is left.
                libc::kill(-main, libc::SIGKILL);
                loop {
                    let mut st: libc::c_int = 0;
                    let r = libc::waitpid(-1, &mut st, 0);
                    if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                        libc::_exit(0);
                    }
                }
            }
            if sigfd >= 0 && pfds[1].revents != 0 {
                let mut buf = [0u8; 512];
                while libc::read(sigfd, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
            }
        }
    }
}

/// Sends `sig` to the process group `pgid` (ESRCH, an already empty group, is ignored).
pub(crate) fn signal_group(pgid: i32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}
