//! Trace diffs as the API and the pages share them: check the two artifacts, store the
//! row, compute the diff from both blobs off the async threads (the core's
//! [`crate::core::analyze::pytorch_trace::trace_diff`]) and store the result.
//!
//! The computation reads each trace three times; a small pair is done before the
//! request answers, a large one goes on in the background (status `analyzing`, then
//! `done` or `failed`). A row left `analyzing` by a server that stopped is shown as
//! failed after [`STALE_AFTER_MIN`] minutes.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::pytorch_trace::trace_diff::{
    diff, op_totals, OpTotals, SideSum, TraceDiffResult,
};
use crate::core::analyze::Kind;
use crate::core::json_input::{artifact_ids, id_field};
use crate::core::FieldError;
use crate::error::Error;
use crate::storage::BlobStore;

/// Rows kept per diff: the ones that moved most time (the summary counts all).
pub const MAX_STORED_OPS: usize = 5_000;

/// How long a request waits for the diff before answering `analyzing`.
pub const WAIT: Duration = Duration::from_secs(3);

/// An `analyzing` row older than this lost its server.
pub const STALE_AFTER_MIN: i64 = 60;

/// Traces per side at most (the ranks of one run).
pub const MAX_TRACES_PER_SIDE: usize = 64;

/// What to diff, as asked: one trace per side, or several (the ranks of one run, summed).
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub control: Vec<i64>,
    pub test: Vec<i64>,
    pub investigation: Option<i64>,
}

/// A side: one id, or an array of 1 to [`MAX_TRACES_PER_SIDE`] ids.
fn side_field(field: &str, v: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<Vec<i64>> {
    match v {
        Some(Value::Array(items)) => {
            artifact_ids(field, items, MAX_TRACES_PER_SIDE, "trace", errors)
        }
        other => id_field(
            field,
            other,
            Some("the id of an analyzed PyTorch trace artifact"),
            errors,
        )
        .map(|id| vec![id]),
    }
}

impl Ask {
    /// `{control, test, investigation?}`; every problem named by field.
    pub fn from_json(v: &Value) -> Result<Ask, Vec<FieldError>> {
        if !v.is_object() {
            return Err(vec![FieldError::new(
                "body",
                "must be a JSON object: {\"control\": artifact id, \"test\": artifact id, \"investigation\"?: id}",
            )]);
        }
        let mut errors = Vec::new();
        let control = side_field("control", v.get("control"), &mut errors);
        let test = side_field("test", v.get("test"), &mut errors);
        let investigation = id_field("investigation", v.get("investigation"), None, &mut errors);
        Self::finish(control, test, investigation, errors)
    }

    /// The form of an artifact page: `control`, `test`, `investigation` (blank: none).
    pub fn from_form(pairs: &[(String, String)]) -> Result<Ask, Vec<FieldError>> {
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        let mut errors = Vec::new();
        let mut read = |field: &str, required: bool| match get(field) {
            None => {
                if required {
                    errors.push(FieldError::new(
                        field,
                        "is required: pick an analyzed PyTorch trace",
                    ));
                }
                None
            }
            Some(t) => match crate::core::json_input::typed_id(t) {
                Some(id) => Some(id),
                None => {
                    errors.push(FieldError::new(
                        field,
                        format!("must be an artifact id (a positive integer), not \"{t}\""),
                    ));
                    None
                }
            },
        };
        let control = read("control", true).map(|id| vec![id]);
        let test = read("test", true).map(|id| vec![id]);
        let investigation = read("investigation", false);
        Self::finish(control, test, investigation, errors)
    }

    fn finish(
        control: Option<Vec<i64>>,
        test: Option<Vec<i64>>,
        investigation: Option<i64>,
        mut errors: Vec<FieldError>,
    ) -> Result<Ask, Vec<FieldError>> {
        if let (Some(c), Some(t)) = (&control, &test) {
            for id in t.iter().filter(|id| c.contains(id)) {
                errors.push(FieldError::new(
                    "test",
                    format!(
                        "holds artifact {id}, the control itself: a diff needs two different traces"
                    ),
                ));
            }
        }
        match (control, test, errors.is_empty()) {
            (Some(control), Some(test), true) => Ok(Ask {
                control,
                test,
                investigation,
            }),
            _ => Err(errors),
        }
    }
}

/// An analyzed PyTorch trace with its file, or the problem with it, on `field`.
async fn trace(pool: &PgPool, field: &str, id: i64) -> Result<Result<Artifact, FieldError>, Error> {
    let Some(a) = artifacts::get(pool, id).await? else {
        return Ok(Err(FieldError::new(
            field,
            format!("there is no artifact {id}"),
        )));
    };
    if a.kind() != Kind::PytorchTrace {
        return Ok(Err(FieldError::new(
            field,
            format!(
                "artifact {id} ({}) is a {}; a trace diff takes two PyTorch profiler traces",
                a.name, a.kind
            ),
        )));
    }
    if a.status != "done" || !a.has_file() {
        return Ok(Err(FieldError::new(
            field,
            format!(
                "artifact {id} ({}) is not analyzed (status {}): wait for its analysis or re-run it",
                a.name, a.status
            ),
        )));
    }
    Ok(Ok(a))
}

/// Every trace of both sides (and the investigation, when given) checked; all problems
/// at once.
pub async fn check(pool: &PgPool, ask: &Ask) -> Result<(Vec<Artifact>, Vec<Artifact>), Error> {
    let mut errors = Vec::new();
    let mut sides = Vec::new();
    for (field, ids) in [("control", &ask.control), ("test", &ask.test)] {
        let mut found = Vec::new();
        for &id in ids {
            match trace(pool, field, id).await? {
                Ok(a) => found.push(a),
                Err(e) => errors.push(e),
            }
        }
        sides.push(found);
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
    let test = sides.pop().unwrap_or_default();
    let control = sides.pop().unwrap_or_default();
    Ok((control, test))
}

/// Stores the row and starts the diff; waits up to [`WAIT`] for it. Returns the id and
/// whether it is finished.
pub async fn start(
    pool: &PgPool,
    blobs: &BlobStore,
    max_decompressed: u64,
    ask: &Ask,
    user_id: i64,
) -> Result<(i64, bool), Error> {
    let (control, test) = check(pool, ask).await?;
    // A diff asked without an investigation joins its traces' (the first that has one).
    let investigation = ask
        .investigation
        .or_else(|| control.iter().chain(&test).find_map(|a| a.investigation_id));
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO trace_diffs (investigation_id, control_artifact_id, test_artifact_id, status, created_by)
         VALUES ($1, $2, $3, 'analyzing', $4) RETURNING id",
    )
    .bind(investigation)
    .bind(control[0].id)
    .bind(test[0].id)
    .bind(user_id)
    .fetch_one(&mut *tx)
    .await?;
    for (side, list) in [("control", &control), ("test", &test)] {
        for (position, a) in list.iter().enumerate() {
            sqlx::query(
                "INSERT INTO trace_diff_artifacts (trace_diff_id, side, position, artifact_id)
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(side)
            .bind(position as i32)
            .bind(a.id)
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    // Each trace's blob: its hash and how it is stored.
    let shas = |list: &[Artifact]| {
        list.iter()
            .map(|a| (a.sha256.clone(), a.blob_encoding))
            .collect()
    };
    let job = tokio::spawn(run(
        pool.clone(),
        blobs.clone(),
        id,
        shas(&control),
        shas(&test),
        max_decompressed,
    ));
    let finished = tokio::time::timeout(WAIT, job).await.is_ok();
    Ok((id, finished))
}

/// A trace's blob: the sha256 of its original bytes and how it is stored.
type Blob = (String, crate::core::blob::BlobEncoding);

/// Computes and stores one diff.
async fn run(
    pool: PgPool,
    blobs: BlobStore,
    id: i64,
    control_shas: Vec<Blob>,
    test_shas: Vec<Blob>,
    max_decompressed: u64,
) {
    let outcome = crate::memory::spawn_blocking(move || {
        compute(&blobs, &control_shas, &test_shas, max_decompressed)
    })
    .await
    .unwrap_or_else(|e| Err(format!("the diff stopped: {e}")));
    let stored = match outcome {
        Ok(result) => {
            sqlx::query(
                "UPDATE trace_diffs SET status = 'done', result = $2, error = NULL, finished_at = now()
                 WHERE id = $1",
            )
            .bind(id)
            .bind(Json(result))
            .execute(&pool)
            .await
        }
        Err(message) => {
            sqlx::query(
                "UPDATE trace_diffs SET status = 'failed', error = $2, finished_at = now() WHERE id = $1",
            )
            .bind(id)
            .bind(message)
            .execute(&pool)
            .await
        }
    };
    if let Err(e) = stored {
        tracing::error!(id, error = %e, "storing a trace diff");
    }
}

/// Both traces' totals and their diff (a blocking thread inside the runtime).
fn compute(
    blobs: &BlobStore,
    control_shas: &[Blob],
    test_shas: &[Blob],
    max_decompressed: u64,
) -> Result<TraceDiffResult, String> {
    let handle = tokio::runtime::Handle::current();
    let totals = |side: &str, shas: &[Blob]| -> Result<OpTotals, String> {
        // Each rank's totals are folded in as soon as they are read: a side of 64 ranks
        // holds one table of names, not 64.
        let mut sum = SideSum::default();
        for (i, (sha, encoding)) in shas.iter().enumerate() {
            let open = || {
                handle
                    .block_on(blobs.reader(sha, *encoding))
                    .map_err(|e| std::io::Error::other(e.to_string()))
            };
            let which = if shas.len() > 1 {
                format!("the {side} side's trace {}", i + 1)
            } else {
                format!("the {side} trace")
            };
            sum.add(op_totals(open, max_decompressed).map_err(|e| format!("{which}: {e}"))?);
        }
        Ok(sum.finish())
    };
    let control = totals("control", control_shas)?;
    let test = totals("test", test_shas)?;
    let mut result = diff(&control, &test);
    result.keep_top(MAX_STORED_OPS);
    Ok(result)
}

/// A stored diff.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TraceDiff {
    pub id: i64,
    pub investigation_id: Option<i64>,
    pub control_artifact_id: i64,
    pub test_artifact_id: i64,
    pub control_name: String,
    pub test_name: String,
    /// analyzing, done or failed
    pub status: String,
    pub error: Option<String>,
    pub result: Option<Json<TraceDiffResult>>,
    pub creator: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl TraceDiff {
    pub fn url(&self) -> String {
        format!("/trace-diffs/{}", self.id)
    }

    pub fn headline(&self) -> Option<String> {
        self.result.as_ref().and_then(|r| r.0.headline())
    }
}

const SELECT: &str = "SELECT d.id, d.investigation_id, d.control_artifact_id, d.test_artifact_id,
        c.name AS control_name, t.name AS test_name,
        CASE WHEN d.status = 'analyzing' AND d.created_at < now() - make_interval(mins => $2)
             THEN 'failed' ELSE d.status END AS status,
        CASE WHEN d.status = 'analyzing' AND d.created_at < now() - make_interval(mins => $2)
             THEN 'the server stopped before the diff finished; start it again' ELSE d.error END AS error,
        d.result, u.name AS creator, d.created_at
     FROM trace_diffs d
     JOIN artifacts c ON c.id = d.control_artifact_id
     JOIN artifacts t ON t.id = d.test_artifact_id
     LEFT JOIN users u ON u.id = d.created_by";

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<TraceDiff>> {
    sqlx::query_as(&format!("{SELECT} WHERE d.id = $1"))
        .bind(id)
        .bind(STALE_AFTER_MIN as i32)
        .fetch_optional(pool)
        .await
}

/// The diffs kept for an investigation, newest first (at most 20).
pub async fn for_investigation(pool: &PgPool, investigation: i64) -> sqlx::Result<Vec<TraceDiff>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE d.investigation_id = $1 ORDER BY d.id DESC LIMIT 20"
    ))
    .bind(investigation)
    .bind(STALE_AFTER_MIN as i32)
    .fetch_all(pool)
    .await
}

/// The diffs a trace takes part in, newest first (at most 20).
pub async fn for_artifact(pool: &PgPool, artifact: i64) -> sqlx::Result<Vec<TraceDiff>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE d.id IN (SELECT trace_diff_id FROM trace_diff_artifacts WHERE artifact_id = $1)
         ORDER BY d.id DESC LIMIT 20"
    ))
    .bind(artifact)
    .bind(STALE_AFTER_MIN as i32)
    .fetch_all(pool)
    .await
}

/// Each side's traces in order, as (id, name): (control, test).
pub async fn sides(
    pool: &PgPool,
    id: i64,
) -> sqlx::Result<(Vec<(i64, String)>, Vec<(i64, String)>)> {
    let rows: Vec<(String, i64, String)> = sqlx::query_as(
        "SELECT s.side, a.id, a.name FROM trace_diff_artifacts s
         JOIN artifacts a ON a.id = s.artifact_id
         WHERE s.trace_diff_id = $1 ORDER BY s.side, s.position",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    let (mut control, mut test) = (Vec::new(), Vec::new());
    for (side, id, name) in rows {
        if side == "control" {
            control.push((id, name));
        } else {
            test.push((id, name));
        }
    }
    Ok((control, test))
}

/// Other analyzed PyTorch traces to diff `artifact` against: those of its investigation
/// first, then the newest (at most 100): (id, name).
pub async fn candidates(
    pool: &PgPool,
    artifact: i64,
    investigation: Option<i64>,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT id, name FROM artifacts
         WHERE kind = $3 AND status = 'done' AND id <> $1
         ORDER BY (investigation_id IS NOT DISTINCT FROM $2 AND $2 IS NOT NULL) DESC, id DESC
         LIMIT 100",
    )
    .bind(artifact)
    .bind(investigation)
    .bind(crate::core::analyze::Kind::PytorchTrace.slug())
    .fetch_all(pool)
    .await
}
