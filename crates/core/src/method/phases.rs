//! Step 2 — decompose by phase. Which phase holds the time decides what to
//! check next; this step alone settles about half of all investigations.

use serde::{Deserialize, Serialize};

use super::per_token;
use super::phase_table::{is_per_token, StepPart};
pub use super::phase_table::{Phase, PhaseRow, PhaseTable};
use crate::metric::{MetricTarget, Percentile};

/// A phase holding at least this share of the metric dominates.
pub const DOMINANT_SHARE: f64 = 0.5;
/// Second rule's floor on the largest share.
pub const LEADING_SHARE: f64 = 0.35;
/// Second rule's required lead over the runner-up.
pub const LEAD_FACTOR: f64 = 2.0;

/// Which phase holds the time, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dominance {
    Phase {
        phase: Phase,
        share: f64,
    },
    /// A per-token metric: the part of the decode step that holds it.
    Step {
        part: StepPart,
        share: f64,
    },
    Nothing {
        reason: String,
    },
}

impl Dominance {
    /// The phase that holds the time (decode for a part of the step).
    pub fn phase(&self) -> Option<Phase> {
        match self {
            Dominance::Phase { phase, .. } => Some(*phase),
            Dominance::Step { .. } => Some(Phase::Decode),
            Dominance::Nothing { .. } => None,
        }
    }

    /// What dominates, as the pages name it: "Queue wait", "Decode step".
    pub fn name(&self) -> Option<&'static str> {
        match self {
            Dominance::Phase { phase, .. } => Some(phase.label()),
            Dominance::Step { part, .. } => Some(part.label()),
            Dominance::Nothing { .. } => None,
        }
    }

    /// "Decode step (96% of the metric)", or "Nothing dominates".
    pub fn label(&self) -> String {
        match self {
            Dominance::Phase { share, .. } | Dominance::Step { share, .. } => format!(
                "{} ({:.0}% of the metric)",
                self.name().unwrap_or_default(),
                share * 100.0
            ),
            Dominance::Nothing { .. } => "Nothing dominates".into(),
        }
    }
}

/// The dominant phase of the target's metric.
///
/// Rules, on the shares of [`PhaseTable::shares`]:
/// 1. the largest share `s₁ ≥ 0.5` → that phase dominates;
/// 2. otherwise `s₁ ≥ 0.35` and `s₁ ≥ 2·s₂` (s₂ the runner-up) → it dominates:
///    it is the one clear place to look even though it is under half;
/// 3. otherwise nothing dominates.
///
/// A per-token metric (ITL, TPOT) is decomposed into the decode step instead
/// ([`per_token::decompose`]): the typical step or the time above it, whichever holds
/// more of the observed value; nothing, with the reason, when the rows hold no
/// per-token figures.
pub fn dominant(table: &PhaseTable, target: &MetricTarget) -> Dominance {
    if is_per_token(target.metric) {
        return match per_token::decompose(table, target) {
            Ok(d) => {
                let (part, share) = d.leading();
                Dominance::Step { part, share }
            }
            Err(reason) => Dominance::Nothing { reason },
        };
    }
    let shares = table.shares(target);
    let Some(&(top, s1)) = shares.first() else {
        return Dominance::Nothing {
            reason: "No phase timings counted in this metric were recorded.".into(),
        };
    };
    let s2 = shares.get(1).map_or(0.0, |s| s.1);
    if s1 >= DOMINANT_SHARE || (s1 >= LEADING_SHARE && s1 >= LEAD_FACTOR * s2) {
        return Dominance::Phase {
            phase: top,
            share: s1,
        };
    }
    let total: f64 = shares.iter().map(|s| s.1).sum();
    let reason = if total < DOMINANT_SHARE {
        format!(
            "The recorded phases explain only {:.0}% of the {}: the rest is between phases or the measurement is off.",
            total * 100.0,
            crate::metric::metric_name(target.metric, target.percentile)
        )
    } else {
        let runner_up = shares.get(1).map_or("nothing", |s| s.0.label());
        format!(
            "No phase stands out: the largest is {} at {:.0}%, then {} at {:.0}%.",
            top.label(),
            s1 * 100.0,
            runner_up,
            s2 * 100.0
        )
    };
    Dominance::Nothing { reason }
}

/// A tail percentile of the dominant phase at least this many times its median makes the
/// symptom a tail: some steps (or requests) are slow, not every one.
pub const TAIL_SPREAD: f64 = 2.0;

/// How far the dominant phase's value at the metric's percentile sits above its median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TailSpread {
    pub phase: Phase,
    pub percentile: Percentile,
    pub tail: f64,
    pub median: f64,
}

impl TailSpread {
    pub fn ratio(&self) -> f64 {
        self.tail / self.median
    }

    /// The rule and the numbers that met it, as the page states them.
    pub fn rule(&self) -> String {
        format!(
            "{} {} is {:.1}× its p50 ({} against {}): at {}× or more the tail, not the typical step, \
             is the problem, so the checks that make some steps slow come before the floor.",
            self.phase.label(),
            self.percentile.slug(),
            self.ratio(),
            crate::estimate::fmt::ms(self.tail),
            crate::estimate::fmt::ms(self.median),
            TAIL_SPREAD
        )
    }
}

/// The spread of decode when it dominates a tail percentile (p90 and above) and its value
/// there is at least [`TAIL_SPREAD`] × its median: slow steps among fast ones, which the
/// tail estimators (periodic-tail, mixed-step) explain and the floor does not. Other
/// phases' tails keep their own checks.
pub fn tail_spread(
    table: &PhaseTable,
    target: &MetricTarget,
    dominance: &Dominance,
) -> Option<TailSpread> {
    let percentile = target.percentile?;
    if percentile == Percentile::P50 {
        return None;
    }
    let (median, tail) = match dominance {
        // A per-token metric: the step figures' value at the percentile (step 1's
        // observed value when they hold none) against the typical step.
        Dominance::Step { .. } => {
            let d = per_token::decompose(table, target).ok()?;
            (d.typical_ms, d.at_percentile_ms.unwrap_or(d.observed_ms))
        }
        Dominance::Phase {
            phase: Phase::Decode,
            ..
        } => {
            let row = table.rows.iter().find(|r| r.phase == Phase::Decode)?;
            (row.p50, row.at(percentile)?)
        }
        _ => return None,
    };
    let spread = TailSpread {
        phase: Phase::Decode,
        percentile,
        tail,
        median,
    };
    (median > 0.0 && spread.ratio() >= TAIL_SPREAD).then_some(spread)
}

/// What to check next for a dominance finding (the step-2 decision table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextChecks {
    pub summary: &'static str,
    /// In the order to do them: cheapest, most likely first.
    pub checks: Vec<&'static str>,
    /// Slug of the estimator that quantifies this case, if one applies.
    pub estimator: Option<&'static str>,
    /// The method step to continue with, when it is not the next one.
    pub go_to_step: Option<u8>,
}

/// Next checks when step 2's rows cannot decompose a per-token metric (no per-token
/// figures): record them; meanwhile the median ITL itself is a per-token step to hold
/// against the floor.
pub fn per_token_unanswered_checks() -> NextChecks {
    NextChecks {
        summary: "These rows cannot decompose a per-token metric: record the per-token figures of the decode step, then compare the typical step with the floor.",
        checks: vec![
            "Fill step 2 from a request log with output_tokens (each request's TPOT) or itl_p50_ms / itl_p99_ms, or type those figures in ms per token.",
            "Meanwhile hold step 1's median ITL (ms per token) against the bandwidth floor with decode-floor; a request's whole decode time is not a step.",
        ],
        estimator: Some("decode-floor"),
        go_to_step: None,
    }
}

/// The step-2 decision table: dominant phase → next checks; `tail` when
/// [`tail_spread`] found the metric's percentile far above the phase's median.
pub fn next_checks(dominance: &Dominance, tail: bool) -> NextChecks {
    let phase = match dominance {
        Dominance::Phase { phase, .. } => *phase,
        Dominance::Step { .. } => Phase::Decode,
        Dominance::Nothing { .. } => {
            return NextChecks {
                summary: "No phase holds the time: either the measurement is wrong or the time sits in gaps between phases.",
                checks: vec![
                    "Check that the phase timings add up to the end-to-end time of the same requests.",
                    "Look for time between phases: waiting on locks, host-device syncs, RPC hops.",
                    "Go to step 3 and compare GPU busy time, CPU busy time and wall-clock time.",
                ],
                estimator: None,
                go_to_step: Some(3),
            };
        }
    };
    match phase {
        Phase::Decode if tail => NextChecks {
            summary: "Token generation holds the time, and its tail sits far above its median: some steps are slow, not every step. Find what makes those steps slow before comparing the typical step with the floor.",
            checks: vec![
                "Long prompts arriving now and then: a step that carries a prefill chunk is slow for every sequence decoding. periodic-tail, from the measured plain step, says what share of steps are slow and whether the percentile lands on them.",
                "The chunk size (max_num_batched_tokens): mixed-step gives the time of a step carrying that many prefill tokens; a smaller chunk trades long prompts' TTFT for everyone's ITL.",
                "Preemptions and KV-cache pressure at the times of the spikes (vllm:num_preemptions_total, KV-cache usage).",
                "Only then the typical step against the bandwidth floor (decode-floor, step 4).",
            ],
            estimator: Some("periodic-tail"),
            go_to_step: None,
        },
        Phase::QueueWait => NextChecks {
            summary: "Requests wait before they run: a capacity or admission problem, which kernel work cannot fix.",
            checks: vec![
                "Compare the average running batch with its maximum (max_num_seqs).",
                "Running batch well below the maximum: the limit is traffic or the scheduler — check max_num_seqs, KV-cache preemptions and admission rules.",
                "Running batch near the maximum: the replica is at capacity — add replicas or make each step cheaper.",
                "Check whether long prompts hold up the queue while they prefill; chunked prefill lets short requests through.",
            ],
            estimator: None,
            go_to_step: None,
        },
        Phase::Prefill => NextChecks {
            summary: "Prompt processing holds the time.",
            checks: vec![
                "First look at the prompt-length distribution: did prompts get longer?",
                "Then the prefix-cache hit rate: shared prefixes that miss are recomputed.",
                "Then whether prefill runs near the compute roofline (step 4).",
                "Only then the prefill kernels (step 5).",
            ],
            estimator: Some("prefix-reuse"),
            go_to_step: None,
        },
        Phase::Decode => NextChecks {
            summary: "Token generation holds the time: compare it with the memory-bandwidth floor.",
            checks: vec![
                "Compute the floor: bytes read per decode step (weights + KV cache) / memory bandwidth.",
                "Compare measured step time with the floor and read the band in step 4.",
            ],
            estimator: Some("decode-floor"),
            go_to_step: Some(4),
        },
        Phase::Tokenize => NextChecks {
            summary: "Turning text into tokens holds the time: a CPU-side problem.",
            checks: vec![
                "Check that the fast (Rust-backed) tokenizer is loaded, not a slow pure-Python fallback.",
                "Check whether tokenization runs serially on the request path under load.",
            ],
            estimator: None,
            go_to_step: None,
        },
        Phase::Detokenize => NextChecks {
            summary: "Turning tokens back into text holds the time: a CPU-side problem.",
            checks: vec![
                "Check whether output is detokenized token by token, re-decoding the growing text each time.",
                "Check that the fast tokenizer is used for decoding as well.",
            ],
            estimator: None,
            go_to_step: None,
        },
        Phase::Network => NextChecks {
            summary: "The time is between server and client (client TTFT far above server TTFT).",
            checks: vec![
                "Compare client-side and server-side TTFT for the same requests.",
                "Look for a proxy, gateway or load balancer that buffers streamed responses, and turn buffering off.",
            ],
            estimator: None,
            go_to_step: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::phase_table::StepRow;
    use crate::metric::Metric;
    use crate::metric::Unit;
    use crate::stats::{StatsError, Summary};

    fn row(phase: Phase, p95: f64) -> PhaseRow {
        PhaseRow {
            phase,
            p50: p95 / 2.0,
            p90: None,
            p95: Some(p95),
            p99: Some(p95 * 1.2),
            share: None,
            source: None,
            edited: false,
        }
    }

    fn ttft(observed: f64) -> MetricTarget {
        MetricTarget {
            metric: Metric::Ttft,
            percentile: Some(Percentile::P95),
            observed,
            target: 800.0,
            unit: Unit::Ms,
        }
    }

    #[test]
    fn queue_wait_dominates_ttft() {
        // Methodology example: p95 queue wait 2,300 ms of a 2,500 ms TTFT.
        let table = PhaseTable {
            rows: vec![
                row(Phase::Tokenize, 20.0),
                row(Phase::QueueWait, 2300.0),
                row(Phase::Prefill, 180.0),
                row(Phase::Decode, 9000.0), // not part of TTFT
            ],
            steps: Vec::new(),
        };
        let d = dominant(&table, &ttft(2500.0));
        assert_eq!(
            d,
            Dominance::Phase {
                phase: Phase::QueueWait,
                share: 0.92
            }
        );
        let next = next_checks(&d, false);
        assert!(next.checks[0].contains("running batch"));
        assert!(next.checks.iter().any(|c| c.contains("chunked prefill")));
        assert_eq!(next.estimator, None);
    }

    #[test]
    fn a_decode_tail_far_above_its_median_puts_the_tail_checks_before_the_floor() {
        // p99 ITL 140 ms; decode p50 23 ms, p99 136 ms: 5.9× its median.
        let table = PhaseTable {
            rows: vec![PhaseRow {
                phase: Phase::Decode,
                p50: 23.0,
                p90: None,
                p95: None,
                p99: Some(136.0),
                share: None,
                source: None,
                edited: false,
            }],
            steps: Vec::new(),
        };
        let itl = |percentile| MetricTarget {
            metric: Metric::Itl,
            percentile,
            observed: 140.0,
            target: 60.0,
            unit: Unit::Ms,
        };
        let d = dominant(&table, &itl(Some(Percentile::P99)));
        let tail = tail_spread(&table, &itl(Some(Percentile::P99)), &d).expect("a tail");
        assert!((tail.ratio() - 136.0 / 23.0).abs() < 1e-9);
        assert!(
            tail.rule().contains("5.9×") && tail.rule().contains("2×"),
            "{}",
            tail.rule()
        );
        let next = next_checks(&d, true);
        assert_eq!(next.estimator, Some("periodic-tail"));
        assert!(next.checks[0].contains("periodic-tail"));
        assert!(
            next.checks[1].contains("mixed-step")
                && next.checks[1].contains("max_num_batched_tokens")
        );
        assert!(next
            .checks
            .iter()
            .any(|c| c.contains("preemptions") || c.contains("Preemptions")));
        assert!(next.checks.last().unwrap().contains("floor"));
        // The median metric, or a tail close to the median, keeps the floor first.
        assert!(tail_spread(&table, &itl(Some(Percentile::P50)), &d).is_none());
        let tight = PhaseTable {
            rows: vec![PhaseRow {
                p99: Some(40.0),
                ..table.rows[0]
            }],
            steps: Vec::new(),
        };
        assert!(tail_spread(&tight, &itl(Some(Percentile::P99)), &d).is_none());
        assert_eq!(next_checks(&d, false).estimator, Some("decode-floor"));
    }

    #[test]
    fn second_rule_clear_leader_under_half() {
        // 40% vs 18%: under half, but ≥ 0.35 and more than twice the next.
        let table = PhaseTable {
            rows: vec![
                row(Phase::Prefill, 400.0),
                row(Phase::QueueWait, 180.0),
                row(Phase::Tokenize, 150.0),
            ],
            steps: Vec::new(),
        };
        assert_eq!(
            dominant(&table, &ttft(1000.0)),
            Dominance::Phase {
                phase: Phase::Prefill,
                share: 0.4
            }
        );
        // 40% vs 25%: no clear leader.
        let close = PhaseTable {
            rows: vec![
                row(Phase::Prefill, 400.0),
                row(Phase::QueueWait, 250.0),
                row(Phase::Tokenize, 200.0),
            ],
            steps: Vec::new(),
        };
        match dominant(&close, &ttft(1000.0)) {
            Dominance::Nothing { reason } => {
                assert!(reason.contains("No phase stands out"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nothing_when_phases_are_small() {
        let table = PhaseTable {
            rows: vec![
                row(Phase::QueueWait, 200.0),
                row(Phase::Prefill, 150.0),
                row(Phase::Tokenize, 100.0),
            ],
            steps: Vec::new(),
        };
        let d = dominant(&table, &ttft(3000.0));
        match &d {
            Dominance::Nothing { reason } => assert!(reason.contains("only 15%"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let next = next_checks(&d, false);
        assert_eq!(next.go_to_step, Some(3));
        assert!(matches!(
            dominant(&PhaseTable::default(), &ttft(3000.0)),
            Dominance::Nothing { .. }
        ));
    }

    #[test]
    fn explicit_shares_win_over_percentiles() {
        let mut prefill = row(Phase::Prefill, 100.0);
        prefill.share = Some(0.7);
        let table = PhaseTable {
            rows: vec![prefill, row(Phase::QueueWait, 900.0)],
            steps: Vec::new(),
        };
        let shares = table.shares(&ttft(1000.0));
        assert_eq!(shares, vec![(Phase::QueueWait, 0.9), (Phase::Prefill, 0.7)]);
    }

    #[test]
    fn per_token_metrics_decompose_the_step_never_a_request() {
        let itl = MetricTarget {
            metric: Metric::Itl,
            percentile: Some(Percentile::P50),
            observed: 23.0,
            target: 14.0,
            unit: Unit::Ms,
        };
        // Whole-request decode times: no share of a per-token metric, and no dominance.
        let table = PhaseTable {
            rows: vec![row(Phase::Decode, 30_000.0), row(Phase::QueueWait, 5.0)],
            steps: Vec::new(),
        };
        assert!(table.shares(&itl).is_empty());
        match dominant(&table, &itl) {
            Dominance::Nothing { reason } => {
                assert!(reason.contains("per-request decode times"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // Each request's ITL p50: the typical step holds 22 of the 23 ms.
        let with_steps = PhaseTable {
            steps: vec![StepRow {
                figure: per_token::StepFigure::ItlP50,
                p50: 22.0,
                p90: None,
                p95: None,
                p99: Some(25.0),
                source: None,
            }],
            ..table
        };
        let d = dominant(&with_steps, &itl);
        let Dominance::Step { part, share } = d else {
            panic!("{d:?}")
        };
        assert_eq!(part, StepPart::TypicalStep);
        assert!((share - 22.0 / 23.0).abs() < 1e-12);
        assert_eq!(d.label(), "Decode step (96% of the metric)");
        assert_eq!(d.phase(), Some(Phase::Decode));
        let next = next_checks(&d, false);
        assert_eq!(next.estimator, Some("decode-floor"));
        assert!(next.checks[0].contains("bandwidth"));
        assert!(matches!(
            dominant(&PhaseTable::default(), &itl),
            Dominance::Nothing { .. }
        ));
    }

    /// Rows from raw per-request durations of each phase (ms).
    fn table_from_timings(timings: &[(Phase, Vec<f64>)]) -> Result<PhaseTable, StatsError> {
        let rows = timings
            .iter()
            .map(|(phase, values)| {
                let s = Summary::of(values)?;
                Ok(PhaseRow {
                    phase: *phase,
                    p50: s.p50.unwrap(),
                    p90: s.p90,
                    p95: s.p95,
                    p99: s.p99,
                    share: None,
                    source: None,
                    edited: false,
                })
            })
            .collect::<Result<Vec<_>, StatsError>>()?;
        Ok(PhaseTable {
            rows,
            steps: Vec::new(),
        })
    }

    #[test]
    fn p90_needs_p90_values() {
        let mut target = ttft(1000.0);
        target.percentile = Some(Percentile::P90);
        let table = table_from_timings(&[(
            Phase::QueueWait,
            (1..=100).map(|v| v as f64 * 10.0).collect(),
        )])
        .unwrap();
        // numpy.quantile(range(10, 1010, 10), 0.9) = 901.0 (h = 89.1).
        assert!((table.rows[0].p90.unwrap() - 901.0).abs() < 1e-9);
        let shares = table.shares(&target);
        assert_eq!(shares[0].0, Phase::QueueWait);
        assert!((shares[0].1 - 0.901).abs() < 1e-12);
        let without = PhaseTable {
            rows: vec![row(Phase::QueueWait, 900.0)],
            steps: Vec::new(),
        };
        assert!(without.shares(&target).is_empty());
    }

    #[test]
    fn decision_table_entries() {
        let next = |phase| next_checks(&Dominance::Phase { phase, share: 0.8 }, false);
        let prefill = next(Phase::Prefill);
        assert!(prefill.checks[0].contains("prompt-length distribution"));
        assert!(prefill.checks[1].contains("prefix-cache hit rate"));
        assert_eq!(prefill.estimator, Some("prefix-reuse"));
        assert!(next(Phase::Tokenize).checks[0].contains("tokenizer"));
        assert!(next(Phase::Detokenize).checks[0].contains("token by token"));
        assert!(next(Phase::Network).checks[1].contains("buffers"));
    }

    #[test]
    fn validation_of_rows() {
        let mut bad = row(Phase::Prefill, 100.0);
        bad.p99 = Some(50.0);
        let mut share = row(Phase::Decode, 10.0);
        share.share = Some(1.5);
        let table = PhaseTable {
            rows: vec![bad, share, row(Phase::Prefill, 1.0)],
            steps: Vec::new(),
        };
        let fields: Vec<String> = table.validate().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["phases[0]", "phases[1].share", "phases[2]"]);
        assert!(PhaseTable {
            rows: vec![row(Phase::Decode, 1.0)],
            steps: Vec::new(),
        }
        .validate()
        .is_empty());
    }
}
