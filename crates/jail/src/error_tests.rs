use super::*;

#[test]
fn outside_and_not_found_are_different_codes() {
    assert_eq!(
        JailError::outside("/x").code(),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(JailError::not_found("/x").code(), ErrorCode::PathNotFound);
    assert!(JailError::outside("/x").is_jail_violation());
    assert!(!JailError::not_found("/x").is_jail_violation());
    assert!(JailError::RootUnavailable("no longer exists").is_jail_violation());
}

#[cfg(unix)]
#[test]
fn os_errors_map_as_section_5_4_says() {
    use rustix::io::Errno;
    let m = |e, c| map_os(e, "/p", c).code();
    assert_eq!(m(Errno::NOENT, OsCtx::Existing), ErrorCode::PathNotFound);
    assert_eq!(
        m(Errno::NAMETOOLONG, OsCtx::Other),
        ErrorCode::PathInvalidChars
    );
    assert_eq!(m(Errno::LOOP, OsCtx::Other), ErrorCode::PathInvalidChars);
    assert_eq!(m(Errno::ILSEQ, OsCtx::Other), ErrorCode::PathInvalidChars);
    assert_eq!(m(Errno::INVAL, OsCtx::Create), ErrorCode::PathInvalidChars);
    assert_eq!(m(Errno::INVAL, OsCtx::Other), ErrorCode::InternalError);
    assert_eq!(m(Errno::NOTEMPTY, OsCtx::Rmdir), ErrorCode::PathNotEmpty);
    assert_eq!(m(Errno::EXIST, OsCtx::Rmdir), ErrorCode::PathNotEmpty);
    assert_eq!(m(Errno::NOTEMPTY, OsCtx::Other), ErrorCode::InternalError);
    for e in [
        Errno::ACCESS,
        Errno::PERM,
        Errno::ROFS,
        Errno::NOSPC,
        Errno::IO,
        Errno::BUSY,
    ] {
        assert_eq!(m(e, OsCtx::Existing), ErrorCode::InternalError);
    }
}

#[test]
fn messages_are_short_and_name_only_the_request() {
    let e = JailError::outside("/etc/passwd");
    assert_eq!(
        e.to_string(),
        "path is outside the allowed root: /etc/passwd"
    );
}
