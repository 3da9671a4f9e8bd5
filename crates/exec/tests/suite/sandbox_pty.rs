//! The sandbox on the PTY path ([`shim_exec::PreparedCommand::spawn_pty`]), by attack:
//! writing outside the folder, reading a planted `~/.ssh/id_ed25519` and connecting to a
//! TCP server on 127.0.0.1 are each refused under `workspace-write` + `deny` and succeed
//! with the sandbox `off` (so the test can see an escape). The whole set runs again as an
//! unprivileged user: this test binary re-executed through `setpriv` as uid 65534.
//!
//! The daemon has no PTY message on the wire (the protocol's `EXECUTE_COMMAND` is a pipe
//! command), so there is no path through the real binary and the platform peer to test:
//! the executor library is the PTY path's only entry.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;

use shim_exec::TermSize;
use shim_exec::sandbox::NetMechanism;
use shim_exec::sandbox::NetworkMode;
use shim_exec::sandbox::SandboxMode;

use super::common::*;

/// Set in the re-executed test binary: run [`attacks`] and print `PTY-ATTACKS-PASSED`.
const ENTRY: &str = "SHIM_EXEC_PTY_ATTACK_ENTRY";
/// The unprivileged user of the second run.
const NOBODY: u32 = 65_534;

/// The fixture of the sandbox tests and a TCP listener on loopback that counts connections.
struct Fixture {
    base: SandboxFixture,
    tcp_port: u16,
    tcp_hits: Arc<AtomicUsize>,
}

impl std::ops::Deref for Fixture {
    type Target = SandboxFixture;

    fn deref(&self) -> &SandboxFixture {
        &self.base
    }
}

fn fixture() -> Fixture {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let tcp_hits = Arc::new(AtomicUsize::new(0));
    let hits = tcp_hits.clone();
    std::thread::spawn(move || {
        for s in tcp.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    Fixture {
        base: sandbox_fixture(),
        tcp_port,
        tcp_hits,
    }
}

/// What one command on a PTY did.
struct PtyRun {
    exit: i64,
    /// Everything the terminal showed.
    screen: String,
    /// The audit details' `sandbox` and `network`.
    audited: (&'static str, &'static str),
}

/// Runs `command` with `sh -c` on a pseudo-terminal through the executor, to its end.
async fn on_pty(exec: &shim_exec::Executor, f: &Fixture, command: &str) -> PtyRun {
    let prepared = exec
        .prepare(
            &sh(command),
            &f.root.path().display().to_string(),
            f.root.resolver(),
        )
        .unwrap_or_else(|r| panic!("{command}: refused: {}", r.error));
    let details = prepared.audit_details().clone();
    let mut h = prepared
        .spawn_pty(TermSize { rows: 24, cols: 80 })
        .unwrap_or_else(|e| panic!("{command}: spawn: {e}"));
    let mut screen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match tokio::time::timeout_at(deadline, h.next_output()).await {
            Ok(Some(c)) => screen.push_str(&String::from_utf8_lossy(&c.data)),
            Ok(None) => break,
            Err(_) => panic!("{command}: no EOF on the terminal; got {screen:?}"),
        }
    }
    let exit = tokio::time::timeout(Duration::from_secs(10), h.wait())
        .await
        .unwrap_or_else(|_| panic!("{command}: did not exit"));
    PtyRun {
        exit,
        screen,
        audited: (details.sandbox, details.network),
    }
}

/// Every attack, refused with the sandbox on and succeeding with it off, for each way
/// `deny` can be enforced here. Panics with the reason on the first failure.
async fn attacks() {
    let mut mechanisms = vec![NetMechanism::Seccomp];
    if shim_exec::confine::support().user_namespaces {
        mechanisms.push(NetMechanism::Namespace);
    }
    for mech in mechanisms {
        let f = fixture();
        let on = sandboxed(&f, SandboxMode::WorkspaceWrite, NetworkMode::Deny, mech);
        let off = sandboxed(&f, SandboxMode::Off, NetworkMode::Allow, mech);
        let outside = f.outside.join("pty.txt");
        let write = format!("echo pwned > '{}'", outside.display());
        let key = f.home.join(".ssh/id_ed25519");
        let read = format!("cat '{}'", key.display());
        let connect = format!(
            "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {}), 3); print('CONN' 'ECTED')\"",
            f.tcp_port
        );

        // Sandbox on: each refused, and the audit says what applied.
        let r = on_pty(&on, &f, &write).await;
        assert_eq!(r.audited, ("workspace-write", "deny"), "{mech:?}");
        assert!(
            r.exit != 0 && !outside.exists(),
            "{mech:?}: wrote outside: {:?}",
            r.screen
        );
        let r = on_pty(&on, &f, &read).await;
        assert!(
            r.exit != 0 && !r.screen.contains("SECRET-KEY"),
            "{mech:?}: read the key: {:?}",
            r.screen
        );
        let before = f.tcp_hits.load(Ordering::SeqCst);
        let r = on_pty(&on, &f, &connect).await;
        assert!(
            r.exit != 0 && !r.screen.contains("CONNECTED"),
            "{mech:?}: connected: {:?}",
            r.screen
        );
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            f.tcp_hits.load(Ordering::SeqCst),
            before,
            "{mech:?}: the server saw a connection"
        );
        // Ordinary work in the folder and the private TMPDIR still work on the terminal,
        // and the TMPDIR is gone once the command is over.
        let r = on_pty(
            &on,
            &f,
            "echo ok > inside.txt && echo t > \"$TMPDIR/t\" && echo \"TMP=$TMPDIR\" && tty",
        )
        .await;
        assert_eq!(r.exit, 0, "{mech:?}: {:?}", r.screen);
        assert!(f.root.path().join("inside.txt").exists());
        assert!(
            r.screen.contains("/dev/pts/"),
            "{mech:?}: not a terminal: {:?}",
            r.screen
        );
        let tmp = r
            .screen
            .lines()
            .find_map(|l| l.trim_end().strip_prefix("TMP="))
            .unwrap_or_else(|| panic!("no TMPDIR: {:?}", r.screen))
            .to_owned();
        assert!(tmp.contains("/autogpt-shim-cmds-"), "{tmp}");
        assert!(!Path::new(&tmp).exists(), "{tmp} left behind");

        // Sandbox off: each succeeds, so the checks above can see an escape.
        let r = on_pty(&off, &f, &write).await;
        assert_eq!(r.audited, ("off", "allow"));
        assert!(r.exit == 0 && outside.exists(), "off: {:?}", r.screen);
        let r = on_pty(&off, &f, &read).await;
        assert!(r.screen.contains("SECRET-KEY"), "off: {:?}", r.screen);
        let r = on_pty(&off, &f, &connect).await;
        assert!(r.screen.contains("CONNECTED"), "off: {:?}", r.screen);
        assert!(f.tcp_hits.load(Ordering::SeqCst) > before);
    }
}

#[tokio::test]
async fn pty_attacks_are_refused_under_the_sandbox_and_succeed_without_it() {
    if std::env::var_os(ENTRY).is_some() {
        return;
    }
    attacks().await;
}

/// The entry of the re-executed binary (a no-op in a normal run).
#[test]
fn pty_attack_entry() {
    if std::env::var_os(ENTRY).is_none() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(attacks());
    println!("PTY-ATTACKS-PASSED");
}

#[test]
fn pty_attacks_are_refused_as_an_unprivileged_user() {
    if std::env::var_os(ENTRY).is_some() {
        return;
    }
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP: needs root to act as another user (setpriv)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new("setpriv")
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups")
        .arg("--")
        .arg(&exe)
        .args([
            "--exact",
            "suite::sandbox_pty::pty_attack_entry",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env_clear()
        .env(ENTRY, "1")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TMPDIR", "/tmp")
        .env("HOME", "/nonexistent")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux) is needed");
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success() && out.contains("PTY-ATTACKS-PASSED"),
        "as uid {NOBODY}: {status}\nstdout: {out}\nstderr: {err}"
    );
}
