#![allow(clippy::unwrap_used)]

use super::*;

// A key, a message and its signature made by the stock tool (minisign 0.11, Debian):
// `minisign -G -W`, then `minisign -S -t 'timestamp:0<TAB>file:SHA256SUMS<TAB>hashed'`, and
// `minisign -S -l` for the legacy one. Test-only throw-away key.
const MINISIGN_PUB: &str = "untrusted comment: minisign public key EF32256465899C81
RWSBnIllZCUy7y4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAeXi
";
const MINISIGN_SECRET: &str = "untrusted comment: minisign encrypted secret key
RWQAAEIyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAgZyJZWQlMu9nuGtUoThtZrwXaBjwCxPp8+m7/YK1M9TZKrHDBmNqji4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAeXiAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
";
const MESSAGE: &[u8] = b"abc  autogpt-shim-0.3.0-x86_64-unknown-linux-gnu.tar.gz\n";
const MINISIGN_SIG: &str = "untrusted comment: signature from minisign secret key
RUSBnIllZCUy759XmLSzCwyiqacl+ZhgRNLIqcZkZ9ajLzuCQnfR+bN4a/3NKGblsFn0SsrNBFRDrMaII8cTPddB2dY5UKLsKgE=
trusted comment: timestamp:0\tfile:SHA256SUMS\thashed
xFGkno5lqAyKTTUrw2L3ZSl3zaVBoRUxUHKjCADWE3pqATVnMsBwrg0E84SHNmht4el3+RgPwU4o0RRO4R4tDQ==
";
const MINISIGN_LEGACY_SIG: &str = "untrusted comment: signature from minisign secret key
RWSBnIllZCUy74osTOCH5L0Hllpxrpw/HobwxOIkfA71CZzvnrU5cpxslTTem4QQqydyZDjc949wiYetvH5O97jWdXZ/wuvBDgA=
trusted comment: timestamp:1796418027\tfile:SHA256SUMS
GjUSsoJRsl2j6c3tx8vu0iR6q1+7MBmP09e5TlHe/xH4CzpDipiTEqsabZM71fgNXWeigZ32ZHX3xSW+IzRLCw==
";

#[test]
fn a_signature_made_by_minisign_verifies() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    assert_eq!(key.key_id_hex(), "EF32256465899C81");
    let comment = verify(&key, MESSAGE, MINISIGN_SIG).unwrap();
    assert_eq!(comment, "timestamp:0\tfile:SHA256SUMS\thashed");
    // The bare base64 line (`minisign -P`) is the same key, and it round-trips.
    let bare =
        PublicKey::parse("RWSBnIllZCUy7y4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAeXi").unwrap();
    assert_eq!(bare, key);
    assert_eq!(PublicKey::parse(&key.to_file()).unwrap(), key);
    assert_eq!(key.to_file(), MINISIGN_PUB);
}

#[test]
fn a_minisign_secret_key_signs_what_its_public_key_verifies() {
    let secret = SecretKey::parse(MINISIGN_SECRET).unwrap();
    assert_eq!(secret.public(), PublicKey::parse(MINISIGN_PUB).unwrap());
    let sig = secret
        .sign(MESSAGE, "timestamp:0\tfile:SHA256SUMS\thashed")
        .unwrap();
    // Ed25519 is deterministic: the same key, message and comment give minisign's bytes.
    assert_eq!(
        sig.lines().skip(1).collect::<Vec<_>>(),
        MINISIGN_SIG.lines().skip(1).collect::<Vec<_>>()
    );
    // Written out and read back, the key is the same key.
    let again = SecretKey::parse(&secret.to_file()).unwrap();
    assert_eq!(again.public(), secret.public());
}

#[test]
fn a_changed_byte_of_the_file_is_refused() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    for i in 0..MESSAGE.len() {
        let mut changed = MESSAGE.to_vec();
        changed[i] ^= 1;
        assert_eq!(
            verify(&key, &changed, MINISIGN_SIG),
            Err(SigError::BadSignature),
            "byte {i}"
        );
    }
    assert_eq!(
        verify(&key, &MESSAGE[..MESSAGE.len() - 1], MINISIGN_SIG),
        Err(SigError::BadSignature)
    );
}

#[test]
fn a_changed_trusted_comment_is_refused() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    let changed = MINISIGN_SIG.replace("timestamp:0", "timestamp:9");
    assert_eq!(
        verify(&key, MESSAGE, &changed),
        Err(SigError::BadTrustedComment)
    );
}

#[test]
fn a_signature_by_another_key_is_refused() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    let other = SecretKey::generate().unwrap();
    let sig = other.sign(MESSAGE, "file:SHA256SUMS").unwrap();
    assert!(matches!(
        verify(&key, MESSAGE, &sig),
        Err(SigError::OtherKey { .. })
    ));
    // Another key that claims the trusted key's id: the signature itself fails.
    let mut forged = SecretKey::generate().unwrap();
    forged.key_id = key.key_id;
    let sig = forged.sign(MESSAGE, "file:SHA256SUMS").unwrap();
    assert_eq!(verify(&key, MESSAGE, &sig), Err(SigError::BadSignature));
    // And its own key accepts it.
    assert!(verify(&other.public(), MESSAGE, &other.sign(MESSAGE, "x").unwrap()).is_ok());
}

#[test]
fn the_legacy_unhashed_algorithm_is_refused() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    assert!(matches!(
        verify(&key, MESSAGE, MINISIGN_LEGACY_SIG),
        Err(SigError::UnsupportedAlgorithm(_))
    ));
}

#[test]
fn malformed_and_truncated_signatures_are_typed_errors() {
    let key = PublicKey::parse(MINISIGN_PUB).unwrap();
    // Every truncation of the file (the last newline alone may go).
    assert!(verify(&key, MESSAGE, MINISIGN_SIG.trim_end()).is_ok());
    for n in 0..MINISIGN_SIG.len() - 1 {
        let r = verify(&key, MESSAGE, &MINISIGN_SIG[..n]);
        assert!(r.is_err(), "truncated to {n} bytes was accepted");
    }
    let lines: Vec<&str> = MINISIGN_SIG.lines().collect();
    let cases = [
        String::new(),
        "hello".to_owned(),
        lines[1..].join("\n"),
        format!("{}\n{}\n", lines[0], lines[1]),
        MINISIGN_SIG.replace("trusted comment: ", "comment: "),
        MINISIGN_SIG.replace("RUSBnIll", "RUSB!ll"),
        format!("{MINISIGN_SIG}extra\n"),
        "x".repeat(MAX_TEXT_LEN + 1),
    ];
    for text in cases {
        assert!(
            matches!(
                verify(&key, MESSAGE, &text),
                Err(SigError::Malformed { .. })
            ),
            "{text:?}"
        );
    }
    // CRLF line ends (a file that went through Windows) still verify.
    assert!(verify(&key, MESSAGE, &MINISIGN_SIG.replace('\n', "\r\n")).is_ok());
}

#[test]
fn malformed_keys_are_typed_errors() {
    for text in [
        "",
        "untrusted comment: x",
        "RWSBnIllZCUy7y4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAe", // truncated
        "RUSBnIllZCUy7y4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAeXi", // not `Ed`
        "not base64 at all",
    ] {
        assert!(
            matches!(PublicKey::parse(text), Err(SigError::Malformed { .. })),
            "{text:?}"
        );
    }
    let mut encrypted = B64.decode(MINISIGN_SECRET.lines().nth(1).unwrap()).unwrap();
    encrypted[2..4].copy_from_slice(b"Sc");
    assert_eq!(
        SecretKey::parse(&B64.encode(&encrypted)).unwrap_err(),
        SigError::EncryptedSecretKey
    );
    let mut damaged = B64.decode(MINISIGN_SECRET.lines().nth(1).unwrap()).unwrap();
    damaged[70] ^= 1; // in the seed: no longer matches the public half
    assert!(SecretKey::parse(&B64.encode(&damaged)).is_err());
}

#[test]
fn the_trusted_comment_must_be_one_line() {
    let key = SecretKey::generate().unwrap();
    assert!(key.sign(MESSAGE, "a\nb").is_err());
}

proptest::proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}", bytes in proptest::collection::vec(0u8.., 0..300)) {
        let key = PublicKey::parse(MINISIGN_PUB).unwrap();
        let _ = verify(&key, MESSAGE, &text);
        let _ = PublicKey::parse(&text);
        let _ = SecretKey::parse(&text);
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = verify(&key, MESSAGE, &lossy);
    }
}
