//! "Which regime is this" drills: a kernel's SM and DRAM throughput (% of peak, as
//! Nsight Compute reports them), four choices, graded by the step-4 rule itself
//! ([`crate::method::regime::regime`]).

use serde::Serialize;

use super::rng::Dice;
use crate::method::regime::{helps, regime, Regime, HIGH_PCT, LOW_PCT};

/// The four answers, in the order the page offers them.
pub const CHOICES: [Regime; 4] = [
    Regime::ComputeBound,
    Regime::MemoryBound,
    Regime::LatencyBound,
    Regime::Balanced,
];

const KERNELS: &[&str] = &[
    "attention decode (paged)",
    "fused MLP GEMM",
    "RMSNorm",
    "rotary embedding",
    "top-p sampler",
    "all-reduce copy",
    "flash attention prefill",
    "dequantize int4 weights",
    "KV cache write",
    "logits softmax",
];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeDrill {
    pub seed: u64,
    pub kernel: &'static str,
    pub sm_pct: f64,
    pub dram_pct: f64,
}

/// Keeps drawn percentages this far from a threshold, so no answer hangs on a rounding.
const MARGIN: f64 = 4.0;

fn clear_of_thresholds(pct: f64) -> bool {
    (pct - HIGH_PCT).abs() >= MARGIN && (pct - LOW_PCT).abs() >= MARGIN
}

/// The drill for `seed`: each regime comes up about as often as the others.
pub fn generate(seed: u64) -> RegimeDrill {
    let mut d = Dice::new(seed, "regime");
    let kernel = *d.pick(KERNELS);
    let target = *d.pick(&CHOICES);
    loop {
        let sm = d.stepped(3.0, 97.0, 1.0);
        let dram = d.stepped(3.0, 97.0, 1.0);
        if !clear_of_thresholds(sm) || !clear_of_thresholds(dram) {
            continue;
        }
        if regime(sm, dram) == Ok(target) {
            return RegimeDrill {
                seed,
                kernel,
                sm_pct: sm,
                dram_pct: dram,
            };
        }
    }
}

impl RegimeDrill {
    pub fn answer(&self) -> Regime {
        // In range by construction.
        regime(self.sm_pct, self.dram_pct).unwrap_or(Regime::Balanced)
    }
}

/// The slug of a regime as forms and attempts carry it.
pub fn slug(r: Regime) -> &'static str {
    match r {
        Regime::ComputeBound => "compute_bound",
        Regime::MemoryBound => "memory_bound",
        Regime::LatencyBound => "latency_bound",
        Regime::Balanced => "balanced",
    }
}

pub fn parse(slug_or_label: &str) -> Option<Regime> {
    let s = slug_or_label.trim();
    CHOICES
        .into_iter()
        .find(|r| slug(*r) == s || r.label() == s)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeGrade {
    pub correct: bool,
    pub given: Regime,
    pub expected: Regime,
    /// The rule that decides, with this kernel's numbers.
    pub reason: String,
    /// What can help a kernel in the right regime.
    pub helps: Vec<&'static str>,
}

pub fn grade(drill: &RegimeDrill, given: Regime) -> RegimeGrade {
    let expected = drill.answer();
    let (sm, dram) = (drill.sm_pct, drill.dram_pct);
    let reason = match expected {
        Regime::ComputeBound => format!(
            "SM {sm:.0} % is at or above {HIGH_PCT:.0} % while DRAM {dram:.0} % is below it: arithmetic is the limit."
        ),
        Regime::MemoryBound => format!(
            "DRAM {dram:.0} % is at or above {HIGH_PCT:.0} % while SM {sm:.0} % is below it: memory traffic is the limit."
        ),
        Regime::LatencyBound => format!(
            "Both SM {sm:.0} % and DRAM {dram:.0} % are under {LOW_PCT:.0} %: neither unit is busy, the kernel is too small or waits."
        ),
        Regime::Balanced => format!(
            "SM {sm:.0} % and DRAM {dram:.0} % give no single limit: read the stall reasons before choosing a fix."
        ),
    };
    RegimeGrade {
        correct: given == expected,
        given,
        expected,
        reason,
        helps: helps(expected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drills_are_reproducible_clear_and_cover_every_regime() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..400 {
            let d = generate(seed);
            assert_eq!(d, generate(seed));
            assert!(clear_of_thresholds(d.sm_pct) && clear_of_thresholds(d.dram_pct));
            assert!((0.0..=100.0).contains(&d.sm_pct));
            seen.insert(slug(d.answer()));
        }
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn grading_uses_the_step_four_rule() {
        let d = RegimeDrill {
            seed: 0,
            kernel: "RMSNorm",
            sm_pct: 20.0,
            dram_pct: 88.0,
        };
        let g = grade(&d, Regime::ComputeBound);
        assert!(!g.correct);
        assert_eq!(g.expected, Regime::MemoryBound);
        assert!(g.reason.contains("DRAM 88 %"), "{}", g.reason);
        assert!(g.helps.iter().any(|h| h.contains("quantize")));
        assert!(grade(&d, Regime::MemoryBound).correct);
        assert_eq!(parse("memory_bound"), Some(Regime::MemoryBound));
        assert_eq!(parse("latency-bound"), Some(Regime::LatencyBound));
        assert_eq!(parse("fast"), None);
    }
}
