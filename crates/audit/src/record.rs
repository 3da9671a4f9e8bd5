//! What the emitting code hands to the writer, and how the writer turns it into a record
//! (1.3-1.5, 1.10).

use crate::canon::NonFiniteFloat;
use crate::canon::write_canonical;
use crate::canon::write_line_form;
use crate::canon::write_str;
use crate::key::AuditKey;
use crate::value::Map;
use crate::value::Value;

/// The `session_id` / `machine_id` placeholder when there is none.
pub const NO_ID: &str = "-";

/// The op name of rotation heads (1.13).
pub const OP_AUDIT_ROTATED: &str = "AUDIT_ROTATED";

/// The `result` of a record, already in the normalised shape of 1.5: exactly these four keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditResult {
    /// `ok`; `true` when not supplied.
    pub ok: bool,
    /// `exit_code`: only for `EXECUTE_COMMAND` and `DAEMON_PREFLIGHT_FAILED`.
    pub exit_code: Option<i64>,
    /// Whole milliseconds, truncated.
    pub duration_ms: u64,
    /// A protocol `ErrorCode` spelling, or none.
    pub error_code: Option<String>,
}

impl Default for AuditResult {
    fn default() -> Self {
        Self {
            ok: true,
            exit_code: None,
            duration_ms: 0,
            error_code: None,
        }
    }
}

impl AuditResult {
    /// A successful result that took `elapsed` (truncated to whole milliseconds).
    pub fn ok_after(elapsed: std::time::Duration) -> Self {
        Self {
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            ..Self::default()
        }
    }

    /// A failed result carrying the wire error code.
    pub fn failed(code: &shim_protocol::ErrorCode) -> Self {
        Self {
            ok: false,
            error_code: Some(code.as_str().to_owned()),
            ..Self::default()
        }
    }

    /// Normalises an arbitrary JSON object supplied by emitting code (1.5): missing keys take
    /// their defaults, values of the wrong type are treated as missing, other keys are dropped.
    pub fn normalize(v: &Value) -> Self {
        let mut r = Self::default();
        if let Value::Object(m) = v {
            if let Some(Value::Bool(b)) = m.get("ok") {
                r.ok = *b;
            }
            r.exit_code = match m.get("exit_code") {
                Some(Value::Int(i)) => Some(*i),
                _ => None,
            };
            r.duration_ms = match m.get("duration_ms") {
                Some(Value::Int(i)) => u64::try_from(*i).unwrap_or(0),
                Some(Value::UInt(u)) => *u,
                Some(Value::Float(f)) if f.is_finite() && *f >= 0.0 => f.trunc() as u64,
                _ => 0,
            };
            if let Some(Value::Str(s)) = m.get("error_code") {
                r.error_code = Some(s.clone());
            }
        }
        r
    }

    fn to_value(&self) -> Value {
        Value::Object(
            Map::new()
                .with("ok", self.ok)
                .with("exit_code", self.exit_code)
                .with("duration_ms", self.duration_ms)
                .with("error_code", self.error_code.clone()),
        )
    }
}

/// One event to append. The writer adds `ts`, `machine_id`, `shim_version`, `seq`, `prev_hmac`
/// and `hmac`.
///
/// ```
/// use shim_audit::AuditEvent;
/// use shim_audit::AuditResult;
/// use shim_audit::Map;
/// use shim_protocol::ErrorCode;
///
/// let ev = AuditEvent::new("FILE_WRITE")
///     .request_id("req-7")
///     .details(Map::new().with("path", "/home/me/a.txt").with("size_bytes", 12u64))
///     .result(AuditResult::failed(&ErrorCode::PathNotFound));
/// assert_eq!(ev.op, "FILE_WRITE");
/// assert_eq!(ev.result.error_code.as_deref(), Some("PATH_NOT_FOUND"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// The session; `None` uses the writer's default session.
    pub session_id: Option<String>,
    /// The wire envelope id of the triggering request; `None` writes `null`.
    pub request_id: Option<String>,
    /// The op name (1.7).
    pub op: String,
    /// The op's details, in the key order of 1.7. Must be an object; never a secret (1.8).
    pub details: Map,
    /// The outcome.
    pub result: AuditResult,
}

impl AuditEvent {
    /// An event with empty details and a successful result.
    pub fn new(op: impl Into<String>) -> Self {
        Self {
            session_id: None,
            request_id: None,
            op: op.into(),
            details: Map::new(),
            result: AuditResult::default(),
        }
    }

    /// Sets the details.
    #[must_use]
    pub fn details(mut self, details: Map) -> Self {
        self.details = details;
        self
    }

    /// Sets the result.
    #[must_use]
    pub fn result(mut self, result: AuditResult) -> Self {
        self.result = result;
        self
    }

    /// Sets the request id.
    #[must_use]
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Sets the session id explicitly.
    #[must_use]
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Fails when a float in `details` is NaN or infinite.
    pub fn validate(&self) -> Result<(), NonFiniteFloat> {
        let mut sink = Vec::new();
        crate::canon::write_canonical_map(&mut sink, &self.details)
    }
}

/// The writer-supplied members of one record.
pub(crate) struct Stamp<'a> {
    pub ts: f64,
    pub session_id: &'a str,
    pub machine_id: &'a str,
    pub shim_version: &'a str,
    pub seq: u64,
    pub prev_hmac: Option<&'a str>,
}

/// An event with its `details` and `result` already serialised (both forms). Callers build
/// it on their own thread, before the writer's mutex is taken: under it, the writer only
/// assembles, MACs and writes.
pub(crate) struct Prepared {
    pub op: String,
    pub request_id: Option<String>,
    pub details_canon: Vec<u8>,
    pub details_line: Vec<u8>,
    pub result_canon: Vec<u8>,
    pub result_line: Vec<u8>,
}

impl Prepared {
    /// Serialises; fails on NaN or an infinity in `details`.
    pub(crate) fn new(ev: &AuditEvent) -> Result<Self, NonFiniteFloat> {
        let result = ev.result.to_value();
        let mut details_canon = Vec::with_capacity(256);
        crate::canon::write_canonical_map(&mut details_canon, &ev.details)?;
        let mut details_line = Vec::with_capacity(details_canon.len() + 32);
        crate::canon::write_line_form_map(&mut details_line, &ev.details)?;
        let mut result_canon = Vec::with_capacity(80);
        write_canonical(&mut result_canon, &result)?;
        let mut result_line = Vec::with_capacity(90);
        write_line_form(&mut result_line, &result)?;
        Ok(Self {
            op: ev.op.clone(),
            request_id: ev.request_id.clone(),
            details_canon,
            details_line,
            result_canon,
            result_line,
        })
    }
}

/// Builds one record: appends its line (with the final LF) to `line`, returns its hmac.
/// `scratch` is a reusable buffer for the canonical form.
pub(crate) fn encode_record(
    ev: &Prepared,
    stamp: &Stamp<'_>,
    key: &AuditKey,
    scratch: &mut Vec<u8>,
    line: &mut Vec<u8>,
) -> Result<String, NonFiniteFloat> {
    // Canonical form, members in sorted order:
    // details, machine_id, op, prev_hmac, request_id, result, seq, session_id, shim_version, ts.
    scratch.clear();
    scratch.extend_from_slice(b"{\"details\":");
    scratch.extend_from_slice(&ev.details_canon);
    scratch.extend_from_slice(b",\"machine_id\":");
    write_str(scratch, stamp.machine_id);
    scratch.extend_from_slice(b",\"op\":");
    write_str(scratch, &ev.op);
    scratch.extend_from_slice(b",\"prev_hmac\":");
    opt_str(scratch, stamp.prev_hmac);
    scratch.extend_from_slice(b",\"request_id\":");
    opt_str(scratch, ev.request_id.as_deref());
    scratch.extend_from_slice(b",\"result\":");
    scratch.extend_from_slice(&ev.result_canon);
    scratch.extend_from_slice(b",\"seq\":");
    scratch.extend_from_slice(stamp.seq.to_string().as_bytes());
    scratch.extend_from_slice(b",\"session_id\":");
    write_str(scratch, stamp.session_id);
    scratch.extend_from_slice(b",\"shim_version\":");
    write_str(scratch, stamp.shim_version);
    scratch.extend_from_slice(b",\"ts\":");
    crate::canon::write_float(scratch, stamp.ts)?;
    scratch.push(b'}');
    let hmac = key.mac_hex(scratch);

    // Line form, members in the order of 1.3.
    let start = line.len();
    let res = (|| {
        line.extend_from_slice(b"{\"ts\": ");
        crate::canon::write_float(line, stamp.ts)?;
        line.extend_from_slice(b", \"session_id\": ");
        write_str(line, stamp.session_id);
        line.extend_from_slice(b", \"machine_id\": ");
        write_str(line, stamp.machine_id);
        line.extend_from_slice(b", \"shim_version\": ");
        write_str(line, stamp.shim_version);
        line.extend_from_slice(b", \"request_id\": ");
        opt_str(line, ev.request_id.as_deref());
        line.extend_from_slice(b", \"op\": ");
        write_str(line, &ev.op);
        line.extend_from_slice(b", \"details\": ");
        line.extend_from_slice(&ev.details_line);
        line.extend_from_slice(b", \"result\": ");
        line.extend_from_slice(&ev.result_line);
        line.extend_from_slice(b", \"seq\": ");
        line.extend_from_slice(stamp.seq.to_string().as_bytes());
        line.extend_from_slice(b", \"prev_hmac\": ");
        opt_str(line, stamp.prev_hmac);
        line.extend_from_slice(b", \"hmac\": \"");
        line.extend_from_slice(hmac.as_bytes());
        line.extend_from_slice(b"\"}\n");
        Ok(())
    })();
    if res.is_err() {
        line.truncate(start);
    }
    res.map(|()| hmac)
}

fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}
