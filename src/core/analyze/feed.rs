//! From an artifact's analysis to the fields of an investigation step ("use in step
//! N"): the same `name=value` pairs the step form posts, so the person reviews and saves
//! them through the form's own validation.

use serde_json::Value;

use super::Kind;

/// A step an analysis can fill, with the values and what the person must still add.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFill {
    pub step: u8,
    pub what: &'static str,
    pub pairs: Vec<(String, String)>,
    pub note: Option<&'static str>,
}

/// How many table rows a fill proposes (the forms show a handful).
const MAX_ROWS: usize = 10;

fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

fn text(x: f64) -> String {
    // Enough digits to keep the measurement, no float noise.
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The steps this analysis can fill, in step order.
pub fn step_fills(kind: Kind, analysis: &Value) -> Vec<StepFill> {
    let mut out = Vec::new();
    match kind {
        Kind::RequestLog => {
            if let Some(f) = phases_from_request_log(analysis) {
                out.push(f);
            }
        }
        Kind::Prometheus => {
            if let Some(f) = phases_from_prometheus(analysis) {
                out.push(f);
            }
        }
        Kind::VllmBench => {
            if let Some(p95) = num(&analysis["ttft_ms"]["p95"]) {
                out.push(StepFill {
                    step: 1,
                    what: "TTFT p95 as the observed metric",
                    pairs: vec![
                        ("metric".into(), "ttft".into()),
                        ("percentile".into(), "p95".into()),
                        ("observed".into(), text(p95)),
                        ("unit".into(), "ms".into()),
                    ],
                    note: Some("add the target"),
                });
            }
        }
        Kind::PytorchTrace => {
            if let Some(t) = analysis["temporal"].as_array().and_then(|a| a.first()) {
                let busy = num(&t["busy_us"])
                    .or_else(|| Some(num(&t["compute_us"])? + num(&t["non_compute_us"])?));
                if let (Some(busy), Some(span)) = (busy, num(&t["span_us"])) {
                    out.push(StepFill {
                        step: 3,
                        what: "GPU busy time and the trace's span (ms)",
                        pairs: vec![
                            ("gpu_total".into(), text(busy / 1000.0)),
                            ("wall".into(), text(span / 1000.0)),
                        ],
                        note: Some("a GPU trace does not hold the CPU's busy time: add it from a CPU profile of the same window"),
                    });
                }
                let kernels = kernel_rows(
                    analysis["kernels"].as_array(),
                    "name",
                    |k| num(&k["sum_us"]).map(|v| v / 1000.0),
                    |k| num(&k["pct"]).map(|p| p / 100.0),
                );
                if !kernels.is_empty() {
                    let mut pairs = kernels;
                    if let Some(busy) = busy {
                        pairs.push(("phase_total_ms".into(), text(busy / 1000.0)));
                    }
                    out.push(StepFill {
                        step: 5,
                        what: "top kernels by GPU time",
                        pairs,
                        note: None,
                    });
                }
            }
        }
        Kind::NcuCsv => {
            let mut pairs = Vec::new();
            let kernels = analysis["kernels"].as_array().cloned().unwrap_or_default();
            let usable = kernels
                .iter()
                .filter(|k| num(&k["sm_pct"]).is_some() && num(&k["dram_pct"]).is_some());
            for (i, k) in usable.take(MAX_ROWS).enumerate() {
                pairs.push((
                    format!("kernels[{i}].name"),
                    k["name"].as_str().unwrap_or("").to_string(),
                ));
                pairs.push((
                    format!("kernels[{i}].sm_pct"),
                    text(num(&k["sm_pct"]).unwrap_or(0.0)),
                ));
                pairs.push((
                    format!("kernels[{i}].dram_pct"),
                    text(num(&k["dram_pct"]).unwrap_or(0.0)),
                ));
            }
            if !pairs.is_empty() {
                out.push(StepFill {
                    step: 4,
                    what: "SM and DRAM throughput of the profiled kernels",
                    pairs,
                    note: None,
                });
            }
        }
        Kind::NsysKernSum => {
            let mut pairs = kernel_rows(
                analysis["kernels"].as_array(),
                "name",
                |k| num(&k["total_ns"]).map(|v| v / 1e6),
                |k| num(&k["time_pct"]).map(|p| p / 100.0),
            );
            if !pairs.is_empty() {
                if let Some(total) = num(&analysis["total_ns"]) {
                    pairs.push(("phase_total_ms".into(), text(total / 1e6)));
                }
                out.push(StepFill {
                    step: 5,
                    what: "top kernels by GPU time",
                    pairs,
                    note: Some("the shares are of all kernel time in the report; narrow them to the phase that matters"),
                });
            }
        }
        Kind::GpuTelemetry | Kind::Unknown => {}
    }
    out
}

fn kernel_rows(
    kernels: Option<&Vec<Value>>,
    name_key: &str,
    time_ms: impl Fn(&Value) -> Option<f64>,
    share: impl Fn(&Value) -> Option<f64>,
) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (i, k) in kernels.into_iter().flatten().take(MAX_ROWS).enumerate() {
        pairs.push((
            format!("kernels[{i}].name"),
            k[name_key].as_str().unwrap_or("").to_string(),
        ));
        if let Some(t) = time_ms(k) {
            pairs.push((format!("kernels[{i}].time_ms"), text(t)));
        }
        if let Some(s) = share(k) {
            pairs.push((format!("kernels[{i}].share"), text(s.clamp(0.0, 1.0))));
        }
    }
    pairs
}

/// Step 2's phase slugs and the request-log columns they come from.
const REQUEST_PHASES: [(&str, &str); 5] = [
    ("tokenize", "tokenize_ms"),
    ("queue_wait", "queue_wait_ms"),
    ("prefill", "prefill_ms"),
    ("decode", "decode_ms"),
    ("detokenize", "detokenize_ms"),
];

fn phase_pairs(rows: &[(&str, [Option<f64>; 4])]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (slug, q) in rows {
        // The form needs p50, p95 and p99; p90 is optional.
        if q[0].is_none() || q[2].is_none() || q[3].is_none() {
            continue;
        }
        for (p, v) in ["p50", "p90", "p95", "p99"].iter().zip(q) {
            if let Some(v) = v {
                pairs.push((format!("{slug}.{p}"), text(*v)));
            }
        }
    }
    pairs
}

fn phases_from_request_log(a: &Value) -> Option<StepFill> {
    let rows: Vec<(&str, [Option<f64>; 4])> = REQUEST_PHASES
        .iter()
        .map(|(slug, col)| {
            let s = &a["phases"][*col];
            (
                *slug,
                [
                    num(&s["p50"]),
                    num(&s["p90"]),
                    num(&s["p95"]),
                    num(&s["p99"]),
                ],
            )
        })
        .collect();
    let pairs = phase_pairs(&rows);
    (!pairs.is_empty()).then_some(StepFill {
        step: 2,
        what: "per-phase percentiles from the request log (ms)",
        pairs,
        note: None,
    })
}

fn phases_from_prometheus(a: &Value) -> Option<StepFill> {
    let rows: Vec<(&str, [Option<f64>; 4])> = [
        ("queue_wait", "queue_s"),
        ("prefill", "prefill_s"),
        ("decode", "decode_s"),
    ]
    .iter()
    .map(|(slug, key)| {
        let q = &a["quantiles"][*key];
        let ms = |p: &str| num(&q[p]).map(|s| s * 1000.0);
        (*slug, [ms("p50"), ms("p90"), ms("p95"), ms("p99")])
    })
    .collect();
    let pairs = phase_pairs(&rows);
    (!pairs.is_empty()).then_some(StepFill {
        step: 2,
        what: "queue, prefill and decode percentiles from the server's histograms (ms)",
        pairs,
        note: Some("histogram quantiles are estimates within their buckets"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get<'a>(pairs: &'a [(String, String)], k: &str) -> Option<&'a str> {
        pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn request_log_fills_the_phase_table() {
        let a = json!({"phases": {
            "queue_wait_ms": {"p50": 2000.0, "p90": 2200.0, "p95": 2300.0, "p99": 2400.5},
            "prefill_ms": {"p50": 150.0, "p95": 160.0, "p99": 170.0},
            "tokenize_ms": {"p50": 1.0}
        }});
        let fills = step_fills(Kind::RequestLog, &a);
        assert_eq!(fills.len(), 1);
        let p = &fills[0].pairs;
        assert_eq!(fills[0].step, 2);
        assert_eq!(get(p, "queue_wait.p95"), Some("2300"));
        assert_eq!(get(p, "queue_wait.p99"), Some("2400.5"));
        assert_eq!(get(p, "prefill.p90"), None);
        // Incomplete rows are left for the person, not half-filled.
        assert_eq!(get(p, "tokenize.p50"), None);
    }

    #[test]
    fn traces_fill_steps_three_and_five() {
        let a = json!({"temporal": [{"span_us": 10000.0, "busy_us": 6000.0, "compute_us": 5000.0, "non_compute_us": 1000.0}],
                       "kernels": [{"name": "gemm", "sum_us": 4000.0, "pct": 66.7}]});
        let fills = step_fills(Kind::PytorchTrace, &a);
        assert_eq!(fills.iter().map(|f| f.step).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(get(&fills[0].pairs, "gpu_total"), Some("6"));
        assert_eq!(get(&fills[0].pairs, "wall"), Some("10"));
        assert_eq!(get(&fills[0].pairs, "cpu_total"), None);
        assert_eq!(get(&fills[1].pairs, "kernels[0].time_ms"), Some("4"));
        assert_eq!(get(&fills[1].pairs, "kernels[0].share"), Some("0.667"));
        assert_eq!(get(&fills[1].pairs, "phase_total_ms"), Some("6"));
    }

    #[test]
    fn ncu_fills_regimes_and_prometheus_phases_in_ms() {
        let a = json!({"kernels": [{"name": "gemm", "sm_pct": 85.5, "dram_pct": 20.0}, {"name": "x", "sm_pct": null}]});
        let f = step_fills(Kind::NcuCsv, &a);
        assert_eq!(f[0].step, 4);
        assert_eq!(get(&f[0].pairs, "kernels[0].sm_pct"), Some("85.5"));
        assert_eq!(get(&f[0].pairs, "kernels[1].name"), None);
        let p = json!({"quantiles": {"queue_s": {"p50": 0.5, "p90": 1.0, "p95": 1.2, "p99": 2.0}}});
        let f = step_fills(Kind::Prometheus, &p);
        assert_eq!(get(&f[0].pairs, "queue_wait.p95"), Some("1200"));
        assert!(step_fills(Kind::GpuTelemetry, &json!({})).is_empty());
    }
}
