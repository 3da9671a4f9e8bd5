//! The vfork path on its own, with real processes. The executor's integration suite
//! (tests/suite) runs every pipe command through it too.

use std::ffi::OsString;
use std::io::Read;

use super::*;
use crate::HostOs;
use crate::env::BaseEnv;
use crate::env::ChildEnv;
use crate::process::WorkDir;
use crate::spec::WireEnv;

fn spec(dir: &std::path::Path, program: &str, argv: &[&str]) -> SpawnSpec {
    let base = BaseEnv::filter(
        HostOs::Posix,
        [(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))],
    );
    let wire = WireEnv::new(vec![("MARK".into(), "m1".into())]).unwrap();
    SpawnSpec {
        program: program.into(),
        argv: argv.iter().map(OsString::from).collect(),
        env: ChildEnv::merge(HostOs::Posix, &base, &wire),
        cwd: WorkDir::from_fd(
            OwnedFd::from(std::fs::File::open(dir).unwrap()),
            dir.display().to_string(),
        )
        .unwrap(),
    }
}

fn read_all(fd: OwnedFd) -> String {
    let mut s = String::new();
    std::fs::File::from(fd).read_to_string(&mut s).unwrap();
    s
}

/// The value of `field` in /proc/self/status as the command printed it.
fn status_field<'a>(status: &'a str, field: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .map_or("", str::trim)
}

#[tokio::test]
async fn a_command_started_without_fork_has_the_set_up_of_the_fork_path() {
    assert!(usable(), "pidfds are missing on this kernel");
    let dir = tempfile::tempdir().unwrap();
    // The shell reads its own status with its `read` builtin: while it waits for a child
    // (`cat`), dash blocks every signal for a moment around its sigsuspend, and a `cat` of
    // /proc/$$/status that reads it then sees that mask, not the one it was started with.
    let script = "pwd; echo \"$MARK\"; cat /proc/$$/stat; \
                  while IFS= read -r l; do echo \"$l\"; done < /proc/$$/status; \
                  echo err >&2; exit 3";
    let s = spawn(
        &spec(dir.path(), "/bin/sh", &["sh", "-c", script]),
        false,
        None,
    )
    .unwrap();
    let pid = s.pid;
    let mut waiter = PidfdWaiter::new(pid, s.pidfd).unwrap();
    let out = read_all(s.stdout);
    let err = read_all(s.stderr);
    let status = waiter.wait().await.unwrap();
    assert_eq!(status.code(), Some(3), "{out}");
    assert_eq!(err, "err\n");
    let mut lines = out.lines();
    // The jailed directory (by fchdir on its handle) and only the given environment.
    assert_eq!(
        std::path::Path::new(lines.next().unwrap()),
        dir.path().canonicalize().unwrap()
    );
    assert_eq!(lines.next(), Some("m1"));
    // Its own session and process group (fields 6 and 5 of stat, after the name).
    let stat = lines.next().unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    assert_eq!(fields[2], pid.to_string(), "process group: {stat}");
    assert_eq!(fields[3], pid.to_string(), "session: {stat}");
    // No signal blocked (every one is blocked in the parent around the clone); SIGPIPE,
    // which the Rust runtime ignores, back to its default as std's fork path leaves it;
    // what else this process ignores stays ignored, as across fork and exec.
    let status = lines.collect::<Vec<_>>().join("\n");
    assert_eq!(
        status_field(&status, "SigBlk:"),
        "0000000000000000",
        "{status}"
    );
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    let ignored = |s: &str| u64::from_str_radix(status_field(s, "SigIgn:"), 16).unwrap();
    let sigpipe = 1u64 << (libc::SIGPIPE - 1);
    assert_ne!(
        ignored(&ours) & sigpipe,
        0,
        "the test runs with SIGPIPE ignored"
    );
    assert_eq!(ignored(&status), ignored(&ours) & !sigpipe, "{status}");
    assert_eq!(
        status_field(&status, "PPid:"),
        std::process::id().to_string()
    );
}

#[tokio::test]
async fn stdin_is_a_pipe_when_asked_and_dev_null_otherwise() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let s = spawn(&spec(dir.path(), "/bin/cat", &["cat"]), true, None).unwrap();
    let mut waiter = PidfdWaiter::new(s.pid, s.pidfd).unwrap();
    let mut w = std::fs::File::from(s.stdin.unwrap());
    w.write_all(b"through the pipe").unwrap();
    drop(w);
    assert_eq!(read_all(s.stdout), "through the pipe");
    assert!(waiter.wait().await.unwrap().success());

    let s = spawn(&spec(dir.path(), "/bin/cat", &["cat"]), false, None).unwrap();
    let mut waiter = PidfdWaiter::new(s.pid, s.pidfd).unwrap();
    assert!(s.stdin.is_none());
    assert_eq!(read_all(s.stdout), "");
    assert!(waiter.wait().await.unwrap().success());
}

#[tokio::test]
async fn an_exec_failure_is_its_errno_and_the_child_is_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let e = spawn(
        &spec(dir.path(), "/nonexistent/program", &["x"]),
        false,
        None,
    )
    .err()
    .unwrap();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    // A directory is not executable: EACCES.
    let e = spawn(&spec(dir.path(), "/", &["x"]), false, None)
        .err()
        .unwrap();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e}");
    // An argument with NUL never reaches the child.
    let e = spawn(&spec(dir.path(), "/bin/true", &["a\0b"]), false, None)
        .err()
        .unwrap();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
}

#[tokio::test]
async fn a_waiter_dropped_before_the_exit_still_reaps_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let s = spawn(
        &spec(dir.path(), "/bin/sleep", &["sleep", "0.2"]),
        false,
        None,
    )
    .unwrap();
    let pid = s.pid;
    drop(PidfdWaiter::new(pid, s.pidfd).unwrap());
    drop((s.stdout, s.stderr));
    // Gone, not a zombie: /proc/<pid> disappears only once the process is reaped.
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while proc_dir.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!proc_dir.exists(), "pid {pid} was not reaped");
}
