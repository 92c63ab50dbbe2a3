//! Interpretation: the documents read as runs (vLLM, GenAI-Perf/AIPerf, GuideLLM),
//! distributions from the per-request arrays, summaries as the fallback.

use super::*;

pub(super) fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok().filter(|x: &f64| x.is_finite()),
        _ => None,
    }
}

pub(super) fn count(v: Option<&Value>) -> Option<u64> {
    num(v).filter(|x| *x >= 0.0).map(|x| x.round() as u64)
}

/// Does `key` name a reported statistic such as `p99_ttft_ms` or `mean_e2el_ms`?
pub(super) fn is_stat_key(key: &str) -> bool {
    let Some(body) = key.strip_suffix("_ms") else {
        return false;
    };
    let Some((stat, metric)) = body.split_once('_') else {
        return false;
    };
    let stat_ok = matches!(stat, "mean" | "median" | "std")
        || stat
            .strip_prefix('p')
            .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '.'));
    stat_ok && !metric.is_empty()
}

/// Keys that are results rather than settings.
pub(super) fn is_result_key(key: &str) -> bool {
    is_stat_key(key)
        || key.ends_with("_throughput")
        || key.starts_with("request_goodput")
        || (key.starts_with("total_") && key.ends_with("_tokens"))
        || matches!(key, "duration" | "completed" | "failed")
}

/// Summary from keys like `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`.
pub(super) fn summary_from_keys(
    small: &Map<String, Value>,
    metric: &str,
    count: Option<u64>,
) -> Summary {
    let get = |stat: &str| num(small.get(&format!("{stat}_{metric}_ms")));
    Summary {
        count: if get("mean").is_some() {
            count.unwrap_or(0)
        } else {
            0
        },
        mean: get("mean"),
        std: get("std"),
        min: get("min"),
        p50: get("median").or_else(|| get("p50")),
        p90: get("p90"),
        p95: get("p95"),
        p99: get("p99"),
        max: get("max"),
    }
}

pub(super) fn has_any(s: &Summary) -> bool {
    s.mean.is_some() || s.p50.is_some() || s.p99.is_some()
}

impl RawDoc {
    pub(super) fn into_results(self, nan_replaced: u64) -> Result<Vec<BenchResult>, AnalyzeError> {
        if let Some(Value::Array(benches)) = self.small.get("benchmarks") {
            let out: Vec<BenchResult> = benches
                .iter()
                .filter_map(|b| b.as_object())
                .map(|b| guidellm_result(b, nan_replaced))
                .collect();
            if !out.is_empty() {
                return Ok(out);
            }
        }
        let vllm_like = self.ttfts.is_some()
            || self.small.keys().any(|k| is_stat_key(k))
            || num(self.small.get("request_throughput")).is_some()
            || self.small.contains_key("completed");
        if vllm_like {
            return Ok(vec![self.vllm_result(nan_replaced)]);
        }
        if let Some(r) = genai_perf_result(&self.small, nan_replaced) {
            return Ok(vec![r]);
        }
        Err(AnalyzeError::malformed(
            "no benchmark fields found (expected vLLM --save-result keys such as ttfts/mean_ttft_ms, GenAI-Perf metrics such as time_to_first_token, or GuideLLM benchmarks)",
        ))
    }

    pub(super) fn vllm_result(self, nan_replaced: u64) -> BenchResult {
        let small = &self.small;
        let requested = [
            "output_len",
            "random_output_len",
            "sonnet_output_len",
            "sharegpt_output_len",
        ]
        .iter()
        .find_map(|k| num(small.get(*k)))
        .filter(|x| *x > 0.0);
        let n = self.request_count();
        let per = self.per_request(n, requested);

        let completed = count(small.get("completed")).or((n > 0).then_some(per.successes));
        let num_prompts = count(small.get("num_prompts"));
        let failed = count(small.get("failed"))
            .or(self.errors.as_ref().map(|e| e.count))
            .or_else(|| Some(num_prompts?.saturating_sub(completed?)));

        let samples = Samples {
            ttft_ms: per.ttft.clone(),
            tpot_ms: per.tpot.clone(),
            itl_ms: per.itl.clone(),
            e2el_ms: per.e2el.clone(),
            output_lens: per.out_lens,
            input_lens: per.in_lens,
        };
        let from_arrays = !per.ttft.is_empty();
        let pick = |mut v: Vec<f64>, metric: &str| -> Summary {
            let s = Summary::from_values(&mut v);
            if s.count > 0 {
                s
            } else {
                summary_from_keys(small, metric, completed)
            }
        };
        let ttft_ms = pick(per.ttft, "ttft");
        let tpot_ms = pick(per.tpot, "tpot");
        let itl_ms = pick(per.itl, "itl");
        let e2el_ms = pick(per.e2el, "e2el");
        let (config, reported) = settings_and_results(small);

        let mut flags = Vec::new();
        if let Some(f) = failed.filter(|f| *f > 0) {
            let of = num_prompts.map(|p| format!(" of {p}")).unwrap_or_default();
            flags.push(flag("failures", format!("{f}{of} requests failed; latency and throughput cover the successful ones only")));
        }
        if let Some(e) = self.errors.as_ref().filter(|e| e.count > 0) {
            flags.push(flag(
                "errors",
                format!("first error: {}", e.first.join(" | ")),
            ));
        }
        if failed.is_none() {
            if let (Some(p), Some(c)) = (num_prompts, completed) {
                if c < p {
                    flags.push(flag("incomplete", format!("{c} of {p} prompts completed")));
                }
            }
        }
        push_length_flags(
            &mut flags,
            per.successes,
            per.zero_out,
            per.very_short,
            requested,
            per.below_requested,
        );
        if nan_replaced > 0 || per.nulls > 0 {
            let k = nan_replaced.max(per.nulls);
            flags.push(flag(
                "nan_values",
                format!("{k} NaN/Infinity or missing values were read as missing"),
            ));
        }
        if !has_any(&ttft_ms) && !has_any(&e2el_ms) {
            flags.push(flag(
                "no_distributions",
                "no latency distribution in the file".into(),
            ));
        }

        BenchResult {
            source: "vllm".into(),
            completed,
            failed,
            ttft_ms,
            tpot_ms,
            itl_ms,
            e2el_ms,
            request_throughput: num(small.get("request_throughput")),
            output_throughput: num(small.get("output_throughput")),
            flags,
            config,
            samples,
            reported,
            distributions_from: if from_arrays {
                "per_request"
            } else {
                "summary"
            }
            .into(),
        }
    }

    /// Requests in the file: the longest of its per-request arrays.
    pub(super) fn request_count(&self) -> usize {
        [
            self.ttfts.as_ref().map(Vec::len),
            self.output_lens.as_ref().map(Vec::len),
            self.input_lens.as_ref().map(Vec::len),
            self.itls
                .as_ref()
                .map(|i| i.offsets.len().saturating_sub(1)),
            self.errors.as_ref().map(|e| e.failed.len()),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
    }

    /// Every successful request's latencies (ms) and lengths, with the counts the
    /// flags need. E2E latency is TTFT plus the inter-token gaps when the file has no
    /// `e2els`; TPOT is (E2E − TTFT) / (output tokens − 1) when it has no `tpots`.
    pub(super) fn per_request(&self, n: usize, requested: Option<f64>) -> PerRequest {
        let ok = |i: usize| -> bool {
            self.errors
                .as_ref()
                .is_none_or(|e| !e.failed.get(i).copied().unwrap_or(false))
        };
        let at = |v: &Option<Vec<f64>>, i: usize| -> f64 {
            v.as_ref()
                .and_then(|v| v.get(i).copied())
                .unwrap_or(f64::NAN)
        };
        let itl_slice = |i: usize| -> Option<&[f64]> {
            let it = self.itls.as_ref()?;
            let (a, b) = (*it.offsets.get(i)?, *it.offsets.get(i + 1)?);
            Some(&it.flat[a..b])
        };
        let mut per = PerRequest::default();
        for i in (0..n).filter(|&i| ok(i)) {
            per.successes += 1;
            let t = at(&self.ttfts, i);
            let ol = at(&self.output_lens, i);
            let il = at(&self.input_lens, i);
            if self.ttfts.is_some() && t.is_nan() {
                per.nulls += 1;
            }
            if !t.is_nan() {
                per.ttft.push(t * 1000.0);
            }
            let gaps = itl_slice(i);
            let mut gap_sum = 0.0;
            let mut gap_nan = false;
            for &x in gaps.unwrap_or_default() {
                if x.is_nan() {
                    gap_nan = true;
                    per.nulls += 1;
                } else {
                    per.itl.push(x * 1000.0);
                    gap_sum += x;
                }
            }
            let e = if self.e2els.is_some() {
                at(&self.e2els, i)
            } else if gaps.is_some() && !gap_nan {
                t + gap_sum
            } else {
                f64::NAN
            };
            if !e.is_nan() {
                per.e2el.push(e * 1000.0);
            }
            let given_tpot = at(&self.tpots, i);
            if !given_tpot.is_nan() {
                per.tpot.push(given_tpot * 1000.0);
            } else if ol > 1.0 && !e.is_nan() && !t.is_nan() {
                per.tpot.push((e - t) / (ol - 1.0) * 1000.0);
            }
            if !ol.is_nan() {
                per.out_lens.push(ol);
                if ol <= 0.0 {
                    per.zero_out += 1;
                } else if ol <= 4.0 {
                    per.very_short += 1;
                }
                if requested.is_some_and(|r| ol < r) {
                    per.below_requested += 1;
                }
            }
            if !il.is_nan() {
                per.in_lens.push(il);
            }
        }
        per
    }
}

/// What the successful requests of a vLLM result measured, and what looked wrong.
#[derive(Default)]
pub(super) struct PerRequest {
    pub(super) ttft: Vec<f64>,
    pub(super) itl: Vec<f64>,
    pub(super) e2el: Vec<f64>,
    pub(super) tpot: Vec<f64>,
    pub(super) out_lens: Vec<f64>,
    pub(super) in_lens: Vec<f64>,
    pub(super) successes: u64,
    pub(super) nulls: u64,
    pub(super) zero_out: u64,
    pub(super) very_short: u64,
    pub(super) below_requested: u64,
}

/// The scalar keys of a vLLM result split into settings and reported results.
pub(super) fn settings_and_results(
    small: &Map<String, Value>,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut config = Map::new();
    let mut reported = Map::new();
    for (k, v) in small {
        if matches!(v, Value::Array(_) | Value::Object(_)) {
            continue;
        }
        let key = k.trim_end_matches(':').to_string();
        if is_result_key(&key) {
            reported.insert(key, v.clone());
        } else {
            config.insert(key, v.clone());
        }
    }
    (config, reported)
}

pub(super) fn push_length_flags(
    flags: &mut Vec<Flag>,
    successes: u64,
    zero_out: u64,
    very_short: u64,
    requested: Option<f64>,
    below_requested: u64,
) {
    if successes == 0 {
        return;
    }
    if zero_out > 0 {
        flags.push(flag(
            "zero_output",
            format!("{zero_out} successful requests produced no output tokens; they add requests, not work"),
        ));
    }
    if let Some(r) = requested {
        if below_requested > 0 {
            flags.push(flag(
                "short_outputs",
                format!(
                    "{below_requested} of {successes} requests stopped before the requested {r} output tokens (early EOS is not throughput; use --ignore-eos to compare)"
                ),
            ));
        }
    }
    // Ordinary chat data has a few one-word answers; 5% is where they start
    // to move throughput.
    if very_short * 20 >= successes && very_short > 0 {
        flags.push(flag(
            "very_short_outputs",
            format!(
                "{very_short} of {successes} requests ({:.0}%) produced 4 or fewer output tokens (early EOS is not throughput)",
                very_short as f64 * 100.0 / successes as f64
            ),
        ));
    }
}

/// Unit of a GenAI-Perf metric → factor to milliseconds.
pub(super) fn to_ms_factor(unit: Option<&str>) -> f64 {
    match unit.map(str::trim).unwrap_or("ms") {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "s" | "sec" | "seconds" => 1000.0,
        _ => 1.0,
    }
}

/// GenAI-Perf / AIPerf summary: metrics are objects
/// `{unit, avg, min, max, std, p50, p90, p95, p99 …}` at the top level or
/// under `records` / `metrics`.
pub(super) fn genai_perf_result(
    small: &Map<String, Value>,
    nan_replaced: u64,
) -> Option<BenchResult> {
    let holder = ["records", "metrics"]
        .iter()
        .find_map(|k| small.get(*k).and_then(Value::as_object))
        .filter(|m| m.values().any(|v| v.get("avg").is_some()))
        .unwrap_or(small);
    let metric = |name: &str| holder.get(name).and_then(Value::as_object);
    let stat = |name: &str| -> Summary {
        let Some(m) = metric(name) else {
            return Summary::default();
        };
        let k = to_ms_factor(m.get("unit").and_then(Value::as_str));
        let g = |key: &str| num(m.get(key)).map(|x| x * k);
        Summary {
            count: count(m.get("count")).unwrap_or(0),
            mean: g("avg").or_else(|| g("mean")),
            std: g("std"),
            min: g("min"),
            p50: g("p50"),
            p90: g("p90"),
            p95: g("p95"),
            p99: g("p99"),
            max: g("max"),
        }
    };
    let ttft_ms = stat("time_to_first_token");
    let e2el_ms = stat("request_latency");
    let itl = stat("inter_token_latency");
    if !has_any(&ttft_ms) && !has_any(&e2el_ms) && !has_any(&itl) {
        return None;
    }
    let avg = |name: &str| metric(name).and_then(|m| num(m.get("avg")));
    let completed = avg("request_count").map(|x| x.round() as u64);
    let failed = avg("error_request_count").map(|x| x.round() as u64);
    let mut config = Map::new();
    if let Some(cfg) = small.get("input_config").and_then(Value::as_object) {
        flatten_scalars(cfg, "", 3, &mut config);
    }
    let mut reported = Map::new();
    for (k, v) in holder {
        if let Some(a) = v.get("avg") {
            reported.insert(format!("{k}.avg"), a.clone());
        }
    }
    let mut flags = Vec::new();
    if let Some(f) = failed.filter(|f| *f > 0) {
        flags.push(flag("failures", format!("{f} requests failed")));
    }
    if let Some(osl) = metric("output_sequence_length") {
        if num(osl.get("min")).is_some_and(|m| m <= 0.0) {
            flags.push(flag(
                "zero_output",
                "some requests produced no output tokens".into(),
            ));
        }
    }
    if nan_replaced > 0 {
        flags.push(flag(
            "nan_values",
            format!("{nan_replaced} NaN/Infinity values were read as missing"),
        ));
    }
    Some(BenchResult {
        source: if is_aiperf(small) {
            "aiperf"
        } else {
            "genai_perf"
        }
        .into(),
        completed,
        failed,
        ttft_ms,
        // GenAI-Perf's inter_token_latency is per request (E2E−TTFT)/(tokens−1), i.e. TPOT.
        tpot_ms: itl,
        itl_ms: itl,
        e2el_ms,
        request_throughput: avg("request_throughput"),
        output_throughput: avg("output_token_throughput"),
        flags,
        config,
        samples: Samples::default(),
        reported,
        distributions_from: "summary".into(),
    })
}

/// Whether a GenAI-Perf-shaped export was written by AIPerf, its successor: AIPerf's
/// own top-level fields (`was_cancelled`, `error_summary`, `benchmark_duration`), its
/// `input_config.loadgen` section, or its command line.
pub(super) fn is_aiperf(small: &Map<String, Value>) -> bool {
    let config = small.get("input_config");
    ["was_cancelled", "error_summary", "benchmark_duration"]
        .iter()
        .any(|k| small.contains_key(*k))
        || config.and_then(|c| c.get("loadgen")).is_some()
        || config
            .and_then(|c| c.get("cli_command"))
            .and_then(Value::as_str)
            .is_some_and(|c| c.trim_start().starts_with("aiperf"))
}

/// The tool that wrote a run, for a page: `source` in words.
pub fn tool_label(source: &str) -> &str {
    match source {
        "vllm" => "vLLM bench serve",
        "genai_perf" => "GenAI-Perf",
        "aiperf" => "AIPerf",
        "guidellm" => "GuideLLM",
        other => other,
    }
}

/// One GuideLLM benchmark: `metrics.<name>.successful` distribution summaries
/// (`mean`, `median`, `std_dev`, `min`, `max`, `count`, `percentiles.pNN`).
pub(super) fn guidellm_result(b: &Map<String, Value>, nan_replaced: u64) -> BenchResult {
    let metrics = b.get("metrics").and_then(Value::as_object);
    let dist = |name: &str, k: f64| -> Summary {
        let Some(d) = metrics
            .and_then(|m| m.get(name))
            .and_then(|m| m.get("successful"))
            .and_then(Value::as_object)
        else {
            return Summary::default();
        };
        let pct = d.get("percentiles");
        let g = |key: &str| num(d.get(key)).map(|x| x * k);
        let p = |key: &str| num(pct.and_then(|p| p.get(key))).map(|x| x * k);
        Summary {
            count: count(d.get("count")).unwrap_or(0),
            mean: g("mean"),
            std: g("std_dev"),
            min: g("min"),
            p50: g("median").or_else(|| p("p50")),
            p90: p("p90"),
            p95: p("p95"),
            p99: p("p99"),
            max: g("max"),
        }
    };
    let totals = metrics
        .and_then(|m| m.get("request_totals"))
        .or_else(|| b.get("request_totals"))
        .and_then(Value::as_object);
    let tot = |k: &str| totals.and_then(|t| count(t.get(k)));
    let completed = tot("successful");
    let failed = tot("errored");
    let incomplete = tot("incomplete");
    let mut config = Map::new();
    for key in ["config", "args"] {
        if let Some(cfg) = b.get(key).and_then(Value::as_object) {
            flatten_scalars(cfg, "", 3, &mut config);
        }
    }
    for key in ["type_", "id_"] {
        if let Some(v) = b.get(key) {
            config.insert(key.trim_end_matches('_').to_string(), v.clone());
        }
    }
    let mut flags = Vec::new();
    if let Some(f) = failed.filter(|f| *f > 0) {
        flags.push(flag("failures", format!("{f} requests errored")));
    }
    if let Some(i) = incomplete.filter(|i| *i > 0) {
        flags.push(flag(
            "incomplete",
            format!("{i} requests were cut off at the end of the run"),
        ));
    }
    let out_tokens = dist("output_token_count", 1.0);
    if out_tokens.min.is_some_and(|m| m <= 0.0) {
        flags.push(flag(
            "zero_output",
            "some requests produced no output tokens".into(),
        ));
    }
    if nan_replaced > 0 {
        flags.push(flag(
            "nan_values",
            format!("{nan_replaced} NaN/Infinity values were read as missing"),
        ));
    }
    let mean_of = |name: &str| dist(name, 1.0).mean;
    BenchResult {
        source: "guidellm".into(),
        completed,
        failed,
        ttft_ms: dist("time_to_first_token_ms", 1.0),
        tpot_ms: dist("time_per_output_token_ms", 1.0),
        itl_ms: dist("inter_token_latency_ms", 1.0),
        // GuideLLM reports request latency in seconds.
        e2el_ms: dist("request_latency", 1000.0),
        request_throughput: mean_of("requests_per_second"),
        output_throughput: mean_of("output_tokens_per_second"),
        flags,
        config,
        samples: Samples::default(),
        reported: Map::new(),
        distributions_from: "summary".into(),
    }
}

/// Copy scalar leaves of `obj` into `out` with dotted keys, `depth` levels deep.
pub(super) fn flatten_scalars(
    obj: &Map<String, Value>,
    prefix: &str,
    depth: usize,
    out: &mut Map<String, Value>,
) {
    for (k, v) in obj {
        if out.len() >= 64 {
            return;
        }
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(m) if depth > 1 => flatten_scalars(m, &key, depth - 1, out),
            Value::Object(_) => {}
            Value::Array(a)
                if a.iter().all(|x| !x.is_object() && !x.is_array()) && a.len() <= 8 =>
            {
                out.insert(key, v.clone());
            }
            Value::Array(_) => {}
            _ => {
                out.insert(key, v.clone());
            }
        }
    }
}
