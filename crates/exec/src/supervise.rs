//! Child setup between `fork` and `execve`, and the sentinel that kills command trees
//! when the daemon dies.
//!
//! This is the only module of the crate that uses `unsafe` (see README.md). Code in the
//! `pre_exec` hooks runs in a forked child of a multi-threaded process, where only
//! async-signal-safe operations are allowed: no allocation, no locks, no `std` I/O
//! machinery. Every call there is a raw system-call wrapper from `libc`.
//!
//! Process layout:
//!
//! ```text
//! daemon ─┬─ command B (own session and process group, PDEATHSIG=SIGKILL, fchdir, execve)
//!         │    └── its children (same process group unless they leave it)
//!         └─ sentinel S (one per daemon: own session, all signals blocked, never execs)
//! ```
//!
//! * The daemon signals B's process group for timeouts and cancellation (12.9, 12.10).
//! * The daemon registers every command's process group with the sentinel by writing the
//!   pgid to a pipe. Only the daemon holds the write end (close-on-exec; the sentinel
//!   closes every other descriptor). When the daemon dies for any reason, including
//!   SIGKILL, the kernel closes it, the sentinel sees POLLHUP, reads the registrations
//!   still in the pipe and SIGKILLs every registered group that still has members, then
//!   exits. Once a second it drains new registrations and forgets groups that are empty
//!   (`kill(-pgid, 0)` fails with ESRCH); a registration never wakes it otherwise.
//! * `PR_SET_PDEATHSIG` alone cannot do this: it is cleared on fork (grandchildren never get
//!   it) and fires when the *thread* that forked exits. It is still set on B as a second
//!   line of defence for the main process.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// Installs the child setup of 12.6 as the `pre_exec` hook of `cmd`: new session (and so
/// a new process group whose id is the child's pid, no controlling terminal), parent-death
/// signal, and `fchdir` to the jailed directory descriptor `cwd`.
pub(crate) fn install_child_setup(cmd: &mut std::process::Command, cwd: RawFd) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the child after fork and only calls async-signal-safe
    // system calls (setsid, prctl, getppid, fchdir) on plain integers captured by value;
    // it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // The daemon died between fork and prctl: do not run orphaned.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
            }
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            let _ = parent;
            if libc::fchdir(cwd) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Installs the `pre_exec` hook that makes the child's stdin (the slave side of a
/// pseudo-terminal) its controlling terminal; it must run after the `setsid` of
/// [`install_child_setup`]. Without it the terminal sends no `SIGINT` on `^C` and no
/// `SIGWINCH` on resize.
pub(crate) fn install_controlling_tty(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child after fork and only calls ioctl(TIOCSCTTY)
    // with integer arguments; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            // The request type differs between libcs (`c_ulong` or `c_int`).
            #[allow(clippy::cast_lossless, clippy::useless_conversion)]
            if libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Installs the sentinel loop as the `pre_exec` hook of `cmd`; the child never returns
/// from it (the program of `cmd` is never executed). `reg_r` is the read end of the
/// registration pipe.
pub(crate) fn install_sentinel(cmd: &mut std::process::Command, reg_r: RawFd) {
    use std::os::unix::process::CommandExt;
    let args = arg_area();
    // SAFETY: the closure runs in the child after fork; `sentinel_main` uses only
    // async-signal-safe system calls, a fixed-size stack array and no allocation or lock.
    unsafe {
        cmd.pre_exec(move || sentinel_main(reg_r, args));
    }
}

/// What the sentinel calls itself: its process name (`comm`, at most 15 bytes) and its
/// command line, so that `ps` and `pgrep autogpt-shim` never take it for a second daemon
/// (it is a fork that never execs, so it would otherwise show the daemon's argv).
pub(crate) const SENTINEL_TITLE: &str = "shim-sentinel";

/// `[arg_start, arg_end)` of this process's argument strings (fields 48 and 49 of
/// `/proc/self/stat`), read before the fork because the child may not allocate.
fn arg_area() -> Option<(usize, usize)> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which may itself contain spaces and ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut fields = rest.split_whitespace().skip(48 - 3);
        let start: usize = fields.next()?.parse().ok()?;
        let end: usize = fields.next()?.parse().ok()?;
        (start > 0 && end > start && end - start <= 1 << 20).then_some((start, end))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    None
}

/// Renames the calling (forked, never exec'ing) process to [`SENTINEL_TITLE`].
///
/// SAFETY (caller): only called in the forked sentinel, which never returns to code that reads
/// its argument strings; `args` is the parent's argument area, inherited by the fork.
unsafe fn retitle(args: Option<(usize, usize)>) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut name = [0u8; 16];
        let n = SENTINEL_TITLE.len().min(15);
        name[..n].copy_from_slice(&SENTINEL_TITLE.as_bytes()[..n]);
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    }
    if let Some((start, end)) = args {
        let len = end - start;
        let p = start as *mut u8;
        let n = SENTINEL_TITLE.len().min(len - 1);
        // SAFETY: [start, end) is this process's own argument area (mapped, writable, a
        // copy-on-write copy of the daemon's); it is cleared, then the title is written with
        // a NUL after it, so /proc/PID/cmdline reads the title alone.
        unsafe {
            std::ptr::write_bytes(p, 0, len);
            std::ptr::copy_nonoverlapping(SENTINEL_TITLE.as_ptr(), p, n);
        }
    }
}

/// Closes every descriptor `>= from`.
///
/// SAFETY (caller): only called in a forked child that owns no Rust objects wrapping
/// these descriptors and will never return to code that uses them.
unsafe fn close_from(from: RawFd) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let first = libc::c_uint::try_from(from).unwrap_or(0);
        // SAFETY: close_range(2) with plain integer arguments.
        let r = unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
        if r == 0 {
            return;
        }
    }
    // SAFETY: sysconf and close are async-signal-safe.
    let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    let max = RawFd::try_from(max.clamp(1024, 65_536)).unwrap_or(1024);
    for fd in from..max {
        // SAFETY: closing a possibly unused descriptor number is harmless (EBADF).
        unsafe { libc::close(fd) };
    }
}

const MAX_GROUPS: usize = 4096;

/// The sentinel: never returns.
fn sentinel_main(reg_r: RawFd, args: Option<(usize, usize)>) -> io::Result<()> {
    const REG: RawFd = 0;
    let mut groups = [0 as libc::pid_t; MAX_GROUPS];
    let mut len = 0usize;
    // SAFETY: async-signal-safe system calls on valid, stack-owned buffers; the sigset_t
    // is initialised by sigfillset before use.
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        retitle(args);
        // Do not pin the daemon's working directory (or its mount).
        libc::chdir(c"/".as_ptr());
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        if reg_r != REG {
            libc::dup2(reg_r, REG);
        }
        // Drops the daemon's sockets, other pipes, the write end of the registration pipe
        // and std's exec-error pipe (which lets `spawn` return).
        close_from(1);
        // Non-blocking reads: registrations are drained on the timer and at hang-up, so
        // the daemon's write does not wake the sentinel for every command.
        let fl = libc::fcntl(REG, libc::F_GETFL);
        libc::fcntl(REG, libc::F_SETFL, fl | libc::O_NONBLOCK);
        loop {
            // events = 0: only POLLHUP/POLLERR (the daemon is gone) or the timer wake us.
            let mut pfd = libc::pollfd {
                fd: REG,
                events: 0,
                revents: 0,
            };
            let n = libc::poll(&mut pfd, 1, 1000);
            let hung_up = n > 0;
            // Drain pending registrations (after a hang-up the data is still readable).
            loop {
                let mut buf = [0u8; 4 * 256];
                let r = libc::read(REG, buf.as_mut_ptr().cast(), buf.len());
                if r <= 0 {
                    break;
                }
                let got = usize::try_from(r).unwrap_or(0);
                for rec in buf[..got].chunks_exact(4) {
                    let pgid = libc::pid_t::from_ne_bytes([rec[0], rec[1], rec[2], rec[3]]);
                    if len == MAX_GROUPS {
                        len = sweep(&mut groups, len);
                    }
                    if len < MAX_GROUPS && pgid > 1 {
                        groups[len] = pgid;
                        len += 1;
                    }
                }
            }
            if hung_up {
                // The daemon is gone.
                for &g in &groups[..len] {
                    libc::kill(-g, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            len = sweep(&mut groups, len);
        }
    }
}

/// Forgets groups that have no member left. Returns the new length.
fn sweep(groups: &mut [libc::pid_t; MAX_GROUPS], len: usize) -> usize {
    let mut kept = 0;
    for i in 0..len {
        let g = groups[i];
        // SAFETY: kill with signal 0 only checks for existence.
        let gone = unsafe { libc::kill(-g, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            groups[kept] = g;
            kept += 1;
        }
    }
    kept
}

/// Sends `sig` to the process group `pgid` (ESRCH, an already empty group, is ignored).
pub(crate) fn signal_group(pgid: i32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}
