use super::*;
use crate::messages::handshake::Empty;
use crate::messages::handshake::Status;

fn err(text: &str) -> DecodeError {
    decode(text).expect_err(text)
}

fn malformed_code(text: &str) -> ErrorCode {
    match err(text) {
        DecodeError::Malformed { code, id, .. } => {
            assert_eq!(id, "r1");
            code
        }
        other => panic!("expected Malformed for {text}, got {other:?}"),
    }
}

#[test]
fn not_json_invalid_utf8_and_not_objects_are_unanswerable() {
    assert!(matches!(err("hello"), DecodeError::NotJson(_)));
    assert!(matches!(err("{\"type\":"), DecodeError::NotJson(_)));
    assert!(matches!(err(""), DecodeError::NotJson(_)));
    assert_eq!(
        decode_bytes(b"{\"type\":\"PING\",\"id\":\"\xff\"}").unwrap_err(),
        DecodeError::InvalidUtf8
    );
    for text in [
        "[1,2]",
        "\"PING\"",
        "42",
        "null",
        "true",
        r#"["PING","x",1.0,{}]"#,
    ] {
        assert_eq!(err(text), DecodeError::NotAnObject, "{text}");
    }
    for e in [
        err("hello"),
        DecodeError::NotAnObject,
        DecodeError::InvalidUtf8,
    ] {
        assert!(e.answerable().is_none());
    }
}

#[test]
fn missing_or_bad_type_and_id_are_unanswerable() {
    assert_eq!(
        err(r#"{"id":"r1","ts":1,"payload":{}}"#),
        DecodeError::MissingType
    );
    assert_eq!(
        err(r#"{"type":7,"id":"r1","ts":1,"payload":{}}"#),
        DecodeError::TypeNotString
    );
    assert_eq!(
        err(r#"{"type":"ping","id":"r1","ts":1,"payload":{}}"#),
        DecodeError::UnknownType("ping".into())
    );
    assert_eq!(
        err(r#"{"type":"SELF_DESTRUCT","id":"r1","ts":1,"payload":{}}"#),
        DecodeError::UnknownType("SELF_DESTRUCT".into())
    );
    assert_eq!(
        err(r#"{"type":"PING","ts":1,"payload":{}}"#),
        DecodeError::MissingId
    );
    assert_eq!(
        err(r#"{"type":"PING","id":5,"ts":1,"payload":{}}"#),
        DecodeError::IdNotString
    );
    assert_eq!(
        err(r#"{"type":"PING","id":null,"ts":1,"payload":{}}"#),
        DecodeError::MissingId
    );
    assert_eq!(
        err(r#"{"type":"PING","id":"","ts":1,"payload":{}}"#),
        DecodeError::EmptyId
    );
    assert!(matches!(
        err(r#"{"type":"PING","type":"PONG","id":"r1","ts":1,"payload":{}}"#),
        DecodeError::BadEnvelope(_)
    ));
}

#[test]
fn wrong_types_with_a_usable_id_are_answerable_internal_errors() {
    for text in [
        r#"{"type":"PING","id":"r1","payload":{}}"#,
        r#"{"type":"PING","id":"r1","ts":"now","payload":{}}"#,
        r#"{"type":"PING","id":"r1","ts":1,"payload":[]}"#,
        r#"{"type":"PING","id":"r1","ts":1,"payload":"x"}"#,
        r#"{"type":"PING","id":"r1","ts":1,"version":11,"payload":{}}"#,
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":7}}"#,
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{}}"#,
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":"/a","encoding":"latin-1"}}"#,
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":"/a","length":0}}"#,
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":"/a","offset":-1}}"#,
        r#"{"type":"EXECUTE_COMMAND","id":"r1","ts":1,"payload":{"command":"ls","timeout_seconds":0}}"#,
        r#"{"type":"EXECUTE_COMMAND","id":"r1","ts":1,"payload":{"command":"ls","timeout_seconds":-5}}"#,
        r#"{"type":"EXECUTE_COMMAND","id":"r1","ts":1,"payload":{"command":"ls","shell":"fish"}}"#,
        r#"{"type":"ATTACH_SESSION","id":"r1","ts":1,"payload":{"session_id":"../control?admin=true","browse_id":"b","directory_ref":"d"}}"#,
        r#"{"type":"INPUT_ACTION","id":"r1","ts":1,"payload":{"action":"left_click","coordinate":[1.5,2]}}"#,
        // JAIL_FILES_EXEC.md 5.2: max_entries is at least 1.
        r#"{"type":"FILE_LIST","id":"r1","ts":1,"payload":{"path":"/a","max_entries":0}}"#,
        r#"{"type":"FILE_LIST","id":"r1","ts":1,"payload":{"path":"/a","max_entries":-3}}"#,
        // COMPUTER_USE_HW.md 4.8: `permissions` is required.
        r#"{"type":"PERMISSIONS_CHECK_REQUEST","id":"r1","ts":1,"payload":{}}"#,
    ] {
        assert_eq!(malformed_code(text), ErrorCode::InternalError, "{text}");
    }
}

#[test]
fn huge_numbers_are_typed_errors() {
    assert_eq!(
        malformed_code(r#"{"type":"PING","id":"r1","ts":1e400,"payload":{}}"#),
        ErrorCode::InternalError
    );
    assert_eq!(
        malformed_code(
            r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":"/a","offset":99999999999999999999999999}}"#
        ),
        ErrorCode::InternalError
    );
    assert_eq!(
        malformed_code(
            r#"{"type":"HELLO_ACK","id":"r1","ts":1,"payload":{"granted_capabilities":[],"max_concurrent":1e30}}"#
        ),
        ErrorCode::InternalError
    );
    let digits = "9".repeat(100_000);
    let text = format!(r#"{{"type":"PING","id":"r1","ts":{digits},"payload":{{}}}}"#);
    // A 100 000-digit number parses as a (huge but finite?) double or fails: either way typed.
    let _ = decode(&text);
}

#[test]
fn nesting_deeper_than_128_is_refused_anywhere() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let in_payload = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"payload":{{"x":{}}}}}"#,
        deep(200)
    );
    assert_eq!(err(&in_payload), DecodeError::TooDeep);
    let in_envelope = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"extra":{},"payload":{{}}}}"#,
        deep(200)
    );
    assert_eq!(err(&in_envelope), DecodeError::TooDeep);
    let huge = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"extra":{},"payload":{{}}}}"#,
        deep(1_000_000)
    );
    assert!(matches!(
        err(&huge),
        DecodeError::TooDeep | DecodeError::TooLarge { .. }
    ));
    let ok = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"payload":{{"x":{}}}}}"#,
        deep(100)
    );
    assert!(decode(&ok).is_ok());
}

#[test]
fn frames_over_16_mib_are_refused_before_parsing() {
    let big = format!(
        r#"{{"type":"FILE_WRITE","id":"r1","ts":1,"payload":{{"path":"/a","content":"{}"}}}}"#,
        "a".repeat(MAX_FRAME_BYTES)
    );
    assert!(matches!(err(&big), DecodeError::TooLarge { .. }));
    assert!(matches!(
        decode_bytes(big.as_bytes()),
        Err(DecodeError::TooLarge { .. })
    ));
    let just_fits = format!(
        r#"{{"type":"FILE_WRITE","id":"r1","ts":1,"payload":{{"path":"/a","content":"{}"}}}}"#,
        "a".repeat(MAX_FRAME_BYTES - 100)
    );
    assert!(decode(&just_fits).is_ok());
}

#[test]
fn unknown_fields_are_tolerated_and_version_is_optional() {
    // 3.6 [Rust extension] and 13.1.
    let f =
        decode(r#"{"type":"PING","id":"p","ts":1,"payload":{"unexpected":"value"},"extra":[1]}"#)
            .unwrap();
    assert_eq!(f.message, Message::Ping(Empty {}));
    assert_eq!(f.version, None);
    let f = decode(r#"{"type":"PING","id":"p","ts":1,"version":"1.4","payload":{}}"#).unwrap();
    assert_eq!(f.version.as_deref(), Some("1.4"));
}

#[test]
fn control_reference_violations_answer_with_the_codes_of_3_6() {
    let dl =
        |p: &str| format!(r#"{{"type":"DIRECTORY_LIST_REQUEST","id":"r1","ts":1,"payload":{p}}}"#);
    assert!(decode(&dl("{}")).is_ok());
    assert!(decode(&dl(r#"{"browse_id":"b","directory_ref":"d","cursor":"c"}"#)).is_ok());
    for p in [
        r#"{"browse_id":"b"}"#,
        r#"{"directory_ref":"d"}"#,
        r#"{"cursor":"c"}"#,
        r#"{"browse_id":"b","cursor":"c"}"#,
        r#"{"browse_id":"","directory_ref":"d"}"#,
    ] {
        assert_eq!(
            malformed_code(&dl(p)),
            ErrorCode::DirectoryReferenceInvalid,
            "{p}"
        );
    }
    let long = "x".repeat(257);
    let attach = format!(
        r#"{{"type":"ATTACH_SESSION","id":"r1","ts":1,"payload":{{"session_id":"s1","browse_id":"{long}","directory_ref":"d"}}}}"#
    );
    assert_eq!(
        malformed_code(&attach),
        ErrorCode::DirectoryReferenceInvalid
    );
    let restore = r#"{"type":"RESTORE_SESSION","id":"r1","ts":1,"payload":{"session_id":"s1","root_grant":""}}"#;
    assert_eq!(malformed_code(restore), ErrorCode::RootGrantInvalid);
    let restore = format!(
        r#"{{"type":"RESTORE_SESSION","id":"r1","ts":1,"payload":{{"session_id":"s1","root_grant":"{}"}}}}"#,
        "g".repeat(131_073)
    );
    assert_eq!(malformed_code(&restore), ErrorCode::RootGrantInvalid);
    let e = err(restore.as_str());
    assert_eq!(e.answerable().map(|(id, _)| id), Some("r1"));
    assert_eq!(e.error_payload().unwrap().code, ErrorCode::RootGrantInvalid);
}

#[test]
fn hello_ack_limits_must_be_positive_and_session_ids_valid() {
    // 13.3.
    for field in [
        "max_file_size_bytes",
        "command_timeout_seconds",
        "max_concurrent",
    ] {
        for bad in ["0", "-1"] {
            let text = format!(
                r#"{{"type":"HELLO_ACK","id":"r1","ts":1,"payload":{{"granted_capabilities":["files"],"{field}":{bad}}}}}"#
            );
            assert_eq!(
                malformed_code(&text),
                ErrorCode::InternalError,
                "{field}={bad}"
            );
        }
    }
    let text = r#"{"type":"HELLO_ACK","id":"r1","ts":1,"payload":{"granted_capabilities":[],"session_id":"../x"}}"#;
    assert_eq!(malformed_code(text), ErrorCode::InternalError);
    let text = r#"{"type":"HELLO_ACK","id":"r1","ts":1,"payload":{"session_id":"s"}}"#;
    assert_eq!(
        malformed_code(text),
        ErrorCode::InternalError,
        "granted_capabilities is required"
    );
    let f = decode(r#"{"type":"HELLO_ACK","id":"r1","ts":1,"payload":{"granted_capabilities":["files","zz_new"]}}"#).unwrap();
    let Message::HelloAck(ack) = f.message else {
        panic!()
    };
    assert_eq!(
        (
            ack.max_file_size_bytes,
            ack.command_timeout_seconds,
            ack.max_concurrent
        ),
        (10_485_760, 30, 4)
    );
    assert_eq!(ack.protocol_version, None);
    assert_eq!(
        ack.granted_capabilities[1],
        crate::Capability::Unknown("zz_new".into())
    );
}

#[test]
fn platform_style_requests_decode_with_defaults() {
    let f = decode(
        r#"{"type":"FILE_READ","id":"r1","ts":1,"payload":{"path":"/a","encoding":"base64"}}"#,
    )
    .unwrap();
    let Message::FileRead(r) = f.message else {
        panic!()
    };
    assert!(!r.is_text(), "encoding base64 alone selects bytes mode");
    let f = decode(r#"{"type":"EXECUTE_COMMAND","id":"r1","ts":1,"payload":{"argv":["ls","-l"]}}"#)
        .unwrap();
    let Message::ExecuteCommand(c) = f.message else {
        panic!()
    };
    assert_eq!(
        c.argv.as_deref(),
        Some(&["ls".to_owned(), "-l".to_owned()][..])
    );
    assert_eq!(c.shell, crate::messages::exec::Shell::Auto);
    // Both command and argv decode; the handler refuses them at step 4.
    assert!(decode(r#"{"type":"EXECUTE_COMMAND","id":"r1","ts":1,"payload":{"argv":["ls"],"command":"ls"}}"#).is_ok());
    // All-optional computer-use payloads accept {} and an absent payload.
    for ty in [
        "CURSOR_POSITION_REQUEST",
        "DISPLAY_INFO_REQUEST",
        "WINDOW_LIST_REQUEST",
        "APP_LIST_REQUEST",
        "CLIPBOARD_READ",
    ] {
        assert!(
            decode(&format!(r#"{{"type":"{ty}","id":"r1","ts":1}}"#)).is_ok(),
            "{ty}"
        );
        assert!(
            decode(&format!(
                r#"{{"type":"{ty}","id":"r1","ts":1,"payload":null}}"#
            ))
            .is_ok(),
            "{ty}"
        );
    }
    // Integral floats are integers (COMPUTER_USE_HW.md 4).
    let f = decode(r#"{"type":"INPUT_ACTION","id":"r1","ts":1,"payload":{"action":"drag","path":[[1.0,2],[3,4.0]],"duration_ms":100.0}}"#).unwrap();
    let Message::InputAction(a) = f.message else {
        panic!()
    };
    assert_eq!(a.path, Some(vec![[1, 2], [3, 4]]));
    assert_eq!(a.duration_ms, Some(100));
    // Unknown actions decode so the handler can answer FEATURE_NOT_SUPPORTED.
    assert!(
        decode(r#"{"type":"INPUT_ACTION","id":"r1","ts":1,"payload":{"action":"teleport"}}"#)
            .is_ok()
    );
}

#[test]
fn shim_frames_always_carry_version_and_pending_capacity() {
    // 3.2 and 13.21.
    let status = Message::Status(Status {
        in_flight: 1,
        max_concurrent: 4,
        queue_depth: 0,
        audit_log_bytes: 48213,
        uptime_seconds: 90.02,
    });
    let text = encode_shim("s1", 1.5, Some(3), &status).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], "1.1");
    assert_eq!(v["pending_capacity"], 3);
    assert_eq!(decode(&text).unwrap().message, status);
    let text = encode_shim("s1", 1.5, None, &Message::Pong(Empty {})).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["pending_capacity"].is_null() && v.as_object().unwrap().contains_key("pending_capacity")
    );
    // A response without pending_capacity is accepted.
    let f = decode(r#"{"type":"ACK","id":"a","ts":1,"payload":{"ok":true}}"#).unwrap();
    assert_eq!(f.pending_capacity, None);
    // Platform frames have no version or pending_capacity.
    let text = encode_platform("p", 1.0, &Message::Ping(Empty {})).unwrap();
    assert!(!text.contains("version") && !text.contains("pending_capacity"));
    assert_eq!(
        encode_shim("", 1.0, None, &Message::Pong(Empty {})),
        Err(EncodeError::EmptyId)
    );
    assert_eq!(
        encode_shim("x", f64::NAN, None, &Message::Pong(Empty {})),
        Err(EncodeError::BadTimestamp)
    );
}

#[test]
fn oversized_responses_become_file_too_large_errors() {
    // 13.20: 2 796 202 NUL characters escape to six bytes each.
    let result = Message::CommandResult(crate::messages::exec::CommandResult {
        stdout: "\0".repeat(2_796_202),
        stderr: String::new(),
        exit_code: 0,
        timed_out: false,
        duration_seconds: 0.5,
        output_truncated: false,
    });
    assert!(matches!(
        encode_shim("r9", 1.0, Some(2), &result),
        Err(EncodeError::TooLarge { .. })
    ));
    let text = encode_shim_response("r9", 1.0, Some(2), &result).unwrap();
    assert!(text.len() < MAX_FRAME_BYTES);
    let f = decode(&text).unwrap();
    assert_eq!(f.id, "r9");
    assert_eq!(f.pending_capacity, Some(2));
    let Message::Error(e) = f.message else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::FileTooLarge);
    assert_eq!(e.details, None);
}

#[test]
fn hello_over_64_kib_is_refused_by_the_encoder() {
    let text = format!(
        r#"{{"type":"HELLO","id":"h","ts":1,"payload":{{"shim_version":"0.2.0","machine_id":"m","display_name":"d","platform":"linux","arch":"x86_64","local_llm_models":["{}"]}}}}"#,
        "m".repeat(70_000)
    );
    let f = decode(&text).unwrap();
    assert!(matches!(
        encode_shim("h", 1.0, None, &f.message),
        Err(EncodeError::HelloTooLarge { .. })
    ));
}

#[test]
fn the_nesting_scan_skips_strings_and_their_escapes_exactly() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    // Brackets inside strings never count, whatever the escapes before the quotes.
    let inside = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"payload":{{"x":"{}\\","y":"\"{}"}}}}"#,
        "[".repeat(300),
        "{".repeat(300)
    );
    assert!(decode(&inside).is_ok(), "{inside}");
    // An escaped backslash ends the string; the brackets after it are structure.
    let after = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"payload":{{"x":"\\","y":{}}}}}"#,
        deep(200)
    );
    assert_eq!(err(&after), DecodeError::TooDeep);
    // An escaped quote does not end the string.
    let escaped = format!(
        r#"{{"type":"PING","id":"r1","ts":1,"payload":{{"x":"\"{}\"","y":{}}}}}"#,
        "[".repeat(200),
        deep(10)
    );
    assert!(decode(&escaped).is_ok());
}
