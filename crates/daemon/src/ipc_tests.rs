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
