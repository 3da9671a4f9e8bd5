//! Approvals: a command the policy answers with `prompt` waits here until the local user
//! approves or denies it (the control socket, `autogpt-shim approve ID` / `deny ID`), or
//! until `approval_timeout_seconds` pass, which denies it. A denied or timed-out command is
//! never executed later: its waiter is gone once it has an answer.
// Answers arrive through the local control socket (a Unix socket or a Windows named
// pipe); on other systems nothing answers, so every `prompt` command is denied at its
// timeout.
#![cfg_attr(not(any(unix, windows)), allow(dead_code))]

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::SystemTime;
use tokio::time::Instant;

use serde::Deserialize;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio::sync::oneshot;

use crate::policy::Subject;

/// How many decided ids are remembered, so that a late answer is told "already decided"
/// rather than "unknown".
const REMEMBERED: usize = 256;

/// A command waiting for the local user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The approval id (`autogpt-shim approve ID`).
    pub id: u64,
    /// The chat's session.
    pub session_id: String,
    /// The command string, or the argv joined by spaces.
    pub command: String,
    /// Why it needs a yes (the policy's reason).
    pub reason: String,
    /// The deciding rule, as written in the policy file, if a rule decided.
    pub rule: Option<String>,
    /// When it started waiting, in seconds since the Unix epoch.
    pub since_unix: u64,
    /// Seconds left before it is denied.
    pub seconds_left: u64,
}

/// The answer to a waiting command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run it.
    Approved,
    /// Do not run it.
    Denied,
    /// Nobody answered in time: denied.
    TimedOut,
    /// Run it, and a rule in the policy file allows it from now on.
    AlwaysAllowed,
}

impl Answer {
    /// The spelling in audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Approved => "approved",
            Answer::Denied => "denied",
            Answer::TimedOut => "timed_out",
            Answer::AlwaysAllowed => "always_allowed",
        }
    }
}

/// What [`Approvals::ask`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) id: u64,
    pub(crate) answer: Answer,
    /// Who answered: `cli`, `console`, ... or `timeout`.
    pub(crate) by: String,
    pub(crate) waited: Duration,
}

/// Why a decision was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum DecideError {
    /// No command with this id ever waited (or it was forgotten long ago).
    #[error("no pending approval has this id")]
    Unknown,
    /// It was already approved, denied or timed out.
    #[error("this approval was already decided")]
    AlreadyDecided,
}

/// What happens in the broker, for whoever shows it (desktop notifications).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A command started waiting.
    Waiting(PendingApproval),
    /// It has its answer (or timed out, or its request went away).
    Decided(u64),
}

struct Waiting {
    info: PendingApproval,
    subject: Subject,
    started: Instant,
    tx: oneshot::Sender<(Answer, String)>,
}

#[derive(Default)]
struct State {
    next: u64,
    waiting: BTreeMap<u64, Waiting>,
    decided: VecDeque<u64>,
}

/// The machine-wide approval broker.
pub(crate) struct Approvals {
    timeout: Duration,
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Removes a waiter whose request went away (its connection dropped) before an answer.
struct Forget<'a> {
    approvals: &'a Approvals,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.approvals.finish(self.id);
    }
}

impl Approvals {
    /// A broker whose waiters are denied after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Approvals {
        Approvals {
            timeout,
            state: Mutex::new(State {
                next: 1,
                ..State::default()
            }),
            events: broadcast::channel(64).0,
        }
    }

    /// How long a command waits, in milliseconds (for a notification's expiry).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn timeout_ms(&self) -> i32 {
        i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX)
    }

    /// Every waiter and every answer from now on (desktop notifications: Linux only yet).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the local user's answer (or the timeout) on one command.
    pub(crate) async fn ask(
        &self,
        session_id: &str,
        subject: Subject,
        reason: &str,
        rule: Option<String>,
    ) -> Outcome {
        let (tx, rx) = oneshot::channel();
        let started = Instant::now();
        let since_unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let id = {
            let mut s = self.lock();
            let id = s.next;
            s.next += 1;
            let info = PendingApproval {
                id,
                session_id: session_id.to_owned(),
                command: subject.shown(),
                reason: reason.to_owned(),
                rule,
                since_unix,
                seconds_left: self.timeout.as_secs(),
            };
            let _ = self.events.send(Event::Waiting(info.clone()));
            s.waiting.insert(
                id,
                Waiting {
                    info,
                    subject,
                    started,
                    tx,
                },
            );
            id
        };
        tracing::warn!(
            approval = id,
            "a command waits for your approval: `autogpt-shim approve {id}` or `autogpt-shim deny {id}`"
        );
        let _forget = Forget {
            approvals: self,
            id,
        };
        let (answer, by) = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(a)) => a,
            // The sender is only dropped by `finish`, which runs after an answer or here.
            Ok(Err(_)) | Err(_) => (Answer::TimedOut, "timeout".to_owned()),
        };
        Outcome {
            id,
            answer,
            by,
            waited: started.elapsed(),
        }
    }

    /// Takes a waiter out and remembers its id as decided.
    fn finish(&self, id: u64) -> Option<Waiting> {
        let mut s = self.lock();
        let w = s.waiting.remove(&id);
        if w.is_some() {
            s.decided.push_back(id);
            while s.decided.len() > REMEMBERED {
                s.decided.pop_front();
            }
            let _ = self.events.send(Event::Decided(id));
        }
        w
    }

    /// Answers waiter `id`; `by` names who answered (`cli`, `console`).
    pub(crate) fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        self.answer(
            id,
            if approve {
                Answer::Approved
            } else {
                Answer::Denied
            },
            by,
        )
    }

    /// The command waiter `id` waits with (for "always allow").
    pub(crate) fn subject(&self, id: u64) -> Result<Subject, DecideError> {
        let s = self.lock();
        match s.waiting.get(&id) {
            Some(w) => Ok(w.subject.clone()),
            None if s.decided.contains(&id) => Err(DecideError::AlreadyDecided),
            None => Err(DecideError::Unknown),
        }
    }

    /// Gives waiter `id` its answer; `by` names who answered.
    pub(crate) fn answer(&self, id: u64, answer: Answer, by: &str) -> Result<(), DecideError> {
        match self.finish(id) {
            Some(w) => {
                // The waiter may have timed out between our lookup and now: then it is
                // gone and this send fails; it was answered as timed out.
                w.tx.send((answer, by.to_owned()))
                    .map_err(|_| DecideError::AlreadyDecided)
            }
            None if self.lock().decided.contains(&id) => Err(DecideError::AlreadyDecided),
            None => Err(DecideError::Unknown),
        }
    }

    /// The commands waiting now, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        let s = self.lock();
        s.waiting
            .values()
            .map(|w| {
                let mut info = w.info.clone();
                info.seconds_left = self.timeout.saturating_sub(w.started.elapsed()).as_secs();
                info
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
