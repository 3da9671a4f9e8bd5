//! Every message type has a golden JSON fixture (`tests/golden/<TYPE>.json`) that decodes
//! and re-encodes to the same JSON value.

use std::collections::BTreeSet;
use std::path::PathBuf;

use shim_protocol::MessageType;
use shim_protocol::frame;
use shim_protocol::messages::Direction;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn every_message_type_has_a_golden_fixture_that_round_trips() {
    let mut missing = Vec::new();
    for &ty in MessageType::ALL {
        let path = golden_dir().join(format!("{}.json", ty.as_str()));
        let Ok(text) = std::fs::read_to_string(&path) else {
            missing.push(ty.as_str());
            continue;
        };
        let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
        let frame = frame::decode(&text).unwrap_or_else(|e| panic!("{ty}: {e}"));
        assert_eq!(frame.message_type(), ty, "{}", path.display());
        let encoded = match ty.direction() {
            Direction::PlatformToShim => {
                frame::encode_platform(&frame.id, frame.ts, &frame.message)
            }
            Direction::ShimToPlatform | Direction::Both => frame::encode_shim(
                &frame.id,
                frame.ts,
                frame.pending_capacity.map(|p| u32::try_from(p).unwrap()),
                &frame.message,
            ),
        }
        .unwrap();
        let again: serde_json::Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(again, fixture, "{ty} does not re-encode to its fixture");
        assert_eq!(
            frame::decode(&encoded).unwrap(),
            frame,
            "{ty} second decode differs"
        );
    }
    assert!(
        missing.is_empty(),
        "message types without a golden fixture: {missing:?}"
    );
}

#[test]
fn no_fixture_names_an_unknown_type() {
    let known: BTreeSet<&str> = MessageType::ALL.iter().map(|t| t.as_str()).collect();
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let stem = name.strip_suffix(".json").expect("only .json fixtures");
        assert!(known.contains(stem), "fixture {name} names no message type");
    }
}

#[test]
fn the_table_has_the_60_core_types_and_11_proposed_hardware_types() {
    use shim_protocol::messages::Family;
    let core = MessageType::ALL
        .iter()
        .filter(|t| t.family() == Family::Core)
        .count();
    let hw = MessageType::ALL
        .iter()
        .filter(|t| t.family() == Family::ProposedHardware)
        .count();
    assert_eq!((core, hw), (60, 11));
    for &t in MessageType::ALL {
        assert_eq!(MessageType::from_wire(t.as_str()), Some(t));
    }
}

#[test]
fn the_relay_allowlist_of_3_7_is_exactly_the_core_shim_types_minus_hello() {
    let allowed: BTreeSet<&str> = MessageType::ALL
        .iter()
        .filter(|t| t.relay_accepts_from_shim())
        .map(|t| t.as_str())
        .collect();
    let spec: BTreeSet<&str> = "COMMAND_RESULT, FILE_CONTENTS, FILE_STAT_RESPONSE, FILE_LIST_RESPONSE, \
        SCREENSHOT_RESPONSE, CURSOR_POSITION_RESPONSE, DISPLAY_INFO_RESPONSE, WINDOW_LIST_RESPONSE, \
        APP_LIST_RESPONSE, CLIPBOARD_READ_RESPONSE, PERMISSIONS_CHECK_RESPONSE, LOCAL_LLM_COMPLETION_CHUNK, \
        LOCAL_LLM_COMPLETION_RESPONSE, RECORDING_CONSENT_RESULT, RECORDING_STARTED, RECORDING_SUMMARY, \
        RECORDING_DATA, RECORDING_REVIEW_APPLIED, RECORDING_STEP, DIRECTORY_LIST_RESPONSE, SESSION_ATTACHED, \
        SESSION_ACTIVATED, SESSION_RESTORED, STATUS, ACK, ERROR, PONG"
        .split(", ")
        .map(str::trim)
        .collect();
    assert_eq!(allowed, spec);
}

#[test]
fn every_request_has_expected_responses_of_the_opposite_direction() {
    for &t in MessageType::ALL {
        let responses = t.expected_responses();
        if t.direction() == Direction::PlatformToShim
            && !matches!(t, MessageType::HelloAck | MessageType::SessionRevoked)
        {
            assert!(!responses.is_empty(), "{t} has no expected response");
            for r in responses {
                assert_ne!(r.direction(), Direction::PlatformToShim, "{t} -> {r}");
            }
        } else {
            assert!(responses.is_empty(), "{t} is not a request");
        }
    }
}
