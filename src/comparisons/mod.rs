//! Comparisons: the input parsed at the edge (JSON or a form), each side's runs read
//! from analyzed artifacts, the computation (off the async threads), and the rows.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::PgPool;

use crate::artifacts::{self, Artifact};
use crate::core::analyze::request_log::{outcome, Outcome, RequestLogAnalysis};
use crate::core::analyze::vllm_bench::VllmBenchAnalysis;
use crate::core::analyze::Kind;
use crate::core::method::comparison::{compare, Defect, Prediction, Report, Request, Run, Series};
use crate::core::method::{setup_check, FrozenConfig, RunHealth};
use crate::core::metric::Percentile;
use crate::core::settings::{setting_text, workload_setting_keys};
use crate::core::stats::{mean, BootstrapConfig};
use crate::core::FieldError;
use crate::error::AppError;

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

/// A comparison request as written, before any check. The API's JSON and the page's
/// form each read into this (they differ only in how ids, settings and the prediction
/// are spelled); [`Draft::check`] is the one validator.
#[derive(Debug, Default)]
struct Draft {
    /// Each side's ids as written; `None` when the side is not a list at all.
    baseline: Option<Vec<String>>,
    candidate: Option<Vec<String>>,
    variable: String,
    investigation: Option<String>,
    cause_proven: Option<String>,
    metric: Option<String>,
    percentile: Option<String>,
    baseline_config: Option<ConfigDraft>,
    candidate_config: Option<ConfigDraft>,
    prediction: Option<PredictionDraft>,
    /// Problems of shape the adapter found (e.g. a JSON value of the wrong type).
    errors: Vec<FieldError>,
}

/// A side's step-0 settings: `name = value` lines (form) or a record (JSON).
#[derive(Debug)]
enum ConfigDraft {
    Lines(String),
    Record(Result<Box<FrozenConfig>, String>),
}

#[derive(Debug, Default)]
struct PredictionDraft {
    metric: Option<String>,
    percentile: Option<String>,
    low: Option<String>,
    high: Option<String>,
    source: String,
}

/// How an input names the prediction's fields in its error messages.
struct PredictionNames {
    metric: &'static str,
    percentile: &'static str,
    low: &'static str,
    high: &'static str,
}

const JSON_PREDICTION: PredictionNames = PredictionNames {
    metric: "prediction.metric",
    percentile: "prediction.percentile",
    low: "prediction.low_pct",
    high: "prediction.high_pct",
};

const FORM_PREDICTION: PredictionNames = PredictionNames {
    metric: "prediction_metric",
    percentile: "prediction_percentile",
    low: "prediction_low",
    high: "prediction_high",
};

/// A positive id, or an error naming the field.
fn positive_id(field: &str, raw: &str, what: &str, errors: &mut Vec<FieldError>) -> Option<i64> {
    let id = raw.trim().parse::<i64>().ok().filter(|n| *n > 0);
    if id.is_none() {
        errors.push(FieldError::new(
            field,
            format!("{raw} is not {what} (a positive integer)"),
        ));
    }
    id
}

fn side_ids(field: &str, raw: Option<&[String]>, errors: &mut Vec<FieldError>) -> Vec<i64> {
    match raw {
        Some(items) => items
            .iter()
            .filter_map(|v| positive_id(field, v, "an artifact id", errors))
            .collect(),
        None => {
            errors.push(FieldError::new(
                field,
                "a list of artifact ids is required, e.g. [12, 15]",
            ));
            Vec::new()
        }
    }
}

fn flag(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> bool {
    match raw.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "off" | "0" | "false" | "no") => false,
        Some("on" | "1" | "true" | "yes") => true,
        Some(_) => {
            errors.push(FieldError::new(field, "true or false"));
            false
        }
    }
}

fn config_of(
    field: &str,
    draft: Option<ConfigDraft>,
    errors: &mut Vec<FieldError>,
) -> Option<FrozenConfig> {
    match draft? {
        ConfigDraft::Record(Ok(cfg)) => Some(*cfg),
        ConfigDraft::Record(Err(e)) => {
            errors.push(FieldError::new(
                field,
                format!("not a step-0 configuration record: {e}"),
            ));
            None
        }
        ConfigDraft::Lines(text) => config_lines(field, &text, errors),
    }
}

/// `name = value` lines (blank lines and `#` comments skipped) as a step-0 record.
fn config_lines(field: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<FrozenConfig> {
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
    let (cfg, errs) = FrozenConfig::from_form(lines.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    errors.extend(
        errs.into_iter()
            .map(|e| FieldError::new(field, format!("{}: {}", e.field, e.message))),
    );
    Some(cfg)
}

fn percent(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> f64 {
    let parsed =
        raw.and_then(|r| crate::core::quantity::read(r, crate::core::quantity::Unit::Percent).ok());
    match parsed {
        Some(v) if v.is_finite() && v.abs() <= 1e6 => v,
        _ => {
            errors.push(FieldError::new(
                field,
                "the expected change in percent, a finite number, e.g. -25",
            ));
            0.0
        }
    }
}

impl Draft {
    /// Every field checked; every problem named by the field it is about.
    fn check(self, names: &PredictionNames) -> Result<NewComparison, Vec<FieldError>> {
        let mut errors = self.errors;
        let baseline = side_ids("baseline", self.baseline.as_deref(), &mut errors);
        let candidate = side_ids("candidate", self.candidate.as_deref(), &mut errors);
        if !errors
            .iter()
            .any(|e| e.field == "baseline" || e.field == "candidate")
        {
            check_sides(&baseline, &candidate, &mut errors);
        }
        let variable = check_variable(&self.variable, &mut errors);
        let investigation = self
            .investigation
            .filter(|s| !s.trim().is_empty())
            .and_then(|s| positive_id("investigation", &s, "an investigation id", &mut errors));
        let cause_proven = flag("cause_proven", self.cause_proven.as_deref(), &mut errors);
        let metric = series_or("metric", self.metric.as_deref(), &mut errors);
        let percentile = percentile_or("percentile", self.percentile.as_deref(), &mut errors);
        let baseline_config = config_of("baseline_config", self.baseline_config, &mut errors);
        let candidate_config = config_of("candidate_config", self.candidate_config, &mut errors);
        let prediction = self.prediction.map(|p| Prediction {
            series: match p.metric.as_deref().map(str::trim) {
                None | Some("") => metric,
                m => series_or(names.metric, m, &mut errors),
            },
            percentile: match p.percentile.as_deref().map(str::trim) {
                None | Some("") => percentile,
                q => percentile_or(names.percentile, q, &mut errors),
            },
            low_pct: percent(names.low, p.low.as_deref(), &mut errors),
            high_pct: percent(names.high, p.high.as_deref(), &mut errors),
            source: p.source.trim().chars().take(500).collect(),
        });
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

/// A JSON value as the text a form would carry: strings unquoted, numbers and
/// booleans as written, other values as JSON (which then fails the field's check).
fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        other => Some(format!("{other} ")),
    }
}

impl NewComparison {
    /// The API body: `{"baseline": [ids], "candidate": [ids], "variable": "…",
    /// "investigation"?, "cause_proven"?, "metric"?, "percentile"?,
    /// "baseline_config"?, "candidate_config"?, "prediction"?}`.
    pub fn from_json(body: &Value) -> Result<NewComparison, Vec<FieldError>> {
        let Some(obj) = body.as_object() else {
            return Err(vec![FieldError::new("body", "expected a JSON object")]);
        };
        // A JSON string where a number or boolean belongs is kept quoted, so it fails.
        let strict = |v: &Value| match v {
            Value::String(s) => Some(format!("{s:?}")),
            other => json_text(other),
        };
        let ids = |k: &str| match obj.get(k) {
            Some(Value::Array(items)) => Some(items.iter().filter_map(strict).collect()),
            _ => None,
        };
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let config = |k: &str| match obj.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(ConfigDraft::Record(
                serde_json::from_value::<Box<FrozenConfig>>(v.clone()).map_err(|e| e.to_string()),
            )),
        };
        let mut errors = Vec::new();
        let prediction = match obj.get("prediction") {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => {
                let t = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
                let n = |k: &str| p.get(k).filter(|v| v.is_number()).map(Value::to_string);
                Some(PredictionDraft {
                    metric: t("metric"),
                    percentile: t("percentile"),
                    low: n("low_pct"),
                    high: n("high_pct"),
                    source: t("source").unwrap_or_default(),
                })
            }
            Some(_) => {
                errors.push(FieldError::new(
                    "prediction",
                    "an object {\"metric\", \"percentile\", \"low_pct\", \"high_pct\"}",
                ));
                None
            }
        };
        Draft {
            baseline: ids("baseline"),
            candidate: ids("candidate"),
            variable: text("variable").unwrap_or_default(),
            investigation: obj.get("investigation").and_then(strict),
            cause_proven: obj.get("cause_proven").and_then(strict),
            metric: text("metric"),
            percentile: text("percentile"),
            baseline_config: config("baseline_config"),
            candidate_config: config("candidate_config"),
            prediction,
            errors,
        }
        .check(&JSON_PREDICTION)
    }

    /// The page's form: checkboxes `baseline`/`candidate` (repeated), `variable`,
    /// `metric`, `percentile`, `cause_proven`, `investigation`, settings textareas
    /// (`name = value` lines) and the prediction's fields (blank low and high: none).
    pub fn from_form(pairs: &[(String, String)]) -> Result<NewComparison, Vec<FieldError>> {
        let all = |k: &str| -> Vec<String> {
            pairs
                .iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .collect()
        };
        let one = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.trim().is_empty())
        };
        let (low, high) = (one("prediction_low"), one("prediction_high"));
        let prediction = (low.is_some() || high.is_some()).then(|| PredictionDraft {
            metric: one("prediction_metric"),
            percentile: one("prediction_percentile"),
            low,
            high,
            source: one("prediction_source").unwrap_or_default(),
        });
        Draft {
            baseline: Some(all("baseline")),
            candidate: Some(all("candidate")),
            variable: one("variable").unwrap_or_default(),
            investigation: one("investigation"),
            cause_proven: one("cause_proven"),
            metric: one("metric"),
            percentile: one("percentile"),
            baseline_config: one("baseline_config").map(ConfigDraft::Lines),
            candidate_config: one("candidate_config").map(ConfigDraft::Lines),
            prediction,
            errors: Vec::new(),
        }
        .check(&FORM_PREDICTION)
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
    Option<String>,
    Option<String>,
    Option<String>,
);

/// One run from a request log's loaded rows.
async fn log_run(pool: &PgPool, a: &Artifact) -> Result<Run, AppError> {
    let rows: Vec<RequestRowValues> = sqlx::query_as(
        "SELECT first_token_ms, total_ms, queue_wait_ms, prefill_ms, decode_ms,
                prompt_tokens, output_tokens,
                extra->>'status', extra->>'finish_reason', extra->>'error'
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
    let (mut errors, mut cancelled) = (0u64, 0u64);
    for (ttft, total, queue, prefill, decode, prompt, output, status, finish, error) in &rows {
        match outcome(status.as_deref(), finish.as_deref(), error.as_deref()) {
            Outcome::Succeeded => {}
            Outcome::Errored => errors += 1,
            Outcome::Cancelled => cancelled += 1,
        }
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
    let series = cols;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn form_and_json_read_into_the_same_comparison() {
        let form = NewComparison::from_form(&pairs(&[
            ("baseline", "3"),
            ("baseline", "4"),
            ("candidate", "5"),
            ("variable", " chunked prefill on "),
            ("investigation", "9"),
            ("cause_proven", "on"),
            ("metric", "itl_ms"),
            ("percentile", "p99"),
            ("prediction_low", "-30%"),
            ("prediction_high", "-20"),
            ("prediction_source", "mixed-step"),
        ]))
        .unwrap();
        let json = NewComparison::from_json(&serde_json::json!({
            "baseline": [3, 4], "candidate": [5], "variable": "chunked prefill on",
            "investigation": 9, "cause_proven": true, "metric": "itl_ms", "percentile": "p99",
            "prediction": {"low_pct": -30, "high_pct": -20, "source": "mixed-step"}
        }))
        .unwrap();
        assert_eq!(format!("{form:?}"), format!("{json:?}"));
    }

    #[test]
    fn each_input_names_its_own_fields() {
        let form = NewComparison::from_form(&pairs(&[
            ("baseline", "3"),
            ("candidate", "x"),
            ("variable", "tp"),
            ("prediction_low", "lots"),
        ]))
        .unwrap_err();
        let fields: Vec<&str> = form.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["candidate", "prediction_low", "prediction_high"]);
        let json = NewComparison::from_json(&serde_json::json!({
            "baseline": [3], "candidate": ["4"], "variable": "tp",
            "cause_proven": "maybe", "prediction": {"low_pct": -5}
        }))
        .unwrap_err();
        let fields: Vec<&str> = json.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["candidate", "cause_proven", "prediction.high_pct"]);
    }
}
