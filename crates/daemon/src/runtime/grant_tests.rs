#![allow(clippy::unwrap_used)]

use super::*;

fn key() -> AuditKey {
    AuditKey::from_bytes(&[7u8; 32]).unwrap()
}

#[test]
fn json_escaping_matches_python_ensure_ascii() {
    assert_eq!(json_string("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(json_string("\n\t\u{1}"), r#""\n\t\u0001""#);
    assert_eq!(json_string("é"), r#""\u00e9""#);
    assert_eq!(json_string("😀"), r#""\ud83d\ude00""#);
    assert_eq!(json_string("\u{7f}"), "\"\u{7f}\"");
}

// POSIX: the path is hashed as it is (on Windows it is normcased, tested below).
#[cfg(unix)]
#[test]
fn fingerprint_is_sha256_of_sorted_compact_json() {
    let r = CanonicalRoot {
        path: "/home/ada/Projects".into(),
        device: 2049,
        inode: 1234,
    };
    let expected = hex::encode(ring::digest::digest(
        &ring::digest::SHA256,
        br#"{"device":2049,"inode":1234,"path":"/home/ada/Projects"}"#,
    ));
    assert_eq!(fingerprint(&r), expected);
    assert_eq!(fingerprint(&r).len(), 64);
}

#[test]
fn normcase_lower_cases_and_uses_backslashes_on_windows_only() {
    assert_eq!(
        normcase(r"C:\Users\Ada/Projects\ÉTÉ", true),
        r"c:\users\ada\projects\été"
    );
    assert_eq!(normcase("/home/Ada/Projects", false), "/home/Ada/Projects");
    let r = CanonicalRoot {
        path: r"C:\Users\Ada\Projects".into(),
        device: 3_735_928_559,
        inode: 281_474_976_710_677,
    };
    // What the incumbent hashes on Windows (PROTOCOL.md 9.4 step 3).
    assert_eq!(
        fingerprint_json(&r, true),
        r#"{"device":3735928559,"inode":281474976710677,"path":"c:\\users\\ada\\projects"}"#
    );
    assert_eq!(
        fingerprint_json(&r, false),
        r#"{"device":3735928559,"inode":281474976710677,"path":"C:\\Users\\Ada\\Projects"}"#
    );
    let expected = hex::encode(ring::digest::digest(
        &ring::digest::SHA256,
        fingerprint_json(&r, cfg!(windows)).as_bytes(),
    ));
    assert_eq!(fingerprint(&r), expected);
}

#[test]
fn grants_round_trip_and_reject_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let root = canonicalize_root(dir.path()).unwrap();
    let fp = fingerprint(&root);
    let claims = Claims {
        allowed_root: root.path.clone(),
        fingerprint: fp.clone(),
        issued_at: 1_767_225_600.25,
        machine_id: "m1".into(),
        revision: 4,
        session_id: "s1".into(),
    };
    let g = issue(&key(), &claims);
    assert!(g.starts_with("v1."));
    assert_eq!(g.rsplit('.').next().unwrap().len(), 43);
    let v = verify(&key(), &g, "s1", "m1").unwrap();
    assert_eq!(v.revision, 4);
    assert_eq!(v.allowed_root, root.path);
    assert_eq!(v.fingerprint, fp);
    assert_eq!(v.root_grant, g);
    // Last character changed.
    let mut bad = g.clone();
    let last = bad.pop().unwrap();
    bad.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(verify(&key(), &bad, "s1", "m1"), Err(GrantError::Signature));
    assert_eq!(
        verify(&key(), &g, "s2", "m1"),
        Err(GrantError::OtherSession)
    );
    assert_eq!(
        verify(&key(), &g, "s1", "m2"),
        Err(GrantError::OtherMachine)
    );
    assert_eq!(
        verify(&AuditKey::from_bytes(&[8u8; 32]).unwrap(), &g, "s1", "m1"),
        Err(GrantError::Signature)
    );
    assert_eq!(
        verify(&key(), "v2.a.b", "s1", "m1"),
        Err(GrantError::Version)
    );
    assert_eq!(
        verify(&key(), "v1.only", "s1", "m1"),
        Err(GrantError::Malformed)
    );
    // Deleted and recreated at the same path: a different inode.
    let keep = dir.path().join("placeholder");
    std::fs::write(&keep, "x").unwrap();
    let path = dir.path().to_path_buf();
    let moved = path.with_extension("moved");
    std::fs::rename(&path, &moved).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert_eq!(verify(&key(), &g, "s1", "m1"), Err(GrantError::Changed));
    std::fs::remove_dir_all(&moved).unwrap();
}

#[cfg(unix)]
#[test]
fn symlinked_roots_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(canonicalize_root(&link), Err(RootError::Symlink));
    assert_eq!(
        canonicalize_root(&dir.path().join("missing")),
        Err(RootError::Unavailable)
    );
}

#[test]
fn plain_windows_paths_drop_the_verbatim_prefix() {
    assert_eq!(plain_windows_path(r"\\?\C:\Users\ada"), r"C:\Users\ada");
    assert_eq!(plain_windows_path(r"\\?\C:\"), r"C:\");
    assert_eq!(plain_windows_path(r"\\?\UNC\srv\share\x"), r"\\srv\share\x");
    assert_eq!(plain_windows_path(r"C:\Users\ada"), r"C:\Users\ada");
    assert_eq!(plain_windows_path("/home/ada"), "/home/ada");
}
