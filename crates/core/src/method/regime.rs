//! Step 4 — which regime. A kernel is limited by arithmetic, by memory
//! traffic, or by neither (too little work per launch). Each regime admits
//! different fixes, so this decides which candidates are worth estimating.

use serde::{Deserialize, Serialize};

use super::FieldError;

/// Utilization (% of peak) at or above which a unit counts as "high".
pub const HIGH_PCT: f64 = 60.0;
/// Utilization below which a unit counts as "low".
pub const LOW_PCT: f64 = 40.0;

/// Limit of a kernel, from Nsight Compute's SM throughput % and DRAM
/// throughput % (both of peak).
///
/// With high = ≥ 60% and low = < 40%:
/// * ComputeBound — SM ≥ 60 and DRAM < 60;
/// * MemoryBound — DRAM ≥ 60 and SM < 60;
/// * LatencyBound — SM < 40 and DRAM < 40: neither unit is busy, the kernel
///   is too small, stalls on dependencies, or waits on launches;
/// * Balanced — anything else (both ≥ 60, or middling use without a clear
///   limit): stall reasons in step 5 decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    ComputeBound,
    MemoryBound,
    LatencyBound,
    Balanced,
}

impl Regime {
    pub fn label(self) -> &'static str {
        match self {
            Regime::ComputeBound => "compute-bound",
            Regime::MemoryBound => "memory-bound",
            Regime::LatencyBound => "latency-bound",
            Regime::Balanced => "balanced",
        }
    }
}

fn check_pct(field: &str, value: f64, errors: &mut Vec<FieldError>) {
    if !(0.0..=100.0).contains(&value) {
        errors.push(FieldError::new(
            field,
            format!("A throughput percentage is between 0 and 100, got {value}"),
        ));
    }
}

/// Classify a kernel; see [`Regime`] for the thresholds.
pub fn regime(sm_pct: f64, dram_pct: f64) -> Result<Regime, Vec<FieldError>> {
    let mut errors = Vec::new();
    check_pct("sm_pct", sm_pct, &mut errors);
    check_pct("dram_pct", dram_pct, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(if sm_pct < LOW_PCT && dram_pct < LOW_PCT {
        Regime::LatencyBound
    } else if sm_pct >= HIGH_PCT && dram_pct < HIGH_PCT {
        Regime::ComputeBound
    } else if dram_pct >= HIGH_PCT && sm_pct < HIGH_PCT {
        Regime::MemoryBound
    } else {
        Regime::Balanced
    })
}

/// Optimizations that can help in a regime (and, by omission, the ones that
/// cannot: more FLOPs do nothing for a memory-bound kernel).
pub fn helps(regime: Regime) -> Vec<&'static str> {
    match regime {
        Regime::ComputeBound => vec![
            "lower-precision math on tensor cores (FP8/INT8)",
            "a better-tuned or fused kernel for the same math (e.g. FlashAttention-style attention)",
            "doing less math: prefix caching instead of recomputing shared prompts",
            "more GPUs on the work (tensor parallelism)",
        ],
        Regime::MemoryBound => vec![
            "moving fewer bytes: quantize weights or the KV cache",
            "larger batches, so each weight read serves more tokens",
            "fusing kernels, so intermediates stay on chip",
            "better access patterns (coalescing, fewer sectors per request)",
        ],
        Regime::LatencyBound => vec![
            "fewer launches: CUDA graphs, kernel fusion",
            "more work per launch: larger batches or more parallelism per kernel",
            "removing host-device syncs between kernels",
        ],
        Regime::Balanced => vec![
            "read stall reasons per kernel (step 5) before choosing a fix",
            "algorithmic savings (skipping work) help in every regime",
        ],
    }
}

/// Band of a measured decode step against what it should have cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// Within 1.2× the expected step: what a well-run server of the setup takes.
    Healthy,
    /// 1.2–2.5× the expected step: overhead a well-run server does not pay.
    Overhead,
    /// Beyond 2.5×: something structural.
    Structural,
}

impl Band {
    pub fn label(self) -> &'static str {
        match self {
            Band::Healthy => "healthy",
            Band::Overhead => "overhead",
            Band::Structural => "structural",
        }
    }

    fn from_label(label: &str) -> Band {
        match label {
            "healthy" => Band::Healthy,
            "overhead" => Band::Overhead,
            _ => Band::Structural,
        }
    }
}

/// What the measured step was held against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Against {
    /// decode-floor's expected step, its constants fitted on published runs.
    Published,
    /// The expected step scaled by this team's own record of the setup: it has run at
    /// `ratio` × expected over `points` measured steps.
    Fleet { ratio: f64, points: usize },
    /// Only a floor was given (no setup to compute the expected step from): the floor
    /// ratio's old bands (> 0.8, 0.4–0.8, < 0.4) stand in.
    FloorOnly,
}

/// Measured decode step against its expected cost, with the floor ratio beside it.
///
/// `over_expected = measured / expected`: ≤ 1.2 healthy, ≤ 2.5 overhead, beyond
/// structural (`estimate::expected_cost`). `ratio = floor / measured`, the fraction of
/// the physical limit achieved (the floor is bytes per step / memory bandwidth, so
/// measured ≥ floor and the ratio is at most 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeBand {
    pub band: Band,
    pub ratio: f64,
    /// The expected step the band is read against (scaled by the fleet's ratio when
    /// the team's history is used), ms.
    pub expected_ms: Option<f64>,
    pub over_expected: Option<f64>,
    pub against: Against,
    pub advice: &'static str,
    /// Set when the floor is more than 5% above the measured time, which
    /// physics forbids: the bytes or the bandwidth used for the floor is wrong.
    pub warning: Option<String>,
}

fn advice(band: Band) -> &'static str {
    match band {
        Band::Healthy => "Decode runs as a well-run server of this setup does: only fewer bytes (quantize weights or the KV cache, share reads over a larger batch) or fewer fixed costs per step (another engine, more TP where collectives are cheap) make it faster.",
        Band::Overhead => "Decode pays overhead a well-run server of this setup does not: profile the step (CUDA graphs, kernel choice, scheduling, sampling, collectives) before buying hardware.",
        Band::Structural => "Decode takes far longer than a well-run server of this setup: something structural — tiny batches, prefills interleaved with decode steps, host syncs, preemption or scheduling gaps — wastes most of each step.",
    }
}

/// Compare a measured decode step with its expected cost and its bandwidth floor (all
/// ms); without an expected step the floor ratio's bands stand in.
pub fn decode_band(
    floor_ms: f64,
    expected_ms: Option<f64>,
    measured_ms: f64,
) -> Result<DecodeBand, Vec<FieldError>> {
    let mut errors = Vec::new();
    if !(floor_ms.is_finite() && floor_ms > 0.0) {
        errors.push(FieldError::new(
            "floor_ms",
            "The bandwidth floor must be a time greater than 0 ms",
        ));
    }
    if !(measured_ms.is_finite() && measured_ms > 0.0) {
        errors.push(FieldError::new(
            "measured_ms",
            "The measured step time must be greater than 0 ms",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let ratio = floor_ms / measured_ms;
    let expected_ms = expected_ms.filter(|e| e.is_finite() && *e > 0.0);
    let (band, against, over) = match expected_ms {
        Some(e) => (
            Band::from_label(crate::estimate::expected_cost::band(measured_ms / e)),
            Against::Published,
            Some(measured_ms / e),
        ),
        None => (
            if ratio > 0.8 {
                Band::Healthy
            } else if ratio >= 0.4 {
                Band::Overhead
            } else {
                Band::Structural
            },
            Against::FloorOnly,
            None,
        ),
    };
    let warning = (ratio > 1.05).then(|| {
        format!(
            "The floor ({floor_ms} ms) is above the measured time ({measured_ms} ms): recheck the bytes per step and the bandwidth used."
        )
    });
    Ok(DecodeBand {
        band,
        ratio,
        expected_ms,
        over_expected: over,
        against,
        advice: advice(band),
        warning,
    })
}

impl DecodeBand {
    /// Re-reads the step against the team's own record of the setup: the expected step
    /// times the fleet's median measured / expected.
    pub fn with_fleet(&self, fleet_ratio: f64, points: usize, measured_ms: f64) -> DecodeBand {
        let Some(e) = self
            .expected_ms
            .map(|e| e / self.fleet_scale() * fleet_ratio)
        else {
            return self.clone();
        };
        let over = measured_ms / e;
        let band = Band::from_label(crate::estimate::expected_cost::band(over));
        DecodeBand {
            band,
            expected_ms: Some(e),
            over_expected: Some(over),
            against: Against::Fleet {
                ratio: fleet_ratio,
                points,
            },
            advice: advice(band),
            ..self.clone()
        }
    }

    fn fleet_scale(&self) -> f64 {
        match self.against {
            Against::Fleet { ratio, .. } => ratio,
            _ => 1.0,
        }
    }

    /// "1.4× its expected step (63% of the bandwidth floor)" for prose.
    pub fn reading(&self) -> String {
        match (self.over_expected, self.against) {
            (Some(o), Against::Fleet { ratio, points }) => format!(
                "{o:.1}× what this setup has taken on the team's own fleet ({ratio:.2}× the \
                 published expectation over {points} measured steps), {:.0}% of the bandwidth floor",
                self.ratio * 100.0
            ),
            (Some(o), _) => format!(
                "{o:.1}× its expected step (what a well-run server of this setup takes), {:.0}% of \
                 the bandwidth floor",
                self.ratio * 100.0
            ),
            (None, _) => format!(
                "{:.1}× its bandwidth floor ({:.0}% of the memory-bandwidth limit)",
                1.0 / self.ratio,
                self.ratio * 100.0
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regimes() {
        assert_eq!(regime(85.0, 30.0), Ok(Regime::ComputeBound));
        assert_eq!(regime(20.0, 90.0), Ok(Regime::MemoryBound));
        assert_eq!(regime(15.0, 25.0), Ok(Regime::LatencyBound));
        assert_eq!(regime(75.0, 80.0), Ok(Regime::Balanced));
        assert_eq!(regime(50.0, 45.0), Ok(Regime::Balanced));
        // Edges: 60 is high, 40 is not low.
        assert_eq!(regime(60.0, 59.9), Ok(Regime::ComputeBound));
        assert_eq!(regime(39.9, 40.0), Ok(Regime::Balanced));
        assert_eq!(regime(101.0, -1.0).unwrap_err().len(), 2);
    }

    #[test]
    fn helps_matches_regime() {
        assert!(helps(Regime::MemoryBound)
            .iter()
            .any(|h| h.contains("quantize")));
        assert!(helps(Regime::LatencyBound)
            .iter()
            .any(|h| h.contains("CUDA graphs")));
        assert!(helps(Regime::ComputeBound)
            .iter()
            .any(|h| h.contains("FP8")));
        assert!(!helps(Regime::Balanced).is_empty());
    }

    #[test]
    fn decode_bands() {
        // against the expected step
        let healthy = decode_band(6.0, Some(9.0), 10.0).unwrap();
        assert_eq!(healthy.band, Band::Healthy);
        assert!(healthy.advice.contains("well-run"));
        assert_eq!(healthy.warning, None);
        assert_eq!(
            decode_band(6.0, Some(5.0), 10.0).unwrap().band,
            Band::Overhead
        );
        let structural = decode_band(2.0, Some(3.0), 10.0).unwrap();
        assert_eq!(structural.band, Band::Structural);
        assert!(structural.advice.contains("structural"));
        assert!(structural.reading().contains("3.3× its expected step"));
        // a floor typed in without a setup: the floor ratio's bands
        let floor_only = decode_band(9.0, None, 10.0).unwrap();
        assert_eq!(floor_only.band, Band::Healthy);
        assert_eq!(floor_only.against, Against::FloorOnly);
        assert_eq!(decode_band(4.0, None, 10.0).unwrap().band, Band::Overhead);
        assert_eq!(decode_band(3.9, None, 10.0).unwrap().band, Band::Structural);
        assert!(decode_band(12.0, None, 10.0).unwrap().warning.is_some());
        assert_eq!(decode_band(0.0, None, f64::NAN).unwrap_err().len(), 2);
    }

    #[test]
    fn the_fleet_history_rescales_the_expected_step() {
        // 14 ms on a setup expected at 10 ms reads overhead; a fleet that has always run
        // it at 1.3× expected makes it healthy, and a 1.6× regression from there is not
        let band = decode_band(5.0, Some(10.0), 14.0).unwrap();
        assert_eq!(band.band, Band::Overhead);
        let fleet = band.with_fleet(1.3, 4, 14.0);
        assert_eq!(fleet.band, Band::Healthy);
        assert!((fleet.expected_ms.unwrap() - 13.0).abs() < 1e-9);
        assert!(fleet.reading().contains("team's own fleet"));
        let regressed = decode_band(5.0, Some(10.0), 13.0 * 1.6)
            .unwrap()
            .with_fleet(1.3, 4, 13.0 * 1.6);
        assert_eq!(regressed.band, Band::Overhead);
        // applying it twice does not compound
        let again = fleet.with_fleet(1.3, 4, 14.0);
        assert!((again.expected_ms.unwrap() - 13.0).abs() < 1e-9);
    }
}
