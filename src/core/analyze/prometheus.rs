//! Prometheus text exposition (format 0.0.4, and OpenMetrics' superset as far
//! as samples go) from a serving engine's `/metrics`: vLLM (`vllm:`), SGLang
//! (`sglang:`) and TGI (`tgi_`).
//!
//! One scrape gives cumulative histograms since the server started; two
//! scrapes of the same server give a window ([`window`]): counter and bucket
//! deltas, with resets (a value going down: the server restarted) handled by
//! using the second scrape alone. Quantiles are estimated from buckets the way
//! PromQL's `histogram_quantile` does: linear interpolation inside the bucket
//! holding the rank, the first bucket starting at 0, and the highest finite
//! bound when the rank falls in the `+Inf` bucket.
//!
//! A *capture* file holds several scrapes of one server, each opened by a marker
//! comment line `# perfjournal-capture ts=<RFC 3339 time> url=<scraped URL>` (see
//! [`capture_marker`]); the app and the CLI write it when they scrape a live
//! server. Its analysis is the window from the first to the last scrape, plus a
//! time series of the gauges and counter rates at every scrape ([`CaptureSummary`]).
//! A file without markers is one scrape, as before.

use super::readers::{read_line_bounded, Line};
use super::AnalyzeError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, Read};

/// Bump when the JSON output of [`analyze`] / [`window`] changes.
pub const ANALYZER_VERSION: u32 = 2;

/// A scrape with more samples than this is refused (a `/metrics` page has
/// thousands; millions means something else was uploaded).
pub const MAX_SAMPLES: usize = 500_000;
/// Model names and finish reasons kept in the analysis (label values a scrape may
/// repeat without end).
const MAX_LABEL_VALUES: usize = 64;

const MAX_LINE: usize = 1 << 20;

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// The exposition format's optional timestamp (ms since the Unix epoch).
    pub timestamp_ms: Option<f64>,
}

impl Sample {
    /// Value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parse a Prometheus value: a float, `+Inf`, `-Inf` or `NaN`.
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => s.parse::<f64>().ok(),
    }
}

/// Parse one sample line (not a comment). `None` when it isn't one.
pub fn parse_sample_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    let mut chars = line.char_indices();
    let (_, first) = chars.next()?;
    if !is_name_start(first) {
        return None;
    }
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(body)?;
        labels = parsed;
        rest = after;
    }
    // Value must be separated by whitespace; an optional timestamp and an
    // OpenMetrics exemplar (`# {…} v`) may follow.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next()?)?;
    let mut timestamp_ms = None;
    match fields.next() {
        None => {}
        Some("#") => {}
        Some(ts) => {
            timestamp_ms = Some(ts.parse::<f64>().ok()?).filter(|t| t.is_finite());
            if let Some(next) = fields.next() {
                if next != "#" {
                    return None;
                }
            }
        }
    }
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp_ms,
    })
}

/// Parse `k="v",k2="v2"}` (after the `{`), returning the labels and the rest.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let key_end = s.find(|c: char| !is_name_char(c))?;
        let key = &s[..key_end];
        if key.is_empty() {
            return None;
        }
        s = s[key_end..].trim_start().strip_prefix('=')?.trim_start();
        s = s.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => {
                    let (_, e) = chars.next()?;
                    value.push(match e {
                        'n' => '\n',
                        other => other,
                    });
                }
                c => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = s[end + 1..].trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// One parsed scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub samples: Vec<Sample>,
    /// Family name → declared `# TYPE`.
    pub types: HashMap<String, String>,
}

/// Builds one [`Snapshot`] from its lines.
#[derive(Default)]
struct SnapshotBuilder {
    snap: Snapshot,
}

impl SnapshotBuilder {
    /// Takes one trimmed, non-empty line that is not a capture marker.
    fn line(&mut self, line: &str, line_no: u64) -> Result<(), AnalyzeError> {
        if let Some(c) = line.strip_prefix('#') {
            let mut parts = c.split_whitespace();
            if parts.next() == Some("TYPE") {
                if let (Some(name), Some(kind)) = (parts.next(), parts.next()) {
                    self.snap.types.insert(name.to_string(), kind.to_string());
                }
            }
            return Ok(());
        }
        match parse_sample_line(line) {
            Some(s) => {
                if self.snap.samples.len() >= MAX_SAMPLES {
                    return Err(AnalyzeError::at_line(
                        line_no,
                        format!("more than {MAX_SAMPLES} samples; this is not one /metrics scrape"),
                    ));
                }
                self.snap.samples.push(s);
                Ok(())
            }
            None => {
                let shown: String = line.chars().take(120).collect();
                Err(AnalyzeError::at_line(
                    line_no,
                    format!("not a Prometheus sample line: {shown}"),
                ))
            }
        }
    }
}

/// Calls `each` with every trimmed, non-empty line and its 1-based number.
fn for_each_line<R: Read>(
    reader: R,
    mut each: impl FnMut(&str, u64) -> Result<(), AnalyzeError>,
) -> Result<(), AnalyzeError> {
    let mut r = BufReader::with_capacity(64 << 10, reader);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        match read_line_bounded(&mut r, &mut buf, MAX_LINE)? {
            Line::Eof => return Ok(()),
            Line::TooLong => {
                return Err(AnalyzeError::at_line(line_no + 1, "line longer than 1 MiB"))
            }
            Line::Got => {}
        }
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim();
        if !line.is_empty() {
            each(line, line_no)?;
        }
    }
}

/// Parse a scrape. Malformed sample lines are errors naming the line.
pub fn parse_snapshot<R: Read>(reader: R) -> Result<Snapshot, AnalyzeError> {
    let mut b = SnapshotBuilder::default();
    for_each_line(reader, |line, n| b.line(line, n))?;
    if b.snap.samples.is_empty() {
        return Err(AnalyzeError::malformed("no Prometheus samples found"));
    }
    Ok(b.snap)
}

/// Quantiles estimated from histogram buckets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistQuantiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    /// Observations (the `+Inf` bucket).
    pub count: f64,
    /// `_sum / _count`.
    pub mean: Option<f64>,
    /// Quantiles that fell in the `+Inf` bucket and so are only lower
    /// bounds (the largest finite bucket bound), e.g. `["p99"]`.
    pub lower_bounds: Vec<String>,
    /// The metric family it came from.
    pub metric: String,
    /// The histogram bucket each quantile fell in (`"p95"` → its bounds, in the
    /// histogram's unit): the resolution of the estimate.
    #[serde(default)]
    pub buckets: BTreeMap<String, Bucket>,
}

/// One histogram bucket's bounds; `hi` is `None` for the `+Inf` bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo: f64,
    pub hi: Option<f64>,
}

/// The bucket of `bounds` (upper bounds, ascending, the last `+Inf`) that holds `v`.
fn bucket_of(v: f64, bounds: &[f64]) -> Bucket {
    let at = bounds.iter().position(|&b| v <= b).unwrap_or(bounds.len());
    let lo = if at == 0 { 0.0 } else { bounds[at - 1] };
    let hi = bounds.get(at).copied().filter(|b| b.is_finite());
    // A value on a bound sits at the top of its bucket.
    Bucket { lo: lo.min(v), hi }
}

/// Gauges as sampled (the second scrape of a window).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gauges {
    /// Requests being processed (summed over engines/models).
    pub running: Option<f64>,
    /// Requests waiting in the queue.
    pub waiting: Option<f64>,
    /// KV-cache usage, 0–1 (mean over engines/models).
    pub kv_usage: Option<f64>,
}

/// Result for one scrape or a window of two.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrometheusAnalysis {
    /// `vllm`, `sglang`, `tgi` or `unknown` (by metric-name prefix).
    pub engine: String,
    /// True for [`window`] results (deltas between two scrapes); false for a
    /// single scrape (cumulative since the server started).
    pub window: bool,
    /// Canonical latency histograms (`ttft_s`, `itl_s`, `tpot_s`, `queue_s`,
    /// `prefill_s`, `decode_s`, `inference_s`, `e2e_s`, `forward_prefill_s`,
    /// `forward_decode_s`) and size histograms (`prompt_tokens`,
    /// `output_tokens`, `iteration_tokens`).
    pub quantiles: BTreeMap<String, HistQuantiles>,
    pub gauges: Gauges,
    /// Preempted requests (counter; delta in a window).
    pub preemptions: Option<f64>,
    /// Prefix-cache hits / queries (from counters when present, else the
    /// engine's own hit-rate gauge).
    pub prefix_cache_hit_rate: Option<f64>,
    /// Other counters: `prompt_tokens`, `generation_tokens`, `requests_success`,
    /// `prefix_cache_queries`, `prefix_cache_hits` (deltas in a window).
    pub counters: BTreeMap<String, f64>,
    /// Finished requests by `finished_reason` (vLLM: stop, length, abort).
    pub finished_reasons: BTreeMap<String, f64>,
    /// Distinct `model_name` labels seen.
    pub models: Vec<String>,
    pub samples: u64,
    pub notes: Vec<String>,
    /// For a capture file: when and where it was scraped, and the time series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureSummary>,
    /// Requests waiting over time, `[Unix epoch ms, waiting]` (summed over label sets),
    /// from timestamped samples of the waiting gauge (at most [`MAX_SERIES_POINTS`]).
    #[serde(default)]
    pub waiting_series: Vec<[f64; 2]>,
}

/// Timestamps kept in [`PrometheusAnalysis::waiting_series`].
pub const MAX_SERIES_POINTS: usize = 100_000;

/// The waiting gauge's timestamped samples, summed per timestamp, in time order.
fn waiting_series(s: &Snapshot) -> Vec<[f64; 2]> {
    let Some(name) = WAITING.iter().find(|n| {
        s.samples
            .iter()
            .any(|x| x.name == **n && x.timestamp_ms.is_some())
    }) else {
        return Vec::new();
    };
    let mut by_time: BTreeMap<i64, f64> = BTreeMap::new();
    for x in &s.samples {
        if let (true, Some(t)) = (x.name == *name, x.timestamp_ms) {
            if x.value.is_finite() {
                *by_time.entry(t.round() as i64).or_insert(0.0) += x.value;
            }
        }
    }
    by_time
        .into_iter()
        .take(MAX_SERIES_POINTS)
        .map(|(t, v)| [t as f64, v])
        .collect()
}

/// What a capture file adds to the window: its scrapes over time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureSummary {
    /// The scraped URL (from the first marker).
    pub url: Option<String>,
    /// First and last scrape, RFC 3339 as recorded.
    pub started: String,
    pub ended: String,
    /// Seconds from the first to the last scrape.
    pub seconds: f64,
    pub snapshots: u64,
    /// One point per scrape, in file order.
    pub series: Vec<SeriesPoint>,
}

/// One scrape of a capture: gauges as sampled, counters as per-second rates since
/// the scrape before (absent for the first scrape and after a reset).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub at: String,
    /// Seconds since the first scrape.
    pub offset_s: f64,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
    /// Counter key (as in [`PrometheusAnalysis::counters`], plus `preemptions`) →
    /// increase per second since the previous scrape.
    pub rates: BTreeMap<String, f64>,
}

/// Canonical histogram key → candidate families (first present wins) and an
/// optional label filter.
/// A label that must match (`name`, `value`).
type LabelFilter = Option<(&'static str, &'static str)>;

const HISTOGRAMS: &[(&str, &[&str], LabelFilter)] = &[
    (
        "ttft_s",
        &[
            "vllm:time_to_first_token_seconds",
            "sglang:time_to_first_token_seconds",
        ],
        None,
    ),
    (
        "itl_s",
        &[
            "vllm:inter_token_latency_seconds",
            // vLLM's older name for the same per-token gaps.
            "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds",
            // SGLang observes this once per output token (an ITL, not a per-request TPOT).
            "sglang:time_per_output_token_seconds",
        ],
        None,
    ),
    (
        "tpot_s",
        &[
            "vllm:request_time_per_output_token_seconds",
            "tgi_request_mean_time_per_token_duration",
        ],
        None,
    ),
    (
        "queue_s",
        &[
            "vllm:request_queue_time_seconds",
            "sglang:queue_time_seconds",
            "tgi_request_queue_duration",
        ],
        None,
    ),
    ("prefill_s", &["vllm:request_prefill_time_seconds"], None),
    ("decode_s", &["vllm:request_decode_time_seconds"], None),
    (
        "inference_s",
        &[
            "vllm:request_inference_time_seconds",
            "tgi_request_inference_duration",
        ],
        None,
    ),
    (
        "e2e_s",
        &[
            "vllm:e2e_request_latency_seconds",
            "sglang:e2e_request_latency_seconds",
            "tgi_request_duration",
        ],
        None,
    ),
    (
        "forward_prefill_s",
        &["tgi_batch_forward_duration"],
        Some(("method", "prefill")),
    ),
    (
        "forward_decode_s",
        &["tgi_batch_forward_duration"],
        Some(("method", "decode")),
    ),
    (
        "prompt_tokens",
        &[
            "vllm:request_prompt_tokens",
            "tgi_request_input_length",
            "sglang:prompt_tokens_histogram",
        ],
        None,
    ),
    (
        "output_tokens",
        &[
            "vllm:request_generation_tokens",
            "tgi_request_generated_tokens",
            "sglang:generation_tokens_histogram",
        ],
        None,
    ),
    ("iteration_tokens", &["vllm:iteration_tokens_total"], None),
];

const RUNNING: &[&str] = &[
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "tgi_batch_current_size",
];
const WAITING: &[&str] = &[
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
];
const KV_USAGE: &[&str] = &[
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
];
const HIT_RATE_GAUGES: &[&str] = &["vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"];

/// Counter key → candidate sample names (with `_total`, as exposed).
const COUNTERS: &[(&str, &[&str])] = &[
    (
        "preemptions",
        &["vllm:num_preemptions_total", "vllm:num_preemptions"],
    ),
    (
        "prompt_tokens",
        &[
            "vllm:prompt_tokens_total",
            "sglang:prompt_tokens_total",
            "tgi_request_input_count",
        ],
    ),
    (
        "generation_tokens",
        &[
            "vllm:generation_tokens_total",
            "sglang:generation_tokens_total",
        ],
    ),
    (
        "requests_success",
        &[
            "vllm:request_success_total",
            "sglang:num_requests_total",
            "tgi_request_success",
        ],
    ),
    (
        "prefix_cache_queries",
        &[
            "vllm:prefix_cache_queries_total",
            "vllm:gpu_prefix_cache_queries_total",
        ],
    ),
    (
        "prefix_cache_hits",
        &[
            "vllm:prefix_cache_hits_total",
            "vllm:gpu_prefix_cache_hits_total",
        ],
    ),
];

/// A sample's labels, in exposition order.
type Labels = Vec<(String, String)>;

/// One histogram series (labels without `le`).
#[derive(Clone, Debug)]
struct HistSeries {
    labels: Vec<(String, String)>,
    /// (upper bound, cumulative count), sorted by bound.
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

/// A scrape organized by family: histograms, and everything else as scalars.
#[derive(Default)]
struct Model {
    hists: HashMap<String, Vec<HistSeries>>,
    scalars: HashMap<String, Vec<(Labels, f64)>>,
}

fn labels_key(labels: &[(String, String)]) -> String {
    let mut v: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    v.sort();
    v.join(",")
}

fn build_model(s: &Snapshot) -> Model {
    let bucket_families: std::collections::HashSet<&str> = s
        .samples
        .iter()
        .filter(|x| x.label("le").is_some())
        .filter_map(|x| x.name.strip_suffix("_bucket"))
        .collect();
    let mut m = Model::default();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for x in &s.samples {
        let (family, part) = if let Some(f) = x
            .name
            .strip_suffix("_bucket")
            .filter(|f| bucket_families.contains(f))
        {
            (f, "bucket")
        } else if let Some(f) = x
            .name
            .strip_suffix("_sum")
            .filter(|f| bucket_families.contains(f))
        {
            (f, "sum")
        } else if let Some(f) = x
            .name
            .strip_suffix("_count")
            .filter(|f| bucket_families.contains(f))
        {
            (f, "count")
        } else {
            m.scalars
                .entry(x.name.clone())
                .or_default()
                .push((x.labels.clone(), x.value));
            continue;
        };
        let labels: Vec<(String, String)> = x
            .labels
            .iter()
            .filter(|(k, _)| k != "le")
            .cloned()
            .collect();
        let key = (family.to_string(), labels_key(&labels));
        let series = m.hists.entry(family.to_string()).or_default();
        let i = *index.entry(key).or_insert_with(|| {
            series.push(HistSeries {
                labels,
                buckets: Vec::new(),
                sum: 0.0,
                count: 0.0,
            });
            series.len() - 1
        });
        let h = &mut series[i];
        match part {
            "bucket" => {
                if let Some(le) = x.label("le").and_then(parse_value) {
                    h.buckets.push((le, x.value));
                }
            }
            "sum" => h.sum = x.value,
            _ => h.count = x.value,
        }
    }
    for series in m.hists.values_mut() {
        for h in series {
            h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            if h.count == 0.0 {
                h.count = h.buckets.last().map_or(0.0, |b| b.1);
            }
        }
    }
    m
}

/// Estimate quantile `q` from cumulative buckets the way PromQL's
/// `histogram_quantile` does. Returns the value and whether it fell in the
/// `+Inf` bucket (then it is the largest finite bound, a lower bound).
pub fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<(f64, bool)> {
    if buckets.len() < 2 || buckets.last()?.0 != f64::INFINITY {
        return None;
    }
    // Buckets must be cumulative; repair small non-monotonicities as PromQL does.
    let mut cum: Vec<f64> = Vec::with_capacity(buckets.len());
    for (i, b) in buckets.iter().enumerate() {
        let v = if i == 0 { b.1 } else { b.1.max(cum[i - 1]) };
        cum.push(v);
    }
    let total = *cum.last()?;
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let rank = q * total;
    let last = buckets.len() - 1;
    let b = (0..last).find(|&i| cum[i] >= rank).unwrap_or(last);
    if b == last {
        return Some((buckets[last - 1].0, true));
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return Some((buckets[0].0, false));
    }
    let (start, below) = if b == 0 {
        (0.0, 0.0)
    } else {
        (buckets[b - 1].0, cum[b - 1])
    };
    let end = buckets[b].0;
    let in_bucket = cum[b] - below;
    if in_bucket <= 0.0 {
        return Some((end, false));
    }
    Some((start + (end - start) * ((rank - below) / in_bucket), false))
}

/// Merge series of one family (summing bucket counts by bound).
fn merge_series<'a>(series: impl Iterator<Item = &'a HistSeries>) -> Option<HistSeries> {
    let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let mut sum = 0.0;
    let mut count = 0.0;
    let mut any = false;
    for h in series {
        any = true;
        sum += h.sum;
        count += h.count;
        for &(le, c) in &h.buckets {
            // Order-preserving key for floats that are never NaN here.
            let key = if le.is_sign_negative() {
                !le.to_bits()
            } else {
                le.to_bits() | (1 << 63)
            };
            by_le.entry(key).or_insert((le, 0.0)).1 += c;
        }
    }
    any.then(|| HistSeries {
        labels: Vec::new(),
        buckets: by_le.into_values().collect(),
        sum,
        count,
    })
}

fn quantiles_of(h: &HistSeries, metric: &str) -> Option<HistQuantiles> {
    let mut out = HistQuantiles {
        count: h.buckets.last().map_or(h.count, |b| b.1),
        mean: (h.count > 0.0).then(|| h.sum / h.count),
        metric: metric.to_string(),
        ..HistQuantiles::default()
    };
    if out.count <= 0.0 {
        return None;
    }
    for (name, q, slot) in [
        ("p50", 0.50, &mut out.p50),
        ("p90", 0.90, &mut out.p90),
        ("p95", 0.95, &mut out.p95),
        ("p99", 0.99, &mut out.p99),
    ] {
        if let Some((v, lower)) = bucket_quantile(q, &h.buckets) {
            *slot = Some(v);
            let bounds: Vec<f64> = h.buckets.iter().map(|b| b.0).collect();
            let bucket = if lower {
                out.lower_bounds.push(name.to_string());
                Bucket { lo: v, hi: None }
            } else {
                bucket_of(v, &bounds)
            };
            out.buckets.insert(name.to_string(), bucket);
        }
    }
    Some(out)
}

fn scalar_sum(m: &Model, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let v = m.scalars.get(*n)?;
        Some(v.iter().map(|(_, x)| *x).filter(|x| x.is_finite()).sum())
    })
}

fn scalar_mean(m: &Model, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let v: Vec<f64> = m
            .scalars
            .get(*n)?
            .iter()
            .map(|(_, x)| *x)
            .filter(|x| x.is_finite())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    })
}

fn detect_engine(s: &Snapshot) -> &'static str {
    let mut counts = [0usize; 3];
    for x in &s.samples {
        if x.name.starts_with("vllm:") {
            counts[0] += 1;
        } else if x.name.starts_with("sglang:") {
            counts[1] += 1;
        } else if x.name.starts_with("tgi_") {
            counts[2] += 1;
        }
    }
    let names = ["vllm", "sglang", "tgi"];
    match counts.iter().enumerate().max_by_key(|(_, c)| **c) {
        Some((i, c)) if *c > 0 => names[i],
        _ => "unknown",
    }
}

fn summarize(
    m: &Model,
    gauges_from: &Model,
    engine: &str,
    window: bool,
    samples: u64,
    mut notes: Vec<String>,
) -> PrometheusAnalysis {
    let mut quantiles = BTreeMap::new();
    for (key, families, filter) in HISTOGRAMS {
        for fam in *families {
            let Some(series) = m.hists.get(*fam) else {
                continue;
            };
            let chosen = series.iter().filter(|h| match filter {
                Some((k, v)) => h.labels.iter().any(|(a, b)| a == k && b == v),
                None => true,
            });
            if let Some(merged) = merge_series(chosen) {
                if let Some(q) = quantiles_of(&merged, fam) {
                    if !q.lower_bounds.is_empty() {
                        let bound = merged.buckets.iter().rev().nth(1).map_or(0.0, |b| b.0);
                        notes.push(format!(
                            "{key}: {} above the largest finite bucket ({bound}); reported as that bound, a lower bound",
                            q.lower_bounds.join(", ")
                        ));
                    }
                    quantiles.insert(key.to_string(), q);
                }
                break;
            }
        }
    }
    let mut counters = BTreeMap::new();
    for (key, names) in COUNTERS {
        if let Some(v) = scalar_sum(m, names) {
            counters.insert(key.to_string(), v);
        }
    }
    let mut finished_reasons = BTreeMap::new();
    if let Some(v) = m.scalars.get("vllm:request_success_total") {
        for (labels, x) in v {
            if let Some((_, r)) = labels.iter().find(|(k, _)| k == "finished_reason") {
                *finished_reasons.entry(r.clone()).or_insert(0.0) += x;
            }
        }
    }
    let preemptions = counters.remove("preemptions");
    let prefix_cache_hit_rate = match (
        counters.get("prefix_cache_hits"),
        counters.get("prefix_cache_queries"),
    ) {
        (Some(h), Some(q)) if *q > 0.0 => Some(h / q),
        _ => scalar_mean(gauges_from, HIT_RATE_GAUGES),
    };
    let mut models: Vec<String> = gauges_from
        .scalars
        .values()
        .flatten()
        .map(|(l, _)| l)
        .chain(gauges_from.hists.values().flatten().map(|h| &h.labels))
        .filter_map(|l| {
            l.iter()
                .find(|(k, _)| k == "model_name")
                .map(|(_, v)| v.clone())
        })
        .collect();
    models.sort();
    models.dedup();
    // Label values are the scrape's word: keep the stored analysis small whatever they are.
    if models.len() > MAX_LABEL_VALUES {
        notes.push(format!(
            "{} model names; the first {MAX_LABEL_VALUES} are listed",
            models.len()
        ));
        models.truncate(MAX_LABEL_VALUES);
    }
    if finished_reasons.len() > MAX_LABEL_VALUES {
        let mut by_count: Vec<(String, f64)> =
            std::mem::take(&mut finished_reasons).into_iter().collect();
        by_count.sort_by(|a, b| b.1.total_cmp(&a.1));
        let rest: f64 = by_count[MAX_LABEL_VALUES..].iter().map(|(_, x)| x).sum();
        notes.push(format!(
            "{} finish reasons; the {MAX_LABEL_VALUES} most frequent are listed, the rest summed as \"other\"",
            by_count.len()
        ));
        finished_reasons = by_count.into_iter().take(MAX_LABEL_VALUES).collect();
        *finished_reasons.entry("other".to_string()).or_insert(0.0) += rest;
    }
    let gauges = Gauges {
        running: scalar_sum(gauges_from, RUNNING),
        waiting: scalar_sum(gauges_from, WAITING),
        kv_usage: scalar_mean(gauges_from, KV_USAGE),
    };
    if quantiles.is_empty() && gauges == Gauges::default() {
        notes.push("no vLLM, SGLang or TGI serving metrics found in this scrape".to_string());
    }
    if !window && !quantiles.is_empty() {
        notes.push(
            "one scrape: histograms are cumulative since the server started; upload a scrape before and after a run for a window"
                .to_string(),
        );
    }
    PrometheusAnalysis {
        engine: engine.to_string(),
        window,
        quantiles,
        gauges,
        preemptions,
        prefix_cache_hit_rate,
        counters,
        finished_reasons,
        models,
        samples,
        notes,
        capture: None,
        waiting_series: Vec::new(),
    }
}

/// Analyze one scrape.
pub fn analyze_snapshot(s: &Snapshot) -> PrometheusAnalysis {
    let m = build_model(s);
    summarize(
        &m,
        &m,
        detect_engine(s),
        false,
        s.samples.len() as u64,
        Vec::new(),
    )
}

/// The comment that opens each scrape in a capture file.
pub const CAPTURE_MARKER: &str = "# perfjournal-capture";

/// Most scrapes a capture file may hold (an hour at one per second, and some).
pub const MAX_CAPTURE_SNAPSHOTS: u64 = 4000;

/// The marker line (with its newline) for a scrape taken at `ts` (RFC 3339) from
/// `url`. Whitespace in the URL is percent-encoded so the line stays one token each.
pub fn capture_marker(ts: &str, url: &str) -> String {
    let url = url.replace(' ', "%20").replace(['\n', '\r', '\t'], "");
    format!("{CAPTURE_MARKER} ts={ts} url={url}\n")
}

/// A parsed marker line: its time and URL.
#[derive(Clone, Debug, PartialEq)]
struct Mark {
    at: String,
    time: chrono::DateTime<chrono::FixedOffset>,
    url: Option<String>,
}

fn parse_marker(line: &str, line_no: u64) -> Result<Mark, AnalyzeError> {
    let rest = line.strip_prefix(CAPTURE_MARKER).unwrap_or("");
    let mut at = None;
    let mut url = None;
    for token in rest.split_whitespace() {
        if let Some(v) = token.strip_prefix("ts=") {
            at = Some(v.to_string());
        } else if let Some(v) = token.strip_prefix("url=") {
            url = Some(v.to_string());
        }
    }
    let at = at.ok_or_else(|| {
        AnalyzeError::at_line(line_no, "capture marker without ts=<RFC 3339 time>")
    })?;
    let time = chrono::DateTime::parse_from_rfc3339(&at).map_err(|e| {
        AnalyzeError::at_line(
            line_no,
            format!("capture marker time {at:?} is not RFC 3339: {e}"),
        )
    })?;
    Ok(Mark { at, time, url })
}

/// Folds the scrapes of a capture file as they are read: keeps the first and the
/// latest scrape and the previous counter totals, so memory stays at two scrapes.
#[derive(Default)]
struct CaptureFold {
    first: Option<(Mark, Snapshot)>,
    last: Option<(Mark, Snapshot)>,
    previous_totals: BTreeMap<String, f64>,
    summary: CaptureSummary,
    resets: bool,
}

impl CaptureFold {
    fn push(&mut self, mark: Mark, snap: Snapshot) -> Result<(), AnalyzeError> {
        if snap.samples.is_empty() {
            return Err(AnalyzeError::malformed(format!(
                "the scrape at {} holds no Prometheus samples",
                mark.at
            )));
        }
        self.summary.snapshots += 1;
        if self.summary.snapshots > MAX_CAPTURE_SNAPSHOTS {
            return Err(AnalyzeError::malformed(format!(
                "more than {MAX_CAPTURE_SNAPSHOTS} scrapes in one capture"
            )));
        }
        let m = build_model(&snap);
        let totals: BTreeMap<String, f64> = COUNTERS
            .iter()
            .filter_map(|(key, names)| Some((key.to_string(), scalar_sum(&m, names)?)))
            .collect();
        let start = self.first.as_ref().map_or(mark.time, |(f, _)| f.time);
        let offset_s = (mark.time - start).num_milliseconds() as f64 / 1000.0;
        let mut rates = BTreeMap::new();
        let previous = self.last.as_ref().or(self.first.as_ref());
        if let Some((prev, _)) = previous {
            let dt = (mark.time - prev.time).num_milliseconds() as f64 / 1000.0;
            for (key, now) in &totals {
                match self.previous_totals.get(key) {
                    Some(before) if now < before => self.resets = true,
                    Some(before) if dt > 0.0 => {
                        rates.insert(key.clone(), (now - before) / dt);
                    }
                    _ => {}
                }
            }
        }
        self.summary.series.push(SeriesPoint {
            at: mark.at.clone(),
            offset_s,
            running: scalar_sum(&m, RUNNING),
            waiting: scalar_sum(&m, WAITING),
            kv_usage: scalar_mean(&m, KV_USAGE),
            rates,
        });
        self.previous_totals = totals;
        if self.first.is_none() {
            self.first = Some((mark, snap));
        } else {
            self.last = Some((mark, snap));
        }
        Ok(())
    }

    fn finish(self) -> Result<PrometheusAnalysis, AnalyzeError> {
        let CaptureFold {
            first,
            last,
            mut summary,
            resets,
            ..
        } = self;
        let Some((first_mark, first)) = first else {
            return Err(AnalyzeError::malformed("no Prometheus samples found"));
        };
        let mut out = match &last {
            Some((_, last)) => window(&first, last),
            None => analyze_snapshot(&first),
        };
        let end_mark = last.as_ref().map_or(&first_mark, |(m, _)| m);
        summary.url = first_mark.url.clone();
        summary.started = first_mark.at.clone();
        summary.ended = end_mark.at.clone();
        summary.seconds = (end_mark.time - first_mark.time).num_milliseconds() as f64 / 1000.0;
        if resets {
            out.notes.push(
                "a counter went down between two scrapes (server restart?); no rate is shown for that interval"
                    .to_string(),
            );
        }
        if summary.snapshots == 1 {
            out.notes
                .push("the capture holds one scrape, so there is no window".to_string());
        }
        // The scrapes' waiting gauge over time, for bubble attribution.
        out.waiting_series = summary
            .series
            .iter()
            .filter_map(|p| {
                let at = chrono::DateTime::parse_from_rfc3339(&p.at).ok()?;
                Some([at.timestamp_millis() as f64, p.waiting?])
            })
            .take(MAX_SERIES_POINTS)
            .collect();
        out.capture = Some(summary);
        Ok(out)
    }
}

/// Parse and analyze one scrape, or a capture file of several (see the module doc).
pub fn analyze<R: Read>(reader: R) -> Result<PrometheusAnalysis, AnalyzeError> {
    let mut fold: Option<CaptureFold> = None;
    let mut current: Option<Mark> = None;
    let mut builder = SnapshotBuilder::default();
    for_each_line(reader, |line, n| {
        if line.starts_with(CAPTURE_MARKER) {
            let mark = parse_marker(line, n)?;
            let fold = fold.get_or_insert_with(CaptureFold::default);
            let snap = std::mem::take(&mut builder.snap);
            match current.replace(mark) {
                Some(prev) => fold.push(prev, snap)?,
                None if !snap.samples.is_empty() => {
                    return Err(AnalyzeError::at_line(
                        n,
                        "samples before the first capture marker",
                    ))
                }
                None => {}
            }
            return Ok(());
        }
        builder.line(line, n)
    })?;
    match (fold, current) {
        (Some(mut fold), Some(mark)) => {
            fold.push(mark, builder.snap)?;
            fold.finish()
        }
        _ => {
            if builder.snap.samples.is_empty() {
                return Err(AnalyzeError::malformed("no Prometheus samples found"));
            }
            Ok(analyze_timestamped(builder.snap))
        }
    }
}

/// One scrape. Exposition samples with timestamps (several scrapes concatenated) give the
/// waiting gauge over time; the rest of the summary is of the last scrape (its samples and
/// any without a timestamp), since summing scrapes would count everything again.
fn analyze_timestamped(mut snap: Snapshot) -> PrometheusAnalysis {
    let series = waiting_series(&snap);
    let mut times: Vec<f64> = snap.samples.iter().filter_map(|x| x.timestamp_ms).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let mut note = None;
    if let (true, Some(&last)) = (times.len() > 1, times.last()) {
        snap.samples
            .retain(|x| x.timestamp_ms.is_none_or(|t| t == last));
        note = Some(format!(
            "{} timestamps in this capture: the summary is of the last scrape; the waiting \
             gauge over time has {} points",
            times.len(),
            series.len()
        ));
    }
    let mut a = analyze_snapshot(&snap);
    a.notes.extend(note);
    a.waiting_series = series;
    a
}

/// Is this scalar a counter (cumulative) rather than a gauge?
fn is_counter(name: &str, types: &HashMap<String, String>) -> bool {
    if let Some(t) = types.get(name) {
        return t == "counter";
    }
    if let Some(base) = name.strip_suffix("_total") {
        if let Some(t) = types.get(base) {
            return t == "counter";
        }
        return true;
    }
    false
}

/// The window between two scrapes `a` (earlier) and `b` (later) of the same
/// server: histogram and counter deltas, gauges from `b`. A series whose
/// count or value went down was reset (server restart): `b` alone is used for
/// it, and a note says so.
pub fn window(a: &Snapshot, b: &Snapshot) -> PrometheusAnalysis {
    let ma = build_model(a);
    let mb = build_model(b);
    let mut notes = Vec::new();
    let mut reset_families: Vec<String> = Vec::new();
    let mut delta = Model::default();

    for (fam, series_b) in &mb.hists {
        let before: HashMap<String, &HistSeries> = ma
            .hists
            .get(fam)
            .map(|v| v.iter().map(|h| (labels_key(&h.labels), h)).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for hb in series_b {
            let Some(ha) = before.get(&labels_key(&hb.labels)) else {
                out.push(hb.clone());
                continue;
            };
            let prev: HashMap<u64, f64> = ha
                .buckets
                .iter()
                .map(|(le, c)| (le.to_bits(), *c))
                .collect();
            let reset = hb.count < ha.count
                || hb
                    .buckets
                    .iter()
                    .any(|(le, c)| prev.get(&le.to_bits()).is_some_and(|p| c < p));
            if reset {
                if !reset_families.contains(fam) {
                    reset_families.push(fam.clone());
                }
                out.push(hb.clone());
                continue;
            }
            out.push(HistSeries {
                labels: hb.labels.clone(),
                buckets: hb
                    .buckets
                    .iter()
                    .map(|(le, c)| (*le, c - prev.get(&le.to_bits()).copied().unwrap_or(0.0)))
                    .collect(),
                sum: hb.sum - ha.sum,
                count: hb.count - ha.count,
            });
        }
        delta.hists.insert(fam.clone(), out);
    }

    let mut types = a.types.clone();
    types.extend(b.types.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (name, vals_b) in &mb.scalars {
        if !is_counter(name, &types) {
            continue;
        }
        let before: HashMap<String, f64> = ma
            .scalars
            .get(name)
            .map(|v| v.iter().map(|(l, x)| (labels_key(l), *x)).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (labels, vb) in vals_b {
            let d = match before.get(&labels_key(labels)) {
                Some(va) if vb < va => {
                    if !reset_families.contains(name) {
                        reset_families.push(name.clone());
                    }
                    *vb
                }
                Some(va) => vb - va,
                None => *vb,
            };
            out.push((labels.clone(), d));
        }
        delta.scalars.insert(name.clone(), out);
    }
    if !reset_families.is_empty() {
        reset_families.sort();
        notes.push(format!(
            "counter reset between the scrapes (server restart?) for {}; the second scrape alone was used for them",
            reset_families.join(", ")
        ));
    }
    let engine = match detect_engine(b) {
        "unknown" => detect_engine(a),
        e => e,
    };
    let mut out = summarize(&delta, &mb, engine, true, b.samples.len() as u64, notes);
    // Rate gauges (hit-rate) are not deltas; only counters above are.
    out.window = true;
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{open, real_fixtures};
    use super::*;

    fn snap(text: &str) -> Snapshot {
        parse_snapshot(text.as_bytes()).unwrap()
    }

    fn vllm_scrape(scale: f64, preempt: f64) -> String {
        // TTFT histogram: 10 obs ≤ 0.1 s, 30 more ≤ 0.5 s, 10 more ≤ 1 s.
        let b = |c: f64| c * scale;
        format!(
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.1\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"1.0\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_sum{{engine=\"0\",model_name=\"m\"}} {}\n\
             vllm:time_to_first_token_seconds_count{{engine=\"0\",model_name=\"m\"}} {}\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} 7\n\
             vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} 2\n\
             vllm:gpu_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} 0.5\n\
             # TYPE vllm:num_preemptions counter\n\
             vllm:num_preemptions_total{{engine=\"0\",model_name=\"m\"}} {preempt}\n\
             vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}\n\
             vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}\n\
             vllm:request_success_total{{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"}} {}\n\
             vllm:request_success_total{{engine=\"0\",finished_reason=\"length\",model_name=\"m\"}} {}\n",
            b(10.0),
            b(40.0),
            b(50.0),
            b(50.0),
            b(15.0),
            b(50.0),
            b(1000.0),
            b(250.0),
            b(45.0),
            b(5.0)
        )
    }

    #[test]
    fn parses_lines_with_escapes_timestamps_and_exemplars() {
        let s = parse_sample_line(
            r#"http_requests_total{method="post",path="/a\"b\\c",} 1027 1395066363000"#,
        )
        .unwrap();
        assert_eq!(s.name, "http_requests_total");
        assert_eq!(s.label("path"), Some("/a\"b\\c"));
        assert_eq!(s.value, 1027.0);
        assert_eq!(parse_sample_line("x +Inf").unwrap().value, f64::INFINITY);
        assert!(parse_sample_line("x NaN").unwrap().value.is_nan());
        assert_eq!(
            parse_sample_line(r#"foo_bucket{le="0.5"} 3 # {trace_id="a"} 0.4"#)
                .unwrap()
                .value,
            3.0
        );
        assert!(parse_sample_line("not a metric").is_none());
        assert!(parse_sample_line("x{a=\"1\" 3").is_none());
        assert!(parse_sample_line("9x 3").is_none());
        assert!(parse_sample_line("x{}3").is_none());
    }

    #[test]
    fn histogram_quantile_like_promql() {
        let b = [(0.1, 10.0), (0.5, 40.0), (1.0, 50.0), (f64::INFINITY, 50.0)];
        // rank 25 lies in (0.1, 0.5]: 0.1 + 0.4 * (15/30) = 0.3
        let (p50, lower) = bucket_quantile(0.5, &b).unwrap();
        assert!((p50 - 0.3).abs() < 1e-12 && !lower);
        // rank 5 in the first bucket, which starts at 0.
        assert!((bucket_quantile(0.1, &b).unwrap().0 - 0.05).abs() < 1e-12);
        // rank 49.5 in (0.5, 1]: 0.5 + 0.5 * 9.5/10
        assert!((bucket_quantile(0.99, &b).unwrap().0 - 0.975).abs() < 1e-12);
        let tail = [(1.0, 1.0), (f64::INFINITY, 10.0)];
        assert_eq!(bucket_quantile(0.5, &tail), Some((1.0, true)));
        assert_eq!(bucket_quantile(0.5, &[(f64::INFINITY, 3.0)]), None);
        assert_eq!(
            bucket_quantile(0.5, &[(1.0, 0.0), (f64::INFINITY, 0.0)]),
            None
        );
    }

    #[test]
    fn single_scrape() {
        let a = analyze_snapshot(&snap(&vllm_scrape(1.0, 3.0)));
        assert_eq!(a.engine, "vllm");
        assert!(!a.window);
        let t = &a.quantiles["ttft_s"];
        assert!((t.p50.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(t.count, 50.0);
        assert!((t.mean.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(a.gauges.running, Some(7.0));
        assert_eq!(a.gauges.waiting, Some(2.0));
        // Older name for KV usage is understood.
        assert_eq!(a.gauges.kv_usage, Some(0.5));
        assert_eq!(a.preemptions, Some(3.0));
        assert_eq!(a.prefix_cache_hit_rate, Some(0.25));
        assert_eq!(a.finished_reasons["stop"], 45.0);
        assert_eq!(a.counters["requests_success"], 50.0);
        assert_eq!(a.models, vec!["m".to_string()]);
        let v = serde_json::to_value(&a).unwrap();
        for k in [
            "engine",
            "window",
            "quantiles",
            "gauges",
            "preemptions",
            "prefix_cache_hit_rate",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
    }

    #[test]
    fn window_deltas_and_resets() {
        let a = snap(&vllm_scrape(1.0, 3.0));
        let b = snap(&vllm_scrape(3.0, 10.0));
        let w = window(&a, &b);
        assert!(w.window);
        let t = &w.quantiles["ttft_s"];
        assert_eq!(t.count, 100.0);
        assert!((t.p50.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(w.preemptions, Some(7.0));
        assert_eq!(w.counters["prefix_cache_queries"], 2000.0);
        assert!(w.notes.iter().all(|n| !n.contains("reset")));
        // Restart: the later scrape has smaller counts.
        let r = window(&b, &a);
        assert!(r.notes.iter().any(|n| n.contains("reset")), "{:?}", r.notes);
        assert_eq!(r.quantiles["ttft_s"].count, 50.0);
        assert_eq!(r.preemptions, Some(3.0));
    }

    fn capture_of(scrapes: &[(&str, String)]) -> String {
        scrapes
            .iter()
            .map(|(ts, body)| capture_marker(ts, "http://10.0.0.5:8000/metrics") + body)
            .collect()
    }

    #[test]
    fn capture_file_gives_the_window_and_a_series() {
        let text = capture_of(&[
            ("2026-12-01T10:00:00Z", vllm_scrape(1.0, 3.0)),
            ("2026-12-01T10:00:01Z", vllm_scrape(2.0, 5.0)),
            ("2026-12-01T10:00:03.500Z", vllm_scrape(3.0, 10.0)),
        ]);
        let a = analyze(text.as_bytes()).unwrap();
        // The window runs from the first scrape to the last.
        assert!(a.window);
        assert_eq!(a.quantiles["ttft_s"].count, 100.0);
        assert_eq!(a.preemptions, Some(7.0));
        let c = a.capture.as_ref().unwrap();
        assert_eq!(c.snapshots, 3);
        assert_eq!(c.seconds, 3.5);
        assert_eq!(c.url.as_deref(), Some("http://10.0.0.5:8000/metrics"));
        assert_eq!(c.started, "2026-12-01T10:00:00Z");
        assert_eq!(c.ended, "2026-12-01T10:00:03.500Z");
        let offsets: Vec<f64> = c.series.iter().map(|p| p.offset_s).collect();
        assert_eq!(offsets, vec![0.0, 1.0, 3.5]);
        assert!(c.series[0].rates.is_empty());
        // 1000 more prefix-cache queries in 1 s, then 1000 more in 2.5 s.
        assert_eq!(c.series[1].rates["prefix_cache_queries"], 1000.0);
        assert_eq!(c.series[2].rates["prefix_cache_queries"], 400.0);
        assert_eq!(c.series[2].rates["preemptions"], 2.0);
        assert_eq!(c.series[1].running, Some(7.0));
        assert_eq!(c.series[1].kv_usage, Some(0.5));
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["capture"]["series"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn plain_scrapes_are_read_as_before_and_one_scrape_captures_say_so() {
        let plain = analyze(vllm_scrape(1.0, 3.0).as_bytes()).unwrap();
        assert!(plain.capture.is_none());
        assert!(serde_json::to_value(&plain)
            .unwrap()
            .get("capture")
            .is_none());
        let one =
            analyze(capture_of(&[("2026-12-01T10:00:00Z", vllm_scrape(1.0, 3.0))]).as_bytes())
                .unwrap();
        assert!(!one.window);
        assert_eq!(one.capture.as_ref().unwrap().snapshots, 1);
        assert!(
            one.notes.iter().any(|n| n.contains("one scrape")),
            "{:?}",
            one.notes
        );
    }

    #[test]
    fn capture_resets_leave_a_gap_in_the_rates() {
        let text = capture_of(&[
            ("2026-12-01T10:00:00Z", vllm_scrape(3.0, 10.0)),
            ("2026-12-01T10:00:01Z", vllm_scrape(1.0, 3.0)),
        ]);
        let a = analyze(text.as_bytes()).unwrap();
        assert!(a.capture.unwrap().series[1].rates.is_empty());
        assert!(
            a.notes.iter().any(|n| n.contains("went down")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn malformed_captures_name_the_line() {
        let early = format!(
            "x 1\n{}",
            capture_of(&[("2026-12-01T10:00:00Z", "x 2\n".into())])
        );
        let e = analyze(early.as_bytes()).unwrap_err().to_string();
        assert!(
            e.starts_with("line 2:") && e.contains("before the first"),
            "{e}"
        );
        let bad_ts = "# perfjournal-capture ts=yesterday url=http://h/\nx 1\n";
        let e = analyze(bad_ts.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("line 1:") && e.contains("RFC 3339"), "{e}");
        let empty = capture_of(&[
            ("2026-12-01T10:00:00Z", "x 1\n".into()),
            ("2026-12-01T10:00:01Z", String::new()),
        ]);
        let e = analyze(empty.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("10:00:01Z holds no"), "{e}");
        assert_eq!(
            capture_marker("2026-12-01T10:00:00Z", "http://h/a b"),
            "# perfjournal-capture ts=2026-12-01T10:00:00Z url=http://h/a%20b\n"
        );
    }

    #[test]
    fn tgi_forward_by_method_and_new_vllm_names() {
        let text = "tgi_batch_forward_duration_bucket{method=\"prefill\",le=\"0.01\"} 1\n\
                    tgi_batch_forward_duration_bucket{method=\"prefill\",le=\"+Inf\"} 2\n\
                    tgi_batch_forward_duration_bucket{method=\"decode\",le=\"0.01\"} 9\n\
                    tgi_batch_forward_duration_bucket{method=\"decode\",le=\"+Inf\"} 10\n\
                    tgi_queue_size 4\n";
        let a = analyze_snapshot(&snap(text));
        assert_eq!(a.engine, "tgi");
        assert_eq!(a.quantiles["forward_prefill_s"].count, 2.0);
        assert_eq!(a.quantiles["forward_decode_s"].count, 10.0);
        assert_eq!(a.gauges.waiting, Some(4.0));
        let v1 = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.25\n\
                  vllm:inter_token_latency_seconds_bucket{le=\"0.02\"} 5\n\
                  vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 5\n\
                  vllm:iteration_tokens_total_bucket{le=\"1\"} 2\n\
                  vllm:iteration_tokens_total_bucket{le=\"+Inf\"} 4\n";
        let a = analyze_snapshot(&snap(v1));
        assert_eq!(a.gauges.kv_usage, Some(0.25));
        assert_eq!(
            a.quantiles["itl_s"].metric,
            "vllm:inter_token_latency_seconds"
        );
        assert_eq!(a.quantiles["iteration_tokens"].count, 4.0);
    }

    #[test]
    fn bad_lines_name_their_number() {
        let e = parse_snapshot("# HELP x y\nx 1\nthis is not prometheus\n".as_bytes()).unwrap_err();
        assert!(e.to_string().starts_with("line 3:"), "{e}");
        assert!(parse_snapshot("# only comments\n".as_bytes()).is_err());
    }

    #[test]
    fn real_sglang_fixture() {
        let Some(root) = real_fixtures() else { return };
        let f = open(
            &root,
            "prometheus/sglang_docs_production_metrics_example.prom",
        );
        let a = analyze(f).unwrap();
        assert_eq!(a.engine, "sglang");
        assert_eq!(a.gauges.running, Some(162.0));
        assert_eq!(a.gauges.waiting, Some(2826.0));
        assert_eq!(a.gauges.kv_usage, Some(0.28));
        assert!((a.prefix_cache_hit_rate.unwrap() - 0.0075).abs() < 1e-3);
        let ttft = &a.quantiles["ttft_s"];
        assert_eq!(ttft.count, 11008.0);
        // Most TTFTs are beyond the 30 s bucket: the median is only a lower bound.
        assert_eq!(ttft.p50, Some(30.0));
        assert!(ttft.lower_bounds.contains(&"p50".to_string()));
        let itl = &a.quantiles["itl_s"];
        assert_eq!(itl.count, 7_400_757.0);
        // Rank 3.7M falls in (0.075, 0.1]: between 433,413 and 4,950,195.
        let p50 = itl.p50.unwrap();
        assert!(p50 > 0.075 && p50 < 0.1, "{p50}");
        assert!(a.quantiles.contains_key("e2e_s"));
        assert_eq!(a.counters["generation_tokens"], 7_557_572.0);
        assert_eq!(
            a.models,
            vec!["meta-llama/Llama-3.1-8B-Instruct".to_string()]
        );
    }

    #[test]
    fn timestamped_scrapes_give_the_waiting_gauge_over_time() {
        let scrape = |t: u64, waiting: [u32; 2], success: u32| {
            format!(
                "# TYPE vllm:num_requests_waiting gauge\n\
                 vllm:num_requests_waiting{{engine=\"0\"}} {} {t}\n\
                 vllm:num_requests_waiting{{engine=\"1\"}} {} {t}\n\
                 vllm:request_success_total{{finished_reason=\"stop\"}} {success} {t}\n",
                waiting[0], waiting[1]
            )
        };
        let text = [
            scrape(1_700_000_000_000, [0, 0], 10),
            scrape(1_700_000_002_000, [2, 1], 15),
            scrape(1_700_000_004_000, [0, 1], 20),
        ]
        .concat();
        let a = analyze(text.as_bytes()).unwrap();
        assert_eq!(
            a.waiting_series,
            [
                [1_700_000_000_000.0, 0.0],
                [1_700_000_002_000.0, 3.0],
                [1_700_000_004_000.0, 1.0]
            ]
        );
        // The summary is the last scrape's, not three scrapes summed.
        assert_eq!(a.gauges.waiting, Some(1.0));
        assert!(
            a.notes.iter().any(|n| n.contains("3 timestamps")),
            "{:?}",
            a.notes
        );
        // One untimestamped scrape keeps no series.
        assert!(analyze(&b"vllm:num_requests_waiting 4\n"[..])
            .unwrap()
            .waiting_series
            .is_empty());
    }
}
