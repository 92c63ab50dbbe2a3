//! A [`PrometheusAnalysis`] from one scrape ([`analyze_snapshot`]) or from the deltas
//! between two scrapes of one server ([`window`]).

use super::model::{
    build_model, detect_engine, is_counter, labels_key, merge_series, non_finite, quantiles_of,
    scalar_mean, scalar_sum, HistSeries, Model, COUNTERS, HISTOGRAMS, HIT_RATE_GAUGES, KV_USAGE,
    RUNNING, WAITING,
};
use super::text::{Snapshot, MAX_LABEL_VALUES};
use super::{Gauges, PrometheusAnalysis};
use std::collections::{BTreeMap, HashMap};

pub(super) fn summarize(
    m: &Model,
    gauges_from: &Model,
    engine: &str,
    window: bool,
    samples: u64,
    mut notes: Vec<String>,
) -> PrometheusAnalysis {
    let mut quantiles = BTreeMap::new();
    for (key, families, filter) in HISTOGRAMS {
        for fam in *families {
            let Some(series) = m.hists.get(*fam) else {
                continue;
            };
            let chosen = series.iter().filter(|h| match filter {
                Some((k, v)) => h.labels.iter().any(|(a, b)| a == k && b == v),
                None => true,
            });
            if let Some(merged) = merge_series(chosen) {
                if let Some(q) = quantiles_of(&merged, fam) {
                    if !q.lower_bounds.is_empty() {
                        let bound = merged.buckets.iter().rev().nth(1).map_or(0.0, |b| b.0);
                        notes.push(format!(
                            "{key}: {} above the largest finite bucket ({bound}); reported as that bound, a lower bound",
                            q.lower_bounds.join(", ")
                        ));
                    }
                    quantiles.insert(key.to_string(), q);
                }
                break;
            }
        }
    }
    let mut counters = BTreeMap::new();
    for (key, names) in COUNTERS {
        if let Some(v) = scalar_sum(m, names) {
            counters.insert(key.to_string(), v);
        }
    }
    let mut finished_reasons = BTreeMap::new();
    if let Some(v) = m.scalars.get("vllm:request_success_total") {
        for (labels, x) in v {
            if let Some((_, r)) = labels.iter().find(|(k, _)| k == "finished_reason") {
                *finished_reasons.entry(r.clone()).or_insert(0.0) += x;
            }
        }
    }
    let preemptions = counters.remove("preemptions");
    let prefix_cache_hit_rate = match (
        counters.get("prefix_cache_hits"),
        counters.get("prefix_cache_queries"),
    ) {
        (Some(h), Some(q)) if *q > 0.0 => Some(h / q),
        _ => hit_rate_gauge(gauges_from, &mut notes),
    };
    let mut models: Vec<String> = gauges_from
        .scalars
        .values()
        .flatten()
        .map(|(l, _)| l)
        .chain(gauges_from.hists.values().flatten().map(|h| &h.labels))
        .filter_map(|l| {
            l.iter()
                .find(|(k, _)| k == "model_name")
                .map(|(_, v)| v.clone())
        })
        .collect();
    models.sort();
    models.dedup();
    // Label values are the scrape's word: keep the stored analysis small whatever they are.
    if models.len() > MAX_LABEL_VALUES {
        notes.push(format!(
            "{} model names; the first {MAX_LABEL_VALUES} are listed",
            models.len()
        ));
        models.truncate(MAX_LABEL_VALUES);
    }
    if finished_reasons.len() > MAX_LABEL_VALUES {
        let mut by_count: Vec<(String, f64)> =
            std::mem::take(&mut finished_reasons).into_iter().collect();
        by_count.sort_by(|a, b| b.1.total_cmp(&a.1));
        let rest: f64 = by_count[MAX_LABEL_VALUES..].iter().map(|(_, x)| x).sum();
        notes.push(format!(
            "{} finish reasons; the {MAX_LABEL_VALUES} most frequent are listed, the rest summed as \"other\"",
            by_count.len()
        ));
        finished_reasons = by_count.into_iter().take(MAX_LABEL_VALUES).collect();
        *finished_reasons.entry("other".to_string()).or_insert(0.0) += rest;
    }
    let gauges = Gauges {
        running: scalar_sum(gauges_from, RUNNING),
        waiting: scalar_sum(gauges_from, WAITING),
        kv_usage: scalar_mean(gauges_from, KV_USAGE),
    };
    for names in [RUNNING, WAITING, KV_USAGE] {
        for name in non_finite(gauges_from, names) {
            notes.push(format!(
                "{name} holds a value that is not a finite number (+Inf, NaN or beyond \
                 ±1e19); it is not shown"
            ));
        }
    }
    if quantiles.is_empty() && gauges == Gauges::default() {
        notes.push("no vLLM, SGLang or TGI serving metrics found in this scrape".to_string());
    }
    if !window && !quantiles.is_empty() {
        notes.push(
            "one scrape: histograms are cumulative since the server started; upload a scrape before and after a run for a window"
                .to_string(),
        );
    }
    PrometheusAnalysis {
        engine: engine.to_string(),
        window,
        quantiles,
        gauges,
        preemptions,
        prefix_cache_hit_rate,
        counters,
        finished_reasons,
        models,
        samples,
        notes,
        capture: None,
        waiting_series: Vec::new(),
    }
}

/// The prefix-cache hit-rate gauge averaged over its series, leaving out vLLM v0's
/// `-1`, which means "no prefix-cache queries yet" (no data), not a rate.
fn hit_rate_gauge(m: &Model, notes: &mut Vec<String>) -> Option<f64> {
    let (name, series) = HIT_RATE_GAUGES
        .iter()
        .find_map(|n| Some((*n, m.scalars.get(*n)?)))?;
    let rates: Vec<f64> = series
        .iter()
        .map(|(_, x)| *x)
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    if rates.len() < series.len() {
        notes.push(format!(
            "{name} is negative in {} of {} series (vLLM v0 writes -1 before any prefix-cache \
             query): no data there, not a rate",
            series.len() - rates.len(),
            series.len()
        ));
    }
    crate::stats::mean(&rates)
}

/// Analyze one scrape.
pub fn analyze_snapshot(s: &Snapshot) -> PrometheusAnalysis {
    let m = build_model(s);
    summarize(
        &m,
        &m,
        detect_engine(s),
        false,
        s.samples.len() as u64,
        Vec::new(),
    )
}

/// The window between two scrapes `a` (earlier) and `b` (later) of the same
/// server: histogram and counter deltas, gauges from `b`. A series whose
/// count or value went down was reset (server restart): `b` alone is used for
/// it, and a note says so.
pub fn window(a: &Snapshot, b: &Snapshot) -> PrometheusAnalysis {
    let ma = build_model(a);
    let mb = build_model(b);
    let mut notes = Vec::new();
    let mut reset_families: Vec<String> = Vec::new();
    let mut delta = Model::default();

    for (fam, series_b) in &mb.hists {
        let before: HashMap<String, &HistSeries> = ma
            .hists
            .get(fam)
            .map(|v| v.iter().map(|h| (labels_key(&h.labels), h)).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for hb in series_b {
            let Some(ha) = before.get(&labels_key(&hb.labels)) else {
                out.push(hb.clone());
                continue;
            };
            let prev: HashMap<u64, f64> = ha
                .buckets
                .iter()
                .map(|(le, c)| (le.to_bits(), *c))
                .collect();
            let reset = hb.count < ha.count
                || hb
                    .buckets
                    .iter()
                    .any(|(le, c)| prev.get(&le.to_bits()).is_some_and(|p| c < p));
            if reset {
                if !reset_families.contains(fam) {
                    reset_families.push(fam.clone());
                }
                out.push(hb.clone());
                continue;
            }
            out.push(HistSeries {
                labels: hb.labels.clone(),
                buckets: hb
                    .buckets
                    .iter()
                    .map(|(le, c)| (*le, c - prev.get(&le.to_bits()).copied().unwrap_or(0.0)))
                    .collect(),
                sum: hb.sum - ha.sum,
                count: hb.count - ha.count,
            });
        }
        delta.hists.insert(fam.clone(), out);
    }

    let mut types = a.types.clone();
    types.extend(b.types.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (name, vals_b) in &mb.scalars {
        if !is_counter(name, &types) {
            continue;
        }
        let before: HashMap<String, f64> = ma
            .scalars
            .get(name)
            .map(|v| v.iter().map(|(l, x)| (labels_key(l), *x)).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for (labels, vb) in vals_b {
            let d = match before.get(&labels_key(labels)) {
                Some(va) if vb < va => {
                    if !reset_families.contains(name) {
                        reset_families.push(name.clone());
                    }
                    *vb
                }
                Some(va) => vb - va,
                None => *vb,
            };
            out.push((labels.clone(), d));
        }
        delta.scalars.insert(name.clone(), out);
    }
    if !reset_families.is_empty() {
        reset_families.sort();
        notes.push(format!(
            "counter reset between the scrapes (server restart?) for {}; the second scrape alone was used for them",
            reset_families.join(", ")
        ));
    }
    let engine = match detect_engine(b) {
        "unknown" => detect_engine(a),
        e => e,
    };
    let mut out = summarize(&delta, &mb, engine, true, b.samples.len() as u64, notes);
    // Rate gauges (hit-rate) are not deltas; only counters above are.
    out.window = true;
    out
}
