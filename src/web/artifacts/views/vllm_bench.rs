//! A vllm bench result: throughput, the latency summaries and their CDFs, the runs.

use super::{num, opt, summary_cells, Section, Table};
use crate::charts;
use crate::core::analyze::vllm_bench::{tool_label, VllmBenchAnalysis};

pub(super) fn sections(x: &VllmBenchAnalysis) -> Vec<Section> {
    let r = &x.result;
    let mut out = Vec::new();
    let mut head = Section::new("summary", "Benchmark");
    head.lead = Some(format!(
        "{}: {} completed, {} failed; {} req/s, {} output tok/s.",
        tool_label(&r.source),
        r.completed
            .map(|v| num(v as f64))
            .unwrap_or_else(|| "?".into()),
        r.failed
            .map(|v| num(v as f64))
            .unwrap_or_else(|| "?".into()),
        opt(r.request_throughput),
        opt(r.output_throughput)
    ));
    head.warnings = r.flags.iter().map(|f| f.message.clone()).collect();
    let mut t = Table::new(&["metric (ms)", "p50", "p90", "p95", "p99", "mean", "count"]);
    for (name, s) in [
        ("TTFT", &r.ttft_ms),
        ("TPOT", &r.tpot_ms),
        ("ITL", &r.itl_ms),
        ("E2E", &r.e2el_ms),
    ] {
        let mut cells = vec![name.to_string()];
        cells.extend(summary_cells(s));
        t.row(cells);
    }
    head.table = Some(t);
    for (title, samples) in [
        ("TTFT", &r.samples.ttft_ms),
        ("ITL", &r.samples.itl_ms),
        ("TPOT", &r.samples.tpot_ms),
        ("E2E latency", &r.samples.e2el_ms),
    ] {
        if let Some(svg) = charts::cdf(
            &format!("{title} CDF"),
            "ms",
            &[(title, samples.as_slice())],
        ) {
            head.charts.push(svg);
        }
    }
    head.notes
        .push(format!("Distributions from {}.", r.distributions_from));
    out.push(head);
    if !r.config.is_empty() {
        let mut s = Section::new("config", "Run configuration");
        let mut t = Table::new(&["setting", "value"]);
        t.numeric = vec![false, false];
        for (k, v) in &r.config {
            t.row(vec![k.clone(), crate::core::estimate::display(v)]);
        }
        s.table = Some(t);
        out.push(s);
    }
    if !x.runs.is_empty() {
        let mut s = Section::new("runs", "All runs in the file");
        let mut t = Table::new(&[
            "run",
            "completed",
            "failed",
            "TTFT p50",
            "TTFT p99",
            "ITL p50",
            "req/s",
        ]);
        for (i, run) in x.runs.iter().enumerate() {
            t.row(vec![
                format!("{}", i + 1),
                run.completed.map(|v| num(v as f64)).unwrap_or_default(),
                run.failed.map(|v| num(v as f64)).unwrap_or_default(),
                opt(run.ttft_ms.p50),
                opt(run.ttft_ms.p99),
                opt(run.itl_ms.p50),
                opt(run.request_throughput),
            ]);
        }
        s.table = Some(t);
        out.push(s);
    }
    out
}
