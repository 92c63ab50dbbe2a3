//! After rollout: what production measured against what the sizing expected, the
//! error in %, and the running record of how far estimates were off.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sizing::Sizing;
use crate::analyze::{Analysis, Kind};
use crate::pairs::Pairs;
use crate::FieldError;

/// The figures a rollout can be scored on: key, label, unit, the estimator behind it.
pub const FIGURES: [(&str, &str, &str, &str); 4] = [
    (
        "tokens_per_s_per_replica",
        "Output tokens/s per replica",
        "tokens/s",
        "decode-floor + mixed-step",
    ),
    ("ttft_p95_ms", "TTFT p95", "ms", "mixed-step"),
    ("itl_p99_ms", "ITL p99", "ms", "mixed-step"),
    (
        "cost_per_million_tokens_usd",
        "Cost per million output tokens",
        "USD",
        "cost",
    ),
];

/// Observed figures; any subset.
pub type Observed = BTreeMap<String, f64>;

/// Parses typed observed figures (form or JSON pairs), each > 0. None typed is fine
/// here: [`complete`] fills what attached artifacts measured and insists on one.
pub fn parse_observed(pairs: &Pairs) -> Result<Observed, Vec<FieldError>> {
    let mut out = Observed::new();
    let mut errors = Vec::new();
    let known: Vec<_> = FIGURES.iter().map(|f| f.0).collect();
    for (k, raw) in pairs.by_name() {
        if raw.trim().is_empty() || k == "artifact_ids" || k == "note" {
            continue;
        }
        if !known.contains(&k) {
            errors.push(FieldError::new(
                k,
                format!("is not an observed figure; known: {}", known.join(", ")),
            ));
            continue;
        }
        let unit = FIGURES.iter().find(|f| f.0 == k).map_or("", |f| f.2);
        match crate::quantity::read_field(raw, unit).map_err(|e| e.to_string()) {
            Ok(v) if v > 0.0 => {
                out.insert(k.to_string(), v);
            }
            Ok(_) => errors.push(FieldError::new(k, "must be greater than 0")),
            Err(e) => errors.push(FieldError::new(k, e)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// What an analyzed artifact measured, as observed figures: a vLLM benchmark's p95
/// TTFT and p99 ITL, a request log's p95 time to first token, and a Prometheus capture's
/// p95 TTFT and p99 ITL from the engine's histograms (a quantile that fell in the `+Inf`
/// bucket is only a lower bound and is left out). Throughput is not taken from an
/// artifact (whether a bench ran one replica or the fleet is not recorded, and metrics
/// snapshots carry no window length): type it.
pub fn from_analysis(analysis: &Analysis) -> Observed {
    match analysis {
        // A Prometheus server's window: its summary reads as a capture's.
        Analysis::PrometheusRange(a) => from_json(Kind::Prometheus, &serde_json::json!(a.window)),
        _ => from_json(analysis.kind(), &analysis.to_json()),
    }
}

/// [`from_analysis`] on the result's JSON: the figures are read by their paths.
fn from_json(kind: Kind, analysis: &serde_json::Value) -> Observed {
    let at = |path: &[&str]| {
        path.iter()
            .try_fold(analysis, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let mut out = Observed::new();
    let found = match kind {
        Kind::VllmBench => vec![
            ("ttft_p95_ms", at(&["ttft_ms", "p95"])),
            ("itl_p99_ms", at(&["itl_ms", "p99"])),
        ],
        Kind::RequestLog | Kind::OtlpSpans => {
            vec![("ttft_p95_ms", at(&["phases", "first_token_ms", "p95"]))]
        }
        Kind::Prometheus => {
            let seconds = |hist: &str, q: &str| {
                let h = analysis.get("quantiles")?.get(hist)?;
                let bound = h
                    .get("lower_bounds")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|b| b.iter().any(|x| x.as_str() == Some(q)));
                if bound {
                    return None;
                }
                at(&["quantiles", hist, q]).map(|s| s * 1000.0)
            };
            vec![
                ("ttft_p95_ms", seconds("ttft_s", "p95")),
                ("itl_p99_ms", seconds("itl_s", "p99")),
            ]
        }
        _ => Vec::new(),
    };
    for (key, value) in found {
        if let Some(v) = value {
            out.insert(key.to_string(), v);
        }
    }
    out
}

/// Typed figures, then what the artifacts measured for the figures not typed (the first
/// artifact that has one). At least one figure must result.
pub fn complete(typed: Observed, measured: &[Observed]) -> Result<Observed, FieldError> {
    let mut out = typed;
    for m in measured {
        for (k, v) in m {
            out.entry(k.clone()).or_insert(*v);
        }
    }
    if out.is_empty() {
        let known: Vec<_> = FIGURES.iter().map(|f| f.0).collect();
        return Err(FieldError::new(
            "tokens_per_s_per_replica",
            format!(
                "give at least one observed figure ({}), or attach an analyzed vLLM bench or \
                 request log",
                known.join(", ")
            ),
        ));
    }
    Ok(out)
}

/// Expected vs observed for one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub figure: String,
    pub label: String,
    pub unit: String,
    pub estimator: String,
    pub expected: f64,
    pub observed: f64,
    /// (expected − observed) / observed × 100: positive means the estimate was high.
    pub error_pct: f64,
}

pub fn expected(s: &Sizing, figure: &str) -> Option<f64> {
    match figure {
        "tokens_per_s_per_replica" => Some(s.tokens_per_s_per_replica),
        "ttft_p95_ms" => Some(s.ttft_p95_ms),
        "itl_p99_ms" => Some(s.itl_p99_ms),
        "cost_per_million_tokens_usd" => Some(s.cost_per_million_tokens_usd),
        _ => None,
    }
}

pub fn score(s: &Sizing, observed: &Observed) -> Vec<Score> {
    FIGURES
        .iter()
        .filter_map(|(key, label, unit, estimator)| {
            let o = *observed.get(*key)?;
            let e = expected(s, key)?;
            Some(Score {
                figure: key.to_string(),
                label: label.to_string(),
                unit: unit.to_string(),
                estimator: estimator.to_string(),
                expected: e,
                observed: o,
                error_pct: (e - o) / o * 100.0,
            })
        })
        .collect()
}

/// How far one estimator was off across proposals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorRecord {
    pub estimator: String,
    pub figure: String,
    pub n: usize,
    /// Mean of |error %|: the error bar the next review should expect.
    pub mean_abs_error_pct: f64,
    /// Mean signed error %: positive means estimates run high.
    pub mean_error_pct: f64,
    pub worst_error_pct: f64,
}

/// Per estimator and figure, over all scores (one per proposal and figure: the latest).
pub fn record(scores: &[Score]) -> Vec<ErrorRecord> {
    let mut groups: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for s in scores {
        groups
            .entry((s.estimator.clone(), s.figure.clone()))
            .or_default()
            .push(s.error_pct);
    }
    groups
        .into_iter()
        .map(|((estimator, figure), errs)| {
            let n = errs.len();
            let worst = errs
                .iter()
                .copied()
                .fold(0.0_f64, |w, e| if e.abs() > w.abs() { e } else { w });
            ErrorRecord {
                estimator,
                figure,
                n,
                mean_abs_error_pct: errs.iter().map(|e| e.abs()).sum::<f64>() / n as f64,
                mean_error_pct: errs.iter().sum::<f64>() / n as f64,
                worst_error_pct: worst,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(kv: &[(&str, &str)]) -> Pairs {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn any_subset_but_not_nothing() {
        let o = parse_observed(&pairs(&[("ttft_p95_ms", "700"), ("itl_p99_ms", "")])).unwrap();
        assert_eq!(o.len(), 1);
        let e = complete(parse_observed(&pairs(&[])).unwrap(), &[]).unwrap_err();
        assert!(e.message.contains("at least one"));
        let bench = serde_json::json!({"ttft_ms": {"p95": 612.5}, "itl_ms": {"p99": 41.0}});
        let from = from_json(Kind::VllmBench, &bench);
        let done = complete(o.clone(), &[from]).unwrap();
        assert_eq!(done["ttft_p95_ms"], 700.0, "typed wins");
        assert_eq!(done["itl_p99_ms"], 41.0);
        let log = serde_json::json!({"phases": {"first_token_ms": {"p95": 380.0}}});
        assert_eq!(from_json(Kind::RequestLog, &log)["ttft_p95_ms"], 380.0);
        let prom = serde_json::json!({"quantiles": {
            "ttft_s": {"p95": 0.42, "lower_bounds": []},
            "itl_s": {"p99": 2.5, "lower_bounds": ["p99"]}
        }});
        let seen = from_json(Kind::Prometheus, &prom);
        assert!((seen["ttft_p95_ms"] - 420.0).abs() < 1e-9);
        assert!(
            !seen.contains_key("itl_p99_ms"),
            "a lower bound is not an observation"
        );
        let e = parse_observed(&pairs(&[("ttft", "1"), ("itl_p99_ms", "-3")])).unwrap_err();
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn error_is_relative_to_what_was_observed() {
        let s = Score {
            figure: "ttft_p95_ms".into(),
            label: String::new(),
            unit: "ms".into(),
            estimator: "mixed-step".into(),
            expected: 600.0,
            observed: 800.0,
            error_pct: (600.0 - 800.0) / 800.0 * 100.0,
        };
        assert_eq!(s.error_pct, -25.0);
        let mut t = s.clone();
        t.expected = 880.0;
        t.error_pct = 10.0;
        let r = record(&[s, t]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].n, 2);
        assert_eq!(r[0].mean_abs_error_pct, 17.5);
        assert_eq!(r[0].mean_error_pct, -7.5);
        assert_eq!(r[0].worst_error_pct, -25.0);
    }
}
