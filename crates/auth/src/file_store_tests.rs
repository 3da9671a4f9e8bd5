use super::*;

fn store(dir: &Path, pass: &str) -> EncryptedFileStore {
    EncryptedFileStore::with_params(dir, Secret::new(pass), KdfParams::MIN_ACCEPTED).unwrap()
}

#[test]
fn round_trip_and_envelope_shape() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "pw ");
    s.set("audit_key", &Secret::new("00ff")).unwrap();
    s.set("access_token/dep@https://x", &Secret::new("at-1"))
        .unwrap();
    assert_eq!(s.get("audit_key").unwrap().unwrap().expose(), "00ff");
    assert_eq!(
        s.get("access_token/dep@https://x")
            .unwrap()
            .unwrap()
            .expose(),
        "at-1"
    );
    assert!(s.get("refresh_token/dep@https://x").unwrap().is_none());
    let text = std::fs::read_to_string(s.path()).unwrap();
    assert!(text.starts_with("{\"cipher\":{\"name\":\"aes-256-gcm\",\"nonce\":\""));
    assert!(text.contains("\"format\":\"autogpt-shim-credentials\",\"kdf\":{\"iterations\":2,\"memory_kib\":19456,\"name\":\"argon2id\",\"parallelism\":1,\"salt\":\""));
    assert!(text.ends_with("\"version\":19},\"version\":1}\n"));
    assert!(!text.contains("at-1"));
    // The passphrase is exact bytes: a trimmed one is wrong.
    assert!(matches!(
        store(dir.path(), "pw").get("audit_key"),
        Err(CredentialError::Decrypt { .. })
    ));
    assert!(s.delete("access_token/dep@https://x").unwrap());
    assert!(!s.delete("access_token/dep@https://x").unwrap());
    assert!(matches!(
        s.get("access_token"),
        Err(CredentialError::UnsupportedAccount(_))
    ));
}

#[test]
fn parameters_out_of_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "pw");
    s.set("audit_key", &Secret::new("k")).unwrap();
    let good = std::fs::read_to_string(s.path()).unwrap();
    for (from, to) in [
        ("\"memory_kib\":19456", "\"memory_kib\":19455"),
        ("\"iterations\":2", "\"iterations\":11"),
        ("\"parallelism\":1", "\"parallelism\":9"),
        ("\"version\":1}", "\"version\":2}"),
        (
            "\"format\":\"autogpt-shim-credentials\"",
            "\"format\":\"other\"",
        ),
    ] {
        std::fs::write(s.path(), good.replace(from, to)).unwrap();
        assert!(
            matches!(s.get("audit_key"), Err(CredentialError::Decrypt { .. })),
            "{to}"
        );
    }
}

#[test]
fn reads_reuse_the_key_derived_for_the_files_salt_and_rederive_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let writer = store(dir.path(), "pw");
    writer.set("audit_key", &Secret::new("k1")).unwrap();
    let reader = store(dir.path(), "pw");
    assert_eq!(reader.get("audit_key").unwrap().unwrap().expose(), "k1");
    // Poison the cached key: if the next read derived afresh it would still succeed, so a
    // decryption failure proves the cache is what reads use for an unchanged file.
    {
        let mut cache = reader.key_cache.lock().unwrap();
        let c = cache.as_mut().unwrap();
        assert_eq!(c.params, KdfParams::MIN_ACCEPTED);
        c.key = Zeroizing::new([0u8; 32]);
    }
    assert!(matches!(
        reader.get("audit_key"),
        Err(CredentialError::Decrypt { .. })
    ));
    // Another process rewrites the file (fresh salt): the stale entry is not used.
    writer.set("audit_key", &Secret::new("k2")).unwrap();
    assert_eq!(reader.get("audit_key").unwrap().unwrap().expose(), "k2");
    // A write caches the key for the salt it chose, so reading back needs no derivation.
    let salt = writer
        .key_cache
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .salt
        .clone();
    let text = std::fs::read_to_string(writer.path()).unwrap();
    assert!(text.contains(&B64.encode(&salt)));
}

#[test]
fn envelope_parses_without_key_derivation_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "pw");
    s.set("audit_key", &Secret::new("00ff")).unwrap();
    let bytes = std::fs::read(s.path()).unwrap();
    let env = CredentialEnvelope::parse(&bytes).unwrap();
    assert_eq!(env.params, KdfParams::MIN_ACCEPTED);
    assert_eq!(env.salt.len(), 16);
    assert_eq!(env.to_file_text().as_bytes(), &bytes[..]);
    // Out-of-bounds parameters and a short nonce are refused before any derivation.
    let cheap = String::from_utf8(bytes.clone())
        .unwrap()
        .replace("\"memory_kib\":19456", "\"memory_kib\":1024");
    assert!(CredentialEnvelope::parse(cheap.as_bytes()).is_none());
    let short = CredentialEnvelope {
        nonce: [0; 12],
        ..env.clone()
    }
    .to_file_text()
    .replace("\"AAAAAAAAAAAAAAAA\"", "\"AAAAAAAAAAA=\"");
    assert!(CredentialEnvelope::parse(short.as_bytes()).is_none());
}
