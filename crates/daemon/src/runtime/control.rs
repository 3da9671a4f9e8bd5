//! The machine control plane (PROTOCOL.md 9): folder browsing with opaque references,
//! session bindings with root grants, and child runtimes.

use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Message;
use shim_protocol::error::RevisionMismatchDetails;
use shim_protocol::limits::MAX_CHILD_RUNTIMES;
use shim_protocol::limits::MAX_SESSION_BINDINGS;
use shim_protocol::messages::control::ActivateSession;
use shim_protocol::messages::control::AttachSession;
use shim_protocol::messages::control::DetachSession;
use shim_protocol::messages::control::DirectoryListRequest;
use shim_protocol::messages::control::DirectoryListResponse;
use shim_protocol::messages::control::DirectoryReference;
use shim_protocol::messages::control::RestoreSession;
use shim_protocol::messages::control::SessionActivated;
use shim_protocol::messages::control::SessionAttached;
use shim_protocol::messages::control::SessionRestored;
use shim_protocol::messages::handshake::Ack;
use shim_protocol::values::BrowseToken;
use shim_protocol::values::Fingerprint;
use shim_protocol::values::RootGrant;
use tokio_util::sync::CancellationToken;

use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use crate::runtime::conn::ControlPlane;
use crate::runtime::conn::Outcome;
use crate::runtime::conn::Runtime;
use crate::runtime::grant;
use crate::runtime::handshake::Role;
use crate::runtime::machine::Machine;
use crate::runtime::session_locks::SessionLocks;

/// Browse sessions per control connection.
const MAX_BROWSES: usize = 8;
/// References per browse session.
const MAX_REFS: usize = 1200;
/// Cursors per browse session.
const MAX_CURSORS: usize = 32;
/// Browse session lifetime, seconds.
const BROWSE_TTL: f64 = 300.0;
/// Entries per page.
const PAGE: usize = 200;
/// Entries scanned per directory.
const SCAN_LIMIT: usize = 1000;

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// 24 random bytes, base64url without padding (32 characters).
fn token() -> String {
    let mut b = [0u8; 24];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    URL_SAFE_NO_PAD.encode(b)
}

fn btoken(s: String) -> Option<BrowseToken> {
    BrowseToken::new(s).ok()
}

#[derive(Debug, Clone)]
struct RefEntry {
    path: PathBuf,
    parent: Option<String>,
}

#[derive(Debug, Clone)]
struct Cursor {
    dir_ref: String,
    offset: usize,
    used: u64,
}

#[derive(Debug)]
struct Browse {
    expires_at: f64,
    used: u64,
    refs: HashMap<String, RefEntry>,
    cursors: HashMap<String, Cursor>,
}

/// A session binding (9.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The session.
    pub session_id: String,
    /// Canonical root.
    pub allowed_root: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// Revision.
    pub revision: u64,
    /// The grant string.
    pub root_grant: String,
}

/// A child whose root is open and whose runtime is built, not yet running.
struct ReadyChild {
    binding: Binding,
    runtime: Runtime,
    stop: CancellationToken,
    activity: Arc<Mutex<Instant>>,
}

struct Child {
    binding: Binding,
    stop: CancellationToken,
    handle: tokio::task::JoinHandle<Outcome>,
    activity: Arc<Mutex<Instant>>,
    generation: u64,
}

#[derive(Default)]
struct State {
    browses: HashMap<String, Browse>,
    bindings: HashMap<String, (Binding, u64)>,
    clock: u64,
}

impl State {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn evict_expired(&mut self, t: f64) {
        self.browses.retain(|_, b| t < b.expires_at);
    }
}

/// The control runtime's state and handlers.
pub(crate) struct Control {
    machine: Arc<Machine>,
    audit: Auditor,
    state: Mutex<State>,
    children: Mutex<HashMap<String, Child>>,
    session_locks: SessionLocks,
    generation: Mutex<u64>,
    /// Held (read) by every detached session operation ([`Control::detached`]); taken
    /// (write) by [`Control::stop_all`] so that it waits for them.
    inflight: Arc<tokio::sync::RwLock<()>>,
    /// This control plane, for the tasks of [`Control::detached`].
    me: std::sync::Weak<Control>,
}

fn err(code: ErrorCode, message: impl Into<String>) -> Message {
    Message::Error(ErrorPayload::new(code, message))
}

fn perr(code: ErrorCode, message: impl Into<String>) -> ErrorPayload {
    ErrorPayload::new(code, message)
}

fn invalid_ref() -> ErrorPayload {
    ErrorPayload::new(
        ErrorCode::DirectoryReferenceInvalid,
        "The directory reference is invalid or expired.",
    )
}

fn unavailable() -> ErrorPayload {
    ErrorPayload::new(
        ErrorCode::DirectoryUnavailable,
        "The directory is no longer available.",
    )
}

/// Names the browser never lists: empty, control/format/private-use characters, `<`/`>`.
fn acceptable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(|c| {
            let u = c as u32;
            c.is_control()
                || c == '<'
                || c == '>'
                || matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E
                    | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF
                    | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF)
        })
}

/// The system folders the Windows browser never lists (9.2 navigation step 4), compared
/// case-insensitively.
fn windows_system_name(name: &str) -> bool {
    const HIDDEN: [&str; 8] = [
        "$recycle.bin",
        "documents and settings",
        "program files",
        "program files (x86)",
        "programdata",
        "recovery",
        "system volume information",
        "windows",
    ];
    let lower = name.to_lowercase();
    HIDDEN.contains(&lower.as_str())
}

fn is_special(p: &Path) -> bool {
    ["/dev", "/proc", "/sys", "/run"]
        .iter()
        .any(|s| p == Path::new(s))
}

/// A usable directory: not a symlink itself, canonical, accessible.
fn usable_dir(raw: &Path) -> Option<PathBuf> {
    let m = std::fs::symlink_metadata(raw).ok()?;
    if m.file_type().is_symlink() || !m.is_dir() {
        return None;
    }
    let c = grant::canonical_plain(raw).ok()?;
    if !grant::accessible(&c) || is_special(&c) || c.to_str().is_none() {
        return None;
    }
    Some(c)
}

fn display_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .map_or_else(|| p.to_string_lossy().into_owned(), str::to_owned)
}

/// Removes the least recently used entries of `map` until it has room for one more
/// (fewer than `max`).
fn evict_least_recent<V, T: Ord>(map: &mut HashMap<String, V>, max: usize, used: impl Fn(&V) -> T) {
    while map.len() >= max {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| used(v))
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&oldest);
    }
}

/// The virtual roots of 9.2: the home folder first, then on Windows the drive roots, on
/// Unix the mounts under `/media/<user>` and `/run/media/<user>`, on macOS the volumes
/// under `/Volumes`.
pub(crate) fn virtual_roots(home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let push = |p: PathBuf, out: &mut Vec<PathBuf>| {
        if !out.contains(&p) && out.len() < PAGE {
            out.push(p);
        }
    };
    if let Some(h) = home
        && let Some(c) = usable_dir(h)
    {
        push(c, &mut out);
    }
    // Windows: the removable and fixed drive roots, `A:\` to `Z:\`, deduplicated by the
    // case-folded path.
    #[cfg(windows)]
    for d in crate::runtime::file_id::local_drive_roots() {
        if let Some(c) = usable_dir(&d) {
            let key = c.to_string_lossy().to_lowercase();
            if !out
                .iter()
                .any(|o| o.to_string_lossy().to_lowercase() == key)
            {
                push(c, &mut out);
            }
        }
    }
    #[cfg(unix)]
    if let Some(user) = home.and_then(|h| h.file_name()).and_then(|n| n.to_str()) {
        for parent in [format!("/media/{user}"), format!("/run/media/{user}")] {
            for k in mounts_under(Path::new(&parent)) {
                push(k, &mut out);
            }
        }
    }
    // macOS: every mounted volume (issue 27 point 6); the boot volume's entry is a link to
    // `/`, skipped as every link is.
    #[cfg(target_os = "macos")]
    for k in mounts_under(Path::new("/Volumes")) {
        push(k, &mut out);
    }
    out
}

#[cfg(unix)]
/// The usable directories directly under `parent` (a mount parent such as `/Volumes` or
/// `/media/<user>`), canonical and sorted; hidden and unacceptable names skipped.
pub(crate) fn mounts_under(parent: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut kids: Vec<PathBuf> = rd
        .take(SCAN_LIMIT)
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| acceptable_name(n) && !n.starts_with('.'))
        })
        .filter_map(|e| usable_dir(&e.path()))
        .collect();
    kids.sort();
    kids.dedup();
    kids
}

/// Scans one directory (9.2 navigation step 4-5). `None` = scan failure.
fn scan(dir: &Path) -> Option<(Vec<PathBuf>, bool)> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut out = Vec::new();
    let mut truncated = false;
    for (count, e) in rd.enumerate() {
        if count >= SCAN_LIMIT {
            truncated = true;
            break;
        }
        let Ok(e) = e else { continue };
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_symlink() || !ft.is_dir() {
            continue;
        }
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !acceptable_name(name) || (cfg!(windows) && windows_system_name(name)) {
            continue;
        }
        if let Some(c) = usable_dir(&e.path()) {
            out.push(c);
        }
    }
    out.sort_by_key(|p| display_name(p).to_lowercase());
    Some((out, truncated))
}

impl ControlPlane for Control {
    fn on_reconnect(&self) -> BoxFuture<'_, ()> {
        Box::pin(Control::on_reconnect(self))
    }

    fn handle<'a>(
        &'a self,
        id: &'a str,
        msg: &'a Message,
    ) -> BoxFuture<'a, Result<Message, AuditFailed>> {
        Box::pin(Control::handle(self, id, msg))
    }
}

impl Control {
    pub(crate) fn new(machine: Arc<Machine>, audit: Auditor) -> Arc<Control> {
        Arc::new_cyclic(|me| Control {
            machine,
            audit,
            state: Mutex::new(State::default()),
            children: Mutex::new(HashMap::new()),
            session_locks: SessionLocks::default(),
            generation: Mutex::new(0),
            inflight: Arc::new(tokio::sync::RwLock::new(())),
            me: me.clone(),
        })
    }

    /// 9.11: stop every child and forget every browse session (bindings are kept).
    pub(crate) async fn on_reconnect(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.browses.clear();
        }
        self.stop_all().await;
    }

    /// Stops every child and waits for them, after the detached session operations still
    /// running (a restore whose connection dropped must not start a child after this).
    pub(crate) async fn stop_all(&self) {
        let _quiet = self.inflight.write().await;
        let children: Vec<Child> = match self.children.lock() {
            Ok(mut c) => c.drain().map(|(_, v)| v).collect(),
            Err(_) => Vec::new(),
        };
        for c in children {
            c.stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(5), c.handle).await;
        }
    }

    /// Serves one control request (already past the mode and capability checks). Session
    /// operations run under the session's mutex (9.1).
    pub(crate) async fn handle(&self, id: &str, msg: &Message) -> Result<Message, AuditFailed> {
        let r = match msg {
            Message::DirectoryListRequest(p) => return self.list(id, p).await,
            Message::AttachSession(p) => {
                let _g = self.session_locks.lock(p.session_id.as_str()).await;
                self.attach(id, p).await
            }
            Message::ActivateSession(p) => {
                let _g = self.session_locks.lock(p.session_id.as_str()).await;
                self.activate(id, p).await
            }
            // These stop a live child before they write their record: run to the end even if
            // the request is dropped (its control connection ended) meanwhile.
            Message::RestoreSession(p) => {
                let (id, p) = (id.to_owned(), p.clone());
                self.detached(move |me| async move {
                    let _g = me.session_locks.lock(p.session_id.as_str()).await;
                    me.restore(&id, &p).await
                })
                .await
            }
            Message::DetachSession(p) => {
                let (id, p) = (id.to_owned(), p.clone());
                self.detached(move |me| async move {
                    let _g = me.session_locks.lock(p.session_id.as_str()).await;
                    me.detach(&id, &p).await
                })
                .await
            }
            _ => return Ok(err(ErrorCode::FeatureNotSupported, "not a control request")),
        };
        // 13.18: sessions still locked or waited for; 0 when the control plane is idle.
        tracing::debug!(
            session_locks = self.session_locks.len(),
            "session request served"
        );
        r
    }

    /// Runs a session operation on a task of its own, as `blocking.rs` does for file
    /// operations: dropping the request (its control connection ended) does not stop it
    /// halfway, e.g. with the old child stopped, the new one never started and nothing
    /// recorded. It finishes, writes its record, and [`Control::stop_all`] waits for it.
    async fn detached<F, Fut>(&self, work: F) -> Result<Message, AuditFailed>
    where
        F: FnOnce(Arc<Control>) -> Fut,
        Fut: std::future::Future<Output = Result<Message, AuditFailed>> + Send + 'static,
    {
        let Some(me) = self.me.upgrade() else {
            return Ok(err(
                ErrorCode::InternalError,
                "the control plane is stopping",
            ));
        };
        let running = self.inflight.clone().read_owned().await;
        let work = work(me);
        let task = tokio::spawn(async move {
            let r = work.await;
            drop(running);
            r
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Ok(err(
                ErrorCode::InternalError,
                format!("the session operation failed: {e}"),
            )),
        }
    }

    async fn list(&self, id: &str, p: &DirectoryListRequest) -> Result<Message, AuditFailed> {
        let started = Instant::now();
        let result = self.list_inner(p);
        match result {
            Ok((resp, path)) => {
                let d = Map::new()
                    .with("browse_id", resp.browse_id.as_str())
                    .with("path", path)
                    .with("entries_returned", resp.entries.len())
                    .with("truncated", resp.truncated);
                self.audit
                    .op(
                        "DIRECTORY_LIST",
                        Some(id),
                        d,
                        AuditResult::ok_after(started.elapsed()),
                    )
                    .await?;
                Ok(Message::DirectoryListResponse(resp))
            }
            Err(m) => {
                let code = m.code.clone();
                let d = Map::new().with(
                    "browse_id",
                    p.browse_id.as_ref().map(|b| b.as_str().to_owned()),
                );
                self.audit
                    .op("DIRECTORY_LIST", Some(id), d, AuditResult::failed(&code))
                    .await?;
                Ok(Message::Error(m))
            }
        }
    }

    fn list_inner(
        &self,
        p: &DirectoryListRequest,
    ) -> Result<(DirectoryListResponse, Option<String>), ErrorPayload> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| perr(ErrorCode::InternalError, "state poisoned"))?;
        let t = now();
        st.evict_expired(t);
        let (Some(bid), Some(dref)) = (&p.browse_id, &p.directory_ref) else {
            // Start a browse.
            evict_least_recent(&mut st.browses, MAX_BROWSES, |b| b.used);
            let used = st.tick();
            let home = self.machine.settings.home.clone();
            let roots = virtual_roots(home.as_deref());
            let mut refs = HashMap::new();
            let mut entries = Vec::new();
            for r in roots {
                let rid = token();
                entries.push(DirectoryReference {
                    directory_ref: btoken(rid.clone())
                        .ok_or_else(|| perr(ErrorCode::InternalError, "token"))?,
                    name: display_name(&r),
                    path: r.to_string_lossy().into_owned(),
                });
                refs.insert(
                    rid,
                    RefEntry {
                        path: r,
                        parent: None,
                    },
                );
            }
            let bid = token();
            let expires_at = t + BROWSE_TTL;
            st.browses.insert(
                bid.clone(),
                Browse {
                    expires_at,
                    used,
                    refs,
                    cursors: HashMap::new(),
                },
            );
            return Ok((
                DirectoryListResponse {
                    browse_id: btoken(bid)
                        .ok_or_else(|| perr(ErrorCode::InternalError, "token"))?,
                    current: None,
                    parent_ref: None,
                    entries,
                    next_cursor: None,
                    truncated: false,
                    expires_at,
                },
                None,
            ));
        };
        let used = st.tick();
        let browse = st.browses.get_mut(bid.as_str()).ok_or_else(invalid_ref)?;
        let entry = browse
            .refs
            .get(dref.as_str())
            .cloned()
            .ok_or_else(invalid_ref)?;
        let mut offset = 0;
        if let Some(c) = &p.cursor {
            let cur = browse.cursors.get_mut(c.as_str()).ok_or_else(invalid_ref)?;
            if cur.dir_ref != dref.as_str() {
                return Err(invalid_ref());
            }
            cur.used = used;
            offset = cur.offset;
        }
        let dir = usable_dir(&entry.path).ok_or_else(unavailable)?;
        let (items, mut truncated) = scan(&dir).ok_or_else(unavailable)?;
        let page: Vec<&PathBuf> = items.iter().skip(offset).take(PAGE).collect();
        let mut more = items.len() > offset + page.len();
        let mut entries = Vec::new();
        for item in page {
            if browse.refs.len() >= MAX_REFS {
                truncated = true;
                more = false;
                break;
            }
            let rid = token();
            entries.push(DirectoryReference {
                directory_ref: btoken(rid.clone())
                    .ok_or_else(|| perr(ErrorCode::InternalError, "token"))?,
                name: display_name(item),
                path: item.to_string_lossy().into_owned(),
            });
            browse.refs.insert(
                rid,
                RefEntry {
                    path: item.clone(),
                    parent: Some(dref.as_str().to_owned()),
                },
            );
        }
        let next_cursor = if more {
            let next = offset + PAGE;
            let existing = browse
                .cursors
                .iter()
                .find(|(_, c)| c.dir_ref == dref.as_str() && c.offset == next)
                .map(|(k, _)| k.clone());
            let key = match existing {
                Some(k) => k,
                None => {
                    evict_least_recent(&mut browse.cursors, MAX_CURSORS, |c| c.used);
                    let k = token();
                    browse.cursors.insert(
                        k.clone(),
                        Cursor {
                            dir_ref: dref.as_str().to_owned(),
                            offset: next,
                            used,
                        },
                    );
                    k
                }
            };
            btoken(key)
        } else {
            None
        };
        browse.used = used;
        let path = dir.to_string_lossy().into_owned();
        Ok((
            DirectoryListResponse {
                browse_id: bid.clone(),
                current: Some(DirectoryReference {
                    directory_ref: dref.clone(),
                    name: display_name(&dir),
                    path: path.clone(),
                }),
                parent_ref: entry.parent.and_then(btoken),
                entries,
                next_cursor,
                truncated,
                expires_at: browse.expires_at,
            },
            Some(path),
        ))
    }

    fn child_live(&self, sid: &str) -> bool {
        self.children
            .lock()
            .map(|c| c.get(sid).is_some_and(|ch| !ch.handle.is_finished()))
            .unwrap_or(false)
    }

    fn binding(&self, sid: &str) -> Option<Binding> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.bindings.get(sid).map(|(b, _)| b.clone()))
    }

    /// Stores a binding (most recently used), evicting the least recently used binding
    /// without a live child if the bound of 64 requires it; `false` (nothing changed) if
    /// there is none to evict.
    fn store_binding(&self, b: Binding) -> bool {
        let live: Vec<String> = self
            .children
            .lock()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        let Ok(mut st) = self.state.lock() else {
            return false;
        };
        if !st.bindings.contains_key(&b.session_id) && st.bindings.len() >= MAX_SESSION_BINDINGS {
            let victim = st
                .bindings
                .iter()
                .filter(|(k, _)| !live.contains(k))
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    st.bindings.remove(&k);
                    self.machine.status.detached(&k);
                }
                None => return false,
            }
        }
        let t = st.tick();
        self.machine.status.attached(&b.session_id, &b.allowed_root);
        st.bindings.insert(b.session_id.clone(), (b, t));
        true
    }

    fn touch_binding(&self, sid: &str) {
        if let Ok(mut st) = self.state.lock() {
            let t = st.tick();
            if let Some((_, used)) = st.bindings.get_mut(sid) {
                *used = t;
            }
        }
    }

    fn remove_binding(&self, sid: &str) -> Option<Binding> {
        let removed = self
            .state
            .lock()
            .ok()
            .and_then(|mut s| s.bindings.remove(sid).map(|(b, _)| b));
        if removed.is_some() {
            self.machine.status.detached(sid);
        }
        removed
    }

    async fn fail(
        &self,
        op: &str,
        id: &str,
        sid: &str,
        m: Message,
    ) -> Result<Message, AuditFailed> {
        let code = match &m {
            Message::Error(e) => e.code.clone(),
            _ => ErrorCode::InternalError,
        };
        let mut ev = shim_audit::AuditEvent::new(op)
            .details(Map::new().with("session_id", sid))
            .result(AuditResult::failed(&code))
            .request_id(id);
        ev = ev.session(sid);
        self.audit.write(ev).await?;
        Ok(m)
    }

    async fn attach(&self, id: &str, p: &AttachSession) -> Result<Message, AuditFailed> {
        let sid = p.session_id.as_str();
        if self.child_live(sid) {
            return self
                .fail(
                    "ATTACH_SESSION",
                    id,
                    sid,
                    err(
                        ErrorCode::SessionAlreadyActive,
                        "The session is active; detach it first.",
                    ),
                )
                .await;
        }
        // Resolve the reference (navigation steps 1-2).
        let resolved: Result<PathBuf, ErrorPayload> = (|| {
            let mut st = self
                .state
                .lock()
                .map_err(|_| perr(ErrorCode::InternalError, "state poisoned"))?;
            st.evict_expired(now());
            let browse = st
                .browses
                .get(p.browse_id.as_str())
                .ok_or_else(invalid_ref)?;
            let entry = browse
                .refs
                .get(p.directory_ref.as_str())
                .ok_or_else(invalid_ref)?;
            let dir = usable_dir(&entry.path).ok_or_else(unavailable)?;
            // Consume the whole browse session.
            st.browses.remove(p.browse_id.as_str());
            Ok(dir)
        })();
        let dir = match resolved {
            Ok(d) => d,
            Err(m) => {
                return self
                    .fail("ATTACH_SESSION", id, sid, Message::Error(m))
                    .await;
            }
        };
        let previous = self.binding(sid);
        let revision = previous.as_ref().map_or(1, |b| b.revision + 1);
        let canon = match grant::canonicalize_root(&dir) {
            Ok(c) => c,
            Err(_) => {
                return self
                    .fail("ATTACH_SESSION", id, sid, Message::Error(unavailable()))
                    .await;
            }
        };
        let fp = grant::fingerprint(&canon);
        let root_grant = grant::issue(
            &self.machine.audit_key,
            &grant::Claims {
                allowed_root: canon.path.clone(),
                fingerprint: fp.clone(),
                issued_at: now(),
                machine_id: self.machine.identity.machine_id.clone(),
                revision,
                session_id: sid.to_owned(),
            },
        );
        let d = Map::new()
            .with(
                "previous_allowed_root",
                previous.as_ref().map(|b| b.allowed_root.clone()),
            )
            .with("allowed_root", canon.path.as_str())
            .with("fingerprint", fp.as_str())
            .with("revision", revision);
        let ev = shim_audit::AuditEvent::new("SESSION_ALLOWED_ROOT_SET")
            .details(d)
            .request_id(id)
            .session(sid);
        self.audit.write(ev).await?;
        let binding = Binding {
            session_id: sid.to_owned(),
            allowed_root: canon.path.clone(),
            fingerprint: fp.clone(),
            revision,
            root_grant: root_grant.clone(),
        };
        if !self.store_binding(binding) {
            return Ok(err(ErrorCode::InternalError, "binding limit reached"));
        }
        let (Ok(fp), Ok(grant_v)) = (Fingerprint::new(fp), RootGrant::new(root_grant)) else {
            return Ok(err(ErrorCode::InternalError, "grant encoding failed"));
        };
        Ok(Message::SessionAttached(SessionAttached {
            session_id: p.session_id.clone(),
            allowed_root: canon.path,
            fingerprint: fp,
            revision,
            root_grant: grant_v,
        }))
    }

    /// Starts a child for `b` (9.8). `Err` carries the wire error.
    fn start_child(&self, b: &Binding) -> Result<(), ErrorPayload> {
        let ready = self.prepare_child(b)?;
        self.launch_child(ready);
        Ok(())
    }

    /// Every step of starting a child for `b` that can fail (9.8 step 1, opening the root),
    /// without touching any running child. A live child of the same session does not count
    /// against the limit: the caller replaces it.
    fn prepare_child(&self, b: &Binding) -> Result<ReadyChild, ErrorPayload> {
        let live_others = self
            .children
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|(k, ch)| **k != b.session_id && !ch.handle.is_finished())
                    .count()
            })
            .unwrap_or(0);
        if live_others >= MAX_CHILD_RUNTIMES {
            return Err(perr(
                ErrorCode::InternalError,
                "Active local-executor session limit reached",
            ));
        }
        let s = &self.machine.settings;
        let jail = JailRoot::open(
            Path::new(&b.allowed_root),
            JailConfig {
                max_file_size_bytes: s.max_file_size_bytes,
                home: s
                    .home
                    .as_deref()
                    .and_then(|h| h.to_str().map(str::to_owned)),
                refuse_symlink_root: true,
                trash_dir: None,
            },
            shim_jail::ambient_authority(),
        )
        .map_err(|e| {
            perr(
                ErrorCode::InternalError,
                format!("cannot open the session root: {e}"),
            )
        })?;
        let stop = CancellationToken::new();
        let activity = Arc::new(Mutex::new(Instant::now()));
        let runtime = Runtime {
            machine: self.machine.clone(),
            role: Role::Data {
                session_id: b.session_id.clone(),
                allowed_root: b.allowed_root.clone(),
            },
            jail: Some(Arc::new(jail)),
            audit: self.machine.audit.for_session(&b.session_id),
            stop: stop.clone(),
            activity: activity.clone(),
            control: None,
            uses_work_limit: true,
            cu: Default::default(),
            llm: Default::default(),
            hw: Default::default(),
        };
        Ok(ReadyChild {
            binding: b.clone(),
            runtime,
            stop,
            activity,
        })
    }

    /// Runs a prepared child and records it as the session's child. Cannot fail, so once a
    /// live child was stopped to make room, its replacement always starts. (The state
    /// behind the two locks is a counter and a map that a panic cannot leave half-updated.)
    fn launch_child(&self, ready: ReadyChild) {
        let ReadyChild {
            binding,
            runtime,
            stop,
            activity,
        } = ready;
        let generation = {
            let mut g = self
                .generation
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *g += 1;
            *g
        };
        let sid = binding.session_id.clone();
        let handle = tokio::spawn(async move {
            let outcome = runtime.run().await;
            tracing::info!(session = %sid, outcome = ?outcome, "child runtime ended");
            outcome
        });
        let mut children = self.children.lock().unwrap_or_else(PoisonError::into_inner);
        children.insert(
            binding.session_id.clone(),
            Child {
                binding,
                stop,
                handle,
                activity,
                generation,
            },
        );
    }

    async fn stop_child(&self, sid: &str) -> bool {
        let child = self.children.lock().ok().and_then(|mut c| c.remove(sid));
        match child {
            Some(c) => {
                c.stop.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(5), c.handle).await;
                true
            }
            None => false,
        }
    }

    /// Forgets children whose runtime ended on its own (terminal failure, revocation).
    fn reap_finished(&self) {
        if let Ok(mut c) = self.children.lock() {
            c.retain(|_, ch| !ch.handle.is_finished());
        }
    }

    async fn activate(&self, id: &str, p: &ActivateSession) -> Result<Message, AuditFailed> {
        let sid = p.session_id.as_str();
        self.reap_finished();
        let Some(b) = self.binding(sid) else {
            return self
                .fail(
                    "ACTIVATE_SESSION",
                    id,
                    sid,
                    err(
                        ErrorCode::SessionNotAttached,
                        "The session is not attached.",
                    ),
                )
                .await;
        };
        if p.revision != b.revision {
            let m = Message::Error(ErrorPayload::with_details(
                ErrorCode::SessionRevisionMismatch,
                "The session revision does not match.",
                &RevisionMismatchDetails {
                    current_revision: b.revision,
                },
            ));
            return self.fail("ACTIVATE_SESSION", id, sid, m).await;
        }
        if let Err(e) = grant::verify(
            &self.machine.audit_key,
            &b.root_grant,
            sid,
            &self.machine.identity.machine_id,
        ) {
            return self
                .fail(
                    "ACTIVATE_SESSION",
                    id,
                    sid,
                    err(ErrorCode::RootGrantInvalid, e.to_string()),
                )
                .await;
        }
        self.touch_binding(sid);
        let started_here = if self.child_live(sid) {
            false
        } else {
            if let Err(m) = self.start_child(&b) {
                return self
                    .fail("ACTIVATE_SESSION", id, sid, Message::Error(m))
                    .await;
            }
            true
        };
        let d = Map::new()
            .with("allowed_root", b.allowed_root.as_str())
            .with("fingerprint", b.fingerprint.as_str())
            .with("revision", b.revision);
        let ev = shim_audit::AuditEvent::new("ACTIVATE_SESSION")
            .details(d)
            .request_id(id)
            .session(sid);
        if let Err(e) = self.audit.write(ev).await {
            if started_here {
                self.stop_child(sid).await;
            }
            return Err(e);
        }
        let Ok(fp) = Fingerprint::new(b.fingerprint.clone()) else {
            return Ok(err(ErrorCode::InternalError, "bad fingerprint"));
        };
        Ok(Message::SessionActivated(SessionActivated {
            session_id: p.session_id.clone(),
            allowed_root: b.allowed_root,
            fingerprint: fp,
            revision: b.revision,
        }))
    }

    async fn restore(&self, id: &str, p: &RestoreSession) -> Result<Message, AuditFailed> {
        let sid = p.session_id.as_str();
        self.reap_finished();
        let v = match grant::verify(
            &self.machine.audit_key,
            p.root_grant.as_str(),
            sid,
            &self.machine.identity.machine_id,
        ) {
            Ok(v) => v,
            Err(e) => {
                return self
                    .fail(
                        "RESTORE_SESSION",
                        id,
                        sid,
                        err(ErrorCode::RootGrantInvalid, e.to_string()),
                    )
                    .await;
            }
        };
        let previous = self.binding(sid);
        if let Some(prev) = &previous
            && (prev.revision > v.revision
                || (prev.revision == v.revision && prev.fingerprint != v.fingerprint))
        {
            let m = Message::Error(ErrorPayload::with_details(
                ErrorCode::SessionRevisionMismatch,
                "A newer binding exists for this session.",
                &RevisionMismatchDetails {
                    current_revision: prev.revision,
                },
            ));
            return self.fail("RESTORE_SESSION", id, sid, m).await;
        }
        let new = Binding {
            session_id: sid.to_owned(),
            allowed_root: v.allowed_root.clone(),
            fingerprint: v.fingerprint.clone(),
            revision: v.revision,
            root_grant: v.root_grant.clone(),
        };
        let live_binding = self.children.lock().ok().and_then(|c| {
            c.get(sid)
                .filter(|ch| !ch.handle.is_finished())
                .map(|ch| ch.binding.clone())
        });
        // 9.7 step 3. Every step that can fail comes before a live child is stopped:
        // if the new child cannot start (the limit, or its root cannot be opened, e.g.
        // EMFILE), the request fails with the old child still running untouched and the
        // previous binding kept, so nothing is left to restart (13.17).
        let ready = if live_binding.as_ref() == Some(&new) {
            None
        } else {
            match self.prepare_child(&new) {
                Ok(r) => Some(r),
                Err(m) => {
                    return self
                        .fail("RESTORE_SESSION", id, sid, Message::Error(m))
                        .await;
                }
            }
        };
        if !self.store_binding(new.clone()) {
            return self
                .fail(
                    "RESTORE_SESSION",
                    id,
                    sid,
                    err(ErrorCode::InternalError, "binding limit reached"),
                )
                .await;
        }
        let started_here = ready.is_some();
        let mut replaced = false;
        if let Some(ready) = ready {
            // Stop once, start once with the new binding.
            if live_binding.is_some() {
                replaced = self.stop_child(sid).await;
            }
            self.launch_child(ready);
        }
        let d = Map::new()
            .with("allowed_root", new.allowed_root.as_str())
            .with("fingerprint", new.fingerprint.as_str())
            .with("revision", new.revision);
        let ev = shim_audit::AuditEvent::new("RESTORE_SESSION")
            .details(d)
            .request_id(id)
            .session(sid);
        if let Err(e) = self.audit.write(ev).await {
            // 9.7 step 4. A failed audit write stops the whole daemon (exit 78), so a
            // replaced child is not restarted; the binding goes back to what it was.
            if started_here {
                self.stop_child(sid).await;
            }
            match previous {
                Some(prev) => {
                    let _ = self.store_binding(prev);
                }
                None => {
                    self.remove_binding(sid);
                }
            }
            return Err(e);
        }
        tracing::info!(session = sid, replaced, "session restored");
        let Ok(fp) = Fingerprint::new(new.fingerprint) else {
            return Ok(err(ErrorCode::InternalError, "bad fingerprint"));
        };
        Ok(Message::SessionRestored(SessionRestored {
            session_id: p.session_id.clone(),
            allowed_root: new.allowed_root,
            fingerprint: fp,
            revision: new.revision,
            root_grant: p.root_grant.clone(),
        }))
    }

    async fn detach(&self, id: &str, p: &DetachSession) -> Result<Message, AuditFailed> {
        let sid = p.session_id.as_str();
        self.end_session(
            sid,
            shim_audit::AuditEvent::new("DETACH_SESSION").request_id(id),
            Map::new(),
        )
        .await?;
        Ok(Message::Ack(Ack::OK))
    }

    /// Stops the session's child and forgets its binding after recording `ev` (with the
    /// binding's folder and revision added to `details`), as `DETACH_SESSION` does.
    async fn end_session(
        &self,
        sid: &str,
        ev: shim_audit::AuditEvent,
        details: Map,
    ) -> Result<(), AuditFailed> {
        self.stop_child(sid).await;
        let b = self.binding(sid);
        let d = details
            .with("allowed_root", b.as_ref().map(|b| b.allowed_root.clone()))
            .with("revision", b.as_ref().map(|b| b.revision));
        self.audit.write(ev.details(d).session(sid)).await?;
        self.remove_binding(sid);
        Ok(())
    }

    /// `autogpt-shim detach SESSION` (the local control socket): ends the chat's runtime as
    /// `DETACH_SESSION` does, recorded as `LOCAL_CONTROL` (`action: detach`, `decided_by`).
    /// `false` when no chat has this session id. Runs to the end on a task of its own, like
    /// the platform's detach ([`Control::detached`]).
    pub(crate) async fn detach_local(&self, sid: &str, by: &str) -> Result<bool, AuditFailed> {
        let Some(me) = self.me.upgrade() else {
            return Ok(false);
        };
        let running = self.inflight.clone().read_owned().await;
        let (sid, by) = (sid.to_owned(), by.to_owned());
        let task = tokio::spawn(async move {
            let _g = me.session_locks.lock(&sid).await;
            let live = me
                .children
                .lock()
                .map(|c| c.contains_key(&sid))
                .unwrap_or(false);
            let r = if live || me.binding(&sid).is_some() {
                let d = Map::new()
                    .with("action", "detach")
                    .with("decided_by", by.as_str());
                me.end_session(&sid, shim_audit::AuditEvent::new("LOCAL_CONTROL"), d)
                    .await
                    .map(|()| true)
            } else {
                Ok(false)
            };
            drop(running);
            r
        });
        task.await
            .unwrap_or_else(|e| Err(AuditFailed(format!("the detach task failed: {e}"))))
    }

    /// The idle reaper (9.9): runs until `stop`.
    pub(crate) async fn reaper(self: Arc<Self>, stop: CancellationToken) {
        let tuning = self.machine.settings.tuning;
        loop {
            tokio::select! {
                () = tokio::time::sleep(tuning.idle_check_interval) => {}
                () = stop.cancelled() => return,
            }
            self.reap_finished();
            let idle: Vec<(String, f64, u64)> = self
                .children
                .lock()
                .map(|c| {
                    c.iter()
                        .filter_map(|(k, ch)| {
                            let since = ch.activity.lock().ok()?.elapsed();
                            (since >= tuning.idle_timeout)
                                .then(|| (k.clone(), since.as_secs_f64(), ch.generation))
                        })
                        .collect()
                })
                .unwrap_or_default();
            for (sid, secs, generation) in idle {
                // Re-checked under the session's mutex (9.9).
                let _g = self.session_locks.lock(&sid).await;
                let still = self
                    .children
                    .lock()
                    .map(|c| c.get(&sid).is_some_and(|ch| ch.generation == generation))
                    .unwrap_or(false);
                if still {
                    let ev = shim_audit::AuditEvent::new("IDLE_SESSION_DETACH")
                        .details(Map::new().with("idle_seconds", (secs * 1000.0).round() / 1000.0))
                        .session(sid.as_str());
                    if self.audit.write(ev).await.is_ok() {
                        tracing::info!(session = %sid, "stopping an idle child runtime");
                        self.stop_child(&sid).await;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
