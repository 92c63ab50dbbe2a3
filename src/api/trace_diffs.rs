//! Trace diffs over the API: start one from two analyzed PyTorch traces, read it back.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::error::{ApiResult, AppError};
use crate::extract::Path;
use crate::state::AppState;
use crate::trace_diffs::{self, Ask, TraceDiff};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_trace_diff))
        .routes(routes!(get_trace_diff))
}

/// How many names fall in each class (HTA `ops_diff`).
#[derive(Serialize, ToSchema)]
pub struct SummaryDoc {
    /// Names absent in control, present in test.
    pub added: u64,
    /// Names present in control, absent in test.
    pub deleted: u64,
    /// In both, more often in test.
    pub increased: u64,
    /// In both, less often in test.
    pub decreased: u64,
    /// In both, as often.
    pub unchanged: u64,
}

/// One op or kernel name compared.
#[derive(Serialize, ToSchema)]
pub struct OpDoc {
    pub name: String,
    pub control_count: u64,
    /// Summed duration in control (µs).
    pub control_us: f64,
    pub test_count: u64,
    /// Summed duration in test (µs).
    pub test_us: f64,
    /// test − control.
    pub diff_count: i64,
    /// test − control (µs).
    pub diff_us: f64,
    /// added, deleted, increased, decreased or unchanged
    pub change: String,
}

/// What one side counted.
#[derive(Serialize, ToSchema)]
pub struct SideDoc {
    pub artifact: i64,
    pub name: String,
    /// The ProfilerStep number compared (the trace's first); null: the whole trace.
    pub iteration: Option<i64>,
    pub events: u64,
    /// Summed duration of the events counted (µs).
    pub dur_us: f64,
    /// Whether times were rounded to whole µs as HTA does (float timestamps).
    pub rounded: bool,
    pub notes: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TraceDiffDoc {
    pub id: i64,
    /// The diff's page.
    pub url: String,
    /// analyzing, done or failed
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    pub investigation: Option<i64>,
    /// The first control trace.
    pub control: i64,
    /// The first test trace.
    pub test: i64,
    /// Every control trace (several: the ranks of one run, summed per name).
    pub control_artifacts: Vec<i64>,
    /// Every test trace.
    pub test_artifacts: Vec<i64>,
    /// Null until done.
    pub summary: Option<SummaryDoc>,
    /// Sorted by |diff_us|, largest first; at most 5000 rows (the smallest moves are
    /// left out past that, counted in `ops_not_kept`).
    pub ops: Vec<OpDoc>,
    pub ops_not_kept: u64,
    /// The top mover in words ("the change moved 30.8 ms into cudaMemcpyAsync, +764 calls").
    pub headline: Option<String>,
    pub control_side: Option<SideDoc>,
    pub test_side: Option<SideDoc>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

fn doc(d: &TraceDiff, control_artifacts: Vec<i64>, test_artifacts: Vec<i64>) -> TraceDiffDoc {
    let r = d.result.as_ref().map(|r| &r.0);
    let side = |s: &crate::core::analyze::pytorch_trace::trace_diff::SideInfo,
                artifact: i64,
                name: &str| SideDoc {
        artifact,
        name: name.to_string(),
        iteration: s.iteration,
        events: s.events,
        dur_us: s.dur_us,
        rounded: s.rounded,
        notes: s.notes.clone(),
    };
    TraceDiffDoc {
        id: d.id,
        url: d.url(),
        status: d.status.clone(),
        error: d.error.clone(),
        investigation: d.investigation_id,
        control: d.control_artifact_id,
        test: d.test_artifact_id,
        control_artifacts,
        test_artifacts,
        summary: r.map(|r| SummaryDoc {
            added: r.summary.added,
            deleted: r.summary.deleted,
            increased: r.summary.increased,
            decreased: r.summary.decreased,
            unchanged: r.summary.unchanged,
        }),
        ops: r
            .map(|r| {
                r.ops
                    .iter()
                    .map(|o| OpDoc {
                        name: o.name.clone(),
                        control_count: o.control_count,
                        control_us: o.control_us,
                        test_count: o.test_count,
                        test_us: o.test_us,
                        diff_count: o.diff_count,
                        diff_us: o.diff_us,
                        change: o.change.slug().to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        ops_not_kept: r.map_or(0, |r| r.ops_not_kept),
        headline: d.headline(),
        control_side: r.map(|r| side(&r.control, d.control_artifact_id, &d.control_name)),
        test_side: r.map(|r| side(&r.test, d.test_artifact_id, &d.test_name)),
        created_at: d.created_at,
    }
}

async fn load(state: &AppState, id: i64) -> Result<TraceDiffDoc, AppError> {
    let d = trace_diffs::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no trace diff {id}")))?;
    let (control, test) = trace_diffs::sides(&state.pool, id).await?;
    let ids = |side: Vec<(i64, String)>| side.into_iter().map(|(id, _)| id).collect();
    Ok(doc(&d, ids(control), ids(test)))
}

/// Diffs two analyzed PyTorch traces op by op and kernel by kernel, with HolisticTraceAnalysis
/// TraceDiff's definitions (its first ProfilerStep, CPU ops and GPU kernels, kernels
/// joined to their launch). Body: `{"control": artifact id or [ids], "test": artifact id
/// or [ids], "investigation"?: id}`: several ids make a side of several ranks, summed per
/// name (at most 64); without an investigation, the traces' own. Answers 201
/// with the result when it is ready within a few seconds, else 202 with status
/// `analyzing` (read it back until `done` or `failed`). Bad input answers 422 naming
/// the field; nothing is stored.
#[utoipa::path(post, path = "/trace-diffs", tag = "trace diffs",
    request_body(content = Object, description = "{\"control\": 12, \"test\": 13}"),
    responses(
        (status = 201, body = TraceDiffDoc),
        (status = 202, body = TraceDiffDoc),
        (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn create_trace_diff(
    user: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<TraceDiffDoc>)> {
    user.require(Role::Editor)?;
    let ask = Ask::from_json(&super::json_body(&body)?).map_err(AppError::Invalid)?;
    let (id, finished) = trace_diffs::start(
        &state.pool,
        &state.blobs,
        state.config.max_decompressed_bytes,
        &ask,
        user.0.id,
    )
    .await?;
    let code = if finished {
        StatusCode::CREATED
    } else {
        StatusCode::ACCEPTED
    };
    Ok((code, Json(load(&state, id).await?)))
}

/// A trace diff: status, class counts, the rows by time moved, and the headline.
#[utoipa::path(get, path = "/trace-diffs/{id}", tag = "trace diffs",
    params(("id" = i64, Path)),
    responses((status = 200, body = TraceDiffDoc), (status = 404, body = crate::error::ErrorBody)))]
async fn get_trace_diff(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<TraceDiffDoc>> {
    Ok(Json(load(&state, id).await?))
}
