use super::*;

#[test]
fn client_reads_the_servers_answer() {
    assert_eq!(client_accept(None, true), Ok(None));
    assert_eq!(
        client_accept(Some("permessage-deflate"), true),
        Ok(Some(Params::default()))
    );
    let p = client_accept(
        Some("Permessage-Deflate; server_no_context_takeover; client_max_window_bits=10; server_max_window_bits=\"12\""),
        true,
    )
    .unwrap()
    .unwrap();
    assert!(p.server_no_context_takeover);
    assert!(!p.client_no_context_takeover);
    assert_eq!(p.client_max_window_bits, 10);
    assert_eq!(p.server_max_window_bits, 12);
}

#[test]
fn client_fails_bad_answers() {
    // Not offered, another extension, two extensions.
    assert!(client_accept(Some("permessage-deflate"), false).is_err());
    assert!(client_accept(Some("x-webkit-deflate-frame"), true).is_err());
    assert_eq!(
        client_accept(Some("permessage-deflate, permessage-deflate"), true),
        Err(NegotiationError::Several)
    );
    for bad in [
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_max_window_bits",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; unknown_param",
    ] {
        assert!(client_accept(Some(bad), true).is_err(), "{bad}");
    }
}

#[test]
fn server_accepts_within_its_limits() {
    let none = ServerLimits::default();
    let (p, answer) = server_accept("permessage-deflate; client_max_window_bits", &none).unwrap();
    assert_eq!(p, Params::default());
    assert_eq!(answer, "permessage-deflate");
    // The client's own wishes are honoured.
    let (p, answer) = server_accept(
        "permessage-deflate; server_max_window_bits=10; client_no_context_takeover",
        &none,
    )
    .unwrap();
    assert_eq!(p.server_max_window_bits, 10);
    assert!(p.client_no_context_takeover);
    assert_eq!(
        answer,
        "permessage-deflate; client_no_context_takeover; server_max_window_bits=10"
    );
    // A server that limits the client's window needs the client's consent.
    let strict = ServerLimits {
        server_no_context_takeover: true,
        client_no_context_takeover: false,
        server_max_window_bits: Some(11),
        client_max_window_bits: Some(9),
    };
    assert!(server_accept("permessage-deflate", &strict).is_none());
    let (p, answer) = server_accept(
        "x-unknown, permessage-deflate; bogus, permessage-deflate; client_max_window_bits",
        &strict,
    )
    .unwrap();
    assert_eq!(
        answer,
        "permessage-deflate; server_no_context_takeover; server_max_window_bits=11; client_max_window_bits=9"
    );
    // What the server answers, the client accepts as the same parameters.
    assert_eq!(client_accept(Some(&answer), true), Ok(Some(p)));
    assert!(server_accept("foo, bar", &none).is_none());
}

#[test]
fn memory_estimate_follows_zlib() {
    let (d, i) = memory_estimate(15, 15);
    assert_eq!(d, 128 * 1024 + 128 * 1024 + 6 * 1024);
    assert_eq!(i, 32 * 1024 + 7 * 1024);
}
