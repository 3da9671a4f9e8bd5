//! Credential storage of the local executor (AUDIT_AUTH_CLI.md 3.7-3.9, 1.16).
//!
//! * [`CredentialStore`]: one trait for every backend. Accounts are the item names of 3.8
//!   ([`account`]); OAuth tokens and the audit key live in the same store.
//! * [`KeychainStore`]: the OS store through the `keyring` crate (Secret Service, Keychain,
//!   Credential Manager).
//! * [`EncryptedFileStore`]: `tokens.enc`, Argon2id + AES-256-GCM (3.9).
//! * [`MemoryStore`]: an in-memory double for tests.
//! * [`open_store`] / [`open_store_from_env`]: backend selection (`AUTOGPT_SHIM_CREDENTIAL_STORE`).
//! * [`tokens`]: OAuth tokens per deployment, with the legacy migration of 3.8.
//! * [`oauth`]: login (authorization code + PKCE, loopback callback), refresh, revocation,
//!   with fixed platform endpoints or an OpenID Connect issuer.
//! * [`audit_key`]: loading (every command) and creating (`start` only) the audit key.
//!
//! See README.md for what this crate owns and must never do.

pub mod account;
pub mod audit_key;
mod error;
mod file_store;
mod keychain;
mod memory;
pub mod oauth;
mod secret;
mod select;
pub mod tokens;

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

/// The service name of every item (3.8).
pub const SERVICE: &str = "autogpt-local-executor";

/// One credential backend. Implementations never log or display secret values.
pub trait CredentialStore: Send + Sync {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// The secret stored under `account`, `None` when there is no such item.
    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError>;
    /// Stores `secret` under `account`, replacing any previous value.
    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError>;
    /// Deletes the item; `false` when there was none.
    fn delete(&self, account: &str) -> Result<bool, CredentialError>;
}
