//! "The spans of service X between T1 and T2" on an investigation: the form (on the
//! investigation page, and on its own page when a field is refused) and its submission,
//! which puts those request spans into the investigation as an `otlp_spans` artifact.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::FieldError;
use crate::error::Result;
use crate::extract::Path;
use crate::otlp::TakeFields;
use crate::state::AppState;
use perfjournal_store::Error as StoreError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/investigations/{id}/otlp-spans/new", get(show_form))
        .route("/investigations/{id}/otlp-spans", post(take))
}

/// The form's starting values: the services that sent spans, and the incident window
/// (or the hour before the investigation was opened).
pub async fn offer(
    state: &AppState,
    inv: &crate::investigations::db::Investigation,
) -> Result<(Vec<String>, TakeFields)> {
    let services = crate::otlp::services(&state.pool).await?;
    let (start, end) = super::incident_window::starting_window(state, inv).await?;
    let form = TakeFields {
        service: services.first().cloned().unwrap_or_default(),
        start,
        end,
    };
    Ok((services, form))
}

#[derive(Template)]
#[template(path = "investigations/otlp_spans.html")]
struct SpansPage {
    ctx: PageCtx,
    title: String,
    // Named as on the investigation page, which includes the same form.
    span_investigation: i64,
    span_services: Vec<String>,
    span_form: TakeFields,
    span_errors: FormErrors,
}

async fn page(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    form: Option<TakeFields>,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let (inv, status) = super::form_page::investigation_form(state, id, &errors).await?;
    let (services, offered) = offer(state, &inv).await?;
    let page = SpansPage {
        ctx,
        title: inv.title,
        span_investigation: id,
        span_services: services,
        span_form: form.unwrap_or(offered),
        span_errors: errors.into(),
    };
    Ok((status, render(&page)?).into_response())
}

async fn show_form(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    page(&state, ctx, id, None, Vec::new()).await
}

/// Takes the spans and goes to their artifact's page, which follows the analysis as the
/// worker runs it (as `POST /api/v1/otlp/…/take` queues it: one way, within the worker's
/// bound on analyses at once); a refused field comes back on the form (its own page),
/// with what was typed.
async fn take(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<TakeFields>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let max_rows = state.config.otlp.max_rows_per_window;
    match crate::otlp::take(&state.artifacts(), id, &form, max_rows, user.0.id).await {
        Ok(artifact) => Ok(Redirect::to(&format!("/artifacts/{artifact}")).into_response()),
        Err(StoreError::Invalid(errors)) => page(&state, ctx, id, Some(form), errors).await,
        Err(e) => Err(e.into()),
    }
}
