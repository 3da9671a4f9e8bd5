use super::*;

#[test]
fn fatal_codes_are_exactly_4426_to_4429() {
    for code in [4426, 4427, 4428, 4429] {
        assert!(matches!(classify(code), CloseAction::Fatal(f) if f.code() == code));
    }
    for code in [
        1006, 1009, 1011, 1002, 4400, 4401, 4403, 4408, 4500, 4430, 3000,
    ] {
        assert_eq!(classify(code), CloseAction::BackoffReconnect, "{code}");
    }
    assert_eq!(classify(1000), CloseAction::CleanReconnect);
    assert_eq!(classify(1001), CloseAction::CleanReconnect);
}

#[test]
fn audit_reasons_are_lowercased_labels() {
    for f in [
        FatalClose::ProtocolVersionMismatch,
        FatalClose::SessionTakenOver,
        FatalClose::SessionRevoked,
        FatalClose::PlatformShutdown,
    ] {
        assert_eq!(f.audit_reason(), f.label().to_lowercase());
    }
}

#[test]
fn version_mismatch_reason_fits_and_keeps_required_keys() {
    let long_hint = "Upgrade the AutoGPT local executor to a release that speaks this platform's \
                     protocol major version; see the documentation for details.";
    let r = version_mismatch_reason("1.1", "2.0", long_hint);
    assert!(r.len() <= 123, "{} bytes", r.len());
    let v: serde_json::Value = serde_json::from_str(&r).unwrap();
    for key in ["error", "shim_max", "platform_max", "hint"] {
        assert!(v.get(key).is_some(), "missing {key} in {r}");
    }
    assert_eq!(v["platform_max"], "2.0");
    // A huge platform version still yields a valid reason within the limit.
    let r = version_mismatch_reason("1.1", &"9".repeat(200), "x");
    assert!(r.len() <= 123);
    assert!(serde_json::from_str::<serde_json::Value>(&r).is_ok());
}

#[test]
fn truncate_reason_respects_char_boundaries() {
    let s = "é".repeat(100); // 200 bytes
    let t = truncate_reason(&s);
    assert!(t.len() <= 123 && t.len() >= 122);
    assert_eq!(truncate_reason("short"), "short");
}
