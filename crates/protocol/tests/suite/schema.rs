//! The checked-in JSON schema (`schema/*.schema.json`) describes the wire: every golden
//! fixture validates against its direction's file, frames the decoder refuses are refused
//! by the schema too, and lenient inputs the decoder accepts are accepted.

use std::path::PathBuf;

use serde_json::Value;
use serde_json::json;
use shim_protocol::MessageType;
use shim_protocol::close;
use shim_protocol::frame;
use shim_protocol::messages::Direction;
use shim_protocol::schema::PLATFORM_TO_SHIM_FILE;
use shim_protocol::schema::SHIM_TO_PLATFORM_FILE;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The checked-in file (not a fresh generation: the drift test ties the two together).
fn checked_in(name: &str) -> Value {
    let path = crate_dir().join("schema").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask codegen`", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&checked_in(name)).unwrap()
}

fn fixture(ty: &str) -> Value {
    let path = crate_dir().join("tests/golden").join(format!("{ty}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn errors(v: &jsonschema::Validator, frame: &Value) -> Vec<String> {
    v.iter_errors(frame).map(|e| e.to_string()).collect()
}

#[test]
fn both_files_are_valid_draft_2020_12_schemas() {
    for name in [SHIM_TO_PLATFORM_FILE, PLATFORM_TO_SHIM_FILE] {
        let schema = checked_in(name);
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        jsonschema::meta::validate(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_golden_fixture_validates_against_its_direction_only() {
    let to_platform = validator(SHIM_TO_PLATFORM_FILE);
    let to_shim = validator(PLATFORM_TO_SHIM_FILE);
    for &ty in MessageType::ALL {
        let frame = fixture(ty.as_str());
        let (sent_by_shim, sent_by_platform) = match ty.direction() {
            Direction::ShimToPlatform => (true, false),
            Direction::PlatformToShim => (false, true),
            Direction::Both => (true, true),
        };
        assert_eq!(
            to_platform.is_valid(&frame),
            sent_by_shim,
            "{ty} against {SHIM_TO_PLATFORM_FILE}: {:?}",
            errors(&to_platform, &frame)
        );
        assert_eq!(
            to_shim.is_valid(&frame),
            sent_by_platform,
            "{ty} against {PLATFORM_TO_SHIM_FILE}: {:?}",
            errors(&to_shim, &frame)
        );
    }
}

#[test]
fn every_message_type_has_exactly_one_branch_in_its_direction() {
    for (name, direction) in [
        (SHIM_TO_PLATFORM_FILE, Direction::ShimToPlatform),
        (PLATFORM_TO_SHIM_FILE, Direction::PlatformToShim),
    ] {
        let schema = checked_in(name);
        let mut branches: Vec<String> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["$ref"].as_str().unwrap().to_owned())
            .collect();
        branches.sort();
        let mut expected: Vec<String> = MessageType::ALL
            .iter()
            .filter(|t| t.direction() == direction || t.direction() == Direction::Both)
            .map(|t| format!("#/$defs/{}_frame", t.as_str()))
            .collect();
        expected.sort();
        assert_eq!(branches, expected, "{name}");
    }
}

/// Applies `edit` to a copy of the golden fixture of `ty`.
fn edited(ty: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut frame = fixture(ty);
    edit(&mut frame);
    frame
}

#[test]
fn frames_the_decoder_refuses_are_refused_by_the_schema() {
    let to_shim = validator(PLATFORM_TO_SHIM_FILE);
    let to_platform = validator(SHIM_TO_PLATFORM_FILE);
    let cases: Vec<(&str, Value)> = vec![
        (
            "missing type",
            edited("FILE_READ", |f| {
                f.as_object_mut().unwrap().remove("type");
            }),
        ),
        (
            "unknown type",
            edited("FILE_READ", |f| f["type"] = json!("FILE_READX")),
        ),
        (
            "type of another message (FILE_WRITE needs content)",
            edited("FILE_READ", |f| f["type"] = json!("FILE_WRITE")),
        ),
        (
            "type not a string",
            edited("PING", |f| f["type"] = json!(7)),
        ),
        (
            "missing id",
            edited("PING", |f| {
                f.as_object_mut().unwrap().remove("id");
            }),
        ),
        ("empty id", edited("PING", |f| f["id"] = json!(""))),
        (
            "missing ts",
            edited("PING", |f| {
                f.as_object_mut().unwrap().remove("ts");
            }),
        ),
        ("ts a string", edited("PING", |f| f["ts"] = json!("now"))),
        (
            "payload not an object",
            edited("PING", |f| f["payload"] = json!([])),
        ),
        (
            "wrong field type",
            edited("FILE_READ", |f| f["payload"]["path"] = json!(5)),
        ),
        (
            "missing required field",
            edited("ATTACH_SESSION", |f| {
                f["payload"].as_object_mut().unwrap().remove("session_id");
            }),
        ),
        (
            "required payload absent",
            edited("FILE_READ", |f| {
                f.as_object_mut().unwrap().remove("payload");
            }),
        ),
        (
            "closed enum value unknown",
            edited("EXECUTE_COMMAND", |f| f["payload"]["shell"] = json!("fish")),
        ),
        (
            "session id breaking its syntax",
            edited("ATTACH_SESSION", |f| {
                f["payload"]["session_id"] = json!("../control?admin=true");
            }),
        ),
        (
            "empty browse token",
            edited("ATTACH_SESSION", |f| f["payload"]["browse_id"] = json!("")),
        ),
        (
            "browse token over 256 characters",
            edited("ATTACH_SESSION", |f| {
                f["payload"]["directory_ref"] = json!("a".repeat(257));
            }),
        ),
        (
            "zero where > 0 is required",
            edited("HELLO_ACK", |f| f["payload"]["max_concurrent"] = json!(0)),
        ),
        (
            "negative unsigned integer",
            edited("FILE_READ", |f| f["payload"]["offset"] = json!(-1)),
        ),
        (
            "fraction where an integer is required",
            edited("SCREENSHOT_REQUEST", |f| {
                f["payload"]["quality"] = json!(7.5)
            }),
        ),
        (
            "integer over the field's u32",
            edited("GPIO_READ", |f| {
                f["payload"]["line"] = json!(4_294_967_296u64)
            }),
        ),
        (
            "hardware value out of range",
            edited("SERIAL_READ", |f| f["payload"]["max_bytes"] = json!(0)),
        ),
        (
            "point of three coordinates",
            edited("INPUT_ACTION", |f| {
                f["payload"]["coordinate"] = json!([1, 2, 3])
            }),
        ),
        (
            "browse_id without directory_ref",
            edited("DIRECTORY_LIST_REQUEST", |f| {
                f["payload"] = json!({"browse_id": "b1"});
            }),
        ),
        (
            "directory_ref without browse_id (the other null)",
            edited("DIRECTORY_LIST_REQUEST", |f| {
                f["payload"] = json!({"browse_id": null, "directory_ref": "d1"});
            }),
        ),
        (
            "cursor without references",
            edited("DIRECTORY_LIST_REQUEST", |f| {
                f["payload"] = json!({"cursor": "c1"})
            }),
        ),
        (
            "null for a required non-nullable field",
            edited("FILE_MOVE", |f| f["payload"]["src"] = Value::Null),
        ),
    ];
    for (what, frame) in &cases {
        let text = frame.to_string();
        assert!(
            frame::decode(&text).is_err(),
            "{what}: the decoder accepts it, so the case is wrong: {text}"
        );
        assert!(!to_shim.is_valid(frame), "{what}: schema accepts {text}");
    }

    // Daemon frames: the serialize contract is stricter than the decoder.
    let daemon_cases: Vec<(&str, Value)> = vec![
        (
            "missing type",
            edited("PONG", |f| {
                f.as_object_mut().unwrap().remove("type");
            }),
        ),
        (
            "wrong type tag",
            edited("FILE_CONTENTS", |f| f["type"] = json!("FILE_STAT_RESPONSE")),
        ),
        (
            "wrong field type",
            edited("COMMAND_RESULT", |f| f["payload"]["exit_code"] = json!("0")),
        ),
        (
            "missing version",
            edited("PONG", |f| {
                f.as_object_mut().unwrap().remove("version");
            }),
        ),
        (
            "other version",
            edited("PONG", |f| f["version"] = json!("1.0")),
        ),
        (
            "missing pending_capacity",
            edited("PONG", |f| {
                f.as_object_mut().unwrap().remove("pending_capacity");
            }),
        ),
        (
            "negative pending_capacity",
            edited("PONG", |f| f["pending_capacity"] = json!(-1)),
        ),
        (
            "extra envelope field",
            edited("PONG", |f| f["extra"] = json!(1)),
        ),
        (
            "extra payload field",
            edited("ACK", |f| f["payload"]["extra"] = json!(1)),
        ),
        (
            "payload field the encoder always writes is absent",
            edited("ERROR", |f| {
                f["payload"].as_object_mut().unwrap().remove("details");
            }),
        ),
        (
            "fingerprint not lower-case hex",
            edited("SESSION_ATTACHED", |f| {
                f["payload"]["fingerprint"] = json!("AB".repeat(32));
            }),
        ),
        (
            "unknown internally tagged variant",
            edited("HARDWARE_LIST_RESPONSE", |f| {
                f["payload"]["devices"] = json!([{"type": "bluetooth", "name": "x"}]);
            }),
        ),
    ];
    for (what, frame) in &daemon_cases {
        assert!(
            !to_platform.is_valid(frame),
            "daemon frame with {what}: schema accepts {frame}"
        );
    }
}

#[test]
fn lenient_inputs_the_decoder_accepts_are_accepted_by_the_schema() {
    let to_shim = validator(PLATFORM_TO_SHIM_FILE);
    let cases: Vec<(&str, Value)> = vec![
        (
            "payload absent where {} is valid",
            edited("PING", |f| {
                f.as_object_mut().unwrap().remove("payload");
            }),
        ),
        (
            "payload null where {} is valid",
            edited("WINDOW_LIST_REQUEST", |f| f["payload"] = Value::Null),
        ),
        (
            "unknown envelope and payload fields",
            edited("FILE_READ", |f| {
                f["future"] = json!({"x": 1});
                f["payload"]["future"] = json!(true);
            }),
        ),
        (
            "defaulted fields absent",
            edited("FILE_READ", |f| {
                f["payload"] = json!({"path": "a.txt"});
            }),
        ),
        (
            "the initial browse request",
            edited("DIRECTORY_LIST_REQUEST", |f| f["payload"] = json!({})),
        ),
        (
            "browse references with a null cursor",
            edited("DIRECTORY_LIST_REQUEST", |f| {
                f["payload"] = json!({"browse_id": "b1", "directory_ref": "d1", "cursor": null});
            }),
        ),
        (
            "all browse references null",
            edited("DIRECTORY_LIST_REQUEST", |f| {
                f["payload"] = json!({"browse_id": null, "directory_ref": null, "cursor": null});
            }),
        ),
        (
            "null read as the default",
            edited("EXECUTE_COMMAND", |f| f["payload"]["env"] = Value::Null),
        ),
        (
            "integral float for an integer",
            edited("SCREENSHOT_REQUEST", |f| {
                f["payload"]["quality"] = json!(80.0)
            }),
        ),
        (
            "unknown value of an open enum",
            edited("HELLO_ACK", |f| {
                f["payload"]["granted_capabilities"] = json!(["files", "teleport"]);
            }),
        ),
        (
            "version and pending_capacity sent by a platform",
            edited("PING", |f| {
                f["version"] = json!("1.1");
                f["pending_capacity"] = Value::Null;
            }),
        ),
    ];
    for (what, frame) in &cases {
        let text = frame.to_string();
        assert!(
            frame::decode(&text).is_ok(),
            "{what}: the decoder refuses it, so the case is wrong: {text}"
        );
        let errs = errors(&to_shim, frame);
        assert!(errs.is_empty(), "{what}: schema refuses {text}: {errs:?}");
    }
}

#[test]
fn version_mismatch_close_reasons_match_their_schema() {
    let schema = checked_in(SHIM_TO_PLATFORM_FILE);
    let mut def = schema["$defs"]["VersionMismatchCloseReason"].clone();
    def["$schema"] = schema["$schema"].clone();
    let v = jsonschema::validator_for(&def).unwrap();
    for reason in [
        close::version_mismatch_reason("1.1", "2.0", "upgrade the local executor"),
        close::version_mismatch_reason("1.1", "2.0", &"h".repeat(500)),
        close::version_mismatch_reason("1.1", &"9".repeat(200), "x"),
    ] {
        let value: Value = serde_json::from_str(&reason).unwrap();
        assert!(v.is_valid(&value), "{reason}");
    }
    assert!(!v.is_valid(&json!({"error": "OTHER"})));
}

/// A validator for one definition of a checked-in file.
fn def_validator(file: &str, def: &str) -> jsonschema::Validator {
    let mut schema = checked_in(file);
    let obj = schema.as_object_mut().unwrap();
    obj.remove("oneOf");
    obj.insert("$ref".into(), json!(format!("#/$defs/{def}")));
    assert!(
        schema["$defs"].get(def).is_some(),
        "{file} has no $defs/{def}"
    );
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn every_error_details_shape_is_defined_and_matches_what_the_daemon_writes() {
    use shim_protocol::error::*;
    let s = |v: &str| v.to_owned();
    let details: Vec<(&str, ErrorPayload)> = vec![
        (
            "CapabilityNotGrantedDetails",
            ErrorPayload::with_details(
                ErrorCode::CapabilityNotGranted,
                "m",
                &CapabilityNotGrantedDetails {
                    capability: s("shell"),
                    required_capability: s("shell"),
                    granted_capabilities: vec![s("files")],
                },
            ),
        ),
        (
            "PathDetails",
            ErrorPayload::with_details(ErrorCode::PathNotFound, "m", &PathDetails { path: s("a") }),
        ),
        (
            "MovePathDetails",
            ErrorPayload::with_details(
                ErrorCode::PathExists,
                "m",
                &MovePathDetails {
                    src: s("a"),
                    dst: s("b"),
                },
            ),
        ),
        (
            "OverloadedDetails",
            ErrorPayload::with_details(
                ErrorCode::ShimOverloaded,
                "m",
                &OverloadedDetails { max_concurrent: 4 },
            ),
        ),
        (
            "RevisionMismatchDetails",
            ErrorPayload::with_details(
                ErrorCode::SessionRevisionMismatch,
                "m",
                &RevisionMismatchDetails {
                    current_revision: 3,
                },
            ),
        ),
        (
            "FeatureNotSupportedDetails",
            ErrorPayload::with_details(
                ErrorCode::FeatureNotSupported,
                "m",
                &FeatureNotSupportedDetails {
                    feature: s("drag"),
                    reason: None,
                },
            ),
        ),
        (
            "WindowStaleDetails",
            ErrorPayload::with_details(
                ErrorCode::WindowStale,
                "m",
                &WindowStaleDetails {
                    window_id: s("win_1"),
                    hint: s("re-list windows"),
                },
            ),
        ),
        (
            "PermissionPendingDetails",
            ErrorPayload::with_details(
                ErrorCode::PermissionPending,
                "m",
                &PermissionPendingDetails {
                    permission: s("accessibility"),
                    platform: s("darwin"),
                    hint: Some(s("grant it")),
                },
            ),
        ),
        (
            "ClipboardConcealedDetails",
            ErrorPayload::with_details(
                ErrorCode::ClipboardConcealed,
                "m",
                &ClipboardConcealedDetails {
                    reason: s("writeback_only"),
                    marker: None,
                    writeback_age_seconds: Some(1.5),
                },
            ),
        ),
        (
            "InputOutOfBoundsDetails",
            ErrorPayload::with_details(
                ErrorCode::InputOutOfBounds,
                "m",
                &InputOutOfBoundsDetails {
                    requested_coordinate: [5000, 5],
                    displays: vec![DisplayBounds {
                        index: 0,
                        origin: [0, 0],
                        size: [1440, 900],
                    }],
                },
            ),
        ),
        (
            "ModelNotAvailableDetails",
            ErrorPayload::with_details(
                ErrorCode::ModelNotAvailable,
                "m",
                &ModelNotAvailableDetails {
                    requested_model: s("x"),
                    available_models: vec![s("llama3")],
                },
            ),
        ),
        (
            "BackendErrorDetails",
            ErrorPayload::with_details(
                ErrorCode::LocalLlmFailed,
                "m",
                &BackendErrorDetails {
                    backend_error: s("boom"),
                },
            ),
        ),
        (
            "DependencyMissingDetails",
            ErrorPayload::with_details(
                ErrorCode::DependencyMissing,
                "m",
                &DependencyMissingDetails {
                    dep: s("ollama"),
                    extra: None,
                    op: Some(s("x")),
                },
            ),
        ),
        (
            "RecordingChannelDetails",
            ErrorPayload::with_details(
                ErrorCode::RecordingChannelUnavailable,
                "m",
                &RecordingChannelDetails {
                    requested_channels: vec![s("browser")],
                    available_channels: vec![s("floor")],
                },
            ),
        ),
        (
            "RecordingActiveDetails",
            ErrorPayload::with_details(
                ErrorCode::RecordingAlreadyActive,
                "m",
                &RecordingActiveDetails {
                    recording_id: s("rec_1"),
                },
            ),
        ),
        (
            "HardwareDeviceDetails",
            ErrorPayload::with_details(
                ErrorCode::HardwareNotAllowed,
                "m",
                &HardwareDeviceDetails {
                    kind: s("gpio"),
                    port: None,
                    chip: Some(s("gpiochip0")),
                    line: Some(4),
                },
            ),
        ),
        (
            "HardwareHandleDetails",
            ErrorPayload::with_details(
                ErrorCode::HardwareHandleStale,
                "m",
                &HardwareHandleDetails { handle: s("ser_1") },
            ),
        ),
        (
            "HardwareIoDetails",
            ErrorPayload::with_details(
                ErrorCode::HardwareIoFailed,
                "m",
                &HardwareIoDetails { os_error: s("EIO") },
            ),
        ),
    ];
    let mut defined: Vec<String> = checked_in(SHIM_TO_PLATFORM_FILE)["$defs"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.ends_with("Details"))
        .cloned()
        .collect();
    defined.sort();
    let mut tested: Vec<String> = details.iter().map(|(d, _)| (*d).to_owned()).collect();
    tested.sort();
    assert_eq!(defined, tested, "every *Details definition is checked here");
    let to_platform = validator(SHIM_TO_PLATFORM_FILE);
    for (def, payload) in details {
        let map = Value::Object(payload.details.clone().unwrap());
        let v = def_validator(SHIM_TO_PLATFORM_FILE, def);
        assert!(v.is_valid(&map), "{def}: {map}");
        let mut wrong = map.clone();
        wrong["unexpected"] = json!(1);
        assert!(!v.is_valid(&wrong), "{def} accepts an extra field");
        let text = frame::encode_shim("e1", 1.0, Some(1), &shim_protocol::Message::Error(payload))
            .unwrap();
        let frame: Value = serde_json::from_str(&text).unwrap();
        assert!(to_platform.is_valid(&frame), "{text}");
    }
}
