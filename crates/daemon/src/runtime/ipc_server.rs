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

use tokio::io::AsyncRead;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWrite;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::error::DaemonError;
use crate::ipc;
use crate::ipc::Decoded;
use crate::ipc::IpcErrorKind;
use crate::ipc::Request;
use crate::ipc::Response;
use crate::runtime::console::ConsoleSlot;
use crate::runtime::control::Control;
use crate::runtime::desk;
use crate::runtime::machine::Machine;
use crate::runtime::steer;

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
        console: Arc<ConsoleSlot>,
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
            let console = console.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = client(stream, m, console, c) => {}
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
    console: Arc<ConsoleSlot>,
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
            Decoded::Message(r) => match handle(&machine, &console, control.as_deref(), r).await {
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

async fn reply<S: AsyncWrite + Unpin>(s: &mut S, r: &Response) -> std::io::Result<()> {
    s.write_all(&ipc::encode_frame(r)?).await
}

async fn handle(
    machine: &Machine,
    console: &ConsoleSlot,
    control: Option<&Control>,
    r: Request,
) -> Option<Response> {
    Some(match r {
        Request::Status => {
            Response::Status(Box::new(crate::runtime::status::snapshot(machine).await))
        }
        Request::ListApprovals => Response::Approvals(machine.approvals.pending()),
        Request::Decide { id, approve } => match steer::decide(machine, id, approve, "cli") {
            Ok(()) => Response::Done,
            Err(e) => steer::decide_error(id, e),
        },
        Request::Pause => {
            steer::pause(machine, true, "cli").await.ok()?;
            Response::Done
        }
        Request::Resume => {
            steer::pause(machine, false, "cli").await.ok()?;
            Response::Done
        }
        Request::Kill => Response::Killed(steer::kill_all(machine, "cli").await.ok()?),
        Request::ConsoleUrl => match console.get_or_start().await.map(|c| c.login_url()) {
            Ok(Some(url)) => Response::ConsoleUrl(url),
            Ok(None) => error(
                IpcErrorKind::ConsoleUnavailable,
                "no randomness for a login token".to_owned(),
            ),
            Err(e) => error(IpcErrorKind::ConsoleUnavailable, e),
        },
        Request::AlwaysAllow { id } => return steer::always_allow(machine, id, "cli").await,
        Request::Detach { session_id } => return detach(machine, control, &session_id).await,
        Request::Takeover { timeout_seconds } => {
            let desk = &machine.cu.desk;
            let timeout = timeout_seconds.map(std::time::Duration::from_secs);
            desk::take_over(desk, &machine.audit, "cli", timeout)
                .await
                .ok()?;
            Response::Done
        }
        Request::Handback => match desk::hand_back(&machine.cu.desk, &machine.audit, "cli").await {
            Ok(true) => Response::Done,
            Ok(false) => error(
                IpcErrorKind::NotHeld,
                "the desktop is not taken over; the agent already has it".to_owned(),
            ),
            Err(_) => return None,
        },
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
