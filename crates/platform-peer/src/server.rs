//! The listener, the upgrade checks and the HELLO handshake.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::SinkExt;
use futures_util::StreamExt;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::frame;
use shim_protocol::hello_rules;
use shim_protocol::hello_rules::Route;
use shim_protocol::limits::MAX_FRAME_BYTES;
use shim_protocol::limits::MAX_HELLO_BYTES;
use shim_protocol::messages::handshake::HelloAck;
use shim_protocol::values::SessionId;
use shim_protocol::version::ProtocolVersion;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::handshake::server::ErrorResponse;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::handshake::server::Response;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::PeerError;
use crate::connection::Connection;
use crate::counted::Counted;
use crate::oauth::OAuthState;
use crate::oauth::Scripted;
use shim_ws_deflate::DeflateStream;
use shim_ws_deflate::Role;

const WS_PREFIX: &str = "/ws/local-executor";

/// What the peer answers in `HELLO_ACK`.
#[derive(Debug, Clone)]
pub struct AckConfig {
    /// `max_file_size_bytes`.
    pub max_file_size_bytes: u64,
    /// `command_timeout_seconds`.
    pub command_timeout_seconds: u64,
    /// `max_concurrent`.
    pub max_concurrent: u32,
    /// Sent as `protocol_version`; `None` sends the negotiated version.
    pub protocol_version: Option<String>,
    /// Grants; `None` grants the advertised capabilities the platform supports (5.2).
    pub grant: Option<Vec<Capability>>,
    /// Overrides `HELLO_ACK.id` (to test correlation checks).
    pub wrong_id: bool,
}

impl Default for AckConfig {
    fn default() -> Self {
        AckConfig {
            max_file_size_bytes: 10_485_760,
            command_timeout_seconds: 30,
            max_concurrent: 4,
            protocol_version: None,
            grant: None,
            wrong_id: false,
        }
    }
}

/// The peer's configuration.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Accepted bearer tokens; an empty list accepts any non-empty token.
    pub tokens: Vec<String>,
    /// Bearer tokens answered 401 even when `tokens` would accept them (an access token an
    /// independent OpenID provider issued and the test declares expired).
    pub refused_tokens: Vec<String>,
    /// When false every upgrade gets 403 "Local PC executor is not enabled".
    pub feature_enabled: bool,
    /// Data-route bindings `session_id → (machine_id, allowed_root)`. When set for a
    /// session, its HELLO must match byte for byte (else close 4403); sessions without a
    /// binding are refused with 403 when `require_binding` is true.
    pub bindings: HashMap<String, (String, String)>,
    /// Refuse data routes for sessions without a binding.
    pub require_binding: bool,
    /// The `HELLO_ACK` to send.
    pub ack: AckConfig,
    /// How long to wait for `HELLO` (the platform waits 10 s).
    pub hello_timeout: Duration,
    /// Accept the PROPOSED hardware responses (COMPUTER_USE_HW.md 9.2 P9), as a platform
    /// that added them to its relay allowlists would; off like today's platform.
    pub proposed_hardware: bool,
    /// Accept `permessage-deflate` (RFC 7692) within these limits, as the platform's
    /// server does; `None` declines it (frames travel uncompressed).
    pub compression: Option<shim_ws_deflate::ServerLimits>,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            tokens: Vec::new(),
            refused_tokens: Vec::new(),
            feature_enabled: true,
            bindings: HashMap::new(),
            require_binding: false,
            ack: AckConfig::default(),
            hello_timeout: Duration::from_secs(10),
            proposed_hardware: false,
            compression: Some(shim_ws_deflate::ServerLimits::default()),
        }
    }
}

/// A connection the peer refused or closed during the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// HTTP status (upgrade refused) or WebSocket close code.
    pub code: u16,
    /// The reason text.
    pub reason: String,
}

pub(crate) struct Shared {
    pub(crate) config: Mutex<PeerConfig>,
    pub(crate) oauth: Mutex<OAuthState>,
    pub(crate) violations: Mutex<Vec<String>>,
    pub(crate) rejections: Mutex<Vec<Rejection>>,
    /// `true` while token requests are held unanswered ([`Peer::hold_token_requests`]).
    pub(crate) token_gate: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    pub(crate) fn violation(&self, text: String) {
        tracing::warn!(%text, "protocol violation by the daemon");
        if let Ok(mut v) = self.violations.lock() {
            v.push(text);
        }
    }

    /// Stops accepting `token` on upgrades, keeping the list non-empty so that the
    /// "any token" mode of an empty list does not come back.
    pub(crate) fn forget_token(&self, token: &str) {
        if let Ok(mut c) = self.config.lock() {
            c.tokens.retain(|t| t != token);
            if c.tokens.is_empty() {
                c.tokens
                    .push(format!("unused-{}", uuid::Uuid::new_v4().simple()));
            }
        }
    }

    fn reject(&self, code: u16, reason: &str) {
        if let Ok(mut r) = self.rejections.lock() {
            r.push(Rejection {
                code,
                reason: reason.to_owned(),
            });
        }
    }

    fn config(&self) -> PeerConfig {
        match self.config.lock() {
            Ok(c) => c.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}

/// A running platform peer.
pub struct Peer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accepted: tokio::sync::Mutex<mpsc::UnboundedReceiver<Connection>>,
    task: tokio::task::JoinHandle<()>,
}

impl Peer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start(config: PeerConfig) -> Result<Peer, PeerError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            config: Mutex::new(config),
            oauth: Mutex::new(OAuthState::default()),
            violations: Mutex::new(Vec::new()),
            rejections: Mutex::new(Vec::new()),
            token_gate: tokio::sync::watch::Sender::new(false),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), tx));
        Ok(Peer {
            addr,
            shared,
            accepted: tokio::sync::Mutex::new(rx),
            task,
        })
    }

    /// `ws://127.0.0.1:PORT/ws/local-executor`, the daemon's `ws_base`.
    pub fn ws_base(&self) -> String {
        format!("ws://{}{WS_PREFIX}", self.addr)
    }

    /// `http://127.0.0.1:PORT`: the daemon's `platform_url`, from which it derives the
    /// WebSocket base and the OAuth endpoints (AUDIT_AUTH_CLI.md 3.2).
    pub fn http_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Mints an access and refresh token pair as if a login had happened, and accepts
    /// the access token on upgrades.
    pub fn issue_tokens(&self) -> (String, String) {
        let pair = match self.shared.oauth.lock() {
            Ok(mut o) => o.mint(),
            Err(_) => (String::new(), String::new()),
        };
        if let Ok(mut c) = self.shared.config.lock() {
            c.tokens.push(pair.0.clone());
        }
        pair
    }

    /// Stops accepting an access token on upgrades (as if it expired): the next upgrade
    /// with it gets HTTP 401.
    pub fn expire_access_token(&self, token: &str) {
        self.shared.forget_token(token);
    }

    /// How many token requests of a `grant_type` arrived (`authorization_code`,
    /// `refresh_token`).
    pub fn token_requests(&self, grant_type: &str) -> usize {
        self.shared
            .oauth
            .lock()
            .map(|o| o.token_requests.get(grant_type).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Answers the next token request with `status` and `body` instead.
    pub fn script_token_response(&self, status: u16, body: &str) {
        if let Ok(mut o) = self.shared.oauth.lock() {
            o.scripted_token.push_back(Scripted {
                status,
                body: body.to_owned(),
            });
        }
    }

    /// Holds every token request unanswered (and uncounted) until
    /// [`Peer::release_token_requests`]: a test makes a refresh overlap with something else
    /// (a second connection's 401) however slow the machine is.
    pub fn hold_token_requests(&self) {
        self.shared.token_gate.send_replace(true);
    }

    /// Answers the token requests held by [`Peer::hold_token_requests`], and the later ones
    /// at once.
    pub fn release_token_requests(&self) {
        self.shared.token_gate.send_replace(false);
    }

    /// Answers the next revocation request with `status` and `body` instead.
    pub fn script_revoke_response(&self, status: u16, body: &str) {
        if let Ok(mut o) = self.shared.oauth.lock() {
            o.scripted_revoke.push_back(Scripted {
                status,
                body: body.to_owned(),
            });
        }
    }

    /// Makes the authorization endpoint redirect back with `error=access_denied`.
    pub fn deny_authorization(&self, deny: bool) {
        if let Ok(mut o) = self.shared.oauth.lock() {
            o.deny_authorization = deny;
        }
    }

    /// The revocations received, as `(token_type_hint, token)`.
    pub fn revocations(&self) -> Vec<(String, String)> {
        self.shared
            .oauth
            .lock()
            .map(|o| o.revocations.clone())
            .unwrap_or_default()
    }

    /// Every PKCE `code_verifier` the token endpoint received.
    pub fn code_verifiers(&self) -> Vec<String> {
        self.shared
            .oauth
            .lock()
            .map(|o| o.code_verifiers.clone())
            .unwrap_or_default()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the configuration for connections accepted from now on.
    pub fn configure(&self, f: impl FnOnce(&mut PeerConfig)) {
        if let Ok(mut c) = self.shared.config.lock() {
            f(&mut c);
        }
    }

    /// Waits for the next connection that completed its handshake.
    pub async fn next_connection(&self, timeout: Duration) -> Option<Connection> {
        let mut rx = self.accepted.lock().await;
        tokio::time::timeout(timeout, rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Every protocol violation recorded so far; tests assert this is empty.
    pub fn violations(&self) -> Vec<String> {
        self.shared
            .violations
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// Every upgrade refusal and handshake close so far.
    pub fn rejections(&self) -> Vec<Rejection> {
        self.shared
            .rejections
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    accepted: mpsc::UnboundedSender<Connection>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        // Small request/response frames: without it, delayed ACKs add ~40 ms round trips.
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let accepted = accepted.clone();
        tokio::spawn(async move {
            if is_websocket_upgrade(&stream).await {
                if let Some(conn) = handshake(stream, shared).await {
                    let _ = accepted.send(conn);
                }
            } else {
                serve_http(stream, shared).await;
            }
        });
    }
}

/// Peeks at the request head (without consuming it) to route WebSocket upgrades to
/// tungstenite and everything else to the HTTP endpoints.
async fn is_websocket_upgrade(stream: &TcpStream) -> bool {
    let mut buf = vec![0u8; 8192];
    for _ in 0..1000 {
        let Ok(n) = stream.peek(&mut buf).await else {
            return false;
        };
        let head = &buf[..n];
        if n == 0 || n == buf.len() || head.windows(4).any(|w| w == b"\r\n\r\n") {
            return String::from_utf8_lossy(head)
                .to_ascii_lowercase()
                .contains("upgrade: websocket");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

async fn serve_http(stream: TcpStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(crate::oauth::serve(req, &shared).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

fn http_error(status: u16, reason: &str) -> ErrorResponse {
    let mut resp = ErrorResponse::new(Some(reason.to_owned()));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::FORBIDDEN);
    resp
}

/// Routes and authorises the upgrade request (section 2.2).
fn check_upgrade(
    req: &Request,
    config: &PeerConfig,
) -> Result<Option<String>, (u16, &'static str)> {
    let path = req.uri().path();
    let session = if path == WS_PREFIX {
        None
    } else if let Some(rest) = path
        .strip_prefix(WS_PREFIX)
        .and_then(|r| r.strip_prefix('/'))
    {
        // The platform's route accepts only ^[A-Za-z0-9-]+$, 1-128 characters.
        if rest.is_empty()
            || rest.len() > 128
            || !rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err((403, "Session not found or access denied"));
        }
        Some(rest.to_owned())
    } else {
        return Err((403, "Session not found or access denied"));
    };
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Err((401, "Missing bearer token"));
    };
    if (!config.tokens.is_empty() && !config.tokens.iter().any(|t| t == token))
        || config.refused_tokens.iter().any(|t| t == token)
    {
        return Err((401, "Invalid or expired token"));
    }
    if !config.feature_enabled {
        return Err((403, "Local PC executor is not enabled"));
    }
    if let Some(s) = &session
        && config.require_binding
        && !config.bindings.contains_key(s)
    {
        return Err((403, "Session is not bound to this Local PC executor"));
    }
    Ok(session)
}

async fn close(
    ws: &mut WebSocketStream<DeflateStream<Counted>>,
    shared: &Shared,
    code: u16,
    reason: &str,
) {
    shared.reject(code, reason);
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = ws.close(Some(frame)).await;
}

// The callback's error type is tungstenite's HTTP response; boxing it is not possible.
#[allow(clippy::result_large_err)]
async fn handshake(stream: TcpStream, shared: Arc<Shared>) -> Option<Connection> {
    let config = shared.config();
    let mut route_session: Result<Option<String>, (u16, &'static str)> = Ok(None);
    let callback = |req: &Request, mut resp: Response| match check_upgrade(req, &config) {
        Ok(s) => {
            route_session = Ok(s);
            // permessage-deflate, as the platform's server (uvicorn) accepts it.
            if let Some(limits) = &config.compression {
                let offers = req
                    .headers()
                    .get_all("sec-websocket-extensions")
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .collect::<Vec<_>>()
                    .join(", ");
                if let Some((_, answer)) =
                    shim_ws_deflate::negotiate::server_accept(&offers, limits)
                    && let Ok(v) = answer.parse()
                {
                    resp.headers_mut().insert("sec-websocket-extensions", v);
                }
            }
            Ok(resp)
        }
        Err((status, reason)) => {
            route_session = Err((status, reason));
            Err(http_error(status, reason))
        }
    };
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let stream = Counted::new(stream);
    let received = stream.received();
    let stream = DeflateStream::new(
        stream,
        Role::Server,
        shim_ws_deflate::Options {
            offered: true,
            compress_threshold: 1024,
            level: 1,
            max_message_size: MAX_FRAME_BYTES,
        },
    );
    let ws =
        tokio_tungstenite::accept_hdr_async_with_config(stream, callback, Some(ws_config)).await;
    let session = match route_session {
        Ok(s) => s,
        Err((status, reason)) => {
            shared.reject(status, reason);
            return None;
        }
    };
    let mut ws = ws.ok()?;
    let route = if session.is_some() {
        Route::Data
    } else {
        Route::Control
    };

    // 5.2 step 1: the first text frame within the deadline.
    let first = match tokio::time::timeout(config.hello_timeout, ws.next()).await {
        Err(_) => {
            close(&mut ws, &shared, 4408, "HELLO timeout").await;
            return None;
        }
        Ok(None | Some(Err(_))) => return None,
        Ok(Some(Ok(m))) => m,
    };
    let text = match first {
        tungstenite::Message::Text(t) => t.to_string(),
        tungstenite::Message::Binary(b) => match String::from_utf8(b.to_vec()) {
            Ok(t) => t,
            Err(_) => {
                close(&mut ws, &shared, 4400, "Expected HELLO").await;
                return None;
            }
        },
        _ => {
            close(&mut ws, &shared, 4400, "Expected HELLO").await;
            return None;
        }
    };
    if text.len() > MAX_HELLO_BYTES {
        close(&mut ws, &shared, 4400, "HELLO payload too large").await;
        return None;
    }
    let (hello_id, hello) = match validate_hello(&text, route) {
        Ok(v) => v,
        Err(reason) => {
            close(&mut ws, &shared, 4400, reason).await;
            return None;
        }
    };
    // 5.2 steps 2 and 4.
    let negotiated = match shim_protocol::version::negotiate(
        shim_protocol::version::SHIM_VERSION,
        Some(&hello.protocol_version),
        ProtocolVersion { major: 1, minor: 0 },
    ) {
        Ok(v) => v,
        Err(_) => {
            close(&mut ws, &shared, 4426, "Protocol major version mismatch").await;
            return None;
        }
    };
    let mut granted: Vec<Capability> = Vec::new();
    for c in &hello.capabilities {
        if Capability::PLATFORM_GRANTABLE.contains(c) && !granted.contains(c) {
            granted.push(c.clone());
        }
    }
    if route == Route::Control
        && (negotiated.minor < 1 || !granted.contains(&Capability::DirectoryBrowse))
    {
        close(
            &mut ws,
            &shared,
            4426,
            "Machine control requires protocol 1.1 and directory_browse",
        )
        .await;
        return None;
    }
    // 5.2 step 5: the binding of newer platform builds.
    let binding = session.as_ref().and_then(|s| config.bindings.get(s));
    if let Some((machine, root)) = binding
        && (&hello.machine_id != machine || hello.allowed_root.as_deref() != Some(root.as_str()))
    {
        close(
            &mut ws,
            &shared,
            4403,
            "Local PC executor does not match the session binding",
        )
        .await;
        return None;
    }
    let ack = HelloAck {
        session_id: session.as_deref().and_then(|s| SessionId::new(s).ok()),
        connection_id: match route {
            Route::Control => Some(uuid::Uuid::new_v4().to_string()),
            Route::Data => None,
        },
        granted_capabilities: config.ack.grant.clone().unwrap_or(granted),
        protocol_version: Some(
            config
                .ack
                .protocol_version
                .clone()
                .unwrap_or_else(|| negotiated.to_string()),
        ),
        max_file_size_bytes: config.ack.max_file_size_bytes,
        command_timeout_seconds: config.ack.command_timeout_seconds,
        max_concurrent: config.ack.max_concurrent,
    };
    let ack_id = if config.ack.wrong_id {
        uuid::Uuid::new_v4().to_string()
    } else {
        hello_id.clone()
    };
    let text =
        frame::encode_platform(&ack_id, crate::now_ts(), &Message::HelloAck(ack.clone())).ok()?;
    ws.send(tungstenite::Message::text(text)).await.ok()?;
    Some(Connection::spawn(
        ws, received, shared, route, session, hello, ack,
    ))
}

/// 5.2 step 1: returns the HELLO id and payload, or the 4400 reason.
fn validate_hello(
    text: &str,
    route: Route,
) -> Result<(String, shim_protocol::messages::handshake::Hello), &'static str> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| "Expected HELLO")?;
    let obj = value.as_object().ok_or("Expected HELLO")?;
    if obj.get("type").and_then(|t| t.as_str()) != Some("HELLO") {
        return Err("Expected HELLO");
    }
    match obj.get("id").and_then(|i| i.as_str()) {
        Some(id) if !id.is_empty() => {}
        _ => return Err("Invalid HELLO correlation ID"),
    }
    if !obj.get("payload").is_some_and(|p| p.is_object()) {
        return Err("Invalid HELLO payload");
    }
    let frame = frame::decode(text).map_err(|_| "Invalid HELLO payload")?;
    let Message::Hello(hello) = frame.message else {
        return Err("Expected HELLO");
    };
    hello_rules::validate(&hello, route).map_err(|_| "Invalid HELLO payload")?;
    Ok((frame.id, hello))
}
