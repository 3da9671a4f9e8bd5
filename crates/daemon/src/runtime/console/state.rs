//! The console's secrets: one-time login tokens (a URL that `autogpt-shim console` prints)
//! and the session cookies they are exchanged for. Only SHA-256 digests are kept, so a
//! lookup takes the same time whatever the guess was, and a memory dump shows no token.

use std::collections::HashMap;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use crate::runtime::console::words;
use crate::runtime::console::words::Line;
use crate::runtime::machine::Machine;

/// How long a login link works if nobody opens it.
pub(crate) const TOKEN_LIFETIME: Duration = Duration::from_secs(120);

/// How many unused login links are kept (older ones stop working).
const MAX_TOKENS: usize = 16;

/// How many browser sessions are kept (the oldest is logged out).
const MAX_SESSIONS: usize = 32;

/// The cookie's name.
pub(crate) const COOKIE: &str = "autogpt_shim_console";

/// What a login token turned into.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Exchange {
    /// A new session: set this cookie value.
    Session(String),
    /// This token was valid once and has been used (or expired).
    Used,
    /// No such token.
    Unknown,
}

/// The login tokens and sessions of one console.
#[derive(Default)]
pub(crate) struct Logins {
    secrets: Mutex<Secrets>,
}

#[derive(Default)]
struct Secrets {
    /// digest → issued
    tokens: HashMap<[u8; 32], Instant>,
    /// Digests of tokens that were exchanged or expired, so that a reuse gets a clear
    /// answer.
    spent: HashSet<[u8; 32]>,
    /// digest → created
    sessions: HashMap<[u8; 32], Instant>,
}

/// The console server's shared state.
pub(crate) struct ConsoleState {
    pub(crate) machine: Arc<Machine>,
    /// The address the server is bound to (127.0.0.1 and a random port).
    pub(crate) addr: SocketAddr,
    /// Login tokens and sessions.
    pub(crate) logins: Logins,
    /// The audit log in words, with the file size it was read at.
    words: Mutex<(u64, Vec<Line>)>,
}

impl std::fmt::Debug for ConsoleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleState")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn digest(secret: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// 32 random bytes as hex.
fn random_secret() -> Option<String> {
    let mut b = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).ok()?;
    Some(hex::encode(b))
}

impl Logins {
    fn lock(&self) -> std::sync::MutexGuard<'_, Secrets> {
        self.secrets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new one-time login token; `None` if the system has no randomness.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn token(&self) -> Option<String> {
        let token = random_secret()?;
        let mut s = self.lock();
        let now = Instant::now();
        let expired: Vec<[u8; 32]> = s
            .tokens
            .iter()
            .filter(|(_, t)| now.duration_since(**t) >= TOKEN_LIFETIME)
            .map(|(d, _)| *d)
            .collect();
        for d in expired {
            s.tokens.remove(&d);
            s.spent.insert(d);
        }
        while s.tokens.len() >= MAX_TOKENS {
            let oldest = s.tokens.iter().min_by_key(|(_, t)| **t).map(|(d, _)| *d);
            match oldest {
                Some(d) => {
                    s.tokens.remove(&d);
                    s.spent.insert(d);
                }
                None => break,
            }
        }
        if s.spent.len() > 4096 {
            // Only a clearer refusal is lost: a forgotten spent token is just unknown.
            s.spent.clear();
        }
        s.tokens.insert(digest(&token), now);
        Some(token)
    }

    /// Exchanges a login token for a session (once).
    pub(crate) fn exchange(&self, token: &str) -> Exchange {
        let d = digest(token);
        let mut s = self.lock();
        match s.tokens.remove(&d) {
            Some(issued) => {
                s.spent.insert(d);
                if issued.elapsed() >= TOKEN_LIFETIME {
                    return Exchange::Used;
                }
                let Some(session) = random_secret() else {
                    return Exchange::Unknown;
                };
                while s.sessions.len() >= MAX_SESSIONS {
                    let oldest = s.sessions.iter().min_by_key(|(_, t)| **t).map(|(d, _)| *d);
                    match oldest {
                        Some(o) => {
                            s.sessions.remove(&o);
                        }
                        None => break,
                    }
                }
                s.sessions.insert(digest(&session), Instant::now());
                Exchange::Session(session)
            }
            None if s.spent.contains(&d) => Exchange::Used,
            None => Exchange::Unknown,
        }
    }

    /// Whether `cookie` is a live session.
    pub(crate) fn is_session(&self, cookie: &str) -> bool {
        self.lock().sessions.contains_key(&digest(cookie))
    }
}

impl ConsoleState {
    /// The state of a server bound to `addr`.
    pub(crate) fn new(machine: Arc<Machine>, addr: SocketAddr) -> ConsoleState {
        ConsoleState {
            machine,
            addr,
            logins: Logins::default(),
            words: Mutex::new((u64::MAX, Vec::new())),
        }
    }

    /// `http://127.0.0.1:PORT`: the only Host and Origin the console accepts.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A new one-time login URL; `None` if the system has no randomness.
    // Asked for over the control socket, which is Unix-only in this build.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn login_url(&self) -> Option<String> {
        let token = self.logins.token()?;
        Some(format!("{}/?token={token}", self.origin()))
    }

    /// Exchanges a login token for a session (once).
    pub(crate) fn exchange(&self, token: &str) -> Exchange {
        self.logins.exchange(token)
    }

    /// The last audit records in words (read again only when the file changed).
    pub(crate) fn audit_words(&self) -> Vec<Line> {
        let path = self.machine.audit.log().path();
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut w = self.words.lock().unwrap_or_else(PoisonError::into_inner);
        if w.0 != size {
            *w = (size, words::tail(path));
        }
        w.1.clone()
    }

    /// Whether `cookie` is a live session.
    pub(crate) fn is_session(&self, cookie: &str) -> bool {
        self.logins.is_session(cookie)
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
