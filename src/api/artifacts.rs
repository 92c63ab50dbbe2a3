//! Artifacts over the API: upload (raw body or multipart), status and analysis, download.

use crate::extract::{Paging, Path};
use axum::extract::{RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::Json;
use futures::TryStreamExt;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::artifacts::{self, Artifact};
use crate::auth::{ApiUser, Role};
use crate::error::{ApiError, ApiResult, AppError};
use crate::files::download::download;
use crate::files::{check_declared_length, parse_upload_query, receive_multipart, UploadQuery};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_artifacts))
        .routes(routes!(get_artifact, delete_artifact))
        .routes(routes!(download_artifact))
}

/// The upload route, kept apart: it has no request timeout and no body-size default
/// (it streams up to the upload limit instead).
pub fn upload_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(upload_artifact))
}

#[derive(Serialize, ToSchema)]
#[schema(as = ArtifactCreated)]
pub struct Created {
    pub id: i64,
    /// request_log, vllm_bench, prometheus, pytorch_trace, ncu_csv, nsys_kern_sum, nsys_sqlite, gpu_telemetry, sweep, otlp_spans or unknown
    pub kind: String,
    /// queued, or not_analyzed for an unknown kind
    pub status: String,
}

/// Uploads a file. The body is the raw file (any content type but multipart), or a
/// multipart form with the file as a part; it is streamed to storage, never held whole.
/// The kind is detected from the content; analysis runs in the background.
///
/// With an `Idempotency-Key` header (1–200 printable characters, unique per upload), a
/// retry of an upload whose answer was lost (a 503 while the database restarted, a
/// dropped connection) answers 200 with the artifact stored the first time, and the
/// body is not read again.
#[utoipa::path(post, path = "/artifacts", tag = "artifacts", params(UploadQuery,
        ("Idempotency-Key" = Option<String>, Header,
         description = "the same key on a retry returns the first upload")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "the file"),
    responses(
        (status = 200, body = Created, description = "stored before under this Idempotency-Key"),
        (status = 201, body = Created),
        (status = 413, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn upload_artifact(
    user: ApiUser,
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    req: Request,
) -> ApiResult<(StatusCode, Json<Created>)> {
    user.require(Role::Editor)?;
    let (query, owner) = parse_upload_query(raw.as_deref())?;
    let key = idempotency_key(req.headers())?;
    if let Some(key) = &key {
        if let Some(first) = artifacts::by_idempotency_key(&state.pool, user.0.id, key).await? {
            return Ok((StatusCode::OK, Json(Created::of(first))));
        }
    }
    check_declared_length(&req, state.config.upload_limit)?;
    let multipart = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let artifact = if multipart {
        receive_multipart(
            &state.artifacts(),
            req,
            owner,
            query.name.as_deref(),
            user.0.id,
            key.as_deref(),
        )
        .await?
    } else {
        let name =
            artifacts::clean_name(query.name.as_deref()).map_err(|e| AppError::Invalid(vec![e]))?;
        let body = req
            .into_body()
            .into_data_stream()
            .map_err(|e| e.to_string());
        artifacts::receive(
            &state.artifacts(),
            owner,
            &name,
            body,
            user.0.id,
            key.as_deref(),
        )
        .await?
    };
    Ok((StatusCode::CREATED, Json(Created::of(artifact))))
}

impl Created {
    fn of(a: artifacts::Artifact) -> Created {
        Created {
            id: a.id,
            kind: a.kind,
            status: a.status,
        }
    }
}

/// The `Idempotency-Key` header, when sent: 1–200 printable ASCII characters.
fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<String>, AppError> {
    let Some(raw) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    raw.to_str()
        .ok()
        .map(str::trim)
        .filter(|k| (1..=200).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()))
        .map(|k| Some(k.to_string()))
        .ok_or_else(|| {
            AppError::field(
                "Idempotency-Key",
                "1 to 200 printable characters without spaces (a UUID, say)",
            )
        })
}

#[derive(Serialize, ToSchema)]
pub struct ArtifactDoc {
    pub id: i64,
    pub name: String,
    pub kind: String,
    /// queued, analyzing, done, failed, not_analyzed, or capturing while a live
    /// capture's window runs
    pub status: String,
    pub error: Option<String>,
    /// The file's size as uploaded, bytes.
    pub size_bytes: i64,
    /// What the blob store holds for it, bytes: less than `size_bytes` when stored
    /// compressed.
    pub stored_bytes: i64,
    /// How the file is kept on disk: identity (as uploaded, e.g. a file compressed
    /// already) or zstd. Downloads always return the bytes as uploaded.
    pub blob_encoding: String,
    /// True while the file is kept as uploaded, to be compressed once its analysis is
    /// over (then `blob_encoding` becomes zstd and `stored_bytes` shrinks).
    pub compress_pending: bool,
    pub progress_bytes: i64,
    /// The SHA-256 of the bytes as uploaded (the download's hash), in hex.
    pub sha256: String,
    pub investigation: Option<i64>,
    pub journal_entry: Option<i64>,
    pub analyzer_version: Option<i32>,
    /// The kind's analysis (see the contract), once done.
    #[schema(value_type = Option<Object>)]
    pub analysis: Option<serde_json::Value>,
    /// For a live capture: the URL it scraped.
    pub source_url: Option<String>,
    /// True when the stored analysis cannot be read back (then `analysis` is null and
    /// `damaged_reason` says why): re-analyze or delete the artifact.
    pub damaged: bool,
    pub damaged_reason: Option<String>,
}

impl From<Artifact> for ArtifactDoc {
    fn from(a: Artifact) -> Self {
        ArtifactDoc {
            id: a.id,
            name: a.name,
            kind: a.kind,
            status: a.status,
            error: a.error,
            size_bytes: a.size_bytes,
            stored_bytes: a.stored_bytes,
            blob_encoding: a.blob_encoding.slug().to_string(),
            compress_pending: a.compress_pending,
            progress_bytes: a.progress_bytes,
            sha256: a.sha256,
            investigation: a.investigation_id,
            journal_entry: a.journal_entry_id,
            analyzer_version: a.analyzer_version,
            analysis: a.analysis.as_ref().map(|x| x.to_json()),
            source_url: a.source_url,
            damaged: a.damaged.is_some(),
            damaged_reason: a.damaged,
        }
    }
}

async fn find(state: &AppState, id: i64) -> Result<Artifact, AppError> {
    artifacts::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no artifact {id}")))
}

/// An artifact's status and, once analyzed, its analysis.
#[utoipa::path(get, path = "/artifacts/{id}", tag = "artifacts",
    params(("id" = i64, Path)),
    responses((status = 200, body = ArtifactDoc), (status = 404, body = crate::error::ErrorBody)))]
async fn get_artifact(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<ArtifactDoc>> {
    Ok(Json(find(&state, id).await?.into()))
}

/// Deletes an artifact for good (its file, analysis, request rows and links); only an
/// admin or the editor who uploaded it. Refused (409) while a comparison uses it.
#[utoipa::path(delete, path = "/artifacts/{id}", tag = "artifacts",
    params(("id" = i64, Path)),
    responses((status = 204, description = "deleted"),
        (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody)))]
async fn delete_artifact(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    artifacts::delete(&state.pool, &state.blobs, id, &user.0)
        .await
        .map_err(|e| ApiError(e.into()))?;
    Ok(StatusCode::NO_CONTENT)
}

/// The original bytes, as uploaded, as an attachment.
#[utoipa::path(get, path = "/artifacts/{id}/download", tag = "artifacts",
    params(("id" = i64, Path)),
    responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>),
        (status = 409, body = crate::error::ErrorBody)))]
async fn download_artifact(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Response> {
    let artifact = find(&state, id).await?;
    Ok(download(&state.blobs, &artifact).await?)
}

/// An artifact in a list (the analysis itself is on `GET /artifacts/{id}`).
#[derive(Serialize, ToSchema)]
pub struct ArtifactSummary {
    pub id: i64,
    /// The artifact's API address.
    pub url: String,
    pub name: String,
    pub kind: String,
    /// queued, analyzing, done, failed or not_analyzed
    pub status: String,
    pub size_bytes: i64,
    pub investigation: Option<i64>,
    pub uploader: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// True when the stored analysis cannot be read back.
    pub damaged: bool,
}

/// Uploads, newest first, a page at a time; `investigation` keeps one investigation's.
#[utoipa::path(get, path = "/artifacts", tag = "artifacts",
    params(crate::extract::Paging, ("investigation" = Option<i64>, Query, minimum = 1, description = "only this investigation's uploads")),
    responses((status = 200, body = super::Page<ArtifactSummary>), (status = 422, body = crate::error::ErrorBody)))]
async fn list_artifacts(
    _: ApiUser,
    State(state): State<AppState>,
    paging: Paging,
) -> ApiResult<Json<super::Page<ArtifactSummary>>> {
    let mut investigation = None;
    for (key, value) in paging.filters() {
        match key.as_str() {
            "investigation" => {
                investigation = Some(crate::core::json_input::typed_id(value).ok_or_else(|| {
                    AppError::field(
                        "investigation",
                        format!("expected an investigation id (a positive integer), got {value:?}"),
                    )
                })?)
            }
            other => {
                return Err(AppError::field(
                    other,
                    "unknown parameter (after, limit, investigation)",
                )
                .into())
            }
        }
    }
    let rows = artifacts::list(&state.pool, investigation, paging.after, paging.fetch()).await?;
    Ok(super::Page::new(
        &paging,
        rows,
        |a| a.id,
        |a| ArtifactSummary {
            url: format!("/api/v1/artifacts/{}", a.id),
            id: a.id,
            name: a.name,
            kind: a.kind,
            status: a.status,
            size_bytes: a.size_bytes,
            investigation: a.investigation_id,
            uploader: a.uploader,
            created_at: a.created_at,
            damaged: a.damaged.is_some(),
        },
    ))
}
