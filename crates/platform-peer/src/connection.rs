//! An established connection: correlated requests, unsolicited frames, violations, closes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::SinkExt;
use futures_util::StreamExt;
use shim_protocol::Frame;
use shim_protocol::Message;
use shim_protocol::MessageType;
use shim_protocol::frame;
use shim_protocol::hello_rules::Route;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::handshake::HelloAck;
use shim_protocol::messages::handshake::RevokeReason;
use shim_protocol::messages::handshake::SessionRevoked;
use tokio::sync::mpsc;
use tokio::sync::oneshot;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::PeerError;
use crate::counted::Counted;
use crate::server::Shared;
use shim_ws_deflate::DeflateStream;

/// A terminal response and the non-terminal chunks that preceded it.
#[derive(Debug, Clone)]
pub struct Response {
    /// The terminal frame (a success response or `ERROR`).
    pub frame: Frame,
    /// `LOCAL_LLM_COMPLETION_CHUNK` frames received before it.
    pub chunks: Vec<Frame>,
}

struct Pending {
    request: MessageType,
    chunks: Vec<Frame>,
    reply: oneshot::Sender<Response>,
}

enum Outbound {
    Text(String),
    Close(u16, String),
    StopReading,
}

/// One established connection from the daemon, after `HELLO_ACK`.
pub struct Connection {
    /// Control or data.
    pub route: Route,
    /// The session of a data route.
    pub session_id: Option<String>,
    /// The daemon's `HELLO`.
    pub hello: Hello,
    /// The `HELLO_ACK` the peer sent.
    pub ack: HelloAck,
    out: mpsc::UnboundedSender<Outbound>,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    unsolicited: tokio::sync::Mutex<mpsc::UnboundedReceiver<Frame>>,
    closed: tokio::sync::Mutex<oneshot::Receiver<Option<(u16, String)>>>,
    received: Arc<AtomicU64>,
}

impl Connection {
    pub(crate) fn spawn(
        ws: WebSocketStream<DeflateStream<Counted>>,
        received: Arc<AtomicU64>,
        shared: Arc<Shared>,
        route: Route,
        session_id: Option<String>,
        hello: Hello,
        ack: HelloAck,
    ) -> Connection {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (unsolicited_tx, unsolicited_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let pending = Arc::new(Mutex::new(HashMap::new()));
        tokio::spawn(run(
            ws,
            shared,
            out_rx,
            unsolicited_tx,
            closed_tx,
            pending.clone(),
        ));
        Connection {
            route,
            session_id,
            hello,
            ack,
            out: out_tx,
            pending,
            unsolicited: tokio::sync::Mutex::new(unsolicited_rx),
            closed: tokio::sync::Mutex::new(closed_rx),
            received,
        }
    }

    /// The bytes read off this connection's socket so far (the upgrade request included):
    /// WebSocket framing included, and compressed if the frames were (what the platform
    /// receives on the wire, not payload sizes).
    pub fn bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Stops reading the socket, as a hung platform would: nothing more is received, and
    /// WebSocket pings go unanswered (tungstenite answers them only while reading).
    pub fn stop_reading(&self) {
        let _ = self.out.send(Outbound::StopReading);
    }

    /// Sends `message` as a request with a fresh UUID id and waits for its terminal
    /// response (or `ERROR`).
    pub async fn request(
        &self,
        message: Message,
        timeout: Duration,
    ) -> Result<Response, PeerError> {
        let id = uuid::Uuid::new_v4().to_string();
        self.request_with_id(&id, message, timeout).await
    }

    /// Like [`Connection::request`] with a chosen id.
    pub async fn request_with_id(
        &self,
        id: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Response, PeerError> {
        let ty = message.message_type();
        let text = frame::encode_platform(id, crate::now_ts(), &message)?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(
                id.to_owned(),
                Pending {
                    request: ty,
                    chunks: Vec::new(),
                    reply: tx,
                },
            );
        }
        self.out
            .send(Outbound::Text(text))
            .map_err(|_| PeerError::Closed)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(PeerError::Closed),
            Err(_) => {
                // Like the platform: forget the request; a late answer is then a violation.
                if let Ok(mut p) = self.pending.lock() {
                    p.remove(id);
                }
                Err(PeerError::Timeout(ty.to_string()))
            }
        }
    }

    /// Sends raw text (for malformed-frame tests). A reply, if any, arrives as an
    /// unsolicited frame only when its id is not outstanding, which is itself a
    /// violation; use [`Connection::expect_raw_reply`] to register the id first.
    pub fn send_raw(&self, text: impl Into<String>) -> Result<(), PeerError> {
        self.out
            .send(Outbound::Text(text.into()))
            .map_err(|_| PeerError::Closed)
    }

    /// Registers `id` as outstanding for `request`, sends `text`, and waits for the reply.
    pub async fn expect_raw_reply(
        &self,
        id: &str,
        request: MessageType,
        text: impl Into<String>,
        timeout: Duration,
    ) -> Result<Response, PeerError> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(
                id.to_owned(),
                Pending {
                    request,
                    chunks: Vec::new(),
                    reply: tx,
                },
            );
        }
        self.send_raw(text)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(PeerError::Closed),
            Err(_) => Err(PeerError::Timeout(request.to_string())),
        }
    }

    /// Waits for the next unsolicited frame (`STATUS`, `RECORDING_STEP`).
    pub async fn next_unsolicited(&self, timeout: Duration) -> Option<Frame> {
        let mut rx = self.unsolicited.lock().await;
        tokio::time::timeout(timeout, rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Closes with `code` and `reason` (scripted closes: 1000, 1011, 4401, 4403, 4426-4429).
    pub fn close(&self, code: u16, reason: &str) {
        let _ = self.out.send(Outbound::Close(code, reason.to_owned()));
    }

    /// Sends `SESSION_REVOKED` and closes like the platform: 4427 for
    /// `another_shim_connected`, 4428 otherwise.
    pub fn revoke(&self, reason: RevokeReason) -> Result<(), PeerError> {
        let code = if reason == RevokeReason::AnotherShimConnected {
            4427
        } else {
            4428
        };
        let text = frame::encode_platform(
            &uuid::Uuid::new_v4().to_string(),
            crate::now_ts(),
            &Message::SessionRevoked(SessionRevoked {
                reason,
                new_shim_machine_id: None,
            }),
        )?;
        self.out
            .send(Outbound::Text(text))
            .map_err(|_| PeerError::Closed)?;
        self.close(
            code,
            if code == 4427 {
                "Another shim connected for this session"
            } else {
                "Token revoked"
            },
        );
        Ok(())
    }

    /// Waits until the socket ends; returns the daemon's close code and reason, if it sent
    /// a close frame.
    pub async fn closed(&self, timeout: Duration) -> Result<Option<(u16, String)>, PeerError> {
        let mut rx = self.closed.lock().await;
        match tokio::time::timeout(timeout, &mut *rx).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(_)) => Ok(None),
            Err(_) => Err(PeerError::Timeout("close".into())),
        }
    }
}

async fn run(
    mut ws: WebSocketStream<DeflateStream<Counted>>,
    shared: Arc<Shared>,
    mut out: mpsc::UnboundedReceiver<Outbound>,
    unsolicited: mpsc::UnboundedSender<Frame>,
    closed: oneshot::Sender<Option<(u16, String)>>,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
) {
    let mut close_seen = None;
    let mut reading = true;
    loop {
        tokio::select! {
            cmd = out.recv() => match cmd {
                Some(Outbound::Text(t)) => {
                    if ws.send(tungstenite::Message::text(t)).await.is_err() { break; }
                }
                Some(Outbound::Close(code, reason)) => {
                    let _ = ws.close(Some(CloseFrame { code: CloseCode::from(code), reason: reason.into() })).await;
                }
                Some(Outbound::StopReading) => reading = false,
                None => break,
            },
            msg = ws.next(), if reading => match msg {
                None | Some(Err(_)) => break,
                Some(Ok(tungstenite::Message::Close(c))) => {
                    close_seen = c.map(|c| (u16::from(c.code), c.reason.to_string()));
                    // Let tungstenite finish the closing handshake.
                    while let Some(Ok(_)) = ws.next().await {}
                    break;
                }
                Some(Ok(tungstenite::Message::Text(t))) => {
                    if !on_frame(t.as_str(), &shared, &pending, &unsolicited) {
                        let _ = ws.close(Some(CloseFrame { code: CloseCode::Error, reason: "protocol violation".into() })).await;
                    }
                }
                Some(Ok(tungstenite::Message::Binary(_))) => {
                    shared.violation("binary frame from the daemon".into());
                }
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = closed.send(close_seen);
}

/// Applies the relay's checks of section 3.7 to one frame; false tears the socket down.
fn on_frame(
    text: &str,
    shared: &Shared,
    pending: &Mutex<HashMap<String, Pending>>,
    unsolicited: &mpsc::UnboundedSender<Frame>,
) -> bool {
    let frame = match frame::decode(text) {
        Ok(f) => f,
        Err(e) => {
            shared.violation(format!("undecodable frame from the daemon: {e}"));
            return false;
        }
    };
    let ty = frame.message_type();
    let proposed = shared
        .config
        .lock()
        .map(|c| c.proposed_hardware)
        .unwrap_or(false);
    let hardware = ty.family() == shim_protocol::messages::Family::ProposedHardware
        && ty.direction() != shim_protocol::messages::Direction::PlatformToShim;
    let accepted = ty.relay_accepts_from_shim() || (proposed && hardware);
    if !accepted {
        shared.violation(format!("the relay does not accept {ty} from the daemon"));
        return false;
    }
    if frame.version.as_deref() != Some("1.1") {
        shared.violation(format!("{ty} without version \"1.1\""));
    }
    if ty.is_unsolicited_from_shim() {
        let _ = unsolicited.send(frame);
        return true;
    }
    let Ok(mut map) = pending.lock() else {
        return false;
    };
    let Some(p) = map.get_mut(&frame.id) else {
        shared.violation(format!(
            "{ty} with id {} answers no outstanding request",
            frame.id
        ));
        return false;
    };
    if ty != MessageType::Error && !p.request.expected_responses().contains(&ty) {
        shared.violation(format!("{ty} is not a response to {}", p.request));
        return false;
    }
    if !ty.is_terminal_response() {
        p.chunks.push(frame);
        return true;
    }
    if let Some(p) = map.remove(&frame.id) {
        let _ = p.reply.send(Response {
            frame,
            chunks: p.chunks,
        });
    }
    true
}
