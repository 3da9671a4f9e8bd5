//! WebSocket close codes (sections 2.7 and 2.8) and close reasons.

use crate::limits::MAX_CLOSE_REASON_BYTES;

/// What a close code received from the platform means for the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseAction {
    /// Normal end: reconnect after the base delay.
    CleanReconnect,
    /// Transient failure: reconnect with backoff.
    BackoffReconnect,
    /// Fatal: audit `SESSION_REVOKED` with the label and never reconnect.
    Fatal(FatalClose),
}

/// The four fatal close codes and their audit labels (section 2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatalClose {
    /// 4426.
    ProtocolVersionMismatch,
    /// 4427: superseded by a newer connection.
    SessionTakenOver,
    /// 4428: token or session revoked.
    SessionRevoked,
    /// 4429: platform shutdown.
    PlatformShutdown,
}

impl FatalClose {
    /// The close code.
    pub fn code(self) -> u16 {
        match self {
            FatalClose::ProtocolVersionMismatch => codes::PROTOCOL_VERSION_MISMATCH,
            FatalClose::SessionTakenOver => codes::SESSION_TAKEN_OVER,
            FatalClose::SessionRevoked => codes::SESSION_REVOKED,
            FatalClose::PlatformShutdown => codes::PLATFORM_SHUTDOWN,
        }
    }

    /// The upper-case label of section 2.7.
    pub fn label(self) -> &'static str {
        match self {
            FatalClose::ProtocolVersionMismatch => "PROTOCOL_VERSION_MISMATCH",
            FatalClose::SessionTakenOver => "SESSION_TAKEN_OVER",
            FatalClose::SessionRevoked => "SESSION_REVOKED",
            FatalClose::PlatformShutdown => "PLATFORM_SHUTDOWN",
        }
    }

    /// The label lower-cased, as written to the audit record's `reason`.
    pub fn audit_reason(self) -> &'static str {
        match self {
            FatalClose::ProtocolVersionMismatch => "protocol_version_mismatch",
            FatalClose::SessionTakenOver => "session_taken_over",
            FatalClose::SessionRevoked => "session_revoked",
            FatalClose::PlatformShutdown => "platform_shutdown",
        }
    }
}

/// Close codes used by the protocol.
pub mod codes {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// Going away.
    pub const GOING_AWAY: u16 = 1001;
    /// Abnormal closure (no close frame).
    pub const ABNORMAL: u16 = 1006;
    /// Message too big.
    pub const TOO_BIG: u16 = 1009;
    /// Server error.
    pub const SERVER_ERROR: u16 = 1011;
    /// Bad HELLO (either side).
    pub const BAD_HELLO: u16 = 4400;
    /// Missing, invalid or expired token.
    pub const UNAUTHORIZED: u16 = 4401;
    /// Session denied or binding mismatch.
    pub const FORBIDDEN: u16 = 4403;
    /// HELLO not received within 10 s.
    pub const HELLO_TIMEOUT: u16 = 4408;
    /// Protocol major mismatch or control requirements unmet.
    pub const PROTOCOL_VERSION_MISMATCH: u16 = 4426;
    /// Superseded by a newer connection.
    pub const SESSION_TAKEN_OVER: u16 = 4427;
    /// Token or session revoked.
    pub const SESSION_REVOKED: u16 = 4428;
    /// Platform shutdown.
    pub const PLATFORM_SHUTDOWN: u16 = 4429;
    /// Platform handshake or auth backend error.
    pub const AUTH_UNAVAILABLE: u16 = 4500;
}

/// Classifies a close code received from the platform (section 2.7).
pub fn classify(code: u16) -> CloseAction {
    match code {
        codes::NORMAL | codes::GOING_AWAY => CloseAction::CleanReconnect,
        codes::PROTOCOL_VERSION_MISMATCH => CloseAction::Fatal(FatalClose::ProtocolVersionMismatch),
        codes::SESSION_TAKEN_OVER => CloseAction::Fatal(FatalClose::SessionTakenOver),
        codes::SESSION_REVOKED => CloseAction::Fatal(FatalClose::SessionRevoked),
        codes::PLATFORM_SHUTDOWN => CloseAction::Fatal(FatalClose::PlatformShutdown),
        _ => CloseAction::BackoffReconnect,
    }
}

/// Cuts a close reason to at most 123 bytes on a character boundary.
pub fn truncate_reason(reason: &str) -> &str {
    if reason.len() <= MAX_CLOSE_REASON_BYTES {
        return reason;
    }
    let mut end = MAX_CLOSE_REASON_BYTES;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    &reason[..end]
}

/// The JSON close reason for a major version mismatch (section 2.7), shortening or
/// dropping the hint so the reason fits in 123 bytes.
pub fn version_mismatch_reason(shim_max: &str, platform_max: &str, hint: &str) -> String {
    let build = |hint: Option<&str>| {
        let mut obj = serde_json::Map::new();
        obj.insert("error".into(), "PROTOCOL_VERSION_MISMATCH".into());
        obj.insert("shim_max".into(), shim_max.into());
        obj.insert("platform_max".into(), platform_max.into());
        if let Some(h) = hint {
            obj.insert("hint".into(), h.into());
        }
        serde_json::Value::Object(obj).to_string()
    };
    let mut chars: Vec<char> = hint.chars().collect();
    loop {
        let h: String = chars.iter().collect();
        let reason = build(Some(&h));
        if reason.len() <= MAX_CLOSE_REASON_BYTES {
            return reason;
        }
        if chars.is_empty() {
            break;
        }
        // Remove enough characters in one step to converge quickly.
        let excess = reason.len() - MAX_CLOSE_REASON_BYTES;
        let keep = chars.len().saturating_sub(excess.max(1));
        chars.truncate(keep);
    }
    // Even an empty hint does not fit (huge version strings): drop fields from the end.
    let reason = build(None);
    if reason.len() <= MAX_CLOSE_REASON_BYTES {
        reason
    } else {
        r#"{"error":"PROTOCOL_VERSION_MISMATCH"}"#.to_owned()
    }
}

#[cfg(test)]
#[path = "close_tests.rs"]
mod tests;
