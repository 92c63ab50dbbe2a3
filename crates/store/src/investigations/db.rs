//! The investigation tables: investigations, their recorded steps, skips, attached
//! estimates and history. Every write that changes an investigation also appends to
//! its history in the same transaction.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgPool, Postgres, Transaction};

use crate::core::analyze::Kind;
use crate::core::estimate::Inputs;
use crate::core::method::expected::Expected;
use crate::core::method::record::Opening;

/// The four states of an investigation.
pub const STATUSES: [&str; 4] = ["open", "diagnosed", "resolved", "abandoned"];

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Investigation {
    pub id: i64,
    pub title: String,
    pub service: String,
    pub symptom: String,
    pub tags: Vec<String>,
    pub status: String,
    pub owner_id: i64,
    pub owner: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One line of the investigations list.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Listed {
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub investigation: Investigation,
    /// Recorded steps.
    pub steps: Vec<i16>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepRow {
    pub step: i16,
    pub data: serde_json::Value,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
    /// Bumped by every save; a save names the version it started from.
    pub version: i32,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Skip {
    pub step: i16,
    pub missing: Vec<i16>,
    pub reason: String,
    pub user_name: String,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Event {
    pub at: DateTime<Utc>,
    pub user_name: String,
    pub action: String,
    pub step: Option<i16>,
    pub summary: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
struct ExpectedRow {
    step: i16,
    estimator: String,
    inputs: sqlx::types::Json<Inputs>,
    result_key: String,
    expected: f64,
    unit: String,
    observed: Option<f64>,
}

const SELECT: &str = "SELECT i.id, i.title, i.service, i.symptom, i.tags, i.status, i.owner_id, \
     u.name AS owner, i.created_at, i.updated_at FROM investigations i JOIN users u ON u.id = i.owner_id";

/// Appends a history line inside a transaction and marks the investigation updated.
pub async fn log(
    tx: &mut Transaction<'_, Postgres>,
    investigation: i64,
    user: i64,
    action: &str,
    step: Option<u8>,
    summary: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO investigation_events (investigation_id, user_id, action, step, summary) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(investigation)
    .bind(user)
    .bind(action)
    .bind(step.map(i16::from))
    .bind(summary)
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE investigations SET updated_at = now() WHERE id = $1")
        .bind(investigation)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn create(
    pool: &PgPool,
    owner: i64,
    opening: &Opening,
    demo_key: Option<&str>,
) -> sqlx::Result<i64> {
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO investigations (title, service, symptom, tags, owner_id, demo_key) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(&opening.title)
    .bind(&opening.service)
    .bind(&opening.symptom)
    .bind(&opening.tags)
    .bind(owner)
    .bind(demo_key)
    .fetch_one(&mut *tx)
    .await?;
    log(
        &mut tx,
        id,
        owner,
        "opened",
        None,
        &format!("opened “{}”", opening.title),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

pub async fn by_demo_key(pool: &PgPool, key: &str) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT id FROM investigations WHERE demo_key = $1")
        .bind(key)
        .fetch_optional(pool)
        .await
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<Investigation>> {
    sqlx::query_as(&format!("{SELECT} WHERE i.id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Investigations, most recently changed first: `limit` of them after the one with id
/// `after` (keyset, see the binary's `extract::Paging`).
pub async fn list(pool: &PgPool, after: Option<i64>, limit: i64) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(&format!(
        "SELECT x.*, COALESCE((SELECT array_agg(s.step ORDER BY s.step) FROM investigation_steps s \
         WHERE s.investigation_id = x.id), '{{}}') AS steps FROM ({SELECT}) x \
         WHERE $1::bigint IS NULL OR (x.updated_at, x.id) < \
           (SELECT updated_at, id FROM investigations WHERE id = $1) \
         ORDER BY x.updated_at DESC, x.id DESC LIMIT $2"
    ))
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

pub async fn steps(pool: &PgPool, id: i64) -> sqlx::Result<Vec<StepRow>> {
    sqlx::query_as(
        "SELECT s.step, s.data, u.name AS updated_by, s.updated_at, s.version \
         FROM investigation_steps s JOIN users u ON u.id = s.updated_by \
         WHERE s.investigation_id = $1 ORDER BY s.step",
    )
    .bind(id)
    .fetch_all(pool)
    .await
}

/// One step of a past investigation whose step 4 measured a decode step: what the
/// fleet history is built from.
#[derive(sqlx::FromRow)]
pub struct FleetRow {
    pub investigation_id: i64,
    pub title: String,
    pub step: i16,
    pub data: serde_json::Value,
}

/// Steps 0, 1, 2 and 4 of the most recent investigations (other than `exclude`) whose
/// step 4 holds a measured decode step; the caller keeps those of the same setup.
pub async fn fleet_rows(pool: &PgPool, exclude: i64) -> sqlx::Result<Vec<FleetRow>> {
    sqlx::query_as(
        "WITH measured AS ( \
             SELECT i.id, i.title FROM investigations i \
             JOIN investigation_steps d ON d.investigation_id = i.id AND d.step = 4 \
             WHERE i.id <> $1 AND jsonb_typeof(d.data -> 'decode') = 'object' \
             ORDER BY i.updated_at DESC LIMIT $2) \
         SELECT m.id AS investigation_id, m.title, s.step, s.data \
         FROM measured m JOIN investigation_steps s ON s.investigation_id = m.id \
         WHERE s.step IN (0, 1, 2, 4) ORDER BY m.id, s.step",
    )
    .bind(exclude)
    .bind(FLEET_INVESTIGATIONS)
    .fetch_all(pool)
    .await
}

/// How many past investigations the fleet history looks through.
const FLEET_INVESTIGATIONS: i64 = 500;

/// Stores a step's record (replacing an earlier one) with its history line.
/// A step saved before the steps it builds on: the steps missing and why the order
/// matters.
pub struct SkipNote<'a> {
    pub missing: &'a [u8],
    pub reason: &'a str,
}

/// What became of a step save.
pub enum StepSaved {
    /// Stored as this version.
    Saved(i32),
    /// Refused: the step is at `current`, not at the version the save started from.
    Stale { current: i32 },
}

/// Stores a step's record with its history line, the skip it makes (if it was saved
/// ahead of earlier steps) and the artifact its numbers came from (`evidence`), in one
/// transaction. With `base` (the version the editor started from, 0 for a step not yet
/// recorded) a save over any other version is refused and nothing is written.
#[allow(clippy::too_many_arguments)]
pub async fn save_step(
    pool: &PgPool,
    id: i64,
    user: i64,
    step: u8,
    base: Option<i32>,
    data: &serde_json::Value,
    summary: &str,
    skip: Option<SkipNote<'_>>,
    evidence: Option<i64>,
) -> sqlx::Result<StepSaved> {
    let mut tx = pool.begin().await?;
    if let Some(skip) = skip {
        record_skip(&mut tx, id, user, step, skip.missing, skip.reason).await?;
    }
    // A save of exactly what is stored (the form sent again after Back, a retried API
    // call) changes nothing: no new version, no history line, whatever version it
    // started from. Only new evidence is still linked.
    let unchanged: Option<i32> = sqlx::query_scalar(
        "SELECT version FROM investigation_steps \
         WHERE investigation_id = $1 AND step = $2 AND data = $3 FOR UPDATE",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(data)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(version) = unchanged {
        link_and_log_evidence(&mut tx, id, user, step, evidence).await?;
        tx.commit().await?;
        return Ok(StepSaved::Saved(version));
    }
    // The version check is in the upsert itself: ON CONFLICT locks the row and sees the
    // newest committed version, so two saves from the same version cannot both pass.
    let version: Option<i32> = sqlx::query_scalar(
        "INSERT INTO investigation_steps (investigation_id, step, data, updated_by) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (investigation_id, step) \
         DO UPDATE SET data = EXCLUDED.data, updated_by = EXCLUDED.updated_by, \
         updated_at = now(), version = investigation_steps.version + 1 \
         WHERE $5::int IS NULL OR investigation_steps.version = $5 RETURNING version",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(data)
    .bind(user)
    .bind(base)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(version) = version else {
        let current: i32 = sqlx::query_scalar(
            "SELECT version FROM investigation_steps WHERE investigation_id = $1 AND step = $2",
        )
        .bind(id)
        .bind(i16::from(step))
        .fetch_one(&mut *tx)
        .await?;
        return Ok(StepSaved::Stale { current });
    };
    sqlx::query(
        "INSERT INTO investigation_step_revisions (investigation_id, step, version, data, user_id) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(version)
    .bind(data)
    .bind(user)
    .execute(&mut *tx)
    .await?;
    let action = if version == 1 {
        "step_recorded"
    } else {
        "step_updated"
    };
    log(&mut tx, id, user, action, Some(step), summary).await?;
    link_and_log_evidence(&mut tx, id, user, step, evidence).await?;
    if step == 7 {
        if let Some(change) = data["change"].as_str().filter(|c| !c.trim().is_empty()) {
            let title: String =
                sqlx::query_scalar("SELECT title FROM investigations WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
            let text = format!("CHANGE: {} — {title}", change.trim());
            crate::grafana::note(
                &mut tx,
                id,
                "change",
                &format!("/investigations/{id}/steps/7"),
                &text,
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(StepSaved::Saved(version))
}

/// Links the artifact that filled the step, with a history line when the link is new.
async fn link_and_log_evidence(
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    user: i64,
    step: u8,
    evidence: Option<i64>,
) -> sqlx::Result<()> {
    if let Some(artifact) = evidence {
        if link_evidence(tx, id, step, artifact, user).await? {
            let line = format!("step {step} filled from artifact {artifact}");
            log(tx, id, user, "evidence", Some(step), &line).await?;
        }
    }
    Ok(())
}

/// A saved version of a step's record, with who saved it.
pub async fn step_revision(
    pool: &PgPool,
    id: i64,
    step: u8,
    version: i32,
) -> sqlx::Result<Option<(serde_json::Value, String)>> {
    sqlx::query_as(
        "SELECT r.data, u.name FROM investigation_step_revisions r JOIN users u ON u.id = r.user_id \
         WHERE r.investigation_id = $1 AND r.step = $2 AND r.version = $3",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(version)
    .fetch_optional(pool)
    .await
}

/// Records that `step` was saved with `missing` steps unrecorded; once per step.
/// Returns whether this was the first time.
async fn record_skip(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: i64,
    user: i64,
    step: u8,
    missing: &[u8],
    reason: &str,
) -> sqlx::Result<bool> {
    let missing: Vec<i16> = missing.iter().map(|&s| i16::from(s)).collect();
    let inserted = sqlx::query(
        "INSERT INTO investigation_skips (investigation_id, step, missing, reason, user_id) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (investigation_id, step) DO NOTHING",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(&missing)
    .bind(reason)
    .bind(user)
    .execute(&mut **tx)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        let list: Vec<String> = missing.iter().map(|s| s.to_string()).collect();
        let summary = format!(
            "skipped ahead to step {step} with step{} {} not recorded: {reason}",
            if list.len() == 1 { "" } else { "s" },
            list.join(", ")
        );
        log(tx, id, user, "skipped", Some(step), &summary).await?;
    }
    Ok(inserted)
}

pub async fn skips(pool: &PgPool, id: i64) -> sqlx::Result<Vec<Skip>> {
    sqlx::query_as(
        "SELECT k.step, k.missing, k.reason, u.name AS user_name, k.at FROM investigation_skips k \
         JOIN users u ON u.id = k.user_id WHERE k.investigation_id = $1 ORDER BY k.at",
    )
    .bind(id)
    .fetch_all(pool)
    .await
}

/// History, newest first.
pub async fn events(pool: &PgPool, id: i64) -> sqlx::Result<Vec<Event>> {
    sqlx::query_as(
        "SELECT e.at, u.name AS user_name, e.action, e.step, e.summary FROM investigation_events e \
         JOIN users u ON u.id = e.user_id WHERE e.investigation_id = $1 ORDER BY e.id DESC",
    )
    .bind(id)
    .fetch_all(pool)
    .await
}

/// Changes the status; returns false when it already had that status.
pub async fn set_status(pool: &PgPool, id: i64, user: i64, status: &str) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let old: Option<String> =
        sqlx::query_scalar("SELECT status FROM investigations WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(old) = old.filter(|o| o != status) else {
        return Ok(false);
    };
    sqlx::query("UPDATE investigations SET status = $2 WHERE id = $1")
        .bind(id)
        .bind(status)
        .execute(&mut *tx)
        .await?;
    log(
        &mut tx,
        id,
        user,
        "status",
        None,
        &format!("changed the status from {old} to {status}"),
    )
    .await?;
    if status == "resolved" {
        let (title, service): (String, String) =
            sqlx::query_as("SELECT title, service FROM investigations WHERE id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
        let url = format!("/investigations/{id}");
        let text = format!("Investigation resolved: {title} on {service} ({url})");
        let data = serde_json::json!({
            "id": id, "url": url, "title": title, "service": service, "from": old,
        });
        crate::webhooks::enqueue(&mut tx, "investigation.resolved", &text, &data).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Attaches (or replaces) a step's expected value.
pub async fn attach_expected(
    pool: &PgPool,
    id: i64,
    user: i64,
    step: u8,
    e: &Expected,
) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO investigation_expected \
         (investigation_id, step, estimator, inputs, result_key, expected, unit, observed, attached_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (investigation_id, step) DO UPDATE SET \
         estimator = EXCLUDED.estimator, inputs = EXCLUDED.inputs, result_key = EXCLUDED.result_key, \
         expected = EXCLUDED.expected, unit = EXCLUDED.unit, observed = EXCLUDED.observed, \
         attached_by = EXCLUDED.attached_by, attached_at = now()",
    )
    .bind(id)
    .bind(i16::from(step))
    .bind(&e.estimator)
    .bind(sqlx::types::Json(&e.inputs))
    .bind(&e.result_key)
    .bind(e.expected)
    .bind(&e.unit)
    .bind(e.observed)
    .bind(user)
    .execute(&mut *tx)
    .await?;
    let summary = format!(
        "attached {} {} = {} {} as the expected value",
        e.estimator,
        e.result_key,
        crate::core::fmt::format_number(e.expected, 2),
        e.unit
    );
    log(
        &mut tx,
        id,
        user,
        "estimate",
        Some(step),
        summary.trim_end(),
    )
    .await?;
    tx.commit().await
}

/// Attached estimates by step.
pub async fn expected(pool: &PgPool, id: i64) -> sqlx::Result<Vec<(u8, Expected)>> {
    let rows: Vec<ExpectedRow> = sqlx::query_as(
        "SELECT step, estimator, inputs, result_key, expected, unit, observed \
         FROM investigation_expected WHERE investigation_id = $1 ORDER BY step",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.step as u8,
                Expected {
                    estimator: r.estimator,
                    inputs: r.inputs.0,
                    result_key: r.result_key,
                    expected: r.expected,
                    unit: r.unit,
                    observed: r.observed,
                },
            )
        })
        .collect())
}

/// An uploaded artifact as an investigation or entry lists it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, sqlx::FromRow)]
pub struct ArtifactLink {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub status: String,
    pub created_at: DateTime<Utc>,
    /// Set for an Nsight Compute file that held only errors.
    pub profile_error: Option<String>,
}

impl ArtifactLink {
    pub fn kind(&self) -> Kind {
        Kind::from_slug(&self.kind).unwrap_or(Kind::Unknown)
    }

    /// The status as lists show it (label, extra CSS class).
    pub fn shown_status(&self) -> (&str, &'static str) {
        crate::core::analyze::ncu::listed_status(
            &self.kind,
            &self.status,
            self.profile_error.as_deref(),
        )
    }
}

/// Artifacts hanging on an investigation or a journal entry (either may be absent),
/// newest first.
pub async fn artifacts(
    pool: &PgPool,
    investigation: Option<i64>,
    entry: Option<i64>,
) -> sqlx::Result<Vec<ArtifactLink>> {
    sqlx::query_as(
        "SELECT id, name, kind, status, created_at, analysis->>'profile_error' AS profile_error \
         FROM artifacts \
         WHERE investigation_id = $1 OR journal_entry_id = $2 ORDER BY created_at DESC, id DESC",
    )
    .bind(investigation)
    .bind(entry)
    .fetch_all(pool)
    .await
}

/// Records that an artifact's analysis filled a step (once per artifact and step).
/// False when the artifact is not attached to this investigation.
pub async fn link_evidence(
    tx: &mut Transaction<'_, Postgres>,
    id: i64,
    step: u8,
    artifact: i64,
    user: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO step_evidence (investigation_id, step, artifact_id, linked_by)
         SELECT $1, $2, a.id, $4 FROM artifacts a WHERE a.id = $3 AND a.investigation_id = $1
         ON CONFLICT DO NOTHING",
    )
    .bind(id)
    .bind(step as i16)
    .bind(artifact)
    .bind(user)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The artifacts behind a step's numbers.
pub async fn evidence(pool: &PgPool, id: i64, step: u8) -> sqlx::Result<Vec<ArtifactLink>> {
    sqlx::query_as(
        "SELECT a.id, a.name, a.kind, a.status, a.created_at, \
                a.analysis->>'profile_error' AS profile_error FROM step_evidence e
         JOIN artifacts a ON a.id = e.artifact_id
         WHERE e.investigation_id = $1 AND e.step = $2 ORDER BY e.linked_at",
    )
    .bind(id)
    .bind(step as i16)
    .fetch_all(pool)
    .await
}
