//! An investigation's incident window: when the incident happened. Prometheus is read
//! over it, spans are taken from it, and the journal entry links the telemetry that
//! covers it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::core::analyze::Kind;
use crate::core::window::{show_time, span};

/// The window as recorded, with who set it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct IncidentWindow {
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// Who set it last.
    pub set_by: String,
    pub set_at: DateTime<Utc>,
}

impl IncidentWindow {
    /// "2026-12-02 14:00:00 – 2026-12-02 15:00:00 UTC (1 hour)".
    pub fn label(&self) -> String {
        format!(
            "{} – {} UTC ({})",
            show_time(self.starts_at),
            show_time(self.ends_at),
            span((self.ends_at - self.starts_at).num_seconds() as f64)
        )
    }
}

const SELECT_WINDOW: &str =
    "SELECT w.starts_at, w.ends_at, u.name AS set_by, w.set_at FROM incident_windows w \
     JOIN users u ON u.id = w.set_by WHERE w.investigation_id = $1";

pub async fn get(pool: &PgPool, investigation: i64) -> sqlx::Result<Option<IncidentWindow>> {
    sqlx::query_as(SELECT_WINDOW)
        .bind(investigation)
        .fetch_optional(pool)
        .await
}

fn at(t: f64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis((t * 1000.0).round() as i64).unwrap_or_default()
}

/// Records (or moves) the window, with a line in the investigation's history.
pub async fn set(
    pool: &PgPool,
    investigation: i64,
    user: i64,
    start: f64,
    end: f64,
) -> sqlx::Result<IncidentWindow> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO incident_windows (investigation_id, starts_at, ends_at, set_by) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (investigation_id) DO UPDATE \
         SET starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, \
             set_by = EXCLUDED.set_by, set_at = now()",
    )
    .bind(investigation)
    .bind(at(start))
    .bind(at(end))
    .bind(user)
    .execute(&mut *tx)
    .await?;
    let window: IncidentWindow = sqlx::query_as(SELECT_WINDOW)
        .bind(investigation)
        .fetch_one(&mut *tx)
        .await?;
    super::db::log(
        &mut tx,
        investigation,
        user,
        "window",
        None,
        &format!("incident window set to {}", window.label()),
    )
    .await?;
    tx.commit().await?;
    Ok(window)
}

/// Forgets the window; false when there was none.
pub async fn clear(pool: &PgPool, investigation: i64, user: i64) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let gone = sqlx::query("DELETE FROM incident_windows WHERE investigation_id = $1")
        .bind(investigation)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        > 0;
    if gone {
        super::db::log(
            &mut tx,
            investigation,
            user,
            "window",
            None,
            "incident window removed",
        )
        .await?;
    }
    tx.commit().await?;
    Ok(gone)
}

/// Telemetry of the investigation read over a time window (a Prometheus window, OTLP
/// spans), with its range and how it sits against the incident window.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WindowTelemetry {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub status: String,
    /// The range it covers, Unix seconds, from its analysis: a Prometheus window's start
    /// and end, the first and last request arrival of spans.
    pub start: Option<f64>,
    pub end: Option<f64>,
}

impl WindowTelemetry {
    /// How its range sits against the incident window: "covers the incident window",
    /// "overlaps the incident window", "outside the incident window", or its range
    /// alone when no window is set or it is not analyzed yet.
    pub fn against(&self, incident: Option<&IncidentWindow>) -> String {
        let (Some(s), Some(e)) = (self.start, self.end) else {
            return format!("{}: not analyzed yet", self.status);
        };
        let range = format!("{} – {} UTC", show_time(at(s)), show_time(at(e)));
        let Some(w) = incident else {
            return range;
        };
        let (ws, we) = (
            w.starts_at.timestamp_millis() as f64 / 1000.0,
            w.ends_at.timestamp_millis() as f64 / 1000.0,
        );
        let how = if s <= ws && e >= we {
            "covers the incident window"
        } else if s < we && e > ws {
            "overlaps the incident window"
        } else {
            "outside the incident window"
        };
        format!("{range}; {how}")
    }

    pub fn what(&self) -> &str {
        crate::core::method::evidence::source_noun(
            Kind::from_slug(&self.kind).unwrap_or(Kind::Unknown),
        )
    }
}

/// The artifact kinds read over a window.
const WINDOW_KINDS: [Kind; 2] = [Kind::PrometheusRange, Kind::OtlpSpans];

/// The investigation's window telemetry, oldest first.
pub async fn telemetry(pool: &PgPool, investigation: i64) -> sqlx::Result<Vec<WindowTelemetry>> {
    sqlx::query_as(
        "SELECT id, name, kind, status, \
                CASE WHEN jsonb_typeof(analysis->'start') = 'number' \
                     THEN (analysis->>'start')::float8 \
                     WHEN jsonb_typeof(analysis->'arrival_first') = 'number' \
                     THEN (analysis->>'arrival_first')::float8 END AS start, \
                CASE WHEN jsonb_typeof(analysis->'end') = 'number' \
                     THEN (analysis->>'end')::float8 \
                     WHEN jsonb_typeof(analysis->'arrival_last') = 'number' \
                     THEN (analysis->>'arrival_last')::float8 END AS \"end\" \
         FROM artifacts WHERE investigation_id = $1 AND kind = ANY($2) ORDER BY id",
    )
    .bind(investigation)
    .bind(WINDOW_KINDS.map(Kind::slug).as_slice())
    .fetch_all(pool)
    .await
}

/// The shape of the incident window (see [`crate::core::recall::window_shape`]), from
/// the investigation's analyzed Prometheus window that overlaps the incident window
/// most (the latest one when no window is set or none overlaps).
pub async fn shape_of(pool: &PgPool, investigation: i64) -> sqlx::Result<Option<String>> {
    use crate::core::analyze::prometheus::range::PrometheusRangeAnalysis;
    let analysis: Option<serde_json::Value> = sqlx::query_scalar(
        "SELECT a.analysis FROM artifacts a \
         LEFT JOIN incident_windows w ON w.investigation_id = a.investigation_id \
         WHERE a.investigation_id = $1 AND a.kind = $2 AND a.status = 'done' \
           AND jsonb_typeof(a.analysis->'start') = 'number' \
           AND jsonb_typeof(a.analysis->'end') = 'number' \
         ORDER BY CASE WHEN w.investigation_id IS NULL THEN 0 ELSE \
                  greatest(0, least((a.analysis->>'end')::float8, extract(epoch FROM w.ends_at)) \
                     - greatest((a.analysis->>'start')::float8, extract(epoch FROM w.starts_at))) \
                  END DESC, a.id DESC \
         LIMIT 1",
    )
    .bind(investigation)
    .bind(Kind::PrometheusRange.slug())
    .fetch_optional(pool)
    .await?;
    Ok(analysis
        .and_then(|v| serde_json::from_value::<PrometheusRangeAnalysis>(v).ok())
        .and_then(|a| crate::core::recall::window_shape::shape(&a)))
}
