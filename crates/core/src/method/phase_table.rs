//! What step 2 records: a request's phases with their quantiles (per request), and a
//! per-token metric's step figures (ms per token). The data and its checks; what the
//! numbers say is phases.rs (which phase dominates) and per_token.rs (the decode step).

use serde::{Deserialize, Serialize};

use super::FieldError;
use crate::metric::{Metric, MetricTarget, Percentile};

/// A phase of one request's life in the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Tokenize,
    QueueWait,
    Prefill,
    Decode,
    Detokenize,
    Network,
}

impl Phase {
    pub const ALL: [Phase; 6] = [
        Phase::Tokenize,
        Phase::QueueWait,
        Phase::Prefill,
        Phase::Decode,
        Phase::Detokenize,
        Phase::Network,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            Phase::Tokenize => "tokenize",
            Phase::QueueWait => "queue_wait",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Detokenize => "detokenize",
            Phase::Network => "network",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Phase::Tokenize => "Tokenize",
            Phase::QueueWait => "Queue wait",
            Phase::Prefill => "Prefill",
            Phase::Decode => "Decode",
            Phase::Detokenize => "Detokenize",
            Phase::Network => "Network",
        }
    }

    /// Phases that make up a metric:
    /// TTFT = tokenize + queue wait + prefill (+ network when measured at the
    /// client); ITL/TPOT = decode; queue wait = queue wait; E2E, throughput
    /// and cost = every phase (a request's whole life is what they pay for).
    /// A per-token metric lives in decode, but a phase row holds a request's whole
    /// decode: its share is never taken (see [`per_token`]).
    pub fn counted_in(metric: Metric) -> &'static [Phase] {
        match metric {
            Metric::Ttft => &[
                Phase::Tokenize,
                Phase::QueueWait,
                Phase::Prefill,
                Phase::Network,
            ],
            Metric::Itl | Metric::Tpot => &[Phase::Decode],
            Metric::QueueWait => &[Phase::QueueWait],
            Metric::E2e | Metric::Throughput | Metric::CostPerMillion => &Phase::ALL,
        }
    }
}

/// Percentiles of one phase's duration (ms) and, optionally, its share of
/// the chosen metric (0..1) when the telemetry can attribute it exactly.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PhaseRow {
    pub phase: Phase,
    pub p50: f64,
    #[serde(default)]
    pub p90: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub share: Option<f64>,
    /// The artifact whose analysis gave the row's numbers (request log, OTLP spans,
    /// a Prometheus window, `/metrics` snapshots); `None` when they were typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<i64>,
    /// A number of the row was changed after it was filled from `source` (set when the
    /// step is saved, by holding the row against the artifact's analysis).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

impl PhaseRow {
    pub fn at(&self, percentile: Percentile) -> Option<f64> {
        match percentile {
            Percentile::P50 => Some(self.p50),
            Percentile::P90 => self.p90,
            Percentile::P95 => self.p95,
            Percentile::P99 => self.p99,
        }
    }
}

/// Per-phase percentiles for one investigation.
///
/// Share of phase *i* in the metric, when not given explicitly:
/// `sᵢ = Qₚ(phaseᵢ) / observed`, the phase's value at the metric's
/// percentile p over the metric's observed value. Percentiles do not add up
/// (the p95 of a sum is not the sum of p95s), so these shares are an
/// approximation and need not sum to 1; a sum far below 1 means time is
/// spent between the recorded phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTable {
    pub rows: Vec<PhaseRow>,
    /// Per-token figures of the decode step (ms per token, per request), which a
    /// per-token metric (ITL, TPOT) is decomposed by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRow>,
}

impl PhaseTable {
    /// Values must be finite and ≥ 0, percentiles ordered, shares in [0, 1],
    /// each phase at most once.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            let name = row.phase.slug();
            let problem = match quantiles_problem([Some(row.p50), row.p90, row.p95, row.p99]) {
                Some(Quantiles::NotTimes) => Some("durations must be numbers of milliseconds ≥ 0"),
                Some(Quantiles::Decreasing) => Some(DECREASING),
                None => None,
            };
            if let Some(problem) = problem {
                errors.push(FieldError::new(
                    format!("phases[{i}]"),
                    format!("{}: {problem}", row.phase.label()),
                ));
            }
            if let Some(s) = row.share.filter(|s| !(0.0..=1.0).contains(s)) {
                errors.push(FieldError::new(
                    format!("phases[{i}].share"),
                    format!(
                        "{}: a share is a fraction between 0 and 1, got {s}",
                        row.phase.label()
                    ),
                ));
            }
            if self.rows[..i].iter().any(|r| r.phase == row.phase) {
                errors.push(FieldError::new(
                    format!("phases[{i}]"),
                    format!("{} is listed twice ({name})", row.phase.label()),
                ));
            }
        }
        errors.extend(validate_steps(&self.steps));
        errors
    }

    /// Shares of the phases counted in the target's metric, largest first.
    /// Phases without a usable value at the percentile are left out, and a per-token
    /// metric has none: a per-request time is never divided by a per-token one.
    pub fn shares(&self, target: &MetricTarget) -> Vec<(Phase, f64)> {
        if is_per_token(target.metric) {
            return Vec::new();
        }
        let counted = Phase::counted_in(target.metric);
        let mut shares: Vec<(Phase, f64)> = self
            .rows
            .iter()
            .filter(|r| counted.contains(&r.phase))
            .filter_map(|r| {
                let share = match r.share {
                    Some(s) => Some(s),
                    None if target.observed > 0.0 => target
                        .percentile
                        .and_then(|p| r.at(p))
                        .map(|v| v / target.observed),
                    None => None,
                };
                share.filter(|s| s.is_finite()).map(|s| (r.phase, s))
            })
            .collect();
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        shares
    }
}

/// What is wrong with a row's quantiles (p50, p90, p95, p99), if anything.
enum Quantiles {
    /// A value that is not a finite time ≥ 0.
    NotTimes,
    /// A higher percentile below a lower one.
    Decreasing,
}

const DECREASING: &str = "percentiles must not decrease (p50 ≤ p90 ≤ p95 ≤ p99)";

fn quantiles_problem(values: [Option<f64>; 4]) -> Option<Quantiles> {
    if values.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
        Some(Quantiles::NotTimes)
    } else if !values.iter().flatten().is_sorted() {
        Some(Quantiles::Decreasing)
    } else {
        None
    }
}

/// Whether a metric is read per generated token (ITL, TPOT) rather than per request
/// (TTFT, E2E, queue wait) or per second (throughput, cost).
pub fn is_per_token(metric: Metric) -> bool {
    matches!(metric, Metric::Itl | Metric::Tpot)
}

/// A per-token figure a request log holds for each request, in ms per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepFigure {
    /// The request's decode time over its generated tokens after the first:
    /// `decode_ms ÷ (output_tokens − 1)`, its mean step.
    Tpot,
    /// The request's own median inter-token latency (`itl_p50_ms`).
    ItlP50,
    /// The request's own 99th-percentile inter-token latency (`itl_p99_ms`).
    ItlP99,
}

impl StepFigure {
    pub const ALL: [StepFigure; 3] = [StepFigure::Tpot, StepFigure::ItlP50, StepFigure::ItlP99];

    /// The form's and the API's name, and the request-log column without `_ms`.
    pub fn slug(self) -> &'static str {
        match self {
            StepFigure::Tpot => "tpot",
            StepFigure::ItlP50 => "itl_p50",
            StepFigure::ItlP99 => "itl_p99",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            StepFigure::Tpot => "TPOT of each request (decode ÷ (output tokens − 1))",
            StepFigure::ItlP50 => "ITL p50 of each request",
            StepFigure::ItlP99 => "ITL p99 of each request",
        }
    }
}

/// One per-token figure's distribution over the requests (ms per token).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub figure: StepFigure,
    pub p50: f64,
    #[serde(default)]
    pub p90: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    /// The artifact whose analysis gave the numbers; `None` when typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<i64>,
}

impl StepRow {
    pub fn at(&self, percentile: Percentile) -> Option<f64> {
        match percentile {
            Percentile::P50 => Some(self.p50),
            Percentile::P90 => self.p90,
            Percentile::P95 => self.p95,
            Percentile::P99 => self.p99,
        }
    }
}

/// Values finite and ≥ 0, percentiles ordered, each figure at most once; fields named
/// like the form (`itl_p50.p99`).
pub fn validate_steps(rows: &[StepRow]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let slug = row.figure.slug();
        let problem = match quantiles_problem([Some(row.p50), row.p90, row.p95, row.p99]) {
            Some(Quantiles::NotTimes) => Some("values are milliseconds per token ≥ 0"),
            Some(Quantiles::Decreasing) => Some(DECREASING),
            None => None,
        };
        if let Some(problem) = problem {
            errors.push(FieldError::new(
                format!("{slug}.p50"),
                format!("{}: {problem}", row.figure.label()),
            ));
        }
        if rows[..i].iter().any(|r| r.figure == row.figure) {
            errors.push(FieldError::new(
                format!("{slug}.p50"),
                format!("{} is listed twice", row.figure.label()),
            ));
        }
    }
    errors
}

/// A part of a per-token metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPart {
    /// The typical (median) decode step.
    TypicalStep,
    /// What the metric holds above the typical step: steps that carry a prefill chunk,
    /// preemptions, stalls.
    AboveTypical,
}

impl StepPart {
    pub fn slug(self) -> &'static str {
        match self {
            StepPart::TypicalStep => "typical_step",
            StepPart::AboveTypical => "above_typical",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            StepPart::TypicalStep => "Decode step",
            StepPart::AboveTypical => "Above the typical decode step",
        }
    }
}
