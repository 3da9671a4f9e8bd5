//! Support for benchmarks and tests: building large valid logs quickly.
//!
//! Nothing here is used by the daemon. [`synthesize_log`] writes records with the writer's own
//! encoder but without the per-batch fsync, so that a million-record log for a verification
//! benchmark takes seconds instead of minutes.

use std::io::Write;
use std::path::Path;

use crate::key::AuditKey;
use crate::record::AuditEvent;
use crate::record::Prepared;
use crate::record::Stamp;
use crate::record::encode_record;
use crate::value::Map;
use crate::value::Value;

/// A typical data-plane event (`FILE_READ`, about 400 bytes on disk).
pub fn sample_event(i: u64) -> AuditEvent {
    AuditEvent::new("FILE_READ")
        .request_id(format!("4c1d7a52-0f1e-4b8e-9d7a-{i:012}"))
        .details(
            Map::new()
                .with(
                    "path",
                    format!(
                        "/home/user/projects/agent/workspace/src/module_{}/file_{i}.py",
                        i % 97
                    ),
                )
                .with("encoding", "utf-8")
                .with("offset", 0)
                .with("length", Value::Null)
                .with("size_bytes_returned", (i * 7919) % 65_536),
        )
}

/// Writes `n` records forming one valid chain under `key` to a new file at `path` (no fsync).
/// Returns the number of bytes written.
pub fn synthesize_log(path: &Path, key: &AuditKey, n: u64) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut scratch = Vec::with_capacity(1024);
    let mut line = Vec::with_capacity(1024);
    let mut prev: Option<String> = None;
    let mut total = 0u64;
    let t0 = 1_767_225_600.0;
    for seq in 1..=n {
        let ev =
            Prepared::new(&sample_event(seq)).map_err(|e| std::io::Error::other(e.to_string()))?;
        line.clear();
        let stamp = Stamp {
            ts: t0 + seq as f64 * 0.001,
            session_id: "3c6f0a1e-2b7d-4f59-8e14-5a9b0c7d2e31",
            machine_id: "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f",
            shim_version: "0.2.0",
            seq,
            prev_hmac: prev.as_deref(),
        };
        let h = encode_record(&ev, &stamp, key, &mut scratch, &mut line)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        f.write_all(&line)?;
        total += line.len() as u64;
        prev = Some(h);
    }
    f.flush()?;
    Ok(total)
}

/// The verifier's fast path (canonical JSON straight from the bytes) applied to `lines` in
/// order with one set of reusable buffers, as the verifier does: for each line, the canonical
/// form without its top-level `hmac` member, or `None` when the line would take the general
/// path ([`crate::parse`]). For fuzzing and tests, which compare it with
/// [`crate::parse::write_canonical_node`].
pub fn fast_canonical_lines(lines: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
    let mut fast = crate::fast::Fast::default();
    lines
        .iter()
        .map(|line| {
            let mut out = Vec::new();
            fast.line(line, &mut out).map(|_| out)
        })
        .collect()
}

/// [`crate::verify_bytes`] reading the input in pieces of `block` bytes (at least 1) instead
/// of the verifier's 8 MiB, so that tests and fuzzing can check that lines split across
/// reads are verified exactly as whole ones.
pub fn verify_bytes_in_pieces(bytes: &[u8], key: &AuditKey, block: usize) -> crate::FileReport {
    let mut r = crate::verify::verify_reader(bytes, key, Path::new("-"), 1, block);
    r.bytes = bytes.len() as u64;
    r
}
