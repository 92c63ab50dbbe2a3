//! Outliers by the modified z-score (Iglewicz & Hoaglin, 1993): a value is an outlier
//! when `0.6745 · (x − median) / MAD > 3.5`, MAD being the median absolute deviation
//! from the median. Median and MAD are not moved by the outliers themselves, so the
//! rule flags the few values far out of the bulk however skewed the bulk is, where a
//! fixed cutoff flags everything or nothing.

use super::quantile::quantiles_select;

/// The modified z-score above which a value is an outlier.
pub const MODIFIED_Z_LIMIT: f64 = 3.5;

/// The value above which a high value is an outlier, from values without NaN; `None`
/// for no values or when they do not spread (MAD and mean absolute deviation both 0).
/// With MAD = 0 (more than half the values equal) the mean absolute deviation stands
/// in for it, scaled to estimate the same spread (× 1.2533 / 1.4826, i.e. MeanAD /
/// 0.7979 instead of MAD / 0.6745).
pub fn upper_outlier_threshold(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut buf = values.to_vec();
    let [median] = quantiles_select(&mut buf, [0.5]);
    for (b, v) in buf.iter_mut().zip(values) {
        *b = (v - median).abs();
    }
    let [mad] = quantiles_select(&mut buf, [0.5]);
    let sigma = if mad > 0.0 {
        mad / 0.6745
    } else {
        let mean_ad = buf.iter().sum::<f64>() / buf.len() as f64;
        mean_ad / 0.7979
    };
    (sigma > 0.0).then_some(median + MODIFIED_Z_LIMIT * sigma)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_far_tail_is_flagged_whatever_the_bulk() {
        // Median 10, MAD 2: the limit is 10 + 3.5 × 2 / 0.6745.
        let v = [6.0, 8.0, 9.0, 10.0, 10.0, 11.0, 12.0, 14.0, 500.0];
        let t = upper_outlier_threshold(&v).unwrap();
        assert!((t - (10.0 + 3.5 * 2.0 / 0.6745)).abs() < 1e-12, "{t}");
        assert_eq!(v.iter().filter(|x| **x > t).count(), 1);
        // A bulk far above a fixed cutoff is not all outliers.
        let shifted: Vec<f64> = v.iter().map(|x| x + 10_000.0).collect();
        let t = upper_outlier_threshold(&shifted).unwrap();
        assert_eq!(shifted.iter().filter(|x| **x > t).count(), 1);
    }

    #[test]
    fn no_spread_no_threshold_and_mad_zero_falls_back() {
        assert_eq!(upper_outlier_threshold(&[]), None);
        assert_eq!(upper_outlier_threshold(&[5.0; 4]), None);
        // MAD 0 (most values equal): the mean absolute deviation (0.4) stands in.
        let v = [5.0, 5.0, 5.0, 5.0, 7.0];
        let t = upper_outlier_threshold(&v).unwrap();
        assert!((t - (5.0 + 3.5 * 0.4 / 0.7979)).abs() < 1e-12, "{t}");
    }
}
