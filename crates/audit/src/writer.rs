//! The writer (1.11-1.13, 1.19, 1.20) with group commit.
//!
//! One [`AuditLog`] per process owns the file, the chain state and the lock. All appends go
//! through a channel to a dedicated writer thread. The thread takes every append that is
//! waiting, builds their records in arrival order (so order in the file equals `seq` order),
//! writes them with one `write` and makes them durable with one `fsync`, then answers each
//! caller. A caller's append therefore returns only once its own record is on disk, but
//! concurrent appends share the cost of the fsync.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::error::AuditError;
use crate::files;
use crate::key::AuditKey;
use crate::parse;
use crate::record::AuditEvent;
use crate::record::NO_ID;
use crate::record::OP_AUDIT_ROTATED;
use crate::record::Prepared;
use crate::record::Stamp;
use crate::record::encode_record;
use crate::value::Map;

/// Size rotation threshold of 1.13 (64 MiB).
pub const ROTATE_BYTES: u64 = 64 * 1024 * 1024;
/// Age rotation threshold of 1.13 (30 days, in seconds).
pub const ROTATE_AGE_SECS: f64 = 2_592_000.0;
/// At most this many records share one write and one fsync.
const MAX_BATCH: usize = 4096;

/// Why a file was rotated (the `reason` of `AUDIT_ROTATED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotateReason {
    /// The file reached the size threshold.
    Size,
    /// The first record is older than the age threshold.
    Age,
    /// `audit rotate`.
    Explicit,
    /// The tail could not be continued (1.12).
    Recovery,
}

impl RotateReason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RotateReason::Size => "size",
            RotateReason::Age => "age",
            RotateReason::Explicit => "explicit",
            RotateReason::Recovery => "recovery",
        }
    }
}

/// How to open the writer.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// The current log file (1.2).
    pub path: PathBuf,
    /// `machine_id` of every record; `"-"` if unknown.
    pub machine_id: String,
    /// `shim_version` of every record.
    pub shim_version: String,
    /// The initial default session (`"-"`, or the legacy `--session-id`).
    pub default_session: String,
    /// Size rotation threshold; [`ROTATE_BYTES`] outside tests.
    pub rotate_bytes: u64,
    /// Age rotation threshold in seconds; [`ROTATE_AGE_SECS`] outside tests.
    pub rotate_age_secs: f64,
}

impl WriterConfig {
    /// The configuration of 1.13 for `path`.
    pub fn new(path: impl Into<PathBuf>, machine_id: &str, shim_version: &str) -> Self {
        Self {
            path: path.into(),
            machine_id: if machine_id.is_empty() {
                NO_ID.to_owned()
            } else {
                machine_id.to_owned()
            },
            shim_version: shim_version.to_owned(),
            default_session: NO_ID.to_owned(),
            rotate_bytes: ROTATE_BYTES,
            rotate_age_secs: ROTATE_AGE_SECS,
        }
    }
}

/// Counters of the writer since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Records written (including rotation heads).
    pub records: u64,
    /// Writes made durable with one fsync each (group commits).
    pub fsyncs: u64,
}

#[derive(Debug, Default)]
struct Shared {
    size: AtomicU64,
    records: AtomicU64,
    fsyncs: AtomicU64,
}

/// What [`open_tail`] found at the end of an existing file.
struct Tail {
    next_seq: u64,
    last_hmac: Option<String>,
}

/// The single-threaded state owned by the writer thread.
struct Core {
    cfg: WriterConfig,
    key: AuditKey,
    file: File,
    _lock: File,
    next_seq: u64,
    last_hmac: Option<String>,
    size: u64,
    first_ts: Option<f64>,
    poisoned: bool,
    scratch: Vec<u8>,
    buf: Vec<u8>,
    shared: Arc<Shared>,
    unsynced: u64,
    /// Test seam: the next flush writes only this many bytes, then fails as a full disk would.
    #[cfg(test)]
    short_write: Option<usize>,
}

fn open_err(path: &Path, e: &std::io::Error) -> AuditError {
    AuditError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Takes the exclusive lock of 1.20 without waiting.
pub(crate) fn take_lock(current: &Path) -> Result<File, AuditError> {
    let lock_path = files::lock_path(current);
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let lock = o.open(&lock_path).map_err(|e| open_err(&lock_path, &e))?;
    // A lock released a moment ago can still be held for a while by a child process that
    // another thread is forking: it shares the open file description until its exec closes
    // it. So "locked" is only believed after a short grace period.
    let deadline = std::time::Instant::now() + LOCK_GRACE;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(AuditError::Locked {
                    path: current.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(open_err(&lock_path, &e)),
        }
    }
}

/// How long [`take_lock`] retries a lock that another holder has.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// `(seq, hmac)` of a line that parses as an object with an integer `seq` and a string `hmac`.
pub(crate) fn seq_and_hmac(line: &[u8]) -> Option<(i64, String)> {
    let node = parse::parse(line).ok()?;
    if !matches!(node, parse::Node::Object(_)) {
        return None;
    }
    let seq = node.get("seq")?.as_i64()?;
    let hmac = node.get("hmac")?.as_str()?.to_owned();
    Some((seq, hmac))
}

/// Checks the tail as 1.12 requires. `Ok(None)` means "must rotate aside".
fn open_tail(file: &mut File, key: &AuditKey) -> std::io::Result<Option<Tail>> {
    let (last, ends_lf) = files::read_last_line(file)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Some(Tail {
            next_seq: 1,
            last_hmac: None,
        }));
    }
    let Some(line) = last else { return Ok(None) };
    if !ends_lf {
        return Ok(None);
    }
    let Ok(node) = parse::parse(&line) else {
        return Ok(None);
    };
    let (Some(seq), Some(hmac)) = (
        node.get("seq").and_then(parse::Node::as_i64),
        node.get("hmac").and_then(parse::Node::as_str),
    ) else {
        return Ok(None);
    };
    let mut canon = Vec::with_capacity(line.len());
    parse::write_canonical_node(&mut canon, &node, Some("hmac"));
    if seq < 1 || !key.verify_hex(&canon, hmac) {
        return Ok(None);
    }
    Ok(Some(Tail {
        next_seq: seq as u64 + 1,
        last_hmac: Some(hmac.to_owned()),
    }))
}

fn first_ts(file: &mut File) -> Option<f64> {
    let line = files::read_first_line(file, 16 * 1024 * 1024).ok()?;
    parse::parse(&line).ok()?.get("ts")?.as_f64()
}

impl Core {
    fn open(cfg: WriterConfig, key: AuditKey, shared: Arc<Shared>) -> Result<Self, AuditError> {
        let (dir, _) = files::split(&cfg.path);
        files::create_private_dirs(&dir).map_err(|e| open_err(&dir, &e))?;
        let lock = take_lock(&cfg.path)?;
        let mut file =
            files::open_append_private(&cfg.path).map_err(|e| open_err(&cfg.path, &e))?;
        let tail = open_tail(&mut file, &key).map_err(|e| AuditError::Recovery {
            path: cfg.path.clone(),
            message: e.to_string(),
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size == 0 {
            // Make a freshly created file's directory entry durable.
            files::sync_dir(&dir);
        }
        let first = if size > 0 { first_ts(&mut file) } else { None };
        let mut core = Core {
            file,
            _lock: lock,
            next_seq: 1,
            last_hmac: None,
            size,
            first_ts: first,
            poisoned: false,
            scratch: Vec::with_capacity(4096),
            buf: Vec::with_capacity(64 * 1024),
            shared,
            unsynced: 0,
            #[cfg(test)]
            short_write: None,
            cfg,
            key,
        };
        match tail {
            Some(t) => {
                core.next_seq = t.next_seq;
                core.last_hmac = t.last_hmac;
            }
            None => {
                tracing::warn!(
                    path = %core.cfg.path.display(),
                    "audit log tail cannot be continued; rotating it aside (recovery)"
                );
                let rotated = core.rotate(RotateReason::Recovery)?;
                if rotated.is_none() {
                    return Err(AuditError::Recovery {
                        path: core.cfg.path.clone(),
                        message: "could not rename the file aside".to_owned(),
                    });
                }
                core.flush()?;
            }
        }
        core.shared.size.store(core.size, Ordering::Relaxed);
        Ok(core)
    }

    fn rotation_due(&self, now: f64) -> Option<RotateReason> {
        let size = self.size + self.buf.len() as u64;
        if size >= self.cfg.rotate_bytes {
            return Some(RotateReason::Size);
        }
        if size > 0
            && let Some(first) = self.first_ts
            && now - first > self.cfg.rotate_age_secs
        {
            return Some(RotateReason::Age);
        }
        None
    }

    fn fail(&mut self, e: &std::io::Error) -> AuditError {
        self.poisoned = true;
        self.buf.clear();
        self.unsynced = 0;
        self.undo_partial_write();
        AuditError::Write {
            path: self.cfg.path.clone(),
            message: e.to_string(),
        }
    }

    /// Cuts the file back to the end of its last durable record (`self.size`) and makes that
    /// durable, so that a failed or short write (a full disk) never leaves half a record
    /// behind: the log the daemon leaves when it gives up verifies, and the next start
    /// continues its chain instead of rotating it aside. Several records of one group commit
    /// that fail together are all removed; none of them was answered.
    fn undo_partial_write(&mut self) {
        let len = match self.file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                tracing::error!(error = %e, "cannot stat the audit log after a failed write");
                return;
            }
        };
        if len <= self.size {
            return;
        }
        if let Err(e) = self.file.set_len(self.size) {
            tracing::error!(error = %e, "cannot cut a partly written audit record off the log");
            return;
        }
        if let Err(e) = self.file.sync_data() {
            tracing::warn!(error = %e, "fsync of the audit log after undoing a failed write failed");
        }
    }

    /// Writes the whole buffer (the test seam may cut it short).
    fn write_buf(&mut self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(n) = self.short_write.take() {
            let n = n.min(self.buf.len());
            self.file.write_all(&self.buf[..n])?;
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "injected short write",
            ));
        }
        self.file.write_all(&self.buf)?;
        self.file.flush()
    }

    /// Writes the buffered lines with one write and makes them durable.
    fn flush(&mut self) -> Result<(), AuditError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.write_buf() {
            return Err(self.fail(&e));
        }
        // 1.11 step 4: an fsync error is logged but does not fail the write.
        if let Err(e) = self.file.sync_data() {
            tracing::warn!(error = %e, "fsync of the audit log failed");
        }
        self.size += self.buf.len() as u64;
        self.buf.clear();
        self.shared.size.store(self.size, Ordering::Relaxed);
        self.shared
            .records
            .fetch_add(self.unsynced, Ordering::Relaxed);
        self.shared.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.unsynced = 0;
        Ok(())
    }

    /// Encodes one record into the buffer and advances the chain state.
    fn push(&mut self, ev: &Prepared, session: &str) -> Result<u64, AuditError> {
        let ts = files::now_ts();
        let seq = self.next_seq;
        let stamp = Stamp {
            ts,
            session_id: session,
            machine_id: &self.cfg.machine_id,
            shim_version: &self.cfg.shim_version,
            seq,
            prev_hmac: self.last_hmac.as_deref(),
        };
        let hmac = encode_record(ev, &stamp, &self.key, &mut self.scratch, &mut self.buf)?;
        if seq == 1 {
            self.first_ts = Some(ts);
        }
        self.next_seq += 1;
        self.unsynced += 1;
        self.last_hmac = Some(hmac);
        Ok(seq)
    }

    /// Renames the current file aside, opens a fresh one and buffers its `AUDIT_ROTATED` head.
    /// `Ok(None)`: the rename failed; the writer keeps the current file and chain (1.13 step 2).
    fn rotate(&mut self, reason: RotateReason) -> Result<Option<PathBuf>, AuditError> {
        self.flush()?;
        let path = self.cfg.path.clone();
        let prev = files::read_last_line(&mut self.file)
            .ok()
            .and_then(|(l, _)| l)
            .and_then(|l| seq_and_hmac(&l));
        let target = files::rotation_target(&path);
        if let Err(e) = std::fs::rename(&path, &target) {
            tracing::warn!(error = %e, target = %target.display(), "audit log rotation failed; continuing in the current file");
            return Ok(None);
        }
        let (dir, _) = files::split(&path);
        files::sync_dir(&dir);
        self.file = match files::open_append_private(&path) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(&e)),
        };
        self.next_seq = 1;
        self.last_hmac = None;
        self.size = 0;
        self.first_ts = None;
        let details = Map::new()
            .with("reason", reason.as_str())
            .with("previous_file", files::file_name(&target))
            .with("previous_last_seq", prev.as_ref().map(|p| p.0))
            .with("previous_last_hmac", prev.map(|p| p.1));
        let head = Prepared::new(&AuditEvent::new(OP_AUDIT_ROTATED).details(details))?;
        self.push(&head, NO_ID)?;
        Ok(Some(target))
    }

    /// Appends a batch; one write and one fsync unless a rotation falls inside it.
    fn append_batch(&mut self, batch: &[(Prepared, String)]) -> Vec<Result<u64, AuditError>> {
        if self.poisoned {
            return batch.iter().map(|_| Err(AuditError::Poisoned)).collect();
        }
        let mut out = Vec::with_capacity(batch.len());
        for (ev, session) in batch {
            if let Some(reason) = self.rotation_due(files::now_ts())
                && let Err(e) = self.rotate(reason)
            {
                return batch.iter().map(|_| Err(e.clone())).collect();
            }
            match self.push(ev, session) {
                Ok(seq) => out.push(Ok(seq)),
                Err(e) => out.push(Err(e)),
            }
        }
        match self.flush() {
            Ok(()) => out,
            Err(e) => batch.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}

/// A request to the writer thread.
enum Cmd {
    Append(
        Box<Prepared>,
        String,
        oneshot::Sender<Result<u64, AuditError>>,
    ),
    Rotate(
        RotateReason,
        oneshot::Sender<Result<Option<PathBuf>, AuditError>>,
    ),
    Stop,
}

fn run_thread(mut core: Core, rx: mpsc::Receiver<Cmd>) {
    let mut batch: Vec<(Prepared, String)> = Vec::new();
    let mut replies: Vec<oneshot::Sender<Result<u64, AuditError>>> = Vec::new();
    let mut pending: Option<Cmd> = None;
    loop {
        let first = match pending.take() {
            Some(c) => c,
            None => match rx.recv() {
                Ok(c) => c,
                Err(_) => return,
            },
        };
        match first {
            Cmd::Stop => return,
            Cmd::Rotate(reason, reply) => {
                let r = if core.poisoned {
                    Err(AuditError::Poisoned)
                } else {
                    core.rotate(reason).and_then(|t| core.flush().map(|()| t))
                };
                let _ = reply.send(r);
            }
            Cmd::Append(ev, session, reply) => {
                batch.push((*ev, session));
                replies.push(reply);
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(Cmd::Append(ev, session, reply)) => {
                            batch.push((*ev, session));
                            replies.push(reply);
                        }
                        Ok(other) => {
                            pending = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let results = core.append_batch(&batch);
                for (reply, r) in replies.drain(..).zip(results) {
                    let _ = reply.send(r);
                }
                batch.clear();
            }
        }
    }
}

struct Inner {
    tx: mpsc::Sender<Cmd>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    shared: Arc<Shared>,
    default_session: Mutex<String>,
    path: PathBuf,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.tx.send(Cmd::Stop);
        if let Ok(mut t) = self.thread.lock()
            && let Some(h) = t.take()
        {
            let _ = h.join();
        }
    }
}

/// The process's audit writer. Cheap to clone; all clones share one file, chain and lock.
///
/// Open it while the daemon is constructed ([`AuditLog::open`]); any error there means the
/// daemon must not start (1.19). Every error of an append is fatal for the daemon ([H-7]).
#[derive(Clone)]
pub struct AuditLog {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens the writer fail-closed: creates the directory (0700) and file (0600), takes the
    /// lock of 1.20 without waiting, checks the tail (1.12) and rotates it aside with reason
    /// `recovery` when it cannot be continued. Starts the writer thread.
    pub fn open(cfg: WriterConfig, key: AuditKey) -> Result<Self, AuditError> {
        let shared = Arc::new(Shared::default());
        let path = cfg.path.clone();
        let default_session = cfg.default_session.clone();
        let core = Core::open(cfg, key, shared.clone())?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("audit-writer".to_owned())
            .spawn(move || run_thread(core, rx))
            .map_err(|e| open_err(&path, &e))?;
        Ok(Self {
            inner: Arc::new(Inner {
                tx,
                thread: Mutex::new(Some(thread)),
                shared,
                default_session: Mutex::new(default_session),
                path,
            }),
        })
    }

    /// The current log file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Size in bytes of the current log file as last written (`STATUS.audit_log_bytes`).
    pub fn log_bytes(&self) -> u64 {
        self.inner.shared.size.load(Ordering::Relaxed)
    }

    /// Records written and fsyncs made so far; `records / fsyncs` is the mean group-commit size.
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            records: self.inner.shared.records.load(Ordering::Relaxed),
            fsyncs: self.inner.shared.fsyncs.load(Ordering::Relaxed),
        }
    }

    /// Changes the default session used by events without an explicit `session_id`.
    pub fn set_default_session(&self, session_id: &str) {
        if let Ok(mut s) = self.inner.default_session.lock() {
            *s = session_id.to_owned();
        }
    }

    fn submit(
        &self,
        mut ev: AuditEvent,
    ) -> Result<oneshot::Receiver<Result<u64, AuditError>>, AuditError> {
        // Serialise details and result here, on the caller's thread.
        let prepared = Box::new(Prepared::new(&ev)?);
        let session = match ev.session_id.take() {
            Some(s) => s,
            None => self
                .inner
                .default_session
                .lock()
                .map(|s| s.clone())
                .unwrap_or_else(|_| NO_ID.to_owned()),
        };
        let (tx, rx) = oneshot::channel();
        self.inner
            .tx
            .send(Cmd::Append(prepared, session, tx))
            .map_err(|_| AuditError::Closed)?;
        Ok(rx)
    }

    /// Appends one record and resolves once it is durable on disk, with its `seq`.
    /// Concurrent appends share one write and one fsync.
    pub async fn append(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let rx = self.submit(ev)?;
        rx.await.map_err(|_| AuditError::Closed)?
    }

    /// Blocking form of [`AuditLog::append`], for threads that are not inside an async
    /// runtime (calling it from async code panics; use `append().await` there).
    pub fn append_blocking(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let rx = self.submit(ev)?;
        rx.blocking_recv().map_err(|_| AuditError::Closed)?
    }

    /// Rotates now (normally reason `explicit`), writing the `AUDIT_ROTATED` head. Returns the
    /// rotated file, or `None` when the rename failed and the writer kept the current file.
    pub fn rotate_blocking(&self, reason: RotateReason) -> Result<Option<PathBuf>, AuditError> {
        let (tx, rx) = oneshot::channel();
        self.inner
            .tx
            .send(Cmd::Rotate(reason, tx))
            .map_err(|_| AuditError::Closed)?;
        rx.blocking_recv().map_err(|_| AuditError::Closed)?
    }

    /// A view that writes every record with `session_id` (1.6).
    pub fn session(&self, session_id: &str) -> SessionAudit {
        SessionAudit {
            log: self.clone(),
            session_id: session_id.to_owned(),
        }
    }
}

/// A session-bound view of the shared writer for one per-chat runtime (1.6): every record it
/// writes carries its session id, and asking it to write another session's record is an error.
#[derive(Debug, Clone)]
pub struct SessionAudit {
    log: AuditLog,
    session_id: String,
}

impl SessionAudit {
    /// The bound session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn bind(&self, mut ev: AuditEvent) -> Result<AuditEvent, AuditError> {
        match &ev.session_id {
            Some(s) if *s != self.session_id => Err(AuditError::SessionMismatch {
                bound: self.session_id.clone(),
                requested: s.clone(),
            }),
            _ => {
                ev.session_id = Some(self.session_id.clone());
                Ok(ev)
            }
        }
    }

    /// Appends with this view's session id; see [`AuditLog::append`].
    pub async fn append(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let ev = self.bind(ev)?;
        self.log.append(ev).await
    }

    /// Blocking form; see [`AuditLog::append_blocking`].
    pub fn append_blocking(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let ev = self.bind(ev)?;
        self.log.append_blocking(ev)
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
