//! Backend selection (3.8) and the fallback directory (3.9.1).

use std::path::PathBuf;

use crate::CredentialError;
use crate::CredentialStore;
use crate::EncryptedFileStore;
use crate::KeychainStore;
use crate::Secret;

/// Which backend a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The OS store.
    Keychain,
    /// `tokens.enc`.
    File,
    /// The in-memory test double.
    Memory,
}

/// `AUTOGPT_SHIM_CREDENTIAL_STORE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreChoice {
    /// OS store unless it is unavailable, then the file.
    #[default]
    Auto,
    /// OS store only; unavailable is an error.
    Keychain,
    /// The encrypted file only.
    File,
}

impl StoreChoice {
    /// Parses the variable's value; empty means `auto`.
    pub fn parse(v: &str) -> Result<Self, CredentialError> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(StoreChoice::Auto),
            "keychain" => Ok(StoreChoice::Keychain),
            "file" => Ok(StoreChoice::File),
            _ => Err(CredentialError::BadChoice(v.to_owned())),
        }
    }
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// The fallback directory: `AUTOGPT_SHIM_FALLBACK_DIR`, else the per-OS state directory.
pub fn fallback_dir() -> Option<PathBuf> {
    if let Some(d) = env("AUTOGPT_SHIM_FALLBACK_DIR") {
        return Some(PathBuf::from(d));
    }
    let home = env("HOME")
        .or_else(|| env("USERPROFILE"))
        .map(PathBuf::from);
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Application Support/autogpt-local-executor"));
    }
    if cfg!(windows) {
        let base = env("LOCALAPPDATA")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join("AppData").join("Local")));
        return base.map(|b| b.join("autogpt-local-executor"));
    }
    let base = env("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".local").join("state")));
    base.map(|b| b.join("autogpt-local-executor"))
}

/// Opens the store `choice` selects. `passphrase` is needed only if the file is used.
pub fn open_store(
    choice: StoreChoice,
    dir: Option<PathBuf>,
    passphrase: Option<Secret>,
) -> Result<Box<dyn CredentialStore>, CredentialError> {
    let file = |passphrase: Option<Secret>| -> Result<Box<dyn CredentialStore>, CredentialError> {
        let pass = passphrase.ok_or(CredentialError::PassphraseMissing)?;
        let dir = dir.clone().ok_or_else(|| CredentialError::Io {
            path: PathBuf::from("tokens.enc"),
            message:
                "no home directory to keep the credential file in; set AUTOGPT_SHIM_FALLBACK_DIR"
                    .to_owned(),
        })?;
        Ok(Box::new(EncryptedFileStore::new(&dir, pass)?))
    };
    match choice {
        StoreChoice::File => file(passphrase),
        StoreChoice::Keychain => {
            let k = KeychainStore::new();
            k.probe()?;
            Ok(Box::new(k))
        }
        StoreChoice::Auto => {
            let k = KeychainStore::new();
            match k.probe() {
                Ok(()) => Ok(Box::new(k)),
                Err(e) => {
                    tracing::info!(reason = %e, "OS credential store unavailable; using the encrypted file");
                    file(passphrase)
                }
            }
        }
    }
}

/// [`open_store`] configured from `AUTOGPT_SHIM_CREDENTIAL_STORE`,
/// `AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE` (exact bytes) and the fallback directory.
pub fn open_store_from_env() -> Result<Box<dyn CredentialStore>, CredentialError> {
    let choice = StoreChoice::parse(&env("AUTOGPT_SHIM_CREDENTIAL_STORE").unwrap_or_default())?;
    let pass = std::env::var("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE")
        .ok()
        .filter(|v| !v.is_empty())
        .map(Secret::new);
    open_store(choice, fallback_dir(), pass)
}
