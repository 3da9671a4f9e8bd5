//! Errors of the credential store. None of them carries a secret.

use std::path::PathBuf;

use shim_protocol::ErrorCode;

/// The message of 3.9.5 for a file that cannot be decrypted or is malformed.
pub const DECRYPT_MESSAGE: &str = "could not decrypt the credential file (wrong AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE or corrupted file)";

/// Why a credential operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The OS store is unavailable (no backend, no D-Bus session, no provider, any error other
    /// than "item not found").
    #[error("the OS credential store is unavailable: {0}")]
    Unavailable(String),
    /// The file backend is needed but the passphrase variable is missing or empty (3.9.2).
    #[error("no OS credential store is available and AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE is not set")]
    PassphraseMissing,
    /// Wrong passphrase, modified file or malformed envelope (3.9.5). The file is left as is.
    #[error("{DECRYPT_MESSAGE}: {}", path.display())]
    Decrypt {
        /// The credential file.
        path: PathBuf,
    },
    /// Reading or writing the credential file failed.
    #[error("credential file {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// `AUTOGPT_SHIM_CREDENTIAL_STORE` holds an unknown value.
    #[error("AUTOGPT_SHIM_CREDENTIAL_STORE must be auto, keychain or file, not {0:?}")]
    BadChoice(String),
    /// The secret is longer than the OS store can hold even split across its most parts
    /// (Windows Credential Manager: 16 credential blobs of at most 2560 bytes each, text
    /// stored as UTF-16). Nothing was written.
    #[error(
        "the OS credential store cannot hold {account:?}: it is {bytes} bytes as stored, \
         the limit is {limit}; hint: set AUTOGPT_SHIM_CREDENTIAL_STORE=file to keep the \
         credentials in the encrypted file (see docs/install-windows.md)"
    )]
    TooLong {
        /// The account that did not fit.
        account: String,
        /// Its size as the store would keep it.
        bytes: usize,
        /// The store's limit in the same unit.
        limit: usize,
    },
    /// A secret stored in parts cannot be put back together: a part is missing, the parts
    /// come from different saves (an interrupted login), or the header is damaged.
    #[error(
        "the OS credential store holds a damaged {account:?}: {why}; hint: run \
         `autogpt-shim auth` to log in again"
    )]
    Damaged {
        /// The account.
        account: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The encrypted file cannot hold this account (legacy accounts live only in the OS store).
    #[error("the encrypted credential file has no place for account {0:?}")]
    UnsupportedAccount(String),
}

impl CredentialError {
    /// The wire code when a request fails because of the store.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::AuthFailed
    }
}
