//! Running the binary and preparing logs.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;

use shim_audit::AuditEvent;
use shim_audit::AuditKey;
use shim_audit::AuditLog;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_audit::WriterConfig;

pub(crate) const KEY_HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

pub(crate) fn key() -> AuditKey {
    AuditKey::from_hex(KEY_HEX).unwrap()
}

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// A sandbox: a temp dir used as HOME, the log path inside it, a key file.
pub(crate) struct Sandbox {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) log: PathBuf,
    pub(crate) key_file: PathBuf,
    pub(crate) env: Vec<(String, String)>,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs").join("audit.log");
        let key_file = dir.path().join("key.hex");
        std::fs::write(&key_file, format!("  {KEY_HEX}\n")).unwrap();
        let env = vec![
            ("HOME".to_owned(), dir.path().display().to_string()),
            (
                "AUTOGPT_SHIM_CREDENTIAL_STORE".to_owned(),
                "file".to_owned(),
            ),
            (
                "AUTOGPT_SHIM_FALLBACK_DIR".to_owned(),
                dir.path().join("state").display().to_string(),
            ),
            ("NO_COLOR".to_owned(), "1".to_owned()),
        ];
        Self {
            dir,
            log,
            key_file,
            env,
        }
    }

    pub(crate) fn set_env(&mut self, k: &str, v: &str) {
        self.env.retain(|(a, _)| a != k);
        self.env.push((k.to_owned(), v.to_owned()));
    }

    pub(crate) fn run(&self, args: &[&str]) -> Out {
        self.run_with_stdin(args, "")
    }

    pub(crate) fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Out {
        use std::io::Write;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shim-audit"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.dir.path())
            .arg("--log-path")
            .arg(&self.log)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub(crate) fn writer(&self) -> AuditLog {
        AuditLog::open(WriterConfig::new(&self.log, "machine-1", "0.2.0"), key()).unwrap()
    }

    /// Five records of a typical session, one of them failed.
    pub(crate) fn write_sample(&self) {
        let log = self.writer();
        log.append_blocking(
            AuditEvent::new("SHIM_START").details(Map::new().with("shim_version", "0.2.0")),
        )
        .unwrap();
        log.append_blocking(
            AuditEvent::new("WS_CONNECTED")
                .details(Map::new().with("url", "wss://platform.example/ws")),
        )
        .unwrap();
        log.append_blocking(
            AuditEvent::new("FILE_READ")
                .request_id("req-1")
                .session("chat-7")
                .details(
                    Map::new()
                        .with("path", "/home/u/projekt/straße.txt")
                        .with("encoding", "utf-8")
                        .with("offset", 0)
                        .with("length", shim_audit::Value::Null)
                        .with("size_bytes_returned", 42),
                ),
        )
        .unwrap();
        log.append_blocking(
            AuditEvent::new("JAIL_VIOLATION")
                .request_id("req-2")
                .session("chat-7")
                .details(
                    Map::new()
                        .with("code", "PATH_OUTSIDE_ALLOWED_ROOT")
                        .with("path", "../../etc/passwd")
                        .with("attempted_op", "FILE_READ"),
                )
                .result(AuditResult::failed(&shim_protocol_code())),
        )
        .unwrap();
        log.append_blocking(
            AuditEvent::new("SHIM_STOP").details(Map::new().with("reason", "graceful")),
        )
        .unwrap();
    }

    pub(crate) fn lines(&self, p: &Path) -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub(crate) fn write_lines(&self, p: &Path, l: &[String]) {
        std::fs::write(p, l.join("\n") + "\n").unwrap();
    }
}

fn shim_protocol_code() -> shim_protocol::ErrorCode {
    shim_protocol::ErrorCode::PathOutsideAllowedRoot
}

/// Filters that make output stable: temp paths, hmacs, timestamps, rotation stamps.
pub(crate) fn filters(s: &Sandbox) -> Vec<(String, String)> {
    vec![
        (
            regex_escape(&s.dir.path().display().to_string()),
            "[SANDBOX]".to_owned(),
        ),
        (r"[0-9a-f]{64}".to_owned(), "[HEX64]".to_owned()),
        (r#""ts": [0-9.e+-]+"#.to_owned(), r#""ts": [TS]"#.to_owned()),
        (r"\d{8}-\d{6}(-\d+)?".to_owned(), "[STAMP]".to_owned()),
        (r"newest_ts=\d+".to_owned(), "newest_ts=[TS]".to_owned()),
    ]
}

fn regex_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// Snapshot text of one run.
pub(crate) fn render(o: &Out) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        o.code, o.stdout, o.stderr
    )
}

/// Asserts a snapshot with the sandbox filters applied.
#[macro_export]
macro_rules! snap {
    ($sandbox:expr, $name:expr, $value:expr) => {{
        let filters = $crate::suite::common::filters(&$sandbox);
        let refs: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        insta::with_settings!({ filters => refs, prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    }};
}
