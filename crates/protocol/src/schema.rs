//! JSON Schema of the wire (feature `schema`), generated from the serde types.
//!
//! Two documents (JSON Schema 2020-12), one per direction, each a `oneOf` of one frame
//! schema per message type with the payload types under `$defs`:
//!
//! - [`SHIM_TO_PLATFORM_FILE`]: what the daemon *sends* (serde's serialize contract):
//!   every envelope field including `version` `"1.1"` and `pending_capacity`, every
//!   payload field present (optional ones only where the encoder skips them), and no
//!   field the encoder does not write (`additionalProperties: false`).
//! - [`PLATFORM_TO_SHIM_FILE`]: what the daemon *accepts* (the deserialize contract):
//!   fields with defaults may be absent, `null` where the decoder reads it as the
//!   default, an absent or `null` payload where `{}` is a valid payload, and unknown
//!   fields allowed (they are ignored, section 3.6).
//!
//! `ERROR` is in both. The checked-in copies live in `crates/protocol/schema/`;
//! `cargo xtask codegen` rewrites them and `cargo xtask codegen --check` fails on drift.
//!
//! Not expressible here, so checked only by the decoder: cross-field rules
//! (`DIRECTORY_LIST_REQUEST` reference pairs), the 16 MiB and 64 KiB size caps, the
//! nesting limit, and the difference between `100` and `100.0` (JSON Schema calls both
//! integers; the decoder accepts `100.0` only where COMPUTER_USE_HW.md 4 allows it).

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::JsonSchema;
use schemars::Schema;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use schemars::json_schema;
use schemars::transform::RecursiveTransform;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::error;
use crate::messages::Direction;
use crate::messages::Message;
use crate::messages::MessageType;
use crate::version::SHIM_VERSION_STR;

/// File name of the daemon → platform schema.
pub const SHIM_TO_PLATFORM_FILE: &str = "shim-to-platform.schema.json";
/// File name of the platform → daemon schema.
pub const PLATFORM_TO_SHIM_FILE: &str = "platform-to-shim.schema.json";
/// Where the files live, relative to the workspace root.
pub const SCHEMA_DIR: &str = "crates/protocol/schema";

/// One generated schema file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFile {
    /// File name inside [`SCHEMA_DIR`].
    pub name: &'static str,
    /// The exact file contents (sorted keys, two-space indent, trailing newline).
    pub text: String,
}

/// Every generated file, in a fixed order.
pub fn files() -> Vec<SchemaFile> {
    vec![
        SchemaFile {
            name: PLATFORM_TO_SHIM_FILE,
            text: render(&platform_to_shim()),
        },
        SchemaFile {
            name: SHIM_TO_PLATFORM_FILE,
            text: render(&shim_to_platform()),
        },
    ]
}

/// The schema of every frame the daemon sends.
pub fn shim_to_platform() -> Value {
    let settings = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(RecursiveTransform(integer_bounds))
        .with_transform(RecursiveTransform(close_objects));
    let mut generator = settings.into_generator();
    let envelope = json!({
        "description": "The envelope of every daemon frame (section 3.2): all six fields, always.",
        "type": "object",
        "required": ["type", "id", "ts", "version", "pending_capacity", "payload"],
        "additionalProperties": false,
        "properties": {
            "type": { "type": "string" },
            "id": {
                "description": "Correlation id: the request's id for responses, a fresh UUID otherwise.",
                "type": "string",
                "minLength": 1
            },
            "ts": { "description": "Sender wall clock, epoch seconds.", "type": "number" },
            "version": { "const": SHIM_VERSION_STR },
            "pending_capacity": {
                "description": "Free request slots after this frame; null is \"no signal\".",
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": u32::MAX
            },
            "payload": { "type": "object" }
        }
    });
    // Shapes that travel inside frames or close frames without a type of their own:
    // registering them puts them under `$defs`.
    generator.subschema_for::<error::CapabilityNotGrantedDetails>();
    generator.subschema_for::<error::PathDetails>();
    generator.subschema_for::<error::MovePathDetails>();
    generator.subschema_for::<error::OverloadedDetails>();
    generator.subschema_for::<error::RevisionMismatchDetails>();
    generator.subschema_for::<error::FeatureNotSupportedDetails>();
    generator.subschema_for::<error::WindowStaleDetails>();
    generator.subschema_for::<error::PermissionPendingDetails>();
    generator.subschema_for::<error::ClipboardConcealedDetails>();
    generator.subschema_for::<error::InputOutOfBoundsDetails>();
    generator.subschema_for::<error::ModelNotAvailableDetails>();
    generator.subschema_for::<error::BackendErrorDetails>();
    generator.subschema_for::<error::DependencyMissingDetails>();
    generator.subschema_for::<error::RecordingChannelDetails>();
    generator.subschema_for::<error::RecordingActiveDetails>();
    generator.subschema_for::<error::HardwareDeviceDetails>();
    generator.subschema_for::<error::HardwareHandleDetails>();
    generator.subschema_for::<error::HardwareIoDetails>();
    let extra = vec![(
        "VersionMismatchCloseReason",
        version_mismatch_close_reason(),
    )];
    document(
        generator,
        "Frames the daemon sends (shim to platform), protocol 1.1",
        "Every text frame the daemon writes, as serde serialises it: one `oneOf` branch \
         per message type, selected by `type`. `$defs` also holds the `ERROR.details` \
         shapes (`*Details`) and the JSON close reason of 4426, which no frame references.",
        envelope,
        Direction::ShimToPlatform,
        extra,
    )
}

/// The schema of every frame the daemon accepts from the platform.
pub fn platform_to_shim() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with_transform(RecursiveTransform(integer_bounds))
        .into_generator();
    let envelope = json!({
        "description": "The envelope as the daemon reads it (sections 3.2 and 3.6): unknown fields are ignored.",
        "type": "object",
        "required": ["type", "id", "ts"],
        "properties": {
            "type": { "type": "string" },
            "id": { "description": "Correlation id.", "type": "string", "minLength": 1 },
            "ts": { "description": "Sender wall clock, epoch seconds.", "type": "number" },
            "version": { "type": ["string", "null"] },
            "pending_capacity": { "type": ["integer", "null"] },
            "payload": { "type": ["object", "null"] }
        }
    });
    document(
        generator,
        "Frames the daemon accepts (platform to shim), protocol 1.1",
        "Every text frame the daemon decodes, as serde deserialises it: one `oneOf` branch \
         per message type, selected by `type`. Cross-field rules, size caps and the nesting \
         limit are checked by the decoder only.",
        envelope,
        Direction::PlatformToShim,
        Vec::new(),
    )
}

/// Serialises a schema deterministically: keys sorted at every level (whatever
/// `serde_json` features the build unified), two-space indent, trailing newline.
pub fn render(value: &Value) -> String {
    let mut text = match serde_json::to_string_pretty(&sorted(value)) {
        Ok(text) => text,
        // A `Value` always serialises; keep the signature infallible anyway.
        Err(e) => format!("{{\"error\": \"{e}\"}}"),
    };
    text.push('\n');
    text
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                if let Some(v) = map.get(k) {
                    out.insert(k.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn document(
    mut generator: SchemaGenerator,
    title: &str,
    description: &str,
    envelope: Value,
    direction: Direction,
    extra: Vec<(&str, Schema)>,
) -> Value {
    let mut branches = Vec::new();
    let mut frames = Vec::new();
    for &ty in MessageType::ALL {
        if ty.direction() != direction && ty.direction() != Direction::Both {
            continue;
        }
        let payload = Message::payload_schema(ty, &mut generator).to_value();
        let name = format!("{}_frame", ty.as_str());
        let mut frame = json!({
            "description": format!("A `{}` frame.", ty.as_str()),
            "allOf": [{ "$ref": "#/$defs/Envelope" }],
            "properties": { "type": { "const": ty.as_str() } },
            "required": ["type"]
        });
        if direction == Direction::PlatformToShim && Message::decode_payload(ty, "{}").is_ok() {
            // An absent or null payload decodes as `{}` (section 3.6).
            frame["properties"]["payload"] = json!({ "anyOf": [payload, { "type": "null" }] });
        } else {
            frame["properties"]["payload"] = payload;
            frame["required"] = json!(["type", "payload"]);
        }
        branches.push(json!({ "$ref": format!("#/$defs/{name}") }));
        frames.push((name, frame));
    }
    let mut defs = generator.take_definitions(true);
    for (name, frame) in frames {
        defs.insert(name, frame);
    }
    defs.insert("Envelope".to_owned(), envelope);
    for (name, schema) in extra {
        defs.insert(name.to_owned(), schema.to_value());
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "oneOf": branches,
        "$defs": defs
    })
}

/// The close reason of a 4426 close (section 2.7, `close::version_mismatch_reason`).
fn version_mismatch_close_reason() -> Schema {
    json_schema!({
        "description": "The JSON close reason of a 4426 close (section 2.7), at most 123 bytes: \
                        `hint`, then `platform_max` and `shim_max` are dropped to fit.",
        "type": "object",
        "required": ["error"],
        "additionalProperties": false,
        "properties": {
            "error": { "const": "PROTOCOL_VERSION_MISMATCH" },
            "shim_max": { "type": "string" },
            "platform_max": { "type": "string" },
            "hint": { "type": "string" }
        }
    })
}

/// The bounds of the Rust integer type, which schemars gives only as a `format`, for the
/// types narrower than 64 bits (64-bit bounds are not exact as JSON doubles).
fn integer_bounds(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let (min, max): (i64, i64) = match map.get("format").and_then(Value::as_str) {
        Some("uint8") => (0, u8::MAX.into()),
        Some("uint16") => (0, u16::MAX.into()),
        Some("uint32") => (0, u32::MAX.into()),
        Some("int8") => (i8::MIN.into(), i8::MAX.into()),
        Some("int16") => (i16::MIN.into(), i16::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        _ => return,
    };
    map.entry("minimum").or_insert(min.into());
    map.entry("maximum").or_insert(max.into());
}

/// Serialize contract: an object schema lists every field the encoder writes, so any
/// other field is an error. Schemas that already say what else is allowed (maps) are kept.
fn close_objects(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if is_object && !map.contains_key("additionalProperties") {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// Joins doc-comment lines into a description.
pub(crate) fn doc_text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Adds a description from doc-comment lines.
pub(crate) fn describe(schema: &mut Schema, doc: &[&str]) {
    let text = doc_text(doc);
    if !text.is_empty() {
        schema.insert("description".into(), Value::String(text));
    }
}

/// A string enum that rejects unknown values.
pub(crate) fn closed_enum(doc: &[&str], values: &[&str]) -> Schema {
    let mut schema = json_schema!({ "type": "string", "enum": values });
    describe(&mut schema, doc);
    schema
}

/// A string enum that keeps unknown values: any string, the known ones as `examples`.
pub(crate) fn open_enum(doc: &[&str], known: &[&str]) -> Schema {
    let mut schema = json_schema!({ "type": "string", "examples": known });
    describe(&mut schema, doc);
    schema
}

/// A field read with `null_as_default`: `null` is accepted on input, never written.
pub(crate) struct NullOr<T>(PhantomData<T>);

impl<T: JsonSchema> JsonSchema for NullOr<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("NullOr_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        if generator.contract().is_deserialize() {
            generator.subschema_for::<Option<T>>()
        } else {
            generator.subschema_for::<T>()
        }
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
