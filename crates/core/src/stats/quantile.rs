//! Quantiles with linear interpolation (numpy's default `method="linear"`,
//! Hyndman & Fan type 7) and the usual latency summary.

use serde::{Deserialize, Serialize};

use super::{check_finite, mean, StatsError};

/// Quantile `p` (0 ≤ p ≤ 1) of `values`, linear interpolation between order
/// statistics:
///
/// `h = (n − 1)·p`, `Q(p) = x₍⌊h⌋₎ + (h − ⌊h⌋)·(x₍⌊h⌋+1₎ − x₍⌊h⌋₎)` on the sorted
/// values (0-based), which is what `numpy.quantile(values, p)` returns.
/// NaN and infinities are refused.
pub fn quantile(values: &[f64], p: f64) -> Result<f64, StatsError> {
    check_finite(values)?;
    check_probability(p)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(quantile_sorted(&sorted, p))
}

fn check_probability(p: f64) -> Result<(), StatsError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(StatsError::BadProbability(p))
    }
}

/// Same formula on already sorted, finite, non-empty values.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Same formula on unsorted values, reordering `buf` in place (selection, no full
/// sort): the reference the bootstrap's order-statistic draws are checked against.
#[cfg(test)]
pub(crate) fn quantile_select(buf: &mut [f64], p: f64) -> f64 {
    quantiles_select(buf, [p])[0]
}

/// Quantiles `ps` (ascending, each in [0, 1]) of non-empty values without NaN, by the
/// rule of [`quantile`], reordering `values` in place. Each lower order statistic is
/// found by selection in the part above the previous one (everything before it is no
/// larger), and the next order statistic is the least value above it: about two passes
/// over the values for all of them, instead of a sort.
pub fn quantiles_select<const N: usize>(values: &mut [f64], ps: [f64; N]) -> [f64; N] {
    debug_assert!(!values.is_empty() && ps.windows(2).all(|w| w[0] <= w[1]));
    let n = values.len();
    let mut out = [0.0; N];
    let mut start = 0;
    for (slot, p) in out.iter_mut().zip(ps) {
        let h = (n - 1) as f64 * p;
        let lo = h.floor() as usize;
        let frac = h - lo as f64;
        let (_, x_lo, upper) = values[start..].select_nth_unstable_by(lo - start, f64::total_cmp);
        let x_lo = *x_lo;
        *slot = if frac == 0.0 || upper.is_empty() {
            x_lo
        } else {
            let x_hi = upper.iter().copied().fold(f64::INFINITY, f64::min);
            x_lo + frac * (x_hi - x_lo)
        };
        start = lo;
    }
    out
}

/// The number a comparison is about: a quantile or the arithmetic mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "p", rename_all = "snake_case")]
pub enum Statistic {
    /// `Q(p)` as defined by [`quantile`].
    Quantile(f64),
    /// `Σx / n`.
    Mean,
}

impl Statistic {
    pub const P50: Statistic = Statistic::Quantile(0.50);
    pub const P90: Statistic = Statistic::Quantile(0.90);
    pub const P95: Statistic = Statistic::Quantile(0.95);
    pub const P99: Statistic = Statistic::Quantile(0.99);

    /// The statistic of `values` (checked: non-empty, finite, p in [0, 1]).
    pub fn of(self, values: &[f64]) -> Result<f64, StatsError> {
        check_finite(values)?;
        match self {
            Statistic::Quantile(p) => quantile(values, p),
            Statistic::Mean => mean(values).ok_or(StatsError::Empty),
        }
    }

    pub(crate) fn validate(self) -> Result<(), StatsError> {
        match self {
            Statistic::Quantile(p) => check_probability(p),
            Statistic::Mean => Ok(()),
        }
    }

    /// Unchecked evaluation on a scratch buffer (reordered).
    #[cfg(test)]
    pub(crate) fn eval_in_place(self, buf: &mut [f64]) -> f64 {
        match self {
            Statistic::Quantile(p) => quantile_select(buf, p),
            Statistic::Mean => mean(buf).unwrap_or(f64::NAN),
        }
    }

    /// "p95", "p99.9", "mean".
    pub fn label(self) -> String {
        match self {
            Statistic::Mean => "mean".to_string(),
            Statistic::Quantile(p) => format!("p{}", trim_float(p * 100.0)),
        }
    }
}

fn trim_float(v: f64) -> String {
    // p = 0.95 gives 95.00000000000001; round to 6 decimals before printing.
    let r = (v * 1e6).round() / 1e6;
    format!("{r}")
}

/// Summary of a sample: count, mean, population standard deviation (numpy's default
/// `ddof=0`), min, max and p50/p90/p95/p99 by the linear rule of [`quantile`]. The one
/// summary the analyzers store and comparisons report. Fields are `null` for an empty
/// sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub count: u64,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    /// The summary of a measured sample (checked: non-empty, finite).
    pub fn of(values: &[f64]) -> Result<Summary, StatsError> {
        check_finite(values)?;
        let mut sorted = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        Ok(Summary::from_sorted(&sorted))
    }

    /// Summarize `values`, ignoring NaN (the analyzers' marker for "missing"). Reorders
    /// in place: the percentiles are found by selection ([`quantiles_select`]), not by a
    /// sort, so a million values cost a few passes (the request-log analysis summarises
    /// nine such columns at the end of a load). The mean is summed in the given order.
    pub fn from_values(values: &mut Vec<f64>) -> Summary {
        values.retain(|v| !v.is_nan());
        let (Some(&min), Some(&max), Some(mean)) = (
            values.iter().min_by(|a, b| a.total_cmp(b)),
            values.iter().max_by(|a, b| a.total_cmp(b)),
            mean(values),
        ) else {
            return Summary::default();
        };
        let n = values.len() as f64;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let [p50, p90, p95, p99] = quantiles_select(values, [0.50, 0.90, 0.95, 0.99]);
        Summary {
            count: values.len() as u64,
            mean: Some(mean),
            std: Some(var.sqrt()),
            min: Some(min),
            p50: Some(p50),
            p90: Some(p90),
            p95: Some(p95),
            p99: Some(p99),
            max: Some(max),
        }
    }

    /// Summarize an already sorted sample without NaN.
    pub fn from_sorted(sorted: &[f64]) -> Summary {
        let Some(mean) = mean(sorted) else {
            return Summary::default();
        };
        let n = sorted.len() as f64;
        let var = sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Summary {
            count: sorted.len() as u64,
            mean: Some(mean),
            std: Some(var.sqrt()),
            min: sorted.first().copied(),
            p50: Some(quantile_sorted(sorted, 0.50)),
            p90: Some(quantile_sorted(sorted, 0.90)),
            p95: Some(quantile_sorted(sorted, 0.95)),
            p99: Some(quantile_sorted(sorted, 0.99)),
            max: sorted.last().copied(),
        }
    }

    /// Multiply every value by `k` (unit conversion).
    pub fn scaled(mut self, k: f64) -> Summary {
        for v in [
            &mut self.mean,
            &mut self.std,
            &mut self.min,
            &mut self.p50,
            &mut self.p90,
            &mut self.p95,
            &mut self.p99,
            &mut self.max,
        ] {
            if let Some(x) = v.as_mut() {
                *x *= k;
            }
        }
        self
    }

    /// The summary's value for a statistic it holds (mean, min, max or p50/p90/p95/p99).
    pub fn get(&self, statistic: Statistic) -> Option<f64> {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        match statistic {
            Statistic::Mean => self.mean,
            Statistic::Quantile(p) if close(p, 0.50) => self.p50,
            Statistic::Quantile(p) if close(p, 0.90) => self.p90,
            Statistic::Quantile(p) if close(p, 0.95) => self.p95,
            Statistic::Quantile(p) if close(p, 0.99) => self.p99,
            Statistic::Quantile(p) if close(p, 0.0) => self.min,
            Statistic::Quantile(p) if close(p, 1.0) => self.max,
            Statistic::Quantile(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference: numpy 2.4.6, `np.quantile(DATA, p)` (default method "linear"),
    // crates/core/src/stats/reference.py:
    //   0.0 95.5 | 0.5 130.5 | 0.9 310.2 | 0.95 590.1 | 0.99 814.0200000000002
    //   1.0 870.0 | mean 207.2818181818182 | [7.0] p95 7.0 | [1, 2] p95 1.95
    const DATA: [f64; 11] = [
        120.0, 95.5, 310.2, 150.0, 101.0, 99.9, 870.0, 130.5, 145.0, 160.0, 98.0,
    ];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn matches_numpy_linear() {
        for (p, want) in [
            (0.0, 95.5),
            (0.5, 130.5),
            (0.9, 310.2),
            (0.95, 590.1),
            (0.99, 814.0200000000002),
            (1.0, 870.0),
        ] {
            let got = quantile(&DATA, p).unwrap();
            assert!(close(got, want), "p={p}: {got} vs {want}");
        }
        assert_eq!(quantile(&[7.0], 0.95).unwrap(), 7.0);
        assert!(close(quantile(&[1.0, 2.0], 0.95).unwrap(), 1.95));
    }

    #[test]
    fn selection_agrees_with_sorting() {
        for p in [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0] {
            let mut buf = DATA.to_vec();
            assert!(close(
                quantile_select(&mut buf, p),
                quantile(&DATA, p).unwrap()
            ));
        }
    }

    #[test]
    fn summary_matches_reference() {
        let s = Summary::of(&DATA).unwrap();
        assert_eq!(s.count, 11);
        let v = |x: Option<f64>| x.unwrap();
        assert!(close(v(s.mean), 207.2818181818182));
        assert_eq!((s.min, s.max), (Some(95.5), Some(870.0)));
        assert!(close(v(s.p50), 130.5) && close(v(s.p90), 310.2));
        assert!(close(v(s.p95), 590.1) && close(v(s.p99), 814.0200000000002));
        assert_eq!(s.get(Statistic::P95), s.p95);
        assert_eq!(s.get(Statistic::Quantile(0.75)), None);
        // numpy.percentile([1,2,3,4], [50, 90, 95, 99]) = [2.5, 3.7, 3.85, 3.97]
        let small = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert!(close(v(small.p90), 3.7) && close(v(small.p99), 3.97));
    }

    #[test]
    fn selected_summary_equals_the_sorted_one() {
        // Percentiles, min and max bit for bit; the mean to rounding (summed in another order).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values: Vec<f64> = (0..10_007)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i % 97 == 0 {
                    f64::NAN
                } else {
                    (x % 1_000_000) as f64 / 7.0
                }
            })
            .collect();
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let want = Summary::from_sorted(&sorted);
        let got = Summary::from_values(&mut values);
        assert_eq!(got.count, want.count);
        assert_eq!((got.min, got.max), (want.min, want.max));
        assert_eq!(
            (got.p50, got.p90, got.p95, got.p99),
            (want.p50, want.p90, want.p95, want.p99)
        );
        assert!(close(got.mean.unwrap(), want.mean.unwrap()));
        assert!(close(got.std.unwrap(), want.std.unwrap()));
        for p in [0.0, 0.001, 0.5, 0.999, 1.0] {
            let mut buf = sorted.clone();
            buf.reverse();
            assert_eq!(
                quantiles_select(&mut buf, [p])[0],
                quantile_sorted(&sorted, p)
            );
        }
    }

    #[test]
    fn summary_ignores_nan_and_sorts() {
        let mut v = vec![3.0, f64::NAN, 1.0, 2.0];
        let s = Summary::from_values(&mut v);
        assert_eq!(s.count, 3);
        assert_eq!(s.mean, Some(2.0));
        assert_eq!(s.min, Some(1.0));
        assert_eq!(s.max, Some(3.0));
        assert_eq!(s.p50, Some(2.0));
        assert!((s.std.unwrap() - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let empty = Summary::from_values(&mut Vec::new());
        assert_eq!(empty.count, 0);
        assert_eq!(empty.p50, None);
        let scaled = s.scaled(1000.0);
        assert_eq!(scaled.max, Some(3000.0));
    }

    #[test]
    fn refuses_nan_empty_and_bad_p() {
        assert!(matches!(
            quantile(&[1.0, f64::NAN], 0.5),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
        assert!(matches!(
            Summary::of(&[f64::INFINITY]),
            Err(StatsError::NotFinite { index: 0, .. })
        ));
        assert_eq!(quantile(&[], 0.5), Err(StatsError::Empty));
        assert_eq!(quantile(&[1.0], 1.5), Err(StatsError::BadProbability(1.5)));
    }

    #[test]
    fn statistic_labels() {
        assert_eq!(Statistic::P95.label(), "p95");
        assert_eq!(Statistic::Quantile(0.999).label(), "p99.9");
        assert_eq!(Statistic::Mean.label(), "mean");
    }
}
