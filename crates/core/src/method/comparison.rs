//! Step 7 end to end: a matched before/after comparison of one or more runs per
//! side. Checks the pairing first (only the declared variable may differ, the
//! same work must have been done), then compares every latency series at
//! p50/p90/p95/p99 with a seeded bootstrap interval and the p-value of the same
//! bootstrap, judges each with [`judge`] against a minimum effect, scores a prediction, and writes the journal's
//! RESULT line. Pure: the shell hands in each run's per-request values.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::reproduce::{check_single_change, fields_named_in, FrozenConfig, SingleChangeCheck};
use super::verdict::{
    comparison_problems, judge, score_prediction, MetricComparison, MetricVerdict, PredictionScore,
    RunHealth, Verdict, MORE_REQUESTS_CAP,
};
use super::FieldError;

mod validity;
use crate::fmt::{format_number, grouped};
use crate::metric::{format_value, Metric, MetricReading, Percentile, Unit};
use crate::settings::{setting_differences, workload_settings, WORKLOAD_SETTINGS};
use crate::stats::{
    bootstrap_diff_ci, bootstrap_diff_ci_sorted, mean, run_spread, BootstrapConfig, RunSpread,
    SortedSample, Statistic, Summary,
};
use validity::validity;

/// Mean prompt length per request may differ by this fraction between the sides.
pub const PROMPT_TOKENS_TOLERANCE: f64 = 0.05;
/// Requests per run may differ by this fraction between the sides.
pub const REQUEST_COUNT_TOLERANCE: f64 = 0.01;
/// Runs per side below which output throughput (one number per run) is not judged.
pub const THROUGHPUT_MIN_RUNS: usize = 3;

/// A per-request latency series a comparison can carry (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Series {
    TtftMs,
    ItlMs,
    /// A request log's `itl_p99_ms`: each request's own p99 gap between tokens.
    ItlP99Ms,
    TpotMs,
    E2elMs,
    QueueWaitMs,
    PrefillMs,
    DecodeMs,
}

impl Series {
    pub const ALL: [Series; 8] = [
        Series::TtftMs,
        Series::ItlMs,
        Series::ItlP99Ms,
        Series::TpotMs,
        Series::E2elMs,
        Series::QueueWaitMs,
        Series::PrefillMs,
        Series::DecodeMs,
    ];

    /// The key used in the API and forms ("ttft_ms").
    pub fn key(self) -> &'static str {
        match self {
            Series::TtftMs => "ttft_ms",
            Series::ItlMs => "itl_ms",
            Series::ItlP99Ms => "itl_p99_ms",
            Series::TpotMs => "tpot_ms",
            Series::E2elMs => "e2el_ms",
            Series::QueueWaitMs => "queue_wait_ms",
            Series::PrefillMs => "prefill_ms",
            Series::DecodeMs => "decode_ms",
        }
    }

    pub fn from_key(raw: &str) -> Option<Series> {
        let k = raw.trim().to_lowercase();
        Series::ALL
            .into_iter()
            .find(|s| s.key() == k || s.key().trim_end_matches("_ms") == k)
    }

    /// The name inside sentences ("p95 TTFT").
    pub fn label(self) -> &'static str {
        match self {
            Series::PrefillMs => "prefill",
            Series::DecodeMs => "decode",
            Series::ItlP99Ms => "per-request p99 ITL",
            other => other.metric().short_label(),
        }
    }

    /// The investigation metric whose direction (lower is better) and name
    /// [`judge`] uses. Prefill and decode are phases, not investigation
    /// metrics; end-to-end latency stands in for their direction and the
    /// sentence is renamed afterwards.
    fn metric(self) -> Metric {
        match self {
            Series::TtftMs => Metric::Ttft,
            Series::ItlMs | Series::ItlP99Ms => Metric::Itl,
            Series::TpotMs => Metric::Tpot,
            Series::E2elMs | Series::PrefillMs | Series::DecodeMs => Metric::E2e,
            Series::QueueWaitMs => Metric::QueueWait,
        }
    }
}

/// Where a run's inter-token latency values come from. Two sides must share one
/// source: a per-request median ITL and a per-request mean decode time per token
/// measure different things.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItlSource {
    /// A benchmark's per-token gaps (vLLM `itls`): one value per token.
    PerTokenGaps,
    /// A request log's `itl_p50_ms`: one value (that request's median gap) per request.
    RequestItlP50,
    /// A request log without ITL fields: each request's TPOT,
    /// `decode_ms ÷ (output_tokens − 1)`, one value per request.
    RequestTpot,
}

impl ItlSource {
    /// The sentence the comparison page shows beside ITL.
    pub fn describe(self) -> &'static str {
        match self {
            ItlSource::PerTokenGaps => {
                "ITL from the benchmark's per-token gaps (one value per output token after the first)"
            }
            ItlSource::RequestItlP50 => {
                "ITL from the request log's itl_p50_ms field (each request's median gap between tokens, one value per request)"
            }
            ItlSource::RequestTpot => {
                "ITL from per-request TPOT, decode_ms ÷ (output_tokens − 1), since the request log has no itl_p50_ms field (one value per request)"
            }
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            ItlSource::PerTokenGaps => "per_token_gaps",
            ItlSource::RequestItlP50 => "itl_p50_ms",
            ItlSource::RequestTpot => "tpot",
        }
    }
}

/// A finding about one run that makes its numbers misleading (an analyzer flag).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defect {
    pub code: String,
    pub message: String,
}

/// One measured run: what the shell read from one artifact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub artifact_id: i64,
    pub name: String,
    /// Per-request values per series, in milliseconds.
    pub series: BTreeMap<Series, Vec<f64>>,
    /// Workload settings recorded in the file (`model_id`, `request_rate`,
    /// `max_concurrency`, …), as display text; absent when not recorded.
    pub settings: BTreeMap<String, String>,
    pub health: RunHealth,
    /// Mean prompt tokens per successful request.
    pub input_tokens_mean: Option<f64>,
    /// Output tokens per second over the run, as the tool reported it.
    pub output_throughput: Option<f64>,
    pub defects: Vec<Defect>,
    /// Where the `ItlMs` series came from (absent without ITL values).
    #[serde(default)]
    pub itl_source: Option<ItlSource>,
}

/// What the diagnosis expected the change to do: a relative change of one
/// series at one percentile, in percent, with a range (e.g. −30 … −20).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub series: Series,
    pub percentile: Percentile,
    pub low_pct: f64,
    pub high_pct: f64,
    /// Where the number came from ("decode-floor estimator", "back of the envelope").
    #[serde(default)]
    pub source: String,
}

/// Everything a comparison is computed from.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub baseline: &'a [Run],
    pub candidate: &'a [Run],
    /// The one declared change ("enable chunked prefill").
    pub variable: &'a str,
    /// Entered step-0 records of each side; `None` when not entered.
    pub baseline_config: Option<&'a FrozenConfig>,
    pub candidate_config: Option<&'a FrozenConfig>,
    /// The series and percentile the verdict is about.
    pub headline: (Series, Percentile),
    /// The diagnosis names the cause this change removes.
    pub cause_proven: bool,
    pub prediction: Option<&'a Prediction>,
    pub bootstrap: BootstrapConfig,
    /// The smallest relative change (percent) a verdict calls a change.
    pub min_effect_pct: f64,
}

/// One workload setting on both sides, and whether it broke the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingRow {
    pub name: String,
    pub label: String,
    pub before: Option<String>,
    pub after: Option<String>,
    /// `same`, `declared` (the change itself) or `differs` (breaks validity).
    pub status: String,
}

/// One percentile of one series, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileRow {
    pub percentile: Percentile,
    pub before: f64,
    pub after: f64,
    /// `after − before`.
    pub diff: f64,
    /// `after / before` (absent when before is 0).
    pub ratio: Option<f64>,
    pub relative_change_pct: Option<f64>,
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub more_requests_per_side: Option<u64>,
    /// Range of the per-run statistic on each side (several runs only).
    pub before_run_range: Option<f64>,
    pub after_run_range: Option<f64>,
    pub summary: String,
}

/// All percentiles of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesResult {
    pub series: Series,
    pub n_before: usize,
    pub n_after: usize,
    pub rows: Vec<PercentileRow>,
}

impl SeriesResult {
    pub fn row(&self, p: Percentile) -> Option<&PercentileRow> {
        self.rows.iter().find(|r| r.percentile == p)
    }
}

/// Output throughput (tok/s), one value per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputResult {
    pub before: f64,
    pub after: f64,
    pub diff: f64,
    pub ratio: Option<f64>,
    pub before_runs: Vec<f64>,
    pub after_runs: Vec<f64>,
    /// Judged over the runs when each side has at least two; `None` otherwise.
    pub judged: Option<PercentileRowLite>,
    pub note: Option<String>,
}

/// The interval, p-value and verdict of a judged scalar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileRowLite {
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    pub verdict: Verdict,
    pub summary: String,
}

/// How a prediction fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictionResult {
    pub prediction: Prediction,
    pub observed_pct: f64,
    pub score: PredictionScore,
    /// False when the comparison is invalid: such a score says nothing.
    pub counted: bool,
}

/// The outcome of a comparison, stored as it was computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub verdict: Verdict,
    pub headline: Series,
    pub percentile: Percentile,
    /// The headline's one-line summary (from [`judge`]).
    pub headline_summary: String,
    /// Why the verdict is what it is; for an invalid comparison, each broken dimension.
    pub reasons: Vec<String>,
    /// Defects that do not break the comparison (present on both sides, or
    /// within tolerance), and what was not checked.
    pub warnings: Vec<String>,
    pub invalid: bool,
    pub settings: Vec<SettingRow>,
    pub metrics: Vec<SeriesResult>,
    pub throughput: Option<ThroughputResult>,
    pub prediction: Option<PredictionResult>,
    pub runs_before: usize,
    pub runs_after: usize,
    pub bootstrap: BootstrapConfig,
    /// The minimum effect the verdicts used (percent of the before value).
    #[serde(default = "default_min_effect")]
    pub min_effect_pct: f64,
    /// Where ITL came from on both sides, when compared.
    #[serde(default)]
    pub itl_source: Option<ItlSource>,
}

fn default_min_effect() -> f64 {
    super::verdict::DEFAULT_MIN_EFFECT_PCT
}

impl Report {
    pub fn series(&self, s: Series) -> Option<&SeriesResult> {
        self.metrics.iter().find(|m| m.series == s)
    }

    /// The before and after readings at the headline percentile of every series
    /// that is an investigation metric, for a journal draft's BASELINE and RESULT
    /// (`journal::DraftInput::{baseline, after}`). Phases (prefill, decode) and the
    /// per-request p99 ITL (ITL is read once, from `itl_ms`) are left out.
    pub fn readings(&self) -> (Vec<MetricReading>, Vec<MetricReading>) {
        let mut before = Vec::new();
        let mut after = Vec::new();
        for m in &self.metrics {
            if matches!(
                m.series,
                Series::PrefillMs | Series::DecodeMs | Series::ItlP99Ms
            ) {
                continue;
            }
            if let Some(r) = m.row(self.percentile) {
                let reading = |value| MetricReading {
                    metric: m.series.metric(),
                    percentile: Some(self.percentile),
                    value,
                    unit: Unit::Ms,
                };
                before.push(reading(r.before));
                after.push(reading(r.after));
            }
        }
        (before, after)
    }
}

/// Compare; `Err` names the input that makes the comparison impossible
/// (an empty side, a headline or prediction series the runs do not carry).
pub fn compare(req: &Request) -> Result<Report, Vec<FieldError>> {
    let before = pooled(req.baseline);
    let after = pooled(req.candidate);
    let mut common = common_series(req, &before, &after)?;
    let (settings, problems, mut warnings) = validity(req);
    let itl_source = if common.contains(&Series::ItlMs) {
        match itl_source(req)? {
            Ok(source) => source,
            Err(why) => {
                common.retain(|s| *s != Series::ItlMs);
                warnings.push(format!("ITL is left out of this comparison: {why}"));
                None
            }
        }
    } else {
        None
    };
    let metrics: Vec<SeriesResult> = common
        .iter()
        .map(|&s| series_result(req, s, &before[&s], &after[&s], &problems))
        .collect();
    let throughput = throughput_result(req, &problems);
    let head = metrics
        .iter()
        .find(|m| m.series == req.headline.0)
        .and_then(|m| m.row(req.headline.1))
        .expect("the headline series was checked to be common");
    let invalid = !problems.is_empty();
    let (verdict, reasons) = if invalid {
        (head.verdict, head.reasons.clone())
    } else {
        headline_verdict(req, head, &metrics, throughput.as_ref())
    };
    Ok(Report {
        verdict,
        headline: req.headline.0,
        percentile: req.headline.1,
        headline_summary: head.summary.clone(),
        reasons,
        warnings,
        invalid,
        settings,
        prediction: prediction_result(req, &metrics, invalid),
        metrics,
        throughput,
        runs_before: req.baseline.len(),
        runs_after: req.candidate.len(),
        bootstrap: req.bootstrap,
        min_effect_pct: req.min_effect_pct,
        itl_source,
    })
}

/// The one ITL source of every run on both sides. Runs of different sources are a
/// field error when the verdict or the prediction is on ITL, and otherwise the reason
/// ITL is left out (`Ok(Err(why))`).
#[allow(clippy::type_complexity)]
fn itl_source(req: &Request) -> Result<Result<Option<ItlSource>, String>, Vec<FieldError>> {
    let side = |runs: &[Run]| -> BTreeSet<ItlSource> {
        runs.iter()
            .filter(|r| r.series.get(&Series::ItlMs).is_some_and(|v| !v.is_empty()))
            .filter_map(|r| r.itl_source)
            .collect()
    };
    let (b, a) = (side(req.baseline), side(req.candidate));
    let all: BTreeSet<ItlSource> = b.union(&a).copied().collect();
    if all.len() <= 1 {
        return Ok(Ok(all.into_iter().next()));
    }
    let list =
        |s: &BTreeSet<ItlSource>| s.iter().map(|x| x.key()).collect::<Vec<_>>().join(" and ");
    let why = format!(
        "the baseline's ITL comes from {} and the candidate's from {}; a per-request median gap (itl_p50_ms) and a per-request decode time per token (TPOT) are different measures, so they are not compared. Compare logs that both carry itl_p50_ms, or compare tpot_ms",
        list(&b),
        list(&a)
    );
    let mut errors = Vec::new();
    if req.headline.0 == Series::ItlMs {
        errors.push(FieldError::new("metric", why.clone()));
    }
    if req.prediction.is_some_and(|p| p.series == Series::ItlMs) {
        errors.push(FieldError::new("prediction.metric", why.clone()));
    }
    if errors.is_empty() {
        Ok(Err(why))
    } else {
        Err(errors)
    }
}

/// The latency series both sides carry (at least two values each); refuses empty
/// sides and a headline or prediction series outside them.
fn common_series(
    req: &Request,
    before: &BTreeMap<Series, Vec<f64>>,
    after: &BTreeMap<Series, Vec<f64>>,
) -> Result<Vec<Series>, Vec<FieldError>> {
    let mut errors = Vec::new();
    if req.baseline.is_empty() {
        errors.push(FieldError::new("baseline", "choose at least one artifact"));
    }
    if req.candidate.is_empty() {
        errors.push(FieldError::new("candidate", "choose at least one artifact"));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let common: Vec<Series> = Series::ALL
        .into_iter()
        .filter(|s| {
            before.get(s).is_some_and(|v| v.len() >= 2)
                && after.get(s).is_some_and(|v| v.len() >= 2)
        })
        .collect();
    let carried = |field: &str, s: Series| {
        if common.contains(&s) {
            None
        } else {
            Some(FieldError::new(
                field,
                format!(
                    "{} is not in both sides' artifacts (at least two requests each); they carry: {}",
                    s.key(),
                    if common.is_empty() {
                        "no common latency series".to_string()
                    } else {
                        common.iter().map(|s| s.key()).collect::<Vec<_>>().join(", ")
                    }
                ),
            ))
        }
    };
    errors.extend(carried("metric", req.headline.0));
    if let Some(p) = req.prediction {
        errors.extend(carried("prediction.metric", p.series));
    }
    if errors.is_empty() {
        Ok(common)
    } else {
        Err(errors)
    }
}

/// A valid comparison's verdict and reasons: the headline's, with how many more
/// requests would tell, a prediction that expected the other direction, and
/// regressions elsewhere.
fn headline_verdict(
    req: &Request,
    head: &PercentileRow,
    metrics: &[SeriesResult],
    throughput: Option<&ThroughputResult>,
) -> (Verdict, Vec<String>) {
    let mut verdict = head.verdict;
    let mut reasons = head.reasons.clone();
    if let Some(n) = head.more_requests_per_side {
        let have = (metric_n(metrics, req.headline.0) as u64).max(1);
        reasons.push(if n > MORE_REQUESTS_CAP {
            format!(
                "Telling would take more than {} more requests per side: the difference is too small to matter.",
                grouped(MORE_REQUESTS_CAP)
            )
        } else {
            format!(
                "About {} more requests per side ({} in all per side) would narrow the interval enough to tell, if the change is as large as observed.",
                grouped(n),
                grouped(n + have)
            )
        });
    }
    if verdict == Verdict::Confirmed {
        if let Some(p) = req.prediction.filter(|p| wrong_direction(p)) {
            verdict = Verdict::Improved;
            reasons.push(format!(
                "The prediction expected {} to move the other way ({:+.1}% … {:+.1}%): the cause is not confirmed by this change.",
                p.series.label(),
                p.low_pct,
                p.high_pct
            ));
        }
    }
    for m in metrics {
        for r in &m.rows {
            let is_head = m.series == req.headline.0 && r.percentile == req.headline.1;
            if !is_head && r.verdict == Verdict::Regressed {
                reasons.push(format!("Elsewhere — {}", r.summary));
            }
        }
    }
    if let Some(j) = throughput.and_then(|t| t.judged.as_ref()) {
        if j.verdict == Verdict::Regressed {
            reasons.push(format!("Elsewhere — {}", j.summary));
        }
    }
    (verdict, reasons)
}

/// The prediction scored against the observed change (not counted when invalid).
fn prediction_result(
    req: &Request,
    metrics: &[SeriesResult],
    invalid: bool,
) -> Option<PredictionResult> {
    req.prediction.map(|p| {
        let observed_pct = metrics
            .iter()
            .find(|m| m.series == p.series)
            .and_then(|m| m.row(p.percentile))
            .and_then(|r| r.relative_change_pct)
            .unwrap_or(0.0);
        PredictionResult {
            prediction: p.clone(),
            observed_pct,
            score: score_prediction(p.low_pct, p.high_pct, observed_pct),
            counted: !invalid,
        }
    })
}

/// A prediction whose whole range lies on the worsening side (above 0 for latency).
fn wrong_direction(p: &Prediction) -> bool {
    p.low_pct.min(p.high_pct) > 0.0
}

fn metric_n(metrics: &[SeriesResult], s: Series) -> usize {
    metrics
        .iter()
        .find(|m| m.series == s)
        .map_or(0, |m| (m.n_before + m.n_after) / 2)
}

/// Every run's values of each series, concatenated per side.
fn pooled(runs: &[Run]) -> BTreeMap<Series, Vec<f64>> {
    let mut out: BTreeMap<Series, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (s, v) in &run.series {
            out.entry(*s)
                .or_default()
                .extend(v.iter().copied().filter(|x| x.is_finite()));
        }
    }
    out
}

fn total_health(runs: &[Run]) -> RunHealth {
    let concurrencies: BTreeSet<Option<u64>> = runs.iter().map(|r| r.health.concurrency).collect();
    RunHealth {
        requests_sent: runs.iter().map(|r| r.health.requests_sent).sum(),
        succeeded: runs.iter().map(|r| r.health.succeeded).sum(),
        errors: runs.iter().map(|r| r.health.errors).sum(),
        cancelled: runs.iter().map(|r| r.health.cancelled).sum(),
        output_tokens: runs.iter().map(|r| r.health.output_tokens).sum(),
        // Runs of one side disagreeing is reported by the settings check.
        concurrency: if concurrencies.len() == 1 {
            concurrencies.into_iter().next().flatten()
        } else {
            None
        },
    }
}

fn spreads(runs: &[Run], s: Series, statistic: Statistic) -> Option<RunSpread> {
    let per_run: Vec<&Vec<f64>> = runs
        .iter()
        .filter_map(|r| r.series.get(&s))
        .filter(|v| !v.is_empty())
        .collect();
    if per_run.len() < 2 {
        return None;
    }
    run_spread(&per_run, statistic).ok()
}

fn series_result(
    req: &Request,
    s: Series,
    before: &[f64],
    after: &[f64],
    problems: &[String],
) -> SeriesResult {
    // The common-series filter guarantees two finite values per side (`pooled` keeps
    // finite values only), so the statistics below cannot fail. Each side is sorted
    // once: the summaries, the rank test and the four bootstraps read the same sorted
    // copies. Each percentile's p-value comes from its own bootstrap, so interval and
    // p-value agree.
    let b_sorted = SortedSample::new(before).expect("checked non-empty and finite");
    let a_sorted = SortedSample::new(after).expect("checked non-empty and finite");
    let sb = Summary::from_sorted(&b_sorted.sorted);
    let sa = Summary::from_sorted(&a_sorted.sorted);
    let rows = Percentile::ALL
        .into_iter()
        .map(|pct| {
            let statistic = pct.statistic();
            let ci = bootstrap_diff_ci_sorted(&b_sorted, &a_sorted, statistic, &req.bootstrap)
                .expect("checked input and a valid bootstrap config");
            let input = MetricComparison {
                metric: s.metric(),
                unit: Unit::Ms,
                statistic,
                before: sb,
                after: sa,
                ci,
                min_effect_pct: req.min_effect_pct,
                before_runs: spreads(req.baseline, s, statistic),
                after_runs: spreads(req.candidate, s, statistic),
                invalid_reasons: problems.to_vec(),
                cause_proven: req.cause_proven,
            };
            let v = judge(&input);
            let (b, a) = (
                sb.get(statistic).unwrap_or(f64::NAN),
                sa.get(statistic).unwrap_or(f64::NAN),
            );
            row(&input, v, pct, (b, a), s)
        })
        .collect();
    SeriesResult {
        series: s,
        n_before: before.len(),
        n_after: after.len(),
        rows,
    }
}

fn row(
    input: &MetricComparison,
    v: MetricVerdict,
    percentile: Percentile,
    (b, a): (f64, f64),
    s: Series,
) -> PercentileRow {
    let summary = if s.label() == s.metric().short_label() {
        v.summary
    } else {
        v.summary.replacen(s.metric().short_label(), s.label(), 1)
    };
    PercentileRow {
        percentile,
        before: b,
        after: a,
        diff: v.observed_diff,
        ratio: (b != 0.0).then(|| a / b),
        relative_change_pct: v.relative_change_pct,
        ci_low: v.ci_low,
        ci_high: v.ci_high,
        p_value: v.p_value,
        verdict: v.verdict,
        reasons: v.reasons,
        more_requests_per_side: v.more_requests_per_side,
        before_run_range: input.before_runs.as_ref().map(|r| r.range),
        after_run_range: input.after_runs.as_ref().map(|r| r.range),
        summary,
    }
}

/// Throughput is one number per run: with at least [`THROUGHPUT_MIN_RUNS`] runs per
/// side it is judged over the runs (bootstrap of the mean, whose p-value comes from
/// the same resamples); with fewer it is reported without a verdict.
fn throughput_result(req: &Request, problems: &[String]) -> Option<ThroughputResult> {
    let values = |runs: &[Run]| -> Option<Vec<f64>> {
        runs.iter()
            .map(|r| r.output_throughput.filter(|v| v.is_finite()))
            .collect()
    };
    let (bv, av) = (values(req.baseline)?, values(req.candidate)?);
    // Both sides hold at least one run (compare refuses an empty side).
    let (Some(before), Some(after)) = (mean(&bv), mean(&av)) else {
        return None;
    };
    let mut result = ThroughputResult {
        before,
        after,
        diff: after - before,
        ratio: (before != 0.0).then(|| after / before),
        before_runs: bv.clone(),
        after_runs: av.clone(),
        judged: None,
        note: None,
    };
    if bv.len() < THROUGHPUT_MIN_RUNS || av.len() < THROUGHPUT_MIN_RUNS {
        result.note = Some(format!("Throughput is one number per run: with fewer than {THROUGHPUT_MIN_RUNS} runs per side its bootstrap has too few values to give an honest interval, so it has no verdict. Repeat the runs (A/B/B/A) to judge it."));
        return Some(result);
    }
    let ci = bootstrap_diff_ci(&bv, &av, Statistic::Mean, &req.bootstrap).ok()?;
    let input = MetricComparison {
        metric: Metric::Throughput,
        unit: Unit::TokPerS,
        statistic: Statistic::Mean,
        before: Summary::of(&bv).ok()?,
        after: Summary::of(&av).ok()?,
        ci,
        min_effect_pct: req.min_effect_pct,
        before_runs: run_spread(
            &bv.iter().map(|v| [*v]).collect::<Vec<_>>(),
            Statistic::Mean,
        )
        .ok(),
        after_runs: run_spread(
            &av.iter().map(|v| [*v]).collect::<Vec<_>>(),
            Statistic::Mean,
        )
        .ok(),
        invalid_reasons: problems.to_vec(),
        cause_proven: req.cause_proven,
    };
    let v = judge(&input);
    result.judged = Some(PercentileRowLite {
        ci_low: v.ci_low,
        ci_high: v.ci_high,
        p_value: v.p_value,
        verdict: v.verdict,
        summary: v.summary,
    });
    Some(result)
}

fn signed_ms(v: f64) -> String {
    let text = format_value(v, Unit::Ms);
    if v > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// The journal entry's RESULT: the verdict with the headline's numbers and
/// interval, the same percentile of every other series, throughput, the
/// prediction's score, and the link to the comparison page.
pub fn journal_result(report: &Report, url: &str) -> String {
    let mut parts = vec![report.headline_summary.clone()];
    if report.invalid {
        parts = vec![format!("Invalid comparison: {}", report.reasons.join(" "))];
    }
    let p = report.percentile;
    for m in report
        .metrics
        .iter()
        .filter(|m| m.series != report.headline)
    {
        if let Some(r) = m.row(p) {
            parts.push(format!(
                "{} {} {} → {} ({}, 95% CI [{}, {}])",
                p.slug(),
                m.series.label(),
                format_value(r.before, Unit::Ms),
                format_value(r.after, Unit::Ms),
                r.relative_change_pct
                    .map_or_else(|| signed_ms(r.diff), |c| format!("{c:+.1}%")),
                signed_ms(r.ci_low),
                signed_ms(r.ci_high)
            ));
        }
    }
    if let Some(t) = &report.throughput {
        let change = t
            .ratio
            .map_or(String::new(), |r| format!(" ({:+.1}%)", (r - 1.0) * 100.0));
        let interval =
            t.judged
                .as_ref()
                .map_or(" (one run per side, no interval)".to_string(), |j| {
                    format!(
                        ", 95% CI [{}, {}] tok/s",
                        format_number(j.ci_low, 0),
                        format_number(j.ci_high, 0)
                    )
                });
        parts.push(format!(
            "output throughput {} → {}{change}{interval}",
            format_value(t.before, Unit::TokPerS),
            format_value(t.after, Unit::TokPerS)
        ));
    }
    if let Some(pr) = &report.prediction {
        parts.push(format!(
            "prediction {} {} {:+.1}% … {:+.1}%, observed {:+.1}%: {}{}",
            pr.prediction.percentile.slug(),
            pr.prediction.series.label(),
            pr.prediction.low_pct,
            pr.prediction.high_pct,
            pr.observed_pct,
            match pr.score {
                PredictionScore::Inside => "inside the range",
                PredictionScore::Below => "below the range",
                PredictionScore::Above => "above the range",
            },
            if pr.counted { "" } else { " (not counted)" }
        ));
    }
    parts.push(format!("comparison: {url}"));
    parts.join("; ")
}

/// Shares of mean TTFT taken by queue wait, prefill and the rest, for the
/// before/after phase bar (request logs). `None` without queue and prefill.
pub fn ttft_phase_shares(runs: &[Run]) -> Option<Vec<(String, f64)>> {
    let all = pooled(runs);
    let series_mean = |s: Series| mean(all.get(&s)?);
    let ttft = series_mean(Series::TtftMs).filter(|t| *t > 0.0)?;
    let queue = series_mean(Series::QueueWaitMs);
    let prefill = series_mean(Series::PrefillMs);
    if queue.is_none() && prefill.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    let mut used = 0.0;
    for (name, v) in [("queue wait", queue), ("prefill", prefill)] {
        if let Some(v) = v {
            let share = (v / ttft).clamp(0.0, 1.0 - used);
            used += share;
            parts.push((name.to_string(), share));
        }
    }
    parts.push(("other".to_string(), (1.0 - used).max(0.0)));
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic, latency-like values: `scale · (1 + 0.3 · ((i · 37) mod 100) / 100)`.
    fn sample(scale: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| scale * (1.0 + 0.3 * ((i * 37) % 100) as f64 / 100.0))
            .collect()
    }

    fn run(id: i64, ttft_scale: f64, n: usize) -> Run {
        let mut series = BTreeMap::new();
        series.insert(Series::TtftMs, sample(ttft_scale, n));
        series.insert(Series::ItlMs, sample(20.0, n));
        let mut settings = BTreeMap::new();
        settings.insert("model_id".to_string(), "m".to_string());
        settings.insert("max_concurrency".to_string(), "16".to_string());
        Run {
            artifact_id: id,
            name: format!("run{id}.json"),
            series,
            settings,
            health: RunHealth {
                requests_sent: n as u64,
                succeeded: n as u64,
                errors: 0,
                cancelled: 0,
                output_tokens: 100 * n as u64,
                concurrency: Some(16),
            },
            input_tokens_mean: Some(500.0),
            output_throughput: Some(1000.0),
            defects: vec![],
            itl_source: Some(ItlSource::PerTokenGaps),
        }
    }

    fn request<'a>(b: &'a [Run], a: &'a [Run]) -> Request<'a> {
        Request {
            baseline: b,
            candidate: a,
            variable: "chunked prefill",
            baseline_config: None,
            candidate_config: None,
            headline: (Series::TtftMs, Percentile::P95),
            cause_proven: false,
            prediction: None,
            bootstrap: BootstrapConfig::default(),
            min_effect_pct: crate::method::verdict::DEFAULT_MIN_EFFECT_PCT,
        }
    }

    #[test]
    fn clear_improvement_and_undeclared_change() {
        let b = [run(1, 100.0, 300)];
        let a = [run(2, 70.0, 300)];
        let r = compare(&request(&b, &a)).unwrap();
        assert_eq!(r.verdict, Verdict::Improved, "{:?}", r.reasons);
        assert!(!r.invalid);
        let ttft = r.series(Series::TtftMs).unwrap();
        assert_eq!(ttft.rows.len(), 4);
        // ITL did not change at all: inconclusive rows, no "Elsewhere" reason.
        assert!(r.reasons.iter().all(|x| !x.starts_with("Elsewhere")));

        let mut other = run(2, 70.0, 300);
        other.settings.insert("max_concurrency".into(), "32".into());
        other.health.concurrency = Some(32);
        let a = [other];
        let r = compare(&request(&b, &a)).unwrap();
        assert_eq!(r.verdict, Verdict::InvalidComparison);
        assert!(r.reasons.iter().any(|x| x.contains("Concurrency differs")));
        let row = r
            .settings
            .iter()
            .find(|s| s.name == "max_concurrency")
            .unwrap();
        assert_eq!(row.status, "differs");
        // Declaring concurrency as the variable makes it the experiment.
        let mut req = request(&b, &a);
        req.variable = "max concurrency 16 → 32";
        let r = compare(&req).unwrap();
        assert!(!r.invalid, "{:?}", r.reasons);
    }

    #[test]
    fn missing_headline_series_is_a_field_error() {
        let b = [run(1, 100.0, 50)];
        let a = [run(2, 100.0, 50)];
        let mut req = request(&b, &a);
        req.headline = (Series::QueueWaitMs, Percentile::P95);
        let e = compare(&req).unwrap_err();
        assert_eq!(e[0].field, "metric");
        assert!(e[0].message.contains("ttft_ms, itl_ms"), "{}", e[0].message);
        let e = compare(&request(&[], &a)).unwrap_err();
        assert_eq!(e[0].field, "baseline");
    }

    #[test]
    fn runs_of_one_side_must_agree_and_spread_is_used() {
        let mut second = run(3, 100.0, 300);
        second.settings.insert("model_id".into(), "other".into());
        let b = [run(1, 100.0, 300), second];
        let a = [run(2, 70.0, 300), run(4, 70.0, 300)];
        let r = compare(&request(&b, &a)).unwrap();
        assert!(r.reasons.iter().any(|x| x.contains("baseline runs differ")));

        let b = [run(1, 100.0, 300), run(3, 60.0, 300)];
        let r = compare(&request(&b, &a)).unwrap();
        let head = r
            .series(Series::TtftMs)
            .unwrap()
            .row(Percentile::P95)
            .unwrap();
        assert!(head.before_run_range.unwrap() > 30.0);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.reasons);
    }

    #[test]
    fn prompt_and_output_lengths_must_match() {
        let b = [run(1, 100.0, 300)];
        let mut short = run(2, 70.0, 300);
        short.health.output_tokens = 60 * 300;
        short.input_tokens_mean = Some(400.0);
        let r = compare(&request(&b, &[short])).unwrap();
        assert_eq!(r.verdict, Verdict::InvalidComparison);
        assert!(r.reasons.iter().any(|x| x.contains("Mean output length")));
        assert!(r
            .reasons
            .iter()
            .any(|x| x.contains("Prompt lengths differ")));
    }

    #[test]
    fn equal_defects_warn_and_result_text_links() {
        let defect = Defect {
            code: "very_short_outputs".into(),
            message: "12 of 300 requests produced 4 or fewer output tokens".into(),
        };
        let mut b = run(1, 100.0, 300);
        b.defects.push(defect.clone());
        let mut a = run(2, 70.0, 300);
        a.defects.push(defect);
        let p = Prediction {
            series: Series::TtftMs,
            percentile: Percentile::P95,
            low_pct: -40.0,
            high_pct: -20.0,
            source: String::new(),
        };
        let (b, a) = ([b], [a]);
        let mut req = request(&b, &a);
        req.prediction = Some(&p);
        req.cause_proven = true;
        let r = compare(&req).unwrap();
        assert_eq!(r.verdict, Verdict::Confirmed);
        assert!(r
            .warnings
            .iter()
            .any(|w| w.starts_with("On both sides (very_short_outputs)")));
        let pr = r.prediction.as_ref().unwrap();
        assert_eq!(pr.score, PredictionScore::Inside);
        assert!((pr.observed_pct - -30.0).abs() < 1.0, "{}", pr.observed_pct);
        let (before, after) = r.readings();
        assert_eq!(before.len(), 2);
        assert_eq!(after[0].metric, Metric::Ttft);
        assert!((after[0].value / before[0].value - 0.7).abs() < 1e-9);
        let text = journal_result(&r, "/comparisons/7");
        assert!(text.starts_with("Confirmed: p95 TTFT fell"), "{text}");
        assert!(text.contains("p95 ITL 25"), "{text}");
        assert!(text.contains("inside the range"), "{text}");
        assert!(text.ends_with("comparison: /comparisons/7"), "{text}");
    }

    #[test]
    fn throughput_is_judged_over_runs() {
        let side = |ids: [i64; 4], scale: f64, tput: [f64; 4]| -> Vec<Run> {
            ids.iter()
                .zip(tput)
                .map(|(id, t)| Run {
                    output_throughput: Some(t),
                    ..run(*id, scale, 60)
                })
                .collect()
        };
        let b = side([1, 2, 3, 4], 100.0, [1000.0, 1010.0, 990.0, 1005.0]);
        let a = side([5, 6, 7, 8], 70.0, [1200.0, 1190.0, 1210.0, 1205.0]);
        let r = compare(&request(&b, &a)).unwrap();
        let t = r.throughput.as_ref().unwrap();
        assert_eq!((t.before_runs.len(), t.after_runs.len()), (4, 4));
        let judged = t.judged.as_ref().unwrap();
        assert_eq!(judged.verdict, Verdict::Improved, "{}", judged.summary);
        assert!(judged.p_value < 0.05 && judged.ci_low > 0.0);
        assert!(journal_result(&r, "/c/1").contains("tok/s"));

        // Two runs a side are too few for an honest bootstrap: no verdict.
        let r = compare(&request(&b[..2], &a[..2])).unwrap();
        let t = r.throughput.unwrap();
        assert!(t.judged.is_none());
        assert!(t.note.unwrap().contains("fewer than 3 runs per side"));
    }

    #[test]
    fn itl_sources_must_match() {
        let b = [run(1, 100.0, 300)];
        let mut tpot = run(2, 70.0, 300);
        tpot.itl_source = Some(ItlSource::RequestTpot);
        let a = [tpot];
        // A TTFT verdict goes ahead without ITL, saying why.
        let r = compare(&request(&b, &a)).unwrap();
        assert!(r.series(Series::ItlMs).is_none());
        assert!(r.itl_source.is_none());
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("ITL is left out") && w.contains("tpot")),
            "{:?}",
            r.warnings
        );
        // A verdict on ITL is refused.
        let mut req = request(&b, &a);
        req.headline = (Series::ItlMs, Percentile::P50);
        let e = compare(&req).unwrap_err();
        assert_eq!(e[0].field, "metric");
        assert!(e[0].message.contains("per_token_gaps"), "{}", e[0].message);
        // One source on both sides: named in the report.
        let r = compare(&request(&b, &b)).unwrap();
        assert_eq!(r.itl_source, Some(ItlSource::PerTokenGaps));
    }

    #[test]
    fn sub_minimum_moves_are_no_change_and_not_findings() {
        // TTFT +0.7%: far under 2%, whatever the interval says.
        let b = [run(1, 100.0, 2000)];
        let a = [run(2, 100.7, 2000)];
        let r = compare(&request(&b, &a)).unwrap();
        assert_ne!(r.verdict, Verdict::Regressed, "{:?}", r.reasons);
        assert_eq!(r.verdict, Verdict::NoChange, "{:?}", r.reasons);
        assert!(r.reasons.iter().all(|x| !x.starts_with("Elsewhere")));
        for row in &r.series(Series::TtftMs).unwrap().rows {
            assert_eq!(row.ci_low > 0.0 || row.ci_high < 0.0, row.p_value < 0.05);
        }
        // With a 0.5% minimum the same move counts.
        let mut req = request(&b, &a);
        req.min_effect_pct = 0.5;
        let r = compare(&req).unwrap();
        assert_eq!(r.verdict, Verdict::Regressed, "{:?}", r.reasons);
        assert_eq!(r.min_effect_pct, 0.5);
    }

    #[test]
    fn a_prediction_of_the_other_direction_does_not_confirm() {
        let b = [run(1, 100.0, 300)];
        let a = [run(2, 70.0, 300)];
        let p = Prediction {
            series: Series::TtftMs,
            percentile: Percentile::P95,
            low_pct: 5.0,
            high_pct: 15.0,
            source: String::new(),
        };
        let mut req = request(&b, &a);
        req.cause_proven = true;
        req.prediction = Some(&p);
        let r = compare(&req).unwrap();
        assert_eq!(r.verdict, Verdict::Improved);
        assert!(r.reasons.iter().any(|x| x.contains("move the other way")));
        assert_eq!(r.prediction.unwrap().score, PredictionScore::Below);
    }

    #[test]
    fn phase_shares_of_ttft() {
        let mut r = run(1, 100.0, 10);
        r.series.insert(Series::TtftMs, vec![100.0; 10]);
        r.series.insert(Series::QueueWaitMs, vec![60.0; 10]);
        r.series.insert(Series::PrefillMs, vec![30.0; 10]);
        let shares = ttft_phase_shares(&[r]).unwrap();
        assert_eq!(shares[0], ("queue wait".to_string(), 0.6));
        assert_eq!(shares[1], ("prefill".to_string(), 0.3));
        assert!((shares[2].1 - 0.1).abs() < 1e-9);
        assert!(ttft_phase_shares(&[run(2, 100.0, 10)]).is_none());
    }
}

/// Whether an investigation's diagnosis names the cause this change removes: the
/// phases were decomposed (step 2), and step 7 records this same change with the cause
/// in the engineer's words. A "confirmed" verdict needs it; "improved" does not.
pub fn diagnosis_names_change(records: &super::record::Records, variable: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let Some(change) = &records.change else {
        return false;
    };
    records.phases.is_some()
        && !change.findings.trim().is_empty()
        && !variable.trim().is_empty()
        && norm(&change.change) == norm(variable)
}

#[cfg(test)]
mod diagnosis_tests {
    use super::super::phases::{Phase, PhaseRow, PhaseTable};
    use super::super::record::{ChangeStep, Records};
    use super::diagnosis_names_change;

    #[test]
    fn the_cause_is_proven_only_by_a_diagnosed_matching_change() {
        let mut r = Records::default();
        assert!(!diagnosis_names_change(&r, "enable chunked prefill"));
        r.change = Some(ChangeStep {
            change: "Enable  chunked prefill".into(),
            findings: "22k-token prompts blocked decode".into(),
            ..ChangeStep::default()
        });
        assert!(
            !diagnosis_names_change(&r, "enable chunked prefill"),
            "no phase breakdown yet"
        );
        r.phases = Some(PhaseTable {
            rows: vec![PhaseRow {
                phase: Phase::QueueWait,
                p50: 1.0,
                p90: None,
                p95: Some(2.0),
                p99: Some(3.0),
                share: None,
                source: None,
                edited: false,
            }],
            steps: Vec::new(),
        });
        assert!(diagnosis_names_change(&r, "enable chunked prefill"));
        assert!(
            !diagnosis_names_change(&r, "raise max_num_seqs"),
            "a different change"
        );
    }
}
