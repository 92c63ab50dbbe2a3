//! Descriptive statistics shared by the analyzers.

use serde::{Deserialize, Serialize};

/// Summary of a sample. Percentiles use linear interpolation between closest
/// ranks, the default of `numpy.percentile` (method "linear", Hyndman & Fan
/// type 7): for sorted `x` of length `n`, `h = (n-1)·q`, value
/// `x[⌊h⌋] + (h-⌊h⌋)·(x[⌊h⌋+1]-x[⌊h⌋])`. `std` is the population standard
/// deviation (numpy's default `ddof=0`). Fields are `null` for an empty sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Summarize `values`, ignoring NaN (our marker for "missing"). Sorts in place.
    pub fn from_values(values: &mut Vec<f64>) -> Summary {
        values.retain(|v| !v.is_nan());
        if values.is_empty() {
            return Summary::default();
        }
        values.sort_unstable_by(f64::total_cmp);
        Summary::from_sorted(values)
    }

    /// Summarize an already sorted sample without NaN.
    pub fn from_sorted(sorted: &[f64]) -> Summary {
        if sorted.is_empty() {
            return Summary::default();
        }
        let n = sorted.len() as f64;
        let mean = sorted.iter().sum::<f64>() / n;
        let var = sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Summary {
            count: sorted.len() as u64,
            mean: Some(mean),
            std: Some(var.sqrt()),
            min: sorted.first().copied(),
            p50: percentile_sorted(sorted, 0.50),
            p90: percentile_sorted(sorted, 0.90),
            p95: percentile_sorted(sorted, 0.95),
            p99: percentile_sorted(sorted, 0.99),
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
}

/// Percentile `q` in [0, 1] of a sorted sample, numpy "linear" method.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let frac = h - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// Keep at most `max` values of `values` by taking evenly spaced indices, so
/// order (and pairing with other per-request arrays) is preserved.
pub fn stride_sample(values: &[f64], max: usize) -> Vec<f64> {
    if values.len() <= max || max == 0 {
        return values.to_vec();
    }
    let step = values.len() as f64 / max as f64;
    (0..max)
        .map(|i| values[((i as f64 * step) as usize).min(values.len() - 1)])
        .collect()
}

/// Sum of the lengths of the union of `[start, end)` intervals, given sorted by start.
pub fn union_length_sorted(intervals: impl Iterator<Item = (f64, f64)>) -> f64 {
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (s, e) in intervals {
        match cur.as_mut() {
            Some((_, ce)) if s <= *ce => {
                if e > *ce {
                    *ce = e;
                }
            }
            _ => {
                if let Some((cs, ce)) = cur {
                    total += ce - cs;
                }
                cur = Some((s, e));
            }
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([1,2,3,4], [50, 90, 95, 99]) = [2.5, 3.7, 3.85, 3.97]
        let v = [1.0, 2.0, 3.0, 4.0];
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(percentile_sorted(&v, 0.5), 2.5));
        assert!(close(percentile_sorted(&v, 0.9), 3.7));
        assert!(close(percentile_sorted(&v, 0.95), 3.85));
        assert!(close(percentile_sorted(&v, 0.99), 3.97));
        assert_eq!(percentile_sorted(&[7.0], 0.99), Some(7.0));
        assert_eq!(percentile_sorted(&[], 0.5), None);
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
    fn stride_keeps_order_and_bound() {
        let v: Vec<f64> = (0..10_000).map(f64::from).collect();
        let s = stride_sample(&v, 100);
        assert_eq!(s.len(), 100);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(s[0], 0.0);
        assert_eq!(stride_sample(&v[..5], 100).len(), 5);
    }

    #[test]
    fn union_of_intervals() {
        let iv = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7), (6.0, 7.0)];
        assert_eq!(union_length_sorted(iv.into_iter()), 5.0);
        assert_eq!(union_length_sorted(std::iter::empty()), 0.0);
    }
}
