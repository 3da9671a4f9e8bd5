//! Fuzzes whole-log verification (AUDIT_AUTH_CLI.md 1.14) on tampered bytes: the input is
//! a log file, verified in memory (`shim_audit::verify_bytes`) under the fixed key of the
//! spec's example (bytes 00 01 .. 1f). The seed corpus holds real chains signed with that
//! key, so mutations that keep a record valid (re-spacing, member order) are explored too.
//!
//! Invariants: the verifier returns a report, never panics; violations are named with a
//! line inside the file; reading the file in small pieces (so that lines are split across
//! reads) gives the same report as reading it whole; and the verdict equals that of a small reference verifier written
//! here from the spec (every non-blank line a strict JSON object; `seq` 1, 2, 3, ...;
//! `prev_hmac` null first, then the previous `hmac`; `hmac` the lowercase hex HMAC-SHA256 of
//! the canonical form without `hmac`; the file ends with LF). A log the verifier accepts
//! therefore has strictly consecutive `seq` numbers and an intact chain; and when it accepts,
//! its record count, last `seq` and last `hmac` must be those of the file.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use shim_audit::AuditKey;
use shim_audit::parse;
use shim_audit::parse::Node;

fn key() -> &'static AuditKey {
    static KEY: OnceLock<AuditKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let bytes: Vec<u8> = (0u8..32).collect();
        AuditKey::from_bytes(&bytes).expect("32-byte key")
    })
}

/// What a clean file yields: (records, last seq, last hmac).
type Clean = (u64, Option<i64>, Option<String>);

/// The reference verifier: `Some` when the file is clean.
fn reference(data: &[u8], key: &AuditKey) -> Option<Clean> {
    if data.is_empty() {
        return Some((0, None, None));
    }
    let body = data.strip_suffix(b"\n")?;
    let mut records = 0u64;
    let mut expected: i64 = 1;
    let mut prev: Option<String> = None;
    let mut last_seq = None;
    for line in body.split(|&c| c == b'\n') {
        if line.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r')) {
            continue;
        }
        let node = parse::parse(line).ok()?;
        let Node::Object(members) = &node else {
            return None;
        };
        let get = |k: &str| members.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        let seq: i64 = match get("seq")? {
            Node::Int(t) => t.parse().ok()?,
            _ => return None,
        };
        if seq != expected {
            return None;
        }
        match (get("prev_hmac"), &prev) {
            (None | Some(Node::Null), None) => {}
            (Some(Node::Str(a)), Some(b)) if a == b => {}
            _ => return None,
        }
        let Some(Node::Str(h)) = get("hmac") else {
            return None;
        };
        let mut mac_input = Vec::new();
        parse::write_canonical_node(&mut mac_input, &node, Some("hmac"));
        if key.mac_hex(&mac_input) != *h {
            return None;
        }
        records += 1;
        expected = seq + 1;
        last_seq = Some(seq);
        prev = Some(h.to_string());
    }
    Some((records, last_seq, prev))
}

fuzz_target!(|data: &[u8]| {
    let key = key();
    let report = shim_audit::verify_bytes(data, key);
    let lines = data.split(|&c| c == b'\n').count() as u64;
    for v in &report.violations {
        assert!(
            v.line <= lines,
            "violation {v:?} names line {} of {lines}",
            v.line
        );
        assert!(!v.message.is_empty());
    }
    assert_eq!(report.bytes, data.len() as u64);
    // Reading in small pieces (lines split across reads) must not change the report.
    let block = 1 + data.len() % 13;
    let pieces = shim_audit::testing::verify_bytes_in_pieces(data, key, block);
    assert_eq!(
        pieces, report,
        "reading in {block}-byte pieces changed the report"
    );
    let expected = reference(data, key);
    match (&expected, report.is_clean()) {
        (Some((records, last_seq, last_hmac)), true) => {
            assert_eq!(report.records, *records, "record count");
            assert_eq!(report.last_seq, *last_seq, "last seq");
            assert_eq!(report.last_hmac, *last_hmac, "last hmac");
        }
        (None, false) => {}
        (Some(_), false) => panic!(
            "verifier refused a valid log: {:?}",
            report.first_violation()
        ),
        (None, true) => panic!("verifier accepted a log the reference refuses"),
    }
});
