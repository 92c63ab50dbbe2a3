//! OTLP span windows over the API: the windows received (per service and window), a
//! window's analysis on demand, and an investigation's "spans of service X between T1
//! and T2". The receiver itself is `POST /v1/traces` (outside `/api/v1`, see docs/guides/otlp.md).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::body::{self, Text};
use super::wire::Window;
use crate::auth::{ApiUser, Role};
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::extract::{Paging, Path};
use crate::otlp::{self, TakeFields};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_windows))
        .routes(routes!(analyze_window))
        .routes(routes!(take_spans))
}

/// The body of `POST /investigations/{id}/otlp-spans`.
#[derive(Deserialize, ToSchema)]
pub struct SpansInput {
    /// The `service.name` the spans were sent under.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "vllm-llama3")]
    pub service: Text,
    /// RFC 3339, `YYYY-MM-DD HH:MM[:SS]` (UTC) or Unix seconds; spans that arrived at or
    /// after it.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T14:00:00Z")]
    pub start: Text,
    /// Spans that arrived before it.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "2026-12-02T15:00:00Z")]
    pub end: Text,
}

#[derive(Serialize, ToSchema)]
pub struct SpansQueued {
    pub artifact_id: i64,
    /// `queued`; poll the artifact for `done` or `failed`.
    pub status: String,
    /// The artifact's API address.
    pub artifact: String,
}

fn queued(artifact_id: i64) -> Json<SpansQueued> {
    Json(SpansQueued {
        artifact_id,
        status: "queued".into(),
        artifact: format!("/api/v1/artifacts/{artifact_id}"),
    })
}

/// The span windows received on `/v1/traces`, newest first; `service` keeps one
/// service's. A window holds one service's request spans over `--otlp-window-minutes`.
#[utoipa::path(get, path = "/otlp/windows", tag = "otlp",
    params(crate::extract::Paging, ("service" = Option<String>, Query, description = "only this service's windows")),
    responses((status = 200, body = super::Page<Window>), (status = 422, body = ErrorBody)))]
async fn list_windows(
    _: ApiUser,
    State(state): State<AppState>,
    paging: Paging,
) -> ApiResult<Json<super::Page<Window>>> {
    let mut service = None;
    for (key, value) in paging.filters() {
        match key.as_str() {
            "service" => service = Some(value.clone()),
            other => {
                return Err(
                    AppError::field(other, "unknown parameter (after, limit, service)").into(),
                )
            }
        }
    }
    let rows = otlp::list(
        &state.pool,
        service.as_deref(),
        paging.after,
        paging.fetch(),
    )
    .await?;
    Ok(super::Page::new(&paging, rows, |w| w.id, Window::from))
}

/// Builds a window's artifact from the spans received so far and queues its analysis
/// (editor role), also before the window closes; it is built again when it closes.
#[utoipa::path(post, path = "/otlp/windows/{id}/analyze", tag = "otlp",
    params(("id" = i64, Path, description = "window id")),
    responses(
        (status = 202, body = SpansQueued),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn analyze_window(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<(StatusCode, Json<SpansQueued>)> {
    user.require(Role::Editor)?;
    match otlp::build(&state.artifacts(), id).await? {
        Some(artifact) => Ok((StatusCode::ACCEPTED, queued(artifact))),
        None => {
            Err(AppError::field("id", format!("window {id} holds no request spans yet")).into())
        }
    }
}

/// Puts the request spans of a service that arrived between two times into the
/// investigation as an `otlp_spans` artifact, analysed like a request log (editor role).
/// 422 naming the field when none match (nothing is stored).
#[utoipa::path(post, path = "/investigations/{id}/otlp-spans", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    request_body(content = SpansInput, content_type = "application/json"),
    responses(
        (status = 202, body = SpansQueued),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn take_spans(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<SpansQueued>)> {
    user.require(Role::Editor)?;
    let input: SpansInput = body::parse(&body, "{service, start, end}")?;
    let fields = TakeFields {
        service: input.service.0,
        start: input.start.0,
        end: input.end.0,
    };
    let artifact = otlp::take(
        &state.artifacts(),
        id,
        &fields,
        state.config.otlp.max_rows_per_window,
        user.0.id,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, queued(artifact)))
}
