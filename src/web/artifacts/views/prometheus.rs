//! A Prometheus scrape or capture: gauges, histograms, counters and the capture series.

use super::{num, opt, pct, Section, Table};
use crate::core::analyze::prometheus::PrometheusAnalysis;

pub(super) fn sections(x: &PrometheusAnalysis) -> Vec<Section> {
    let mut s = Section::new("metrics", "Server metrics");
    s.lead = Some(format!(
        "{} — {}. Running {}, waiting {}, KV cache {}; preemptions {}; prefix-cache hit rate {}.",
        x.engine,
        if x.window {
            "a window between two snapshots"
        } else {
            "one snapshot (totals since start)"
        },
        opt(x.gauges.running),
        opt(x.gauges.waiting),
        x.gauges.kv_usage.map(pct).unwrap_or_else(|| "—".into()),
        opt(x.preemptions),
        x.prefix_cache_hit_rate
            .map(pct)
            .unwrap_or_else(|| "—".into()),
    ));
    let mut t = Table::new(&["histogram (s)", "p50", "p90", "p95", "p99", "mean", "count"]);
    for (name, q) in &x.quantiles {
        t.row(vec![
            name.clone(),
            opt(q.p50),
            opt(q.p90),
            opt(q.p95),
            opt(q.p99),
            opt(q.mean),
            num(q.count),
        ]);
    }
    s.table = Some(t);
    s.notes = x.notes.clone();
    let mut out = vec![s];
    if !x.counters.is_empty() {
        let mut c = Section::new("counters", "Counters");
        let mut t = Table::new(&["counter", "value"]);
        for (k, v) in &x.counters {
            t.row(vec![k.clone(), num(*v)]);
        }
        c.table = Some(t);
        out.push(c);
    }
    if let Some(c) = &x.capture {
        out.push(capture_series(c));
    }
    out
}

/// A live capture's scrapes over time: gauges as sampled, counters as rates.
fn capture_series(c: &crate::core::analyze::prometheus::CaptureSummary) -> Section {
    let mut s = Section::new("capture", "Capture over time");
    s.lead = Some(format!(
        "{} scrapes over {} s, {} to {}{}. Rates are per second since the scrape before.",
        c.snapshots,
        num(c.seconds),
        c.started,
        c.ended,
        c.url
            .as_deref()
            .map(|u| format!(", from {u}"))
            .unwrap_or_default()
    ));
    let mut t = Table::new(&[
        "at (s)",
        "running",
        "waiting",
        "KV cache",
        "prompt tok/s",
        "generated tok/s",
        "requests/s",
        "preemptions/s",
    ]);
    for p in &c.series {
        let rate = |k: &str| opt(p.rates.get(k).copied());
        t.row(vec![
            num(p.offset_s),
            opt(p.running),
            opt(p.waiting),
            p.kv_usage.map(pct).unwrap_or_else(|| "—".into()),
            rate("prompt_tokens"),
            rate("generation_tokens"),
            rate("requests_success"),
            rate("preemptions"),
        ]);
    }
    s.table = Some(t);
    s
}
