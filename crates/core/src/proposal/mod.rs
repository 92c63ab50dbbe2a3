//! Capacity proposals: a reproducible sizing of a deployment for a workload and SLOs,
//! computed by the estimators, reviewed like a pull request and scored after rollout.
//! Pure: inputs are parsed here, sized by [`crate::estimate`], and exported as
//! Markdown; the shell stores and serves them.

pub mod evidence;
pub mod input;
pub mod markdown;
pub mod outcome;
pub mod review;
pub mod sizing;

pub use input::{parse, ProposalInput, Section, FIELDS, JSON_INPUTS};
pub use outcome::{ErrorRecord, Observed, Score};
pub use review::State;
pub use sizing::{sensitivity, size, Figure, Run, Sizing, SloFinding, Variant};
