//! Who is asking: a session user for pages, a bearer token or session for the API.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_sessions::Session;

use super::cache::UserCopies;
use super::users::{self, Role, User};
use super::{tokens, SESSION_AUTH_AT, SESSION_GENERATION, SESSION_USER};
use crate::config::Config;
use crate::error::{ApiError, AppError};
use sqlx::PgPool;

/// What telling who is asking needs: the accounts and the session lifetime. The app's
/// state provides it (`FromRef`), so this module does not depend on the state.
#[derive(Clone)]
pub struct AuthContext {
    pub pool: PgPool,
    pub config: Arc<Config>,
    pub users: Arc<UserCopies>,
}

impl AuthContext {
    /// The user, from this process's copy when it is under a second old
    /// ([`super::cache`]), else from the database.
    pub async fn user(&self, id: i64) -> sqlx::Result<Option<User>> {
        if let Some(user) = self.users.get(id) {
            return Ok(Some(user));
        }
        let user = users::by_id(&self.pool, id).await?;
        if let Some(u) = &user {
            self.users.put(u);
        }
        Ok(user)
    }
}

/// A signed-in user (session). Rejection: redirect to the login page.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub User);

/// A user of the JSON API, by bearer token or session. Rejection: 401 JSON.
#[derive(Debug, Clone)]
pub struct ApiUser(pub User);

impl CurrentUser {
    /// Forbids the request unless the user has at least `role`.
    pub fn require(&self, role: Role) -> Result<(), AppError> {
        require(&self.0, role)
    }
}

impl ApiUser {
    pub fn require(&self, role: Role) -> Result<(), ApiError> {
        require(&self.0, role).map_err(ApiError)
    }
}

fn require(user: &User, role: Role) -> Result<(), AppError> {
    if user.role >= role {
        Ok(())
    } else {
        Err(AppError::Forbidden(format!(
            "this needs the {role} role; your account ({}) is {} {}",
            user.name,
            if user.role == Role::Viewer { "a" } else { "an" },
            user.role
        )))
    }
}

pub(crate) fn session_of(parts: &Parts) -> Result<Session, AppError> {
    parts
        .extensions
        .get::<Session>()
        .cloned()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("session layer missing")))
}

/// The user a session belongs to, enforcing the absolute session lifetime.
pub async fn session_user(
    session: &Session,
    state: &AuthContext,
) -> Result<Option<User>, AppError> {
    let session_err = |e: tower_sessions::session::Error| AppError::Internal(e.into());
    let Some(uid) = session
        .get::<i64>(SESSION_USER)
        .await
        .map_err(session_err)?
    else {
        return Ok(None);
    };
    let auth_at = session
        .get::<i64>(SESSION_AUTH_AT)
        .await
        .map_err(session_err)?
        .unwrap_or(0);
    let age = chrono::Utc::now().timestamp() - auth_at;
    if age < 0 || age > state.config.session_max_age.num_seconds() {
        session.flush().await.map_err(session_err)?;
        return Ok(None);
    }
    let Some(user) = state.user(uid).await? else {
        return Ok(None);
    };
    // A password change or reset, or disabling the account, raised the generation: every
    // session signed in under an older one has ended.
    let generation = session
        .get::<i32>(SESSION_GENERATION)
        .await
        .map_err(session_err)?
        .unwrap_or(0);
    if user.disabled || generation != user.session_generation {
        session.flush().await.map_err(session_err)?;
        return Ok(None);
    }
    Ok(Some(user))
}

fn next_target(parts: &Parts) -> String {
    parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into())
}

impl<S> FromRequestParts<S> for CurrentUser
where
    S: Send + Sync,
    AuthContext: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let state = &AuthContext::from_ref(state);
        if let Some(u) = parts.extensions.get::<CurrentUser>() {
            return Ok(u.clone());
        }
        let session = session_of(parts)?;
        match session_user(&session, state).await? {
            Some(user) => {
                let current = CurrentUser(user);
                parts.extensions.insert(current.clone());
                Ok(current)
            }
            None => Err(AppError::LoginRequired {
                next: next_target(parts),
            }),
        }
    }
}

/// The bearer token in an Authorization header, if one is there.
pub(crate) fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

impl<S> FromRequestParts<S> for ApiUser
where
    S: Send + Sync,
    AuthContext: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let state = &AuthContext::from_ref(state);
        if let Some(u) = parts.extensions.get::<ApiUser>() {
            return Ok(u.clone());
        }
        let user = if let Some(token) = bearer(parts) {
            tokens::authenticate(&state.pool, token).await?
        } else {
            let session = session_of(parts)?;
            session_user(&session, state).await?
        };
        match user {
            Some(user) => {
                let api = ApiUser(user);
                parts.extensions.insert(api.clone());
                Ok(api)
            }
            None => Err(ApiError(AppError::LoginRequired {
                next: next_target(parts),
            })),
        }
    }
}

/// Middleware for every page route outside the public few: no session, no page.
pub async fn require_login(State(state): State<AuthContext>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    match CurrentUser::from_request_parts(&mut parts, &state).await {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => e.into_response(),
    }
}

/// Middleware for `/api/v1/*`: a valid token or session, else 401 JSON.
pub async fn require_api_user(
    State(state): State<AuthContext>,
    req: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = req.into_parts();
    match ApiUser::from_request_parts(&mut parts, &state).await {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => e.into_response(),
    }
}
