//! `HELLO` construction (PROTOCOL.md 5.1) and `HELLO_ACK` processing (5.3) as pure
//! functions: the connection code only sends, receives and closes.

use shim_protocol::Capability;
use shim_protocol::close;
use shim_protocol::close::codes;
use shim_protocol::messages::handshake::Arch;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::handshake::HelloAck;
use shim_protocol::messages::handshake::Platform;
use shim_protocol::version;
use shim_protocol::version::NegotiationError;
use shim_protocol::version::ProtocolVersion;
use shim_protocol::version::SHIM_VERSION;
use shim_protocol::version::SHIM_VERSION_STR;

/// The machine's identity as sent in every `HELLO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `machine_id` (5.1.1).
    pub machine_id: String,
    /// `display_name`.
    pub display_name: String,
    /// Normalised OS.
    pub platform: Platform,
    /// Normalised architecture.
    pub arch: Arch,
}

/// What this connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The machine control connection.
    Control,
    /// A data connection for `session_id`, jailed to `allowed_root`.
    Data {
        /// The session.
        session_id: String,
        /// The canonical root, byte for byte as advertised.
        allowed_root: String,
    },
}

/// Capabilities enabled locally and available on this host (6.1). Computer use, local
/// LLM and hardware are not available in this build, so they are never advertised.
pub fn data_capabilities(enable_shell: bool) -> Vec<Capability> {
    let mut caps = Vec::new();
    if enable_shell {
        caps.push(Capability::Shell);
    }
    caps.push(Capability::Files);
    caps
}

/// Builds the `HELLO` payload of 5.1.
pub fn build_hello(identity: &Identity, role: &Role, enable_shell: bool) -> Hello {
    let mut capabilities = data_capabilities(enable_shell);
    let allowed_root = match role {
        Role::Control => {
            capabilities.push(Capability::DirectoryBrowse);
            None
        }
        Role::Data { allowed_root, .. } => Some(allowed_root.clone()),
    };
    Hello {
        shim_version: env!("CARGO_PKG_VERSION").to_owned(),
        machine_id: identity.machine_id.clone(),
        display_name: identity.display_name.clone(),
        platform: identity.platform,
        arch: identity.arch,
        screen_resolution: None,
        capabilities,
        allowed_root,
        local_llm_models: Vec::new(),
        hardware_devices: Vec::new(),
        computer_use_features: Vec::new(),
        computer_use_features_coarse: Vec::new(),
        recording_channels: Vec::new(),
        recording_routes: Vec::new(),
        protocol_version: SHIM_VERSION_STR.to_owned(),
    }
}

/// Local ceilings (10.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLimits {
    /// `max_concurrent`.
    pub max_concurrent: u32,
    /// `command_timeout_seconds`.
    pub command_timeout_seconds: u64,
    /// `max_file_size_bytes`.
    pub max_file_size_bytes: u64,
}

/// The outcome of a successful handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The negotiated version.
    pub version: ProtocolVersion,
    /// The granted capabilities, as received.
    pub granted: Vec<Capability>,
    /// `connection_id` (control connections).
    pub connection_id: Option<String>,
    /// Effective limits: min(local, platform).
    pub limits: LocalLimits,
}

impl Negotiated {
    /// Whether `cap` was granted.
    pub fn is_granted(&self, cap: &Capability) -> bool {
        self.granted.contains(cap)
    }

    /// The granted set as sorted, deduplicated strings (for `details`).
    pub fn granted_sorted(&self) -> Vec<String> {
        let mut v: Vec<String> = self.granted.iter().map(|c| c.as_str().to_owned()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Why a handshake fails terminally: the close the daemon sends (2.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeRefusal {
    /// Close code.
    pub code: u16,
    /// Close reason (≤ 123 bytes).
    pub reason: String,
}

impl HandshakeRefusal {
    fn new(code: u16, reason: impl Into<String>) -> Self {
        HandshakeRefusal {
            code,
            reason: reason.into(),
        }
    }
}

const CONTROL_REQUIREMENT: &str = "Machine control requires protocol 1.1 and directory_browse";

/// Processes a `HELLO_ACK` (5.3 steps 2-8). Every error is terminal for the runtime.
pub fn process_ack(
    hello_id: &str,
    ack_id: &str,
    hello: &Hello,
    ack: &HelloAck,
    role: &Role,
    local: LocalLimits,
) -> Result<Negotiated, HandshakeRefusal> {
    // Step 2.
    if ack_id != hello_id {
        return Err(HandshakeRefusal::new(
            codes::BAD_HELLO,
            "HELLO_ACK correlation mismatch",
        ));
    }
    // Step 3.
    let ack_session = ack.session_id.as_ref().map(|s| s.as_str());
    match role {
        Role::Data { session_id, .. } => {
            if ack_session != Some(session_id.as_str()) {
                return Err(HandshakeRefusal::new(
                    codes::FORBIDDEN,
                    "HELLO_ACK session mismatch",
                ));
            }
        }
        Role::Control => {
            if ack_session.is_some_and(|s| !s.is_empty()) {
                return Err(HandshakeRefusal::new(
                    codes::FORBIDDEN,
                    "HELLO_ACK control mismatch",
                ));
            }
        }
    }
    // Step 5.
    if ack
        .granted_capabilities
        .iter()
        .any(|c| !hello.capabilities.contains(c))
    {
        return Err(HandshakeRefusal::new(
            codes::BAD_HELLO,
            "HELLO_ACK granted unadvertised capability",
        ));
    }
    // Step 6.
    let negotiated =
        match version::negotiate(SHIM_VERSION, ack.protocol_version.as_deref(), SHIM_VERSION) {
            Ok(v) => v,
            Err(NegotiationError::Malformed(_)) => {
                return Err(HandshakeRefusal::new(
                    codes::PROTOCOL_VERSION_MISMATCH,
                    "Invalid platform protocol version",
                ));
            }
            Err(NegotiationError::MajorMismatch { theirs, .. }) => {
                return Err(HandshakeRefusal::new(
                    codes::PROTOCOL_VERSION_MISMATCH,
                    close::version_mismatch_reason(
                        SHIM_VERSION_STR,
                        &theirs.to_string(),
                        "upgrade autogpt-shim to a version that speaks the platform's protocol",
                    ),
                ));
            }
        };
    // Step 7.
    if *role == Role::Control
        && (negotiated.minor < 1
            || !ack
                .granted_capabilities
                .contains(&Capability::DirectoryBrowse)
            || ack.connection_id.as_deref().is_none_or(str::is_empty))
    {
        return Err(HandshakeRefusal::new(
            codes::PROTOCOL_VERSION_MISMATCH,
            CONTROL_REQUIREMENT,
        ));
    }
    // Step 8.
    let limits = LocalLimits {
        max_concurrent: local.max_concurrent.min(ack.max_concurrent).max(1),
        command_timeout_seconds: local
            .command_timeout_seconds
            .min(ack.command_timeout_seconds)
            .max(1),
        max_file_size_bytes: local
            .max_file_size_bytes
            .min(ack.max_file_size_bytes)
            .max(1),
    };
    Ok(Negotiated {
        version: negotiated,
        granted: ack.granted_capabilities.clone(),
        connection_id: ack.connection_id.clone(),
        limits,
    })
}

#[cfg(test)]
#[path = "handshake_tests.rs"]
mod tests;
