//! Section 8: FILE_STAT.

use std::os::unix::fs::PermissionsExt;

use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

#[test]
fn fields_of_an_existing_file() {
    let fx = Fx::new();
    fx.file("doc.PDF", "12345");
    std::fs::set_permissions(fx.at("doc.PDF"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let st = fx.jail.stat(&fx.p("doc.PDF"), true).unwrap().unwrap();
    assert!(st.is_file && !st.is_dir && !st.is_symlink);
    assert_eq!(st.size_bytes, 5);
    assert_eq!(st.mode, "0640");
    assert_eq!(st.mime_type, Some("application/pdf"));
    assert_eq!(st.path, fx.p("doc.PDF"));
    assert!(st.owner_uid.is_some() && st.owner_gid.is_some());
    let m = std::fs::metadata(fx.at("doc.PDF")).unwrap();
    let mt = m
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((st.mtime - mt).abs() < 1e-3);
    assert!(st.ctime > 0.0);
}

#[test]
fn mode_string_includes_special_bits() {
    let fx = Fx::new();
    fx.dir("sticky");
    std::fs::set_permissions(fx.at("sticky"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let st = fx.jail.stat(&fx.p("sticky"), true).unwrap().unwrap();
    assert_eq!(st.mode, "1777");
    assert!(
        st.is_dir && st.mime_type.is_none(),
        "mime only for regular files"
    );
    fx.file("suid", "");
    std::fs::set_permissions(fx.at("suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    assert_eq!(
        fx.jail.stat(&fx.p("suid"), true).unwrap().unwrap().mode,
        "4755"
    );
    fx.dir("x.txt");
    assert_eq!(
        fx.jail
            .stat(&fx.p("x.txt"), true)
            .unwrap()
            .unwrap()
            .mime_type,
        None
    );
}

#[test]
fn missing_is_exists_false_outside_is_an_error() {
    let fx = Fx::new();
    assert!(fx.jail.stat(&fx.p("nope"), true).unwrap().is_none());
    assert!(
        fx.jail
            .stat(&fx.p("nope/deeper/x"), false)
            .unwrap()
            .is_none()
    );
    fx.link("dangling", "nope");
    assert!(fx.jail.stat(&fx.p("dangling"), true).unwrap().is_none());
    assert!(
        fx.jail
            .stat(&fx.p("dangling"), false)
            .unwrap()
            .unwrap()
            .is_symlink
    );
    assert_eq!(
        code(fx.jail.stat(fx.outside.to_str().unwrap(), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
    assert_eq!(
        code(fx.jail.stat(&fx.rp("outside/nope"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
}

#[test]
fn symlink_flags_follow_and_no_follow() {
    let fx = Fx::new();
    fx.file("t.txt", "hello");
    fx.link("l.txt", "t.txt");
    let st = fx.jail.stat(&fx.p("l.txt"), true).unwrap().unwrap();
    assert!(st.is_symlink && st.is_file);
    assert_eq!(st.path, fx.p("t.txt"));
    assert_eq!(st.size_bytes, 5);
    assert_eq!(st.mime_type, Some("text/plain"));
    let st = fx.jail.stat(&fx.p("l.txt"), false).unwrap().unwrap();
    assert!(st.is_symlink && !st.is_file && !st.is_dir);
    assert_eq!(st.path, fx.p("l.txt"));
    assert_eq!(st.mode, "0777");
    assert_eq!(st.size_bytes, "t.txt".len() as u64);
    assert_eq!(st.mime_type, None);
    // A link to outside: no-follow describes it; follow is a jail violation.
    fx.link("o", fx.outside.to_str().unwrap());
    assert!(fx.jail.stat(&fx.p("o"), false).unwrap().unwrap().is_symlink);
    assert_eq!(
        code(fx.jail.stat(&fx.p("o"), true)),
        ErrorCode::PathOutsideAllowedRoot
    );
}
