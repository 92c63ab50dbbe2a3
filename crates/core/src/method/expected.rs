//! Expected versus observed: an estimate attached to a step is the value the symptom
//! *should* have had; observed / expected is the gap the investigation must explain.

use serde::{Deserialize, Serialize};

use super::FieldError;
use crate::estimate::{self, result_unit, Chain, EstimateError, Inputs};
use crate::quantity::Unit;

/// An estimate kept as a step's expected value: enough to rerun it (name + inputs) and
/// the one result chosen from its chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    pub estimator: String,
    pub inputs: Inputs,
    pub result_key: String,
    pub expected: f64,
    pub unit: String,
    pub observed: Option<f64>,
}

impl Expected {
    /// The unit of the chosen result, from its key (`floor_ms` → ms,
    /// `floor_over_measured` → a plain ratio). Records stored before units were
    /// checked get theirs the same way.
    pub fn result_unit(&self) -> Option<Unit> {
        result_unit(&self.result_key)
    }

    /// `observed / expected` when the two can be compared: 1 means the estimate
    /// explains the measurement; 1.6 means 60% of the observed value is still
    /// unexplained. `step_unit` is the unit of the value the step observes (`None`
    /// when the step has none). An expected value of another dimension than the
    /// observed one (attached before units were checked) gives an error saying so,
    /// and no ratio.
    pub fn ratio(&self, step_unit: Option<Unit>) -> Result<Option<f64>, String> {
        if let Some(problem) = self.unit_problem(step_unit) {
            return Err(problem);
        }
        Ok(self
            .observed
            .filter(|_| self.expected != 0.0)
            .map(|o| o / self.expected))
    }

    /// Why observed and expected cannot be compared, if they cannot.
    pub fn unit_problem(&self, step_unit: Option<Unit>) -> Option<String> {
        let observed = step_unit.filter(|_| self.observed.is_some())?;
        let result = self.result_unit();
        if result.map(Unit::dimension) == Some(observed.dimension()) {
            return None;
        }
        Some(format!(
            "{} is {}, but the step observes {} in {}: the two cannot be compared (attached before units were checked; attach a result in {} instead)",
            self.result_key,
            result.map_or("of unknown unit".to_string(), |u| format!("{} in {}", u.dimension().phrase(), u.name())),
            observed.dimension().phrase(),
            observed.name(),
            observed.slug(),
        ))
    }
}

/// The observed side of an attachment: the value, and the unit it is in (typed, or
/// the unit of the step's own observed value; `None` means "in the result's unit").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observed {
    pub value: f64,
    pub unit: Option<Unit>,
}

/// Reads estimator inputs from what a person pastes: an estimator page link
/// (`/estimators/decode-floor?model=…&batch=64`, with or without scheme and host), a
/// bare query string, or `key=value` words and lines. Returns the estimator name when
/// the link carries it.
pub fn parse_inputs(text: &str) -> Result<(Option<String>, Inputs), FieldError> {
    let text = text.trim();
    let (name, query) = match text.find("/estimators/") {
        Some(at) => {
            let rest = &text[at + "/estimators/".len()..];
            let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
            (Some(name.trim_end_matches('/').to_string()), query)
        }
        None => (None, text.trim_start_matches('?')),
    };
    let pairs: Vec<(String, String)> = if query.contains('&') || name.is_some() {
        serde_urlencoded::from_str(query)
            .map_err(|_| FieldError::new("inputs", "The link's query string could not be read"))?
    } else {
        query
            .split_whitespace()
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        FieldError::new(
                            "inputs",
                            format!(
                                "'{w}' is not key=value (e.g. batch=64), nor an estimator link"
                            ),
                        )
                    })
            })
            .collect::<Result<_, _>>()?
    };
    Ok((name.filter(|n| !n.is_empty()), pairs.into_iter().collect()))
}

/// The result a chain is usually read for: the last derived line that is also a
/// numeric result (the estimators build up to their headline number).
fn headline(chain: &Chain) -> Option<&str> {
    chain
        .lines
        .iter()
        .rev()
        .find(|l| {
            chain
                .results
                .get(&l.key)
                .is_some_and(|v| v.is_f64() || v.is_u64() || v.is_i64())
        })
        .map(|l| l.key.as_str())
}

/// Runs the estimator and picks `result_key`. When it is blank: the headline result
/// if it is in the observed value's dimension, else the last result that is (on step
/// 4's decode step, decode-floor's `expected_ms`, never the ratio `floor_over_measured`).
/// A result of another dimension than the observed value is refused naming both
/// units; the observed value is converted into the result's unit.
pub fn attach(
    estimator_name: &str,
    inputs: Inputs,
    result_key: &str,
    observed: Option<Observed>,
) -> Result<Expected, Vec<FieldError>> {
    let chain = match estimate::run(estimator_name, &inputs) {
        Ok(c) => c,
        Err(EstimateError::UnknownEstimator(n)) => {
            let known: Vec<&str> = estimate::registry().iter().map(|e| e.name).collect();
            return Err(vec![FieldError::new(
                "estimator",
                format!(
                    "There is no estimator '{n}'; choose one of {}",
                    known.join(", ")
                ),
            )]);
        }
        Err(EstimateError::Invalid(errors)) => {
            return Err(errors
                .into_iter()
                .map(|e| FieldError::new("inputs", format!("{}: {}", e.field, e.message)))
                .collect())
        }
    };
    let wanted = observed.and_then(|o| o.unit).map(Unit::dimension);
    let key = match result_key.trim() {
        "" => default_result(&chain, wanted).map(str::to_string),
        k => Some(k.to_string()),
    };
    let numeric: Vec<&str> = chain
        .results
        .iter()
        .filter(|(_, v)| v.as_f64().is_some())
        .map(|(k, _)| k.as_str())
        .collect();
    let Some((key, value)) = key.and_then(|k| {
        let v = chain.results.get(&k)?.as_f64()?;
        Some((k, v))
    }) else {
        return Err(vec![FieldError::new(
            "result_key",
            format!(
                "Choose a numeric result of {estimator_name}: {}",
                numeric.join(", ")
            ),
        )]);
    };
    if let Some(o) = observed.filter(|o| !(o.value.is_finite() && o.value > 0.0)) {
        return Err(vec![FieldError::new(
            "observed",
            format!("The observed value must be greater than 0, got {}", o.value),
        )]);
    }
    let Some(unit) = chain.units.get(&key).copied() else {
        return Err(vec![FieldError::new(
            "result_key",
            format!("{key} has no unit, so it cannot be compared with a measurement"),
        )]);
    };
    let observed = match observed {
        None => None,
        Some(Observed { value, unit: None }) => Some(value),
        Some(Observed {
            value,
            unit: Some(from),
        }) => Some(from.convert(value, unit).ok_or_else(|| {
            let same: Vec<&str> = chain
                .units
                .iter()
                .filter(|(k, u)| u.dimension() == from.dimension() && numeric.contains(&k.as_str()))
                .map(|(k, _)| k.as_str())
                .collect();
            let instead = if same.is_empty() {
                format!(
                    "{estimator_name} has no result in {}",
                    from.dimension().examples()
                )
            } else {
                format!("choose {}", same.join(" or "))
            };
            vec![FieldError::new(
                "result_key",
                format!(
                    "{key} is {} in {}, but the observed value is {} in {}: {instead}",
                    unit.dimension().phrase(),
                    unit.name(),
                    from.dimension().phrase(),
                    from.name(),
                ),
            )]
        })?),
    };
    Ok(Expected {
        estimator: estimator_name.to_string(),
        inputs,
        result_key: key,
        expected: value,
        unit: unit.slug().to_string(),
        observed,
    })
}

/// The headline result if it has the wanted dimension (or none is wanted), else the
/// last derived result that has it.
fn default_result(chain: &Chain, wanted: Option<crate::quantity::Dimension>) -> Option<&str> {
    let fits =
        |k: &str| wanted.is_none_or(|d| chain.units.get(k).is_some_and(|u| u.dimension() == d));
    match headline(chain) {
        Some(h) if fits(h) => Some(h),
        _ => chain
            .lines
            .iter()
            .rev()
            .map(|l| l.key.as_str())
            .find(|k| chain.results.get(*k).is_some_and(|v| v.is_number()) && fits(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_words_both_read() {
        let (name, inputs) =
            parse_inputs("http://x/estimators/decode-floor?model=llama-3.1-8b&batch=64").unwrap();
        assert_eq!(name.as_deref(), Some("decode-floor"));
        assert_eq!(inputs["batch"], "64");
        let (name, inputs) = parse_inputs("batch=64 context=4096").unwrap();
        assert_eq!(name, None);
        assert_eq!(inputs["context"], "4096");
        assert_eq!(parse_inputs("batch 64").unwrap_err().field, "inputs");
    }

    #[test]
    fn attaching_picks_the_chosen_or_headline_result() {
        let (_, inputs) =
            parse_inputs("model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096").unwrap();
        let ms = |v| {
            Some(Observed {
                value: v,
                unit: Some(Unit::Ms),
            })
        };
        let e = attach("decode-floor", inputs.clone(), "floor_ms", ms(24.0)).unwrap();
        assert!((e.expected - 15.05).abs() < 0.01);
        assert_eq!(e.unit, "ms");
        assert!((e.ratio(Some(Unit::Ms)).unwrap().unwrap() - 1.595).abs() < 0.01);
        let e = attach("decode-floor", inputs.clone(), "", None).unwrap();
        assert_eq!(e.result_key, "expected_ms");
        assert_eq!(e.ratio(None), Ok(None));
        let errors = attach("decode-floor", inputs.clone(), "nope", None).unwrap_err();
        assert_eq!(errors[0].field, "result_key");
        assert!(errors[0].message.contains("floor_ms"));
        assert_eq!(
            attach("nope", inputs, "", None).unwrap_err()[0].field,
            "estimator"
        );
        let errors = attach("decode-floor", Inputs::new(), "", None).unwrap_err();
        assert!(errors.iter().all(|e| e.field == "inputs"));
    }

    #[test]
    fn only_a_result_of_the_observed_dimension_is_an_expected_value() {
        let (_, inputs) = parse_inputs(
            "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 measured_itl_ms=21",
        )
        .unwrap();
        let observed = |value, unit| Some(Observed { value, unit });
        // Blank result: the time that matches the observed time, not the headline ratio.
        let e = attach(
            "decode-floor",
            inputs.clone(),
            "",
            observed(21.0, Some(Unit::Ms)),
        )
        .unwrap();
        assert_eq!(e.result_key, "expected_ms");
        // Seconds typed on the observed side are converted into the result's ms.
        let e = attach(
            "decode-floor",
            inputs.clone(),
            "floor_ms",
            observed(0.021, Some(Unit::S)),
        )
        .unwrap();
        assert!((e.observed.unwrap() - 21.0).abs() < 1e-9);
        // A ratio against a time is refused, naming both units and what fits.
        let errors = attach(
            "decode-floor",
            inputs.clone(),
            "floor_over_measured",
            observed(21.0, Some(Unit::Ms)),
        )
        .unwrap_err();
        assert_eq!(errors[0].field, "result_key");
        let m = &errors[0].message;
        assert!(
            m.contains("a plain ratio") && m.contains("a time in ms"),
            "{m}"
        );
        assert!(m.contains("floor_ms"), "{m}");
        // An old record made under the old rules: flagged, no ratio.
        let old = Expected {
            estimator: "decode-floor".into(),
            inputs,
            result_key: "floor_over_measured".into(),
            expected: 0.4555,
            unit: String::new(),
            observed: Some(21.0),
        };
        let problem = old.ratio(Some(Unit::Ms)).unwrap_err();
        assert!(
            problem.contains("attached before units were checked"),
            "{problem}"
        );
    }
}
