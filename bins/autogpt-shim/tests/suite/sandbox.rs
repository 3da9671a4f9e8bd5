//! The command sandbox by attack, through the real binary and the platform peer
//! (issue 14): every attack is refused under `workspace-write` + `deny` (the command fails
//! and nothing changes outside the folder) and succeeds with the sandbox `off`, which
//! proves the test can see an escape. The same runs again with the daemon as an
//! unprivileged user (`setpriv`), since tests run as root here. The corpus of ordinary
//! agent commands lives in `sandbox_corpus.rs`.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::net::TcpListener;
use std::net::UdpSocket;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;

use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use tokio::process::Child;
use tokio::process::Command;

use crate::suite::harness::Env;
use crate::suite::harness::T;
use crate::suite::harness::stop_cleanly;

const SID: &str = "7a1c0e52-9d4b-4c1e-8f3a-2b5d6e7f8a90";
/// The unprivileged user of the second run.
pub(crate) const NOBODY: u32 = 65_534;
/// Debian's interpreter, readable by every user (not a per-user install under /root).
pub(crate) const PY: &str = "/usr/bin/python3";

/// Servers run by the test that a confined command must not reach.
struct Services {
    tcp_port: u16,
    devtcp_port: u16,
    devtcp_hits: Arc<AtomicUsize>,
    tcp6_port: Option<u16>,
    udp_port: u16,
    unix_path: PathBuf,
    tcp_hits: Arc<AtomicUsize>,
    tcp6_hits: Arc<AtomicUsize>,
    udp_hits: Arc<AtomicUsize>,
    unix_hits: Arc<AtomicUsize>,
    /// Another terminal of the daemon's user (`/dev/pts/N`), held open by a process that
    /// copies what arrives on it to `tty_heard`.
    tty: String,
    tty_heard: PathBuf,
    _tty_holder: KillOnDrop,
}

/// A helper process, killed with the test.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A terminal the daemon's user owns, like the one their shell runs in: a Python process
/// opens a pty pair, gives the slave to `uid` and appends what is written to the slave to
/// `heard`. Returns the slave's path.
fn other_terminal(heard: &Path, uid: Option<u32>) -> (String, KillOnDrop) {
    let script = format!(
        "import os, pty, sys\n\
         m, s = pty.openpty()\n\
         name = os.ttyname(s)\n\
         {chown}\
         print(name, flush=True)\n\
         while True:\n\
         \x20   b = os.read(m, 4096)\n\
         \x20   if not b: break\n\
         \x20   open({heard:?}, 'ab').write(b)\n",
        chown = uid.map_or(String::new(), |u| format!("os.chown(name, {u}, {u})\n")),
        heard = heard.display().to_string(),
    );
    let mut child = std::process::Command::new(PY)
        .arg("-c")
        .arg(script)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let out = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap();
    let name = line.trim().to_owned();
    assert!(name.starts_with("/dev/pts/"), "{name:?}");
    (name, KillOnDrop(child))
}

fn count_tcp(l: TcpListener, hits: Arc<AtomicUsize>) {
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
}

fn services(outside: &Path, uid: Option<u32>) -> Services {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let tcp_hits = Arc::new(AtomicUsize::new(0));
    count_tcp(tcp, tcp_hits.clone());
    let devtcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let devtcp_port = devtcp.local_addr().unwrap().port();
    let devtcp_hits = Arc::new(AtomicUsize::new(0));
    count_tcp(devtcp, devtcp_hits.clone());
    let tcp6_hits = Arc::new(AtomicUsize::new(0));
    let tcp6_port = TcpListener::bind("[::1]:0").ok().map(|l| {
        let p = l.local_addr().unwrap().port();
        count_tcp(l, tcp6_hits.clone());
        p
    });
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let udp_hits = Arc::new(AtomicUsize::new(0));
    let h = udp_hits.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        // Answers every query with itself, as a resolver would answer.
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            h.fetch_add(1, Ordering::SeqCst);
            let _ = udp.send_to(&buf[..n], from);
        }
    });
    // Like an SSH agent or a session bus: a Unix socket outside the folder, that the
    // user may connect to.
    let unix_path = outside.join("agent.sock");
    let unix = UnixListener::bind(&unix_path).unwrap();
    std::fs::set_permissions(
        &unix_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let unix_hits = Arc::new(AtomicUsize::new(0));
    let h = unix_hits.clone();
    std::thread::spawn(move || {
        for mut s in unix.incoming().flatten() {
            h.fetch_add(1, Ordering::SeqCst);
            let mut b = [0u8; 16];
            let _ = s.read(&mut b);
        }
    });
    let tty_heard = outside.join("tty-heard.txt");
    let (tty, holder) = other_terminal(&tty_heard, uid);
    Services {
        tty,
        tty_heard,
        _tty_holder: holder,
        tcp_port,
        devtcp_port,
        devtcp_hits,
        tcp6_port,
        udp_port,
        unix_path,
        tcp_hits,
        tcp6_hits,
        udp_hits,
        unix_hits,
    }
}

/// Paths of one run.
struct Ctx {
    root: PathBuf,
    home: PathBuf,
    outside: PathBuf,
    parent: PathBuf,
}

/// One attack: the shell command, and whether it got out (checked after every command
/// ran, so the daemonized writer had its time).
struct Attack {
    name: &'static str,
    command: String,
    /// True when the command itself is expected to fail once refused (a daemonizing
    /// child's parent exits 0 either way).
    fails: bool,
    escaped: Box<dyn Fn(&str) -> bool>,
}

fn exists(p: PathBuf) -> Box<dyn Fn(&str) -> bool> {
    Box::new(move |_| p.exists())
}

fn contains(p: PathBuf, needle: &'static str) -> Box<dyn Fn(&str) -> bool> {
    Box::new(move |_| std::fs::read_to_string(&p).is_ok_and(|s| s.contains(needle)))
}

fn more_than(hits: &Arc<AtomicUsize>) -> Box<dyn Fn(&str) -> bool> {
    let before = hits.load(Ordering::SeqCst);
    let h = hits.clone();
    Box::new(move |_| {
        // Give the accept thread a moment to count a connection that was made.
        std::thread::sleep(Duration::from_millis(50));
        h.load(Ordering::SeqCst) > before
    })
}

fn attacks(c: &Ctx, s: &Services) -> Vec<Attack> {
    let o = c.outside.display();
    let h = c.home.display();
    let q = |p: &Path| format!("'{}'", p.display());
    std::fs::write(c.home.join(".bashrc"), "# original\n").unwrap();
    std::fs::create_dir_all(c.home.join(".ssh")).unwrap();
    std::fs::write(c.home.join(".ssh/id_ed25519"), "PLANTED-SECRET-KEY\n").unwrap();
    std::fs::write(c.outside.join("hardlink-target.txt"), "original\n").unwrap();
    let dns_query = "b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'";
    let mut v = vec![
        Attack {
            name: "write a file outside the folder",
            command: format!("echo pwned > '{o}/written.txt'"),
            fails: true,
            escaped: exists(c.outside.join("written.txt")),
        },
        Attack {
            name: "append to ~/.bashrc",
            command: format!("echo pwned >> '{h}/.bashrc'"),
            fails: true,
            escaped: contains(c.home.join(".bashrc"), "pwned"),
        },
        Attack {
            name: "read ~/.ssh/id_ed25519",
            command: format!("cat '{h}/.ssh/id_ed25519'"),
            fails: true,
            escaped: Box::new(|stdout| stdout.contains("PLANTED-SECRET-KEY")),
        },
        Attack {
            name: "follow a symlink made in the folder to the outside",
            command: format!("ln -s '{o}' out-link && echo pwned > out-link/via-symlink.txt"),
            fails: true,
            escaped: exists(c.outside.join("via-symlink.txt")),
        },
        Attack {
            name: "cd .. and write",
            command: "cd .. && echo pwned > cd-dotdot.txt".into(),
            fails: true,
            escaped: exists(c.parent.join("cd-dotdot.txt")),
        },
        Attack {
            name: "hard-link an outside file into the folder and write it",
            command: format!("ln '{o}/hardlink-target.txt' hl.txt && echo pwned >> hl.txt"),
            fails: true,
            escaped: contains(c.outside.join("hardlink-target.txt"), "pwned"),
        },
        Attack {
            name: "write through /proc/self/root",
            command: format!("echo pwned > '/proc/self/root{o}/via-proc.txt'"),
            fails: true,
            escaped: exists(c.outside.join("via-proc.txt")),
        },
        Attack {
            name: "connect to a TCP server on 127.0.0.1",
            command: format!(
                "{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {}), 3).sendall(b'pwned')\"",
                s.tcp_port
            ),
            fails: true,
            escaped: more_than(&s.tcp_hits),
        },
        Attack {
            name: "resolve a name over UDP",
            command: format!(
                "{PY} -c \"import socket; u=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3); u.sendto({dns_query}, ('127.0.0.1', {})); u.recv(512)\"",
                s.udp_port
            ),
            fails: true,
            escaped: more_than(&s.udp_hits),
        },
        Attack {
            name: "/dev/tcp in bash",
            command: format!(
                "bash -c 'echo pwned > /dev/tcp/127.0.0.1/{}'",
                s.devtcp_port
            ),
            fails: true,
            escaped: more_than(&s.devtcp_hits),
        },
        Attack {
            name: "talk to a Unix socket outside the folder",
            command: format!(
                "{PY} -c \"import socket; u=socket.socket(socket.AF_UNIX); u.connect({}); u.sendall(b'pwned')\"",
                q(&s.unix_path)
            ),
            fails: true,
            escaped: more_than(&s.unix_hits),
        },
        Attack {
            // What the user types in another terminal could be read the same way.
            name: "write to another terminal of the user",
            command: format!("echo pwned-tty > {}", s.tty),
            fails: true,
            escaped: contains(s.tty_heard.clone(), "pwned-tty"),
        },
        Attack {
            name: "a child that daemonizes and writes later",
            command: format!(
                "setsid sh -c 'sleep 1; echo pwned > \"{o}/later.txt\"' </dev/null >/dev/null 2>&1 &"
            ),
            fails: false,
            escaped: exists(c.outside.join("later.txt")),
        },
    ];
    if let Some(p6) = s.tcp6_port {
        v.push(Attack {
            name: "connect to a TCP server on ::1",
            command: format!(
                "{PY} -c \"import socket; socket.create_connection(('::1', {p6}), 3)\""
            ),
            fails: true,
            escaped: more_than(&s.tcp6_hits),
        });
    }
    v
}

/// `env.command(args)`, run as `uid` through `setpriv` when given.
pub(crate) fn daemon_command(env: &Env, args: &[&str], uid: Option<u32>) -> Command {
    let base = env.command(args);
    let Some(uid) = uid else {
        return base;
    };
    let std_cmd = base.as_std();
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg("--")
        .arg(std_cmd.get_program())
        .args(std_cmd.get_args())
        .env_clear();
    for (k, v) in std_cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    // The root user's tools (pyenv, rustup) are not the unprivileged user's.
    c.env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Gives every file of the test's directory to `uid` (the daemon's home, state,
/// credentials, the folder and the outside).
pub(crate) fn chown_all(dir: &Path, uid: u32) {
    let st = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{uid}"))
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success());
}

/// The legacy daemon with the shell enabled in the test's folder, plus `extra`, as `uid`.
fn start_command(env: &Env, extra: &[&str], uid: Option<u32>) -> Command {
    let root = env.root_str().to_owned();
    let mut args = vec![
        "--allowed-root",
        root.as_str(),
        "start",
        "--session-id",
        SID,
        "--enable-shell",
    ];
    args.extend_from_slice(extra);
    daemon_command(env, &args, uid)
}

pub(crate) async fn start(env: &Env, extra: &[&str], uid: Option<u32>) -> Child {
    start_command(env, extra, uid).spawn().unwrap()
}

/// Runs `command` in the folder; (exit code, stdout, stderr).
pub(crate) async fn run(
    conn: &shim_platform_peer::Connection,
    command: &str,
    timeout: u64,
) -> (i64, String, String) {
    let r = conn
        .request(
            Message::ExecuteCommand(ExecuteCommand {
                command: Some(command.to_owned()),
                timeout_seconds: Some(timeout),
                ..ExecuteCommand::default()
            }),
            Duration::from_secs(timeout + 10),
        )
        .await
        .unwrap();
    match r.frame.message {
        Message::CommandResult(c) => (c.exit_code, c.stdout, c.stderr),
        other => panic!("{command}: {other:?}"),
    }
}

async fn attack_run(confined: bool, uid: Option<u32>) {
    let env = Env::new(PeerConfig::default()).await;
    let parent = env.dir.path().to_owned();
    let outside = parent.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let ctx = Ctx {
        root: env.root.clone(),
        home: parent.join("home"),
        outside: outside.clone(),
        parent,
    };
    let svc = services(&outside, uid);
    let list = attacks(&ctx, &svc);
    if let Some(uid) = uid {
        chown_all(env.dir.path(), uid);
    }
    let flags: &[&str] = if confined {
        &[
            "--shell-sandbox",
            "workspace-write",
            "--shell-network",
            "deny",
        ]
    } else {
        &["--shell-sandbox", "off", "--shell-network", "allow"]
    };
    let child = start(&env, flags, uid).await;
    let conn = env.next().await;
    let mut outcomes = Vec::new();
    for a in &list {
        let (code, stdout, stderr) = run(&conn, &a.command, 10).await;
        outcomes.push((code, stdout, stderr));
    }
    // The daemonized writer sleeps 1 s before it writes.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let mut report = Vec::new();
    for (a, (code, stdout, stderr)) in list.iter().zip(&outcomes) {
        let escaped = (a.escaped)(stdout);
        let ok = if confined {
            !escaped && (!a.fails || *code != 0)
        } else {
            escaped
        };
        if !ok {
            report.push(format!(
                "{}: escaped={escaped} exit={code} stdout={stdout:?} stderr={stderr:?}",
                a.name
            ));
        }
    }
    assert!(
        report.is_empty(),
        "{} (uid {uid:?}):\n{}",
        if confined {
            "escapes under workspace-write + deny"
        } else {
            "attacks that did not work with the sandbox off (the test cannot see an escape)"
        },
        report.join("\n")
    );
    // Nothing of the root changed outside the folder: the home is as planted.
    if confined {
        assert_eq!(
            std::fs::read_to_string(ctx.home.join(".bashrc")).unwrap(),
            "# original\n"
        );
        assert_eq!(ctx.root, env.root);
    }
    stop_cleanly(child).await;
    // Each EXECUTE_COMMAND record names the modes that applied.
    let records = env.audit_records();
    let execs: Vec<_> = records
        .iter()
        .filter(|r| r["op"] == "EXECUTE_COMMAND")
        .collect();
    assert_eq!(execs.len(), list.len());
    let (sandbox, network) = if confined {
        ("workspace-write", "deny")
    } else {
        ("off", "allow")
    };
    for r in execs {
        assert_eq!(r["details"]["sandbox"], sandbox, "{r}");
        assert_eq!(r["details"]["network"], network, "{r}");
    }
    let start = records.iter().find(|r| r["op"] == "SHIM_START").unwrap();
    assert_eq!(start["details"]["shell_sandbox"], sandbox);
    assert_eq!(start["details"]["shell_network"], network);
}

#[tokio::test]
async fn attacks_are_refused_under_workspace_write_and_deny() {
    attack_run(true, None).await;
}

#[tokio::test]
async fn attacks_succeed_with_the_sandbox_off() {
    attack_run(false, None).await;
}

#[tokio::test]
async fn attacks_are_refused_for_an_unprivileged_daemon() {
    attack_run(true, Some(NOBODY)).await;
}

#[tokio::test]
async fn attacks_succeed_for_an_unprivileged_daemon_with_the_sandbox_off() {
    attack_run(false, Some(NOBODY)).await;
}

#[tokio::test]
async fn a_bad_or_unenforceable_sandbox_setting_refuses_to_start() {
    let env = Env::new(PeerConfig::default()).await;
    for (flags, vars, needle) in [
        (
            vec!["--shell-sandbox", "sandboxed"],
            vec![],
            "off, workspace-write, read-only",
        ),
        (
            vec![],
            vec![("AUTOGPT_SHIM_SHELL_NETWORK", "block")],
            "allow, deny",
        ),
    ] {
        let root = env.root_str().to_owned();
        let mut args = vec![
            "--allowed-root",
            root.as_str(),
            "start",
            "--session-id",
            SID,
        ];
        args.extend(flags);
        let mut c = env.command(&args);
        c.envs(vars);
        let (code, _, err) = crate::suite::harness::finish(c.spawn().unwrap(), T).await;
        assert_eq!(code, 78, "{err}");
        assert!(err.contains(needle) && err.contains("hint:"), "{err}");
    }
}

/// The commands' private temporary directories of a daemon in `tmp` (its `TMPDIR`).
fn private_parents(tmp: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("autogpt-shim-cmds-"))
        })
        .collect();
    v.sort();
    v
}

/// Starts a confined daemon whose `TMPDIR` is `tmp`, and its data connection.
async fn start_in_tmp(env: &Env, tmp: &Path) -> (Child, shim_platform_peer::Connection) {
    let mut cmd = start_command(env, &["--shell-sandbox", "workspace-write"], None);
    cmd.env("TMPDIR", tmp);
    let child = cmd.spawn().unwrap();
    (child, env.next().await)
}

/// Each command's `TMPDIR` sits in one directory per daemon, in a directory per chat
/// folder (so that `/tmp` does not change for every command, which made the sandbox list
/// it again: 30 ms a command). The daemon removes that directory when it stops; one it
/// could not remove (it was killed) is removed by the next daemon, and a live daemon's is
/// left alone.
#[tokio::test]
async fn private_temporary_directories_go_with_the_daemon_even_a_killed_one() {
    let env = Env::new(PeerConfig::default()).await;
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();

    // A clean stop leaves nothing.
    let (child, conn) = start_in_tmp(&env, &tmp).await;
    let (code, out, err) = run(&conn, "echo \"$TMPDIR\"", 10).await;
    assert_eq!(code, 0, "{err}");
    let cmd_tmp = PathBuf::from(out.trim());
    let parents = private_parents(&tmp);
    assert_eq!(parents.len(), 1, "{parents:?}");
    // The daemon's directory holds one directory per chat folder, and that the command's.
    assert_eq!(
        cmd_tmp.parent().and_then(Path::parent),
        Some(parents[0].as_path()),
        "{out}"
    );
    assert!(!cmd_tmp.exists(), "the command's directory outlived it");
    stop_cleanly(child).await;
    assert_eq!(private_parents(&tmp), Vec::<PathBuf>::new());

    // A killed daemon leaves its directory behind, with a running command's inside.
    let (mut killed, conn) = start_in_tmp(&env, &tmp).await;
    let run_long = tokio::spawn(async move { run(&conn, "sleep 30", 40).await });
    let left = loop {
        let p = private_parents(&tmp);
        if p.len() == 1 && std::fs::read_dir(&p[0]).unwrap().count() > 1 {
            break p[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    killed.kill().await.unwrap();
    run_long.abort();
    assert!(left.is_dir());

    // A live daemon's directory is not touched by another daemon.
    let other = Env::new(PeerConfig::default()).await;
    let (live, live_conn) = start_in_tmp(&other, &tmp).await;
    assert_eq!(run(&live_conn, "true", 10).await.0, 0);
    let live_dir = private_parents(&tmp)
        .into_iter()
        .find(|p| *p != left)
        .unwrap();

    // Leftovers are only swept once they are a minute old (a daemon that has just made its
    // directory may not hold its lock yet): age both, then let a new daemon run a command.
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(120);
    for p in [&left, &live_dir] {
        std::fs::File::open(p)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let third = Env::new(PeerConfig::default()).await;
    let (child, conn) = start_in_tmp(&third, &tmp).await;
    assert_eq!(run(&conn, "true", 10).await.0, 0);
    let now = private_parents(&tmp);
    assert!(
        !now.contains(&left),
        "the killed daemon's directory stays: {now:?}"
    );
    assert!(
        now.contains(&live_dir),
        "a live daemon's directory was removed: {now:?}"
    );
    assert_eq!(now.len(), 2, "{now:?}");
    stop_cleanly(child).await;
    stop_cleanly(live).await;
    assert_eq!(private_parents(&tmp), Vec::<PathBuf>::new());
}
