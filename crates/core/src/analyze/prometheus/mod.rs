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

mod capture;
mod model;
pub mod range;
mod summary;
#[cfg(test)]
mod tests;
mod text;

use super::AnalyzeError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;

use capture::{parse_marker, CaptureFold, Mark};
use model::waiting_series;
use text::{for_each_line, SnapshotBuilder};

pub use capture::{capture_marker, CAPTURE_MARKER, MAX_CAPTURE_SNAPSHOTS};
pub use model::bucket_quantile;
pub use summary::{analyze_snapshot, window};
pub use text::{parse_sample_line, parse_snapshot, Sample, Snapshot, MAX_SAMPLES};

/// Bump when the JSON output of [`analyze`] / [`window`] changes.
pub const ANALYZER_VERSION: u32 = 2;

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
