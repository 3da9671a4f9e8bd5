//! permessage-deflate against servers and a client we did not write: Python's `websockets`
//! and uvicorn (the platform's server), in both directions, with a fragmented message and a
//! ping between its fragments. `cargo xtask setup` installs both (pip); when
//! `AUTOGPT_SHIM_REQUIRE_INTEROP=1` (CI) a missing one fails the test instead of skipping.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::result_large_err
)]

use std::io::BufRead;
use std::io::BufReader;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;

use futures_util::SinkExt;
use futures_util::StreamExt;
use shim_ws_deflate::DeflateStream;
use shim_ws_deflate::Options;
use shim_ws_deflate::Role;
use shim_ws_deflate::ServerLimits;
use shim_ws_deflate::negotiate::CLIENT_OFFER;
use shim_ws_deflate::negotiate::server_accept;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::handshake::server::Response;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::Data;
use tokio_tungstenite::tungstenite::protocol::frame::coding::OpCode;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop.py");

/// Whether python3 can import `module`; fails when the environment requires it.
fn available(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("AUTOGPT_SHIM_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "python3 cannot import {module} (`cargo xtask setup` installs it)"
        );
        eprintln!("skipped: python3 cannot import {module} (`cargo xtask setup` installs it)");
    }
    ok
}

/// A Python server of `mode`, killed on drop.
struct PyServer(Child, u16);

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(mode: &str) -> PyServer {
    let mut child = Command::new("python3")
        .args([SCRIPT, mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let port = loop {
        let line = lines.next().expect("the server printed no port").unwrap();
        if let Some(p) = line.strip_prefix("PORT ") {
            break p.trim().parse().unwrap();
        }
    };
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    PyServer(child, port)
}

type Client = tokio_tungstenite::WebSocketStream<DeflateStream<TcpStream>>;

async fn connect(port: u16) -> Client {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut req = format!("ws://127.0.0.1:{port}/")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("sec-websocket-extensions", CLIENT_OFFER.parse().unwrap());
    let s = DeflateStream::new(tcp, Role::Client, Options::default());
    let (ws, _) = tokio_tungstenite::client_async(req, s).await.unwrap();
    assert!(
        ws.get_ref().params().is_some(),
        "the server did not accept permessage-deflate"
    );
    ws
}

fn big_text(tag: &str) -> String {
    (0..20_000)
        .map(|i| {
            format!(
                "{{\"line\":{i},\"text\":\"{tag}\",\"b64\":\"iVBORw0KGgoAAAANSUhEUgAA{}\"}}\n",
                i % 97
            )
        })
        .collect()
}

/// Our client sends compressed messages (several, so context takeover is exercised) and
/// reads the echoes the server compressed.
async fn echo_round_trips(ws: &mut Client) {
    for round in 0..3 {
        let text = big_text(&format!("round {round}"));
        ws.send(Message::text(text.clone())).await.unwrap();
        loop {
            match ws.next().await.unwrap().unwrap() {
                Message::Text(t) => {
                    assert_eq!(t.as_str(), text);
                    break;
                }
                Message::Ping(_) | Message::Pong(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    let small = "small message below the threshold";
    ws.send(Message::text(small)).await.unwrap();
    assert_eq!(ws.next().await.unwrap().unwrap(), Message::text(small));
}

/// A fragmented message from our side, already compressed (no context, so it fits any
/// window history the server keeps; the window the server allowed the client), with a ping
/// between its fragments; the server echoes it.
async fn send_fragmented_with_ping(ws: &mut Client) {
    use flate2::Compress;
    use flate2::Compression;
    use flate2::FlushCompress;
    let text = big_text("fragmented from rust");
    let bits = ws.get_ref().params().unwrap().client_max_window_bits;
    let mut c = Compress::new_with_window_bits(Compression::default(), false, bits.max(9));
    let mut packed = Vec::with_capacity(text.len());
    c.compress_vec(text.as_bytes(), &mut packed, FlushCompress::Sync)
        .unwrap();
    assert!(packed.ends_with(&[0, 0, 0xff, 0xff]));
    packed.truncate(packed.len() - 4);
    let third = packed.len() / 3;
    let mut first = Frame::message(packed[..third].to_vec(), OpCode::Data(Data::Text), false);
    first.header_mut().rsv1 = true;
    ws.send(Message::Frame(first)).await.unwrap();
    ws.send(Message::Ping(b"between".to_vec().into()))
        .await
        .unwrap();
    let mid = Frame::message(
        packed[third..2 * third].to_vec(),
        OpCode::Data(Data::Continue),
        false,
    );
    ws.send(Message::Frame(mid)).await.unwrap();
    let last = Frame::message(
        packed[2 * third..].to_vec(),
        OpCode::Data(Data::Continue),
        true,
    );
    ws.send(Message::Frame(last)).await.unwrap();
    let mut pong = false;
    loop {
        match ws.next().await.unwrap().unwrap() {
            Message::Pong(p) => pong |= p.as_ref() == b"between",
            Message::Text(t) => {
                assert_eq!(t.as_str(), text);
                break;
            }
            Message::Ping(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(pong, "no pong for the ping between the fragments");
}

#[tokio::test]
async fn python_websockets_server() {
    if !available("websockets") {
        return;
    }
    let py = start("websockets");
    let mut ws = connect(py.1).await;
    echo_round_trips(&mut ws).await;
    // The server's fragmented, compressed message with a ping between the fragments.
    ws.send(Message::text("fragments")).await.unwrap();
    let mut ping = false;
    loop {
        match ws.next().await.unwrap().unwrap() {
            Message::Ping(p) => ping |= p.as_ref() == b"between",
            Message::Text(t) => {
                assert!(
                    t.as_str()
                        .starts_with("line 000000 of a fragmented message")
                );
                assert_eq!(
                    t.len(),
                    6000 * "line 000000 of a fragmented message\n".len()
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(ping, "the ping between the fragments did not arrive first");
    send_fragmented_with_ping(&mut ws).await;
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn uvicorn_server() {
    if !available("uvicorn") || !available("websockets") {
        return;
    }
    let py = start("uvicorn");
    let mut ws = connect(py.1).await;
    echo_round_trips(&mut ws).await;
    send_fragmented_with_ping(&mut ws).await;
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn python_websockets_client() {
    if !available("websockets") {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let s = DeflateStream::new(tcp, Role::Server, Options::default());
        let cb = |req: &Request, mut resp: Response| {
            let offers = req
                .headers()
                .get_all("sec-websocket-extensions")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ");
            if let Some((_, answer)) = server_accept(&offers, &ServerLimits::default()) {
                resp.headers_mut()
                    .insert("sec-websocket-extensions", answer.parse().unwrap());
            }
            Ok(resp)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(s, cb).await.unwrap();
        assert!(ws.get_ref().params().is_some());
        while let Some(Ok(m)) = ws.next().await {
            if m.is_text() || m.is_binary() {
                ws.send(m).await.unwrap();
            }
        }
    });
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .args([SCRIPT, "client", &format!("ws://127.0.0.1:{port}/")])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("OK"));
    server.abort();
}
