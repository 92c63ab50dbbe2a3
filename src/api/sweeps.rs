//! `POST /api/v1/sweeps`: latency against load for a sweep artifact or several
//! single-load runs, the knee, and the highest throughput that meets an SLO. Computed on
//! the spot from the stored analyses; nothing is written.

use axum::body::Bytes;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ApiUser;
use crate::core::analyze::sweep::{BestPoint, Knee, LatencyStats, SweepPoint};
use crate::error::{ApiResult, AppError};
use crate::state::AppState;
use crate::sweeps::{self, Question};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_sweep))
}

/// Latency statistics in milliseconds; null where the source has none.
#[derive(Serialize, ToSchema)]
pub struct LatencyDoc {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl From<&LatencyStats> for LatencyDoc {
    fn from(s: &LatencyStats) -> Self {
        LatencyDoc {
            mean: s.mean,
            p50: s.p50,
            p90: s.p90,
            p95: s.p95,
            p99: s.p99,
        }
    }
}

/// One load level.
#[derive(Serialize, ToSchema)]
pub struct PointDoc {
    pub label: String,
    /// Offered requests per second; null when unbounded or when concurrency set the load.
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    /// Every request sent at once (vLLM `qps_inf`, GuideLLM `throughput`).
    pub unbounded: bool,
    /// Achieved successful requests per second.
    pub achieved_rps: Option<f64>,
    /// Achieved output tokens per second.
    pub output_tps: Option<f64>,
    pub requests: Option<u64>,
    pub ttft_ms: LatencyDoc,
    pub tpot_ms: LatencyDoc,
    pub itl_ms: LatencyDoc,
    pub e2el_ms: LatencyDoc,
    /// The artifact the point came from (a sweep made of artifacts).
    pub artifact: Option<i64>,
}

impl From<&SweepPoint> for PointDoc {
    fn from(p: &SweepPoint) -> Self {
        PointDoc {
            label: p.label.clone(),
            offered_rate: p.offered_rate,
            concurrency: p.concurrency,
            unbounded: p.unbounded,
            achieved_rps: p.achieved_rps,
            output_tps: p.output_tps,
            requests: p.requests,
            ttft_ms: (&p.ttft_ms).into(),
            tpot_ms: (&p.tpot_ms).into(),
            itl_ms: (&p.itl_ms).into(),
            e2el_ms: (&p.e2el_ms).into(),
            artifact: p.artifact_id,
        }
    }
}

/// Where latency turns up sharply: the last point before the turn.
#[derive(Serialize, ToSchema)]
pub struct KneeDoc {
    /// Index into `points`.
    pub index: usize,
    pub label: String,
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    pub achieved_rps: f64,
    /// The latency the rule was applied to, e.g. "p99 TTFT".
    pub latency: String,
    pub latency_ms: f64,
    pub next_latency_ms: f64,
    pub sentence: String,
}

impl From<&Knee> for KneeDoc {
    fn from(k: &Knee) -> Self {
        KneeDoc {
            index: k.index,
            label: k.label.clone(),
            offered_rate: k.offered_rate,
            concurrency: k.concurrency,
            achieved_rps: k.achieved_rps,
            latency: k.latency.label(),
            latency_ms: k.latency_ms,
            next_latency_ms: k.next_latency_ms,
            sentence: k.sentence.clone(),
        }
    }
}

/// The point with the highest achieved throughput that meets the SLO.
#[derive(Serialize, ToSchema)]
pub struct BestDoc {
    /// Index into `points`.
    pub index: usize,
    pub label: String,
    /// null when unbounded or when concurrency set the load.
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    pub achieved_rps: f64,
    pub output_tps: Option<f64>,
    /// The SLO latency at this point (ms).
    pub latency_ms: f64,
}

impl From<&BestPoint> for BestDoc {
    fn from(b: &BestPoint) -> Self {
        BestDoc {
            index: b.index,
            label: b.label.clone(),
            offered_rate: b.offered_rate,
            concurrency: b.concurrency,
            achieved_rps: b.achieved_rps,
            output_tps: b.output_tps,
            latency_ms: b.latency_ms,
        }
    }
}

/// The SLO as understood.
#[derive(Serialize, ToSchema)]
pub struct SloDoc {
    /// ttft, tpot, itl or e2e
    pub metric: String,
    /// p50, p90, p95 or p99
    pub percentile: String,
    pub max_ms: f64,
}

#[derive(Serialize, ToSchema)]
pub struct SweepDoc {
    /// The series answered (empty when the source holds one sweep).
    pub series: String,
    /// The points in load order (rates ascending, unbounded last).
    pub points: Vec<PointDoc>,
    /// null when latency never turns up sharply.
    pub knee: Option<KneeDoc>,
    pub slo: Option<SloDoc>,
    /// null when no point meets the SLO, or no SLO was given.
    pub best: Option<BestDoc>,
    /// The highest-load point meets the SLO: the true limit may be higher. null without an SLO.
    pub meets_slo_at_last_point: Option<bool>,
    /// The knee and the SLO answer in words.
    pub sentences: Vec<String>,
}

/// A load sweep: `{"artifacts": [ids]}` (single-load benchmark runs that differ only in
/// request rate or concurrency; anything else differing is refused with 422 naming it)
/// or `{"artifact": id}` (a sweep file: vLLM summary table, GuideLLM sweep), optional
/// `"series"` (a file with several tests) and `"slo": {"metric": "ttft"|"tpot"|"itl"|"e2e",
/// "percentile": "p50"|"p90"|"p95"|"p99", "max_ms": 200}`. A point meets the SLO when its
/// latency is at most `max_ms` (exactly at the limit meets it). Nothing is stored.
#[utoipa::path(post, path = "/sweeps", tag = "sweeps",
    request_body(content = Object, description = "{\"artifacts\": [3, 4, 5], \"slo\": {\"metric\": \"ttft\", \"percentile\": \"p99\", \"max_ms\": 200}}"),
    responses(
        (status = 200, body = SweepDoc),
        (status = 422, body = crate::error::ErrorBody)))]
async fn create_sweep(
    _: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<Json<SweepDoc>> {
    let value = super::json_body(&body)?;
    let q = Question::from_json(&value).map_err(AppError::Invalid)?;
    let points = sweeps::load_points(&state.pool, &q.source).await?;
    let a = sweeps::answer(&points, q.series.as_deref(), q.slo).map_err(AppError::Invalid)?;
    let mut sentences: Vec<String> = a.knee.iter().map(|k| k.sentence.clone()).collect();
    sentences.extend(a.slo.iter().map(|s| s.sentence.clone()));
    Ok(Json(SweepDoc {
        series: a.series,
        points: a.points.iter().map(PointDoc::from).collect(),
        knee: a.knee.as_ref().map(KneeDoc::from),
        slo: a.slo.as_ref().map(|s| SloDoc {
            metric: s.slo.metric.slug().into(),
            percentile: s.slo.percentile.slug().into(),
            max_ms: s.slo.max_ms,
        }),
        best: a
            .slo
            .as_ref()
            .and_then(|s| s.best.as_ref())
            .map(BestDoc::from),
        meets_slo_at_last_point: a.slo.as_ref().map(|s| s.meets_slo_at_last_point),
        sentences,
    }))
}
