//! A step as one document: its record, what was computed from it, its observed and
//! expected values. The API's investigation and the replays (API and pages) show it.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::method::expected::Expected;
use crate::core::method::order::STEPS;
use crate::core::method::record::observed_at;
use crate::investigations::{Loaded, StepState};

/// An estimate attached to a step as its expected value.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ExpectedJson {
    pub estimator: String,
    #[schema(value_type = Object)]
    pub inputs: serde_json::Value,
    pub result_key: String,
    pub expected: f64,
    pub unit: String,
    pub observed: Option<f64>,
    /// observed / expected: the gap to explain (absent when the two are of
    /// different dimensions).
    pub ratio: Option<f64>,
    /// Why there is no ratio: an expected value of another dimension than the
    /// observed one, attached before units were checked.
    pub unit_problem: Option<String>,
}

impl ExpectedJson {
    pub fn new(e: &Expected, step_unit: Option<crate::core::quantity::Unit>) -> Self {
        ExpectedJson {
            estimator: e.estimator.clone(),
            inputs: serde_json::to_value(&e.inputs).unwrap_or_default(),
            result_key: e.result_key.clone(),
            expected: e.expected,
            unit: e.unit.clone(),
            observed: e.observed,
            ratio: e.ratio(step_unit).ok().flatten(),
            unit_problem: e.unit_problem(step_unit),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct StepJson {
    pub number: u8,
    pub slug: &'static str,
    pub title: &'static str,
    /// done, skipped or not_started
    pub state: &'static str,
    /// Why skipping this step matters, when a later step was opened first.
    pub skip_reason: Option<String>,
    pub recorded_by: Option<String>,
    pub recorded_at: Option<DateTime<Utc>>,
    /// Bumped by every save (0 until recorded); a save may name it as `version`.
    pub version: i32,
    /// The step's record as stored (null until recorded).
    #[schema(value_type = Option<Object>)]
    pub data: serde_json::Value,
    /// What the app computed: step 1 `gap_ratio`, step 2 `dominant_phase` and next
    /// checks, step 3 `classification`, step 4 regimes and decode band, step 5 ranked
    /// kernels, step 6 ranked Amdahl ceilings, step 7 the configuration diff and verdict.
    #[schema(value_type = Value)]
    pub results: serde_json::Value,
    /// The value this step observes, with its unit and dimension (steps 1, 4 and 7):
    /// an expected value must be of the same dimension.
    #[schema(value_type = Option<Object>)]
    pub observed: Option<ObservedJson>,
    pub expected: Option<ExpectedJson>,
}

/// A step's observed value: `{"value": 21.0, "unit": "ms", "dimension": "time"}`.
#[derive(Serialize)]
pub struct ObservedJson {
    pub value: f64,
    pub unit: crate::core::quantity::Unit,
    pub dimension: crate::core::quantity::Dimension,
}

pub fn step_json(loaded: &Loaded, n: u8, state: StepState) -> StepJson {
    let info = STEPS[n as usize];
    let data = match n {
        0 => serde_json::to_value(&loaded.records.reproduce),
        1 => serde_json::to_value(loaded.records.metric),
        2 => serde_json::to_value(&loaded.records.phases),
        3 => serde_json::to_value(loaded.records.resources),
        4 => serde_json::to_value(&loaded.records.regime),
        5 => serde_json::to_value(&loaded.records.kernels),
        6 => serde_json::to_value(&loaded.records.fixes),
        _ => serde_json::to_value(&loaded.records.change),
    }
    .unwrap_or_default();
    let recorded = loaded.recorded[n as usize].as_ref();
    StepJson {
        number: n,
        slug: info.slug,
        title: info.title,
        state: state.slug(),
        skip_reason: match state {
            StepState::Skipped { reason } => Some(reason),
            _ => None,
        },
        recorded_by: recorded.map(|r| r.by.clone()),
        recorded_at: recorded.map(|r| r.at),
        version: recorded.map_or(0, |r| r.version),
        data,
        results: loaded.evaluation.step_json(n),
        observed: observed_at(n, &loaded.records).map(|q| ObservedJson {
            value: q.value,
            unit: q.unit,
            dimension: q.dimension(),
        }),
        expected: loaded
            .expected_at(n)
            .map(|e| ExpectedJson::new(e, loaded.observed_unit(n))),
    }
}
