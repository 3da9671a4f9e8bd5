//! Every message type of PROTOCOL.md 7.1 plus the PROPOSED hardware messages, and the
//! table that ties wire names, payload types, directions, capabilities and expected
//! responses together.

pub mod control;
pub mod cu;
pub mod exec;
pub mod files;
pub mod handshake;
pub mod hardware;
pub mod llm;
pub mod recording;

use serde::Deserialize;
use serde::Deserializer;

use crate::ErrorCode;
use crate::ErrorPayload;
use crate::values::Capability;
use control::*;
use cu::*;
use exec::*;
use files::*;
use handshake::*;
use hardware::*;
use llm::*;
use recording::*;

/// A payload that decoded but breaks a rule of the specification, with the wire code
/// the daemon answers with (section 3.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The code to answer with.
    pub code: ErrorCode,
    /// What is wrong.
    pub reason: &'static str,
}

impl Invalid {
    /// A violation answered with `code`.
    pub fn new(code: ErrorCode, reason: &'static str) -> Self {
        Invalid { code, reason }
    }
}

/// Cross-field rules checked once at decode time, after the field types.
pub trait Validate {
    /// Checks the payload's cross-field rules.
    fn validate(&self) -> Result<(), Invalid> {
        Ok(())
    }
}

macro_rules! no_cross_field_rules {
    ($($t:ty),* $(,)?) => { $(impl Validate for $t {})* };
}

no_cross_field_rules!(
    Empty,
    Hello,
    HelloAck,
    SessionRevoked,
    Status,
    Ack,
    ErrorPayload,
    DirectoryListResponse,
    AttachSession,
    SessionAttached,
    ActivateSession,
    SessionActivated,
    RestoreSession,
    SessionRestored,
    DetachSession,
    ExecuteCommand,
    CommandResult,
    FileRead,
    FileContents,
    FileWrite,
    FileStat,
    FileStatResponse,
    FileList,
    FileListResponse,
    FileDelete,
    FileMove,
    ScreenshotRequest,
    ScreenshotResponse,
    InputAction,
    CursorPositionResponse,
    DisplayInfoResponse,
    WindowListRequest,
    WindowListResponse,
    WindowFocus,
    AppListRequest,
    AppListResponse,
    AppLaunch,
    ClipboardRead,
    ClipboardReadResponse,
    ClipboardWrite,
    PermissionsCheckRequest,
    PermissionsCheckResponse,
    LocalLlmCompletion,
    LocalLlmCompletionChunk,
    LocalLlmCompletionResponse,
    RequestRecordingConsent,
    RecordingConsentResult,
    StartRecording,
    RecordingRef,
    RecordingSummary,
    RecordingData,
    ApplyRecordingReview,
    RecordingReviewApplied,
    RecordingStep,
    HardwareListResponse,
    SerialOpened,
    SerialWrite,
    SerialData,
    SerialClose,
    GpioRead,
);

/// Who sends a message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The platform sends it (requests, `HELLO_ACK`, `SESSION_REVOKED`).
    PlatformToShim,
    /// The daemon sends it (responses, `HELLO`, `STATUS`, `RECORDING_STEP`).
    ShimToPlatform,
    /// Either side (`ERROR`).
    Both,
}

/// Where a message type is specified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// PROTOCOL.md 7.1.
    Core,
    /// COMPUTER_USE_HW.md 9.2, PROPOSED: never sent in 1.1.
    ProposedHardware,
}

macro_rules! message_table {
    ($($variant:ident($payload:ty) = $wire:literal, $dir:ident, $family:ident;)*) => {
        /// A message type name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MessageType {
            $(#[doc = concat!("`", $wire, "`")] $variant,)*
        }

        impl MessageType {
            /// Every message type, in table order.
            pub const ALL: &'static [MessageType] = &[$(MessageType::$variant,)*];

            /// The exact wire name.
            pub fn as_str(self) -> &'static str {
                match self { $(MessageType::$variant => $wire,)* }
            }

            /// Looks up a wire name (exact upper-case spelling).
            pub fn from_wire(name: &str) -> Option<MessageType> {
                match name { $($wire => Some(MessageType::$variant),)* _ => None }
            }

            /// Who sends it.
            pub fn direction(self) -> Direction {
                match self { $(MessageType::$variant => Direction::$dir,)* }
            }

            /// Where it is specified.
            pub fn family(self) -> Family {
                match self { $(MessageType::$variant => Family::$family,)* }
            }
        }

        /// A decoded message: its type and typed payload.
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(any(test, feature = "arbitrary"), derive(proptest_derive::Arbitrary))]
        pub enum Message {
            $(#[doc = concat!("`", $wire, "`")] $variant($payload),)*
        }

        impl Message {
            /// The message's type.
            pub fn message_type(&self) -> MessageType {
                match self { $(Message::$variant(_) => MessageType::$variant,)* }
            }

            /// Decodes the payload object of a frame of type `ty`.
            pub(crate) fn decode_payload(
                ty: MessageType,
                payload: &str,
            ) -> Result<Message, PayloadError> {
                match ty {
                    $(MessageType::$variant => {
                        let p: $payload = serde_json::from_str(payload)
                            .map_err(PayloadError::Serde)?;
                        p.validate().map_err(PayloadError::Invalid)?;
                        Ok(Message::$variant(p))
                    })*
                }
            }

            /// Deserialises and validates the payload of a frame of type `ty` in the same
            /// pass as the envelope (the decoder's fast path).
            pub(crate) fn deserialize_payload<'de, D: Deserializer<'de>>(
                ty: MessageType,
                d: D,
            ) -> Result<Message, D::Error> {
                match ty {
                    $(MessageType::$variant => {
                        let p = <$payload as Deserialize>::deserialize(d)?;
                        p.validate().map_err(|inv| serde::de::Error::custom(inv.reason))?;
                        Ok(Message::$variant(p))
                    })*
                }
            }

            /// The schema of the payload of a frame of type `ty` (a `$ref` into the
            /// generator's definitions).
            #[cfg(feature = "schema")]
            pub(crate) fn payload_schema(
                ty: MessageType,
                generator: &mut schemars::SchemaGenerator,
            ) -> schemars::Schema {
                match ty { $(MessageType::$variant => generator.subschema_for::<$payload>(),)* }
            }

            /// Serialises the payload object.
            pub(crate) fn serialize_payload<S: serde::Serializer>(
                &self,
                s: S,
            ) -> Result<S::Ok, S::Error> {
                match self { $(Message::$variant(p) => serde::Serialize::serialize(p, s),)* }
            }
        }
    };
}

/// Why a payload failed to decode.
#[derive(Debug)]
pub(crate) enum PayloadError {
    Serde(serde_json::Error),
    Invalid(Invalid),
}

message_table! {
    // Handshake and lifecycle (sections 5, 7.2, 7.8, 7.9).
    Hello(Hello) = "HELLO", ShimToPlatform, Core;
    HelloAck(HelloAck) = "HELLO_ACK", PlatformToShim, Core;
    Ping(Empty) = "PING", PlatformToShim, Core;
    Pong(Empty) = "PONG", ShimToPlatform, Core;
    SessionRevoked(SessionRevoked) = "SESSION_REVOKED", PlatformToShim, Core;
    Status(Status) = "STATUS", ShimToPlatform, Core;
    Ack(Ack) = "ACK", ShimToPlatform, Core;
    Error(ErrorPayload) = "ERROR", Both, Core;
    // Control plane (section 9).
    DirectoryListRequest(DirectoryListRequest) = "DIRECTORY_LIST_REQUEST", PlatformToShim, Core;
    DirectoryListResponse(DirectoryListResponse) = "DIRECTORY_LIST_RESPONSE", ShimToPlatform, Core;
    AttachSession(AttachSession) = "ATTACH_SESSION", PlatformToShim, Core;
    SessionAttached(SessionAttached) = "SESSION_ATTACHED", ShimToPlatform, Core;
    ActivateSession(ActivateSession) = "ACTIVATE_SESSION", PlatformToShim, Core;
    SessionActivated(SessionActivated) = "SESSION_ACTIVATED", ShimToPlatform, Core;
    RestoreSession(RestoreSession) = "RESTORE_SESSION", PlatformToShim, Core;
    SessionRestored(SessionRestored) = "SESSION_RESTORED", ShimToPlatform, Core;
    DetachSession(DetachSession) = "DETACH_SESSION", PlatformToShim, Core;
    // Shell (7.3).
    ExecuteCommand(ExecuteCommand) = "EXECUTE_COMMAND", PlatformToShim, Core;
    CommandResult(CommandResult) = "COMMAND_RESULT", ShimToPlatform, Core;
    // Files (7.4).
    FileRead(FileRead) = "FILE_READ", PlatformToShim, Core;
    FileContents(FileContents) = "FILE_CONTENTS", ShimToPlatform, Core;
    FileWrite(FileWrite) = "FILE_WRITE", PlatformToShim, Core;
    FileStat(FileStat) = "FILE_STAT", PlatformToShim, Core;
    FileStatResponse(FileStatResponse) = "FILE_STAT_RESPONSE", ShimToPlatform, Core;
    FileList(FileList) = "FILE_LIST", PlatformToShim, Core;
    FileListResponse(FileListResponse) = "FILE_LIST_RESPONSE", ShimToPlatform, Core;
    FileDelete(FileDelete) = "FILE_DELETE", PlatformToShim, Core;
    FileMove(FileMove) = "FILE_MOVE", PlatformToShim, Core;
    // Computer use (7.5).
    ScreenshotRequest(ScreenshotRequest) = "SCREENSHOT_REQUEST", PlatformToShim, Core;
    ScreenshotResponse(ScreenshotResponse) = "SCREENSHOT_RESPONSE", ShimToPlatform, Core;
    InputAction(InputAction) = "INPUT_ACTION", PlatformToShim, Core;
    CursorPositionRequest(Empty) = "CURSOR_POSITION_REQUEST", PlatformToShim, Core;
    CursorPositionResponse(CursorPositionResponse) = "CURSOR_POSITION_RESPONSE", ShimToPlatform, Core;
    DisplayInfoRequest(Empty) = "DISPLAY_INFO_REQUEST", PlatformToShim, Core;
    DisplayInfoResponse(DisplayInfoResponse) = "DISPLAY_INFO_RESPONSE", ShimToPlatform, Core;
    WindowListRequest(WindowListRequest) = "WINDOW_LIST_REQUEST", PlatformToShim, Core;
    WindowListResponse(WindowListResponse) = "WINDOW_LIST_RESPONSE", ShimToPlatform, Core;
    WindowFocus(WindowFocus) = "WINDOW_FOCUS", PlatformToShim, Core;
    AppListRequest(AppListRequest) = "APP_LIST_REQUEST", PlatformToShim, Core;
    AppListResponse(AppListResponse) = "APP_LIST_RESPONSE", ShimToPlatform, Core;
    AppLaunch(AppLaunch) = "APP_LAUNCH", PlatformToShim, Core;
    ClipboardRead(ClipboardRead) = "CLIPBOARD_READ", PlatformToShim, Core;
    ClipboardReadResponse(ClipboardReadResponse) = "CLIPBOARD_READ_RESPONSE", ShimToPlatform, Core;
    ClipboardWrite(ClipboardWrite) = "CLIPBOARD_WRITE", PlatformToShim, Core;
    PermissionsCheckRequest(PermissionsCheckRequest) = "PERMISSIONS_CHECK_REQUEST", PlatformToShim, Core;
    PermissionsCheckResponse(PermissionsCheckResponse) = "PERMISSIONS_CHECK_RESPONSE", ShimToPlatform, Core;
    // Local LLM (7.6).
    LocalLlmCompletion(LocalLlmCompletion) = "LOCAL_LLM_COMPLETION", PlatformToShim, Core;
    LocalLlmCompletionChunk(LocalLlmCompletionChunk) = "LOCAL_LLM_COMPLETION_CHUNK", ShimToPlatform, Core;
    LocalLlmCompletionResponse(LocalLlmCompletionResponse) = "LOCAL_LLM_COMPLETION_RESPONSE", ShimToPlatform, Core;
    // Recording (7.7), reserved and refused.
    RequestRecordingConsent(RequestRecordingConsent) = "REQUEST_RECORDING_CONSENT", PlatformToShim, Core;
    RecordingConsentResult(RecordingConsentResult) = "RECORDING_CONSENT_RESULT", ShimToPlatform, Core;
    StartRecording(StartRecording) = "START_RECORDING", PlatformToShim, Core;
    RecordingStarted(RecordingRef) = "RECORDING_STARTED", ShimToPlatform, Core;
    StopRecording(RecordingRef) = "STOP_RECORDING", PlatformToShim, Core;
    RecordingSummary(RecordingSummary) = "RECORDING_SUMMARY", ShimToPlatform, Core;
    RecordingFetch(RecordingRef) = "RECORDING_FETCH", PlatformToShim, Core;
    RecordingData(RecordingData) = "RECORDING_DATA", ShimToPlatform, Core;
    ApplyRecordingReview(ApplyRecordingReview) = "APPLY_RECORDING_REVIEW", PlatformToShim, Core;
    RecordingReviewApplied(RecordingReviewApplied) = "RECORDING_REVIEW_APPLIED", ShimToPlatform, Core;
    RecordingStep(RecordingStep) = "RECORDING_STEP", ShimToPlatform, Core;
    // PROPOSED hardware (COMPUTER_USE_HW.md 9.2).
    HardwareListRequest(Empty) = "HARDWARE_LIST_REQUEST", PlatformToShim, ProposedHardware;
    HardwareListResponse(HardwareListResponse) = "HARDWARE_LIST_RESPONSE", ShimToPlatform, ProposedHardware;
    SerialOpen(SerialOpen) = "SERIAL_OPEN", PlatformToShim, ProposedHardware;
    SerialOpened(SerialOpened) = "SERIAL_OPENED", ShimToPlatform, ProposedHardware;
    SerialWrite(SerialWrite) = "SERIAL_WRITE", PlatformToShim, ProposedHardware;
    SerialRead(SerialRead) = "SERIAL_READ", PlatformToShim, ProposedHardware;
    SerialData(SerialData) = "SERIAL_DATA", ShimToPlatform, ProposedHardware;
    SerialClose(SerialClose) = "SERIAL_CLOSE", PlatformToShim, ProposedHardware;
    GpioRead(GpioRead) = "GPIO_READ", PlatformToShim, ProposedHardware;
    GpioValue(GpioLevel) = "GPIO_VALUE", ShimToPlatform, ProposedHardware;
    GpioWrite(GpioLevel) = "GPIO_WRITE", PlatformToShim, ProposedHardware;
}

impl MessageType {
    /// The capability a request needs (section 6.2); `None` for `PING`,
    /// `SESSION_REVOKED` and every non-request type.
    pub fn required_capability(self) -> Option<Capability> {
        use MessageType as T;
        Some(match self {
            T::ExecuteCommand => Capability::Shell,
            T::FileRead
            | T::FileWrite
            | T::FileStat
            | T::FileList
            | T::FileDelete
            | T::FileMove => Capability::Files,
            T::ScreenshotRequest
            | T::InputAction
            | T::CursorPositionRequest
            | T::DisplayInfoRequest
            | T::WindowListRequest
            | T::WindowFocus
            | T::AppListRequest
            | T::AppLaunch
            | T::ClipboardRead
            | T::ClipboardWrite
            | T::PermissionsCheckRequest => Capability::ComputerUse,
            T::LocalLlmCompletion => Capability::LocalLlm,
            T::RequestRecordingConsent
            | T::StartRecording
            | T::StopRecording
            | T::ApplyRecordingReview
            | T::RecordingFetch => Capability::Recording,
            T::DirectoryListRequest
            | T::AttachSession
            | T::ActivateSession
            | T::RestoreSession
            | T::DetachSession => Capability::DirectoryBrowse,
            T::SerialOpen | T::SerialWrite | T::SerialRead | T::SerialClose => {
                Capability::HardwareSerial
            }
            T::GpioRead | T::GpioWrite => Capability::HardwareGpio,
            // Needs any granted hardware_* (P2); the dispatcher checks the set.
            T::HardwareListRequest => Capability::HardwareUsb,
            _ => return None,
        })
    }

    /// The five control-plane requests, served only on the control connection.
    pub fn is_control_request(self) -> bool {
        matches!(
            self,
            MessageType::DirectoryListRequest
                | MessageType::AttachSession
                | MessageType::ActivateSession
                | MessageType::RestoreSession
                | MessageType::DetachSession
        )
    }

    /// The success responses the platform accepts for a request (section 7.1 and
    /// P9); `ERROR` is always acceptable too. Empty for non-request types.
    pub fn expected_responses(self) -> &'static [MessageType] {
        use MessageType as T;
        match self {
            T::Ping => &[T::Pong],
            T::DirectoryListRequest => &[T::DirectoryListResponse],
            T::AttachSession => &[T::SessionAttached],
            T::ActivateSession => &[T::SessionActivated],
            T::RestoreSession => &[T::SessionRestored],
            T::DetachSession => &[T::Ack],
            T::ExecuteCommand => &[T::CommandResult],
            T::FileRead => &[T::FileContents],
            T::FileWrite | T::FileDelete | T::FileMove => &[T::Ack],
            T::FileStat => &[T::FileStatResponse],
            T::FileList => &[T::FileListResponse],
            T::ScreenshotRequest => &[T::ScreenshotResponse],
            T::InputAction | T::WindowFocus | T::AppLaunch | T::ClipboardWrite => &[T::Ack],
            T::CursorPositionRequest => &[T::CursorPositionResponse],
            T::DisplayInfoRequest => &[T::DisplayInfoResponse],
            T::WindowListRequest => &[T::WindowListResponse],
            T::AppListRequest => &[T::AppListResponse],
            T::ClipboardRead => &[T::ClipboardReadResponse],
            T::PermissionsCheckRequest => &[T::PermissionsCheckResponse],
            T::LocalLlmCompletion => &[T::LocalLlmCompletionChunk, T::LocalLlmCompletionResponse],
            T::RequestRecordingConsent => &[T::RecordingConsentResult],
            T::StartRecording => &[T::RecordingStarted],
            T::StopRecording => &[T::RecordingSummary],
            T::RecordingFetch => &[T::RecordingData],
            T::ApplyRecordingReview => &[T::RecordingReviewApplied],
            T::HardwareListRequest => &[T::HardwareListResponse],
            T::SerialOpen => &[T::SerialOpened],
            T::SerialWrite | T::SerialClose | T::GpioWrite => &[T::Ack],
            T::SerialRead => &[T::SerialData],
            T::GpioRead => &[T::GpioValue],
            _ => &[],
        }
    }

    /// Whether the platform relay accepts this type from the daemon after the handshake
    /// (section 3.7). Hardware types are not on the relay's list.
    pub fn relay_accepts_from_shim(self) -> bool {
        self.direction() != Direction::PlatformToShim
            && self != MessageType::Hello
            && self.family() == Family::Core
    }

    /// Whether a response of this type ends its request (`LOCAL_LLM_COMPLETION_CHUNK`
    /// does not).
    pub fn is_terminal_response(self) -> bool {
        self != MessageType::LocalLlmCompletionChunk
    }

    /// Whether the daemon sends it unsolicited with a fresh id.
    pub fn is_unsolicited_from_shim(self) -> bool {
        matches!(self, MessageType::Status | MessageType::RecordingStep)
    }

    /// Whether the platform may retry it once with a new id (section 12).
    pub fn platform_retries(self) -> bool {
        use MessageType as T;
        matches!(
            self,
            T::FileRead
                | T::FileStat
                | T::FileList
                | T::CursorPositionRequest
                | T::DisplayInfoRequest
                | T::WindowListRequest
                | T::AppListRequest
                | T::ClipboardRead
                | T::PermissionsCheckRequest
                | T::ScreenshotRequest
                | T::RecordingFetch
        )
    }
}

impl std::fmt::Display for MessageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(crate) fn default_true() -> bool {
    true
}

/// `null` decodes as the type's default (e.g. `"capabilities": null` ⇒ `[]`).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn lenient_ints<'de, D: Deserializer<'de>, const N: usize>(
    d: D,
) -> Result<Option<[i64; N]>, D::Error> {
    #[derive(Deserialize)]
    struct Wrapped(#[serde(deserialize_with = "crate::values::lenient_int::de")] i64);
    let Some(items) = Option::<Vec<Wrapped>>::deserialize(d)? else {
        return Ok(None);
    };
    let values: Vec<i64> = items.into_iter().map(|w| w.0).collect();
    <[i64; N]>::try_from(values)
        .map(Some)
        .map_err(|v| serde::de::Error::invalid_length(v.len(), &"a fixed-size array"))
}

pub(crate) fn lenient_point_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<[i64; 2]>, D::Error> {
    lenient_ints::<D, 2>(d)
}

pub(crate) fn lenient_rect_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<[i64; 4]>, D::Error> {
    lenient_ints::<D, 4>(d)
}

pub(crate) fn lenient_points_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<[i64; 2]>>, D::Error> {
    #[derive(Deserialize)]
    struct P(#[serde(deserialize_with = "lenient_point")] [i64; 2]);
    fn lenient_point<'de, D: Deserializer<'de>>(d: D) -> Result<[i64; 2], D::Error> {
        lenient_ints::<D, 2>(d)?.ok_or_else(|| serde::de::Error::custom("expected [x, y]"))
    }
    Ok(Option::<Vec<P>>::deserialize(d)?.map(|v| v.into_iter().map(|p| p.0).collect()))
}
