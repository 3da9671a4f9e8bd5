//! State shared by every runtime of the process (PROTOCOL.md 1, 9.8 step 3): settings,
//! identity, the audit writer, tokens, the machine-wide limiters and the shutdown signal.

use std::sync::Arc;
use std::sync::Mutex;

use shim_audit::AuditKey;
use shim_auth::CredentialStore;
use shim_exec::CommandLimiter;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::auditor::Auditor;
use crate::config::Settings;
use crate::error::DaemonError;
use crate::handshake::Identity;

/// The OAuth tokens of this deployment (AUDIT_AUTH_CLI.md 3.4-3.5).
pub(crate) struct Tokens {
    store: Box<dyn CredentialStore>,
    deployment: String,
    access: Mutex<Option<String>>,
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
    /// nor a refresh token exists ([H-12]).
    pub(crate) fn load(
        store: Box<dyn CredentialStore>,
        deployment: &str,
    ) -> Result<Tokens, DaemonError> {
        let read = |account: String| -> Result<Option<String>, DaemonError> {
            store
                .get(&account)
                .map(|s| s.map(|s| s.expose().to_owned()).filter(|s| !s.is_empty()))
                .map_err(|e| DaemonError::Auth(format!("cannot read the credential store: {e}")))
        };
        let access = read(shim_auth::account::access_token(deployment))?;
        let refresh = read(shim_auth::account::refresh_token(deployment))?;
        match (&access, &refresh) {
            (None, None) => Err(DaemonError::Auth(format!(
                "not authenticated for {deployment} — run autogpt-shim auth"
            ))),
            (None, Some(_)) => Err(DaemonError::Auth(format!(
                "only a refresh token is stored for {deployment}, and token refresh is not available in this build — run autogpt-shim auth"
            ))),
            _ => Ok(Tokens {
                store,
                deployment: deployment.to_owned(),
                access: Mutex::new(access),
                refresh_lock: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The current access token.
    pub(crate) fn current(&self) -> Option<String> {
        self.access.lock().ok().and_then(|a| a.clone())
    }

    /// After an upgrade answered 401 with `rejected` (3.5): single-flight; if the stored
    /// token already differs, use it. Otherwise the refresh would be needed; without a
    /// refresh token that is terminal, and the refresh itself is not in this build.
    pub(crate) async fn after_unauthorized(&self, rejected: &str) -> Result<String, DaemonError> {
        let _guard = self.refresh_lock.lock().await;
        let account = shim_auth::account::access_token(&self.deployment);
        let stored = self
            .store
            .get(&account)
            .ok()
            .flatten()
            .map(|s| s.expose().to_owned())
            .filter(|s| !s.is_empty());
        if let Some(s) = stored
            && s != rejected
        {
            if let Ok(mut a) = self.access.lock() {
                *a = Some(s.clone());
            }
            return Ok(s);
        }
        let refresh = self
            .store
            .get(&shim_auth::account::refresh_token(&self.deployment))
            .ok()
            .flatten()
            .filter(|s| !s.expose().is_empty());
        Err(DaemonError::Auth(if refresh.is_none() {
            "WebSocket authentication failed and no refresh token is stored — run autogpt-shim auth"
                .to_owned()
        } else {
            "WebSocket authentication failed (401) and token refresh is not available in this build — run autogpt-shim auth".to_owned()
        }))
    }
}

/// The process-wide state.
pub(crate) struct Machine {
    pub(crate) settings: Settings,
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
    pub(crate) cu: crate::cu::CuMachine,
}
