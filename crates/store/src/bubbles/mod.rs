//! Bubble attribution as the API and the step-3 page share it: check the two artifacts,
//! read the trace's stored analysis and the queue (a request log's loaded rows, or a
//! Prometheus capture's waiting gauge), let [`crate::core::method::bubbles`] classify,
//! and keep the result for the trace's investigation, where it is step 3's evidence.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::prometheus::range::PrometheusRangeAnalysis;
use crate::core::analyze::prometheus::PrometheusAnalysis;
use crate::core::analyze::pytorch_trace::TraceAnalysis;
use crate::core::analyze::{Kind, Of};
use crate::core::method::bubbles::{
    attribute, check_knobs, queue_window, Attribution, QueueTimeline, RequestQueue,
};
use crate::error::Error;
use crate::investigations::db as inv_db;

/// What to attribute, as a person asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ask {
    pub trace: i64,
    pub queue: i64,
    pub offset_ms: f64,
    pub min_idle_us: f64,
}

impl Ask {
    /// The ask, unless reading its fields (`errors`) or checking the knobs found a problem.
    pub fn read(
        trace: i64,
        queue: i64,
        offset_ms: f64,
        min_idle_us: f64,
        mut errors: Vec<crate::core::FieldError>,
    ) -> Result<Ask, Vec<crate::core::FieldError>> {
        if errors.is_empty() {
            if let Err(e) = check_knobs(offset_ms, min_idle_us) {
                errors = e;
            }
        }
        if errors.is_empty() {
            Ok(Ask {
                trace,
                queue,
                offset_ms,
                min_idle_us,
            })
        } else {
            Err(errors)
        }
    }
}

/// An attribution kept for an investigation.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: i64,
    pub trace: i64,
    pub queue: i64,
    pub result: Attribution,
    pub created_at: DateTime<Utc>,
}

/// An analyzed artifact of one of `kinds`, or a 422 on `field` saying what it is instead.
async fn analyzed(pool: &PgPool, field: &str, id: i64, kinds: &[Kind]) -> Result<Artifact, Error> {
    let a = artifacts::get(pool, id)
        .await?
        .ok_or_else(|| Error::field(field, format!("there is no artifact {id}")))?;
    if !kinds.contains(&a.kind()) {
        let wanted: Vec<&str> = kinds.iter().map(|k| k.slug()).collect();
        return Err(Error::field(
            field,
            format!(
                "artifact {id} ({}) is a {}; this needs a {}",
                a.name,
                a.kind,
                wanted.join(" or ")
            ),
        ));
    }
    if a.status != "done" || a.analysis.is_none() {
        return Err(Error::field(
            field,
            format!(
                "artifact {id} ({}) is not analyzed (status {}): wait for its analysis or re-run it",
                a.name, a.status
            ),
        ));
    }
    Ok(a)
}

fn decode<T: Of + Clone>(field: &str, a: &Artifact) -> Result<T, Error> {
    a.analysis.as_ref().and_then(T::of).cloned().ok_or_else(|| {
        Error::field(
            field,
            format!(
                "artifact {}'s stored analysis cannot be read by this version: re-analyze it",
                a.id
            ),
        )
    })
}

/// The request log's rows folded into a queue timeline (only rows near `clip` are kept).
async fn log_queue(
    pool: &PgPool,
    artifact: i64,
    clip: Option<(f64, f64)>,
) -> Result<QueueTimeline, Error> {
    let mut builder = RequestQueue::new(clip);
    crate::artifacts::columns::each(pool, artifact, &Default::default(), |chunk| {
        for r in chunk.iter() {
            builder.add(
                r.arrival_ts,
                r.tokenize_ms(),
                r.queue_wait_ms(),
                r.total_ms(),
            );
        }
    })
    .await?;
    Ok(builder.finish())
}

/// Attributes, and says which investigation the result belongs to (the trace's).
pub async fn run(pool: &PgPool, ask: &Ask) -> Result<(Attribution, Option<i64>), Error> {
    check_knobs(ask.offset_ms, ask.min_idle_us).map_err(Error::Invalid)?;
    // An Nsight Systems export's analysis holds the same trace analysis (its clock is the
    // session start plus the export's times).
    let trace_row = analyzed(
        pool,
        "trace",
        ask.trace,
        &[Kind::PytorchTrace, Kind::NsysSqlite],
    )
    .await?;
    let queue_row = analyzed(
        pool,
        "queue",
        ask.queue,
        &[
            Kind::RequestLog,
            Kind::OtlpSpans,
            Kind::Prometheus,
            Kind::PrometheusRange,
        ],
    )
    .await?;
    if let (Some(t), Some(q)) = (trace_row.investigation_id, queue_row.investigation_id) {
        if t != q {
            return Err(Error::field(
                "queue",
                format!(
                    "artifact {} belongs to investigation {q}, the trace to investigation {t}: \
                     attribute a trace against a queue of the same investigation",
                    queue_row.id
                ),
            ));
        }
    }
    let trace: TraceAnalysis = decode("trace", &trace_row)?;
    let queue = if queue_row.kind().has_request_rows() {
        log_queue(pool, queue_row.id, queue_window(&trace, ask.offset_ms)).await?
    } else {
        // A capture's and a server window's analyses both carry `waiting_series`.
        let waiting_series = if queue_row.kind() == Kind::PrometheusRange {
            decode::<PrometheusRangeAnalysis>("queue", &queue_row)?.waiting_series
        } else {
            decode::<PrometheusAnalysis>("queue", &queue_row)?.waiting_series
        };
        let samples: Vec<(f64, f64)> = waiting_series.iter().map(|p| (p[0], p[1])).collect();
        QueueTimeline::from_waiting_samples(&samples)
    };
    let result =
        attribute(&trace, &queue, ask.offset_ms, ask.min_idle_us).map_err(Error::Invalid)?;
    let investigation = trace_row.investigation_id.or(queue_row.investigation_id);
    Ok((result, investigation))
}

/// Keeps an attribution for `investigation` and links both artifacts as step 3's evidence.
pub async fn store(
    pool: &PgPool,
    investigation: i64,
    ask: &Ask,
    result: &Attribution,
    user: i64,
) -> Result<i64, Error> {
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO bubble_attributions
            (investigation_id, trace_artifact_id, queue_artifact_id, offset_ms, min_idle_us,
             result, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(investigation)
    .bind(ask.trace)
    .bind(ask.queue)
    .bind(ask.offset_ms)
    .bind(ask.min_idle_us)
    .bind(Json(result))
    .bind(user)
    .fetch_one(&mut *tx)
    .await?;
    for artifact in [ask.trace, ask.queue] {
        inv_db::link_evidence(&mut tx, investigation, 3, artifact, user).await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// The investigation's most recent attribution (one a newer version cannot read is
/// skipped, with a warning).
pub async fn latest(pool: &PgPool, investigation: i64) -> Result<Option<Stored>, Error> {
    let row: Option<(i64, i64, i64, serde_json::Value, DateTime<Utc>)> = sqlx::query_as(
        "SELECT id, trace_artifact_id, queue_artifact_id, result, created_at
         FROM bubble_attributions WHERE investigation_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(investigation)
    .fetch_optional(pool)
    .await?;
    let Some((id, trace, queue, result, created_at)) = row else {
        return Ok(None);
    };
    match serde_json::from_value(result) {
        Ok(result) => Ok(Some(Stored {
            id,
            trace,
            queue,
            result,
            created_at,
        })),
        Err(e) => {
            tracing::warn!(
                investigation,
                attribution = id,
                "unreadable bubble attribution: {e}"
            );
            Ok(None)
        }
    }
}
