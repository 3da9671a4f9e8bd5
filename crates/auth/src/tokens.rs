//! OAuth tokens in the store, keyed per deployment (3.8). The OAuth flows themselves live
//! elsewhere; this is the storage they use.

use crate::Backend;
use crate::CredentialError;
use crate::CredentialStore;
use crate::Secret;
use crate::account;

/// An access/refresh token pair; either may be absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// The access token.
    pub access: Option<Secret>,
    /// The refresh token.
    pub refresh: Option<Secret>,
}

impl Tokens {
    /// True when neither token is stored.
    pub fn is_empty(&self) -> bool {
        self.access.is_none() && self.refresh.is_none()
    }
}

/// Why a deployment id could not be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an http(s) URL: {0}")]
pub struct BadBase(pub String);

/// `<client_id>@<normalized HTTP base>` (3.8): scheme and host lowercased, the scheme's default
/// port, query, fragment and trailing `/` removed; a path is kept.
pub fn deployment_id(client_id: &str, http_base: &str) -> Result<String, BadBase> {
    let u = url::Url::parse(http_base.trim()).map_err(|_| BadBase(http_base.to_owned()))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(BadBase(http_base.to_owned()));
    }
    let host = u.host_str().ok_or_else(|| BadBase(http_base.to_owned()))?;
    let mut base = format!("{}://{}", u.scheme(), host.to_ascii_lowercase());
    // `Url::port` is None for the scheme's default port.
    if let Some(p) = u.port() {
        base.push_str(&format!(":{p}"));
    }
    base.push_str(u.path().trim_end_matches('/'));
    Ok(format!("{client_id}@{base}"))
}

/// Loads the tokens of `deployment_id`. \[compat\] For the default production deployment only,
/// when its per-deployment items are absent, legacy `access_token`/`refresh_token` items of the
/// OS store are copied to the per-deployment accounts and deleted.
pub fn load(store: &dyn CredentialStore, deployment_id: &str) -> Result<Tokens, CredentialError> {
    let current = Tokens {
        access: store.get(&account::access_token(deployment_id))?,
        refresh: store.get(&account::refresh_token(deployment_id))?,
    };
    if !current.is_empty()
        || deployment_id != account::DEFAULT_DEPLOYMENT
        || store.backend() == Backend::File
    {
        return Ok(current);
    }
    let legacy = Tokens {
        access: store.get(account::LEGACY_ACCESS_TOKEN)?,
        refresh: store.get(account::LEGACY_REFRESH_TOKEN)?,
    };
    if legacy.is_empty() {
        return Ok(current);
    }
    save(store, deployment_id, &legacy)?;
    store.delete(account::LEGACY_ACCESS_TOKEN)?;
    store.delete(account::LEGACY_REFRESH_TOKEN)?;
    tracing::info!("migrated legacy tokens to the default deployment's accounts");
    Ok(legacy)
}

/// Stores the present tokens of `deployment_id` (absent ones are left as they are): the
/// refresh token first, then the access token ([H-11]: a crash in between leaves a usable
/// refresh token rather than an access token whose refresh token is gone).
pub fn save(
    store: &dyn CredentialStore,
    deployment_id: &str,
    t: &Tokens,
) -> Result<(), CredentialError> {
    // Both or neither: a token the store cannot hold fails before anything is written.
    if let Some(r) = &t.refresh {
        store.check_fits(&account::refresh_token(deployment_id), r)?;
    }
    if let Some(a) = &t.access {
        store.check_fits(&account::access_token(deployment_id), a)?;
    }
    if let Some(r) = &t.refresh {
        store.set(&account::refresh_token(deployment_id), r)?;
    }
    if let Some(a) = &t.access {
        store.set(&account::access_token(deployment_id), a)?;
    }
    Ok(())
}

/// Deletes both tokens of `deployment_id`.
pub fn clear(store: &dyn CredentialStore, deployment_id: &str) -> Result<(), CredentialError> {
    store.delete(&account::access_token(deployment_id))?;
    store.delete(&account::refresh_token(deployment_id))?;
    Ok(())
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
