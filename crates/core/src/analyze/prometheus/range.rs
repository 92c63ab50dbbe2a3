//! A Prometheus *server* over an incident window (artifact kind `prometheus_range`).
//!
//! The shell asks the server three kinds of questions, all written here so the plan and
//! its reading stay pure:
//! 1. which of the engine's metric names exist in the window (the label-values API), so
//!    a renamed metric is found under whichever name the engine version exposed
//!    ([`plan`] walks the same candidate lists as the `/metrics` analyzer: `HISTOGRAMS`,
//!    `COUNTERS`, `RUNNING`, `WAITING`, `KV_USAGE` in `model.rs`);
//! 2. per histogram, the window's bucket increases, `sum by (le) (increase(f_bucket[Ws]))`
//!    evaluated *by Prometheus* at the window's end (and `sum(increase(f_sum[Ws]))`);
//!    counters likewise;
//! 3. the gauges and counter rates over time (`query_range`).
//!
//! The stored blob is those answers as fetched ([`RangeFetch`]). Its analysis
//! ([`analyze`]) computes the quantiles with [`super::bucket_quantile`], PromQL's
//! `histogram_quantile`, from the bucket increases. We do not reproduce `increase()`'s
//! extrapolation to the window's edges and its counter-reset handling: Prometheus did
//! that when it answered, so our quantiles equal
//! `histogram_quantile(q, sum by (le) (increase(f_bucket[Ws])))` asked of the same server.

use super::model::{HistSeries, Model, COUNTERS, HISTOGRAMS, KV_USAGE, RUNNING, WAITING};
use super::summary::summarize;
use super::{Bucket, PrometheusAnalysis};
use crate::analyze::AnalyzeError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// The `format` of a stored [`RangeFetch`].
pub const FORMAT: &str = "perfjournal-prometheus-range/1";

/// Engines a window can be read for (their metric-name prefix decides the candidates).
pub const ENGINES: [&str; 3] = ["vllm", "sglang", "tgi"];

/// Prometheus refuses a `query_range` of more than 11,000 points per series.
pub const MAX_POINTS: i64 = 11_000;
/// Longest window: 31 days.
pub const MAX_WINDOW_S: i64 = 31 * 24 * 3600;
/// Points aimed at when no step is given.
const DEFAULT_POINTS: i64 = 300;

/// DCGM exporter gauges read when present: key, metric, what it is.
pub const DCGM_GAUGES: &[(&str, &str)] = &[
    ("gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL"),
    // The fraction of cycles the memory interface was busy: bandwidth use, 0–1.
    ("dram_active", "DCGM_FI_PROF_DRAM_ACTIVE"),
    ("mem_copy_util_pct", "DCGM_FI_DEV_MEM_COPY_UTIL"),
];

/// The histogram keys (of `HISTOGRAMS`, seconds) reported in milliseconds, and their names
/// in [`PrometheusRangeAnalysis::quantiles`].
pub const LATENCY_KEYS: &[(&str, &str)] = &[
    ("ttft_s", "ttft_ms"),
    ("itl_s", "itl_ms"),
    ("tpot_s", "tpot_ms"),
    ("queue_s", "queue_ms"),
    ("prefill_s", "prefill_ms"),
    ("decode_s", "decode_ms"),
    ("inference_s", "inference_ms"),
    ("e2e_s", "e2e_ms"),
];

/// The metric-name prefix of an engine.
pub fn engine_prefix(engine: &str) -> Option<&'static str> {
    match engine {
        "vllm" => Some("vllm:"),
        "sglang" => Some("sglang:"),
        "tgi" => Some("tgi_"),
        _ => None,
    }
}

/// A name as Prometheus stores it when the exporter escapes names with underscores
/// (OpenMetrics' underscore escaping, e.g. `prometheus_client` 0.26 scraped by
/// Prometheus 2.x): every `:` becomes `_`, so `vllm:num_requests_running` is stored as
/// `vllm_num_requests_running`. `None` when escaping changes nothing.
pub fn escaped(name: &str) -> Option<String> {
    name.contains(':').then(|| name.replace(':', "_"))
}

/// The label-values selector that lists the names worth reading for `engine`: its
/// prefix as the engine writes it and, for `vllm:` and `sglang:`, escaped.
pub fn names_selector(engine: &str) -> String {
    let prefix = engine_prefix(engine).unwrap_or("vllm:");
    match escaped(prefix) {
        Some(esc) => format!("{{__name__=~\"{prefix}.*|{esc}.*|DCGM_.*\"}}"),
        None => format!("{{__name__=~\"{prefix}.*|DCGM_.*\"}}"),
    }
}

/// Every name the analyzer reads, as the engines write them.
fn candidate_names() -> impl Iterator<Item = &'static str> {
    HISTOGRAMS
        .iter()
        .flat_map(|(_, families, _)| families.iter().copied())
        .chain(COUNTERS.iter().flat_map(|(_, names)| names.iter().copied()))
        .chain(RUNNING.iter().copied())
        .chain(WAITING.iter().copied())
        .chain(KV_USAGE.iter().copied())
}

/// The name as the engine writes it, for a name read from the server escaped (see
/// [`escaped`]); other names as they are.
pub fn canonical(name: &str) -> String {
    candidate_names()
        .find(|c| escaped(c).is_some_and(|e| e == name))
        .unwrap_or(name)
        .to_string()
}

/// The step for a window: `requested` when given, else about [`DEFAULT_POINTS`] points; never
/// so small that a series has more than [`MAX_POINTS`] points (as Prometheus requires).
pub fn step_for(window_s: i64, requested: Option<f64>) -> f64 {
    let floor = (window_s as f64 / MAX_POINTS as f64).ceil().max(1.0);
    let wanted = requested.unwrap_or_else(|| (window_s as f64 / DEFAULT_POINTS as f64).ceil());
    wanted.max(floor)
}

/// The range of `rate()` for counters over time: two steps, at least a minute (so a
/// scrape interval up to 30 s still leaves two samples in each range).
pub fn rate_window_s(step: f64) -> i64 {
    ((2.0 * step).ceil() as i64).max(60)
}

/// One histogram to read: its canonical key, the family found, an optional label filter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramPlan {
    pub key: String,
    pub family: String,
    #[serde(default)]
    pub filter: Option<(String, String)>,
}

impl HistogramPlan {
    fn selector(&self, suffix: &str) -> String {
        let filter = self
            .filter
            .as_ref()
            .map(|(k, v)| format!("{{{k}=\"{v}\"}}"))
            .unwrap_or_default();
        format!("{}{suffix}{filter}", self.family)
    }

    /// The window's bucket increases, as `histogram_quantile` would be given them.
    pub fn buckets_query(&self, window_s: i64) -> String {
        format!(
            "sum by (le) (increase({}[{window_s}s]))",
            self.selector("_bucket")
        )
    }

    /// The window's increase of the observations' sum (for the mean).
    pub fn sum_query(&self, window_s: i64) -> String {
        format!("sum(increase({}[{window_s}s]))", self.selector("_sum"))
    }
}

/// A counter, gauge or DCGM series to read: its key and the metric name found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesPlan {
    pub key: String,
    pub name: String,
}

impl SeriesPlan {
    pub fn increase_query(&self, window_s: i64) -> String {
        format!("sum(increase({}[{window_s}s]))", self.name)
    }
    pub fn rate_query(&self, rate_s: i64) -> String {
        format!("sum(rate({}[{rate_s}s]))", self.name)
    }
    /// Gauges: summed over label sets (requests), averaged for fractions and GPUs.
    pub fn gauge_query(&self) -> String {
        let agg = if matches!(self.key.as_str(), "running" | "waiting") {
            "sum"
        } else {
            "avg"
        };
        format!("{agg}({})", self.name)
    }
}

/// What to ask for one engine, given the metric names the server has in the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub histograms: Vec<HistogramPlan>,
    pub counters: Vec<SeriesPlan>,
    pub gauges: Vec<SeriesPlan>,
}

/// For each series perfjournal reads, the first candidate name (current name first, then
/// the older ones: `inter_token_latency_seconds` before `time_per_output_token_seconds`,
/// `kv_cache_usage_perc` before `gpu_cache_usage_perc`) that `present` holds.
/// A name the server has is taken as it is or escaped ([`escaped`]), as it has it.
pub fn plan(engine: &str, present: &[String]) -> Plan {
    let prefix = engine_prefix(engine).unwrap_or("vllm:");
    let is_present = |n: &str| present.iter().any(|p| p == n);
    // The name as the server has it: as the engine writes it, else escaped.
    let found = |n: &str, suffix: &str| -> Option<String> {
        if !n.starts_with(prefix) {
            return None;
        }
        if is_present(&format!("{n}{suffix}")) {
            return Some(n.to_string());
        }
        escaped(n).filter(|e| is_present(&format!("{e}{suffix}")))
    };
    let mut out = Plan::default();
    for (key, families, filter) in HISTOGRAMS {
        if let Some(f) = families.iter().find_map(|f| found(f, "_bucket")) {
            out.histograms.push(HistogramPlan {
                key: key.to_string(),
                family: f,
                filter: filter.map(|(k, v)| (k.to_string(), v.to_string())),
            });
        }
    }
    for (key, names) in COUNTERS {
        if let Some(n) = names.iter().find_map(|n| found(n, "")) {
            out.counters.push(SeriesPlan {
                key: key.to_string(),
                name: n,
            });
        }
    }
    for (key, names) in [
        ("running", RUNNING),
        ("waiting", WAITING),
        ("kv_usage", KV_USAGE),
    ] {
        if let Some(n) = names.iter().find_map(|n| found(n, "")) {
            out.gauges.push(SeriesPlan {
                key: key.to_string(),
                name: n,
            });
        }
    }
    for (key, name) in DCGM_GAUGES {
        if present.iter().any(|p| p == name) {
            out.gauges.push(SeriesPlan {
                key: key.to_string(),
                name: name.to_string(),
            });
        }
    }
    out
}

impl Plan {
    /// Whether the plan reads any of the engine's own metrics (DCGM's GPU gauges alone
    /// say nothing of the engine: such a window has none of its metrics).
    pub fn reads_engine(&self) -> bool {
        !self.histograms.is_empty()
            || !self.counters.is_empty()
            || self
                .gauges
                .iter()
                .any(|g| DCGM_GAUGES.iter().all(|(key, _)| *key != g.key))
    }

    /// Whether any name read is escaped (see [`escaped`]).
    pub fn escaped_names(&self) -> bool {
        self.histograms
            .iter()
            .map(|h| &h.family)
            .chain(self.counters.iter().chain(&self.gauges).map(|s| &s.name))
            .any(|n| canonical(n) != *n)
    }
}

/// Why a window cannot be read: none of the engine's metrics in it.
pub fn no_engine_metrics(base: &str, engine: &str) -> String {
    let prefix = engine_prefix(engine).unwrap_or("");
    let names = match escaped(prefix) {
        Some(esc) => format!("{prefix}* or {esc}*"),
        None => format!("{prefix}*"),
    };
    format!(
        "{base} has no {engine} metrics ({names}) between the start and the end: is it the \
         Prometheus that scraped the engine, and is the engine right?"
    )
}

/// One answer of the server as stored: the query and its `data` (`resultType`, `result`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub query: String,
    pub data: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramFetch {
    #[serde(flatten)]
    pub plan: HistogramPlan,
    pub buckets: Answer,
    pub sum: Answer,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterFetch {
    #[serde(flatten)]
    pub plan: SeriesPlan,
    pub increase: Answer,
    pub rate: Answer,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaugeFetch {
    #[serde(flatten)]
    pub plan: SeriesPlan,
    pub range: Answer,
}

/// The stored blob: everything the server answered for one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeFetch {
    pub format: String,
    /// The server's base URL (no credentials).
    pub source: String,
    pub engine: String,
    /// Unix seconds.
    pub start: f64,
    pub end: f64,
    pub step: f64,
    pub window_s: i64,
    pub rate_window_s: i64,
    /// The engine's (and DCGM's) metric names present in the window.
    pub names: Vec<String>,
    pub histograms: Vec<HistogramFetch>,
    pub counters: Vec<CounterFetch>,
    pub gauges: Vec<GaugeFetch>,
}

/// Quantiles of one latency histogram over the window, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowQuantiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    /// Observations in the window (the `+Inf` bucket's increase; extrapolated, so
    /// fractional).
    pub count: f64,
    pub mean: Option<f64>,
    /// The metric family read (which name this engine version exposes).
    pub metric: String,
    /// The bucket each quantile fell in, ms: the resolution of the estimate.
    pub buckets: BTreeMap<String, Bucket>,
    /// Quantiles above the largest finite bucket (reported as that bound).
    pub lower_bounds: Vec<String>,
}

/// The analysis of a `prometheus_range` artifact.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrometheusRangeAnalysis {
    pub source: String,
    pub engine: String,
    pub start: f64,
    pub end: f64,
    pub step: f64,
    pub window_s: i64,
    pub rate_window_s: i64,
    /// `ttft_ms`, `itl_ms`, `queue_ms`, `prefill_ms`, `decode_ms`, `e2e_ms` (and `tpot_ms`,
    /// `inference_ms` when present) → p50/p90/p95/p99 over the window.
    pub quantiles: BTreeMap<String, WindowQuantiles>,
    /// Gauges over time: key → `[Unix epoch ms, value]`.
    pub gauges: BTreeMap<String, Vec<[f64; 2]>>,
    /// Counter rates over time (per second): key → `[Unix epoch ms, rate]`.
    pub rates: BTreeMap<String, Vec<[f64; 2]>>,
    /// Counter increases over the whole window.
    pub totals: BTreeMap<String, f64>,
    /// Requests waiting over time (the `waiting` gauge), for bubble attribution.
    pub waiting_series: Vec<[f64; 2]>,
    /// Key → the metric name read.
    pub metrics: BTreeMap<String, String>,
    /// The window read as the `/metrics` analyzer reads two scrapes (histograms in
    /// seconds, gauges at the window's end): what steps 1 and 2 and comparisons use.
    pub window: PrometheusAnalysis,
    pub notes: Vec<String>,
}

fn bad(m: impl Into<String>) -> AnalyzeError {
    AnalyzeError::malformed(m)
}

/// A sample value as Prometheus writes it: a string (`"0.5"`, `"+Inf"`, `"NaN"`).
fn value_of(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => super::text::parse_value(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// One sample of an instant vector: its labels and value.
type VectorSample = (BTreeMap<String, String>, f64);

/// An instant vector's samples.
fn vector(a: &Answer) -> Result<Vec<VectorSample>, AnalyzeError> {
    let result = a.data.get("result").and_then(Value::as_array);
    let Some(result) = result else {
        return Err(bad(format!("the answer to {} has no result list", a.query)));
    };
    let mut out = Vec::new();
    for item in result {
        let labels: BTreeMap<String, String> = item
            .get("metric")
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .unwrap_or_default();
        let v = item
            .get("value")
            .and_then(|v| v.get(1))
            .and_then(value_of)
            .ok_or_else(|| bad(format!("a sample of {} has no value", a.query)))?;
        out.push((labels, v));
    }
    Ok(out)
}

/// A range query's single series (the queries aggregate to one), `[ms, value]`, finite
/// values only.
fn matrix(a: &Answer) -> Result<Vec<[f64; 2]>, AnalyzeError> {
    let result = a.data.get("result").and_then(Value::as_array);
    let Some(result) = result else {
        return Err(bad(format!("the answer to {} has no result list", a.query)));
    };
    let mut by_time: BTreeMap<i64, f64> = BTreeMap::new();
    for item in result {
        let values = item.get("values").and_then(Value::as_array);
        for point in values.into_iter().flatten() {
            let t = point.get(0).and_then(Value::as_f64);
            let v = point.get(1).and_then(value_of);
            if let (Some(t), Some(v)) = (t, v) {
                if v.is_finite() && crate::analyze::in_range(v) {
                    *by_time.entry((t * 1000.0).round() as i64).or_insert(0.0) += v;
                }
            }
        }
    }
    Ok(by_time.into_iter().map(|(t, v)| [t as f64, v]).collect())
}

/// The window's histogram (bucket increases by `le`) as a series `bucket_quantile` reads.
fn histogram_of(h: &HistogramFetch) -> Result<Option<HistSeries>, AnalyzeError> {
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for (labels, v) in vector(&h.buckets)? {
        let le = labels
            .get("le")
            .and_then(|s| super::text::parse_value(s))
            .ok_or_else(|| bad(format!("a bucket of {} has no le label", h.plan.family)))?;
        if v.is_finite() {
            buckets.push((le, v));
        }
    }
    if buckets.is_empty() {
        return Ok(None);
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let count = buckets.last().map_or(0.0, |b| b.1);
    let sum = vector(&h.sum)?
        .first()
        .map(|x| x.1)
        .filter(|x| x.is_finite())
        .unwrap_or(0.0);
    Ok(Some(HistSeries {
        labels: Vec::new(),
        buckets,
        sum,
        count,
    }))
}

fn to_ms(b: &Bucket) -> Bucket {
    Bucket {
        lo: b.lo * 1000.0,
        hi: b.hi.map(|h| h * 1000.0),
    }
}

/// Reads a stored [`RangeFetch`] (see the module doc).
pub fn analyze<R: Read>(reader: R) -> Result<PrometheusRangeAnalysis, AnalyzeError> {
    let fetch: RangeFetch = serde_json::from_reader(reader)?;
    analyze_fetch(&fetch)
}

/// The analysis of answers already read.
pub fn analyze_fetch(f: &RangeFetch) -> Result<PrometheusRangeAnalysis, AnalyzeError> {
    if f.format != FORMAT {
        return Err(bad(format!(
            "format '{}' is not {FORMAT}: not a Prometheus window fetched by perfjournal",
            f.format
        )));
    }
    let mut notes = Vec::new();
    let mut metrics = BTreeMap::new();
    let mut increases = Model::default();
    for h in &f.histograms {
        metrics.insert(h.plan.key.clone(), h.plan.family.clone());
        match histogram_of(h)? {
            Some(series) => {
                increases
                    .hists
                    .entry(canonical(&h.plan.family))
                    .or_default()
                    .push(series);
            }
            None => notes.push(format!("{}: no observations in the window", h.plan.family)),
        }
    }
    let mut totals = BTreeMap::new();
    let mut rates = BTreeMap::new();
    for c in &f.counters {
        metrics.insert(c.plan.key.clone(), c.plan.name.clone());
        if let Some((_, v)) = vector(&c.increase)?.first() {
            if v.is_finite() {
                totals.insert(c.plan.key.clone(), *v);
                increases
                    .scalars
                    .entry(canonical(&c.plan.name))
                    .or_default()
                    .push((Vec::new(), *v));
            }
        }
        rates.insert(c.plan.key.clone(), matrix(&c.rate)?);
    }
    let mut gauges = BTreeMap::new();
    let mut at_end = Model::default();
    for g in &f.gauges {
        metrics.insert(g.plan.key.clone(), g.plan.name.clone());
        let series = matrix(&g.range)?;
        if let Some(last) = series.last() {
            at_end
                .scalars
                .entry(canonical(&g.plan.name))
                .or_default()
                .push((Vec::new(), last[1]));
        }
        gauges.insert(g.plan.key.clone(), series);
    }
    let samples = (f.histograms.len() + f.counters.len() + f.gauges.len()) as u64;
    let mut window = summarize(&increases, &at_end, &f.engine, true, samples, Vec::new());
    window.waiting_series = gauges.get("waiting").cloned().unwrap_or_default();
    let mut quantiles = BTreeMap::new();
    for (key, ms_key) in LATENCY_KEYS {
        let Some(q) = window.quantiles.get(*key) else {
            continue;
        };
        let ms = |x: Option<f64>| x.map(|v| v * 1000.0);
        quantiles.insert(
            ms_key.to_string(),
            WindowQuantiles {
                p50: ms(q.p50),
                p90: ms(q.p90),
                p95: ms(q.p95),
                p99: ms(q.p99),
                count: q.count,
                mean: ms(q.mean),
                metric: q.metric.clone(),
                buckets: q
                    .buckets
                    .iter()
                    .map(|(k, b)| (k.clone(), to_ms(b)))
                    .collect(),
                lower_bounds: q.lower_bounds.clone(),
            },
        );
    }
    for key in ["ttft_s", "itl_s", "e2e_s"] {
        if !metrics.contains_key(key) {
            notes.push(format!(
                "no {} histogram in the window for {}",
                key.trim_end_matches("_s"),
                f.engine
            ));
        }
    }
    let read = Plan {
        histograms: f.histograms.iter().map(|h| h.plan.clone()).collect(),
        counters: f.counters.iter().map(|c| c.plan.clone()).collect(),
        gauges: f.gauges.iter().map(|g| g.plan.clone()).collect(),
    };
    if read.escaped_names() {
        notes.push(format!(
            "the server stores {}'s names escaped (`_` for `:`, as Prometheus keeps them \
             from an exporter that escapes names): read under those names",
            f.engine
        ));
    }
    notes.extend(window.notes.iter().cloned());
    Ok(PrometheusRangeAnalysis {
        source: f.source.clone(),
        engine: f.engine.clone(),
        start: f.start,
        end: f.end,
        step: f.step,
        window_s: f.window_s,
        rate_window_s: f.rate_window_s,
        quantiles,
        waiting_series: window.waiting_series.clone(),
        gauges,
        rates,
        totals,
        metrics,
        window,
        notes,
    })
}

/// One quantile of one latency in two windows (before and after a change).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowDelta {
    /// `ttft_ms`, `itl_ms`, …
    pub series: String,
    /// `p50` … `p99`.
    pub quantile: String,
    pub before: f64,
    pub after: f64,
    /// `(after − before) / before × 100`; absent when `before` is 0.
    pub change_pct: Option<f64>,
    /// Both fell in the same histogram bucket: the change is within the buckets'
    /// resolution (linear interpolation inside one bucket, not a measured shift).
    pub same_bucket: bool,
    /// Either is above the largest finite bucket: only a lower bound, no change measured.
    pub lower_bound: bool,
}

/// Two windows of the same engine's histograms compared quantile by quantile, plus the
/// gauges' means. No resampling: a server's histograms hold no per-request samples, so
/// there is no confidence interval; the bucket resolution says what can be told apart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowComparison {
    pub deltas: Vec<WindowDelta>,
    /// Gauge key → mean over each window (`[before, after]`).
    pub gauge_means: BTreeMap<String, [Option<f64>; 2]>,
    pub notes: Vec<String>,
}

fn mean_of(points: Option<&Vec<[f64; 2]>>) -> Option<f64> {
    let p = points?;
    (!p.is_empty()).then(|| p.iter().map(|x| x[1]).sum::<f64>() / p.len() as f64)
}

/// Compares `before` and `after` (see [`WindowComparison`]).
pub fn compare_windows(
    before: &PrometheusRangeAnalysis,
    after: &PrometheusRangeAnalysis,
) -> WindowComparison {
    let mut out = WindowComparison::default();
    if before.engine != after.engine {
        out.notes.push(format!(
            "the windows are of different engines ({} and {}): their histograms differ",
            before.engine, after.engine
        ));
    }
    for (_, key) in LATENCY_KEYS {
        let (Some(b), Some(a)) = (before.quantiles.get(*key), after.quantiles.get(*key)) else {
            continue;
        };
        if b.metric != a.metric {
            out.notes.push(format!(
                "{key}: read from {} before and {} after (a rename; the buckets may differ)",
                b.metric, a.metric
            ));
        }
        for (q, vb, va) in [
            ("p50", b.p50, a.p50),
            ("p90", b.p90, a.p90),
            ("p95", b.p95, a.p95),
            ("p99", b.p99, a.p99),
        ] {
            let (Some(vb), Some(va)) = (vb, va) else {
                continue;
            };
            let lower_bound = b.lower_bounds.iter().chain(&a.lower_bounds).any(|x| x == q);
            out.deltas.push(WindowDelta {
                series: key.to_string(),
                quantile: q.to_string(),
                before: vb,
                after: va,
                change_pct: (vb != 0.0 && !lower_bound).then(|| (va - vb) / vb * 100.0),
                same_bucket: b.buckets.contains_key(q) && b.buckets.get(q) == a.buckets.get(q),
                lower_bound,
            });
        }
    }
    let keys: std::collections::BTreeSet<&String> =
        before.gauges.keys().chain(after.gauges.keys()).collect();
    for k in keys {
        out.gauge_means.insert(
            k.clone(),
            [mean_of(before.gauges.get(k)), mean_of(after.gauges.get(k))],
        );
    }
    if out.deltas.is_empty() {
        out.notes
            .push("no latency histogram is present in both windows".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_plan_finds_renamed_metrics_under_their_old_names() {
        let old = names(&[
            "vllm:time_per_output_token_seconds_bucket",
            "vllm:time_to_first_token_seconds_bucket",
            "vllm:gpu_cache_usage_perc",
            "vllm:num_requests_waiting",
            "vllm:num_preemptions_total",
            "sglang:num_queue_reqs",
        ]);
        let p = plan("vllm", &old);
        let itl = p.histograms.iter().find(|h| h.key == "itl_s").unwrap();
        assert_eq!(itl.family, "vllm:time_per_output_token_seconds");
        let kv = p.gauges.iter().find(|g| g.key == "kv_usage").unwrap();
        assert_eq!(kv.name, "vllm:gpu_cache_usage_perc");
        // Another engine's names are not read for vLLM.
        let waiting: Vec<_> = p.gauges.iter().filter(|g| g.key == "waiting").collect();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].name, "vllm:num_requests_waiting");
        // The current name wins when both exist.
        let both = names(&[
            "vllm:time_per_output_token_seconds_bucket",
            "vllm:inter_token_latency_seconds_bucket",
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "DCGM_FI_DEV_GPU_UTIL",
        ]);
        let p = plan("vllm", &both);
        assert_eq!(p.histograms[0].family, "vllm:inter_token_latency_seconds");
        assert_eq!(p.gauges[0].name, "vllm:kv_cache_usage_perc");
        assert_eq!(p.gauges[1].key, "gpu_util_pct");
        assert_eq!(
            p.histograms[0].buckets_query(3600),
            "sum by (le) (increase(vllm:inter_token_latency_seconds_bucket[3600s]))"
        );
    }

    #[test]
    fn escaped_names_are_read_as_the_engine_names_them() {
        // What Prometheus keeps from an exporter that escapes names with underscores.
        let stored = names(&[
            "vllm_time_to_first_token_seconds_bucket",
            "vllm_num_requests_waiting",
            "vllm_generation_tokens_total",
            "DCGM_FI_DEV_GPU_UTIL",
        ]);
        assert_eq!(
            names_selector("vllm"),
            "{__name__=~\"vllm:.*|vllm_.*|DCGM_.*\"}"
        );
        assert_eq!(names_selector("tgi"), "{__name__=~\"tgi_.*|DCGM_.*\"}");
        let p = plan("vllm", &stored);
        assert!(p.reads_engine() && p.escaped_names());
        assert_eq!(p.histograms[0].family, "vllm_time_to_first_token_seconds");
        assert_eq!(
            p.histograms[0].buckets_query(60),
            "sum by (le) (increase(vllm_time_to_first_token_seconds_bucket[60s]))"
        );
        assert_eq!(p.gauges[0].name, "vllm_num_requests_waiting");
        assert_eq!(
            canonical("vllm_time_to_first_token_seconds"),
            "vllm:time_to_first_token_seconds"
        );
        assert_eq!(canonical("DCGM_FI_DEV_GPU_UTIL"), "DCGM_FI_DEV_GPU_UTIL");
        // The unescaped name wins when the server has both.
        let both = names(&["vllm_num_requests_waiting", "vllm:num_requests_waiting"]);
        assert_eq!(
            plan("vllm", &both).gauges[0].name,
            "vllm:num_requests_waiting"
        );
        // DCGM alone is none of the engine's metrics.
        let p = plan(
            "vllm",
            &names(&["DCGM_FI_DEV_GPU_UTIL", "process_cpu_seconds_total"]),
        );
        assert!(!p.gauges.is_empty() && !p.reads_engine());
        assert!(no_engine_metrics("http://p:9090/", "vllm").contains("(vllm:* or vllm_*)"));
    }

    #[test]
    fn tgi_forward_durations_carry_their_label_filter() {
        let p = plan("tgi", &names(&["tgi_batch_forward_duration_bucket"]));
        assert_eq!(p.histograms.len(), 2);
        assert_eq!(
            p.histograms[0].buckets_query(60),
            "sum by (le) (increase(tgi_batch_forward_duration_bucket{method=\"prefill\"}[60s]))"
        );
    }

    #[test]
    fn steps_keep_within_prometheus_point_limit() {
        assert_eq!(step_for(3600, None), 12.0);
        assert_eq!(step_for(3600, Some(1.0)), 1.0);
        // 31 days at 1 s would be 2.7 M points: raised to 244 s (≤ 11,000 points).
        let s = step_for(MAX_WINDOW_S, Some(1.0));
        assert!((MAX_WINDOW_S as f64 / s) <= MAX_POINTS as f64, "{s}");
        assert_eq!(rate_window_s(12.0), 60);
        assert_eq!(rate_window_s(300.0), 600);
    }

    fn bucket_answer(pairs: &[(&str, &str)]) -> Answer {
        Answer {
            query: "q".into(),
            data: json!({"resultType": "vector", "result": pairs.iter().map(|(le, v)| json!({
                "metric": {"le": le}, "value": [1700000000.0, v]
            })).collect::<Vec<_>>()}),
        }
    }

    fn scalar_answer(v: &str) -> Answer {
        Answer {
            query: "s".into(),
            data: json!({"resultType": "vector", "result": [{"metric": {}, "value": [1700000000.0, v]}]}),
        }
    }

    fn fetch(histograms: Vec<HistogramFetch>, gauges: Vec<GaugeFetch>) -> RangeFetch {
        RangeFetch {
            format: FORMAT.into(),
            source: "http://127.0.0.1:9090".into(),
            engine: "vllm".into(),
            start: 1_700_000_000.0 - 600.0,
            end: 1_700_000_000.0,
            step: 2.0,
            window_s: 600,
            rate_window_s: 60,
            names: Vec::new(),
            histograms,
            counters: vec![CounterFetch {
                plan: SeriesPlan {
                    key: "preemptions".into(),
                    name: "vllm:num_preemptions_total".into(),
                },
                increase: scalar_answer("3.5"),
                rate: Answer {
                    query: "r".into(),
                    data: json!({"resultType": "matrix", "result": [{"metric": {}, "values": [[1699999998.0, "0.01"], [1700000000.0, "0.02"]]}]}),
                },
            }],
            gauges,
        }
    }

    fn ttft(pairs: &[(&str, &str)]) -> HistogramFetch {
        HistogramFetch {
            plan: HistogramPlan {
                key: "ttft_s".into(),
                family: "vllm:time_to_first_token_seconds".into(),
                filter: None,
            },
            buckets: bucket_answer(pairs),
            sum: scalar_answer("30"),
        }
    }

    #[test]
    fn window_quantiles_are_histogram_quantile_of_the_increases() {
        // 10 in (0, 0.1], 30 in (0.1, 0.5], 10 in (0.5, 1], none above (fractional
        // counts as increase() extrapolates).
        let f = fetch(
            vec![ttft(&[
                ("0.1", "10.5"),
                ("0.5", "40.5"),
                ("1.0", "50.5"),
                ("+Inf", "50.5"),
            ])],
            vec![GaugeFetch {
                plan: SeriesPlan {
                    key: "waiting".into(),
                    name: "vllm:num_requests_waiting".into(),
                },
                range: Answer {
                    query: "g".into(),
                    data: json!({"resultType": "matrix", "result": [{"metric": {}, "values": [[1699999998.0, "3"], [1700000000.0, "1"]]}]}),
                },
            }],
        );
        let a = analyze_fetch(&f).unwrap();
        let q = &a.quantiles["ttft_ms"];
        // rank 25.25 in (0.1, 0.5] holding 30 above 10.5: 0.1 + 0.4 × 14.75/30.
        let p50 = 100.0 + 400.0 * (25.25 - 10.5) / 30.0;
        assert!((q.p50.unwrap() - p50).abs() < 1e-9, "{q:?}");
        assert_eq!(q.buckets["p50"].hi, Some(500.0));
        assert_eq!(q.metric, "vllm:time_to_first_token_seconds");
        assert!((q.count - 50.5).abs() < 1e-12);
        assert_eq!(a.totals["preemptions"], 3.5);
        assert_eq!(a.rates["preemptions"].len(), 2);
        assert_eq!(
            a.waiting_series,
            vec![[1_699_999_998_000.0, 3.0], [1_700_000_000_000.0, 1.0]]
        );
        // The window summary the steps read: the waiting gauge at the end.
        assert_eq!(a.window.gauges.waiting, Some(1.0));
        assert_eq!(a.window.preemptions, Some(3.5));
        assert!(a.window.window);
    }

    #[test]
    fn the_first_bucket_starts_at_zero_and_inf_gives_a_lower_bound() {
        let f = fetch(
            vec![ttft(&[("0.1", "100"), ("0.5", "100"), ("+Inf", "200")])],
            Vec::new(),
        );
        let a = analyze_fetch(&f).unwrap();
        let q = &a.quantiles["ttft_ms"];
        // p50: rank 100 is in the first bucket, interpolated from 0: exactly its top.
        assert!((q.p50.unwrap() - 100.0).abs() < 1e-9);
        // p90: rank 180 in +Inf → the largest finite bound, flagged.
        assert_eq!(q.p90, Some(500.0));
        assert!(q.lower_bounds.contains(&"p90".to_string()));
        assert_eq!(q.buckets["p90"].hi, None);
        let f = fetch(vec![ttft(&[("0.1", "40"), ("+Inf", "40")])], Vec::new());
        let q = &analyze_fetch(&f).unwrap().quantiles["ttft_ms"];
        // rank 20 of 40, all in (0, 0.1]: linear from 0 → 50 ms.
        assert!((q.p50.unwrap() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn an_empty_window_has_no_quantiles_and_says_so() {
        let f = fetch(
            vec![ttft(&[("0.1", "0"), ("+Inf", "0")]), {
                let mut h = ttft(&[]);
                h.plan.key = "e2e_s".into();
                h.plan.family = "vllm:e2e_request_latency_seconds".into();
                h
            }],
            Vec::new(),
        );
        let a = analyze_fetch(&f).unwrap();
        assert!(a.quantiles.is_empty());
        assert!(
            a.notes.iter().any(|n| n.contains("no observations")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn two_windows_compare_quantile_by_quantile_with_their_resolution() {
        let before = analyze_fetch(&fetch(
            vec![ttft(&[
                ("0.1", "50"),
                ("0.5", "90"),
                ("1.0", "100"),
                ("+Inf", "100"),
            ])],
            Vec::new(),
        ))
        .unwrap();
        let after = analyze_fetch(&fetch(
            vec![ttft(&[
                ("0.1", "10"),
                ("0.5", "60"),
                ("1.0", "100"),
                ("+Inf", "100"),
            ])],
            Vec::new(),
        ))
        .unwrap();
        let c = compare_windows(&before, &after);
        let p50 = c.deltas.iter().find(|d| d.quantile == "p50").unwrap();
        // Before: rank 50 at the top of (0, 0.1] = 100 ms; after: 0.1 + 0.4 × 40/50 s.
        assert!((p50.before - 100.0).abs() < 1e-9);
        assert!((p50.after - 420.0).abs() < 1e-9, "{p50:?}");
        assert!((p50.change_pct.unwrap() - 320.0).abs() < 1e-9);
        assert!(!p50.same_bucket);
        let p99 = c.deltas.iter().find(|d| d.quantile == "p99").unwrap();
        // Both in (0.5, 1]: within the resolution.
        assert!(p99.same_bucket);
        assert_eq!(c.gauge_means.len(), 0);
    }

    #[test]
    fn a_blob_of_another_format_is_refused() {
        let mut f = fetch(Vec::new(), Vec::new());
        f.format = "x".into();
        assert!(analyze_fetch(&f).is_err());
        let text = serde_json::to_vec(&fetch(Vec::new(), Vec::new())).unwrap();
        assert!(analyze(&text[..]).is_ok());
        assert!(analyze(&b"{\"format\": 1}"[..]).is_err());
    }
}
