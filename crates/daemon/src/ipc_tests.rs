use super::*;

#[test]
fn frames_round_trip_and_other_versions_are_recognised() {
    for r in [
        Request::Status,
        Request::ListApprovals,
        Request::Decide {
            id: 7,
            approve: true,
        },
        Request::Pause,
        Request::Resume,
    ] {
        match decode::<Request>(&encode(&r).unwrap()) {
            Decoded::Message(m) => assert_eq!(m, r),
            other => panic!("{other:?}"),
        }
    }
    let mut newer = postcard::to_stdvec(&2u16).unwrap();
    newer.extend([9, 9, 9]);
    assert!(matches!(
        decode::<Request>(&newer),
        Decoded::OtherVersion(2)
    ));
    assert!(matches!(decode::<Request>(&[]), Decoded::Malformed(_)));
    assert!(matches!(
        decode::<Request>(&[1, 200]),
        Decoded::Malformed(_)
    ));
}

#[test]
fn the_socket_lives_in_the_runtime_directory() {
    assert_eq!(
        socket_path(Some(Path::new("/run/user/1000")), Path::new("/tmp"), 1000),
        Path::new("/run/user/1000/autogpt-shim/control.sock")
    );
    assert_eq!(
        socket_path(Some(Path::new("relative")), Path::new("/tmp"), 1000),
        Path::new("/tmp/autogpt-shim-1000/control.sock")
    );
    assert_eq!(
        socket_path(None, Path::new("/tmp"), 0),
        Path::new("/tmp/autogpt-shim-0/control.sock")
    );
}

#[test]
fn frames_are_length_prefixed_and_oversized_ones_refused() {
    let f = encode_frame(&Request::AlwaysAllow { id: 3 }).unwrap();
    let len = body_len(f[..4].try_into().unwrap()).unwrap();
    assert_eq!(len, f.len() - 4);
    assert!(matches!(
        decode::<Request>(&f[4..]),
        Decoded::Message(Request::AlwaysAllow { id: 3 })
    ));
    assert_eq!(frame(b"").unwrap(), [0, 0, 0, 0]);
    assert_eq!(body_len((MAX_FRAME as u32).to_be_bytes()), Ok(MAX_FRAME));
    assert_eq!(
        body_len((MAX_FRAME as u32 + 1).to_be_bytes()),
        Err(MAX_FRAME + 1)
    );
    assert_eq!(body_len(u32::MAX.to_be_bytes()), Err(u32::MAX as usize));
    assert!(frame(&vec![0; MAX_FRAME + 1]).is_err());
}

#[test]
fn the_pipe_is_named_after_the_user() {
    assert_eq!(
        pipe_name("CORP.alice"),
        Path::new(r"\\.\pipe\autogpt-shim-CORP.alice-control")
    );
    // Nothing that could leave the name or split it.
    assert_eq!(
        pipe_name(r"a\b/c d:é"),
        Path::new(r"\\.\pipe\autogpt-shim-a_b_c_d_é-control")
    );
}

#[test]
fn connection_states_read_as_words() {
    let c = |state: &str, problem: Option<&str>, retry: Option<u64>| ConnectionStatus {
        kind: "control".into(),
        session_id: None,
        folder: None,
        state: state.into(),
        state_seconds: 4,
        granted_capabilities: Vec::new(),
        connects: 0,
        last_disconnect: None,
        problem: problem.map(str::to_owned),
        retry_in_seconds: retry,
    };
    assert_eq!(c("connected", None, None).words(), "connected");
    assert_eq!(
        c("reconnecting", Some("no_network"), Some(3)).words(),
        "waiting for network, trying again in 3 s"
    );
    assert_eq!(
        c("reconnecting", Some("proxy"), Some(7)).words(),
        "proxy refused, trying again in 7 s"
    );
    assert_eq!(
        c("connecting", Some("certificate"), None).words(),
        "certificate not trusted, trying now"
    );
    assert_eq!(
        c("reconnecting", None, Some(2)).words(),
        "reconnecting in 2 s"
    );
    assert_eq!(c("attached", None, None).words(), "attached");
    // A daemon older than `problem` answers without it: the state as it is.
    let old: ConnectionStatus = serde_json::from_str(
        r#"{"kind":"control","session_id":null,"folder":null,"state":"reconnecting",
            "state_seconds":1,"granted_capabilities":[],"connects":0,"last_disconnect":null}"#,
    )
    .unwrap();
    assert_eq!(old.words(), "reconnecting");
}
