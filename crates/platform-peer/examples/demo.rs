//! The README's first command until the daemon exists: starts the loopback platform peer
//! and plays a minimal daemon against it (HELLO, HELLO_ACK, PING/PONG, a refused HELLO),
//! printing a transcript. No account and no network beyond 127.0.0.1.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

use futures_util::SinkExt;
use futures_util::StreamExt;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;
use shim_protocol::frame;
use shim_protocol::messages::handshake::Arch;
use shim_protocol::messages::handshake::Empty;
use shim_protocol::messages::handshake::Hello;
use shim_protocol::messages::handshake::Platform;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn hello(machine_id: &str) -> Message {
    Message::Hello(Hello {
        shim_version: env!("CARGO_PKG_VERSION").into(),
        machine_id: machine_id.into(),
        display_name: "demo-machine".into(),
        platform: Platform::Linux,
        arch: Arch::X86_64,
        screen_resolution: None,
        capabilities: vec![Capability::Files, Capability::DirectoryBrowse],
        allowed_root: None,
        local_llm_models: vec![],
        hardware_devices: vec![],
        computer_use_features: vec![],
        computer_use_features_coarse: vec![],
        recording_channels: vec![],
        recording_routes: vec![],
        protocol_version: "1.1".into(),
    })
}

async fn dial(
    url: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
> {
    let mut req = url.into_client_request()?;
    req.headers_mut()
        .insert("authorization", "Bearer demo-token".parse()?);
    Ok(tokio_tungstenite::connect_async(req).await?.0)
}

#[tokio::main]
async fn main() -> Result<()> {
    let peer = Peer::start(PeerConfig {
        tokens: vec!["demo-token".into()],
        ..PeerConfig::default()
    })
    .await?;
    println!("platform peer listening at {}", peer.ws_base());
    println!("(the daemon is not built yet; a minimal scripted daemon plays its part)\n");

    // 1. A well-formed control handshake.
    let mut ws = dial(&peer.ws_base()).await?;
    let text = frame::encode_shim(
        "hello-1",
        1.0,
        None,
        &hello("3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
    )?;
    println!(
        "daemon  -> HELLO ({} bytes, machine 3f2504e0-…, capabilities files, directory_browse)",
        text.len()
    );
    ws.send(tungstenite::Message::text(text)).await?;
    let Some(Ok(tungstenite::Message::Text(ack))) = ws.next().await else {
        return Err("no HELLO_ACK".into());
    };
    let ack = frame::decode(&ack)?;
    if let Message::HelloAck(a) = &ack.message {
        let grants: Vec<&str> = a.granted_capabilities.iter().map(|c| c.as_str()).collect();
        println!(
            "platform -> HELLO_ACK id={} granted={grants:?} max_concurrent={}",
            ack.id, a.max_concurrent
        );
    }
    let conn = peer
        .next_connection(Duration::from_secs(5))
        .await
        .ok_or("no connection")?;

    // 2. A correlated request: the platform pings, the daemon answers PONG.
    let answer = tokio::spawn(async move {
        while let Some(Ok(tungstenite::Message::Text(t))) = ws.next().await {
            if let Ok(f) = frame::decode(&t)
                && matches!(f.message, Message::Ping(_))
            {
                println!("platform -> PING id={}", f.id);
                let pong = frame::encode_shim(&f.id, 2.0, None, &Message::Pong(Empty {}))?;
                println!("daemon  -> PONG id={}", f.id);
                ws.send(tungstenite::Message::text(pong)).await?;
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(());
            }
        }
        Err("socket ended".into())
    });
    let resp = conn
        .request(Message::Ping(Empty {}), Duration::from_secs(5))
        .await?;
    answer.await??;
    println!(
        "platform: response {} correlated to its request\n",
        resp.frame.message_type()
    );

    // 3. A HELLO the platform refuses: a machine id with a '/'.
    let mut bad = dial(&peer.ws_base()).await?;
    let text = frame::encode_shim("hello-2", 1.0, None, &hello("host_name/1"))?;
    println!("daemon  -> HELLO with machine_id \"host_name/1\"");
    bad.send(tungstenite::Message::text(text)).await?;
    if let Some(Ok(tungstenite::Message::Close(Some(c)))) = bad.next().await {
        println!("platform -> close {} \"{}\"", u16::from(c.code), c.reason);
    }

    let violations = peer.violations();
    println!(
        "\nprotocol violations recorded by the platform peer: {}",
        violations.len()
    );
    if !violations.is_empty() {
        return Err(format!("violations: {violations:?}").into());
    }
    println!("demo finished: OK");
    Ok(())
}
