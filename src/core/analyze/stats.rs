//! Helpers the analyzers share (the sample summary is `core::stats::Summary`).

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
