//! The eight-step investigation method (steps 0–7), the matched before/after
//! verdict and the journal entry. Pure domain code: no I/O, no clock, no
//! environment; dates and measurements come in as arguments.

pub mod allreduce;
pub mod bubbles;
pub mod comparison;
pub mod comparison_input;
pub mod comparison_pick;
pub mod evidence;
pub mod expected;
pub mod fixes;
pub mod fleet;
pub mod journal;
pub mod kernels;
pub mod load_sweep;
pub mod order;
pub mod per_token;
pub mod phase_table;
pub mod phases;
pub mod record;
pub mod record_view;
pub mod regime;
pub mod reproduce;
pub mod resources;
pub mod setup_check;
pub mod verdict;

pub use fixes::{amdahl_ceiling, Candidate, RankedCandidate};
pub use journal::{DraftInput, JournalEntry, ParseError};
pub use kernels::{KernelRow, RankedKernel};
pub use order::{skip_warning, StepInfo, STEPS};
pub use phases::{dominant, next_checks, Dominance, NextChecks, Phase, PhaseRow, PhaseTable};
pub use regime::{decode_band, helps, regime, Against, Band, DecodeBand, Regime};
pub use reproduce::{
    check_single_change, diff, ConfigChange, ConfigField, FieldKind, FrozenConfig, Reproducible,
    SingleChangeCheck, CONFIG_FIELDS, CONFIG_GROUPS,
};
pub use resources::{classify, Boundness, Classification};
pub use verdict::{
    comparison_problems, judge, score_prediction, MetricComparison, MetricVerdict, PredictionScore,
    RunHealth, Verdict,
};

pub use crate::FieldError;
