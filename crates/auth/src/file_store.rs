//! The encrypted-file fallback `tokens.enc` (3.9): Argon2id + AES-256-GCM, written atomically,
//! parameters bounded on read, never overwritten when it cannot be decrypted.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;

use aes_gcm::Aes256Gcm;
use aes_gcm::KeyInit;
use aes_gcm::Nonce;
use aes_gcm::aead::Aead;
use aes_gcm::aead::Payload;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;
use zeroize::Zeroizing;

use crate::Backend;
use crate::CredentialError;
use crate::CredentialStore;
use crate::Secret;
use crate::account::Slot;
use crate::account::slot;

/// The file name inside the fallback directory.
pub const FILE_NAME: &str = "tokens.enc";
const AAD: &[u8] = b"autogpt-shim-credentials/v1";
const FORMAT: &str = "autogpt-shim-credentials";

/// Argon2id cost parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfParams {
    /// Memory in KiB (readers accept 19456..=1048576).
    pub memory_kib: u32,
    /// Passes (readers accept 2..=10).
    pub iterations: u32,
    /// Lanes (readers accept 1..=8).
    pub parallelism: u32,
}

impl KdfParams {
    /// What writers use (3.9.3): 64 MiB, 3 passes, 1 lane.
    pub const WRITE: KdfParams = KdfParams {
        memory_kib: 65_536,
        iterations: 3,
        parallelism: 1,
    };

    /// The cheapest parameters a reader accepts (for tests).
    pub const MIN_ACCEPTED: KdfParams = KdfParams {
        memory_kib: 19_456,
        iterations: 2,
        parallelism: 1,
    };

    fn in_bounds(&self) -> bool {
        (19_456..=1_048_576).contains(&self.memory_kib)
            && (2..=10).contains(&self.iterations)
            && (1..=8).contains(&self.parallelism)
    }
}

/// One deployment's tokens.
#[derive(Default, Clone)]
struct TokenPair {
    access: Option<Secret>,
    refresh: Option<Secret>,
}

/// The decrypted content (3.9.5).
#[derive(Default, Clone)]
struct Plain {
    audit_key: Option<Secret>,
    tokens: BTreeMap<String, TokenPair>,
}

/// `tokens.enc`.
pub struct EncryptedFileStore {
    path: PathBuf,
    passphrase: Secret,
    write_params: KdfParams,
    lock: Mutex<()>,
    /// The key derived for the salt and parameters of the file last read or written. Argon2 is
    /// deliberately slow (tens of milliseconds); without this, start-up paid it once per
    /// account read (audit key, access token, refresh token). Keeping it is no new exposure:
    /// the passphrase it comes from stays in memory for the store's life anyway.
    key_cache: Mutex<Option<CachedKey>>,
}

struct CachedKey {
    salt: Vec<u8>,
    params: KdfParams,
    key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for EncryptedFileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncryptedFileStore")
            .field("path", &self.path)
            .field("passphrase", &"<redacted>")
            .finish()
    }
}

fn derive(passphrase: &[u8], salt: &[u8], p: KdfParams) -> Result<Zeroizing<[u8; 32]>, ()> {
    let params =
        argon2::Params::new(p.memory_kib, p.iterations, p.parallelism, Some(32)).map_err(|_| ())?;
    let a = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut out = Zeroizing::new([0u8; 32]);
    a.hash_password_into(passphrase, salt, out.as_mut())
        .map_err(|_| ())?;
    Ok(out)
}

fn random<const N: usize>() -> Result<[u8; N], ()> {
    let mut b = [0u8; N];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).map_err(|_| ())?;
    Ok(b)
}

impl EncryptedFileStore {
    /// The store at `dir/tokens.enc` with the passphrase of 3.9.2 (exact bytes, not trimmed).
    pub fn new(dir: &Path, passphrase: Secret) -> Result<Self, CredentialError> {
        Self::with_params(dir, passphrase, KdfParams::WRITE)
    }

    /// Like [`EncryptedFileStore::new`] with other write parameters (tests use
    /// [`KdfParams::MIN_ACCEPTED`] to keep Argon2 fast).
    pub fn with_params(
        dir: &Path,
        passphrase: Secret,
        params: KdfParams,
    ) -> Result<Self, CredentialError> {
        if passphrase.expose().is_empty() {
            return Err(CredentialError::PassphraseMissing);
        }
        Ok(Self {
            path: dir.join(FILE_NAME),
            passphrase,
            write_params: params,
            lock: Mutex::new(()),
            key_cache: Mutex::new(None),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// [`derive`] through the one-entry cache (same passphrase, so same salt and parameters
    /// give the same key).
    fn key_for(&self, salt: &[u8], p: KdfParams) -> Result<Zeroizing<[u8; 32]>, ()> {
        if let Ok(cache) = self.key_cache.lock()
            && let Some(c) = cache.as_ref()
            && c.params == p
            && c.salt == salt
        {
            return Ok(c.key.clone());
        }
        let key = derive(self.passphrase.expose().as_bytes(), salt, p)?;
        if let Ok(mut cache) = self.key_cache.lock() {
            *cache = Some(CachedKey {
                salt: salt.to_vec(),
                params: p,
                key: key.clone(),
            });
        }
        Ok(key)
    }

    fn corrupt(&self) -> CredentialError {
        CredentialError::Decrypt {
            path: self.path.clone(),
        }
    }

    fn io(&self, e: &std::io::Error) -> CredentialError {
        CredentialError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// Reads and decrypts; an absent file is empty.
    fn read(&self) -> Result<Plain, CredentialError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Plain::default()),
            Err(e) => return Err(self.io(&e)),
        };
        let plain = self.open_envelope(&bytes).ok_or_else(|| self.corrupt())?;
        parse_plain(&plain).ok_or_else(|| self.corrupt())
    }

    fn open_envelope(&self, bytes: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
        let env = CredentialEnvelope::parse(bytes)?;
        let key = self.key_for(&env.salt, env.params).ok()?;
        let aead = Aes256Gcm::new_from_slice(key.as_ref()).ok()?;
        let pt = aead
            .decrypt(
                Nonce::from_slice(&env.nonce),
                Payload {
                    msg: &env.ciphertext,
                    aad: AAD,
                },
            )
            .ok()?;
        Some(Zeroizing::new(pt))
    }

    /// Encrypts `plain` with a fresh salt and nonce and replaces the file atomically.
    fn write(&self, plain: &Plain) -> Result<(), CredentialError> {
        let pt = canonical_plain(plain);
        let salt = random::<16>()
            .map_err(|()| CredentialError::Unavailable("system RNG failed".to_owned()))?;
        let nonce = random::<12>()
            .map_err(|()| CredentialError::Unavailable("system RNG failed".to_owned()))?;
        let key = self.key_for(&salt, self.write_params).map_err(|()| {
            CredentialError::Unavailable("argon2 rejected its parameters".to_owned())
        })?;
        let aead = Aes256Gcm::new_from_slice(key.as_ref()).map_err(|_| self.corrupt())?;
        let ct = aead
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: &pt, aad: AAD })
            .map_err(|_| self.corrupt())?;
        let envelope = CredentialEnvelope {
            params: self.write_params,
            salt: salt.to_vec(),
            nonce,
            ciphertext: ct,
        }
        .to_file_text();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| self.io(&e))?;
        let tmp = dir.join(format!(".{FILE_NAME}.tmp-{}", std::process::id()));
        let result = (|| -> std::io::Result<()> {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                o.mode(0o600);
            }
            let mut f = o.open(&tmp)?;
            f.write_all(envelope.as_bytes())?;
            f.sync_all()?;
            drop(f);
            std::fs::rename(&tmp, &self.path)?;
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|e| self.io(&e))
    }
}

/// The fields of a `tokens.enc` envelope (3.9.4): everything that is read before the
/// (deliberately slow) key derivation, so that it can be tested and fuzzed on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialEnvelope {
    /// Argon2id cost parameters (within the bounds readers accept).
    pub params: KdfParams,
    /// The Argon2id salt (at least 16 bytes).
    pub salt: Vec<u8>,
    /// The AES-256-GCM nonce.
    pub nonce: [u8; 12],
    /// The ciphertext, GCM tag included.
    pub ciphertext: Vec<u8>,
}

impl CredentialEnvelope {
    /// Parses an envelope: exactly the members of 3.9.4, the expected format, version, cipher
    /// and KDF names, parameters within bounds, a salt of at least 16 bytes and a 12-byte
    /// nonce. `None` for anything else (the store then reports the file as undecryptable).
    pub fn parse(bytes: &[u8]) -> Option<CredentialEnvelope> {
        let env: Value = serde_json::from_slice(bytes).ok()?;
        let obj = env.as_object()?;
        let allowed = ["cipher", "ciphertext", "format", "kdf", "version"];
        if obj.len() != allowed.len() || !allowed.iter().all(|k| obj.contains_key(*k)) {
            return None;
        }
        if env["format"].as_str()? != FORMAT || env["version"].as_u64()? != 1 {
            return None;
        }
        let cipher = env["cipher"].as_object()?;
        if cipher.len() != 2 || cipher.get("name")?.as_str()? != "aes-256-gcm" {
            return None;
        }
        let nonce = B64.decode(cipher.get("nonce")?.as_str()?).ok()?;
        let kdf = env["kdf"].as_object()?;
        if kdf.len() != 6
            || kdf.get("name")?.as_str()? != "argon2id"
            || kdf.get("version")?.as_u64()? != 19
        {
            return None;
        }
        let params = KdfParams {
            memory_kib: u32::try_from(kdf.get("memory_kib")?.as_u64()?).ok()?,
            iterations: u32::try_from(kdf.get("iterations")?.as_u64()?).ok()?,
            parallelism: u32::try_from(kdf.get("parallelism")?.as_u64()?).ok()?,
        };
        let salt = B64.decode(kdf.get("salt")?.as_str()?).ok()?;
        if !params.in_bounds() || salt.len() < 16 {
            return None;
        }
        let nonce: [u8; 12] = nonce.try_into().ok()?;
        let ciphertext = B64.decode(env["ciphertext"].as_str()?).ok()?;
        Some(CredentialEnvelope {
            params,
            salt,
            nonce,
            ciphertext,
        })
    }

    /// The file form writers produce: canonical JSON (1.9, members sorted, no whitespace),
    /// then LF.
    pub fn to_file_text(&self) -> String {
        let p = self.params;
        format!(
            "{{\"cipher\":{{\"name\":\"aes-256-gcm\",\"nonce\":\"{}\"}},\"ciphertext\":\"{}\",\"format\":\"{FORMAT}\",\"kdf\":{{\"iterations\":{},\"memory_kib\":{},\"name\":\"argon2id\",\"parallelism\":{},\"salt\":\"{}\",\"version\":19}},\"version\":1}}\n",
            B64.encode(self.nonce),
            B64.encode(&self.ciphertext),
            p.iterations,
            p.memory_kib,
            p.parallelism,
            B64.encode(&self.salt),
        )
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn parse_plain(bytes: &[u8]) -> Option<Plain> {
    #[derive(serde::Deserialize)]
    struct P {
        audit_key: Option<String>,
        #[serde(default)]
        tokens: BTreeMap<String, T>,
    }
    #[derive(serde::Deserialize)]
    struct T {
        access_token: Option<String>,
        refresh_token: Option<String>,
    }
    let p: P = serde_json::from_slice(bytes).ok()?;
    Some(Plain {
        audit_key: p.audit_key.map(Secret::new),
        tokens: p
            .tokens
            .into_iter()
            .map(|(k, t)| {
                (
                    k,
                    TokenPair {
                        access: t.access_token.map(Secret::new),
                        refresh: t.refresh_token.map(Secret::new),
                    },
                )
            })
            .collect(),
    })
}

/// Canonical JSON (1.9) of the plaintext, built in a zeroised buffer.
fn canonical_plain(p: &Plain) -> Zeroizing<Vec<u8>> {
    use shim_audit::canon::write_str;
    let mut out = Zeroizing::new(Vec::with_capacity(256));
    out.push(b'{');
    let mut first = true;
    if let Some(k) = &p.audit_key {
        out.extend_from_slice(b"\"audit_key\":");
        write_str(&mut out, k.expose());
        first = false;
    }
    if !p.tokens.is_empty() {
        if !first {
            out.push(b',');
        }
        out.extend_from_slice(b"\"tokens\":{");
        let mut deps: Vec<&String> = p.tokens.keys().collect();
        deps.sort_by(|a, b| shim_audit::canon::cmp_keys(a, b));
        for (i, dep) in deps.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, dep);
            out.push(b':');
            out.push(b'{');
            let pair = &p.tokens[dep];
            let mut f = true;
            if let Some(a) = &pair.access {
                out.extend_from_slice(b"\"access_token\":");
                write_str(&mut out, a.expose());
                f = false;
            }
            if let Some(r) = &pair.refresh {
                if !f {
                    out.push(b',');
                }
                out.extend_from_slice(b"\"refresh_token\":");
                write_str(&mut out, r.expose());
            }
            out.push(b'}');
        }
        out.push(b'}');
    }
    out.push(b'}');
    out
}

impl CredentialStore for EncryptedFileStore {
    fn backend(&self) -> Backend {
        Backend::File
    }

    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError> {
        let s =
            slot(account).ok_or_else(|| CredentialError::UnsupportedAccount(account.to_owned()))?;
        let _g = self.lock.lock();
        let p = self.read()?;
        Ok(match s {
            Slot::AuditKey => p.audit_key,
            Slot::Access(d) => p.tokens.get(&d).and_then(|t| t.access.clone()),
            Slot::Refresh(d) => p.tokens.get(&d).and_then(|t| t.refresh.clone()),
        })
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        let s =
            slot(account).ok_or_else(|| CredentialError::UnsupportedAccount(account.to_owned()))?;
        let _g = self.lock.lock();
        let mut p = self.read()?;
        match s {
            Slot::AuditKey => p.audit_key = Some(secret.clone()),
            Slot::Access(d) => p.tokens.entry(d).or_default().access = Some(secret.clone()),
            Slot::Refresh(d) => p.tokens.entry(d).or_default().refresh = Some(secret.clone()),
        }
        self.write(&p)
    }

    fn delete(&self, account: &str) -> Result<bool, CredentialError> {
        let s =
            slot(account).ok_or_else(|| CredentialError::UnsupportedAccount(account.to_owned()))?;
        let _g = self.lock.lock();
        let mut p = self.read()?;
        let existed = match &s {
            Slot::AuditKey => p.audit_key.take().is_some(),
            Slot::Access(d) | Slot::Refresh(d) => {
                let Some(pair) = p.tokens.get_mut(d) else {
                    return Ok(false);
                };
                let had = if matches!(s, Slot::Access(_)) {
                    pair.access.take().is_some()
                } else {
                    pair.refresh.take().is_some()
                };
                if pair.access.is_none() && pair.refresh.is_none() {
                    p.tokens.remove(d);
                }
                had
            }
        };
        if existed {
            self.write(&p)?;
        }
        Ok(existed)
    }
}

#[cfg(test)]
#[path = "file_store_tests.rs"]
mod tests;
