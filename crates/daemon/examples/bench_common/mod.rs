//! Set-up shared by the daemon benchmarks (`bench_e2e`, `bench_hw`): not an example itself.

use shim_auth::CredentialStore;
use shim_auth::Secret;

/// Writes what the daemon binary reads at start into `store`: a fresh audit key, and access
/// and refresh tokens for the deployment at `platform_url`.
pub(crate) fn seed_credentials(
    store: &dyn CredentialStore,
    platform_url: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let key = shim_audit::AuditKey::generate()?;
    store.set(
        shim_auth::account::AUDIT_KEY,
        &Secret::new(key.to_hex().as_str()),
    )?;
    let dep = format!("autogpt-local-executor@{platform_url}");
    store.set(
        &shim_auth::account::access_token(&dep),
        &Secret::new("bench-access-token"),
    )?;
    store.set(
        &shim_auth::account::refresh_token(&dep),
        &Secret::new("bench-refresh-token"),
    )?;
    Ok(())
}
