//! The incident window from the pages: set, move or remove it on the investigation page;
//! a refused value comes back on its own page with what was typed.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::{Form, Router};
use serde::Deserialize;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::window::{parse_incident, show_time};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::extract::Path;
use crate::investigations::window::{self, IncidentWindow, WindowTelemetry};
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/investigations/{id}/incident-window",
            post(set_window).get(show_window),
        )
        .route(
            "/investigations/{id}/incident-window/remove",
            post(remove_window),
        )
}

#[derive(Deserialize, Default, Clone)]
pub struct WindowForm {
    #[serde(default)]
    pub start: String,
    #[serde(default)]
    pub end: String,
}

/// What the window card shows (the investigation page and the window's own page).
pub struct WindowCard {
    pub win: Option<IncidentWindow>,
    pub win_telemetry: Vec<WindowTelemetry>,
    pub win_form: WindowForm,
}

/// The card for investigation `id`: its window, the telemetry read over windows, and
/// the form starting on the recorded window.
pub async fn card(state: &AppState, id: i64) -> Result<WindowCard> {
    let win = window::get(&state.pool, id).await?;
    let win_form = win
        .as_ref()
        .map(|w| WindowForm {
            start: show_time(w.starts_at),
            end: show_time(w.ends_at),
        })
        .unwrap_or_default();
    Ok(WindowCard {
        win_telemetry: window::telemetry(&state.pool, id).await?,
        win,
        win_form,
    })
}

/// Where the forms that read telemetry over a window (Prometheus, OTLP spans) start:
/// the incident window when it is set, else the hour before the investigation was
/// opened; UTC, as the forms show times.
pub async fn starting_window(
    state: &AppState,
    inv: &crate::investigations::db::Investigation,
) -> Result<(String, String)> {
    let (start, end) = match window::get(&state.pool, inv.id).await? {
        Some(w) => (w.starts_at, w.ends_at),
        None => (inv.created_at - chrono::Duration::hours(1), inv.created_at),
    };
    Ok((show_time(start), show_time(end)))
}

#[derive(Template)]
#[template(path = "investigations/incident_window_page.html")]
struct WindowPage {
    ctx: PageCtx,
    title: String,
    win_investigation: i64,
    win: Option<IncidentWindow>,
    win_telemetry: Vec<WindowTelemetry>,
    win_form: WindowForm,
    win_errors: FormErrors,
}

async fn window_page(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    typed: Option<WindowForm>,
    errors: Vec<FieldError>,
) -> Result<Response> {
    let (inv, status) = super::form_page::investigation_form(state, id, &errors).await?;
    let card = card(state, id).await?;
    let page = WindowPage {
        ctx,
        title: inv.title,
        win_investigation: id,
        win: card.win,
        win_telemetry: card.win_telemetry,
        win_form: typed.unwrap_or(card.win_form),
        win_errors: errors.into(),
    };
    Ok((status, render(&page)?).into_response())
}

async fn show_window(
    State(state): State<AppState>,
    _me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    window_page(&state, ctx, id, None, Vec::new()).await
}

async fn set_window(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<WindowForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    crate::investigations::db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no investigation {id}")))?;
    let now = chrono::Utc::now().timestamp() as f64;
    match parse_incident(&form.start, &form.end, now) {
        Ok((start, end)) => {
            window::set(&state.pool, id, me.0.id, start, end).await?;
            Ok(Redirect::to(&format!("/investigations/{id}#incident-window")).into_response())
        }
        Err(errors) => window_page(&state, ctx, id, Some(form), errors).await,
    }
}

async fn remove_window(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    crate::investigations::db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no investigation {id}")))?;
    window::clear(&state.pool, id, me.0.id).await?;
    Ok(Redirect::to(&format!("/investigations/{id}#incident-window")).into_response())
}
