//! Workflow recording is refused exactly (COMPUTER_USE_HW.md 10.1, 11.3): never advertised,
//! every request type answered (whatever its payload), gate refusals not audited.

use shim_platform_peer::Connection;
use shim_platform_peer::PeerConfig;
use shim_protocol::Capability;
use shim_protocol::Message;

use crate::suite::harness::Env;
use crate::suite::harness::error_code;
use crate::suite::harness::ops;
use crate::suite::harness::raw_request;

const SID: &str = "5f0d3c1e-2b7a-4e8f-9c61-3a4b5c6d7e8f";

/// Every recording request type with a valid payload and with payloads the schema refuses
/// (10.1 item 3: do not validate beyond what is needed to read the id).
const REQUESTS: &[(&str, &str)] = &[
    ("REQUEST_RECORDING_CONSENT", r#"{"mode":"demonstration"}"#),
    (
        "REQUEST_RECORDING_CONSENT",
        r#"{"mode":"bogus","channels":7}"#,
    ),
    (
        "START_RECORDING",
        r#"{"mode":"copilot","interpretation_route":"extract_then_cloud","channels":["floor"],"consent_token":"t"}"#,
    ),
    ("START_RECORDING", "{}"),
    ("STOP_RECORDING", r#"{"recording_id":"rec_1"}"#),
    ("STOP_RECORDING", r#"{"recording_id":5}"#),
    ("RECORDING_FETCH", r#"{"recording_id":"rec_1"}"#),
    ("RECORDING_FETCH", "[]"),
    (
        "APPLY_RECORDING_REVIEW",
        r#"{"recording_id":"rec_1","removed_step_seqs":[1],"redacted_step_seqs":[]}"#,
    ),
    (
        "APPLY_RECORDING_REVIEW",
        r#"{"recording_id":"rec_1","removed_step_seqs":"x"}"#,
    ),
];

fn assert_hello_has_no_recording(conn: &Connection) {
    assert!(!conn.hello.capabilities.contains(&Capability::Recording));
    assert!(conn.hello.recording_channels.is_empty());
    assert!(conn.hello.recording_routes.is_empty());
}

#[tokio::test]
async fn every_recording_request_is_refused_on_a_data_connection_unaudited() {
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_legacy(SID, &["--enable-shell"]);
    let conn = env.next().await;
    assert_hello_has_no_recording(&conn);
    let before = env.audit_records().len();
    for (i, (ty, payload)) in REQUESTS.iter().enumerate() {
        let r = raw_request(&conn, &format!("rec-{i}"), ty, payload).await;
        assert_eq!(
            error_code(&r.frame.message),
            "CAPABILITY_NOT_GRANTED",
            "{ty} {payload}"
        );
        let Message::Error(e) = &r.frame.message else {
            unreachable!()
        };
        let d = e.details.as_ref().unwrap();
        assert_eq!(d["required_capability"], "recording", "{ty} {payload}");
        assert_eq!(
            d["granted_capabilities"],
            serde_json::json!(["files", "shell"]),
            "{ty} {payload}"
        );
    }
    // COMPUTER_USE_HW.md 6: rejections at the gate are not audited.
    let records = env.audit_records();
    assert!(
        !ops(&records[before..])
            .iter()
            .any(|o| o.contains("RECORDING")),
        "{:?}",
        ops(&records[before..])
    );
    env.assert_no_violations();
}

#[tokio::test]
async fn every_recording_request_is_refused_on_the_control_connection() {
    let env = Env::new(PeerConfig::default()).await;
    let _child = env.start_control(&[]);
    let conn = env.next().await;
    assert_hello_has_no_recording(&conn);
    for (i, (ty, payload)) in REQUESTS.iter().enumerate() {
        let r = raw_request(&conn, &format!("rec-{i}"), ty, payload).await;
        assert_eq!(
            error_code(&r.frame.message),
            "FEATURE_NOT_SUPPORTED",
            "{ty} {payload}"
        );
    }
    let records = env.audit_records();
    assert!(
        !ops(&records).iter().any(|o| o.contains("RECORDING")),
        "{:?}",
        ops(&records)
    );
    env.assert_no_violations();
}
