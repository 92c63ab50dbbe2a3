//! Percentile bootstrap of the difference of a statistic between two
//! independent samples, and the run-to-run spread of a statistic.

use rand_pcg::rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use statrs::statistics::Statistics;

use super::quantile::{quantile_sorted, Statistic};
use super::{check_finite, mean, StatsError};

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
/// `Δ* = T(after*) − T(before*)`. Every value takes part (no subsample).
///
/// For a quantile the resample is never built: a resample of n values from the
/// sorted sample `x₍₁₎ ≤ … ≤ x₍ₙ₎` is `x₍⌈n·Uᵢ⌉₎` for n uniform `Uᵢ`, a monotone map,
/// so its k-th smallest value is `x₍⌈n·U₍ₖ₎⌉₎` where `U₍ₖ₎ ~ Beta(k, n + 1 − k)` is the
/// k-th smallest of n uniforms, and the next one is
/// `U₍ₖ₊₁₎ = U₍ₖ₎ + (1 − U₍ₖ₎)·(1 − V^{1/(n−k)})` (the least of the n − k uniforms
/// above it, V uniform). The linear quantile needs only those two order statistics,
/// so each resample costs a few random draws instead of n draws and a selection: the
/// same distribution of `Δ*`, so 100,000 values per side answer in milliseconds.
/// The mean is resampled value by value. The interval is
/// `[Q(α/2), Q(1 − α/2)]` of the B values of `Δ*` with `α = 1 − confidence`,
/// using the linear quantile rule. Negative Δ means the statistic went down.
///
/// The p-value comes from the same B values: it is the smallest α at which the
/// `1 − α` percentile interval (same quantile rule) leaves 0 out, i.e.
/// `p = 2 · min(q₋, 1 − q₊)` where `q₋ = sup{q : Q(q) ≤ 0}` and
/// `q₊ = inf{q : Q(q) ≥ 0}` on the linear quantile curve of the sorted `Δ*`, floored
/// at `1/B` (B resamples cannot tell a smaller one). So the interval at `confidence`
/// leaves 0 out exactly when `p < 1 − confidence`: the interval and the p-value
/// never disagree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiffCi {
    pub statistic: Statistic,
    /// `T(after) − T(before)` on the full samples.
    pub observed_diff: f64,
    pub low: f64,
    pub high: f64,
    /// Two-sided bootstrap p-value of Δ = 0 (see above).
    #[serde(default = "one")]
    pub p_value: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub n_before: usize,
    pub n_after: usize,
}

fn one() -> f64 {
    1.0
}

impl DiffCi {
    /// `(high − low) / 2`.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    /// The interval leaves 0 out (equivalently, `p_value < 1 − confidence`).
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// The p-value of [`DiffCi`] from the sorted resampled differences: the level at which
/// the linear quantile curve `Q(q)` of `sorted` crosses 0, doubled on its nearer tail.
fn bootstrap_p_value(sorted: &[f64]) -> f64 {
    let b = sorted.len();
    if b < 2 {
        return 1.0;
    }
    let last = (b - 1) as f64;
    // The level q at which Q runs through 0 between ranks j and j + 1.
    let crossing = |j: usize| -> f64 {
        let (lo, hi) = (sorted[j], sorted[j + 1]);
        let frac = if hi > lo { (0.0 - lo) / (hi - lo) } else { 0.0 };
        (j as f64 + frac.clamp(0.0, 1.0)) / last
    };
    // q₋ = sup{q : Q(q) ≤ 0}: past the last value ≤ 0.
    let at_most_zero = sorted.partition_point(|d| *d <= 0.0);
    let q_minus = match at_most_zero {
        0 => 0.0,
        n if n == b => 1.0,
        n => crossing(n - 1),
    };
    // q₊ = inf{q : Q(q) ≥ 0}: up to the first value ≥ 0.
    let below_zero = sorted.partition_point(|d| *d < 0.0);
    let q_plus = match below_zero {
        0 => 0.0,
        n if n == b => 1.0,
        n => crossing(n - 1),
    };
    (2.0 * q_minus.min(1.0 - q_plus)).clamp(1.0 / b as f64, 1.0)
}

/// A sample checked (non-empty, finite) and sorted once, for the several statistics
/// and tests of one comparison: each bootstrap of a quantile and the rank test read the
/// same sorted copy instead of sorting again.
#[derive(Debug, Clone)]
pub struct SortedSample<'a> {
    /// The values as given (the mean is summed in this order).
    pub values: &'a [f64],
    /// The same values, ascending.
    pub sorted: Vec<f64>,
}

impl<'a> SortedSample<'a> {
    pub fn new(values: &'a [f64]) -> Result<Self, StatsError> {
        check_finite(values)?;
        let mut sorted = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        Ok(SortedSample { values, sorted })
    }
}

/// Bootstrap CI of `statistic(after) − statistic(before)`; see [`DiffCi`].
pub fn bootstrap_diff_ci(
    before: &[f64],
    after: &[f64],
    statistic: Statistic,
    config: &BootstrapConfig,
) -> Result<DiffCi, StatsError> {
    match statistic {
        // The mean needs no order: no sorted copy.
        Statistic::Mean => {
            check_finite(before)?;
            check_finite(after)?;
            check_config(config)?;
            let (Some(a), Some(b)) = (mean(after), mean(before)) else {
                return Err(StatsError::Empty);
            };
            let observed_diff = a - b;
            let mut rng = Pcg64::seed_from_u64(config.seed);
            let diffs = (0..config.resamples)
                .map(|_| {
                    let b = resampled_mean(&mut rng, before);
                    resampled_mean(&mut rng, after) - b
                })
                .collect();
            Ok(interval(
                diffs,
                statistic,
                observed_diff,
                config,
                (before.len(), after.len()),
            ))
        }
        Statistic::Quantile(_) => bootstrap_diff_ci_sorted(
            &SortedSample::new(before)?,
            &SortedSample::new(after)?,
            statistic,
            config,
        ),
    }
}

/// [`bootstrap_diff_ci`] of samples sorted once by the caller: the same interval for
/// the same seed, without sorting again.
pub fn bootstrap_diff_ci_sorted(
    before: &SortedSample,
    after: &SortedSample,
    statistic: Statistic,
    config: &BootstrapConfig,
) -> Result<DiffCi, StatsError> {
    statistic.validate()?;
    check_config(config)?;
    let sizes = (before.values.len(), after.values.len());
    let mut rng = Pcg64::seed_from_u64(config.seed);
    let (observed_diff, diffs) = match statistic {
        Statistic::Quantile(p) => {
            let observed = quantile_sorted(&after.sorted, p) - quantile_sorted(&before.sorted, p);
            let diffs = (0..config.resamples)
                .map(|_| {
                    let b = resampled_quantile(&mut rng, &before.sorted, p);
                    resampled_quantile(&mut rng, &after.sorted, p) - b
                })
                .collect();
            (observed, diffs)
        }
        Statistic::Mean => {
            return bootstrap_diff_ci(before.values, after.values, statistic, config);
        }
    };
    Ok(interval(diffs, statistic, observed_diff, config, sizes))
}

fn check_config(config: &BootstrapConfig) -> Result<(), StatsError> {
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
    Ok(())
}

/// The percentile interval of the resampled differences.
fn interval(
    mut diffs: Vec<f64>,
    statistic: Statistic,
    observed_diff: f64,
    config: &BootstrapConfig,
    (n_before, n_after): (usize, usize),
) -> DiffCi {
    diffs.sort_by(f64::total_cmp);
    let alpha = 1.0 - config.confidence;
    let (low, high) = (
        quantile_sorted(&diffs, alpha / 2.0),
        quantile_sorted(&diffs, 1.0 - alpha / 2.0),
    );
    let mut p_value = bootstrap_p_value(&diffs);
    // The two are one computation read two ways; where rounding of the crossing level
    // lands exactly on α the interval's endpoints decide.
    let excludes = low > 0.0 || high < 0.0;
    if excludes && p_value >= alpha {
        p_value = alpha * (1.0 - f64::EPSILON);
    } else if !excludes && p_value < alpha {
        p_value = alpha;
    }
    DiffCi {
        statistic,
        observed_diff,
        low,
        high,
        p_value,
        confidence: config.confidence,
        resamples: config.resamples,
        seed: config.seed,
        n_before,
        n_after,
    }
}

/// The mean of one resample (with replacement) of `source`, summed as drawn: no
/// resample is stored.
fn resampled_mean(rng: &mut Pcg64, source: &[f64]) -> f64 {
    let n = source.len() as u128;
    let mut sum = 0.0;
    for _ in 0..source.len() {
        // Multiply-shift maps a 64-bit draw onto 0..n; its bias is below
        // n / 2⁶⁴, far under anything a latency sample could show.
        sum += source[((rng.next_u64() as u128 * n) >> 64) as usize];
    }
    sum / source.len() as f64
}

/// The linear quantile `p` of one bootstrap resample of the sorted sample, drawn
/// through the resample's order statistics (see [`DiffCi`]'s doc).
fn resampled_quantile(rng: &mut Pcg64, sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let frac = h - lo as f64;
    // 1-based rank k = lo + 1 of n: U₍ₖ₎ ~ Beta(k, n + 1 − k).
    let k = lo + 1;
    let u_k = beta(rng, k as f64, (n + 1 - k) as f64);
    let value = |u: f64| sorted[((u * n as f64) as usize).min(n - 1)];
    let x_lo = value(u_k);
    if frac == 0.0 || k == n {
        return x_lo;
    }
    let above = (n - k) as f64;
    let u_next = u_k + (1.0 - u_k) * (1.0 - uniform(rng).powf(1.0 / above));
    x_lo + frac * (value(u_next) - x_lo)
}

/// Uniform on (0, 1), never exactly 0 (53 random bits).
fn uniform(rng: &mut Pcg64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// Standard normal by the Box–Muller transform.
fn normal(rng: &mut Pcg64) -> f64 {
    let (u, v) = (uniform(rng), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Gamma(shape, 1) for shape ≥ 1 (Marsaglia & Tsang, 2000).
fn gamma(rng: &mut Pcg64, shape: f64) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = uniform(rng);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// Beta(a, b) for a, b ≥ 1, as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b).
fn beta(rng: &mut Pcg64, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    x / (x + gamma(rng, b))
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

    /// Fill `out` with draws (with replacement) from `source`: the resampling the mean
    /// bootstrap did before it summed as it drew (the same draws in the same order).
    fn resample_into(rng: &mut Pcg64, source: &[f64], out: &mut [f64]) {
        let n = source.len() as u128;
        for slot in out.iter_mut() {
            let index = ((rng.next_u64() as u128 * n) >> 64) as usize;
            *slot = source[index];
        }
    }

    #[test]
    fn mean_resampling_summed_as_drawn_is_the_stored_resample_bit_for_bit() {
        let before = shaped(800.0, 1_000);
        let after = shaped(760.0, 900);
        let cfg = config(500, 11);
        let ci = bootstrap_diff_ci(&before, &after, Statistic::Mean, &cfg).unwrap();
        // The previous implementation: store each resample, then take its mean.
        let mut rng = Pcg64::seed_from_u64(cfg.seed);
        let (mut b_buf, mut a_buf) = (vec![0.0; before.len()], vec![0.0; after.len()]);
        let mut diffs: Vec<f64> = (0..cfg.resamples)
            .map(|_| {
                resample_into(&mut rng, &before, &mut b_buf);
                resample_into(&mut rng, &after, &mut a_buf);
                Statistic::Mean.eval_in_place(&mut a_buf)
                    - Statistic::Mean.eval_in_place(&mut b_buf)
            })
            .collect();
        diffs.sort_by(f64::total_cmp);
        assert_eq!(ci.low, quantile_sorted(&diffs, 0.025));
        assert_eq!(ci.high, quantile_sorted(&diffs, 0.975));
        assert_eq!(
            ci.observed_diff,
            Statistic::Mean.of(&after).unwrap() - Statistic::Mean.of(&before).unwrap()
        );
    }

    #[test]
    fn sorted_once_gives_the_same_interval() {
        let before = shaped(800.0, 5_000);
        let after = shaped(760.0, 4_000);
        let (b, a) = (
            SortedSample::new(&before).unwrap(),
            SortedSample::new(&after).unwrap(),
        );
        for statistic in [
            Statistic::P50,
            Statistic::P90,
            Statistic::P95,
            Statistic::P99,
            Statistic::Mean,
        ] {
            let cfg = config(1_000, 5);
            let direct = bootstrap_diff_ci(&before, &after, statistic, &cfg).unwrap();
            let sorted = bootstrap_diff_ci_sorted(&b, &a, statistic, &cfg).unwrap();
            assert_eq!(direct, sorted, "{statistic:?}");
            assert_eq!(
                direct.observed_diff,
                statistic.of(&after).unwrap() - statistic.of(&before).unwrap()
            );
        }
    }

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
    fn order_statistics_draw_the_same_distribution_as_resampling() {
        // The p90 of resamples of 1..=50, built value by value, against the draws
        // through order statistics: the same mean and spread within Monte-Carlo error.
        let sample: Vec<f64> = (1..=50).map(f64::from).collect();
        let mut rng = Pcg64::seed_from_u64(3);
        let mut buf = vec![0.0; sample.len()];
        let (mut by_values, mut by_ranks) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            resample_into(&mut rng, &sample, &mut buf);
            by_values.push(Statistic::P90.eval_in_place(&mut buf));
            by_ranks.push(resampled_quantile(&mut rng, &sample, 0.9));
        }
        let moments = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
            (m, var.sqrt())
        };
        let ((m1, s1), (m2, s2)) = (moments(&by_values), moments(&by_ranks));
        assert!((m1 - m2).abs() < 0.1, "{m1} vs {m2}");
        assert!((s1 - s2).abs() < 0.1, "{s1} vs {s2}");
    }

    #[test]
    fn a_hundred_thousand_values_per_side_all_take_part() {
        // Its speed is measured by `cargo bench --bench compare`, not here.
        let before = shaped(800.0, 100_000);
        let after = shaped(760.0, 100_000);
        let ci = bootstrap_diff_ci(&before, &after, Statistic::P99, &BootstrapConfig::default())
            .unwrap();
        assert_eq!((ci.n_before, ci.n_after), (100_000, 100_000));
        assert!(ci.low < ci.observed_diff && ci.observed_diff < ci.high);
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
    fn the_p_value_and_the_interval_never_disagree() {
        // Shifts from none to clear, at every statistic and two confidence levels:
        // the interval leaves 0 out exactly when p < 1 − confidence.
        let before = shaped(100.0, 400);
        let mut seen = (0, 0);
        for shift in [
            0.8, 0.9, 0.95, 0.97, 0.99, 1.0, 1.01, 1.02, 1.05, 1.08, 1.15,
        ] {
            let after: Vec<f64> = shaped(100.0 * shift, 380);
            for statistic in [
                Statistic::P50,
                Statistic::P90,
                Statistic::P99,
                Statistic::Mean,
            ] {
                for confidence in [0.95, 0.9] {
                    for seed in 1..4 {
                        let cfg = BootstrapConfig {
                            resamples: 500,
                            confidence,
                            seed,
                        };
                        let ci = bootstrap_diff_ci(&before, &after, statistic, &cfg).unwrap();
                        let alpha = 1.0 - confidence;
                        assert_eq!(
                            ci.excludes_zero(),
                            ci.p_value < alpha,
                            "{statistic:?} ×{shift} seed {seed}: [{}, {}] p = {}",
                            ci.low,
                            ci.high,
                            ci.p_value
                        );
                        assert!(ci.p_value >= 1.0 / 500.0 && ci.p_value <= 1.0);
                        if ci.excludes_zero() {
                            seen.0 += 1;
                        } else {
                            seen.1 += 1;
                        }
                    }
                }
            }
        }
        assert!(
            seen.0 > 20 && seen.1 > 20,
            "both outcomes exercised: {seen:?}"
        );
    }

    #[test]
    fn bootstrap_p_value_reads_the_crossing_level() {
        // Δ* = −4 … 5 (ten values): Q(q) = −4 + 9q crosses 0 at q = 4/9, so
        // p = 2 · min(4/9, 5/9) = 8/9.
        let d: Vec<f64> = (-4..=5).map(f64::from).collect();
        assert!((bootstrap_p_value(&d) - 8.0 / 9.0).abs() < 1e-12);
        // Every resample above 0: as small as B resamples can say.
        let up: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(bootstrap_p_value(&up), 1.0 / 200.0);
        // All exactly 0: no evidence of a change at all.
        assert_eq!(bootstrap_p_value(&[0.0; 50]), 1.0);
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
