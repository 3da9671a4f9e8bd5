//! The audit key (1.16) and the record MAC (1.10).

use ring::hmac;
use zeroize::Zeroizing;

/// Keys shorter than this are refused by writers and verifiers (1.10).
pub const MIN_KEY_LEN: usize = 16;

/// Length of a freshly generated key.
pub const KEY_LEN: usize = 32;

/// The per-machine HMAC key. Its bytes are zeroised on drop and never shown by `Debug`.
///
/// ```
/// use shim_audit::AuditKey;
///
/// let key = AuditKey::generate()?; // 32 random bytes; keep them where agents cannot read
/// let same = AuditKey::from_hex(&key.to_hex())?;
/// assert_eq!(same.mac(b"record"), key.mac(b"record"));
/// assert!(!format!("{key:?}").contains(key.to_hex().as_str()));
/// assert!(AuditKey::from_bytes(&[1u8; 8]).is_err()); // under 16 bytes is refused
/// # Ok::<(), shim_audit::KeyError>(())
/// ```
#[derive(Clone)]
pub struct AuditKey {
    bytes: Zeroizing<Vec<u8>>,
    mac: hmac::Key,
}

/// Why bytes or text are not a usable audit key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The stored text is not hexadecimal.
    #[error("the stored audit key is not valid hex")]
    NotHex,
    /// Fewer than 16 bytes.
    #[error("the audit key is {0} bytes long; at least 16 are required")]
    TooShort(usize),
    /// The system random number generator failed.
    #[error("the system random number generator failed")]
    Rng,
}

impl AuditKey {
    /// A key from raw bytes (at least 16).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() < MIN_KEY_LEN {
            return Err(KeyError::TooShort(bytes.len()));
        }
        Ok(Self {
            mac: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            bytes: Zeroizing::new(bytes.to_vec()),
        })
    }

    /// A key from its stored hex form. Surrounding whitespace is ignored; either case of hex
    /// digits is accepted.
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let bytes = Zeroizing::new(hex::decode(text.trim()).map_err(|_| KeyError::NotHex)?);
        Self::from_bytes(&bytes)
    }

    /// A fresh 32-byte key from the system CSPRNG.
    pub fn generate() -> Result<Self, KeyError> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), bytes.as_mut())
            .map_err(|_| KeyError::Rng)?;
        Self::from_bytes(bytes.as_ref())
    }

    /// The stored form: lowercase hex. The caller must keep it out of logs and output.
    pub fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.bytes.as_slice()))
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// HMAC-SHA256 of `data` under this key.
    pub fn mac(&self, data: &[u8]) -> [u8; 32] {
        let tag = hmac::sign(&self.mac, data);
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Lowercase hex HMAC-SHA256 of `data`.
    pub fn mac_hex(&self, data: &[u8]) -> String {
        hex::encode(self.mac(data))
    }

    /// Constant-time check that `stored` is exactly the lowercase hex MAC of `data`
    /// (an upper-case stored value does not match, 1.14 step 6).
    pub fn verify_hex(&self, data: &[u8], stored: &str) -> bool {
        let b = stored.as_bytes();
        if b.len() != 64 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return false;
        }
        let mut tag = [0u8; 32];
        if hex::decode_to_slice(b, &mut tag).is_err() {
            return false;
        }
        hmac::verify(&self.mac, data, &tag).is_ok()
    }

    /// The key that signs per-chat root grants: HMAC-SHA256(audit_key, "autogpt-root-grant-v1").
    pub fn grant_key(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.mac(b"autogpt-root-grant-v1"))
    }
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(<redacted>)")
    }
}
