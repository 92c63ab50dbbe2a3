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
use crate::core::analyze::pytorch_trace::trace_diff::{diff, op_totals, TraceDiffResult};
use crate::core::analyze::Kind;
use crate::core::FieldError;
use crate::error::AppError;
use crate::storage::BlobStore;

/// Rows kept per diff: the ones that moved most time (the summary counts all).
pub const MAX_STORED_OPS: usize = 5_000;

/// How long a request waits for the diff before answering `analyzing`.
pub const WAIT: Duration = Duration::from_secs(3);

/// An `analyzing` row older than this lost its server.
pub const STALE_AFTER_MIN: i64 = 60;

/// What to diff, as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ask {
    pub control: i64,
    pub test: i64,
    pub investigation: Option<i64>,
}

/// Reads an id field: `Ok(None)` when absent (and not required).
fn id_field(
    field: &str,
    v: Option<&Value>,
    required: bool,
    errors: &mut Vec<FieldError>,
) -> Option<i64> {
    match v {
        None | Some(Value::Null) => {
            if required {
                errors.push(FieldError::new(
                    field,
                    "is required: the id of an analyzed PyTorch trace artifact",
                ));
            }
            None
        }
        Some(x) => match crate::api::positive_id(x) {
            Some(id) => Some(id),
            None => {
                errors.push(FieldError::new(
                    field,
                    format!("must be an id (a positive integer), not {x}"),
                ));
                None
            }
        },
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
        let control = id_field("control", v.get("control"), true, &mut errors);
        let test = id_field("test", v.get("test"), true, &mut errors);
        let investigation = id_field("investigation", v.get("investigation"), false, &mut errors);
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
            Some(t) => match crate::extract::positive_id(t) {
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
        let control = read("control", true);
        let test = read("test", true);
        let investigation = read("investigation", false);
        Self::finish(control, test, investigation, errors)
    }

    fn finish(
        control: Option<i64>,
        test: Option<i64>,
        investigation: Option<i64>,
        mut errors: Vec<FieldError>,
    ) -> Result<Ask, Vec<FieldError>> {
        if let (Some(c), Some(t)) = (control, test) {
            if c == t {
                errors.push(FieldError::new(
                    "test",
                    format!(
                        "is artifact {t}, the control itself: a diff needs two different traces"
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
async fn trace(
    pool: &PgPool,
    field: &str,
    id: i64,
) -> Result<Result<Artifact, FieldError>, AppError> {
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

/// Both traces (and the investigation, when given) checked; all problems at once.
pub async fn check(pool: &PgPool, ask: &Ask) -> Result<(Artifact, Artifact), AppError> {
    let control = trace(pool, "control", ask.control).await?;
    let test = trace(pool, "test", ask.test).await?;
    let mut errors = Vec::new();
    if let Some(inv) = ask.investigation {
        if crate::investigations::db::get(pool, inv).await?.is_none() {
            errors.push(FieldError::new(
                "investigation",
                format!("there is no investigation {inv}"),
            ));
        }
    }
    match (control, test) {
        (Ok(c), Ok(t)) if errors.is_empty() => Ok((c, t)),
        (c, t) => {
            let mut all: Vec<FieldError> = [c.err(), t.err()].into_iter().flatten().collect();
            all.extend(errors);
            Err(AppError::Invalid(all))
        }
    }
}

/// Stores the row and starts the diff; waits up to [`WAIT`] for it. Returns the id and
/// whether it is finished.
pub async fn start(
    pool: &PgPool,
    blobs: &BlobStore,
    max_decompressed: u64,
    ask: &Ask,
    user_id: i64,
) -> Result<(i64, bool), AppError> {
    let (control, test) = check(pool, ask).await?;
    // A diff asked without an investigation joins the control trace's, if any.
    let investigation = ask
        .investigation
        .or(control.investigation_id)
        .or(test.investigation_id);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO trace_diffs (investigation_id, control_artifact_id, test_artifact_id, status, created_by)
         VALUES ($1, $2, $3, 'analyzing', $4) RETURNING id",
    )
    .bind(investigation)
    .bind(control.id)
    .bind(test.id)
    .bind(user_id)
    .fetch_one(pool)
    .await?;
    let job = tokio::spawn(run(
        pool.clone(),
        blobs.clone(),
        id,
        control.sha256,
        test.sha256,
        max_decompressed,
    ));
    let finished = tokio::time::timeout(WAIT, job).await.is_ok();
    Ok((id, finished))
}

/// Computes and stores one diff.
async fn run(
    pool: PgPool,
    blobs: BlobStore,
    id: i64,
    control_sha: String,
    test_sha: String,
    max_decompressed: u64,
) {
    let outcome = tokio::task::spawn_blocking(move || {
        compute(&blobs, &control_sha, &test_sha, max_decompressed)
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
    control_sha: &str,
    test_sha: &str,
    max_decompressed: u64,
) -> Result<TraceDiffResult, String> {
    let handle = tokio::runtime::Handle::current();
    let totals = |side: &str, sha: &str| {
        let open = || {
            handle
                .block_on(blobs.reader(sha))
                .map_err(|e| std::io::Error::other(e.to_string()))
        };
        op_totals(open, max_decompressed).map_err(|e| format!("the {side} trace: {e}"))
    };
    let control = totals("control", control_sha)?;
    let test = totals("test", test_sha)?;
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
        "{SELECT} WHERE d.control_artifact_id = $1 OR d.test_artifact_id = $1 ORDER BY d.id DESC LIMIT 20"
    ))
    .bind(artifact)
    .bind(STALE_AFTER_MIN as i32)
    .fetch_all(pool)
    .await
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
         WHERE kind = 'pytorch_trace' AND status = 'done' AND id <> $1
         ORDER BY (investigation_id IS NOT DISTINCT FROM $2 AND $2 IS NOT NULL) DESC, id DESC
         LIMIT 100",
    )
    .bind(artifact)
    .bind(investigation)
    .fetch_all(pool)
    .await
}
