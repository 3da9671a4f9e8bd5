//! Fuzzes the release signature parsers and verifier (`shim_release`): the `.minisig` file
//! (bytes before the first NUL) checked against a fixed public key for the message after it,
//! and the same text as a public key and as a secret key.
//!
//! Invariants: never panics; a signature is accepted only for the one message that key
//! signed (the seed's), since nothing else can carry a valid Ed25519 signature by it; an
//! accepted public key's base64 form parses back to the same key; an accepted secret key's
//! file parses back to the same key, and what it signs verifies with its public key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_release::PublicKey;
use shim_release::SecretKey;

/// The throw-away test key of crates/release/src/lib_tests.rs (made by minisign 0.11).
const KEY: &str = "RWSBnIllZCUy7y4YentONB8rzeEb5eZb64Z2BFSIfZdBqxgBLqmyAeXi";
/// The one message signed by it in the seed corpus.
const SIGNED: &[u8] = b"abc  autogpt-shim-0.3.0-x86_64-unknown-linux-gnu.tar.gz\n";

fuzz_target!(|data: &[u8]| {
    let (sig, message) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(sig) else {
        return;
    };
    let key = PublicKey::parse(KEY).expect("the fixed key parses");
    if shim_release::verify(&key, message, text).is_ok() {
        assert_eq!(message, SIGNED, "a signature verified for another message");
    }
    if let Ok(k) = PublicKey::parse(text) {
        assert_eq!(PublicKey::parse(&k.to_base64()), Ok(k));
        assert_eq!(PublicKey::parse(&k.to_file()), Ok(k));
    }
    if let Ok(secret) = SecretKey::parse(text) {
        let again = SecretKey::parse(&secret.to_file()).expect("the writer's form parses");
        assert_eq!(again.public(), secret.public());
        let sig = secret.sign(message, "fuzz").expect("a one-line comment signs");
        assert_eq!(
            shim_release::verify(&secret.public(), message, &sig).as_deref(),
            Ok("fuzz")
        );
    }
});
