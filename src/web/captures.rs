//! Live `/metrics` captures from the pages: the form on an investigation, and the
//! admin's allowlist of `host:port` pairs the server may fetch from.

use crate::extract::Path;
use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use perfjournal_store::Error as StoreError;
use serde::Deserialize;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::capture::{self, AllowedHost};
use crate::core::capture::{parse_allow_entry, MAX_SECONDS, MIN_INTERVAL_S};
use crate::core::FieldError;
use crate::error::Result;
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/investigations/{id}/captures/new", get(show_capture_form))
        .route("/investigations/{id}/captures", post(start_capture))
        .route("/admin/capture-hosts", get(list_hosts).post(add_host))
        .route("/admin/capture-hosts/remove", post(remove_host))
}

// ---------- the capture form ----------

#[derive(Deserialize, Default)]
pub struct CaptureForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    seconds: String,
    #[serde(default)]
    interval_s: String,
}

#[derive(Template)]
#[template(path = "investigations/capture.html")]
struct CapturePage {
    ctx: PageCtx,
    investigation_id: i64,
    title: String,
    form: CaptureForm,
    errors: FormErrors,
    allowed: Vec<String>,
    max_seconds: u32,
    min_interval: u32,
}

async fn capture_page(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    form: CaptureForm,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let (inv, status) = super::form_page::investigation_form(state, id, &errors).await?;
    let page = CapturePage {
        ctx,
        investigation_id: id,
        title: inv.title,
        form,
        errors: errors.into(),
        allowed: capture::allowed(&state.pool).await?,
        max_seconds: MAX_SECONDS,
        min_interval: MIN_INTERVAL_S,
    };
    Ok((status, render(&page)?).into_response())
}

async fn show_capture_form(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let form = CaptureForm {
        seconds: "60".into(),
        interval_s: "5".into(),
        ..CaptureForm::default()
    };
    capture_page(&state, ctx, id, form, Vec::new()).await
}

/// Starts the capture and goes to its artifact page (which follows the window); a
/// refused field comes back on the form, with what was typed.
async fn start_capture(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<CaptureForm>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let fields = [
        form.url.as_str(),
        form.seconds.as_str(),
        form.interval_s.as_str(),
    ];
    match capture::begin(&state.artifacts(), id, fields, user.0.id).await {
        Ok(artifact) => Ok(Redirect::to(&format!("/artifacts/{artifact}")).into_response()),
        Err(StoreError::Invalid(errors)) => capture_page(&state, ctx, id, form, errors).await,
        Err(e) => Err(e.into()),
    }
}

// ---------- the allowlist ----------

#[derive(Template)]
#[template(path = "admin/capture_hosts.html")]
struct HostsPage {
    ctx: PageCtx,
    hosts: Vec<AllowedHost>,
    errors: FormErrors,
    host_port: String,
    note: String,
}

async fn hosts_page(
    state: &AppState,
    ctx: PageCtx,
    errors: Vec<FieldError>,
    form: HostForm,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    let page = HostsPage {
        ctx,
        hosts: capture::list_hosts(&state.pool).await?,
        errors: errors.into(),
        host_port: form.host_port,
        note: form.note,
    };
    Ok((status, render(&page)?).into_response())
}

async fn list_hosts(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
) -> Result<Response> {
    me.require(Role::Admin)?;
    hosts_page(&state, ctx, Vec::new(), HostForm::default()).await
}

#[derive(Deserialize, Default)]
pub struct HostForm {
    #[serde(default)]
    host_port: String,
    #[serde(default)]
    note: String,
}

async fn add_host(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<HostForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    let mut errors = Vec::new();
    let entry = parse_allow_entry(&form.host_port)
        .map_err(|e| errors.push(e))
        .ok();
    let note = form.note.trim().to_string();
    if note.chars().count() > 200 {
        errors.push(FieldError::new("note", "a note of at most 200 characters"));
    }
    let (Some(entry), true) = (entry, errors.is_empty()) else {
        return hosts_page(&state, ctx, errors, form).await;
    };
    if !capture::add_host(&state.pool, &entry, &note, Some(me.0.id)).await? {
        let e = FieldError::new("host_port", format!("{entry} is on the list already"));
        return hosts_page(&state, ctx, vec![e], form).await;
    }
    tracing::info!(admin = %me.0.name, host = %entry, "capture host allowed");
    Ok(Redirect::to("/admin/capture-hosts").into_response())
}

async fn remove_host(
    State(state): State<AppState>,
    me: CurrentUser,
    Form(form): Form<HostForm>,
) -> Result<Redirect> {
    me.require(Role::Admin)?;
    if capture::remove_host(&state.pool, &form.host_port).await? {
        tracing::info!(admin = %me.0.name, host = %form.host_port, "capture host removed");
    }
    Ok(Redirect::to("/admin/capture-hosts"))
}
