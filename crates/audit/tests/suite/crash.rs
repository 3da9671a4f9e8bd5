//! Crash consistency: a child process appending in a loop is killed with SIGKILL at a random
//! moment, 200 times. After each kill a new writer opens the log (continuing the chain, or
//! rotating a torn tail aside per 1.12) and verify-all passes.

use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use super::common::*;
use shim_audit::ViolationKind;
use shim_audit::verify_all;

const CHILD_ENV: &str = "SHIM_AUDIT_CRASH_CHILD_LOG";

/// Not a test of its own: the body of the child process (runs only with CHILD_ENV set).
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    // Several appending threads so that batches (one write each) span several records.
    let log = open(&path);
    println!("ready");
    let mut handles = Vec::new();
    for t in 0..4 {
        let log = log.clone();
        handles.push(std::thread::spawn(move || {
            let mut i = 0usize;
            loop {
                log.append_blocking(event(t * 1_000_000 + i)).unwrap();
                i += 1;
            }
        }));
    }
    for h in handles {
        let _ = h.join();
    }
}

/// A tiny xorshift so the test needs no extra dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Starts the crash child. Under Wine, starting a process right after one was terminated
/// once failed with ERROR_INTERNAL_ERROR (1359) in CI; the child is the test's scaffolding,
/// not what it checks, so on Windows a failed start is tried again (up to 5 times, 100 ms
/// apart).
fn start_child(cmd: &mut Command, round: usize) -> std::process::Child {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Ok(child) => return child,
            Err(_) if cfg!(windows) && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("round {round}: cannot start the crash child: {e}"),
        }
    }
}

/// On Windows the kill is `TerminateProcess` (what `taskkill /F` does), in fewer rounds:
/// starting a process is much slower there (and under Wine).
#[test]
fn two_hundred_sigkills_never_break_the_log() {
    use std::io::BufRead;
    use std::io::BufReader;
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    const ROUNDS: usize = if cfg!(windows) { 40 } else { 200 };

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let exe = std::env::current_exe().unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
    let mut recoveries = 0;
    let started = Instant::now();
    for round in 0..ROUNDS {
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--exact",
            "suite::crash::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &p)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        let mut child = start_child(&mut cmd, round);
        // Wait until the child has its writer open, then let it append for 0-12 ms.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("ready") {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(next(&mut rng) % 12_000));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        #[cfg(unix)]
        assert_eq!(
            status.signal(),
            Some(9),
            "round {round}: child ended before the kill"
        );
        // std's kill is TerminateProcess with exit code 1.
        #[cfg(windows)]
        assert_eq!(
            status.code(),
            Some(1),
            "round {round}: child ended before the kill"
        );

        let before = shim_audit::files::list_rotated(&p).unwrap().len();
        let log = open(&p);
        log.append_blocking(event(round)).unwrap();
        drop(log);
        let after = shim_audit::files::list_rotated(&p).unwrap();
        if after.len() > before {
            recoveries += 1;
            assert!(lines(&p)[0].contains("\"reason\": \"recovery\""));
        }
        let all = verify_all(&p, &key()).unwrap();
        for f in &all.files {
            if f.path == p {
                assert!(
                    f.is_clean(),
                    "round {round}: current file: {:?}",
                    f.violations
                );
                continue;
            }
            // A rotated file is clean, or it is a torn tail set aside by recovery: then its
            // only findings are on its cut last line.
            let data = std::fs::read(&f.path).unwrap();
            let last_line = data.split(|&c| c == b'\n').count() as u64;
            let only_torn_tail = f.violations.iter().all(|v| {
                matches!(v.kind, ViolationKind::Truncated | ViolationKind::ParseError)
                    && v.line == last_line
            });
            assert!(
                f.is_clean() || only_torn_tail,
                "round {round}: {:?}: {:?}",
                f.path,
                f.violations
            );
        }
    }
    eprintln!(
        "{ROUNDS} kills in {:?}; {recoveries} torn tails were rotated aside, the rest continued",
        started.elapsed()
    );
}
