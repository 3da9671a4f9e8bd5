//! One test per HELLO rule of PROTOCOL.md 3.7 and 5.2: the peer rejects each violation
//! like the platform (close 4400, 4403, 4408, 4426, or HTTP 401/403) and accepts the
//! valid HELLO.

use std::time::Duration;

use serde_json::Value;
use serde_json::json;
use shim_platform_peer::Peer;
use shim_platform_peer::PeerConfig;

use super::client::*;

async fn peer() -> Peer {
    Peer::start(PeerConfig::default()).await.unwrap()
}

fn data_url(p: &Peer) -> String {
    format!("{}/7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0aa", p.ws_base())
}

fn closed_4400(reason: &str) -> Outcome {
    Outcome::Closed(4400, reason.into())
}

#[tokio::test]
async fn a_valid_control_hello_gets_a_correlated_hello_ack() {
    let p = peer().await;
    let Outcome::Frame(ack) = attempt(&p.ws_base(), hello_frame("h-1", hello_payload(true))).await
    else {
        panic!("expected HELLO_ACK");
    };
    assert_eq!(ack["type"], "HELLO_ACK");
    assert_eq!(ack["id"], "h-1");
    assert!(ack.get("version").is_none() && ack.get("pending_capacity").is_none());
    assert_eq!(
        ack["payload"]["granted_capabilities"],
        json!(["files", "directory_browse"])
    );
    assert!(
        ack["payload"]["connection_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(ack["payload"].get("session_id").is_none_or(Value::is_null));
    let conn = p.next_connection(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        conn.hello.machine_id,
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    );
}

#[tokio::test]
async fn a_valid_data_hello_gets_the_session_id_and_filtered_grants() {
    let p = peer().await;
    let mut payload = hello_payload(false);
    payload["capabilities"] = json!(["shell", "files", "hardware_serial", "files"]);
    let Outcome::Frame(ack) = attempt(&data_url(&p), hello_frame("h-2", payload)).await else {
        panic!("expected HELLO_ACK");
    };
    assert_eq!(
        ack["payload"]["session_id"],
        "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0aa"
    );
    assert_eq!(
        ack["payload"]["granted_capabilities"],
        json!(["shell", "files"])
    );
    assert!(ack["payload"].get("connection_id").is_none());
}

#[tokio::test]
async fn upgrades_without_a_valid_token_or_feature_are_refused_with_http_status() {
    let p = Peer::start(PeerConfig {
        tokens: vec!["good".into()],
        ..PeerConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(connect(&p.ws_base(), None).await.err(), Some(401));
    assert_eq!(connect(&p.ws_base(), Some("bad")).await.err(), Some(401));
    assert!(connect(&p.ws_base(), Some("good")).await.is_ok());
    assert_eq!(
        connect(&format!("{}/bad_id", p.ws_base()), Some("good"))
            .await
            .err(),
        Some(403)
    );
    p.configure(|c| c.feature_enabled = false);
    assert_eq!(connect(&p.ws_base(), Some("good")).await.err(), Some(403));
    let codes: Vec<u16> = p.rejections().iter().map(|r| r.code).collect();
    assert_eq!(codes, [401, 401, 403, 403]);
}

#[tokio::test]
async fn hello_over_64_kib_is_too_large() {
    let p = peer().await;
    let mut payload = hello_payload(true);
    payload["local_llm_models"] = json!(["m".repeat(66_000)]);
    assert_eq!(
        attempt(&p.ws_base(), hello_frame("h", payload)).await,
        closed_4400("HELLO payload too large")
    );
}

#[tokio::test]
async fn a_first_frame_that_is_not_hello_is_refused() {
    let p = peer().await;
    let ping = json!({"type": "PONG", "id": "x", "ts": 1.0, "payload": {}}).to_string();
    assert_eq!(
        attempt(&p.ws_base(), ping).await,
        closed_4400("Expected HELLO")
    );
    assert_eq!(
        attempt(&p.ws_base(), "not json".into()).await,
        closed_4400("Expected HELLO")
    );
    assert_eq!(
        attempt(&p.ws_base(), "[1]".into()).await,
        closed_4400("Expected HELLO")
    );
}

#[tokio::test]
async fn a_hello_without_a_string_id_is_refused() {
    let p = peer().await;
    for id in [json!(""), json!(7), Value::Null] {
        let text = json!({"type": "HELLO", "id": id, "ts": 1.0, "payload": hello_payload(true)})
            .to_string();
        assert_eq!(
            attempt(&p.ws_base(), text).await,
            closed_4400("Invalid HELLO correlation ID")
        );
    }
}

#[tokio::test]
async fn a_hello_whose_payload_is_not_an_object_is_refused() {
    let p = peer().await;
    let text = json!({"type": "HELLO", "id": "h", "ts": 1.0, "payload": []}).to_string();
    assert_eq!(
        attempt(&p.ws_base(), text).await,
        closed_4400("Invalid HELLO payload")
    );
}

#[tokio::test]
async fn each_field_rule_of_5_1_closes_with_4400() {
    let p = peer().await;
    let cases: Vec<(&str, Value)> = vec![
        ("shim_version", json!("-bad")),
        ("shim_version", Value::Null),
        ("machine_id", json!("")),
        ("machine_id", json!("host_name/1")),
        ("machine_id", json!("a".repeat(129))),
        ("display_name", json!("<b>ada</b>")),
        ("display_name", json!("a\u{0007}b")),
        ("display_name", json!("a".repeat(129))),
        ("platform", json!("freebsd")),
        ("arch", json!("mips")),
        ("allowed_root", json!("/home/ada")),
        ("computer_use_features", json!([" screenshot.capture"])),
        ("computer_use_features_coarse", json!(["<x>"])),
        ("recording_channels", json!(["microphone"])),
        ("recording_routes", json!(["everywhere"])),
        ("protocol_version", json!("1")),
        ("protocol_version", json!("v1.1")),
        ("capabilities", json!("files")),
    ];
    for (field, value) in cases {
        let mut payload = hello_payload(true);
        payload[field] = value.clone();
        assert_eq!(
            attempt(&p.ws_base(), hello_frame("h", payload)).await,
            closed_4400("Invalid HELLO payload"),
            "{field} = {value}"
        );
    }
}

#[tokio::test]
async fn data_routes_need_a_clean_allowed_root() {
    let p = peer().await;
    for root in [
        Value::Null,
        json!(""),
        json!("   "),
        json!("/home/<ada>"),
        json!(format!("/{}", "a".repeat(4096))),
    ] {
        let mut payload = hello_payload(false);
        payload["allowed_root"] = root.clone();
        assert_eq!(
            attempt(&data_url(&p), hello_frame("h", payload)).await,
            closed_4400("Invalid HELLO payload"),
            "{root}"
        );
    }
}

#[tokio::test]
async fn a_major_version_mismatch_closes_with_4426() {
    let p = peer().await;
    let mut payload = hello_payload(true);
    payload["protocol_version"] = json!("2.0");
    assert_eq!(
        attempt(&p.ws_base(), hello_frame("h", payload)).await,
        Outcome::Closed(4426, "Protocol major version mismatch".into())
    );
}

#[tokio::test]
async fn control_needs_protocol_1_1_and_directory_browse() {
    let p = peer().await;
    let want = Outcome::Closed(
        4426,
        "Machine control requires protocol 1.1 and directory_browse".into(),
    );
    let mut payload = hello_payload(true);
    payload["protocol_version"] = json!("1.0");
    assert_eq!(attempt(&p.ws_base(), hello_frame("h", payload)).await, want);
    let mut payload = hello_payload(true);
    payload.as_object_mut().unwrap().remove("protocol_version");
    assert_eq!(
        attempt(&p.ws_base(), hello_frame("h", payload)).await,
        want,
        "absent means 1.0"
    );
    let mut payload = hello_payload(true);
    payload["capabilities"] = json!(["files"]);
    assert_eq!(attempt(&p.ws_base(), hello_frame("h", payload)).await, want);
}

#[tokio::test]
async fn a_data_hello_that_does_not_match_the_binding_closes_with_4403() {
    let p = peer().await;
    p.configure(|c| {
        c.bindings.insert(
            "7d1e8c8e-1b9f-4d41-a0a8-52f0f7d3c0aa".into(),
            (
                "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
                "/home/ada/Projects".into(),
            ),
        );
    });
    let mut payload = hello_payload(false);
    payload["allowed_root"] = json!("/home/ada/Other");
    assert_eq!(
        attempt(&data_url(&p), hello_frame("h", payload)).await,
        Outcome::Closed(
            4403,
            "Local PC executor does not match the session binding".into()
        )
    );
    assert!(matches!(
        attempt(&data_url(&p), hello_frame("h", hello_payload(false))).await,
        Outcome::Frame(_)
    ));
    p.configure(|c| c.require_binding = true);
    let other = format!("{}/unbound-session", p.ws_base());
    assert_eq!(connect(&other, Some("t")).await.err(), Some(403));
}

#[tokio::test]
async fn no_hello_within_the_deadline_closes_with_4408() {
    let p = Peer::start(PeerConfig {
        hello_timeout: Duration::from_millis(300),
        ..PeerConfig::default()
    })
    .await
    .unwrap();
    let mut ws = connect(&p.ws_base(), Some("t")).await.unwrap();
    assert_eq!(
        next_outcome(&mut ws).await,
        Outcome::Closed(4408, "HELLO timeout".into())
    );
}
