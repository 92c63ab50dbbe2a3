//! Comparisons over the API: create one from artifact ids (computed on the spot),
//! read one back.

use std::collections::BTreeMap;

use crate::extract::{Paging, Path};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::comparisons::{self, Comparison, NewComparison};
use crate::core::method::comparison::PercentileRow;
use crate::error::{ApiResult, AppError};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_comparison, list_comparisons))
        .routes(routes!(get_comparison))
        .routes(routes!(compare_windows))
}

/// Two Prometheus windows (`prometheus_range` artifacts, e.g. before and after a change)
/// compared quantile by quantile, with whether each change is beyond the histogram's
/// bucket resolution; computed on the spot, stored nowhere. Histograms hold no
/// per-request samples, so there are no confidence intervals: compare request logs or
/// benchmark results (`POST /comparisons`) for a verdict.
#[utoipa::path(get, path = "/comparisons/windows", tag = "comparisons",
    params(
        ("before" = i64, Query, description = "the earlier window's artifact id", minimum = 1),
        ("after" = i64, Query, description = "the later window's artifact id", minimum = 1)),
    responses(
        (status = 200, body = Object, description = "{deltas: [{series, quantile, before, after, change_pct, same_bucket, lower_bound}], gauge_means, notes}"),
        (status = 422, body = crate::error::ErrorBody)))]
async fn compare_windows(
    _user: ApiUser,
    State(state): State<AppState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> ApiResult<Json<crate::core::analyze::prometheus::range::WindowComparison>> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    let id = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| crate::core::json_input::typed_id(v))
            .ok_or_else(|| crate::core::FieldError::new(k, "an artifact id"))
    };
    let (before, after) = match (id("before"), id("after")) {
        (Ok(b), Ok(a)) => (b, a),
        (b, a) => {
            return Err(AppError::Invalid(b.err().into_iter().chain(a.err()).collect()).into())
        }
    };
    Ok(Json(
        comparisons::compare_windows(&state.pool, before, after).await?,
    ))
}

/// One percentile of one series.
#[derive(Serialize, ToSchema)]
pub struct MetricCell {
    pub before: f64,
    pub after: f64,
    /// after − before
    pub diff: f64,
    /// after / before
    pub ratio: Option<f64>,
    /// Seeded percentile-bootstrap 95% interval of the difference (requests resampled).
    pub ci_low: f64,
    pub ci_high: f64,
    /// Two-sided p-value of the same bootstrap: the interval leaves 0 out exactly when
    /// p < 0.05.
    pub p_value: f64,
    pub verdict: String,
    pub n_before: usize,
    pub n_after: usize,
    /// For an inconclusive result: about how many more requests per side would resolve it.
    pub more_requests_per_side: Option<u64>,
    /// The same as a phrase ("needs ≈ 1,500 more requests per side to tell"; beyond
    /// 1,000,000, "more than 1,000,000 — the difference is too small to matter").
    pub more_requests_text: Option<String>,
    /// Range of the per-run value on each side (several runs per side only).
    pub before_run_range: Option<f64>,
    pub after_run_range: Option<f64>,
}

#[derive(Serialize, ToSchema)]
pub struct ComparisonDoc {
    pub id: i64,
    /// The comparison page.
    pub url: String,
    /// confirmed, improved, inconclusive, no_change, invalid_comparison or regressed
    pub verdict: String,
    /// The smallest relative change (percent of the before value) a verdict calls a
    /// change; smaller moves are no_change.
    pub min_effect_pct: f64,
    /// Where ITL came from on both sides (per_token_gaps, itl_p50_ms or tpot), and the
    /// sentence saying so; absent when ITL was not compared.
    pub itl_source: Option<String>,
    pub itl_source_text: Option<String>,
    /// Why; for an invalid comparison, each dimension that broke it.
    pub reasons: Vec<String>,
    /// Defects that do not invalidate it (present on both sides, or within tolerance).
    pub warnings: Vec<String>,
    pub variable: String,
    pub investigation: Option<i64>,
    /// The diagnosis names the cause this change removes (required for "confirmed").
    pub cause_proven: bool,
    /// vllm_bench or request_log
    pub kind: String,
    pub baseline: Vec<i64>,
    pub candidate: Vec<i64>,
    /// The series and percentile the verdict is about.
    pub metric: String,
    pub percentile: String,
    pub headline: String,
    /// Series key (ttft_ms, itl_ms, itl_p99_ms, tpot_ms, e2el_ms, queue_wait_ms,
    /// prefill_ms, decode_ms) → percentile (p50, p90, p95, p99) → cell.
    pub metrics: BTreeMap<String, BTreeMap<String, MetricCell>>,
    /// Output tokens per second, one value per run; judged with three or more runs per side.
    #[schema(value_type = Option<Object>)]
    pub throughput: Option<serde_json::Value>,
    /// The prediction and its score (inside, below or above the range).
    #[schema(value_type = Option<Object>)]
    pub prediction: Option<serde_json::Value>,
    /// Workload settings of each side and whether they match.
    #[schema(value_type = Vec<Object>)]
    pub settings: serde_json::Value,
    /// The journal entry's RESULT text, with the link to the page.
    pub journal_result: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

fn cell(r: &PercentileRow, n_before: usize, n_after: usize) -> MetricCell {
    MetricCell {
        before: r.before,
        after: r.after,
        diff: r.diff,
        ratio: r.ratio,
        ci_low: r.ci_low,
        ci_high: r.ci_high,
        p_value: r.p_value,
        verdict: r.verdict.slug().into(),
        n_before,
        n_after,
        more_requests_per_side: r.more_requests_per_side,
        more_requests_text: r
            .more_requests_per_side
            .filter(|_| r.verdict == crate::core::method::Verdict::Inconclusive)
            .map(crate::core::method::verdict::more_requests_text),
        before_run_range: r.before_run_range,
        after_run_range: r.after_run_range,
    }
}

/// The API document of a stored comparison.
pub fn doc(c: &Comparison, baseline: Vec<i64>, candidate: Vec<i64>) -> ComparisonDoc {
    let r = &c.report.0;
    let metrics = r
        .metrics
        .iter()
        .map(|m| {
            let cells = m
                .rows
                .iter()
                .map(|row| {
                    (
                        row.percentile.slug().to_string(),
                        cell(row, m.n_before, m.n_after),
                    )
                })
                .collect();
            (m.series.key().to_string(), cells)
        })
        .collect();
    ComparisonDoc {
        id: c.id,
        url: c.url(),
        verdict: c.verdict.clone(),
        min_effect_pct: r.min_effect_pct,
        itl_source: r.itl_source.map(|s| s.key().to_string()),
        itl_source_text: r.itl_source.map(|s| s.describe().to_string()),
        reasons: r.reasons.clone(),
        warnings: r.warnings.clone(),
        variable: c.variable.clone(),
        investigation: c.investigation_id,
        cause_proven: c.cause_proven,
        kind: c.kind.clone(),
        baseline,
        candidate,
        metric: r.headline.key().into(),
        percentile: r.percentile.slug().into(),
        headline: r.headline_summary.clone(),
        metrics,
        throughput: r.throughput.as_ref().map(value),
        prediction: r.prediction.as_ref().map(value),
        settings: value(&r.settings),
        journal_result: c.journal_result(),
        created_at: c.created_at,
    }
}

/// Report parts are plain data (no maps with non-string keys), so this cannot fail.
fn value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

async fn load(state: &AppState, id: i64) -> Result<ComparisonDoc, AppError> {
    let c = comparisons::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no comparison {id}")))?;
    let (baseline, candidate) = comparisons::sides(&state.pool, id).await?;
    Ok(doc(&c, baseline, candidate))
}

/// Compares a baseline and a candidate (one or more analyzed artifacts of one kind
/// each) and stores the result. Body: `{"baseline": [ids], "candidate": [ids],
/// "variable": "what was changed", "investigation"?: id, "cause_proven"?: bool,
/// "metric"?: "ttft_ms", "percentile"?: "p95", "baseline_config"?: {step-0 record},
/// "candidate_config"?: {…}, "prediction"?: {"metric", "percentile", "low_pct",
/// "high_pct", "source"}}`. Bad input answers 422 naming the field; nothing is stored.
#[utoipa::path(post, path = "/comparisons", tag = "comparisons",
    request_body(content = Object, description = "{\"baseline\": [1], \"candidate\": [2], \"variable\": \"enable chunked prefill\"}"),
    responses(
        (status = 201, body = ComparisonDoc),
        (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn create_comparison(
    user: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<ComparisonDoc>)> {
    user.require(Role::Editor)?;
    let value: serde_json::Value = super::json_body(&body)?;
    let input = NewComparison::from_json(&value).map_err(AppError::Invalid)?;
    let id = crate::investigations::record_comparison(&state.pool, input, user.0.id).await?;
    Ok((StatusCode::CREATED, Json(load(&state, id).await?)))
}

/// A stored comparison: verdict, reasons, every metric with its interval and p-value,
/// and the journal RESULT text.
#[utoipa::path(get, path = "/comparisons/{id}", tag = "comparisons",
    params(("id" = i64, Path)),
    responses((status = 200, body = ComparisonDoc), (status = 404, body = crate::error::ErrorBody)))]
async fn get_comparison(
    _: ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<ComparisonDoc>> {
    Ok(Json(load(&state, id).await?))
}

/// A comparison in a list.
#[derive(Serialize, ToSchema)]
pub struct ComparisonSummary {
    pub id: i64,
    /// The comparison's API address.
    pub url: String,
    pub variable: String,
    /// vllm_bench or request_log
    pub kind: String,
    pub verdict: String,
    pub headline: Option<String>,
    pub creator: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Comparisons, newest first, a page at a time.
#[utoipa::path(get, path = "/comparisons", tag = "comparisons",
    params(crate::extract::Paging),
    responses((status = 200, body = super::Page<ComparisonSummary>), (status = 422, body = crate::error::ErrorBody)))]
async fn list_comparisons(
    _: ApiUser,
    State(state): State<AppState>,
    paging: Paging,
) -> ApiResult<Json<super::Page<ComparisonSummary>>> {
    super::no_filters(&paging)?;
    let rows = comparisons::list(&state.pool, paging.after, paging.fetch()).await?;
    Ok(super::Page::new(
        &paging,
        rows,
        |c| c.id,
        |c| ComparisonSummary {
            url: format!("/api/v1/comparisons/{}", c.id),
            id: c.id,
            variable: c.variable,
            kind: c.kind,
            verdict: c.verdict,
            headline: c.headline_summary,
            creator: c.creator,
            created_at: c.created_at,
        },
    ))
}
