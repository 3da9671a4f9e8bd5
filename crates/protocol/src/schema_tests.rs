//! The generated schema: equal to the checked-in files (drift), deterministic, and
//! satisfied by every frame the encoder writes (property test over every message type).

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::Config;
use proptest::test_runner::TestRunner;
use serde_json::Value;

use super::*;
use crate::frame;

#[test]
fn checked_in_files_match_the_code() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    for file in files() {
        let path = dir.join(file.name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == file.text,
            "{} differs from the schema the code generates\nhint: run `cargo xtask codegen`",
            path.display()
        );
    }
}

#[test]
fn rendering_is_stable_sorted_and_ends_with_a_newline() {
    let a = files();
    assert_eq!(a, files());
    for file in &a {
        assert!(file.text.ends_with("}\n"), "{}", file.name);
        assert!(!file.text.ends_with("\n\n"), "{}", file.name);
    }
    let text = render(&serde_json::json!({"b": 1, "a": {"d": 2, "c": [{"f": 3, "e": 4}]}}));
    assert_eq!(
        text.split_whitespace().collect::<String>(),
        r#"{"a":{"c":[{"e":4,"f":3}],"d":2},"b":1}"#
    );
}

#[test]
fn an_empty_payload_is_valid_exactly_where_the_decoder_accepts_it() {
    let to_shim = jsonschema::validator_for(&platform_to_shim()).unwrap();
    for &ty in MessageType::ALL {
        if ty.direction() == Direction::ShimToPlatform {
            continue;
        }
        for payload in ["{}", "null"] {
            let text = format!(r#"{{"type":"{ty}","id":"i","ts":1,"payload":{payload}}}"#);
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                to_shim.is_valid(&value),
                frame::decode(&text).is_ok(),
                "{text}"
            );
        }
    }
}

#[test]
fn every_encoded_message_validates_against_its_direction() {
    // Deep derived strategy: see roundtrip_tests.rs.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(encoded_messages_validate)
        .unwrap()
        .join()
        .unwrap();
}

fn encoded_messages_validate() {
    let to_platform = jsonschema::validator_for(&shim_to_platform()).unwrap();
    let to_shim = jsonschema::validator_for(&platform_to_shim()).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    let seen = std::cell::RefCell::new(BTreeSet::new());
    runner
        .run(
            &(any::<Message>(), "[a-zA-Z0-9-]{1,40}", any::<Option<u32>>()),
            |(msg, id, cap)| {
                let ty = msg.message_type();
                seen.borrow_mut().insert(ty);
                let mut encoded = Vec::new();
                if ty.direction() != Direction::PlatformToShim {
                    encoded.push((
                        &to_platform,
                        SHIM_TO_PLATFORM_FILE,
                        frame::encode_shim(&id, 1.5, cap, &msg),
                    ));
                }
                if ty.direction() != Direction::ShimToPlatform {
                    encoded.push((
                        &to_shim,
                        PLATFORM_TO_SHIM_FILE,
                        frame::encode_platform(&id, 1.5, &msg),
                    ));
                }
                for (validator, name, text) in encoded {
                    let text = match text {
                        Ok(t) => t,
                        Err(frame::EncodeError::HelloTooLarge { .. }) => continue,
                        Err(e) => return Err(TestCaseError::fail(format!("{ty}: {e}"))),
                    };
                    let value: Value = serde_json::from_str(&text).unwrap();
                    let errors: Vec<String> = validator
                        .iter_errors(&value)
                        .map(|e| e.to_string())
                        .collect();
                    prop_assert!(
                        errors.is_empty(),
                        "{} vs {}: {:?}\n{}",
                        ty,
                        name,
                        errors,
                        text
                    );
                }
                Ok(())
            },
        )
        .unwrap();
    let missing: Vec<_> = MessageType::ALL
        .iter()
        .filter(|t| !seen.borrow().contains(t))
        .collect();
    assert!(missing.is_empty(), "no proptest case for {missing:?}");
}
