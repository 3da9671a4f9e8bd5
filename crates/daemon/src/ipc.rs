//! The local control socket's protocol: how `autogpt-shim approve` / `deny` / `approvals` /
//! `pause` / `resume` (and later the web console) talk to the running daemon.
//!
//! A Unix socket `control.sock` in the user's runtime directory ([`socket_path`]: the
//! directory is 0700, the socket 0600, and the daemon checks the peer's uid); on Windows a
//! named pipe ([`pipe_name`]) whose security descriptor admits only the daemon's user. Each
//! frame is a 4-byte big-endian length and a `postcard` body ([`frame`], [`body_len`]); a body starts with the protocol version
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
    /// A one-time login URL for the web console (started now if it is not running).
    ConsoleUrl,
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
    /// Take the computer-use desktop over from the agent: its input actions, window focus,
    /// app launches and clipboard writes are refused until `Handback` (or the timeout).
    Takeover {
        /// Hand back on its own after this many seconds.
        timeout_seconds: Option<u64>,
    },
    /// Give the desktop back to the agent.
    Handback,
}

/// The daemon's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// For `Status`.
    Status(Box<StatusReport>),
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
    /// For `ConsoleUrl`: `http://127.0.0.1:PORT/?token=...`, valid once.
    ConsoleUrl(String),
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
    /// The web console could not be started.
    ConsoleUnavailable,
    /// "Always allow" without a `command_policy_file`.
    NoPolicyFile,
    /// "Always allow" could not add a rule (the message says why); the command still waits.
    PolicyNotChanged,
    /// No chat has this session id.
    UnknownSession,
    /// The request needs machine control mode (the daemon serves one legacy session).
    NotInControlMode,
    /// `Handback` while nobody held the desktop.
    NotHeld,
}

/// The live state `status` shows; `status --json` prints it as JSON. Its shape is
/// documented in docs/status.md and kept stable: fields are only ever added (with
/// [`STATUS_SCHEMA`] raised), never renamed or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    /// [`STATUS_SCHEMA`] of the daemon that made it.
    pub schema: u32,
    /// The daemon's process id.
    pub pid: u32,
    /// Its version.
    pub version: String,
    /// Seconds since the daemon started.
    pub uptime_seconds: u64,
    /// `machine_control` (folders chosen per chat) or `legacy` (one session, one folder).
    pub mode: String,
    /// Whether new operations are refused.
    pub paused: bool,
    /// Legacy session id, or `None` in machine control mode.
    pub session_id: Option<String>,
    /// The command policy file, if any.
    pub policy_file: Option<String>,
    /// Commands waiting for an answer.
    pub pending_approvals: u32,
    /// The confinement of shell commands (machine-wide).
    pub sandbox: SandboxStatus,
    /// The control connection (machine control mode) and each chat's connection.
    pub connections: Vec<ConnectionStatus>,
    /// Operations running now, oldest first.
    pub operations: Vec<OperationStatus>,
    /// The machine-wide command rate window.
    pub command_rate: RateStatus,
    /// The audit log.
    pub audit: AuditStatus,
    /// The most recent errors (newest last, at most [`LAST_ERRORS`]).
    pub last_errors: Vec<ErrorStatus>,
    /// The desktop computer use drives: who holds it, the agent's last action, who watches.
    pub desktop: DesktopStatus,
}

/// The desktop computer use drives (docs/console.md, "Live view and take-over").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DesktopStatus {
    /// Who took it over from the agent (`console`, `cli`), or `None`: the agent may act.
    pub held_by: Option<String>,
    /// When the take-over began, in seconds since the Unix epoch.
    pub held_since_unix: Option<u64>,
    /// Seconds until the take-over's timeout hands the desktop back, if one was set.
    pub seconds_left: Option<u64>,
    /// The agent's last input action that was carried out.
    pub last_action: Option<ActionStatus>,
    /// The live views open now (each one was audited when it opened).
    pub viewers: Vec<ViewerStatus>,
}

/// An input action of the agent, as the live view marks it (never the typed text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionStatus {
    /// The chat that acted.
    pub session_id: Option<String>,
    /// The action, e.g. `left_click`, `type`, `key`.
    pub action: String,
    /// Where it landed (the click point, the end of a drag), desktop coordinates.
    pub point: Option<[i64; 2]>,
    /// The key chord pressed, e.g. `ctrl+s`.
    pub chord: Option<String>,
    /// How many characters were typed.
    pub typed_chars: Option<u64>,
    /// Milliseconds since it was done.
    pub age_ms: u64,
}

/// One open live view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewerStatus {
    /// Its number (unique while the daemon runs).
    pub id: u64,
    /// When it opened, in seconds since the Unix epoch.
    pub since_unix: u64,
    /// Frames sent to it so far.
    pub frames: u64,
}

/// The version of [`StatusReport`]'s shape.
pub const STATUS_SCHEMA: u32 = 1;

/// How many errors [`StatusReport::last_errors`] keeps.
pub const LAST_ERRORS: usize = 20;

/// `shell_sandbox` and `shell_network` in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    /// `off`, `workspace-write` or `read-only`.
    pub mode: String,
    /// `allow` or `deny`.
    pub network: String,
    /// In words, with the enforcing mechanisms.
    pub description: String,
}

/// One connection to the platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionStatus {
    /// `control` (the machine's control connection) or `chat` (one chat's data connection,
    /// or a chat attached to a folder that has no connection yet).
    pub kind: String,
    /// The chat's session id (`None` for the control connection).
    pub session_id: Option<String>,
    /// The chat's folder (`None` for the control connection).
    pub folder: Option<String>,
    /// `attached` (folder chosen, not activated), `connecting`, `connected`,
    /// `reconnecting` or `stopped`.
    pub state: String,
    /// Seconds in this state.
    pub state_seconds: u64,
    /// Capabilities the platform granted at the last handshake, sorted.
    pub granted_capabilities: Vec<String>,
    /// Connections made so far (1 after the first handshake).
    pub connects: u64,
    /// Why the last connection ended, if one did.
    pub last_disconnect: Option<String>,
    /// What kind of trouble the last failed attempt had, until a handshake succeeds:
    /// `no_network`, `proxy`, `certificate`, `settings` or `unreachable` (absent from
    /// daemons older than this field).
    #[serde(default)]
    pub problem: Option<String>,
    /// Seconds until the next attempt, while waiting for it.
    #[serde(default)]
    pub retry_in_seconds: Option<u64>,
}

impl ConnectionStatus {
    /// The connection's state in words a user understands: "connected", "waiting for
    /// network, trying again in 3 s", "proxy refused, trying again in 7 s", "certificate not
    /// trusted, trying now", "reconnecting in 2 s". The reason itself is in
    /// [`last_disconnect`](Self::last_disconnect).
    pub fn words(&self) -> String {
        let trouble = match self.problem.as_deref() {
            Some("no_network") => Some("waiting for network"),
            Some("proxy") => Some("proxy refused"),
            Some("certificate") => Some("certificate not trusted"),
            Some("settings") => Some("a setting is wrong"),
            Some("unreachable") => Some("platform unreachable"),
            _ => None,
        };
        match (self.state.as_str(), trouble, self.retry_in_seconds) {
            ("reconnecting" | "connecting", Some(t), Some(n)) => {
                format!("{t}, trying again in {n} s")
            }
            ("reconnecting" | "connecting", Some(t), None) => format!("{t}, trying now"),
            ("reconnecting", None, Some(n)) => format!("reconnecting in {n} s"),
            (state, _, _) => state.to_owned(),
        }
    }
}

/// One operation in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationStatus {
    /// Its local id (the console's kill button, unique while the daemon runs).
    pub id: u64,
    /// The chat's session id.
    pub session_id: Option<String>,
    /// The platform's request id.
    pub request_id: String,
    /// The request type, e.g. `EXECUTE_COMMAND`.
    pub kind: String,
    /// What it does: the command, the path; never file contents.
    pub summary: String,
    /// Milliseconds since it started.
    pub age_ms: u64,
    /// Whether it can be ended on its own (running commands).
    pub killable: bool,
}

/// The command rate window (`max_commands_per_minute`, `max_concurrent_commands`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateStatus {
    /// The window's length in seconds.
    pub window_seconds: u64,
    /// Commands admitted within the window.
    pub in_window: u64,
    /// The most the window admits.
    pub max_per_window: u64,
    /// Commands running now.
    pub running: u64,
    /// The most that run at once.
    pub max_concurrent: u64,
}

/// The audit log's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStatus {
    /// The current log file.
    pub path: String,
    /// `seq` of its last record.
    pub last_seq: Option<u64>,
    /// `verified` (every record's HMAC and link checked), `broken` or `unreadable`.
    pub chain: String,
    /// The first problem when the chain is not verified.
    pub problem: Option<String>,
    /// Records this daemon wrote.
    pub records_written: u64,
    /// The file's size in bytes.
    pub bytes: u64,
}

/// One recent error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorStatus {
    /// When, in seconds since the Unix epoch.
    pub at_unix: u64,
    /// The chat's session id, if one.
    pub session_id: Option<String>,
    /// What failed: a request type, or `connection`.
    pub source: String,
    /// The wire error code, or a short reason.
    pub code: String,
    /// In words.
    pub message: String,
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

/// The Windows named pipe of `user`'s daemon: `\\.\pipe\autogpt-shim-<user>-control`
/// (characters other than letters, digits, `-`, `_` and `.` become `_`). The pipe's
/// security descriptor admits only the user who created it.
pub fn pipe_name(user: &str) -> PathBuf {
    let user: String = user
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from(format!(r"\\.\pipe\autogpt-shim-{user}-control"))
}

/// [`pipe_name`] for this process's user (`USERDOMAIN` and `USERNAME`).
#[cfg(windows)]
pub fn socket_path_from_process() -> PathBuf {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    pipe_name(&format!("{}.{}", var("USERDOMAIN"), var("USERNAME")))
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

/// One frame on the wire: the body's length (4 bytes, big-endian), then the body.
pub fn frame(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| l as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other(format!("a {} byte frame", body.len())))?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend(len.to_be_bytes());
    out.extend(body);
    Ok(out)
}

/// [`encode`] `msg`, then [`frame`] it.
pub fn encode_frame<T: Serialize>(msg: &T) -> std::io::Result<Vec<u8>> {
    frame(&encode(msg).map_err(std::io::Error::other)?)
}

/// The body length a frame's 4-byte header announces; `Err(length)` over [`MAX_FRAME`],
/// which is refused without reading the body.
pub fn body_len(header: [u8; 4]) -> Result<usize, usize> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME { Err(len) } else { Ok(len) }
}

/// One request and its response on a connected stream (blocking).
fn exchange<S: std::io::Read + std::io::Write>(
    s: &mut S,
    r: &Request,
) -> Result<Response, ClientError> {
    s.write_all(&encode_frame(r)?)?;
    let mut header = [0u8; 4];
    s.read_exact(&mut header)?;
    let len = body_len(header).map_err(|n| ClientError::Protocol(format!("a {n} byte frame")))?;
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

/// How long a client waits for the daemon's answer.
const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Sends one request to the daemon listening on `path` and waits (at most 10 s) for its
/// response.
#[cfg(unix)]
pub fn request(path: &Path, r: &Request) -> Result<Response, ClientError> {
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
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    exchange(&mut s, r)
}

/// Sends one request to the daemon's named pipe `path` and waits (at most 10 s) for its
/// response. A pipe handle has no read timeout: the exchange runs on a thread of its own
/// and is abandoned after the timeout.
#[cfg(windows)]
pub fn request(path: &Path, r: &Request) -> Result<Response, ClientError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, r) = (path.to_path_buf(), r.clone());
    std::thread::spawn(move || {
        let _ = tx.send(pipe_request(&p, &r));
    });
    rx.recv_timeout(CLIENT_TIMEOUT).unwrap_or_else(|_| {
        Err(ClientError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer in 10 s",
        )))
    })
}

#[cfg(windows)]
fn pipe_request(path: &Path, r: &Request) -> Result<Response, ClientError> {
    /// Every instance of the pipe is busy with another client: wait a little.
    const ERROR_PIPE_BUSY: i32 = 231;
    let started = std::time::Instant::now();
    let mut s = loop {
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
        {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ClientError::NotRunning(path.to_path_buf()));
            }
            Err(e)
                if e.raw_os_error() == Some(ERROR_PIPE_BUSY)
                    && started.elapsed() < CLIENT_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    };
    exchange(&mut s, r)
}

/// No control socket on this OS.
#[cfg(not(any(unix, windows)))]
pub fn request(path: &Path, r: &Request) -> Result<Response, ClientError> {
    let _ = r;
    Err(ClientError::NotRunning(path.to_path_buf()))
}

#[cfg(test)]
#[path = "ipc_tests.rs"]
mod tests;
