//! "Seen before" and "related": past investigations and entries with the same metric
//! (and dominant phase, when known), ranked by the documented similarity score
//! ([`crate::core::recall::similarity`]).

use chrono::NaiveDate;
use serde::Serialize;
use sqlx::PgPool;

use crate::core::recall::similarity::{similarity, Symptom};
use crate::core::recall::Profile;

/// Most items a list shows.
pub const LIMIT: usize = 5;
/// Candidates scored at most (the most recent ones with the same symptom).
const CANDIDATES: i64 = 500;

#[derive(Debug, Clone, Serialize)]
pub struct SimilarItem {
    pub kind: String,
    pub id: i64,
    pub title: String,
    pub url: String,
    pub date: NaiveDate,
    pub diagnosis: String,
    pub change: String,
    pub score: f64,
    /// The parts of the score, for a tooltip: "metric 1, phase 1, model 0.5, …".
    pub why: String,
    /// Its incident window's shape in words ("queue rising, KV cache full"), or "".
    pub window: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    kind: String,
    source_id: i64,
    title: String,
    url: String,
    doc_date: NaiveDate,
    diagnosis: String,
    change: String,
    text_a: String,
    metric: Option<String>,
    percentile: Option<String>,
    phase: Option<String>,
    regime: Option<String>,
    verdict: Option<String>,
    model: Option<String>,
    gpu: Option<String>,
    engine: Option<String>,
    engine_version: Option<String>,
    prompt_tokens: Option<f64>,
    output_tokens: Option<f64>,
    investigation_id: Option<i64>,
    window_shape: Option<String>,
}

impl Row {
    fn profile(&self) -> Profile {
        Profile {
            metric: self.metric.clone(),
            percentile: self.percentile.clone(),
            phase: self.phase.clone(),
            regime: self.regime.clone(),
            verdict: self.verdict.clone(),
            model: self.model.clone(),
            gpu: self.gpu.clone(),
            engine: self.engine.clone(),
            engine_version: self.engine_version.clone(),
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.output_tokens,
            window_shape: self.window_shape.clone(),
        }
    }
}

const COLUMNS: &str = "d.kind, d.source_id, x.title, x.url, d.doc_date, x.diagnosis, x.change, \
     x.text_a, d.metric, d.percentile, d.phase, d.regime, d.verdict, d.model, d.gpu, d.engine, \
     d.engine_version, d.prompt_tokens, d.output_tokens, d.investigation_id, d.window_shape";

/// Whether a change to the subject still waits for the background indexer (then its
/// list may be out of date for about a second).
pub async fn is_indexing(pool: &PgPool, kind: &str, id: i64) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM search_stale WHERE kind = $1 AND source_id = $2)",
    )
    .bind(kind)
    .bind(id)
    .fetch_one(pool)
    .await
}

/// What the list is for, when there is one: `None` when the subject does not exist;
/// an empty list when its metric (or, for an investigation, its phase) is unknown, or
/// when it exists but the search index has not caught up with it yet (it is indexed in
/// the background, within about a second of being saved).
pub async fn similar_to(
    pool: &PgPool,
    kind: &str,
    id: i64,
) -> sqlx::Result<Option<(Profile, Vec<SimilarItem>)>> {
    let subject: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM search_documents d JOIN search_texts x USING (kind, source_id) \
         WHERE d.kind = $1 AND d.source_id = $2"
    ))
    .bind(kind)
    .bind(id)
    .fetch_optional(pool)
    .await?;
    let Some(subject) = subject else {
        let table = match kind {
            "investigation" => "investigations",
            "journal" => "journal_entries",
            _ => return Ok(None),
        };
        let exists: bool = sqlx::query_scalar(&format!(
            "SELECT EXISTS (SELECT 1 FROM {table} WHERE id = $1)"
        ))
        .bind(id)
        .fetch_one(pool)
        .await?;
        return Ok(exists.then(|| (Profile::default(), Vec::new())));
    };
    let profile = subject.profile();
    // An investigation is compared once step 1 and step 2 give its metric and phase.
    let ready = profile.metric.is_some() && (kind != "investigation" || profile.phase.is_some());
    if !ready {
        return Ok(Some((profile, Vec::new())));
    }
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM search_documents d JOIN search_texts x USING (kind, source_id) \
         WHERE d.kind IN ('journal', 'investigation', 'proposal') AND d.metric = $1 \
         AND ($2::text IS NULL OR d.phase = $2) \
         AND NOT (d.kind = $3 AND d.source_id = $4) \
         AND ($5::bigint IS NULL OR d.investigation_id IS DISTINCT FROM $5) \
         AND NOT (d.kind = 'investigation' AND EXISTS (SELECT 1 FROM search_documents j \
             WHERE j.kind = 'journal' AND j.investigation_id = d.source_id)) \
         ORDER BY d.doc_date DESC LIMIT $6"
    ))
    .bind(&profile.metric)
    .bind(&profile.phase)
    .bind(kind)
    .bind(id)
    .bind(subject.investigation_id)
    .bind(CANDIDATES)
    .fetch_all(pool)
    .await?;
    let me = Symptom {
        profile: &profile,
        text: &subject.text_a,
    };
    let mut items: Vec<SimilarItem> = rows
        .into_iter()
        .map(|r| {
            let p = r.profile();
            let s = similarity(
                &me,
                &Symptom {
                    profile: &p,
                    text: &r.text_a,
                },
            );
            let s_parts = s.parts;
            SimilarItem {
                why: format!(
                    "metric {:.2}, phase {:.2}, regime {:.2}, model {:.2}, GPU {:.2}, engine version {:.2}, workload {:.2}, window {:.2}, text {:.2}",
                    s_parts.metric, s_parts.phase, s_parts.regime, s_parts.model, s_parts.gpu, s_parts.engine_version, s_parts.workload, s_parts.window, s_parts.text
                ),
                window: r
                    .window_shape
                    .as_deref()
                    .map(crate::core::recall::window_shape::describe)
                    .unwrap_or_default(),
                kind: r.kind,
                id: r.source_id,
                title: r.title,
                url: r.url,
                date: r.doc_date,
                diagnosis: r.diagnosis,
                change: r.change,
                score: (s.score * 1000.0).round() / 1000.0,
            }
        })
        .collect();
    items.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.date.cmp(&a.date))
            .then(a.id.cmp(&b.id))
    });
    items.truncate(LIMIT);
    Ok(Some((profile, items)))
}
