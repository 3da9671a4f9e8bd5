//! Set-up shared by the daemon benchmarks (`bench_e2e`, `bench_hw`, `bench_desktop`): not an
//! example itself.

use std::path::Path;

use shim_auth::CredentialStore;
use shim_auth::EncryptedFileStore;
use shim_auth::KdfParams;
use shim_auth::Secret;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The platform URL the daemons are configured with (nothing listens there: only the
/// WebSocket URL is used, and the deployment id derives from this one).
pub(crate) const PLATFORM_URL: &str = "http://127.0.0.1:9";

/// The passphrase of the benchmarks' encrypted credential files.
const PASSPHRASE: &str = "bench-passphrase";

/// Writes what the daemon binary reads at start into `store`: a fresh audit key, and access
/// and refresh tokens for the deployment at [`PLATFORM_URL`].
pub(crate) fn seed_credentials(store: &dyn CredentialStore) -> Res<()> {
    let key = shim_audit::AuditKey::generate()?;
    store.set(
        shim_auth::account::AUDIT_KEY,
        &Secret::new(key.to_hex().as_str()),
    )?;
    let dep = format!("autogpt-local-executor@{PLATFORM_URL}");
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

/// An encrypted credential file in `dir`, written with Argon2 `params` and seeded.
pub(crate) fn seed_file(dir: &Path, params: KdfParams) -> Res<()> {
    std::fs::create_dir_all(dir)?;
    let store = EncryptedFileStore::with_params(dir, Secret::new(PASSPHRASE), params)?;
    seed_credentials(&store)
}

/// Points `cmd` at the credential file [`seed_file`] wrote in `dir`.
pub(crate) fn use_file(cmd: &mut tokio::process::Command, dir: &Path) {
    cmd.env("AUTOGPT_SHIM_CREDENTIAL_STORE", "file")
        .env("AUTOGPT_SHIM_FALLBACK_DIR", dir)
        .env("AUTOGPT_SHIM_KEYCHAIN_PASSPHRASE", PASSPHRASE);
}

/// Gives `cmd` nothing of the bench's environment but `PATH`: a throw-away home in `dir`,
/// the loopback platform at `ws_base`, its audit log at `audit_log` and `machine_id`.
pub(crate) fn daemon_env(
    cmd: &mut tokio::process::Command,
    dir: &Path,
    ws_base: &str,
    audit_log: &Path,
    machine_id: &str,
) {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("AUTOGPT_SHIM_PLATFORM_URL", PLATFORM_URL)
        .env("AUTOGPT_SHIM_PLATFORM_WS_URL", ws_base)
        .env("AUTOGPT_SHIM_AUDIT_LOG_PATH", audit_log)
        .env("AUTOGPT_SHIM_MACHINE_ID", machine_id);
}
