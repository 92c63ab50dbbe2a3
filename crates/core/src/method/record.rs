//! What a person records at each step, read from flat `name=value` pairs (a web form,
//! or a JSON body flattened to the same names, so the API validates exactly like the
//! form), and what the app computes from all recorded steps together.

use serde::{Deserialize, Serialize};

use super::fixes::{self, Candidate, RankedCandidate};
use super::journal::{self, DraftInput, JournalEntry};
use super::kernels::{self, KernelRow, RankedKernel};
use super::per_token::{self, StepDecomposition, StepFigure, StepRow};
use super::phases::{
    dominant, next_checks, tail_spread, Dominance, NextChecks, Phase, PhaseRow, PhaseTable,
    TailSpread,
};
use super::regime::{decode_band, helps, regime, DecodeBand, Regime};
use super::reproduce::{
    self, catalog_matches, check_single_change, CatalogMatch, FrozenConfig, SingleChangeCheck,
};
use super::resources::{classify, consistent_with_queueing, Classification};
use super::verdict::Verdict;
use super::FieldError;
use crate::estimate::{self, Inputs};
use crate::fmt::format_number;
use crate::metric::{MetricForm, MetricReading, MetricTarget};
use crate::pairs::{self, JsonReading, Pairs};
use crate::quantity::{self, Quantity, Unit};

/// Rows a table step reads at most (forms show a few; the API may send more).
pub const MAX_ROWS: usize = 20;

/// Step 3: summed busy times and the wall-clock time of the same window (ms). The CPU
/// busy time is optional (a GPU trace does not hold it): without it only "GPU-bound or
/// not" is judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ResourceTimes {
    pub gpu_total: f64,
    #[serde(default)]
    pub cpu_total: Option<f64>,
    pub wall: f64,
}

/// Step 4: one top kernel's Nsight Compute throughputs (% of peak).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelUtilization {
    pub name: String,
    pub sm_pct: f64,
    pub dram_pct: f64,
}

/// Step 4, decode: the measured step time against its bandwidth floor. The floor is
/// either typed in, or estimated with decode-floor from the step-0 setup and
/// `batch` × `context`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecodeCheck {
    pub measured_ms: f64,
    pub batch: Option<i64>,
    pub context: Option<i64>,
    pub floor_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RegimeStep {
    pub kernels: Vec<KernelUtilization>,
    pub decode: Option<DecodeCheck>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelStep {
    pub kernels: Vec<KernelRow>,
    /// Total time of the phase the kernels belong to; shares default to time / total.
    pub phase_total_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FixStep {
    pub candidates: Vec<Candidate>,
}

/// Step 7: the one change, the configuration it ran with, the step-1 metric after it,
/// and the checks the journal entry reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangeStep {
    /// The declared variable, e.g. "enable chunked prefill with a 4,096-token budget".
    pub change: String,
    pub after_config: FrozenConfig,
    /// The step-1 metric at the same percentile after the change.
    pub after_value: f64,
    /// The person's reading of before/after distributions; overridden by
    /// "invalid comparison" when more than the declared variable changed.
    pub verdict: Option<Verdict>,
    /// The cause, in the engineer's words.
    pub findings: String,
    pub quality: String,
    pub effort: String,
    /// A second metric the change moved, with its own before/after (e.g. the ITL fix
    /// made long prompts' TTFT worse); carried into the journal's RESULT.
    pub tradeoff: Option<crate::metric::TradeOff>,
}

/// Everything recorded so far, one slot per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Records {
    pub reproduce: Option<FrozenConfig>,
    pub metric: Option<MetricTarget>,
    pub phases: Option<PhaseTable>,
    pub resources: Option<ResourceTimes>,
    pub regime: Option<RegimeStep>,
    pub kernels: Option<KernelStep>,
    pub fixes: Option<FixStep>,
    pub change: Option<ChangeStep>,
}

/// One step's record, as parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum StepRecord {
    Reproduce(FrozenConfig),
    Metric(MetricTarget),
    Phases(PhaseTable),
    Resources(ResourceTimes),
    Regime(RegimeStep),
    Kernels(KernelStep),
    Fixes(FixStep),
    Change(ChangeStep),
}

impl StepRecord {
    pub fn step(&self) -> u8 {
        match self {
            StepRecord::Reproduce(_) => 0,
            StepRecord::Metric(_) => 1,
            StepRecord::Phases(_) => 2,
            StepRecord::Resources(_) => 3,
            StepRecord::Regime(_) => 4,
            StepRecord::Kernels(_) => 5,
            StepRecord::Fixes(_) => 6,
            StepRecord::Change(_) => 7,
        }
    }

    /// The stored form: the step's own type as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            StepRecord::Reproduce(v) => serde_json::to_value(v),
            StepRecord::Metric(v) => serde_json::to_value(v),
            StepRecord::Phases(v) => serde_json::to_value(v),
            StepRecord::Resources(v) => serde_json::to_value(v),
            StepRecord::Regime(v) => serde_json::to_value(v),
            StepRecord::Kernels(v) => serde_json::to_value(v),
            StepRecord::Fixes(v) => serde_json::to_value(v),
            StepRecord::Change(v) => serde_json::to_value(v),
        };
        // Plain structs of strings, numbers and options always serialize.
        value.unwrap_or(serde_json::Value::Null)
    }

    /// Reads a stored record back; `None` when the JSON no longer fits the type.
    pub fn from_json(step: u8, value: serde_json::Value) -> Option<StepRecord> {
        use serde_json::from_value as read;
        Some(match step {
            0 => StepRecord::Reproduce(read(value).ok()?),
            1 => StepRecord::Metric(read(value).ok()?),
            2 => StepRecord::Phases(read(value).ok()?),
            3 => StepRecord::Resources(read(value).ok()?),
            4 => StepRecord::Regime(read(value).ok()?),
            5 => StepRecord::Kernels(read(value).ok()?),
            6 => StepRecord::Fixes(read(value).ok()?),
            7 => StepRecord::Change(read(value).ok()?),
            _ => return None,
        })
    }
}

impl Records {
    pub fn set(&mut self, record: StepRecord) {
        match record {
            StepRecord::Reproduce(v) => self.reproduce = Some(v),
            StepRecord::Metric(v) => self.metric = Some(v),
            StepRecord::Phases(v) => self.phases = Some(v),
            StepRecord::Resources(v) => self.resources = Some(v),
            StepRecord::Regime(v) => self.regime = Some(v),
            StepRecord::Kernels(v) => self.kernels = Some(v),
            StepRecord::Fixes(v) => self.fixes = Some(v),
            StepRecord::Change(v) => self.change = Some(v),
        }
    }

    /// Sets the record when there is one.
    pub fn set_some(&mut self, record: Option<StepRecord>) {
        if let Some(r) = record {
            self.set(r);
        }
    }

    /// Steps with a record that counts as done (step 0 needs a yes or "not yet"; step 4
    /// needs its regimes or decode band computed, not just recorded).
    pub fn done_steps(&self) -> Vec<u8> {
        let present = [
            self.reproduce.as_ref().is_some_and(reproduce::is_done),
            self.metric.is_some(),
            self.phases.is_some(),
            self.resources.is_some(),
            // A step whose computation could not run is not done.
            self.regime
                .as_ref()
                .is_some_and(|r| regime_ran(r, self.reproduce.as_ref())),
            self.kernels.is_some(),
            self.fixes.is_some(),
            self.change.is_some(),
        ];
        (0u8..8).filter(|&s| present[s as usize]).collect()
    }
}

/// The step parsers' readings of a field.
impl Pairs {
    /// An optional amount kept in `unit` (read by [`quantity::read`]: "3.2 s",
    /// "620 ms", "40%", "4,096 tokens"); a blank value is `None`, an unreadable one
    /// or one in another dimension an error naming the field.
    fn number(
        &self,
        name: &str,
        what: &str,
        unit: Unit,
        errors: &mut Vec<FieldError>,
    ) -> Option<f64> {
        let raw = self.get(name)?;
        match quantity::read(raw, unit) {
            Ok(v) => Some(v),
            Err(e) => {
                errors.push(FieldError::new(name, format!("{what}: {e}")));
                None
            }
        }
    }

    fn required(
        &self,
        name: &str,
        what: &str,
        unit: Unit,
        errors: &mut Vec<FieldError>,
    ) -> Option<f64> {
        if self.get(name).is_none() {
            errors.push(FieldError::new(name, format!("{what} is required")));
            return None;
        }
        self.number(name, what, unit, errors)
    }

    /// A fraction, accepting "0.4" or "40%".
    fn share(&self, name: &str, what: &str, errors: &mut Vec<FieldError>) -> Option<f64> {
        self.number(name, what, Unit::Ratio, errors)
    }

    fn whole(
        &self,
        name: &str,
        what: &str,
        unit: Unit,
        errors: &mut Vec<FieldError>,
    ) -> Option<i64> {
        let v = self.number(name, what, unit, errors)?;
        if v.fract() != 0.0 || v < 1.0 {
            errors.push(FieldError::new(
                name,
                format!("{what} must be a whole number of at least 1"),
            ));
            return None;
        }
        Some(v as i64)
    }
}

/// Rewrites `prefix[i]` in error fields from a compacted row index to the row's
/// index in the submission (blank rows are skipped before validation).
fn reindex(errors: Vec<FieldError>, prefix: &str, original: &[usize]) -> Vec<FieldError> {
    errors
        .into_iter()
        .map(|mut e| {
            let head = format!("{prefix}[");
            if let Some(rest) = e.field.strip_prefix(&head) {
                if let Some((i, tail)) = rest.split_once(']') {
                    if let Some(orig) = i.parse::<usize>().ok().and_then(|i| original.get(i)) {
                        e.field = format!("{prefix}[{orig}]{tail}");
                    }
                }
            }
            e
        })
        .collect()
}

/// Parses one step without earlier steps to read it against (unit tests).
#[cfg(test)]
pub fn parse_step(step: u8, pairs: &Pairs) -> Result<StepRecord, Vec<FieldError>> {
    parse_step_in(step, pairs, &Records::default())
}

/// Parses one step from submitted pairs, with every problem named by field. `earlier`
/// holds what is recorded so far: step 7's value after the change is read in step 1's
/// unit.
pub fn parse_step_in(
    step: u8,
    pairs: &Pairs,
    earlier: &Records,
) -> Result<StepRecord, Vec<FieldError>> {
    match step {
        0 => parse_reproduce(pairs).map(StepRecord::Reproduce),
        1 => parse_metric(pairs).map(StepRecord::Metric),
        2 => parse_phases(pairs).map(StepRecord::Phases),
        3 => parse_resources(pairs).map(StepRecord::Resources),
        4 => parse_regime(pairs).and_then(|r| {
            // The floor is estimated from step 0: refuse the step rather than store a
            // decode check that cannot be computed.
            match evaluate_regime(&r, earlier.reproduce.as_ref()).decode_problem {
                Some(problem) => Err(vec![FieldError::new("decode.floor_ms", problem)]),
                None => Ok(StepRecord::Regime(r)),
            }
        }),
        5 => parse_kernels(pairs).map(StepRecord::Kernels),
        6 => parse_fixes(pairs).map(StepRecord::Fixes),
        7 => parse_change(pairs, earlier.metric.map(|m| m.unit)).map(StepRecord::Change),
        _ => Err(vec![FieldError::new(
            "step",
            format!("there is no step {step}: steps are numbered 0 to 7"),
        )]),
    }
}

fn parse_reproduce(pairs: &Pairs) -> Result<FrozenConfig, Vec<FieldError>> {
    let (config, mut errors) = FrozenConfig::from_form(pairs.iter());
    if errors.is_empty() {
        errors = reproduce::validate(&config);
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

fn parse_metric(pairs: &Pairs) -> Result<MetricTarget, Vec<FieldError>> {
    MetricTarget::parse(&MetricForm {
        metric: pairs.text("metric"),
        percentile: pairs.text("percentile"),
        observed: pairs.text("observed"),
        target: pairs.text("target"),
        unit: pairs.text("unit"),
        confirm_target: matches!(
            pairs.text("confirm_target").trim().to_lowercase().as_str(),
            "on" | "yes" | "true" | "1"
        ),
    })
}

/// The value columns of a phase row in the form and the API.
pub const PHASE_COLUMNS: [&str; 5] = ["p50", "p90", "p95", "p99", "share"];

fn parse_phases(pairs: &Pairs) -> Result<PhaseTable, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut rows = Vec::new();
    for phase in Phase::ALL {
        let slug = phase.slug();
        let f = |p: &str| format!("{slug}.{p}");
        // A row is there when a number is typed; its source alone (a hidden field) is not.
        if !PHASE_COLUMNS.iter().any(|c| pairs.get(&f(c)).is_some()) {
            continue;
        }
        let label = phase.label();
        let p50 = pairs.required(&f("p50"), &format!("{label} p50"), Unit::Ms, &mut errors);
        let p90 = pairs.number(&f("p90"), &format!("{label} p90"), Unit::Ms, &mut errors);
        let p95 = pairs.number(&f("p95"), &format!("{label} p95"), Unit::Ms, &mut errors);
        let p99 = pairs.number(&f("p99"), &format!("{label} p99"), Unit::Ms, &mut errors);
        let share = pairs.share(&f("share"), &format!("{label} share"), &mut errors);
        let tail_typed = ["p90", "p95", "p99"]
            .iter()
            .any(|c| pairs.get(&f(c)).is_some());
        if p50.is_some() && !tail_typed {
            errors.push(FieldError::new(
                f("p95"),
                format!("{label}: give at least one of p90, p95 or p99 beside the p50"),
            ));
        }
        let source = source_field(pairs, &f("source"), label, &mut errors);
        if let (Some(p50), true) = (p50, p90.is_some() || p95.is_some() || p99.is_some()) {
            rows.push(PhaseRow {
                phase,
                p50,
                p90,
                p95,
                p99,
                share,
                source,
                edited: false,
            });
        }
    }
    let steps = parse_step_figures(pairs, &mut errors);
    if rows.is_empty() && steps.is_empty() && errors.is_empty() {
        errors.push(FieldError::new(
            "phases",
            "Fill in at least one phase: its p50 and any of p90, p95 or p99 (ms, or with a unit: 1.2 s)",
        ));
    }
    let table = PhaseTable { rows, steps };
    if errors.is_empty() {
        // The core names rows by position; the form names them by phase.
        errors = table
            .validate()
            .into_iter()
            .map(|mut e| {
                if let Some(rest) = e.field.strip_prefix("phases[") {
                    if let Some((i, tail)) = rest.split_once(']') {
                        if let Some(row) = i.parse::<usize>().ok().and_then(|i| table.rows.get(i)) {
                            let tail = tail.trim_start_matches('.');
                            let tail = if tail.is_empty() { "p50" } else { tail };
                            e.field = format!("{}.{tail}", row.phase.slug());
                        }
                    }
                }
                e
            })
            .collect();
    }
    if errors.is_empty() {
        Ok(table)
    } else {
        Err(errors)
    }
}

/// Step 2's per-token figures (`tpot.p50`, `itl_p50.p99`, …), in ms per token: a row is
/// there when its p50 or any percentile is given, and needs the p50.
fn parse_step_figures(pairs: &Pairs, errors: &mut Vec<FieldError>) -> Vec<StepRow> {
    let mut steps = Vec::new();
    for figure in StepFigure::ALL {
        let slug = figure.slug();
        let f = |p: &str| format!("{slug}.{p}");
        if !["p50", "p90", "p95", "p99"]
            .iter()
            .any(|c| pairs.get(&f(c)).is_some())
        {
            continue;
        }
        let label = format!("{} (ms per token)", figure.label());
        let p50 = pairs.required(&f("p50"), &format!("{label} p50"), Unit::Ms, errors);
        let p90 = pairs.number(&f("p90"), &format!("{label} p90"), Unit::Ms, errors);
        let p95 = pairs.number(&f("p95"), &format!("{label} p95"), Unit::Ms, errors);
        let p99 = pairs.number(&f("p99"), &format!("{label} p99"), Unit::Ms, errors);
        let source = source_field(pairs, &f("source"), figure.label(), errors);
        if let Some(p50) = p50 {
            steps.push(StepRow {
                figure,
                p50,
                p90,
                p95,
                p99,
                source,
            });
        }
    }
    steps
}

fn parse_resources(pairs: &Pairs) -> Result<ResourceTimes, Vec<FieldError>> {
    let mut errors = Vec::new();
    let gpu = pairs.required("gpu_total", "GPU kernel time", Unit::Ms, &mut errors);
    let cpu_total = pairs.number("cpu_total", "CPU busy time", Unit::Ms, &mut errors);
    let wall = pairs.required("wall", "Wall-clock time", Unit::Ms, &mut errors);
    let (Some(gpu_total), Some(wall), true) = (gpu, wall, errors.is_empty()) else {
        return Err(errors);
    };
    classify(gpu_total, cpu_total, wall)?;
    Ok(ResourceTimes {
        gpu_total,
        cpu_total,
        wall,
    })
}

/// Indices of table rows with anything filled in, in submission order.
fn filled_rows(pairs: &Pairs, prefix: &str) -> Vec<usize> {
    (0..MAX_ROWS)
        .filter(|i| pairs.any_with_prefix(&format!("{prefix}[{i}].")))
        .collect()
}

fn parse_regime(pairs: &Pairs) -> Result<RegimeStep, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut kernels = Vec::new();
    for i in filled_rows(pairs, "kernels") {
        let f = |p: &str| format!("kernels[{i}].{p}");
        let name = pairs.text(&f("name"));
        if name.is_empty() {
            errors.push(FieldError::new(f("name"), "Give the kernel's name"));
        }
        let sm = pairs.required(&f("sm_pct"), "SM throughput %", Unit::Percent, &mut errors);
        let dram = pairs.required(
            &f("dram_pct"),
            "DRAM throughput %",
            Unit::Percent,
            &mut errors,
        );
        if let (Some(sm), Some(dram)) = (sm, dram) {
            if let Err(es) = regime(sm, dram) {
                errors.extend(
                    es.into_iter()
                        .map(|e| FieldError::new(f(&e.field), e.message)),
                );
            }
            kernels.push(KernelUtilization {
                name,
                sm_pct: sm,
                dram_pct: dram,
            });
        }
    }
    let decode = if pairs.any_with_prefix("decode.") {
        let measured = pairs.required(
            "decode.measured_ms",
            "Measured decode step",
            Unit::Ms,
            &mut errors,
        );
        let batch = pairs.whole("decode.batch", "Batch", Unit::Count, &mut errors);
        let context = pairs.whole("decode.context", "Context", Unit::Tokens, &mut errors);
        let floor = pairs.number("decode.floor_ms", "Bandwidth floor", Unit::Ms, &mut errors);
        if floor.is_none() && (batch.is_none() || context.is_none()) && errors.is_empty() {
            errors.push(FieldError::new(
                "decode.floor_ms",
                "Give the batch and context so the floor can be estimated from the step-0 setup, or type the floor in",
            ));
        }
        match measured {
            Some(measured_ms) if measured_ms > 0.0 => {
                if let Some(f) = floor {
                    if let Err(es) = decode_band(f, None, measured_ms) {
                        errors
                            .extend(es.into_iter().map(|e| {
                                FieldError::new(format!("decode.{}", e.field), e.message)
                            }));
                    }
                }
                Some(DecodeCheck {
                    measured_ms,
                    batch,
                    context,
                    floor_ms: floor,
                })
            }
            Some(_) => {
                errors.push(FieldError::new(
                    "decode.measured_ms",
                    "The measured step time must be greater than 0 ms",
                ));
                None
            }
            None => None,
        }
    } else {
        None
    };
    if kernels.is_empty() && decode.is_none() && errors.is_empty() {
        errors.push(FieldError::new(
            "kernels[0].name",
            "Record at least one top kernel's SM and DRAM throughput, or the measured decode step",
        ));
    }
    if errors.is_empty() {
        Ok(RegimeStep { kernels, decode })
    } else {
        Err(errors)
    }
}

fn parse_kernels(pairs: &Pairs) -> Result<KernelStep, Vec<FieldError>> {
    let mut errors = Vec::new();
    let rows_at = filled_rows(pairs, "kernels");
    let mut rows = Vec::new();
    for &i in &rows_at {
        let f = |p: &str| format!("kernels[{i}].{p}");
        rows.push(KernelRow {
            name: pairs.text(&f("name")),
            share: pairs.share(&f("share"), "Share", &mut errors),
            time_ms: pairs.number(&f("time_ms"), "Time", Unit::Ms, &mut errors),
            occupancy_pct: pairs.number(
                &f("occupancy_pct"),
                "Occupancy",
                Unit::Percent,
                &mut errors,
            ),
            notes: pairs.text(&f("notes")),
        });
    }
    let phase_total_ms = pairs.number("phase_total_ms", "Phase total", Unit::Ms, &mut errors);
    if rows.is_empty() && errors.is_empty() {
        errors.push(FieldError::new(
            "kernels[0].name",
            "List at least one kernel with its share of the phase or its time",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    kernels::rank_with_total(&rows, phase_total_ms).map_err(|e| reindex(e, "kernels", &rows_at))?;
    Ok(KernelStep {
        kernels: rows,
        phase_total_ms,
    })
}

fn parse_fixes(pairs: &Pairs) -> Result<FixStep, Vec<FieldError>> {
    let mut errors = Vec::new();
    let rows_at = filled_rows(pairs, "candidates");
    let mut candidates = Vec::new();
    for &i in &rows_at {
        let f = |p: &str| format!("candidates[{i}].{p}");
        let share = pairs.share(&f("share"), "Share of time", &mut errors);
        let speedup = pairs.required(&f("speedup"), "Speedup", Unit::Ratio, &mut errors);
        let effort = pairs.required(&f("effort_days"), "Effort", Unit::Day, &mut errors);
        if pairs.get(&f("share")).is_none() {
            errors.push(FieldError::new(
                f("share"),
                "Share of time the fix touches is required (0.09 or 9%)",
            ));
        }
        candidates.push(Candidate {
            description: pairs.text(&f("description")),
            share: share.unwrap_or(f64::NAN),
            speedup: speedup.unwrap_or(f64::NAN),
            effort_days: effort.unwrap_or(f64::NAN),
        });
    }
    if candidates.is_empty() && errors.is_empty() {
        errors.push(FieldError::new(
            "candidates[0].description",
            "List at least one candidate fix with the share it touches, its speedup and the effort",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    fixes::rank(&candidates).map_err(|e| reindex(e, "candidates", &rows_at))?;
    Ok(FixStep { candidates })
}

fn parse_change(pairs: &Pairs, unit: Option<Unit>) -> Result<ChangeStep, Vec<FieldError>> {
    let mut errors = Vec::new();
    let change = pairs.text("change");
    if change.is_empty() {
        errors.push(FieldError::new(
            "change",
            "Name the one thing that was changed, e.g. \"chunked prefill\"",
        ));
    }
    let after_pairs: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("after_config.").map(|k| (k, v)))
        .collect();
    let (after_config, config_errors) = FrozenConfig::from_form(after_pairs);
    errors.extend(
        config_errors
            .into_iter()
            .map(|e| FieldError::new(format!("after_config.{}", e.field), e.message)),
    );
    // In step 1's unit; before step 1 a value keeps the unit it was typed in.
    let after_value = match unit {
        Some(unit) => pairs.required(
            "after_value",
            "The metric after the change",
            unit,
            &mut errors,
        ),
        None => pairs.get("after_value").and_then(|raw| {
            quantity::split(raw)
                .map_err(|e| errors.push(FieldError::new("after_value", e.to_string())))
                .ok()
                .map(|(v, _)| v)
        }),
    };
    if unit.is_none() && after_value.is_none() && pairs.get("after_value").is_none() {
        errors.push(FieldError::new(
            "after_value",
            "The metric after the change is required",
        ));
    }
    if after_value.is_some_and(|v| v <= 0.0) {
        errors.push(FieldError::new(
            "after_value",
            "The metric after the change must be greater than 0",
        ));
    }
    let verdict = match pairs.get("verdict") {
        None => None,
        Some(raw) => {
            let v = Verdict::from_slug(raw);
            if v.is_none() {
                errors.push(FieldError::new(
                    "verdict",
                    "Choose confirmed, improved, inconclusive, regressed or invalid_comparison",
                ));
            }
            v
        }
    };
    let quality = pairs.text("quality");
    if quality.is_empty() {
        errors.push(FieldError::new(
            "quality",
            "Say how output quality was checked to be unchanged, e.g. \"200 paired generations identical\"",
        ));
    }
    let tradeoff = parse_tradeoff(pairs, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ChangeStep {
        change,
        after_config,
        after_value: after_value.unwrap_or_default(),
        verdict,
        findings: pairs.text("findings"),
        quality,
        effort: pairs.text("effort"),
        tradeoff,
    })
}

/// Step 7's optional second metric: `tradeoff.metric`, `tradeoff.percentile`,
/// `tradeoff.before` and `tradeoff.after` (in the metric's unit unless typed with one),
/// `tradeoff.scope` (which requests). All blank: none.
fn parse_tradeoff(pairs: &Pairs, errors: &mut Vec<FieldError>) -> Option<crate::metric::TradeOff> {
    use crate::metric::{Metric, MetricReading, Percentile, TradeOff};
    if !pairs.any_with_prefix("tradeoff.") {
        return None;
    }
    let metric = pairs.get("tradeoff.metric").and_then(Metric::from_slug);
    if metric.is_none() {
        errors.push(FieldError::new(
            "tradeoff.metric",
            "Choose the second metric the change moved: ttft, itl, tpot, e2e, throughput, \
             queue_wait or cost_per_million",
        ));
    }
    let percentile = pairs.get("tradeoff.percentile").and_then(Percentile::parse);
    if percentile.is_none() {
        errors.push(FieldError::new(
            "tradeoff.percentile",
            "Choose its percentile: p50, p90, p95 or p99",
        ));
    }
    let metric = metric?;
    let unit = metric.default_unit();
    let mut reading = |name: &str, what: &str| {
        let v = pairs.required(name, what, unit, errors)?;
        if v <= 0.0 {
            errors.push(FieldError::new(
                name,
                format!("{what} must be greater than 0"),
            ));
            return None;
        }
        Some(MetricReading {
            metric,
            percentile: Some(percentile?),
            value: v,
            unit,
        })
    };
    let before = reading("tradeoff.before", "The second metric before the change");
    let after = reading("tradeoff.after", "The second metric after the change");
    Some(TradeOff {
        before: before?,
        after: after?,
        scope: pairs.text("tradeoff.scope"),
    })
}

/// A step's submission from JSON (an API body, or a stored record shown in its form).
/// Step 2 also accepts the stored shape `{"rows": [{"phase": "prefill", …}]}`.
pub fn step_pairs(step: u8, value: &serde_json::Value) -> Pairs {
    let mut value = value.clone();
    if step == 2 {
        if let Some(rows) = value.get("rows").and_then(|r| r.as_array()).cloned() {
            let mut by_phase = serde_json::Map::new();
            for mut row in rows {
                let phase = row
                    .get("phase")
                    .and_then(|p| p.as_str())
                    .map(str::to_string);
                if let (Some(phase), Some(obj)) = (phase, row.as_object_mut()) {
                    obj.remove("phase");
                    by_phase.insert(phase, serde_json::Value::Object(obj.clone()));
                }
            }
            // The per-token figures: `{"steps": [{"figure": "itl_p50", …}]}`.
            let steps = value.get("steps").and_then(|r| r.as_array()).cloned();
            for mut row in steps.into_iter().flatten() {
                let figure = row
                    .get("figure")
                    .and_then(|p| p.as_str())
                    .map(str::to_string);
                if let (Some(figure), Some(obj)) = (figure, row.as_object_mut()) {
                    obj.remove("figure");
                    by_phase.insert(figure, serde_json::Value::Object(obj.clone()));
                }
            }
            value = serde_json::Value::Object(by_phase);
        }
    }
    if step == 7 {
        // The trade-off is stored as two readings; the form (and the API) take it as
        // one metric, one percentile and the two values in the metric's unit.
        // (A body already in the form's shape, as the API takes it, is left as it is.)
        if let Some(t) = value
            .get("tradeoff")
            .filter(|t| t["before"].is_object())
            .cloned()
        {
            let at = |side: &str, key: &str| t[side][key].clone();
            value["tradeoff"] = serde_json::json!({
                "metric": at("before", "metric"),
                "percentile": at("before", "percentile"),
                "before": at("before", "value"),
                "after": at("after", "value"),
                "scope": t["scope"],
            });
        }
    }
    // The form reading never refuses.
    pairs::from_json(&value, JsonReading::Form).unwrap_or_default()
}

/// A step-2 row's `source`: the artifact its numbers were filled from, or none for
/// numbers typed by hand; anything else is named as an error.
fn source_field(
    pairs: &Pairs,
    name: &str,
    label: &str,
    errors: &mut Vec<FieldError>,
) -> Option<i64> {
    let text = pairs.get(name)?;
    let id = crate::json_input::typed_id(text);
    if id.is_none() {
        errors.push(FieldError::new(
            name,
            format!(
                "{label}: the source '{text}' is not an artifact id (a whole number above 0); \
                 leave it out for numbers typed by hand"
            ),
        ));
    }
    id
}

pub use super::reproduce::decode_floor_inputs;

// ---------- evaluation ----------

/// Step 1 computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricEval {
    /// observed / target (target / observed for throughput): > 1 is worse than target.
    pub gap_ratio: f64,
    pub meets_target: bool,
    pub symptom_line: String,
}

/// Step 2 computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseEval {
    /// A phase slug, or "nothing".
    pub dominant_phase: String,
    pub dominance: Dominance,
    /// "Decode step (96% of the metric)", "Queue wait (92% of the metric)", or
    /// "Nothing dominates".
    pub dominant_label: String,
    /// A per-token metric (ITL, TPOT) decomposed into the decode step, when step 2's
    /// figures answer it.
    pub per_token: Option<StepDecomposition>,
    /// Share of the chosen metric per phase counted in it, largest first.
    pub shares: Vec<(Phase, f64)>,
    pub next_checks: NextChecks,
    /// Link to the estimator that fits, prefilled from step 0 where it can be.
    pub estimator_href: Option<String>,
    /// For a tail ITL/TPOT metric: periodic-tail prefilled from step 0 with the measured
    /// plain step (step 2's decode p50) instead of the floor.
    pub tail_estimator_href: Option<String>,
    /// Set when the metric is a tail percentile far above the dominant phase's median
    /// (the rule is [`super::phases::tail_spread`]'s); the checks are then the tail's.
    pub tail: Option<TailSpread>,
    /// With a decode tail: mixed-step prefilled with step 0's setup and chunk budget.
    pub mixed_step_href: Option<String>,
}

/// Step 4 computed: each kernel's regime and what helps in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRegime {
    pub name: String,
    pub sm_pct: f64,
    pub dram_pct: f64,
    pub regime: Regime,
    pub helps: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeEval {
    pub floor_ms: f64,
    /// "estimate" (decode-floor from the step-0 setup) or "entered".
    pub floor_source: &'static str,
    /// decode-floor's expected step (published calibration), when estimated.
    pub expected_ms: Option<f64>,
    pub measured_ms: f64,
    pub band: DecodeBand,
    /// The decode-floor link with the inputs used.
    pub estimator_href: Option<String>,
    /// This setup's record on the team's fleet, from past investigations.
    pub fleet: Option<super::fleet::FleetHistory>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeEval {
    pub kernels: Vec<KernelRegime>,
    pub decode: Option<DecodeEval>,
    /// Why the decode band could not be computed, when it could not.
    pub decode_problem: Option<String>,
    /// What earlier steps established that bounds these findings (step 3 found the
    /// GPU mostly idle, so kernel regimes cannot explain the metric).
    pub context: Option<String>,
}

/// Step 7 computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangeEval {
    /// `None` when step 0 is not recorded (nothing to diff against).
    pub check: Option<SingleChangeCheck>,
    pub verdict: Option<Verdict>,
    pub before: Option<MetricReading>,
    pub after: Option<MetricReading>,
    /// (after − before) / before × 100.
    pub change_percent: Option<f64>,
    /// Set when the measured speedup beats step 6's best Amdahl ceiling.
    pub beats_ceiling: Option<String>,
}

/// What the app computes from the recorded steps. A step's result is `None` until the
/// step (and the steps it needs) are recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evaluation {
    /// Step 0's model and GPU against the estimators' catalogs.
    pub setup: Vec<CatalogMatch>,
    pub metric: Option<MetricEval>,
    pub phases: Option<PhaseEval>,
    pub resources: Option<Classification>,
    pub regime: Option<RegimeEval>,
    pub kernels: Option<Vec<RankedKernel>>,
    pub fixes: Option<Vec<RankedCandidate>>,
    pub change: Option<ChangeEval>,
}

impl Evaluation {
    /// Holds step 4's decode step against the team's own history of the setup: shown
    /// beside the expected step always, and used by the band when it has enough points.
    pub fn apply_fleet(&mut self, history: super::fleet::FleetHistory) {
        let Some(d) = self.regime.as_mut().and_then(|r| r.decode.as_mut()) else {
            return;
        };
        if history.enough() && d.expected_ms.is_some() {
            d.band = d
                .band
                .with_fleet(history.ratio, history.points.len(), d.measured_ms);
        }
        d.fleet = Some(history);
    }

    /// One step's computed results as JSON (null when there are none).
    pub fn step_json(&self, step: u8) -> serde_json::Value {
        let v = match step {
            0 => serde_json::to_value(&self.setup),
            1 => serde_json::to_value(&self.metric),
            2 => serde_json::to_value(&self.phases),
            3 => serde_json::to_value(self.resources.as_ref().map(|c| ResourcesJson {
                classification: c.slug(),
                line: c.line(),
                detail: c,
            })),
            4 => serde_json::to_value(&self.regime),
            5 => serde_json::to_value(&self.kernels),
            6 => serde_json::to_value(&self.fixes),
            7 => serde_json::to_value(&self.change),
            _ => Ok(serde_json::Value::Null),
        };
        v.unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Serialize)]
struct ResourcesJson<'a> {
    classification: &'static str,
    line: String,
    #[serde(flatten)]
    detail: &'a Classification,
}

/// What the team's fleet history takes from these records: step 4's measured decode
/// step with its batch and context, and the ITL step 1 or 2 measured (ms per token).
pub fn fleet_measured(records: &Records) -> Option<super::fleet::Measured> {
    let check = records.regime.as_ref().and_then(|r| r.decode)?;
    Some(super::fleet::Measured {
        decode_ms: check.measured_ms,
        batch: check.batch,
        context: check.context,
        itl: observed_itl_ms(records)
            .map(|itl| (if records.phases.is_some() { 2 } else { 1 }, itl)),
    })
}

/// The measured ITL the investigation already holds, in ms per token: step 2's typical
/// decode step when the metric is ITL or TPOT (the per-token figures, never a request's
/// whole decode time), else step 1's observed value when it is the median itself. The
/// estimators then start from it instead of a floor.
pub fn observed_itl_ms(records: &Records) -> Option<f64> {
    use crate::metric::Percentile;
    let metric = records.metric.as_ref()?;
    if !per_token::is_per_token(metric.metric) || metric.unit != Unit::Ms {
        return None;
    }
    let typical = records
        .phases
        .as_ref()
        .and_then(|t| per_token::decompose(t, metric).ok())
        .map(|d| d.typical_ms);
    typical
        .or((metric.percentile == Some(Percentile::P50)).then_some(metric.observed))
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// periodic-tail inputs for a tail ITL/TPOT metric (p90 and above): the step-0 setup,
/// its chunk budget when chunked prefill is on, and the measured plain step
/// ([`observed_itl_ms`]); the long prompt and its period are left to give.
pub fn periodic_tail_inputs(config: Option<&FrozenConfig>, records: &Records) -> Option<Inputs> {
    use crate::metric::Percentile;
    let metric = records.metric.as_ref()?;
    if metric.percentile.is_none_or(|p| p == Percentile::P50) {
        return None;
    }
    let plain = observed_itl_ms(records)?;
    let mut inputs = mixed_step_inputs(config);
    inputs.insert("plain_step_ms".into(), plain.to_string());
    Some(inputs)
}

/// Step 0 as the estimators that turn FLOPs into time read it (mixed-step, and
/// periodic-tail with its measured step): the setup with its compute precision, the
/// running sequences, and the chunk budget when chunked prefill is on.
pub fn mixed_step_inputs(config: Option<&FrozenConfig>) -> Inputs {
    let mut inputs = decode_floor_inputs(config, None, None);
    if let Some(c) = config {
        if let Some(a) = c
            .activation_dtype
            .as_deref()
            .filter(|a| !a.trim().is_empty())
        {
            inputs.insert("activation_dtype".into(), a.trim().to_string());
        }
        if c.chunked_prefill != Some(false) {
            if let Some(t) = c.max_num_batched_tokens.filter(|t| *t > 0) {
                inputs.insert("chunk_tokens".into(), t.to_string());
            }
        }
    }
    inputs
}

/// `/estimators/{name}?k=v&…`: the estimator page reproduces the estimate from it.
pub fn estimator_href(name: &str, inputs: &Inputs) -> String {
    let query = serde_urlencoded::to_string(inputs).unwrap_or_default();
    if query.is_empty() {
        format!("/estimators/{name}")
    } else {
        format!("/estimators/{name}?{query}")
    }
}

/// Computes every step's results from what is recorded.
pub fn evaluate(records: &Records) -> Evaluation {
    let config = records.reproduce.as_ref();
    let metric = records.metric.as_ref().map(|t| MetricEval {
        gap_ratio: t.gap_ratio(),
        meets_target: t.meets_target(),
        symptom_line: t.symptom_line(),
    });
    let phases = match (&records.phases, &records.metric) {
        (Some(table), Some(target)) => {
            let dominance = dominant(table, target);
            let tail = tail_spread(table, target, &dominance);
            let checks = match &dominance {
                Dominance::Nothing { .. } if per_token::is_per_token(target.metric) => {
                    super::phases::per_token_unanswered_checks()
                }
                _ => next_checks(&dominance, tail.is_some()),
            };
            let tail_estimator_href = periodic_tail_inputs(config, records)
                .map(|inputs| estimator_href("periodic-tail", &inputs));
            let mixed_step_href = tail
                .filter(|t| t.phase == Phase::Decode)
                .map(|_| estimator_href("mixed-step", &mixed_step_inputs(config)));
            let estimator_href = checks.estimator.map(|name| match name {
                "periodic-tail" => tail_estimator_href
                    .clone()
                    .unwrap_or_else(|| estimator_href(name, &Inputs::new())),
                "decode-floor" => {
                    let mut inputs = decode_floor_inputs(config, None, None);
                    if let Some(itl) = observed_itl_ms(records) {
                        inputs.insert("measured_itl_ms".into(), itl.to_string());
                    }
                    estimator_href(name, &inputs)
                }
                other => estimator_href(other, &Inputs::new()),
            });
            Some(PhaseEval {
                tail_estimator_href,
                tail,
                mixed_step_href,
                dominant_phase: dominance.phase().map_or("nothing", Phase::slug).to_string(),
                dominant_label: dominance.label(),
                per_token: per_token::decompose(table, target).ok(),
                shares: table.shares(target),
                dominance,
                next_checks: checks,
                estimator_href,
            })
        }
        _ => None,
    };
    // Step 3's suspects follow what step 2 established.
    let queue_dominates = matches!(
        phases.as_ref().map(|p| &p.dominance),
        Some(Dominance::Phase {
            phase: Phase::QueueWait,
            ..
        })
    );
    let resources = records
        .resources
        .and_then(|r| classify(r.gpu_total, r.cpu_total, r.wall).ok())
        .map(|c| Classification {
            bound: consistent_with_queueing(c.bound, queue_dominates),
            ..c
        });
    let regime = records.regime.as_ref().map(|r| RegimeEval {
        context: resources.as_ref().and_then(regime_context),
        ..evaluate_regime(r, config)
    });
    let kernels = records
        .kernels
        .as_ref()
        .and_then(|k| kernels::rank_with_total(&k.kernels, k.phase_total_ms).ok());
    let fixes = records
        .fixes
        .as_ref()
        .and_then(|f| fixes::rank(&f.candidates).ok());
    let change = records.change.as_ref().map(|c| {
        let check = config.map(|before| check_single_change(before, &c.after_config, &c.change));
        let verdict = match &check {
            Some(check) if !check.ok => Some(Verdict::InvalidComparison),
            _ => c.verdict,
        };
        let before = records.metric.as_ref().map(MetricTarget::reading);
        let after = before.map(|b| MetricReading {
            value: c.after_value,
            ..b
        });
        let change_percent = before
            .filter(|b| b.value != 0.0)
            .map(|b| (c.after_value - b.value) / b.value * 100.0);
        let beats_ceiling = records
            .metric
            .as_ref()
            .zip(fixes.as_deref())
            .and_then(|(m, ranked)| ceiling_flag(m, c.after_value, ranked));
        ChangeEval {
            check,
            verdict,
            before,
            after,
            change_percent,
            beats_ceiling,
        }
    });
    Evaluation {
        setup: config.map(catalog_matches).unwrap_or_default(),
        metric,
        phases,
        resources,
        regime,
        kernels,
        fixes,
        change,
    }
}

/// Above this, a measured speedup "beats" an Amdahl ceiling (the ceiling is a bound,
/// so anything past it by more than measurement noise means a wrong input).
const CEILING_SLACK: f64 = 1.02;

/// Step 7's speedup (before ÷ after; after ÷ before for throughput) against the best
/// ceiling step 6 computed: a RESULT past every ceiling means the ceiling was wrong
/// (a share or speedup too small) or something else changed too.
fn ceiling_flag(metric: &MetricTarget, after: f64, ranked: &[RankedCandidate]) -> Option<String> {
    let best = ranked
        .iter()
        .max_by(|a, b| a.ceiling.total_cmp(&b.ceiling))?;
    let speedup = if metric.metric.higher_is_better() {
        after / metric.observed
    } else {
        metric.observed / after
    };
    (speedup.is_finite() && speedup > best.ceiling * CEILING_SLACK).then(|| {
        format!(
            "The measured speedup {}× beats step 6's Amdahl ceiling of {}× (best candidate: {}): the ceiling was wrong or something else changed.",
            format_number(speedup, 2),
            format_number(best.ceiling, 2),
            best.candidate.description
        )
    })
}

/// Step 4 read against step 3: when the GPU was not the busy resource, kernel regimes
/// describe the little GPU work there was, not where the time went.
fn regime_context(c: &Classification) -> Option<String> {
    let what = match &c.bound {
        super::resources::Boundness::GpuBound => return None,
        super::resources::Boundness::CpuBound => "the CPU was the busy resource",
        super::resources::Boundness::NotGpuBound => "the CPU busy time was not recorded",
        super::resources::Boundness::Waiting { .. } => "both GPU and CPU were mostly idle",
    };
    Some(format!(
        "Step 3 found the GPU busy only {:.0}% of the window ({what}): these regimes describe the GPU work there was; faster kernels cannot recover the time spent elsewhere.",
        c.gpu_ratio * 100.0
    ))
}

/// Whether step 4 computed something: a kernel's regime, or the decode band.
fn regime_ran(step: &RegimeStep, config: Option<&FrozenConfig>) -> bool {
    let eval = evaluate_regime(step, config);
    !eval.kernels.is_empty() || eval.decode.is_some()
}

fn evaluate_regime(step: &RegimeStep, config: Option<&FrozenConfig>) -> RegimeEval {
    let kernels = step
        .kernels
        .iter()
        .filter_map(|k| {
            let r = regime(k.sm_pct, k.dram_pct).ok()?;
            Some(KernelRegime {
                name: k.name.clone(),
                sm_pct: k.sm_pct,
                dram_pct: k.dram_pct,
                regime: r,
                helps: helps(r),
            })
        })
        .collect();
    let mut decode_problem = None;
    let decode = step.decode.and_then(|d| {
        let (floor, source, href) = match d.floor_ms {
            Some(f) => (f, "entered", None),
            None => {
                let inputs = decode_floor_inputs(config, d.batch, d.context);
                let href = estimator_href("decode-floor", &inputs);
                match estimate::run("decode-floor", &inputs) {
                    Ok(chain) => match chain.results.get("floor_ms").and_then(|v| v.as_f64()) {
                        Some(f) => (f, "estimate", Some(href)),
                        None => return None,
                    },
                    Err(e) => {
                        decode_problem = Some(format!(
                            "The floor could not be estimated from the step-0 setup ({e}); type the floor in, or complete step 0."
                        ));
                        return None;
                    }
                }
            }
        };
        let expected = match source {
            "estimate" => super::fleet::expected_ms(config, d.batch, d.context),
            _ => None,
        };
        let band = decode_band(floor, expected, d.measured_ms).ok()?;
        Some(DecodeEval {
            floor_ms: floor,
            floor_source: source,
            expected_ms: expected,
            measured_ms: d.measured_ms,
            band,
            estimator_href: href,
            fleet: None,
        })
    });
    RegimeEval {
        kernels,
        decode,
        decode_problem,
        context: None,
    }
}

/// Drafts the journal entry from everything recorded; `date` is `YYYY-MM-DD`.
pub fn draft_entry(records: &Records, evaluation: &Evaluation, date: &str) -> JournalEntry {
    let change = records.change.as_ref();
    let after: Vec<MetricReading> = evaluation
        .change
        .as_ref()
        .and_then(|c| c.after)
        .into_iter()
        .collect();
    let dominance = evaluation.phases.as_ref().map(|p| &p.dominance);
    let regime = evaluation
        .regime
        .as_ref()
        .and_then(|r| r.kernels.first().map(|k| k.regime));
    let decode = evaluation
        .regime
        .as_ref()
        .and_then(|r| r.decode.as_ref().map(|d| &d.band));
    let mut entry = journal::draft(&DraftInput {
        date,
        config: records.reproduce.as_ref(),
        target: records.metric.as_ref(),
        baseline: &[],
        dominance,
        phases: records.phases.as_ref(),
        resources: evaluation.resources.as_ref(),
        regime,
        decode,
        findings: change.map_or("", |c| c.findings.as_str()),
        change: change.map_or("", |c| c.change.as_str()),
        after: &after,
        verdict: evaluation.change.as_ref().and_then(|c| c.verdict),
        quality: change.map_or("", |c| c.quality.as_str()),
        effort: change.map_or("", |c| c.effort.as_str()),
        tradeoff: change.and_then(|c| c.tradeoff.as_ref()),
    });
    // A RESULT past step 6's own ceiling is flagged where the reader sees the RESULT.
    if let Some(flag) = evaluation
        .change
        .as_ref()
        .and_then(|c| c.beats_ceiling.as_ref())
    {
        entry.result = format!("{}\n\nFlag: {flag}", entry.result);
    }
    entry
}

/// A comparison linked to the investigation, as the journal draft weighs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured<'a> {
    pub verdict: Verdict,
    /// Invalid for this investigation (another setup, or more than one change).
    pub invalid: bool,
    /// The comparison's RESULT text, with its intervals and link.
    pub result: &'a str,
}

/// The draft's RESULT when a comparison is linked. What the person recorded in step 7
/// is never replaced: with no step 7 the comparison is the RESULT; an invalid one is
/// noted but not used; one that agrees (same verdict) is added as the measurement; one
/// that disagrees is shown beside step 7's, asking which stands.
pub fn reconcile_result(
    recorded: Option<(&str, Option<Verdict>)>,
    measured: Measured<'_>,
) -> String {
    let Some((text, verdict)) = recorded else {
        return measured.result.to_string();
    };
    if measured.invalid {
        return format!(
            "{text}\n\nA linked comparison was not used for this RESULT: {}",
            measured.result
        );
    }
    if verdict == Some(measured.verdict) {
        return format!("{text}\n\nMeasured: {}", measured.result);
    }
    format!(
        "Two results disagree; decide which stands before publishing.\n\
         - Recorded in step 7: {text}\n\
         - Measured by the linked comparison: {}",
        measured.result
    )
}

/// The value a step naturally observes, with its unit, offered as the "observed"
/// side when an estimate is attached to it; an expected value must be of the same
/// dimension.
pub fn observed_at(step: u8, records: &Records) -> Option<Quantity> {
    match step {
        1 => records.metric.map(|m| Quantity::new(m.observed, m.unit)),
        4 => records
            .regime
            .as_ref()
            .and_then(|r| r.decode.map(|d| Quantity::new(d.measured_ms, Unit::Ms))),
        7 => records.change.as_ref().map(|c| {
            let unit = records.metric.map_or(Unit::Ms, |m| m.unit);
            Quantity::new(c.after_value, unit)
        }),
        _ => None,
    }
}

/// A new investigation's details, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opening {
    pub title: String,
    pub service: String,
    pub symptom: String,
    pub tags: Vec<String>,
}

impl Opening {
    /// Title 1–200 characters; tags split on commas, trimmed, lower-cased, each 1–40
    /// characters of letters, digits, `-`, `_`, `.`, `:` or `/`, at most 12.
    pub fn parse(
        title: &str,
        service: &str,
        symptom: &str,
        tags: &str,
    ) -> Result<Opening, Vec<FieldError>> {
        let mut errors = Vec::new();
        let title = title.trim();
        if title.is_empty() || title.chars().count() > 200 {
            errors.push(FieldError::new(
                "title",
                "Give the investigation a title of 1–200 characters, e.g. \"p95 TTFT doubled after the template deploy\"",
            ));
        }
        let service = service.trim();
        if service.chars().count() > 100 {
            errors.push(FieldError::new(
                "service",
                "A service name has at most 100 characters",
            ));
        }
        let mut list: Vec<String> = Vec::new();
        for tag in tags
            .split(',')
            .map(|t| t.trim().to_lowercase())
            .filter(|t| !t.is_empty())
        {
            let ok = tag.chars().count() <= 40
                && tag
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'));
            if !ok {
                errors.push(FieldError::new(
                    "tags",
                    format!("'{tag}' is not a tag: use up to 40 letters, digits, '-', '_', '.', ':' or '/', separated by commas"),
                ));
            } else if !list.contains(&tag) {
                list.push(tag);
            }
        }
        if list.len() > 12 {
            errors.push(FieldError::new("tags", "At most 12 tags"));
        }
        if errors.is_empty() {
            Ok(Opening {
                title: title.to_string(),
                service: service.to_string(),
                symptom: symptom.trim().to_string(),
                tags: list,
            })
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Pairs {
        Pairs::new(
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn config() -> FrozenConfig {
        let StepRecord::Reproduce(c) = parse_step(
            0,
            &pairs(&[
                ("reproducible", "yes"),
                ("model", "llama-3.1-8b"),
                ("gpu_type", "h100-sxm"),
                ("tp", "1"),
                ("concurrency", "64"),
                ("chunked_prefill", "off"),
                ("max_num_batched_tokens", "8192"),
            ]),
        )
        .unwrap() else {
            unreachable!()
        };
        c
    }

    #[test]
    fn step0_needs_an_answer() {
        let errors = parse_step(0, &pairs(&[("model", "x")])).unwrap_err();
        assert_eq!(errors[0].field, "reproducible");
        let errors = parse_step(0, &pairs(&[("reproducible", "yes"), ("tp", "two")])).unwrap_err();
        assert_eq!(errors[0].field, "tp");
        assert_eq!(config().tp, Some(1));
    }

    #[test]
    fn step1_refuses_words() {
        let errors = parse_step(
            1,
            &pairs(&[
                ("metric", "ttft"),
                ("percentile", "p95"),
                ("observed", "slow"),
                ("target", "800"),
            ]),
        )
        .unwrap_err();
        assert_eq!(errors[0].field, "observed");
        let StepRecord::Metric(m) = parse_step(
            1,
            &pairs(&[
                ("metric", "ttft"),
                ("percentile", "p95"),
                ("observed", "3200"),
                ("target", "800"),
            ]),
        )
        .unwrap() else {
            unreachable!()
        };
        assert_eq!(m.gap_ratio(), 4.0);
    }

    #[test]
    fn step2_rows_by_phase_and_errors_named_by_phase() {
        let table = match parse_step(
            2,
            &pairs(&[
                ("queue_wait.p50", "900"),
                ("queue_wait.p95", "2300"),
                ("queue_wait.p99", "2900"),
                ("prefill.p50", "100"),
                ("prefill.p95", "180"),
                ("prefill.p99", "220"),
            ]),
        ) {
            Ok(StepRecord::Phases(t)) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(table.rows.len(), 2);
        let errors = parse_step(
            2,
            &pairs(&[
                ("prefill.p50", "300"),
                ("prefill.p95", "200"),
                ("prefill.p99", "400"),
            ]),
        )
        .unwrap_err();
        assert_eq!(errors[0].field, "prefill.p50");
        let errors = parse_step(2, &pairs(&[("decode.p50", "1")])).unwrap_err();
        assert!(errors.iter().any(|e| e.field == "decode.p95"));
        assert_eq!(parse_step(2, &pairs(&[])).unwrap_err()[0].field, "phases");
    }

    #[test]
    fn table_errors_keep_the_submitted_row_index() {
        let errors = parse_step(
            6,
            &pairs(&[
                ("candidates[2].description", "fuse rmsnorm"),
                ("candidates[2].share", "1.5"),
                ("candidates[2].speedup", "3"),
                ("candidates[2].effort_days", "2"),
            ]),
        )
        .unwrap_err();
        assert_eq!(errors[0].field, "candidates[2].share");
        let errors = parse_step(
            5,
            &pairs(&[("kernels[1].name", "gemm"), ("kernels[1].share", "2")]),
        )
        .unwrap_err();
        assert_eq!(errors[0].field, "kernels[1].share");
    }

    #[test]
    fn evaluation_of_a_full_walk() {
        let mut r = Records {
            reproduce: Some(config()),
            ..Records::default()
        };
        for (step, list) in [
            (
                1u8,
                vec![
                    ("metric", "itl"),
                    ("percentile", "p50"),
                    ("observed", "24"),
                    ("target", "16"),
                ],
            ),
            (
                2,
                vec![
                    ("decode.p50", "24"),
                    ("decode.p95", "30"),
                    ("decode.p99", "40"),
                ],
            ),
            (
                3,
                vec![("gpu_total", "95"), ("cpu_total", "20"), ("wall", "100")],
            ),
            (
                4,
                vec![
                    ("kernels[0].name", "paged_attention"),
                    ("kernels[0].sm_pct", "20"),
                    ("kernels[0].dram_pct", "85"),
                    ("decode.measured_ms", "24"),
                    ("decode.batch", "64"),
                    ("decode.context", "4096"),
                ],
            ),
            (
                5,
                vec![
                    ("kernels[0].name", "paged_attention"),
                    ("kernels[0].share", "60%"),
                    ("kernels[1].name", "gemm"),
                    ("kernels[1].share", "0.3"),
                ],
            ),
            (
                6,
                vec![
                    ("candidates[0].description", "CUDA graphs"),
                    ("candidates[0].share", "0.4"),
                    ("candidates[0].speedup", "2"),
                    ("candidates[0].effort_days", "1"),
                    ("candidates[1].description", "faster rmsnorm"),
                    ("candidates[1].share", "3%"),
                    ("candidates[1].speedup", "3"),
                    ("candidates[1].effort_days", "2"),
                ],
            ),
            (
                7,
                vec![
                    ("change", "chunked prefill"),
                    ("after_config.model", "llama-3.1-8b"),
                    ("after_config.gpu_type", "h100-sxm"),
                    ("after_config.tp", "1"),
                    ("after_config.concurrency", "64"),
                    ("after_config.chunked_prefill", "on"),
                    ("after_config.max_num_batched_tokens", "4096"),
                    ("after_value", "17"),
                    ("verdict", "confirmed"),
                    ("quality", "200 paired generations identical"),
                ],
            ),
        ] {
            r.set(
                parse_step_in(step, &pairs(&list), &r).unwrap_or_else(|e| panic!("{step}: {e:?}")),
            );
        }
        assert_eq!(r.done_steps(), (0..8).collect::<Vec<u8>>());
        let e = evaluate(&r);
        assert_eq!(e.metric.as_ref().unwrap().gap_ratio, 1.5);
        let p = e.phases.as_ref().unwrap();
        assert_eq!(p.dominant_phase, "decode");
        assert_eq!(
            p.estimator_href.as_deref(),
            Some(
                "/estimators/decode-floor?batch=64&gpu=h100-sxm&measured_itl_ms=24\
                 &model=llama-3.1-8b&tp=1"
            ),
            "step 2 passes the measured ITL it holds"
        );
        // A p99 ITL metric: the decode p50 of step 2 is the measured step, not the p99.
        let mut tail = r.clone();
        tail.metric = Some(MetricTarget {
            percentile: Some(crate::metric::Percentile::P99),
            observed: 140.0,
            ..r.metric.unwrap()
        });
        assert_eq!(observed_itl_ms(&tail), Some(24.0));
        let href = evaluate(&tail).phases.unwrap().tail_estimator_href.unwrap();
        assert!(href.starts_with("/estimators/periodic-tail?"), "{href}");
        assert!(href.contains("plain_step_ms=24"), "{href}");
        assert!(
            e.phases.as_ref().unwrap().tail_estimator_href.is_none(),
            "a p50 metric has no tail"
        );
        tail.phases = None;
        assert_eq!(observed_itl_ms(&tail), None, "a p99 is no plain step");
        tail.metric = r.metric;
        assert_eq!(observed_itl_ms(&tail), Some(24.0), "step 1's median");
        assert_eq!(e.resources.as_ref().unwrap().slug(), "gpu_bound");
        let reg = e.regime.as_ref().unwrap();
        assert_eq!(reg.kernels[0].regime, Regime::MemoryBound);
        let d = reg.decode.as_ref().unwrap();
        assert!((d.floor_ms - 15.05).abs() < 0.01, "{}", d.floor_ms);
        assert_eq!(d.floor_source, "estimate");
        assert_eq!(e.kernels.as_ref().unwrap()[0].name, "paged_attention");
        let fixes = e.fixes.as_ref().unwrap();
        assert_eq!(fixes[0].candidate.description, "CUDA graphs");
        assert!(fixes[1].warning.is_some());
        let c = e.change.as_ref().unwrap();
        // The token budget changed too but "chunked prefill" names one field only.
        assert!(!c.check.as_ref().unwrap().ok);
        assert_eq!(c.verdict, Some(Verdict::InvalidComparison));
        assert_eq!(e.step_json(3)["classification"], "gpu_bound");
        assert_eq!(e.step_json(1)["gap_ratio"], 1.5);

        let entry = draft_entry(&r, &e, "2026-11-29");
        assert!(entry.symptom.starts_with("p50 ITL 24"), "{}", entry.symptom);
        assert!(entry.diagnosis.contains("Decode"), "{}", entry.diagnosis);
        assert_eq!(entry.change, "chunked prefill");
        assert!(
            entry.result.contains("invalid comparison"),
            "{}",
            entry.result
        );
    }

    #[test]
    fn a_declared_single_change_passes() {
        let before = config();
        let mut r = Records {
            reproduce: Some(before),
            ..Records::default()
        };
        r.set(
            parse_step(
                7,
                &pairs(&[
                    ("change", "chunked prefill"),
                    ("after_config.reproducible", "yes"),
                    ("after_config.model", "llama-3.1-8b"),
                    ("after_config.gpu_type", "h100-sxm"),
                    ("after_config.tp", "1"),
                    ("after_config.concurrency", "64"),
                    ("after_config.chunked_prefill", "on"),
                    ("after_config.max_num_batched_tokens", "8192"),
                    ("after_value", "700"),
                    ("verdict", "improved"),
                    ("quality", "identical"),
                ]),
            )
            .unwrap(),
        );
        let c = evaluate(&r).change.unwrap();
        assert!(c.check.unwrap().ok);
        assert_eq!(c.verdict, Some(Verdict::Improved));
    }

    #[test]
    fn records_round_trip_through_json() {
        let rec = StepRecord::Reproduce(config());
        assert_eq!(StepRecord::from_json(0, rec.to_json()), Some(rec));
        assert!(StepRecord::from_json(3, serde_json::json!({"wall": "x"})).is_none());
        assert!(matches!(parse_step(9, &Pairs::default()), Err(e) if e[0].field == "step"));
    }

    #[test]
    fn stored_records_flatten_back_into_the_form() {
        let phases = pairs(&[
            ("prefill.p50", "100"),
            ("prefill.p95", "180"),
            ("prefill.p99", "220"),
            ("itl_p50.p50", "22.1"),
            ("itl_p50.p99", "25"),
            ("tpot.p50", "23 ms"),
            ("tpot.source", "4"),
        ]);
        let record = parse_step(2, &phases).unwrap();
        let again = step_pairs(2, &record.to_json());
        assert_eq!(again.get("prefill.p95"), Some("180"));
        assert_eq!(again.get("itl_p50.p50"), Some("22.1"));
        assert_eq!(parse_step(2, &again).unwrap(), record);
        let StepRecord::Phases(t) = &record else {
            unreachable!()
        };
        assert_eq!(t.steps.len(), 2);
        // A per-token figure alone is a step-2 record; a bad one names its field.
        assert!(parse_step(2, &pairs(&[("itl_p50.p50", "22")])).is_ok());
        let errors = parse_step(2, &pairs(&[("itl_p99.p99", "fast")])).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"itl_p99.p99"), "{fields:?}");
        let change = pairs(&[
            ("change", "tp"),
            ("after_config.tp", "2"),
            ("after_value", "10"),
            ("quality", "same"),
        ]);
        let record = parse_step(7, &change).unwrap();
        assert_eq!(
            parse_step(7, &step_pairs(7, &record.to_json())).unwrap(),
            record
        );
    }

    #[test]
    fn openings_are_checked() {
        let o = Opening::parse(" Slow TTFT ", "chat", "p95 doubled", "vLLM, ttft, ttft").unwrap();
        assert_eq!(o.title, "Slow TTFT");
        assert_eq!(o.tags, ["vllm", "ttft"]);
        let errors = Opening::parse("", "", "", "bad tag!").unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["title", "tags"]);
    }

    #[test]
    fn observed_values_per_step() {
        let mut r = Records::default();
        assert_eq!(observed_at(1, &r), None);
        r.set(
            parse_step(
                4,
                &pairs(&[("decode.measured_ms", "24"), ("decode.floor_ms", "15")]),
            )
            .unwrap(),
        );
        assert_eq!(observed_at(4, &r), Some(Quantity::new(24.0, Unit::Ms)));
        let d = evaluate(&r).regime.unwrap().decode.unwrap();
        assert_eq!(d.floor_source, "entered");
        assert_eq!(d.band.band, crate::method::Band::Overhead);
        assert_eq!(d.band.against, crate::method::Against::FloorOnly);
    }

    #[test]
    fn every_amount_field_reads_units_the_same_way() {
        let StepRecord::Resources(r) = parse_step(
            3,
            &pairs(&[
                ("gpu_total", "620 ms"),
                ("cpu_total", "0.4 s"),
                ("wall", "3,200"),
            ]),
        )
        .unwrap() else {
            panic!("step 3")
        };
        assert_eq!(
            (r.gpu_total, r.cpu_total, r.wall),
            (620.0, Some(400.0), 3200.0)
        );
        // p50 plus any one of p90/p95/p99 is a phase row.
        let StepRecord::Phases(t) = parse_step(
            2,
            &pairs(&[("queue_wait.p50", "1.9 s"), ("queue_wait.p90", "2,700 ms")]),
        )
        .unwrap() else {
            panic!("step 2")
        };
        assert_eq!(t.rows[0].p50, 1900.0);
        assert_eq!((t.rows[0].p90, t.rows[0].p95), (Some(2700.0), None));
        let errors = parse_step(2, &pairs(&[("prefill.p50", "180")])).unwrap_err();
        assert_eq!(errors[0].field, "prefill.p95");
        // A ratio where a time belongs is refused naming both units.
        let errors = parse_step(
            4,
            &pairs(&[("decode.measured_ms", "46%"), ("decode.floor_ms", "15")]),
        )
        .unwrap_err();
        assert!(errors[0].message.contains("a ratio in %"), "{errors:?}");
        assert!(errors[0].message.contains("a time"), "{errors:?}");
        // Step 7 reads the value after the change in step 1's unit.
        let mut earlier = Records::default();
        earlier.set(
            parse_step(
                1,
                &pairs(&[
                    ("metric", "ttft"),
                    ("percentile", "p95"),
                    ("observed", "3.2 s"),
                    ("target", "800 ms"),
                ]),
            )
            .unwrap(),
        );
        let change = [
            ("change", "chunked prefill"),
            ("after_value", "0.78 s"),
            ("quality", "identical"),
        ];
        let StepRecord::Change(c) = parse_step_in(7, &pairs(&change), &earlier).unwrap() else {
            panic!("step 7")
        };
        assert_eq!(c.after_value, 780.0);
    }

    /// Step 7 records a second metric the change moved, and the draft RESULT carries it
    /// with its direction; a half-filled trade-off is refused naming the fields.
    #[test]
    fn step_seven_records_the_trade_off_and_the_draft_reports_it() {
        let mut r = Records::default();
        r.set(
            parse_step(
                1,
                &pairs(&[
                    ("metric", "itl"),
                    ("percentile", "p99"),
                    ("observed", "140"),
                    ("target", "60"),
                ]),
            )
            .unwrap(),
        );
        let step7 = [
            ("change", "max_num_batched_tokens 2048"),
            ("after_value", "55"),
            ("quality", "identical"),
            ("tradeoff.metric", "ttft"),
            ("tradeoff.percentile", "p95"),
            ("tradeoff.before", "1.9 s"),
            ("tradeoff.after", "2.6 s"),
            ("tradeoff.scope", "prompts over 16k tokens"),
        ];
        let record = parse_step_in(7, &pairs(&step7), &r).unwrap();
        let StepRecord::Change(c) = &record else {
            panic!("step 7")
        };
        let t = c.tradeoff.as_ref().unwrap();
        assert_eq!((t.before.value, t.after.value), (1900.0, 2600.0));
        r.set(record);
        let entry = draft_entry(&r, &evaluate(&r), "2026-12-02");
        assert!(
            entry.result.contains(
                "trade-off: p95 TTFT (prompts over 16k tokens) 1,900 ms → 2,600 ms (+36.8%, worse)"
            ),
            "{}",
            entry.result
        );
        // The stored record gives back the form's fields (an edit keeps the trade-off).
        let saved = r.change.as_ref().unwrap();
        let form = step_pairs(7, &serde_json::to_value(saved).unwrap());
        assert_eq!(form.get("tradeoff.metric"), Some("ttft"));
        assert_eq!(form.get("tradeoff.before"), Some("1900"));
        assert_eq!(form.get("tradeoff.scope"), Some("prompts over 16k tokens"));
        // Old step 7 records (no trade-off) still read.
        let old: ChangeStep =
            serde_json::from_value(serde_json::json!({"change": "x", "after_value": 5})).unwrap();
        assert_eq!(old.tradeoff, None);
        // Half a trade-off: each missing part named.
        let half = [
            ("change", "x"),
            ("after_value", "55"),
            ("quality", "identical"),
            ("tradeoff.metric", "ttft"),
            ("tradeoff.after", "2.6 s"),
        ];
        let errors = parse_step_in(7, &pairs(&half), &r).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["tradeoff.percentile", "tradeoff.before"],
            "{errors:?}"
        );
        let no_before = [
            ("change", "x"),
            ("after_value", "55"),
            ("quality", "identical"),
            ("tradeoff.metric", "ttft"),
            ("tradeoff.percentile", "p95"),
            ("tradeoff.after", "5 tokens"),
        ];
        let errors = parse_step_in(7, &pairs(&no_before), &r).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tradeoff.before", "tradeoff.after"], "{errors:?}");
    }

    #[test]
    fn a_linked_comparison_never_replaces_step_seven() {
        let m = |verdict, invalid| Measured {
            verdict,
            invalid,
            result: "Inconclusive: p95 TTFT 64.3 ms to 64.3 ms",
        };
        let step7 = Some((
            "p95 TTFT 3,200 ms → 780 ms (confirmed)",
            Some(Verdict::Confirmed),
        ));
        assert_eq!(
            reconcile_result(None, m(Verdict::Inconclusive, false)),
            "Inconclusive: p95 TTFT 64.3 ms to 64.3 ms"
        );
        let both = reconcile_result(step7, m(Verdict::Inconclusive, false));
        assert!(both.starts_with("Two results disagree"), "{both}");
        assert!(
            both.contains("Recorded in step 7: p95 TTFT 3,200 ms → 780 ms"),
            "{both}"
        );
        assert!(
            both.contains("Measured by the linked comparison: Inconclusive"),
            "{both}"
        );
        let kept = reconcile_result(step7, m(Verdict::InvalidComparison, true));
        assert!(kept.starts_with("p95 TTFT 3,200 ms → 780 ms"), "{kept}");
        let agree = reconcile_result(step7, m(Verdict::Confirmed, false));
        assert!(agree.contains("\n\nMeasured: Inconclusive"), "{agree}");
    }
}
