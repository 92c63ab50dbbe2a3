//! Step 2 for a per-token metric (ITL, TPOT). A request's phase times are per request:
//! a decode phase of 7,303 ms holds hundreds of decode steps, so dividing it by a 23 ms
//! ITL says nothing. A per-token metric is decomposed into the *step* instead: the
//! typical decode step (ms per token) and the time above it (steps that carry a prefill
//! chunk, preemptions, stalls), both as shares of step 1's observed value, which add up
//! to 100 % and never pass it.

use serde::Serialize;

pub use super::phase_table::{
    is_per_token, validate_steps as validate, StepFigure, StepPart, StepRow,
};
use super::phase_table::{Phase, PhaseTable};
use crate::estimate::fmt::ms;
use crate::metric::{Metric, MetricTarget, Percentile};

/// A per-token metric decomposed into the decode step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepDecomposition {
    /// The typical decode step, ms per token.
    pub typical_ms: f64,
    /// Where the typical step comes from, in words.
    pub typical_from: String,
    /// The recorded figures' own value at the metric's percentile (ms per token), when
    /// they hold one.
    pub at_percentile_ms: Option<f64>,
    /// Step 1's observed value (ms per token) and its percentile.
    pub observed_ms: f64,
    pub percentile: Percentile,
    /// Typical step and above it, as shares of the observed value (they add up to 1).
    pub parts: Vec<(StepPart, f64)>,
    /// Each part in ms per token, in the order of `parts`.
    pub parts_ms: Vec<(StepPart, f64)>,
    /// The spread of the recorded figures above the typical step at the metric's
    /// percentile (ms per token): on the tail, mostly steps that carry a prefill chunk.
    pub tail_gap_ms: Option<f64>,
    /// Sentences on what the numbers can and cannot say.
    pub notes: Vec<String>,
}

impl StepDecomposition {
    /// The spread above the typical step at the metric's percentile, in a sentence.
    pub fn tail_line(&self) -> Option<String> {
        self.tail_gap_ms.map(|gap| {
            format!(
                "At the {} the recorded figures sit {} per token above the typical step ({} → \
                 {}): on the tail that is mostly steps that carry a prefill chunk, and \
                 preemptions.",
                self.percentile.slug(),
                ms(gap),
                ms(self.typical_ms),
                ms(self.typical_ms + gap)
            )
        })
    }

    /// The larger part and its share.
    pub fn leading(&self) -> (StepPart, f64) {
        self.parts
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((StepPart::TypicalStep, 1.0))
    }
}

/// A decode row the step can read as per token: one typed by hand whose value at the
/// metric's percentile is no more than this many times the observed value. A row filled
/// from an artifact (a request log, spans, server histograms) is always per request, and
/// so is a larger one: a request's decode holds one step per generated token.
pub const PER_TOKEN_DECODE_SLACK: f64 = 2.0;

/// The decode row read as per-token figures, when it is one (see
/// [`PER_TOKEN_DECODE_SLACK`]).
pub fn per_token_decode(table: &PhaseTable, target: &MetricTarget) -> Option<StepRow> {
    let row = table.rows.iter().find(|r| r.phase == Phase::Decode)?;
    if row.source.is_some() {
        return None;
    }
    let value = target.percentile.and_then(|p| row.at(p)).unwrap_or(row.p50);
    (target.observed > 0.0 && value <= PER_TOKEN_DECODE_SLACK * target.observed).then_some(
        StepRow {
            figure: StepFigure::ItlP50,
            p50: row.p50,
            p90: row.p90,
            p95: row.p95,
            p99: row.p99,
            source: None,
        },
    )
}

/// The per-token decomposition of step 1's per-token metric from step 2's figures, or,
/// in words, why the recorded rows cannot answer it.
pub fn decompose(table: &PhaseTable, target: &MetricTarget) -> Result<StepDecomposition, String> {
    let metric = target.metric.short_label();
    if !is_per_token(target.metric) {
        return Err(format!("{metric} is not a per-token metric"));
    }
    let observed = target.observed;
    if !(observed.is_finite() && observed > 0.0) {
        return Err(format!(
            "Step 1's observed {metric} is not above 0 ms, so nothing can be a share of it."
        ));
    }
    // ITL and TPOT always name a percentile (step 1 refuses one without); the median
    // stands in should a record lack it.
    let percentile = target.percentile.unwrap_or(Percentile::P50);
    let figure = |f: StepFigure| table.steps.iter().find(|r| r.figure == f);
    let (tpot, itl50, itl99) = (
        figure(StepFigure::Tpot),
        figure(StepFigure::ItlP50),
        figure(StepFigure::ItlP99),
    );
    let decode_row = per_token_decode(table, target);
    let mut notes = Vec::new();
    // The typical step: the median request's own typical step, by the figure closest
    // to the metric.
    let typical = match target.metric {
        Metric::Tpot => tpot
            .map(|r| {
                (
                    r.p50,
                    "the median request's TPOT (decode ÷ (output tokens − 1))",
                )
            })
            .or(itl50.map(|r| (r.p50, "the median request's ITL p50"))),
        _ => itl50
            .map(|r| (r.p50, "the median request's ITL p50"))
            .or(tpot.map(|r| {
                notes.push(
                    "The log has no ITL fields: the typical step is each request's TPOT \
                     (its mean step), which a few slow steps raise above the median ITL."
                        .to_string(),
                );
                (
                    r.p50,
                    "the median request's TPOT (decode ÷ (output tokens − 1))",
                )
            })),
    }
    .map(|(v, from)| (v, from.to_string()))
    .or(decode_row.map(|r| (r.p50, "step 2's decode p50, typed per token".to_string())));
    let Some((typical_ms, typical_from)) = typical.filter(|(v, _)| v.is_finite() && *v > 0.0)
    else {
        return Err(cannot_answer(table, target));
    };
    // The figures' own value at the metric's percentile.
    let at_percentile_ms = match (target.metric, percentile) {
        (Metric::Tpot, p) => tpot.and_then(|r| r.at(p)),
        (_, Percentile::P50) => itl50.map(|r| r.p50),
        (_, Percentile::P99) => itl99.map(|r| r.p50),
        _ => None,
    }
    .or(decode_row.and_then(|r| r.at(percentile)));
    let tail_gap_ms = at_percentile_ms
        .filter(|_| percentile != Percentile::P50)
        .map(|v| (v - typical_ms).max(0.0));
    if typical_ms > observed * 1.05 {
        notes.push(format!(
            "The recorded typical step ({} per token) is above step 1's observed {} {} ({}): \
             the two come from different windows or setups; the typical step is counted as \
             all of the observed value.",
            ms(typical_ms),
            percentile.slug(),
            metric,
            ms(observed)
        ));
    }
    let typical_part = typical_ms.min(observed);
    let above = observed - typical_part;
    Ok(StepDecomposition {
        typical_ms,
        typical_from,
        at_percentile_ms,
        observed_ms: observed,
        percentile,
        parts: vec![
            (StepPart::TypicalStep, typical_part / observed),
            (StepPart::AboveTypical, above / observed),
        ],
        parts_ms: vec![
            (StepPart::TypicalStep, typical_part),
            (StepPart::AboveTypical, above),
        ],
        tail_gap_ms,
        notes,
    })
}

/// Why step 2's rows cannot answer a per-token metric, in words.
fn cannot_answer(table: &PhaseTable, target: &MetricTarget) -> String {
    let metric = target.metric.short_label();
    match table.rows.iter().find(|r| r.phase == Phase::Decode) {
        Some(decode) => format!(
            "{metric} is a per-token time, and step 2 holds per-request decode times (p50 {}, \
             one request's whole generation): dividing them by the {metric} would count every \
             step of a request as one. Record per-token figures instead: a request log with \
             output_tokens (for each request's TPOT) or itl_p50_ms / itl_p99_ms fills them.",
            ms(decode.p50)
        ),
        None => format!(
            "{metric} is a per-token time, and step 2 holds no per-token figures: a request log \
             with output_tokens (for each request's TPOT) or itl_p50_ms / itl_p99_ms fills them."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::phases::PhaseRow;
    use crate::metric::Unit;

    fn itl(percentile: Percentile, observed: f64) -> MetricTarget {
        MetricTarget {
            metric: Metric::Itl,
            percentile: Some(percentile),
            observed,
            target: 14.0,
            unit: Unit::Ms,
        }
    }

    fn decode_per_request(source: Option<i64>) -> PhaseRow {
        PhaseRow {
            phase: Phase::Decode,
            p50: 7303.43,
            p90: Some(9100.0),
            p95: Some(9800.0),
            p99: Some(11_000.0),
            share: None,
            source,
            edited: false,
        }
    }

    fn figure(figure: StepFigure, p50: f64, p99: f64) -> StepRow {
        StepRow {
            figure,
            p50,
            p90: None,
            p95: None,
            p99: Some(p99),
            source: Some(3),
        }
    }

    #[test]
    fn the_issue_case_decomposes_the_step_not_the_request() {
        // ITL p50 23 ms; the log's requests: decode p50 7,303 ms, ITL p50 22.1 ms.
        let table = PhaseTable {
            rows: vec![decode_per_request(Some(3))],
            steps: vec![
                figure(StepFigure::Tpot, 23.4, 30.0),
                figure(StepFigure::ItlP50, 22.1, 24.0),
                figure(StepFigure::ItlP99, 61.0, 90.0),
            ],
        };
        let d = decompose(&table, &itl(Percentile::P50, 23.0)).unwrap();
        assert_eq!(d.typical_ms, 22.1);
        assert_eq!(d.at_percentile_ms, Some(22.1));
        let (part, share) = d.leading();
        assert_eq!(part, StepPart::TypicalStep);
        assert!((share - 22.1 / 23.0).abs() < 1e-12, "{share}");
        assert!(d.parts.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        assert!((d.parts.iter().map(|p| p.1).sum::<f64>() - 1.0).abs() < 1e-12);
        // At the p99 the tail is above the typical step: 61 − 22.1 ms per token.
        let d = decompose(&table, &itl(Percentile::P99, 65.0)).unwrap();
        assert_eq!(d.leading().0, StepPart::AboveTypical);
        assert!((d.tail_gap_ms.unwrap() - 38.9).abs() < 1e-9);
    }

    #[test]
    fn per_request_decode_times_alone_cannot_answer() {
        let table = PhaseTable {
            rows: vec![decode_per_request(Some(3))],
            steps: vec![],
        };
        let reason = decompose(&table, &itl(Percentile::P50, 23.0)).unwrap_err();
        assert!(reason.contains("per-request decode times"), "{reason}");
        assert!(reason.contains("output_tokens"), "{reason}");
        // Typed by hand, 7,303 ms is still no per-token step of a 23 ms ITL.
        let typed = PhaseTable {
            rows: vec![decode_per_request(None)],
            steps: vec![],
        };
        assert!(decompose(&typed, &itl(Percentile::P50, 23.0)).is_err());
        assert!(
            decompose(&PhaseTable::default(), &itl(Percentile::P50, 23.0))
                .unwrap_err()
                .contains("no per-token figures")
        );
    }

    #[test]
    fn a_typed_per_token_decode_row_is_the_step_and_a_larger_typical_step_caps_at_all() {
        let mut row = decode_per_request(None);
        row.p50 = 24.0;
        row.p90 = None;
        row.p95 = Some(30.0);
        row.p99 = Some(41.0);
        let table = PhaseTable {
            rows: vec![row],
            steps: vec![],
        };
        let d = decompose(&table, &itl(Percentile::P50, 20.0)).unwrap();
        assert_eq!(d.parts[0], (StepPart::TypicalStep, 1.0));
        assert_eq!(d.parts[1], (StepPart::AboveTypical, 0.0));
        assert!(d.notes[0].contains("different windows"), "{:?}", d.notes);
    }

    #[test]
    fn tpot_uses_each_requests_tpot_at_its_percentile() {
        let table = PhaseTable {
            rows: vec![],
            steps: vec![figure(StepFigure::Tpot, 20.0, 50.0)],
        };
        let target = MetricTarget {
            metric: Metric::Tpot,
            ..itl(Percentile::P99, 52.0)
        };
        let d = decompose(&table, &target).unwrap();
        assert_eq!(d.at_percentile_ms, Some(50.0));
        assert_eq!(d.tail_gap_ms, Some(30.0));
        assert_eq!(d.leading().0, StepPart::AboveTypical);
        assert!(!is_per_token(Metric::Ttft) && is_per_token(Metric::Tpot));
    }

    #[test]
    fn figures_are_checked() {
        let mut bad = figure(StepFigure::ItlP50, 30.0, 20.0);
        bad.source = None;
        let errors = validate(&[bad, figure(StepFigure::ItlP50, 1.0, 2.0)]);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["itl_p50.p50", "itl_p50.p50"]);
        assert!(errors[0].message.contains("must not decrease"));
    }
}
