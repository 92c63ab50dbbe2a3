//! The proposal tables. Inputs are parsed and sized by [`crate::core::proposal`] before
//! anything is written; saves and reviews carry the version they started from and an
//! older one is refused with what changed since (409).

pub mod seed;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Transaction};

use crate::core::analyze::Kind;
use crate::core::method::setup_check::{gpu_identity, model_identity};
use crate::core::pairs::Pairs;
use crate::core::proposal::evidence::{self, Facets};
use crate::core::proposal::outcome::{self, ErrorRecord, Observed, Score};
use crate::core::proposal::review::{self, State};
use crate::core::proposal::{self as core, ProposalInput, Sizing, Variant};
use crate::core::FieldError;
use crate::error::Error;

/// Proposals a list page shows.

#[derive(Debug, Clone)]
pub struct Proposal {
    pub id: i64,
    pub title: String,
    pub owner_id: Option<i64>,
    pub owner: String,
    pub state: State,
    pub version: i32,
    pub input: ProposalInput,
    pub sizing: Sizing,
    pub sensitivity: Vec<Variant>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    title: String,
    owner_id: Option<i64>,
    owner: Option<String>,
    state: String,
    version: i32,
    input: Json<ProposalInput>,
    sizing: Json<Sizing>,
    sensitivity: Json<Vec<Variant>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<Row> for Proposal {
    fn from(r: Row) -> Self {
        Proposal {
            id: r.id,
            title: r.title,
            owner_id: r.owner_id,
            owner: r.owner.unwrap_or_else(|| "(deleted user)".into()),
            state: State::from_slug(&r.state).unwrap_or(State::Draft),
            version: r.version,
            input: r.input.0,
            sizing: r.sizing.0,
            sensitivity: r.sensitivity.0,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const SELECT: &str = "SELECT p.id, p.title, p.owner_id, u.name AS owner, p.state, p.version, \
     p.input, p.sizing, p.sensitivity, p.created_at, p.updated_at FROM proposals p \
     LEFT JOIN users u ON u.id = p.owner_id";

/// Parses and sizes; nothing is written unless this succeeds.
pub fn prepare(pairs: &Pairs) -> Result<(ProposalInput, Sizing, Vec<Variant>), Vec<FieldError>> {
    let input = core::parse(pairs)?;
    let sizing = core::size(&input)?;
    let sensitivity = core::sensitivity(&input, &sizing);
    Ok((input, sizing, sensitivity))
}

/// One history line as written.
struct Change<'a> {
    kind: &'a str,
    from: Option<State>,
    to: Option<State>,
    section: Option<&'a str>,
    comment: &'a str,
}

async fn event(
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    version: i32,
    actor: i64,
    c: Change<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO proposal_events (proposal_id, version, actor_id, kind, from_state, to_state, \
         section, comment) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(id)
    .bind(version)
    .bind(actor)
    .bind(c.kind)
    .bind(c.from.map(State::slug))
    .bind(c.to.map(State::slug))
    .bind(c.section)
    .bind(c.comment)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

type Scalar<'q, T> = sqlx::query::QueryScalar<'q, Postgres, T, sqlx::postgres::PgArguments>;

/// Binds title, inputs, sizing, sensitivity and the facet columns, in that order.
fn bind_sized<'q, T>(
    query: Scalar<'q, T>,
    input: &'q ProposalInput,
    sizing: &'q Sizing,
    sensitivity: &'q [Variant],
) -> Scalar<'q, T> {
    query
        .bind(&input.title)
        .bind(Json(input))
        .bind(Json(sizing))
        .bind(Json(sensitivity))
        .bind(input.model_name().to_lowercase())
        .bind(&input.gpu_type)
        .bind(&input.engine)
        .bind(&input.engine_version)
        .bind(&input.weight_dtype)
        .bind(sizing.replicas_needed as i32)
        .bind(sizing.cost_per_hour_usd)
}

pub async fn create(
    pool: &PgPool,
    owner: i64,
    input: &ProposalInput,
    sizing: &Sizing,
    sensitivity: &[Variant],
) -> sqlx::Result<i64> {
    let mut tx = pool.begin().await?;
    let query = sqlx::query_scalar(
        "INSERT INTO proposals (owner_id, title, input, sizing, sensitivity, model, gpu, engine, \
         engine_version, weight_dtype, replicas, cost_per_hour_usd) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
    )
    .bind(owner);
    let id: i64 = bind_sized(query, input, sizing, sensitivity)
        .fetch_one(&mut *tx)
        .await?;
    event(
        &mut tx,
        id,
        1,
        owner,
        Change {
            kind: "created",
            from: None,
            to: Some(State::Draft),
            section: None,
            comment: "",
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<Proposal>> {
    let row: Option<Row> = sqlx::query_as(&format!("{SELECT} WHERE p.id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(Proposal::from))
}

/// Newest first: `limit` of them after the one with id `after` (keyset).
pub async fn list(pool: &PgPool, after: Option<i64>, limit: i64) -> sqlx::Result<Vec<Proposal>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "{SELECT} WHERE ($1::bigint IS NULL OR p.id < $1) ORDER BY p.id DESC LIMIT $2"
    ))
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Proposal::from).collect())
}

/// One line of history.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Event {
    pub version: i32,
    pub actor: Option<String>,
    pub kind: String,
    pub from_state: Option<String>,
    pub to_state: Option<String>,
    pub section: Option<String>,
    pub comment: String,
    pub created_at: DateTime<Utc>,
}

impl Event {
    /// "moved it from in review to approved", "commented", "edited the inputs".
    pub fn describe(&self) -> String {
        let label = |s: &Option<String>| {
            s.as_deref()
                .and_then(State::from_slug)
                .map(State::label)
                .unwrap_or("")
        };
        match self.kind.as_str() {
            "created" => "created it".into(),
            "edited" => "edited the inputs (re-sized)".into(),
            "evidence" => "changed the evidence".into(),
            "observed" => "attached observations".into(),
            _ if self.from_state == self.to_state => "commented".into(),
            _ => format!(
                "moved it from {} to {}",
                label(&self.from_state),
                label(&self.to_state)
            ),
        }
    }
}

pub async fn events(pool: &PgPool, id: i64, after_version: i32) -> sqlx::Result<Vec<Event>> {
    sqlx::query_as(
        "SELECT e.version, u.name AS actor, e.kind, e.from_state, e.to_state, e.section, \
         e.comment, e.created_at FROM proposal_events e LEFT JOIN users u ON u.id = e.actor_id \
         WHERE e.proposal_id = $1 AND e.version > $2 ORDER BY e.id",
    )
    .bind(id)
    .bind(after_version)
    .fetch_all(pool)
    .await
}

/// The 409 for a save or review from version `yours`: what changed since, by whom.
async fn stale(pool: &PgPool, id: i64, yours: i32, current: i32) -> Error {
    let since = events(pool, id, yours).await.unwrap_or_default();
    let what: Vec<String> = since
        .iter()
        .map(|e| {
            let mut s = format!(
                "version {}: {} {}",
                e.version,
                e.actor.as_deref().unwrap_or("someone"),
                e.describe()
            );
            if !e.comment.is_empty() {
                s.push_str(&format!(" (\"{}\")", e.comment));
            }
            s
        })
        .collect();
    Error::Conflict(format!(
        "proposal {id} changed since your version {yours} (it is at version {current}): {}. \
         Reload it and apply your change again.",
        if what.is_empty() {
            "see its history".to_string()
        } else {
            what.join("; ")
        }
    ))
}

/// Locks the row and checks the version; returns the current state.
async fn lock(
    pool: &PgPool,
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    yours: i32,
) -> Result<(State, Option<i64>), Error> {
    let row: Option<(i32, String, Option<i64>)> =
        sqlx::query_as("SELECT version, state, owner_id FROM proposals WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    let Some((current, state, owner)) = row else {
        return Err(Error::NotFound(format!("no proposal {id}")));
    };
    if current != yours {
        return Err(stale(pool, id, yours, current).await);
    }
    Ok((State::from_slug(&state).unwrap_or(State::Draft), owner))
}

/// Saves new inputs over version `yours` (re-sized); returns the new version.
pub async fn edit(
    pool: &PgPool,
    id: i64,
    user: i64,
    yours: i32,
    prepared: &(ProposalInput, Sizing, Vec<Variant>),
) -> Result<i32, Error> {
    let (input, sizing, sensitivity) = prepared;
    let mut tx = pool.begin().await?;
    let (state, _) = lock(pool, &mut tx, id, yours).await?;
    if !state.editable() {
        return Err(Error::Conflict(format!(
            "a {} proposal cannot be edited: its sizing is what was approved (write a new \
             proposal instead)",
            state.label()
        )));
    }
    let query = sqlx::query_scalar(
        "UPDATE proposals SET title = $2, input = $3, sizing = $4, sensitivity = $5, model = $6, \
         gpu = $7, engine = $8, engine_version = $9, weight_dtype = $10, replicas = $11, \
         cost_per_hour_usd = $12, version = version + 1, updated_at = now() WHERE id = $1 \
         RETURNING version",
    )
    .bind(id);
    let version: i32 = bind_sized(query, input, sizing, sensitivity)
        .fetch_one(&mut *tx)
        .await?;
    event(
        &mut tx,
        id,
        version,
        user,
        Change {
            kind: "edited",
            from: Some(state),
            to: Some(state),
            section: None,
            comment: "",
        },
    )
    .await?;
    tx.commit().await?;
    Ok(version)
}

/// A review over version `yours`: a state change and/or a comment. Returns the new version.
pub async fn review(
    pool: &PgPool,
    id: i64,
    user: i64,
    yours: i32,
    to: Option<&str>,
    comment: &str,
    section: Option<&str>,
) -> Result<(State, i32), Error> {
    let mut tx = pool.begin().await?;
    let (from, owner) = lock(pool, &mut tx, id, yours).await?;
    let r = review::check(from, to, comment, section, owner == Some(user))
        .map_err(|e| Error::Invalid(vec![e]))?;
    let version: i32 = sqlx::query_scalar(
        "UPDATE proposals SET state = $2, version = version + 1, updated_at = now() \
         WHERE id = $1 RETURNING version",
    )
    .bind(id)
    .bind(r.to.slug())
    .fetch_one(&mut *tx)
    .await?;
    event(
        &mut tx,
        id,
        version,
        user,
        Change {
            kind: "review",
            from: Some(from),
            to: Some(r.to),
            section: Some(&r.section),
            comment: &r.comment,
        },
    )
    .await?;
    let announced = match (from == r.to, r.to) {
        (false, State::InReview) => Some(("proposal.review_requested", "sent for review")),
        (false, State::Approved) => Some(("proposal.approved", "approved")),
        (false, State::ChangesRequested) => {
            Some(("proposal.changes_requested", "changes requested"))
        }
        _ => None,
    };
    if let Some((name, what)) = announced {
        let title: String = sqlx::query_scalar("SELECT title FROM proposals WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        let url = format!("/proposals/{id}");
        let text = format!("Proposal {what}: {title} ({url})");
        let data = serde_json::json!({
            "id": id, "url": url, "title": title, "from": from.slug(), "to": r.to.slug(),
            "version": version, "comment": r.comment, "section": r.section,
        });
        crate::webhooks::enqueue(&mut tx, name, &text, &data).await?;
    }
    tx.commit().await?;
    Ok((r.to, version))
}

/// A linked piece of evidence, with what it measured and how it differs.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceItem {
    pub kind: String,
    pub id: i64,
    pub title: String,
    pub url: String,
    pub note: String,
    pub facets: Facets,
    /// Each difference from the proposal (another engine version, GPU, model, precision);
    /// empty: current.
    pub stale: Vec<String>,
    /// Output tokens/s a benchmark measured: a vLLM bench artifact's own figure, or the
    /// mean of a comparison's candidate runs, or a load sweep's throughput within the
    /// proposal's SLOs. One bench is taken as one replica.
    pub measured_tokens_per_s: Option<f64>,
    /// How a load sweep's figure was chosen (which point, which SLOs).
    pub measured_note: Option<String>,
    /// Requests the bench kept in flight where it measured that figure: its concurrency
    /// limit, else by Little's law (achieved req/s × mean end-to-end latency).
    pub measured_concurrency: Option<f64>,
}

impl EvidenceItem {
    /// [`Self::measured_concurrency`] as a whole number of requests (at least 1).
    pub fn concurrency_in_flight(&self) -> Option<u64> {
        self.measured_concurrency.map(|c| c.round().max(1.0) as u64)
    }
}

#[derive(sqlx::FromRow)]
struct EvidenceRow {
    kind: String,
    source_id: i64,
    note: String,
    title: Option<String>,
    url: Option<String>,
    model: Option<String>,
    gpu: Option<String>,
    engine: Option<String>,
    engine_version: Option<String>,
    precision: Option<String>,
    measured: Option<f64>,
    measured_concurrency: Option<f64>,
}

impl EvidenceRow {
    fn item(self, p: &ProposalInput) -> EvidenceItem {
        let facets = Facets {
            model: self.model,
            gpu: self.gpu,
            engine: self.engine,
            engine_version: self.engine_version,
            precision: self.precision,
        };
        let path = match self.kind.as_str() {
            "journal" => "journal",
            "comparison" => "comparisons",
            _ => "artifacts",
        };
        EvidenceItem {
            stale: evidence::differences(p, &facets),
            title: self
                .title
                .unwrap_or_else(|| format!("{} {}", self.kind, self.source_id)),
            url: self
                .url
                .unwrap_or_else(|| format!("/{path}/{}", self.source_id)),
            kind: self.kind,
            id: self.source_id,
            note: self.note,
            facets,
            measured_tokens_per_s: self.measured.filter(|v| v.is_finite() && *v > 0.0),
            measured_note: None,
            measured_concurrency: self
                .measured_concurrency
                .filter(|v| v.is_finite() && *v > 0.0),
        }
    }
}

/// Columns of a search document plus a comparison's weight precision and the output
/// throughput a benchmark measured (its kind bound by its slug).
fn evidence_columns() -> String {
    let bench = Kind::VllmBench.slug();
    format!(
        "x.title, x.url, d.model, d.gpu, d.engine, d.engine_version, \
     CASE WHEN d.kind = 'comparison' THEN (SELECT c.baseline_config->>'weight_dtype' \
     FROM comparisons c WHERE c.id = d.source_id) END AS precision, \
     CASE WHEN d.kind = 'artifact' THEN (SELECT (a.analysis->>'output_throughput')::float8 \
         FROM artifacts a WHERE a.id = d.source_id AND a.kind = '{bench}') \
     WHEN d.kind = 'comparison' THEN (SELECT avg((a.analysis->>'output_throughput')::float8) \
         FROM comparison_artifacts ca JOIN artifacts a ON a.id = ca.artifact_id \
         WHERE ca.comparison_id = d.source_id AND ca.side = 'candidate' \
         AND a.kind = '{bench}') END AS measured, \
     CASE WHEN d.kind = 'artifact' THEN (SELECT COALESCE( \
         (a.analysis->'config'->>'max_concurrency')::float8, \
         (a.analysis->>'request_throughput')::float8 \
             * (a.analysis->'e2el_ms'->>'mean')::float8 / 1000.0) \
         FROM artifacts a WHERE a.id = d.source_id AND a.kind = '{bench}' \
         AND jsonb_typeof(a.analysis->'config'->'max_concurrency') IS DISTINCT FROM 'string') \
     END AS measured_concurrency"
    )
}

pub async fn evidence(pool: &PgPool, p: &Proposal) -> sqlx::Result<Vec<EvidenceItem>> {
    let rows: Vec<EvidenceRow> = sqlx::query_as(&format!(
        "SELECT e.kind, e.source_id, e.note, {} FROM proposal_evidence e \
         LEFT JOIN search_documents d ON d.kind = e.kind AND d.source_id = e.source_id \
         LEFT JOIN search_texts x ON x.kind = e.kind AND x.source_id = e.source_id \
         WHERE e.proposal_id = $1 ORDER BY e.added_at, e.kind, e.source_id",
        evidence_columns()
    ))
    .bind(p.id)
    .fetch_all(pool)
    .await?;
    let mut items: Vec<EvidenceItem> = rows.into_iter().map(|r| r.item(&p.input)).collect();
    for item in items.iter_mut().filter(|i| i.kind == "artifact") {
        sweep_measurement(pool, p, item).await?;
    }
    Ok(items)
}

/// A load-sweep artifact measures the throughput within the proposal's SLOs (its first
/// series), not the throughput of its last run: that replaces the file's own figure,
/// with a note saying which point; no point within the SLOs leaves no measurement.
async fn sweep_measurement(
    pool: &PgPool,
    p: &Proposal,
    item: &mut EvidenceItem,
) -> sqlx::Result<()> {
    let Some(points) = crate::artifacts::get(pool, item.id)
        .await?
        .and_then(|a| crate::sweeps::points_of(&a))
    else {
        return Ok(());
    };
    let series = points[0].series.clone();
    let first: Vec<&crate::core::analyze::sweep::SweepPoint> =
        points.iter().filter(|pt| pt.series == series).collect();
    let capacity =
        evidence::sweep_capacity(&first, p.input.slo_ttft_p95_ms, p.input.slo_itl_p99_ms);
    item.measured_tokens_per_s = capacity.as_ref().map(|c| c.tokens_per_s);
    item.measured_concurrency = capacity.as_ref().and_then(|c| c.concurrency);
    item.measured_note = Some(capacity.map_or_else(
        || {
            "load sweep: no measured point meets the proposal's TTFT p95 and ITL p99 SLOs"
                .to_string()
        },
        |c| c.note,
    ));
    Ok(())
}

/// Journal entries and comparisons that name this model or GPU (by catalog id), best
/// match first, not yet linked (from the search documents, the same facets "seen
/// before" uses).
pub async fn suggestions(pool: &PgPool, p: &Proposal) -> sqlx::Result<Vec<EvidenceItem>> {
    let rows: Vec<EvidenceRow> = sqlx::query_as(&format!(
        "SELECT d.kind, d.source_id, '' AS note, {} FROM search_documents d \
         JOIN search_texts x USING (kind, source_id) \
         WHERE d.kind IN ('journal', 'comparison', 'artifact') \
         AND (d.model = $2 OR d.gpu = $3) \
         AND NOT EXISTS (SELECT 1 FROM proposal_evidence e WHERE e.proposal_id = $1 \
             AND e.kind = d.kind AND e.source_id = d.source_id) \
         ORDER BY (d.model IS NOT DISTINCT FROM $2)::int + (d.gpu IS NOT DISTINCT FROM $3)::int \
             + (d.engine IS NOT DISTINCT FROM $4)::int \
             + (d.engine_version IS NOT DISTINCT FROM $5)::int DESC, d.doc_date DESC \
         LIMIT 8",
        evidence_columns()
    ))
    .bind(p.id)
    .bind(model_identity(&p.input.model_name()))
    .bind(gpu_identity(&p.input.gpu_type))
    .bind(&p.input.engine)
    .bind(&p.input.engine_version)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| r.item(&p.input)).collect())
}

/// Links (or, with `remove`, unlinks) a journal entry, comparison or artifact.
pub async fn link_evidence(
    pool: &PgPool,
    p: &Proposal,
    user: i64,
    kind: &str,
    source_id: i64,
    note: &str,
    remove: bool,
) -> Result<(), Error> {
    if !evidence::KINDS.contains(&kind) {
        return Err(Error::Invalid(vec![FieldError::new(
            "kind",
            format!("must be one of {}", evidence::KINDS.join(", ")),
        )]));
    }
    let table = match kind {
        "journal" => "journal_entries",
        "comparison" => "comparisons",
        _ => "artifacts",
    };
    let exists: bool = sqlx::query_scalar(&format!(
        "SELECT EXISTS (SELECT 1 FROM {table} WHERE id = $1)"
    ))
    .bind(source_id)
    .fetch_one(pool)
    .await?;
    if !exists && !remove {
        return Err(Error::Invalid(vec![FieldError::new(
            "source_id",
            format!("there is no {kind} {source_id}"),
        )]));
    }
    let mut tx = pool.begin().await?;
    let comment = if remove {
        sqlx::query(
            "DELETE FROM proposal_evidence WHERE proposal_id = $1 AND kind = $2 AND source_id = $3",
        )
        .bind(p.id)
        .bind(kind)
        .bind(source_id)
        .execute(&mut *tx)
        .await?;
        format!("removed {kind} {source_id}")
    } else {
        sqlx::query(
            "INSERT INTO proposal_evidence (proposal_id, kind, source_id, note, added_by) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (proposal_id, kind, source_id) \
             DO UPDATE SET note = EXCLUDED.note",
        )
        .bind(p.id)
        .bind(kind)
        .bind(source_id)
        .bind(note.trim())
        .bind(user)
        .execute(&mut *tx)
        .await?;
        format!("linked {kind} {source_id}")
    };
    event(
        &mut tx,
        p.id,
        p.version,
        user,
        Change {
            kind: "evidence",
            from: None,
            to: None,
            section: Some("evidence"),
            comment: &comment,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// One attached observation with its scores.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    pub id: i64,
    pub observed: Observed,
    pub scores: Vec<Score>,
    pub artifact_ids: Vec<i64>,
    pub note: String,
    pub by: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct ObservationRow {
    id: i64,
    observed: Json<Observed>,
    scores: Json<Vec<Score>>,
    artifact_ids: Vec<i64>,
    note: String,
    by: Option<String>,
    created_at: DateTime<Utc>,
}

/// Scores observed figures against the sizing and keeps them. Only a rolled-out
/// proposal has a production to observe.
pub async fn observe(
    pool: &PgPool,
    p: &Proposal,
    user: i64,
    observed: &Observed,
    artifact_ids: &[i64],
    note: &str,
) -> Result<Vec<Score>, Error> {
    if p.state != State::RolledOut {
        return Err(Error::Conflict(format!(
            "proposal {} is {}: observations are attached after rollout (approve it, then \
             move it to rolled_out)",
            p.id,
            p.state.label()
        )));
    }
    let mut measured = Vec::new();
    for id in artifact_ids {
        let Some(a) = crate::artifacts::get(pool, *id).await? else {
            return Err(Error::Invalid(vec![FieldError::new(
                "artifact_ids",
                format!("there is no artifact {id}; upload it first, then give its id"),
            )]));
        };
        if let Some(why) = &a.damaged {
            return Err(Error::Invalid(vec![FieldError::new(
                "artifact_ids",
                format!("artifact {id}: {why}"),
            )]));
        }
        if let Some(analysis) = &a.analysis {
            measured.push(outcome::from_analysis(analysis));
        }
    }
    let observed =
        outcome::complete(observed.clone(), &measured).map_err(|e| Error::Invalid(vec![e]))?;
    let scores = outcome::score(&p.sizing, &observed);
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO proposal_observations (proposal_id, observed, scores, artifact_ids, note, \
         created_by) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(p.id)
    .bind(Json(&observed))
    .bind(Json(&scores))
    .bind(artifact_ids)
    .bind(note.trim())
    .bind(user)
    .execute(&mut *tx)
    .await?;
    let summary: Vec<String> = scores
        .iter()
        .map(|s| format!("{} {:+.1} %", s.figure, s.error_pct))
        .collect();
    event(
        &mut tx,
        p.id,
        p.version,
        user,
        Change {
            kind: "observed",
            from: None,
            to: None,
            section: Some("sizing"),
            comment: &summary.join(", "),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(scores)
}

pub async fn observations(pool: &PgPool, id: i64) -> sqlx::Result<Vec<Observation>> {
    let rows: Vec<ObservationRow> = sqlx::query_as(
        "SELECT o.id, o.observed, o.scores, o.artifact_ids, o.note, u.name AS by, o.created_at \
         FROM proposal_observations o LEFT JOIN users u ON u.id = o.created_by \
         WHERE o.proposal_id = $1 ORDER BY o.id",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Observation {
            id: r.id,
            observed: r.observed.0,
            scores: r.scores.0,
            artifact_ids: r.artifact_ids,
            note: r.note,
            by: r.by,
            created_at: r.created_at,
        })
        .collect())
}

/// The running record across proposals: per estimator and figure, each proposal's
/// latest score of that figure.
pub async fn error_record(pool: &PgPool) -> sqlx::Result<Vec<ErrorRecord>> {
    let rows: Vec<(i64, Json<Vec<Score>>)> =
        sqlx::query_as("SELECT proposal_id, scores FROM proposal_observations ORDER BY id")
            .fetch_all(pool)
            .await?;
    let mut latest = std::collections::BTreeMap::new();
    for (proposal, scores) in rows {
        for s in scores.0 {
            latest.insert((proposal, s.figure.clone()), s);
        }
    }
    let scores: Vec<Score> = latest.into_values().collect();
    Ok(outcome::record(&scores))
}
