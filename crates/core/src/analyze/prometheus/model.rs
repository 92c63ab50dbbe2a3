//! What perfjournal reads from a scrape: the histogram, gauge and counter names of each
//! engine, the series grouped per label set, and the bucket math (PromQL's
//! `histogram_quantile`, series merged across engines, sums and means of scalars).

use super::text::{parse_value, Snapshot};
use super::{Bucket, HistQuantiles, MAX_SERIES_POINTS};
use crate::stats::mean;
use std::collections::{BTreeMap, HashMap};

/// The bucket of `bounds` (upper bounds, ascending, the last `+Inf`) that holds `v`.
fn bucket_of(v: f64, bounds: &[f64]) -> Bucket {
    let at = bounds.iter().position(|&b| v <= b).unwrap_or(bounds.len());
    let lo = if at == 0 { 0.0 } else { bounds[at - 1] };
    let hi = bounds.get(at).copied().filter(|b| b.is_finite());
    // A value on a bound sits at the top of its bucket.
    Bucket { lo: lo.min(v), hi }
}

/// The waiting gauge's timestamped samples, summed per timestamp, in time order.
pub(super) fn waiting_series(s: &Snapshot) -> Vec<[f64; 2]> {
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

/// Canonical histogram key → candidate families (first present wins) and an
/// optional label filter.
/// A label that must match (`name`, `value`).
type LabelFilter = Option<(&'static str, &'static str)>;

pub(super) const HISTOGRAMS: &[(&str, &[&str], LabelFilter)] = &[
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

pub(super) const RUNNING: &[&str] = &[
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "tgi_batch_current_size",
];
pub(super) const WAITING: &[&str] = &[
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
];
pub(super) const KV_USAGE: &[&str] = &[
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
];
pub(super) const HIT_RATE_GAUGES: &[&str] =
    &["vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"];

/// Counter key → candidate sample names (with `_total`, as exposed).
pub(super) const COUNTERS: &[(&str, &[&str])] = &[
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
pub(super) struct HistSeries {
    pub(super) labels: Vec<(String, String)>,
    /// (upper bound, cumulative count), sorted by bound.
    pub(super) buckets: Vec<(f64, f64)>,
    pub(super) sum: f64,
    pub(super) count: f64,
}

/// A scrape organized by family: histograms, and everything else as scalars.
#[derive(Default)]
pub(super) struct Model {
    pub(super) hists: HashMap<String, Vec<HistSeries>>,
    pub(super) scalars: HashMap<String, Vec<(Labels, f64)>>,
}

pub(super) fn labels_key(labels: &[(String, String)]) -> String {
    let mut v: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    v.sort();
    v.join(",")
}

pub(super) fn build_model(s: &Snapshot) -> Model {
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
pub(super) fn merge_series<'a>(series: impl Iterator<Item = &'a HistSeries>) -> Option<HistSeries> {
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

pub(super) fn quantiles_of(h: &HistSeries, metric: &str) -> Option<HistQuantiles> {
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

/// A gauge summed over its series; `None` when any series holds a value that is not a
/// finite number (`+Inf`, `NaN`, `1e400`): a sum without it would read as a measurement
/// (see [`non_finite`]).
pub(super) fn scalar_sum(m: &Model, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let v = m.scalars.get(*n)?;
        finite(v)?;
        Some(v.iter().map(|(_, x)| *x).sum())
    })
}

/// A gauge averaged over its series; `None` as for [`scalar_sum`].
pub(super) fn scalar_mean(m: &Model, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let v = m.scalars.get(*n)?;
        finite(v)?;
        let xs: Vec<f64> = v.iter().map(|(_, x)| *x).collect();
        mean(&xs)
    })
}

fn finite<L>(v: &[(L, f64)]) -> Option<()> {
    v.iter()
        .all(|(_, x)| crate::analyze::in_range(*x))
        .then_some(())
}

/// The gauges among `names` that exist but hold a value that is not a finite number.
pub(super) fn non_finite<'a>(m: &Model, names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .filter(|n| m.scalars.get(**n).is_some_and(|v| finite(v).is_none()))
        .copied()
        .collect()
}

pub(super) fn detect_engine(s: &Snapshot) -> &'static str {
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

/// Is this scalar a counter (cumulative) rather than a gauge?
pub(super) fn is_counter(name: &str, types: &HashMap<String, String>) -> bool {
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
