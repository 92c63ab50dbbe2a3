//! Admin pages for webhooks: the endpoints, each with its delivery log, and the form
//! that adds one.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::webhook::{self, EVENTS, MAX_ATTEMPTS};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::extract::Path;
use crate::state::AppState;
use crate::webhooks::{self as hooks, Webhook};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/webhooks", get(list).post(add))
        .route("/admin/webhooks/{id}/remove", post(remove))
}

/// What the add form held, kept when it is refused.
#[derive(Default)]
pub struct AddForm {
    pub url: String,
    pub events: Vec<String>,
    pub slack: bool,
}

impl AddForm {
    pub fn has(&self, event: &&str) -> bool {
        self.events.iter().any(|e| e == event)
    }
}

#[derive(Template)]
#[template(path = "admin/webhooks.html")]
struct Page {
    ctx: PageCtx,
    hooks: Vec<Webhook>,
    events: &'static [(&'static str, &'static str)],
    form: AddForm,
    errors: FormErrors,
    max_attempts: i32,
}

async fn page(
    state: &AppState,
    ctx: PageCtx,
    form: AddForm,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    let page = Page {
        ctx,
        hooks: hooks::list(&state.pool).await?,
        events: EVENTS,
        form,
        errors: errors.into(),
        max_attempts: MAX_ATTEMPTS,
    };
    Ok((status, render(&page)?).into_response())
}

async fn list(State(state): State<AppState>, me: CurrentUser, ctx: PageCtx) -> Result<Response> {
    me.require(Role::Admin)?;
    page(&state, ctx, AddForm::default(), Vec::new()).await
}

/// The form posts `events` once per ticked box, so it is read as pairs.
async fn add(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    body: String,
) -> Result<Response> {
    me.require(Role::Admin)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    let one = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let form = AddForm {
        // A pasted URL often brings a space or line end with it.
        url: one("url").trim().to_string(),
        events: pairs
            .iter()
            .filter(|(k, _)| k == "events")
            .map(|(_, v)| v.clone())
            .collect(),
        slack: one("slack") == "on",
    };
    let allowed = &state.config.webhook_allowed;
    match webhook::check(&form.url, &form.events, &one("secret"), form.slack, &|ip| {
        allowed.contains(ip)
    }) {
        Ok(endpoint) => {
            hooks::add(&state.pool, &endpoint, me.0.id).await?;
            Ok(Redirect::to("/admin/webhooks").into_response())
        }
        Err(errors) => page(&state, ctx, form, errors).await,
    }
}

async fn remove(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    if !hooks::remove(&state.pool, id).await? {
        return Err(AppError::not_found(format!("no webhook {id}")));
    }
    Ok(Redirect::to("/admin/webhooks").into_response())
}
