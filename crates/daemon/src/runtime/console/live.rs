//! `GET /api/live` (docs/console.md, "Live view and take-over"): a WebSocket that pushes
//! the desktop computer use drives to the page, and carries the user's mouse and keys to
//! the private desktop while they hold it.
//!
//! * Nothing runs without a viewer: each open view has its own X connection and thread,
//!   which sleep until the DAMAGE extension reports a change (no polling).
//! * Latest frame wins: the thread captures the next frame only after the previous one was
//!   sent; meanwhile changes merge into one set of rectangles, so a slow viewer gets fewer
//!   frames and never a queue.
//! * `computer_use_masked_regions` are black in every frame, as in screenshots.
//! * Opening a view is a `LIVE_VIEW` record (`open`), closing one another (`close`, with
//!   the frames sent and the user's input events), and `status` lists the open views.
//!
//! The request passed [`crate::runtime::console::guard`] (Host, session cookie, and the
//! console's own `Origin`, which this path requires even though it is a GET).

use std::sync::Arc;

use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Response;

use crate::runtime::console::state::ConsoleState;

/// The frame magic: the first 4 bytes of every binary message.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const MAGIC: &[u8; 4] = b"AGL1";

/// The largest message the page may send (an input event).
const MAX_IN: usize = 16 * 1024;

fn plain(status: StatusCode, body: &'static str) -> Response {
    (status, body).into_response()
}

/// The upgrade: checks the WebSocket handshake headers, writes the `open` record, answers
/// 101 and serves the socket on a task of its own.
pub(crate) async fn live(State(st): State<Arc<ConsoleState>>, mut req: Request) -> Response {
    let h = req.headers();
    let is_ws = h
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let version_ok = h
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v.as_bytes() == b"13");
    let Some(key) = h
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| k.as_bytes().to_vec())
    else {
        return plain(
            StatusCode::BAD_REQUEST,
            "refused: /api/live is a WebSocket (no Sec-WebSocket-Key)\n",
        );
    };
    if !is_ws || !version_ok {
        return plain(
            StatusCode::BAD_REQUEST,
            "refused: /api/live is a WebSocket (version 13)\n",
        );
    }
    if !cfg!(target_os = "linux") {
        return plain(
            StatusCode::NOT_IMPLEMENTED,
            "the live view needs X11 (Linux) in this version\n",
        );
    }
    let desk = st.machine.cu.desk.clone();
    let viewer = desk.add_viewer();
    let opened = st
        .machine
        .audit
        .op(
            "LIVE_VIEW",
            None,
            shim_audit::Map::new()
                .with("action", "open")
                .with("viewer", viewer)
                .with("decided_by", "console"),
            shim_audit::AuditResult::default(),
        )
        .await;
    if opened.is_err() {
        desk.remove_viewer(viewer);
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the audit log failed; the daemon is stopping\n",
        );
    }
    let upgrade = hyper::upgrade::on(&mut req);
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key);
    tokio::spawn(async move {
        let began = std::time::Instant::now();
        let (frames, inputs) = match upgrade.await {
            Ok(up) => {
                let io = hyper_util::rt::TokioIo::new(up);
                let cfg = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                    .max_message_size(Some(MAX_IN))
                    .max_frame_size(Some(MAX_IN));
                let ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
                    io,
                    tokio_tungstenite::tungstenite::protocol::Role::Server,
                    Some(cfg),
                )
                .await;
                serve(&st, viewer, ws).await
            }
            Err(e) => {
                tracing::warn!(error = %e, "the live view's upgrade failed");
                (0, 0)
            }
        };
        desk.remove_viewer(viewer);
        let _ = st
            .machine
            .audit
            .op(
                "LIVE_VIEW",
                None,
                shim_audit::Map::new()
                    .with("action", "close")
                    .with("viewer", viewer)
                    .with("frames", frames)
                    .with("user_inputs", inputs),
                shim_audit::AuditResult::ok_after(began.elapsed()),
            )
            .await;
    });
    let mut resp = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let hs = resp.headers_mut();
    hs.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    hs.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        hs.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

#[cfg(not(target_os = "linux"))]
async fn serve<S>(_: &ConsoleState, _: u64, _: S) -> (u64, u64) {
    (0, 0)
}

#[cfg(target_os = "linux")]
pub(crate) use linux::serve;

#[cfg(target_os = "linux")]
mod linux {
    use std::sync::Arc;
    use std::sync::Mutex;
    use std::sync::PoisonError;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    use std::time::Instant;
    use std::time::SystemTime;

    use futures_util::SinkExt;
    use futures_util::StreamExt;
    use serde::Deserialize;
    use shim_cu::backend::Button;
    use shim_cu::backend::Wheel;
    use shim_cu::x11::live::Change;
    use shim_cu::x11::live::Watcher;
    use shim_cu::x11::live::merge;
    use tokio::io::AsyncRead;
    use tokio::io::AsyncWrite;
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::Message;

    use super::MAGIC;
    use crate::runtime::console::state::ConsoleState;
    use crate::runtime::cu::LiveTarget;

    /// The shortest time between two frames (at most 20 per second).
    const MIN_INTERVAL: Duration = Duration::from_millis(50);

    /// JPEG quality of the frames.
    const QUALITY: i64 = 70;

    /// How often a view without a desktop to watch looks again.
    const RETRY: Duration = Duration::from_secs(1);

    /// Most characters one `text` event may type.
    const MAX_TEXT: usize = 1000;

    /// One encoded frame, waiting to be sent.
    struct Frame {
        bytes: Vec<u8>,
    }

    /// Between the capture thread and the socket task.
    #[derive(Default)]
    struct Shared {
        slot: Mutex<Option<Frame>>,
        /// The socket sent the last frame: the thread may capture the next.
        ready: AtomicBool,
        stop: AtomicBool,
        /// The display went away.
        ended: AtomicBool,
        notify: tokio::sync::Notify,
    }

    /// An input event from the page (desktop coordinates: the page scales from its canvas).
    #[derive(Debug, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
    pub(crate) enum UserInput {
        /// Move the pointer.
        Move { x: i64, y: i64 },
        /// Press (`down`) or release a button: `left`, `middle`, `right`.
        Button { button: String, down: bool },
        /// One wheel detent: `up`, `down`, `left`, `right`.
        Wheel { direction: String },
        /// Press and release a chord, e.g. `ctrl+s`, `enter`.
        Key { chord: String },
        /// Type text.
        Text { text: String },
    }

    fn unix_ms() -> u64 {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Captures, masks and encodes `rects` as one frame (format in docs/console.md).
    pub(crate) fn encode(
        w: &Watcher,
        rects: &[[i64; 4]],
        masks: &[[i64; 4]],
        seq: u64,
    ) -> Result<Vec<u8>, shim_cu::CuError> {
        let captured = unix_ms();
        let mut tiles = Vec::new();
        let mut body = Vec::new();
        for r in rects {
            let mut img = w.capture(*r)?;
            shim_cu::encode::mask(&mut img, [r[0], r[1]], masks);
            let jpeg = shim_cu::encode::jpeg(&img, QUALITY)?;
            tiles.push(serde_json::json!({
                "x": r[0], "y": r[1], "w": r[2] - r[0], "h": r[3] - r[1], "bytes": jpeg.len(),
            }));
            body.extend_from_slice(&jpeg);
        }
        let header = serde_json::json!({
            "seq": seq,
            "screen": w.size(),
            "captured_unix_ms": captured,
            "tiles": tiles,
        })
        .to_string();
        let mut out = Vec::with_capacity(8 + header.len() + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&u32::try_from(header.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The capture thread: the whole screen first, then what DAMAGE reports, one frame at a
    /// time (the next only after the socket took the last).
    fn produce(w: &Watcher, sh: &Shared, masks: &[[i64; 4]]) {
        let [sw, shh] = w.size();
        let mut pending = vec![[0, 0, sw, shh]];
        let mut last: Option<Instant> = None;
        let mut seq = 0u64;
        loop {
            if sh.stop.load(Ordering::SeqCst) {
                return;
            }
            if !pending.is_empty() && sh.ready.load(Ordering::SeqCst) {
                if let Some(l) = last {
                    let wait = MIN_INTERVAL.saturating_sub(l.elapsed());
                    if !wait.is_zero() {
                        std::thread::sleep(wait);
                    }
                }
                match w.pending() {
                    Ok(more) => merge(&mut pending, more),
                    Err(_) => break,
                }
                seq += 1;
                match encode(w, &pending, masks, seq) {
                    Ok(bytes) => {
                        sh.ready.store(false, Ordering::SeqCst);
                        *sh.slot.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(Frame { bytes });
                        sh.notify.notify_one();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "a live frame could not be captured");
                    }
                }
                pending.clear();
                last = Some(Instant::now());
                continue;
            }
            match w.next() {
                Ok(Change::Damaged(r)) => merge(&mut pending, r),
                Ok(Change::Woken) => {}
                Err(_) => break,
            }
        }
        sh.ended.store(true, Ordering::SeqCst);
        sh.notify.notify_one();
    }

    fn button(name: &str) -> Option<Button> {
        Some(match name {
            "left" => Button::Left,
            "middle" => Button::Middle,
            "right" => Button::Right,
            _ => return None,
        })
    }

    fn wheel(name: &str) -> Option<Wheel> {
        Some(match name {
            "up" => Wheel::Up,
            "down" => Wheel::Down,
            "left" => Wheel::Left,
            "right" => Wheel::Right,
            _ => return None,
        })
    }

    /// Carries one input event of the user to the private desktop.
    pub(crate) fn apply(w: &Watcher, ev: UserInput) -> Result<(), String> {
        let input = w.input();
        let [sw, sh] = w.size();
        let e = |e: shim_cu::CuError| e.message;
        match ev {
            UserInput::Move { x, y } => input
                .move_to([x.clamp(0, sw - 1), y.clamp(0, sh - 1)])
                .map_err(e),
            UserInput::Button { button: b, down } => {
                let b = button(&b).ok_or("unknown button")?;
                input.button(b, down).map_err(e)
            }
            UserInput::Wheel { direction } => input
                .scroll(wheel(&direction).ok_or("unknown direction")?)
                .map_err(e),
            UserInput::Key { chord } => {
                let keys = shim_cu::keys::parse_chord(&chord).map_err(e)?;
                for k in &keys {
                    input.key(*k, true).map_err(e)?;
                }
                for k in keys.iter().rev() {
                    input.key(*k, false).map_err(e)?;
                }
                Ok(())
            }
            UserInput::Text { text } => {
                if text.chars().count() > MAX_TEXT {
                    return Err(format!("at most {MAX_TEXT} characters at once"));
                }
                let r = text.chars().try_for_each(|c| input.type_char(c)).map_err(e);
                input.end_typing();
                r
            }
        }
    }

    fn notice(kind: &str, text: &str) -> Message {
        Message::text(serde_json::json!({"type": kind, "message": text}).to_string())
    }

    /// Waits for a desktop to watch (the isolated desktop starts with the first
    /// computer-use request), telling the page once. `None`: the page left first.
    async fn target<S>(st: &ConsoleState, ws: &mut WebSocketStream<S>) -> Option<LiveTarget>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut told = false;
        loop {
            if let Some(t) = st.machine.cu.live_target().await {
                return Some(t);
            }
            if !told {
                told = true;
                let m = notice(
                    "waiting",
                    "no desktop to show yet: computer use is off, or the private desktop starts with the agent's first computer-use request",
                );
                ws.send(m).await.ok()?;
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY) => {}
                m = ws.next() => match m {
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
                    Some(Ok(_)) => {}
                },
            }
        }
    }

    /// Serves one view until the page leaves; returns (frames sent, input events applied).
    pub(crate) async fn serve<S>(
        st: &ConsoleState,
        viewer: u64,
        mut ws: WebSocketStream<S>,
    ) -> (u64, u64)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut frames, mut inputs) = (0u64, 0u64);
        loop {
            let Some(t) = target(st, &mut ws).await else {
                return (frames, inputs);
            };
            let (display, cookie) = (t.display.clone(), t.cookie.clone());
            let opened = tokio::task::spawn_blocking(move || {
                Watcher::open(display.as_deref(), cookie.as_ref())
            })
            .await;
            let w = match opened {
                Ok(Ok(w)) => Arc::new(w),
                Ok(Err(e)) => {
                    let _ = ws.send(notice("error", &e.to_string())).await;
                    return (frames, inputs);
                }
                Err(_) => return (frames, inputs),
            };
            let hello = serde_json::json!({
                "type": "hello",
                "screen": w.size(),
                "input": t.private,
            });
            if ws.send(Message::text(hello.to_string())).await.is_err() {
                return (frames, inputs);
            }
            let sh = Arc::new(Shared::default());
            sh.ready.store(true, Ordering::SeqCst);
            let (tw, tsh, masks) = (w.clone(), sh.clone(), t.masks.clone());
            let thread = std::thread::Builder::new()
                .name("live-view".into())
                .spawn(move || produce(&tw, &tsh, &masks));
            let Ok(thread) = thread else {
                return (frames, inputs);
            };
            let left = pump(
                st,
                viewer,
                &mut ws,
                &w,
                &sh,
                t.private,
                &mut frames,
                &mut inputs,
            )
            .await;
            sh.stop.store(true, Ordering::SeqCst);
            w.wake();
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            if left {
                return (frames, inputs);
            }
            // The display went away (the private desktop stopped): look again.
        }
    }

    /// Sends frames and applies input until the page leaves (`true`) or the display ends
    /// (`false`).
    #[allow(clippy::too_many_arguments)]
    async fn pump<S>(
        st: &ConsoleState,
        viewer: u64,
        ws: &mut WebSocketStream<S>,
        w: &Arc<Watcher>,
        sh: &Arc<Shared>,
        private: bool,
        frames: &mut u64,
        inputs: &mut u64,
    ) -> bool
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let desk = &st.machine.cu.desk;
        loop {
            tokio::select! {
                () = sh.notify.notified() => {
                    if sh.ended.load(Ordering::SeqCst) {
                        let _ = ws.send(notice("ended", "the desktop went away")).await;
                        return false;
                    }
                    let frame = sh.slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                    if let Some(f) = frame {
                        if ws.send(Message::binary(f.bytes)).await.is_err() {
                            return true;
                        }
                        *frames += 1;
                        desk.frame_sent(viewer);
                    }
                    sh.ready.store(true, Ordering::SeqCst);
                    w.wake();
                }
                m = ws.next() => match m {
                    Some(Ok(Message::Text(t))) => {
                        let why = if !private {
                            Some("input from the page goes only to the private desktop; use your own mouse and keyboard".to_owned())
                        } else if !desk.held() {
                            Some("take the desktop over first".to_owned())
                        } else {
                            match serde_json::from_str::<UserInput>(t.as_str()) {
                                Ok(ev) => {
                                    let w = w.clone();
                                    match tokio::task::spawn_blocking(move || apply(&w, ev)).await {
                                        Ok(Ok(())) => {
                                            *inputs += 1;
                                            None
                                        }
                                        Ok(Err(e)) => Some(e),
                                        Err(e) => Some(e.to_string()),
                                    }
                                }
                                Err(e) => Some(format!("not an input event: {e}")),
                            }
                        };
                        if let Some(why) = why
                            && ws.send(notice("refused", &why)).await.is_err()
                        {
                            return true;
                        }
                    }
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return true,
                    Some(Ok(_)) => {}
                },
            }
        }
    }
}
