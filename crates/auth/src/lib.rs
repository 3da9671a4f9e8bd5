//! Credential storage of the local executor (AUDIT_AUTH_CLI.md 3.7-3.9, 1.16).
//!
//! # What it is for
//!
//! An executor holds secrets an agent must never see: OAuth tokens for the platform and
//! the key of its audit log. This crate keeps them in the OS credential store (Secret
//! Service, Keychain, Credential Manager) or, where there is none, in an encrypted file
//! (Argon2id + AES-256-GCM), behind one trait; it also performs the OAuth login, refresh
//! and revocation against the platform or an OpenID Connect issuer. No value is ever
//! logged or shown by `Debug`.
//!
//! # The one way in
//!
//! [`open_store_from_env`] (or [`open_store`] with an explicit [`StoreChoice`]) returns a
//! `Box<dyn `[`CredentialStore`]`>`; everything else takes `&dyn CredentialStore`:
//!
//! * [`audit_key::load_or_create`] / [`audit_key::load`]: the audit key for `shim-audit`.
//! * [`tokens`]: OAuth tokens per deployment.
//! * [`oauth`]: login (authorization code + PKCE, loopback callback), refresh, revocation.
//!
//! Errors are [`CredentialError`] and [`audit_key::AuditKeyError`], enums that say what
//! failed without carrying a secret.
//!
//! # Example
//!
//! ```
//! use shim_auth::CredentialStore;
//! use shim_auth::EncryptedFileStore;
//! use shim_auth::MemoryStore;
//! use shim_auth::Secret;
//!
//! // A store; real code calls shim_auth::open_store_from_env().
//! let store = MemoryStore::new();
//! store.set("my-account", &Secret::new("s3cret"))?;
//! assert_eq!(store.get("my-account")?.as_ref().map(Secret::expose), Some("s3cret"));
//! assert!(store.delete("my-account")?);
//!
//! // The audit key: created once, then loaded; never replaced.
//! let (key, created) = shim_auth::audit_key::load_or_create(&store, None)?;
//! assert!(created);
//! let again = shim_auth::audit_key::load(&store, None)?;
//! assert_eq!(again.as_bytes(), key.as_bytes());
//!
//! // The encrypted-file backend, for machines without an OS store.
//! let dir = tempfile::tempdir()?;
//! let file = EncryptedFileStore::new(dir.path(), Secret::new("passphrase"))?;
//! file.set(shim_auth::account::AUDIT_KEY, &Secret::new(key.to_hex().as_str()))?;
//! let reopened = EncryptedFileStore::new(dir.path(), Secret::new("passphrase"))?;
//! assert_eq!(shim_auth::audit_key::load(&reopened, None)?.as_bytes(), key.as_bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules and types
//!
//! * [`CredentialStore`]: one trait for every backend. Accounts are the item names of 3.8
//!   ([`account`]); OAuth tokens and the audit key live in the same store.
//! * [`KeychainStore`]: the OS store through the `keyring` crate.
//! * [`EncryptedFileStore`]: `tokens.enc`, Argon2id + AES-256-GCM (3.9).
//! * [`MemoryStore`]: an in-memory store for tests and for embedders that keep secrets
//!   elsewhere.
//! * [`open_store`] / [`open_store_from_env`]: backend selection
//!   (`AUTOGPT_SHIM_CREDENTIAL_STORE`).
//!
//! # Feature flags
//!
//! None.
//!
//! # Stability
//!
//! The public API is checked against a baseline in CI (see the repository README): a
//! breaking change needs a version bump.
//!
//! See README.md for what this crate owns and must never do.

#![deny(missing_docs)]

pub mod account;
pub mod audit_key;
mod error;
mod file_store;
mod keychain;
mod memory;
pub mod net;
pub mod oauth;
mod parts;
mod secret;
mod select;
pub mod tokens;
mod windows_proxy;

pub use error::CredentialError;
pub use error::DECRYPT_MESSAGE;
pub use file_store::CredentialEnvelope;
pub use file_store::EncryptedFileStore;
pub use file_store::FILE_NAME;
pub use file_store::KdfParams;
pub use keychain::KeychainStore;
pub use memory::MemoryStore;
pub use secret::Secret;
pub use select::Backend;
pub use select::StoreChoice;
pub use select::fallback_dir;
pub use select::open_store;
pub use select::open_store_from_env;

/// The wire error codes [`CredentialError::code`] returns, re-exported so callers need not
/// depend on shim-protocol to name them.
pub use shim_protocol::ErrorCode;
/// The URL type of the OAuth endpoints ([`oauth`]), re-exported so callers need not depend
/// on url to name it.
pub use url::Url;

/// The service name of every item (3.8).
pub const SERVICE: &str = "autogpt-local-executor";

/// One credential backend. Implementations never log or display secret values.
///
/// ```
/// use shim_auth::CredentialStore;
/// use shim_auth::MemoryStore;
/// use shim_auth::Secret;
///
/// fn remember(store: &dyn CredentialStore, token: &str) -> Result<(), shim_auth::CredentialError> {
///     store.set("my-token", &Secret::new(token))
/// }
/// let store = MemoryStore::new();
/// remember(&store, "t0k3n")?;
/// let got = store.get("my-token")?;
/// assert_eq!(got.as_ref().map(Secret::expose), Some("t0k3n"));
/// assert!(!format!("{got:?}").contains("t0k3n")); // Debug never shows a secret
/// # Ok::<(), shim_auth::CredentialError>(())
/// ```
pub trait CredentialStore: Send + Sync {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// The secret stored under `account`, `None` when there is no such item.
    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError>;
    /// Stores `secret` under `account`, replacing any previous value.
    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError>;
    /// Deletes the item; `false` when there was none.
    fn delete(&self, account: &str) -> Result<bool, CredentialError>;
    /// Whether `secret` fits under `account` in this backend, checked before anything is
    /// written so that a set of secrets is stored whole or not at all
    /// ([`CredentialError::TooLong`] when it does not fit). Stores without a size limit
    /// accept everything.
    fn check_fits(&self, _account: &str, _secret: &Secret) -> Result<(), CredentialError> {
        Ok(())
    }
}
