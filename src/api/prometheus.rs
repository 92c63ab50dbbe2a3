//! Prometheus servers over the API: admins register sources; an investigation asks one
//! for a window and gets a `prometheus_range` artifact at once (202), fetched in the
//! background.

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body::{self, Text};
use super::wire::Source;
use crate::auth::{ApiUser, Role};
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::prometheus_range::{self as prom, WindowFields};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct SourceList {
    pub items: Vec<Source>,
}

/// The body of `POST /prometheus-sources`.
#[derive(Deserialize, ToSchema)]
pub struct SourceInput {
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100)]
    pub name: Text,
    /// The server's base URL; its host:port must be on the capture allowlist.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "http://10.0.0.9:9090")]
    pub url: Text,
    /// `none` (default), `bearer` or `basic`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub auth: Text,
    /// The basic-auth user name.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub username: Text,
    /// The bearer token or basic-auth password (kept for the fetches, never shown back).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub secret: Text,
}

/// The body of `POST /investigations/{id}/prometheus`.
#[derive(Deserialize, ToSchema)]
pub struct WindowInput {
    /// A registered source, by id or name (or give `url`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub source: Text,
    /// A server's base URL (no auth); its host:port must be on the capture allowlist.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub url: Text,
    /// The window's start: RFC 3339, `YYYY-MM-DD HH:MM[:SS]` (UTC) or Unix seconds.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T14:00:00Z")]
    pub start: Text,
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T15:00:00Z")]
    pub end: Text,
    /// Seconds between points of the series over time; raised so a series has at most
    /// 11,000 points. Default: about 300 points.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 1)]
    pub step: Text,
    /// `vllm` (default), `sglang` or `tgi`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub engine: Text,
}

#[derive(Serialize, ToSchema)]
pub struct WindowStarted {
    pub artifact_id: i64,
    /// `capturing`; poll the artifact for `done` or `failed`
    pub status: String,
    /// The artifact's API address.
    pub artifact: String,
}

/// The registered Prometheus sources (admins); secrets are never included.
#[utoipa::path(get, path = "/prometheus-sources", tag = "prometheus",
    responses((status = 200, body = SourceList), (status = 403, body = ErrorBody)))]
pub async fn list_sources(
    State(state): State<AppState>,
    me: ApiUser,
) -> ApiResult<Json<SourceList>> {
    me.require(Role::Admin)?;
    Ok(Json(SourceList {
        items: prom::list_sources(&state.pool)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    }))
}

/// Registers a Prometheus server (admins). Its host:port must be on the capture
/// allowlist (`/admin/capture-hosts`).
#[utoipa::path(post, path = "/prometheus-sources", tag = "prometheus",
    request_body(content = SourceInput, description = "{\"name\": \"fleet\", \"url\": \"http://10.0.0.9:9090\", \"auth\": \"bearer\", \"secret\": \"…\"}"),
    responses(
        (status = 201, body = Source),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create_source(
    State(state): State<AppState>,
    me: ApiUser,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Source>)> {
    me.require(Role::Admin)?;
    let input: SourceInput = body::parse(&body, "{name, url, auth?, username?, secret?}")?;
    let allowed = crate::capture::allowed(&state.pool).await?;
    let source = prom::check_source(
        input.name.as_str(),
        input.url.as_str(),
        input.auth.as_str(),
        input.username.as_str(),
        input.secret.as_str(),
        &allowed,
    )
    .map_err(AppError::Invalid)?;
    let id = prom::add_source(&state.pool, &source, me.0.id).await?;
    let row = prom::list_sources(&state.pool)
        .await?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| AppError::not_found(format!("source {id} was removed meanwhile")))?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// Removes a source (admins); artifacts fetched from it stay.
#[utoipa::path(delete, path = "/prometheus-sources/{id}", tag = "prometheus",
    params(("id" = i64, Path, description = "source id")),
    responses(
        (status = 204),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn delete_source(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    me.require(Role::Admin)?;
    if !prom::remove_source(&state.pool, id).await? {
        return Err(AppError::not_found(format!("there is no Prometheus source {id}")).into());
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Reads a Prometheus server over an incident window (editor role) and answers at once
/// with the `prometheus_range` artifact that will hold its answers: the window's latency
/// quantiles (from the histograms' bucket increases), gauges and counter rates over
/// time. A host:port not on the allowlist is a 422 (nothing stored); a server that
/// cannot be reached ends the artifact `failed` with the reason.
#[utoipa::path(post, path = "/investigations/{id}/prometheus", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    request_body(content = WindowInput, content_type = "application/json"),
    responses(
        (status = 202, body = WindowStarted),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn start_window(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<WindowStarted>)> {
    user.require(Role::Editor)?;
    let input: WindowInput = body::parse(&body, "{source or url, start, end, step?, engine?}")?;
    let fields = WindowFields {
        source: input.source.0,
        url: input.url.0,
        start: input.start.0,
        end: input.end.0,
        step: input.step.0,
        engine: input.engine.0,
    };
    let artifact_id = prom::begin(&state.artifacts(), id, &fields, user.0.id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(WindowStarted {
            artifact_id,
            status: "capturing".into(),
            artifact: format!("/api/v1/artifacts/{artifact_id}"),
        }),
    ))
}
