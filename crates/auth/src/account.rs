//! Item names (3.8): service `autogpt-local-executor`, these accounts.

/// The audit key (per machine).
pub const AUDIT_KEY: &str = "audit_key";
/// \[compat\] Legacy access token (no deployment binding).
pub const LEGACY_ACCESS_TOKEN: &str = "access_token";
/// \[compat\] Legacy refresh token (no deployment binding).
pub const LEGACY_REFRESH_TOKEN: &str = "refresh_token";
/// The only deployment for which legacy tokens are considered.
pub const DEFAULT_DEPLOYMENT: &str = "autogpt-local-executor@https://platform.autogpt.net";

/// `access_token/<deployment_id>`.
pub fn access_token(deployment_id: &str) -> String {
    format!("access_token/{deployment_id}")
}

/// `refresh_token/<deployment_id>`.
pub fn refresh_token(deployment_id: &str) -> String {
    format!("refresh_token/{deployment_id}")
}

/// What an account name refers to inside the encrypted file's plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    AuditKey,
    Access(String),
    Refresh(String),
}

pub(crate) fn slot(account: &str) -> Option<Slot> {
    if account == AUDIT_KEY {
        return Some(Slot::AuditKey);
    }
    if let Some(dep) = account.strip_prefix("access_token/") {
        return Some(Slot::Access(dep.to_owned()));
    }
    if let Some(dep) = account.strip_prefix("refresh_token/") {
        return Some(Slot::Refresh(dep.to_owned()));
    }
    None
}
