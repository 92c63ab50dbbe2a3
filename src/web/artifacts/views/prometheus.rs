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

/// A Prometheus server over an incident window: the window's latency quantiles (with the
/// bucket each fell in), then gauges and counter rates over time.
pub(super) fn range_sections(
    x: &crate::core::analyze::prometheus::range::PrometheusRangeAnalysis,
) -> Vec<Section> {
    use crate::charts;
    let at = |t: f64| {
        chrono::DateTime::from_timestamp(t as i64, 0)
            .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_default()
    };
    let mut s = Section::new("window", "Incident window");
    s.lead = Some(format!(
        "{} from {}, {} to {} ({} s). Quantiles are Prometheus's histogram_quantile over \
         increase(…[{} s]) at the end of the window, from the engine's histogram buckets: \
         each is only as fine as the bucket it fell in (shown in ms).",
        x.engine,
        x.source,
        at(x.start),
        at(x.end),
        x.window_s,
        x.window_s
    ));
    let mut t = Table::new(&[
        "latency (ms)",
        "p50",
        "p90",
        "p95",
        "p99",
        "mean",
        "count",
        "p95 bucket",
        "metric",
    ]);
    t.numeric[8] = false;
    t.numeric[7] = false;
    for (name, q) in &x.quantiles {
        let bucket = q
            .buckets
            .get("p95")
            .map(|b| match b.hi {
                Some(hi) => format!("{}–{}", num(b.lo), num(hi)),
                None => format!("> {}", num(b.lo)),
            })
            .unwrap_or_else(|| "—".into());
        // A quantile above the largest finite bucket is only a lower bound.
        let cell = |name: &str, v: Option<f64>| {
            let shown = opt(v);
            if q.lower_bounds.iter().any(|b| b == name) {
                format!("≥ {shown}")
            } else {
                shown
            }
        };
        t.row(vec![
            name.clone(),
            cell("p50", q.p50),
            cell("p90", q.p90),
            cell("p95", q.p95),
            cell("p99", q.p99),
            opt(q.mean),
            num(q.count),
            bucket,
            q.metric.clone(),
        ]);
    }
    s.table = Some(t);
    s.notes = x.notes.clone();
    let mut out = vec![s];
    let minutes = |pts: &[[f64; 2]]| -> Vec<(f64, f64)> {
        pts.iter()
            .map(|p| ((p[0] / 1000.0 - x.start) / 60.0, p[1]))
            .collect()
    };
    let mut g = Section::new("gauges", "Gauges over time");
    g.lead = Some(format!(
        "Every {} s from the start of the window. Requests are summed over the engines, \
         KV-cache use and GPU figures averaged.",
        num(x.step)
    ));
    let requests: Vec<(String, Vec<(f64, f64)>)> = ["running", "waiting"]
        .iter()
        .filter_map(|k| x.gauges.get(*k).map(|p| (k.to_string(), minutes(p))))
        .collect();
    g.charts.extend(charts::lines(
        "Requests running and waiting",
        ("time from start", "min"),
        ("requests", ""),
        &requests,
    ));
    let others: Vec<(String, Vec<(f64, f64)>)> = x
        .gauges
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "running" | "waiting"))
        .map(|(k, p)| (k.clone(), minutes(p)))
        .collect();
    for (k, p) in others {
        g.charts.extend(charts::lines(
            &k,
            ("time from start", "min"),
            (&k, ""),
            &[(k.clone(), p)],
        ));
    }
    let mut t = Table::new(&["gauge", "metric", "min", "mean", "max"]);
    t.numeric[1] = false;
    for (k, p) in &x.gauges {
        let v: Vec<f64> = p.iter().map(|p| p[1]).collect();
        let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        t.row(vec![
            k.clone(),
            x.metrics.get(k).cloned().unwrap_or_default(),
            opt(v.iter().copied().reduce(f64::min)),
            opt(mean),
            opt(v.iter().copied().reduce(f64::max)),
        ]);
    }
    g.table = Some(t);
    out.push(g);
    let mut c = Section::new("rates", "Counters");
    c.lead = Some(format!(
        "Increase over the window, and the rate per second over time (rate over {} s).",
        x.rate_window_s
    ));
    let mut t = Table::new(&["counter", "metric", "increase", "peak rate /s"]);
    t.numeric[1] = false;
    for (k, p) in &x.rates {
        t.row(vec![
            k.clone(),
            x.metrics.get(k).cloned().unwrap_or_default(),
            opt(x.totals.get(k).copied()),
            opt(p.iter().map(|p| p[1]).reduce(f64::max)),
        ]);
    }
    let tokens: Vec<(String, Vec<(f64, f64)>)> = ["prompt_tokens", "generation_tokens"]
        .iter()
        .filter_map(|k| x.rates.get(*k).map(|p| (k.to_string(), minutes(p))))
        .collect();
    c.charts.extend(charts::lines(
        "Token rates",
        ("time from start", "min"),
        ("tokens", "/s"),
        &tokens,
    ));
    c.table = Some(t);
    out.push(c);
    out
}
