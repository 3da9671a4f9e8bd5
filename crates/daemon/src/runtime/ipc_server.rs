//! The daemon's end of the local control socket ([`crate::ipc`]): binds it and serves
//! requests until the daemon stops.
//!
//! Unix: refuses a directory other users can enter and a socket another daemon still
//! answers on (a stale file is replaced), and checks each peer's uid. Windows: a named pipe
//! whose security descriptor admits only this user ([`crate::runtime::pipe`]); its first
//! instance is created with `FILE_FLAG_FIRST_PIPE_INSTANCE`, so a second daemon finds it
//! taken.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::AsyncRead;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWrite;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use shim_audit::AuditResult;
use shim_audit::Map;

use crate::error::DaemonError;
use crate::ipc;
use crate::ipc::Decoded;
use crate::ipc::IpcErrorKind;
use crate::ipc::Request;
use crate::ipc::Response;
use crate::ipc::StatusReport;
use crate::policy::amend::AmendError;
use crate::runtime::approvals::Answer;
use crate::runtime::approvals::DecideError;
use crate::runtime::control::Control;
use crate::runtime::machine::Machine;

/// A bound socket (Unix: the file is removed when the server stops) or pipe (Windows).
pub(crate) struct IpcServer {
    #[cfg(unix)]
    listener: tokio::net::UnixListener,
    #[cfg(windows)]
    pipe: crate::runtime::pipe::Pipe,
    path: PathBuf,
}

impl IpcServer {
    /// Binds `path` (see the module doc); errors are preflight failures (exit 78).
    #[cfg(unix)]
    pub(crate) fn bind(path: &Path) -> Result<IpcServer, DaemonError> {
        use std::io::ErrorKind;
        use std::os::unix::fs::DirBuilderExt;
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::fs::PermissionsExt;
        let fail = |what: String| DaemonError::Preflight(format!("control socket: {what}"));
        let dir = path
            .parent()
            .ok_or_else(|| fail(format!("{} has no parent directory", path.display())))?;
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail(format!("cannot create {}: {e}", dir.display()))),
        }
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| fail(format!("cannot inspect {}: {e}", dir.display())))?;
        let uid = rustix::process::getuid().as_raw();
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(fail(format!(
                "{} must be a directory owned by this user with mode 0700\nhint: remove it, or set XDG_RUNTIME_DIR to a private directory",
                dir.display()
            )));
        }
        if std::fs::symlink_metadata(path).is_ok() {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(fail(format!(
                        "another autogpt-shim daemon is running (it answers on {})\nhint: stop it first; run one daemon per machine",
                        path.display()
                    )));
                }
                Err(_) => {
                    tracing::info!(path = %path.display(), "removing a stale control socket");
                    std::fs::remove_file(path).map_err(|e| {
                        fail(format!("cannot remove the stale {}: {e}", path.display()))
                    })?;
                }
            }
        }
        let listener = tokio::net::UnixListener::bind(path)
            .map_err(|e| fail(format!("cannot bind {}: {e}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| fail(format!("cannot restrict {}: {e}", path.display())))?;
        Ok(IpcServer {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// Creates the pipe `path` (see the module doc); errors are preflight failures (exit 78).
    #[cfg(windows)]
    pub(crate) fn bind(path: &Path) -> Result<IpcServer, DaemonError> {
        let pipe = crate::runtime::pipe::Pipe::bind(path.as_os_str())
            .map_err(|e| DaemonError::Preflight(format!("control pipe: {e}")))?;
        Ok(IpcServer {
            pipe,
            path: path.to_path_buf(),
        })
    }

    /// Serves until `stop`; then removes the socket file. `control` is the control plane in
    /// machine control mode (`None` for a legacy session).
    pub(crate) async fn serve(
        #[cfg_attr(not(windows), allow(unused_mut))] mut self,
        machine: Arc<Machine>,
        control: Option<Arc<Control>>,
        stop: CancellationToken,
    ) {
        #[cfg(unix)]
        let uid = rustix::process::getuid().as_raw();
        loop {
            #[cfg(unix)]
            let stream = {
                let accepted = tokio::select! {
                    () = stop.cancelled() => break,
                    a = self.listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else {
                    continue;
                };
                match stream.peer_cred() {
                    Ok(c) if c.uid() == uid => {}
                    other => {
                        tracing::warn!(peer = ?other.map(|c| c.uid()), "refused a control socket client of another user");
                        continue;
                    }
                }
                stream
            };
            #[cfg(windows)]
            let stream = {
                let accepted = tokio::select! {
                    () = stop.cancelled() => break,
                    a = self.pipe.accept() => a,
                };
                match accepted {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::error!(error = %e, "the control pipe failed; `autogpt-shim approve` and the others cannot reach this daemon any more");
                        break;
                    }
                }
            };
            let m = machine.clone();
            let c = control.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = client(stream, m, c) => {}
                }
            });
        }
        #[cfg(unix)]
        let _ = std::fs::remove_file(&self.path);
        #[cfg(windows)]
        let _ = &self.path;
    }
}

/// One client: frames until it closes or sends something that is not a frame.
async fn client<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    machine: Arc<Machine>,
    control: Option<Arc<Control>>,
) {
    loop {
        let mut header = [0u8; 4];
        if s.read_exact(&mut header).await.is_err() {
            return;
        }
        let len = match ipc::body_len(header) {
            Ok(len) => len,
            Err(len) => {
                let message = format!(
                    "frame of {len} bytes is over the {} byte limit",
                    ipc::MAX_FRAME
                );
                let _ = reply(&mut s, &error(IpcErrorKind::Malformed, message)).await;
                return;
            }
        };
        let mut body = vec![0u8; len];
        if s.read_exact(&mut body).await.is_err() {
            return;
        }
        let response = match ipc::decode::<Request>(&body) {
            Decoded::Message(r) => match handle(&machine, control.as_deref(), r).await {
                Some(r) => r,
                // The audit log failed: the daemon is stopping; answer nothing more.
                None => return,
            },
            Decoded::OtherVersion(v) => error(
                IpcErrorKind::UnsupportedVersion,
                format!(
                    "this daemon speaks control protocol {}, the client {v}\nhint: use the autogpt-shim binary of the running daemon's version",
                    ipc::IPC_VERSION
                ),
            ),
            Decoded::Malformed(e) => error(IpcErrorKind::Malformed, format!("bad frame: {e}")),
        };
        if reply(&mut s, &response).await.is_err() {
            return;
        }
    }
}

fn error(kind: IpcErrorKind, message: String) -> Response {
    Response::Error { kind, message }
}

fn decide_error(id: u64, e: DecideError) -> Response {
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

async fn reply<S: AsyncWrite + Unpin>(s: &mut S, r: &Response) -> std::io::Result<()> {
    s.write_all(&ipc::encode_frame(r)?).await
}

/// Writes the record of a local action (pause, resume, kill); `false` if the audit log
/// failed.
async fn audited(machine: &Machine, action: &str, details: Map) -> bool {
    machine
        .audit
        .op(
            "LOCAL_CONTROL",
            None,
            details.with("action", action).with("decided_by", "cli"),
            AuditResult::default(),
        )
        .await
        .is_ok()
}

async fn handle(machine: &Machine, control: Option<&Control>, r: Request) -> Option<Response> {
    Some(match r {
        Request::Status => Response::Status(StatusReport {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            paused: machine.paused.load(Ordering::SeqCst),
            session_id: machine.settings.session_id.clone(),
            policy_file: machine
                .policy
                .path
                .as_ref()
                .map(|p| p.display().to_string()),
            pending_approvals: u32::try_from(machine.approvals.pending().len()).unwrap_or(u32::MAX),
        }),
        Request::ListApprovals => Response::Approvals(machine.approvals.pending()),
        Request::Decide { id, approve } => match machine.approvals.decide(id, approve, "cli") {
            Ok(()) => Response::Done,
            Err(e) => decide_error(id, e),
        },
        Request::Pause => {
            if !audited(machine, "pause", Map::new()).await {
                return None;
            }
            machine.paused.store(true, Ordering::SeqCst);
            tracing::warn!("paused by the local user: new operations are refused");
            Response::Done
        }
        Request::Resume => {
            if !audited(machine, "resume", Map::new()).await {
                return None;
            }
            machine.paused.store(false, Ordering::SeqCst);
            tracing::warn!("resumed by the local user");
            Response::Done
        }
        Request::Kill => {
            let running = u32::try_from(machine.limiter.running()).unwrap_or(u32::MAX);
            if !audited(
                machine,
                "kill",
                Map::new().with("running", u64::from(running)),
            )
            .await
            {
                return None;
            }
            machine.kill.send_modify(|g| *g += 1);
            tracing::warn!(running, "the local user ended every running command");
            Response::Killed(running)
        }
        Request::AlwaysAllow { id } => return always_allow(machine, id, "cli").await,
        Request::Detach { session_id } => return detach(machine, control, &session_id).await,
    })
}

/// `detach SESSION`: ends the chat's runtime as `DETACH_SESSION` does (its binding is
/// forgotten), audited as `LOCAL_CONTROL` (`detach`). `None` when the audit log failed.
async fn detach(machine: &Machine, control: Option<&Control>, sid: &str) -> Option<Response> {
    let Some(control) = control else {
        return Some(error(
            IpcErrorKind::NotInControlMode,
            format!(
                "this daemon serves the single legacy session {}; there is no chat to detach\nhint: stop the daemon to end it",
                machine.settings.session_id.as_deref().unwrap_or("?")
            ),
        ));
    };
    match control.detach_local(sid, "cli").await {
        Ok(true) => Some(Response::Done),
        Ok(false) => Some(error(
            IpcErrorKind::UnknownSession,
            format!(
                "no chat has the session id {sid:?}\nhint: `autogpt-shim status` lists the chats"
            ),
        )),
        Err(_) => None,
    }
}
