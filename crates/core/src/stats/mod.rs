//! Statistics used by the before/after comparison: linear-interpolated
//! quantiles, a seeded percentile bootstrap of the difference of a statistic,
//! and the Mann–Whitney U test; and the least-relative-error fit that calibrates the
//! estimators' expected costs on published measurements. Pure functions: no I/O, no clock, no global RNG.

pub mod bootstrap;
pub mod fit;
pub mod mann_whitney;
pub mod outlier;
pub mod quantile;

pub use bootstrap::{
    bootstrap_diff_ci, bootstrap_diff_ci_sorted, run_spread, BootstrapConfig, DiffCi, RunSpread,
    SortedSample, DEFAULT_RESAMPLES,
};
pub use mann_whitney::{mann_whitney_sorted, mann_whitney_u, MannWhitney};
pub use outlier::upper_outlier_threshold;
pub use quantile::{quantile, Statistic, Summary};

/// Why a statistic could not be computed from the given numbers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no values: at least one measurement is needed")]
    Empty,
    #[error("value #{index} is not a finite number ({value})")]
    NotFinite { index: usize, value: f64 },
    #[error("probability {0} is outside [0, 1]")]
    BadProbability(f64),
    #[error("{0}")]
    BadArgument(&'static str),
}

/// The arithmetic mean, summed in the given order; `None` for no values. A NaN among
/// the values gives NaN: callers that skip missing readings filter them first.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Refuse NaN and ±∞ up front: a single NaN silently poisons sorts and sums.
pub(crate) fn check_finite(values: &[f64]) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(StatsError::NotFinite {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}
