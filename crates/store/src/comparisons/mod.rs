//! Comparisons: each side's runs read from analyzed artifacts, the computation (off the
//! async threads), and the rows. The input (JSON or a form) is parsed in the core
//! (`core::method::comparison_input`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::request_log::{Outcome, RequestLogAnalysis};
use crate::core::analyze::vllm_bench::VllmBenchAnalysis;
use crate::core::analyze::{Kind, Of};
use crate::core::method::comparison::{compare, Defect, ItlSource, Report, Request, Run, Series};
pub use crate::core::method::comparison_input::NewComparison;
use crate::core::method::{setup_check, FrozenConfig, RunHealth};
use crate::core::settings::{setting_text, workload_setting_keys};
use crate::core::stats::{mean, BootstrapConfig};
use crate::core::FieldError;
use crate::error::Error;

/// Kinds a comparison can be made of.
pub fn comparable(kind: Kind) -> bool {
    matches!(kind, Kind::VllmBench) || kind.has_request_rows()
}

/// The kind a comparison is of: request spans compare as the request log they are.
fn compared_as(kind: Kind) -> Kind {
    if kind.has_request_rows() {
        Kind::RequestLog
    } else {
        kind
    }
}

/// The artifacts of both sides, checked: they exist, are analyzed, and are all of
/// one comparable kind.
async fn fetch_sides(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(Vec<Artifact>, Vec<Artifact>, Kind), Error> {
    let mut errors = Vec::new();
    let mut sides = Vec::new();
    for (field, ids) in [("baseline", baseline), ("candidate", candidate)] {
        let mut found = Vec::new();
        for &id in ids {
            match artifacts::get(pool, id).await? {
                None => errors.push(FieldError::new(field, format!("no artifact {id}"))),
                Some(a) if a.kind() == Kind::Sweep => errors.push(FieldError::new(
                    field,
                    format!(
                        "artifact {id} ({}) is a load sweep; compare two sweeps' SLO capacity at /comparisons/sweeps",
                        a.name
                    ),
                )),
                Some(a) if !comparable(a.kind()) => errors.push(FieldError::new(
                    field,
                    format!(
                        "artifact {id} ({}) is a {}; comparisons take vLLM benchmark results, request logs or request spans",
                        a.name, a.kind
                    ),
                )),
                Some(a) if a.status != "done" => errors.push(FieldError::new(
                    field,
                    format!(
                        "artifact {id} ({}) is not analyzed yet (status {}); wait for its analysis",
                        a.name, a.status
                    ),
                )),
                Some(a) => found.push(a),
            }
        }
        sides.push(found);
    }
    let candidate_side = sides.pop().unwrap_or_default();
    let baseline_side = sides.pop().unwrap_or_default();
    let kind = baseline_side
        .first()
        .or(candidate_side.first())
        .map_or(Kind::Unknown, |a| compared_as(a.kind()));
    for (field, side) in [("baseline", &baseline_side), ("candidate", &candidate_side)] {
        for a in side.iter().filter(|a| compared_as(a.kind()) != kind) {
            errors.push(FieldError::new(
                field,
                format!(
                    "artifact {} ({}) is a {}, but the comparison is of {}: both sides need the same kind",
                    a.id,
                    a.name,
                    a.kind,
                    kind.slug()
                ),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(Error::Invalid(errors));
    }
    Ok((baseline_side, candidate_side, kind))
}

/// One run from a vLLM benchmark analysis (its top-level run, which carries the
/// per-request samples).
fn bench_run(field: &str, a: &Artifact) -> Result<Run, FieldError> {
    let x: VllmBenchAnalysis = a
        .analysis
        .as_ref()
        .and_then(VllmBenchAnalysis::of)
        .cloned()
        .ok_or_else(|| {
            FieldError::new(
                field,
                format!(
                    "artifact {} ({}) has no readable analysis; analyze it again",
                    a.id, a.name
                ),
            )
        })?;
    let r = x.result;
    if r.distributions_from != "per_request" || r.samples.ttft_ms.is_empty() {
        return Err(FieldError::new(
            field,
            format!(
                "artifact {} ({}) holds only summary numbers; a comparison resamples requests, so it needs per-request data (vLLM --save-result --save-detailed)",
                a.id, a.name
            ),
        ));
    }
    let mut series = BTreeMap::new();
    for (s, v) in [
        (Series::TtftMs, &r.samples.ttft_ms),
        (Series::ItlMs, &r.samples.itl_ms),
        (Series::TpotMs, &r.samples.tpot_ms),
        (Series::E2elMs, &r.samples.e2el_ms),
    ] {
        if !v.is_empty() {
            series.insert(s, v.clone());
        }
    }
    let settings: BTreeMap<String, String> = workload_setting_keys()
        .filter_map(|k| Some((k.to_string(), setting_text(r.config.get(k)?)?)))
        .collect();
    let completed = r.completed.unwrap_or(r.samples.ttft_ms.len() as u64);
    let failed = r.failed.unwrap_or(0);
    let reported_total = ["total_output_tokens"]
        .iter()
        .find_map(|k| r.reported.get(*k).or(r.config.get(*k)))
        .and_then(Value::as_f64);
    let output_tokens = reported_total
        .or_else(|| mean(&r.samples.output_lens).map(|m| m * completed as f64))
        .unwrap_or(0.0);
    Ok(Run {
        artifact_id: a.id,
        name: a.name.clone(),
        series,
        health: RunHealth {
            requests_sent: completed + failed,
            succeeded: completed,
            errors: failed,
            cancelled: 0,
            output_tokens: output_tokens.round() as u64,
            concurrency: r.config.get("max_concurrency").and_then(Value::as_u64),
        },
        settings,
        input_tokens_mean: mean(&r.samples.input_lens),
        output_throughput: r.output_throughput,
        defects: r
            .flags
            .into_iter()
            .map(|f| Defect {
                code: f.code,
                message: f.message,
            })
            .collect(),
        itl_source: (!r.samples.itl_ms.is_empty()).then_some(ItlSource::PerTokenGaps),
    })
}

/// One run from a request log's stored rows, in arrival order (rows without an arrival
/// time last, ties in file order). ITL is each request's `itl_p50_ms` when the log
/// carries that field, and otherwise each request's TPOT,
/// `decode_ms ÷ (output_tokens − 1)` (computed here: a per-request figure from
/// per-request ones); the run says which ([`ItlSource`]).
async fn log_run(pool: &PgPool, a: &Artifact) -> Result<Run, Error> {
    let chunks = crate::artifacts::columns::load_all(pool, a.id).await?;
    // Positions (chunk, row) are sorted, not copies of the rows: 8 bytes a row.
    let mut order: Vec<(u32, u32)> = chunks
        .iter()
        .enumerate()
        .flat_map(|(c, chunk)| (0..chunk.rows() as u32).map(move |r| (c as u32, r)))
        .collect();
    let arrival = |&(c, r): &(u32, u32)| chunks[c as usize].arrival[r as usize];
    order.sort_by(|x, y| {
        let (x, y) = (arrival(x), arrival(y));
        match (x.is_nan(), y.is_nan()) {
            (false, false) => x.total_cmp(&y),
            (false, true) => std::cmp::Ordering::Less,
            (true, false) => std::cmp::Ordering::Greater,
            (true, true) => std::cmp::Ordering::Equal,
        }
    });
    let rows = order
        .iter()
        .map(|&(c, r)| chunks[c as usize].row(r as usize));
    let mut cols: BTreeMap<Series, Vec<f64>> = BTreeMap::new();
    let mut push = |s: Series, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            cols.entry(s).or_default().push(v);
        }
    };
    let mut prompts = Vec::new();
    let mut output_tokens = 0u64;
    let (mut errors, mut cancelled) = (0u64, 0u64);
    for r in rows {
        match r.outcome {
            Outcome::Succeeded => {}
            Outcome::Errored => errors += 1,
            Outcome::Cancelled => cancelled += 1,
        }
        push(Series::TtftMs, r.first_token_ms());
        push(Series::E2elMs, r.total_ms());
        push(Series::QueueWaitMs, r.queue_wait_ms());
        push(Series::PrefillMs, r.prefill_ms());
        push(Series::DecodeMs, r.decode_ms());
        push(Series::ItlMs, r.itl_p50_ms);
        push(Series::ItlP99Ms, r.itl_p99_ms);
        // Time per output token after the first: decode time over the later tokens.
        if let (Some(d), Some(o)) = (r.decode_ms(), r.output_tokens.filter(|o| *o > 1)) {
            push(Series::TpotMs, Some(d / (o - 1) as f64));
        }
        if let Some(p) = r.prompt_tokens {
            prompts.push(p as f64);
        }
        output_tokens += r.output_tokens.unwrap_or(0).max(0) as u64;
    }
    let itl_source = if cols.contains_key(&Series::ItlMs) {
        Some(ItlSource::RequestItlP50)
    } else if let Some(tpot) = cols.get(&Series::TpotMs).cloned() {
        cols.insert(Series::ItlMs, tpot);
        Some(ItlSource::RequestTpot)
    } else {
        None
    };
    let series = cols;
    let analysis: Option<RequestLogAnalysis> = a
        .analysis
        .as_ref()
        .and_then(RequestLogAnalysis::of)
        .cloned();
    let n = order.len() as u64;
    Ok(Run {
        artifact_id: a.id,
        name: a.name.clone(),
        series,
        settings: BTreeMap::new(),
        health: RunHealth {
            requests_sent: n,
            succeeded: n - errors - cancelled,
            errors,
            cancelled,
            output_tokens,
            concurrency: None,
        },
        input_tokens_mean: mean(&prompts),
        output_throughput: None,
        defects: analysis
            .map(|x| {
                x.notes
                    .into_iter()
                    .filter(|n| n.contains("negative phase times"))
                    .map(|message| Defect {
                        code: "negative_phase_times".into(),
                        message,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        itl_source,
    })
}

async fn runs_of(pool: &PgPool, field: &str, side: &[Artifact]) -> Result<Vec<Run>, Error> {
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for a in side {
        match a.kind() {
            Kind::RequestLog | Kind::OtlpSpans => runs.push(log_run(pool, a).await?),
            _ => match bench_run(field, a) {
                Ok(r) => runs.push(r),
                Err(e) => errors.push(e),
            },
        }
    }
    if errors.is_empty() {
        Ok(runs)
    } else {
        Err(Error::Invalid(errors))
    }
}

/// Both sides' runs, for a new comparison or for redrawing a stored one's pictures.
pub async fn load_runs(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(Vec<Run>, Vec<Run>, Kind), Error> {
    let (b, c, kind) = fetch_sides(pool, baseline, candidate).await?;
    let before = runs_of(pool, "baseline", &b).await;
    let after = runs_of(pool, "candidate", &c).await;
    match (before, after) {
        (Ok(b), Ok(a)) => Ok((b, a, kind)),
        (Err(Error::Invalid(mut e1)), Err(Error::Invalid(e2))) => {
            e1.extend(e2);
            Err(Error::Invalid(e1))
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// Computes and stores a comparison; nothing is stored when the input is refused. The
/// investigation it names is checked by `investigations::record_comparison`, which calls this
/// with that investigation's step-0 record: runs of another setup than step 0 froze make the
/// comparison invalid for it, naming the dimension.
pub async fn create(
    pool: &PgPool,
    input: NewComparison,
    step0: Option<&FrozenConfig>,
    user_id: i64,
) -> Result<i64, Error> {
    refuse_identical_sides(pool, &input.baseline, &input.candidate).await?;
    let (baseline, candidate, kind) = load_runs(pool, &input.baseline, &input.candidate).await?;
    let setup_reasons = match step0 {
        Some(step0) => {
            let runs: Vec<(&str, &str, setup_check::Claimed)> = baseline
                .iter()
                .map(|r| ("baseline", r))
                .chain(candidate.iter().map(|r| ("candidate", r)))
                .map(|(side, r)| {
                    let claimed =
                        setup_check::Claimed::of_bench_settings(|k| r.settings.get(k).cloned());
                    (side, r.name.as_str(), claimed)
                })
                .collect();
            setup_check::comparison_reasons(
                step0,
                &runs,
                input.baseline_config.as_ref(),
                input.candidate_config.as_ref(),
            )
        }
        None => Vec::new(),
    };
    let min_effect_pct = match (input.min_effect_pct, input.investigation) {
        (Some(m), _) => m,
        (None, Some(inv)) => investigation_min_effect(pool, inv).await?,
        (None, None) => crate::core::method::verdict::DEFAULT_MIN_EFFECT_PCT,
    };
    let job = input.clone();
    // Thousands of resamples per percentile: keep them off the async workers.
    let mut report = crate::memory::spawn_blocking(move || {
        compare(&Request {
            baseline: &baseline,
            candidate: &candidate,
            variable: &job.variable,
            baseline_config: job.baseline_config.as_ref(),
            candidate_config: job.candidate_config.as_ref(),
            headline: (job.metric, job.percentile),
            cause_proven: job.cause_proven,
            prediction: job.prediction.as_ref(),
            bootstrap: BootstrapConfig::default(),
            min_effect_pct,
        })
    })
    .await
    .map_err(|e| Error::Internal(e.into()))?
    .map_err(Error::Invalid)?;
    if !setup_reasons.is_empty() {
        report.verdict = crate::core::method::Verdict::InvalidComparison;
        report.invalid = true;
        report.reasons.extend(setup_reasons);
        if let Some(p) = report.prediction.as_mut() {
            p.counted = false;
        }
    }
    insert(pool, &input, kind, &report, user_id).await
}

/// The minimum effect an investigation's comparisons use (percent of the before value).
pub async fn investigation_min_effect(pool: &PgPool, investigation: i64) -> Result<f64, Error> {
    let m: Option<f64> =
        sqlx::query_scalar("SELECT min_effect_pct FROM investigations WHERE id = $1")
            .bind(investigation)
            .fetch_optional(pool)
            .await?;
    m.ok_or_else(|| {
        Error::field(
            "investigation",
            format!("there is no investigation {investigation}"),
        )
    })
}

/// The same file (by content) on both sides compares a run with itself: refused,
/// with the digest, before anything is computed or stored.
async fn refuse_identical_sides(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(), Error> {
    let shared: Option<(String, String, String)> = sqlx::query_as(
        "SELECT b.sha256, b.name, c.name FROM artifacts b JOIN artifacts c ON c.sha256 = b.sha256 \
         WHERE b.id = ANY($1) AND c.id = ANY($2) ORDER BY b.id, c.id LIMIT 1",
    )
    .bind(baseline)
    .bind(candidate)
    .fetch_optional(pool)
    .await?;
    match shared {
        Some((sha, before, after)) => Err(Error::field(
            "candidate",
            format!(
                "{after} (candidate) and {before} (baseline) are the same file (sha256 {}…): a run compared with itself says nothing; choose the run measured after the change",
                &sha[..sha.len().min(12)]
            ),
        )),
        None => Ok(()),
    }
}

async fn insert(
    pool: &PgPool,
    input: &NewComparison,
    kind: Kind,
    report: &Report,
    user_id: i64,
) -> Result<i64, Error> {
    let mut tx = pool.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO comparisons (investigation_id, variable, kind, metric, percentile,
             cause_proven, baseline_config, candidate_config, verdict, report, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
    )
    .bind(input.investigation)
    .bind(&input.variable)
    .bind(kind.slug())
    .bind(input.metric.key())
    .bind(input.percentile.slug())
    .bind(input.cause_proven)
    .bind(input.baseline_config.as_ref().map(Json))
    .bind(input.candidate_config.as_ref().map(Json))
    .bind(report.verdict.slug())
    .bind(Json(report))
    .bind(user_id)
    .fetch_one(&mut *tx)
    .await?;
    for (side, ids) in [
        ("baseline", &input.baseline),
        ("candidate", &input.candidate),
    ] {
        for (position, artifact) in ids.iter().enumerate() {
            sqlx::query(
                "INSERT INTO comparison_artifacts (comparison_id, side, position, artifact_id)
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(side)
            .bind(position as i32)
            .bind(artifact)
            .execute(&mut *tx)
            .await?;
        }
    }
    // A minimum effect given with an investigation becomes that investigation's
    // setting, for its later comparisons too.
    if let (Some(inv), Some(m)) = (input.investigation, input.min_effect_pct) {
        sqlx::query("UPDATE investigations SET min_effect_pct = $2 WHERE id = $1")
            .bind(inv)
            .bind(m)
            .execute(&mut *tx)
            .await?;
    }
    if let Some(p) = &report.prediction {
        sqlx::query(
            "INSERT INTO predictions (comparison_id, metric, percentile, low_pct, high_pct,
                 source, observed_pct, score, counted)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(id)
        .bind(p.prediction.series.key())
        .bind(p.prediction.percentile.slug())
        .bind(p.prediction.low_pct)
        .bind(p.prediction.high_pct)
        .bind(&p.prediction.source)
        .bind(p.observed_pct)
        .bind(score_slug(p.score))
        .bind(p.counted)
        .execute(&mut *tx)
        .await?;
    }
    if report.verdict == crate::core::method::Verdict::Regressed {
        let url = format!("/comparisons/{id}");
        let text = format!(
            "Regression: {} — {} ({url})",
            input.variable, report.headline_summary
        );
        let data = serde_json::json!({
            "id": id, "url": url, "variable": input.variable,
            "investigation_id": input.investigation, "metric": input.metric.key(),
            "percentile": input.percentile.slug(), "summary": report.headline_summary,
        });
        crate::webhooks::enqueue(&mut tx, "comparison.regression", &text, &data).await?;
    }
    tx.commit().await?;
    Ok(id)
}

pub fn score_slug(s: crate::core::method::PredictionScore) -> &'static str {
    use crate::core::method::PredictionScore::*;
    match s {
        Inside => "inside",
        Below => "below",
        Above => "above",
    }
}

/// A stored comparison.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Comparison {
    pub id: i64,
    pub investigation_id: Option<i64>,
    pub variable: String,
    pub kind: String,
    pub cause_proven: bool,
    pub baseline_config: Option<Json<FrozenConfig>>,
    pub candidate_config: Option<Json<FrozenConfig>>,
    pub verdict: String,
    pub report: Json<Report>,
    pub creator: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Comparison {
    /// The page a journal entry links to.
    pub fn url(&self) -> String {
        format!("/comparisons/{}", self.id)
    }

    /// The journal entry's RESULT text for this comparison.
    pub fn journal_result(&self) -> String {
        crate::core::method::comparison::journal_result(&self.report.0, &self.url())
    }

    /// Why this comparison is not about the setup `step0` froze, from the settings its
    /// files recorded and the configurations given with it. Checked again wherever
    /// it is used, so one stored before the check existed is caught as well.
    pub fn setup_reasons(&self, step0: &FrozenConfig) -> Vec<String> {
        let side = |after: bool| {
            let value = |key: &str| {
                self.report
                    .0
                    .settings
                    .iter()
                    .find(|r| r.name == key)
                    .and_then(|r| {
                        if after {
                            r.after.clone()
                        } else {
                            r.before.clone()
                        }
                    })
            };
            setup_check::Claimed::of_bench_settings(value)
        };
        setup_check::comparison_reasons(
            step0,
            &[("baseline", "", side(false)), ("candidate", "", side(true))],
            self.baseline_config.as_ref().map(|c| &c.0),
            self.candidate_config.as_ref().map(|c| &c.0),
        )
    }
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<Comparison>> {
    sqlx::query_as(
        "SELECT c.id, c.investigation_id, c.variable, c.kind, c.cause_proven, c.baseline_config,
                c.candidate_config, c.verdict, c.report, u.name AS creator, c.created_at
         FROM comparisons c LEFT JOIN users u ON u.id = c.created_by WHERE c.id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// The newest comparison made for an investigation: its RESULT belongs in the
/// investigation's journal entry.
pub async fn latest_for_investigation(
    pool: &PgPool,
    investigation_id: i64,
) -> sqlx::Result<Option<Comparison>> {
    let id: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM comparisons WHERE investigation_id = $1
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(investigation_id)
    .fetch_optional(pool)
    .await?;
    match id {
        Some(id) => get(pool, id).await,
        None => Ok(None),
    }
}

/// The artifact ids of each side, in the order given.
pub async fn sides(pool: &PgPool, id: i64) -> sqlx::Result<(Vec<i64>, Vec<i64>)> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT side, artifact_id FROM comparison_artifacts WHERE comparison_id = $1
         ORDER BY side, position",
    )
    .bind(id)
    .fetch_all(pool)
    .await?;
    let pick = |s: &str| rows.iter().filter(|r| r.0 == s).map(|r| r.1).collect();
    Ok((pick("baseline"), pick("candidate")))
}

/// One line of the comparisons list.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Listed {
    pub id: i64,
    pub variable: String,
    pub kind: String,
    pub verdict: String,
    pub headline_summary: Option<String>,
    pub creator: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Comparisons, newest first: `limit` of them after the one with id `after` (keyset).
pub async fn list(pool: &PgPool, after: Option<i64>, limit: i64) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(
        "SELECT c.id, c.variable, c.kind, c.verdict, c.report->>'headline_summary' AS headline_summary,
                u.name AS creator, c.created_at
         FROM comparisons c LEFT JOIN users u ON u.id = c.created_by
         WHERE $1::bigint IS NULL OR (c.created_at, c.id) < (SELECT created_at, id FROM comparisons WHERE id = $1)
         ORDER BY c.created_at DESC, c.id DESC LIMIT $2",
    )
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// One scored prediction of the record.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ScoredPrediction {
    pub comparison_id: i64,
    pub variable: String,
    pub verdict: String,
    pub metric: String,
    pub percentile: String,
    pub low_pct: f64,
    pub high_pct: f64,
    pub source: String,
    pub observed_pct: f64,
    pub score: String,
    pub counted: bool,
    pub created_at: DateTime<Utc>,
}

pub async fn predictions(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<ScoredPrediction>> {
    sqlx::query_as(
        "SELECT p.comparison_id, c.variable, c.verdict, p.metric, p.percentile, p.low_pct,
                p.high_pct, p.source, p.observed_pct, p.score, p.counted, p.created_at
         FROM predictions p JOIN comparisons c ON c.id = p.comparison_id
         ORDER BY p.created_at DESC, p.id DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Hit rate of the counted predictions: (inside, counted).
pub fn hit_rate(record: &[ScoredPrediction]) -> (usize, usize) {
    let counted: Vec<&ScoredPrediction> = record.iter().filter(|p| p.counted).collect();
    let inside = counted.iter().filter(|p| p.score == "inside").count();
    (inside, counted.len())
}

/// Analyzed artifacts a comparison can be built from (newest first), for the form.
pub async fn candidates(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<Artifact>> {
    Ok(artifacts::list(pool, None, None, limit)
        .await?
        .into_iter()
        .filter(|a| comparable(a.kind()) && a.status == "done")
        .collect())
}

/// Two Prometheus windows (before and after a change) compared quantile by quantile:
/// both must be analyzed `prometheus_range` artifacts. Computed on the spot, stored
/// nowhere (see `core::analyze::prometheus::range::compare_windows`).
pub async fn compare_windows(
    pool: &PgPool,
    before: i64,
    after: i64,
) -> Result<crate::core::analyze::prometheus::range::WindowComparison, Error> {
    use crate::core::analyze::prometheus::range::{self, PrometheusRangeAnalysis};
    let mut errors = Vec::new();
    let mut sides = Vec::new();
    for (field, id) in [("before", before), ("after", after)] {
        match artifacts::get(pool, id).await? {
            None => errors.push(FieldError::new(field, format!("no artifact {id}"))),
            Some(a) if a.kind() != Kind::PrometheusRange => errors.push(FieldError::new(
                field,
                format!(
                    "artifact {id} ({}) is a {}; compare two Prometheus windows (prometheus_range)",
                    a.name, a.kind
                ),
            )),
            Some(a) if a.status != "done" => errors.push(FieldError::new(
                field,
                format!(
                    "artifact {id} ({}) is not analyzed (status {})",
                    a.name, a.status
                ),
            )),
            Some(a) => match a
                .analysis
                .as_ref()
                .and_then(PrometheusRangeAnalysis::of)
                .cloned()
            {
                Some(x) => sides.push(x),
                None => errors.push(FieldError::new(
                    field,
                    format!(
                        "artifact {id}'s analysis cannot be read by this version: re-analyze it"
                    ),
                )),
            },
        }
    }
    match (errors.is_empty(), sides.as_slice()) {
        (true, [b, a]) => Ok(range::compare_windows(b, a)),
        _ => Err(Error::Invalid(errors)),
    }
}
