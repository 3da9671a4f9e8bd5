//! A small Ollama stand-in on 127.0.0.1 for the local-model route (COMPUTER_USE_HW.md
//! 11.3): `GET /api/tags` and NDJSON `POST /api/chat`, each scriptable with every fault the
//! daemon must survive (error statuses, malformed and blank lines, a stream without `done`,
//! a hang, a slow trickle). It speaks plain HTTP/1.1 over a real socket, one request per
//! connection (`Connection: close`, the body ends at EOF), and records what it saw,
//! including clients that went away before the answer was complete.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;

/// What `GET /api/tags` answers.
#[derive(Debug, Clone)]
pub enum Tags {
    /// 200 with these model names.
    Models(Vec<String>),
    /// This status and body.
    Status(u16, String),
    /// 200 with this raw body (malformed JSON, a JSON array ...).
    Raw(String),
    /// Answer the models only after this delay.
    Slow(Duration, Vec<String>),
}

/// What `POST /api/chat` answers.
#[derive(Debug, Clone)]
pub enum Chat {
    /// 200 with these raw NDJSON lines (each sent followed by `\n`), `delay` before each.
    Lines {
        /// The lines, verbatim.
        lines: Vec<String>,
        /// Pause before each line.
        delay: Duration,
    },
    /// This status and body.
    Status(u16, String),
    /// Read the request, then never answer (until the client goes away).
    Hang,
    /// 200 with headers, then `lines`, then hang without ending the body.
    LinesThenHang(Vec<String>),
}

/// One delta line of Ollama's chat stream.
pub fn delta_line(text: &str) -> String {
    serde_json::json!({"model": "m", "message": {"role": "assistant", "content": text}, "done": false})
        .to_string()
}

/// The final line with `done_reason` and token counts.
pub fn done_line(reason: &str, prompt: u64, eval: u64) -> String {
    serde_json::json!({
        "model": "m", "message": {"role": "assistant", "content": ""}, "done": true,
        "done_reason": reason, "prompt_eval_count": prompt, "eval_count": eval
    })
    .to_string()
}

#[derive(Debug, Default)]
struct State {
    tags: Option<Tags>,
    chat: Option<Chat>,
    chat_bodies: Vec<serde_json::Value>,
    tags_requests: usize,
    /// Chat connections the client closed before the answer was complete.
    aborted: usize,
    /// Chat connections whose answer was written completely.
    completed: usize,
}

/// The running stand-in; it stops when dropped.
pub struct FakeOllama {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeOllama {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeOllama {
    /// Binds 127.0.0.1 on a free port.
    pub async fn start(tags: Tags, chat: Chat) -> std::io::Result<FakeOllama> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            tags: Some(tags),
            chat: Some(chat),
            ..State::default()
        }));
        let st = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve(sock, st.clone()));
            }
        });
        Ok(FakeOllama { addr, state, task })
    }

    /// `http://127.0.0.1:PORT`, for `ollama_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the `/api/tags` script.
    pub fn set_tags(&self, tags: Tags) {
        if let Ok(mut s) = self.state.lock() {
            s.tags = Some(tags);
        }
    }

    /// Replaces the `/api/chat` script.
    pub fn set_chat(&self, chat: Chat) {
        if let Ok(mut s) = self.state.lock() {
            s.chat = Some(chat);
        }
    }

    /// The JSON bodies of every `/api/chat` request so far.
    pub fn chat_bodies(&self) -> Vec<serde_json::Value> {
        self.state
            .lock()
            .map(|s| s.chat_bodies.clone())
            .unwrap_or_default()
    }

    /// How many `/api/tags` requests arrived.
    pub fn tags_requests(&self) -> usize {
        self.state.lock().map(|s| s.tags_requests).unwrap_or(0)
    }

    /// Chat requests the client abandoned before the answer was complete.
    pub fn aborted(&self) -> usize {
        self.state.lock().map(|s| s.aborted).unwrap_or(0)
    }

    /// Chat answers written completely.
    pub fn completed(&self) -> usize {
        self.state.lock().map(|s| s.completed).unwrap_or(0)
    }
}

/// Reads one request: (method, path, body).
async fn read_request(sock: &mut TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let len = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some((method, path, body))
}

fn head(status: u16, content_type: &str) -> String {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
    )
}

/// Waits until the client closes its side (read returns 0 or fails).
async fn client_gone(sock: &mut tokio::net::tcp::ReadHalf<'_>) {
    let mut b = [0u8; 64];
    loop {
        match sock.read(&mut b).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

async fn serve(mut sock: TcpStream, state: Arc<Mutex<State>>) {
    let _ = sock.set_nodelay(true);
    let Some((method, path, body)) = read_request(&mut sock).await else {
        return;
    };
    match (method.as_str(), path.as_str()) {
        ("GET", "/api/tags") => {
            let tags = state.lock().ok().and_then(|mut s| {
                s.tags_requests += 1;
                s.tags.clone()
            });
            let models_body = |m: &[String]| {
                serde_json::json!({"models": m.iter().map(|n| serde_json::json!({"name": n, "size": 1})).collect::<Vec<_>>()})
                    .to_string()
            };
            let (status, text) = match tags {
                Some(Tags::Models(m)) => (200, models_body(&m)),
                Some(Tags::Status(s, b)) => (s, b),
                Some(Tags::Raw(b)) => (200, b),
                Some(Tags::Slow(d, m)) => {
                    tokio::time::sleep(d).await;
                    (200, models_body(&m))
                }
                None => (500, String::new()),
            };
            let _ = sock
                .write_all(format!("{}{text}", head(status, "application/json")).as_bytes())
                .await;
            let _ = sock.shutdown().await;
        }
        ("POST", "/api/chat") => {
            let chat = state.lock().ok().and_then(|mut s| {
                if let Ok(v) = serde_json::from_slice(&body) {
                    s.chat_bodies.push(v);
                }
                s.chat.clone()
            });
            let (mut rd, mut wr) = sock.split();
            let write = async {
                match chat {
                    Some(Chat::Lines { lines, delay }) => {
                        wr.write_all(head(200, "application/x-ndjson").as_bytes())
                            .await?;
                        for l in lines {
                            if !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            wr.write_all(format!("{l}\n").as_bytes()).await?;
                        }
                        wr.shutdown().await?;
                        Ok::<bool, std::io::Error>(true)
                    }
                    Some(Chat::Status(s, b)) => {
                        wr.write_all(format!("{}{b}", head(s, "application/json")).as_bytes())
                            .await?;
                        wr.shutdown().await?;
                        Ok(true)
                    }
                    Some(Chat::LinesThenHang(lines)) => {
                        wr.write_all(head(200, "application/x-ndjson").as_bytes())
                            .await?;
                        for l in lines {
                            wr.write_all(format!("{l}\n").as_bytes()).await?;
                        }
                        std::future::pending::<()>().await;
                        Ok(false)
                    }
                    Some(Chat::Hang) | None => {
                        std::future::pending::<()>().await;
                        Ok(false)
                    }
                }
            };
            let finished = tokio::select! {
                biased;
                r = write => matches!(r, Ok(true)),
                () = client_gone(&mut rd) => false,
            };
            if let Ok(mut s) = state.lock() {
                if finished {
                    s.completed += 1;
                } else {
                    s.aborted += 1;
                }
            }
        }
        _ => {
            let _ = sock
                .write_all(format!("{}not found", head(404, "text/plain")).as_bytes())
                .await;
        }
    }
}
