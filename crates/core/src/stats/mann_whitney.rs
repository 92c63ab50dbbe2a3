//! Two-sided Mann–Whitney U test, normal approximation with tie and
//! continuity corrections — the numbers `scipy.stats.mannwhitneyu(x, y,
//! alternative="two-sided", method="asymptotic", use_continuity=True)` gives.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::{check_finite, StatsError};

/// Result of the two-sided Mann–Whitney U test of `x` against `y`.
///
/// * `U₁ = R₁ − n₁(n₁ + 1)/2`, with `R₁` the sum of the (average, for ties)
///   ranks of `x` in the pooled sample; `U₁ + U₂ = n₁n₂`.
/// * `μ = n₁n₂/2`, `σ = sqrt(n₁n₂/12 · ((n + 1) − Σ(tⱼ³ − tⱼ)/(n(n − 1))))`,
///   `tⱼ` the size of each group of tied values, `n = n₁ + n₂`.
/// * `z = sign(U₁ − μ) · max(|U₁ − μ| − ½, 0) / σ` (continuity correction
///   towards zero), `p = min(1, 2·(1 − Φ(|z|)))`.
///
/// Positive z means values of `x` tend to be larger than values of `y`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample (`x`), as scipy reports it.
    pub u: f64,
    pub z: f64,
    pub p_value: f64,
    pub n1: usize,
    pub n2: usize,
}

/// Run the test; see [`MannWhitney`]. When every value is tied σ is 0 and
/// nothing can be told apart: z = 0, p = 1.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Result<MannWhitney, StatsError> {
    check_finite(x)?;
    check_finite(y)?;
    let sorted = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_unstable_by(f64::total_cmp);
        s
    };
    Ok(mann_whitney_sorted(&sorted(x), &sorted(y)))
}

/// [`mann_whitney_u`] of two samples already sorted ascending (finite, non-empty, as
/// a comparison's sorted copies are): the pooled ranks come from merging the two, with
/// no pooled copy and no sort.
pub fn mann_whitney_sorted(x: &[f64], y: &[f64]) -> MannWhitney {
    let (n1, n2) = (x.len(), y.len());
    let n = n1 + n2;
    // Walk both in order; each step takes one group of equal values from both sides,
    // which holds the pooled ranks start+1 ..= end and gets their mean.
    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0;
    let (mut i, mut j, mut start) = (0, 0, 0);
    while start < n {
        let v = match (x.get(i), y.get(j)) {
            (Some(a), Some(b)) => {
                if a.total_cmp(b).is_le() {
                    *a
                } else {
                    *b
                }
            }
            (Some(a), None) => *a,
            (None, Some(b)) => *b,
            (None, None) => unreachable!("start < n leaves a value"),
        };
        let from = i;
        while i < n1 && x[i] == v {
            i += 1;
        }
        let from_y = j;
        while j < n2 && y[j] == v {
            j += 1;
        }
        let end = i + j;
        let t = (end - start) as f64;
        let average_rank = (start + 1 + end) as f64 / 2.0;
        rank_sum_x += (i - from) as f64 * average_rank;
        tie_term += t * t * t - t;
        debug_assert!(i - from + j - from_y > 0);
        start = end;
    }

    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_x - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let variance = if n > 1 {
        n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)))
    } else {
        0.0
    };
    let sigma = variance.max(0.0).sqrt();
    if sigma == 0.0 {
        return MannWhitney {
            u,
            z: 0.0,
            p_value: 1.0,
            n1,
            n2,
        };
    }
    let d = u - mu;
    let z = d.signum() * (d.abs() - 0.5).max(0.0) / sigma;
    let p_value = (2.0 * Normal::standard().sf(z.abs())).min(1.0);
    MannWhitney {
        u,
        z,
        p_value,
        n1,
        n2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Agreement to 3 significant figures is the product's promise; check 6.
    fn same(a: f64, b: f64) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1e-12),
            "got {a}, reference {b}"
        );
    }

    #[test]
    fn hand_computed_no_ties() {
        // x = [1..5], y = [6..10]: x holds ranks 1..5, R₁ = 15,
        // U₁ = 15 − 5·6/2 = 0, μ = 12.5, σ = sqrt(25/12 · 11) = 4.7871355…,
        // z = −(12.5 − 0.5)/σ = −2.5067182…, p = 2Φ(−2.5067) = 0.0121858…
        // scipy 1.17.1 (reference.py): U1=0.0 p=0.012185780355344813
        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        same(r.u, 0.0);
        same(r.z, -2.5067182457620487);
        same(r.p_value, 0.012185780355344813);
    }

    #[test]
    fn ties_average_ranks_and_tie_correction() {
        // By hand: pooled sorted 1 | 2 2 2 | 3 3 3 | 4 | 5 5 | 6 7 8, ranks
        // 1 | 3 3 3 | 6 6 6 | 8 | 9.5 9.5 | 11 12 13. x's ranks 1, 3, 3, 6, 8,
        // 9.5, 9.5 → R₁ = 40, U₁ = 40 − 7·8/2 = 12, μ = 21. Tie groups 3, 3, 2
        // → Σ(t³ − t) = 54, σ² = 42/12 · (14 − 54/156) = 47.788…, σ = 6.91292,
        // z = (12 − 21 + ½)/σ = −1.229582.
        // scipy 1.17.1 (reference.py): U1=12.0 p=0.21885377557711416.
        let r = mann_whitney_u(
            &[1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0],
            &[2.0, 3.0, 3.0, 6.0, 7.0, 8.0],
        )
        .unwrap();
        same(r.u, 12.0);
        same(r.z, -1.2295817286232684);
        same(r.p_value, 0.21885377557711416);
        assert_eq!((r.n1, r.n2), (7, 6));
    }

    #[test]
    fn latency_before_after() {
        // scipy 1.17.1 (reference.py): U1=91.0 p=0.0021853274789521097,
        // z = 3.0638167196433708 (before is slower, so positive).
        let before = [
            812.0, 790.0, 845.0, 901.0, 770.0, 833.0, 860.0, 795.0, 880.0, 815.0,
        ];
        let after = [
            760.0, 742.0, 801.0, 755.0, 790.0, 770.0, 748.0, 781.0, 765.0, 799.0,
        ];
        let r = mann_whitney_u(&before, &after).unwrap();
        same(r.u, 91.0);
        same(r.z, 3.0638167196433708);
        same(r.p_value, 0.0021853274789521097);
        // Swapping the samples gives U₂ = n₁n₂ − U₁ and the same p.
        let swapped = mann_whitney_u(&after, &before).unwrap();
        same(swapped.u, 9.0);
        same(swapped.p_value, r.p_value);
    }

    #[test]
    fn unsorted_input_small_sample() {
        // scipy 1.17.1 (reference.py): mannwhitneyu([3,1,2],[2,5,4,2]) → U1=3.0
        // p=0.3590120537864294, z = −0.9172492321316785.
        let r = mann_whitney_u(&[3.0, 1.0, 2.0], &[2.0, 5.0, 4.0, 2.0]).unwrap();
        same(r.u, 3.0);
        same(r.z, -0.9172492321316785);
        same(r.p_value, 0.3590120537864294);
    }

    #[test]
    fn large_samples_with_half_ranks() {
        // The shaped samples of the bootstrap tests (n = 300 vs 250);
        // scipy 1.17.1 (reference.py): U1=45482.0 p=1.70034628530623e-05,
        // z = 4.300992744052472.
        use statrs::distribution::Normal as N;
        let normal = N::standard();
        let shaped = |scale: f64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| scale * (0.35 * normal.inverse_cdf((i as f64 + 0.5) / n as f64)).exp())
                .collect()
        };
        let r = mann_whitney_u(&shaped(800.0, 300), &shaped(700.0, 250)).unwrap();
        same(r.u, 45482.0);
        assert!((r.z - 4.300992744052472).abs() < 1e-4);
        assert!((r.p_value - 1.70034628530623e-05).abs() < 1e-8);
    }

    #[test]
    fn all_tied_gives_p_one() {
        let r = mann_whitney_u(&[5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((r.u, r.z, r.p_value), (3.0, 0.0, 1.0));
        let equal_medians = mann_whitney_u(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(equal_medians.p_value, 1.0);
    }

    #[test]
    fn merging_sorted_samples_is_the_pooled_sort_bit_for_bit() {
        // The previous implementation: pool with a marker, sort, average rank per tie.
        fn pooled(x: &[f64], y: &[f64]) -> (f64, f64) {
            let mut p: Vec<(f64, bool)> = x
                .iter()
                .map(|&v| (v, true))
                .chain(y.iter().map(|&v| (v, false)))
                .collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut r, mut tie, mut s) = (0.0, 0.0, 0);
            while s < p.len() {
                let mut e = s + 1;
                while e < p.len() && p[e].0 == p[s].0 {
                    e += 1;
                }
                let t = (e - s) as f64;
                r += p[s..e].iter().filter(|q| q.1).count() as f64 * (s + 1 + e) as f64 / 2.0;
                tie += t * t * t - t;
                s = e;
            }
            (r, tie)
        }
        // Many ties (values rounded to a step) and no ties, of unequal sizes.
        for (step, n1, n2) in [(0.5, 3_000, 2_000), (1e-9, 1_000, 1_700), (5.0, 10, 400)] {
            let x: Vec<f64> = (0..n1)
                .map(|i| ((i * 7919 % 1000) as f64 * 1.3 / step).round() * step)
                .collect();
            let y: Vec<f64> = (0..n2)
                .map(|i| ((i * 104_729 % 1000) as f64 * 1.25 / step).round() * step)
                .collect();
            let r = mann_whitney_u(&x, &y).unwrap();
            let (rank_sum, tie_term) = pooled(&x, &y);
            let (f1, f2, f) = (n1 as f64, n2 as f64, (n1 + n2) as f64);
            assert_eq!(r.u, rank_sum - f1 * (f1 + 1.0) / 2.0);
            let sigma = (f1 * f2 / 12.0 * ((f + 1.0) - tie_term / (f * (f - 1.0)))).sqrt();
            let d = r.u - f1 * f2 / 2.0;
            assert_eq!(r.z, d.signum() * (d.abs() - 0.5).max(0.0) / sigma);
        }
    }

    #[test]
    fn refuses_nan_and_empty() {
        assert!(matches!(
            mann_whitney_u(&[1.0], &[f64::NAN]),
            Err(StatsError::NotFinite { index: 0, .. })
        ));
        assert_eq!(mann_whitney_u(&[], &[1.0]), Err(StatsError::Empty));
    }
}
