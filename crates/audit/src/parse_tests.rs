use super::*;

fn canon(line: &str) -> String {
    let n = parse(line.as_bytes()).unwrap();
    let mut out = Vec::new();
    write_canonical_node(&mut out, &n, Some("hmac"));
    String::from_utf8(out).unwrap()
}

#[test]
fn keeps_integer_float_distinction() {
    assert_eq!(
        canon(r#"{"a": 12, "b": 12.0, "c": 1.5e3, "d": -0, "e": 123456789012345678901234567890}"#),
        r#"{"a":12,"b":12.0,"c":1500.0,"d":0,"e":123456789012345678901234567890}"#
    );
}

#[test]
fn drops_top_level_hmac_only_and_sorts() {
    assert_eq!(
        canon(r#"{"z": {"hmac": 1}, "hmac": "x", "a": [1, "\u00e9\n"]}"#),
        "{\"a\":[1,\"\u{e9}\\n\"],\"z\":{\"hmac\":1}}"
    );
}

#[test]
fn rejects_non_strict_json() {
    for bad in [
        "",
        "{",
        "{\"a\":1,}",
        "[1,]",
        "{\"a\":NaN}",
        "{\"a\":Infinity}",
        "{'a':1}",
        "\u{feff}{}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":1e}",
        "{\"a\":\"\t\"}",
        "{\"a\":1}{}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":1e400}",
        "{\"a\":\"\\x\"}",
        "{\"a\":1,\"\\u0061\":2}",
    ] {
        assert!(parse(bad.as_bytes()).is_err(), "accepted {bad:?}");
    }
    assert!(parse(b"{\"a\":\"\xff\"}").is_err());
    let deep = "[".repeat(MAX_DEPTH + 5) + &"]".repeat(MAX_DEPTH + 5);
    assert!(parse(deep.as_bytes()).is_err());
}

#[test]
fn accepts_crlf_and_surrogate_pairs() {
    let n = parse(b"{\"a\": \"\\ud83d\\ude00\"}\r").unwrap();
    assert_eq!(n.get("a").unwrap().as_str(), Some("\u{1f600}"));
}

#[test]
fn pretty_print_keeps_file_order() {
    let n =
        parse("{\"b\": 1, \"a\": {\"x\": [1, 2.5], \"y\": {}}, \"é\": \"ü\"}".as_bytes()).unwrap();
    let mut out = Vec::new();
    write_pretty(&mut out, &n, 0);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\n  \"b\": 1,\n  \"a\": {\n    \"x\": [\n      1,\n      2.5\n    ],\n    \"y\": {}\n  },\n  \"é\": \"ü\"\n}"
    );
}
