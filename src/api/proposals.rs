//! Capacity proposals over the API: create one from its inputs (sized on the spot by the
//! estimators), read it, review it, attach what production measured after rollout.

use crate::extract::{Paging, Path};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::core::pairs;
use crate::core::proposal::{outcome, Score, JSON_INPUTS};
use crate::documents::proposal::{load, ProposalDoc};
use crate::error::{ApiResult, AppError};
use crate::proposals::{self};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_proposal, list_proposals))
        .routes(routes!(get_proposal))
        .routes(routes!(review_proposal))
        .routes(routes!(observe_proposal))
}

/// Sizes a deployment for a workload and SLOs with the estimators and stores it as a
/// draft. Body: `{"title", "question", "model" (catalog name) or "config" (config.json
/// object), "gpu_type", "gpus_per_replica", "tp", "weight_dtype", "kv_dtype", "engine",
/// "engine_version", "max_num_seqs", "max_num_batched_tokens", "arrival_rate",
/// "prompt_tokens_mean", "prompt_tokens_p95", "output_tokens_mean", "output_tokens_p95",
/// "prefix_hit_rate", "shared_prefix_tokens", "slo_ttft_p95_ms", "slo_itl_p99_ms",
/// "gpu_hour_usd", "headroom", "activation_dtype", …}`. Bad or impossible input (TP not
/// dividing the heads, a model that does not fit) answers 422 naming the field and what
/// would work; nothing is stored. An SLO the settings cannot meet is stored, with
/// `sizing.meets_slo` false and `sizing.slo_findings` saying which SLO fails, by how
/// much and what would meet it.
#[utoipa::path(post, path = "/proposals", tag = "proposals",
    request_body(content = Object, description = "{\"title\": \"chat-api\", \"question\": \"serve chat-api at 45 req/s\", \"model\": \"llama-3.1-8b\", \"gpu_type\": \"h100-sxm\", \"gpus_per_replica\": 1, \"engine\": \"vllm\", \"engine_version\": \"0.6.3\", \"arrival_rate\": 45, \"prompt_tokens_mean\": 1500, \"prompt_tokens_p95\": 4000, \"output_tokens_mean\": 300, \"output_tokens_p95\": 800, \"slo_ttft_p95_ms\": 800, \"slo_itl_p99_ms\": 60, \"gpu_hour_usd\": 2.5}"),
    responses(
        (status = 201, body = ProposalDoc),
        (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn create_proposal(
    user: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<ProposalDoc>)> {
    user.require(Role::Editor)?;
    let pairs =
        pairs::from_json(&super::json_body(&body)?, JSON_INPUTS).map_err(AppError::Invalid)?;
    let (input, sizing, sensitivity) = proposals::prepare(&pairs).map_err(AppError::Invalid)?;
    let id = proposals::create(&state.pool, user.0.id, &input, &sizing, &sensitivity).await?;
    Ok((StatusCode::CREATED, Json(load(&state.pool, id).await?)))
}

/// A stored proposal: inputs, sizing with every estimator run, sensitivity, evidence
/// (stale evidence names its difference), history and observations.
#[utoipa::path(get, path = "/proposals/{id}", tag = "proposals",
    params(("id" = i64, Path)),
    responses((status = 200, body = ProposalDoc), (status = 404, body = crate::error::ErrorBody)))]
async fn get_proposal(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<ProposalDoc>> {
    Ok(Json(load(&state.pool, id).await?))
}

fn text<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(|s| s.as_str())
}

/// Reviews a proposal like a pull request. Body: `{"state"?: "in_review" | "approved" |
/// "changes_requested" | "rejected" | "rolled_out" | "draft", "comment"?: "…",
/// "section"?: "general" | "deployment" | "workload" | "sizing" | "evidence",
/// "version": n}`; without a new state it is a comment. The owner cannot approve their
/// own proposal. A `version` older than the proposal's answers 409 with what changed.
#[utoipa::path(post, path = "/proposals/{id}/review", tag = "proposals",
    params(("id" = i64, Path)),
    request_body(content = Object, description = "{\"state\": \"approved\", \"comment\": \"sizing checks out\", \"section\": \"sizing\", \"version\": 2}"),
    responses(
        (status = 200, body = ProposalDoc),
        (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn review_proposal(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Json<ProposalDoc>> {
    user.require(Role::Editor)?;
    let v = super::json_body(&body)?;
    let version = v
        .get("version")
        .and_then(crate::core::json_input::whole_number)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| {
            AppError::field(
                "version",
                "is required: the proposal's version you reviewed (GET it for the current one)",
            )
        })?;
    proposals::review(
        &state.pool,
        id,
        user.0.id,
        version,
        text(&v, "state"),
        text(&v, "comment").unwrap_or(""),
        text(&v, "section"),
    )
    .await?;
    Ok(Json(load(&state.pool, id).await?))
}

/// Expected vs observed after rollout.
#[derive(Serialize, ToSchema)]
pub struct ObservedDoc {
    pub id: i64,
    pub url: String,
    /// One per observed figure: expected, observed, error_pct = (expected − observed) /
    /// observed × 100, and the estimator behind it.
    #[schema(value_type = Vec<Object>)]
    pub scores: Vec<Score>,
}

/// Attaches what production measured to a rolled-out proposal. Body: any subset of
/// `{"tokens_per_s_per_replica", "ttft_p95_ms", "itl_p99_ms",
/// "cost_per_million_tokens_usd"}`, optionally `"artifact_ids": [ids]` (request log,
/// Prometheus snapshot, bench) and `"note"`. Answers expected vs observed with the
/// error in %.
#[utoipa::path(post, path = "/proposals/{id}/observed", tag = "proposals",
    params(("id" = i64, Path)),
    request_body(content = Object, description = "{\"tokens_per_s_per_replica\": 4100, \"ttft_p95_ms\": 240}"),
    responses(
        (status = 201, body = ObservedDoc),
        (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn observe_proposal(
    user: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<ObservedDoc>)> {
    user.require(Role::Editor)?;
    let v = super::json_body(&body)?;
    let artifact_ids: Vec<i64> = match v.get("artifact_ids") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(a) => a
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .map(crate::core::json_input::positive_id)
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                AppError::field(
                    "artifact_ids",
                    "must be a list of artifact ids (positive integers), e.g. [12, 13]",
                )
            })?,
    };
    let note = text(&v, "note").unwrap_or("").to_string();
    let mut figures = v.clone();
    if let Some(o) = figures.as_object_mut() {
        o.remove("artifact_ids");
        o.remove("note");
    }
    let pairs = pairs::from_json(&figures, JSON_INPUTS).map_err(AppError::Invalid)?;
    let observed = outcome::parse_observed(&pairs).map_err(AppError::Invalid)?;
    let p = proposals::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no proposal {id}")))?;
    let scores =
        proposals::observe(&state.pool, &p, user.0.id, &observed, &artifact_ids, &note).await?;
    Ok((
        StatusCode::CREATED,
        Json(ObservedDoc {
            id,
            url: format!("/proposals/{id}"),
            scores,
        }),
    ))
}

/// A proposal in a list.
#[derive(Serialize, ToSchema)]
pub struct ProposalSummary {
    pub id: i64,
    /// The proposal's API address.
    pub url: String,
    pub title: String,
    pub owner: String,
    /// draft, in_review, approved, changes_requested, rejected or rolled_out
    pub state: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// Proposals, newest first, a page at a time.
#[utoipa::path(get, path = "/proposals", tag = "proposals",
    params(crate::extract::Paging),
    responses((status = 200, body = super::Page<ProposalSummary>), (status = 422, body = crate::error::ErrorBody)))]
async fn list_proposals(
    _: ApiUser,
    State(state): State<AppState>,
    paging: Paging,
) -> ApiResult<Json<super::Page<ProposalSummary>>> {
    super::no_filters(&paging)?;
    let rows = proposals::list(&state.pool, paging.after, paging.fetch()).await?;
    Ok(super::Page::new(
        &paging,
        rows,
        |p| p.id,
        |p| ProposalSummary {
            url: format!("/api/v1/proposals/{}", p.id),
            id: p.id,
            title: p.title,
            owner: p.owner,
            state: p.state.slug().to_string(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        },
    ))
}
