//! An investigation's incident window over the API: read, set (or move), remove.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body::{self, Text};
use super::wire::{IncidentWindow, WindowTelemetry};
use crate::auth::{ApiUser, Role};
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::extract::Path;
use crate::investigations::window;
use crate::state::AppState;

/// The body of `PUT /investigations/{id}/incident-window`.
#[derive(Deserialize, ToSchema)]
pub struct IncidentWindowInput {
    /// RFC 3339, `YYYY-MM-DD HH:MM[:SS]` (UTC) or Unix seconds; not in the future.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T14:00:00Z")]
    pub start: Text,
    /// After the start, at most 32 days later.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T15:00:00Z")]
    pub end: Text,
}

#[derive(Serialize, ToSchema)]
pub struct IncidentWindowView {
    /// `null` when no window is set.
    pub window: Option<IncidentWindow>,
    /// Telemetry of the investigation read over a window (Prometheus windows, OTLP
    /// spans), with how each sits against the incident window.
    pub telemetry: Vec<TelemetryView>,
}

#[derive(Serialize, ToSchema)]
pub struct TelemetryView {
    #[serde(flatten)]
    pub artifact: WindowTelemetry,
    /// "… UTC; covers the incident window" (or overlaps, or outside).
    pub against_window: String,
}

async fn view(state: &AppState, id: i64) -> Result<IncidentWindowView, AppError> {
    crate::investigations::db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no investigation {id}")))?;
    let win = window::get(&state.pool, id).await?;
    let telemetry = window::telemetry(&state.pool, id)
        .await?
        .into_iter()
        .map(|t| TelemetryView {
            against_window: t.against(win.as_ref()),
            artifact: t.into(),
        })
        .collect();
    Ok(IncidentWindowView {
        window: win.map(Into::into),
        telemetry,
    })
}

/// The investigation's incident window and the telemetry read over windows.
#[utoipa::path(get, path = "/investigations/{id}/incident-window", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    responses((status = 200, body = IncidentWindowView), (status = 404, body = ErrorBody)))]
pub async fn get_window(
    _user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<IncidentWindowView>> {
    Ok(Json(view(&state, id).await?))
}

/// Sets or moves the incident window (editor role). A time that does not read, an end
/// before the start, a window over 32 days or one starting in the future is a 422 that
/// names the field; nothing changes.
#[utoipa::path(put, path = "/investigations/{id}/incident-window", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    request_body(content = IncidentWindowInput, content_type = "application/json"),
    responses(
        (status = 200, body = IncidentWindowView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn put_window(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Json<IncidentWindowView>> {
    user.require(Role::Editor)?;
    view(&state, id).await?;
    let input: IncidentWindowInput = body::parse(&body, "{start, end}")?;
    let now = chrono::Utc::now().timestamp() as f64;
    let (start, end) =
        crate::core::window::parse_incident(input.start.as_str(), input.end.as_str(), now)
            .map_err(AppError::Invalid)?;
    window::set(&state.pool, id, user.0.id, start, end).await?;
    Ok(Json(view(&state, id).await?))
}

/// Removes the incident window (editor role); 204 also when none was set.
#[utoipa::path(delete, path = "/investigations/{id}/incident-window", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    responses(
        (status = 204),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn delete_window(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    user.require(Role::Editor)?;
    view(&state, id).await?;
    window::clear(&state.pool, id, user.0.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
