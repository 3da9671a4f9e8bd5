//! OS-independent state: the clock, the screenshot rate window, the clipboard writeback
//! record and the window-id registry (COMPUTER_USE_HW.md 1.4, 4.1, 4.5.2, 4.7).

use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use crate::backend::Fingerprint;

/// A monotonic clock, injectable for tests of the time rules.
pub trait Clock: Send + Sync {
    /// Time since an arbitrary fixed start.
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A clock tests move by hand.
#[derive(Debug, Default)]
pub struct ManualClock(Mutex<Duration>);

impl ManualClock {
    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        if let Ok(mut t) = self.0.lock() {
            *t += d;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.0.lock().map(|t| *t).unwrap_or_default()
    }
}

/// A shared clock.
pub type SharedClock = Arc<dyn Clock>;

/// The machine-wide rolling 60 s screenshot window.
#[derive(Debug)]
pub struct RateWindow {
    limit: usize,
    slots: VecDeque<Duration>,
}

impl RateWindow {
    /// At most `limit` admissions per rolling minute.
    pub fn new(limit: u32) -> Self {
        RateWindow {
            limit: usize::try_from(limit.max(1)).unwrap_or(usize::MAX),
            slots: VecDeque::new(),
        }
    }

    /// Admits one request at `now` (it occupies a slot for 60 s even if it fails).
    pub fn admit(&mut self, now: Duration) -> bool {
        while let Some(&t) = self.slots.front() {
            if now.saturating_sub(t) >= Duration::from_secs(60) {
                self.slots.pop_front();
            } else {
                break;
            }
        }
        if self.slots.len() >= self.limit {
            return false;
        }
        self.slots.push_back(now);
        true
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// The last clipboard write of one session runtime (single slot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writeback {
    /// SHA-256 of the UTF-8 content (kept in memory only, never logged).
    pub hash: [u8; 32],
    /// Change counter after the write, when known.
    pub counter: Option<u64>,
    /// When it was written.
    pub at: Duration,
}

/// SHA-256 of `text`.
pub fn sha256(text: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// The clipboard writeback window.
pub const WRITEBACK_WINDOW: Duration = Duration::from_secs(30);

/// What a writeback-only read may return (4.7.4 step 7).
#[derive(Debug, Clone, PartialEq)]
pub enum WritebackVerdict {
    /// Return the live text.
    Allow,
    /// No record.
    NoRecord,
    /// Older than 30 s.
    Expired(f64),
    /// Replaced by someone else.
    Overwritten,
}

/// Applies 4.7.4 step 7.
pub fn writeback_verdict(
    record: Option<&Writeback>,
    now: Duration,
    live: Option<&str>,
    live_counter: Option<u64>,
) -> WritebackVerdict {
    let Some(r) = record else {
        return WritebackVerdict::NoRecord;
    };
    let age = now.saturating_sub(r.at);
    if age > WRITEBACK_WINDOW {
        return WritebackVerdict::Expired(age.as_secs_f64());
    }
    let Some(text) = live else {
        return WritebackVerdict::Overwritten;
    };
    if sha256(text) != r.hash {
        return WritebackVerdict::Overwritten;
    }
    if let (Some(a), Some(b)) = (r.counter, live_counter)
        && a != b
    {
        return WritebackVerdict::Overwritten;
    }
    WritebackVerdict::Allow
}

/// One registry entry: the native handle and what was seen at list time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowEntry {
    /// Native handle.
    pub handle: u64,
    /// Fingerprint at list time.
    pub fingerprint: Fingerprint,
    /// Bounds at list time.
    pub bounds: [i64; 4],
    /// Monitor at list time.
    pub monitor: i64,
}

/// The window-id registry of one session runtime.
#[derive(Debug, Default)]
pub struct WindowRegistry {
    entries: HashMap<String, WindowEntry>,
}

impl WindowRegistry {
    /// Mints `"win_" + UUIDv4`.
    pub fn mint() -> String {
        format!("win_{}", uuid::Uuid::new_v4())
    }

    /// Replaces the registry wholesale (a successful listing).
    pub fn replace(&mut self, entries: HashMap<String, WindowEntry>) {
        self.entries = entries;
    }

    /// Forgets everything (every HELLO).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Looks an id up.
    pub fn get(&self, id: &str) -> Option<&WindowEntry> {
        self.entries.get(id)
    }

    /// Drops one id.
    pub fn remove(&mut self, id: &str) {
        self.entries.remove(id);
    }
}

/// The state of one data-session runtime (1.4).
#[derive(Debug, Default)]
pub struct SessionState {
    /// Window ids; wiped at every HELLO.
    pub windows: Mutex<WindowRegistry>,
    /// The clipboard writeback record; survives HELLO.
    pub writeback: Mutex<Option<Writeback>>,
}

impl SessionState {
    /// What a new HELLO of this runtime resets.
    pub fn on_hello(&self) {
        if let Ok(mut w) = self.windows.lock() {
            w.clear();
        }
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

/// One format on the Windows clipboard, as the concealment rule needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WinClipFormat {
    /// The format id.
    pub id: u32,
    /// The registered name, for registered formats.
    pub name: Option<String>,
    /// The first four bytes of its data as a little-endian DWORD, when it holds at least
    /// four (read only for the `Can*` formats).
    pub dword: Option<u32>,
}

/// The concealment marker of COMPUTER_USE_HW.md 4.7.3 on Windows for the formats in
/// clipboard order, or `None`: a private format (`0x0200`-`0x02FF`, `CF_PRIVATE`),
/// `ExcludeClipboardContentFromMonitorProcessing` (any data), or
/// `CanIncludeInClipboardHistory` / `CanUploadToCloudClipboard` holding 0 (the documented
/// formats password managers set). The first marker in clipboard order wins. A `Can*`
/// format whose data cannot be read counts as a marker (fail closed).
pub fn windows_clipboard_marker(formats: &[WinClipFormat]) -> Option<String> {
    formats.iter().find_map(|f| {
        if (0x0200..=0x02FF).contains(&f.id) {
            return Some("CF_PRIVATE".to_owned());
        }
        let name = f.name.as_deref()?;
        if name.eq_ignore_ascii_case("ExcludeClipboardContentFromMonitorProcessing") {
            return Some(name.to_owned());
        }
        let gated = name.eq_ignore_ascii_case("CanIncludeInClipboardHistory")
            || name.eq_ignore_ascii_case("CanUploadToCloudClipboard");
        (gated && f.dword.is_none_or(|v| v == 0)).then(|| name.to_owned())
    })
}
