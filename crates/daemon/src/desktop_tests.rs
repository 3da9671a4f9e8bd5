use std::ffi::OsString;

use super::*;

fn bin_dir(names: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for n in names {
        std::fs::write(d.path().join(n), "").unwrap();
    }
    d
}

#[test]
fn xephyr_only_when_the_user_display_is_reachable() {
    let d = bin_dir(&["Xvfb", "Xephyr", "openbox"]);
    let path = OsString::from(d.path());
    let p = plan(Some(&path), Some(":5"), |_| true).unwrap();
    assert_eq!(
        p.server,
        Server::Xephyr {
            parent: ":5".into()
        }
    );
    assert_eq!(p.server_path, d.path().join("Xephyr"));
    assert_eq!(p.wm_path, d.path().join("openbox"));
    let p = plan(Some(&path), Some(":5"), |_| false).unwrap();
    assert_eq!(p.server, Server::Xvfb);
    let p = plan(Some(&path), None, |_| true).unwrap();
    assert_eq!(p.server, Server::Xvfb);
    let p = plan(Some(&path), Some(""), |_| true).unwrap();
    assert_eq!(p.server, Server::Xvfb);
}

#[test]
fn missing_programs_are_named_with_their_package() {
    let d = bin_dir(&["openbox"]);
    let path = OsString::from(d.path());
    let e = plan(Some(&path), None, |_| true).unwrap_err();
    assert_eq!(e.program, "Xvfb");
    assert!(e.to_string().contains("install the xvfb package"), "{e}");
    // Xephyr alone serves a user who has a desktop.
    let d = bin_dir(&["Xephyr", "openbox"]);
    let path = OsString::from(d.path());
    assert!(plan(Some(&path), Some(":1"), |_| true).is_ok());
    let d = bin_dir(&["Xvfb"]);
    let path = OsString::from(d.path());
    let e = plan(Some(&path), None, |_| true).unwrap_err();
    assert_eq!(e.program, "openbox");
    assert!(plan(None, None, |_| true).is_err());
}
