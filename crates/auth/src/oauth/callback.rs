//! The loopback callback listener of 3.3 steps 3 and 6: the first free port of the range on
//! 127.0.0.1 (and `[::1]` best-effort), stray requests answered 404 and ignored, `state`
//! checked (constant time) before `error`, one deadline for the whole wait.

use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::net::Ipv6Addr;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use hyper::Response;
use hyper::StatusCode;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::Secret;
use crate::oauth::OAuthError;
use crate::oauth::pkce::ct_eq;

/// How many ports the redirect range has (3.1).
pub const PORT_RANGE_LEN: u16 = 12;

/// A bound callback listener.
pub(crate) struct Callback {
    v4: TcpListener,
    v6: Option<TcpListener>,
    port: u16,
}

fn std_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let l = std::net::TcpListener::bind(addr)?;
    l.set_nonblocking(true)?;
    TcpListener::from_std(l)
}

impl Callback {
    /// Binds `127.0.0.1` on the first free port of `first ..= first + 11` (never a
    /// non-loopback address), then `[::1]` on the same port if it can.
    pub(crate) fn bind(first: u16) -> Result<Callback, OAuthError> {
        let last = first.saturating_add(PORT_RANGE_LEN - 1);
        for port in first..=last {
            if let Ok(v4) = std_listener(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) {
                let v6 = std_listener(SocketAddr::from((Ipv6Addr::LOCALHOST, port))).ok();
                return Ok(Callback { v4, v6, port });
            }
        }
        Err(OAuthError::PortsBusy { first, last })
    }

    /// The bound port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Waits for the callback at most `timeout` in total; returns the authorization code.
    /// The listeners are closed when this returns.
    pub(crate) async fn wait(
        self,
        state: &Secret,
        timeout: Duration,
    ) -> Result<Secret, OAuthError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let (tx, mut rx) = mpsc::channel::<Result<Secret, OAuthError>>(1);
        let mut conns: JoinSet<()> = JoinSet::new();
        let outcome = loop {
            tokio::select! {
                r = self.v4.accept() => match r {
                    Ok((s, _)) => {
                        conns.spawn(serve(s, state.clone(), tx.clone()));
                    }
                    // E.g. out of file descriptors: do not spin.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                },
                r = accept_opt(self.v6.as_ref()) => match r {
                    Ok((s, _)) => {
                        conns.spawn(serve(s, state.clone(), tx.clone()));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                },
                Some(o) = rx.recv() => break o,
                () = tokio::time::sleep_until(deadline) => break Err(OAuthError::Timeout),
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        };
        drop(self);
        // Let the final response reach the browser (connections are not kept alive).
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while conns.join_next().await.is_some() {}
        })
        .await;
        conns.abort_all();
        outcome
    }
}

async fn accept_opt(l: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match l {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

type Body = Full<Bytes>;

fn page(status: StatusCode, text: &str) -> Response<Body> {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>autogpt-shim</title></head><body><p>{text}</p></body></html>"
    );
    let mut r = Response::new(Full::new(Bytes::from(html)));
    *r.status_mut() = status;
    if let Ok(v) = "text/html; charset=utf-8".parse() {
        r.headers_mut().insert("content-type", v);
    }
    r
}

/// An `error` value made safe to print and to put in HTML: printable ASCII without markup
/// characters, at most 200 characters.
pub(crate) fn printable(v: &str) -> String {
    v.chars()
        .filter(|c| (c.is_ascii_graphic() || *c == ' ') && !"<>&\"'".contains(*c))
        .take(200)
        .collect()
}

/// Decides one request to the loopback listener from its path and raw query (the order of
/// 3.3 step 6): `None` means "not the callback, keep waiting"; otherwise the code, or why
/// the login failed (`state` is checked, in constant time, before `error`). Public for the
/// `oauth_callback` fuzz target.
pub fn decide(
    path: &str,
    query: &str,
    expected_state: &Secret,
) -> Option<Result<Secret, OAuthError>> {
    if path != "/callback" {
        return None;
    }
    let mut state = None;
    let mut error = None;
    let mut code = None;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "state" if state.is_none() => state = Some(Secret::new(v.into_owned())),
            "error" if error.is_none() => error = Some(printable(&v)),
            "code" if code.is_none() => code = Some(Secret::new(v.into_owned())),
            _ => {}
        }
    }
    let state_ok = state
        .as_ref()
        .is_some_and(|s| ct_eq(s.expose().as_bytes(), expected_state.expose().as_bytes()));
    if !state_ok {
        return Some(Err(OAuthError::StateMismatch));
    }
    if let Some(e) = error {
        return Some(Err(OAuthError::Denied(e)));
    }
    match code {
        Some(c) if !c.expose().is_empty() => Some(Ok(c)),
        _ => Some(Err(OAuthError::NoCode)),
    }
}

async fn serve(stream: TcpStream, state: Secret, tx: mpsc::Sender<Result<Secret, OAuthError>>) {
    let svc = service_fn(move |req: Request<Incoming>| {
        let state = state.clone();
        let tx = tx.clone();
        async move {
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or("").to_owned();
            let resp = match decide(&path, &query, &state) {
                None => {
                    tracing::debug!(path = %printable(&path), "ignoring a stray request on the OAuth callback listener");
                    page(StatusCode::NOT_FOUND, "Not found.")
                }
                Some(Ok(code)) => {
                    let _ = tx.try_send(Ok(code));
                    page(
                        StatusCode::OK,
                        "autogpt-shim is authenticated. You may close this tab.",
                    )
                }
                Some(Err(e)) => {
                    let text = format!("Authentication failed: {e}. You may close this tab.");
                    let _ = tx.try_send(Err(e));
                    page(StatusCode::BAD_REQUEST, &text)
                }
            };
            Ok::<_, Infallible>(resp)
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), svc)
        .await;
}
