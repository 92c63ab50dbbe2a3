//! Comparisons: the input parsed at the edge (JSON or a form), each side's runs read
//! from analyzed artifacts, the computation (off the async threads), and the rows.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::request_log::RequestLogAnalysis;
use crate::core::analyze::vllm_bench::VllmBenchAnalysis;
use crate::core::analyze::{stride_sample, Kind};
use crate::core::method::comparison::{
    compare, workload_setting_keys, Defect, Prediction, Report, Request, Run, Series,
};
use crate::core::method::{setup_check, FrozenConfig, Percentile, RunHealth};
use crate::core::stats::BootstrapConfig;
use crate::core::FieldError;
use crate::error::AppError;

/// Request-log rows kept per run (evenly spaced), as many as the benchmark analyzer
/// keeps per series: the bootstrap resamples them 2,000 times for each of 28
/// series × percentile cells, within one request's time budget.
pub const MAX_ROWS_PER_RUN: usize = crate::core::analyze::vllm_bench::MAX_SAMPLES;

/// A comparison as asked for, checked field by field.
#[derive(Debug, Clone)]
pub struct NewComparison {
    pub baseline: Vec<i64>,
    pub candidate: Vec<i64>,
    pub variable: String,
    pub investigation: Option<i64>,
    pub cause_proven: bool,
    pub metric: Series,
    pub percentile: Percentile,
    pub baseline_config: Option<FrozenConfig>,
    pub candidate_config: Option<FrozenConfig>,
    pub prediction: Option<Prediction>,
}

fn series_or(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> Series {
    let raw = raw.map(str::trim).filter(|s| !s.is_empty());
    match raw {
        None => Series::TtftMs,
        Some(r) => Series::from_key(r).unwrap_or_else(|| {
            let keys: Vec<&str> = Series::ALL.iter().map(|s| s.key()).collect();
            errors.push(FieldError::new(
                field,
                format!(
                    "{r:?} is not a latency series; use one of {}",
                    keys.join(", ")
                ),
            ));
            Series::TtftMs
        }),
    }
}

fn percentile_or(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> Percentile {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Percentile::P95,
        Some(r) => Percentile::parse(r).unwrap_or_else(|| {
            errors.push(FieldError::new(
                field,
                format!("{r:?} is not a percentile; use p50, p90, p95 or p99"),
            ));
            Percentile::P95
        }),
    }
}

fn check_sides(baseline: &[i64], candidate: &[i64], errors: &mut Vec<FieldError>) {
    for (field, ids) in [("baseline", baseline), ("candidate", candidate)] {
        if ids.is_empty() {
            errors.push(FieldError::new(
                field,
                "choose at least one artifact for this side",
            ));
        }
        let mut seen = Vec::new();
        for id in ids {
            if seen.contains(id) {
                errors.push(FieldError::new(
                    field,
                    format!("artifact {id} is listed twice"),
                ));
            }
            seen.push(*id);
        }
    }
    for id in baseline.iter().filter(|id| candidate.contains(id)) {
        errors.push(FieldError::new(
            "candidate",
            format!("artifact {id} is on both sides: a run cannot be its own baseline"),
        ));
    }
}

fn check_variable(raw: &str, errors: &mut Vec<FieldError>) -> String {
    let v = raw.trim();
    if v.is_empty() {
        errors.push(FieldError::new(
            "variable",
            "say what was changed (the one variable), e.g. \"enable chunked prefill\"",
        ));
    } else if v.chars().count() > 500 {
        errors.push(FieldError::new("variable", "at most 500 characters"));
    }
    v.to_string()
}

fn check_prediction(p: &Prediction, errors: &mut Vec<FieldError>) {
    for (field, v) in [
        ("prediction.low_pct", p.low_pct),
        ("prediction.high_pct", p.high_pct),
    ] {
        if !v.is_finite() || v.abs() > 1e6 {
            errors.push(FieldError::new(field, "a finite percentage, e.g. -25"));
        }
    }
}

impl NewComparison {
    /// The API body: `{"baseline": [ids], "candidate": [ids], "variable": "…",
    /// "investigation"?, "cause_proven"?, "metric"?, "percentile"?,
    /// "baseline_config"?, "candidate_config"?, "prediction"?}`.
    pub fn from_json(body: &Value) -> Result<NewComparison, Vec<FieldError>> {
        let mut errors = Vec::new();
        let Some(obj) = body.as_object() else {
            return Err(vec![FieldError::new("body", "expected a JSON object")]);
        };
        let ids = |field: &str, errors: &mut Vec<FieldError>| -> Vec<i64> {
            match obj.get(field) {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(|v| match v.as_i64().filter(|n| *n > 0) {
                        Some(n) => Some(n),
                        None => {
                            errors.push(FieldError::new(
                                field,
                                format!("{v} is not an artifact id (a positive integer)"),
                            ));
                            None
                        }
                    })
                    .collect(),
                _ => {
                    errors.push(FieldError::new(
                        field,
                        "a list of artifact ids is required, e.g. [12, 15]",
                    ));
                    Vec::new()
                }
            }
        };
        let baseline = ids("baseline", &mut errors);
        let candidate = ids("candidate", &mut errors);
        if !errors
            .iter()
            .any(|e| e.field == "baseline" || e.field == "candidate")
        {
            check_sides(&baseline, &candidate, &mut errors);
        }
        let variable = match obj.get("variable") {
            Some(Value::String(s)) => check_variable(s, &mut errors),
            _ => check_variable("", &mut errors),
        };
        let investigation = match obj.get("investigation") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_i64().filter(|n| *n > 0) {
                Some(n) => Some(n),
                None => {
                    errors.push(FieldError::new(
                        "investigation",
                        "an investigation id (a positive integer) or null",
                    ));
                    None
                }
            },
        };
        let cause_proven = match obj.get("cause_proven") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                errors.push(FieldError::new("cause_proven", "true or false"));
                false
            }
        };
        let text = |k: &str| obj.get(k).and_then(Value::as_str);
        let metric = series_or("metric", text("metric"), &mut errors);
        let percentile = percentile_or("percentile", text("percentile"), &mut errors);
        let config = |field: &str, errors: &mut Vec<FieldError>| match obj.get(field) {
            None | Some(Value::Null) => None,
            Some(v) => serde_json::from_value::<FrozenConfig>(v.clone())
                .map_err(|e| {
                    errors.push(FieldError::new(
                        field,
                        format!("not a step-0 configuration record: {e}"),
                    ))
                })
                .ok(),
        };
        let baseline_config = config("baseline_config", &mut errors);
        let candidate_config = config("candidate_config", &mut errors);
        let prediction = match obj.get("prediction") {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => {
                let t = |k: &str| p.get(k).and_then(Value::as_str);
                let num = |k: &str, errors: &mut Vec<FieldError>| match p
                    .get(k)
                    .and_then(Value::as_f64)
                {
                    Some(v) => v,
                    None => {
                        errors.push(FieldError::new(
                            format!("prediction.{k}"),
                            "the expected change in percent, e.g. -25",
                        ));
                        0.0
                    }
                };
                let pr = Prediction {
                    series: match t("metric") {
                        Some(m) => series_or("prediction.metric", Some(m), &mut errors),
                        None => metric,
                    },
                    percentile: match t("percentile") {
                        Some(m) => percentile_or("prediction.percentile", Some(m), &mut errors),
                        None => percentile,
                    },
                    low_pct: num("low_pct", &mut errors),
                    high_pct: num("high_pct", &mut errors),
                    source: t("source").unwrap_or("").trim().chars().take(500).collect(),
                };
                check_prediction(&pr, &mut errors);
                Some(pr)
            }
            Some(_) => {
                errors.push(FieldError::new(
                    "prediction",
                    "an object {\"metric\", \"percentile\", \"low_pct\", \"high_pct\"}",
                ));
                None
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(NewComparison {
            baseline,
            candidate,
            variable,
            investigation,
            cause_proven,
            metric,
            percentile,
            baseline_config,
            candidate_config,
            prediction,
        })
    }

    /// The page's form: checkboxes `baseline`/`candidate` (repeated), `variable`,
    /// `metric`, `percentile`, `cause_proven`, `investigation`, settings textareas
    /// (`name = value` lines) and the prediction's fields.
    pub fn from_form(pairs: &[(String, String)]) -> Result<NewComparison, Vec<FieldError>> {
        let mut errors = Vec::new();
        fn all<'a>(pairs: &'a [(String, String)], k: &'a str) -> impl Iterator<Item = &'a String> {
            pairs.iter().filter(move |(n, _)| n == k).map(|(_, v)| v)
        }
        let one = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map_or("", |(_, v)| v.as_str())
        };
        let ids = |k: &str, errors: &mut Vec<FieldError>| -> Vec<i64> {
            all(pairs, k)
                .filter_map(|v| match v.trim().parse::<i64>().ok().filter(|n| *n > 0) {
                    Some(n) => Some(n),
                    None => {
                        errors.push(FieldError::new(k, format!("{v:?} is not an artifact id")));
                        None
                    }
                })
                .collect()
        };
        let baseline = ids("baseline", &mut errors);
        let candidate = ids("candidate", &mut errors);
        check_sides(&baseline, &candidate, &mut errors);
        let variable = check_variable(one("variable"), &mut errors);
        let investigation = match one("investigation").trim() {
            "" => None,
            s => match s.parse::<i64>().ok().filter(|n| *n > 0) {
                Some(n) => Some(n),
                None => {
                    errors.push(FieldError::new(
                        "investigation",
                        format!("{s:?} is not an investigation id"),
                    ));
                    None
                }
            },
        };
        let cause_proven = matches!(one("cause_proven"), "on" | "1" | "true" | "yes");
        let metric = series_or("metric", Some(one("metric")), &mut errors);
        let percentile = percentile_or("percentile", Some(one("percentile")), &mut errors);
        let config = |field: &str, errors: &mut Vec<FieldError>| -> Option<FrozenConfig> {
            let text = one(field);
            if text.trim().is_empty() {
                return None;
            }
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                match line.split_once(['=', ':']) {
                    Some((k, v)) => lines.push((k.trim().to_string(), v.trim().to_string())),
                    None => errors.push(FieldError::new(
                        field,
                        format!(
                            "line {}: write name = value, e.g. chunked_prefill = on",
                            i + 1
                        ),
                    )),
                }
            }
            for (k, _) in &lines {
                if crate::core::method::reproduce::config_field(k).is_none() {
                    errors.push(FieldError::new(
                        field,
                        format!("{k:?} is not a step-0 setting (e.g. tp, chunked_prefill, max_num_batched_tokens)"),
                    ));
                }
            }
            let (cfg, errs) =
                FrozenConfig::from_form(lines.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            errors.extend(
                errs.into_iter()
                    .map(|e| FieldError::new(field, format!("{}: {}", e.field, e.message))),
            );
            Some(cfg)
        };
        let baseline_config = config("baseline_config", &mut errors);
        let candidate_config = config("candidate_config", &mut errors);
        let (low, high) = (one("prediction_low").trim(), one("prediction_high").trim());
        let prediction = if low.is_empty() && high.is_empty() {
            None
        } else {
            let pct = |field: &str, raw: &str, errors: &mut Vec<FieldError>| {
                raw.trim_end_matches('%')
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| {
                        errors.push(FieldError::new(
                            field,
                            format!("{raw:?} is not a percentage, e.g. -25"),
                        ))
                    })
                    .unwrap_or(0.0)
            };
            let pr = Prediction {
                series: match one("prediction_metric").trim() {
                    "" => metric,
                    m => series_or("prediction_metric", Some(m), &mut errors),
                },
                percentile: match one("prediction_percentile").trim() {
                    "" => percentile,
                    p => percentile_or("prediction_percentile", Some(p), &mut errors),
                },
                low_pct: pct("prediction_low", low, &mut errors),
                high_pct: pct("prediction_high", high, &mut errors),
                source: one("prediction_source").trim().chars().take(500).collect(),
            };
            check_prediction(&pr, &mut errors);
            Some(pr)
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(NewComparison {
            baseline,
            candidate,
            variable,
            investigation,
            cause_proven,
            metric,
            percentile,
            baseline_config,
            candidate_config,
            prediction,
        })
    }
}

/// Kinds a comparison can be made of.
pub fn comparable(kind: Kind) -> bool {
    matches!(kind, Kind::VllmBench | Kind::RequestLog)
}

/// The artifacts of both sides, checked: they exist, are analyzed, and are all of
/// one comparable kind.
async fn fetch_sides(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(Vec<Artifact>, Vec<Artifact>, Kind), AppError> {
    let mut errors = Vec::new();
    let mut sides = Vec::new();
    for (field, ids) in [("baseline", baseline), ("candidate", candidate)] {
        let mut found = Vec::new();
        for &id in ids {
            match artifacts::get(pool, id).await? {
                None => errors.push(FieldError::new(field, format!("no artifact {id}"))),
                Some(a) if !comparable(a.kind()) => errors.push(FieldError::new(
                    field,
                    format!(
                        "artifact {id} ({}) is a {}; comparisons take vLLM benchmark results or request logs",
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
        .map_or(Kind::Unknown, Artifact::kind);
    for (field, side) in [("baseline", &baseline_side), ("candidate", &candidate_side)] {
        for a in side.iter().filter(|a| a.kind() != kind) {
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
        return Err(AppError::Invalid(errors));
    }
    Ok((baseline_side, candidate_side, kind))
}

fn setting_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(s.trim().to_string()),
        other => Some(other.to_string()),
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One run from a vLLM benchmark analysis (its top-level run, which carries the
/// per-request samples).
fn bench_run(field: &str, a: &Artifact) -> Result<Run, FieldError> {
    let x: VllmBenchAnalysis = a
        .analysis
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
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
    })
}

type RequestRowValues = (
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<i64>,
    Option<i64>,
);

/// One run from a request log's loaded rows.
async fn log_run(pool: &PgPool, a: &Artifact) -> Result<Run, AppError> {
    let rows: Vec<RequestRowValues> = sqlx::query_as(
        "SELECT first_token_ms, total_ms, queue_wait_ms, prefill_ms, decode_ms,
                prompt_tokens, output_tokens
         FROM request_rows WHERE artifact_id = $1
         ORDER BY arrival_ts NULLS LAST, request_id NULLS LAST",
    )
    .bind(a.id)
    .fetch_all(pool)
    .await?;
    let mut cols: BTreeMap<Series, Vec<f64>> = BTreeMap::new();
    let mut push = |s: Series, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            cols.entry(s).or_default().push(v);
        }
    };
    let mut prompts = Vec::new();
    let mut output_tokens = 0u64;
    for (ttft, total, queue, prefill, decode, prompt, output) in &rows {
        push(Series::TtftMs, *ttft);
        push(Series::E2elMs, *total);
        push(Series::QueueWaitMs, *queue);
        push(Series::PrefillMs, *prefill);
        push(Series::DecodeMs, *decode);
        // Time per output token after the first: decode time over the later tokens.
        if let (Some(d), Some(o)) = (decode, output.filter(|o| *o > 1)) {
            push(Series::TpotMs, Some(d / (o - 1) as f64));
        }
        if let Some(p) = prompt {
            prompts.push(*p as f64);
        }
        output_tokens += output.unwrap_or(0).max(0) as u64;
    }
    let series = cols
        .into_iter()
        .map(|(s, v)| (s, stride_sample(&v, MAX_ROWS_PER_RUN)))
        .collect();
    let analysis: Option<RequestLogAnalysis> = a
        .analysis
        .clone()
        .and_then(|v| serde_json::from_value(v).ok());
    let n = rows.len() as u64;
    Ok(Run {
        artifact_id: a.id,
        name: a.name.clone(),
        series,
        settings: BTreeMap::new(),
        health: RunHealth {
            requests_sent: n,
            succeeded: n,
            errors: 0,
            cancelled: 0,
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
    })
}

async fn runs_of(pool: &PgPool, field: &str, side: &[Artifact]) -> Result<Vec<Run>, AppError> {
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for a in side {
        match a.kind() {
            Kind::RequestLog => runs.push(log_run(pool, a).await?),
            _ => match bench_run(field, a) {
                Ok(r) => runs.push(r),
                Err(e) => errors.push(e),
            },
        }
    }
    if errors.is_empty() {
        Ok(runs)
    } else {
        Err(AppError::Invalid(errors))
    }
}

/// Both sides' runs, for a new comparison or for redrawing a stored one's pictures.
pub async fn load_runs(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(Vec<Run>, Vec<Run>, Kind), AppError> {
    let (b, c, kind) = fetch_sides(pool, baseline, candidate).await?;
    let before = runs_of(pool, "baseline", &b).await;
    let after = runs_of(pool, "candidate", &c).await;
    match (before, after) {
        (Ok(b), Ok(a)) => Ok((b, a, kind)),
        (Err(AppError::Invalid(mut e1)), Err(AppError::Invalid(e2))) => {
            e1.extend(e2);
            Err(AppError::Invalid(e1))
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
) -> Result<i64, AppError> {
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
    let job = input.clone();
    // Thousands of resamples per percentile: keep them off the async workers.
    let mut report = tokio::task::spawn_blocking(move || {
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
        })
    })
    .await
    .map_err(|e| AppError::Internal(e.into()))?
    .map_err(AppError::Invalid)?;
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

/// The same file (by content) on both sides compares a run with itself: refused,
/// with the digest, before anything is computed or stored.
async fn refuse_identical_sides(
    pool: &PgPool,
    baseline: &[i64],
    candidate: &[i64],
) -> Result<(), AppError> {
    let shared: Option<(String, String, String)> = sqlx::query_as(
        "SELECT b.sha256, b.name, c.name FROM artifacts b JOIN artifacts c ON c.sha256 = b.sha256 \
         WHERE b.id = ANY($1) AND c.id = ANY($2) ORDER BY b.id, c.id LIMIT 1",
    )
    .bind(baseline)
    .bind(candidate)
    .fetch_optional(pool)
    .await?;
    match shared {
        Some((sha, before, after)) => Err(AppError::field(
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
) -> Result<i64, AppError> {
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

pub async fn list(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as(
        "SELECT c.id, c.variable, c.kind, c.verdict, c.report->>'headline_summary' AS headline_summary,
                u.name AS creator, c.created_at
         FROM comparisons c LEFT JOIN users u ON u.id = c.created_by
         ORDER BY c.created_at DESC, c.id DESC LIMIT $1",
    )
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
    Ok(artifacts::list(pool, None, limit)
        .await?
        .into_iter()
        .filter(|a| comparable(a.kind()) && a.status == "done")
        .collect())
}
