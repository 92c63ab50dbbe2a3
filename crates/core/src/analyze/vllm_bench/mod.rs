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

mod doc;
mod interpret;

use doc::*;
pub use interpret::tool_label;
use interpret::*;

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
