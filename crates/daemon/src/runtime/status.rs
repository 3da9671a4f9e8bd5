//! Builds [`ipc::StatusReport`], what `autogpt-shim status [--json]` and the web console
//! show, from the [`crate::runtime::board::Board`] and the machine's limits, approvals and
//! audit log.

use std::sync::atomic::Ordering;

use crate::ipc;
use crate::ipc::AuditStatus;
use crate::runtime::machine::Machine;

/// What `status` shows now (the audit chain verified up to its last record).
// Asked for over the control socket, which is Unix-only in this build.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) async fn snapshot(machine: &Machine) -> ipc::StatusReport {
    snapshot_within(machine, std::time::Duration::ZERO).await
}

/// [`snapshot`], with the audit chain's verification reused if it is younger than
/// `max_age` (the console asks often).
pub(crate) async fn snapshot_within(
    machine: &Machine,
    max_age: std::time::Duration,
) -> ipc::StatusReport {
    let board = &machine.status;
    let log = machine.audit.log();
    let audit = board
        .audit_status(log.path(), &machine.audit_key, max_age)
        .await;
    let limits = machine.limiter.limits();
    let errors = board.errors();
    ipc::StatusReport {
        schema: ipc::STATUS_SCHEMA,
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        uptime_seconds: board.started.elapsed().as_secs(),
        mode: if machine.settings.session_id.is_some() {
            "legacy"
        } else {
            "machine_control"
        }
        .to_owned(),
        paused: machine.paused.load(Ordering::SeqCst),
        session_id: machine.settings.session_id.clone(),
        policy_file: machine
            .policy
            .path
            .as_ref()
            .map(|p| p.display().to_string()),
        pending_approvals: u32::try_from(machine.approvals.pending().len()).unwrap_or(u32::MAX),
        sandbox: board.sandbox.clone(),
        connections: board.connections(),
        operations: board.operations(),
        command_rate: ipc::RateStatus {
            window_seconds: limits.window.as_secs(),
            in_window: u64::try_from(machine.limiter.in_window()).unwrap_or(u64::MAX),
            max_per_window: u64::from(limits.max_commands_per_minute),
            running: u64::try_from(machine.limiter.running()).unwrap_or(u64::MAX),
            max_concurrent: u64::from(limits.max_concurrent_commands),
        },
        audit: AuditStatus {
            path: log.path().display().to_string(),
            last_seq: audit.last_seq,
            chain: audit.chain,
            problem: audit.problem,
            records_written: log.stats().records,
            bytes: audit.bytes,
        },
        last_errors: errors,
        desktop: machine.cu.desk.status(),
    }
}
