//! The OS credential store through `keyring` 4 (v1 API): Keychain generic passwords on macOS,
//! Secret Service (default collection, attributes `service` and `username`, looked up by those
//! two only) on Linux, Credential Manager generic credentials on Windows.

use crate::Backend;
use crate::CredentialError;
use crate::CredentialStore;
use crate::SERVICE;
use crate::Secret;

/// The OS store.
#[derive(Debug, Clone)]
pub struct KeychainStore {
    service: String,
}

impl Default for KeychainStore {
    fn default() -> Self {
        Self {
            service: SERVICE.to_owned(),
        }
    }
}

/// Maps a keyring error to ours without ever including bytes it may carry.
fn unavailable(e: &keyring::Error) -> CredentialError {
    let what = match e {
        keyring::Error::BadEncoding(_) => "the stored item is not valid UTF-8".to_owned(),
        keyring::Error::PlatformFailure(err) => format!("platform failure: {err}"),
        keyring::Error::NoStorageAccess(err) => format!("no storage access: {err}"),
        keyring::Error::NoDefaultStore => {
            "no credential store for this platform/session".to_owned()
        }
        keyring::Error::Ambiguous(_) => "several items match".to_owned(),
        other => format!("{other}"),
    };
    CredentialError::Unavailable(what)
}

impl KeychainStore {
    /// The store for service `autogpt-local-executor`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store for another service name (tests use a unique one).
    pub fn with_service(service: &str) -> Self {
        Self {
            service: service.to_owned(),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, CredentialError> {
        keyring::Entry::new(&self.service, account).map_err(|e| unavailable(&e))
    }

    /// Whether the OS store answers: a lookup of the audit-key item succeeds or reports "item
    /// not found" (3.8: only other errors make it unavailable).
    pub fn probe(&self) -> Result<(), CredentialError> {
        if let Err(e) = keyring::Entry::store_status() {
            return Err(unavailable(e));
        }
        self.get(crate::account::AUDIT_KEY).map(|_| ())
    }
}

impl CredentialStore for KeychainStore {
    fn backend(&self) -> Backend {
        Backend::Keychain
    }

    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError> {
        match self.entry(account)?.get_password() {
            Ok(v) => Ok(Some(Secret::new(v))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(&e)),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        self.entry(account)?
            .set_password(secret.expose())
            .map_err(|e| unavailable(&e))
    }

    fn delete(&self, account: &str) -> Result<bool, CredentialError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(unavailable(&e)),
        }
    }
}
