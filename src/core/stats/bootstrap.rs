//! Percentile bootstrap of the difference of a statistic between two
//! independent samples, and the run-to-run spread of a statistic.

use rand_pcg::rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use statrs::statistics::Statistics;

use super::quantile::{quantile_sorted, Statistic};
use super::{check_finite, StatsError};

/// Resamples drawn when the caller has no reason to choose otherwise.
pub const DEFAULT_RESAMPLES: usize = 2000;

/// Settings of one bootstrap. The seed is part of the result: the same data,
/// statistic, resamples and seed always give the same interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// B, the number of paired resamples.
    pub resamples: usize,
    /// Two-sided confidence level, 0.95 for a 95% interval.
    pub confidence: f64,
    /// Seed of the PCG-64 generator (`rand_pcg::Pcg64`, whose output stream is
    /// fixed by its algorithm, so stored intervals stay reproducible).
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            resamples: DEFAULT_RESAMPLES,
            confidence: 0.95,
            seed: 0x5eed,
        }
    }
}

/// Percentile-bootstrap confidence interval of `Δ = T(after) − T(before)`.
///
/// Each of the B resamples draws `n_before` values with replacement from
/// `before` and `n_after` from `after` (independently), and records
/// `Δ* = T(after*) − T(before*)`. The interval is
/// `[Q(α/2), Q(1 − α/2)]` of the B values of `Δ*` with `α = 1 − confidence`,
/// using the linear quantile rule. Negative Δ means the statistic went down.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiffCi {
    pub statistic: Statistic,
    /// `T(after) − T(before)` on the full samples.
    pub observed_diff: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub n_before: usize,
    pub n_after: usize,
}

impl DiffCi {
    /// `(high − low) / 2`.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

/// Bootstrap CI of `statistic(after) − statistic(before)`; see [`DiffCi`].
pub fn bootstrap_diff_ci(
    before: &[f64],
    after: &[f64],
    statistic: Statistic,
    config: &BootstrapConfig,
) -> Result<DiffCi, StatsError> {
    check_finite(before)?;
    check_finite(after)?;
    statistic.validate()?;
    if config.resamples < 100 {
        return Err(StatsError::BadArgument(
            "at least 100 bootstrap resamples are needed for a percentile interval",
        ));
    }
    if !(config.confidence > 0.0 && config.confidence < 1.0) {
        return Err(StatsError::BadArgument(
            "confidence must be strictly between 0 and 1",
        ));
    }

    let observed_diff = statistic.of(after)? - statistic.of(before)?;
    let mut rng = Pcg64::seed_from_u64(config.seed);
    let mut before_buf = vec![0.0; before.len()];
    let mut after_buf = vec![0.0; after.len()];
    let mut diffs = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        resample_into(&mut rng, before, &mut before_buf);
        resample_into(&mut rng, after, &mut after_buf);
        diffs.push(
            statistic.eval_in_place(&mut after_buf) - statistic.eval_in_place(&mut before_buf),
        );
    }
    diffs.sort_by(f64::total_cmp);
    let alpha = 1.0 - config.confidence;
    Ok(DiffCi {
        statistic,
        observed_diff,
        low: quantile_sorted(&diffs, alpha / 2.0),
        high: quantile_sorted(&diffs, 1.0 - alpha / 2.0),
        confidence: config.confidence,
        resamples: config.resamples,
        seed: config.seed,
        n_before: before.len(),
        n_after: after.len(),
    })
}

/// Fill `out` with draws (with replacement) from `source`.
fn resample_into(rng: &mut Pcg64, source: &[f64], out: &mut [f64]) {
    let n = source.len() as u128;
    for slot in out.iter_mut() {
        // Multiply-shift maps a 64-bit draw onto 0..n; its bias is below
        // n / 2⁶⁴, far under anything a latency sample could show.
        let index = ((rng.next_u64() as u128 * n) >> 64) as usize;
        *slot = source[index];
    }
}

/// Between-run spread of a statistic when each side was measured in several
/// runs: the statistic `Tᵢ` of each run, `min Tᵢ`, `max Tᵢ`,
/// `range = max − min`, their mean and sample standard deviation
/// `sqrt(Σ(Tᵢ − T̄)² / (r − 1))` (absent for a single run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpread {
    pub statistic: Statistic,
    pub per_run: Vec<f64>,
    pub min: f64,
    pub max: f64,
    pub range: f64,
    pub mean: f64,
    pub stdev: Option<f64>,
}

/// The statistic of each run and its spread; see [`RunSpread`].
pub fn run_spread<R: AsRef<[f64]>>(
    runs: &[R],
    statistic: Statistic,
) -> Result<RunSpread, StatsError> {
    if runs.is_empty() {
        return Err(StatsError::Empty);
    }
    let per_run = runs
        .iter()
        .map(|run| statistic.of(run.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let min = per_run.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_run.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let stdev = (per_run.len() > 1).then(|| per_run.iter().std_dev());
    Ok(RunSpread {
        statistic,
        mean: per_run.iter().mean(),
        min,
        max,
        range: max - min,
        stdev,
        per_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::distribution::{ContinuousCDF, Normal};

    /// `scale · exp(0.35 · Φ⁻¹((i + ½)/n))`: a skewed, latency-like sample that
    /// the reference script rebuilds exactly with `scipy.stats.norm.ppf`.
    fn shaped(scale: f64, n: usize) -> Vec<f64> {
        let normal = Normal::standard();
        (0..n)
            .map(|i| scale * (0.35 * normal.inverse_cdf((i as f64 + 0.5) / n as f64)).exp())
            .collect()
    }

    fn config(resamples: usize, seed: u64) -> BootstrapConfig {
        BootstrapConfig {
            resamples,
            confidence: 0.95,
            seed,
        }
    }

    #[test]
    fn exact_bootstrap_distribution_small_samples() {
        // Reference: enumerate all 3³ × 3³ equally likely resamples of
        // before = [10, 20, 40], after = [15, 35, 60] (reference.py, numpy 2.4.6).
        // Δ*'s CDF jumps over 0.025 at Δ = −11.666… (0.0137 → 0.0343) and over
        // 0.975 at Δ = 38.333… (0.9684 → 0.9808), so with B = 20 000 the
        // percentile interval must land exactly on those atoms.
        let ci = bootstrap_diff_ci(
            &[10.0, 20.0, 40.0],
            &[15.0, 35.0, 60.0],
            Statistic::Mean,
            &config(20_000, 42),
        )
        .unwrap();
        assert!((ci.observed_diff - 13.333333333333334).abs() < 1e-9);
        assert!((ci.low - -11.666666666666666).abs() < 1e-9, "{}", ci.low);
        assert!((ci.high - 38.333333333333336).abs() < 1e-9, "{}", ci.high);
    }

    #[test]
    fn mean_and_p95_intervals_match_numpy() {
        // Reference: numpy percentile bootstrap with B = 200 000 on the same
        // shaped samples (reference.py):
        //   mean diff −106.32730984538227, CI [−153.98479905, −58.53629036]
        //   p95  diff −178.04724422651316, CI [−340.38742706, −16.957976]
        // Tolerances cover Monte-Carlo error at B = 20 000 (≈ 6 σ).
        let before = shaped(800.0, 300);
        let after = shaped(700.0, 250);
        let mean = bootstrap_diff_ci(&before, &after, Statistic::Mean, &config(20_000, 1)).unwrap();
        assert!((mean.observed_diff - -106.32730984538227).abs() < 1e-6);
        assert!((mean.low - -153.985).abs() < 3.0, "{}", mean.low);
        assert!((mean.high - -58.536).abs() < 3.0, "{}", mean.high);
        assert!(mean.high < 0.0, "the interval excludes zero");

        let p95 = bootstrap_diff_ci(&before, &after, Statistic::P95, &config(20_000, 1)).unwrap();
        assert!((p95.observed_diff - -178.04724422651316).abs() < 1e-6);
        assert!((p95.low - -340.387).abs() < 12.0, "{}", p95.low);
        assert!((p95.high - -16.958).abs() < 12.0, "{}", p95.high);
    }

    #[test]
    fn same_seed_same_interval_other_seed_other_interval() {
        let before = shaped(800.0, 120);
        let after = shaped(760.0, 110);
        let cfg = BootstrapConfig::default();
        assert_eq!(cfg.resamples, 2000);
        let a = bootstrap_diff_ci(&before, &after, Statistic::P99, &cfg).unwrap();
        let b = bootstrap_diff_ci(&before, &after, Statistic::P99, &cfg).unwrap();
        assert_eq!(a, b);
        let c = bootstrap_diff_ci(
            &before,
            &after,
            Statistic::P99,
            &BootstrapConfig { seed: 7, ..cfg },
        )
        .unwrap();
        assert_ne!((a.low, a.high), (c.low, c.high));
    }

    #[test]
    fn identical_samples_interval_contains_zero() {
        let s = shaped(500.0, 200);
        let ci = bootstrap_diff_ci(&s, &s, Statistic::P50, &BootstrapConfig::default()).unwrap();
        assert_eq!(ci.observed_diff, 0.0);
        assert!(
            ci.low <= 0.0 && ci.high >= 0.0,
            "the interval contains zero"
        );
    }

    #[test]
    fn bad_input_is_refused() {
        let cfg = BootstrapConfig::default();
        assert!(matches!(
            bootstrap_diff_ci(&[1.0, f64::NAN], &[1.0], Statistic::Mean, &cfg),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
        assert_eq!(
            bootstrap_diff_ci(&[], &[1.0], Statistic::Mean, &cfg),
            Err(StatsError::Empty)
        );
        assert!(bootstrap_diff_ci(&[1.0], &[1.0], Statistic::Quantile(2.0), &cfg).is_err());
        assert!(bootstrap_diff_ci(&[1.0], &[1.0], Statistic::Mean, &config(10, 1)).is_err());
    }

    #[test]
    fn run_spread_per_run_statistic() {
        let runs = vec![
            vec![1.0, 2.0, 3.0],
            vec![2.0, 4.0, 6.0],
            vec![3.0, 3.0, 3.0],
        ];
        let s = run_spread(&runs, Statistic::Mean).unwrap();
        assert_eq!(s.per_run, vec![2.0, 4.0, 3.0]);
        assert_eq!((s.min, s.max, s.range, s.mean), (2.0, 4.0, 2.0, 3.0));
        // Sample stdev of [2, 4, 3]: sqrt(((−1)² + 1² + 0²) / 2) = 1.
        assert!((s.stdev.unwrap() - 1.0).abs() < 1e-12);
        let one = run_spread(&[[5.0, 7.0]], Statistic::P50).unwrap();
        assert_eq!((one.range, one.stdev), (0.0, None));
        assert_eq!(
            run_spread::<Vec<f64>>(&[], Statistic::Mean),
            Err(StatsError::Empty)
        );
    }
}
