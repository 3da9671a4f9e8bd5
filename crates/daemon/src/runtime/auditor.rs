//! The daemon's view of the audit writer: every append either becomes durable or puts the
//! whole daemon into the terminal "audit failed" state ([H-7], exit 78).

use std::sync::Arc;
use std::sync::Mutex;

use shim_audit::AuditError;
use shim_audit::AuditEvent;
use shim_audit::AuditLog;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_protocol::ErrorCode;
use tokio_util::sync::CancellationToken;

/// An append failed; the daemon is stopping. Nothing may be sent for the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit append failed: {0}")]
pub(crate) struct AuditFailed(pub(crate) String);

/// A clonable handle on the process's single writer, optionally bound to one session.
#[derive(Debug, Clone)]
pub(crate) struct Auditor {
    log: AuditLog,
    session: Option<String>,
    failed: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl Auditor {
    /// Wraps the writer; `failed` is cancelled when an append fails.
    pub(crate) fn new(log: AuditLog, failed: CancellationToken) -> Self {
        Auditor {
            log,
            session: None,
            failed,
            reason: Arc::new(Mutex::new(None)),
        }
    }

    /// A view whose records all carry `session_id` (1.6).
    pub(crate) fn for_session(&self, session_id: &str) -> Self {
        Auditor {
            session: Some(session_id.to_owned()),
            ..self.clone()
        }
    }

    /// The writer.
    pub(crate) fn log(&self) -> &AuditLog {
        &self.log
    }

    /// Cancelled once an append failed.
    pub(crate) fn failed_token(&self) -> CancellationToken {
        self.failed.clone()
    }

    /// Why the writer failed, once it has.
    pub(crate) fn failure(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    fn tag(&self, ev: AuditEvent) -> AuditEvent {
        match &self.session {
            Some(s) => ev.session(s.clone()),
            None => ev,
        }
    }

    /// What every failed append does: remember why, and stop the daemon.
    fn outcome(&self, r: Result<u64, AuditError>) -> Result<(), AuditFailed> {
        let e = match r {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let text = e.to_string();
        tracing::error!(error = %text, "audit append failed; stopping the daemon");
        if let Ok(mut r) = self.reason.lock()
            && r.is_none()
        {
            *r = Some(text.clone());
        }
        self.failed.cancel();
        Err(AuditFailed(text))
    }

    /// Appends `ev` (tagged with this view's session) and waits until it is durable.
    pub(crate) async fn write(&self, ev: AuditEvent) -> Result<(), AuditFailed> {
        let r = self.log.append(self.tag(ev)).await;
        self.outcome(r)
    }

    /// [`Auditor::write`] on the calling thread, which blocks until the record is durable
    /// (and may lead the shared fsync). Only for blocking-pool threads, where it saves the
    /// hand-off of the async form.
    pub(crate) fn write_blocking(&self, ev: AuditEvent) -> Result<(), AuditFailed> {
        let r = self.log.append_blocking(self.tag(ev));
        self.outcome(r)
    }

    /// Appends `op` with `details` and `result` for request `request_id`.
    pub(crate) async fn op(
        &self,
        op: &str,
        request_id: Option<&str>,
        details: Map,
        result: AuditResult,
    ) -> Result<(), AuditFailed> {
        self.write(event(op, request_id, details, result)).await
    }

    /// [`Auditor::op`] on a blocking-pool thread; see [`Auditor::write_blocking`].
    pub(crate) fn op_blocking(
        &self,
        op: &str,
        request_id: Option<&str>,
        details: Map,
        result: AuditResult,
    ) -> Result<(), AuditFailed> {
        self.write_blocking(event(op, request_id, details, result))
    }

    /// Appends a failed `op` with `code` and empty details ([H-4] pre-handler refusals).
    pub(crate) async fn refusal(
        &self,
        op: &str,
        request_id: &str,
        code: &ErrorCode,
    ) -> Result<(), AuditFailed> {
        self.op(op, Some(request_id), Map::new(), AuditResult::failed(code))
            .await
    }
}

fn event(op: &str, request_id: Option<&str>, details: Map, result: AuditResult) -> AuditEvent {
    let ev = AuditEvent::new(op).details(details).result(result);
    match request_id {
        Some(id) => ev.request_id(id),
        None => ev,
    }
}
