//! A proposal as one document: what the API returns and the page exports as JSON.

use serde::Serialize;
use sqlx::PgPool;

use crate::error::AppError;
use crate::proposals::{self, Event, EvidenceItem, Observation, Proposal};

/// A proposal as the API (and the JSON export) returns it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ProposalDoc {
    pub id: i64,
    /// The proposal page.
    pub url: String,
    pub title: String,
    pub owner: String,
    /// draft, in_review, approved, changes_requested, rejected or rolled_out
    pub state: String,
    /// Send it back with a review; a stale one gets 409.
    pub version: i32,
    /// The inputs as checked (defaults filled in).
    #[schema(value_type = Object)]
    pub input: serde_json::Value,
    /// `memory_fit` (the memory-fit estimator's results, max_model_len = prompt p95 +
    /// output p95), `kv_concurrency`, `batch`, `decode_step_ms`, `itl_p99_ms`,
    /// `ttft_p95_ms`, `tokens_per_s_per_replica`, `replicas_needed`,
    /// `cost_per_hour_usd`, `cost_per_million_tokens_usd`, the worked `figures`, and
    /// `runs`: each estimator call with its exact inputs and chain.
    #[schema(value_type = Object)]
    pub sizing: serde_json::Value,
    /// Replicas and cost if prompts, outputs or arrivals are 30 % / 50 % higher, or the
    /// prefix hit rate halves.
    #[schema(value_type = Vec<Object>)]
    pub sensitivity: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub evidence: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub history: serde_json::Value,
    #[schema(value_type = Vec<Object>)]
    pub observations: serde_json::Value,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

fn value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

pub fn doc(
    p: &Proposal,
    evidence: &[EvidenceItem],
    history: &[Event],
    observations: &[Observation],
) -> ProposalDoc {
    ProposalDoc {
        id: p.id,
        url: format!("/proposals/{}", p.id),
        title: p.title.clone(),
        owner: p.owner.clone(),
        state: p.state.slug().to_string(),
        version: p.version,
        input: value(&p.input),
        sizing: value(&p.sizing),
        sensitivity: value(&p.sensitivity),
        evidence: value(&evidence),
        history: value(&history),
        observations: value(&observations),
        created_at: p.created_at,
        updated_at: p.updated_at,
    }
}

/// The whole document of proposal `id` (404 when there is none).
pub async fn load(pool: &PgPool, id: i64) -> Result<ProposalDoc, AppError> {
    let p = proposals::get(pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no proposal {id}")))?;
    let evidence = proposals::evidence(pool, &p).await?;
    let history = proposals::events(pool, id, 0).await?;
    let observations = proposals::observations(pool, id).await?;
    Ok(doc(&p, &evidence, &history, &observations))
}
