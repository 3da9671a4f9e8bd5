use super::*;
use proptest::prelude::*;

#[test]
fn no_truncation_keeps_everything_without_marker() {
    let mut c = Collector::new(10);
    c.push(Channel::Stdout, b"hello");
    c.push(Channel::Stderr, b"err");
    let r = c.finish();
    assert_eq!(
        (r.stdout.as_slice(), r.stderr.as_slice(), r.truncated),
        (&b"hello"[..], &b"err"[..], false)
    );
}

#[test]
fn budget_is_shared_in_arrival_order_and_marker_trims_stdout_first() {
    let mut c = Collector::new(40);
    c.push(Channel::Stdout, &[b'o'; 30]);
    c.push(Channel::Stderr, &[b'e'; 30]); // only 10 kept
    let r = c.finish();
    assert!(r.truncated);
    assert_eq!(r.stdout.len() + r.stderr.len(), 40);
    // 30 + 10 + 28 - 40 = 28 removed from stdout first.
    assert_eq!(r.stdout, vec![b'o'; 2]);
    let mut want = vec![b'e'; 10];
    want.extend_from_slice(TRUNCATION_MARKER);
    assert_eq!(r.stderr, want);
}

#[test]
fn excess_beyond_stdout_comes_from_stderr() {
    let mut c = Collector::new(30);
    c.push(Channel::Stderr, &[b'e'; 25]);
    c.push(Channel::Stdout, &[b'o'; 10]); // 5 kept
    let r = c.finish();
    assert_eq!(r.stdout, b"");
    assert_eq!(&r.stderr[..2], b"ee");
    assert_eq!(r.stderr.len(), 30);
}

#[test]
fn tiny_budget_cuts_the_marker() {
    let mut c = Collector::new(5);
    c.push(Channel::Stdout, b"0123456789");
    let r = c.finish();
    assert_eq!(r.stdout, b"");
    assert_eq!(r.stderr, &TRUNCATION_MARKER[..5]);
}

#[test]
fn budget_is_min_of_file_size_and_text_budget() {
    assert_eq!(budget(10_485_760), 2_785_280);
    assert_eq!(budget(1000), 1000);
}

#[test]
fn decode_replaces_maximal_ill_formed_subsequences() {
    // Unicode 6.3+ "substitution of maximal subparts" examples.
    assert_eq!(decode(b"a\xF0\x9F\x98b"), "a\u{FFFD}b");
    assert_eq!(decode(b"\xC0\xAF"), "\u{FFFD}\u{FFFD}");
    assert_eq!(decode(b"\xE2\x82\xAC"), "\u{20AC}");
}

proptest! {
    #[test]
    fn truncated_output_always_fills_exactly_the_budget(
        limit in 0usize..200,
        chunks in proptest::collection::vec((any::<bool>(), 0usize..120), 0..12),
    ) {
        let mut c = Collector::new(limit);
        let mut total = 0;
        for (is_out, n) in &chunks {
            total += n;
            c.push(if *is_out { Channel::Stdout } else { Channel::Stderr }, &vec![b'x'; *n]);
        }
        let r = c.finish();
        prop_assert_eq!(r.truncated, total > limit);
        if r.truncated {
            prop_assert_eq!(r.stdout.len() + r.stderr.len(), limit);
            let m = &TRUNCATION_MARKER[..TRUNCATION_MARKER.len().min(limit)];
            prop_assert!(r.stderr.ends_with(m));
        } else {
            prop_assert_eq!(r.stdout.len() + r.stderr.len(), total);
        }
    }
}
