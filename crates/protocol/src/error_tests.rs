use super::*;

#[test]
fn every_code_serialises_to_its_exact_wire_string_and_back() {
    for code in ErrorCode::ALL {
        let json = serde_json::to_string(code).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        assert_eq!(&serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        let s = code.as_str();
        assert!(
            s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
            "{s}"
        );
    }
    // Section 8 has 35 codes (with the six recording ones); the PROPOSED hardware adds 5;
    // the take-over of issue 30 adds DESKTOP_IN_USE.
    assert_eq!(ErrorCode::ALL.len(), 41);
    assert_eq!(
        ErrorCode::PathOutsideAllowedRoot.as_str(),
        "PATH_OUTSIDE_ALLOWED_ROOT"
    );
    assert_eq!(ErrorCode::ShimOverloaded.as_str(), "SHIM_OVERLOADED");
}

#[test]
fn unknown_codes_are_kept_verbatim_and_platform_only_codes_are_not_ours() {
    let c: ErrorCode = serde_json::from_str("\"SOMETHING_NEW\"").unwrap();
    assert_eq!(c, ErrorCode::Unknown("SOMETHING_NEW".into()));
    assert_eq!(serde_json::to_string(&c).unwrap(), "\"SOMETHING_NEW\"");
    for s in PLATFORM_ONLY_CODES {
        assert!(
            matches!(ErrorCode::from_wire(s), ErrorCode::Unknown(_)),
            "{s} must not be a daemon code"
        );
    }
}

#[test]
fn details_serialise_to_the_shapes_of_section_8() {
    let e = ErrorPayload::with_details(
        ErrorCode::CapabilityNotGranted,
        "Capability 'shell' is not granted.",
        &CapabilityNotGrantedDetails {
            capability: "shell".into(),
            required_capability: "shell".into(),
            granted_capabilities: vec!["files".into()],
        },
    );
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"code": "CAPABILITY_NOT_GRANTED", "message": "Capability 'shell' is not granted.",
            "fatal": false, "details": {"capability": "shell", "required_capability": "shell", "granted_capabilities": ["files"]}})
    );
    let v = serde_json::to_value(ErrorPayload::new(ErrorCode::PathNotFound, "x")).unwrap();
    assert!(v["details"].is_null() && v.as_object().unwrap().contains_key("details"));
    let d = FeatureNotSupportedDetails {
        feature: "input.key".into(),
        reason: None,
    };
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        serde_json::json!({"feature": "input.key"})
    );
}
