//! The audit key in the credential store (1.16).
//!
//! * [`load_or_create`]: `start` only. Loads; when absent everywhere (and no legacy file), it
//!   generates 32 random bytes and stores them. Never replaces a stored value.
//! * [`load`]: every other command. Never creates.
//! * A stored value that is not hex or is shorter than 16 bytes is [`AuditKeyError::Corrupt`]
//!   for both ([H-6]); it is never overwritten.

use std::path::Path;
use std::path::PathBuf;

use shim_audit::AuditKey;
use shim_audit::KeyError;

use crate::CredentialError;
use crate::CredentialStore;
use crate::Secret;
use crate::account::AUDIT_KEY;

/// Why the audit key could not be loaded or created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditKeyError {
    /// No key in the store (and no legacy file to import).
    #[error("no audit key is stored (it is created by `autogpt-shim start`)")]
    Absent,
    /// The stored value is unusable; it was left untouched.
    #[error(
        "the stored audit key is corrupt ({0}); it was left untouched because replacing it would make every existing log unverifiable"
    )]
    Corrupt(KeyError),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] CredentialError),
    /// A new key could not be generated.
    #[error("could not generate an audit key: {0}")]
    Generate(KeyError),
}

impl AuditKeyError {
    /// Exit code for audit commands (5.2): 2. The daemon exits 78 for any of these.
    pub fn command_exit_code(&self) -> u8 {
        2
    }
}

/// Where \[compat\] `audit-key.enc` may be: the fallback dir if set, else `<home>/.autogpt-local-executor`.
pub fn legacy_key_path() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("AUTOGPT_SHIM_FALLBACK_DIR") {
        return Some(d.join("audit-key.enc"));
    }
    env("HOME")
        .or_else(|| env("USERPROFILE"))
        .map(|h| h.join(".autogpt-local-executor").join("audit-key.enc"))
}

/// Decrypts a \[compat\] `audit-key.enc` (3.9.6). It has no integrity check: a wrong passphrase
/// yields a wrong key, which the writer's tail check (1.12) then reveals.
pub fn decrypt_legacy(content: &str, passphrase: &[u8]) -> Option<AuditKey> {
    let (salt_hex, ct_hex) = content.trim().split_once(':')?;
    let salt = hex::decode(salt_hex.trim()).ok()?;
    let ct = zeroize::Zeroizing::new(hex::decode(ct_hex.trim()).ok()?);
    let mac_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, passphrase);
    let mut plain = zeroize::Zeroizing::new(Vec::with_capacity(ct.len()));
    let mut counter: u32 = 1;
    while plain.len() < ct.len() {
        let mut msg = salt.clone();
        msg.extend_from_slice(&counter.to_be_bytes());
        let block = ring::hmac::sign(&mac_key, &msg);
        for &b in block.as_ref() {
            let i = plain.len();
            if i == ct.len() {
                break;
            }
            plain.push(ct[i] ^ b);
        }
        counter = counter.checked_add(1)?;
    }
    // Earlier releases stored either the hex text or the raw bytes.
    match std::str::from_utf8(&plain) {
        Ok(text) if AuditKey::from_hex(text).is_ok() => AuditKey::from_hex(text).ok(),
        _ => AuditKey::from_bytes(&plain).ok(),
    }
}

/// Parses a stored audit key (hex); anything else is [`AuditKeyError::Corrupt`] ([H-6]).
pub fn parse_stored(s: &Secret) -> Result<AuditKey, AuditKeyError> {
    AuditKey::from_hex(s.expose()).map_err(AuditKeyError::Corrupt)
}

fn import_legacy(
    store: &dyn CredentialStore,
    legacy: Option<(&Path, &Secret)>,
) -> Result<Option<AuditKey>, AuditKeyError> {
    let Some((path, pass)) = legacy else {
        return Ok(None);
    };
    let Ok(content) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let Some(key) = decrypt_legacy(&content, pass.expose().as_bytes()) else {
        return Ok(None);
    };
    store.set(AUDIT_KEY, &Secret::new(key.to_hex().as_str()))?;
    tracing::info!(path = %path.display(), "imported the legacy audit key file into the credential store");
    Ok(Some(key))
}

/// Loads the key; never creates one. `legacy`: the \[compat\] file and its passphrase, if any.
pub fn load(
    store: &dyn CredentialStore,
    legacy: Option<(&Path, &Secret)>,
) -> Result<AuditKey, AuditKeyError> {
    match store.get(AUDIT_KEY)? {
        Some(s) => parse_stored(&s),
        None => import_legacy(store, legacy)?.ok_or(AuditKeyError::Absent),
    }
}

/// Loads the key, or generates and stores a new one when none exists anywhere (`start` only).
/// Returns the key and whether it was created.
pub fn load_or_create(
    store: &dyn CredentialStore,
    legacy: Option<(&Path, &Secret)>,
) -> Result<(AuditKey, bool), AuditKeyError> {
    match load(store, legacy) {
        Ok(k) => Ok((k, false)),
        Err(AuditKeyError::Absent) => {
            let key = AuditKey::generate().map_err(AuditKeyError::Generate)?;
            store.set(AUDIT_KEY, &Secret::new(key.to_hex().as_str()))?;
            Ok((key, true))
        }
        Err(e) => Err(e),
    }
}

/// The [`shim_audit::cli::KeyLoader`] of the CLI: the store selected by the environment
/// (3.8), the \[compat\] legacy file, load only.
#[derive(Debug, Default, Clone, Copy)]
pub struct StoreKeyLoader;

impl shim_audit::cli::KeyLoader for StoreKeyLoader {
    fn load_audit_key(&self) -> Result<AuditKey, String> {
        let store = crate::open_store_from_env().map_err(|e| e.to_string())?;
        let pass = std::env::var("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE")
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret::new);
        let legacy = legacy_key_path();
        let legacy = match (&legacy, &pass) {
            (Some(p), Some(s)) => Some((p.as_path(), s)),
            _ => None,
        };
        load(store.as_ref(), legacy).map_err(|e| e.to_string())
    }
}
