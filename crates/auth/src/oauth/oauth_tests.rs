use super::callback::decide;
use super::*;

#[test]
fn pkce_values_have_the_specified_shape() {
    let v = pkce::verifier().unwrap();
    assert_eq!(v.expose().len(), 86);
    assert_eq!(pkce::state().unwrap().expose().len(), 43);
    // RFC 7636 appendix B.
    let v = Secret::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
    assert_eq!(
        pkce::challenge(&v),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    assert!(pkce::ct_eq(b"abc", b"abc"));
    assert!(!pkce::ct_eq(b"abc", b"abd"));
    assert!(!pkce::ct_eq(b"abc", b"abcd"));
}

#[test]
fn fixed_endpoints_follow_3_2() {
    let e = Endpoints::fixed("https://platform.autogpt.net/", None).unwrap();
    assert_eq!(
        e.authorize.as_str(),
        "https://platform.autogpt.net/auth/authorize"
    );
    assert_eq!(
        e.token.as_str(),
        "https://platform.autogpt.net/api/oauth/token"
    );
    assert_eq!(
        e.revoke.unwrap().as_str(),
        "https://platform.autogpt.net/api/oauth/revoke"
    );
    // platform_oauth_url moves /authorize only.
    let e = Endpoints::fixed("https://p.example", Some("https://login.example/oauth/")).unwrap();
    assert_eq!(
        e.authorize.as_str(),
        "https://login.example/oauth/authorize"
    );
    assert_eq!(e.token.as_str(), "https://p.example/api/oauth/token");
}

#[test]
fn callback_checks_run_in_the_specified_order() {
    let st = Secret::new("expected-state");
    // Stray paths are ignored.
    assert!(decide("/favicon.ico", "code=x&state=expected-state", &st).is_none());
    assert!(decide("/", "", &st).is_none());
    // State before error.
    assert_eq!(
        decide("/callback", "error=access_denied&state=wrong", &st).unwrap(),
        Err(OAuthError::StateMismatch)
    );
    assert_eq!(
        decide("/callback", "error=access_denied", &st).unwrap(),
        Err(OAuthError::StateMismatch)
    );
    assert_eq!(
        decide("/callback", "error=access_denied&state=expected-state", &st).unwrap(),
        Err(OAuthError::Denied("access_denied".into()))
    );
    assert_eq!(
        decide("/callback", "code=&state=expected-state", &st).unwrap(),
        Err(OAuthError::NoCode)
    );
    let code = decide("/callback", "code=c0de&state=expected-state", &st)
        .unwrap()
        .unwrap();
    assert_eq!(code.expose(), "c0de");
    // An error value cannot inject markup.
    assert_eq!(
        decide("/callback", "error=%3Cscript%3Ex&state=expected-state", &st).unwrap(),
        Err(OAuthError::Denied("scriptx".into()))
    );
}

#[test]
fn error_descriptions_carry_only_oauth_error_fields() {
    assert_eq!(
        describe(
            400,
            br#"{"error":"invalid_grant","error_description":"expired","access_token":"leak"}"#
        ),
        "HTTP 400 (invalid_grant: expired)"
    );
    assert_eq!(describe(500, b"<html>secret</html>"), "HTTP 500");
}

#[tokio::test]
async fn ports_busy_and_the_first_free_port() {
    // A range of our own, far from the default one other tests use.
    let first = 47_311;
    let mut held = Vec::new();
    for p in first..first + PORT_RANGE_LEN - 1 {
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", p)) {
            held.push(l);
        }
    }
    let cb = Callback::bind(first).unwrap();
    assert_eq!(cb.port(), first + PORT_RANGE_LEN - 1);
    let err = Callback::bind(first).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "Could not bind OAuth callback on ports {first}-{}",
            first + PORT_RANGE_LEN - 1
        )
    );
}

#[tokio::test]
async fn the_wait_ignores_stray_requests_and_times_out() {
    let cb = Callback::bind(47_331).unwrap();
    let port = cb.port();
    let st = Secret::new("s");
    let waiter = tokio::spawn(async move { cb.wait(&st, Duration::from_secs(2)).await });
    // A stray request gets 404 and the wait goes on.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    use tokio::io::AsyncReadExt;
    use tokio::io::AsyncWriteExt;
    s.write_all(b"GET /favicon.ico HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 404"));
    assert_eq!(waiter.await.unwrap().err(), Some(OAuthError::Timeout));
    // The listener is closed afterwards.
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
    );
}

#[test]
fn token_set_debug_redacts() {
    let t = TokenSet {
        access: Secret::new("at-very-secret"),
        refresh: Some(Secret::new("rt-very-secret")),
    };
    let d = format!("{t:?}");
    assert!(!d.contains("very-secret"), "{d}");
}
