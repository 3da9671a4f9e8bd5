//! OpenID Connect issuer mode: discovery (`/.well-known/openid-configuration` and the JWKS)
//! and ID-token verification (signature, issuer, audience, expiry, nonce) through the
//! `openidconnect` crate.

use openidconnect::AdditionalProviderMetadata;
use openidconnect::ClientId;
use openidconnect::IssuerUrl;
use openidconnect::Nonce;
use openidconnect::ProviderMetadata;
use openidconnect::core::CoreAuthDisplay;
use openidconnect::core::CoreClaimName;
use openidconnect::core::CoreClaimType;
use openidconnect::core::CoreClientAuthMethod;
use openidconnect::core::CoreGrantType;
use openidconnect::core::CoreIdToken;
use openidconnect::core::CoreIdTokenVerifier;
use openidconnect::core::CoreJsonWebKey;
use openidconnect::core::CoreJsonWebKeySet;
use openidconnect::core::CoreJweContentEncryptionAlgorithm;
use openidconnect::core::CoreJweKeyManagementAlgorithm;
use openidconnect::core::CoreResponseMode;
use openidconnect::core::CoreResponseType;
use openidconnect::core::CoreSubjectIdentifierType;

use crate::Secret;
use crate::net::error_chain;
use crate::oauth::OAuthError;

/// `revocation_endpoint` (RFC 8414), which the core metadata type does not carry.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub(crate) struct RevocationMetadata {
    revocation_endpoint: Option<String>,
}

impl AdditionalProviderMetadata for RevocationMetadata {}

type Metadata = ProviderMetadata<
    RevocationMetadata,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// What discovery found.
pub(crate) struct Discovered {
    pub(crate) authorize: url::Url,
    pub(crate) token: url::Url,
    pub(crate) revoke: Option<url::Url>,
    pub(crate) verifier: IdVerifier,
}

/// The keys and names an ID token is checked against.
#[derive(Clone)]
pub(crate) struct IdVerifier {
    issuer: IssuerUrl,
    jwks: CoreJsonWebKeySet,
    client_id: String,
}

impl std::fmt::Debug for IdVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdVerifier")
            .field("issuer", &self.issuer.as_str())
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

fn bad(issuer: &str, why: impl std::fmt::Display) -> OAuthError {
    OAuthError::Discovery(format!("{issuer}: {why}"))
}

/// Fetches and checks the discovery document and the JWKS of `issuer`.
pub(crate) async fn discover(
    issuer: &str,
    client_id: &str,
    http: &reqwest::Client,
) -> Result<Discovered, OAuthError> {
    let issuer_url = IssuerUrl::new(issuer.to_owned()).map_err(|e| bad(issuer, e))?;
    let meta = Metadata::discover_async(issuer_url.clone(), http)
        .await
        .map_err(|e| bad(issuer, error_chain(&e)))?;
    let authorize = url::Url::parse(meta.authorization_endpoint().as_str())
        .map_err(|e| bad(issuer, format!("authorization_endpoint: {e}")))?;
    let token = meta
        .token_endpoint()
        .ok_or_else(|| bad(issuer, "the discovery document names no token_endpoint"))?;
    let token =
        url::Url::parse(token.as_str()).map_err(|e| bad(issuer, format!("token_endpoint: {e}")))?;
    let revoke = match &meta.additional_metadata().revocation_endpoint {
        Some(r) => {
            Some(url::Url::parse(r).map_err(|e| bad(issuer, format!("revocation_endpoint: {e}")))?)
        }
        None => None,
    };
    Ok(Discovered {
        authorize,
        token,
        revoke,
        verifier: IdVerifier {
            issuer: issuer_url,
            jwks: meta.jwks().clone(),
            client_id: client_id.to_owned(),
        },
    })
}

impl IdVerifier {
    /// Verifies the signature, issuer, audience, expiry and nonce of `id_token`.
    pub(crate) fn verify(&self, id_token: &str, nonce: &Secret) -> Result<(), OAuthError> {
        let token: CoreIdToken = id_token
            .parse()
            .map_err(|e| OAuthError::IdToken(format!("not a JWT: {e}")))?;
        let verifier = CoreIdTokenVerifier::new_public_client(
            ClientId::new(self.client_id.clone()),
            self.issuer.clone(),
            self.jwks.clone(),
        );
        let nonce = Nonce::new(nonce.expose().to_owned());
        token
            .claims(&verifier, &nonce)
            .map(|_| ())
            .map_err(|e| OAuthError::IdToken(error_chain(&e)))
    }
}
