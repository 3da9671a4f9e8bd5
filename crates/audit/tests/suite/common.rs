//! Helpers shared by the suites.

use std::path::Path;
use std::path::PathBuf;

use shim_audit::AuditEvent;
use shim_audit::AuditKey;
use shim_audit::AuditLog;
use shim_audit::Map;
use shim_audit::WriterConfig;

/// The key 00 01 .. 1f.
pub(crate) fn key() -> AuditKey {
    AuditKey::from_bytes(&(0u8..32).collect::<Vec<_>>()).unwrap()
}

/// Another key.
pub(crate) fn other_key() -> AuditKey {
    AuditKey::from_bytes(&[7u8; 32]).unwrap()
}

pub(crate) fn cfg(path: &Path) -> WriterConfig {
    WriterConfig::new(path, "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f", "0.2.0-test")
}

pub(crate) fn open(path: &Path) -> AuditLog {
    AuditLog::open(cfg(path), key()).unwrap()
}

pub(crate) fn event(i: usize) -> AuditEvent {
    AuditEvent::new("FILE_READ")
        .request_id(format!("req-{i}"))
        .details(
            Map::new()
                .with("path", format!("/home/u/project/file-{i}.txt"))
                .with("encoding", "utf-8")
                .with("offset", 0)
                .with("length", shim_audit::Value::Null)
                .with("size_bytes_returned", i * 17),
        )
}

/// Writes `n` records to a fresh log at `dir/audit.log` and returns its path.
pub(crate) fn write_log(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("audit.log");
    let log = open(&path);
    for i in 0..n {
        log.append_blocking(event(i)).unwrap();
    }
    drop(log);
    path
}

/// The file's lines (without LF).
pub(crate) fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) fn write_lines(path: &Path, lines: &[String]) {
    let mut s = lines.join("\n");
    s.push('\n');
    std::fs::write(path, s).unwrap();
}

/// `(kind, seq, line)` of each violation.
pub(crate) fn kinds(r: &shim_audit::FileReport) -> Vec<(&'static str, Option<i64>, u64)> {
    r.violations
        .iter()
        .map(|v| (v.kind.as_str(), v.seq, v.line))
        .collect()
}
