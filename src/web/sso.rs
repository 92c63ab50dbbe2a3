//! Single sign-on: "Sign in with …" (the start of the OpenID flow), the provider's
//! callback, and the trusted reverse-proxy sign-in (a middleware).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRef, Query, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use super::account::{safe_next, start_session};
use crate::auth::external::{self, Identity, ProxyAuth, ProxyVerdict, SignInError};
use crate::auth::extract::{session_user, AuthContext};
use crate::auth::oidc::{Flow, Oidc, CALLBACK_PATH, FLOW_MAX_AGE_SECS};
use crate::error::{ApiError, AppError, Result};
use crate::state::AppState;

/// Session keys: the sign-in under way, and the user a trusted proxy named.
const SESSION_FLOW: &str = "oidc_flow";
const SESSION_PROXY_USER: &str = "proxy_user";

pub fn public_routes() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/start", post(start))
        .route("/auth/oidc/callback", get(callback))
}

fn session_err(e: tower_sessions::session::Error) -> AppError {
    AppError::Internal(e.into())
}

fn provider(state: &AppState) -> Result<&Oidc> {
    state.oidc.as_deref().ok_or_else(|| {
        AppError::not_found(
            "sign-in through an OpenID provider is not configured on this server; \
             sign in with your user name and password",
        )
    })
}

#[derive(Deserialize)]
pub struct StartForm {
    #[serde(default)]
    next: String,
}

/// Starts a sign-in: keeps state, nonce and the PKCE verifier in the session and sends the
/// browser to the provider.
async fn start(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<StartForm>,
) -> Result<Response> {
    let oidc = provider(&state)?;
    let redirect_uri = format!(
        "{}{CALLBACK_PATH}",
        super::transfer::public_base(&state.config, &headers)
    );
    let (url, flow) = oidc.start(redirect_uri, safe_next(&form.next)).await?;
    session
        .insert(SESSION_FLOW, &flow)
        .await
        .map_err(session_err)?;
    Ok(Redirect::to(&url).into_response())
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
    iss: Option<String>,
}

/// The provider's answer: checked against the sign-in this browser started (which is used
/// up either way), then the code is exchanged and the user signed in.
async fn callback(
    State(state): State<AppState>,
    session: Session,
    Query(q): Query<CallbackQuery>,
) -> Result<Response> {
    let oidc = provider(&state)?;
    let flow: Option<Flow> = session.remove(SESSION_FLOW).await.map_err(session_err)?;
    let Some(flow) = flow else {
        return Err(AppError::BadRequest(format!(
            "sign-in failed: no sign-in with {} is under way in this browser (it finished \
             already, or was started in another browser); start again from the sign-in page",
            oidc.settings.name
        )));
    };
    let code = check_answer(oidc, &flow, &q)?;
    let identity = oidc.finish(&flow, code).await?;
    let user = sign_in(&state, &identity).await?;
    start_session(&session, &user).await?;
    Ok(Redirect::to(&flow.next).into_response())
}

/// The code, if the provider's answer belongs to this sign-in; else what is wrong.
fn check_answer<'q>(oidc: &Oidc, flow: &Flow, q: &'q CallbackQuery) -> Result<&'q str> {
    if let Some(error) = &q.error {
        let detail = q
            .error_description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(AppError::Forbidden(format!(
            "sign-in failed: {} did not sign you in ({error}{detail})",
            oidc.settings.name
        )));
    }
    let matches = q
        .state
        .as_deref()
        .is_some_and(|s| bool::from(s.as_bytes().ct_eq(flow.state.as_bytes())));
    if !matches {
        return Err(AppError::BadRequest(
            "sign-in failed: state did not match the sign-in this browser started (an old tab \
             or a link from elsewhere); start again from the sign-in page"
                .into(),
        ));
    }
    let age = chrono::Utc::now().timestamp() - flow.started_at;
    if !(0..=FLOW_MAX_AGE_SECS).contains(&age) {
        return Err(AppError::BadRequest(format!(
            "sign-in failed: it was started more than {} minutes ago; start again",
            FLOW_MAX_AGE_SECS / 60
        )));
    }
    if let Some(iss) = &q.iss {
        if iss.trim_end_matches('/') != oidc.settings.issuer.trim_end_matches('/') {
            return Err(AppError::BadRequest(format!(
                "sign-in failed: the answer comes from issuer {iss:?}, not {}",
                oidc.settings.issuer
            )));
        }
    }
    q.code
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| AppError::BadRequest("sign-in failed: the answer has no code".into()))
}

async fn sign_in(state: &AppState, identity: &Identity) -> Result<crate::auth::User> {
    external::sign_in(
        &state.pool,
        &state.users,
        identity,
        &state.config.sign_in.policy,
    )
    .await
    .map_err(|e| match e {
        SignInError::Db(e) => AppError::Database(e),
        e => {
            tracing::warn!(issuer = %identity.issuer, subject = %identity.subject, "single sign-on refused: {e}");
            AppError::Forbidden(format!("sign-in refused: {e}"))
        }
    })
}

/// The trusted reverse-proxy mode: a request carrying the user header from a trusted
/// proxy signs that user in (a session as with any sign-in, kept while the header names
/// the same user); the header from any other address is refused with 403.
pub async fn proxy_sign_in(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(proxy) = state.config.sign_in.proxy.as_ref() else {
        return next.run(req).await;
    };
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let value = req
        .headers()
        .get(proxy.header.as_str())
        .map(|v| v.as_bytes());
    let api = req.uri().path().starts_with("/api/");
    let answer = |e: AppError| {
        if api {
            ApiError(e).into_response()
        } else {
            e.into_response()
        }
    };
    match proxy.verdict(peer, value) {
        ProxyVerdict::Absent => next.run(req).await,
        ProxyVerdict::Refuse(why) => {
            tracing::warn!(?peer, path = %req.uri().path(), "proxy sign-in refused: {why}");
            answer(AppError::Forbidden(format!("sign-in refused: {why}")))
        }
        ProxyVerdict::User(name) => {
            let groups = proxy_groups(proxy, req.headers());
            let Some(session) = req.extensions().get::<Session>().cloned() else {
                return AppError::Internal(anyhow::anyhow!("session layer missing"))
                    .into_response();
            };
            match proxy_session(&state, &session, proxy, name, groups).await {
                Ok(()) => next.run(req).await,
                Err(e) => answer(e),
            }
        }
    }
}

fn proxy_groups(proxy: &ProxyAuth, headers: &HeaderMap) -> Option<Vec<String>> {
    let header = proxy.groups_header.as_deref()?;
    let value = headers.get(header)?.to_str().ok()?;
    Some(
        value
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// Keeps the session signed in as the user the proxy names (signing in afresh when it
/// names someone else, or the session ended).
async fn proxy_session(
    state: &AppState,
    session: &Session,
    proxy: &ProxyAuth,
    name: String,
    groups: Option<Vec<String>>,
) -> Result<()> {
    let named: Option<String> = session.get(SESSION_PROXY_USER).await.map_err(session_err)?;
    if named.as_deref() == Some(name.as_str())
        && session_user(session, &AuthContext::from_ref(state))
            .await?
            .is_some()
    {
        return Ok(());
    }
    let email = name.contains('@').then(|| name.clone());
    let identity = Identity {
        issuer: proxy.issuer(),
        subject: name.clone(),
        preferred_username: email.is_none().then(|| name.clone()),
        email,
        groups,
    };
    let user = sign_in(state, &identity).await?;
    start_session(session, &user).await?;
    session
        .insert(SESSION_PROXY_USER, &name)
        .await
        .map_err(session_err)?;
    Ok(())
}
