//! The local control socket's protocol: how `autogpt-shim approve` / `deny` / `approvals` /
//! `pause` / `resume` (and later the web console) talk to the running daemon.
//!
//! A Unix socket `control.sock` in the user's runtime directory ([`socket_path`]: the
//! directory is 0700, the socket 0600, and the daemon checks the peer's uid). Each frame is a
//! 4-byte big-endian length and a `postcard` body; a body starts with the protocol version
//! ([`IPC_VERSION`], a varint), then the [`Request`] or [`Response`]. A peer speaking another
//! version gets [`IpcErrorKind::UnsupportedVersion`] and the connection stays usable.

use std::path::Path;
use std::path::PathBuf;

use serde::Deserialize;
use serde::Serialize;

use crate::runtime::approvals::PendingApproval;

/// The protocol version this build speaks.
pub const IPC_VERSION: u16 = 1;

/// The largest frame body either side accepts.
pub const MAX_FRAME: usize = 1 << 20;

/// A request to the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// What the daemon is doing now.
    Status,
    /// The commands waiting for an answer.
    ListApprovals,
    /// Answer a waiting command.
    Decide {
        /// Its approval id.
        id: u64,
        /// `true` runs it, `false` refuses it.
        approve: bool,
    },
    /// Refuse every new operation until `Resume`.
    Pause,
    /// Serve operations again.
    Resume,
    /// End every running command and its whole process tree now.
    Kill,
    /// Run a waiting command and append a rule to the policy file that allows it from now
    /// on ("always allow"; docs/policy.md).
    AlwaysAllow {
        /// Its approval id.
        id: u64,
    },
    /// End a chat's runtime, as the platform's `DETACH_SESSION` does (machine control mode).
    Detach {
        /// The chat's session id.
        session_id: String,
    },
}

/// The daemon's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// For `Status`.
    Status(StatusReport),
    /// For `ListApprovals`.
    Approvals(Vec<PendingApproval>),
    /// The request was carried out.
    Done,
    /// For `Kill`: how many commands were running.
    Killed(u32),
    /// It was not.
    Error {
        /// What kind of failure.
        kind: IpcErrorKind,
        /// In words.
        message: String,
    },
    /// For `AlwaysAllow`: the command runs; these rules were added to the policy file.
    RuleAdded {
        /// The policy file.
        file: String,
        /// Each new rule: the line of its `[[rule]]` header and the rule as written. Empty
        /// when the file already allowed the command.
        rules: Vec<(u32, String)>,
    },
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IpcErrorKind {
    /// The client speaks another protocol version.
    UnsupportedVersion,
    /// The frame could not be decoded.
    Malformed,
    /// No waiting command has this id.
    UnknownApproval,
    /// The command already got its answer (or timed out).
    AlreadyDecided,
    /// "Always allow" without a `command_policy_file`.
    NoPolicyFile,
    /// "Always allow" could not add a rule (the message says why); the command still waits.
    PolicyNotChanged,
    /// No chat has this session id.
    UnknownSession,
    /// The request needs machine control mode (the daemon serves one legacy session).
    NotInControlMode,
}

/// The live state `status` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// The daemon's process id.
    pub pid: u32,
    /// Its version.
    pub version: String,
    /// Whether new operations are refused.
    pub paused: bool,
    /// Legacy session id, or `None` in machine control mode.
    pub session_id: Option<String>,
    /// The command policy file, if any.
    pub policy_file: Option<String>,
    /// Commands waiting for an answer.
    pub pending_approvals: u32,
}

/// Encodes one frame body: the version, then `msg`.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, postcard::Error> {
    let mut body = postcard::to_stdvec(&IPC_VERSION)?;
    body.extend(postcard::to_stdvec(msg)?);
    Ok(body)
}

/// What a frame body held.
#[derive(Debug)]
pub enum Decoded<T> {
    /// A message of this version.
    Message(T),
    /// A body of another version (the number given).
    OtherVersion(u16),
    /// Not a frame of this protocol.
    Malformed(String),
}

/// Decodes one frame body.
pub fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Decoded<T> {
    match postcard::take_from_bytes::<u16>(body) {
        Ok((IPC_VERSION, rest)) => match postcard::from_bytes::<T>(rest) {
            Ok(m) => Decoded::Message(m),
            Err(e) => Decoded::Malformed(e.to_string()),
        },
        Ok((v, _)) => Decoded::OtherVersion(v),
        Err(e) => Decoded::Malformed(e.to_string()),
    }
}

/// Where the socket lives: `$XDG_RUNTIME_DIR/autogpt-shim/control.sock`, else
/// `<temp dir>/autogpt-shim-<uid>/control.sock`.
pub fn socket_path(xdg_runtime_dir: Option<&Path>, temp_dir: &Path, uid: u32) -> PathBuf {
    match xdg_runtime_dir.filter(|d| d.is_absolute()) {
        Some(d) => d.join("autogpt-shim").join("control.sock"),
        None => temp_dir
            .join(format!("autogpt-shim-{uid}"))
            .join("control.sock"),
    }
}

/// [`socket_path`] for this process.
#[cfg(unix)]
pub fn socket_path_from_process() -> PathBuf {
    let xdg = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    socket_path(
        xdg.as_deref(),
        &std::env::temp_dir(),
        rustix::process::getuid().as_raw(),
    )
}

/// Why a request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket: no daemon runs for this user.
    #[error("no daemon is running (nothing answers on {0})")]
    NotRunning(PathBuf),
    /// The socket or the daemon failed mid-way.
    #[error("the daemon's control socket failed: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon answered with something that is not a response of this version.
    #[error("the daemon's answer could not be read: {0}")]
    Protocol(String),
}

/// Sends one request to the daemon listening on `path` and waits (at most 10 s) for its
/// response.
#[cfg(unix)]
pub fn request(path: &Path, r: &Request) -> Result<Response, ClientError> {
    use std::io::Read;
    use std::io::Write;
    let mut s = match std::os::unix::net::UnixStream::connect(path) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Err(ClientError::NotRunning(path.to_path_buf()));
        }
        Err(e) => return Err(e.into()),
    };
    let timeout = Some(std::time::Duration::from_secs(10));
    s.set_read_timeout(timeout)?;
    s.set_write_timeout(timeout)?;
    let body = encode(r).map_err(|e| ClientError::Protocol(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|e| ClientError::Protocol(e.to_string()))?;
    s.write_all(&len.to_be_bytes())?;
    s.write_all(&body)?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(ClientError::Protocol(format!("a {len} byte frame")));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    match decode::<Response>(&body) {
        Decoded::Message(m) => Ok(m),
        Decoded::OtherVersion(v) => Err(ClientError::Protocol(format!(
            "the daemon speaks control protocol {v}, this client {IPC_VERSION}"
        ))),
        Decoded::Malformed(e) => Err(ClientError::Protocol(e)),
    }
}

#[cfg(test)]
#[path = "ipc_tests.rs"]
mod tests;
