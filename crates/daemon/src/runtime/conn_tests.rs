#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn data_url_encodes_everything_but_unreserved() {
    assert_eq!(
        data_url("ws://h/ws/local-executor/", "abc-1.2_3~"),
        "ws://h/ws/local-executor/abc-1.2_3~"
    );
    assert_eq!(
        data_url("ws://h/ws/local-executor", "a/b:c"),
        "ws://h/ws/local-executor/a%2Fb%3Ac"
    );
}

#[test]
fn backoff_formula() {
    assert_eq!(backoff_delay(1.0, 60.0, 0), 1.0);
    assert_eq!(backoff_delay(1.0, 60.0, 3), 8.0);
    assert_eq!(backoff_delay(1.0, 60.0, 10), 60.0);
    assert_eq!(backoff_delay(1.0, 60.0, 1000), 60.0);
    for _ in 0..100 {
        let j = jitter(5.0);
        assert!((0.0..=5.0).contains(&j));
    }
    assert_eq!(jitter(0.0), 0.0);
}
