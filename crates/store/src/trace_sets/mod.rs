//! Trace sets as the API and the pages share them: the rank traces of one distributed
//! run, each an ordinary PyTorch-trace artifact analysed by the artifact queue (so any
//! replica may take a rank, one at a time per worker). The set is summarised by the
//! core's [`crate::core::analyze::trace_set`] from the ranks' stored analyses once all of
//! them have finished; the worker looks for such sets on every pass, so a set never
//! waits on a request, and a rank whose analysis is given up ends `failed` and is named.

pub mod upload;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgPool;

use crate::core::analyze::pytorch_trace::{TraceAnalysis, ANALYZER_VERSION};
use crate::core::analyze::trace_set::{summarize, Member, SetSummary, MAX_RANKS};
use crate::core::analyze::Kind;
use crate::core::FieldError;
use crate::error::Error;

/// What to group, as asked: what the pages and the upload build, and the body of
/// `POST /trace-sets` (read by [`Ask::from_json`], which names every problem at once).
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The run the ranks are from, 1–200 characters.
    pub name: String,
    /// The rank traces: PyTorch-trace artifact ids, each once.
    pub artifacts: Vec<i64>,
    /// The investigation the set belongs to (default: its traces').
    pub investigation: Option<i64>,
}

/// A set's name as given: 1–200 characters.
pub fn clean_set_name(raw: Option<&str>, errors: &mut Vec<FieldError>) -> Option<String> {
    let t = raw.map(str::trim).unwrap_or("");
    if t.is_empty() {
        errors.push(FieldError::new(
            "name",
            "is required: say which run the ranks are from (e.g. \"TP=4 decode, before\")",
        ));
        return None;
    }
    if t.chars().count() > 200 {
        errors.push(FieldError::new(
            "name",
            format!("is {} characters; at most 200", t.chars().count()),
        ));
        return None;
    }
    Some(t.to_string())
}

impl Ask {
    /// `{name, artifacts: [id…], investigation?}`; every problem named by field.
    pub fn from_json(v: &Value) -> Result<Ask, Vec<FieldError>> {
        if !v.is_object() {
            return Err(vec![FieldError::new(
                "body",
                "must be a JSON object: {\"name\": text, \"artifacts\": [artifact id, …], \"investigation\"?: id}",
            )]);
        }
        let mut errors = Vec::new();
        let name = match v.get("name") {
            None | Some(Value::Null) => clean_set_name(None, &mut errors),
            Some(Value::String(s)) => clean_set_name(Some(s), &mut errors),
            Some(other) => {
                errors.push(FieldError::new(
                    "name",
                    format!("must be text, not {other}"),
                ));
                None
            }
        };
        let artifacts = match v.get("artifacts") {
            Some(Value::Array(items)) => crate::core::json_input::artifact_ids(
                "artifacts",
                items,
                MAX_RANKS,
                "PyTorch trace",
                &mut errors,
            )
            .unwrap_or_default(),
            None | Some(Value::Null) => {
                errors.push(FieldError::new(
                    "artifacts",
                    "is required: the ids of the rank traces (PyTorch trace artifacts)",
                ));
                Vec::new()
            }
            Some(other) => {
                errors.push(FieldError::new(
                    "artifacts",
                    format!("must be an array of artifact ids, not {other}"),
                ));
                Vec::new()
            }
        };
        let investigation = crate::core::json_input::id_field(
            "investigation",
            v.get("investigation"),
            None,
            &mut errors,
        );
        match (name, errors.is_empty()) {
            (Some(name), true) => Ok(Ask {
                name,
                artifacts,
                investigation,
            }),
            _ => Err(errors),
        }
    }
}

/// Every artifact and the investigation checked; all problems at once.
async fn check(pool: &PgPool, ask: &Ask) -> Result<Option<i64>, Error> {
    let mut errors = Vec::new();
    let rows: Vec<(i64, String, String, Option<i64>)> =
        sqlx::query_as("SELECT id, name, kind, investigation_id FROM artifacts WHERE id = ANY($1)")
            .bind(&ask.artifacts)
            .fetch_all(pool)
            .await?;
    let mut investigation_of_traces = None;
    for (i, id) in ask.artifacts.iter().enumerate() {
        match rows.iter().find(|r| r.0 == *id) {
            None => errors.push(FieldError::new(
                "artifacts",
                format!("item {i}: there is no artifact {id}"),
            )),
            Some((_, name, kind, inv)) => {
                if kind != Kind::PytorchTrace.slug() {
                    errors.push(FieldError::new(
                        "artifacts",
                        format!(
                            "item {i}: artifact {id} ({name}) is a {kind}; a trace set holds PyTorch profiler traces, one per rank"
                        ),
                    ));
                }
                investigation_of_traces = investigation_of_traces.or(*inv);
            }
        }
    }
    if let Some(inv) = ask.investigation {
        if crate::investigations::db::get(pool, inv).await?.is_none() {
            errors.push(FieldError::new(
                "investigation",
                format!("there is no investigation {inv}"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(Error::Invalid(errors));
    }
    Ok(ask.investigation.or(investigation_of_traces))
}

/// Stores the set, queues again the ranks analysed before the set figures existed, and
/// summarises it at once when every rank is already analysed. Returns the id.
pub async fn create(pool: &PgPool, ask: &Ask, user_id: i64) -> Result<i64, Error> {
    let investigation = check(pool, ask).await?;
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO trace_sets (name, investigation_id, status, created_by)
         VALUES ($1, $2, 'analyzing', $3) RETURNING id",
    )
    .bind(&ask.name)
    .bind(investigation)
    .bind(user_id)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO trace_set_members (trace_set_id, position, artifact_id)
         SELECT $1, (o - 1)::int, a FROM unnest($2::bigint[]) WITH ORDINALITY AS t(a, o)",
    )
    .bind(id)
    .bind(&ask.artifacts)
    .execute(&mut *tx)
    .await?;
    requeue_outdated(&mut tx, id).await?;
    tx.commit().await?;
    settle(pool, id).await?;
    Ok(id)
}

/// Ranks analysed by an analyzer older than the set figures are queued again (with the
/// options they had); how many.
async fn requeue_outdated(conn: &mut sqlx::PgConnection, id: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE artifacts SET status = 'queued', error = NULL, progress_bytes = 0, attempts = 0,
                updated_at = now()
         WHERE id IN (SELECT artifact_id FROM trace_set_members WHERE trace_set_id = $1)
           AND status = 'done' AND coalesce(analyzer_version, 0) < $2",
    )
    .bind(id)
    .bind(ANALYZER_VERSION as i32)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Summarises every set whose ranks have all finished; called by the worker on each pass.
pub async fn settle_all(pool: &PgPool) -> sqlx::Result<u64> {
    let ready: Vec<i64> = sqlx::query_scalar(
        "SELECT s.id FROM trace_sets s
         WHERE s.status = 'analyzing'
           AND NOT EXISTS (
               SELECT 1 FROM trace_set_members m JOIN artifacts a ON a.id = m.artifact_id
               WHERE m.trace_set_id = s.id
                 AND (a.status IN ('queued', 'analyzing', 'capturing')
                      OR (a.status = 'done' AND coalesce(a.analyzer_version, 0) < $1)))
         ORDER BY s.id LIMIT 20",
    )
    .bind(ANALYZER_VERSION as i32)
    .fetch_all(pool)
    .await?;
    let mut n = 0;
    for id in ready {
        if settle(pool, id).await? {
            n += 1;
        }
    }
    Ok(n)
}

/// Summarises one set if all its ranks have finished (and no other worker is on it):
/// whether it did.
pub async fn settle(pool: &PgPool, id: i64) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let locked: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM trace_sets WHERE id = $1 AND status = 'analyzing' FOR UPDATE SKIP LOCKED",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    if locked.is_none() {
        return Ok(false);
    }
    let rows: Vec<RankRow> = sqlx::query_as(
        "SELECT a.id, a.name, a.status, a.error, a.analyzer_version, a.analysis::text
             FROM trace_set_members m JOIN artifacts a ON a.id = m.artifact_id
             WHERE m.trace_set_id = $1 ORDER BY m.position",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let pending = rows.iter().any(|r| {
        matches!(r.2.as_str(), "queued" | "analyzing" | "capturing")
            || (r.2 == "done" && r.4.unwrap_or(0) < ANALYZER_VERSION as i32)
    });
    if pending {
        return Ok(false);
    }
    let outcome = if rows.is_empty() {
        Err("every trace of the set was deleted".to_string())
    } else {
        summary_of(rows)
    };
    match outcome {
        Ok(summary) => {
            sqlx::query(
                "UPDATE trace_sets SET status = 'done', result = $2, error = NULL, finished_at = now()
                 WHERE id = $1",
            )
            .bind(id)
            .bind(Json(summary))
            .execute(&mut *tx)
            .await?;
        }
        Err(reason) => {
            sqlx::query(
                "UPDATE trace_sets SET status = 'failed', error = $2, finished_at = now() WHERE id = $1",
            )
            .bind(id)
            .bind(reason)
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    Ok(true)
}

/// A rank as read for the summary: artifact id, name, status, error, analyzer
/// version, the analysis as text.
type RankRow = (
    i64,
    String,
    String,
    Option<String>,
    Option<i32>,
    Option<String>,
);

/// Reads each rank's analysis (keeping only what the set uses) and summarises.
fn summary_of(rows: Vec<RankRow>) -> Result<SetSummary, String> {
    let mut parsed: Vec<(i64, String, Result<TraceAnalysis, String>)> = Vec::new();
    for (id, name, status, error, _, text) in rows {
        let outcome = if status != "done" {
            Err(error.unwrap_or_else(|| format!("its analysis ended {status}")))
        } else {
            match text.map(|t| serde_json::from_str::<TraceAnalysis>(&t)) {
                Some(Ok(mut a)) => {
                    // What the set does not use, dropped at once: it bounds memory per rank.
                    a.idle_intervals = Vec::new();
                    a.kernels = Vec::new();
                    a.timeline = Vec::new();
                    a.idle = Vec::new();
                    a.notes = Vec::new();
                    Ok(a)
                }
                Some(Err(e)) => Err(format!("its stored analysis cannot be read ({e})")),
                None => Err("it has no analysis".to_string()),
            }
        };
        parsed.push((id, name, outcome));
    }
    let members: Vec<Member> = parsed
        .iter()
        .map(|(id, name, o)| Member {
            artifact_id: *id,
            name,
            outcome: o.as_ref().map_err(String::as_str),
        })
        .collect();
    summarize(&members).map_err(|e| e.0)
}

/// A stored set.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TraceSet {
    pub id: i64,
    pub name: String,
    pub investigation_id: Option<i64>,
    /// analyzing, done or failed
    pub status: String,
    pub error: Option<String>,
    pub result: Option<Json<SetSummary>>,
    pub creator: Option<String>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl TraceSet {
    pub fn url(&self) -> String {
        format!("/trace-sets/{}", self.id)
    }

    pub fn summary(&self) -> Option<&SetSummary> {
        self.result.as_ref().map(|r| &r.0)
    }
}

const SELECT: &str = "SELECT s.id, s.name, s.investigation_id, s.status, s.error, s.result,
        u.name AS creator, s.created_at, s.finished_at
     FROM trace_sets s LEFT JOIN users u ON u.id = s.created_by";

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<TraceSet>> {
    sqlx::query_as(&format!("{SELECT} WHERE s.id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// The sets of an investigation, newest first (at most 20).
pub async fn for_investigation(pool: &PgPool, investigation: i64) -> sqlx::Result<Vec<TraceSet>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE s.investigation_id = $1 ORDER BY s.id DESC LIMIT 20"
    ))
    .bind(investigation)
    .fetch_all(pool)
    .await
}

/// The sets a trace is in, newest first (at most 20).
pub async fn for_artifact(pool: &PgPool, artifact: i64) -> sqlx::Result<Vec<TraceSet>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE s.id IN (SELECT trace_set_id FROM trace_set_members WHERE artifact_id = $1)
         ORDER BY s.id DESC LIMIT 20"
    ))
    .bind(artifact)
    .fetch_all(pool)
    .await
}

/// A member as listed: (artifact id, name, status, error).
pub type MemberRow = (i64, String, String, Option<String>);

/// The set's traces in order, with their analysis status.
pub async fn members(pool: &PgPool, id: i64) -> sqlx::Result<Vec<MemberRow>> {
    sqlx::query_as(
        "SELECT a.id, a.name, a.status, a.error FROM trace_set_members m
         JOIN artifacts a ON a.id = m.artifact_id
         WHERE m.trace_set_id = $1 ORDER BY m.position",
    )
    .bind(id)
    .fetch_all(pool)
    .await
}
