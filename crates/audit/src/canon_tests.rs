use proptest::prelude::*;

use super::*;
use crate::value::Map;

#[test]
fn spec_float_examples() {
    let cases: &[(f64, &str)] = &[
        (1.0, "1.0"),
        (0.5, "0.5"),
        (1767225604.0, "1767225604.0"),
        (1767225603.125, "1767225603.125"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (123456789012345.6, "123456789012345.6"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (1.5e-07, "1.5e-07"),
        (2.5e+300, "2.5e+300"),
        (100000.0, "100000.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (1.7976931348623157e+308, "1.7976931348623157e+308"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (-2.5, "-2.5"),
        (1e100, "1e+100"),
    ];
    for (x, want) in cases {
        assert_eq!(float_to_string(*x).unwrap(), *want, "for {x:e}");
    }
}

#[test]
fn non_finite_floats_are_refused() {
    assert!(float_to_string(f64::NAN).is_err());
    assert!(float_to_string(f64::INFINITY).is_err());
    assert!(float_to_string(f64::NEG_INFINITY).is_err());
}

/// 7,520 doubles (random bit patterns, random magnitudes, timestamps, integers) formatted by
/// Python's `repr`, the reference the float layout was chosen to match.
#[test]
fn random_doubles_match_python_repr() {
    let data = include_str!("../tests/data/floats_python_repr.txt");
    let mut n = 0;
    for line in data.lines().filter(|l| !l.starts_with('#')) {
        let (bits, want) = line.split_once(' ').unwrap();
        let x = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
        assert_eq!(float_to_string(x).unwrap(), want, "bits {bits}");
        n += 1;
    }
    assert!(n > 7000);
}

proptest! {
    /// Any finite double: the layout round-trips exactly, and no shorter digit string does.
    #[test]
    fn float_layout_round_trips_and_is_shortest(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let s = float_to_string(x).unwrap();
        let back: f64 = s.parse().unwrap();
        prop_assert_eq!(back.to_bits(), x.to_bits());
        // Digits (without sign, point, leading zeros or exponent).
        let mant = s.trim_start_matches('-').split('e').next().unwrap().replace('.', "");
        let digits = mant.trim_start_matches('0').trim_end_matches('0');
        if digits.len() > 1 && x != 0.0 {
            let shorter = format!("{:.*e}", digits.len() - 2, x.abs());
            let y: f64 = shorter.parse().unwrap();
            prop_assert_ne!(y, x.abs(), "a shorter form {} exists for {}", shorter, s);
        }
    }
}

#[test]
fn string_escapes_follow_rule_4() {
    let mut out = Vec::new();
    write_str(
        &mut out,
        "a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}/\u{7f}\u{2028}é😀",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f/\u{7f}\u{2028}é😀\""
    );
}

#[test]
fn keys_sort_by_utf16_code_units() {
    // U+FF61 (one unit 0xFF61) sorts after U+1F600 (surrogates 0xD83D...) in UTF-16 order,
    // although its UTF-8 bytes sort before.
    assert_eq!(cmp_keys("\u{ff61}", "\u{1f600}"), Ordering::Greater);
    assert_eq!(cmp_keys("a", "ab"), Ordering::Less);
    let v = Value::Object(
        Map::new()
            .with("b", 1)
            .with("a", 2)
            .with("\u{ff61}", 3)
            .with("\u{1f600}", 4),
    );
    assert_eq!(
        String::from_utf8(to_canonical(&v).unwrap()).unwrap(),
        "{\"a\":2,\"b\":1,\"\u{1f600}\":4,\"\u{ff61}\":3}"
    );
}

#[test]
fn spec_canonical_example_and_mac() {
    let key = crate::AuditKey::from_bytes(&(0u8..32).collect::<Vec<_>>()).unwrap();
    let v = Value::Object(
        Map::new()
            .with("ts", 1767225600.25)
            .with("session_id", "-")
            .with("machine_id", "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f")
            .with("shim_version", "0.1.0")
            .with("request_id", Value::Null)
            .with("op", "SHIM_START")
            .with("details", Map::new().with("shim_version", "0.1.0"))
            .with(
                "result",
                Map::new()
                    .with("ok", true)
                    .with("exit_code", Value::Null)
                    .with("duration_ms", 0)
                    .with("error_code", Value::Null),
            )
            .with("seq", 1)
            .with("prev_hmac", Value::Null),
    );
    let canon = to_canonical(&v).unwrap();
    assert_eq!(
        String::from_utf8(canon.clone()).unwrap(),
        r#"{"details":{"shim_version":"0.1.0"},"machine_id":"3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f","op":"SHIM_START","prev_hmac":null,"request_id":null,"result":{"duration_ms":0,"error_code":null,"exit_code":null,"ok":true},"seq":1,"session_id":"-","shim_version":"0.1.0","ts":1767225600.25}"#
    );
    assert_eq!(
        key.mac_hex(&canon),
        "62d1e5eb3a87b38c1cf254c1e9ed33a49cfc58a5bbaeb165a2d9db86e7aa65d1"
    );
    let mut line = Vec::new();
    write_line_form(&mut line, &v).unwrap();
    assert!(String::from_utf8(line).unwrap().starts_with(
        r#"{"ts": 1767225600.25, "session_id": "-", "machine_id": "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f", "shim_version": "0.1.0", "request_id": null, "op": "SHIM_START", "details": {"shim_version": "0.1.0"}, "result": {"ok": true,"#
    ));
}
