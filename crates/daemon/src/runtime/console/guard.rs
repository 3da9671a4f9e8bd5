//! Every request to the console passes here first (STYLE.md 22: a local web UI is a server on
//! someone's laptop, so every request is treated as hostile):
//!
//! * the `Host` header must be the console's own `127.0.0.1:PORT` (no DNS rebinding);
//! * a body over [`MAX_BODY`] bytes is refused with 413 before it is read;
//! * everything but the login page and the static assets needs the session cookie;
//! * a request that changes something (any method but GET and HEAD) also needs an `Origin`
//!   header equal to the console's own origin (no cross-site request forgery); so does the
//!   live view's WebSocket ([`LIVE`]), a GET that browsers send from any page with the
//!   page's `Origin` (no cross-site WebSocket hijacking);
//! * every answer carries a strict Content-Security-Policy (no inline script), `nosniff`,
//!   no referrer, no caching, no framing; there are no CORS headers, so no other origin
//!   can read an answer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::HeaderValue;
use axum::http::Method;
use axum::http::StatusCode;
use axum::http::header;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;

use crate::runtime::console::state::COOKIE;
use crate::runtime::console::state::ConsoleState;
use crate::runtime::console::state::Logins;

/// The largest request body accepted (the console's requests carry none).
pub(crate) const MAX_BODY: usize = 4096;

/// The Content-Security-Policy of every answer.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The live view's WebSocket path.
pub(crate) const LIVE: &str = "/api/live";

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The Host header is not the console's address.
    WrongHost,
    /// The body is too large.
    TooLarge,
    /// No valid session cookie.
    NoSession,
    /// A state change without the console's own Origin.
    CrossOrigin,
}

impl Refusal {
    fn status(self) -> StatusCode {
        match self {
            Refusal::WrongHost | Refusal::CrossOrigin => StatusCode::FORBIDDEN,
            Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::NoSession => StatusCode::UNAUTHORIZED,
        }
    }

    fn message(self) -> &'static str {
        match self {
            Refusal::WrongHost => {
                "refused: the Host header is not this console's address (open the URL that `autogpt-shim console` prints)\n"
            }
            Refusal::TooLarge => "refused: the request body is too large\n",
            Refusal::NoSession => {
                "refused: not logged in; run `autogpt-shim console` to get a login link\n"
            }
            Refusal::CrossOrigin => {
                "refused: a change must come from the console's own page (Origin header)\n"
            }
        }
    }
}

/// The value of cookie `name` in `headers`, if sent.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether `path` is served without a session (the login page and static assets).
fn public(path: &str) -> bool {
    path == "/" || path.starts_with("/assets/")
}

/// The checks of the module doc on one request's head (pure, for tests).
pub(crate) fn check(
    addr: SocketAddr,
    logins: &Logins,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if host != Some(addr.to_string().as_str()) {
        return Err(Refusal::WrongHost);
    }
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|l| l > MAX_BODY as u64) {
        return Err(Refusal::TooLarge);
    }
    let safe = method == Method::GET || method == Method::HEAD;
    let open_to_all = safe && public(path);
    let logged_in = cookie(headers, COOKIE).is_some_and(|c| logins.is_session(c));
    if !open_to_all && !logged_in {
        return Err(Refusal::NoSession);
    }
    if !safe || path == LIVE {
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        if origin != Some(format!("http://{addr}").as_str()) {
            return Err(Refusal::CrossOrigin);
        }
    }
    Ok(())
}

/// Adds the security headers of the module doc.
pub(crate) fn harden(resp: &mut Response) {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "Cross-Origin-Opener-Policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "Cross-Origin-Resource-Policy",
        HeaderValue::from_static("same-origin"),
    );
}

fn refuse(r: Refusal) -> Response {
    tracing::warn!(refusal = ?r, "console request refused");
    let mut resp = (r.status(), r.message()).into_response();
    harden(&mut resp);
    resp
}

/// The middleware.
pub(crate) async fn guard(
    State(st): State<Arc<ConsoleState>>,
    req: Request,
    next: Next,
) -> Response {
    if let Err(r) = check(
        st.addr,
        &st.logins,
        req.method(),
        req.uri().path(),
        req.headers(),
    ) {
        return refuse(r);
    }
    // A body without a length (chunked) is read here, up to the limit.
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return refuse(Refusal::TooLarge),
    };
    let mut resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    harden(&mut resp);
    resp
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
