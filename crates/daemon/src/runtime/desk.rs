//! Who drives the desktop that computer use drives (docs/console.md, "Live view and
//! take-over"): the local user takes it over from the web console or with
//! `autogpt-shim takeover` and hands it back; while they hold it the agent's input actions,
//! window focus, app launches and clipboard writes are refused with `DESKTOP_IN_USE`
//! (screenshots and every read stay allowed). Also kept here for the live view and
//! `status`: the agent's last input action (where it landed, never typed text) and who is
//! watching.
//!
//! Each take-over and hand-back is a `LOCAL_CONTROL` record (`takeover` / `handback`,
//! `decided_by`) written before the state changes, like every other local action.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;

use shim_audit::AuditResult;
use shim_audit::Map;
use shim_cu::engine::Request;
use shim_protocol::ErrorCode;
use shim_protocol::messages::cu::InputAction;

use crate::ipc::ActionStatus;
use crate::ipc::DesktopStatus;
use crate::ipc::ViewerStatus;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;

/// The message the model reads when the user holds the desktop (the platform passes an
/// unknown code's message through unchanged).
pub(crate) const IN_USE_MESSAGE: &str = "The user has taken over this desktop and is using it now; the action was not done. Wait, then take a new screenshot before acting: the screen has probably changed.";

/// The longest take-over timeout accepted (a day).
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Who holds the desktop, since when, until when.
#[derive(Debug, Clone)]
struct Hold {
    by: String,
    since: SystemTime,
    until: Option<Instant>,
    /// Which take-over this is (a timeout only ends its own).
    epoch: u64,
}

/// The agent's last input action, as the live view marks it.
#[derive(Debug, Clone)]
struct Last {
    session_id: Option<String>,
    action: String,
    point: Option<[i64; 2]>,
    chord: Option<String>,
    typed_chars: Option<u64>,
    at: Instant,
}

#[derive(Debug, Clone)]
struct Viewer {
    since: SystemTime,
    frames: u64,
}

#[derive(Debug, Default)]
struct State {
    hold: Option<Hold>,
    last: Option<Last>,
    viewers: BTreeMap<u64, Viewer>,
}

/// The machine's desktop state. Cheap to ask ([`Desk::held`] is one atomic load).
#[derive(Debug, Default)]
pub(crate) struct Desk {
    held: AtomicBool,
    epoch: AtomicU64,
    next_viewer: AtomicU64,
    state: Mutex<State>,
}

/// Whether `req` changes the desktop (refused while the user holds it).
pub(crate) fn acts(req: &Request) -> bool {
    matches!(
        req,
        Request::Input(_)
            | Request::WindowFocus(_)
            | Request::AppLaunch(_)
            | Request::ClipboardWrite(_)
    )
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Desk {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the local user holds the desktop now.
    pub(crate) fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// Notes a served input action of chat `session` (the live view's marker): its point,
    /// its key chord, or how many characters it typed (never the text).
    pub(crate) fn note_action(&self, session: Option<&str>, a: &InputAction) {
        let point = a
            .path
            .as_ref()
            .and_then(|p| p.last().copied())
            .or(a.coordinate);
        let typed = a
            .text
            .as_ref()
            .map(|t| u64::try_from(t.chars().count()).unwrap_or(u64::MAX));
        let last = Last {
            session_id: session.map(str::to_owned),
            action: a.action.as_str().to_owned(),
            point,
            chord: a.key.clone().filter(|k| !k.trim().is_empty()),
            typed_chars: typed,
            at: Instant::now(),
        };
        self.lock().last = Some(last);
    }

    /// A new live viewer; its id.
    pub(crate) fn add_viewer(&self) -> u64 {
        let id = self.next_viewer.fetch_add(1, Ordering::SeqCst) + 1;
        self.lock().viewers.insert(
            id,
            Viewer {
                since: SystemTime::now(),
                frames: 0,
            },
        );
        id
    }

    /// Counts a frame sent to viewer `id`.
    // The live view sends frames on X11 (Linux) only.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn frame_sent(&self, id: u64) {
        if let Some(v) = self.lock().viewers.get_mut(&id) {
            v.frames += 1;
        }
    }

    /// Viewer `id` left; the frames it was sent.
    pub(crate) fn remove_viewer(&self, id: u64) -> u64 {
        self.lock().viewers.remove(&id).map_or(0, |v| v.frames)
    }

    /// What `status` shows.
    pub(crate) fn status(&self) -> DesktopStatus {
        let s = self.lock();
        let now = Instant::now();
        DesktopStatus {
            held_by: s.hold.as_ref().map(|h| h.by.clone()),
            held_since_unix: s.hold.as_ref().map(|h| unix(h.since)),
            seconds_left: s
                .hold
                .as_ref()
                .and_then(|h| h.until)
                .map(|u| u.saturating_duration_since(now).as_secs()),
            last_action: s.last.as_ref().map(|l| ActionStatus {
                session_id: l.session_id.clone(),
                action: l.action.clone(),
                point: l.point,
                chord: l.chord.clone(),
                typed_chars: l.typed_chars,
                age_ms: u64::try_from(now.duration_since(l.at).as_millis()).unwrap_or(u64::MAX),
            }),
            viewers: s
                .viewers
                .iter()
                .map(|(id, v)| ViewerStatus {
                    id: *id,
                    since_unix: unix(v.since),
                    frames: v.frames,
                })
                .collect(),
        }
    }
}

/// Writes a `LOCAL_CONTROL` record.
async fn audited(audit: &Auditor, action: &str, by: &str, details: Map) -> Result<(), AuditFailed> {
    audit
        .op(
            "LOCAL_CONTROL",
            None,
            details.with("action", action).with("decided_by", by),
            AuditResult::default(),
        )
        .await
}

/// The local user `by` (`console`, `cli`) takes the desktop over, until hand-back or, with
/// `timeout`, until it runs out. Taking it over again renews the hold (and its timeout).
pub(crate) async fn take_over(
    desk: &Arc<Desk>,
    audit: &Auditor,
    by: &str,
    timeout: Option<Duration>,
) -> Result<(), AuditFailed> {
    let timeout = timeout.map(|t| t.min(MAX_TIMEOUT));
    let mut details = Map::new();
    if let Some(t) = timeout {
        details = details.with("timeout_seconds", t.as_secs());
    }
    audited(audit, "takeover", by, details).await?;
    let epoch = desk.epoch.fetch_add(1, Ordering::SeqCst) + 1;
    {
        let mut s = desk.lock();
        s.hold = Some(Hold {
            by: by.to_owned(),
            since: SystemTime::now(),
            until: timeout.map(|t| Instant::now() + t),
            epoch,
        });
        desk.held.store(true, Ordering::SeqCst);
    }
    tracing::warn!(
        by,
        "the local user took over the desktop: agent input is refused"
    );
    if let Some(t) = timeout {
        let (d, a) = (desk.clone(), audit.clone());
        tokio::spawn(async move {
            tokio::time::sleep(t).await;
            let mine = d.lock().hold.as_ref().is_some_and(|h| h.epoch == epoch);
            if mine {
                let _ = hand_back(&d, &a, "timeout").await;
            }
        });
    }
    Ok(())
}

/// Returns the desktop to the agent; `Ok(false)` when nobody held it (nothing recorded).
pub(crate) async fn hand_back(desk: &Desk, audit: &Auditor, by: &str) -> Result<bool, AuditFailed> {
    let Some(held) = desk.lock().hold.clone() else {
        return Ok(false);
    };
    let held_ms = SystemTime::now()
        .duration_since(held.since)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    audited(
        audit,
        "handback",
        by,
        Map::new()
            .with("held_by", held.by.as_str())
            .with("held_ms", held_ms),
    )
    .await?;
    {
        let mut s = desk.lock();
        if s.hold.as_ref().is_some_and(|h| h.epoch == held.epoch) {
            s.hold = None;
            desk.held.store(false, Ordering::SeqCst);
        }
    }
    tracing::warn!(by, "the desktop was handed back to the agent");
    Ok(true)
}

/// The refusal of an acting request while the user holds the desktop.
pub(crate) fn refusal() -> shim_cu::CuError {
    shim_cu::CuError::plain(ErrorCode::DesktopInUse, IN_USE_MESSAGE)
}

#[cfg(test)]
#[path = "desk_tests.rs"]
mod tests;
