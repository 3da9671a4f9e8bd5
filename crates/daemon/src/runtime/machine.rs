//! State shared by every runtime of the process (PROTOCOL.md 1, 9.8 step 3): settings,
//! identity, the audit writer, tokens, the machine-wide limiters and the shutdown signal.

use std::sync::Arc;
use std::sync::Mutex;

use shim_audit::AuditKey;
use shim_auth::CredentialStore;
use shim_auth::Secret;
use shim_auth::oauth::OAuthClient;
use shim_auth::oauth::RefreshError;
use shim_exec::CommandLimiter;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::error::DaemonError;
use crate::runtime::auditor::Auditor;
use crate::runtime::handshake::Identity;

/// How an attempt to get a usable access token after a 401 failed (3.5 [H-13]).
#[derive(Debug)]
pub(crate) enum RefreshFailure {
    /// Log in again: exit 77.
    Terminal(DaemonError),
    /// Network, timeout, 5xx: this connection attempt failed; back off and retry (the
    /// reason is logged where it happened, and shown by `status`), with the kind of
    /// trouble it was.
    Transient(String, shim_auth::net::Trouble),
}

/// The message of 3.5 for a terminal refresh failure.
const REFRESH_FAILED: &str = "WebSocket authentication failed and the single token refresh failed";

/// The OAuth tokens of this deployment (AUDIT_AUTH_CLI.md 3.4-3.5) and the process-wide
/// refresh lock every connection (control and children) shares.
pub(crate) struct Tokens {
    /// Shared with blocking tasks: every store call may block (Argon2 for the encrypted
    /// file, D-Bus for the keychain), so none runs on an async worker.
    store: Arc<dyn CredentialStore>,
    deployment: String,
    oauth: OAuthClient,
    access: Mutex<Option<Secret>>,
    refresh_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("deployment", &self.deployment)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Reads the stored tokens of `deployment`. Fails with exit 77 when neither an access
    /// nor a refresh token exists ([H-12]). With only a refresh token, the first connection
    /// refreshes before its first upgrade.
    pub(crate) fn load(
        store: Box<dyn CredentialStore>,
        deployment: &str,
        oauth: OAuthClient,
    ) -> Result<Tokens, DaemonError> {
        let t = shim_auth::tokens::load(store.as_ref(), deployment)
            .map_err(|e| DaemonError::Auth(format!("cannot read the credential store: {e}")))?;
        let nonempty = |s: Option<Secret>| s.filter(|s| !s.expose().is_empty());
        let access = nonempty(t.access);
        let refresh = nonempty(t.refresh);
        if access.is_none() && refresh.is_none() {
            return Err(DaemonError::Auth(format!(
                "not authenticated for {deployment} — run autogpt-shim auth"
            )));
        }
        Ok(Tokens {
            store: Arc::from(store),
            deployment: deployment.to_owned(),
            oauth,
            access: Mutex::new(access),
            refresh_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The current access token.
    pub(crate) fn current(&self) -> Option<Secret> {
        self.access.lock().ok().and_then(|a| a.clone())
    }

    async fn stored(&self, account: String) -> Result<Option<Secret>, RefreshFailure> {
        let store = self.store.clone();
        let got = tokio::task::spawn_blocking(move || store.get(&account))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        got.map(|s| s.filter(|s| !s.expose().is_empty()))
            .map_err(|e| {
                RefreshFailure::Terminal(DaemonError::Auth(format!(
                    "cannot read the credential store: {e}"
                )))
            })
    }

    /// After an upgrade answered 401 with `rejected` (`None`: there was no access token to
    /// send) (3.5): single-flight across the process; if the stored access token already
    /// differs from the rejected one, another connection refreshed, so it is used without a
    /// token request. Otherwise one refresh: the rotated refresh token (if any) is stored
    /// first, then the access token ([H-11]). Returns the token to retry with and whether a
    /// token request was made (the caller writes `TOKEN_REFRESHED`).
    pub(crate) async fn after_unauthorized(
        &self,
        rejected: Option<&Secret>,
    ) -> Result<(Secret, bool), RefreshFailure> {
        let _guard = self.refresh_lock.lock().await;
        let access_account = shim_auth::account::access_token(&self.deployment);
        if let Some(s) = self.stored(access_account).await?
            && rejected.is_none_or(|r| r.expose() != s.expose())
        {
            if let Ok(mut a) = self.access.lock() {
                *a = Some(s.clone());
            }
            return Ok((s, false));
        }
        let Some(refresh) = self
            .stored(shim_auth::account::refresh_token(&self.deployment))
            .await?
        else {
            return Err(RefreshFailure::Terminal(DaemonError::Auth(format!(
                "{REFRESH_FAILED}: no refresh token is stored — run autogpt-shim auth"
            ))));
        };
        let new = match self.oauth.refresh(&refresh).await {
            Ok(t) => t,
            Err(RefreshError::Terminal(why)) => {
                tracing::warn!(reason = %why, "token refresh refused");
                return Err(RefreshFailure::Terminal(DaemonError::Auth(format!(
                    "{REFRESH_FAILED} ({why}) — run autogpt-shim auth"
                ))));
            }
            Err(RefreshError::Transient { why, trouble }) => {
                tracing::warn!(reason = %why, "token refresh failed; will retry");
                return Err(RefreshFailure::Transient(why, trouble));
            }
        };
        let pair = shim_auth::tokens::Tokens {
            access: Some(new.access.clone()),
            refresh: new.refresh.clone(),
        };
        let (store, deployment) = (self.store.clone(), self.deployment.clone());
        tokio::task::spawn_blocking(move || {
            shim_auth::tokens::save(store.as_ref(), &deployment, &pair)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| {
            RefreshFailure::Terminal(DaemonError::Auth(format!(
                "cannot store the refreshed tokens: {e}"
            )))
        })?;
        if let Ok(mut a) = self.access.lock() {
            *a = Some(new.access.clone());
        }
        tracing::info!(rotated = new.refresh.is_some(), "access token refreshed");
        Ok((new.access, true))
    }
}

/// The process-wide state.
pub(crate) struct Machine {
    pub(crate) settings: Settings,
    /// The trust store and proxy rules of every connection to the platform.
    pub(crate) net: Arc<shim_auth::net::Net>,
    /// Bumped on a wake-up or a local address change (runtime/netwatch.rs).
    pub(crate) net_changed: tokio::sync::watch::Sender<u64>,
    pub(crate) identity: Identity,
    pub(crate) audit: Auditor,
    pub(crate) audit_key: AuditKey,
    pub(crate) limiter: Arc<CommandLimiter>,
    pub(crate) tokens: Tokens,
    /// Cancelled on SIGINT/SIGTERM or when the process must stop.
    pub(crate) shutdown: CancellationToken,
    /// The machine-wide work semaphore (10.3), recreated at each control handshake.
    pub(crate) work_sem: Mutex<Option<Arc<Semaphore>>>,
    /// Computer use: the machine-wide lock, rate window and backend.
    pub(crate) cu: Arc<crate::runtime::cu::CuMachine>,
    /// The command policy (`command_policy_file`; allow-all without one).
    pub(crate) policy: Arc<crate::policy::amend::SharedPolicy>,
    /// Commands waiting for the local user's answer.
    pub(crate) approvals: Arc<crate::runtime::approvals::Approvals>,
    /// Set by `autogpt-shim pause`: new operations are refused until `resume`.
    pub(crate) paused: std::sync::atomic::AtomicBool,
    /// Bumped by `autogpt-shim kill`: every command running then is ended with its tree.
    pub(crate) kill: tokio::sync::watch::Sender<u64>,
    /// The local-model route: its HTTP client and single-flight slot.
    pub(crate) llm: Arc<crate::runtime::llm::LlmMachine>,
    /// Hardware: what is advertised and served.
    pub(crate) hw: Arc<crate::runtime::hw::HwMachine>,
    /// What the runtimes report for `status` and the console.
    pub(crate) status: Arc<crate::runtime::board::Board>,
}
