//! PKCE (RFC 7636, S256), `state` and `nonce` values (3.3 steps 1-2).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SecureRandom;
use ring::rand::SystemRandom;

use crate::Secret;
use crate::oauth::OAuthError;

/// Unpadded base64url of `n` CSPRNG bytes.
pub(crate) fn random_b64(n: usize) -> Result<Secret, OAuthError> {
    let mut bytes = zeroize::Zeroizing::new(vec![0u8; n]);
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| OAuthError::Internal("the system random generator failed".into()))?;
    Ok(Secret::new(URL_SAFE_NO_PAD.encode(bytes.as_slice())))
}

/// `code_verifier`: 64 random bytes, 86 characters.
pub(crate) fn verifier() -> Result<Secret, OAuthError> {
    random_b64(64)
}

/// `code_challenge` = unpadded base64url(SHA-256(verifier)).
pub(crate) fn challenge(verifier: &Secret) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.expose().as_bytes(),
    ))
}

/// `state`: 32 random bytes.
pub(crate) fn state() -> Result<Secret, OAuthError> {
    random_b64(32)
}

/// Constant-time equality of two byte strings (the length is not secret).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
