//! What the local user can do to the running daemon, from the control socket (`cli`) or the
//! web console (`console`): pause, resume, kill every command or one, answer an approval.
//! Each action is audited (`LOCAL_CONTROL`, with `decided_by`) before it takes effect.

use std::sync::atomic::Ordering;

use shim_audit::AuditResult;
use shim_audit::Map;

use crate::ipc::IpcErrorKind;
use crate::ipc::Response;
use crate::policy::amend::AmendError;
use crate::runtime::approvals::Answer;
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

/// The control-socket answer for a refused approval answer.
pub(crate) fn decide_error(id: u64, e: DecideError) -> Response {
    match e {
        DecideError::Unknown => error(
            IpcErrorKind::UnknownApproval,
            format!("no command waits for approval {id}"),
        ),
        DecideError::AlreadyDecided => error(
            IpcErrorKind::AlreadyDecided,
            format!("approval {id} was already decided (or timed out)"),
        ),
    }
}

fn error(kind: IpcErrorKind, message: String) -> Response {
    Response::Error { kind, message }
}

/// "Always allow" for the command waiting as approval `id`, answered by `by` (`cli`,
/// `console`): appends the allow rules to the policy file and uses the new file at once
/// ([`crate::policy::amend`]), writes a `LOCAL_CONTROL` record (`always_allow`: the file,
/// the rules, who), then runs the command (its `COMMAND_POLICY` record says
/// `always_allowed`, who and how long it waited). Nothing is approved when no rule could be
/// written. `None` when the audit log failed (the daemon is stopping).
pub(crate) async fn always_allow(machine: &Machine, id: u64, by: &str) -> Option<Response> {
    if machine.policy.path.is_none() {
        return Some(error(
            IpcErrorKind::NoPolicyFile,
            AmendError::NoFile.to_string(),
        ));
    }
    let subject = match machine.approvals.subject(id) {
        Ok(s) => s,
        Err(e) => return Some(decide_error(id, e)),
    };
    let note = format!(
        "Added by \"always allow\" of approval {id} (answered by {by}) at {}",
        shim_audit::export::utc_now_stamp()
    );
    let policy = machine.policy.clone();
    let amended = tokio::task::spawn_blocking(move || policy.always_allow(&subject, &note)).await;
    let amended = match amended {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            let kind = match e {
                AmendError::NoFile => IpcErrorKind::NoPolicyFile,
                _ => IpcErrorKind::PolicyNotChanged,
            };
            return Some(error(
                kind,
                format!("approval {id} still waits; no rule was added: {e}"),
            ));
        }
        Err(e) => {
            return Some(error(
                IpcErrorKind::PolicyNotChanged,
                format!("approval {id} still waits; no rule was added: {e}"),
            ));
        }
    };
    let file = amended.file.display().to_string();
    let details = Map::new()
        .with("action", "always_allow")
        .with("decided_by", by)
        .with("approval_id", id)
        .with("policy_file", file.as_str())
        .with(
            "rules",
            amended
                .rules
                .iter()
                .map(|(_, r)| r.clone())
                .collect::<Vec<_>>(),
        )
        .with(
            "rule_lines",
            amended.rules.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
        );
    if machine
        .audit
        .op("LOCAL_CONTROL", None, details, AuditResult::default())
        .await
        .is_err()
    {
        return None;
    }
    tracing::warn!(approval = id, file = %file, rules = amended.rules.len(), "always allow: rule added to the command policy");
    Some(
        match machine.approvals.answer(id, Answer::AlwaysAllowed, by) {
            Ok(()) => Response::RuleAdded {
                file,
                rules: amended
                    .rules
                    .into_iter()
                    .map(|(l, r)| (u32::try_from(l).unwrap_or(u32::MAX), r))
                    .collect(),
            },
            Err(e) => {
                let Response::Error { kind, message } = decide_error(id, e) else {
                    return None;
                };
                error(
                    kind,
                    format!("{message}; the rule was added to {file} all the same"),
                )
            }
        },
    )
}
