//! A step's record as a person reads it: labelled fields with their units, and the
//! table steps as tables with their column heads. Pages that show a record without its
//! form (the blind replays) show this: no form names, no JSON keys.

use super::record::StepRecord;
use super::reproduce::{FrozenConfig, Reproducible, CONFIG_FIELDS};
use crate::fmt::format_number;
use crate::metric::format_value;
use crate::quantity::Unit;

/// One step's record: labelled values, then its tables.
#[derive(Debug, Default, PartialEq)]
pub struct RecordView {
    pub fields: Vec<(&'static str, String)>,
    pub tables: Vec<RecordTable>,
}

/// A table of a record (phases, kernels, candidates), with its column heads.
#[derive(Debug, PartialEq)]
pub struct RecordTable {
    pub caption: &'static str,
    pub head: Vec<&'static str>,
    /// The columns after the first that hold text, not numbers.
    pub text_columns: usize,
    pub rows: Vec<Vec<String>>,
}

impl RecordTable {
    /// Whether column `i` holds numbers (to align them right): all but the first and
    /// the trailing text columns.
    pub fn is_num(&self, i: &usize) -> bool {
        *i > 0 && *i < self.head.len() - self.text_columns
    }
}

impl Reproducible {
    /// "yes", "not yet", "no", "unanswered".
    pub fn label(self) -> &'static str {
        match self {
            Reproducible::Yes => "yes",
            Reproducible::NotYet => "not yet",
            Reproducible::No => "no",
            Reproducible::Unanswered => "unanswered",
        }
    }
}

fn ms(v: f64) -> String {
    format_value(v, Unit::Ms)
}

fn pct(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

fn opt(v: Option<f64>, show: impl Fn(f64) -> String) -> String {
    v.map(show).unwrap_or_default()
}

/// Every setting the configuration records, in the form's order, by its label.
fn config_fields(c: &FrozenConfig, out: &mut Vec<(&'static str, String)>) {
    for f in CONFIG_FIELDS.iter().filter(|f| f.name != "model_config") {
        if let Some(v) = c.display_value(f.name).filter(|v| !v.is_empty()) {
            out.push((f.label, v));
        }
    }
}

impl RecordView {
    fn field(&mut self, label: &'static str, value: String) {
        if !value.is_empty() {
            self.fields.push((label, value));
        }
    }
}

/// The record of one step, labelled; `metric_unit` is step 1's unit, the one step 7's
/// after-value is in.
pub fn record_view(record: &StepRecord, metric_unit: Option<Unit>) -> RecordView {
    let mut v = RecordView::default();
    match record {
        StepRecord::Reproduce(c) => {
            v.field("Reproducible on demand", c.reproducible.label().to_string());
            config_fields(c, &mut v.fields);
            v.field("Notes", c.notes.clone());
        }
        StepRecord::Metric(m) => {
            v.field("Metric", m.metric.label().to_string());
            v.field(
                "Percentile",
                m.percentile.map_or_else(
                    || "none (measured over the whole run)".to_string(),
                    |p| p.slug().to_string(),
                ),
            );
            v.field("Observed", format_value(m.observed, m.unit));
            v.field("Target", format_value(m.target, m.unit));
        }
        StepRecord::Phases(t) => {
            v.tables.push(RecordTable {
                caption: "Per-request phase durations",
                head: vec!["Phase", "p50", "p90", "p95", "p99", "Share"],
                text_columns: 0,
                rows: t
                    .rows
                    .iter()
                    .map(|r| {
                        vec![
                            r.phase.label().to_string(),
                            ms(r.p50),
                            opt(r.p90, ms),
                            opt(r.p95, ms),
                            opt(r.p99, ms),
                            opt(r.share, pct),
                        ]
                    })
                    .collect(),
            });
            let per_token = |v: f64| format!("{} per token", ms(v));
            if !t.steps.is_empty() {
                v.tables.push(RecordTable {
                    caption: "Per-token figures of the decode step (over the requests)",
                    head: vec!["Figure", "p50", "p90", "p95", "p99"],
                    text_columns: 0,
                    rows: t
                        .steps
                        .iter()
                        .map(|r| {
                            vec![
                                r.figure.label().to_string(),
                                per_token(r.p50),
                                opt(r.p90, per_token),
                                opt(r.p95, per_token),
                                opt(r.p99, per_token),
                            ]
                        })
                        .collect(),
                });
            }
        }
        StepRecord::Resources(r) => {
            v.field("GPU kernel time", ms(r.gpu_total));
            v.field(
                "CPU busy time",
                r.cpu_total.map_or_else(|| "not recorded".to_string(), ms),
            );
            v.field("Wall-clock time", ms(r.wall));
        }
        StepRecord::Regime(r) => {
            if !r.kernels.is_empty() {
                v.tables.push(RecordTable {
                    caption: "Top kernels (Nsight Compute)",
                    head: vec!["Kernel", "SM throughput", "DRAM throughput"],
                    text_columns: 0,
                    rows: r
                        .kernels
                        .iter()
                        .map(|k| {
                            vec![
                                k.name.clone(),
                                format!("{}%", format_number(k.sm_pct, 0)),
                                format!("{}%", format_number(k.dram_pct, 0)),
                            ]
                        })
                        .collect(),
                });
            }
            if let Some(d) = r.decode {
                v.field("Measured decode step", ms(d.measured_ms));
                v.field("Batch", d.batch.map(|b| b.to_string()).unwrap_or_default());
                v.field(
                    "Context",
                    d.context
                        .map(|c| format!("{} tokens", format_number(c as f64, 0)))
                        .unwrap_or_default(),
                );
                v.field("Floor", opt(d.floor_ms, ms));
            }
        }
        StepRecord::Kernels(k) => {
            v.tables.push(RecordTable {
                caption: "Kernels of the phase",
                text_columns: 1,
                head: vec![
                    "Kernel",
                    "Share",
                    "Time",
                    "Occupancy",
                    "Stall reasons, notes",
                ],
                rows: k
                    .kernels
                    .iter()
                    .map(|r| {
                        vec![
                            r.name.clone(),
                            opt(r.share, pct),
                            opt(r.time_ms, ms),
                            opt(r.occupancy_pct, |o| format!("{}%", format_number(o, 0))),
                            r.notes.clone(),
                        ]
                    })
                    .collect(),
            });
            v.field("Phase total", opt(k.phase_total_ms, ms));
        }
        StepRecord::Fixes(f) => v.tables.push(RecordTable {
            caption: "Candidate fixes",
            head: vec!["Fix", "Share touched", "Speedup", "Effort"],
            text_columns: 0,
            rows: f
                .candidates
                .iter()
                .map(|c| {
                    vec![
                        c.description.clone(),
                        pct(c.share),
                        format!("{}×", format_number(c.speedup, 2)),
                        format!("{} days", format_number(c.effort_days, 1)),
                    ]
                })
                .collect(),
        }),
        StepRecord::Change(c) => {
            v.field("The one change", c.change.clone());
            v.field(
                "The step-1 metric after the change",
                match metric_unit {
                    Some(unit) => format_value(c.after_value, unit),
                    None => format_number(c.after_value, 2),
                },
            );
            v.field(
                "Verdict",
                c.verdict.map(|x| x.label().to_string()).unwrap_or_default(),
            );
            v.field("The cause found", c.findings.clone());
            v.field("Quality check", c.quality.clone());
            v.field("Effort", c.effort.clone());
            config_fields(&c.after_config, &mut v.fields);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::phases::{Phase, PhaseRow, PhaseTable};

    #[test]
    fn phases_read_as_a_labelled_table_in_milliseconds() {
        let v = record_view(
            &StepRecord::Phases(PhaseTable {
                rows: vec![PhaseRow {
                    phase: Phase::Prefill,
                    p50: 1900.0,
                    p90: None,
                    p95: Some(2400.0),
                    p99: None,
                    share: Some(0.62),
                    source: None,
                    edited: false,
                }],
                steps: Vec::new(),
            }),
            None,
        );
        assert!(v.fields.is_empty());
        assert!(!v.tables[0].is_num(&0) && v.tables[0].is_num(&5));
        assert_eq!(v.tables[0].head[0], "Phase");
        assert_eq!(
            v.tables[0].rows[0],
            ["Prefill", "1,900 ms", "", "2,400 ms", "", "62%"]
        );
    }
}
