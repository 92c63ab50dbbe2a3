//! The eight-step investigation method (steps 0–7), the matched before/after
//! verdict and the journal entry. Pure domain code: no I/O, no clock, no
//! environment; dates and measurements come in as arguments.

pub mod comparison;
pub mod evidence;
pub mod expected;
pub mod fixes;
pub mod journal;
pub mod kernels;
pub mod metric;
pub mod order;
pub mod phases;
pub mod record;
pub mod regime;
pub mod reproduce;
pub mod resources;
pub mod setup_check;
pub mod verdict;

pub use fixes::{amdahl_ceiling, Candidate, RankedCandidate};
pub use journal::{DraftInput, JournalEntry, ParseError};
pub use kernels::{KernelRow, RankedKernel};
pub use metric::{Metric, MetricForm, MetricReading, MetricTarget, Percentile, Unit};
pub use order::{skip_warning, StepInfo, STEPS};
pub use phases::{dominant, next_checks, Dominance, NextChecks, Phase, PhaseRow, PhaseTable};
pub use regime::{decode_band, helps, regime, Band, DecodeBand, Regime};
pub use reproduce::{
    check_single_change, diff, ConfigChange, ConfigField, FieldKind, FrozenConfig, Reproducible,
    SingleChangeCheck, CONFIG_FIELDS, CONFIG_GROUPS,
};
pub use resources::{classify, Boundness, Classification};
pub use verdict::{
    comparison_problems, judge, score_prediction, MetricComparison, MetricVerdict, PredictionScore,
    RunHealth, Verdict,
};

pub use crate::core::FieldError;

/// Format a number with thousands separators and a fixed number of decimals:
/// `format_number(3200.0, 0)` → "3,200", `format_number(-1234.5, 1)` → "-1,234.5".
pub fn format_number(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (int_part, frac_part) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text.as_str(), None),
    };
    let mut grouped = String::new();
    for (i, ch) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    // "-0" after rounding is just "0".
    let is_zero = text.chars().all(|c| c == '0' || c == '.');
    let sign = if value < 0.0 && !is_zero { "-" } else { "" };
    match frac_part {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(format_number(3200.0, 0), "3,200");
        assert_eq!(format_number(800.0, 0), "800");
        assert_eq!(format_number(1234567.891, 2), "1,234,567.89");
        assert_eq!(format_number(-1234.5, 1), "-1,234.5");
        assert_eq!(format_number(-0.04, 1), "0.0");
        assert_eq!(format_number(0.5, 0), "0");
    }
}
