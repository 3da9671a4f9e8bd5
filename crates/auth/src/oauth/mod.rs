//! OAuth 2.0 authorization code + PKCE (S256) as a public client, with a loopback redirect
//! (AUDIT_AUTH_CLI.md 3.1-3.7): [`OAuthClient::login`] (3.3), [`OAuthClient::refresh`] (3.5)
//! and [`OAuthClient::revoke`] (3.6).
//!
//! Endpoints come from one of two places ([`EndpointSource`]):
//! * the platform's fixed endpoints derived from `platform_url` (3.2), the default;
//! * an OpenID Connect issuer a self-hosted deployment names: discovery supplies the
//!   endpoints and the JWKS, `openid offline_access USE_TOOLS` is requested with a `nonce` and
//!   `prompt=consent`, and the ID token of the code exchange is verified.
//!
//! Token requests are form bodies with the fields in the order of 3.3 step 7 and 3.5 in both
//! modes. Revocation is the platform's JSON body in fixed mode and the RFC 7009 form body in
//! issuer mode. Nothing here prints, logs or puts in an error a token, a code or a verifier.

mod callback;
mod oidc;
mod pkce;

use std::io::Write;
use std::time::Duration;

use zeroize::Zeroizing;

pub use callback::PORT_RANGE_LEN;
pub use callback::decide as decide_callback;

use crate::Secret;
use crate::oauth::callback::Callback;
use crate::oauth::callback::printable;

/// How long `auth` waits for the callback (3.3 step 6).
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);
/// The scope of the platform's fixed endpoints (3.1).
pub const SCOPE: &str = "USE_TOOLS";
/// The scope asked of an OpenID Connect issuer: an ID token, a refresh token, the tools.
pub const OIDC_SCOPE: &str = "openid offline_access USE_TOOLS";
/// Per-request timeout of token, revocation and discovery requests.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a login, refresh or revocation failed. Messages never carry secret material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// No port of the range could be bound on 127.0.0.1.
    #[error("Could not bind OAuth callback on ports {first}-{last}")]
    PortsBusy {
        /// First port tried.
        first: u16,
        /// Last port tried.
        last: u16,
    },
    /// The callback's `state` was missing or wrong.
    #[error("OAuth callback state did not match")]
    StateMismatch,
    /// The callback carried an `error` parameter (its value, made printable).
    #[error("{0}")]
    Denied(String),
    /// The callback had neither `error` nor a non-empty `code`.
    #[error("No authorization code received")]
    NoCode,
    /// The deadline passed without a callback.
    #[error("OAuth callback timed out")]
    Timeout,
    /// The token endpoint refused or answered something unusable.
    #[error("token request failed: {0}")]
    Token(String),
    /// The token or revocation endpoint could not be reached, and what kind of trouble
    /// stopped it.
    #[error("cannot reach {0}")]
    Transport(String, crate::net::Trouble),
    /// OpenID Connect discovery failed (unreachable, malformed, issuer mismatch, no keys).
    #[error("OpenID Connect discovery failed: {0}")]
    Discovery(String),
    /// The ID token did not verify.
    #[error("the ID token did not verify: {0}")]
    IdToken(String),
    /// A revocation request was refused.
    #[error("revocation failed: {0}")]
    Revoke(String),
    /// A local failure (random generator, HTTP client set-up).
    #[error("{0}")]
    Internal(String),
}

/// How a refresh failed (3.5 [H-13]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    /// The refresh token is not accepted (400/401, `invalid_grant`, an unusable answer): the
    /// user has to log in again.
    #[error("{0}")]
    Terminal(String),
    /// Network error, timeout, 5xx, 408 or 429, discovery unreachable: try again later.
    #[error("{why}")]
    Transient {
        /// What failed, in words.
        why: String,
        /// What kind of trouble it was (the platform answered, but not yet usefully:
        /// [`Trouble::Unreachable`](crate::net::Trouble::Unreachable)).
        trouble: crate::net::Trouble,
    },
}

/// Where the endpoints come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointSource {
    /// The platform's fixed endpoints (3.2).
    Fixed {
        /// The HTTP base of 3.2 (from `platform_url`).
        http_base: String,
        /// `platform_oauth_url`, the base of `/authorize` only.
        oauth_base: Option<String>,
    },
    /// An OpenID Connect issuer (`oauth_issuer` / `AUTOGPT_SHIM_OAUTH_ISSUER`).
    Issuer(String),
}

/// The resolved endpoints.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Authorization endpoint.
    pub authorize: url::Url,
    /// Token endpoint.
    pub token: url::Url,
    /// Revocation endpoint (issuer mode: `None` if discovery names none).
    pub revoke: Option<url::Url>,
    oidc: Option<oidc::IdVerifier>,
}

fn parse_url(what: &str, s: &str) -> Result<url::Url, OAuthError> {
    url::Url::parse(s).map_err(|e| OAuthError::Internal(format!("bad {what} URL {s:?}: {e}")))
}

impl Endpoints {
    /// The fixed endpoints of 3.2: authorize from `platform_oauth_url` (else the HTTP base +
    /// `/auth`) + `/authorize`; token and revocation always from the HTTP base.
    pub fn fixed(http_base: &str, oauth_base: Option<&str>) -> Result<Endpoints, OAuthError> {
        let base = http_base.trim_end_matches('/');
        let auth_base = match oauth_base.filter(|b| !b.is_empty()) {
            Some(b) => b.trim_end_matches('/').to_owned(),
            None => format!("{base}/auth"),
        };
        Ok(Endpoints {
            authorize: parse_url("authorization", &format!("{auth_base}/authorize"))?,
            token: parse_url("token", &format!("{base}/api/oauth/token"))?,
            revoke: Some(parse_url(
                "revocation",
                &format!("{base}/api/oauth/revoke"),
            )?),
            oidc: None,
        })
    }

    /// Whether these came from OpenID Connect discovery.
    pub fn is_oidc(&self) -> bool {
        self.oidc.is_some()
    }
}

/// The tokens a token endpoint issued.
#[derive(Debug, Clone)]
pub struct TokenSet {
    /// The access token.
    pub access: Secret,
    /// The refresh token (absent in a refresh response that does not rotate it).
    pub refresh: Option<Secret>,
}

/// Options of [`OAuthClient::login`].
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// First port of the 12-port callback range (`oauth_redirect_port`).
    pub redirect_port: u16,
    /// The callback deadline (300 s; shorter in tests).
    pub timeout: Duration,
    /// Try to open the default browser (`--no-browser` turns this off).
    pub open_browser: bool,
}

/// Which token a revocation names (`token_type_hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// `access_token`.
    Access,
    /// `refresh_token`.
    Refresh,
}

impl TokenKind {
    /// The hint value.
    pub fn hint(self) -> &'static str {
        match self {
            TokenKind::Access => "access_token",
            TokenKind::Refresh => "refresh_token",
        }
    }
}

/// The OAuth client of one deployment. Endpoints are resolved once, on first use.
pub struct OAuthClient {
    /// Built on first use: a running daemon needs it only to refresh its token (hourly),
    /// and building it (the TLS set-up) at start kept about 0.4 MiB of code resident in
    /// an idle daemon (issue 17).
    http: std::sync::OnceLock<reqwest::Client>,
    /// The trust store and proxy rules (`shim_auth::net`); from the environment alone
    /// unless [`OAuthClient::with_net`] gave the daemon's.
    net: Option<std::sync::Arc<crate::net::Net>>,
    client_id: String,
    source: EndpointSource,
    endpoints: tokio::sync::OnceCell<Endpoints>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    refresh_token: Option<String>,
    id_token: Option<String>,
}

#[derive(serde::Deserialize)]
struct ErrorResponse {
    error: Option<String>,
    error_description: Option<String>,
}

/// "HTTP 400 (invalid_grant: description)": the status and the OAuth error fields, never
/// anything else of the body.
fn describe(status: u16, body: &[u8]) -> String {
    let mut s = format!("HTTP {status}");
    if let Ok(e) = serde_json::from_slice::<ErrorResponse>(body)
        && let Some(err) = e.error
    {
        s.push_str(&format!(" ({}", printable(&err)));
        if let Some(d) = e.error_description {
            s.push_str(&format!(": {}", printable(&d)));
        }
        s.push(')');
    }
    s
}

fn form(pairs: &[(&str, &str)]) -> Zeroizing<String> {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        ser.append_pair(k, v);
    }
    Zeroizing::new(ser.finish())
}

/// A parsed successful token response; `None` fields when absent or empty.
fn parse_tokens(body: &[u8]) -> Option<(Option<Secret>, Option<Secret>, Option<String>)> {
    let t: TokenResponse = serde_json::from_slice(body).ok()?;
    let secret = |v: Option<String>| v.filter(|s| !s.is_empty()).map(Secret::new);
    Some((secret(t.access_token), secret(t.refresh_token), t.id_token))
}

impl OAuthClient {
    /// A client for `client_id` with endpoints from `source`. The HTTP client never follows
    /// redirects; it is built on first use, so an error setting it up (the TLS back end)
    /// comes from the first request, not from here.
    pub fn new(client_id: &str, source: EndpointSource) -> Result<OAuthClient, OAuthError> {
        Ok(OAuthClient {
            http: std::sync::OnceLock::new(),
            net: None,
            client_id: client_id.to_owned(),
            source,
            endpoints: tokio::sync::OnceCell::new(),
        })
    }

    /// Uses `net` (the configured trust store and proxy) for every request.
    pub fn with_net(mut self, net: std::sync::Arc<crate::net::Net>) -> OAuthClient {
        self.net = Some(net);
        self
    }

    /// The HTTP client, built on first use; it never follows redirects.
    fn http(&self) -> Result<&reqwest::Client, OAuthError> {
        if let Some(c) = self.http.get() {
            return Ok(c);
        }
        let net = match &self.net {
            Some(n) => n.clone(),
            None => std::sync::Arc::new(
                crate::net::Net::new(&crate::net::NetOptions::default())
                    .map_err(|e| OAuthError::Internal(e.to_string()))?,
            ),
        };
        let built = net
            .http_client()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(HTTP_TIMEOUT)
            .user_agent(concat!("autogpt-shim/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OAuthError::Internal(format!("cannot set up the HTTP client: {e}")))?;
        // A racing first use may have set it meanwhile: either client will do.
        Ok(self.http.get_or_init(|| built))
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The endpoints: derived (fixed mode) or discovered (issuer mode) on first use.
    pub async fn endpoints(&self) -> Result<&Endpoints, OAuthError> {
        self.endpoints
            .get_or_try_init(|| async {
                match &self.source {
                    EndpointSource::Fixed {
                        http_base,
                        oauth_base,
                    } => Endpoints::fixed(http_base, oauth_base.as_deref()),
                    EndpointSource::Issuer(issuer) => {
                        let d = oidc::discover(issuer, &self.client_id, self.http()?).await?;
                        Ok(Endpoints {
                            authorize: d.authorize,
                            token: d.token,
                            revoke: d.revoke,
                            oidc: Some(d.verifier),
                        })
                    }
                }
            })
            .await
    }

    /// POSTs `body`; returns the status and the body (kept in zeroised memory).
    async fn post(
        &self,
        url: &url::Url,
        content_type: &str,
        body: Zeroizing<String>,
    ) -> Result<(u16, Zeroizing<Vec<u8>>), OAuthError> {
        let transport = |e: reqwest::Error| {
            if let Some(u) = crate::net::untrusted_issuer(&e) {
                return OAuthError::Transport(
                    format!("{} ({u})", url.as_str()),
                    crate::net::Trouble::Certificate,
                );
            }
            use crate::net::Trouble;
            let (what, trouble) = if e.is_timeout() {
                ("timed out", Trouble::Unreachable)
            } else if e.is_connect() {
                // The proxy's answer, if a proxy failed (hyper-util's tunnel errors carry no
                // credentials).
                let chain = crate::net::error_chain(&e);
                if chain.contains("proxy authorization required") {
                    (
                        "connection failed: the proxy refused the credentials (407)",
                        Trouble::Proxy,
                    )
                } else if chain.contains("tunnel error") || chain.contains("SOCKS") {
                    (
                        "connection failed: the proxy refused the tunnel",
                        Trouble::Proxy,
                    )
                } else if chain.contains("dns error") {
                    (
                        "connection failed: the name does not resolve",
                        Trouble::NoNetwork,
                    )
                } else {
                    ("connection failed", Trouble::Unreachable)
                }
            } else {
                ("request failed", Trouble::Unreachable)
            };
            OAuthError::Transport(format!("{} ({what})", url.as_str()), trouble)
        };
        let resp = self
            .http()?
            .post(url.clone())
            .header("content-type", content_type)
            .header("accept", "application/json")
            .body(body.as_str().to_owned())
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(transport)?;
        Ok((status, Zeroizing::new(bytes.to_vec())))
    }

    /// `auth` steps 1-7 of 3.3: PKCE and state, the loopback listener, the authorization URL
    /// (printed to `out`, and opened in a browser if asked), the callback, the code exchange
    /// and, in issuer mode, the ID-token check. The caller stores the tokens (step 8).
    pub async fn login(
        &self,
        opts: &LoginOptions,
        out: &mut (dyn Write + Send),
    ) -> Result<TokenSet, OAuthError> {
        let endpoints = self.endpoints().await?;
        let verifier = pkce::verifier()?;
        let challenge = pkce::challenge(&verifier);
        let state = pkce::state()?;
        let nonce = pkce::random_b64(32)?;
        let cb = Callback::bind(opts.redirect_port)?;
        let redirect_uri = format!("http://localhost:{}/callback", cb.port());
        let mut url = endpoints.authorize.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &self.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair(
                    "scope",
                    if endpoints.is_oidc() {
                        OIDC_SCOPE
                    } else {
                        SCOPE
                    },
                )
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", state.expose());
            if endpoints.is_oidc() {
                q.append_pair("nonce", nonce.expose())
                    .append_pair("prompt", "consent");
            }
        }
        if opts.open_browser {
            let _ = writeln!(
                out,
                "Opening your browser to authorize this machine. If it does not open, visit this URL:"
            );
        } else {
            let _ = writeln!(out, "Open this URL in a browser to authorize this machine:");
        }
        let _ = writeln!(out, "{url}");
        let _ = writeln!(
            out,
            "Waiting for the authorization (callback on http://localhost:{}/callback) ...",
            cb.port()
        );
        let _ = out.flush();
        if opts.open_browser
            && let Err(e) = open::that_detached(url.as_str())
        {
            tracing::info!(error = %e, "could not open a browser; use the printed URL");
        }
        let code = cb.wait(&state, opts.timeout).await?;
        let body = form(&[
            ("grant_type", "authorization_code"),
            ("code", code.expose()),
            ("redirect_uri", &redirect_uri),
            ("client_id", &self.client_id),
            ("code_verifier", verifier.expose()),
        ]);
        drop(code);
        let (status, body) = self
            .post(&endpoints.token, "application/x-www-form-urlencoded", body)
            .await?;
        let parsed = if (200..300).contains(&status) {
            parse_tokens(&body)
        } else {
            None
        };
        let Some((Some(access), Some(refresh), id_token)) = parsed else {
            return Err(OAuthError::Token(if (200..300).contains(&status) {
                format!(
                    "HTTP {status}, but the answer is not a JSON object with non-empty access_token and refresh_token"
                )
            } else {
                describe(status, &body)
            }));
        };
        if let Some(v) = &endpoints.oidc {
            let Some(id) = id_token else {
                return Err(OAuthError::IdToken(
                    "the token response has no id_token".into(),
                ));
            };
            v.verify(&id, &nonce)?;
        }
        Ok(TokenSet {
            access,
            refresh: Some(refresh),
        })
    }

    /// The refresh of 3.5: form body `grant_type`, `refresh_token`, `client_id`. Success is 2xx
    /// with a non-empty `access_token`; `refresh` is the rotated token if the answer has one.
    pub async fn refresh(&self, refresh_token: &Secret) -> Result<TokenSet, RefreshError> {
        let endpoints = self.endpoints().await.map_err(|e| match e {
            OAuthError::Transport(_, trouble) => RefreshError::Transient {
                why: e.to_string(),
                trouble,
            },
            OAuthError::Discovery(_) => RefreshError::Transient {
                why: e.to_string(),
                trouble: crate::net::Trouble::Unreachable,
            },
            other => RefreshError::Terminal(other.to_string()),
        })?;
        let body = form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.expose()),
            ("client_id", &self.client_id),
        ]);
        let (status, body) = self
            .post(&endpoints.token, "application/x-www-form-urlencoded", body)
            .await
            .map_err(|e| {
                let trouble = match &e {
                    OAuthError::Transport(_, t) => *t,
                    _ => crate::net::Trouble::Unreachable,
                };
                RefreshError::Transient {
                    why: e.to_string(),
                    trouble,
                }
            })?;
        if (200..300).contains(&status) {
            return match parse_tokens(&body) {
                Some((Some(access), refresh, _)) => Ok(TokenSet { access, refresh }),
                _ => Err(RefreshError::Terminal(format!(
                    "token endpoint answered HTTP {status} without a non-empty access_token"
                ))),
            };
        }
        let why = format!("token endpoint answered {}", describe(status, &body));
        if status >= 500 || status == 408 || status == 429 {
            Err(RefreshError::Transient {
                why,
                trouble: crate::net::Trouble::Unreachable,
            })
        } else {
            Err(RefreshError::Terminal(why))
        }
    }

    /// Revokes one token (3.6 step 2): fixed mode POSTs the platform's JSON body
    /// `{"token", "token_type_hint", "client_id", "client_secret": ""}`; issuer mode the
    /// RFC 7009 form body. Any non-2xx status or transport error is an error.
    pub async fn revoke(&self, token: &Secret, kind: TokenKind) -> Result<(), OAuthError> {
        let endpoints = self.endpoints().await?;
        let Some(url) = &endpoints.revoke else {
            return Err(OAuthError::Revoke(
                "the issuer's discovery document names no revocation_endpoint".into(),
            ));
        };
        let (content_type, body) = if endpoints.is_oidc() {
            (
                "application/x-www-form-urlencoded",
                form(&[
                    ("token", token.expose()),
                    ("token_type_hint", kind.hint()),
                    ("client_id", &self.client_id),
                ]),
            )
        } else {
            let v = serde_json::json!({
                "token": token.expose(),
                "token_type_hint": kind.hint(),
                "client_id": self.client_id,
                "client_secret": "",
            });
            ("application/json", Zeroizing::new(v.to_string()))
        };
        let (status, body) = self.post(url, content_type, body).await?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(OAuthError::Revoke(format!(
                "{} answered {}",
                url.as_str(),
                describe(status, &body)
            )))
        }
    }
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
