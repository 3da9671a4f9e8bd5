use proptest::prelude::*;

use std::cell::RefCell;

use super::*;

thread_local! {
    static SHARED: RefCell<Fast> = RefCell::new(Fast::default());
}
use crate::parse;

fn tree(line: &[u8]) -> Option<Vec<u8>> {
    let n = parse::parse(line).ok()?;
    let mut out = Vec::new();
    parse::write_canonical_node(&mut out, &n, Some("hmac"));
    Some(out)
}

/// JSON text with random spacing; keys and strings may need escapes (exercising fallback).
fn json(depth: u32) -> BoxedStrategy<String> {
    let key = prop::sample::select(vec![
        "a",
        "b",
        "hmac",
        "seq",
        "prev_hmac",
        "op",
        "é",
        "\u{ff61}",
        "\u{1f600}",
        "Z",
        "ab",
        "a\\\"b",
        "x/y",
    ]);
    let scalar = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        any::<i64>().prop_map(|i| i.to_string()),
        Just("-0".to_owned()),
        Just("12345678901234567890123".to_owned()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        "[a-z0-9 é😀/]{0,12}".prop_map(|s| format!("\"{s}\"")),
        Just("\"with \\\"escape\\\"\"".to_owned()),
        Just("\"tab\\there\"".to_owned()),
    ];
    if depth == 0 {
        return scalar.boxed();
    }
    let sp = prop::sample::select(vec!["", " ", "  "]);
    prop_oneof![
        3 => scalar,
        1 => (prop::collection::vec(json(depth - 1), 0..4), sp.clone())
            .prop_map(|(items, sp)| format!("[{sp}{}{sp}]", items.join(&format!(",{sp}")))),
        2 => (prop::collection::vec((key, json(depth - 1)), 0..6), sp)
            .prop_map(|(members, sp)| {
                let m: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\"{sp}:{sp}{v}")).collect();
                format!("{{{sp}{}{sp}}}", m.join(&format!(",{sp}")))
            }),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever the fast path accepts, the general path accepts too, with identical output.
    #[test]
    fn fast_path_equals_general_path(text in json(3), cut in any::<prop::sample::Index>(), do_cut in any::<bool>()) {
        let mut bytes = text.into_bytes();
        if do_cut && !bytes.is_empty() {
            bytes.truncate(cut.index(bytes.len()));
        }
        let mut out = Vec::new();
        // One Fast for all cases, so remembered shapes are exercised too.
        let accepted = SHARED.with(|f| f.borrow_mut().line(&bytes, &mut out).is_some());
        if accepted {
            let slow = tree(&bytes);
            prop_assert!(slow.is_some(), "fast accepted what the parser rejects: {}", String::from_utf8_lossy(&bytes));
            let slow = slow.unwrap_or_default();
            prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&slow));
        }
    }
}

#[test]
fn facts_of_a_record() {
    let line = br#"{"ts": 1.5, "op": "X", "seq": 7, "prev_hmac": null, "hmac": "ab", "details": {"b": 1, "a": [1.0, -0]}}"#;
    let mut out = Vec::new();
    let t = Fast::default().line(line, &mut out).unwrap();
    assert_eq!(t.seq, Some("7"));
    assert_eq!(t.prev, FastPrev::Null);
    assert_eq!(t.hmac, Some("ab"));
    assert_eq!(t.op, Some("X"));
    assert_eq!(out, tree(line).unwrap());
    for fallback in [
        &br#"{"a": "\n"}"#[..],
        br#"{"a": 1, "a": 2}"#,
        b"{\"a\":\t1}",
        br#"{"a": 1e999}"#,
    ] {
        assert!(Fast::default().line(fallback, &mut out).is_none());
    }
}
