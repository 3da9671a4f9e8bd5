//! The daemon's end of the local control socket ([`crate::ipc`]): binds it (refusing a
//! directory other users can enter, and a socket another daemon still answers on; a stale
//! file is replaced), checks each peer's uid, and serves requests until the daemon stops.

use std::io::ErrorKind;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixListener;
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

use crate::error::DaemonError;
use crate::ipc;
use crate::ipc::Decoded;
use crate::ipc::IpcErrorKind;
use crate::ipc::Request;
use crate::ipc::Response;
use crate::runtime::approvals::DecideError;
use crate::runtime::console::ConsoleSlot;
use crate::runtime::machine::Machine;
use crate::runtime::steer;

/// A bound socket; the file is removed when the server stops.
pub(crate) struct IpcServer {
    listener: UnixListener,
    path: PathBuf,
}

impl IpcServer {
    /// Binds `path` (see the module doc); errors are preflight failures (exit 78).
    pub(crate) fn bind(path: &Path) -> Result<IpcServer, DaemonError> {
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
        let listener = UnixListener::bind(path)
            .map_err(|e| fail(format!("cannot bind {}: {e}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| fail(format!("cannot restrict {}: {e}", path.display())))?;
        Ok(IpcServer {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// Serves until `stop`; then removes the socket file.
    pub(crate) async fn serve(
        self,
        machine: Arc<Machine>,
        console: Arc<ConsoleSlot>,
        stop: CancellationToken,
    ) {
        let uid = rustix::process::getuid().as_raw();
        loop {
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
            let m = machine.clone();
            let stop = stop.clone();
            let console = console.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = client(stream, m, console) => {}
                }
            });
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One client: frames until it closes or sends something that is not a frame.
async fn client(mut s: UnixStream, machine: Arc<Machine>, console: Arc<ConsoleSlot>) {
    loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).await.is_err() {
            return;
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > ipc::MAX_FRAME {
            let _ = reply(
                &mut s,
                &error(
                    IpcErrorKind::Malformed,
                    format!(
                        "frame of {len} bytes is over the {} byte limit",
                        ipc::MAX_FRAME
                    ),
                ),
            )
            .await;
            return;
        }
        let mut body = vec![0u8; len];
        if s.read_exact(&mut body).await.is_err() {
            return;
        }
        let response = match ipc::decode::<Request>(&body) {
            Decoded::Message(r) => match handle(&machine, &console, r).await {
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

async fn reply(s: &mut UnixStream, r: &Response) -> std::io::Result<()> {
    let body = ipc::encode(r).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    s.write_all(&len.to_be_bytes()).await?;
    s.write_all(&body).await
}

async fn handle(machine: &Machine, console: &ConsoleSlot, r: Request) -> Option<Response> {
    Some(match r {
        Request::Status => {
            Response::Status(Box::new(crate::runtime::status::snapshot(machine).await))
        }
        Request::ListApprovals => Response::Approvals(machine.approvals.pending()),
        Request::Decide { id, approve } => match steer::decide(machine, id, approve, "cli") {
            Ok(()) => Response::Done,
            Err(DecideError::Unknown) => error(
                IpcErrorKind::UnknownApproval,
                format!("no command waits for approval {id}"),
            ),
            Err(DecideError::AlreadyDecided) => error(
                IpcErrorKind::AlreadyDecided,
                format!("approval {id} was already decided (or timed out)"),
            ),
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
    })
}
