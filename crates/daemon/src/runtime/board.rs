//! The live picture of the daemon that `autogpt-shim status` and the web console show: the
//! runtimes report their connections, operations and errors to one [`Board`];
//! `status::snapshot` turns it, with the machine's limits, approvals and audit log, into an
//! [`ipc::StatusReport`].

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Instant;
use std::time::SystemTime;

use shim_audit::AuditKey;
use shim_auth::net::Trouble;
use tokio_util::sync::CancellationToken;

use crate::ipc;
use crate::ipc::ConnectionStatus;
use crate::ipc::ErrorStatus;
use crate::ipc::OperationStatus;
use crate::ipc::SandboxStatus;

/// The key of the control connection among [`Board`]'s connections.
const CONTROL: &str = "";

struct Conn {
    folder: Option<String>,
    state: &'static str,
    since: Instant,
    granted: Vec<String>,
    connects: u64,
    last_disconnect: Option<String>,
    /// What kind of trouble the last failed attempt had, until a handshake succeeds.
    problem: Option<Trouble>,
    /// When the next attempt starts, while waiting for it.
    retry_at: Option<Instant>,
    /// Runtimes currently reporting under this key (a chat's child may be replaced).
    runtimes: u32,
}

struct Op {
    session_id: Option<String>,
    request_id: String,
    kind: String,
    summary: String,
    started: Instant,
    cancel: Option<CancellationToken>,
}

#[derive(Default)]
struct Inner {
    conns: BTreeMap<String, Conn>,
    ops: BTreeMap<u64, Op>,
    errors: VecDeque<ErrorStatus>,
}

/// The audit chain's last verification, redone only when the file grew.
#[derive(Default)]
pub(crate) struct AuditCache {
    checked: Option<Instant>,
    pub(crate) bytes: u64,
    pub(crate) last_seq: Option<u64>,
    pub(crate) chain: String,
    pub(crate) problem: Option<String>,
}

/// What the runtimes report while they run.
pub(crate) struct Board {
    inner: Mutex<Inner>,
    next_op: AtomicU64,
    pub(crate) started: Instant,
    pub(crate) sandbox: SandboxStatus,
    audit: tokio::sync::Mutex<Option<AuditCache>>,
    /// Who asked for the last kill of every command (`cli`, `console`).
    kill_by: Mutex<String>,
    /// The latest screenshot sent to the platform: its number, MIME type and base64 data.
    screenshot: Mutex<Option<(u64, String, String)>>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board").finish_non_exhaustive()
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A registered connection; dropping it marks the connection stopped (and forgets a chat's).
pub(crate) struct ConnGuard {
    board: Arc<Board>,
    key: String,
}

impl ConnGuard {
    /// The connection is being made.
    pub(crate) fn connecting(&self) {
        self.board.set_state(&self.key, "connecting", None);
        self.board.update(&self.key, |c| c.retry_at = None);
    }

    /// The handshake completed with `granted` capabilities.
    pub(crate) fn connected(&self, mut granted: Vec<String>) {
        granted.sort();
        self.board.update(&self.key, |c| {
            c.state = "connected";
            c.since = Instant::now();
            c.granted = granted;
            c.connects += 1;
            c.problem = None;
            c.retry_at = None;
        });
    }

    /// The connection ended for `why` (a failed attempt with `problem`, if the user can act
    /// on it); another attempt follows.
    pub(crate) fn reconnecting(&self, why: &str, problem: Option<Trouble>) {
        self.board
            .set_state(&self.key, "reconnecting", Some(why.to_owned()));
        self.board.update(&self.key, |c| c.problem = problem);
    }

    /// The next attempt starts after `delay`.
    pub(crate) fn retry_in(&self, delay: std::time::Duration) {
        self.board
            .update(&self.key, |c| c.retry_at = Some(Instant::now() + delay));
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut inner = self.board.lock();
        let remove = match inner.conns.get_mut(&self.key) {
            Some(c) => {
                c.runtimes = c.runtimes.saturating_sub(1);
                if c.runtimes == 0 {
                    c.state = "stopped";
                    c.since = Instant::now();
                    c.granted.clear();
                }
                c.runtimes == 0 && self.key != CONTROL && c.folder.is_none()
            }
            None => false,
        };
        if remove {
            inner.conns.remove(&self.key);
        }
    }
}

/// A registered operation; dropping it removes the operation.
pub(crate) struct OpGuard {
    board: Arc<Board>,
    id: u64,
    cancel: CancellationToken,
}

impl OpGuard {
    /// Cancelled when the local user ends this operation alone.
    pub(crate) fn cancelled(&self) -> &CancellationToken {
        &self.cancel
    }
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        self.board.lock().ops.remove(&self.id);
    }
}

/// Why [`Board::kill_op`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KillOpError {
    /// No operation has this id (it may have finished).
    Unknown,
    /// The operation cannot be ended alone (only commands can).
    NotKillable,
}

impl Board {
    /// An empty board for a daemon whose commands run under `sandbox`.
    pub(crate) fn new(sandbox: SandboxStatus) -> Arc<Board> {
        Arc::new(Board {
            inner: Mutex::new(Inner::default()),
            next_op: AtomicU64::new(1),
            started: Instant::now(),
            sandbox,
            audit: tokio::sync::Mutex::new(None),
            kill_by: Mutex::new("cli".to_owned()),
            screenshot: Mutex::new(None),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, key: &str, f: impl FnOnce(&mut Conn)) {
        if let Some(c) = self.lock().conns.get_mut(key) {
            f(c);
        }
    }

    fn set_state(&self, key: &str, state: &'static str, why: Option<String>) {
        self.update(key, |c| {
            if c.state != state {
                c.state = state;
                c.since = Instant::now();
            }
            if why.is_some() {
                c.last_disconnect = why;
            }
        });
    }

    /// Registers a runtime's connection: the control connection (`session_id` `None`) or a
    /// chat's in `folder`.
    pub(crate) fn connection(
        self: &Arc<Self>,
        session_id: Option<&str>,
        folder: Option<&str>,
    ) -> ConnGuard {
        let key = session_id.unwrap_or(CONTROL).to_owned();
        let mut inner = self.lock();
        let c = inner.conns.entry(key.clone()).or_insert_with(|| Conn {
            folder: None,
            state: "connecting",
            since: Instant::now(),
            granted: Vec::new(),
            connects: 0,
            last_disconnect: None,
            problem: None,
            retry_at: None,
            runtimes: 0,
        });
        c.runtimes += 1;
        if folder.is_some() {
            c.folder = folder.map(str::to_owned);
        }
        c.state = "connecting";
        c.since = Instant::now();
        ConnGuard {
            board: self.clone(),
            key,
        }
    }

    /// A chat was attached to `folder` (machine control mode); it shows as `attached` until
    /// it is activated.
    pub(crate) fn attached(&self, session_id: &str, folder: &str) {
        let mut inner = self.lock();
        let c = inner
            .conns
            .entry(session_id.to_owned())
            .or_insert_with(|| Conn {
                folder: None,
                state: "attached",
                since: Instant::now(),
                granted: Vec::new(),
                connects: 0,
                last_disconnect: None,
                problem: None,
                retry_at: None,
                runtimes: 0,
            });
        c.folder = Some(folder.to_owned());
    }

    /// A chat was detached (or its binding forgotten): it no longer shows.
    pub(crate) fn detached(&self, session_id: &str) {
        let mut inner = self.lock();
        if let Some(c) = inner.conns.get_mut(session_id) {
            c.folder = None;
            if c.runtimes == 0 {
                inner.conns.remove(session_id);
            }
        }
    }

    /// Registers an operation; `killable` ones (commands) can be ended alone.
    pub(crate) fn operation(
        self: &Arc<Self>,
        session_id: Option<&str>,
        request_id: &str,
        kind: &str,
        summary: String,
        killable: bool,
    ) -> OpGuard {
        let id = self.next_op.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        self.lock().ops.insert(
            id,
            Op {
                session_id: session_id.map(str::to_owned),
                request_id: request_id.to_owned(),
                kind: kind.to_owned(),
                summary,
                started: Instant::now(),
                cancel: killable.then(|| cancel.clone()),
            },
        );
        OpGuard {
            board: self.clone(),
            id,
            cancel,
        }
    }

    /// Whether operation `id` can be ended alone; `None` if there is none.
    pub(crate) fn killable(&self, id: u64) -> Option<bool> {
        self.lock().ops.get(&id).map(|o| o.cancel.is_some())
    }

    /// Ends operation `id` alone.
    pub(crate) fn kill_op(&self, id: u64) -> Result<(), KillOpError> {
        let inner = self.lock();
        match inner.ops.get(&id) {
            None => Err(KillOpError::Unknown),
            Some(Op { cancel: None, .. }) => Err(KillOpError::NotKillable),
            Some(Op {
                cancel: Some(c), ..
            }) => {
                c.cancel();
                Ok(())
            }
        }
    }

    /// Remembers an error (the newest [`ipc::LAST_ERRORS`] are kept).
    pub(crate) fn error(&self, session_id: Option<&str>, source: &str, code: &str, message: &str) {
        let mut inner = self.lock();
        inner.errors.push_back(ErrorStatus {
            at_unix: unix_now(),
            session_id: session_id.map(str::to_owned),
            source: source.to_owned(),
            code: code.to_owned(),
            message: message.chars().take(500).collect(),
        });
        while inner.errors.len() > ipc::LAST_ERRORS {
            inner.errors.pop_front();
        }
    }

    /// Who asked for the last kill of every command.
    pub(crate) fn kill_by(&self) -> String {
        self.kill_by
            .lock()
            .map(|k| k.clone())
            .unwrap_or_else(|_| "cli".to_owned())
    }

    /// Records who asks for a kill of every command.
    pub(crate) fn set_kill_by(&self, by: &str) {
        if let Ok(mut k) = self.kill_by.lock() {
            by.clone_into(&mut k);
        }
    }

    pub(crate) fn connections(&self) -> Vec<ConnectionStatus> {
        let inner = self.lock();
        inner
            .conns
            .iter()
            .map(|(k, c)| ConnectionStatus {
                kind: if k == CONTROL { "control" } else { "chat" }.to_owned(),
                session_id: (k != CONTROL).then(|| k.clone()),
                folder: c.folder.clone(),
                state: c.state.to_owned(),
                state_seconds: c.since.elapsed().as_secs(),
                granted_capabilities: c.granted.clone(),
                connects: c.connects,
                last_disconnect: c.last_disconnect.clone(),
                problem: c.problem.map(|t| t.as_str().to_owned()),
                retry_in_seconds: c.retry_at.map(|at| {
                    at.saturating_duration_since(Instant::now())
                        .as_secs_f64()
                        .ceil() as u64
                }),
            })
            .collect()
    }

    pub(crate) fn operations(&self) -> Vec<OperationStatus> {
        let inner = self.lock();
        inner
            .ops
            .iter()
            .map(|(id, o)| OperationStatus {
                id: *id,
                session_id: o.session_id.clone(),
                request_id: o.request_id.clone(),
                kind: o.kind.clone(),
                summary: o.summary.clone(),
                age_ms: millis(o.started.elapsed()),
                killable: o.cancel.is_some(),
            })
            .collect()
    }

    /// The audit log's last seq and chain state; the file is verified again only when it
    /// changed since the last look, and that look is older than `max_age`.
    pub(crate) async fn audit_status(
        &self,
        path: &std::path::Path,
        key: &AuditKey,
        max_age: std::time::Duration,
    ) -> AuditCache {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut cache = self.audit.lock().await;
        if let Some(c) = cache.as_ref()
            && (c.bytes == bytes || c.checked.is_some_and(|t| t.elapsed() < max_age))
        {
            return AuditCache {
                checked: c.checked,
                bytes: c.bytes,
                last_seq: c.last_seq,
                chain: c.chain.clone(),
                problem: c.problem.clone(),
            };
        }
        let (p, k) = (path.to_path_buf(), key.clone());
        let verified = tokio::task::spawn_blocking(move || {
            // A record may be half-written at the moment we read: a problem on the very
            // last line is looked at once more before it counts.
            let first = shim_audit::verify_file(&p, &k);
            match &first {
                Ok(r) if !r.is_clean() => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    shim_audit::verify_file(&p, &k)
                }
                _ => first,
            }
        })
        .await;
        let fresh = match verified {
            Ok(Ok(r)) => AuditCache {
                checked: Some(Instant::now()),
                bytes: r.bytes,
                last_seq: r.last_seq.and_then(|s| u64::try_from(s).ok()),
                chain: if r.is_clean() { "verified" } else { "broken" }.to_owned(),
                problem: r
                    .first_violation()
                    .map(|v| format!("line {}: {}", v.line, v.message)),
            },
            Ok(Err(e)) => AuditCache {
                checked: Some(Instant::now()),
                bytes,
                last_seq: None,
                chain: "unreadable".to_owned(),
                problem: Some(e.to_string()),
            },
            Err(e) => AuditCache {
                checked: Some(Instant::now()),
                bytes,
                last_seq: None,
                chain: "unreadable".to_owned(),
                problem: Some(e.to_string()),
            },
        };
        *cache = Some(AuditCache {
            checked: fresh.checked,
            bytes: fresh.bytes,
            last_seq: fresh.last_seq,
            chain: fresh.chain.clone(),
            problem: fresh.problem.clone(),
        });
        fresh
    }

    /// Keeps the latest screenshot (base64 `data` of type `mime`) for the console.
    pub(crate) fn set_screenshot(&self, mime: &str, data: &str) {
        if let Ok(mut s) = self.screenshot.lock() {
            let n = s.as_ref().map_or(1, |(n, _, _)| n + 1);
            *s = Some((n, mime.to_owned(), data.to_owned()));
        }
    }

    /// The latest screenshot's number.
    pub(crate) fn screenshot_version(&self) -> Option<u64> {
        self.screenshot
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|(n, _, _)| *n))
    }

    /// The latest screenshot: its MIME type and bytes.
    pub(crate) fn screenshot(&self) -> Option<(String, Vec<u8>)> {
        use base64::Engine as _;
        let s = self.screenshot.lock().ok()?;
        let (_, mime, data) = s.as_ref()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?;
        Some((mime.clone(), bytes))
    }

    /// The most recent errors, oldest first.
    pub(crate) fn errors(&self) -> Vec<ErrorStatus> {
        self.lock().errors.iter().cloned().collect()
    }
}

#[cfg(test)]
#[path = "board_tests.rs"]
mod tests;
