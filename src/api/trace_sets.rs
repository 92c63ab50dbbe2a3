//! Trace sets over the API: group the rank traces of one run, read the set back.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::core::analyze::trace_set::MAX_RANKS;
use crate::error::{ApiResult, AppError};
use crate::extract::Path;
use crate::state::AppState;
use crate::trace_sets::{self, Ask};

/// The upload of a whole set (streams large bodies: no timeout, no body limit).
pub fn upload_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(upload_trace_set))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_trace_set))
        .routes(routes!(get_trace_set))
}

/// One trace of the set.
#[derive(Serialize, ToSchema)]
pub struct MemberDoc {
    pub artifact: i64,
    pub name: String,
    /// The trace's own analysis status: queued, analyzing, done or failed.
    pub status: String,
    pub error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TraceSetDoc {
    pub id: i64,
    /// The set's page.
    pub url: String,
    pub name: String,
    /// analyzing (ranks still being analysed), done or failed
    pub status: String,
    /// Why it failed (a rank named twice or not at all, no rank analysed).
    pub error: Option<String>,
    pub investigation: Option<i64>,
    pub artifacts: Vec<MemberDoc>,
    /// Null until done. `ranks[]`: rank, artifact_id, name, `temporal` (HTA temporal
    /// breakdown, µs), `comm_comp_overlap_pct` (HTA `get_comm_comp_overlap`: share of
    /// communication-kernel time overlapped by computation, %), `comm_us`, `step_us`,
    /// `compute_per_step_us`, `comm_per_step_us` (means over the steps all ranks share),
    /// `busy` (busy fraction in 120 buckets of the rank's GPU window), `window_us`;
    /// `failed[]`: artifact_id, name, reason; `world_size`, `missing_ranks`;
    /// `kernel_types[]`: kernel_type, us, pct (HTA `get_gpu_kernel_breakdown` with memory
    /// kernels, summed over the ranks); `collectives[]` per step: name, count, us,
    /// bytes, ranks; `straggler`: rank (null: none), skew_ms, skew_pct, evidence, steps;
    /// `notes`.
    #[schema(value_type = Option<Object>)]
    pub summary: Option<serde_json::Value>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
}

async fn load(state: &AppState, id: i64) -> Result<TraceSetDoc, AppError> {
    let s = trace_sets::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no trace set {id}")))?;
    let members = trace_sets::members(&state.pool, id).await?;
    Ok(TraceSetDoc {
        id: s.id,
        url: s.url(),
        name: s.name.clone(),
        status: s.status.clone(),
        error: s.error.clone(),
        investigation: s.investigation_id,
        artifacts: members
            .into_iter()
            .map(|(artifact, name, status, error)| MemberDoc {
                artifact,
                name,
                status,
                error,
            })
            .collect(),
        summary: s
            .summary()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| AppError::Internal(e.into()))?,
        created_at: s.created_at,
        finished_at: s.finished_at,
    })
}

/// The body of `POST /trace-sets`, read once into the store's `Ask` by its `from_json`
/// (which names every problem at once, as the page's form does), and described in the
/// document by this type.
pub struct TraceSetAsk(Ask);

impl TraceSetAsk {
    fn parse(body: &[u8]) -> Result<TraceSetAsk, AppError> {
        Ask::from_json(&super::json_body(body)?)
            .map(TraceSetAsk)
            .map_err(AppError::Invalid)
    }
}

impl utoipa::PartialSchema for TraceSetAsk {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::body::schema(serde_json::json!({
            "type": "object",
            "description": "The body of `POST /trace-sets`.",
            "required": ["name", "artifacts"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 200,
                    "description": "The run the ranks are from, 1–200 characters."},
                "artifacts": {"type": "array", "minItems": 1, "maxItems": MAX_RANKS,
                    "items": {"type": "integer", "format": "int64"},
                    "description": "The rank traces: PyTorch-trace artifact ids, each once."},
                "investigation": {"type": ["integer", "null"], "format": "int64",
                    "description": "The investigation the set belongs to (default: its traces')."}
            }
        }))
    }
}

impl ToSchema for TraceSetAsk {}

/// The multipart body of `POST /trace-sets/upload`.
#[derive(ToSchema)]
#[allow(dead_code)] // describes the body in the OpenAPI document
pub struct TraceSetUpload {
    /// The set's name (or `name` in the query), before the files.
    pub name: Option<String>,
    /// The rank traces, or archives of the profiler folder.
    #[schema(value_type = Vec<String>, format = Binary)]
    pub file: Vec<String>,
}

/// A new set: 201 when already summarised, 202 while its ranks are analysed.
async fn answer(state: &AppState, id: i64) -> ApiResult<(StatusCode, Json<TraceSetDoc>)> {
    let doc = load(state, id).await?;
    let code = if doc.status == "analyzing" {
        StatusCode::ACCEPTED
    } else {
        StatusCode::CREATED
    };
    Ok((code, Json(doc)))
}

/// Groups the rank traces of one distributed run (PyTorch trace artifacts, 1 to 1024,
/// each with its `distributedInfo.rank`). Body: `{"name": text, "artifacts": [id, …],
/// "investigation"?: id}`; without an investigation, the traces' own. Each rank is
/// analysed by the artifact queue (again, when it was analysed before the set figures
/// existed); the set is summarised when all have finished: 201 when that is already so,
/// else 202 with status `analyzing` (read it back until `done` or `failed`). A rank
/// whose analysis failed is named in `summary.failed`; a rank named twice, or a trace
/// without its rank, fails the set with the artifacts named. Bad input answers 422
/// naming the field; nothing is stored.
#[utoipa::path(post, path = "/trace-sets", tag = "trace sets",
    request_body(content = TraceSetAsk, description = "{\"name\": \"TP=4 decode\", \"artifacts\": [12, 13, 14, 15]}"),
    responses(
        (status = 201, body = TraceSetDoc),
        (status = 202, body = TraceSetDoc),
        (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn create_trace_set(
    user: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<TraceSetDoc>)> {
    user.require(Role::Editor)?;
    let TraceSetAsk(ask) = TraceSetAsk::parse(&body)?;
    let id = trace_sets::create(&state.pool, &ask, user.0.id).await?;
    state.jobs.notify_one();
    answer(&state, id).await
}

/// Uploads the rank traces of one run and makes a set of them: a multipart body whose
/// file parts are PyTorch traces (`.json`, `.json.gz`), or archives of a profiler output
/// folder (`.tar`, `.tar.gz`/`.tgz`, `.zip`) whose `.json`/`.json.gz` members are the
/// traces. Each trace becomes an artifact (named `archive:member` when it came from an
/// archive) analysed like any upload; the set follows as `POST /trace-sets` makes it.
/// `name` (the set's) is required: in the query, or as a form field before the files. A file that is not a PyTorch trace, a damaged archive
/// or a file over the upload limit refuses the whole upload: the traces it had stored
/// are deleted again.
#[utoipa::path(post, path = "/trace-sets/upload", tag = "trace sets",
    params(crate::files::UploadQuery),
    request_body(content = TraceSetUpload, content_type = "multipart/form-data", description = "the rank traces, or archives of them"),
    responses(
        (status = 201, body = TraceSetDoc),
        (status = 202, body = TraceSetDoc),
        (status = 400, body = crate::error::ErrorBody, description = "the body is not multipart/form-data that can be read"),
        (status = 403, body = crate::error::ErrorBody),
        (status = 413, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn upload_trace_set(
    user: ApiUser,
    State(state): State<AppState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    req: axum::extract::Request,
) -> ApiResult<(StatusCode, Json<TraceSetDoc>)> {
    user.require(Role::Editor)?;
    let id =
        crate::files::trace_set::upload(&state.artifacts(), req, raw.as_deref(), &user.0).await?;
    answer(&state, id).await
}

/// A trace set: its ranks' status and, once done, the summary.
#[utoipa::path(get, path = "/trace-sets/{id}", tag = "trace sets",
    params(("id" = i64, Path)),
    responses((status = 200, body = TraceSetDoc), (status = 404, body = crate::error::ErrorBody)))]
async fn get_trace_set(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<TraceSetDoc>> {
    Ok(Json(load(&state, id).await?))
}
