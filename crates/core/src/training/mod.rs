//! Training: drills generated from the estimators, regime and ranking drills, blind
//! replays' answers, the guide's text and the progress a learner has made. Pure: a seed
//! and plain data in, a drill or a grade out; the shell stores attempts and renders.

pub mod drills;
pub mod guide;
pub mod progress;
pub mod ranking;
pub mod regime;
mod rng;

/// A numeric answer counts as right when it is within this fraction of the expected value.
pub const TOLERANCE: f64 = 0.05;

/// Whether `got` is within [`TOLERANCE`] of `want` (relative; near zero, absolute).
pub fn within_tolerance(got: f64, want: f64) -> bool {
    got.is_finite() && (got - want).abs() <= TOLERANCE * want.abs().max(1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_five_percent_either_side() {
        assert!(within_tolerance(104.9, 100.0));
        assert!(within_tolerance(95.1, 100.0));
        assert!(!within_tolerance(105.1, 100.0));
        assert!(!within_tolerance(-100.0, 100.0));
        assert!(within_tolerance(-0.98, -1.0));
        assert!(!within_tolerance(f64::NAN, 1.0));
    }
}
