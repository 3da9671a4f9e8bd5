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
use shim_platform_peer::Connection;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
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

    pub(crate) async fn with_tokens(config: PeerConfig, tokens: bool) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let peer = Peer::start(config).await.unwrap();
        for d in ["home", "state", "config", "creds", "root"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let root = std::fs::canonicalize(dir.path().join("root")).unwrap();
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

    pub(crate) fn audit_log(&self) -> PathBuf {
        self.dir.path().join("state").join("audit.log")
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_autogpt-shim"));
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
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
        c
    }

    /// Starts `autogpt-shim start` in legacy mode for `session`.
    pub(crate) fn start_legacy(&self, session: &str, extra: &[&str]) -> Child {
        let root = self.root.to_str().unwrap().to_owned();
        let mut args = vec![
            "--allowed-root",
            root.as_str(),
            "start",
            "--session-id",
            session,
        ];
        args.extend_from_slice(extra);
        self.command(&args).spawn().unwrap()
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

pub(crate) fn read_records(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
pub(crate) fn sigterm(child: &Child) {
    let pid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
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
