//! What the local user can do to the running daemon, from the control socket (`cli`) or the
//! web console (`console`): pause, resume, kill every command or one, answer an approval.
//! Each action is audited (`LOCAL_CONTROL`, with `decided_by`) before it takes effect.

use std::sync::atomic::Ordering;

use shim_audit::AuditResult;
use shim_audit::Map;

use crate::runtime::approvals::DecideError;
use crate::runtime::board::KillOpError;
use crate::runtime::machine::Machine;

/// The audit log failed: the daemon is stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AuditDown;

/// Writes the record of a local action; `Err` if the audit log failed.
async fn audited(machine: &Machine, action: &str, by: &str, details: Map) -> Result<(), AuditDown> {
    machine
        .audit
        .op(
            "LOCAL_CONTROL",
            None,
            details.with("action", action).with("decided_by", by),
            AuditResult::default(),
        )
        .await
        .map_err(|_| AuditDown)
}

/// Pauses (`true`) or resumes the daemon.
pub(crate) async fn pause(machine: &Machine, pause: bool, by: &str) -> Result<(), AuditDown> {
    audited(
        machine,
        if pause { "pause" } else { "resume" },
        by,
        Map::new(),
    )
    .await?;
    machine.paused.store(pause, Ordering::SeqCst);
    if pause {
        tracing::warn!(by, "paused by the local user: new operations are refused");
    } else {
        tracing::warn!(by, "resumed by the local user");
    }
    Ok(())
}

/// Ends every running command with its tree; returns how many ran.
pub(crate) async fn kill_all(machine: &Machine, by: &str) -> Result<u32, AuditDown> {
    let running = u32::try_from(machine.limiter.running()).unwrap_or(u32::MAX);
    audited(
        machine,
        "kill",
        by,
        Map::new().with("running", u64::from(running)),
    )
    .await?;
    machine.status.set_kill_by(by);
    machine.kill.send_modify(|g| *g += 1);
    tracing::warn!(running, by, "the local user ended every running command");
    Ok(running)
}

/// Why [`kill_one`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KillOneError {
    /// The audit log failed.
    AuditDown,
    /// No such operation, or it cannot be ended alone.
    Op(KillOpError),
}

/// Ends operation `id` (a running command) and its tree.
pub(crate) async fn kill_one(machine: &Machine, id: u64, by: &str) -> Result<(), KillOneError> {
    match machine.status.killable(id) {
        None => return Err(KillOneError::Op(KillOpError::Unknown)),
        Some(false) => return Err(KillOneError::Op(KillOpError::NotKillable)),
        Some(true) => {}
    }
    audited(
        machine,
        "kill_operation",
        by,
        Map::new().with("operation", id),
    )
    .await
    .map_err(|_| KillOneError::AuditDown)?;
    machine.status.kill_op(id).map_err(KillOneError::Op)
}

/// Answers approval `id`.
pub(crate) fn decide(
    machine: &Machine,
    id: u64,
    approve: bool,
    by: &str,
) -> Result<(), DecideError> {
    machine.approvals.decide(id, approve, by)
}
