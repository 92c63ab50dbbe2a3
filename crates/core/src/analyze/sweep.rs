//! Load sweeps: the same server measured at several offered loads (request rates or
//! concurrencies), read as one list of points, and the two questions asked of it —
//! where does latency turn up sharply (the knee), and what is the highest throughput
//! that still meets a latency SLO.
//!
//! Sources:
//! - vLLM's benchmark-suite summary table: a JSON list of rows keyed `"Test name"`,
//!   `"# of req."`, `"Tput (req/s)"`, `"Output Tput (tok/s)"`, `"Mean TTFT (ms)"`,
//!   `"Median TTFT (ms)"`, `"P99 TTFT (ms)"` (and the same for TPOT, ITL, E2EL), one row
//!   per rate, the rate in the test name (`…_qps_4`, `…_qps_inf`; `…_concurrency_16`
//!   for a concurrency sweep). pandas' column form (`{"Test name": {"0": …}}`) and a
//!   wrapper object holding such a list (`{"serving": [...]}`) are read too. Rows of
//!   different tests (another model or parallelism) become separate series.
//! - GuideLLM and GenAI-Perf: their files are read by [`super::vllm_bench`] (one run per
//!   GuideLLM benchmark, one per JSON document); [`points_from_runs`] turns runs at two
//!   or more loads into points. GenAI-Perf's `analyze` writes one
//!   `profile_export_genai_perf.json` per concurrency: upload each and build the sweep
//!   from the artifacts ([`from_members`]).
//! - A sweep made of artifacts: several single-load benchmark runs that differ only in
//!   request rate or concurrency ([`from_members`] refuses, naming the difference).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::point::{
    distinct_loads, load_known, load_of, order, LatencyStats, Load, SweepPoint,
};
use super::point::{num, short};
use super::vllm_bench::BenchResult;
pub use super::vllm_bench::{point_of, points_from_runs};
use super::AnalyzeError;
use crate::metric::{Metric, Percentile};
use crate::quantity::{self, Unit};
use crate::settings;
use crate::FieldError;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// A summary table is a few rows per rate; anything past this is not one.
const MAX_TABLE_BYTES: u64 = 16 << 20;

/// What the sweep reader stores for a summary-table file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepAnalysis {
    /// `vllm_summary_table`.
    pub source: String,
    /// The series names, in order (one per test without its rate).
    pub series: Vec<String>,
    /// Every point, grouped by series, each series in load order.
    pub points: Vec<SweepPoint>,
    /// What was skipped or assumed while reading.
    pub notes: Vec<String>,
}

/// The points of one series, in load order.
pub fn series_points<'a>(points: &'a [SweepPoint], series: &str) -> Vec<&'a SweepPoint> {
    points.iter().filter(|p| p.series == series).collect()
}

/// The distinct series names, in order of first appearance.
pub fn series_names(points: &[SweepPoint]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in points {
        if !out.contains(&p.series) {
            out.push(p.series.clone());
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The vLLM summary table

/// Read a vLLM benchmark-suite summary table (decompressed).
pub fn analyze<R: Read>(reader: R) -> Result<SweepAnalysis, AnalyzeError> {
    let mut limited = reader.take(MAX_TABLE_BYTES + 1);
    let mut text = Vec::new();
    limited.read_to_end(&mut text)?;
    if text.len() as u64 > MAX_TABLE_BYTES {
        return Err(AnalyzeError::malformed(format!(
            "larger than {} MiB: not a benchmark summary table",
            MAX_TABLE_BYTES >> 20
        )));
    }
    let doc: Value = serde_json::from_slice(&text)?;
    let rows = table_rows(&doc).ok_or_else(|| {
        AnalyzeError::malformed(
            "no summary table found: expected a JSON list of rows with a \"Test name\" key",
        )
    })?;
    let mut points = Vec::new();
    let mut notes = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        match table_point(row) {
            Ok(p) => points.push(p),
            Err(why) => notes.push(format!("row {} skipped: {why}", i + 1)),
        }
    }
    if points.is_empty() {
        return Err(AnalyzeError::malformed(format!(
            "no usable row in the summary table ({})",
            notes.join("; ")
        )));
    }
    order(&mut points);
    Ok(SweepAnalysis {
        source: "vllm_summary_table".into(),
        series: series_names(&points),
        points,
        notes,
    })
}

/// The rows of a summary table: a list of objects, pandas' column form, or an object
/// holding one such list.
fn table_rows(doc: &Value) -> Option<Vec<Map<String, Value>>> {
    let is_row = |v: &Value| v.get("Test name").is_some();
    match doc {
        Value::Array(items) if items.iter().any(is_row) => Some(
            items
                .iter()
                .filter_map(|v| v.as_object().cloned())
                .collect(),
        ),
        Value::Object(m) => {
            if let Some(Value::Object(names)) = m.get("Test name") {
                // {"column": {"0": value, "1": value}} → one row per index.
                let mut rows: Vec<Map<String, Value>> = Vec::new();
                for idx in names.keys() {
                    let mut row = Map::new();
                    for (col, cells) in m {
                        if let Some(v) = cells.get(idx) {
                            row.insert(col.clone(), v.clone());
                        }
                    }
                    rows.push(row);
                }
                return Some(rows);
            }
            m.values().find_map(|v| match v {
                Value::Array(items) if items.iter().any(is_row) => table_rows(v),
                _ => None,
            })
        }
        _ => None,
    }
}

/// The load written in a test name: `…_qps_4` / `…_qps_inf` / `…_concurrency_16`.
/// Returns (series name without the load, rate, concurrency, unbounded).
fn load_from_name(name: &str) -> Option<(String, Option<f64>, Option<f64>, bool)> {
    let mut series = name.to_string();
    let mut rate = None;
    let mut conc = None;
    let mut unbounded = false;
    let mut found = false;
    for (marker, is_rate) in [("_qps_", true), ("_concurrency_", false)] {
        let Some(at) = series.rfind(marker) else {
            continue;
        };
        let rest = &series[at + marker.len()..];
        let token_end = rest.find('_').unwrap_or(rest.len());
        let token = rest[..token_end].to_string();
        let value = if token.eq_ignore_ascii_case("inf") {
            None
        } else {
            Some(token.parse::<f64>().ok().filter(|x| x.is_finite())?)
        };
        if is_rate {
            rate = value;
            unbounded = value.is_none();
        } else {
            conc = value;
        }
        series = format!("{}{}", &series[..at], &rest[token_end..]);
        found = true;
    }
    if conc.is_some() {
        unbounded = false;
    }
    found.then_some((series, rate, conc, unbounded))
}

/// `"P99 TTFT (ms)"` → (metric, statistic) where the statistic is `mean`, `p50`, … .
fn stat_column(key: &str) -> Option<(&'static str, &'static str)> {
    let body = key.trim().strip_suffix("(ms)")?.trim();
    let (stat, metric) = body.split_once(' ')?;
    let stat = match stat.to_ascii_lowercase().as_str() {
        "mean" | "avg" => "mean",
        "median" | "p50" => "p50",
        "p90" => "p90",
        "p95" => "p95",
        "p99" => "p99",
        _ => return None,
    };
    let metric = match metric.trim().to_ascii_uppercase().as_str() {
        "TTFT" => "ttft",
        "TPOT" => "tpot",
        "ITL" => "itl",
        "E2EL" | "E2E" => "e2el",
        _ => return None,
    };
    Some((metric, stat))
}

fn table_point(row: &Map<String, Value>) -> Result<SweepPoint, String> {
    let name = row
        .get("Test name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or("no \"Test name\"")?;
    let (mut series, rate, conc, unbounded) = match load_from_name(name) {
        Some(l) => l,
        None => {
            let rate = num(row.get("QPS").or(row.get("qps")));
            let conc = num(row.get("Concurrency").or(row.get("max_concurrency")));
            if rate.is_none() && conc.is_none() {
                return Err(format!(
                    "test {name:?} names no load (…_qps_4, …_qps_inf or …_concurrency_16) and has no QPS column"
                ));
            }
            (name.to_string(), rate, conc, false)
        }
    };
    if let Some(gpu) = row.get("GPU").and_then(Value::as_str).map(str::trim) {
        if !gpu.is_empty() {
            series = format!("{series} ({gpu})");
        }
    }
    let mut p = SweepPoint {
        series,
        label: name.to_string(),
        offered_rate: rate,
        concurrency: conc,
        unbounded,
        achieved_rps: num(row.get("Tput (req/s)")),
        output_tps: num(row.get("Output Tput (tok/s)")),
        requests: num(row.get("# of req.")).map(|x| x.max(0.0).round() as u64),
        ..SweepPoint::default()
    };
    for (key, v) in row {
        let Some((metric, stat)) = stat_column(key) else {
            continue;
        };
        let target = match metric {
            "ttft" => &mut p.ttft_ms,
            "tpot" => &mut p.tpot_ms,
            "itl" => &mut p.itl_ms,
            _ => &mut p.e2el_ms,
        };
        let slot = match stat {
            "mean" => &mut target.mean,
            "p50" => &mut target.p50,
            "p90" => &mut target.p90,
            "p95" => &mut target.p95,
            _ => &mut target.p99,
        };
        *slot = num(Some(v));
    }
    if !(p.ttft_ms.any() || p.tpot_ms.any() || p.itl_ms.any() || p.e2el_ms.any()) {
        return Err(format!(
            "test {name:?} has no latency column such as \"P99 TTFT (ms)\""
        ));
    }
    Ok(p)
}

// ---------------------------------------------------------------------------
// Benchmark runs (GuideLLM, GenAI-Perf, vLLM JSON Lines, single-run artifacts)

/// One analysed benchmark artifact offered as a point of a sweep.
pub struct Member<'a> {
    pub artifact_id: i64,
    pub name: &'a str,
    pub result: &'a BenchResult,
    /// The file already holds several runs (a sweep of its own).
    pub runs_in_file: usize,
}

/// Settings (key, label) that must be equal across the points of a sweep besides the
/// workload settings comparisons check: GPU and engine version are compared when the
/// files record them (vLLM `--metadata gpu=H100 engine_version=0.6.3`).
const SWEEP_EXTRA_SETTINGS: &[(&str, &str)] = &[
    ("model", "Model"),
    ("gpu", "GPU"),
    ("gpu_type", "GPU"),
    ("hardware", "GPU"),
    ("engine_version", "Engine version"),
    ("vllm_version", "Engine version"),
    ("endpoint", "Endpoint"),
];

/// Settings that are the load itself, or only how long a point ran: they may differ.
const LOAD_SETTINGS: &[&str] = &["request_rate", "max_concurrency", "num_prompts"];

/// A sweep from several single-load runs. Refused (one sentence per problem) unless
/// every run records the same model, GPU, engine and workload settings and they differ
/// only in request rate or concurrency, each at its own load.
pub fn from_members(members: &[Member]) -> Result<Vec<SweepPoint>, Vec<String>> {
    let mut problems = Vec::new();
    if members.len() < 2 {
        problems.push(
            "a sweep needs at least two runs at different loads; give two or more artifact ids"
                .to_string(),
        );
        return Err(problems);
    }
    for m in members.iter().filter(|m| m.runs_in_file > 1) {
        problems.push(format!(
            "artifact {} ({}) holds {} runs already; send it alone as `artifact`",
            m.artifact_id, m.name, m.runs_in_file
        ));
    }
    let keys: Vec<(&str, &str)> = settings::workload_settings()
        .chain(SWEEP_EXTRA_SETTINGS.iter().copied())
        .filter(|(k, _)| !LOAD_SETTINGS.contains(k))
        .collect();
    let named: Vec<(String, BTreeMap<String, String>)> = members
        .iter()
        .map(|m| {
            let settings = keys
                .iter()
                .filter_map(|(k, _)| {
                    let v = settings::setting_text(m.result.config.get(*k)?)?;
                    Some((k.to_string(), v))
                })
                .collect();
            (format!("artifact {} ({})", m.artifact_id, m.name), settings)
        })
        .collect();
    for d in settings::setting_differences(&named, &keys) {
        problems.push(format!(
            "the runs differ in {} ({}): a sweep may vary only the request rate or the concurrency",
            d.label, d.listed
        ));
    }
    let mut points: Vec<SweepPoint> = members
        .iter()
        .map(|m| {
            let mut p = point_of(m.result, m.name);
            p.artifact_id = Some(m.artifact_id);
            p
        })
        .collect();
    for (m, p) in members.iter().zip(&points) {
        if !load_known(p) {
            problems.push(format!(
                "artifact {} ({}) records no request rate or concurrency, so its load is unknown",
                m.artifact_id, m.name
            ));
        }
    }
    let rates: BTreeSet<u64> = points
        .iter()
        .filter_map(|p| p.offered_rate.map(f64::to_bits))
        .collect();
    let concs: BTreeSet<u64> = points
        .iter()
        .filter_map(|p| p.concurrency.map(f64::to_bits))
        .collect();
    let rate_varies = rates.len() > 1 || (points.iter().any(|p| p.unbounded) && !rates.is_empty());
    if rate_varies && concs.len() > 1 {
        problems.push(
            "both the request rate and the concurrency differ between the runs: a sweep varies one of them".into(),
        );
    }
    let mut seen: BTreeMap<(u8, u64), &str> = BTreeMap::new();
    for (m, p) in members.iter().zip(&points) {
        // The load a point is known by: its rate, else its concurrency.
        let key = if p.unbounded && p.concurrency.is_none() {
            (3, 0)
        } else if rate_varies || p.concurrency.is_none() {
            (2, p.offered_rate.unwrap_or(f64::INFINITY).to_bits())
        } else {
            (1, p.concurrency.unwrap_or_default().to_bits())
        };
        if let Some(first) = seen.insert(key, m.name) {
            problems.push(format!(
                "{first} and {} ran at the same load ({}): a sweep needs one run per load",
                m.name,
                p.load_text()
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if !rate_varies {
        // Concurrency set the load: the rate (often "inf") is not the variable.
        for p in &mut points {
            if p.concurrency.is_some() {
                p.offered_rate = None;
                p.unbounded = false;
            }
        }
    }
    order(&mut points);
    Ok(points)
}

// ---------------------------------------------------------------------------
// Knee and SLO

/// A latency statistic of a sweep: the metric and the percentile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyOf {
    pub metric: Metric,
    pub percentile: Percentile,
}

impl LatencyOf {
    /// "p99 TTFT".
    pub fn label(&self) -> String {
        format!("{} {}", self.percentile.slug(), self.metric.short_label())
    }

    /// The statistic at one point.
    pub fn value_of(&self, p: &SweepPoint) -> Option<f64> {
        p.latency(self.metric)?.at(self.percentile)
    }
}

/// The latency the knee is judged on when no SLO says otherwise: the first of p99
/// TTFT, p50 TTFT, p99 E2E, p50 E2E, p99 ITL, p99 TPOT that at least two points have.
pub fn default_latency(points: &[&SweepPoint]) -> Option<LatencyOf> {
    let candidates = [
        (Metric::Ttft, Percentile::P99),
        (Metric::Ttft, Percentile::P50),
        (Metric::E2e, Percentile::P99),
        (Metric::E2e, Percentile::P50),
        (Metric::Itl, Percentile::P99),
        (Metric::Tpot, Percentile::P99),
    ];
    candidates
        .into_iter()
        .map(|(metric, percentile)| LatencyOf { metric, percentile })
        .find(|l| points.iter().filter(|p| l.value_of(p).is_some()).count() >= 2)
}

/// Latency must grow more than this many times faster than throughput, in relative
/// terms, between two neighbouring points for the step to count as the knee.
pub const KNEE_ELASTICITY: f64 = 3.0;
/// Smaller latency rises are noise, whatever the throughput did.
pub const KNEE_MIN_RISE: f64 = 0.10;
/// Throughput gains below this fraction count as "throughput stopped growing".
pub const KNEE_FLAT_THROUGHPUT: f64 = 0.02;

/// Where latency turns up sharply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Index (in load order) of the last point before the turn: the knee.
    pub index: usize,
    pub label: String,
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    pub achieved_rps: f64,
    /// The next point, where latency has turned up.
    pub next_label: String,
    pub latency: LatencyOf,
    pub latency_ms: f64,
    pub next_latency_ms: f64,
    /// The rule's outcome as a sentence.
    pub sentence: String,
}

/// The knee rule: walk the points in load order; between neighbours a → b, with
/// x = achieved requests/s and y = the latency, take the relative rises
/// Δx/x_a and Δy/y_a. The knee is the first a where latency rose by more than
/// [`KNEE_MIN_RISE`] (10 %) while throughput rose by less than [`KNEE_FLAT_THROUGHPUT`]
/// (2 %), or where latency rose more than [`KNEE_ELASTICITY`] (3) times faster than
/// throughput. Points without both numbers are skipped. `None`: no such step.
pub fn knee(points: &[&SweepPoint], latency: LatencyOf) -> Option<Knee> {
    let usable: Vec<(usize, f64, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let x = p.achieved_rps.filter(|x| x.is_finite() && *x > 0.0)?;
            let y = latency.value_of(p).filter(|y| *y > 0.0)?;
            Some((i, x, y))
        })
        .collect();
    for w in usable.windows(2) {
        let ((ia, xa, ya), (ib, xb, yb)) = (w[0], w[1]);
        let dx = (xb - xa) / xa;
        let dy = (yb - ya) / ya;
        let sharp = dy > KNEE_MIN_RISE && (dx < KNEE_FLAT_THROUGHPUT || dy > KNEE_ELASTICITY * dx);
        if !sharp {
            continue;
        }
        let (a, b) = (points[ia], points[ib]);
        let sentence = format!(
            "Latency turns up sharply after {} ({} req/s achieved): from there to {} {} went {} → {} ms ({:+.0}%) for {:+.0}% throughput.",
            a.load_text(),
            short(xa),
            b.load_text(),
            latency.label(),
            short(ya),
            short(yb),
            dy * 100.0,
            dx * 100.0
        );
        return Some(Knee {
            index: ia,
            label: a.label.clone(),
            offered_rate: a.offered_rate,
            concurrency: a.concurrency,
            achieved_rps: xa,
            next_label: b.label.clone(),
            latency,
            latency_ms: ya,
            next_latency_ms: yb,
            sentence,
        });
    }
    None
}

/// A latency objective: `metric` at `percentile` at most `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: Metric,
    pub percentile: Percentile,
    /// Milliseconds. A point exactly at the limit meets it (SLOs say "at most").
    pub max_ms: f64,
}

impl Slo {
    pub fn latency(&self) -> LatencyOf {
        LatencyOf {
            metric: self.metric,
            percentile: self.percentile,
        }
    }

    /// "p99 TTFT ≤ 200 ms".
    pub fn label(&self) -> String {
        format!("{} ≤ {} ms", self.latency().label(), short(self.max_ms))
    }

    /// Reads an SLO as typed (form or JSON, the JSON adapter passing numbers as
    /// text). `fields` names the three inputs for error messages (metric,
    /// percentile, max). The limit takes a unit ("200 ms", "0.2 s"); bare numbers are ms.
    pub fn parse(
        metric: Option<&str>,
        percentile: Option<&str>,
        max: Option<&str>,
        fields: [&str; 3],
    ) -> Result<Slo, Vec<FieldError>> {
        let mut errors = Vec::new();
        let metric = match blank(metric) {
            None => {
                errors.push(FieldError::new(fields[0], "choose ttft, tpot, itl or e2e"));
                None
            }
            Some(raw) => {
                let m = if raw.eq_ignore_ascii_case("e2el") {
                    Some(Metric::E2e)
                } else {
                    Metric::from_slug(raw)
                };
                match m {
                    Some(m @ (Metric::Ttft | Metric::Tpot | Metric::Itl | Metric::E2e)) => Some(m),
                    _ => {
                        errors.push(FieldError::new(
                            fields[0],
                            format!("{raw:?} is not a latency a sweep measures: choose ttft, tpot, itl or e2e"),
                        ));
                        None
                    }
                }
            }
        };
        let percentile = match blank(percentile) {
            None => {
                errors.push(FieldError::new(fields[1], "choose p50, p90, p95 or p99"));
                None
            }
            Some(raw) => Percentile::parse(raw).or_else(|| {
                errors.push(FieldError::new(
                    fields[1],
                    format!("{raw:?} is not a percentile: choose p50, p90, p95 or p99"),
                ));
                None
            }),
        };
        let max_ms = match blank(max) {
            None => {
                errors.push(FieldError::new(
                    fields[2],
                    "give the latency limit, e.g. 200 ms",
                ));
                None
            }
            Some(raw) => match quantity::read(raw, Unit::Ms) {
                Ok(v) if v.is_finite() && v > 0.0 => Some(v),
                Ok(_) => {
                    errors.push(FieldError::new(
                        fields[2],
                        "the limit must be a positive time, e.g. 200 ms",
                    ));
                    None
                }
                Err(e) => {
                    errors.push(FieldError::new(fields[2], e.0));
                    None
                }
            },
        };
        match (metric, percentile, max_ms) {
            (Some(metric), Some(percentile), Some(max_ms)) if errors.is_empty() => Ok(Slo {
                metric,
                percentile,
                max_ms,
            }),
            _ => Err(errors),
        }
    }
}

fn blank(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// The point that carries the most throughput within the SLO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestPoint {
    pub index: usize,
    pub label: String,
    pub offered_rate: Option<f64>,
    pub concurrency: Option<f64>,
    pub unbounded: bool,
    pub achieved_rps: f64,
    pub output_tps: Option<f64>,
    /// The SLO latency at this point (ms).
    pub latency_ms: f64,
}

/// The answer to "how much load meets the SLO?".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloAnswer {
    pub slo: Slo,
    /// `None` when no point meets the SLO.
    pub best: Option<BestPoint>,
    /// The highest-load point meets the SLO: the true limit may be higher.
    pub meets_slo_at_last_point: bool,
    /// Points that meet the SLO, and points that lack the statistic.
    pub points_meeting: usize,
    pub points_without_value: Vec<String>,
    pub sentence: String,
}

/// The highest achieved throughput among the points whose SLO latency is at most the
/// limit (exactly at the limit meets it). `Err` when no point has the statistic at all,
/// naming what the sweep has instead.
pub fn slo_answer(points: &[&SweepPoint], slo: Slo) -> Result<SloAnswer, String> {
    let lat = slo.latency();
    let with_value: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, lat.value_of(p)?)))
        .collect();
    if with_value.is_empty() {
        let have: Vec<&str> = Percentile::ALL
            .into_iter()
            .filter(|pc| {
                points
                    .iter()
                    .any(|p| p.latency(slo.metric).and_then(|l| l.at(*pc)).is_some())
            })
            .map(Percentile::slug)
            .collect();
        return Err(if have.is_empty() {
            format!("the sweep has no {} at all", slo.metric.short_label())
        } else {
            format!(
                "the sweep has no {}; it has {} of {}",
                lat.label(),
                have.join(", "),
                slo.metric.short_label()
            )
        });
    }
    let meets = |v: f64| v <= slo.max_ms;
    let points_without_value: Vec<String> = points
        .iter()
        .filter(|p| lat.value_of(p).is_none())
        .map(|p| p.label.clone())
        .collect();
    let meeting: Vec<(usize, f64)> = with_value
        .iter()
        .copied()
        .filter(|(_, v)| meets(*v))
        .collect();
    let best = meeting
        .iter()
        .filter_map(|&(i, v)| {
            let x = points[i].achieved_rps.filter(|x| x.is_finite())?;
            Some((i, v, x))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(i, v, x)| {
            let p = points[i];
            BestPoint {
                index: i,
                label: p.label.clone(),
                offered_rate: p.offered_rate,
                concurrency: p.concurrency,
                unbounded: p.unbounded,
                achieved_rps: x,
                output_tps: p.output_tps,
                latency_ms: v,
            }
        });
    let last = points.len().saturating_sub(1);
    let meets_slo_at_last_point = points
        .last()
        .and_then(|p| lat.value_of(p))
        .is_some_and(meets);
    let sentence = match &best {
        None => format!(
            "No measured point meets {}: even the lightest load measured is over the limit. Measure lower loads.",
            slo.label()
        ),
        Some(b) => {
            let mut s = format!(
                "Highest throughput within {}: {} req/s achieved at {} ({} {} ms).",
                slo.label(),
                short(b.achieved_rps),
                points[b.index].load_text(),
                lat.label(),
                short(b.latency_ms)
            );
            if meets_slo_at_last_point && b.index == last {
                s.push_str(" That is the highest load measured: the true limit may be higher; measure beyond it.");
            } else if meets_slo_at_last_point {
                s.push_str(" The highest load measured also meets the SLO: the true limit may be higher.");
            }
            s
        }
    };
    Ok(SloAnswer {
        slo,
        points_meeting: meeting.len(),
        points_without_value,
        best,
        meets_slo_at_last_point,
        sentence,
    })
}

/// The before/after sentence of two sweeps: the SLO latency at a load both measured,
/// and the throughput at the SLO ("p99 TTFT at 6 req/s went 120 → 80 ms; max rate at
/// SLO 6.3 → 8.1 req/s").
pub fn before_after(before: &[&SweepPoint], after: &[&SweepPoint], slo: Slo) -> String {
    let lat = slo.latency();
    let mut parts = Vec::new();
    // The highest rate both sides measured, with the latency on both.
    let shared = before
        .iter()
        .rev()
        .filter_map(|b| {
            let r = b.offered_rate?;
            let a = after.iter().find(|a| a.offered_rate == Some(r))?;
            Some((r, lat.value_of(b)?, lat.value_of(a)?))
        })
        .next();
    if let Some((r, vb, va)) = shared {
        parts.push(format!(
            "{} at {} req/s went {} → {} ms",
            lat.label(),
            short(r),
            short(vb),
            short(va)
        ));
    }
    let cap = |pts: &[&SweepPoint]| -> String {
        match slo_answer(pts, slo).ok().and_then(|a| {
            let more = if a.meets_slo_at_last_point { "+" } else { "" };
            a.best.map(|b| format!("{}{more}", short(b.achieved_rps)))
        }) {
            Some(x) => x,
            None => "none".into(),
        }
    };
    parts.push(format!(
        "max rate at SLO ({}) {} → {} req/s",
        slo.label(),
        cap(before),
        cap(after)
    ));
    parts.join("; ")
}

/// Two sweeps of one server, before and after a change, answered against one SLO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityChange {
    pub before: SloAnswer,
    pub after: SloAnswer,
    pub knee_before: Option<Knee>,
    pub knee_after: Option<Knee>,
    /// After ÷ before of the throughput at the SLO, when both sides meet it somewhere.
    pub capacity_ratio: Option<f64>,
    /// [`before_after`]'s sentence.
    pub sentence: String,
}

/// The SLO capacity before and after (each side's knee judged on the SLO's latency).
/// `Err` names the side whose points lack the SLO's statistic.
pub fn capacity_change(
    before: &[&SweepPoint],
    after: &[&SweepPoint],
    slo: Slo,
) -> Result<CapacityChange, Vec<String>> {
    let b = slo_answer(before, slo).map_err(|e| format!("before: {e}"));
    let a = slo_answer(after, slo).map_err(|e| format!("after: {e}"));
    let (b, a) = match (b, a) {
        (Ok(b), Ok(a)) => (b, a),
        (b, a) => return Err([b.err(), a.err()].into_iter().flatten().collect()),
    };
    let capacity_ratio = match (&b.best, &a.best) {
        (Some(x), Some(y)) if x.achieved_rps > 0.0 => Some(y.achieved_rps / x.achieved_rps),
        _ => None,
    };
    Ok(CapacityChange {
        knee_before: knee(before, slo.latency()),
        knee_after: knee(after, slo.latency()),
        capacity_ratio,
        sentence: before_after(before, after, slo),
        before: b,
        after: a,
    })
}

/// A rate point with only p99 TTFT, for tests here and in `method::load_sweep`.
#[cfg(test)]
pub(crate) fn test_point(rate: f64, rps: f64, p99_ttft: f64) -> SweepPoint {
    SweepPoint {
        label: format!("qps_{rate}"),
        offered_rate: Some(rate),
        achieved_rps: Some(rps),
        ttft_ms: LatencyStats {
            p99: Some(p99_ttft),
            ..LatencyStats::default()
        },
        ..SweepPoint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;
    use serde_json::json;

    fn table_row(name: &str, tput: f64, p99_ttft: f64) -> Value {
        json!({
            "Test name": name, "GPU": "H100", "# of req.": 200,
            "Tput (req/s)": tput, "Output Tput (tok/s)": tput * 200.0,
            "Mean TTFT (ms)": p99_ttft / 2.0, "Median TTFT (ms)": p99_ttft / 2.5, "P99 TTFT (ms)": p99_ttft,
            "Mean TPOT (ms)": 20.0, "Median TPOT (ms)": 19.0, "P99 TPOT (ms)": 35.0,
            "Mean ITL (ms)": 18.0, "Median ITL (ms)": 17.0, "P99 ITL (ms)": 60.0
        })
    }

    fn read(doc: &Value) -> SweepAnalysis {
        analyze(doc.to_string().as_bytes()).unwrap()
    }

    fn refs(points: &[SweepPoint]) -> Vec<&SweepPoint> {
        points.iter().collect()
    }

    #[test]
    fn vllm_summary_table_rows_become_points_in_load_order() {
        let doc = json!([
            table_row("serving_llama8B_tp1_sharegpt_qps_inf", 9.1, 2400.0),
            table_row("serving_llama8B_tp1_sharegpt_qps_1", 0.99, 60.0),
            table_row("serving_llama8B_tp1_sharegpt_qps_16", 9.0, 1800.0),
            table_row("serving_llama8B_tp1_sharegpt_qps_4", 3.9, 80.0),
            table_row("serving_llama70B_tp4_sharegpt_qps_1", 0.98, 150.0),
            {"Test name": "latency_llama8B_tp1", "Mean latency (ms)": 1.0}
        ]);
        let a = read(&doc);
        assert_eq!(a.source, "vllm_summary_table");
        assert_eq!(a.series.len(), 2, "{:?}", a.series);
        let s8 = a
            .series
            .iter()
            .find(|s| s.contains("llama8B"))
            .unwrap()
            .clone();
        assert_eq!(s8, "serving_llama8B_tp1_sharegpt (H100)");
        let pts = series_points(&a.points, &s8);
        let loads: Vec<String> = pts.iter().map(|p| p.load_text()).collect();
        assert_eq!(loads, ["1 req/s", "4 req/s", "16 req/s", "unbounded rate"]);
        let inf = pts[3];
        assert!(inf.unbounded && inf.offered_rate.is_none());
        assert_eq!(pts[1].ttft_ms.p99, Some(80.0));
        assert_eq!(pts[1].ttft_ms.p50, Some(32.0));
        assert_eq!(pts[1].itl_ms.p99, Some(60.0));
        assert_eq!(pts[1].requests, Some(200));
        assert_eq!(pts[1].output_tps, Some(780.0));
        assert_eq!(pts[1].ttft_ms.p95, None);
        // The latency-test row has no load: skipped, and said so.
        assert!(
            a.notes.iter().any(|n| n.contains("latency_llama8B_tp1")),
            "{:?}",
            a.notes
        );
        // The JSON the API shows: offered_rate null for unbounded.
        let v = serde_json::to_value(inf).unwrap();
        assert!(v["offered_rate"].is_null());
        for k in ["achieved_rps", "output_tps", "ttft_ms", "tpot_ms", "itl_ms"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert!(v["ttft_ms"].get("p99").is_some());
    }

    #[test]
    fn pandas_column_form_and_wrapped_lists_are_read() {
        let cols = json!({
            "Test name": {"0": "serving_x_qps_2", "1": "serving_x_qps_8"},
            "Tput (req/s)": {"0": 2.0, "1": 7.5},
            "P99 TTFT (ms)": {"0": 50, "1": "90.5"}
        });
        let a = read(&cols);
        assert_eq!(a.points.len(), 2);
        assert_eq!(a.points[1].ttft_ms.p99, Some(90.5));
        let wrapped = json!({"serving": [table_row("serving_y_concurrency_8", 3.0, 70.0),
            table_row("serving_y_concurrency_32", 6.0, 90.0)]});
        let a = read(&wrapped);
        assert_eq!(a.points[1].concurrency, Some(32.0));
        assert!(!a.points[1].unbounded && a.points[1].offered_rate.is_none());
    }

    #[test]
    fn a_table_without_usable_rows_is_refused() {
        let e = analyze(&b"[{\"Test name\": \"serving_x\"}]"[..]).unwrap_err();
        assert!(e.to_string().contains("no usable row"), "{e}");
        let e = analyze(&b"{\"a\": 1}"[..]).unwrap_err();
        assert!(e.to_string().contains("Test name"), "{e}");
    }

    fn guidellm_doc() -> Value {
        let bench = |strategy: Value, rps: f64, ttft_p99: f64| {
            json!({
                "type_": "generative_benchmark",
                "config": {"strategy": strategy},
                "metrics": {
                    "request_totals": {"successful": 100, "errored": 0, "incomplete": 0},
                    "requests_per_second": {"successful": {"mean": rps}},
                    "output_tokens_per_second": {"successful": {"mean": rps * 128.0}},
                    "time_to_first_token_ms": {"successful": {"mean": ttft_p99 / 2.0, "median": ttft_p99 / 2.0,
                        "percentiles": {"p50": ttft_p99 / 2.0, "p90": ttft_p99 * 0.8, "p95": ttft_p99 * 0.9, "p99": ttft_p99}}},
                    "request_latency": {"successful": {"mean": 2.0, "median": 1.9, "percentiles": {"p99": 3.5}}}
                }
            })
        };
        json!({"benchmarks": [
            bench(json!({"type_": "synchronous"}), 0.8, 40.0),
            bench(json!({"type_": "throughput"}), 12.0, 3000.0),
            bench(json!({"type_": "constant", "rate": 3.0}), 3.0, 60.0),
            bench(json!({"type_": "constant", "rate": 6.0}), 5.9, 90.0),
            bench(json!({"type_": "constant", "rate": 9.0}), 8.2, 700.0),
        ]})
    }

    #[test]
    fn guidellm_sweep_runs_become_points() {
        let a = super::super::vllm_bench::analyze(guidellm_doc().to_string().as_bytes()).unwrap();
        let pts = points_from_runs(&a.runs);
        assert_eq!(pts.len(), 5);
        let loads: Vec<String> = pts.iter().map(|p| p.load_text()).collect();
        assert_eq!(
            loads,
            [
                "concurrency 1",
                "3 req/s",
                "6 req/s",
                "9 req/s",
                "unbounded rate"
            ]
        );
        assert_eq!(pts[2].ttft_ms.p99, Some(90.0));
        assert_eq!(pts[2].e2el_ms.p99, Some(3500.0));
        assert_eq!(pts[2].achieved_rps, Some(5.9));
        // The stored analysis carries them.
        assert_eq!(a.points.len(), 5);
    }

    #[test]
    fn genai_perf_runs_at_several_concurrencies() {
        let doc = |c: u64, rps: f64| {
            json!({
                "request_throughput": {"unit": "requests/sec", "avg": rps},
                "time_to_first_token": {"unit": "ms", "avg": 50.0 * c as f64, "p50": 45.0 * c as f64, "p99": 90.0 * c as f64},
                "inter_token_latency": {"unit": "ms", "avg": 12.0, "p99": 20.0},
                "output_token_throughput": {"unit": "tokens/sec", "avg": rps * 100.0},
                "input_config": {"model": ["llama"], "perf_analyzer": {"stimulus": {"concurrency": c}}}
            })
            .to_string()
        };
        let text = format!("{}\n{}\n{}\n", doc(4, 3.0), doc(1, 1.0), doc(16, 6.0));
        let a = super::super::vllm_bench::analyze(text.as_bytes()).unwrap();
        let pts = points_from_runs(&a.runs);
        let conc: Vec<Option<f64>> = pts.iter().map(|p| p.concurrency).collect();
        assert_eq!(conc, [Some(1.0), Some(4.0), Some(16.0)]);
        assert_eq!(pts[2].ttft_ms.p99, Some(1440.0));
        assert_eq!(pts[2].tpot_ms.p99, Some(20.0));
        // Repeats at one load are not a sweep.
        let same = format!("{}\n{}\n", doc(4, 3.0), doc(4, 3.1));
        let a = super::super::vllm_bench::analyze(same.as_bytes()).unwrap();
        assert!(points_from_runs(&a.runs).is_empty());
        assert!(a.points.is_empty());
    }

    use super::test_point as pt;

    fn ttft_p99(max_ms: f64) -> Slo {
        Slo {
            metric: Metric::Ttft,
            percentile: Percentile::P99,
            max_ms,
        }
    }

    fn sweep() -> Vec<SweepPoint> {
        vec![
            pt(2.0, 2.0, 100.0),
            pt(4.0, 3.9, 110.0),
            pt(6.0, 5.8, 120.0),
            pt(8.0, 6.3, 200.0),
            pt(10.0, 6.4, 900.0),
        ]
    }

    #[test]
    fn knee_is_the_last_point_before_latency_turns_up() {
        let s = sweep();
        let lat = default_latency(&refs(&s)).unwrap();
        assert_eq!(lat.label(), "p99 TTFT");
        let k = knee(&refs(&s), lat).unwrap();
        // 6 → 8 req/s: +67% latency for +9% throughput (elasticity 7 > 3).
        assert_eq!(k.index, 2);
        assert_eq!(k.offered_rate, Some(6.0));
        assert_eq!(k.next_label, "qps_8");
        assert!(k.sentence.contains("after 6 req/s"), "{}", k.sentence);
        // A straight line has no knee.
        let flat = vec![
            pt(1.0, 1.0, 100.0),
            pt(2.0, 2.0, 104.0),
            pt(4.0, 4.0, 110.0),
        ];
        assert!(knee(&refs(&flat), lat).is_none());
        // Throughput flat, latency +10.5%: a knee; +9.5%: noise.
        let sat = vec![pt(1.0, 5.0, 100.0), pt(2.0, 5.05, 110.5)];
        assert_eq!(knee(&refs(&sat), lat).map(|k| k.index), Some(0));
        let noise = vec![pt(1.0, 5.0, 100.0), pt(2.0, 5.05, 109.5)];
        assert!(knee(&refs(&noise), lat).is_none());
    }

    #[test]
    fn slo_exactly_at_the_limit_meets_it() {
        let s = sweep();
        let at = slo_answer(&refs(&s), ttft_p99(200.0)).unwrap();
        let best = at.best.unwrap();
        assert_eq!(best.offered_rate, Some(8.0));
        assert_eq!(best.achieved_rps, 6.3);
        assert_eq!(at.points_meeting, 4);
        assert!(!at.meets_slo_at_last_point);
        // Just under the limit at 8 req/s: the best falls back to 6 req/s.
        let under = slo_answer(&refs(&s), ttft_p99(199.99)).unwrap();
        assert_eq!(under.best.unwrap().offered_rate, Some(6.0));
    }

    #[test]
    fn slo_met_nowhere_or_at_the_last_point() {
        let s = sweep();
        let none = slo_answer(&refs(&s), ttft_p99(99.0)).unwrap();
        assert!(none.best.is_none());
        assert!(!none.meets_slo_at_last_point);
        assert!(
            none.sentence.contains("No measured point"),
            "{}",
            none.sentence
        );
        let first_only = slo_answer(&refs(&s), ttft_p99(100.0)).unwrap();
        assert_eq!(first_only.best.unwrap().index, 0);
        let all = slo_answer(&refs(&s), ttft_p99(900.0)).unwrap();
        assert!(all.meets_slo_at_last_point);
        assert_eq!(all.best.as_ref().unwrap().index, 4);
        assert!(
            all.sentence.contains("true limit may be higher"),
            "{}",
            all.sentence
        );
    }

    #[test]
    fn slo_on_a_missing_statistic_names_what_exists() {
        let s = sweep();
        let slo = Slo {
            percentile: Percentile::P95,
            ..ttft_p99(100.0)
        };
        let e = slo_answer(&refs(&s), slo).unwrap_err();
        assert!(e.contains("no p95 TTFT") && e.contains("p99"), "{e}");
        let e = slo_answer(
            &refs(&s),
            Slo {
                metric: Metric::E2e,
                ..ttft_p99(100.0)
            },
        )
        .unwrap_err();
        assert!(e.contains("no E2E latency"), "{e}");
    }

    #[test]
    fn slo_parsing_reads_units_and_names_fields() {
        let f = ["m", "p", "x"];
        let s = Slo::parse(Some("ttft"), Some("p99"), Some("0.2 s"), f).unwrap();
        assert_eq!(s.max_ms, 200.0);
        assert_eq!(s.label(), "p99 TTFT ≤ 200 ms");
        let s = Slo::parse(Some("e2el"), Some("95"), Some("1500"), f).unwrap();
        assert_eq!((s.metric, s.percentile), (Metric::E2e, Percentile::P95));
        let e = Slo::parse(Some("throughput"), Some("p42"), Some("5 tok/s"), f).unwrap_err();
        assert_eq!(
            e.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(),
            ["m", "p", "x"]
        );
        assert!(e[2].message.contains("tok/s"), "{}", e[2].message);
        let e = Slo::parse(None, None, Some("-3"), f).unwrap_err();
        assert_eq!(e.len(), 3);
    }

    fn bench(model: &str, rate: Value, conc: Value, rps: f64, p99: f64) -> BenchResult {
        let mut config = Map::new();
        config.insert("model_id".into(), json!(model));
        config.insert("backend".into(), json!("vllm"));
        config.insert("request_rate".into(), rate);
        config.insert("max_concurrency".into(), conc);
        config.insert("num_prompts".into(), json!(200));
        BenchResult {
            source: "vllm".into(),
            request_throughput: Some(rps),
            ttft_ms: Summary {
                p99: Some(p99),
                ..Summary::default()
            },
            config,
            ..BenchResult::default()
        }
    }

    fn member<'a>(id: i64, name: &'a str, r: &'a BenchResult) -> Member<'a> {
        Member {
            artifact_id: id,
            name,
            result: r,
            runs_in_file: 1,
        }
    }

    #[test]
    fn a_sweep_from_runs_at_different_rates() {
        let a = bench("m", json!(8), Value::Null, 7.0, 300.0);
        let b = bench("m", json!(2), Value::Null, 2.0, 100.0);
        let c = bench("m", json!("inf"), Value::Null, 9.0, 2000.0);
        let pts = from_members(&[
            member(1, "a.json", &a),
            member(2, "b.json", &b),
            member(3, "c.json", &c),
        ])
        .unwrap();
        let ids: Vec<Option<i64>> = pts.iter().map(|p| p.artifact_id).collect();
        assert_eq!(ids, [Some(2), Some(1), Some(3)]);
        assert!(pts[2].unbounded);
    }

    #[test]
    fn a_sweep_over_concurrency_ignores_the_infinite_rate() {
        let a = bench("m", json!("inf"), json!(4), 3.0, 100.0);
        let b = bench("m", json!("inf"), json!(16), 6.0, 300.0);
        let pts = from_members(&[member(1, "a", &a), member(2, "b", &b)]).unwrap();
        assert_eq!(pts[1].concurrency, Some(16.0));
        assert!(!pts[1].unbounded && pts[1].offered_rate.is_none());
        assert_eq!(pts[1].load_text(), "concurrency 16");
    }

    #[test]
    fn a_sweep_is_refused_naming_the_difference() {
        let a = bench("llama-8b", json!(2), Value::Null, 2.0, 100.0);
        let b = bench("llama-70b", json!(4), Value::Null, 3.9, 150.0);
        let e = from_members(&[member(1, "a.json", &a), member(2, "b.json", &b)]).unwrap_err();
        assert!(
            e.iter().any(|m| m.contains("Model")
                && m.contains("llama-8b in artifact 1 (a.json)")
                && m.contains("llama-70b in artifact 2 (b.json)")),
            "{e:?}"
        );
        let c = bench("llama-8b", json!(2), Value::Null, 2.1, 101.0);
        let e = from_members(&[member(1, "a.json", &a), member(3, "c.json", &c)]).unwrap_err();
        assert!(e.iter().any(|m| m.contains("same load")), "{e:?}");
        let e = from_members(&[member(1, "a.json", &a)]).unwrap_err();
        assert!(e[0].contains("at least two"), "{e:?}");
        let d = bench("llama-8b", json!(4), json!(8), 3.0, 120.0);
        let f = bench("llama-8b", json!(8), json!(32), 6.0, 180.0);
        let e = from_members(&[
            member(1, "a.json", &a),
            member(4, "d", &d),
            member(5, "f", &f),
        ])
        .unwrap_err();
        assert!(
            e.iter()
                .any(|m| m.contains("both the request rate and the concurrency")),
            "{e:?}"
        );
    }

    #[test]
    fn capacity_change_before_and_after() {
        let before = sweep();
        let after = vec![pt(2.0, 2.0, 70.0), pt(6.0, 5.9, 80.0), pt(10.0, 8.1, 150.0)];
        let c = capacity_change(&refs(&before), &refs(&after), ttft_p99(200.0)).unwrap();
        assert_eq!(c.before.best.as_ref().unwrap().achieved_rps, 6.3);
        assert!(c.after.meets_slo_at_last_point);
        assert!((c.capacity_ratio.unwrap() - 8.1 / 6.3).abs() < 1e-12);
        assert_eq!(c.knee_before.unwrap().offered_rate, Some(6.0));
        assert!(c.sentence.contains("6.3 → 8.1+ req/s"), "{}", c.sentence);
        let p95 = Slo {
            percentile: Percentile::P95,
            ..ttft_p99(200.0)
        };
        let e = capacity_change(&refs(&before), &refs(&after), p95).unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(
            e[0].starts_with("before: ") && e[1].starts_with("after: "),
            "{e:?}"
        );
    }

    /// The real vLLM result (Llama-3.3-70B, 4 req/s) with a copy at 8 req/s: a sweep of
    /// two points; the copy with another model is refused naming it.
    #[test]
    fn real_vllm_runs_make_a_sweep_and_another_model_is_refused() {
        use super::super::test_support::{open, real_fixtures};
        let Some(root) = real_fixtures() else { return };
        let rel = "vllm_bench/llmk8s__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_04.json";
        let real = super::super::vllm_bench::analyze(open(&root, rel))
            .unwrap()
            .result;
        let mut faster = real.clone();
        faster.config.insert("request_rate".into(), json!(8.0));
        let pts = from_members(&[
            member(1, "qps_04.json", &real),
            member(2, "qps_08.json", &faster),
        ])
        .unwrap();
        assert_eq!(pts[0].offered_rate, Some(4.0));
        assert_eq!(pts[1].offered_rate, Some(8.0));
        assert_eq!(pts[0].ttft_ms.p99, real.ttft_ms.p99);
        assert_eq!(pts[0].achieved_rps, real.request_throughput);
        let mut other = faster.clone();
        other
            .config
            .insert("model_id".into(), json!("meta-llama/Llama-3.1-8B-Instruct"));
        let e = from_members(&[
            member(1, "qps_04.json", &real),
            member(3, "other.json", &other),
        ])
        .unwrap_err();
        assert!(
            e.iter().any(|m| m.contains("Model")
                && m.contains("meta-llama/Llama-3.3-70B-Instruct in artifact 1 (qps_04.json)")),
            "{e:?}"
        );
    }

    #[test]
    fn before_after_sentence() {
        let before = sweep();
        let after = vec![
            pt(2.0, 2.0, 70.0),
            pt(6.0, 5.9, 80.0),
            pt(8.0, 7.9, 120.0),
            pt(10.0, 8.1, 190.0),
        ];
        let s = before_after(&refs(&before), &refs(&after), ttft_p99(200.0));
        assert_eq!(
            s,
            "p99 TTFT at 10 req/s went 900 → 190 ms; max rate at SLO (p99 TTFT ≤ 200 ms) 6.3 → 8.1+ req/s"
        );
    }
}
