//! Prometheus servers from the pages: the admin's list of sources (add, remove), and the
//! form on an investigation that reads one over the incident window.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::extract::Path;
use crate::prometheus_range::{self as prom, Source, WindowFields};
use crate::state::AppState;
use perfjournal_store::Error as StoreError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/prometheus", get(list).post(add))
        .route("/admin/prometheus/{id}/remove", post(remove))
        .route("/investigations/{id}/prometheus/new", get(show_window_form))
        .route("/investigations/{id}/prometheus", post(start_window))
}

// ---------- the sources (admins) ----------

#[derive(Deserialize, Default)]
pub struct SourceForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    auth: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    secret: String,
}

#[derive(Template)]
#[template(path = "admin/prometheus.html")]
struct SourcesPage {
    ctx: PageCtx,
    sources: Vec<Source>,
    allowed: Vec<String>,
    form: SourceForm,
    errors: FormErrors,
}

async fn sources_page(
    state: &AppState,
    ctx: PageCtx,
    mut form: SourceForm,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    // A secret is never sent back, not even to the admin who typed it.
    form.secret.clear();
    let page = SourcesPage {
        ctx,
        sources: prom::list_sources(&state.pool).await?,
        allowed: crate::capture::allowed(&state.pool).await?,
        form,
        errors: errors.into(),
    };
    Ok((status, render(&page)?).into_response())
}

async fn list(State(state): State<AppState>, me: CurrentUser, ctx: PageCtx) -> Result<Response> {
    me.require(Role::Admin)?;
    sources_page(&state, ctx, SourceForm::default(), Vec::new()).await
}

async fn add(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<SourceForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    let allowed = crate::capture::allowed(&state.pool).await?;
    let checked = prom::check_source(
        &form.name,
        &form.url,
        &form.auth,
        &form.username,
        &form.secret,
        &allowed,
    );
    match checked {
        Ok(source) => match prom::add_source(&state.pool, &source, me.0.id).await {
            Ok(_) => {
                tracing::info!(admin = %me.0.name, source = %source.name, "Prometheus source added");
                Ok(Redirect::to("/admin/prometheus").into_response())
            }
            Err(StoreError::Invalid(errors)) => sources_page(&state, ctx, form, errors).await,
            Err(e) => Err(e.into()),
        },
        Err(errors) => sources_page(&state, ctx, form, errors).await,
    }
}

async fn remove(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    if !prom::remove_source(&state.pool, id).await? {
        return Err(AppError::not_found(format!("no Prometheus source {id}")));
    }
    Ok(Redirect::to("/admin/prometheus").into_response())
}

// ---------- the window form ----------

/// What the investigation page's form offers: the sources to choose from and the window
/// it starts with.
pub struct WindowOffer {
    pub sources: Vec<(i64, String)>,
    pub start: String,
    pub end: String,
}

/// The form's starting values: the sources, and the incident window (or the hour
/// before the investigation was opened).
pub async fn offer(
    state: &AppState,
    inv: &crate::investigations::db::Investigation,
) -> Result<WindowOffer> {
    let sources = prom::list_sources(&state.pool)
        .await?
        .into_iter()
        .map(|s| (s.id, s.name))
        .collect();
    let (start, end) = super::incident_window::starting_window(state, inv).await?;
    Ok(WindowOffer {
        sources,
        start,
        end,
    })
}

#[derive(Template)]
#[template(path = "investigations/prometheus.html")]
struct WindowPage {
    ctx: PageCtx,
    title: String,
    // Named as on the investigation page, which includes the same form.
    prom_investigation: i64,
    prom_sources: Vec<(i64, String)>,
    prom_form: WindowFields,
    prom_errors: FormErrors,
}

async fn window_page(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    form: Option<WindowFields>,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let (inv, status) = super::form_page::investigation_form(state, id, &errors).await?;
    let offer = offer(state, &inv).await?;
    let form = form.unwrap_or(WindowFields {
        start: offer.start,
        end: offer.end,
        engine: "vllm".into(),
        ..WindowFields::default()
    });
    let page = WindowPage {
        ctx,
        title: inv.title,
        prom_investigation: id,
        prom_sources: offer.sources,
        prom_form: form,
        prom_errors: errors.into(),
    };
    Ok((status, render(&page)?).into_response())
}

async fn show_window_form(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    window_page(&state, ctx, id, None, Vec::new()).await
}

/// Starts the fetch and goes to its artifact page; a refused field comes back on the
/// form (its own page), with what was typed.
async fn start_window(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<WindowFields>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    match prom::begin(&state.artifacts(), id, &form, user.0.id).await {
        Ok(artifact) => Ok(Redirect::to(&format!("/artifacts/{artifact}")).into_response()),
        Err(StoreError::Invalid(errors)) => window_page(&state, ctx, id, Some(form), errors).await,
        Err(e) => Err(e.into()),
    }
}
