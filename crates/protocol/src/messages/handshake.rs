//! Handshake and lifecycle messages: `HELLO`, `HELLO_ACK`, `PING`/`PONG`,
//! `SESSION_REVOKED`, `STATUS`, `ACK` (sections 5, 7.2, 7.8, 7.9).

use serde::Deserialize;
use serde::Serialize;

use super::hardware::HardwareDevice;
use crate::limits::DEFAULT_COMMAND_TIMEOUT_SECONDS;
use crate::limits::DEFAULT_MAX_CONCURRENT;
use crate::limits::DEFAULT_MAX_FILE_SIZE_BYTES;
use crate::values::Capability;
use crate::values::SessionId;
use crate::wire_enum::wire_enum;

/// An empty payload (`{}`): `PING`, `PONG`, and the field-less requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Empty {}

wire_enum! {
    /// `HELLO.platform` (section 5.1.2).
    closed Platform {
        /// macOS.
        Darwin => "darwin",
        /// Linux (not WSL).
        Linux => "linux",
        /// Windows, any architecture.
        Windows => "windows",
        /// Linux under WSL2.
        Wsl2 => "wsl2",
    }
}

wire_enum! {
    /// `HELLO.arch` (section 5.1.2).
    closed Arch {
        /// x86_64 / amd64.
        X86_64 => "x86_64",
        /// arm64 / aarch64.
        Arm64 => "arm64",
    }
}

/// `HELLO` (daemon → platform, first frame; section 5.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Hello {
    /// Daemon semver.
    pub shim_version: String,
    /// Stable machine id (section 5.1.1).
    pub machine_id: String,
    /// User-facing label; defaults to the host name.
    pub display_name: String,
    /// Normalised OS.
    pub platform: Platform,
    /// Normalised architecture.
    pub arch: Arch,
    /// Primary screen size when computer use is advertised, else null.
    #[serde(default)]
    pub screen_resolution: Option<[u32; 2]>,
    /// Advertised capabilities.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<Capability>>")
    )]
    pub capabilities: Vec<Capability>,
    /// Null on the control connection; the canonical root on a data connection.
    #[serde(default)]
    pub allowed_root: Option<String>,
    /// Local model names from the probe.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub local_llm_models: Vec<String>,
    /// Always `[]` in 1.1.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<HardwareDevice>>")
    )]
    pub hardware_devices: Vec<HardwareDevice>,
    /// Fine-grained computer-use features.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub computer_use_features: Vec<String>,
    /// Coarse computer-use buckets.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub computer_use_features_coarse: Vec<String>,
    /// Always `[]`.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub recording_channels: Vec<String>,
    /// Always `[]`.
    #[serde(default, deserialize_with = "super::null_as_default")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::schema::NullOr<Vec<String>>")
    )]
    pub recording_routes: Vec<String>,
    /// `"1.1"`; the platform treats an absent value as `"1.0"`.
    #[serde(default = "default_hello_version")]
    pub protocol_version: String,
}

fn default_hello_version() -> String {
    "1.0".to_owned()
}

/// `HELLO_ACK` (platform → daemon; section 5.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct HelloAck {
    /// Null on control connections, the URL's session id on data connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Opaque id of this control connection generation; absent on data connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    /// Subset of the advertised capabilities.
    pub granted_capabilities: Vec<Capability>,
    /// The negotiated version; absent means `"1.1"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Platform ceiling for file sizes; must be > 0.
    #[serde(
        default = "default_max_file",
        deserialize_with = "crate::values::positive"
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub max_file_size_bytes: u64,
    /// Platform ceiling for command timeouts; must be > 0.
    #[serde(
        default = "default_timeout",
        deserialize_with = "crate::values::positive"
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub command_timeout_seconds: u64,
    /// Per-connection request cap; must be > 0.
    #[serde(
        default = "default_concurrent",
        deserialize_with = "crate::values::positive"
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub max_concurrent: u32,
}

fn default_max_file() -> u64 {
    DEFAULT_MAX_FILE_SIZE_BYTES
}
fn default_timeout() -> u64 {
    DEFAULT_COMMAND_TIMEOUT_SECONDS
}
fn default_concurrent() -> u32 {
    DEFAULT_MAX_CONCURRENT
}

wire_enum! {
    /// `SESSION_REVOKED.reason`. Unknown reasons must be accepted and treated alike.
    open RevokeReason {
        /// A newer connection took over this scope (followed by close 4427).
        AnotherShimConnected => "another_shim_connected",
        /// The user revoked access (followed by close 4428).
        UserRevoked => "user_revoked",
        /// The platform is shutting down.
        PlatformShutdown => "platform_shutdown",
    }
}

/// `SESSION_REVOKED` (platform → daemon, unsolicited; section 7.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct SessionRevoked {
    /// Why.
    pub reason: RevokeReason,
    /// Informational; the platform currently never sends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_shim_machine_id: Option<String>,
}

/// `STATUS` (daemon → platform, unsolicited; section 7.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Status {
    /// Requests holding the connection semaphore.
    pub in_flight: u32,
    /// Negotiated per-connection cap.
    pub max_concurrent: u32,
    /// Admitted requests waiting for the semaphore.
    #[serde(default)]
    pub queue_depth: u32,
    /// Size of the current audit log file, 0 if unreadable.
    pub audit_log_bytes: u64,
    /// Seconds since this connection's session started.
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::f64_value()")
    )]
    pub uptime_seconds: f64,
}

/// `ACK` (section 7.9): always `{"ok": true}` from the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct Ack {
    /// Always true from the daemon.
    pub ok: bool,
}

impl Ack {
    /// `{"ok": true}`.
    pub const OK: Ack = Ack { ok: true };
}
