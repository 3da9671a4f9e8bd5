use super::*;

fn v(s: &str) -> ProtocolVersion {
    ProtocolVersion::parse(s).unwrap()
}

#[test]
fn parses_only_major_dot_minor() {
    assert_eq!(v("1.1"), ProtocolVersion { major: 1, minor: 1 });
    assert_eq!(
        v("10.27"),
        ProtocolVersion {
            major: 10,
            minor: 27
        }
    );
    for bad in [
        "1", "v1.0", "1.0.1", "", ".", "1.", ".1", "1.a", " 1.1", "1.1 ", "+1.1", "1.-1",
    ] {
        assert!(
            ProtocolVersion::parse(bad).is_err(),
            "{bad:?} must be malformed"
        );
    }
}

#[test]
fn negotiation_examples_of_section_4() {
    let cases = [
        ("1.0", "1.0", "1.0"),
        ("1.2", "1.7", "1.2"),
        ("1.7", "1.2", "1.2"),
    ];
    for (a, b, want) in cases {
        assert_eq!(v(a).negotiate(v(b)).unwrap(), v(want));
    }
    assert!(matches!(
        v("1.5").negotiate(v("2.0")),
        Err(NegotiationError::MajorMismatch { .. })
    ));
}

#[test]
fn hello_ack_defaults_and_pinned_cases_of_section_13() {
    // 13.2: missing -> 1.1; 1.0 -> 1.0; 1.9 -> 1.1; 2.0 -> mismatch.
    assert_eq!(
        negotiate(SHIM_VERSION, None, SHIM_VERSION).unwrap(),
        v("1.1")
    );
    assert_eq!(
        negotiate(SHIM_VERSION, Some("1.0"), SHIM_VERSION).unwrap(),
        v("1.0")
    );
    assert_eq!(
        negotiate(SHIM_VERSION, Some("1.9"), SHIM_VERSION).unwrap(),
        v("1.1")
    );
    assert!(matches!(
        negotiate(SHIM_VERSION, Some("2.0"), SHIM_VERSION),
        Err(NegotiationError::MajorMismatch { .. })
    ));
    assert!(matches!(
        negotiate(SHIM_VERSION, Some("one"), SHIM_VERSION),
        Err(NegotiationError::Malformed(_))
    ));
}
