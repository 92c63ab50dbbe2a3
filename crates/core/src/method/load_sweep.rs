//! Steps 1 and 7 with load sweeps: the step-1 metric and target read as an SLO, the
//! baseline sweep's capacity within it (step 1), and the baseline against the after
//! sweep (step 7): "p99 TTFT at 6 req/s went 120 → 80 ms; max rate at SLO 6.3 → 8.1".

use crate::analyze::sweep::{self, Slo, SweepPoint};
use crate::metric::{Metric, MetricTarget, Unit};

/// One sweep attached to the investigation: its name and points (one series).
pub struct NamedSweep<'a> {
    pub name: &'a str,
    pub points: Vec<&'a SweepPoint>,
}

/// The step-1 record as an SLO: a latency metric (TTFT, TPOT, ITL, E2E) with its
/// percentile and its target in ms. `None` for throughput, cost and queue wait.
pub fn slo_of(target: &MetricTarget) -> Option<Slo> {
    let latency = matches!(
        target.metric,
        Metric::Ttft | Metric::Tpot | Metric::Itl | Metric::E2e
    );
    let ms = target.unit.convert(target.target, Unit::Ms)?;
    (latency && ms > 0.0).then_some(Slo {
        metric: target.metric,
        percentile: target.percentile?,
        max_ms: ms,
    })
}

/// What a step page says about the investigation's sweeps (oldest first): at step 1
/// the baseline's capacity within the step-1 SLO; at step 7 the oldest (baseline)
/// against the newest (after). Empty when there is no sweep or no latency target.
pub fn step_lines(step: u8, target: Option<&MetricTarget>, sweeps: &[NamedSweep]) -> Vec<String> {
    let (Some(slo), Some(first)) = (target.and_then(slo_of), sweeps.first()) else {
        return Vec::new();
    };
    match step {
        1 => match sweep::slo_answer(&first.points, slo) {
            Ok(a) => vec![format!("Baseline sweep {}: {}", first.name, a.sentence)],
            Err(why) => vec![format!("Baseline sweep {}: {why}.", first.name)],
        },
        7 if sweeps.len() >= 2 => {
            let last = &sweeps[sweeps.len() - 1];
            vec![format!(
                "Sweeps {} → {}: {}.",
                first.name,
                last.name,
                sweep::before_after(&first.points, &last.points, slo)
            )]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::sweep::test_point as pt;
    use crate::metric::Percentile;

    fn target(metric: Metric, target: f64, unit: Unit) -> MetricTarget {
        MetricTarget {
            metric,
            percentile: Some(Percentile::P99),
            observed: 300.0,
            target,
            unit,
        }
    }

    #[test]
    fn step_one_and_seven_sentences() {
        let before = [
            pt(2.0, 2.0, 90.0),
            pt(6.0, 5.9, 120.0),
            pt(8.0, 6.3, 200.0),
            pt(10.0, 6.4, 900.0),
        ];
        let after = [pt(2.0, 2.0, 60.0), pt(6.0, 6.0, 80.0), pt(10.0, 8.1, 190.0)];
        let sweeps = [
            NamedSweep {
                name: "before.json",
                points: before.iter().collect(),
            },
            NamedSweep {
                name: "after.json",
                points: after.iter().collect(),
            },
        ];
        let t = target(Metric::Ttft, 200.0, Unit::Ms);
        let one = step_lines(1, Some(&t), &sweeps);
        assert_eq!(one.len(), 1);
        assert!(one[0].starts_with("Baseline sweep before.json: Highest throughput within p99 TTFT ≤ 200 ms: 6.3 req/s"), "{one:?}");
        let seven = step_lines(7, Some(&t), &sweeps);
        assert_eq!(
            seven,
            ["Sweeps before.json → after.json: p99 TTFT at 10 req/s went 900 → 190 ms; max rate at SLO (p99 TTFT ≤ 200 ms) 6.3 → 8.1+ req/s."]
        );
        // One sweep at step 7, a throughput target, no target: nothing to say.
        assert!(step_lines(7, Some(&t), &sweeps[..1]).is_empty());
        assert!(step_lines(
            1,
            Some(&target(Metric::Throughput, 2000.0, Unit::TokPerS)),
            &sweeps
        )
        .is_empty());
        assert!(step_lines(1, None, &sweeps).is_empty());
        // A target typed in seconds is read as ms.
        let s = slo_of(&target(Metric::E2e, 8.0, Unit::S)).unwrap();
        assert_eq!(s.max_ms, 8000.0);
    }
}
