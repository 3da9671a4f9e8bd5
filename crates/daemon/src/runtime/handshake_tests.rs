#![allow(clippy::unwrap_used)]

use shim_protocol::SessionId;

use super::*;

fn identity() -> Identity {
    Identity {
        machine_id: "m-1".into(),
        display_name: "box".into(),
        platform: Platform::Linux,
        arch: Arch::X86_64,
    }
}

fn data_role() -> Role {
    Role::Data {
        session_id: "s1".into(),
        allowed_root: "/r".into(),
    }
}

fn ack(session: Option<&str>, granted: Vec<Capability>) -> HelloAck {
    HelloAck {
        session_id: session.map(|s| SessionId::new(s).unwrap()),
        connection_id: None,
        granted_capabilities: granted,
        protocol_version: None,
        max_file_size_bytes: 10_485_760,
        command_timeout_seconds: 30,
        max_concurrent: 4,
    }
}

const LOCAL: LocalLimits = LocalLimits {
    max_concurrent: 3,
    command_timeout_seconds: 20,
    max_file_size_bytes: 2000,
};

#[test]
fn hello_shapes() {
    let control = build_hello(&identity(), &Role::Control, false);
    assert_eq!(control.allowed_root, None);
    assert_eq!(
        control.capabilities,
        vec![Capability::Files, Capability::DirectoryBrowse]
    );
    assert_eq!(control.protocol_version, "1.1");
    assert!(control.recording_channels.is_empty() && control.hardware_devices.is_empty());
    let data = build_hello(&identity(), &data_role(), true);
    assert_eq!(data.allowed_root.as_deref(), Some("/r"));
    assert_eq!(
        data.capabilities,
        vec![Capability::Shell, Capability::Files]
    );
    assert!(!data.capabilities.contains(&Capability::Recording));
    shim_protocol::hello_rules::validate(&data, shim_protocol::hello_rules::Route::Data).unwrap();
    shim_protocol::hello_rules::validate(&control, shim_protocol::hello_rules::Route::Control)
        .unwrap();
}

#[test]
fn versions_negotiate_as_pinned() {
    let hello = build_hello(&identity(), &data_role(), false);
    let mut a = ack(Some("s1"), vec![Capability::Files]);
    for (v, want) in [(None, "1.1"), (Some("1.0"), "1.0"), (Some("1.9"), "1.1")] {
        a.protocol_version = v.map(str::to_owned);
        let n = process_ack("h", "h", &hello, &a, &data_role(), LOCAL).unwrap();
        assert_eq!(n.version.to_string(), want);
    }
    a.protocol_version = Some("2.0".into());
    let r = process_ack("h", "h", &hello, &a, &data_role(), LOCAL).unwrap_err();
    assert_eq!(r.code, 4426);
    assert!(r.reason.len() <= 123);
    let v: serde_json::Value = serde_json::from_str(&r.reason).unwrap();
    for k in ["error", "shim_max", "platform_max", "hint"] {
        assert!(v.get(k).is_some(), "{k} missing in {}", r.reason);
    }
    a.protocol_version = Some("v1".into());
    let r = process_ack("h", "h", &hello, &a, &data_role(), LOCAL).unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str()),
        (4426, "Invalid platform protocol version")
    );
}

#[test]
fn limits_are_the_minimum() {
    let hello = build_hello(&identity(), &data_role(), false);
    let mut a = ack(Some("s1"), vec![]);
    a.max_concurrent = 100;
    a.command_timeout_seconds = 300;
    a.max_file_size_bytes = 100_000;
    let n = process_ack("h", "h", &hello, &a, &data_role(), LOCAL).unwrap();
    assert_eq!(n.limits, LOCAL);
    a.max_concurrent = 2;
    a.command_timeout_seconds = 10;
    a.max_file_size_bytes = 1000;
    let n = process_ack("h", "h", &hello, &a, &data_role(), LOCAL).unwrap();
    assert_eq!(
        n.limits,
        LocalLimits {
            max_concurrent: 2,
            command_timeout_seconds: 10,
            max_file_size_bytes: 1000
        }
    );
}

#[test]
fn terminal_refusals() {
    let hello = build_hello(&identity(), &data_role(), false);
    let a = ack(Some("s1"), vec![Capability::Files]);
    assert_eq!(
        process_ack("h", "x", &hello, &a, &data_role(), LOCAL)
            .unwrap_err()
            .code,
        4400
    );
    let wrong = ack(Some("s2"), vec![]);
    let r = process_ack("h", "h", &hello, &wrong, &data_role(), LOCAL).unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str()),
        (4403, "HELLO_ACK session mismatch")
    );
    let sneaky = ack(Some("s1"), vec![Capability::Shell]);
    let r = process_ack("h", "h", &hello, &sneaky, &data_role(), LOCAL).unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str()),
        (4400, "HELLO_ACK granted unadvertised capability")
    );
}

#[test]
fn control_requirements() {
    let hello = build_hello(&identity(), &Role::Control, false);
    let mut a = ack(None, vec![Capability::Files, Capability::DirectoryBrowse]);
    a.connection_id = Some("c1".into());
    let n = process_ack("h", "h", &hello, &a, &Role::Control, LOCAL).unwrap();
    assert_eq!(n.connection_id.as_deref(), Some("c1"));
    assert_eq!(n.granted_sorted(), vec!["directory_browse", "files"]);
    // Without directory_browse, without connection_id, or at 1.0: 4426.
    let mut b = a.clone();
    b.granted_capabilities = vec![Capability::Files];
    assert_eq!(
        process_ack("h", "h", &hello, &b, &Role::Control, LOCAL)
            .unwrap_err()
            .code,
        4426
    );
    let mut c = a.clone();
    c.connection_id = None;
    assert_eq!(
        process_ack("h", "h", &hello, &c, &Role::Control, LOCAL)
            .unwrap_err()
            .code,
        4426
    );
    let mut d = a.clone();
    d.protocol_version = Some("1.0".into());
    assert_eq!(
        process_ack("h", "h", &hello, &d, &Role::Control, LOCAL)
            .unwrap_err()
            .code,
        4426
    );
    let mut e = a;
    e.session_id = Some(SessionId::new("s1").unwrap());
    let r = process_ack("h", "h", &hello, &e, &Role::Control, LOCAL).unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str()),
        (4403, "HELLO_ACK control mismatch")
    );
}
