//! One runtime (the control runtime, a child, or the legacy session): its reconnect loop
//! (PROTOCOL.md 2.6), one connection's handshake (2.5, 5) and serve loop (3.5, 10, 11).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use futures_util::SinkExt;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use shim_audit::AuditResult;
use shim_audit::Map;
use shim_auth::Secret;
use shim_auth::net::Trouble;
use shim_exec::ExecConfig;
use shim_exec::Executor;
use shim_jail::JailRoot;
use shim_protocol::Capability;
use shim_protocol::DecodeError;
use shim_protocol::ErrorCode;
use shim_protocol::ErrorPayload;
use shim_protocol::Frame;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::close::CloseAction;
use shim_protocol::close::FatalClose;
use shim_protocol::close::codes;
use shim_protocol::error::CapabilityNotGrantedDetails;
use shim_protocol::error::OverloadedDetails;
use shim_protocol::frame;
use shim_protocol::limits::MAX_FRAME_BYTES;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::messages::handshake::Status;
use tokio::sync::Semaphore;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_util::sync::CancellationToken;

use crate::error::DaemonError;
use crate::runtime::auditor::AuditFailed;
use crate::runtime::auditor::Auditor;
use crate::runtime::data::DataPlane;
use crate::runtime::data::FileOp;
use crate::runtime::data::Finish;
use crate::runtime::handshake;
use crate::runtime::handshake::LocalLimits;
use crate::runtime::handshake::Negotiated;
use crate::runtime::handshake::Role;
use crate::runtime::machine::Machine;
use crate::runtime::machine::RefreshFailure;

/// What the control connection's runtime hands control requests to: the machine control
/// plane (`control::Control`). A trait, so that this file does not depend on the control
/// plane, which itself starts runtimes.
pub(crate) trait ControlPlane: Send + Sync {
    /// Called once the control connection is established and before HELLO (9.11).
    fn on_reconnect(&self) -> BoxFuture<'_, ()>;
    /// Answers one control request; `Err` when its audit record could not be written.
    fn handle<'a>(
        &'a self,
        id: &'a str,
        msg: &'a Message,
    ) -> BoxFuture<'a, Result<Message, AuditFailed>>;
}

/// How a runtime ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Asked to stop (signal, detach, idle stop, control reconnect).
    Stopped,
    /// The platform revoked it (`SESSION_REVOKED` or a fatal close code): exit 0.
    Revoked,
    /// A terminal failure with its exit code.
    Failed(DaemonError),
}

/// One runtime: the control connection, a child, or the legacy session.
#[derive(Clone)]
pub(crate) struct Runtime {
    pub(crate) machine: Arc<Machine>,
    pub(crate) role: Role,
    pub(crate) jail: Option<Arc<JailRoot>>,
    pub(crate) audit: Auditor,
    pub(crate) stop: CancellationToken,
    /// Last valid inbound frame (3.5 step 2), for the idle reaper.
    pub(crate) activity: Arc<Mutex<Instant>>,
    pub(crate) control: Option<Arc<dyn ControlPlane>>,
    /// Whether this runtime acquires the machine-wide work semaphore (children).
    pub(crate) uses_work_limit: bool,
    /// Computer-use state of this runtime (window ids, clipboard writeback).
    pub(crate) cu: Arc<crate::runtime::cu::CuSession>,
    /// The local-LLM model list probed at this runtime's last HELLO.
    pub(crate) llm: Arc<crate::runtime::llm::LlmSession>,
    /// Hardware state of this runtime (serial handles).
    pub(crate) hw: Arc<crate::runtime::hw::HwSession>,
}

enum ConnEnd {
    /// Clean close (1000/1001): base delay, attempt reset.
    Clean,
    /// Error end: backoff; `handshook` resets the attempt ([Rust extension]).
    Error { handshook: bool },
    /// The link gave no answer to the probe sent after a wake-up or a change of local
    /// addresses: reconnect at once, without the backoff's delay or jitter (a local network
    /// change is not shared with other clients, so there is no stampede to spread out).
    ProbeFailed,
    /// Closed with 4403 during the handshake (binding mismatch on newer platforms).
    Forbidden,
    /// No connection could be made, for a reason the user can act on (no network, the
    /// proxy refused, the certificate is not trusted); backs off like
    /// `Error { handshook: false }`.
    Unreachable(Trouble, String),
    /// The runtime ends.
    Terminal(Outcome),
}

enum Out {
    Text(String),
    Ping,
    Close(u16, String),
    /// The connection is over without a Close frame of ours: let the socket go.
    End,
}

/// Consecutive handshake refusals with 4403 after which a runtime stops.
const MAX_CONSECUTIVE_FORBIDDEN: u32 = 3;

/// Per-connection counters (10.1).
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    pending: u32,
    in_flight: u32,
    queue_depth: u32,
}

struct Conn {
    rt: Runtime,
    negotiated: Negotiated,
    counters: Mutex<Counters>,
    sem: Arc<Semaphore>,
    out: mpsc::UnboundedSender<Out>,
    /// The socket's sending half, shared by the writer task and [`Conn::write_blocking`].
    wire: Arc<Wire>,
    started: Instant,
    data: Option<DataPlane>,
    /// After `SESSION_REVOKED` nothing more is sent.
    silenced: Arc<AtomicBool>,
    /// Set when the connection's requests are cancelled (it ends, or the session was
    /// revoked): a file operation still running then records itself `cancelled` and is not
    /// answered.
    ended: AtomicBool,
}

/// The sending half of a connection's socket. The writer task sends what the connection's
/// tasks queue; a blocking-pool thread that has a response ready sends it here directly
/// ([`Conn::write_blocking`]), so the response does not wait for a worker to wake up first.
struct Wire {
    /// `None` once the writer task has ended: the socket is not held open for a file
    /// operation that is still finishing on a blocking thread.
    sink: tokio::sync::Mutex<Option<WsSink>>,
    /// Set, under the lock, when the Close frame is sent or the writer ends: nothing
    /// follows.
    closed: AtomicBool,
}

/// The frame answering request `id` with `msg`.
fn response_text(id: &str, msg: &Message, pc: Option<u32>) -> Option<String> {
    frame::encode_shim_response(id, now_ts(), pc, msg)
        .map_err(|e| tracing::error!(error = %e, "cannot encode a response"))
        .ok()
}

fn now_ts() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Conn {
    fn max(&self) -> u32 {
        self.negotiated.limits.max_concurrent
    }

    /// Cancels every request of this connection (PROTOCOL.md 2.6): aborts their tasks, and
    /// tells file operations already on a blocking thread that nobody awaits them.
    fn cancel_requests(&self, tasks: &mut JoinSet<()>) {
        self.ended.store(true, Ordering::SeqCst);
        tasks.abort_all();
    }

    /// The chat of a data connection; `None` on the control connection.
    fn session_id(&self) -> Option<&str> {
        match &self.rt.role {
            Role::Data { session_id, .. } => Some(session_id.as_str()),
            Role::Control => None,
        }
    }

    fn capacity(&self) -> u32 {
        let c = self.counters.lock().map(|c| *c).unwrap_or_default();
        self.max()
            .saturating_sub(c.pending.max(c.in_flight + c.queue_depth))
    }

    fn send(&self, text: String) {
        let _ = self.out.send(Out::Text(text));
    }

    /// Sends `text` from a blocking-pool thread, on this thread, now; never call it on a
    /// runtime worker (it blocks until the socket takes the frame). Nothing is sent after
    /// the Close frame or `SESSION_REVOKED`.
    fn write_blocking(&self, text: String) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return self.send(text);
        };
        rt.block_on(async {
            let mut sink = self.wire.sink.lock().await;
            if self.wire.closed.load(Ordering::SeqCst) || self.silenced.load(Ordering::SeqCst) {
                return;
            }
            // A failed send ends the connection; the reader sees that and reconnects.
            if let Some(sink) = sink.as_mut() {
                let _ = sink.send(tungstenite::Message::text(text)).await;
            }
        });
    }

    fn send_response(&self, id: &str, msg: &Message, pc: Option<u32>) {
        if let Some(t) = response_text(id, msg, pc) {
            self.send(t);
        }
    }

    fn send_status(&self) {
        if let Some(t) = self.status_text() {
            self.send(t);
        }
    }

    /// A `STATUS` frame with the counters as they are now.
    fn status_text(&self) -> Option<String> {
        let c = self.counters.lock().map(|c| *c).unwrap_or_default();
        let status = Message::Status(Status {
            in_flight: c.in_flight,
            max_concurrent: self.max(),
            queue_depth: c.queue_depth,
            audit_log_bytes: self.rt.audit.log().log_bytes(),
            uptime_seconds: (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
        let id = uuid::Uuid::new_v4().to_string();
        frame::encode_shim(&id, now_ts(), Some(self.capacity()), &status).ok()
    }

    /// Admission (3.5 step 5): `true` if admitted.
    fn admit(&self) -> bool {
        let Ok(mut c) = self.counters.lock() else {
            return false;
        };
        if c.pending >= self.max() {
            return false;
        }
        c.pending += 1;
        c.queue_depth += 1;
        true
    }
}

/// `ws_base + "/" + pct(session_id)` with nothing safe (2.1).
pub(crate) fn data_url(ws_base: &str, session_id: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    format!(
        "{}/{}",
        ws_base.trim_end_matches('/'),
        percent_encoding::utf8_percent_encode(session_id, SET)
    )
}

/// The backoff delay of 2.6 without jitter.
pub(crate) fn backoff_delay(base: f64, max: f64, attempt: u32) -> f64 {
    let factor = 2f64.powi(i32::try_from(attempt.min(62)).unwrap_or(62));
    (base * factor).min(max)
}

fn jitter(max: f64) -> f64 {
    if max <= 0.0 {
        return 0.0;
    }
    let mut b = [0u8; 4];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX) * max
}

impl Runtime {
    fn url(&self) -> String {
        let base = self.machine.settings.ws_base();
        match &self.role {
            Role::Control => base,
            Role::Data { session_id, .. } => data_url(&base, session_id),
        }
    }

    /// The reconnect loop (2.6).
    pub(crate) async fn run(self) -> Outcome {
        let s = &self.machine.settings;
        let mut attempt: u32 = 0;
        let mut forbidden: u32 = 0;
        let (sid, folder) = match &self.role {
            Role::Control => (None, None),
            Role::Data {
                session_id,
                allowed_root,
            } => (Some(session_id.as_str()), Some(allowed_root.as_str())),
        };
        let board = self.machine.status.connection(sid, folder);
        loop {
            if self.stop.is_cancelled() || self.machine.shutdown.is_cancelled() {
                return Outcome::Stopped;
            }
            board.connecting();
            let end = self.connection(&board).await;
            let why = match &end {
                ConnEnd::Terminal(_) => None,
                ConnEnd::Clean => Some("closed cleanly by the platform".to_owned()),
                ConnEnd::Forbidden => Some("the platform refused the handshake (4403)".to_owned()),
                ConnEnd::Error { handshook: true } => Some("the connection was lost".to_owned()),
                ConnEnd::ProbeFailed => {
                    Some("the connection was lost after a network change or wake-up".to_owned())
                }
                ConnEnd::Error { handshook: false } => {
                    Some("the connection could not be made".to_owned())
                }
                ConnEnd::Unreachable(_, reason) => {
                    Some(format!("the connection could not be made: {reason}"))
                }
            };
            let problem = match &end {
                ConnEnd::Unreachable(t, _) => Some(*t),
                _ => None,
            };
            if let Some(why) = &why {
                board.reconnecting(why, problem);
                if !matches!(end, ConnEnd::Clean) {
                    self.machine
                        .status
                        .error(sid, "connection", "connection_failed", why);
                }
            }
            let mut spread = true;
            let delay = match end {
                ConnEnd::Terminal(o) => {
                    if let Outcome::Failed(e) = &o {
                        self.machine
                            .status
                            .error(sid, "connection", "terminal", &e.to_string());
                    }
                    return o;
                }
                ConnEnd::Clean => {
                    attempt = 0;
                    forbidden = 0;
                    s.reconnect_base_delay.min(s.reconnect_max_delay)
                }
                ConnEnd::Forbidden => {
                    // PROTOCOL.md 14 #22: stop after a few consecutive 4403s.
                    forbidden += 1;
                    if forbidden >= MAX_CONSECUTIVE_FORBIDDEN {
                        return Outcome::Failed(DaemonError::Auth(format!(
                            "the platform refused this connection {forbidden} times in a row with 4403 (the session is not bound to this machine and folder)"
                        )));
                    }
                    let d = backoff_delay(s.reconnect_base_delay, s.reconnect_max_delay, attempt);
                    attempt = attempt.saturating_add(1);
                    d
                }
                ConnEnd::ProbeFailed => {
                    attempt = 0;
                    forbidden = 0;
                    spread = false;
                    0.0
                }
                ConnEnd::Unreachable(..) => {
                    let d = backoff_delay(s.reconnect_base_delay, s.reconnect_max_delay, attempt);
                    attempt = attempt.saturating_add(1);
                    d
                }
                ConnEnd::Error { handshook } => {
                    if handshook {
                        attempt = 0;
                        forbidden = 0;
                    }
                    let d = backoff_delay(s.reconnect_base_delay, s.reconnect_max_delay, attempt);
                    attempt = attempt.saturating_add(1);
                    d
                }
            };
            let spread_by = if spread {
                jitter(s.reconnect_jitter_seconds)
            } else {
                0.0
            };
            let delay = Duration::from_secs_f64(delay + spread_by);
            board.retry_in(delay);
            let failed = self.audit.failed_token();
            tracing::info!(
                delay_ms = delay.as_millis() as u64,
                "reconnecting after a delay"
            );
            let mut changes = self.machine.net_changed.subscribe();
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                Ok(()) = changes.changed() => {
                    // The network changed: try again now, from the first backoff step.
                    tracing::info!("network changed; reconnecting now");
                    attempt = 0;
                }
                () = self.stop.cancelled() => return Outcome::Stopped,
                () = self.machine.shutdown.cancelled() => return Outcome::Stopped,
                () = failed.cancelled() => return self.audit_failed_outcome(),
            }
        }
    }

    fn audit_failed_outcome(&self) -> Outcome {
        Outcome::Failed(DaemonError::Audit(
            self.audit
                .failure()
                .unwrap_or_else(|| "audit writer failed".into()),
        ))
    }

    async fn audit_or_fail(&self, op: &str, details: Map) -> Result<(), ConnEnd> {
        self.audit
            .op(op, None, details, AuditResult::default())
            .await
            .map_err(|_| ConnEnd::Terminal(self.audit_failed_outcome()))
    }

    async fn revoked_by_close(&self, fatal: FatalClose) -> ConnEnd {
        tracing::warn!(
            code = fatal.code(),
            label = fatal.label(),
            "terminal close from the platform; not reconnecting"
        );
        let d = Map::new()
            .with("reason", fatal.audit_reason())
            .with("source", "ws_close_code")
            .with("close_code", u64::from(fatal.code()));
        if self.audit_or_fail("SESSION_REVOKED", d).await.is_err() {
            return ConnEnd::Terminal(self.audit_failed_outcome());
        }
        let _ = self
            .audit_or_fail(
                "WS_DISCONNECTED",
                Map::new().with(
                    "reason",
                    format!("ws_closed_{}_{}", fatal.code(), fatal.label()),
                ),
            )
            .await;
        ConnEnd::Terminal(Outcome::Revoked)
    }

    /// One connection: connect, handshake, serve.
    async fn connection(&self, board: &crate::runtime::board::ConnGuard) -> ConnEnd {
        let url = self.url();
        let ws = match self.connect(&url).await {
            Ok(ws) => ws,
            Err(end) => return end,
        };
        if let Some(control) = &self.control {
            // 9.11: once the control connection is established and before HELLO, stop every
            // child and forget every browse session (children keep running while the
            // control connection is down).
            control.on_reconnect().await;
        }
        if let Err(end) = self
            .audit_or_fail("WS_CONNECTED", Map::new().with("url", url.as_str()))
            .await
        {
            return end;
        }
        let (mut sink, mut stream) = ws.split();

        // HELLO (5.1).
        let role = self.role.clone();
        let mut hello = handshake::build_hello(
            &self.machine.identity,
            &role,
            self.machine.settings.enable_shell,
        );
        crate::runtime::cu::advertise(&self.machine.cu, &self.cu, &mut hello).await;
        crate::runtime::llm::advertise(&self.machine.llm, &self.llm, &mut hello).await;
        crate::runtime::hw::advertise(&self.machine.hw, &self.hw, &mut hello);
        let hello_id = uuid::Uuid::new_v4().to_string();
        let text =
            match frame::encode_shim(&hello_id, now_ts(), None, &Message::Hello(hello.clone())) {
                Ok(t) => t,
                Err(e) => {
                    let _ = sink
                        .send(close_msg(codes::BAD_HELLO, "HELLO payload too large"))
                        .await;
                    await_close_reply(&mut stream).await;
                    return ConnEnd::Terminal(Outcome::Failed(DaemonError::Protocol(format!(
                        "cannot send HELLO: {e}"
                    ))));
                }
            };
        if sink.send(tungstenite::Message::text(text)).await.is_err() {
            return ConnEnd::Error { handshook: false };
        }

        // HELLO_ACK (5.3).
        let tuning = self.machine.settings.tuning;
        let first = tokio::select! {
            r = tokio::time::timeout(tuning.handshake_timeout, next_data(&mut stream)) => r,
            () = self.stop.cancelled() => return ConnEnd::Terminal(Outcome::Stopped),
            () = self.machine.shutdown.cancelled() => {
                let _ = sink.send(close_msg(codes::NORMAL, "")).await;
                await_close_reply(&mut stream).await;
                return ConnEnd::Terminal(Outcome::Stopped);
            }
        };
        let first = match first {
            Err(_) => {
                tracing::warn!("no HELLO_ACK within the handshake timeout");
                return ConnEnd::Error { handshook: false };
            }
            Ok(Inbound::Closed(Some(code))) => {
                if code == codes::FORBIDDEN {
                    tracing::warn!("the platform refused the handshake with 4403");
                    return ConnEnd::Forbidden;
                }
                return match shim_protocol::close::classify(code) {
                    CloseAction::Fatal(f) => self.revoked_by_close(f).await,
                    CloseAction::CleanReconnect => ConnEnd::Clean,
                    CloseAction::BackoffReconnect => ConnEnd::Error { handshook: false },
                };
            }
            Ok(Inbound::Closed(None)) | Ok(Inbound::Pong) => {
                return ConnEnd::Error { handshook: false };
            }
            Ok(Inbound::Data(bytes)) => bytes,
        };
        let ack_frame = match frame::decode_bytes(&first) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "first frame is not a valid HELLO_ACK");
                return ConnEnd::Error { handshook: false };
            }
        };
        let Message::HelloAck(ack) = &ack_frame.message else {
            tracing::warn!(ty = %ack_frame.message_type(), "first frame is not HELLO_ACK");
            return ConnEnd::Error { handshook: false };
        };
        let s = &self.machine.settings;
        let local = LocalLimits {
            max_concurrent: s.max_concurrent,
            command_timeout_seconds: s.command_timeout_seconds,
            max_file_size_bytes: s.max_file_size_bytes,
        };
        let negotiated = match handshake::process_ack(
            &hello_id,
            &ack_frame.id,
            &hello,
            ack,
            &role,
            local,
        ) {
            Ok(n) => n,
            Err(refusal) => {
                tracing::error!(code = refusal.code, reason = %refusal.reason, "refusing HELLO_ACK");
                let _ = sink.send(close_msg(refusal.code, &refusal.reason)).await;
                let _ = sink.close().await;
                await_close_reply(&mut stream).await;
                return ConnEnd::Terminal(match refusal.code {
                    codes::FORBIDDEN => Outcome::Failed(DaemonError::Auth(format!(
                        "the platform's HELLO_ACK names another session ({})",
                        refusal.reason
                    ))),
                    codes::PROTOCOL_VERSION_MISMATCH => {
                        tracing::error!("protocol mismatch with the platform: {}", refusal.reason);
                        Outcome::Revoked
                    }
                    _ => Outcome::Failed(DaemonError::Protocol(refusal.reason)),
                });
            }
        };
        let granted: Vec<String> = negotiated
            .granted
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect();
        if let Err(end) = self
            .audit_or_fail(
                "CONFIG_RELOADED",
                Map::new().with("granted_capabilities", granted.clone()),
            )
            .await
        {
            return end;
        }
        board.connected(granted.clone());
        if let Role::Control = role {
            let max = negotiated.limits.max_concurrent as usize;
            if let Ok(mut w) = self.machine.work_sem.lock() {
                *w = Some(Arc::new(Semaphore::new(max)));
            }
        }
        tracing::info!(url = %url, granted = ?negotiated.granted, "connected");
        self.serve(sink, stream, negotiated).await
    }

    async fn connect(&self, url: &str) -> Result<WsStream, ConnEnd> {
        let s = &self.machine.settings;
        // Plaintext only to loopback (H-15), checked again at connect time.
        let parsed = url::Url::parse(url).map_err(|e| {
            ConnEnd::Terminal(Outcome::Failed(DaemonError::Other(format!(
                "bad WebSocket URL: {e}"
            ))))
        })?;
        if parsed.scheme() == "ws"
            && !s.allow_insecure_platform_url
            && !parsed
                .host()
                .is_some_and(|h| crate::config::is_loopback_host(&h))
        {
            return Err(ConnEnd::Terminal(Outcome::Failed(DaemonError::Other(
                "refusing plaintext ws:// to a non-loopback host".into(),
            ))));
        }
        let mut retried = false;
        let mut token = match self.machine.tokens.current() {
            Some(t) => t,
            None => {
                // Only a refresh token is stored: refresh before the first upgrade ([H-12]);
                // that upgrade then counts as the retry after one refresh.
                retried = true;
                self.refreshed(None).await?
            }
        };
        loop {
            let tok = token.clone();
            let mut req = url.into_client_request().map_err(|e| {
                ConnEnd::Terminal(Outcome::Failed(DaemonError::Other(format!(
                    "bad WebSocket URL: {e}"
                ))))
            })?;
            // The formatted value is zeroised when dropped; the header is marked sensitive.
            let bearer = Secret::new(format!("Bearer {}", tok.expose()));
            let mut header: tungstenite::http::HeaderValue =
                bearer.expose().parse().map_err(|_| {
                    ConnEnd::Terminal(Outcome::Failed(DaemonError::Auth(
                        "the stored access token is not a valid header value".into(),
                    )))
                })?;
            header.set_sensitive(true);
            req.headers_mut().insert("authorization", header);
            let config = WebSocketConfig::default()
                .max_message_size(Some(MAX_FRAME_BYTES))
                .max_frame_size(Some(MAX_FRAME_BYTES));
            let offer = s.websocket_compression;
            if offer {
                req.headers_mut().insert(
                    "sec-websocket-extensions",
                    tungstenite::http::HeaderValue::from_static(
                        shim_ws_deflate::negotiate::CLIENT_OFFER,
                    ),
                );
            }
            let net = self.machine.net.clone();
            let parsed = parsed.clone();
            let attempt = tokio::time::timeout(s.tuning.handshake_timeout, async move {
                // Direct or through the proxy, then TLS with the one trust store, then
                // permessage-deflate (under tungstenite, which has no extensions).
                let tcp = net.connect(&parsed).await.map_err(ConnectError::Net)?;
                let stream = if parsed.scheme() == "wss" {
                    let host = parsed
                        .host_str()
                        .unwrap_or_default()
                        .trim_matches(['[', ']']);
                    let name =
                        rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| {
                            ConnectError::Ws(tungstenite::Error::Url(
                                tungstenite::error::UrlError::UnableToConnect(e.to_string()),
                            ))
                        })?;
                    let tls = tokio_rustls::TlsConnector::from(net.tls())
                        .connect(name, tcp)
                        .await
                        .map_err(|e| ConnectError::Ws(tungstenite::Error::Io(e)))?;
                    tokio_tungstenite::MaybeTlsStream::Rustls(tls)
                } else {
                    tokio_tungstenite::MaybeTlsStream::Plain(tcp)
                };
                let stream = shim_ws_deflate::DeflateStream::new(
                    stream,
                    shim_ws_deflate::Role::Client,
                    shim_ws_deflate::Options {
                        offered: offer,
                        compress_threshold: COMPRESS_THRESHOLD,
                        level: COMPRESS_LEVEL,
                        max_message_size: MAX_FRAME_BYTES,
                    },
                );
                tokio_tungstenite::client_async_with_config(req, stream, Some(config))
                    .await
                    .map_err(ConnectError::Ws)
            });
            let r = tokio::select! {
                r = attempt => r,
                () = self.stop.cancelled() => return Err(ConnEnd::Terminal(Outcome::Stopped)),
                () = self.machine.shutdown.cancelled() => return Err(ConnEnd::Terminal(Outcome::Stopped)),
            };
            match r {
                Ok(Ok((ws, _))) => {
                    tracing::debug!(permessage_deflate = ?ws.get_ref().params(), "upgraded");
                    return Ok(ws);
                }
                Ok(Err(ConnectError::Net(e))) => {
                    tracing::warn!(error = %e, url, "connect failed; will retry");
                    return Err(ConnEnd::Unreachable(e.trouble(), e.to_string()));
                }
                Ok(Err(ConnectError::Ws(tungstenite::Error::Http(resp)))) => {
                    let status = resp.status().as_u16();
                    match status {
                        401 | 403 if retried => {
                            return Err(ConnEnd::Terminal(Outcome::Failed(DaemonError::Auth(
                                format!("WebSocket upgrade answered {status} after one refresh"),
                            ))));
                        }
                        403 => {
                            return Err(ConnEnd::Terminal(Outcome::Failed(DaemonError::Auth(
                                format!(
                                    "the platform refused the connection with HTTP 403 ({url})"
                                ),
                            ))));
                        }
                        401 => {
                            // 3.5: one refresh (single-flight), then one retry.
                            retried = true;
                            token = self.refreshed(Some(&tok)).await?;
                        }
                        _ => {
                            tracing::warn!(status, "upgrade refused; will retry");
                            return Err(ConnEnd::Error { handshook: false });
                        }
                    }
                }
                Ok(Err(ConnectError::Ws(e))) => {
                    if let Some(u) = shim_auth::net::untrusted_issuer(&e) {
                        tracing::warn!(error = %u, url, "connect failed; will retry");
                        return Err(ConnEnd::Unreachable(Trouble::Certificate, u.to_string()));
                    }
                    tracing::warn!(error = %e, url, "connect failed; will retry");
                    return Err(ConnEnd::Error { handshook: false });
                }
                Err(_) => {
                    tracing::warn!(url, "connect timed out; will retry");
                    return Err(ConnEnd::Error { handshook: false });
                }
            }
        }
    }

    /// A usable access token after a 401 (or before the first upgrade when only a refresh
    /// token is stored): single-flight refresh of 3.5, `TOKEN_REFRESHED` when a token request
    /// succeeded. Terminal failures end the runtime (exit 77); transient ones fail this
    /// connection attempt, which backs off and starts again from the stored token.
    async fn refreshed(&self, rejected: Option<&Secret>) -> Result<Secret, ConnEnd> {
        let r = tokio::select! {
            r = self.machine.tokens.after_unauthorized(rejected) => r,
            () = self.stop.cancelled() => return Err(ConnEnd::Terminal(Outcome::Stopped)),
            () = self.machine.shutdown.cancelled() => return Err(ConnEnd::Terminal(Outcome::Stopped)),
        };
        match r {
            Ok((t, requested)) => {
                if requested {
                    self.audit_or_fail("TOKEN_REFRESHED", Map::new()).await?;
                }
                Ok(t)
            }
            Err(RefreshFailure::Terminal(e)) => Err(ConnEnd::Terminal(Outcome::Failed(e))),
            Err(RefreshFailure::Transient(why, trouble)) => Err(ConnEnd::Unreachable(
                trouble,
                format!("the token refresh failed: {why}"),
            )),
        }
    }

    async fn serve(&self, sink: WsSink, mut stream: WsSource, negotiated: Negotiated) -> ConnEnd {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let silenced = Arc::new(AtomicBool::new(false));
        let wire = Arc::new(Wire {
            sink: tokio::sync::Mutex::new(Some(sink)),
            closed: AtomicBool::new(false),
        });
        let writer = tokio::spawn(write_loop(wire.clone(), out_rx, silenced.clone()));
        let data = match (&self.role, &self.jail) {
            (Role::Data { session_id, .. }, Some(jail)) => {
                let mut cfg = ExecConfig::from_process(self.machine.settings.enable_shell);
                // `start` checked that the confinement can be enforced; if that changed,
                // fail closed: no commands rather than unconfined ones.
                match crate::confinement::effective(&self.machine.settings) {
                    Ok(c) => {
                        cfg.sandbox = c.policy(
                            &self.machine.settings,
                            std::path::Path::new(jail.root_path()),
                        )
                    }
                    Err(_) => cfg.enable_shell = false,
                }
                cfg.command_timeout_seconds = negotiated.limits.command_timeout_seconds;
                cfg.max_file_size_bytes = negotiated.limits.max_file_size_bytes;
                jail.lower_max_file_size(negotiated.limits.max_file_size_bytes);
                Some(DataPlane {
                    jail: jail.clone(),
                    executor: Executor::new(cfg, self.machine.limiter.clone()),
                    audit: self.audit.clone(),
                    policy: self.machine.policy.clone(),
                    approvals: self.machine.approvals.clone(),
                    session_id: session_id.clone(),
                    kill: self.machine.kill.subscribe(),
                    board: self.machine.status.clone(),
                })
            }
            _ => None,
        };
        let conn = Arc::new(Conn {
            rt: self.clone(),
            sem: Arc::new(Semaphore::new(negotiated.limits.max_concurrent as usize)),
            negotiated,
            counters: Mutex::new(Counters::default()),
            out: out_tx,
            wire,
            started: Instant::now(),
            data,
            silenced: silenced.clone(),
            ended: AtomicBool::new(false),
        });
        if let Ok(mut a) = self.activity.lock() {
            *a = Instant::now();
        }
        let tuning = self.machine.settings.tuning;
        let mut tasks: JoinSet<()> = JoinSet::new();
        let mut status = tokio::time::interval_at(
            tokio::time::Instant::now() + tuning.status_interval,
            tuning.status_interval,
        );
        let mut ping = tokio::time::interval_at(
            tokio::time::Instant::now() + tuning.ws_ping_interval,
            tuning.ws_ping_interval,
        );
        let mut awaiting_pong: Option<Instant> = None;
        // The ping in flight is the probe after a network change (not the regular one).
        let mut probing = false;
        // The link gave no pong within the deadline: nothing will answer our Close either.
        let mut silent = false;
        let failed = self.audit.failed_token();
        let mut changes = self.machine.net_changed.subscribe();
        changes.mark_unchanged();

        let end = loop {
            tokio::select! {
                inbound = next_data(&mut stream) => match inbound {
                    Inbound::Pong => {
                        awaiting_pong = None;
                        probing = false;
                    }
                    Inbound::Closed(code) => {
                        break match code.map(shim_protocol::close::classify) {
                            Some(CloseAction::Fatal(f)) => {
                                conn.cancel_requests(&mut tasks);
                                self.revoked_by_close(f).await
                            }
                            Some(CloseAction::CleanReconnect) => ConnEnd::Clean,
                            _ => ConnEnd::Error { handshook: true },
                        };
                    }
                    Inbound::Data(bytes) => {
                        if let Some(end) = self.inbound(&conn, &bytes, &mut tasks).await {
                            break end;
                        }
                    }
                },
                _ = status.tick() => conn.send_status(),
                _ = ping.tick() => {
                    if let Some(since) = awaiting_pong
                        && since.elapsed() >= tuning.ws_pong_timeout
                    {
                        tracing::warn!("no pong within the deadline; reconnecting");
                        silent = true;
                        break ConnEnd::Error { handshook: true };
                    }
                    if awaiting_pong.is_none() {
                        awaiting_pong = Some(Instant::now());
                    }
                    let _ = conn.out.send(Out::Ping);
                }
                Ok(()) = changes.changed() => {
                    // Probe now with a short deadline: a pong within PROBE_TIMEOUT, or the
                    // link is taken as dead (2.4's ping and pong, sooner).
                    let probe = crate::runtime::netwatch::PROBE_TIMEOUT;
                    let since = Instant::now()
                        .checked_sub(tuning.ws_pong_timeout.saturating_sub(probe))
                        .unwrap_or_else(Instant::now);
                    awaiting_pong = Some(awaiting_pong.map_or(since, |a| a.min(since)));
                    probing = true;
                    let _ = conn.out.send(Out::Ping);
                }
                () = tokio::time::sleep(pong_wait(awaiting_pong, tuning.ws_pong_timeout)), if awaiting_pong.is_some() => {
                    tracing::warn!("no pong within the deadline; reconnecting");
                    silent = true;
                    if probing {
                        break ConnEnd::ProbeFailed;
                    }
                    break ConnEnd::Error { handshook: true };
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                () = self.stop.cancelled() => {
                    break ConnEnd::Terminal(Outcome::Stopped);
                }
                () = self.machine.shutdown.cancelled() => {
                    break ConnEnd::Terminal(Outcome::Stopped);
                }
                () = failed.cancelled() => {
                    break ConnEnd::Terminal(self.audit_failed_outcome());
                }
            }
        };
        // Cancel everything still running on this connection (2.6): responses are never sent.
        conn.cancel_requests(&mut tasks);
        while tasks.join_next().await.is_some() {}
        let close = match &end {
            ConnEnd::Terminal(Outcome::Stopped) => Some((codes::NORMAL, String::new())),
            ConnEnd::Terminal(Outcome::Failed(DaemonError::Audit(_))) => {
                Some((codes::SERVER_ERROR, "audit log failure".to_owned()))
            }
            ConnEnd::Terminal(Outcome::Revoked) if silenced.load(Ordering::SeqCst) => {
                Some((codes::SESSION_REVOKED, "session_revoked".to_owned()))
            }
            ConnEnd::Error { .. }
            | ConnEnd::ProbeFailed
            | ConnEnd::Forbidden
            | ConnEnd::Unreachable(..) => Some((codes::GOING_AWAY, String::new())),
            _ => None,
        };
        let closing = close.is_some();
        let _ = conn
            .out
            .send(close.map_or(Out::End, |(code, reason)| Out::Close(code, reason)));
        drop(conn);
        let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
        // A link that answered no ping will not answer the Close: waiting for it would only
        // delay the reconnect (by CLOSE_REPLY_WAIT, a third of the time to recover after a
        // wake-up).
        if closing && !silent {
            await_close_reply(&mut stream).await;
        }
        let reason = match &end {
            ConnEnd::Clean => "clean_exit".to_owned(),
            ConnEnd::Error { .. }
            | ConnEnd::ProbeFailed
            | ConnEnd::Forbidden
            | ConnEnd::Unreachable(..) => "loop_error: connection lost".to_owned(),
            ConnEnd::Terminal(Outcome::Stopped) => "clean_exit".to_owned(),
            ConnEnd::Terminal(Outcome::Revoked) => return end,
            ConnEnd::Terminal(Outcome::Failed(e)) => format!("loop_error: {e}"),
        };
        if !self.audit.failed_token().is_cancelled() {
            let _ = self
                .audit
                .op(
                    "WS_DISCONNECTED",
                    None,
                    Map::new().with("reason", reason),
                    AuditResult::default(),
                )
                .await;
        }
        end
    }

    /// One inbound data frame (3.5). `Some` ends the connection.
    async fn inbound(
        &self,
        conn: &Arc<Conn>,
        bytes: &[u8],
        tasks: &mut JoinSet<()>,
    ) -> Option<ConnEnd> {
        let f = match frame::decode_bytes(bytes) {
            Ok(f) => f,
            Err(e) => {
                self.malformed(conn, &e);
                return None;
            }
        };
        if let Ok(mut a) = self.activity.lock() {
            *a = Instant::now();
        }
        match &f.message {
            Message::Ping(_) => {
                if let Ok(t) = frame::encode_shim(&f.id, now_ts(), None, &Message::Pong(Empty {})) {
                    conn.send(t);
                }
                return None;
            }
            Message::SessionRevoked(r) => {
                // 11: no further frames, audit, close 4428, stop.
                conn.silenced.store(true, Ordering::SeqCst);
                conn.cancel_requests(tasks);
                let mut d = Map::new()
                    .with("reason", r.reason.as_str())
                    .with("source", "frame");
                if let Some(m) = &r.new_shim_machine_id {
                    d.insert("new_shim_machine_id", m.as_str());
                }
                if self
                    .audit
                    .op("SESSION_REVOKED", None, d, AuditResult::default())
                    .await
                    .is_err()
                {
                    return Some(ConnEnd::Terminal(self.audit_failed_outcome()));
                }
                tracing::warn!(
                    reason = r.reason.as_str(),
                    "session revoked by the platform; not reconnecting"
                );
                return Some(ConnEnd::Terminal(Outcome::Revoked));
            }
            _ => {}
        }
        // Admission (step 5).
        if !conn.admit() {
            let err = Message::Error(ErrorPayload::with_details(
                ErrorCode::ShimOverloaded,
                "The local executor is at its concurrency limit.",
                &OverloadedDetails {
                    max_concurrent: conn.max(),
                },
            ));
            conn.send_response(&f.id, &err, Some(0));
            let ty = f.message_type().as_str();
            let audit = self.audit.clone();
            let id = f.id.clone();
            tasks.spawn(async move {
                let _ = audit.refusal(ty, &id, &ErrorCode::ShimOverloaded).await;
            });
            return None;
        }
        let conn2 = conn.clone();
        tasks.spawn(async move { run_request(conn2, f).await });
        None
    }

    fn malformed(&self, conn: &Conn, e: &DecodeError) {
        // COMPUTER_USE_HW.md 10.1 item 3: a recording request is refused as the gate would,
        // whatever its payload holds (only the id is needed).
        if let Some((id, ty)) = e.answerable()
            && ty.required_capability() == Some(Capability::Recording)
        {
            let refusal = recording_refusal(conn, matches!(self.role, Role::Control));
            conn.send_response(id, &refusal, Some(conn.capacity()));
            return;
        }
        match (e.answerable(), e.error_payload()) {
            (Some((id, ty)), Some(payload))
                if !ty.expected_responses().is_empty() && ty != MessageType::Ping =>
            {
                tracing::warn!(error = %e, "answering a malformed request");
                conn.send_response(id, &Message::Error(payload), Some(conn.capacity()));
            }
            _ => tracing::warn!(error = %e, "dropping an invalid frame"),
        }
    }
}

/// The refusal of a recording request (COMPUTER_USE_HW.md 10.1 item 3): `recording` is
/// never advertised, so never granted.
fn recording_refusal(conn: &Conn, is_control: bool) -> Message {
    if is_control {
        return error_msg(
            ErrorCode::FeatureNotSupported,
            "Execution operations require an activated per-session data connection.",
        );
    }
    capability_refusal(conn, &Capability::Recording)
}

fn capability_refusal(conn: &Conn, cap: &Capability) -> Message {
    Message::Error(ErrorPayload::with_details(
        ErrorCode::CapabilityNotGranted,
        format!(
            "The {} capability was not granted for this connection.",
            cap.as_str()
        ),
        &CapabilityNotGrantedDetails {
            capability: cap.as_str().to_owned(),
            required_capability: cap.as_str().to_owned(),
            granted_capabilities: conn.negotiated.granted_sorted(),
        },
    ))
}

/// Whether gate refusals (control connection, capability) of `ty` go unaudited: the
/// requests of COMPUTER_USE_HW.md (computer use, local LLM, recording, hardware), whose
/// section 1.3 / 6 say such rejections are not audited.
fn gate_refusal_unaudited(ty: MessageType) -> bool {
    matches!(
        ty.required_capability(),
        Some(
            Capability::ComputerUse
                | Capability::LocalLlm
                | Capability::Recording
                | Capability::HardwareSerial
                | Capability::HardwareUsb
                | Capability::HardwareGpio
        )
    )
}

/// How long a closing connection waits for the platform to answer its Close frame.
const CLOSE_REPLY_WAIT: Duration = Duration::from_secs(1);

/// After sending a Close: reads on (discarding) until the platform answers it or the socket
/// ends, for at most [`CLOSE_REPLY_WAIT`] (RFC 6455 7.1.1), so that the connection ends with
/// a FIN. Going with the platform's last frames unread ends it with a reset instead, and a
/// reset can make the platform lose the Close frame, and its code, that it had not read yet.
async fn await_close_reply(stream: &mut WsSource) {
    let _ = tokio::time::timeout(CLOSE_REPLY_WAIT, async {
        while !matches!(next_data(stream).await, Inbound::Closed(_)) {}
    })
    .await;
}

fn pong_wait(since: Option<Instant>, timeout: Duration) -> Duration {
    since.map_or(timeout, |s| timeout.saturating_sub(s.elapsed()))
}

/// Steps 6-11 of 3.5 for one admitted request.
async fn run_request(conn: Arc<Conn>, f: Frame) {
    let Ok(permit) = conn.sem.clone().acquire_owned().await else {
        return;
    };
    if let Ok(mut c) = conn.counters.lock() {
        c.queue_depth = c.queue_depth.saturating_sub(1);
        c.in_flight += 1;
    }
    let ty = f.message_type();
    let op = conn.rt.machine.status.operation(
        conn.session_id(),
        &f.id,
        ty.as_str(),
        summary(&f.message),
        matches!(f.message, Message::ExecuteCommand(_)),
    );
    let cancel = op.cancelled().clone();
    let mut reply = Some(Reply {
        conn: conn.clone(),
        id: f.id.clone(),
        ty,
        op,
        permit,
        work: None,
    });
    let result = handle(&conn, &f.id, f.message, &cancel, &mut reply).await;
    // `None` when a file operation took the reply to its blocking thread.
    if let Some(r) = reply {
        r.finish(result, Conn::send);
    }
}

/// Step 11 of 3.5 for one admitted request, once its handler has a result: end its entry on
/// the board, free its slot, send its response. The request's task runs it, except for a
/// file request: the blocking-pool thread that ran the operation and made its audit record
/// durable also answers it ([`Finish::answer_blocking`]), so the response leaves without
/// waiting for a worker thread to wake up, and the request costs no wake-up after it.
struct Reply {
    conn: Arc<Conn>,
    id: String,
    ty: MessageType,
    op: crate::runtime::board::OpGuard,
    permit: tokio::sync::OwnedSemaphorePermit,
    /// The machine-wide work permit (10.3) of a child's request, held until it is answered.
    work: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Finish for Reply {
    fn id(&self) -> &str {
        &self.id
    }

    fn cancelled(&self) -> bool {
        self.conn.ended.load(Ordering::SeqCst)
    }

    fn answer_blocking(self, result: Result<Option<Message>, AuditFailed>) {
        self.finish(result, Conn::write_blocking);
    }
}

impl Reply {
    /// Finishes the request with `result` (`Ok(None)`: nothing to answer; `Err`: the audit
    /// writer failed, so nothing may be sent), sending with `send`.
    fn finish(self, result: Result<Option<Message>, AuditFailed>, send: fn(&Conn, String)) {
        let Reply {
            conn,
            id,
            ty,
            op,
            permit,
            work,
        } = self;
        drop((op, work));
        let status = &conn.rt.machine.status;
        if let Ok(Some(Message::ScreenshotResponse(p))) = &result {
            status.set_screenshot(&p.mime_type, &p.image_base64);
        }
        if let Ok(Some(Message::Error(e))) = &result {
            status.error(conn.session_id(), ty.as_str(), e.code.as_str(), &e.message);
        }
        drop(permit);
        let edge = {
            let Ok(mut c) = conn.counters.lock() else {
                return;
            };
            let edge = c.pending >= conn.max() || c.in_flight == conn.max();
            c.in_flight = c.in_flight.saturating_sub(1);
            c.pending = c.pending.saturating_sub(1);
            edge
        };
        let Ok(response) = result else {
            // The audit writer failed: nothing may be sent; the runtime is stopping.
            return;
        };
        if conn.silenced.load(Ordering::SeqCst) {
            return;
        }
        if let Some(t) = response.and_then(|m| response_text(&id, &m, Some(conn.capacity()))) {
            send(&conn, t);
        }
        if edge && let Some(t) = conn.status_text() {
            send(&conn, t);
        }
    }
}

/// What a request does, for `status` and the console: the command, the path; never
/// contents.
fn summary(m: &Message) -> String {
    match m {
        Message::ExecuteCommand(p) => match (&p.command, &p.argv) {
            (_, Some(argv)) => argv.join(" "),
            (Some(c), None) => c.clone(),
            (None, None) => String::new(),
        },
        Message::FileRead(p) => p.path.clone(),
        Message::FileWrite(p) => p.path.clone(),
        Message::FileStat(p) => p.path.clone(),
        Message::FileList(p) => p.path.clone(),
        Message::FileDelete(p) => p.path.clone(),
        Message::FileMove(p) => format!("{} -> {}", p.src, p.dst),
        _ => String::new(),
    }
    .chars()
    .take(300)
    .collect()
}

fn error_msg(code: ErrorCode, message: &str) -> Message {
    Message::Error(ErrorPayload::new(code, message))
}

/// Mode check, capability check and handler (3.5 steps 7-10) of request `id`. Takes the
/// message by value, so a large payload (a 1 MiB `SERIAL_WRITE` or `FILE_WRITE`) is not
/// copied again on its way to the handler.
async fn handle(
    conn: &Conn,
    id: &str,
    message: Message,
    cancel: &CancellationToken,
    reply: &mut Option<Reply>,
) -> Result<Option<Message>, AuditFailed> {
    let ty = message.message_type();
    let rt = &conn.rt;
    let is_control = matches!(rt.role, Role::Control);
    // Step 7: the control connection never executes anything (6.3).
    if is_control && !ty.is_control_request() {
        // COMPUTER_USE_HW.md 1.3: refusals at steps 1-2 of that area are not audited.
        if !gate_refusal_unaudited(ty) {
            rt.audit
                .refusal(ty.as_str(), id, &ErrorCode::FeatureNotSupported)
                .await?;
        }
        return Ok(Some(error_msg(
            ErrorCode::FeatureNotSupported,
            "Execution operations require an activated per-session data connection.",
        )));
    }
    // Step 8.
    let Some(cap) = ty.required_capability() else {
        // A stray response type on a data connection: no reply (step 10).
        return Ok(None);
    };
    let granted = if crate::runtime::hw::is_hw(ty) {
        crate::runtime::hw::granted(&conn.negotiated, ty)
    } else {
        conn.negotiated.is_granted(&cap)
    };
    if !granted {
        if !gate_refusal_unaudited(ty) {
            rt.audit
                .refusal(ty.as_str(), id, &ErrorCode::CapabilityNotGranted)
                .await?;
        }
        return Ok(Some(capability_refusal(conn, &cap)));
    }
    if is_control {
        let Some(control) = &rt.control else {
            return Ok(Some(error_msg(
                ErrorCode::InternalError,
                "control plane unavailable",
            )));
        };
        return control.handle(id, &message).await.map(Some);
    }
    if ty.is_control_request() {
        return Ok(Some(error_msg(
            ErrorCode::FeatureNotSupported,
            "Control operations are only accepted on the base control connection.",
        )));
    }
    if rt.machine.paused.load(Ordering::SeqCst) {
        rt.audit
            .refusal(ty.as_str(), id, &ErrorCode::ShimOverloaded)
            .await?;
        return Ok(Some(error_msg(
            ErrorCode::ShimOverloaded,
            "The local user paused this executor; the operation was not run. Try again after they resume it.",
        )));
    }
    let Some(data) = &conn.data else {
        return Ok(Some(error_msg(ErrorCode::InternalError, "no data plane")));
    };
    // 10.3: children run handlers under the machine-wide work limit.
    let work = if rt.uses_work_limit {
        let sem = rt.machine.work_sem.lock().ok().and_then(|w| w.clone());
        match sem {
            Some(s) => s.acquire_owned().await.ok(),
            None => None,
        }
    } else {
        None
    };
    let message = match FileOp::try_from(message) {
        Ok(op) => {
            // The blocking thread that runs the operation answers it (see `Reply`).
            if let Some(mut r) = reply.take() {
                r.work = work;
                data.start_file_op(op, r);
            }
            return Ok(None);
        }
        Err(other) => other,
    };
    let r = match message {
        Message::ExecuteCommand(p) => data.execute(id, p, cancel).await.map(Some),
        Message::LocalLlmCompletion(p) => {
            // Chunks carry the request id and `pending_capacity: null` (8.4).
            let chunk = |m: Message| conn.send_response(id, &m, None);
            crate::runtime::llm::complete(&rt.machine.llm, &rt.llm, &rt.audit, id, p, &chunk)
                .await
                .map(Some)
        }
        m if crate::runtime::hw::is_hw(ty) => {
            let max = conn.negotiated.limits.max_file_size_bytes;
            let n = &conn.negotiated;
            crate::runtime::hw::handle(&rt.machine.hw, &rt.hw, &rt.audit, n, max, id, m)
                .await
                .map(Some)
        }
        m if crate::runtime::cu::is_cu(ty) => {
            let max = conn.negotiated.limits.max_file_size_bytes;
            let (cu, chat) = (&rt.machine.cu, conn.session_id());
            match crate::runtime::cu::handle(cu, &rt.cu, &rt.audit, max, id, chat, &m).await {
                Some(r) => r.map(Some),
                None => Ok(Some(crate::runtime::cu::not_enabled())),
            }
        }
        _ => {
            // Computer use, local LLM, recording and hardware are never advertised, so
            // they cannot be granted; this is the handler's defence in depth (6.2).
            rt.audit
                .refusal(ty.as_str(), id, &ErrorCode::CapabilityNotGranted)
                .await?;
            Ok(Some(error_msg(
                ErrorCode::CapabilityNotGranted,
                &format!("{} is not enabled on this machine.", cap_label(&cap)),
            )))
        }
    };
    drop(work);
    r
}

fn cap_label(cap: &Capability) -> &str {
    cap.as_str()
}

/// Why a WebSocket could not be opened: the TCP path (direct or through the proxy) or the
/// TLS / upgrade on top of it.
enum ConnectError {
    Net(shim_auth::net::NetError),
    Ws(tungstenite::Error),
}

type WsStream = tokio_tungstenite::WebSocketStream<
    shim_ws_deflate::DeflateStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
>;

/// Messages below this size travel uncompressed: deflating a small frame costs more time
/// than its bytes do on any link (chosen with `cargo xtask bench e2e`, see docs/network.md).
const COMPRESS_THRESHOLD: usize = 1024;

/// The deflate level of outgoing messages: 2. zlib-rs at level 1 codes literals with the
/// static Huffman table (8-9 bits each), which leaves base64 at its full size: on issue 29's
/// scene a PNG screenshot's 620 KB of base64 left the daemon as 599 KB at level 1
/// (`cargo xtask bench cu`). Level 2 is the fastest with dynamic codes, which win back the
/// 6-bits-a-character redundancy of base64 and most of text's.
const COMPRESS_LEVEL: u32 = 2;
type WsSink = futures_util::stream::SplitSink<WsStream, tungstenite::Message>;
type WsSource = futures_util::stream::SplitStream<WsStream>;

fn close_msg(code: u16, reason: &str) -> tungstenite::Message {
    tungstenite::Message::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: shim_protocol::close::truncate_reason(reason)
            .to_owned()
            .into(),
    }))
}

enum Inbound {
    Data(Vec<u8>),
    Pong,
    Closed(Option<u16>),
}

/// The next application frame, pong, or the end of the socket.
async fn next_data(stream: &mut WsSource) -> Inbound {
    loop {
        match stream.next().await {
            None | Some(Err(_)) => return Inbound::Closed(None),
            Some(Ok(m)) => match m {
                tungstenite::Message::Text(t) => return Inbound::Data(t.as_bytes().to_vec()),
                tungstenite::Message::Binary(b) => return Inbound::Data(b.to_vec()),
                tungstenite::Message::Pong(_) => return Inbound::Pong,
                tungstenite::Message::Ping(_) | tungstenite::Message::Frame(_) => {}
                tungstenite::Message::Close(c) => {
                    return Inbound::Closed(Some(c.map_or(codes::ABNORMAL, |c| u16::from(c.code))));
                }
            },
        }
    }
}

async fn write_loop(
    wire: Arc<Wire>,
    mut rx: mpsc::UnboundedReceiver<Out>,
    silenced: Arc<AtomicBool>,
) {
    while let Some(o) = rx.recv().await {
        let mut guard = wire.sink.lock().await;
        let Some(sink) = guard.as_mut() else {
            break;
        };
        let r = match o {
            Out::Text(t) => {
                if silenced.load(Ordering::SeqCst) {
                    continue;
                }
                sink.send(tungstenite::Message::text(t)).await
            }
            Out::Ping => {
                sink.send(tungstenite::Message::Ping(Vec::new().into()))
                    .await
            }
            Out::Close(code, reason) => {
                wire.closed.store(true, Ordering::SeqCst);
                let _ = sink.send(close_msg(code, &reason)).await;
                let _ = sink.close().await;
                break;
            }
            Out::End => break,
        };
        if r.is_err() {
            break;
        }
    }
    let mut guard = wire.sink.lock().await;
    wire.closed.store(true, Ordering::SeqCst);
    *guard = None;
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
