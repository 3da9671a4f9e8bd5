//! Release signatures in the minisign format, and the release public key the binaries trust.
//!
//! A release's `SHA256SUMS` is signed with Ed25519 as `minisign -S` does by default: the
//! signature covers the BLAKE2b-512 of the file (algorithm `ED`), and a second, "global"
//! signature covers that signature plus the *trusted comment* (which names the file and the
//! time). Anyone can check a release with the stock tool:
//!
//! ```text
//! minisign -Vm SHA256SUMS -P RWQ...   (the release public key)
//! ```
//!
//! and our own code checks it with [`verify`]. Input is parsed once into [`PublicKey`] and
//! [`Signature`]; every malformed, truncated or foreign input is a typed [`SigError`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use blake2::Digest;
use ring::signature::ED25519;
use ring::signature::Ed25519KeyPair;
use ring::signature::KeyPair;
use ring::signature::UnparsedPublicKey;

/// The release public key (minisign's base64 line), made offline by the maintainers with
/// `minisign -G` and kept there; `None` until the first release key exists. The secret half
/// never enters the repository.
pub const RELEASE_PUBLIC_KEY: Option<&str> = None;

/// The build-time override of [`RELEASE_PUBLIC_KEY`]: `cargo xtask dist` sets
/// `AUTOGPT_SHIM_RELEASE_KEY` to the public half of the key it signs with, so a test release
/// signed with a throw-away key trusts that key. Whoever builds a binary chooses what it
/// trusts anyway, so this grants no one anything; `dist --release-key` refuses to sign with
/// any key but [`RELEASE_PUBLIC_KEY`].
pub const BUILD_OVERRIDE: Option<&str> = option_env!("AUTOGPT_SHIM_RELEASE_KEY");

/// The longest signature or key file accepted (minisign's own are under 400 bytes).
pub const MAX_TEXT_LEN: usize = 4096;

const UNTRUSTED_PREFIX: &str = "untrusted comment: ";
const TRUSTED_PREFIX: &str = "trusted comment: ";
/// Ed25519 over the BLAKE2b-512 of the message (minisign's default since 0.8).
const ALG_HASHED: [u8; 2] = *b"ED";
/// Ed25519 over the message itself (minisign's legacy format); refused.
const ALG_LEGACY: [u8; 2] = *b"Ed";
/// The key algorithm in public and secret keys.
const KEY_ALG: [u8; 2] = *b"Ed";
/// The checksum algorithm of secret keys (BLAKE2b-256).
const CHK_ALG: [u8; 2] = *b"B2";
/// The length of an unencrypted secret key's binary form.
const SECRET_KEY_LEN: usize = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32;

/// Why a key or signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigError {
    /// The text is not in the minisign format (which part, and why).
    #[error("malformed {what}: {why}")]
    Malformed {
        /// "public key", "signature" or "secret key".
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A signature algorithm other than minisign's prehashed Ed25519 (`ED`).
    #[error("unsupported signature algorithm {0:?} (only prehashed Ed25519, `ED`, is accepted)")]
    UnsupportedAlgorithm(String),
    /// The signature was made by another key than the one it is checked against.
    #[error("signed by key {signature}, not by the trusted key {key}")]
    OtherKey {
        /// The key id in the signature.
        signature: String,
        /// The key id of the trusted key.
        key: String,
    },
    /// The signature does not match the file: it was changed, or signed by another key that
    /// claims this key's id.
    #[error("the signature does not match the file")]
    BadSignature,
    /// The trusted comment was changed after signing.
    #[error("the signature's trusted comment was changed")]
    BadTrustedComment,
    /// An encrypted secret key (this code reads only `minisign -G -W` keys).
    #[error("the secret key is encrypted; make one with `minisign -G -W` or `cargo xtask dist`")]
    EncryptedSecretKey,
    /// No release key is built into this binary.
    #[error(
        "this build trusts no release key (none is set in shim-release and the build set none)"
    )]
    NoReleaseKey,
}

fn malformed(what: &'static str, why: &'static str) -> SigError {
    SigError::Malformed { what, why }
}

/// A minisign public key: its 8-byte id and the Ed25519 key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PublicKey {
    key_id: [u8; 8],
    key: [u8; 32],
}

impl PublicKey {
    /// Parses a public key file (`untrusted comment:` line, then the base64 line) or the bare
    /// base64 line that `minisign -P` takes.
    pub fn parse(text: &str) -> Result<Self, SigError> {
        const WHAT: &str = "public key";
        if text.len() > MAX_TEXT_LEN {
            return Err(malformed(WHAT, "too long"));
        }
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
        let mut line = lines.next().ok_or_else(|| malformed(WHAT, "empty"))?;
        if line.starts_with(UNTRUSTED_PREFIX) {
            line = lines
                .next()
                .ok_or_else(|| malformed(WHAT, "no key after the comment"))?;
        }
        if lines.any(|l| !l.trim().is_empty()) {
            return Err(malformed(WHAT, "text after the key"));
        }
        let bytes = B64
            .decode(line.trim())
            .map_err(|_| malformed(WHAT, "not base64"))?;
        let bytes: [u8; 42] = bytes
            .try_into()
            .map_err(|_| malformed(WHAT, "not 42 bytes long"))?;
        if bytes[..2] != KEY_ALG {
            return Err(malformed(WHAT, "not an Ed25519 key"));
        }
        let mut key_id = [0; 8];
        key_id.copy_from_slice(&bytes[2..10]);
        let mut key = [0; 32];
        key.copy_from_slice(&bytes[10..]);
        Ok(Self { key_id, key })
    }

    /// The base64 line (what `minisign -P` takes and the install docs print).
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::with_capacity(42);
        bytes.extend_from_slice(&KEY_ALG);
        bytes.extend_from_slice(&self.key_id);
        bytes.extend_from_slice(&self.key);
        B64.encode(bytes)
    }

    /// The whole `.pub` file, as `minisign -G` writes it.
    pub fn to_file(&self) -> String {
        format!(
            "{UNTRUSTED_PREFIX}minisign public key {}\n{}\n",
            self.key_id_hex(),
            self.to_base64()
        )
    }

    /// The key id as minisign prints it (16 upper-case hex digits).
    pub fn key_id_hex(&self) -> String {
        key_id_hex(&self.key_id)
    }
}

fn key_id_hex(id: &[u8; 8]) -> String {
    format!("{:016X}", u64::from_le_bytes(*id))
}

/// A parsed minisign signature file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Signature {
    key_id: [u8; 8],
    signature: [u8; 64],
    trusted_comment: String,
    global_signature: [u8; 64],
}

impl Signature {
    /// Parses a `.minisig` file: untrusted comment, signature, trusted comment, global
    /// signature, one per line.
    pub fn parse(text: &str) -> Result<Self, SigError> {
        const WHAT: &str = "signature";
        if text.len() > MAX_TEXT_LEN {
            return Err(malformed(WHAT, "too long"));
        }
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
        let mut next = |why| lines.next().ok_or_else(|| malformed(WHAT, why));
        if !next("empty")?.starts_with(UNTRUSTED_PREFIX) {
            return Err(malformed(WHAT, "does not start with `untrusted comment: `"));
        }
        let bytes = B64
            .decode(next("no signature line")?.trim())
            .map_err(|_| malformed(WHAT, "signature line is not base64"))?;
        let bytes: [u8; 74] = bytes
            .try_into()
            .map_err(|_| malformed(WHAT, "signature line is not 74 bytes long"))?;
        let alg = [bytes[0], bytes[1]];
        if alg == ALG_LEGACY {
            return Err(SigError::UnsupportedAlgorithm(
                "Ed (legacy, not prehashed)".to_owned(),
            ));
        }
        if alg != ALG_HASHED {
            return Err(SigError::UnsupportedAlgorithm(
                String::from_utf8_lossy(&alg).into_owned(),
            ));
        }
        let trusted_comment = next("no trusted comment")?
            .strip_prefix(TRUSTED_PREFIX)
            .ok_or_else(|| malformed(WHAT, "third line is not a `trusted comment: `"))?
            .to_owned();
        let global = B64
            .decode(next("no global signature")?.trim())
            .map_err(|_| malformed(WHAT, "global signature is not base64"))?;
        let global_signature: [u8; 64] = global
            .try_into()
            .map_err(|_| malformed(WHAT, "global signature is not 64 bytes long"))?;
        if lines.any(|l| !l.trim().is_empty()) {
            return Err(malformed(WHAT, "text after the global signature"));
        }
        let mut key_id = [0; 8];
        key_id.copy_from_slice(&bytes[2..10]);
        let mut signature = [0; 64];
        signature.copy_from_slice(&bytes[10..]);
        Ok(Self {
            key_id,
            signature,
            trusted_comment,
            global_signature,
        })
    }

    /// The key id of the signer, as minisign prints it.
    pub fn key_id_hex(&self) -> String {
        key_id_hex(&self.key_id)
    }

    /// The trusted comment (only trustworthy once [`verify`] accepted the signature).
    pub fn trusted_comment(&self) -> &str {
        &self.trusted_comment
    }

    /// Checks this signature of `message` against `key`; returns the trusted comment.
    pub fn verify(&self, key: &PublicKey, message: &[u8]) -> Result<&str, SigError> {
        if self.key_id != key.key_id {
            return Err(SigError::OtherKey {
                signature: self.key_id_hex(),
                key: key.key_id_hex(),
            });
        }
        let ed = UnparsedPublicKey::new(&ED25519, &key.key);
        ed.verify(&blake2b512(message), &self.signature)
            .map_err(|_| SigError::BadSignature)?;
        let mut global = self.signature.to_vec();
        global.extend_from_slice(self.trusted_comment.as_bytes());
        ed.verify(&global, &self.global_signature)
            .map_err(|_| SigError::BadTrustedComment)?;
        Ok(&self.trusted_comment)
    }
}

/// Checks the minisign signature `signature_text` of `message` against `key`, as
/// `minisign -V` does; returns the (now trusted) trusted comment.
pub fn verify(key: &PublicKey, message: &[u8], signature_text: &str) -> Result<String, SigError> {
    let sig = Signature::parse(signature_text)?;
    sig.verify(key, message).map(str::to_owned)
}

fn blake2b512(message: &[u8]) -> [u8; 64] {
    blake2::Blake2b512::digest(message).into()
}

/// An unencrypted minisign secret key (as `minisign -G -W` writes it).
pub struct SecretKey {
    key_id: [u8; 8],
    /// ring does not hand out a key pair's seed, and the key file holds it.
    seed: [u8; 32],
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", key_id_hex(&self.key_id))
    }
}

impl SecretKey {
    /// A new random key (the throw-away keys of tests and CI).
    pub fn generate() -> Result<Self, SigError> {
        use ring::rand::SecureRandom;
        let rng = ring::rand::SystemRandom::new();
        let mut seed = [0u8; 32];
        let mut key_id = [0u8; 8];
        rng.fill(&mut seed)
            .and_then(|()| rng.fill(&mut key_id))
            .map_err(|_| malformed("secret key", "the system's random source failed"))?;
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
            .map_err(|_| malformed("secret key", "bad seed"))?;
        Ok(Self { key_id, seed, pair })
    }

    /// Parses an unencrypted minisign secret key file.
    pub fn parse(text: &str) -> Result<Self, SigError> {
        const WHAT: &str = "secret key";
        if text.len() > MAX_TEXT_LEN {
            return Err(malformed(WHAT, "too long"));
        }
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
        let mut line = lines.next().ok_or_else(|| malformed(WHAT, "empty"))?;
        if line.starts_with(UNTRUSTED_PREFIX) {
            line = lines
                .next()
                .ok_or_else(|| malformed(WHAT, "no key after the comment"))?;
        }
        let bytes = B64
            .decode(line.trim())
            .map_err(|_| malformed(WHAT, "not base64"))?;
        if bytes.len() != SECRET_KEY_LEN {
            return Err(malformed(WHAT, "not 158 bytes long"));
        }
        if bytes[..2] != KEY_ALG || bytes[4..6] != CHK_ALG {
            return Err(malformed(
                WHAT,
                "not an Ed25519 key with a BLAKE2b checksum",
            ));
        }
        if bytes[2..4] != [0, 0] {
            return Err(SigError::EncryptedSecretKey);
        }
        let keynum = &bytes[54..];
        let mut key_id = [0; 8];
        key_id.copy_from_slice(&keynum[..8]);
        let sk = &keynum[8..72];
        let chk = &keynum[72..104];
        // minisign 0.11 leaves the checksum of an unencrypted key zero (it checks it only
        // after decrypting); the seed/public-key match below catches damage either way.
        if chk != [0; 32] && checksum(&key_id, sk) != chk {
            return Err(malformed(WHAT, "checksum mismatch (damaged key)"));
        }
        let pair = Ed25519KeyPair::from_seed_and_public_key(&sk[..32], &sk[32..])
            .map_err(|_| malformed(WHAT, "the public half does not match the secret"))?;
        let mut seed = [0; 32];
        seed.copy_from_slice(&sk[..32]);
        Ok(Self { key_id, seed, pair })
    }

    /// The unencrypted secret key file (`minisign -G -W` format; keep it out of the repo).
    pub fn to_file(&self) -> String {
        let mut sk = [0u8; 64];
        sk[..32].copy_from_slice(&self.seed);
        sk[32..].copy_from_slice(self.pair.public_key().as_ref());
        let mut bytes = Vec::with_capacity(SECRET_KEY_LEN);
        bytes.extend_from_slice(&KEY_ALG);
        bytes.extend_from_slice(&[0, 0]);
        bytes.extend_from_slice(&CHK_ALG);
        bytes.extend_from_slice(&[0; 32 + 8 + 8]);
        bytes.extend_from_slice(&self.key_id);
        bytes.extend_from_slice(&sk);
        bytes.extend_from_slice(&checksum(&self.key_id, &sk));
        format!(
            "{UNTRUSTED_PREFIX}minisign secret key {} (unencrypted)\n{}\n",
            key_id_hex(&self.key_id),
            B64.encode(bytes)
        )
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        let mut key = [0; 32];
        key.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey {
            key_id: self.key_id,
            key,
        }
    }

    /// Signs `message` as `minisign -S -t TRUSTED_COMMENT` does; returns the `.minisig` text.
    /// The trusted comment must be one line.
    pub fn sign(&self, message: &[u8], trusted_comment: &str) -> Result<String, SigError> {
        if trusted_comment.contains(['\n', '\r']) || trusted_comment.len() > 1000 {
            return Err(malformed(
                "signature",
                "the trusted comment must be one line of at most 1000 bytes",
            ));
        }
        let signature = self.pair.sign(&blake2b512(message));
        let mut line = Vec::with_capacity(74);
        line.extend_from_slice(&ALG_HASHED);
        line.extend_from_slice(&self.key_id);
        line.extend_from_slice(signature.as_ref());
        let mut global = signature.as_ref().to_vec();
        global.extend_from_slice(trusted_comment.as_bytes());
        let global = self.pair.sign(&global);
        Ok(format!(
            "{UNTRUSTED_PREFIX}signature from autogpt-shim release key {}\n{}\n{TRUSTED_PREFIX}{trusted_comment}\n{}\n",
            key_id_hex(&self.key_id),
            B64.encode(line),
            B64.encode(global.as_ref())
        ))
    }
}

fn checksum(key_id: &[u8; 8], sk: &[u8]) -> [u8; 32] {
    let mut h = blake2::Blake2b::<blake2::digest::consts::U32>::new();
    h.update(KEY_ALG);
    h.update(key_id);
    h.update(sk);
    h.finalize().into()
}

/// The key this binary trusts for releases: the build's override if it set one, else
/// [`RELEASE_PUBLIC_KEY`]; [`SigError::NoReleaseKey`] if neither (fail closed).
pub fn release_public_key() -> Result<PublicKey, SigError> {
    match BUILD_OVERRIDE.or(RELEASE_PUBLIC_KEY) {
        Some(text) => PublicKey::parse(text),
        None => Err(SigError::NoReleaseKey),
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
