//! Serving-benchmark results: vLLM `bench serve --save-result` JSON (and the
//! JSON Lines of `--append-result`), GenAI-Perf / AIPerf
//! `profile_export*_genai_perf.json`-style summaries, and GuideLLM
//! `benchmarks.json`.
//!
//! vLLM files carry per-request arrays (`ttfts` and `itls` in **seconds**,
//! `input_lens`, `output_lens`, `errors`); distributions are computed from
//! them, over successful requests, as vLLM's `calculate_metrics` does:
//! TTFT per request, ITL = every inter-token gap flattened, E2E latency =
//! TTFT + Σ ITL (when no per-request latency is saved), and
//! TPOT = (E2E − TTFT) / (output_len − 1) for requests with more than one
//! output token. Summary keys (`mean_ttft_ms`, `median_…`, `p99_…`) are the
//! fallback. Python writes `NaN`; it is read as missing and flagged.
//!
//! Documents are walked with a serde visitor: per-request arrays are read
//! straight into f64 vectors, `generated_texts` is skipped, everything else is
//! kept only while small.

use super::lenient::{Float, Lenient};
use super::point::{distinct_loads, load_known, load_of, order, LatencyStats, SweepPoint};
use super::readers::NanToNull;
use super::AnalyzeError;
use crate::stats::Summary;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;
use std::io::{BufReader, Read};
use std::rc::Rc;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 3;

/// Arrays longer than this inside metadata are dropped (they are per-request
/// data we don't use, e.g. GuideLLM's `requests`).
const SMALL_ARRAY: usize = 64;
/// Most per-request values one list may hold (`ttfts`, `e2els` …: one per request).
/// 2M requests is twenty times the largest benchmark run we have seen; the cap keeps
/// the five lists within 80 MB whatever the file.
const MAX_REQUESTS: usize = 2_000_000;
/// Most inter-token latencies over all requests (96 MB of f64).
const MAX_ITLS: usize = 12_000_000;
/// Strings in metadata are cut to this many characters.
const SMALL_STRING: usize = 1024;
/// Keys kept per metadata object.
const SMALL_OBJECT: usize = 512;

/// A finding that makes a benchmark number misleading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    /// Stable identifier: `failures`, `errors`, `zero_output`, `short_outputs`,
    /// `very_short_outputs`, `nan_values`, `incomplete`, `no_distributions`,
    /// `no_successes` (no request completed: no latency at all).
    pub code: String,
    pub message: String,
}

fn flag(code: &str, message: String) -> Flag {
    Flag {
        code: code.to_string(),
        message,
    }
}

/// Every per-request value, in request order, for comparisons (which resample them
/// all) and charts. Empty when the tool saved only summaries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    pub ttft_ms: Vec<f64>,
    pub tpot_ms: Vec<f64>,
    pub itl_ms: Vec<f64>,
    pub e2el_ms: Vec<f64>,
    pub output_lens: Vec<f64>,
    pub input_lens: Vec<f64>,
}

impl Samples {
    fn is_empty(&self) -> bool {
        self.ttft_ms.is_empty()
            && self.tpot_ms.is_empty()
            && self.itl_ms.is_empty()
            && self.e2el_ms.is_empty()
            && self.output_lens.is_empty()
            && self.input_lens.is_empty()
    }
}

/// One benchmark run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// `vllm`, `genai_perf`, `aiperf` or `guidellm` ([`tool_label`] in words).
    pub source: String,
    pub completed: Option<u64>,
    pub failed: Option<u64>,
    pub ttft_ms: Summary,
    pub tpot_ms: Summary,
    pub itl_ms: Summary,
    pub e2el_ms: Summary,
    /// Successful requests per second, as reported.
    pub request_throughput: Option<f64>,
    /// Output tokens per second, as reported.
    pub output_throughput: Option<f64>,
    pub flags: Vec<Flag>,
    /// The run's settings: model_id, backend, num_prompts, request_rate (a
    /// number or "inf"), max_concurrency, … as given by the tool.
    pub config: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Samples::is_empty")]
    pub samples: Samples,
    /// Summary numbers exactly as the tool reported them.
    pub reported: Map<String, Value>,
    /// `per_request` when distributions come from the per-request arrays,
    /// `summary` when from the tool's summary keys.
    pub distributions_from: String,
}

/// Result of the benchmark analyzer: the last (or only) run at the top level,
/// and every run in `runs` when the file holds more than one (JSON Lines or a
/// GuideLLM sweep). Samples are kept only for the top-level run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VllmBenchAnalysis {
    #[serde(flatten)]
    pub result: BenchResult,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<BenchResult>,
    /// The runs as load-sweep points, when they ran at two or more loads (a GuideLLM
    /// sweep, JSON Lines of several rates); see [`super::sweep`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<SweepPoint>,
}

/// Analyze a benchmark result file (decompressed).
pub fn analyze<R: Read>(reader: R) -> Result<VllmBenchAnalysis, AnalyzeError> {
    let nan = NanToNull::new(reader);
    let replaced = Rc::new(Cell::new(0u64));
    let counting = NanCounter {
        inner: nan,
        out: replaced.clone(),
    };
    let buffered = BufReader::with_capacity(256 << 10, counting);
    let stream = serde_json::Deserializer::from_reader(buffered).into_iter::<RawDoc>();
    let mut results = Vec::new();
    let mut seen_nan = 0u64;
    for doc in stream {
        let doc = doc?;
        let nan_now = replaced.get() - seen_nan;
        seen_nan = replaced.get();
        results.extend(
            doc.into_results(nan_now)?
                .into_iter()
                .map(without_placeholders),
        );
    }
    let Some(last) = results.pop() else {
        return Err(AnalyzeError::malformed(
            "no benchmark result found (empty file)",
        ));
    };
    let runs = if results.is_empty() {
        Vec::new()
    } else {
        let mut all: Vec<BenchResult> = results
            .into_iter()
            .map(|mut r| {
                r.samples = Samples::default();
                r
            })
            .collect();
        let mut copy = last.clone();
        copy.samples = Samples::default();
        all.push(copy);
        all
    };
    let points = points_from_runs(&runs);
    Ok(VllmBenchAnalysis {
        result: last,
        runs,
        points,
    })
}

/// A run in which no request completed measured no latency: the tools still write
/// figures (vLLM 0.0 for every mean, median and p99; GenAI-Perf and GuideLLM may too),
/// and they are placeholders, not measurements. They are dropped (absent, not zero) and
/// a flag says why.
fn without_placeholders(mut r: BenchResult) -> BenchResult {
    if r.completed != Some(0) {
        return r;
    }
    let had: bool = [&r.ttft_ms, &r.tpot_ms, &r.itl_ms, &r.e2el_ms]
        .iter()
        .any(|s| has_any(s));
    for s in [
        &mut r.ttft_ms,
        &mut r.tpot_ms,
        &mut r.itl_ms,
        &mut r.e2el_ms,
    ] {
        *s = Summary::default();
    }
    r.samples = Samples::default();
    r.flags
        .retain(|f| f.code != "no_distributions" && f.code != "failures");
    let failed = match r.failed.filter(|f| *f > 0) {
        Some(f) => format!("all {f} requests failed"),
        None => "no request completed".to_string(),
    };
    let placeholders = if had {
        format!(
            "; the latency figures the file gives ({}) are placeholders and are not shown",
            if r.source == "vllm" {
                "0.0 ms, as vLLM writes when nothing completed"
            } else {
                "the tool's, over no request"
            }
        )
    } else {
        String::new()
    };
    r.flags.push(flag(
        "no_successes",
        format!("{failed}: no latency was measured{placeholders}"),
    ));
    r
}

/// Exposes the NaN rewrite count while the deserializer owns the reader.
struct NanCounter<R> {
    inner: NanToNull<R>,
    out: Rc<Cell<u64>>,
}

impl<R: Read> Read for NanCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out.set(self.inner.replaced);
        Ok(n)
    }
}

// ---------------------------------------------------------------------------
// Streaming document model

/// Inter-token latencies flattened, with per-request offsets.
#[derive(Default)]
struct Itls {
    flat: Vec<f64>,
    /// `offsets[i]..offsets[i+1]` are request i's gaps.
    offsets: Vec<usize>,
}

/// The `errors` array reduced to what we need.
#[derive(Default)]
struct Errors {
    failed: Vec<bool>,
    count: u64,
    first: Vec<String>,
}

/// One top-level JSON object of the file.
#[derive(Default)]
struct RawDoc {
    small: Map<String, Value>,
    ttfts: Option<Vec<f64>>,
    e2els: Option<Vec<f64>>,
    tpots: Option<Vec<f64>>,
    input_lens: Option<Vec<f64>>,
    output_lens: Option<Vec<f64>>,
    itls: Option<Itls>,
    errors: Option<Errors>,
}

impl<'de> Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = RawDoc;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a benchmark result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDoc, A::Error> {
        let mut doc = RawDoc::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "ttfts" => doc.ttfts = Some(map.next_value_seed(FloatList)?),
                "e2els" | "latencies" => doc.e2els = Some(map.next_value_seed(FloatList)?),
                "tpots" => doc.tpots = Some(map.next_value_seed(FloatList)?),
                "input_lens" => doc.input_lens = Some(map.next_value_seed(FloatList)?),
                "output_lens" => doc.output_lens = Some(map.next_value_seed(FloatList)?),
                "itls" => doc.itls = Some(map.next_value_seed(ItlSeed)?),
                "errors" => doc.errors = Some(map.next_value_seed(ErrorSeed)?),
                "generated_texts" | "start_times" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "benchmarks" => {
                    let v = map.next_value_seed(Bounded { max_array: 4096 })?;
                    doc.small.insert(key, v);
                }
                _ => {
                    let v = map.next_value_seed(Bounded {
                        max_array: SMALL_ARRAY,
                    })?;
                    if doc.small.len() < SMALL_OBJECT * 4 {
                        doc.small.insert(key, v);
                    }
                }
            }
        }
        Ok(doc)
    }
}

/// A JSON array of numbers as f64 (NaN for null / non-numbers).
struct FloatList;

impl<'de> DeserializeSeed<'de> for FloatList {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<f64>, D::Error> {
        d.deserialize_any(FloatListVisitor)
    }
}

struct FloatListVisitor;

impl<'de> Visitor<'de> for FloatListVisitor {
    type Value = Vec<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(x) = seq.next_element_seed(Lenient(Float))? {
            if v.len() == MAX_REQUESTS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_REQUESTS} per-request values in one list; this is not one benchmark run"
                )));
            }
            v.push(x);
        }
        Ok(v)
    }
    fn visit_unit<E>(self) -> Result<Vec<f64>, E> {
        Ok(Vec::new())
    }
}

/// `itls`: an array of per-request arrays, flattened on the fly.
struct ItlSeed;

impl<'de> DeserializeSeed<'de> for ItlSeed {
    type Value = Itls;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Itls, D::Error> {
        d.deserialize_any(ItlVisitor)
    }
}

struct ItlVisitor;

impl<'de> Visitor<'de> for ItlVisitor {
    type Value = Itls;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of arrays of inter-token latencies")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Itls, A::Error> {
        let mut itls = Itls {
            flat: Vec::new(),
            offsets: vec![0],
        };
        while seq
            .next_element_seed(ItlRow {
                flat: &mut itls.flat,
            })?
            .is_some()
        {
            if itls.offsets.len() > MAX_REQUESTS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_REQUESTS} requests' inter-token latencies; this is not one benchmark run"
                )));
            }
            itls.offsets.push(itls.flat.len());
        }
        Ok(itls)
    }
    fn visit_unit<E>(self) -> Result<Itls, E> {
        Ok(Itls::default())
    }
}

struct ItlRow<'a> {
    flat: &'a mut Vec<f64>,
}

impl<'de> DeserializeSeed<'de> for ItlRow<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItlRow<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(x) = seq.next_element_seed(Lenient(Float))? {
            if self.flat.len() == MAX_ITLS {
                return Err(de::Error::custom(format!(
                    "more than {MAX_ITLS} inter-token latencies; this is not one benchmark run"
                )));
            }
            self.flat.push(x);
        }
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.flat.push(v);
        Ok(())
    }
}

/// `errors`: one string per request, empty on success.
struct ErrorSeed;

impl<'de> DeserializeSeed<'de> for ErrorSeed {
    type Value = Errors;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Errors, D::Error> {
        d.deserialize_any(ErrorVisitor)
    }
}

struct ErrorVisitor;

impl<'de> Visitor<'de> for ErrorVisitor {
    type Value = Errors;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of error strings")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Errors, A::Error> {
        let mut e = Errors::default();
        while let Some(v) = seq.next_element_seed(Bounded { max_array: 4 })? {
            let msg = match v {
                Value::Null => String::new(),
                Value::String(s) => s,
                Value::Bool(false) => String::new(),
                other => other.to_string(),
            };
            let failed = !msg.trim().is_empty();
            e.failed.push(failed);
            if failed {
                e.count += 1;
                let short: String = msg.trim().chars().take(300).collect();
                if e.first.len() < 3 && !e.first.contains(&short) {
                    e.first.push(short);
                }
            }
        }
        Ok(e)
    }
    fn visit_unit<E>(self) -> Result<Errors, E> {
        Ok(Errors::default())
    }
}

/// A JSON value kept only while small: long arrays become null, long strings
/// are cut, so metadata can't hold a whole upload in memory.
struct Bounded {
    max_array: usize,
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(BoundedVisitor {
            max_array: self.max_array,
        })
    }
}

struct BoundedVisitor {
    max_array: usize,
}

impl<'de> Visitor<'de> for BoundedVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.chars().take(SMALL_STRING).collect()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        if v.len() <= SMALL_STRING {
            Ok(Value::String(v))
        } else {
            Ok(Value::String(v.chars().take(SMALL_STRING).collect()))
        }
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        let mut too_long = false;
        loop {
            if v.len() >= self.max_array {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                too_long = true;
                continue;
            }
            match seq.next_element_seed(Bounded {
                max_array: SMALL_ARRAY,
            })? {
                Some(x) => v.push(x),
                None => break,
            }
        }
        Ok(if too_long {
            Value::Null
        } else {
            Value::Array(v)
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.len() >= SMALL_OBJECT {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let v = map.next_value_seed(Bounded {
                max_array: SMALL_ARRAY,
            })?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

// ---------------------------------------------------------------------------
// Interpretation

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok().filter(|x: &f64| x.is_finite()),
        _ => None,
    }
}

fn count(v: Option<&Value>) -> Option<u64> {
    num(v).filter(|x| *x >= 0.0).map(|x| x.round() as u64)
}

/// Does `key` name a reported statistic such as `p99_ttft_ms` or `mean_e2el_ms`?
fn is_stat_key(key: &str) -> bool {
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
fn is_result_key(key: &str) -> bool {
    is_stat_key(key)
        || key.ends_with("_throughput")
        || key.starts_with("request_goodput")
        || (key.starts_with("total_") && key.ends_with("_tokens"))
        || matches!(key, "duration" | "completed" | "failed")
}

/// Summary from keys like `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`.
fn summary_from_keys(small: &Map<String, Value>, metric: &str, count: Option<u64>) -> Summary {
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

fn has_any(s: &Summary) -> bool {
    s.mean.is_some() || s.p50.is_some() || s.p99.is_some()
}

impl RawDoc {
    fn into_results(self, nan_replaced: u64) -> Result<Vec<BenchResult>, AnalyzeError> {
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

    fn vllm_result(self, nan_replaced: u64) -> BenchResult {
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
    fn request_count(&self) -> usize {
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
    fn per_request(&self, n: usize, requested: Option<f64>) -> PerRequest {
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
struct PerRequest {
    ttft: Vec<f64>,
    itl: Vec<f64>,
    e2el: Vec<f64>,
    tpot: Vec<f64>,
    out_lens: Vec<f64>,
    in_lens: Vec<f64>,
    successes: u64,
    nulls: u64,
    zero_out: u64,
    very_short: u64,
    below_requested: u64,
}

/// The scalar keys of a vLLM result split into settings and reported results.
fn settings_and_results(small: &Map<String, Value>) -> (Map<String, Value>, Map<String, Value>) {
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

fn push_length_flags(
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
fn to_ms_factor(unit: Option<&str>) -> f64 {
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
fn genai_perf_result(small: &Map<String, Value>, nan_replaced: u64) -> Option<BenchResult> {
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
fn is_aiperf(small: &Map<String, Value>) -> bool {
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
fn guidellm_result(b: &Map<String, Value>, nan_replaced: u64) -> BenchResult {
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
fn flatten_scalars(
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

// ---------------------------------------------------------------------------
// Runs as sweep points

/// One run as a point.
pub fn point_of(run: &BenchResult, label: &str) -> SweepPoint {
    let load = load_of(&run.config);
    SweepPoint {
        series: String::new(),
        label: label.to_string(),
        offered_rate: load.offered_rate,
        concurrency: load.concurrency,
        unbounded: load.unbounded,
        achieved_rps: run.request_throughput,
        output_tps: run.output_throughput,
        requests: run.completed,
        ttft_ms: LatencyStats::from_summary(&run.ttft_ms),
        tpot_ms: LatencyStats::from_summary(&run.tpot_ms),
        itl_ms: LatencyStats::from_summary(&run.itl_ms),
        e2el_ms: LatencyStats::from_summary(&run.e2el_ms),
        artifact_id: None,
    }
}

/// The runs of one file as sweep points, in load order, when they ran at two or more
/// distinct loads (repeats at one load are not a sweep: empty then).
pub fn points_from_runs(runs: &[BenchResult]) -> Vec<SweepPoint> {
    let mut points: Vec<SweepPoint> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| point_of(r, &format!("run {}", i + 1)))
        .collect();
    if points.iter().any(|p| !load_known(p)) || distinct_loads(&points) < 2 {
        return Vec::new();
    }
    order(&mut points);
    points
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{open, real_fixtures};
    use super::*;
    use serde_json::json;

    fn run(text: &str) -> VllmBenchAnalysis {
        analyze(text.as_bytes()).unwrap()
    }

    fn close(a: Option<f64>, b: f64, tol: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= tol * b.abs().max(1e-12))
    }

    #[test]
    fn per_request_arrays_drive_distributions() {
        let doc = json!({
            "backend": "vllm", "model_id": "m", "num_prompts": 3, "request_rate": "inf",
            "max_concurrency": null, "completed": 2, "request_throughput": 1.5,
            "output_throughput": 30.0, "mean_ttft_ms": 999.0,
            "ttfts": [0.1, 0.2, 0.0],
            "itls": [[0.01, 0.03], [0.02], []],
            "output_lens": [3, 2, 0],
            "input_lens": [10, 20, 30],
            "errors": ["", "", "Timeout"],
            "generated_texts": ["a b c", "d e", ""]
        });
        let a = run(&doc.to_string());
        let r = &a.result;
        assert_eq!(r.completed, Some(2));
        assert_eq!(r.failed, Some(1));
        assert_eq!(r.distributions_from, "per_request");
        assert!(close(r.ttft_ms.mean, 150.0, 1e-9), "{:?}", r.ttft_ms);
        assert_eq!(r.itl_ms.count, 3);
        assert!(close(r.itl_ms.p50, 20.0, 1e-9));
        // e2el = ttft + Σitl: 140 ms and 220 ms.
        assert!(close(r.e2el_ms.min, 140.0, 1e-9) && close(r.e2el_ms.max, 220.0, 1e-9));
        // tpot = (e2el − ttft)/(out − 1): 40/2 = 20 and 20/1 = 20.
        assert!(close(r.tpot_ms.mean, 20.0, 1e-9));
        assert_eq!(r.config["request_rate"], "inf");
        assert_eq!(r.config["model_id"], "m");
        assert_eq!(r.reported["mean_ttft_ms"], 999.0);
        assert!(r.flags.iter().any(|f| f.code == "failures"));
        assert!(r
            .flags
            .iter()
            .any(|f| f.code == "errors" && f.message.contains("Timeout")));
        assert!(r.flags.iter().any(|f| f.code == "very_short_outputs"));
        assert_eq!(r.samples.ttft_ms.len(), 2);
        assert!(a.runs.is_empty());
        let v = serde_json::to_value(&a).unwrap();
        for k in [
            "completed",
            "failed",
            "ttft_ms",
            "tpot_ms",
            "itl_ms",
            "e2el_ms",
            "request_throughput",
            "output_throughput",
            "flags",
            "config",
            "samples",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        for k in ["mean", "p50", "p90", "p95", "p99"] {
            assert!(v["ttft_ms"].get(k).is_some());
        }
    }

    #[test]
    fn summary_keys_are_the_fallback_and_nan_is_flagged() {
        let text = r#"{"date": "x", "completed": 10, "num_prompts": 12, "request_goodput:": null,
            "mean_ttft_ms": 50.0, "median_ttft_ms": 45.0, "p99_ttft_ms": NaN, "mean_tpot_ms": 20,
            "request_throughput": 2.0, "output_len": 128}"#;
        let a = run(text);
        let r = &a.result;
        assert_eq!(r.distributions_from, "summary");
        assert_eq!(r.ttft_ms.mean, Some(50.0));
        assert_eq!(r.ttft_ms.p50, Some(45.0));
        assert_eq!(r.ttft_ms.p99, None);
        assert_eq!(r.ttft_ms.count, 10);
        assert_eq!(r.failed, Some(2));
        assert!(r.reported.contains_key("request_goodput"));
        assert!(
            r.flags.iter().any(|f| f.code == "nan_values"),
            "{:?}",
            r.flags
        );
        assert!(r.flags.iter().any(|f| f.code == "failures"));
        assert_eq!(r.config["output_len"], 128);
    }

    #[test]
    fn json_lines_give_runs_and_early_eos_is_flagged() {
        let mut text = String::new();
        for rate in [1, 2, 4] {
            let doc = json!({"request_rate": rate, "completed": 2, "random_output_len": 100,
                "ttfts": [0.1, 0.1], "itls": [[0.01], [0.01]], "output_lens": [100, 2]});
            text.push_str(&doc.to_string());
            text.push('\n');
        }
        let a = run(&text);
        assert_eq!(a.runs.len(), 3);
        assert_eq!(a.result.config["request_rate"], 4);
        assert!(a.runs.iter().all(|r| r.samples.is_empty()));
        assert!(!a.result.samples.is_empty());
        assert!(
            a.result.flags.iter().any(|f| f.code == "short_outputs"),
            "{:?}",
            a.result.flags
        );
    }

    /// Shaped like vLLM 0.25.1's `bench serve --save-result` of a run whose 8 requests
    /// all failed: no per-request arrays, and 0.0 for every latency figure.
    #[test]
    fn a_run_with_no_completed_request_shows_no_latency() {
        let mut doc = json!({"date": "20260818-041350", "endpoint_type": "vllm", "backend": "vllm",
            "label": null, "model_id": "facebook/opt-125m", "num_prompts": 8, "request_rate": "inf",
            "burstiness": 1.0, "max_concurrency": null, "duration": 0.005, "completed": 0, "failed": 8,
            "total_input_tokens": 0, "total_output_tokens": 0, "request_throughput": 0.0,
            "request_goodput": null, "output_throughput": 0.0, "total_token_throughput": 0.0,
            "max_output_tokens_per_s": 0.0, "max_concurrent_requests": 0, "rtfx": 0.0});
        for m in ["ttft", "tpot", "itl"] {
            for stat in ["mean", "median", "std", "p99"] {
                doc[format!("{stat}_{m}_ms")] = json!(0.0);
            }
        }
        let r = run(&doc.to_string()).result;
        assert_eq!((r.completed, r.failed), (Some(0), Some(8)));
        for s in [&r.ttft_ms, &r.tpot_ms, &r.itl_ms, &r.e2el_ms] {
            assert_eq!(*s, Summary::default(), "absent, not zero");
        }
        // The throughputs are true: nothing completed per second.
        assert_eq!(r.request_throughput, Some(0.0));
        let codes: Vec<&str> = r.flags.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["no_successes"], "{:?}", r.flags);
        assert_eq!(
            r.flags[0].message,
            "all 8 requests failed: no latency was measured; the latency figures the file \
             gives (0.0 ms, as vLLM writes when nothing completed) are placeholders and are \
             not shown"
        );
        // As the tool wrote them, still.
        assert_eq!(r.reported["mean_ttft_ms"], 0.0);
        // One run that completed keeps its figures.
        doc["completed"] = json!(1);
        doc["failed"] = json!(7);
        let r = run(&doc.to_string()).result;
        assert_eq!(r.ttft_ms.mean, Some(0.0));
        assert!(r.flags.iter().any(|f| f.code == "failures"));
    }

    #[test]
    fn aiperf_exports_are_labelled_aiperf() {
        let mut doc = json!({
            "request_latency": {"unit": "ms", "avg": 900.0, "p50": 850.0},
            "time_to_first_token": {"unit": "ms", "avg": 80.0, "p50": 70.0},
            "request_count": {"unit": "requests", "avg": 100.0},
            "was_cancelled": false,
            "input_config": {"loadgen": {"concurrency": 1}, "cli_command": "aiperf profile -m x"}
        });
        assert_eq!(run(&doc.to_string()).result.source, "aiperf");
        assert_eq!(tool_label("aiperf"), "AIPerf");
        doc.as_object_mut().unwrap().remove("was_cancelled");
        doc["input_config"] = json!({"cli_command": "aiperf profile"});
        assert_eq!(run(&doc.to_string()).result.source, "aiperf");
        doc["input_config"] = json!({"perf_analyzer": {"stimulus": {"concurrency": 1}}});
        assert_eq!(run(&doc.to_string()).result.source, "genai_perf");
        assert_eq!(tool_label("genai_perf"), "GenAI-Perf");
    }

    #[test]
    fn genai_perf_summary() {
        let doc = json!({
            "request_throughput": {"unit": "requests/sec", "avg": 4.2},
            "request_latency": {"unit": "ms", "avg": 900.0, "p50": 850.0, "p90": 1200.0, "p95": 1300.0, "p99": 1500.0},
            "time_to_first_token": {"unit": "ms", "avg": 80.0, "p50": 70.0, "p99": 200.0},
            "inter_token_latency": {"unit": "ns", "avg": 20_000_000.0, "p50": 19_000_000.0},
            "output_token_throughput": {"unit": "tokens/sec", "avg": 800.0},
            "request_count": {"unit": "count", "avg": 100},
            "input_config": {"model": ["llama"], "endpoint_type": "chat", "perf_analyzer": {"stimulus": {"concurrency": 8}}}
        });
        let r = run(&doc.to_string()).result;
        assert_eq!(r.source, "genai_perf");
        assert_eq!(r.completed, Some(100));
        assert_eq!(r.e2el_ms.p95, Some(1300.0));
        assert!(close(r.itl_ms.mean, 20.0, 1e-9));
        assert_eq!(r.request_throughput, Some(4.2));
        assert_eq!(r.output_throughput, Some(800.0));
        assert_eq!(r.config["endpoint_type"], "chat");
        assert_eq!(r.config["perf_analyzer.stimulus.concurrency"], 8);
    }

    #[test]
    fn guidellm_sweep() {
        let bench = |rate: f64, errored: u64| {
            json!({
                "type_": "generative_benchmark",
                "config": {"strategy": {"type_": "constant", "rate": rate}},
                "metrics": {
                    "request_totals": {"successful": 50, "errored": errored, "incomplete": 0, "total": 50 + errored},
                    "requests_per_second": {"successful": {"mean": rate}},
                    "output_tokens_per_second": {"successful": {"mean": rate * 100.0}},
                    "request_latency": {"successful": {"mean": 1.5, "median": 1.4, "count": 50,
                        "percentiles": {"p90": 2.0, "p95": 2.5, "p99": 3.0}}},
                    "time_to_first_token_ms": {"successful": {"mean": 120.0, "median": 110.0, "count": 50,
                        "percentiles": {"p50": 110.0, "p99": 300.0}}},
                    "inter_token_latency_ms": {"successful": {"mean": 15.0}},
                    "time_per_output_token_ms": {"successful": {"mean": 16.0}}
                },
                "requests": {"successful": (0..200).map(|i| json!({"id": i})).collect::<Vec<_>>()}
            })
        };
        let doc = json!({"benchmarks": [bench(1.0, 0), bench(5.0, 3)]});
        let a = run(&doc.to_string());
        assert_eq!(a.runs.len(), 2);
        let r = &a.result;
        assert_eq!(r.source, "guidellm");
        assert_eq!(r.completed, Some(50));
        assert_eq!(r.failed, Some(3));
        assert_eq!(r.e2el_ms.p95, Some(2500.0));
        assert_eq!(r.ttft_ms.p99, Some(300.0));
        assert_eq!(r.request_throughput, Some(5.0));
        assert_eq!(r.config["strategy.rate"], 5.0);
        assert!(r.flags.iter().any(|f| f.code == "failures"));
    }

    #[test]
    fn not_a_benchmark() {
        let e = analyze(&b"{\"hello\": 1}"[..]).unwrap_err();
        assert!(e.to_string().contains("no benchmark fields"), "{e}");
        let e = analyze(&b""[..]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = analyze(&b"{\"completed\": 1,"[..]).unwrap_err();
        assert!(matches!(e, AnalyzeError::Malformed { .. }), "{e}");
    }

    #[test]
    fn stat_key_patterns() {
        for k in [
            "mean_ttft_ms",
            "median_itl_ms",
            "std_e2el_ms",
            "p99_tpot_ms",
            "p99.9_ttft_ms",
        ] {
            assert!(is_stat_key(k), "{k}");
        }
        for k in ["ttfts", "model_id", "mean_ms", "duration"] {
            assert!(!is_stat_key(k), "{k}");
        }
    }

    /// The real fixture: vLLM's reported summary must match what we compute
    /// from its per-request arrays.
    #[test]
    fn real_vllm_fixture_matches_reported_summary() {
        let Some(root) = real_fixtures() else { return };
        let f = open(
            &root,
            "vllm_bench/llmk8s__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_04.json",
        );
        let a = analyze(f).unwrap();
        let r = &a.result;
        assert_eq!(r.completed, Some(200));
        assert_eq!(r.failed, Some(0));
        assert_eq!(r.config["model_id"], "meta-llama/Llama-3.3-70B-Instruct");
        assert_eq!(r.config["request_rate"], 4.0);
        assert_eq!(r.distributions_from, "per_request");
        let rep = |k: &str| r.reported[k].as_f64().unwrap();
        assert!(close(r.ttft_ms.mean, rep("mean_ttft_ms"), 1e-9));
        assert!(close(r.ttft_ms.p50, rep("median_ttft_ms"), 1e-9));
        assert!(close(r.ttft_ms.p99, rep("p99_ttft_ms"), 1e-9));
        assert!(close(r.itl_ms.mean, rep("mean_itl_ms"), 1e-9));
        assert!(close(r.itl_ms.p99, rep("p99_itl_ms"), 1e-9));
        // TPOT uses Σ ITL instead of the saved-nowhere request latency: within 0.01 %.
        assert!(close(r.tpot_ms.mean, rep("mean_tpot_ms"), 1e-4));
        assert!(close(r.tpot_ms.p50, rep("median_tpot_ms"), 1e-4));
        assert!(r.e2el_ms.count == 200);
        assert_eq!(r.samples.ttft_ms.len(), 200);
        assert!(r.request_throughput.is_some());
        assert!(!r.flags.iter().any(|f| f.code == "failures"));
    }
}
