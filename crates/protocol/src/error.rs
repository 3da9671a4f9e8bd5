//! `ERROR` codes (PROTOCOL.md section 8, COMPUTER_USE_HW.md 9.2 P6) and the `ERROR` payload.

use serde::Deserialize;
use serde::Deserializer;
use serde::Serialize;
use serde::Serializer;
use serde_json::Map;
use serde_json::Value;

macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $wire:literal,)*) => {
        /// A wire error code, serialised as its exact upper-case string.
        ///
        /// Receivers must accept codes they do not know (section 7.9): those decode as
        /// [`ErrorCode::Unknown`] and re-encode unchanged. The daemon never emits
        /// `Unknown` itself.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
            /// A code this build does not know, kept verbatim.
            Unknown(String),
        }

        impl ErrorCode {
            /// Every code this build knows, in specification order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The exact wire spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $wire,)*
                    ErrorCode::Unknown(s) => s.as_str(),
                }
            }

            /// Parses a wire spelling; unknown spellings become [`ErrorCode::Unknown`].
            pub fn from_wire(s: &str) -> ErrorCode {
                match s {
                    $($wire => ErrorCode::$variant,)*
                    other => ErrorCode::Unknown(other.to_owned()),
                }
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for ErrorCode {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "ErrorCode".into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                crate::schema::open_enum(
                    &["A wire error code (section 8). Receivers accept codes they do not know."],
                    &[$($wire),*],
                )
            }
        }
    };
}

error_codes! {
    /// Path or cwd resolves outside the root, or the root is missing.
    PathOutsideAllowedRoot => "PATH_OUTSIDE_ALLOWED_ROOT",
    /// Windows reserved device name in a component.
    PathReservedName => "PATH_RESERVED_NAME",
    /// Illegal characters, alternate data stream, over-long or unresolvable path.
    PathInvalidChars => "PATH_INVALID_CHARS",
    /// The path does not exist.
    PathNotFound => "PATH_NOT_FOUND",
    /// Non-recursive delete of a non-empty directory.
    PathNotEmpty => "PATH_NOT_EMPTY",
    /// Move destination exists without `overwrite`.
    PathExists => "PATH_EXISTS",
    /// Reserved; never emitted (timeouts are reported in `COMMAND_RESULT`).
    CommandTimeout => "COMMAND_TIMEOUT",
    /// Requested shell or `argv[0]` not found.
    ShellNotAvailable => "SHELL_NOT_AVAILABLE",
    /// Reserved; the platform closes with 4400 instead.
    UnsupportedArch => "UNSUPPORTED_ARCH",
    /// Capability not granted, or disabled locally.
    CapabilityNotGranted => "CAPABILITY_NOT_GRANTED",
    /// Reserved.
    AuthFailed => "AUTH_FAILED",
    /// Admission cap, command rate/concurrency or screenshot rate limit reached.
    ShimOverloaded => "SHIM_OVERLOADED",
    /// Unexpected failure.
    InternalError => "INTERNAL_ERROR",
    /// Over a size budget, or an oversized outbound frame.
    FileTooLarge => "FILE_TOO_LARGE",
    /// A required local component is absent.
    DependencyMissing => "DEPENDENCY_MISSING",
    /// Browse id, directory reference or cursor unknown, expired or malformed.
    DirectoryReferenceInvalid => "DIRECTORY_REFERENCE_INVALID",
    /// Directory vanished, became a link, or cannot be scanned.
    DirectoryUnavailable => "DIRECTORY_UNAVAILABLE",
    /// Root grant malformed, forged, for another session or machine, or stale.
    RootGrantInvalid => "ROOT_GRANT_INVALID",
    /// `ACTIVATE_SESSION` without a binding.
    SessionNotAttached => "SESSION_NOT_ATTACHED",
    /// `ATTACH_SESSION` while the session's child runtime is live.
    SessionAlreadyActive => "SESSION_ALREADY_ACTIVE",
    /// Revision does not match the binding.
    SessionRevisionMismatch => "SESSION_REVISION_MISMATCH",
    /// Window id unknown or stale.
    WindowStale => "WINDOW_STALE",
    /// OS permission missing or revoked.
    PermissionPending => "PERMISSION_PENDING",
    /// Operation not available on this connection or host.
    FeatureNotSupported => "FEATURE_NOT_SUPPORTED",
    /// Clipboard read refused by policy.
    ClipboardConcealed => "CLIPBOARD_CONCEALED",
    /// Coordinate outside every display.
    InputOutOfBounds => "INPUT_OUT_OF_BOUNDS",
    /// Unknown local model.
    ModelNotAvailable => "MODEL_NOT_AVAILABLE",
    /// Another local completion is in flight.
    LocalLlmBusy => "LOCAL_LLM_BUSY",
    /// Local LLM backend failure.
    LocalLlmFailed => "LOCAL_LLM_FAILED",
    /// Recording family (unreachable in this version).
    RecordingNotFound => "RECORDING_NOT_FOUND",
    /// Recording family (unreachable in this version).
    RecordingChannelUnavailable => "RECORDING_CHANNEL_UNAVAILABLE",
    /// Recording family (unreachable in this version).
    RecordingAlreadyActive => "RECORDING_ALREADY_ACTIVE",
    /// Recording family (unreachable in this version).
    RecordingReviewInvalid => "RECORDING_REVIEW_INVALID",
    /// Recording family (unreachable in this version).
    ConsentRequired => "CONSENT_REQUIRED",
    /// Recording family (unreachable in this version).
    InterpretationUnavailable => "INTERPRETATION_UNAVAILABLE",
    /// PROPOSED hardware: device not enumerated.
    HardwareDeviceNotFound => "HARDWARE_DEVICE_NOT_FOUND",
    /// PROPOSED hardware: not in the local allowlist.
    HardwareNotAllowed => "HARDWARE_NOT_ALLOWED",
    /// PROPOSED hardware: device held by someone else.
    HardwareDeviceBusy => "HARDWARE_DEVICE_BUSY",
    /// PROPOSED hardware: handle unknown or expired.
    HardwareHandleStale => "HARDWARE_HANDLE_STALE",
    /// PROPOSED hardware: I/O failure.
    HardwareIoFailed => "HARDWARE_IO_FAILED",
    /// [Rust extension] The local user has taken over the desktop (the web console's "Take
    /// over", `autogpt-shim takeover`): input, focus, launches and clipboard writes wait for
    /// the hand-back. A code the platform does not know reaches the model as
    /// `shim error CODE: MESSAGE`, so the message alone tells it to wait and look again;
    /// every known code carries advice that would mislead it (overloaded, permission).
    DesktopInUse => "DESKTOP_IN_USE",
}

/// Codes the platform synthesises itself; the daemon must never emit them (section 8).
pub const PLATFORM_ONLY_CODES: &[&str] = &[
    "WRITE_UNCONFIRMED",
    "OP_UNCONFIRMED",
    "CONNECTION_LOST",
    "PROTOCOL_ERROR",
    "MACHINE_NOT_CONNECTED",
    "MACHINE_CONNECTION_STALE",
    "MACHINE_REQUEST_TIMEOUT",
    "MACHINE_REQUEST_FAILED",
    "INVALID_MACHINE_RESPONSE",
    "COMPUTER_USE_CONNECTION_CHANGED",
    "CONSENT_DENIED",
    "CONSENT_SCOPE_MISMATCH",
];

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(ErrorCode::from_wire(&s))
    }
}

/// The `ERROR` payload (section 7.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
pub struct ErrorPayload {
    /// The error code.
    pub code: ErrorCode,
    /// Short human-readable text; the model sees it, so it names no host detail beyond
    /// the requested path.
    pub message: String,
    /// Always false from the daemon.
    #[serde(default)]
    pub fatal: bool,
    /// Code-specific details, or null.
    #[serde(default)]
    #[cfg_attr(
        any(test, feature = "arbitrary"),
        proptest(strategy = "crate::arb::json_object_opt()")
    )]
    pub details: Option<Map<String, Value>>,
}

impl ErrorPayload {
    /// An error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorPayload {
            code,
            message: message.into(),
            fatal: false,
            details: None,
        }
    }

    /// An error whose `details` are the given typed detail object.
    pub fn with_details<D: ErrorDetails>(
        code: ErrorCode,
        message: impl Into<String>,
        details: &D,
    ) -> Self {
        ErrorPayload {
            code,
            message: message.into(),
            fatal: false,
            details: Some(details.to_map()),
        }
    }
}

/// A typed `details` object. Implemented by the detail shapes of section 8.
pub trait ErrorDetails: Serialize {
    /// Converts to the wire object. Detail structs always serialise to objects.
    fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }
}

/// `CAPABILITY_NOT_GRANTED` from the daemon's dispatch check (section 6.2 and the
/// spec README: `capability` is read by the platform).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CapabilityNotGrantedDetails {
    /// The capability the request needs.
    pub capability: String,
    /// Same as `capability`; the incumbent's field name.
    pub required_capability: String,
    /// The granted set, sorted.
    pub granted_capabilities: Vec<String>,
}
impl ErrorDetails for CapabilityNotGrantedDetails {}

/// `PATH_*` details: the requested path as received (spec README).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PathDetails {
    /// The path as the request carried it.
    pub path: String,
}
impl ErrorDetails for PathDetails {}

/// `PATH_*` details of `FILE_MOVE`: both paths as received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MovePathDetails {
    /// Source as received.
    pub src: String,
    /// Destination as received.
    pub dst: String,
}
impl ErrorDetails for MovePathDetails {}

/// `SHIM_OVERLOADED` at admission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OverloadedDetails {
    /// The negotiated per-connection cap.
    pub max_concurrent: u32,
}
impl ErrorDetails for OverloadedDetails {}

/// `SESSION_REVISION_MISMATCH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RevisionMismatchDetails {
    /// The binding's current revision.
    pub current_revision: u64,
}
impl ErrorDetails for RevisionMismatchDetails {}

/// `FEATURE_NOT_SUPPORTED` from computer use (and hardware).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FeatureNotSupportedDetails {
    /// The feature name.
    pub feature: String,
    /// Why, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
impl ErrorDetails for FeatureNotSupportedDetails {}

/// `WINDOW_STALE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WindowStaleDetails {
    /// The stale id.
    pub window_id: String,
    /// Always "re-list windows".
    pub hint: String,
}
impl ErrorDetails for WindowStaleDetails {}

/// `PERMISSION_PENDING`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PermissionPendingDetails {
    /// The missing permission, e.g. `accessibility`.
    pub permission: String,
    /// The HELLO platform string.
    pub platform: String,
    /// How to grant it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}
impl ErrorDetails for PermissionPendingDetails {}

/// `CLIPBOARD_CONCEALED`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClipboardConcealedDetails {
    /// `writeback_only`, `writeback_overwritten` or `concealed_type`.
    pub reason: String,
    /// The concealment marker seen, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// Age of the daemon's last write-back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_age_seconds: Option<f64>,
}
impl ErrorDetails for ClipboardConcealedDetails {}

/// One display in `INPUT_OUT_OF_BOUNDS` details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DisplayBounds {
    /// Display index.
    pub index: u32,
    /// Top-left in the desktop coordinate space.
    pub origin: [i64; 2],
    /// Width and height.
    pub size: [i64; 2],
}

/// `INPUT_OUT_OF_BOUNDS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputOutOfBoundsDetails {
    /// The offending point.
    pub requested_coordinate: [i64; 2],
    /// Every display's rectangle.
    pub displays: Vec<DisplayBounds>,
}
impl ErrorDetails for InputOutOfBoundsDetails {}

/// `MODEL_NOT_AVAILABLE` for an unknown model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelNotAvailableDetails {
    /// The requested model.
    pub requested_model: String,
    /// The probed model list.
    pub available_models: Vec<String>,
}
impl ErrorDetails for ModelNotAvailableDetails {}

/// `LOCAL_LLM_FAILED` and backend-404 `MODEL_NOT_AVAILABLE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BackendErrorDetails {
    /// The backend's error text.
    pub backend_error: String,
}
impl ErrorDetails for BackendErrorDetails {}

/// `DEPENDENCY_MISSING`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DependencyMissingDetails {
    /// The missing dependency.
    pub dep: String,
    /// Optional extra that provides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
    /// The operation that needed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
}
impl ErrorDetails for DependencyMissingDetails {}

/// `RECORDING_CHANNEL_UNAVAILABLE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecordingChannelDetails {
    /// Channels asked for.
    pub requested_channels: Vec<String>,
    /// Channels this host has.
    pub available_channels: Vec<String>,
}
impl ErrorDetails for RecordingChannelDetails {}

/// `RECORDING_ALREADY_ACTIVE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecordingActiveDetails {
    /// The active recording.
    pub recording_id: String,
}
impl ErrorDetails for RecordingActiveDetails {}

/// PROPOSED `HARDWARE_DEVICE_NOT_FOUND`, `HARDWARE_NOT_ALLOWED`, `HARDWARE_DEVICE_BUSY`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HardwareDeviceDetails {
    /// `serial`, `usb` or `gpio`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Serial port, when the device is a port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// GPIO chip, when the device is a chip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    /// GPIO line, for `HARDWARE_NOT_ALLOWED` on a write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}
impl ErrorDetails for HardwareDeviceDetails {}

/// PROPOSED `HARDWARE_HANDLE_STALE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HardwareHandleDetails {
    /// The stale handle.
    pub handle: String,
}
impl ErrorDetails for HardwareHandleDetails {}

/// PROPOSED `HARDWARE_IO_FAILED`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HardwareIoDetails {
    /// The OS error text.
    pub os_error: String,
}
impl ErrorDetails for HardwareIoDetails {}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
