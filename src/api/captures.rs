//! Live `/metrics` captures over the API: start one on an investigation; its artifact
//! reports progress (`capturing`, then `queued`/`done` or `failed` with the reason).

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::error::ApiResult;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(start_capture))
}

/// What to capture.
// Each field is taken as the form's field would be (a number or its text), so the
// capture's own checks name what is wrong with it.
#[derive(Deserialize, ToSchema)]
pub struct CaptureBody {
    /// The engine's metrics URL; its host:port must be on the admin's allowlist.
    #[serde(default)]
    #[schema(value_type = String, required = true, example = "http://10.0.0.5:8000/metrics")]
    url: Value,
    /// The window, 1 to 3600 seconds.
    #[serde(default)]
    #[schema(value_type = u32, required = true, example = 60, minimum = 1, maximum = 3600)]
    seconds: Value,
    /// Seconds between scrapes (≥ 1); absent: only at the start and the end.
    #[serde(default)]
    #[schema(value_type = Option<u32>, example = 5, minimum = 1)]
    interval_s: Value,
}

#[derive(Serialize, ToSchema)]
pub struct CaptureStarted {
    pub artifact_id: i64,
    /// `capturing`; poll the artifact for `done` or `failed`
    pub status: String,
    /// The artifact's API address.
    pub artifact: String,
}

/// A JSON value as the text a form field would carry (numbers as written).
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Starts capturing the URL's `/metrics` for the window (editor role) and answers at
/// once with the artifact that will hold the scrapes: at the start, every `interval_s`,
/// and at the end. A host:port not on the allowlist is a 422 naming the rule (nothing
/// is stored); redirects are not followed; a scrape over 8 MiB or 10 s fails the
/// capture with the reason on the artifact.
#[utoipa::path(post, path = "/investigations/{id}/captures", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    request_body(content = CaptureBody, content_type = "application/json"),
    responses(
        (status = 202, body = CaptureStarted),
        (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn start_capture(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<CaptureStarted>)> {
    user.require(Role::Editor)?;
    let input: CaptureBody = super::body::parse(&body, "{url, seconds, interval_s?}")?;
    let (url, seconds, interval) = (
        as_text(&input.url),
        as_text(&input.seconds),
        as_text(&input.interval_s),
    );
    let artifact_id = crate::capture::begin(
        &state.artifacts(),
        id,
        [&url, &seconds, &interval],
        user.0.id,
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(CaptureStarted {
            artifact_id,
            status: "capturing".into(),
            artifact: format!("/api/v1/artifacts/{artifact_id}"),
        }),
    ))
}
