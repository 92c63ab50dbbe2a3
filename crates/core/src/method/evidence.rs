//! Filling a step's form from an analyzed artifact: a benchmark's TTFT the observed
//! metric (step 1), per-request telemetry or a server's histograms the phase table
//! (step 2), a profiler trace GPU busy time against its span (step 3), an Nsight
//! Compute profile the kernel throughputs (step 4), a kernel summary or a trace the
//! ranked kernels (step 5). The result is form pairs for a person to review and save,
//! never a stored record by itself.

use std::collections::BTreeMap;

use super::per_token::StepFigure;
use super::phases::{Phase, PhaseRow};
use super::regime::regime;
use super::setup_check::Claimed;
use crate::analyze::ncu::NcuAnalysis;
use crate::analyze::nsys::NsysAnalysis;
use crate::analyze::prometheus::{Bucket, PrometheusAnalysis};
use crate::analyze::pytorch_trace::TraceAnalysis;
use crate::analyze::request_log::RequestLogAnalysis;
use crate::analyze::{Analysis, Kind};
use crate::metric::Metric;
use crate::pairs::Pairs;

/// Kernels offered to a form: the ones that hold the time.
const TOP_KERNELS: usize = 8;

/// Artifact kinds whose analysis can fill `step`'s form.
pub fn kinds_for(step: u8) -> &'static [Kind] {
    match step {
        1 => &[Kind::VllmBench, Kind::Prometheus, Kind::PrometheusRange],
        2 => &[
            Kind::RequestLog,
            Kind::OtlpSpans,
            Kind::Prometheus,
            Kind::PrometheusRange,
        ],
        3 => &[Kind::PytorchTrace, Kind::NsysSqlite],
        4 => &[Kind::NcuCsv],
        5 => &[
            Kind::NsysKernSum,
            Kind::NcuCsv,
            Kind::PytorchTrace,
            Kind::NsysSqlite,
        ],
        _ => &[],
    }
}

/// [`kinds_for`] as the page names them ("vllm_bench or prometheus …").
pub fn kinds_named(step: u8) -> String {
    let slugs: Vec<&str> = kinds_for(step).iter().map(|k| k.slug()).collect();
    slugs.join(" or ")
}

/// The form pairs for `step` from an artifact's analysis, with a few words on what they
/// came from ("40 requests", "6 kernels"); `None` when that kind cannot fill that step.
pub fn fill(step: u8, analysis: &Analysis) -> Option<(Pairs, String)> {
    if !kinds_for(step).contains(&analysis.kind()) {
        return None;
    }
    match (step, analysis) {
        // A server's window reads as two scrapes do: its `window` summary.
        (_, Analysis::PrometheusRange(a)) => {
            let (pairs, what) = fill(step, &Analysis::Prometheus(a.window.clone()))?;
            let span = crate::fmt::format_number(a.window_s as f64, 0);
            Some((pairs, format!("{what}; Prometheus window of {span} s")))
        }
        (1, Analysis::Prometheus(a)) => {
            let q = a.quantiles.get("ttft_s")?;
            let p95 = q.p95?;
            let mut pairs = vec![
                ("metric".to_string(), "ttft".to_string()),
                ("percentile".to_string(), "p95".to_string()),
                ("observed".to_string(), round2(p95 * 1000.0)),
                ("unit".to_string(), "ms".to_string()),
            ];
            if let Some(b) = q.buckets.get("p95") {
                pairs.push(("observed.bucket".to_string(), bucket_note(b)));
            }
            Some((
                Pairs::new(pairs),
                format!(
                    "{} TTFT histogram, p95 of {} requests (a bucket estimate); add the target",
                    a.engine,
                    crate::fmt::format_number(q.count, 0)
                ),
            ))
        }
        (1, Analysis::VllmBench(a)) => {
            let p95 = a.result.ttft_ms.p95?;
            let pairs = vec![
                ("metric".to_string(), "ttft".to_string()),
                ("percentile".to_string(), "p95".to_string()),
                ("observed".to_string(), round2(p95)),
                ("unit".to_string(), "ms".to_string()),
            ];
            let n = a.result.completed.unwrap_or(a.result.ttft_ms.count);
            Some((
                Pairs::new(pairs),
                format!("TTFT p95 of {n} requests; add the target"),
            ))
        }
        (2, Analysis::Prometheus(a)) => {
            let pairs = histogram_phases(a);
            (!pairs.is_empty()).then(|| {
                (
                    Pairs::new(pairs),
                    format!("{} server histograms (bucket estimates)", a.engine),
                )
            })
        }
        (2, Analysis::RequestLog(a)) => Some((phases(a), format!("{} requests", a.rows))),
        // Request spans are analysed as a request log (the analysis carries its fields).
        (2, Analysis::OtlpSpans(a)) => {
            Some((phases(&a.requests), format!("{} requests", a.requests.rows)))
        }
        (3, _) => {
            let t = trace_of(analysis)?.temporal.first()?;
            let pairs = vec![
                ("gpu_total".to_string(), round2(t.busy_us / 1000.0)),
                ("wall".to_string(), round2(t.span_us / 1000.0)),
            ];
            Some((
                Pairs::new(pairs),
                "GPU busy and span in ms. CPU busy time is left blank: the trace records when \
                 operators ran, not how busy the host thread was. The step saves without it \
                 and then judges only whether the GPU is the limit; add the busiest \
                 request-path thread's CPU time from a CPU profile of the same window to tell \
                 CPU-bound from waiting"
                    .to_string(),
            ))
        }
        (4, Analysis::NcuCsv(a)) => {
            let top = by_kernel(a);
            Some((throughputs(&top), format!("{} kernels", top.len())))
        }
        (5, Analysis::NsysKernSum(a)) => {
            let pairs = nsys_kernels(a);
            Some((
                pairs,
                format!("{} kernels", a.kernels.len().min(TOP_KERNELS)),
            ))
        }
        (5, Analysis::NcuCsv(a)) => {
            let top = by_kernel(a);
            Some((ncu_kernels(&top), format!("{} kernels", top.len())))
        }
        (5, _) => {
            let a = trace_of(analysis)?;
            Some((
                trace_kernels(a),
                format!("{} kernels", a.kernels.len().min(TOP_KERNELS)),
            ))
        }
        _ => None,
    }
}

/// The trace analysis a result holds: a PyTorch trace's, or the one an Nsight Systems
/// export's analysis carries.
fn trace_of(analysis: &Analysis) -> Option<&TraceAnalysis> {
    match analysis {
        Analysis::PytorchTrace(a) => Some(a),
        Analysis::NsysSqlite(a) => Some(&a.trace),
        _ => None,
    }
}

/// The request-log analysis a result holds (a request log's, or request spans').
fn requests_of(analysis: &Analysis) -> Option<&RequestLogAnalysis> {
    match analysis {
        Analysis::RequestLog(a) => Some(a),
        Analysis::OtlpSpans(a) => Some(&a.requests),
        _ => None,
    }
}

/// [`fill`] for an investigation whose step 1 chose `metric`: a request log's step-2
/// rows also carry each phase's share of that metric as the analysis computed it
/// (Σ phase ÷ Σ TTFT, or ÷ Σ E2E), so the step uses the one definition of a share.
pub fn fill_for(step: u8, analysis: &Analysis, metric: Option<Metric>) -> Option<(Pairs, String)> {
    let (mut pairs, what) = fill(step, analysis)?;
    if step == 2 {
        if let Some(a) = requests_of(analysis) {
            let shares = match metric {
                Some(Metric::Ttft) => Some(&a.share_of_ttft),
                Some(Metric::E2e) => Some(&a.share_of_e2e),
                _ => None,
            };
            for (key, share) in shares.into_iter().flatten() {
                let Some(phase) = Phase::ALL
                    .iter()
                    .find(|p| format!("{}_ms", p.slug()) == *key)
                else {
                    continue;
                };
                if pairs.get(&format!("{}.p50", phase.slug())).is_some() {
                    pairs = pairs.with(
                        &format!("{}.share", phase.slug()),
                        format!("{}", (share * 10_000.0).round() / 10_000.0),
                    );
                }
            }
        }
    }
    Some((pairs, what))
}

fn round2(v: f64) -> String {
    format!("{}", (v * 100.0).round() / 100.0)
}

/// Each phase's p50/p90/p95/p99 (`queue_wait_ms` → queue wait, …), ms per request,
/// and the per-token figures of the decode step (each request's TPOT, ITL p50 and ITL
/// p99: `tpot_ms` → `tpot.p50`, …), ms per token. Network time is not in server
/// telemetry.
pub fn phases(analysis: &RequestLogAnalysis) -> Pairs {
    let mut pairs = Vec::new();
    let slugs = Phase::ALL
        .iter()
        .map(|p| p.slug())
        .chain(StepFigure::ALL.iter().map(|f| f.slug()));
    for slug in slugs {
        let Some(s) = analysis.phases.get(&format!("{slug}_ms")) else {
            continue;
        };
        for (col, v) in [
            ("p50", s.p50),
            ("p90", s.p90),
            ("p95", s.p95),
            ("p99", s.p99),
        ] {
            if let Some(v) = v {
                pairs.push((format!("{slug}.{col}"), round2(v)));
            }
        }
    }
    Pairs::new(pairs)
}

/// One kernel over all its profiled launches: total time, and throughputs and
/// occupancy weighted by each launch's duration.
#[derive(Debug, Clone, PartialEq)]
struct KernelTotal {
    name: String,
    total_us: f64,
    share: f64,
    sm_pct: Option<f64>,
    dram_pct: Option<f64>,
    occupancy_pct: Option<f64>,
    launches: usize,
}

fn by_kernel(a: &NcuAnalysis) -> Vec<KernelTotal> {
    #[derive(Default)]
    struct Acc {
        total: f64,
        launches: usize,
        sums: [(f64, f64); 3],
    }
    let mut acc: BTreeMap<&str, Acc> = BTreeMap::new();
    for k in &a.kernels {
        let d = k.duration_us.unwrap_or(0.0).max(0.0);
        let e = acc.entry(k.name.as_str()).or_default();
        e.total += d;
        e.launches += 1;
        for (slot, v) in [k.sm_pct, k.dram_pct, k.achieved_occupancy_pct]
            .into_iter()
            .enumerate()
        {
            if let Some(v) = v {
                // Launches without a duration still count, with weight 1.
                let w = if d > 0.0 { d } else { 1.0 };
                e.sums[slot].0 += v * w;
                e.sums[slot].1 += w;
            }
        }
    }
    let all: f64 = acc.values().map(|e| e.total).sum();
    let mut list: Vec<KernelTotal> = acc
        .into_iter()
        .map(|(name, e)| {
            let mean = |i: usize| (e.sums[i].1 > 0.0).then(|| e.sums[i].0 / e.sums[i].1);
            KernelTotal {
                name: name.to_string(),
                total_us: e.total,
                share: if all > 0.0 { e.total / all } else { 0.0 },
                sm_pct: mean(0),
                dram_pct: mean(1),
                occupancy_pct: mean(2),
                launches: e.launches,
            }
        })
        .collect();
    list.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    list.truncate(TOP_KERNELS);
    list
}

fn throughputs(top: &[KernelTotal]) -> Pairs {
    let mut pairs = Vec::new();
    for (i, k) in top
        .iter()
        .filter(|k| k.sm_pct.is_some() && k.dram_pct.is_some())
        .enumerate()
    {
        pairs.push((format!("kernels[{i}].name"), k.name.clone()));
        pairs.push((
            format!("kernels[{i}].sm_pct"),
            round2(k.sm_pct.unwrap_or(0.0)),
        ));
        pairs.push((
            format!("kernels[{i}].dram_pct"),
            round2(k.dram_pct.unwrap_or(0.0)),
        ));
    }
    Pairs::new(pairs)
}

fn ncu_kernels(top: &[KernelTotal]) -> Pairs {
    let mut pairs = Vec::new();
    for (i, k) in top.iter().enumerate() {
        let f = |c: &str| format!("kernels[{i}].{c}");
        pairs.push((f("name"), k.name.clone()));
        pairs.push((
            f("share"),
            format!("{}", (k.share * 1000.0).round() / 1000.0),
        ));
        pairs.push((f("time_ms"), round2(k.total_us / 1000.0)));
        if let Some(o) = k.occupancy_pct {
            pairs.push((f("occupancy_pct"), round2(o)));
        }
        let kind = match (k.sm_pct, k.dram_pct) {
            (Some(sm), Some(dram)) => regime(sm, dram).ok().map(|r| r.label()),
            _ => None,
        };
        let launches = format!(
            "{} profiled launch{}",
            k.launches,
            if k.launches == 1 { "" } else { "es" }
        );
        let notes = match kind {
            Some(r) => format!("{r}; {launches}"),
            None => launches,
        };
        pairs.push((f("notes"), notes));
    }
    Pairs::new(pairs)
}

/// Queue, prefill and decode from a server's latency histograms, seconds → ms.
fn histogram_phases(a: &PrometheusAnalysis) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (phase, key) in [
        (Phase::QueueWait, "queue_s"),
        (Phase::Prefill, "prefill_s"),
        (Phase::Decode, "decode_s"),
    ] {
        let Some(q) = a.quantiles.get(key) else {
            continue;
        };
        // A row needs its p50 and any of the tail percentiles.
        if q.p50.is_none() || (q.p90.is_none() && q.p95.is_none() && q.p99.is_none()) {
            continue;
        }
        for (col, v) in [
            ("p50", q.p50),
            ("p90", q.p90),
            ("p95", q.p95),
            ("p99", q.p99),
        ] {
            if let Some(v) = v {
                pairs.push((format!("{}.{col}", phase.slug()), round2(v * 1000.0)));
                if let Some(b) = q.buckets.get(col) {
                    pairs.push((format!("{}.{col}.bucket", phase.slug()), bucket_note(b)));
                }
            }
        }
    }
    pairs
}

/// "in the 500–1,000 ms bucket": how finely a histogram pins a quantile (seconds in,
/// milliseconds out, like the values beside it).
fn bucket_note(b: &Bucket) -> String {
    let ms = |s: f64| crate::fmt::format_number(s * 1000.0, if s < 0.01 { 1 } else { 0 });
    match b.hi {
        Some(hi) => format!("in the {}–{} ms bucket", ms(b.lo), ms(hi)),
        None => format!("above the last bucket ({} ms): a lower bound", ms(b.lo)),
    }
}

/// The form after a fill: what the artifact provides replaces, the rest is kept. A
/// table the artifact provides (`kernels[…]`, `candidates[…]`) replaces the whole
/// table, so no stale row survives beside the new ones.
#[derive(Debug, Clone)]
pub struct Merged {
    pub values: Pairs,
    /// Fields the fill set to a new value, in form order.
    pub changed: Vec<String>,
    /// Fields with a value the fill left as they were.
    pub kept: Vec<String>,
}

pub fn merge(current: &Pairs, filled: &Pairs) -> Merged {
    let table = |k: &str| k.split_once('[').map(|(head, _)| head.to_string());
    let replaced_tables: Vec<String> = filled.iter().filter_map(|(k, _)| table(k)).collect();
    let mut values: Vec<(String, String)> = current
        .iter()
        .filter(|(k, _)| !table(k).is_some_and(|t| replaced_tables.contains(&t)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut changed = Vec::new();
    for (k, v) in filled.iter() {
        let before = current.get(k).unwrap_or_default();
        let note = k.ends_with(".bucket") || k.ends_with(".source") || k.starts_with("evidence_");
        if before != v.trim() && !note {
            changed.push(k.to_string());
        }
        values.retain(|(name, _)| name != k);
        values.push((k.to_string(), v.to_string()));
    }
    let kept = current
        .iter()
        .filter(|(k, v)| !v.trim().is_empty() && filled.get(k).is_none())
        .filter(|(k, _)| !table(k).is_some_and(|t| replaced_tables.contains(&t)))
        .map(|(k, _)| k.to_string())
        .collect();
    Merged {
        values: Pairs::new(values),
        changed,
        kept,
    }
}

/// What a source of phase numbers is, in a few words, by artifact kind: step 2 says
/// which one each row came from.
pub fn source_noun(kind: Kind) -> &'static str {
    match kind {
        Kind::RequestLog => "per-request log",
        Kind::OtlpSpans => "OTLP request spans",
        Kind::PrometheusRange => "Prometheus window, bucket estimates",
        Kind::Prometheus => "/metrics snapshots, bucket estimates",
        other => other.slug(),
    }
}

/// Step 2's pairs as filled from `artifact`: every phase row the fill gave names the
/// artifact as its source, so the saved row says where its numbers came from.
pub fn with_row_sources(step: u8, filled: Pairs, artifact: i64) -> Pairs {
    if step != 2 {
        return filled;
    }
    let mut out = filled;
    let slugs = Phase::ALL
        .iter()
        .map(|p| p.slug())
        .chain(StepFigure::ALL.iter().map(|f| f.slug()));
    for slug in slugs {
        if out.get(&format!("{slug}.p50")).is_some() {
            out = out.with(&format!("{slug}.source"), artifact.to_string());
        }
    }
    out
}

/// Whether a saved phase row still holds the numbers its source artifact's analysis
/// gives (with shares of step 1's `metric`): false when a person changed one after
/// filling, or when the analysis no longer fills that row.
pub fn row_as_filled(row: &PhaseRow, analysis: &Analysis, metric: Option<Metric>) -> bool {
    let Some((pairs, _)) = fill_for(2, analysis, metric) else {
        return false;
    };
    let parsed = super::record::parse_step_in(2, &pairs, &Default::default());
    let Ok(super::record::StepRecord::Phases(table)) = parsed else {
        return false;
    };
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    };
    table.rows.iter().any(|f| {
        f.phase == row.phase
            && same(Some(f.p50), Some(row.p50))
            && same(f.p90, row.p90)
            && same(f.p95, row.p95)
            && same(f.p99, row.p99)
            && same(f.share, row.share)
    })
}

/// What an artifact's analysis says about the setup it was measured on (model, GPU,
/// engine), to hold against step 0.
pub fn claimed_setup(analysis: &Analysis) -> Claimed {
    match analysis {
        Analysis::PrometheusRange(a) => claimed_setup(&Analysis::Prometheus(a.window.clone())),
        Analysis::Prometheus(a) => Claimed {
            model: a.models.first().cloned(),
            engine: Some(a.engine.clone()).filter(|e| e != "unknown"),
            ..Claimed::default()
        },
        Analysis::VllmBench(a) => Claimed {
            model: a
                .result
                .config
                .get("model_id")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            ..Claimed::default()
        },
        Analysis::PytorchTrace(_) | Analysis::NsysSqlite(_) => Claimed {
            gpu: trace_of(analysis).and_then(|a| a.devices.iter().find_map(|d| d.name.clone())),
            ..Claimed::default()
        },
        _ => Claimed::default(),
    }
}

fn trace_kernels(a: &TraceAnalysis) -> Pairs {
    let mut pairs = Vec::new();
    for (i, k) in a.kernels.iter().take(TOP_KERNELS).enumerate() {
        let f = |c: &str| format!("kernels[{i}].{c}");
        pairs.push((f("name"), k.name.clone()));
        pairs.push((f("share"), format!("{}", (k.pct * 10.0).round() / 1000.0)));
        pairs.push((f("time_ms"), round2(k.sum_us / 1000.0)));
        pairs.push((f("notes"), format!("{}; {} launches", k.category, k.count)));
    }
    if let Some(t) = a.temporal.first() {
        pairs.push(("phase_total_ms".to_string(), round2(t.busy_us / 1000.0)));
    }
    Pairs::new(pairs)
}

fn nsys_kernels(a: &NsysAnalysis) -> Pairs {
    let mut kernels: Vec<_> = a.kernels.iter().collect();
    kernels.sort_by(|x, y| y.total_ns.total_cmp(&x.total_ns));
    let mut pairs = Vec::new();
    for (i, k) in kernels.into_iter().take(TOP_KERNELS).enumerate() {
        let f = |c: &str| format!("kernels[{i}].{c}");
        let share = match k.time_pct {
            Some(p) => p / 100.0,
            None if a.total_ns > 0.0 => k.total_ns / a.total_ns,
            None => 0.0,
        };
        pairs.push((f("name"), k.name.clone()));
        pairs.push((f("share"), format!("{}", (share * 1000.0).round() / 1000.0)));
        pairs.push((f("time_ms"), round2(k.total_ns / 1e6)));
        if let Some(n) = k.instances {
            pairs.push((f("notes"), format!("{n} launches")));
        }
    }
    Pairs::new(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn as_kind(kind: &str, v: &Value) -> Option<Analysis> {
        Analysis::read(Kind::from_slug(kind)?, v)
    }

    fn fill_as(step: u8, kind: &str, v: &Value) -> Option<(Pairs, String)> {
        fill(step, &as_kind(kind, v)?)
    }

    fn filled_as(row: &PhaseRow, kind: &str, v: &Value, metric: Option<Metric>) -> bool {
        as_kind(kind, v).is_some_and(|a| row_as_filled(row, &a, metric))
    }
    use crate::analyze::ncu::NcuKernel;
    use crate::analyze::nsys::NsysKernel;
    use crate::method::record::{parse_step, StepRecord};
    use serde_json::json;

    /// A vLLM queue-time histogram: half the requests under 1 s, all under 2 s.
    const QUEUE_HISTOGRAM: &str = "# TYPE vllm:request_queue_time_seconds histogram\n\
        vllm:request_queue_time_seconds_bucket{le=\"1\"} 50\n\
        vllm:request_queue_time_seconds_bucket{le=\"2\"} 100\n\
        vllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 100\n\
        vllm:request_queue_time_seconds_count 100\n\
        vllm:request_queue_time_seconds_sum 120\n";

    #[test]
    fn filled_rows_name_their_source_and_an_edit_is_seen() {
        let prom = crate::analyze::prometheus::analyze(QUEUE_HISTOGRAM.as_bytes()).unwrap();
        let prom = serde_json::to_value(&prom).unwrap();
        let (pairs, _) = fill_as(2, "prometheus", &prom).unwrap();
        let pairs = with_row_sources(2, pairs, 42);
        assert_eq!(pairs.get("queue_wait.source"), Some("42"));
        assert_eq!(
            pairs.get("prefill.source"),
            None,
            "no prefill row was filled"
        );
        let Ok(StepRecord::Phases(table)) = parse_step(2, &pairs) else {
            panic!("the filled pairs parse");
        };
        let mut row = table.rows[0];
        assert_eq!(row.source, Some(42));
        assert!(filled_as(&row, "prometheus", &prom, None));
        row.p50 = 900.0;
        assert!(!filled_as(&row, "prometheus", &prom, None));
        row.p50 = 1000.0;
        row.share = Some(0.5);
        assert!(
            !filled_as(&row, "prometheus", &prom, None),
            "a typed share is not the artifact's"
        );
        assert!(!filled_as(&table.rows[0], "pytorch_trace", &prom, None));
        // Other steps are left as they are; a bad source is named on its row.
        let untouched = with_row_sources(5, pairs.clone(), 42);
        assert!(untouched.iter().eq(pairs.iter()));
        let bad = pairs.with("queue_wait.source", "x".to_string());
        let errors = parse_step(2, &bad).unwrap_err();
        assert_eq!(errors[0].field, "queue_wait.source");
        // A source alone does not make a row.
        let only = Pairs::new(vec![
            ("prefill.source".to_string(), "42".to_string()),
            ("decode.p50".to_string(), "20".to_string()),
            ("decode.p95".to_string(), "30".to_string()),
        ]);
        let Ok(StepRecord::Phases(t)) = parse_step(2, &only) else {
            panic!("a decode row and a stray source parse");
        };
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].source, None);
    }

    #[test]
    fn traces_fill_steps_three_and_five_and_histograms_step_two() {
        let trace = json!({"traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0, "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.0, "dur": 6000.0, "args": {"correlation": 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6100.0, "dur": 5.0, "args": {"correlation": 2}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 8010.0, "dur": 2000.0, "args": {"correlation": 2}}
        ]});
        let analysis = crate::analyze::pytorch_trace::analyze(
            trace.to_string().as_bytes(),
            &crate::analyze::Options::default(),
        )
        .unwrap();
        let value = serde_json::to_value(&analysis).unwrap();
        let (pairs, _) = fill_as(3, "pytorch_trace", &value).unwrap();
        assert_eq!(pairs.get("gpu_total"), Some("8"));
        assert_eq!(pairs.get("wall"), Some("10"));
        assert_eq!(pairs.get("cpu_total"), None, "the person adds the CPU time");
        // The filled form saves as it is: only the GPU question is judged.
        let Ok(StepRecord::Resources(r)) = parse_step(3, &pairs) else {
            panic!("a trace's step 3 saves without CPU time");
        };
        assert_eq!((r.gpu_total, r.cpu_total, r.wall), (8.0, None, 10.0));
        let (pairs, _) = fill_as(5, "pytorch_trace", &value).unwrap();
        assert_eq!(pairs.get("kernels[0].name"), Some("gemm"));
        assert_eq!(pairs.get("kernels[0].time_ms"), Some("8"));
        assert_eq!(pairs.get("kernels[0].share"), Some("1"));
        assert!(matches!(parse_step(5, &pairs), Ok(StepRecord::Kernels(_))));

        // An Nsight Systems export fills the same steps from the trace analysis in it.
        let conn = crate::analyze::nsys_sqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::analyze::nsys_sqlite::EXAMPLE_EXPORT_SQL)
            .unwrap();
        let export =
            crate::analyze::nsys_sqlite::analyze(&conn, &crate::analyze::Options::default())
                .unwrap();
        let value = serde_json::to_value(&export).unwrap();
        let (pairs, _) = fill_as(3, "nsys_sqlite", &value).unwrap();
        assert_eq!(pairs.get("gpu_total"), Some("0.21"));
        assert_eq!(pairs.get("wall"), Some("0.4"));
        let (pairs, _) = fill_as(5, "nsys_sqlite", &value).unwrap();
        assert_eq!(
            pairs.get("kernels[0].name"),
            Some("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)")
        );

        let prom = crate::analyze::prometheus::analyze(QUEUE_HISTOGRAM.as_bytes()).unwrap();
        let prom = serde_json::to_value(&prom).unwrap();
        let (pairs, _) = fill_as(2, "prometheus", &prom).unwrap();
        assert_eq!(pairs.get("queue_wait.p50"), Some("1000"));
        assert_eq!(
            pairs.get("queue_wait.p95.bucket"),
            Some("in the 1,000–2,000 ms bucket")
        );
        assert!(matches!(parse_step(2, &pairs), Ok(StepRecord::Phases(_))));
        assert!(fill_as(3, "nsys_kern_sum", &prom).is_none());

        // SGLang's queue histogram fills the same row; its TTFT fills step 1.
        let text = "sglang:queue_time_seconds_bucket{le=\"0.5\"} 80\n\
            sglang:queue_time_seconds_bucket{le=\"1\"} 100\n\
            sglang:queue_time_seconds_bucket{le=\"+Inf\"} 100\n\
            sglang:queue_time_seconds_count 100\n\
            sglang:queue_time_seconds_sum 30\n\
            sglang:time_to_first_token_seconds_bucket{le=\"1\"} 90\n\
            sglang:time_to_first_token_seconds_bucket{le=\"2\"} 100\n\
            sglang:time_to_first_token_seconds_bucket{le=\"+Inf\"} 100\n\
            sglang:time_to_first_token_seconds_count 100\n\
            sglang:time_to_first_token_seconds_sum 60\n";
        let prom = crate::analyze::prometheus::analyze(text.as_bytes()).unwrap();
        let prom = serde_json::to_value(&prom).unwrap();
        let (pairs, what) = fill_as(2, "prometheus", &prom).unwrap();
        assert!(what.starts_with("sglang"), "{what}");
        assert!(pairs.get("queue_wait.p50").is_some());
        assert!(pairs.get("prefill.p50").is_none());
        let (pairs, _) = fill_as(1, "prometheus", &prom).unwrap();
        assert_eq!(pairs.get("observed"), Some("1500"));
        assert_eq!(
            pairs.get("observed.bucket"),
            Some("in the 1,000–2,000 ms bucket")
        );
    }

    #[test]
    fn a_prometheus_window_fills_steps_1_and_2_from_its_window_summary() {
        use crate::analyze::prometheus::range::{
            analyze_fetch, Answer, HistogramFetch, HistogramPlan, RangeFetch, FORMAT,
        };
        let buckets = |pairs: &[(&str, &str)]| Answer {
            query: String::new(),
            data: serde_json::json!({"resultType": "vector", "result": pairs.iter().map(|(le, v)|
                serde_json::json!({"metric": {"le": le}, "value": [1.0, v]})).collect::<Vec<_>>()}),
        };
        let sum = Answer {
            query: String::new(),
            data: serde_json::json!({"resultType": "vector", "result": [{"metric": {}, "value": [1.0, "50"]}]}),
        };
        let hist = |key: &str, family: &str| HistogramFetch {
            plan: HistogramPlan {
                key: key.into(),
                family: family.into(),
                filter: None,
            },
            buckets: buckets(&[("1", "50"), ("2", "100"), ("+Inf", "100")]),
            sum: sum.clone(),
        };
        let fetch = RangeFetch {
            format: FORMAT.into(),
            source: "http://127.0.0.1:9090/".into(),
            engine: "vllm".into(),
            start: 0.0,
            end: 3600.0,
            step: 12.0,
            window_s: 3600,
            rate_window_s: 60,
            names: Vec::new(),
            histograms: vec![
                hist("ttft_s", "vllm:time_to_first_token_seconds"),
                hist("queue_s", "vllm:request_queue_time_seconds"),
            ],
            counters: Vec::new(),
            gauges: Vec::new(),
        };
        let a = serde_json::to_value(analyze_fetch(&fetch).unwrap()).unwrap();
        assert_eq!(
            kinds_named(1),
            "vllm_bench or prometheus or prometheus_range"
        );
        let (pairs, what) = fill_as(1, "prometheus_range", &a).unwrap();
        // p95: rank 95 in (1, 2] holding 50 above 50 → 1.9 s.
        assert_eq!(pairs.get("observed"), Some("1900"));
        assert!(what.contains("Prometheus window of 3,600 s"), "{what}");
        let (pairs, _) = fill_as(2, "prometheus_range", &a).unwrap();
        assert_eq!(pairs.get("queue_wait.p50"), Some("1000"));
        assert!(matches!(parse_step(2, &pairs), Ok(StepRecord::Phases(_))));
        assert!(fill_as(3, "prometheus_range", &a).is_none());
        assert_eq!(
            claimed_setup(&as_kind("prometheus_range", &a).unwrap())
                .engine
                .as_deref(),
            Some("vllm")
        );
    }

    #[test]
    fn telemetry_fills_the_phase_table() {
        let lines: String = (0..20)
            .map(|i| {
                format!(
                    "{{\"queue_wait_ms\":{},\"prefill_ms\":150,\"first_token_ms\":{}}}\n",
                    1000 + i * 10,
                    1150 + i * 10
                )
            })
            .collect();
        let analysis = crate::analyze::request_log::analyze(
            lines.as_bytes(),
            &crate::analyze::Options::default(),
        )
        .unwrap();
        let (pairs, what) =
            fill_as(2, "request_log", &serde_json::to_value(&analysis).unwrap()).unwrap();
        assert_eq!(what, "20 requests");
        assert_eq!(pairs.get("prefill.p95"), Some("150"));
        assert!(pairs.get("queue_wait.p50").is_some());
        assert_eq!(pairs.get("decode.p50"), None);
        let StepRecord::Phases(table) = parse_step(2, &pairs).unwrap() else {
            unreachable!()
        };
        assert_eq!(table.rows.len(), 2);
    }

    #[test]
    fn telemetry_with_output_tokens_and_itl_fills_the_per_token_figures() {
        let lines: String = (0..20)
            .map(|i| {
                format!(
                    "{{\"decode_ms\":{},\"output_tokens\":318,\"itl_p50_ms\":{},\"itl_p99_ms\":60}}\n",
                    7000 + i * 30,
                    21 + i % 3
                )
            })
            .collect();
        let analysis = crate::analyze::request_log::analyze(
            lines.as_bytes(),
            &crate::analyze::Options::default(),
        )
        .unwrap();
        let (pairs, _) =
            fill_as(2, "request_log", &serde_json::to_value(&analysis).unwrap()).unwrap();
        assert_eq!(pairs.get("itl_p50.p50"), Some("22"));
        assert_eq!(pairs.get("itl_p99.p99"), Some("60"));
        assert!(pairs.get("tpot.p50").is_some() && pairs.get("decode.p50").is_some());
        let pairs = with_row_sources(2, pairs, 7);
        assert_eq!(pairs.get("tpot.source"), Some("7"));
        let StepRecord::Phases(table) = parse_step(2, &pairs).unwrap() else {
            unreachable!()
        };
        assert_eq!(table.steps.len(), 3);
        assert!(table.steps.iter().all(|r| r.source == Some(7)));
    }

    fn launch(name: &str, us: f64, sm: f64, dram: f64, occ: f64) -> NcuKernel {
        NcuKernel {
            name: name.into(),
            duration_us: Some(us),
            sm_pct: Some(sm),
            dram_pct: Some(dram),
            achieved_occupancy_pct: Some(occ),
            ..NcuKernel::default()
        }
    }

    #[test]
    fn a_profile_fills_throughputs_and_kernels_per_kernel_name() {
        let a = NcuAnalysis {
            kernels: vec![
                launch("gemm", 30.0, 80.0, 30.0, 60.0),
                launch("attn", 50.0, 20.0, 90.0, 40.0),
                launch("gemm", 10.0, 40.0, 10.0, 20.0),
                launch("norm", 10.0, 10.0, 20.0, 30.0),
            ],
            ..NcuAnalysis::default()
        };
        let v = serde_json::to_value(&a).unwrap();
        let (pairs, what) = fill_as(4, "ncu_csv", &v).unwrap();
        assert_eq!(what, "3 kernels");
        assert_eq!(pairs.get("kernels[0].name"), Some("attn"));
        // gemm: (80·30 + 40·10) / 40 = 70
        assert_eq!(pairs.get("kernels[1].sm_pct"), Some("70"));
        assert!(matches!(parse_step(4, &pairs), Ok(StepRecord::Regime(r)) if r.kernels.len() == 3));

        let (pairs, _) = fill_as(5, "ncu_csv", &v).unwrap();
        assert_eq!(pairs.get("kernels[0].share"), Some("0.5"));
        assert_eq!(pairs.get("kernels[1].time_ms"), Some("0.04"));
        assert_eq!(
            pairs.get("kernels[1].notes"),
            Some("compute-bound; 2 profiled launches")
        );
        assert_eq!(
            pairs.get("kernels[0].notes"),
            Some("memory-bound; 1 profiled launch")
        );
        assert!(parse_step(5, &pairs).is_ok());

        assert!(
            fill_as(2, "ncu_csv", &v).is_none(),
            "a profile has no phases"
        );
        assert!(fill_as(4, "ncu_csv", &json!({"rows": "x"})).is_none());
    }

    #[test]
    fn a_kernel_summary_fills_step_5() {
        let a = NsysAnalysis {
            kernels: vec![
                NsysKernel {
                    name: "small".into(),
                    time_pct: Some(10.0),
                    total_ns: 1e6,
                    instances: Some(100),
                    ..NsysKernel::default()
                },
                NsysKernel {
                    name: "big".into(),
                    time_pct: None,
                    total_ns: 9e6,
                    instances: None,
                    ..NsysKernel::default()
                },
            ],
            total_ns: 1e7,
            notes: vec![],
        };
        let (pairs, _) = fill_as(5, "nsys_kern_sum", &serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(pairs.get("kernels[0].name"), Some("big"));
        assert_eq!(pairs.get("kernels[0].share"), Some("0.9"));
        assert_eq!(pairs.get("kernels[1].notes"), Some("100 launches"));
        assert_eq!(pairs.get("kernels[1].time_ms"), Some("1"));
        assert!(parse_step(5, &pairs).is_ok());
        assert_eq!(kinds_for(6), &[] as &[Kind]);
    }

    #[test]
    fn a_fill_merges_into_the_form_and_replaces_whole_tables() {
        let current = Pairs::new(vec![
            ("tokenize.p50".into(), "4".into()),
            ("queue_wait.p50".into(), "100".into()),
            ("kernels[0].name".into(), "old".into()),
            ("kernels[3].name".into(), "stale".into()),
            ("phase_total_ms".into(), "40".into()),
        ]);
        let filled = Pairs::new(vec![
            ("queue_wait.p50".into(), "900".into()),
            (
                "queue_wait.p50.bucket".into(),
                "in the 500–1,000 ms bucket".into(),
            ),
            ("kernels[0].name".into(), "gemm".into()),
        ]);
        let m = merge(&current, &filled);
        assert_eq!(m.values.get("tokenize.p50"), Some("4"));
        assert_eq!(m.values.get("queue_wait.p50"), Some("900"));
        assert_eq!(m.values.get("kernels[0].name"), Some("gemm"));
        assert_eq!(
            m.values.get("kernels[3].name"),
            None,
            "a stale row survived"
        );
        assert_eq!(m.changed, ["queue_wait.p50", "kernels[0].name"]);
        assert_eq!(m.kept, ["tokenize.p50", "phase_total_ms"]);
    }
}
