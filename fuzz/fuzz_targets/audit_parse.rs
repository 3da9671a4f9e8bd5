//! Fuzzes the strict audit-line parser (`shim_audit::parse::parse`, AUDIT_AUTH_CLI.md 1.14
//! step 1), the canonical writer of 1.9 and the verifier's fast path.
//!
//! Invariants, for any input:
//! * `parse` returns a value or a `ParseError` whose offset lies inside the line; it never
//!   panics (deep nesting is refused, not a stack overflow).
//! * When it parses, the canonical form is canonical: it parses again, and canonicalising that
//!   gives the same bytes (canonical(parse(canonical(x))) == canonical(x)). It is strict ASCII
//!   JSON punctuation-wise: it never contains a raw control byte.
//! * `write_pretty` (the layout of `audit show`) does not panic and yields JSON with the same
//!   canonical form.
//! * Skipping the top-level `hmac` member (the MAC input) equals canonicalising the object
//!   without that member.
//! * Per line of the input: whenever the verifier's fast path produces a MAC input, the
//!   general path (parse + canonical) accepts the line and produces the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_audit::parse;
use shim_audit::parse::Node;

fn canonical(node: &Node<'_>, skip: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    parse::write_canonical_node(&mut out, node, skip);
    out
}

fuzz_target!(|data: &[u8]| {
    match parse::parse(data) {
        Err(e) => assert!(
            e.offset <= data.len(),
            "error offset {} past the end",
            e.offset
        ),
        Ok(node) => {
            let c1 = canonical(&node, None);
            assert!(
                !c1.iter().any(|&b| b < 0x20),
                "raw control byte in canonical form"
            );
            let again = parse::parse(&c1).unwrap_or_else(|e| {
                panic!(
                    "canonical form does not parse ({e}): {}",
                    String::from_utf8_lossy(&c1)
                )
            });
            assert_eq!(canonical(&again, None), c1, "canonical form is not stable");

            let mut pretty = Vec::new();
            parse::write_pretty(&mut pretty, &node, 0);
            let p = parse::parse(&pretty).unwrap_or_else(|e| {
                panic!(
                    "pretty form does not parse ({e}): {}",
                    String::from_utf8_lossy(&pretty)
                )
            });
            assert_eq!(canonical(&p, None), c1, "pretty form changed the value");

            if let Node::Object(members) = &node {
                let without = Node::Object(
                    members
                        .iter()
                        .filter(|(k, _)| k != "hmac")
                        .cloned()
                        .collect(),
                );
                assert_eq!(
                    canonical(&node, Some("hmac")),
                    canonical(&without, None),
                    "skipping hmac differs from removing it"
                );
            }
        }
    }

    // Differential: the verifier's fast path against the general path, line by line.
    let lines: Vec<&[u8]> = data.split(|&c| c == b'\n').collect();
    for (line, fast) in lines
        .iter()
        .zip(shim_audit::testing::fast_canonical_lines(&lines))
    {
        let Some(fast) = fast else {
            continue;
        };
        let node = parse::parse(line).unwrap_or_else(|e| {
            panic!(
                "fast path accepted a line the parser refuses ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        assert!(
            matches!(node, Node::Object(_)),
            "fast path accepted a non-object"
        );
        assert_eq!(
            String::from_utf8_lossy(&fast),
            String::from_utf8_lossy(&canonical(&node, Some("hmac"))),
            "fast and general path disagree on the MAC input"
        );
    }
});
