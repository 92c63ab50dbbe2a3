//! Evidence: journal entries, comparisons and artifacts that measured this model on this
//! GPU and engine. Evidence measured on another engine version, GPU, model or precision
//! is stale, and the difference is named.

use serde::{Deserialize, Serialize};

use super::input::ProposalInput;
use crate::analyze::sweep::SweepPoint;
use crate::fmt::format_number;
use crate::metric::Percentile;

/// Evidence kinds a proposal can link.
pub const KINDS: [&str; 3] = ["journal", "comparison", "artifact"];

/// What a piece of evidence says it measured (lower-case; None when unknown).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facets {
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub precision: Option<String>,
}

use crate::method::setup_check::{gpu_identity, model_identity};

fn norm(s: &str) -> String {
    s.trim().to_lowercase()
}

/// Each way the evidence differs from the proposal, named ("engine version 0.5.4, the
/// proposal runs 0.6.3"). Empty: current. Unknown facets are not held against it.
pub fn differences(p: &ProposalInput, e: &Facets) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |what: &str, theirs: &Option<String>, ours: &str, same: fn(&str) -> String| {
        if let Some(t) = theirs {
            if !t.trim().is_empty() && same(t) != same(ours) {
                out.push(format!("{what} {t}, the proposal has {ours}"));
            }
        }
    };
    // Models and GPUs by catalog id: "H100 SXM 80GB" is the proposal's h100-sxm.
    cmp("model", &e.model, &p.model_name(), model_identity);
    cmp("GPU", &e.gpu, &p.gpu_type, gpu_identity);
    cmp("engine", &e.engine, &p.engine, norm);
    cmp("engine version", &e.engine_version, &p.engine_version, norm);
    cmp("weight precision", &e.precision, &p.weight_dtype, norm);
    out
}

/// What a load sweep says the deployment sustains within the proposal's SLOs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepCapacity {
    /// Output tokens/s at the chosen point (one sweep taken as one replica).
    pub tokens_per_s: f64,
    pub achieved_rps: f64,
    /// Which point, under which reading of the SLOs, and whether the limit may be higher.
    pub note: String,
    /// Requests in flight at that point: its concurrency limit when that set the load,
    /// else by Little's law (achieved req/s × mean end-to-end latency).
    pub concurrency: Option<f64>,
}

/// Requests a bench kept in flight: its concurrency limit when that set the load, else by
/// Little's law from what it achieved (req/s × mean end-to-end latency in s).
pub fn in_flight(
    limit: Option<f64>,
    achieved_rps: Option<f64>,
    mean_e2e_ms: Option<f64>,
) -> Option<f64> {
    limit
        .or_else(|| Some(achieved_rps? * mean_e2e_ms? / 1000.0))
        .filter(|c| c.is_finite() && *c > 0.0)
}

/// The highest output throughput among the sweep's points (in load order) whose TTFT
/// p95 is at most `ttft_p95_ms` and ITL p99 at most `itl_p99_ms`. Where a point has no
/// TTFT p95 (vLLM's summary table has p50 and p99), its p99 stands in: stricter, so a
/// point that passes really meets the SLO. A point missing either number does not count.
/// `None` when no point meets both.
pub fn sweep_capacity(
    points: &[&SweepPoint],
    ttft_p95_ms: f64,
    itl_p99_ms: f64,
) -> Option<SweepCapacity> {
    let mut used_p99 = false;
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, p) in points.iter().enumerate() {
        let ttft = match (p.ttft_ms.at(Percentile::P95), p.ttft_ms.at(Percentile::P99)) {
            (Some(v), _) => Some(v),
            (None, Some(v)) => {
                used_p99 = true;
                Some(v)
            }
            (None, None) => None,
        };
        let itl = p.itl_ms.at(Percentile::P99);
        let meets = ttft.is_some_and(|v| v <= ttft_p95_ms) && itl.is_some_and(|v| v <= itl_p99_ms);
        let (Some(tps), Some(rps), true) = (p.output_tps, p.achieved_rps, meets) else {
            continue;
        };
        if best.is_none_or(|(_, t, _)| tps > t) {
            best = Some((i, tps, rps));
        }
    }
    let (i, tokens_per_s, achieved_rps) = best?;
    let mut note = format!(
        "load sweep: {} output tok/s ({} req/s) at {}, the most within TTFT p95 ≤ {} ms and ITL p99 ≤ {} ms",
        format_number(tokens_per_s, 0),
        format_number(achieved_rps, 2),
        points[i].load_text(),
        format_number(ttft_p95_ms, 0),
        format_number(itl_p99_ms, 0)
    );
    if used_p99 {
        note.push_str(" (TTFT p99 stands in where p95 was not measured: stricter)");
    }
    if i + 1 == points.len() {
        note.push_str(
            "; the highest load measured still meets them, so the true capacity may be higher",
        );
    }
    let point = points[i];
    Some(SweepCapacity {
        tokens_per_s,
        achieved_rps,
        note,
        concurrency: in_flight(point.concurrency, Some(achieved_rps), point.e2el_ms.mean),
    })
}

#[cfg(test)]
mod tests {
    use super::super::input::{parse, tests::chat_api};
    use super::*;

    #[test]
    fn in_flight_is_the_limit_or_littles_law() {
        assert_eq!(in_flight(Some(64.0), Some(8.0), Some(790.0)), Some(64.0));
        let c = in_flight(None, Some(8.0), Some(790.0)).unwrap();
        assert!((c - 6.32).abs() < 1e-9, "{c}");
        assert_eq!(in_flight(None, Some(8.0), None), None);
        assert_eq!(in_flight(None, Some(0.0), Some(790.0)), None);
    }

    #[test]
    fn the_same_model_and_gpu_spelled_differently_is_not_stale() {
        let p = parse(&chat_api()).unwrap();
        let spelled = Facets {
            model: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
            gpu: Some("H100 SXM 80GB".into()),
            engine: Some("vLLM".into()),
            engine_version: Some(p.engine_version.clone()),
            precision: None,
        };
        assert!(
            differences(&p, &spelled).is_empty(),
            "{:?}",
            differences(&p, &spelled)
        );
        let other = Facets {
            gpu: Some("A100 80GB".into()),
            ..spelled
        };
        assert_eq!(
            differences(&p, &other),
            ["GPU A100 80GB, the proposal has h100-sxm"]
        );
    }

    #[test]
    fn sweep_capacity_within_both_slos() {
        use crate::analyze::sweep::test_point;
        let pts: Vec<SweepPoint> = [
            (2.0, 2.0, 300.0, 40.0),
            (6.0, 5.8, 700.0, 55.0),
            (8.0, 6.3, 800.0, 58.0),
            (10.0, 6.4, 2400.0, 90.0),
        ]
        .into_iter()
        .map(|(rate, rps, ttft, itl)| {
            let mut p = test_point(rate, rps, ttft);
            p.itl_ms.p99 = Some(itl);
            p.output_tps = Some(rps * 190.0);
            p
        })
        .collect();
        let refs: Vec<&SweepPoint> = pts.iter().collect();
        // Exactly at both limits (800 ms, 58 ms) counts.
        let c = sweep_capacity(&refs, 800.0, 58.0).unwrap();
        assert_eq!(c.achieved_rps, 6.3);
        assert!((c.tokens_per_s - 6.3 * 190.0).abs() < 1e-9);
        assert!(
            c.note.contains("at 8 req/s") && c.note.contains("p99 stands in"),
            "{}",
            c.note
        );
        // The ITL SLO binds first.
        assert_eq!(
            sweep_capacity(&refs, 800.0, 55.0).unwrap().achieved_rps,
            5.8
        );
        assert!(sweep_capacity(&refs, 100.0, 60.0).is_none());
        let all = sweep_capacity(&refs, 5000.0, 100.0).unwrap();
        assert!(all.note.contains("may be higher"), "{}", all.note);
    }

    #[test]
    fn another_version_or_gpu_is_named() {
        let p = parse(&chat_api()).unwrap();
        let same = Facets {
            model: Some("Llama-3.1-8B".into()),
            gpu: Some("h100-sxm".into()),
            engine: Some("vllm".into()),
            engine_version: Some("0.6.3".into()),
            precision: None,
        };
        assert!(differences(&p, &same).is_empty());
        let old = Facets {
            engine_version: Some("0.5.4".into()),
            gpu: Some("a100-80gb".into()),
            ..same
        };
        let d = differences(&p, &old);
        assert_eq!(
            d,
            [
                "GPU a100-80gb, the proposal has h100-sxm",
                "engine version 0.5.4, the proposal has 0.6.3"
            ]
        );
    }
}
