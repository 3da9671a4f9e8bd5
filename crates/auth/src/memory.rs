//! An in-memory store for tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::Backend;
use crate::CredentialError;
use crate::CredentialStore;
use crate::Secret;

/// Items in a map; optionally fails every call as an unavailable backend would.
#[derive(Debug, Default)]
pub struct MemoryStore {
    items: Mutex<BTreeMap<String, Secret>>,
    unavailable: bool,
}

impl MemoryStore {
    /// An empty, working store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store whose every call fails with [`CredentialError::Unavailable`].
    pub fn unavailable() -> Self {
        Self {
            unavailable: true,
            ..Self::default()
        }
    }

    fn check(&self) -> Result<(), CredentialError> {
        if self.unavailable {
            Err(CredentialError::Unavailable(
                "memory store switched off".to_owned(),
            ))
        } else {
            Ok(())
        }
    }
}

impl CredentialStore for MemoryStore {
    fn backend(&self) -> Backend {
        Backend::Memory
    }

    fn get(&self, account: &str) -> Result<Option<Secret>, CredentialError> {
        self.check()?;
        Ok(self.items.lock().ok().and_then(|m| m.get(account).cloned()))
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), CredentialError> {
        self.check()?;
        if let Ok(mut m) = self.items.lock() {
            m.insert(account.to_owned(), secret.clone());
        }
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<bool, CredentialError> {
        self.check()?;
        Ok(self
            .items
            .lock()
            .map(|mut m| m.remove(account).is_some())
            .unwrap_or(false))
    }
}
