//! The per-session mutexes of the control plane (PROTOCOL.md 9.1): created on demand,
//! removed when unused (13.18), so that `ATTACH/ACTIVATE/RESTORE/DETACH` and the idle
//! reaper serialise per `session_id` without the map growing with every id ever seen.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use tokio::sync::Mutex as AsyncMutex;
use tokio::sync::OwnedMutexGuard;

type Map = HashMap<String, Arc<AsyncMutex<()>>>;

/// One async mutex per session id that is locked or waited for, and no entry otherwise.
///
/// Every holder or waiter owns a ticket (an `Arc` of the entry's mutex taken under the map
/// lock); the entry is removed, under the map lock, by the ticket that finds itself the
/// only user left. So an entry exists exactly while someone holds or waits for it, also
/// when a waiting future is cancelled or a handler returns early.
#[derive(Debug, Default)]
pub(crate) struct SessionLocks {
    map: Arc<Mutex<Map>>,
}

/// Held while a session's control operation runs; unlocks and, if it was the last user,
/// removes the session's entry when dropped.
#[derive(Debug)]
pub(crate) struct SessionGuard {
    // Field order is drop order: unlock first, then let the ticket clean up the entry.
    _guard: OwnedMutexGuard<()>,
    _ticket: Ticket,
}

/// A claim on one entry, taken before waiting; dropping it removes the entry if nobody
/// else holds or waits for it.
#[derive(Debug)]
struct Ticket {
    map: Arc<Mutex<Map>>,
    sid: String,
    mutex: Arc<AsyncMutex<()>>,
}

/// The map stays consistent across a panic (single insert/remove calls), so a poisoned
/// lock is still usable.
fn lock_map(map: &Mutex<Map>) -> MutexGuard<'_, Map> {
    map.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Ticket {
    /// Waits for the mutex. The returned future borrows the ticket, so it (and the `Arc`
    /// it holds while waiting) is always dropped before the ticket.
    async fn acquire(&self) -> OwnedMutexGuard<()> {
        self.mutex.clone().lock_owned().await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut map = lock_map(&self.map);
        // Two references left: the map's and this ticket's, so nobody holds or waits.
        if map
            .get(&self.sid)
            .is_some_and(|m| Arc::ptr_eq(m, &self.mutex) && Arc::strong_count(m) == 2)
        {
            map.remove(&self.sid);
        }
    }
}

impl SessionLocks {
    /// Waits until `sid`'s mutex is free and holds it until the guard is dropped.
    pub(crate) async fn lock(&self, sid: &str) -> SessionGuard {
        let ticket = {
            let mut map = lock_map(&self.map);
            let mutex = map.entry(sid.to_owned()).or_default().clone();
            Ticket {
                map: self.map.clone(),
                sid: sid.to_owned(),
                mutex,
            }
        };
        let guard = ticket.acquire().await;
        SessionGuard {
            _guard: guard,
            _ticket: ticket,
        }
    }

    /// Sessions currently locked or waited for.
    pub(crate) fn len(&self) -> usize {
        lock_map(&self.map).len()
    }
}

#[cfg(test)]
#[path = "session_locks_tests.rs"]
mod tests;
