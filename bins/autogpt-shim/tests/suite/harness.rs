//! Starts the real `autogpt-shim` binary against a real platform peer in a throw-away
//! home, state and credential directory.

use std::path::Path;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use shim_auth::CredentialStore;
use shim_auth::EncryptedFileStore;
use shim_auth::KdfParams;
use shim_auth::Secret;
use std::collections::BTreeMap;
use std::sync::Arc;

use shim_platform_peer::AckConfig;
use shim_platform_peer::Connection;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::messages::exec::ExecuteCommand;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileRead;
use shim_protocol::messages::files::FileStat;
use shim_protocol::messages::files::FileWrite;
use shim_protocol::messages::files::ReadFormat;
use tokio::process::Child;
use tokio::process::Command;

pub(crate) const PASSPHRASE: &str = "integration-test-passphrase";
pub(crate) const MACHINE_ID: &str = "test-machine-0001";
pub(crate) const T: Duration = Duration::from_secs(20);
/// The platform base the credentials are keyed on; the WebSocket base points at the peer
/// (`platform_ws_url`), so one credential file serves every test.
pub(crate) const PLATFORM_URL: &str = "http://127.0.0.1:9";
/// The stored access token (the peer accepts any token unless told otherwise).
pub(crate) const ACCESS_TOKEN: &str = "test-access-token";

/// A credential file (audit key, and tokens if `tokens`) written once per test binary with
/// the cheapest Argon2 parameters readers accept, copied into each test's directory.
fn template(tokens: bool) -> &'static (PathBuf, String) {
    static WITH: OnceLock<(PathBuf, String)> = OnceLock::new();
    static WITHOUT: OnceLock<(PathBuf, String)> = OnceLock::new();
    let cell = if tokens { &WITH } else { &WITHOUT };
    cell.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "autogpt-shim-creds-{}-{tokens}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store =
            EncryptedFileStore::with_params(&dir, Secret::new(PASSPHRASE), KdfParams::MIN_ACCEPTED)
                .unwrap();
        let key = shim_audit::AuditKey::generate().unwrap();
        let hex = key.to_hex().as_str().to_owned();
        store
            .set(shim_auth::account::AUDIT_KEY, &Secret::new(hex.as_str()))
            .unwrap();
        if tokens {
            let dep = format!("autogpt-local-executor@{PLATFORM_URL}");
            store
                .set(
                    &shim_auth::account::refresh_token(&dep),
                    &Secret::new("test-refresh-token"),
                )
                .unwrap();
            store
                .set(
                    &shim_auth::account::access_token(&dep),
                    &Secret::new(ACCESS_TOKEN),
                )
                .unwrap();
        }
        (dir, hex)
    })
}

/// Windows needs `SystemRoot` (Winsock) and friends, which `env_clear` removed.
/// `USERNAME` names the control pipe (`\\.\pipe\autogpt-shim-<domain>.<user>-control`):
/// one per test, so that the daemons of parallel tests do not take each other for a second
/// daemon (the pipe's security descriptor still names the real account's SID).
#[cfg(windows)]
fn windows_env(env: &Env, c: &mut Command) {
    let name = env.dir.path().file_name().unwrap().to_string_lossy();
    c.env("USERNAME", format!("test-{name}"));
    // The home (control mode's browse root) and the per-user folders are the test's own.
    c.env("USERPROFILE", env.dir.path().join("home"))
        .env("APPDATA", env.dir.path().join("config"))
        .env("LOCALAPPDATA", env.dir.path().join("local"));
    // DISPLAY: under Wine, the X server its X11 driver draws on (cargo xtask wine-test).
    for k in [
        "SYSTEMROOT",
        "WINDIR",
        "TEMP",
        "TMP",
        "COMSPEC",
        "PATHEXT",
        "DISPLAY",
    ] {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
}

/// Starts the binary once with no pipes before any test does (Windows, run under Wine).
///
/// The first program that loads user32 makes Wine start its desktop process
/// (`explorer.exe /desktop`), which inherits that program's standard handles and lives
/// until the Wine session ends. Were that the daemon of a test, the test's stdout pipe would
/// never reach end-of-file and `wait_with_output` would hang. Harmless on Windows itself.
#[cfg(windows)]
fn wine_desktop() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_autogpt-shim"))
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    });
}

/// A throw-away environment for one daemon.
pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) peer: Peer,
    pub(crate) root: PathBuf,
    pub(crate) audit_key_hex: String,
}

impl Env {
    pub(crate) async fn new(config: PeerConfig) -> Env {
        Env::with_tokens(config, true).await
    }

    /// An environment whose peer answers `HELLO` with `ack`.
    pub(crate) async fn with_ack(ack: AckConfig) -> Env {
        Env::new(PeerConfig {
            ack,
            ..PeerConfig::default()
        })
        .await
    }

    /// An environment whose peer grants exactly `caps`.
    pub(crate) async fn granting(caps: &[Capability]) -> Env {
        Env::with_ack(AckConfig {
            grant: Some(caps.to_vec()),
            ..AckConfig::default()
        })
        .await
    }

    pub(crate) async fn with_tokens(config: PeerConfig, tokens: bool) -> Env {
        #[cfg(windows)]
        wine_desktop();
        let dir = tempfile::tempdir().unwrap();
        let peer = Peer::start(config).await.unwrap();
        for d in ["home", "state", "config", "creds", "root", "local"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let root = canonical(&dir.path().join("root"));
        let (template, audit_key_hex) = template(tokens);
        std::fs::copy(
            template.join(shim_auth::FILE_NAME),
            dir.path().join("creds").join(shim_auth::FILE_NAME),
        )
        .unwrap();
        Env {
            dir,
            peer,
            root,
            audit_key_hex: audit_key_hex.clone(),
        }
    }

    /// Stores `token` as the access token, as another process (e.g. `auth`) would.
    pub(crate) fn store_access_token(&self, token: &str) {
        let store = EncryptedFileStore::with_params(
            &self.dir.path().join("creds"),
            Secret::new(PASSPHRASE),
            KdfParams::MIN_ACCEPTED,
        )
        .unwrap();
        let dep = format!("autogpt-local-executor@{PLATFORM_URL}");
        store
            .set(&shim_auth::account::access_token(&dep), &Secret::new(token))
            .unwrap();
    }

    pub(crate) fn audit_log(&self) -> PathBuf {
        self.dir.path().join("state").join("audit.log")
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_autogpt-shim")), args)
    }

    /// [`Env::command`] for another copy of the binary at `program`.
    pub(crate) fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            // The local control socket: one per test, so that daemons of parallel tests do
            // not take each other for a second daemon.
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
            .env("AUTOGPT_SHIM_FALLBACK_DIR", self.dir.path().join("creds"))
            .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASSPHRASE)
            .env("AUTOGPT_SHIM_PLATFORM_URL", PLATFORM_URL)
            .env("AUTOGPT_SHIM_PLATFORM_WS_URL", self.peer.ws_base())
            .env("AUTOGPT_SHIM_AUDIT_LOG_PATH", self.audit_log())
            .env("AUTOGPT_SHIM_MACHINE_ID", MACHINE_ID)
            .env("AUTOGPT_SHIM_RECONNECT_BASE_DELAY", "0.1")
            .env("AUTOGPT_SHIM_RECONNECT_MAX_DELAY", "0.5")
            .env("AUTOGPT_SHIM_RECONNECT_JITTER_SECONDS", "0")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(windows)]
        windows_env(self, &mut c);
        c
    }

    /// `autogpt-shim start` in legacy mode for `session`, not yet spawned.
    pub(crate) fn legacy_command(&self, session: &str, extra: &[&str]) -> Command {
        let root = self.root_str().to_owned();
        let mut args = vec![
            "--allowed-root",
            root.as_str(),
            "start",
            "--session-id",
            session,
        ];
        args.extend_from_slice(extra);
        self.command(&args)
    }

    /// Starts `autogpt-shim start` in legacy mode for `session`.
    pub(crate) fn start_legacy(&self, session: &str, extra: &[&str]) -> Child {
        self.legacy_command(session, extra).spawn().unwrap()
    }

    /// Starts `autogpt-shim start` in control mode with extra environment variables.
    pub(crate) fn start_control(&self, extra_env: &[(&str, &str)]) -> Child {
        let mut c = self.command(&["start"]);
        c.envs(extra_env.iter().copied());
        c.spawn().unwrap()
    }

    /// Creates `names` as folders in the daemon's home; returns the home.
    pub(crate) fn home_dirs(&self, names: &[&str]) -> PathBuf {
        let home = self.dir.path().join("home");
        for n in names {
            std::fs::create_dir_all(home.join(n)).unwrap();
        }
        home
    }

    /// The allowed root as text.
    pub(crate) fn root_str(&self) -> &str {
        self.root.to_str().unwrap()
    }

    /// Asserts that the daemon does not connect again within `wait`.
    pub(crate) async fn assert_no_connection(&self, wait: Duration) {
        assert!(
            self.peer.next_connection(wait).await.is_none(),
            "the daemon connected again"
        );
    }

    /// SIGTERM, then asserts a clean exit (0); returns stdout.
    pub(crate) async fn stop(&self, child: Child) -> String {
        stop_cleanly(child).await.0
    }

    pub(crate) async fn next(&self) -> Connection {
        self.peer
            .next_connection(T)
            .await
            .expect("the daemon did not connect")
    }

    pub(crate) fn assert_no_violations(&self) {
        let v = self.peer.violations();
        assert!(v.is_empty(), "protocol violations: {v:?}");
    }

    /// Verifies the audit log with the key and returns its records.
    pub(crate) fn audit_records(&self) -> Vec<serde_json::Value> {
        read_records(&self.audit_log())
    }

    pub(crate) fn verify_audit(&self) {
        let key = shim_audit::AuditKey::from_hex(&self.audit_key_hex).unwrap();
        let report = shim_audit::verify_file(&self.audit_log(), &key).unwrap();
        assert!(
            report.violations.is_empty(),
            "audit violations: {:?}",
            report.violations
        );
    }
}

/// The canonical form of `p` as a user would write it: on Windows without the `\\?\`
/// prefix that `canonicalize` adds to a drive path (the daemon reports roots that way).
pub(crate) fn canonical(p: &Path) -> PathBuf {
    let c = std::fs::canonicalize(p).unwrap();
    #[cfg(windows)]
    if let Some(rest) = c.to_str().and_then(|s| s.strip_prefix(r"\\?\"))
        && rest.as_bytes().get(1) == Some(&b':')
    {
        return PathBuf::from(rest);
    }
    c
}

pub(crate) fn read_records(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The records whose `op` is `op`.
pub(crate) fn with_op<'a>(
    records: &'a [serde_json::Value],
    op: &str,
) -> Vec<&'a serde_json::Value> {
    records.iter().filter(|r| r["op"] == op).collect()
}

pub(crate) fn ops(records: &[serde_json::Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["op"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Waits for the child to exit and returns (code, stdout, stderr).
pub(crate) async fn finish(child: Child, timeout: Duration) -> (i32, String, String) {
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .expect("the daemon did not exit in time")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Sends SIGTERM to the child.
/// SIGTERM, then asserts a clean exit (0); returns stdout and stderr.
pub(crate) async fn stop_cleanly(child: Child) -> (String, String) {
    sigterm(&child);
    let (code, out, err) = finish(child, T).await;
    assert_eq!(code, 0, "{err}");
    (out, err)
}

pub(crate) fn sigterm(child: &Child) {
    #[cfg(unix)]
    {
        let pid = child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32));
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
    }
    // Windows has no SIGTERM for a console process without a shared console: stop it.
    #[cfg(not(unix))]
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("taskkill")
            .args(["/F", "/PID", &pid.to_string()])
            .output();
    }
}

/// Whether any process's command line contains `pattern` (like `pgrep -f`, without
/// depending on procps).
pub(crate) fn pgrep(pattern: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| {
            let text: String = String::from_utf8_lossy(&c).replace('\0', " ");
            text.contains(pattern)
        })
}

pub(crate) fn error_code(m: &Message) -> String {
    match m {
        Message::Error(e) => e.code.as_str().to_owned(),
        other => panic!("expected ERROR, got {:?}", other.message_type()),
    }
}

/// Polls `cond` every 100 ms for up to 10 s; panics with `what` if it never holds.
pub(crate) async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..100 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Sends a long shell command whose command line contains `marker` and waits until that
/// process runs; the returned task holds the pending request.
pub(crate) async fn start_marked_command(
    conn: &Arc<Connection>,
    marker: &str,
) -> tokio::task::JoinHandle<()> {
    let c = conn.clone();
    let command = format!("sleep 300; echo {marker}");
    let pending = tokio::spawn(async move {
        let _ = c
            .request(
                Message::ExecuteCommand(ExecuteCommand {
                    command: Some(command),
                    ..ExecuteCommand::default()
                }),
                Duration::from_secs(60),
            )
            .await;
    });
    wait_until("the command runs", || pgrep(marker)).await;
    pending
}

/// `FILE_READ` of `path` as UTF-8 text.
pub(crate) fn read(path: &str) -> Message {
    Message::FileRead(FileRead {
        path: path.into(),
        encoding: ContentEncoding::Utf8,
        format: ReadFormat::Text,
        offset: 0,
        length: None,
    })
}

/// `FILE_WRITE` of UTF-8 `content` to `path`, creating parents.
pub(crate) fn write(path: &str, content: &str) -> Message {
    Message::FileWrite(FileWrite {
        path: path.into(),
        content: content.into(),
        encoding: ContentEncoding::Utf8,
        create_parents: true,
    })
}

/// `FILE_STAT` of `path`, following symlinks.
pub(crate) fn stat(path: &str) -> Message {
    Message::FileStat(FileStat {
        path: path.into(),
        follow_symlinks: true,
    })
}

/// `EXECUTE_COMMAND` with `args` as argv.
pub(crate) fn argv(args: &[&str]) -> Message {
    Message::ExecuteCommand(ExecuteCommand {
        argv: Some(args.iter().map(|s| (*s).to_owned()).collect()),
        env: BTreeMap::new(),
        ..ExecuteCommand::default()
    })
}

/// `EXECUTE_COMMAND` of a program that sleeps about `secs` seconds: `sleep` on Unix; on
/// Windows, which has no `sleep`, `ping -n <secs+1> 127.0.0.1` (one echo a second).
pub(crate) fn sleep_command(secs: u32) -> Message {
    if cfg!(windows) {
        let n = (secs + 1).to_string();
        argv(&["ping", "-n", &n, "127.0.0.1"])
    } else {
        argv(&["sleep", &secs.to_string()])
    }
}

/// Sends a raw frame of type `ty` with `payload` (JSON text) under `id` and waits for the
/// reply to that id.
pub(crate) async fn raw_request(
    conn: &Connection,
    id: &str,
    ty: &str,
    payload: &str,
) -> shim_platform_peer::Response {
    let text = format!(r#"{{"type":"{ty}","id":"{id}","ts":1.0,"payload":{payload}}}"#);
    let kind = shim_protocol::MessageType::from_wire(ty).unwrap();
    conn.expect_raw_reply(id, kind, text, T).await.unwrap()
}

/// A small tmpfs mounted for one test, unmounted on drop.
#[cfg(target_os = "linux")]
pub(crate) struct Tmpfs {
    pub(crate) path: PathBuf,
}

#[cfg(target_os = "linux")]
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}

/// Mounts a tmpfs of `size` (e.g. `"32k"`) at `dir/name`. `None` (the caller skips, saying
/// so) when mounting is not permitted here, unless `SHIM_REQUIRE_TMPFS=1` (CI runs as root),
/// where it panics.
#[cfg(target_os = "linux")]
pub(crate) fn small_tmpfs(dir: &Path, name: &str, size: &str) -> Option<Tmpfs> {
    let path = dir.join(name);
    std::fs::create_dir_all(&path).unwrap();
    let out = std::process::Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(&path)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(Tmpfs { path }),
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                Err(e) => e.to_string(),
            };
            assert!(
                std::env::var("SHIM_REQUIRE_TMPFS").map_or(true, |v| v != "1"),
                "SHIM_REQUIRE_TMPFS=1 but a tmpfs cannot be mounted: {why}"
            );
            eprintln!(
                "skipping: cannot mount a tmpfs here ({why}); run as root to test a full disk"
            );
            None
        }
    }
}

/// A request of type `ty` with the JSON `payload`, as the platform would send it.
#[cfg(any(target_os = "linux", windows))] // the computer-use suites
pub(crate) fn wire(ty: &str, payload: serde_json::Value) -> Message {
    let frame = serde_json::json!({"type": ty, "id": "x", "ts": 1.0, "payload": payload});
    shim_protocol::frame::decode_bytes(frame.to_string().as_bytes())
        .unwrap()
        .message
}

/// Sends `ty` with `payload` and returns the reply as `{"type": ..., "payload": ...}`.
#[cfg(any(target_os = "linux", windows))] // the computer-use suites
pub(crate) async fn ask(
    conn: &Connection,
    ty: &str,
    payload: serde_json::Value,
) -> serde_json::Value {
    let r = conn.request(wire(ty, payload), T).await.unwrap();
    let text = shim_protocol::frame::encode_shim("x", 1.0, None, &r.frame.message).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::json!({"type": r.frame.message_type().as_str(), "payload": v["payload"]})
}
