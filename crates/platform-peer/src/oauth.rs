//! The platform's OAuth endpoints (AUDIT_AUTH_CLI.md 3.2-3.6) on the peer's port:
//! `GET /auth/authorize` (approves at once and redirects back with a code),
//! `POST /api/oauth/token` (authorization code with PKCE S256, refresh with rotation) and
//! `POST /api/oauth/revoke` (JSON body). Scripted failures let tests reach every error path.

use std::collections::HashMap;
use std::collections::HashSet;
use std::collections::VecDeque;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::Method;
use hyper::Request;
use hyper::Response;
use hyper::StatusCode;
use hyper::body::Incoming;

use crate::server::Shared;

/// The OAuth client id of the local executor.
pub const CLIENT_ID: &str = "autogpt-local-executor";

/// A scripted answer for the next token or revocation request.
#[derive(Debug, Clone)]
pub struct Scripted {
    /// HTTP status.
    pub status: u16,
    /// Body (sent as `application/json`).
    pub body: String,
}

struct CodeGrant {
    redirect_uri: String,
    challenge: String,
}

/// OAuth state shared by the endpoints.
#[derive(Default)]
pub(crate) struct OAuthState {
    codes: HashMap<String, CodeGrant>,
    refresh_tokens: HashSet<String>,
    pub(crate) access_tokens: HashSet<String>,
    pub(crate) token_requests: HashMap<String, usize>,
    pub(crate) scripted_token: VecDeque<Scripted>,
    pub(crate) scripted_revoke: VecDeque<Scripted>,
    pub(crate) revocations: Vec<(String, String)>,
    pub(crate) deny_authorization: bool,
    /// Every `code_verifier` received (a secrets-hygiene test looks for them in the output).
    pub(crate) code_verifiers: Vec<String>,
}

impl OAuthState {
    /// Mints a new token pair and remembers it.
    pub(crate) fn mint(&mut self) -> (String, String) {
        let access = format!("at-{}", uuid::Uuid::new_v4().simple());
        let refresh = format!("rt-{}", uuid::Uuid::new_v4().simple());
        self.access_tokens.insert(access.clone());
        self.refresh_tokens.insert(refresh.clone());
        (access, refresh)
    }
}

type Body = Full<Bytes>;

fn respond(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert("content-type", v);
    }
    r
}

fn json_error(status: u16, error: &str) -> Response<Body> {
    respond(
        status,
        "application/json",
        format!(r#"{{"error":"{error}"}}"#),
    )
}

fn is_loopback_callback(uri: &str) -> bool {
    ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"]
        .iter()
        .filter_map(|p| uri.strip_prefix(p))
        .any(|rest| {
            rest.split_once('/')
                .is_some_and(|(port, path)| port.parse::<u16>().is_ok() && path == "callback")
        })
}

/// Serves one plain HTTP request.
pub(crate) async fn serve(req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let method = req.method().clone();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return respond(400, "text/plain", "unreadable body"),
    };
    match (method, path.as_str()) {
        (Method::GET, "/auth/authorize") => authorize(&query, shared),
        (Method::POST, "/api/oauth/token") => {
            // Held while a test asks; a closed gate cannot happen (the sender lives in
            // `shared`), and would answer at once.
            let _ = shared.token_gate.subscribe().wait_for(|held| !held).await;
            token(&body, shared)
        }
        (Method::POST, "/api/oauth/revoke") => revoke(&body, shared),
        _ => respond(404, "text/plain", "not found"),
    }
}

fn authorize(query: &str, shared: &Shared) -> Response<Body> {
    let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    let expected = [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "code_challenge",
        "code_challenge_method",
        "state",
    ];
    if names != expected {
        shared.violation(format!(
            "authorization parameters {names:?}, expected {expected:?} in that order"
        ));
    }
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let Some(redirect) = get("redirect_uri").filter(|r| is_loopback_callback(r)) else {
        return respond(400, "text/plain", "invalid redirect_uri");
    };
    let state = get("state").unwrap_or("");
    let back = |extra: String| {
        let mut r = respond(302, "text/plain", "");
        let sep = if redirect.contains('?') { '&' } else { '?' };
        let location = format!(
            "{redirect}{sep}{extra}&state={}",
            form_urlencoded::byte_serialize(state.as_bytes()).collect::<String>()
        );
        if let Ok(v) = location.parse() {
            r.headers_mut().insert("location", v);
        }
        r
    };
    let valid = get("response_type") == Some("code")
        && get("client_id") == Some(CLIENT_ID)
        && get("scope").is_some_and(|s| s.split(' ').any(|x| x == "USE_TOOLS"))
        && get("code_challenge_method") == Some("S256")
        && get("code_challenge").is_some_and(|c| c.len() == 43);
    if !valid {
        return back("error=invalid_request".into());
    }
    let Ok(mut oauth) = shared.oauth.lock() else {
        return respond(500, "text/plain", "poisoned");
    };
    if oauth.deny_authorization {
        return back("error=access_denied".into());
    }
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    oauth.codes.insert(
        code.clone(),
        CodeGrant {
            redirect_uri: redirect.to_owned(),
            challenge: get("code_challenge").unwrap_or("").to_owned(),
        },
    );
    back(format!("code={code}"))
}

fn pkce_s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

fn token(body: &[u8], shared: &Shared) -> Response<Body> {
    let params: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let grant = get("grant_type").unwrap_or("").to_owned();
    let Ok(mut oauth) = shared.oauth.lock() else {
        return respond(500, "text/plain", "poisoned");
    };
    *oauth.token_requests.entry(grant.clone()).or_default() += 1;
    if let Some(s) = oauth.scripted_token.pop_front() {
        return respond(s.status, "application/json", s.body);
    }
    if get("client_id") != Some(CLIENT_ID) {
        return json_error(401, "invalid_client");
    }
    let expected: &[&str] = match grant.as_str() {
        "authorization_code" => &[
            "grant_type",
            "code",
            "redirect_uri",
            "client_id",
            "code_verifier",
        ],
        "refresh_token" => &["grant_type", "refresh_token", "client_id"],
        _ => return json_error(400, "unsupported_grant_type"),
    };
    if names != expected {
        shared.violation(format!(
            "token request fields {names:?}, expected {expected:?} in that order"
        ));
    }
    if grant == "authorization_code" {
        if let Some(v) = get("code_verifier") {
            oauth.code_verifiers.push(v.to_owned());
        }
        let Some(g) = get("code").and_then(|c| oauth.codes.remove(c)) else {
            return json_error(400, "invalid_grant");
        };
        if get("redirect_uri") != Some(g.redirect_uri.as_str())
            || get("code_verifier").map(pkce_s256).as_deref() != Some(g.challenge.as_str())
        {
            return json_error(400, "invalid_grant");
        }
    } else {
        let Some(rt) = get("refresh_token") else {
            return json_error(400, "invalid_request");
        };
        if !oauth.refresh_tokens.remove(rt) {
            return json_error(400, "invalid_grant");
        }
    }
    let (access, refresh) = oauth.mint();
    drop(oauth);
    if let Ok(mut c) = shared.config.lock() {
        c.tokens.push(access.clone());
    }
    let body = serde_json::json!({
        "access_token": access,
        "refresh_token": refresh,
        "token_type": "Bearer",
        "expires_in": 3600,
        "scope": "USE_TOOLS",
    });
    respond(200, "application/json", body.to_string())
}

#[derive(serde::Deserialize)]
struct RevokeBody {
    token: String,
    token_type_hint: String,
    client_id: String,
    client_secret: String,
}

fn revoke(body: &[u8], shared: &Shared) -> Response<Body> {
    let Ok(req) = serde_json::from_slice::<RevokeBody>(body) else {
        shared.violation("revocation body is not the JSON object of 3.6".into());
        return json_error(400, "invalid_request");
    };
    let Ok(mut oauth) = shared.oauth.lock() else {
        return respond(500, "text/plain", "poisoned");
    };
    if let Some(s) = oauth.scripted_revoke.pop_front() {
        return respond(s.status, "application/json", s.body);
    }
    if req.client_id != CLIENT_ID || !req.client_secret.is_empty() {
        return json_error(401, "invalid_client");
    }
    oauth.access_tokens.remove(&req.token);
    oauth.refresh_tokens.remove(&req.token);
    oauth
        .revocations
        .push((req.token_type_hint, req.token.clone()));
    drop(oauth);
    shared.forget_token(&req.token);
    respond(200, "application/json", "{}")
}
