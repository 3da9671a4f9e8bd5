//! The OS credential store through `keyring` 4 (v1 API): Keychain generic passwords on macOS,
//! Secret Service (default collection, attributes `service` and `username`, looked up by those
//! two only) on Linux, Credential Manager generic credentials on Windows.
//!
//! On Windows the names are those of AUDIT_AUTH_CLI.md 3.8, not keyring's default
//! (`<account>.<service>`): a credential is written with target name `<account>@<service>`
//! and `UserName` = account, and a reader also accepts a credential whose target is exactly
//! `<service>` with a matching `UserName` **[compat]** (what earlier releases wrote).
//!
//! A secret longer than one Credential Manager blob is split across several credentials
//! (see `parts.rs`); a secret that fits is stored exactly as the spec says.

use crate::Backend;
use crate::CredentialError;
use crate::CredentialStore;
use crate::SERVICE;
use crate::Secret;
use crate::parts;

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

/// The most bytes one item holds as stored: a Credential Manager blob on Windows; the other
/// stores have no limit a token could reach.
const ITEM_LIMIT: Option<usize> = if cfg!(windows) { Some(2560) } else { None };

/// The bytes a part of `units` UTF-16 code units takes (keyring writes UTF-16 on Windows).
const BYTES_PER_UNIT: usize = 2;

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
        parts::units(secret) * BYTES_PER_UNIT
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
        let Some(value) = self.get_item(account)? else {
            return Ok(None);
        };
        match parts::Header::parse(value.expose()) {
            None => Ok(Some(value)),
            Some(Ok(header)) => self.join(account, &header).map(Some),
            Some(Err(why)) => Err(damaged(account, why)),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        self.check_fits(account, secret)?;
        let Some(limit) = ITEM_LIMIT else {
            return self.write(account, secret.expose(), secret);
        };
        let pieces = parts::split(secret.expose(), limit / BYTES_PER_UNIT);
        if pieces.len() <= 1 {
            self.write(account, secret.expose(), secret)?;
            return self.remove_parts(account, 1);
        }
        // The parts first, the header last: until the header is written a reader sees the
        // previous value, and parts of two saves never pass the header's digest.
        for (i, piece) in pieces.iter().enumerate() {
            self.write(&parts::part_account(account, i + 1), piece, secret)?;
        }
        self.write(
            account,
            &parts::header(pieces.len(), secret.expose()),
            secret,
        )?;
        self.remove_parts(account, pieces.len() + 1)
    }

    fn check_fits(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        let Some(limit) = ITEM_LIMIT else {
            return Ok(());
        };
        if parts::split(secret.expose(), limit / BYTES_PER_UNIT).len() > parts::MAX_PARTS {
            return Err(CredentialError::TooLong {
                account: account.to_owned(),
                bytes: stored_len(secret.expose()),
                limit: limit * parts::MAX_PARTS,
            });
        }
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<bool, CredentialError> {
        let mut deleted = false;
        let legacy = self.legacy_entry(account)?;
        for entry in std::iter::once(self.entry(account)?).chain(legacy) {
            deleted |= delete_entry(&entry)?;
        }
        if ITEM_LIMIT.is_some() {
            self.remove_parts(account, 1)?;
        }
        Ok(deleted)
    }
}

/// The error for a secret whose parts cannot be put back together.
fn damaged(account: &str, why: &'static str) -> CredentialError {
    CredentialError::Damaged {
        account: account.to_owned(),
        why,
    }
}

/// Deletes one item: `false` when there was none.
fn delete_entry(entry: &keyring_core::Entry) -> Result<bool, CredentialError> {
    match entry.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(unavailable(&e)),
    }
}

impl KeychainStore {
    /// The item stored under `account` as it is: the secret, or the header of its parts.
    fn get_item(&self, account: &str) -> Result<Option<Secret>, CredentialError> {
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

    /// The secret `header` describes, read back from its parts and checked against it.
    fn join(&self, account: &str, header: &parts::Header) -> Result<Secret, CredentialError> {
        // Sized for the longest parts (3 UTF-8 bytes per UTF-16 unit at most) so that the
        // buffer never moves and leaves no copy of a part behind.
        let per_part = ITEM_LIMIT.map_or(0, |l| l / BYTES_PER_UNIT * 3);
        let mut whole = zeroize::Zeroizing::new(String::with_capacity(per_part * header.parts));
        for i in 1..=header.parts {
            let part = match self.entry(&parts::part_account(account, i))?.get_password() {
                Ok(p) => Secret::new(p),
                Err(keyring::Error::NoEntry) => return Err(damaged(account, "a part is missing")),
                Err(e) => return Err(unavailable(&e)),
            };
            whole.push_str(part.expose());
        }
        if !header.matches(&whole) {
            return Err(damaged(
                account,
                "its parts do not match its header (an interrupted save)",
            ));
        }
        Ok(Secret::new(std::mem::take(&mut *whole)))
    }

    /// Writes one item; `secret` is what the error reports the size of.
    fn write(&self, account: &str, value: &str, secret: &Secret) -> Result<(), CredentialError> {
        self.entry(account)?
            .set_password(value)
            .map_err(|e| match e {
                // Should the split ever disagree with the backend: still typed.
                keyring::Error::TooLong(_, limit) => CredentialError::TooLong {
                    account: account.to_owned(),
                    bytes: stored_len(secret.expose()),
                    limit: usize::try_from(limit).unwrap_or(usize::MAX),
                },
                e => unavailable(&e),
            })
    }

    /// Deletes the parts of `account` from part `from` on, whichever exist (an interrupted
    /// save or delete can leave any of them).
    fn remove_parts(&self, account: &str, from: usize) -> Result<(), CredentialError> {
        for i in from..=parts::MAX_PARTS {
            delete_entry(&self.entry(&parts::part_account(account, i))?)?;
        }
        Ok(())
    }
}

#[cfg(all(test, windows))]
#[path = "keychain_windows_tests.rs"]
mod windows_tests;
