//! The relay's checks of PROTOCOL.md 3.7: the peer records every violation the platform
//! would punish, and accepts a well-behaved daemon.

use std::time::Duration;

use futures_util::StreamExt;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;
use shim_protocol::Message;
use shim_protocol::frame;
use shim_protocol::messages::files::FileStat;
use shim_protocol::messages::files::FileStatResponse;
use tokio_tungstenite::tungstenite;

use super::client::*;

async fn established() -> (Peer, Ws, shim_platform_peer::Connection) {
    let p = Peer::start(PeerConfig::default()).await.unwrap();
    let mut ws = connect(&format!("{}/s-1", p.ws_base()), Some("t"))
        .await
        .unwrap();
    send_text(&mut ws, hello_frame("h", hello_payload(false))).await;
    assert!(matches!(next_outcome(&mut ws).await, Outcome::Frame(_)));
    let conn = p.next_connection(Duration::from_secs(5)).await.unwrap();
    (p, ws, conn)
}

async fn next_request(ws: &mut Ws) -> shim_protocol::Frame {
    loop {
        if let Some(Ok(tungstenite::Message::Text(t))) = ws.next().await {
            return frame::decode(&t).unwrap();
        }
    }
}

fn stat() -> Message {
    Message::FileStat(FileStat {
        path: "/home/ada/Projects/a".into(),
        follow_symlinks: true,
    })
}

#[tokio::test]
async fn a_correct_response_is_delivered_and_records_no_violation() {
    let (p, mut ws, conn) = established().await;
    let pending = tokio::spawn(async move { conn.request(stat(), Duration::from_secs(5)).await });
    let req = next_request(&mut ws).await;
    let reply = frame::encode_shim(
        &req.id,
        1.0,
        Some(4),
        &Message::FileStatResponse(FileStatResponse::default()),
    )
    .unwrap();
    send_text(&mut ws, reply).await;
    let resp = pending.await.unwrap().unwrap();
    assert_eq!(
        resp.frame.message_type(),
        shim_protocol::MessageType::FileStatResponse
    );
    assert_eq!(resp.frame.pending_capacity, Some(4));
    assert!(p.violations().is_empty(), "{:?}", p.violations());
}

#[tokio::test]
async fn a_wrong_response_type_is_a_violation_that_kills_the_socket() {
    let (p, mut ws, conn) = established().await;
    let _pending = tokio::spawn(async move { conn.request(stat(), Duration::from_secs(5)).await });
    let req = next_request(&mut ws).await;
    let reply = frame::encode_shim(
        &req.id,
        1.0,
        Some(4),
        &Message::Ack(shim_protocol::messages::handshake::Ack::OK),
    )
    .unwrap();
    send_text(&mut ws, reply).await;
    assert_eq!(
        next_outcome(&mut ws).await,
        Outcome::Closed(1011, "protocol violation".into())
    );
    assert_eq!(p.violations().len(), 1, "{:?}", p.violations());
}

#[tokio::test]
async fn an_unknown_id_and_a_second_terminal_response_are_violations() {
    let (p, mut ws, conn) = established().await;
    let conn = std::sync::Arc::new(conn);
    let c2 = conn.clone();
    let _pending = tokio::spawn(async move { c2.request(stat(), Duration::from_secs(5)).await });
    let req = next_request(&mut ws).await;
    let reply = frame::encode_shim(
        &req.id,
        1.0,
        Some(4),
        &Message::FileStatResponse(FileStatResponse::default()),
    )
    .unwrap();
    send_text(&mut ws, reply.clone()).await;
    send_text(&mut ws, reply).await; // the second terminal response
    assert_eq!(
        next_outcome(&mut ws).await,
        Outcome::Closed(1011, "protocol violation".into())
    );
    let v = p.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("answers no outstanding request"));
}

#[tokio::test]
async fn a_request_type_or_a_second_hello_from_the_daemon_is_a_violation() {
    let (p, mut ws, _conn) = established().await;
    send_text(&mut ws, hello_frame("h2", hello_payload(false))).await;
    assert_eq!(
        next_outcome(&mut ws).await,
        Outcome::Closed(1011, "protocol violation".into())
    );
    assert!(p.violations()[0].contains("does not accept HELLO"));
}

#[tokio::test]
async fn status_is_unsolicited_and_delivered_to_the_test() {
    let (p, mut ws, conn) = established().await;
    let status = Message::Status(shim_protocol::messages::handshake::Status {
        in_flight: 0,
        max_concurrent: 4,
        queue_depth: 0,
        audit_log_bytes: 0,
        uptime_seconds: 1.0,
    });
    send_text(
        &mut ws,
        frame::encode_shim("st-1", 1.0, Some(4), &status).unwrap(),
    )
    .await;
    let f = conn.next_unsolicited(Duration::from_secs(5)).await.unwrap();
    assert_eq!(f.message, status);
    assert!(p.violations().is_empty());
}

#[tokio::test]
async fn scripted_closes_and_revocation_reach_the_daemon() {
    let (_p, mut ws, conn) = established().await;
    conn.revoke(shim_protocol::messages::handshake::RevokeReason::UserRevoked)
        .unwrap();
    let f = next_request(&mut ws).await;
    assert_eq!(f.message_type(), shim_protocol::MessageType::SessionRevoked);
    assert_eq!(
        next_outcome(&mut ws).await,
        Outcome::Closed(4428, "Token revoked".into())
    );
    for code in [1000u16, 1011, 4401, 4403, 4426, 4427, 4429] {
        let (_p, mut ws, conn) = established().await;
        conn.close(code, "scripted");
        assert_eq!(
            next_outcome(&mut ws).await,
            Outcome::Closed(code, "scripted".into())
        );
    }
}
