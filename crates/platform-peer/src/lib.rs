//! A real WebSocket peer that plays the AutoGPT platform's side of the local executor
//! protocol on 127.0.0.1, for integration tests and the demo.
//!
//! It serves the control route (`/ws/local-executor`) and the per-session data route
//! (`/ws/local-executor/{session_id}`), checks the bearer token on upgrade (HTTP 401/403),
//! validates `HELLO` exactly as strictly as `PROTOCOL.md` 3.7 and 5.2 (closing with 4400,
//! 4403, 4408 or 4426 like the platform), answers `HELLO_ACK` with configurable limits and
//! grants, issues correlated requests with timeouts, and records every protocol violation
//! the platform would punish (unknown id, second terminal response, wrong response type,
//! a type the relay does not accept) so tests can fail on them.
//!
//! On the same port it serves the platform's OAuth endpoints (`AUDIT_AUTH_CLI.md` 3.2):
//! `/auth/authorize`, `/api/oauth/token` and `/api/oauth/revoke` (see [`oauth`]).
//!
//! [`ollama`] is a scriptable Ollama stand-in for the local-model route; [`relay`] a TCP
//! relay whose open connections can be black-holed (a half-open link).

mod connection;
mod counted;
pub mod oauth;
pub mod ollama;
pub mod relay;
mod server;

pub use connection::Connection;
pub use connection::Response;
pub use server::AckConfig;
pub use server::Peer;
pub use server::PeerConfig;
pub use server::Rejection;

/// Errors of the peer's test-facing API.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The daemon did not answer in time.
    #[error("no response to {0} within the timeout")]
    Timeout(String),
    /// The connection ended.
    #[error("connection closed")]
    Closed,
    /// A frame could not be encoded.
    #[error("encode: {0}")]
    Encode(#[from] shim_protocol::EncodeError),
    /// Socket setup failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Seconds since the Unix epoch, as the envelope's `ts`.
pub(crate) fn now_ts() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
