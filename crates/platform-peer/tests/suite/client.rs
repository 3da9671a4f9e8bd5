//! A minimal raw client standing in for a daemon.

use futures_util::SinkExt;
use futures_util::StreamExt;
use serde_json::Value;
use serde_json::json;
use tokio::net::TcpStream;
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub(super) type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What the peer did with a connection attempt.
#[derive(Debug, PartialEq)]
pub(super) enum Outcome {
    /// HTTP status of a refused upgrade.
    Http(u16),
    /// Close code and reason.
    Closed(u16, String),
    /// The first frame received (HELLO_ACK).
    Frame(Value),
}

pub(super) async fn connect(url: &str, token: Option<&str>) -> Result<Ws, u16> {
    let mut req = url.into_client_request().unwrap();
    if let Some(t) = token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("connect failed: {e}"),
    }
}

pub(super) async fn next_outcome(ws: &mut Ws) -> Outcome {
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(15), ws.next())
            .await
            .unwrap()
        {
            Some(Ok(tungstenite::Message::Text(t))) => {
                return Outcome::Frame(serde_json::from_str(&t).unwrap());
            }
            Some(Ok(tungstenite::Message::Close(Some(c)))) => {
                return Outcome::Closed(u16::from(c.code), c.reason.to_string());
            }
            Some(Ok(_)) => continue,
            other => panic!("socket ended without a close frame: {other:?}"),
        }
    }
}

pub(super) async fn send_text(ws: &mut Ws, text: String) {
    ws.send(tungstenite::Message::text(text)).await.unwrap();
}

pub(super) fn hello_payload(control: bool) -> Value {
    json!({
        "shim_version": "0.2.0",
        "machine_id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "display_name": "ada-laptop",
        "platform": "linux",
        "arch": "x86_64",
        "screen_resolution": null,
        "capabilities": if control { json!(["files", "directory_browse"]) } else { json!(["shell", "files"]) },
        "allowed_root": if control { Value::Null } else { json!("/home/ada/Projects") },
        "local_llm_models": [],
        "hardware_devices": [],
        "computer_use_features": [],
        "computer_use_features_coarse": [],
        "recording_channels": [],
        "recording_routes": [],
        "protocol_version": "1.1"
    })
}

pub(super) fn hello_frame(id: &str, payload: Value) -> String {
    json!({"type": "HELLO", "id": id, "ts": 1767225600.25, "version": "1.1", "pending_capacity": null, "payload": payload})
        .to_string()
}

/// Connects to `url` with a token, sends `text` as the first frame, and returns what happened.
pub(super) async fn attempt(url: &str, text: String) -> Outcome {
    let mut ws = match connect(url, Some("tok")).await {
        Ok(ws) => ws,
        Err(status) => return Outcome::Http(status),
    };
    send_text(&mut ws, text).await;
    next_outcome(&mut ws).await
}
