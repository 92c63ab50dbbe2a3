//! The shape of an incident window, for "seen before": what the serving system did
//! over the window, read from a Prometheus window, as a few named features. Two
//! incidents whose queues both grew while the KV cache filled and requests were
//! preempted look alike whatever their model or text.
//!
//! Features (each only when the window holds its series):
//! * `queue`: requests waiting over time — `none` (never a whole request waiting),
//!   `rising` (the last third's mean over twice the first third's), `falling` (under
//!   half), else `steady`;
//! * `kv`: the KV cache's peak use — `full` at 90 % or more, else `room`;
//! * `preempt`: `yes` when any request was preempted over the window, else `no`;
//! * `tail`: end-to-end p99 over p50 — `heavy` above 4, `wide` above 2, else `tight`;
//! * `slowest`: the phase (queue, prefill, decode) with the largest p95.
//!
//! Stored as `queue=rising;kv=full;…`. Two shapes compare as the share of the features
//! both know that are equal (0.5 when they share none, like any unknown part).

use crate::analyze::prometheus::range::PrometheusRangeAnalysis;

fn mean(xs: &[[f64; 2]]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().map(|p| p[1]).sum::<f64>() / xs.len() as f64)
}

fn queue(series: &[[f64; 2]]) -> Option<&'static str> {
    if series.len() < 3 {
        return None;
    }
    let max = series.iter().map(|p| p[1]).fold(0.0, f64::max);
    if max < 1.0 {
        return Some("none");
    }
    let third = series.len() / 3;
    let first = mean(&series[..third])?;
    let last = mean(&series[series.len() - third..])?;
    Some(if last > 2.0 * first.max(0.5) {
        "rising"
    } else if last < 0.5 * first {
        "falling"
    } else {
        "steady"
    })
}

/// The window's features, in a fixed order; empty when it holds none of the series.
pub fn features(a: &PrometheusRangeAnalysis) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(q) = queue(&a.waiting_series) {
        out.push(("queue", q.to_string()));
    }
    if let Some(kv) = a.gauges.get("kv_usage").filter(|s| !s.is_empty()) {
        let peak = kv.iter().map(|p| p[1]).fold(0.0, f64::max);
        // Some exporters give a percentage, vLLM a fraction.
        let peak = if peak > 1.0 { peak / 100.0 } else { peak };
        out.push(("kv", if peak >= 0.9 { "full" } else { "room" }.to_string()));
    }
    if let Some(p) = a.totals.get("preemptions") {
        out.push(("preempt", if *p > 0.0 { "yes" } else { "no" }.to_string()));
    }
    if let Some(e2e) = a.quantiles.get("e2e_ms") {
        if let (Some(p50), Some(p99)) = (e2e.p50, e2e.p99) {
            if p50 > 0.0 {
                let r = p99 / p50;
                let tail = if r > 4.0 {
                    "heavy"
                } else if r > 2.0 {
                    "wide"
                } else {
                    "tight"
                };
                out.push(("tail", tail.to_string()));
            }
        }
    }
    let slowest = [
        ("queue_wait", "queue_ms"),
        ("prefill", "prefill_ms"),
        ("decode", "decode_ms"),
    ]
    .iter()
    .filter_map(|(phase, key)| a.quantiles.get(*key)?.p95.map(|v| (*phase, v)))
    .max_by(|x, y| x.1.total_cmp(&y.1));
    if let Some((phase, _)) = slowest {
        out.push(("slowest", phase.to_string()));
    }
    out
}

/// The shape as stored: `queue=rising;kv=full;…`, `None` when no feature is known.
pub fn shape(a: &PrometheusRangeAnalysis) -> Option<String> {
    let f = features(a);
    (!f.is_empty()).then(|| {
        f.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    })
}

/// The stored features, in their order.
fn parse(shape: &str) -> Vec<(&str, &str)> {
    shape
        .split(';')
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

/// How alike two stored shapes are: the share of the features both know that are
/// equal; `None` when either is unknown or they share no feature.
pub fn alike(a: &str, b: &str) -> Option<f64> {
    let (a, b) = (parse(a), parse(b));
    let shared: Vec<bool> = a
        .iter()
        .filter_map(|(k, v)| b.iter().find(|(l, _)| l == k).map(|(_, w)| v == w))
        .collect();
    (!shared.is_empty()).then(|| shared.iter().filter(|s| **s).count() as f64 / shared.len() as f64)
}

/// "the queue rose, the KV cache was full, requests were preempted": a shape in words.
pub fn describe(shape: &str) -> String {
    parse(shape)
        .iter()
        .filter_map(|(k, v)| {
            Some(match (*k, *v) {
                ("queue", "none") => "no queue".to_string(),
                ("queue", q) => format!("queue {q}"),
                ("kv", "full") => "KV cache full".to_string(),
                ("kv", _) => "KV cache with room".to_string(),
                ("preempt", "yes") => "preemptions".to_string(),
                ("preempt", _) => "no preemptions".to_string(),
                ("tail", t) => format!("{t} tail"),
                ("slowest", p) => format!("{} slowest", p.replace('_', " ")),
                _ => return None,
            })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::prometheus::range::WindowQuantiles;

    fn window(
        waiting: &[f64],
        kv_peak: f64,
        preempted: f64,
        p50: f64,
        p99: f64,
    ) -> PrometheusRangeAnalysis {
        let series = |vs: &[f64]| {
            vs.iter()
                .enumerate()
                .map(|(i, v)| [i as f64 * 1000.0, *v])
                .collect()
        };
        let mut a = PrometheusRangeAnalysis {
            waiting_series: series(waiting),
            ..Default::default()
        };
        a.gauges
            .insert("kv_usage".into(), series(&[0.2, kv_peak, 0.5]));
        a.totals.insert("preemptions".into(), preempted);
        a.quantiles.insert(
            "e2e_ms".into(),
            WindowQuantiles {
                p50: Some(p50),
                p99: Some(p99),
                ..Default::default()
            },
        );
        a.quantiles.insert(
            "queue_ms".into(),
            WindowQuantiles {
                p95: Some(900.0),
                ..Default::default()
            },
        );
        a.quantiles.insert(
            "decode_ms".into(),
            WindowQuantiles {
                p95: Some(400.0),
                ..Default::default()
            },
        );
        a
    }

    #[test]
    fn a_saturating_window_reads_as_such_and_matches_its_like() {
        let busy = window(&[0.0, 1.0, 2.0, 8.0, 12.0, 20.0], 0.97, 14.0, 800.0, 6000.0);
        let s = shape(&busy).unwrap();
        assert_eq!(
            s,
            "queue=rising;kv=full;preempt=yes;tail=heavy;slowest=queue_wait"
        );
        assert_eq!(
            describe(&s),
            "queue rising, KV cache full, preemptions, heavy tail, queue wait slowest"
        );
        let calm = window(&[0.0, 0.0, 0.0, 0.0], 0.4, 0.0, 800.0, 1200.0);
        let c = shape(&calm).unwrap();
        assert_eq!(
            c,
            "queue=none;kv=room;preempt=no;tail=tight;slowest=queue_wait"
        );
        assert_eq!(alike(&s, &s), Some(1.0));
        assert_eq!(alike(&s, &c), Some(0.2));
        // Only the features both know count; none shared is unknown.
        assert_eq!(alike("queue=rising;kv=full", "queue=rising"), Some(1.0));
        assert_eq!(alike("kv=full", "queue=rising"), None);
        assert_eq!(shape(&PrometheusRangeAnalysis::default()), None);
        // A percentage gauge reads as a fraction.
        let pct = window(&[5.0, 5.0, 5.0], 95.0, 0.0, 100.0, 300.0);
        assert!(shape(&pct).unwrap().contains("kv=full;"));
        assert!(shape(&pct).unwrap().contains("queue=steady"));
    }
}
