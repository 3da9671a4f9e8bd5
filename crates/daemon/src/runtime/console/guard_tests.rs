use super::*;

fn addr() -> SocketAddr {
    "127.0.0.1:4567".parse().unwrap()
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn session(l: &Logins) -> String {
    match l.exchange(&l.token().unwrap()) {
        crate::runtime::console::state::Exchange::Session(c) => c,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_host_must_be_the_console_itself() {
    let l = Logins::default();
    for host in [
        "evil.example:4567",
        "localhost:4567",
        "127.0.0.1",
        "127.0.0.1:4568",
    ] {
        let h = headers(&[("host", host)]);
        assert_eq!(
            check(addr(), &l, &Method::GET, "/", &h),
            Err(Refusal::WrongHost),
            "{host}"
        );
    }
    let h = headers(&[]);
    assert_eq!(
        check(addr(), &l, &Method::GET, "/", &h),
        Err(Refusal::WrongHost)
    );
    let h = headers(&[("host", "127.0.0.1:4567")]);
    assert_eq!(check(addr(), &l, &Method::GET, "/", &h), Ok(()));
    assert_eq!(
        check(addr(), &l, &Method::GET, "/assets/app.js", &h),
        Ok(())
    );
}

#[test]
fn everything_else_needs_the_session_cookie() {
    let l = Logins::default();
    let c = session(&l);
    let no = headers(&[("host", "127.0.0.1:4567")]);
    let wrong = headers(&[
        ("host", "127.0.0.1:4567"),
        ("cookie", "autogpt_shim_console=abc"),
    ]);
    let good_cookie = format!("other=1; {COOKIE}={c}");
    let good = headers(&[("host", "127.0.0.1:4567"), ("cookie", &good_cookie)]);
    for path in ["/api/state", "/api/events", "/api/screenshot"] {
        assert_eq!(
            check(addr(), &l, &Method::GET, path, &no),
            Err(Refusal::NoSession)
        );
        assert_eq!(
            check(addr(), &l, &Method::GET, path, &wrong),
            Err(Refusal::NoSession)
        );
        assert_eq!(check(addr(), &l, &Method::GET, path, &good), Ok(()));
    }
}

#[test]
fn a_change_needs_the_cookie_and_the_consoles_own_origin() {
    let l = Logins::default();
    let c = format!("{COOKIE}={}", session(&l));
    let host = ("host", "127.0.0.1:4567");
    let post = |h: &HeaderMap| check(addr(), &l, &Method::POST, "/api/pause", h);
    assert_eq!(
        post(&headers(&[host, ("cookie", &c)])),
        Err(Refusal::CrossOrigin)
    );
    assert_eq!(
        post(&headers(&[
            host,
            ("cookie", &c),
            ("origin", "http://evil.example")
        ])),
        Err(Refusal::CrossOrigin)
    );
    assert_eq!(
        post(&headers(&[host, ("cookie", &c), ("origin", "null")])),
        Err(Refusal::CrossOrigin)
    );
    assert_eq!(
        post(&headers(&[host, ("origin", "http://127.0.0.1:4567")])),
        Err(Refusal::NoSession)
    );
    assert_eq!(
        post(&headers(&[
            host,
            ("cookie", &c),
            ("origin", "http://127.0.0.1:4567")
        ])),
        Ok(())
    );
    // Even the login page cannot be posted to.
    assert_eq!(
        check(
            addr(),
            &l,
            &Method::POST,
            "/",
            &headers(&[host, ("origin", "http://127.0.0.1:4567")])
        ),
        Err(Refusal::NoSession)
    );
}

#[test]
fn a_large_body_is_refused_by_its_length() {
    let l = Logins::default();
    let h = headers(&[("host", "127.0.0.1:4567"), ("content-length", "1000000")]);
    assert_eq!(
        check(addr(), &l, &Method::POST, "/api/pause", &h),
        Err(Refusal::TooLarge)
    );
}

#[test]
fn the_policy_allows_no_inline_script() {
    assert!(CSP.contains("script-src 'self'"));
    assert!(!CSP.contains("unsafe-inline"));
    assert!(!CSP.contains("unsafe-eval"));
    assert!(CSP.contains("default-src 'none'"));
}

#[test]
fn the_live_view_needs_the_cookie_and_the_consoles_own_origin_although_it_is_a_get() {
    let l = Logins::default();
    let c = format!("{COOKIE}={}", session(&l));
    let ok = headers(&[
        ("host", "127.0.0.1:4567"),
        ("cookie", &c),
        ("origin", "http://127.0.0.1:4567"),
    ]);
    assert_eq!(check(addr(), &l, &Method::GET, LIVE, &ok), Ok(()));
    for origin in [
        None,
        Some("http://evil.example"),
        Some("null"),
        Some("http://localhost:4567"),
    ] {
        let mut pairs = vec![("host", "127.0.0.1:4567"), ("cookie", c.as_str())];
        if let Some(o) = origin {
            pairs.push(("origin", o));
        }
        assert_eq!(
            check(addr(), &l, &Method::GET, LIVE, &headers(&pairs)),
            Err(Refusal::CrossOrigin),
            "{origin:?}"
        );
    }
    let no_cookie = headers(&[
        ("host", "127.0.0.1:4567"),
        ("origin", "http://127.0.0.1:4567"),
    ]);
    assert_eq!(
        check(addr(), &l, &Method::GET, LIVE, &no_cookie),
        Err(Refusal::NoSession)
    );
    // Other GETs still need no Origin.
    let plain = headers(&[("host", "127.0.0.1:4567"), ("cookie", &c)]);
    assert_eq!(
        check(addr(), &l, &Method::GET, "/api/state", &plain),
        Ok(())
    );
}
