//! Setup, login/logout, the user's settings (API tokens, password), and user admin.

use std::net::SocketAddr;

use crate::extract::Path;
use askama::Template;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use serde::Deserialize;
use tower_sessions::Session;

use super::{render, FormErrors, PageCtx};
use crate::auth::tokens::{self, TokenInfo};
use crate::auth::users::{self, CreateError, Role, User};
use crate::auth::{csrf, password, CurrentUser, SESSION_AUTH_AT, SESSION_GENERATION, SESSION_USER};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::state::AppState;

pub fn public_routes() -> Router<AppState> {
    Router::new()
        .route("/setup", get(show_setup).post(create_admin))
        .route("/login", get(show_login).post(log_in))
        .route("/logout", post(log_out))
}

pub fn private_routes() -> Router<AppState> {
    Router::new()
        .route("/settings", get(show_settings))
        .route("/settings/tokens", post(create_token))
        .route("/settings/tokens/{id}/revoke", post(revoke_token))
        .route("/settings/password", post(change_password))
        .route("/admin/users", get(list_users).post(add_user))
        .route("/admin/users/{id}/role", post(change_role))
        .route("/admin/users/{id}/password", post(reset_password))
        .route("/admin/users/{id}/disabled", post(set_disabled))
        .route("/admin/login-locks/clear", post(clear_login_lock))
}

// ---------- setup ----------

#[derive(Template)]
#[template(path = "auth/setup.html")]
struct SetupPage {
    ctx: PageCtx,
    name: String,
    /// The "load example investigations" tick, kept when the form comes back with errors.
    demo: bool,
    errors: FormErrors,
}

#[derive(Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    confirm: String,
    /// "on" when the example investigations should be loaded.
    #[serde(default)]
    demo: Option<String>,
}

async fn show_setup(State(state): State<AppState>, ctx: PageCtx) -> Result<Response> {
    if users::count(&state.pool).await? > 0 {
        return Ok(Redirect::to("/login").into_response());
    }
    Ok(render(&SetupPage {
        ctx,
        name: String::new(),
        demo: false,
        errors: FormErrors::default(),
    })?
    .into_response())
}

async fn create_admin(
    State(state): State<AppState>,
    session: Session,
    ctx: PageCtx,
    Form(form): Form<SetupForm>,
) -> Result<Response> {
    if users::count(&state.pool).await? > 0 {
        return Err(AppError::Forbidden(
            "setup is done: an account already exists. Sign in instead.".into(),
        ));
    }
    let mut errors = Vec::new();
    let name = users::validate_name(&form.name)
        .map_err(|e| errors.push(e))
        .ok();
    if let Err(e) = users::validate_password(&form.password) {
        errors.push(e);
    } else if form.password != form.confirm {
        errors.push(FieldError::new("confirm", "the two passwords differ"));
    }
    let Some(name) = name.filter(|_| errors.is_empty()) else {
        return rerender_setup(ctx, form.name, form.demo.is_some(), errors);
    };
    let hash = password::hash(form.password).await?;
    let user = match users::create(&state.pool, &name, &hash, Role::Admin, true).await {
        Ok(u) => u,
        Err(CreateError::NotFirst) => {
            return Err(AppError::Forbidden(
                "setup is done: an account already exists. Sign in instead.".into(),
            ))
        }
        Err(CreateError::Taken(n)) => {
            return rerender_setup(
                ctx,
                form.name,
                form.demo.is_some(),
                vec![FieldError::new("name", format!("{n} is taken"))],
            )
        }
        Err(CreateError::Db(e)) => return Err(e.into()),
    };
    start_session(&session, &user).await?;
    if form.demo.is_some() {
        crate::investigations::seed::seed_demo(&state.pool, user.id).await?;
        return Ok(Redirect::to("/investigations").into_response());
    }
    Ok(Redirect::to("/").into_response())
}

fn rerender_setup(
    ctx: PageCtx,
    name: String,
    demo: bool,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let page = SetupPage {
        ctx,
        name,
        demo,
        errors: errors.into(),
    };
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
}

// ---------- login ----------

#[derive(Template)]
#[template(path = "auth/login.html")]
struct LoginPage {
    ctx: PageCtx,
    name: String,
    next: String,
    error: Option<String>,
    /// "Sign in with NAME", when an OpenID provider is configured.
    sso_name: Option<String>,
    /// Whether the user name and password form is offered.
    password: bool,
}

impl LoginPage {
    fn new(
        state: &AppState,
        ctx: PageCtx,
        name: String,
        next: String,
        error: Option<String>,
    ) -> Self {
        LoginPage {
            ctx,
            name,
            next,
            error,
            sso_name: state.oidc.as_ref().map(|o| o.settings.name.clone()),
            password: state.config.sign_in.password,
        }
    }

    /// The page with its status; with a provider configured, its Content-Security-Policy
    /// lets the "Sign in with …" form lead on to the provider (a browser otherwise stops
    /// the redirect that follows the form).
    fn respond(&self, state: &AppState, status: StatusCode) -> Result<Response> {
        let mut response = (status, render(self)?).into_response();
        if let Some(origin) = state.oidc.as_ref().and_then(|o| o.settings.issuer_origin()) {
            if let Ok(v) = super::csp::with_form_action(&origin).parse() {
                response
                    .headers_mut()
                    .insert(axum::http::header::CONTENT_SECURITY_POLICY, v);
            }
        }
        Ok(response)
    }
}

#[derive(Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// Only same-origin paths are followed after login (no open redirect). The value is
/// judged as a browser would read it in `Location`: tabs and newlines dropped (so any
/// control character refuses it), backslashes taken as slashes, and percent-escapes
/// decoded until nothing changes, so `/\t/evil.example`, `/\\evil.example` and
/// `/%2F%2Fevil.example` all fall back to `/`. What is kept has everything outside
/// visible ASCII percent-encoded, so it is always a valid header value.
pub fn safe_next(next: &str) -> String {
    if same_origin_path(next) {
        percent_encoding::utf8_percent_encode(next, LOCATION_UNSAFE).to_string()
    } else {
        "/".to_string()
    }
}

/// Bytes sent escaped in a `Location`: controls, space and everything beyond ASCII.
const LOCATION_UNSAFE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b' ');

/// How many layers of percent-encoding are undone before a value is refused as too
/// deeply encoded to be a path anyone typed.
const DECODE_LAYERS: usize = 4;

fn same_origin_path(next: &str) -> bool {
    let mut layer = std::borrow::Cow::Borrowed(next);
    for _ in 0..=DECODE_LAYERS {
        if layer.chars().any(char::is_control) {
            return false;
        }
        let slashed = layer.replace('\\', "/");
        if !slashed.starts_with('/') || slashed.starts_with("//") {
            return false;
        }
        let decoded = percent_encoding::percent_decode_str(&layer).decode_utf8_lossy();
        if decoded == layer {
            return true;
        }
        layer = std::borrow::Cow::Owned(decoded.into_owned());
    }
    false
}

async fn show_login(
    State(state): State<AppState>,
    ctx: PageCtx,
    Query(q): Query<NextQuery>,
) -> Result<Response> {
    // The first account is made on the setup page, unless passwords are off (then the
    // first people come through single sign-on).
    if state.config.sign_in.password && users::count(&state.pool).await? == 0 {
        return Ok(Redirect::to("/setup").into_response());
    }
    if ctx.user.is_some() {
        return Ok(Redirect::to(&safe_next(q.next.as_deref().unwrap_or("/"))).into_response());
    }
    let next = safe_next(q.next.as_deref().unwrap_or("/"));
    LoginPage::new(&state, ctx, String::new(), next, None).respond(&state, StatusCode::OK)
}

async fn log_in(
    State(state): State<AppState>,
    session: Session,
    ctx: PageCtx,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: axum::http::HeaderMap,
    Form(form): Form<LoginForm>,
) -> Result<Response> {
    if !state.config.sign_in.password {
        return Err(AppError::Forbidden(match &state.oidc {
            Some(o) => format!(
                "password sign-in is turned off on this server; use \"Sign in with {}\"",
                o.settings.name
            ),
            None => "password sign-in is turned off on this server; sign in through the \
                     company sign-in in front of it"
                .into(),
        }));
    }
    let peer = connect.map(|Extension(ConnectInfo(addr))| addr.ip());
    let ip = crate::auth::client::client_ip(peer, &headers, &state.config.trusted_proxies);
    if let Err(retry_after) = state.throttle.check(&form.name, ip) {
        tracing::warn!(user = %form.name, ?ip, "login throttled");
        return Err(AppError::TooManyRequests { retry_after });
    }
    let next = safe_next(&form.next);
    let found = users::credentials(&state.pool, form.name.trim()).await?;
    // Hash even for an unknown name, so timing does not tell which names exist.
    let (user, stored) = match found {
        Some((user, hash)) => (Some(user), hash),
        None => (None, password::decoy_hash().to_string()),
    };
    let matches = password::verify(form.password, stored).await?;
    let user = match user {
        Some(user) if matches => user,
        _ => {
            state.throttle.failed(&form.name, ip);
            let error = Some("that name and password do not match an account".into());
            return LoginPage::new(&state, ctx, form.name, next, error)
                .respond(&state, StatusCode::UNAUTHORIZED);
        }
    };
    if user.disabled {
        let error = Some("this account is disabled; ask an admin to enable it".into());
        return LoginPage::new(&state, ctx, form.name, next, error)
            .respond(&state, StatusCode::FORBIDDEN);
    }
    start_session(&session, &user).await?;
    Ok(Redirect::to(&next).into_response())
}

/// A new session id at login (no fixation), the user, the time, a fresh CSRF token.
pub(crate) async fn start_session(session: &Session, user: &User) -> Result<()> {
    let err = |e: tower_sessions::session::Error| AppError::Internal(e.into());
    session.cycle_id().await.map_err(err)?;
    session.insert(SESSION_USER, user.id).await.map_err(err)?;
    session
        .insert(SESSION_GENERATION, user.session_generation)
        .await
        .map_err(err)?;
    session
        .insert(SESSION_AUTH_AT, chrono::Utc::now().timestamp())
        .await
        .map_err(err)?;
    csrf::rotate(session).await?;
    tracing::info!(user = %user.name, "signed in");
    Ok(())
}

async fn log_out(session: Session) -> Result<Redirect> {
    session
        .flush()
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(Redirect::to("/login"))
}

// ---------- settings ----------

#[derive(Template)]
#[template(path = "auth/settings.html")]
struct SettingsPage {
    ctx: PageCtx,
    tokens: Vec<TokenInfo>,
    new_secret: Option<String>,
    errors: FormErrors,
    notice: Option<String>,
}

async fn settings_page(
    state: &AppState,
    ctx: PageCtx,
    user: &User,
    new_secret: Option<String>,
    errors: Vec<FieldError>,
    notice: Option<String>,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    let page = SettingsPage {
        ctx,
        tokens: tokens::list(&state.pool, user.id).await?,
        new_secret,
        errors: errors.into(),
        notice,
    };
    Ok((status, render(&page)?).into_response())
}

async fn show_settings(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ctx: PageCtx,
) -> Result<Response> {
    settings_page(&state, ctx, &user, None, vec![], None).await
}

#[derive(Deserialize)]
pub struct TokenForm {
    #[serde(default)]
    label: String,
}

async fn create_token(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ctx: PageCtx,
    Form(form): Form<TokenForm>,
) -> Result<Response> {
    let label = form.label.trim();
    if label.is_empty() || label.len() > 100 {
        let e = FieldError::new(
            "label",
            "name the token (1–100 characters), e.g. \"CI uploads\"",
        );
        return settings_page(&state, ctx, &user, None, vec![e], None).await;
    }
    let (_, secret) = tokens::create(&state.pool, user.id, label).await?;
    settings_page(&state, ctx, &user, Some(secret), vec![], None).await
}

async fn revoke_token(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<i64>,
) -> Result<Redirect> {
    if !tokens::revoke(&state.pool, user.id, id).await? {
        return Err(AppError::not_found(format!("no live token {id} of yours")));
    }
    Ok(Redirect::to("/settings"))
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    confirm: String,
    /// "on" when the person also wants every API token of theirs revoked.
    #[serde(default)]
    revoke_tokens: Option<String>,
}

async fn change_password(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    ctx: PageCtx,
    Form(form): Form<PasswordForm>,
) -> Result<Response> {
    let stored = users::credentials(&state.pool, &user.name)
        .await?
        .map(|(_, h)| h)
        .ok_or_else(|| AppError::not_found("your account"))?;
    let mut errors = Vec::new();
    if !password::verify(form.current, stored).await? {
        errors.push(FieldError::new(
            "current",
            "that is not your current password",
        ));
    }
    if let Err(e) = users::validate_password(&form.password) {
        errors.push(e);
    } else if form.password != form.confirm {
        errors.push(FieldError::new("confirm", "the two passwords differ"));
    }
    if !errors.is_empty() {
        return settings_page(&state, ctx, &user, None, errors, None).await;
    }
    let hash = password::hash(form.password).await?;
    let generation = users::set_password(&state.pool, &state.users, user.id, &hash).await?;
    // Every other session has ended with the generation; this one continues under a new
    // id (the old id, if it leaked, is worth nothing now) and a new CSRF token.
    let user = User {
        session_generation: generation,
        ..user
    };
    start_session(&session, &user).await?;
    let mut notice = String::from("Password changed. Your other sessions were signed out.");
    if form.revoke_tokens.is_some() {
        let n = tokens::revoke_all(&state.pool, user.id).await?;
        notice.push_str(&format!(" {n} API token(s) revoked."));
    } else {
        let live = tokens::list(&state.pool, user.id)
            .await?
            .iter()
            .filter(|t| t.revoked_at.is_none())
            .count();
        if live > 0 {
            notice.push_str(&format!(
                " You still have {live} active API token(s): revoke them below if the old \
                 password may have been seen."
            ));
        }
    }
    let ctx = PageCtx {
        csrf: csrf::token(&session).await?,
        ..ctx
    };
    settings_page(&state, ctx, &user, None, vec![], Some(notice)).await
}

// ---------- user admin ----------

#[derive(Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    ctx: PageCtx,
    users: Vec<User>,
    roles: [Role; 3],
    errors: FormErrors,
    name: String,
    /// The signed-in admin (who resets their own password on the settings page).
    me_id: i64,
    /// User names locked out of signing in from some address now.
    locks: Vec<crate::auth::throttle::LockedName>,
}

async fn users_page(
    state: &AppState,
    ctx: PageCtx,
    errors: Vec<FieldError>,
    name: String,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    let page = UsersPage {
        me_id: ctx.user.as_ref().map_or(0, |u| u.id),
        ctx,
        users: users::list(&state.pool).await?,
        roles: Role::ALL,
        errors: errors.into(),
        name,
        locks: state.throttle.locked_names(),
    };
    Ok((status, render(&page)?).into_response())
}

async fn list_users(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
) -> Result<Response> {
    me.require(Role::Admin)?;
    users_page(&state, ctx, vec![], String::new()).await
}

#[derive(Deserialize)]
pub struct AddUserForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    role: String,
}

async fn add_user(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<AddUserForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    let mut errors = Vec::new();
    let name = users::validate_name(&form.name)
        .map_err(|e| errors.push(e))
        .ok();
    if let Err(e) = users::validate_password(&form.password) {
        errors.push(e);
    }
    let role = Role::parse(&form.role);
    if role.is_none() {
        errors.push(FieldError::new("role", "choose viewer, editor or admin"));
    }
    let (Some(name), Some(role), true) = (name, role, errors.is_empty()) else {
        return users_page(&state, ctx, errors, form.name).await;
    };
    let hash = password::hash(form.password).await?;
    match users::create(&state.pool, &name, &hash, role, false).await {
        Ok(_) => Ok(Redirect::to("/admin/users").into_response()),
        Err(CreateError::Taken(n)) => {
            let e = FieldError::new("name", format!("a user named {n} already exists"));
            users_page(&state, ctx, vec![e], form.name).await
        }
        Err(CreateError::Db(e)) => Err(e.into()),
        Err(e @ CreateError::NotFirst) => Err(AppError::Internal(e.into())),
    }
}

#[derive(Deserialize)]
pub struct RoleForm {
    #[serde(default)]
    role: String,
}

async fn change_role(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
    Form(form): Form<RoleForm>,
) -> Result<Redirect> {
    me.require(Role::Admin)?;
    let role = Role::parse(&form.role)
        .ok_or_else(|| AppError::field("role", "choose viewer, editor or admin"))?;
    let target = users::by_id(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no user {id}")))?;
    if target.role == Role::Admin
        && role != Role::Admin
        && users::count_admins(&state.pool).await? <= 1
    {
        return Err(AppError::Conflict(
            "this is the last admin; make another user admin first".into(),
        ));
    }
    users::set_role(&state.pool, &state.users, id, role).await?;
    Ok(Redirect::to("/admin/users"))
}

#[derive(Deserialize)]
pub struct ResetForm {
    #[serde(default)]
    password: String,
    #[serde(default)]
    revoke_tokens: Option<String>,
}

/// An admin sets a new password for someone who lost theirs (or whose password leaked):
/// every session of that user ends, and their API tokens too when the box is ticked.
async fn reset_password(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<ResetForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    let target = users::by_id(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no user {id}")))?;
    if target.id == me.0.id {
        return Err(AppError::Conflict(
            "change your own password on your settings page (it asks for the current one)".into(),
        ));
    }
    if let Err(e) = users::validate_password(&form.password) {
        let e = FieldError::new(format!("password-{id}"), e.message);
        return users_page(&state, ctx, vec![e], String::new()).await;
    }
    let hash = password::hash(form.password).await?;
    users::set_password(&state.pool, &state.users, id, &hash).await?;
    if form.revoke_tokens.is_some() {
        tokens::revoke_all(&state.pool, id).await?;
    }
    tracing::info!(admin = %me.0.name, user = %target.name, "password reset by an admin");
    Ok(Redirect::to("/admin/users").into_response())
}

#[derive(Deserialize)]
pub struct DisableForm {
    #[serde(default)]
    disabled: String,
}

/// Disables a user (their sessions end at once and their API tokens stop working; what they
/// wrote stays) or enables them again. An admin cannot disable themselves or the last admin.
async fn set_disabled(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
    Form(form): Form<DisableForm>,
) -> Result<Redirect> {
    me.require(Role::Admin)?;
    let disabled = match form.disabled.as_str() {
        "true" => true,
        "false" => false,
        _ => return Err(AppError::field("disabled", "true or false")),
    };
    let target = users::by_id(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no user {id}")))?;
    if disabled && target.id == me.0.id {
        return Err(AppError::Conflict(
            "you cannot disable your own account; ask another admin".into(),
        ));
    }
    if disabled
        && target.role == Role::Admin
        && !target.disabled
        && users::count_admins(&state.pool).await? <= 1
    {
        return Err(AppError::Conflict(
            "this is the last admin; make another user admin first".into(),
        ));
    }
    users::set_disabled(&state.pool, &state.users, id, disabled).await?;
    tracing::info!(admin = %me.0.name, user = %target.name, disabled, "account state changed");
    Ok(Redirect::to("/admin/users"))
}

#[derive(Deserialize)]
pub struct ClearLockForm {
    #[serde(default)]
    name: String,
}

/// Ends the sign-in locks of a user name (from every address), e.g. after a guesser locked
/// a colleague out.
async fn clear_login_lock(
    State(state): State<AppState>,
    me: CurrentUser,
    Form(form): Form<ClearLockForm>,
) -> Result<Redirect> {
    me.require(Role::Admin)?;
    let cleared = state.throttle.clear_name(&form.name);
    tracing::info!(admin = %me.0.name, user = %form.name, cleared, "sign-in lock cleared by an admin");
    Ok(Redirect::to("/admin/users"))
}
