//! `auth` (AUDIT_AUTH_CLI.md 3.3, 5.3.1) and `revoke` (3.6, 5.3.4). The OAuth work itself is
//! `shim_auth::oauth`; this module loads the configuration, opens the credential store, prints
//! and maps failures to exit codes. Nothing secret is printed or logged.

use std::io::Write;

use shim_auth::Backend;
use shim_auth::CredentialStore;
use shim_auth::oauth::LoginOptions;
use shim_auth::oauth::OAuthClient;
use shim_auth::oauth::TokenKind;
use shim_auth::tokens::Tokens;

use crate::config;
use crate::config::ConfigSources;
use crate::config::Settings;
use crate::error::EXIT_CONFIG;
use crate::error::EXIT_FAIL;
use crate::error::EXIT_OK;

/// What `auth` and `revoke` share: settings, the store and the OAuth client.
struct Ready {
    settings: Settings,
    store: Box<dyn CredentialStore>,
    client: OAuthClient,
    rt: tokio::runtime::Runtime,
}

/// Loads everything or prints why not (`Invalid configuration`, exit 78; anything else with
/// `prefix`, exit 1).
fn prepare(sources: &ConfigSources, prefix: &str) -> Result<Ready, u8> {
    let mut stderr = std::io::stderr();
    let settings = config::load(sources).map_err(|e| {
        let _ = writeln!(stderr, "Invalid configuration: {e}");
        EXIT_CONFIG
    })?;
    let store = shim_auth::open_store_from_env().map_err(|e| {
        let _ = writeln!(stderr, "{prefix}: credential store: {e}");
        EXIT_FAIL
    })?;
    let net = shim_auth::net::Net::new(&settings.net_options()).map_err(|e| {
        let _ = writeln!(stderr, "{prefix}: {e}");
        EXIT_CONFIG
    })?;
    let client = OAuthClient::new(&settings.oauth_client_id, settings.oauth_source())
        .map_err(|e| {
            let _ = writeln!(stderr, "{prefix}: {e}");
            EXIT_FAIL
        })?
        .with_net(std::sync::Arc::new(net));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            let _ = writeln!(stderr, "{prefix}: cannot start the async runtime: {e}");
            EXIT_FAIL
        })?;
    Ok(Ready {
        settings,
        store,
        client,
        rt,
    })
}

fn where_stored(store: &dyn CredentialStore) -> String {
    match store.backend() {
        Backend::Keychain => "the OS credential store".to_owned(),
        Backend::File => match shim_auth::fallback_dir() {
            Some(d) => format!(
                "the encrypted credential file {}",
                d.join(shim_auth::FILE_NAME).display()
            ),
            None => "the encrypted credential file".to_owned(),
        },
        Backend::Memory => "memory".to_owned(),
    }
}

/// `autogpt-shim auth`: exit 0 on success, 1 on any failure of steps 3-8, 78 on invalid
/// configuration.
pub(crate) fn auth(sources: &ConfigSources, open_browser: bool) -> u8 {
    const FAILED: &str = "Authentication failed";
    let ready = match prepare(sources, FAILED) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let Ready {
        settings,
        store,
        client,
        rt,
    } = ready;
    let deployment = settings.deployment_id();
    let opts = LoginOptions {
        redirect_port: settings.oauth_redirect_port,
        timeout: settings.tuning.oauth_callback_timeout,
        open_browser,
    };
    let mut out = std::io::stdout();
    let result = rt.block_on(async { client.login(&opts, &mut out).await });
    let mut stderr = std::io::stderr();
    let tokens = match result {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(stderr, "{FAILED}: {e}");
            return EXIT_FAIL;
        }
    };
    let pair = Tokens {
        access: Some(tokens.access),
        refresh: tokens.refresh,
    };
    if let Err(e) = shim_auth::tokens::save(store.as_ref(), &deployment, &pair) {
        let _ = writeln!(stderr, "{FAILED}: cannot store the tokens: {e}");
        return EXIT_FAIL;
    }
    let _ = writeln!(
        out,
        "Authentication succeeded for {deployment}; tokens stored in {}.",
        where_stored(store.as_ref())
    );
    EXIT_OK
}

/// `autogpt-shim revoke`: both tokens revoked (access, then refresh), then deleted; kept on
/// any failure.
pub(crate) fn revoke(sources: &ConfigSources) -> u8 {
    const FAILED: &str = "Revocation did not complete";
    let ready = match prepare(sources, FAILED) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let Ready {
        settings,
        store,
        client,
        rt,
    } = ready;
    let deployment = settings.deployment_id();
    let mut stderr = std::io::stderr();
    let mut out = std::io::stdout();
    let kept = "the local credentials were kept so that `autogpt-shim revoke` can be retried";
    let tokens = match shim_auth::tokens::load(store.as_ref(), &deployment) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(
                stderr,
                "{FAILED}: cannot read the stored tokens: {e}; {kept}"
            );
            return EXIT_FAIL;
        }
    };
    if tokens.is_empty() {
        let _ = writeln!(
            out,
            "Nothing to revoke: no tokens are stored for {deployment}."
        );
        return EXIT_OK;
    }
    let result = rt.block_on(async {
        for (kind, token) in [
            (TokenKind::Access, &tokens.access),
            (TokenKind::Refresh, &tokens.refresh),
        ] {
            if let Some(t) = token {
                client.revoke(t, kind).await?;
            }
        }
        Ok::<(), shim_auth::oauth::OAuthError>(())
    });
    if let Err(e) = result {
        let _ = writeln!(stderr, "{FAILED}: {e}; {kept}.");
        return EXIT_FAIL;
    }
    if let Err(e) = shim_auth::tokens::clear(store.as_ref(), &deployment) {
        let _ = writeln!(
            stderr,
            "The tokens were revoked, but deleting them locally failed: {e}"
        );
        return EXIT_FAIL;
    }
    let _ = writeln!(
        out,
        "Tokens for {deployment} were revoked and deleted. Run `autogpt-shim auth` to authenticate again."
    );
    EXIT_OK
}
