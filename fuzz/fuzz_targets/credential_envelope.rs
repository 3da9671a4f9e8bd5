//! Fuzzes the envelope of the encrypted credential file `tokens.enc` (AUDIT_AUTH_CLI.md
//! 3.9.4, `shim_auth::CredentialEnvelope::parse`): everything the store reads before the
//! Argon2id key derivation (which is deliberately far too slow to run per input).
//!
//! Invariants: never panics; an accepted envelope has KDF parameters within the bounds
//! readers accept (memory 19456..=1048576 KiB, 2..=10 passes, 1..=8 lanes), a salt of at
//! least 16 bytes and a 12-byte nonce; and writing it in the writers' form and parsing that
//! gives the same envelope (the writer's form is the canonical one, so it is a fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_auth::CredentialEnvelope;

fuzz_target!(|data: &[u8]| {
    let Some(env) = CredentialEnvelope::parse(data) else {
        return;
    };
    let p = env.params;
    assert!((19_456..=1_048_576).contains(&p.memory_kib), "{p:?}");
    assert!((2..=10).contains(&p.iterations), "{p:?}");
    assert!((1..=8).contains(&p.parallelism), "{p:?}");
    assert!(env.salt.len() >= 16);
    let text = env.to_file_text();
    let again = CredentialEnvelope::parse(text.as_bytes()).expect("the writer's form parses");
    assert_eq!(again, env, "round trip changed the envelope");
    assert_eq!(
        again.to_file_text(),
        text,
        "the writer's form is not a fixed point"
    );
});
