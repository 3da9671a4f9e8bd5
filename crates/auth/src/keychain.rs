//! The OS credential store through `keyring` 4 (v1 API): Keychain generic passwords on macOS,
//! Secret Service (default collection, attributes `service` and `username`, looked up by those
//! two only) on Linux, Credential Manager generic credentials on Windows.
//!
//! On Windows the names are those of AUDIT_AUTH_CLI.md 3.8, not keyring's default
//! (`<account>.<service>`): a credential is written with target name `<account>@<service>`
//! and `UserName` = account, and a reader also accepts a credential whose target is exactly
//! `<service>` with a matching `UserName` **[compat]** (what earlier releases wrote).

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

    /// The item `account` is written to and read from first.
    #[cfg(not(windows))]
    fn entry(&self, account: &str) -> Result<keyring_core::Entry, CredentialError> {
        keyring::Entry::new(&self.service, account)
            .map(|e| e.inner)
            .map_err(|e| unavailable(&e))
    }

    /// The item `account` is written to and read from first: target `<account>@<service>`.
    #[cfg(windows)]
    fn entry(&self, account: &str) -> Result<keyring_core::Entry, CredentialError> {
        keyring_core::Entry::new_in_store(windows::store()?, &self.service, account)
            .map_err(|e| unavailable(&e))
    }

    /// The item an earlier release wrote for `account`, if it exists (Windows: target
    /// `<service>` with `UserName` = account); elsewhere there is none.
    #[cfg(not(windows))]
    fn legacy_entry(&self, _account: &str) -> Result<Option<keyring_core::Entry>, CredentialError> {
        Ok(None)
    }

    #[cfg(windows)]
    fn legacy_entry(&self, account: &str) -> Result<Option<keyring_core::Entry>, CredentialError> {
        windows::legacy_entry(&self.service, account)
    }

    /// Whether the OS store answers: a lookup of the audit-key item succeeds or reports "item
    /// not found" (3.8: only other errors make it unavailable).
    pub fn probe(&self) -> Result<(), CredentialError> {
        #[cfg(not(windows))]
        if let Err(e) = keyring::Entry::store_status() {
            return Err(unavailable(e));
        }
        self.get(crate::account::AUDIT_KEY).map(|_| ())
    }
}

/// The bytes `secret` takes in the OS store: UTF-16 on Windows (keyring's encoding of a
/// password in a Credential Manager blob), UTF-8 elsewhere.
fn stored_len(secret: &str) -> usize {
    if cfg!(windows) {
        secret.encode_utf16().count() * 2
    } else {
        secret.len()
    }
}

/// The Credential Manager store, configured for the names of 3.8.
#[cfg(windows)]
mod windows {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::LazyLock;

    use keyring_core::CredentialStore;

    use super::unavailable;
    use crate::CredentialError;

    /// `CRED_MAX_CREDENTIAL_BLOB_SIZE`: 5 × 512 bytes.
    pub(super) const MAX_BLOB_BYTES: usize = 2560;

    /// keyring's Windows store with `@` between account and service (its default is `.`).
    static STORE: LazyLock<Result<Arc<CredentialStore>, String>> = LazyLock::new(|| {
        let config = HashMap::from([("divider", "@")]);
        windows_native_keyring_store::Store::new_with_configuration(&config)
            .map(|s| {
                let s: Arc<CredentialStore> = s;
                s
            })
            .map_err(|e| unavailable(&e).to_string())
    });

    pub(super) fn store() -> Result<&'static Arc<CredentialStore>, CredentialError> {
        STORE
            .as_ref()
            .map_err(|e| CredentialError::Unavailable(e.clone()))
    }

    /// The credential with target exactly `service` when its `UserName` is `account`.
    pub(super) fn legacy_entry(
        service: &str,
        account: &str,
    ) -> Result<Option<keyring_core::Entry>, CredentialError> {
        let target = HashMap::from([("target", service)]);
        let entry =
            keyring_core::Entry::new_in_store_with_modifiers(store()?, service, account, &target)
                .map_err(|e| unavailable(&e))?;
        match entry.get_attributes() {
            Ok(a) if a.get("username").map(String::as_str) == Some(account) => Ok(Some(entry)),
            Ok(_) | Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(&e)),
        }
    }
}

impl CredentialStore for KeychainStore {
    fn backend(&self) -> Backend {
        Backend::Keychain
    }

    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError> {
        match self.entry(account)?.get_password() {
            Ok(v) => return Ok(Some(Secret::new(v))),
            Err(keyring::Error::NoEntry) => {}
            Err(e) => return Err(unavailable(&e)),
        }
        let Some(legacy) = self.legacy_entry(account)? else {
            return Ok(None);
        };
        match legacy.get_password() {
            Ok(v) => Ok(Some(Secret::new(v))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(&e)),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        self.check_fits(account, secret)?;
        self.entry(account)?
            .set_password(secret.expose())
            .map_err(|e| match e {
                // Should the check above ever disagree with the backend: still typed.
                keyring::Error::TooLong(_, limit) => CredentialError::TooLong {
                    account: account.to_owned(),
                    bytes: stored_len(secret.expose()),
                    limit: usize::try_from(limit).unwrap_or(usize::MAX),
                },
                e => unavailable(&e),
            })
    }

    #[cfg(windows)]
    fn check_fits(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        let bytes = stored_len(secret.expose());
        if bytes > windows::MAX_BLOB_BYTES {
            return Err(CredentialError::TooLong {
                account: account.to_owned(),
                bytes,
                limit: windows::MAX_BLOB_BYTES,
            });
        }
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<bool, CredentialError> {
        let mut deleted = false;
        let legacy = self.legacy_entry(account)?;
        for entry in std::iter::once(self.entry(account)?).chain(legacy) {
            match entry.delete_credential() {
                Ok(()) => deleted = true,
                Err(keyring::Error::NoEntry) => {}
                Err(e) => return Err(unavailable(&e)),
            }
        }
        Ok(deleted)
    }
}

#[cfg(all(test, windows))]
#[path = "keychain_windows_tests.rs"]
mod windows_tests;
