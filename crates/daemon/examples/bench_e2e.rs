//! The end-to-end benchmark in one run (`cargo xtask bench e2e` builds the release binary and
//! calls this):
//!
//! ```text
//! cargo build --release -p autogpt-shim
//! cargo run --release -p shim-daemon --example bench_e2e -- target/release/autogpt-shim
//! ```
//!
//! It starts the real `autogpt-shim` binary in legacy mode against the loopback platform peer
//! (crates/platform-peer) with a throw-away home, state and credential file, and prints:
//! * the time from process start to the peer holding the daemon's `HELLO` (median of
//!   `BENCH_E2E_STARTS`, default 5), per credential store: the OS keychain when a Secret
//!   Service answers (`cargo xtask bench e2e` provides one), the encrypted file as
//!   `autogpt-shim auth` writes it (Argon2 64 MiB, 3 passes), and at the readers' minimum
//!   parameters (19 MiB, 2 passes), which the rest of the run uses;
//! * the daemon's idle resident memory (`VmRSS`), and its loaded `VmRSS` / peak `VmHWM`;
//! * p50 / p99 round trips of `FILE_STAT`, a 4 KiB `FILE_READ`, a 64 KiB `FILE_WRITE` and
//!   `EXECUTE_COMMAND true`, sequential, each audited with fsync as in production;
//! * throughput of `FILE_STAT` with `max_concurrent` requests in flight;
//! * the floor: a bare tokio-tungstenite echo round trip of a `FILE_STAT`-sized text frame
//!   over loopback (TCP_NODELAY on both ends);
//! * what the disk adds: append + `fdatasync` of a 300-byte line in the audit log's directory,
//!   which AUDIT_AUTH_CLI.md 1.11 step 4 puts before every audited response.
//!
//! Environment: `BENCH_E2E_ITERS` (sequential requests per kind, default 2000; a quarter of
//! that for writes and commands), `BENCH_E2E_SECS` (throughput phase, default 3),
//! `BENCH_E2E_AUDIT_DIR` (where the audit log goes; default the temp dir), `MALLOC_*`
//! (passed through to the daemon).
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use futures_util::SinkExt;
use futures_util::StreamExt;
use shim_auth::CredentialStore;
use shim_auth::EncryptedFileStore;
use shim_auth::KdfParams;
use shim_auth::Secret;
use shim_platform_peer::Connection;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileRead;
use shim_protocol::messages::files::FileStat;
use shim_protocol::messages::files::FileWrite;
use shim_protocol::messages::files::ReadFormat;
use tokio_tungstenite::tungstenite::Message as WsMessage;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const PASSPHRASE: &str = "bench-e2e-passphrase";
const PLATFORM_URL: &str = "http://127.0.0.1:9";
const SESSION: &str = "3b1d6f0e-bench-4e2e-9a11-000000000001";
const LOCAL_MAX_CONCURRENT: u32 = 4;
const T: Duration = Duration::from_secs(30);

fn env_num(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where the daemon finds its credentials.
enum Store {
    /// `tokens.enc` in this directory.
    File(PathBuf),
    /// The OS keychain (Secret Service on Linux), reached through this session bus.
    Keychain(std::ffi::OsString),
}

/// Writes the audit key and tokens the binary reads into `store`.
fn credentials(store: &dyn CredentialStore) -> Res<()> {
    let key = shim_audit::AuditKey::generate()?;
    store.set(
        shim_auth::account::AUDIT_KEY,
        &Secret::new(key.to_hex().as_str()),
    )?;
    let dep = format!("autogpt-local-executor@{PLATFORM_URL}");
    store.set(
        &shim_auth::account::access_token(&dep),
        &Secret::new("bench-access-token"),
    )?;
    store.set(
        &shim_auth::account::refresh_token(&dep),
        &Secret::new("bench-refresh-token"),
    )?;
    Ok(())
}

/// An encrypted credential file in `dir` written with Argon2 `params`.
fn file_store(dir: &Path, params: KdfParams) -> Res<Store> {
    std::fs::create_dir_all(dir)?;
    credentials(&EncryptedFileStore::with_params(
        dir,
        Secret::new(PASSPHRASE),
        params,
    )?)?;
    Ok(Store::File(dir.to_owned()))
}

/// The OS keychain when a Secret Service answers (`cargo xtask bench e2e` provides one with
/// `dbus-run-session` and `gnome-keyring-daemon` when they are installed).
fn keychain_store() -> Option<Store> {
    let bus = std::env::var_os("DBUS_SESSION_BUS_ADDRESS")?;
    let k = shim_auth::KeychainStore::new();
    k.probe().ok()?;
    credentials(&k).ok()?;
    Some(Store::Keychain(bus))
}

/// The daemon in legacy mode against `peer`, with its throw-away directories under `dir`.
struct Daemon<'a> {
    bin: &'a Path,
    dir: &'a Path,
    root: &'a str,
    ws_base: String,
    audit_log: PathBuf,
    /// Extra `start` flags (the sandbox comparison).
    extra: Vec<&'static str>,
}

impl Daemon<'_> {
    fn command(&self, store: &Store) -> Res<tokio::process::Command> {
        let mut cmd = tokio::process::Command::new(self.bin);
        cmd.args([
            "--allowed-root",
            self.root,
            "start",
            "--session-id",
            SESSION,
            "--enable-shell",
        ])
        .args(&self.extra)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", self.dir.join("home"))
        .env("XDG_CONFIG_HOME", self.dir.join("config"))
        .env("XDG_STATE_HOME", self.dir.join("state"))
        .env("AUTOGPT_SHIM_PLATFORM_URL", PLATFORM_URL)
        .env("AUTOGPT_SHIM_PLATFORM_WS_URL", &self.ws_base)
        .env("AUTOGPT_SHIM_AUDIT_LOG_PATH", &self.audit_log)
        .env("AUTOGPT_SHIM_MACHINE_ID", "bench-machine-0001")
        // The default 60 commands a minute would turn the command phase into refusals.
        .env("AUTOGPT_SHIM_MAX_COMMANDS_PER_MINUTE", "1000000")
        .env(
            "AUTOGPT_SHIM_MAX_CONCURRENT",
            LOCAL_MAX_CONCURRENT.to_string(),
        )
        .envs(std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("MALLOC_")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(self.dir.join("daemon.stderr"))?)
        .kill_on_drop(true);
        match store {
            Store::File(creds) => {
                cmd.env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
                    .env("AUTOGPT_SHIM_FALLBACK_DIR", creds)
                    .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASSPHRASE);
            }
            Store::Keychain(bus) => {
                cmd.env("AUTOGPT_SHIM_CREDENTIAL_STORE", "keychain")
                    .env("DBUS_SESSION_BUS_ADDRESS", bus);
            }
        }
        Ok(cmd)
    }

    /// Starts the daemon; returns it, its data connection and the time from spawn to the
    /// peer holding its `HELLO`.
    async fn start(
        &self,
        peer: &Peer,
        store: &Store,
    ) -> Res<(tokio::process::Child, Connection, Duration)> {
        let started = Instant::now();
        let child = self.command(store)?.spawn()?;
        let Some(conn) = peer.next_connection(T).await else {
            let err = std::fs::read_to_string(self.dir.join("daemon.stderr")).unwrap_or_default();
            return Err(format!("the daemon did not connect:\n{err}").into());
        };
        Ok((child, conn, started.elapsed()))
    }

    /// The median start-to-`HELLO` time over `n` starts with `store`.
    async fn median_start(&self, peer: &Peer, store: &Store, n: usize) -> Res<Duration> {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let (mut child, conn, took) = self.start(peer, store).await?;
            samples.push(took);
            let _ = child.start_kill();
            let _ = child.wait().await;
            drop(conn);
        }
        samples.sort_unstable();
        Ok(samples[samples.len() / 2])
    }
}

/// (p50, p99) of appending a 300-byte line and `fdatasync` in `dir`: what AUDIT_AUTH_CLI.md
/// 1.11 step 4 makes every audited request wait for, on the audit log's own filesystem.
fn fsync_floor(dir: &Path, n: u64) -> Res<(Duration, Duration)> {
    use std::io::Write;
    let path = dir.join("fsync-probe.log");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)?;
    let line = [b'x'; 300];
    let mut samples = Vec::with_capacity(usize::try_from(n)?);
    for _ in 0..n {
        let started = Instant::now();
        f.write_all(&line)?;
        f.sync_data()?;
        samples.push(started.elapsed());
    }
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(percentiles(&mut samples))
}

/// `VmRSS` and `VmHWM` of `pid` in KiB.
fn memory_kib(pid: u32) -> Res<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// (p50, p99) of `samples`.
fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i]
    };
    (at(0.50), at(0.99))
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// Sends `make()` `n` times, one at a time; returns (p50, p99). Any reply other than
/// `expect` is an error: a benchmark of refusals measures nothing.
async fn sequential(
    conn: &Connection,
    n: u64,
    expect: shim_protocol::MessageType,
    make: impl Fn(u64) -> Message,
) -> Res<(Duration, Duration)> {
    let mut samples = Vec::with_capacity(usize::try_from(n)?);
    for i in 0..n {
        let msg = make(i);
        let started = Instant::now();
        let r = conn.request(msg, T).await?;
        samples.push(started.elapsed());
        let got = r.frame.message_type();
        if got != expect {
            return Err(format!("expected {expect}, got {got}: {:?}", r.frame.message).into());
        }
    }
    Ok(percentiles(&mut samples))
}

/// A bare tokio-tungstenite echo server and client on loopback; returns (p50, p99) of
/// `n` round trips of `frame`.
async fn echo_floor(n: u64, frame: String) -> Res<(Duration, Duration)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let _ = stream.set_nodelay(true);
        let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        while let Some(Ok(m)) = ws.next().await {
            if m.is_text() && ws.send(m).await.is_err() {
                return;
            }
        }
    });
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream).await?;
    let mut samples = Vec::with_capacity(usize::try_from(n)?);
    for _ in 0..n {
        let started = Instant::now();
        ws.send(WsMessage::text(frame.clone())).await?;
        match ws.next().await {
            Some(Ok(_)) => samples.push(started.elapsed()),
            other => return Err(format!("echo failed: {other:?}").into()),
        }
    }
    let _ = ws.close(None).await;
    server.abort();
    Ok(percentiles(&mut samples))
}

fn stat(path: &str) -> Message {
    Message::FileStat(FileStat {
        path: path.to_owned(),
        follow_symlinks: true,
    })
}

#[tokio::main]
async fn main() -> Res<()> {
    let bin = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .ok_or("usage: bench_e2e PATH-TO-autogpt-shim")?;
    let iters = env_num("BENCH_E2E_ITERS", 2000).max(4);
    let secs = env_num("BENCH_E2E_SECS", 3).max(1);

    let dir = tempfile::tempdir()?;
    for d in ["home", "state", "config", "root"] {
        std::fs::create_dir_all(dir.path().join(d))?;
    }
    let root = std::fs::canonicalize(dir.path().join("root"))?;
    let root_s = root.to_str().ok_or("root path is not UTF-8")?.to_owned();
    std::fs::write(root.join("4k.txt"), "a".repeat(4096))?;
    let peer = Peer::start(PeerConfig::default()).await?;
    // Where the audit log goes: the temp dir, or BENCH_E2E_AUDIT_DIR (e.g. /dev/shm to see
    // what the per-record fsync of AUDIT_AUTH_CLI.md 1.11 costs on this disk).
    let audit_tmp = match std::env::var_os("BENCH_E2E_AUDIT_DIR") {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir_in(dir.path())?,
    };
    let audit_dir = audit_tmp.path().to_owned();
    let daemon = Daemon {
        bin: &bin,
        dir: dir.path(),
        root: &root_s,
        ws_base: peer.ws_base(),
        audit_log: audit_dir.join("audit.log"),
        extra: Vec::new(),
    };

    // Start-up, per credential store: the keychain (the default) when one answers, and the
    // encrypted file as `autogpt-shim auth` writes it (64 MiB Argon2) and at the cheapest
    // parameters a reader accepts, which the rest of the run uses.
    let starts = usize::try_from(env_num("BENCH_E2E_STARTS", 5).max(1))?;
    let fast_file = file_store(&dir.path().join("creds"), KdfParams::MIN_ACCEPTED)?;
    let writer_file = file_store(&dir.path().join("creds-writer"), KdfParams::WRITE)?;
    let mut start_rows = Vec::new();
    if let Some(k) = keychain_store() {
        start_rows.push((
            "OS keychain (Secret Service)",
            daemon.median_start(&peer, &k, starts).await?,
        ));
    }
    start_rows.push((
        "file, Argon2 64 MiB x3 (as written)",
        daemon.median_start(&peer, &writer_file, starts).await?,
    ));
    start_rows.push((
        "file, Argon2 19 MiB x2 (reader min)",
        daemon.median_start(&peer, &fast_file, starts).await?,
    ));

    let (mut child, conn, _) = daemon.start(&peer, &fast_file).await?;
    let pid = child.id().ok_or("the daemon exited at once")?;
    // The effective cap is min(local, platform) (5.3).
    let max_concurrent = conn.ack.max_concurrent.min(LOCAL_MAX_CONCURRENT);

    tokio::time::sleep(Duration::from_secs(1)).await;
    let (idle_rss, _) = memory_kib(pid)?;

    use shim_protocol::MessageType as M;
    let stat_path = format!("{root_s}/4k.txt");
    // PING is answered without the jail or the audit log: the daemon's own floor.
    let ping_lat = sequential(&conn, iters, M::Pong, |_| {
        Message::Ping(shim_protocol::messages::handshake::Empty {})
    })
    .await?;
    let stat_lat = sequential(&conn, iters, M::FileStatResponse, |_| stat(&stat_path)).await?;
    let read_lat = sequential(&conn, iters, M::FileContents, |_| {
        Message::FileRead(FileRead {
            path: stat_path.clone(),
            encoding: ContentEncoding::Utf8,
            format: ReadFormat::Text,
            offset: 0,
            length: None,
        })
    })
    .await?;
    let body = "w".repeat(64 * 1024);
    let write_lat = sequential(&conn, (iters / 4).max(4), M::Ack, |i| {
        Message::FileWrite(FileWrite {
            path: format!("{root_s}/w/{}.txt", i % 16),
            content: body.clone(),
            encoding: ContentEncoding::Utf8,
            create_parents: true,
        })
    })
    .await?;
    let exec_lat = sequential(&conn, (iters / 4).max(4), M::CommandResult, |_| {
        Message::ExecuteCommand(ExecuteCommand {
            argv: Some(vec!["true".to_owned()]),
            ..ExecuteCommand::default()
        })
    })
    .await?;

    // Throughput: `max_concurrent` workers, each with one FILE_STAT in flight.
    let conn = Arc::new(conn);
    let done = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for _ in 0..max_concurrent {
        let (conn, done, refused, path) = (
            conn.clone(),
            done.clone(),
            refused.clone(),
            stat_path.clone(),
        );
        workers.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                match conn.request(stat(&path), T).await {
                    Ok(r) if r.frame.message_type() == M::FileStatResponse => {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs) / 2).await;
    let (loaded_rss, _) = memory_kib(pid)?;
    let load_started = Instant::now() - Duration::from_secs(secs) / 2;
    for w in workers {
        w.await?;
    }
    let throughput = done.load(Ordering::Relaxed) as f64 / load_started.elapsed().as_secs_f64();
    let (_, hwm) = memory_kib(pid)?;

    // The command sandbox (issue 14): `EXECUTE_COMMAND true` with the sandbox off and
    // with workspace-write + network deny, one daemon each, alternating in rounds so that
    // load from other processes hits both alike. Its own home and folder sit beside the
    // binary, not in /tmp: a home below /tmp makes every command re-list /tmp (see
    // crates/exec/src/confine.rs), which a real home in /home does not.
    let sandbox_top = tempfile::tempdir_in(bin.parent().ok_or("binary without a folder")?)?;
    for d in ["home", "state", "config", "root"] {
        std::fs::create_dir_all(sandbox_top.path().join(d))?;
    }
    let sandbox_root = std::fs::canonicalize(sandbox_top.path().join("root"))?;
    let sandbox_root_s = sandbox_root
        .to_str()
        .ok_or("root path is not UTF-8")?
        .to_owned();
    let sandbox_creds = file_store(&sandbox_top.path().join("creds"), KdfParams::MIN_ACCEPTED)?;
    let mut off_samples = Vec::new();
    let mut on_samples = Vec::new();
    let per_round = (iters / 16).max(4);
    for _ in 0..4 {
        for (flags, out) in [
            (
                vec!["--shell-sandbox", "off", "--shell-network", "allow"],
                &mut off_samples,
            ),
            (
                vec![
                    "--shell-sandbox",
                    "workspace-write",
                    "--shell-network",
                    "deny",
                ],
                &mut on_samples,
            ),
        ] {
            let d = Daemon {
                bin: &bin,
                dir: sandbox_top.path(),
                root: &sandbox_root_s,
                ws_base: peer.ws_base(),
                audit_log: sandbox_top.path().join("audit.log"),
                extra: flags,
            };
            let (mut c, conn, _) = d.start(&peer, &sandbox_creds).await?;
            for _ in 0..per_round {
                let started = Instant::now();
                let r = conn
                    .request(
                        Message::ExecuteCommand(ExecuteCommand {
                            argv: Some(vec!["true".to_owned()]),
                            ..ExecuteCommand::default()
                        }),
                        T,
                    )
                    .await?;
                if r.frame.message_type() != M::CommandResult {
                    return Err(format!("sandbox bench: {:?}", r.frame.message).into());
                }
                out.push(started.elapsed());
            }
            let _ = c.start_kill();
            let _ = c.wait().await;
        }
    }
    let sandbox_off = percentiles(&mut off_samples);
    let sandbox_on = percentiles(&mut on_samples);

    let frame = shim_protocol::frame::encode_platform(
        "0b7a0c34-8d5e-4f7e-9b1a-7c2d3e4f5a6b",
        1.0,
        &stat(&stat_path),
    )?;
    let floor = echo_floor(iters, frame).await?;
    let fsync = fsync_floor(&audit_dir, iters / 4)?;
    let violations = peer.violations();
    let _ = child.start_kill();
    let _ = child.wait().await;

    println!(
        "autogpt-shim end to end over loopback ({}, audit log in {})",
        bin.display(),
        audit_dir.display()
    );
    println!("  start to HELLO received, median of {starts} (target < 50 ms)");
    for (name, took) in start_rows {
        println!("    {name:<36} {:>7.1} ms", took.as_secs_f64() * 1e3);
    }
    println!(
        "  idle RSS                        {:>12}   (target < 20 MiB)",
        mib(idle_rss)
    );
    println!(
        "  loaded RSS / peak (VmHWM)       {:>12} / {}",
        mib(loaded_rss),
        mib(hwm)
    );
    println!(
        "  round trip                     {:>10} {:>10}",
        "p50", "p99"
    );
    for (name, (p50, p99)) in [
        ("echo floor (tungstenite)", floor),
        ("PING (no jail, no audit)", ping_lat),
        ("FILE_STAT", stat_lat),
        ("FILE_READ 4 KiB", read_lat),
        ("FILE_WRITE 64 KiB", write_lat),
        ("EXECUTE_COMMAND true", exec_lat),
        ("append + fdatasync (1.11)", fsync),
    ] {
        println!("  {name:<29} {:>10} {:>10}", us(p50), us(p99));
    }
    println!(
        "  FILE_STAT p50 / echo floor p50  {:>10.1}x   (target <= 3x)",
        stat_lat.0.as_secs_f64() / floor.0.as_secs_f64()
    );
    println!(
        "  the same without the fdatasync    {:>8.1}x   (FILE_STAT p50 - fdatasync p50)",
        stat_lat.0.saturating_sub(fsync.0).as_secs_f64() / floor.0.as_secs_f64()
    );
    println!(
        "  throughput at max_concurrent {max_concurrent}: {throughput:.0} FILE_STAT/s ({} refused)",
        refused.load(Ordering::Relaxed)
    );
    let delta = sandbox_on.0.saturating_sub(sandbox_off.0);
    println!(
        "  EXECUTE_COMMAND true, sandbox off          p50 {:>10} p99 {:>10}",
        us(sandbox_off.0),
        us(sandbox_off.1)
    );
    println!(
        "  EXECUTE_COMMAND true, workspace-write+deny p50 {:>10} p99 {:>10}",
        us(sandbox_on.0),
        us(sandbox_on.1)
    );
    println!(
        "  sandbox p50 within 0.5 ms of off: {} (+{})",
        if delta <= Duration::from_micros(500) {
            "PASS"
        } else {
            "FAIL"
        },
        us(delta)
    );
    if !violations.is_empty() {
        return Err(format!("the peer recorded protocol violations: {violations:?}").into());
    }
    Ok(())
}
