//! Frames: the envelope of section 3, a decoder that never panics and an encoder whose
//! output the platform accepts.

use std::borrow::Cow;

use serde::Deserialize;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;

use crate::ErrorCode;
use crate::ErrorPayload;
use crate::limits::MAX_FRAME_BYTES;
use crate::limits::MAX_HELLO_BYTES;
use crate::limits::MAX_NESTING_DEPTH;
use crate::messages::Message;
use crate::messages::MessageType;
use crate::messages::PayloadError;
use crate::values::BROWSE_TOKEN_RULE;
use crate::values::ROOT_GRANT_RULE;
use crate::version::SHIM_VERSION_STR;

/// A decoded frame: envelope fields plus the typed message.
///
/// ```
/// use shim_protocol::Message;
/// use shim_protocol::MessageType;
///
/// let f = shim_protocol::frame::decode(r#"{"type":"PING","id":"p1","ts":1.5,"payload":{}}"#)?;
/// assert_eq!((f.id.as_str(), f.ts), ("p1", 1.5));
/// assert_eq!(f.message_type(), MessageType::Ping);
/// assert!(matches!(f.message, Message::Ping(_)));
/// # Ok::<(), shim_protocol::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Correlation id (non-empty).
    pub id: String,
    /// Sender wall clock, epoch seconds.
    pub ts: f64,
    /// Envelope version, when the sender put one (the platform never does).
    pub version: Option<String>,
    /// Free request slots after this frame (daemon → platform only); null is "no signal".
    pub pending_capacity: Option<i64>,
    /// Type and payload.
    pub message: Message,
}

impl Frame {
    /// The message type.
    pub fn message_type(&self) -> MessageType {
        self.message.message_type()
    }
}

/// Why a frame could not be decoded.
///
/// Only [`DecodeError::Malformed`] carries a usable id; every other variant must be
/// logged and dropped without a reply (section 3.6).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Over the 16 MiB frame limit.
    #[error("frame of {len} bytes exceeds the 16 MiB limit")]
    TooLarge {
        /// Frame length in bytes.
        len: usize,
    },
    /// A binary frame that is not UTF-8.
    #[error("frame is not valid UTF-8")]
    InvalidUtf8,
    /// Not JSON at all.
    #[error("frame is not JSON: {0}")]
    NotJson(String),
    /// Nested deeper than 128 levels.
    #[error("frame nests deeper than 128 levels")]
    TooDeep,
    /// JSON, but not an object.
    #[error("frame is not a JSON object")]
    NotAnObject,
    /// An object whose envelope cannot be read (e.g. a duplicate key).
    #[error("bad envelope: {0}")]
    BadEnvelope(String),
    /// No `type` field.
    #[error("frame has no type")]
    MissingType,
    /// `type` is not a string.
    #[error("frame type is not a string")]
    TypeNotString,
    /// `type` names no message of this protocol.
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    /// No `id` field.
    #[error("frame has no id")]
    MissingId,
    /// `id` is not a string.
    #[error("frame id is not a string")]
    IdNotString,
    /// `id` is the empty string.
    #[error("frame id is empty")]
    EmptyId,
    /// A known type with a usable id whose envelope or payload breaks the specification.
    /// The daemon answers `ERROR` with `code` and this id.
    #[error("malformed {message_type} frame: {reason}")]
    Malformed {
        /// The request's id.
        id: String,
        /// The request's type.
        message_type: MessageType,
        /// The code to answer with (section 3.6).
        code: ErrorCode,
        /// What was wrong.
        reason: String,
    },
}

impl DecodeError {
    /// The id and type an `ERROR` reply may use, when the frame had both.
    pub fn answerable(&self) -> Option<(&str, MessageType)> {
        match self {
            DecodeError::Malformed {
                id, message_type, ..
            } => Some((id.as_str(), *message_type)),
            _ => None,
        }
    }

    /// The `ERROR` payload answering a malformed frame with a usable id.
    pub fn error_payload(&self) -> Option<ErrorPayload> {
        match self {
            DecodeError::Malformed { code, reason, .. } => Some(ErrorPayload::new(
                code.clone(),
                format!("Invalid request: {reason}"),
            )),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pending_capacity: Option<&'a RawValue>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
}

fn json_error(e: &serde_json::Error) -> DecodeError {
    let text = e.to_string();
    if text.starts_with("recursion limit exceeded") {
        DecodeError::TooDeep
    } else {
        DecodeError::NotJson(text)
    }
}

/// Decodes a frame received as bytes (a binary frame is decoded as UTF-8 first).
pub fn decode_bytes(bytes: &[u8]) -> Result<Frame, DecodeError> {
    if bytes.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::TooLarge { len: bytes.len() });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8)?;
    decode(text)
}

/// Decodes one text frame. Never panics; time and memory are linear in the input, which
/// is capped at 16 MiB, and nesting is capped at 128 levels.
pub fn decode(text: &str) -> Result<Frame, DecodeError> {
    if text.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::TooLarge { len: text.len() });
    }
    // Fast path: one pass that deserialises the payload straight into its type when `type`
    // precedes `payload` (as both the platform and this crate write frames). serde_json
    // caps the nesting of every value it builds at 128 levels, but skips ignored values
    // (unknown fields) without a limit, so a frame in which anything was ignored goes
    // through the precise path, which scans the nesting first. Anything else the fast
    // path does not accept is classified precisely there too.
    let mut ignored = false;
    let mut de = serde_json::Deserializer::from_str(text);
    let fast = serde_ignored::deserialize(&mut de, |_| ignored = true)
        .and_then(|f: FastFrame| de.end().map(|()| f));
    if let Ok(frame) = fast
        && !ignored
    {
        return Ok(frame.0);
    }
    decode_precise(text)
}

/// The two-phase decoder: the envelope first (with the payload kept raw), then the
/// payload, so every failure is classified (answerable or not, and with which code).
pub(crate) fn decode_precise(text: &str) -> Result<Frame, DecodeError> {
    // serde_json limits recursion only where it builds values; raw and ignored values
    // are skipped without a limit, so the whole frame is checked once here.
    if nesting_exceeds(text.as_bytes(), MAX_NESTING_DEPTH) {
        return Err(DecodeError::TooDeep);
    }
    // serde_json would also read a JSON array as a struct; the envelope must be an object.
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => DecodeError::NotAnObject,
            Err(e) => json_error(&e),
        });
    }
    let raw: RawEnvelope<'_> = serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            DecodeError::BadEnvelope(e.to_string())
        } else {
            json_error(&e)
        }
    })?;

    let ty = raw.ty.ok_or(DecodeError::MissingType)?;
    let ty: Cow<'_, str> =
        serde_json::from_str(ty.get()).map_err(|_| DecodeError::TypeNotString)?;
    let message_type = MessageType::from_wire(&ty)
        .ok_or_else(|| DecodeError::UnknownType(ty.chars().take(64).collect()))?;

    let id = raw.id.ok_or(DecodeError::MissingId)?;
    let id: String = serde_json::from_str(id.get()).map_err(|_| DecodeError::IdNotString)?;
    if id.is_empty() {
        return Err(DecodeError::EmptyId);
    }

    let malformed = |code: ErrorCode, reason: String| DecodeError::Malformed {
        id: id.clone(),
        message_type,
        code,
        reason,
    };
    let internal = |reason: String| malformed(ErrorCode::InternalError, reason);

    let ts = match raw.ts {
        None => return Err(internal("missing ts".into())),
        Some(v) => {
            serde_json::from_str::<f64>(v.get()).map_err(|e| internal(format!("ts: {e}")))?
        }
    };
    let version = match raw.version {
        None => None,
        Some(v) => Some(
            serde_json::from_str::<String>(v.get())
                .map_err(|e| internal(format!("version: {e}")))?,
        ),
    };
    let pending_capacity = match raw.pending_capacity {
        None => None,
        Some(v) => Some(
            serde_json::from_str::<i64>(v.get())
                .map_err(|e| internal(format!("pending_capacity: {e}")))?,
        ),
    };
    let payload = raw.payload.map_or("{}", RawValue::get);
    if !payload.starts_with('{') {
        return Err(internal("payload must be an object".into()));
    }
    let message = Message::decode_payload(message_type, payload).map_err(|e| match e {
        PayloadError::Invalid(inv) => malformed(inv.code, inv.reason.to_owned()),
        PayloadError::Serde(e) => {
            let reason = e.to_string();
            if reason.starts_with("recursion limit exceeded") {
                return DecodeError::TooDeep;
            }
            malformed(payload_error_code(message_type, &reason), reason)
        }
    })?;
    Ok(Frame {
        id,
        ts,
        version,
        pending_capacity,
        message,
    })
}

/// A frame decoded in one pass; fails (and so defers to the precise path) on anything
/// unusual: `payload` before `type`, a duplicate key, a null or non-object payload, a
/// missing or empty id, or a payload that breaks its rules.
struct FastFrame(Frame);

impl<'de> Deserialize<'de> for FastFrame {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FastVisitor)
    }
}

struct FastVisitor;

impl<'de> serde::de::Visitor<'de> for FastVisitor {
    type Value = FastFrame;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a frame object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FastFrame, A::Error> {
        use serde::de::Error;
        let mut ty: Option<MessageType> = None;
        let mut id: Option<String> = None;
        let mut ts: Option<f64> = None;
        let mut version: Option<Option<String>> = None;
        let mut pending_capacity: Option<Option<i64>> = None;
        let mut message: Option<Message> = None;
        let dup = || A::Error::custom("duplicate or misplaced key");
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "type" if ty.is_none() && message.is_none() => {
                    let name = map.next_value::<Cow<'de, str>>()?;
                    ty = Some(
                        MessageType::from_wire(&name)
                            .ok_or_else(|| A::Error::custom("unknown type"))?,
                    );
                }
                "id" if id.is_none() => id = Some(map.next_value()?),
                "ts" if ts.is_none() => ts = Some(map.next_value()?),
                "version" if version.is_none() => version = Some(map.next_value()?),
                "pending_capacity" if pending_capacity.is_none() => {
                    pending_capacity = Some(map.next_value()?);
                }
                "payload" if message.is_none() => {
                    let t = ty.ok_or_else(dup)?;
                    message = Some(map.next_value_seed(PayloadSeed(t))?);
                }
                "type" | "id" | "ts" | "version" | "pending_capacity" | "payload" => {
                    return Err(dup());
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let ty = ty.ok_or_else(|| A::Error::custom("no type"))?;
        let id = id
            .filter(|i| !i.is_empty())
            .ok_or_else(|| A::Error::custom("no id"))?;
        let message = match message {
            Some(m) => m,
            None => Message::decode_payload(ty, "{}").map_err(|_| A::Error::custom("payload"))?,
        };
        Ok(FastFrame(Frame {
            id,
            ts: ts.ok_or_else(|| A::Error::custom("no ts"))?,
            version: version.flatten(),
            pending_capacity: pending_capacity.flatten(),
            message,
        }))
    }
}

/// Deserialises a payload of a known type; only a JSON object is accepted (serde would
/// otherwise read an array as a struct).
struct PayloadSeed(MessageType);

impl<'de> serde::de::DeserializeSeed<'de> for PayloadSeed {
    type Value = Message;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Message, D::Error> {
        Message::deserialize_payload(self.0, MapOnly(d))
    }
}

/// A deserializer that reads only JSON objects, whatever the visitor asks for.
struct MapOnly<D>(D);

impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Whether arrays and objects nest deeper than `max` levels. A frame with at most `max`
/// opening brackets cannot (one SIMD count); otherwise strings are skipped by searching
/// for quotes only and checking the parity of the backslashes before each, so escapes
/// such as `\n` cost nothing. Malformed input is left to the parser.
fn nesting_exceeds(bytes: &[u8], max: usize) -> bool {
    if memchr::memchr2_iter(b'[', b'{', bytes).count() <= max {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                // Find the closing quote: one preceded by an even number of backslashes.
                let mut from = i + 1;
                loop {
                    let Some(off) = bytes
                        .get(from..)
                        .and_then(|rest| memchr::memchr(b'"', rest))
                    else {
                        return false;
                    };
                    let q = from + off;
                    let backslashes = bytes
                        .get(i + 1..q)
                        .map_or(0, |s| s.iter().rev().take_while(|&&c| c == b'\\').count());
                    from = q + 1;
                    if backslashes % 2 == 0 {
                        break;
                    }
                }
                i = from;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// The code for a payload that failed its field rules (section 3.6): browse and attach
/// reference violations are `DIRECTORY_REFERENCE_INVALID`, a bad `root_grant` length is
/// `ROOT_GRANT_INVALID`, anything else `INTERNAL_ERROR`.
fn payload_error_code(ty: MessageType, reason: &str) -> ErrorCode {
    match ty {
        MessageType::DirectoryListRequest | MessageType::AttachSession
            if reason.contains(BROWSE_TOKEN_RULE) =>
        {
            ErrorCode::DirectoryReferenceInvalid
        }
        MessageType::RestoreSession if reason.contains(ROOT_GRANT_RULE) => {
            ErrorCode::RootGrantInvalid
        }
        _ => ErrorCode::InternalError,
    }
}

/// Why a frame could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// Over the 16 MiB frame limit.
    #[error("frame of {len} bytes exceeds the 16 MiB limit")]
    TooLarge {
        /// Serialised length.
        len: usize,
    },
    /// A `HELLO` over the platform's 64 KiB cap.
    #[error("HELLO of {len} bytes exceeds the platform's 64 KiB limit")]
    HelloTooLarge {
        /// Serialised length.
        len: usize,
    },
    /// The id is empty; the platform would drop the connection.
    #[error("frame id must not be empty")]
    EmptyId,
    /// `ts` is NaN or infinite.
    #[error("frame ts must be finite")]
    BadTimestamp,
    /// Serialisation failed.
    #[error("cannot serialise frame: {0}")]
    Serialize(String),
}

struct PayloadRef<'a>(&'a Message);

impl Serialize for PayloadRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_payload(s)
    }
}

struct Envelope<'a> {
    id: &'a str,
    ts: f64,
    /// `Some` for daemon frames: `version` and `pending_capacity` are always emitted.
    shim: Option<Option<i64>>,
    message: &'a Message,
}

impl Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(if self.shim.is_some() { 6 } else { 4 }))?;
        map.serialize_entry("type", self.message.message_type().as_str())?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("ts", &self.ts)?;
        if let Some(pending_capacity) = self.shim {
            map.serialize_entry("version", SHIM_VERSION_STR)?;
            map.serialize_entry("pending_capacity", &pending_capacity)?;
        }
        map.serialize_entry("payload", &PayloadRef(self.message))?;
        map.end()
    }
}

fn encode_envelope(env: &Envelope<'_>) -> Result<String, EncodeError> {
    if env.id.is_empty() {
        return Err(EncodeError::EmptyId);
    }
    if !env.ts.is_finite() {
        return Err(EncodeError::BadTimestamp);
    }
    let text = serde_json::to_string(env).map_err(|e| EncodeError::Serialize(e.to_string()))?;
    if text.len() > MAX_FRAME_BYTES {
        return Err(EncodeError::TooLarge { len: text.len() });
    }
    if env.message.message_type() == MessageType::Hello && text.len() > MAX_HELLO_BYTES {
        return Err(EncodeError::HelloTooLarge { len: text.len() });
    }
    Ok(text)
}

/// Encodes a daemon frame as section 3.2 requires: every envelope field, `version`
/// `"1.1"`, `pending_capacity` as an integer or `null`, and every payload field.
pub fn encode_shim(
    id: &str,
    ts: f64,
    pending_capacity: Option<u32>,
    message: &Message,
) -> Result<String, EncodeError> {
    encode_envelope(&Envelope {
        id,
        ts,
        shim: Some(pending_capacity.map(i64::from)),
        message,
    })
}

/// Encodes a daemon response, replacing it with `ERROR FILE_TOO_LARGE` (same id, same
/// `pending_capacity`, `details: null`) when it would exceed 16 MiB (section 2.3).
pub fn encode_shim_response(
    id: &str,
    ts: f64,
    pending_capacity: Option<u32>,
    message: &Message,
) -> Result<String, EncodeError> {
    match encode_shim(id, ts, pending_capacity, message) {
        Err(EncodeError::TooLarge { .. }) => encode_shim(
            id,
            ts,
            pending_capacity,
            &Message::Error(ErrorPayload::new(
                ErrorCode::FileTooLarge,
                "The local executor response exceeded the WebSocket message limit.",
            )),
        ),
        other => other,
    }
}

/// Encodes a frame as the platform sends it: `type`, `id`, `ts`, `payload` only.
pub fn encode_platform(id: &str, ts: f64, message: &Message) -> Result<String, EncodeError> {
    encode_envelope(&Envelope {
        id,
        ts,
        shim: None,
        message,
    })
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
