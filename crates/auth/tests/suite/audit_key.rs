//! The audit key (1.16): created only by load_or_create, never replaced, refused when corrupt.

use shim_audit::AuditKey;
use shim_auth::CredentialStore;
use shim_auth::MemoryStore;
use shim_auth::Secret;
use shim_auth::audit_key;
use shim_auth::audit_key::AuditKeyError;

#[test]
fn load_never_creates_and_load_or_create_creates_once() {
    let store = MemoryStore::new();
    assert_eq!(
        audit_key::load(&store, None).unwrap_err(),
        AuditKeyError::Absent
    );
    assert!(store.get("audit_key").unwrap().is_none());
    let (k, created) = audit_key::load_or_create(&store, None).unwrap();
    assert!(created);
    assert_eq!(k.as_bytes().len(), 32);
    assert_eq!(
        audit_key::load(&store, None).unwrap().as_bytes(),
        k.as_bytes()
    );
}

#[test]
fn corrupt_key_is_refused_and_never_replaced() {
    for bad in ["zz-not-hex", "0011", ""] {
        let store = MemoryStore::new();
        store.set("audit_key", &Secret::new(bad)).unwrap();
        assert!(matches!(
            audit_key::load_or_create(&store, None),
            Err(AuditKeyError::Corrupt(_))
        ));
        assert!(matches!(
            audit_key::load(&store, None),
            Err(AuditKeyError::Corrupt(_))
        ));
        assert_eq!(store.get("audit_key").unwrap().unwrap().expose(), bad);
    }
}

#[test]
fn unavailable_store_is_an_error_not_a_new_key() {
    let store = MemoryStore::unavailable();
    assert!(matches!(
        audit_key::load_or_create(&store, None),
        Err(AuditKeyError::Store(_))
    ));
}

#[test]
fn file_store_holds_key_and_tokens_and_survives_wrong_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let p = shim_auth::KdfParams::MIN_ACCEPTED;
    let good =
        shim_auth::EncryptedFileStore::with_params(dir.path(), Secret::new("pw"), p).unwrap();
    let (key, created) = audit_key::load_or_create(&good, None).unwrap();
    assert!(created);
    good.set("refresh_token/d@https://x", &Secret::new("rt"))
        .unwrap();
    let before = std::fs::read(good.path()).unwrap();
    let wrong =
        shim_auth::EncryptedFileStore::with_params(dir.path(), Secret::new("pW"), p).unwrap();
    // Neither loading nor creating (nor setting a token) touches the file.
    assert!(matches!(
        audit_key::load_or_create(&wrong, None),
        Err(AuditKeyError::Store(
            shim_auth::CredentialError::Decrypt { .. }
        ))
    ));
    assert!(
        wrong
            .set("access_token/d@https://x", &Secret::new("at"))
            .is_err()
    );
    assert_eq!(std::fs::read(good.path()).unwrap(), before);
    assert_eq!(
        audit_key::load(&good, None).unwrap().as_bytes(),
        key.as_bytes()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(good.path()).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

#[test]
fn legacy_key_file_is_imported() {
    // Build an audit-key.enc as earlier releases did: keystream = HMAC(pass, salt || ctr).
    let key_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let pass = b"legacy pass";
    let salt = [9u8; 16];
    let mk = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, pass);
    let mut stream = Vec::new();
    for ctr in 1u32..=2 {
        let mut m = salt.to_vec();
        m.extend_from_slice(&ctr.to_be_bytes());
        stream.extend_from_slice(ring::hmac::sign(&mk, &m).as_ref());
    }
    let ct: Vec<u8> = key_hex.bytes().zip(stream).map(|(a, b)| a ^ b).collect();
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("audit-key.enc");
    std::fs::write(
        &legacy,
        format!(" {}:{}\n", hex::encode(salt), hex::encode(ct)),
    )
    .unwrap();
    let store = MemoryStore::new();
    let secret = Secret::new("legacy pass");
    let (k, created) = audit_key::load_or_create(&store, Some((&legacy, &secret))).unwrap();
    assert!(!created);
    assert_eq!(hex::encode(k.as_bytes()), key_hex);
    assert_eq!(store.get("audit_key").unwrap().unwrap().expose(), key_hex);
}

#[test]
fn secrets_never_show_in_debug() {
    let s = Secret::new("tok-SECRET");
    assert!(!format!("{s:?}").contains("tok-SECRET"));
    let k = AuditKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
    assert!(!format!("{k:?}").contains("0001"));
    let dir = tempfile::tempdir().unwrap();
    let f = shim_auth::EncryptedFileStore::new(dir.path(), Secret::new("pass-SECRET")).unwrap();
    assert!(!format!("{f:?}").contains("pass-SECRET"));
    let e = shim_auth::CredentialError::Decrypt {
        path: dir.path().join("tokens.enc"),
    };
    assert!(e.to_string().contains(shim_auth::DECRYPT_MESSAGE));
}
