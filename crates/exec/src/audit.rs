//! Audit data of JAIL_FILES_EXEC.md 12.11, produced as plain values for the daemon's audit
//! writer. Values of environment variables never appear here.

use shim_protocol::ErrorCode;

/// `details` of an `EXECUTE_COMMAND` record. Non-exhaustive: new details may be added
/// in a minor version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecAuditDetails {
    /// `command`, verbatim, or `None`.
    pub command: Option<String>,
    /// `argv`, verbatim, or `None`.
    pub argv: Option<Vec<String>>,
    /// The request's `shell` value (`auto` when omitted), even for `argv`.
    pub shell: String,
    /// Display path of the validated cwd; before validation the raw wire `cwd`, or the
    /// root's display path when absent.
    pub cwd: String,
    /// Sorted names of the final environment; before the merge, sorted wire names.
    pub env_keys: Vec<String>,
    /// The effective timeout `T`.
    pub timeout_seconds: u64,
    /// The `shell_sandbox` mode applied (`off`, `workspace-write`, `read-only`).
    pub sandbox: &'static str,
    /// The `shell_network` mode applied (`allow`, `deny`).
    pub network: &'static str,
}

/// `result` of an audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditResult {
    /// True only for a completed command.
    pub ok: bool,
    /// The reported exit code (completed or timed out), else `None`.
    pub exit_code: Option<i64>,
    /// Integer milliseconds (floor) from the handler start.
    pub duration_ms: u64,
    /// `COMMAND_TIMEOUT` for a timeout, the wire code for a failure, else `None`.
    pub error_code: Option<ErrorCode>,
}

/// One audit record to write, before the response is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditEvent {
    /// An `EXECUTE_COMMAND` record.
    ExecuteCommand {
        /// The details.
        details: ExecAuditDetails,
        /// The result.
        result: AuditResult,
        /// 12.10: `details.cancelled: true` (the request was cancelled; nothing is sent).
        cancelled: bool,
    },
    /// A `JAIL_VIOLATION` record for the `cwd` (4.11): `attempted_op` is
    /// `EXECUTE_COMMAND`, `result` is `{ok:false, exit_code:null, duration_ms:0,
    /// error_code:<code>}`.
    JailViolation {
        /// The jail error code.
        code: ErrorCode,
        /// The raw wire `cwd`, or the root's display path when absent.
        path: String,
    },
}

impl AuditEvent {
    /// The record for a cancelled command (12.10): `ok:false`, `INTERNAL_ERROR`,
    /// `cancelled:true`.
    pub fn cancelled(details: ExecAuditDetails, duration_ms: u64) -> AuditEvent {
        AuditEvent::ExecuteCommand {
            details,
            result: AuditResult {
                ok: false,
                exit_code: None,
                duration_ms,
                error_code: Some(ErrorCode::InternalError),
            },
            cancelled: true,
        }
    }

    /// The record for a finished run: completed (any exit code), timed out, or failed.
    pub fn finished(
        details: ExecAuditDetails,
        outcome: &Result<crate::CommandResult, crate::ExecError>,
        duration_ms: u64,
    ) -> AuditEvent {
        let result = match outcome {
            Ok(r) if r.timed_out => AuditResult {
                ok: false,
                exit_code: Some(r.exit_code),
                duration_ms,
                error_code: Some(ErrorCode::CommandTimeout),
            },
            Ok(r) => AuditResult {
                ok: true,
                exit_code: Some(r.exit_code),
                duration_ms,
                error_code: None,
            },
            Err(e) => AuditResult {
                ok: false,
                exit_code: None,
                duration_ms,
                error_code: Some(e.code()),
            },
        };
        AuditEvent::ExecuteCommand {
            details,
            result,
            cancelled: false,
        }
    }
}

/// The record `shim-audit` writes for this event (feature `audit`): `EXECUTE_COMMAND` with
/// its details in the key order of `AUDIT_AUTH_CLI.md` 1.7 (`cancelled: true` only when
/// set), or `JAIL_VIOLATION` with `attempted_op: EXECUTE_COMMAND`. The caller adds the
/// request id and session.
///
/// ```
/// let ev = shim_exec::AuditEvent::JailViolation {
///     code: shim_exec::ErrorCode::PathOutsideAllowedRoot,
///     path: "../x".into(),
/// };
/// let record = shim_audit::AuditEvent::from(ev);
/// assert_eq!(record.op, "JAIL_VIOLATION");
/// assert_eq!(record.result.error_code.as_deref(), Some("PATH_OUTSIDE_ALLOWED_ROOT"));
/// ```
#[cfg(feature = "audit")]
impl From<AuditEvent> for shim_audit::AuditEvent {
    fn from(ev: AuditEvent) -> shim_audit::AuditEvent {
        use shim_audit::Map;
        match ev {
            AuditEvent::ExecuteCommand {
                details,
                result,
                cancelled,
            } => {
                let mut d = Map::new()
                    .with("command", details.command)
                    .with("argv", details.argv)
                    .with("shell", details.shell)
                    .with("cwd", details.cwd)
                    .with("env_keys", details.env_keys)
                    .with("timeout_seconds", details.timeout_seconds)
                    .with("sandbox", details.sandbox)
                    .with("network", details.network);
                if cancelled {
                    d.insert("cancelled", true);
                }
                shim_audit::AuditEvent::new("EXECUTE_COMMAND")
                    .details(d)
                    .result(shim_audit::AuditResult {
                        ok: result.ok,
                        exit_code: result.exit_code,
                        duration_ms: result.duration_ms,
                        error_code: result.error_code.map(|c| c.as_str().to_owned()),
                    })
            }
            AuditEvent::JailViolation { code, path } => {
                shim_audit::AuditEvent::new("JAIL_VIOLATION")
                    .details(
                        Map::new()
                            .with("code", code.as_str())
                            .with("path", path)
                            .with("attempted_op", "EXECUTE_COMMAND"),
                    )
                    .result(shim_audit::AuditResult::failed(&code))
            }
        }
    }
}
