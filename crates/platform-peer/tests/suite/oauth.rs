//! The OAuth endpoints of AUDIT_AUTH_CLI.md 3.2-3.6, driven with plain HTTP requests.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use super::client::connect;

struct HttpResponse {
    status: u16,
    headers: String,
    body: String,
}

async fn http(
    peer: &Peer,
    method: &str,
    target: &str,
    content_type: &str,
    body: &str,
) -> HttpResponse {
    let mut s = tokio::net::TcpStream::connect(peer.addr()).await.unwrap();
    let req = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    HttpResponse {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

fn form(pairs: &[(&str, &str)]) -> String {
    let mut f = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        f.append_pair(k, v);
    }
    f.finish()
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

const REDIRECT: &str = "http://127.0.0.1:41899/callback";
const VERIFIER: &str =
    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXkdBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

async fn authorize(peer: &Peer, client_id: &str) -> String {
    let q = form(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("scope", "USE_TOOLS"),
        ("code_challenge", &challenge(VERIFIER)),
        ("code_challenge_method", "S256"),
        ("state", "st-1"),
    ]);
    let r = http(
        peer,
        "GET",
        &format!("/auth/authorize?{q}"),
        "text/plain",
        "",
    )
    .await;
    assert_eq!(r.status, 302);
    let loc = r
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .to_owned();
    assert!(loc.starts_with(REDIRECT), "{loc}");
    assert!(loc.ends_with("&state=st-1"), "{loc}");
    loc
}

fn code_of(location: &str) -> String {
    location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .unwrap()
        .to_owned()
}

async fn exchange(peer: &Peer, code: &str, verifier: &str) -> HttpResponse {
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("client_id", "autogpt-local-executor"),
        ("code_verifier", verifier),
    ]);
    http(
        peer,
        "POST",
        "/api/oauth/token",
        "application/x-www-form-urlencoded",
        &body,
    )
    .await
}

async fn refresh(peer: &Peer, rt: &str) -> HttpResponse {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", rt),
        ("client_id", "autogpt-local-executor"),
    ]);
    http(
        peer,
        "POST",
        "/api/oauth/token",
        "application/x-www-form-urlencoded",
        &body,
    )
    .await
}

fn tokens(r: &HttpResponse) -> (String, String) {
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    (
        v["access_token"].as_str().unwrap().to_owned(),
        v["refresh_token"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn login_with_pkce_yields_tokens_that_open_the_websocket() {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let code = code_of(&authorize(&p, "autogpt-local-executor").await);
    let r = exchange(&p, &code, VERIFIER).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (access, _refresh) = tokens(&r);
    assert!(connect(&p.ws_base(), Some(&access)).await.is_ok());
    assert_eq!(
        connect(&p.ws_base(), Some("someone-else")).await.err(),
        Some(401)
    );
    // A code is single use.
    assert_eq!(exchange(&p, &code, VERIFIER).await.status, 400);
    assert!(p.violations().is_empty(), "{:?}", p.violations());
}

#[tokio::test]
async fn a_wrong_verifier_or_client_is_refused() {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let code = code_of(&authorize(&p, "autogpt-local-executor").await);
    let r = exchange(&p, &code, "wrong-verifier").await;
    assert_eq!((r.status, r.body.contains("invalid_grant")), (400, true));
    let loc = authorize(&p, "another-client").await;
    assert!(loc.contains("error=invalid_request"), "{loc}");
    p.deny_authorization(true);
    assert!(
        authorize(&p, "autogpt-local-executor")
            .await
            .contains("error=access_denied")
    );
}

#[tokio::test]
async fn refresh_rotates_the_refresh_token_and_counts_requests() {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let (old_access, rt) = p.issue_tokens();
    p.expire_access_token(&old_access);
    assert_eq!(
        connect(&p.ws_base(), Some(&old_access)).await.err(),
        Some(401)
    );
    let r = refresh(&p, &rt).await;
    assert_eq!(r.status, 200);
    let (access, new_rt) = tokens(&r);
    assert_ne!(new_rt, rt);
    assert!(connect(&p.ws_base(), Some(&access)).await.is_ok());
    assert_eq!(
        refresh(&p, &rt).await.status,
        400,
        "the old refresh token was rotated out"
    );
    assert_eq!(p.token_requests("refresh_token"), 2);
    p.script_token_response(503, r#"{"error":"temporarily_unavailable"}"#);
    assert_eq!(refresh(&p, &new_rt).await.status, 503);
    assert_eq!(
        refresh(&p, &new_rt).await.status,
        200,
        "a scripted answer is used once"
    );
}

#[tokio::test]
async fn token_fields_out_of_order_are_recorded() {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let (_, rt) = p.issue_tokens();
    let body = form(&[
        ("refresh_token", &rt),
        ("grant_type", "refresh_token"),
        ("client_id", "autogpt-local-executor"),
    ]);
    let r = http(
        &p,
        "POST",
        "/api/oauth/token",
        "application/x-www-form-urlencoded",
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(p.violations().len(), 1);
}

#[tokio::test]
async fn revocation_takes_json_and_can_be_made_to_fail() {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let (access, rt) = p.issue_tokens();
    p.script_revoke_response(500, r#"{"error":"server_error"}"#);
    let body = |t: &str, hint: &str| {
        serde_json::json!({"token": t, "token_type_hint": hint, "client_id": "autogpt-local-executor", "client_secret": ""}).to_string()
    };
    assert_eq!(
        http(
            &p,
            "POST",
            "/api/oauth/revoke",
            "application/json",
            &body(&access, "access_token")
        )
        .await
        .status,
        500
    );
    assert!(
        connect(&p.ws_base(), Some(&access)).await.is_ok(),
        "a failed revocation revokes nothing"
    );
    assert_eq!(
        http(
            &p,
            "POST",
            "/api/oauth/revoke",
            "application/json",
            &body(&access, "access_token")
        )
        .await
        .status,
        200
    );
    assert_eq!(
        http(
            &p,
            "POST",
            "/api/oauth/revoke",
            "application/json",
            &body(&rt, "refresh_token")
        )
        .await
        .status,
        200
    );
    assert_eq!(connect(&p.ws_base(), Some(&access)).await.err(), Some(401));
    assert_eq!(refresh(&p, &rt).await.status, 400);
    let hints: Vec<String> = p.revocations().into_iter().map(|(h, _)| h).collect();
    assert_eq!(hints, ["access_token", "refresh_token"]);
    // A form body is not what 3.6 specifies.
    let r = http(
        &p,
        "POST",
        "/api/oauth/revoke",
        "application/x-www-form-urlencoded",
        "token=x",
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(p.violations().len(), 1);
}
