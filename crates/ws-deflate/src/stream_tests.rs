use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use futures_util::SinkExt;
use futures_util::StreamExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::handshake::server::Response;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::Data;

use super::*;
use crate::negotiate::CLIENT_OFFER;
use crate::negotiate::ServerLimits;
use crate::negotiate::server_accept;

/// A TCP stream counting the bytes read from it (what arrived on the wire).
struct Counted(TcpStream, Arc<AtomicU64>);

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.0).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.1.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, b)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

type Server = WebSocketStream<DeflateStream<Counted>>;
type Client = WebSocketStream<DeflateStream<Counted>>;

/// A connected pair on loopback; the server answers the offer within `limits` (`None`:
/// it does not know the extension). Returns the sockets' read counters too.
async fn pair(
    offer: bool,
    limits: Option<ServerLimits>,
    opts: Options,
) -> io::Result<(Client, Server, Arc<AtomicU64>, Arc<AtomicU64>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server_rx = Arc::new(AtomicU64::new(0));
    let srx = server_rx.clone();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let s = DeflateStream::new(Counted(tcp, srx), Role::Server, opts);
        let cb = |req: &Request, mut resp: Response| {
            let offers = req
                .headers()
                .get_all("sec-websocket-extensions")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ");
            if let Some(limits) = limits
                && let Some((_, answer)) = server_accept(&offers, &limits)
            {
                resp.headers_mut()
                    .insert("sec-websocket-extensions", answer.parse().unwrap());
            }
            Ok(resp)
        };
        tokio_tungstenite::accept_hdr_async(s, cb)
            .await
            .map_err(|e| io::Error::other(e.to_string()))
    });
    let client_rx = Arc::new(AtomicU64::new(0));
    let tcp = TcpStream::connect(addr).await?;
    let mut req = format!("ws://{addr}/").into_client_request().unwrap();
    if offer {
        req.headers_mut()
            .insert("sec-websocket-extensions", CLIENT_OFFER.parse().unwrap());
    }
    let c = DeflateStream::new(
        Counted(tcp, client_rx.clone()),
        Role::Client,
        Options {
            offered: offer,
            ..opts
        },
    );
    let (client, _) = tokio_tungstenite::client_async(req, c)
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let server = server.await.unwrap()?;
    Ok((client, server, client_rx, server_rx))
}

fn screenshot_like(n: usize) -> String {
    // Base64-ish text with repetition, like a JSON screenshot response.
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::from("{\"type\":\"SCREENSHOT_RESPONSE\",\"payload\":{\"image_base64\":\"");
    let mut x = 7u32;
    while s.len() < n {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        // Runs of a few symbols: compressible, not trivially.
        let c = alphabet[((x >> 16) % 4) as usize] as char;
        s.push(c);
    }
    s.push_str("\"}}");
    s
}

#[tokio::test]
async fn large_messages_travel_compressed_both_ways() {
    let (mut client, mut server, client_rx, server_rx) =
        pair(true, Some(ServerLimits::default()), Options::default())
            .await
            .unwrap();
    assert!(client.get_ref().params().is_some());
    assert!(server.get_ref().params().is_some());
    for round in 0..3 {
        let text = screenshot_like(300_000 + round);
        let before = server_rx.load(Ordering::Relaxed);
        client.send(Message::text(text.clone())).await.unwrap();
        let got = server.next().await.unwrap().unwrap();
        assert_eq!(got.into_text().unwrap().as_str(), text);
        let wire = server_rx.load(Ordering::Relaxed) - before;
        assert!(
            wire < text.len() as u64 / 2,
            "client->server {wire} bytes on the wire"
        );

        let before = client_rx.load(Ordering::Relaxed);
        server.send(Message::text(text.clone())).await.unwrap();
        let got = client.next().await.unwrap().unwrap();
        assert_eq!(got.into_text().unwrap().as_str(), text);
        let wire = client_rx.load(Ordering::Relaxed) - before;
        assert!(
            wire < text.len() as u64 / 2,
            "server->client {wire} bytes on the wire"
        );
    }
    // Small messages (below the threshold) and binary ones pass too.
    client.send(Message::text("ping")).await.unwrap();
    assert_eq!(server.next().await.unwrap().unwrap(), Message::text("ping"));
    let bin = vec![7u8; 50_000];
    server.send(Message::binary(bin.clone())).await.unwrap();
    assert_eq!(client.next().await.unwrap().unwrap(), Message::binary(bin));
}

#[tokio::test]
async fn negotiated_limits_are_kept() {
    let limits = ServerLimits {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: Some(10),
        client_max_window_bits: Some(9),
    };
    let (mut client, mut server, _, _) =
        pair(true, Some(limits), Options::default()).await.unwrap();
    let p = client.get_ref().params().unwrap();
    assert_eq!(p.client_max_window_bits, 9);
    assert_eq!(p.server_max_window_bits, 10);
    assert!(p.client_no_context_takeover && p.server_no_context_takeover);
    for i in 0..4 {
        let text = screenshot_like(20_000 + i);
        client.send(Message::text(text.clone())).await.unwrap();
        assert_eq!(
            server
                .next()
                .await
                .unwrap()
                .unwrap()
                .into_text()
                .unwrap()
                .as_str(),
            text
        );
        server.send(Message::text(text.clone())).await.unwrap();
        assert_eq!(
            client
                .next()
                .await
                .unwrap()
                .unwrap()
                .into_text()
                .unwrap()
                .as_str(),
            text
        );
    }
    // An 8-bit window, which zlib cannot write: that side sends plain messages.
    let limits = ServerLimits {
        client_max_window_bits: Some(8),
        ..ServerLimits::default()
    };
    let (mut client, mut server, _, _) =
        pair(true, Some(limits), Options::default()).await.unwrap();
    let text = screenshot_like(20_000);
    client.send(Message::text(text.clone())).await.unwrap();
    assert_eq!(
        server
            .next()
            .await
            .unwrap()
            .unwrap()
            .into_text()
            .unwrap()
            .as_str(),
        text
    );
}

#[tokio::test]
async fn declined_or_disabled_means_plain_frames() {
    // The server does not know the extension.
    let (mut client, mut server, _, _) = pair(true, None, Options::default()).await.unwrap();
    assert!(client.get_ref().params().is_none());
    let text = screenshot_like(10_000);
    client.send(Message::text(text.clone())).await.unwrap();
    assert_eq!(
        server
            .next()
            .await
            .unwrap()
            .unwrap()
            .into_text()
            .unwrap()
            .as_str(),
        text
    );
    // The client does not offer: nothing is agreed.
    let (client, _server, _, _) = pair(false, Some(ServerLimits::default()), Options::default())
        .await
        .unwrap();
    assert!(client.get_ref().params().is_none());
}

/// Compresses `text` as one permessage-deflate message (no context).
fn compressed(text: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::default(), false);
    crate::pack::deflate_message(&mut c, Compression::default(), 15, text).unwrap()
}

#[tokio::test]
async fn fragments_with_a_ping_between_are_joined() {
    let (mut client, mut server, _, _) =
        pair(true, Some(ServerLimits::default()), Options::default())
            .await
            .unwrap();
    let text = screenshot_like(100_000);
    let packed = compressed(text.as_bytes());
    let third = packed.len() / 3;
    let parts = [
        &packed[..third],
        &packed[third..2 * third],
        &packed[2 * third..],
    ];
    let mut first = Frame::message(parts[0].to_vec(), OpCode::Data(Data::Text), false);
    first.header_mut().rsv1 = true;
    server.send(Message::Frame(first)).await.unwrap();
    server
        .send(Message::Ping(b"between".to_vec().into()))
        .await
        .unwrap();
    let mid = Frame::message(parts[1].to_vec(), OpCode::Data(Data::Continue), false);
    server.send(Message::Frame(mid)).await.unwrap();
    let last = Frame::message(parts[2].to_vec(), OpCode::Data(Data::Continue), true);
    server.send(Message::Frame(last)).await.unwrap();
    assert_eq!(
        client.next().await.unwrap().unwrap(),
        Message::Ping(b"between".to_vec().into())
    );
    assert_eq!(
        client
            .next()
            .await
            .unwrap()
            .unwrap()
            .into_text()
            .unwrap()
            .as_str(),
        text
    );
    // The pong tungstenite answered reaches the server.
    client.send(Message::text("after")).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(server.next().await.unwrap().unwrap());
    }
    assert!(got.contains(&Message::Pong(b"between".to_vec().into())));
    assert!(got.contains(&Message::text("after")));
}

#[tokio::test]
async fn a_deflate_bomb_ends_the_stream() {
    let opts = Options {
        max_message_size: 1 << 20,
        ..Options::default()
    };
    let (mut client, mut server, _, _) = pair(true, Some(ServerLimits::default()), opts)
        .await
        .unwrap();
    let bomb = compressed(&vec![b'a'; 8 << 20]);
    assert!(bomb.len() < 64 * 1024);
    let mut f = Frame::message(bomb, OpCode::Data(Data::Text), true);
    f.header_mut().rsv1 = true;
    server.send(Message::Frame(f)).await.unwrap();
    assert!(client.next().await.unwrap().is_err());
}

#[tokio::test]
async fn rsv1_without_the_extension_is_refused_by_tungstenite() {
    let (mut client, mut server, _, _) = pair(true, None, Options::default()).await.unwrap();
    let mut f = Frame::message(compressed(b"hello"), OpCode::Data(Data::Text), true);
    f.header_mut().rsv1 = true;
    server.send(Message::Frame(f)).await.unwrap();
    assert!(client.next().await.unwrap().is_err());
}

#[tokio::test]
async fn an_answer_that_was_not_offered_fails_the_handshake() {
    // The server answers the extension although the client's request did not carry it.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let cb = |_: &Request, mut resp: Response| {
            resp.headers_mut().insert(
                "sec-websocket-extensions",
                "permessage-deflate".parse().unwrap(),
            );
            Ok(resp)
        };
        let _ = tokio_tungstenite::accept_hdr_async(tcp, cb).await;
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let c = DeflateStream::new(
        tcp,
        Role::Client,
        Options {
            offered: false,
            ..Options::default()
        },
    );
    let req = format!("ws://{addr}/").into_client_request().unwrap();
    assert!(tokio_tungstenite::client_async(req, c).await.is_err());
}

/// Resident memory of this process, in bytes (Linux).
#[cfg(target_os = "linux")]
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// What compression costs per connection once both directions have compressed a message
/// (the deflate and inflate windows exist from then on, with context takeover): measured on
/// 40 connections, both ends in this process, against the zlib formula.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn memory_per_connection() {
    let plain = per_end(None).await;
    let deflate = per_end(Some(ServerLimits::default())).await;
    let (d, i) = crate::negotiate::memory_estimate(15, 15);
    eprintln!(
        "memory per connection end after a 200 KB message each way: {} KiB without compression, {} KiB with permessage-deflate (zlib formula for its state: {} KiB, deflate {} + inflate {})",
        plain / 1024,
        deflate / 1024,
        (d + i) / 1024,
        d / 1024,
        i / 1024
    );
    // Bounded: the windows and state, not the messages.
    assert!(
        deflate < plain + (1 << 20),
        "{deflate} bytes per connection end"
    );
}

#[cfg(target_os = "linux")]
async fn per_end(limits: Option<ServerLimits>) -> u64 {
    let text = screenshot_like(200_000);
    let mut conns = Vec::new();
    for _ in 0..40 {
        let (mut c, mut s, _, _) = pair(true, limits, Options::default()).await.unwrap();
        c.send(Message::text("warm")).await.unwrap();
        s.next().await.unwrap().unwrap();
        conns.push((c, s));
    }
    let before = rss();
    for (c, s) in &mut conns {
        c.send(Message::text(text.clone())).await.unwrap();
        s.next().await.unwrap().unwrap();
        s.send(Message::text(text.clone())).await.unwrap();
        c.next().await.unwrap().unwrap();
    }
    rss().saturating_sub(before) / (2 * conns.len() as u64)
}

/// Bytes deflate cannot shrink (a xorshift stream).
fn incompressible(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[tokio::test]
async fn a_message_sent_plain_is_not_in_the_peers_window() {
    // A message deflate cannot shrink goes out uncompressed, so the peer's inflater never
    // sees it: the next compressed message must not point back into it. Sending the same
    // bytes again (plus a compressible tail) is what would make a compressor do that.
    let (mut client, mut server, _, _) =
        pair(true, Some(ServerLimits::default()), Options::default())
            .await
            .unwrap();
    let noise = incompressible(20_000, 99);
    for (from_client, round) in [(true, 0u8), (false, 1), (true, 2)] {
        let first = Message::binary(noise.clone());
        let mut again = noise.clone();
        again.extend(std::iter::repeat_n(round, 30_000));
        let second = Message::binary(again);
        let (tx, rx) = if from_client {
            (&mut client, &mut server)
        } else {
            (&mut server, &mut client)
        };
        tx.send(first.clone()).await.unwrap();
        tx.send(second.clone()).await.unwrap();
        assert_eq!(rx.next().await.unwrap().unwrap(), first);
        assert_eq!(rx.next().await.unwrap().unwrap(), second);
    }
}

#[test]
fn the_wide_mask_matches_the_byte_mask() {
    let mask = [0x12, 0x9a, 0xf0, 0x0f];
    for len in 0..41 {
        let data = incompressible(len, len as u64 + 1);
        let mut wide = data.clone();
        apply_mask(&mut wide, mask);
        let bytewise: Vec<u8> = data
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(wide, bytewise, "length {len}");
    }
}
