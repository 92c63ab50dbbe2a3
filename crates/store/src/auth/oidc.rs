//! Sign-in with an OpenID Connect provider: the authorization-code flow with PKCE (S256),
//! `state` and `nonce`, and the ID token checked against the keys the issuer publishes.
//! The provider is found by discovery from its issuer URL, on first use (so the app starts
//! while the provider is down, and says so on the sign-in that needs it).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType,
    CoreGenderClaim, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreProviderMetadata, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AccessTokenHash, AdditionalClaims, AsyncHttpClient, AuthorizationCode, ClaimsVerificationError,
    Client, ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, HttpRequest, HttpResponse, IdTokenFields, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError,
    Scope, SignatureVerificationError, StandardErrorResponse, StandardTokenResponse, TokenResponse,
    UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::external::Identity;
use crate::core::sso::groups_in;
use crate::error::Error;

/// Where the provider sends the browser back to (registered at the provider as
/// PUBLIC_URL + this path).
pub const CALLBACK_PATH: &str = "/auth/oidc/callback";
/// The sign-in page's "Sign in with …" form posts here.
pub const START_PATH: &str = "/auth/oidc/start";
/// A sign-in started longer ago than this is refused at the callback.
pub const FLOW_MAX_AGE_SECS: i64 = 600;
/// The largest answer read from the provider.
const MAX_BODY: usize = 1 << 20;

/// The operator's settings for one provider.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    /// The claim that lists groups (a dotted path reaches into objects).
    pub groups_claim: String,
    /// The provider's name on the button.
    pub name: String,
}

impl OidcSettings {
    /// `scheme://host[:port]` of the issuer: where the sign-in form is allowed to lead.
    pub fn issuer_origin(&self) -> Option<String> {
        let url = openidconnect::url::Url::parse(&self.issuer).ok()?;
        let origin = url.origin();
        origin.is_tuple().then(|| origin.ascii_serialization())
    }
}

/// Claims beyond the standard ones (the groups claim among them).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    pub claims: serde_json::Map<String, Value>,
}

impl AdditionalClaims for OtherClaims {}

type IdFields = IdTokenFields<
    OtherClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type Tokens = StandardTokenResponse<IdFields, CoreTokenType>;
type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The app's HTTP client for talking to the provider: no redirects followed (a redirect
/// could lead a server-side request anywhere), bounded time and answer size.
#[derive(Clone)]
pub struct Http(reqwest::Client);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

/// An error with its causes, for messages ("… : connection refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

impl Http {
    pub fn new() -> Http {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap_or_default();
        Http(client)
    }
}

impl Default for Http {
    fn default() -> Self {
        Http::new()
    }
}

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)
                .map_err(|e| HttpError(format!("a request to the provider: {}", chain(&e))))?;
            let url = request.url().clone();
            let mut response = self
                .0
                .execute(request)
                .await
                .map_err(|e| HttpError(format!("{url}: {}", chain(&e))))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| HttpError(format!("{url}: {}", chain(&e))))?
            {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(HttpError(format!(
                        "{url}: the answer is larger than {MAX_BODY} bytes"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            let mut out = HttpResponse::new(body);
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok(out)
        })
    }
}

/// What the session keeps between the start of a sign-in and the provider's callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flow {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// Where to go after signing in (already a safe same-origin path).
    pub next: String,
    pub redirect_uri: String,
    pub started_at: i64,
}

/// The provider, as configured and (once reached) as discovered.
pub struct Oidc {
    pub settings: OidcSettings,
    http: Http,
    /// The discovery document with the issuer's keys, once read.
    metadata: tokio::sync::RwLock<Option<Arc<CoreProviderMetadata>>>,
}

/// Why a callback was refused: each says what failed; the user sees it on a 4xx page.
#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Upstream(String),
}

impl From<CallbackError> for Error {
    fn from(e: CallbackError) -> Error {
        match e {
            CallbackError::Refused(m) => Error::BadRequest(format!("sign-in failed: {m}")),
            CallbackError::Upstream(m) => Error::BadGateway(format!("sign-in failed: {m}")),
        }
    }
}

fn refused(m: impl Into<String>) -> CallbackError {
    CallbackError::Refused(m.into())
}

impl Oidc {
    pub fn new(settings: OidcSettings) -> Oidc {
        Oidc {
            settings,
            http: Http::new(),
            metadata: tokio::sync::RwLock::new(None),
        }
    }

    /// The provider's discovery document and keys, read once and kept (a failure is
    /// tried again at the next sign-in).
    pub async fn metadata(&self) -> Result<Arc<CoreProviderMetadata>, Error> {
        if let Some(meta) = self.metadata.read().await.as_ref() {
            return Ok(meta.clone());
        }
        self.discover().await
    }

    /// Reads the discovery document and the keys afresh (at first use, and when an ID
    /// token is signed by a key not seen before: the provider rotated its keys).
    pub async fn discover(&self) -> Result<Arc<CoreProviderMetadata>, Error> {
        let issuer = IssuerUrl::new(self.settings.issuer.clone()).map_err(|e| {
            Error::BadGateway(format!(
                "the OpenID issuer {:?} is not a URL: {e}",
                self.settings.issuer
            ))
        })?;
        let meta = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| {
                Error::BadGateway(format!(
                    "{} cannot be reached to sign in (discovery at \
                     {}/.well-known/openid-configuration: {}); try again shortly or ask an admin",
                    self.settings.name,
                    self.settings.issuer.trim_end_matches('/'),
                    chain(&e)
                ))
            })?;
        tracing::info!(issuer = %self.settings.issuer, "OpenID provider discovered");
        let meta = Arc::new(meta);
        *self.metadata.write().await = Some(meta.clone());
        Ok(meta)
    }

    fn client(&self, meta: &CoreProviderMetadata, redirect_uri: &str) -> Result<OidcClient, Error> {
        let redirect = RedirectUrl::new(redirect_uri.to_string())
            .map_err(|e| Error::Internal(anyhow::anyhow!("redirect URI {redirect_uri:?}: {e}")))?;
        Ok(OidcClient::from_provider_metadata(
            meta.clone(),
            ClientId::new(self.settings.client_id.clone()),
            self.settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// The provider's authorization URL for a new sign-in, and what the session keeps.
    pub async fn start(&self, redirect_uri: String, next: String) -> Result<(String, Flow), Error> {
        let meta = self.metadata().await?;
        let client = self.client(&meta, &redirect_uri)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in self.settings.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok((
            url.to_string(),
            Flow {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                next,
                redirect_uri,
                started_at: chrono::Utc::now().timestamp(),
            },
        ))
    }

    /// Exchanges the code (with the PKCE verifier), checks the ID token (signature by the
    /// issuer's keys, issuer, audience, expiry, nonce, access-token hash) and says who it is.
    pub async fn finish(&self, flow: &Flow, code: &str) -> Result<Identity, CallbackError> {
        let meta = self
            .metadata()
            .await
            .map_err(|e| CallbackError::Upstream(e.to_string()))?;
        let client = self
            .client(&meta, &flow.redirect_uri)
            .map_err(|e| CallbackError::Upstream(e.to_string()))?;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| {
                CallbackError::Upstream(format!("the provider has no token endpoint: {e}"))
            })?
            .set_pkce_verifier(PkceCodeVerifier::new(flow.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(token_error)?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| refused("the provider sent no ID token"))?;
        let nonce = Nonce::new(flow.nonce.clone());
        // Signed by a key the kept set lacks: the provider may have rotated its keys since
        // they were read, so they are read again (once) before the token is judged.
        let unknown_key = matches!(
            id_token.claims(&client.id_token_verifier(), &nonce),
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey
            ))
        );
        let client = if unknown_key {
            let meta = self
                .discover()
                .await
                .map_err(|e| CallbackError::Upstream(e.to_string()))?;
            self.client(&meta, &flow.redirect_uri)
                .map_err(|e| CallbackError::Upstream(e.to_string()))?
        } else {
            client
        };
        let verifier = client.id_token_verifier();
        let claims = id_token.claims(&verifier, &nonce).map_err(claims_error)?;
        if let Some(expected) = claims.access_token_hash() {
            let alg = id_token.signing_alg().map_err(signature_error)?;
            let key = id_token.signing_key(&verifier).map_err(signature_error)?;
            let actual = AccessTokenHash::from_token(tokens.access_token(), alg, key)
                .map_err(|e| refused(format!("the access token hash cannot be checked: {e}")))?;
            if actual != *expected {
                return Err(refused(
                    "the access token does not belong to the ID token (at_hash differs)",
                ));
            }
        }
        let mut identity = Identity {
            issuer: self.settings.issuer.clone(),
            subject: claims.subject().to_string(),
            preferred_username: claims.preferred_username().map(|u| u.to_string()),
            email: claims.email().map(|e| e.to_string()),
            groups: groups_in(
                &Value::Object(claims.additional_claims().claims.clone()),
                &self.settings.groups_claim,
            ),
        };
        let named = identity.preferred_username.is_some() || identity.email.is_some();
        if identity.groups.is_none() || !named {
            self.add_userinfo(&client, &tokens, &mut identity).await?;
        }
        Ok(identity)
    }

    /// What the ID token lacks (groups, a name), from the userinfo endpoint: some
    /// providers put only the basics in the ID token.
    async fn add_userinfo(
        &self,
        client: &OidcClient,
        tokens: &Tokens,
        identity: &mut Identity,
    ) -> Result<(), CallbackError> {
        let subject = openidconnect::SubjectIdentifier::new(identity.subject.clone());
        let Ok(request) = client.user_info(tokens.access_token().clone(), Some(subject)) else {
            return Ok(());
        };
        let info: UserInfoClaims<OtherClaims, CoreGenderClaim> =
            request.request_async(&self.http).await.map_err(|e| {
                CallbackError::Upstream(format!("the userinfo endpoint: {}", chain(&e)))
            })?;
        if identity.groups.is_none() {
            identity.groups = groups_in(
                &Value::Object(info.additional_claims().claims.clone()),
                &self.settings.groups_claim,
            );
        }
        if identity.preferred_username.is_none() {
            identity.preferred_username = info.preferred_username().map(|u| u.to_string());
        }
        if identity.email.is_none() {
            identity.email = info.email().map(|e| e.to_string());
        }
        Ok(())
    }
}

fn token_error<E: std::error::Error + 'static>(
    e: RequestTokenError<E, StandardErrorResponse<CoreErrorResponseType>>,
) -> CallbackError {
    match e {
        RequestTokenError::ServerResponse(r) => {
            let detail = r
                .error_description()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            if *r.error() == CoreErrorResponseType::InvalidGrant {
                refused(format!(
                    "the provider refused the code: it was already used, has expired, or \
                     belongs to another sign-in (invalid_grant{detail}); sign in again"
                ))
            } else {
                refused(format!(
                    "the provider refused the code exchange: {}{detail}",
                    r.error().as_ref()
                ))
            }
        }
        RequestTokenError::Request(e) => {
            CallbackError::Upstream(format!("the provider's token endpoint: {}", chain(&e)))
        }
        RequestTokenError::Parse(e, _) => CallbackError::Upstream(format!(
            "the provider's token answer is not understood: {e}"
        )),
        RequestTokenError::Other(m) => {
            CallbackError::Upstream(format!("the provider's token endpoint: {m}"))
        }
    }
}

fn signature_error(e: SignatureVerificationError) -> CallbackError {
    refused(format!(
        "ID token signature not from the issuer's keys ({e})"
    ))
}

fn claims_error(e: ClaimsVerificationError) -> CallbackError {
    match e {
        ClaimsVerificationError::SignatureVerification(e) => signature_error(e),
        ClaimsVerificationError::Expired(m) => refused(format!("ID token expired ({m})")),
        ClaimsVerificationError::InvalidNonce(m) => refused(format!(
            "the ID token's nonce does not match this sign-in ({m})"
        )),
        ClaimsVerificationError::InvalidIssuer(m) => {
            refused(format!("the ID token is from another issuer ({m})"))
        }
        ClaimsVerificationError::InvalidAudience(m) => {
            refused(format!("the ID token is for another client ({m})"))
        }
        e => refused(format!("the ID token was not accepted: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_origin_is_what_the_sign_in_form_may_lead_to() {
        let s = OidcSettings {
            issuer: "https://login.example.com/realms/perf".into(),
            client_id: "perfjournal".into(),
            client_secret: None,
            scopes: vec![],
            groups_claim: "groups".into(),
            name: "Keycloak".into(),
        };
        assert_eq!(
            s.issuer_origin().as_deref(),
            Some("https://login.example.com")
        );
        let s = OidcSettings {
            issuer: "http://127.0.0.1:9000".into(),
            ..s
        };
        assert_eq!(s.issuer_origin().as_deref(), Some("http://127.0.0.1:9000"));
    }
}
