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

/// Band of a decode step against its memory-bandwidth floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// ratio > 0.8
    NearLimit,
    /// 0.4 ≤ ratio ≤ 0.8
    Overhead,
    /// ratio < 0.4
    Structural,
}

/// Measured decode step against its floor.
///
/// `ratio = floor / measured`, the fraction of the physical limit achieved
/// (the floor is bytes per step / memory bandwidth, so measured ≥ floor and
/// the ratio is at most 1). Bands: > 0.8 near the limit — only moving fewer
/// bytes helps; 0.4–0.8 kernel or launch overhead — profile; < 0.4 something
/// structural (batching, scheduling, syncs) wastes most of each step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeBand {
    pub band: Band,
    pub ratio: f64,
    pub advice: &'static str,
    /// Set when the floor is more than 5% above the measured time, which
    /// physics forbids: the bytes or the bandwidth used for the floor is wrong.
    pub warning: Option<String>,
}

/// Compare a measured decode step time with its bandwidth floor (both ms).
pub fn decode_band(floor_ms: f64, measured_ms: f64) -> Result<DecodeBand, Vec<FieldError>> {
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
    let (band, advice) = if ratio > 0.8 {
        (
            Band::NearLimit,
            "Decode runs near the memory-bandwidth limit: only moving fewer bytes helps — quantize weights or the KV cache, or share reads over a larger batch.",
        )
    } else if ratio >= 0.4 {
        (
            Band::Overhead,
            "Decode loses a large part of each step to kernel or launch overhead: profile the step (CUDA graphs, fusion, slow kernels) before buying hardware.",
        )
    } else {
        (
            Band::Structural,
            "Decode takes well over twice its floor: something structural — tiny batches, prefills interleaved with decode steps, host syncs or scheduling gaps — wastes most of each step.",
        )
    };
    let warning = (ratio > 1.05).then(|| {
        format!(
            "The floor ({floor_ms} ms) is above the measured time ({measured_ms} ms): recheck the bytes per step and the bandwidth used."
        )
    });
    Ok(DecodeBand {
        band,
        ratio,
        advice,
        warning,
    })
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
        let near = decode_band(9.0, 10.0).unwrap();
        assert_eq!(near.band, Band::NearLimit);
        assert!(near.advice.contains("quantize"));
        assert_eq!(near.warning, None);
        assert_eq!(
            decode_band(8.0, 10.0).unwrap().band,
            Band::Overhead,
            "0.8 is overhead"
        );
        assert_eq!(
            decode_band(4.0, 10.0).unwrap().band,
            Band::Overhead,
            "0.4 is overhead"
        );
        let structural = decode_band(3.9, 10.0).unwrap();
        assert_eq!(structural.band, Band::Structural);
        assert!(structural.advice.contains("structural"));
        assert!(decode_band(12.0, 10.0).unwrap().warning.is_some());
        assert_eq!(decode_band(0.0, f64::NAN).unwrap_err().len(), 2);
    }
}
