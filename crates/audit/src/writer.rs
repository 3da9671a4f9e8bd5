//! The writer (1.11-1.13, 1.19, 1.20) with leader-based group commit.
//!
//! One [`AuditLog`] per process owns the file, the chain state and the lock. An append runs on
//! the caller's thread: under the writer's mutex it builds the record from the chain state and
//! writes its line with one `write` (so order in the file equals `seq` order). It then waits
//! until a sync that started after its write has finished; if none is running, the caller is
//! the leader and runs `fdatasync` itself, for every record written so far, with the mutex
//! released. Callers that write meanwhile wait on a condition variable and share the next
//! sync. An append therefore returns only once its own record is on disk; concurrent appends
//! share an fsync; and a lone append never waits for a batch to fill (there is no timer).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

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
    /// Records made durable (including rotation heads).
    pub records: u64,
    /// `fdatasync` calls made; each makes every record written before it durable (a group
    /// commit).
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

/// The file and its chain state; only touched under the writer's mutex.
struct Core {
    cfg: WriterConfig,
    key: AuditKey,
    file: File,
    /// A second handle on `file` for the sync leader, which syncs without the mutex.
    sync_handle: Arc<File>,
    _lock: File,
    next_seq: u64,
    last_hmac: Option<String>,
    /// Bytes of whole records in the current file.
    size: u64,
    /// Bytes of the current file that are durable or covered by the sync in flight: a failed
    /// write cuts the file back to this length.
    covered_size: u64,
    first_ts: Option<f64>,
    scratch: Vec<u8>,
    line: Vec<u8>,
    /// Test seam: the next write writes only this many bytes, then fails as a full disk would.
    #[cfg(test)]
    short_write: Option<usize>,
}

/// Why a record did not reach the file.
enum Fault {
    /// The record cannot be encoded: nothing was written and the writer stays usable.
    Record(AuditError),
    /// The write failed or was short: part of the line may be in the file.
    Io(std::io::Error),
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
    fn open(cfg: WriterConfig, key: AuditKey) -> Result<Self, AuditError> {
        let (dir, _) = files::split(&cfg.path);
        files::create_private_dirs(&dir).map_err(|e| open_err(&dir, &e))?;
        let lock = take_lock(&cfg.path)?;
        let mut file =
            files::open_append_private(&cfg.path).map_err(|e| open_err(&cfg.path, &e))?;
        let sync_handle = Arc::new(file.try_clone().map_err(|e| open_err(&cfg.path, &e))?);
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
            sync_handle,
            _lock: lock,
            next_seq: 1,
            last_hmac: None,
            size,
            covered_size: size,
            first_ts: first,
            scratch: Vec::with_capacity(4096),
            line: Vec::with_capacity(4096),
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
                match core.rotate_file(RotateReason::Recovery) {
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        return Err(AuditError::Recovery {
                            path: core.cfg.path.clone(),
                            message: "could not rename the file aside".to_owned(),
                        });
                    }
                    Err(Fault::Record(e)) => return Err(e),
                    Err(Fault::Io(e)) => {
                        core.cut_back();
                        return Err(core.write_error(&e));
                    }
                }
                core.sync();
                core.covered_size = core.size;
            }
        }
        Ok(core)
    }

    fn write_error(&self, e: &std::io::Error) -> AuditError {
        AuditError::Write {
            path: self.cfg.path.clone(),
            message: e.to_string(),
        }
    }

    fn rotation_due(&self, now: f64) -> Option<RotateReason> {
        if self.size >= self.cfg.rotate_bytes {
            return Some(RotateReason::Size);
        }
        if self.size > 0
            && let Some(first) = self.first_ts
            && now - first > self.cfg.rotate_age_secs
        {
            return Some(RotateReason::Age);
        }
        None
    }

    /// 1.11 step 4's fsync (as `fdatasync`). An error is logged but does not fail the write.
    fn sync(&self) {
        if let Err(e) = self.sync_handle.sync_data() {
            tracing::warn!(error = %e, "fsync of the audit log failed");
        }
    }

    /// Cuts the file back to `covered_size` (the end of its last record that is durable or
    /// being made durable) and makes that durable, so that a failed or short write (a full
    /// disk) never leaves half a record behind: the log the daemon leaves when it gives up
    /// verifies, and the next start continues its chain instead of rotating it aside. Every
    /// record written after that point goes, whole or not; none of them was answered.
    fn cut_back(&mut self) {
        let keep = self.covered_size;
        self.size = keep;
        let len = match self.file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                tracing::error!(error = %e, "cannot stat the audit log after a failed write");
                return;
            }
        };
        if len <= keep {
            return;
        }
        if let Err(e) = self.file.set_len(keep) {
            tracing::error!(error = %e, "cannot cut a partly written audit record off the log");
            return;
        }
        if let Err(e) = self.file.sync_data() {
            tracing::warn!(error = %e, "fsync of the audit log after undoing a failed write failed");
        }
    }

    /// Writes `self.line` with a single write (the test seam may cut it short).
    fn write_line(&mut self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(n) = self.short_write.take() {
            let n = n.min(self.line.len());
            self.file.write_all(&self.line[..n])?;
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "injected short write",
            ));
        }
        self.file.write_all(&self.line)
    }

    /// 1.11 steps 2-5 for one record, except the fsync: builds it from the chain state,
    /// writes the whole line, and only then advances the state.
    fn append_record(&mut self, ev: &Prepared, session: &str) -> Result<u64, Fault> {
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
        self.line.clear();
        let hmac = encode_record(ev, &stamp, &self.key, &mut self.scratch, &mut self.line)
            .map_err(|e| Fault::Record(e.into()))?;
        self.write_line().map_err(Fault::Io)?;
        if seq == 1 {
            self.first_ts = Some(ts);
        }
        self.next_seq += 1;
        self.last_hmac = Some(hmac);
        self.size += self.line.len() as u64;
        Ok(seq)
    }

    /// Renames the current file aside, opens a fresh one and writes its `AUDIT_ROTATED` head
    /// (not yet synced). Every record of the current file must be durable already.
    /// `Ok(None)`: the rename failed; the writer keeps the current file and chain (1.13 step 2).
    fn rotate_file(&mut self, reason: RotateReason) -> Result<Option<PathBuf>, Fault> {
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
        let file = files::open_append_private(&path).map_err(Fault::Io)?;
        let sync_handle = Arc::new(file.try_clone().map_err(Fault::Io)?);
        self.file = file;
        self.sync_handle = sync_handle;
        self.next_seq = 1;
        self.last_hmac = None;
        self.size = 0;
        self.covered_size = 0;
        self.first_ts = None;
        let details = Map::new()
            .with("reason", reason.as_str())
            .with("previous_file", files::file_name(&target))
            .with("previous_last_seq", prev.as_ref().map(|p| p.0))
            .with("previous_last_hmac", prev.map(|p| p.1));
        let head = Prepared::new(&AuditEvent::new(OP_AUDIT_ROTATED).details(details))
            .map_err(|e| Fault::Record(e.into()))?;
        self.append_record(&head, NO_ID)?;
        Ok(Some(target))
    }
}

/// The writer's state under its mutex. Every record written gets a ticket, its position in
/// the file's write order since the writer opened (rotation heads included).
struct State {
    core: Core,
    /// Tickets handed out: records written whole (not necessarily durable).
    appended: u64,
    /// Every ticket up to here is durable.
    durable: u64,
    /// Every ticket up to here is durable or covered by the sync in flight. When a write
    /// fails, every later ticket fails with it.
    covered: u64,
    /// A sync leader is running `fdatasync` (without holding the mutex).
    syncing: bool,
    /// The error of the write that failed; the writer is then terminal.
    failed: Option<AuditError>,
    /// Test seam: runs in the sync leader just before its `fdatasync`.
    #[cfg(test)]
    before_sync: Option<Arc<dyn Fn() + Send + Sync>>,
}

struct Inner {
    state: Mutex<State>,
    /// Signalled when a sync ends and when a write fails.
    synced: Condvar,
    shared: Shared,
    default_session: Mutex<String>,
    path: PathBuf,
}

impl Inner {
    fn lock(&self) -> Result<MutexGuard<'_, State>, AuditError> {
        // Poisoned only by a panic while it was held: fail closed.
        self.state.lock().map_err(|_| AuditError::Poisoned)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State>) -> Result<MutexGuard<'a, State>, AuditError> {
        self.synced.wait(st).map_err(|_| AuditError::Poisoned)
    }

    /// Appends one record on the calling thread and returns once it is durable.
    ///
    /// Group commit without a timer: the record is written under the mutex, then the caller
    /// waits for a sync that started after its write. If no sync is running it becomes the
    /// leader: it `fdatasync`s for every record written so far, with the mutex released, so
    /// later callers write meanwhile and then share the next sync. A lone caller never waits
    /// for others.
    fn append(&self, ev: &Prepared, session: &str) -> Result<u64, AuditError> {
        let mut st = self.lock()?;
        loop {
            if st.failed.is_some() {
                return Err(AuditError::Poisoned);
            }
            let Some(reason) = st.core.rotation_due(files::now_ts()) else {
                break;
            };
            // Rotation needs every record of the current file durable: wait out the sync
            // in flight, then sync the rest here (rare: once per 64 MiB or 30 days).
            if st.syncing {
                st = self.wait(st)?;
                continue;
            }
            self.sync_inline(&mut st);
            self.rotate(&mut st, reason)?;
            break;
        }
        let seq = match st.core.append_record(ev, session) {
            Ok(seq) => seq,
            Err(Fault::Record(e)) => return Err(e),
            Err(Fault::Io(e)) => return Err(self.fail(&mut st, &e)),
        };
        st.appended += 1;
        let ticket = st.appended;
        self.shared.size.store(st.core.size, Ordering::Relaxed);
        self.wait_durable(st, ticket)?;
        Ok(seq)
    }

    /// Waits until record `ticket` is durable, leading a sync when none is running.
    fn wait_durable<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        ticket: u64,
    ) -> Result<(), AuditError> {
        loop {
            if ticket <= st.durable {
                return Ok(());
            }
            if ticket > st.covered
                && let Some(e) = &st.failed
            {
                return Err(e.clone());
            }
            if st.syncing {
                st = self.wait(st)?;
                continue;
            }
            // Lead: sync everything written so far. (After a failure no sync starts: every
            // ticket above `covered` has failed, and those below are synced or in flight.)
            st.syncing = true;
            let target = st.appended;
            st.covered = target;
            st.core.covered_size = st.core.size;
            let file = st.core.sync_handle.clone();
            #[cfg(test)]
            let hook = st.before_sync.clone();
            drop(st);
            #[cfg(test)]
            if let Some(hook) = hook {
                hook();
            }
            if let Err(e) = file.sync_data() {
                // 1.11 step 4: logged, does not fail the write.
                tracing::warn!(error = %e, "fsync of the audit log failed");
            }
            st = self.lock()?;
            st.syncing = false;
            self.made_durable(&mut st, target);
            self.synced.notify_all();
        }
    }

    fn made_durable(&self, st: &mut State, target: u64) {
        if target > st.durable {
            self.shared
                .records
                .fetch_add(target - st.durable, Ordering::Relaxed);
            st.durable = target;
        }
        self.shared.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Syncs every record written so far while holding the mutex (no sync may be in flight).
    fn sync_inline(&self, st: &mut State) {
        if st.durable == st.appended {
            return;
        }
        st.core.sync();
        let target = st.appended;
        st.covered = target;
        st.core.covered_size = st.core.size;
        self.made_durable(st, target);
        self.synced.notify_all();
    }

    /// Rotates (every record so far durable) and writes the new file's head.
    fn rotate(&self, st: &mut State, reason: RotateReason) -> Result<Option<PathBuf>, AuditError> {
        let r = st.core.rotate_file(reason);
        self.shared.size.store(st.core.size, Ordering::Relaxed);
        match r {
            Ok(Some(target)) => {
                st.appended += 1;
                Ok(Some(target))
            }
            Ok(None) => Ok(None),
            Err(Fault::Record(e)) => Err(e),
            Err(Fault::Io(e)) => Err(self.fail(st, &e)),
        }
    }

    /// A write failed: undo it (and every record after the last covered one), wake every
    /// waiter, and stay terminal.
    fn fail(&self, st: &mut State, e: &std::io::Error) -> AuditError {
        let err = st.core.write_error(e);
        st.core.cut_back();
        st.failed = Some(err.clone());
        self.shared.size.store(st.core.size, Ordering::Relaxed);
        self.synced.notify_all();
        err
    }

    fn rotate_now(&self, reason: RotateReason) -> Result<Option<PathBuf>, AuditError> {
        let mut st = self.lock()?;
        loop {
            if st.failed.is_some() {
                return Err(AuditError::Poisoned);
            }
            if !st.syncing {
                break;
            }
            st = self.wait(st)?;
        }
        self.sync_inline(&mut st);
        let target = self.rotate(&mut st, reason)?;
        self.sync_inline(&mut st);
        Ok(target)
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
    /// `recovery` when it cannot be continued.
    pub fn open(cfg: WriterConfig, key: AuditKey) -> Result<Self, AuditError> {
        let path = cfg.path.clone();
        let default_session = cfg.default_session.clone();
        let core = Core::open(cfg, key)?;
        let shared = Shared::default();
        shared.size.store(core.size, Ordering::Relaxed);
        Ok(Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    core,
                    appended: 0,
                    durable: 0,
                    covered: 0,
                    syncing: false,
                    failed: None,
                    #[cfg(test)]
                    before_sync: None,
                }),
                synced: Condvar::new(),
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

    /// Records made durable and fsyncs made so far; `records / fsyncs` is the mean
    /// group-commit size.
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

    /// Serialises `details` and `result` (on the caller's thread, outside the mutex) and
    /// picks the session.
    fn prepare(&self, mut ev: AuditEvent) -> Result<(Prepared, String), AuditError> {
        let prepared = Prepared::new(&ev)?;
        let session = match ev.session_id.take() {
            Some(s) => s,
            None => self
                .inner
                .default_session
                .lock()
                .map(|s| s.clone())
                .unwrap_or_else(|_| NO_ID.to_owned()),
        };
        Ok((prepared, session))
    }

    /// Appends one record and resolves once it is durable on disk, with its `seq`.
    /// Concurrent appends share one fsync.
    ///
    /// The write and the wait for the fsync block, so inside a Tokio runtime they run on its
    /// blocking pool (one hand-off); code that is on a blocking thread already should call
    /// [`AuditLog::append_blocking`] instead and save that hand-off. Dropping the future does
    /// not withdraw the record.
    pub async fn append(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let (prepared, session) = self.prepare(ev)?;
        let inner = self.inner.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => rt
                .spawn_blocking(move || inner.append(&prepared, &session))
                .await
                .map_err(|_| AuditError::Closed)?,
            Err(_) => inner.append(&prepared, &session),
        }
    }

    /// Blocking form of [`AuditLog::append`]: writes the record on the calling thread and
    /// returns once it is durable (the caller may lead the shared fsync). For threads outside
    /// an async runtime or on its blocking pool; never call it on an async worker thread.
    pub fn append_blocking(&self, ev: AuditEvent) -> Result<u64, AuditError> {
        let (prepared, session) = self.prepare(ev)?;
        self.inner.append(&prepared, &session)
    }

    /// Rotates now (normally reason `explicit`), writing the `AUDIT_ROTATED` head. Returns the
    /// rotated file, or `None` when the rename failed and the writer kept the current file.
    pub fn rotate_blocking(&self, reason: RotateReason) -> Result<Option<PathBuf>, AuditError> {
        self.inner.rotate_now(reason)
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
