//! Expected versus observed: an estimate attached to a step is the value the symptom
//! *should* have had; observed / expected is the gap the investigation must explain.

use serde::{Deserialize, Serialize};

use super::FieldError;
use crate::core::estimate::{self, Chain, EstimateError, Inputs};

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
    /// `observed / expected`: 1 means the estimate explains the measurement; 1.6 means
    /// 60% of the observed value is still unexplained.
    pub fn ratio(&self) -> Option<f64> {
        self.observed
            .filter(|_| self.expected != 0.0)
            .map(|o| o / self.expected)
    }
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

/// Runs the estimator and picks `result_key` (or the headline result when blank).
pub fn attach(
    estimator_name: &str,
    inputs: Inputs,
    result_key: &str,
    observed: Option<f64>,
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
    let key = match result_key.trim() {
        "" => headline(&chain).map(str::to_string),
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
    if let Some(o) = observed.filter(|o| !(o.is_finite() && *o > 0.0)) {
        return Err(vec![FieldError::new(
            "observed",
            format!("The observed value must be greater than 0, got {o}"),
        )]);
    }
    let unit = chain
        .lines
        .iter()
        .find(|l| l.key == key)
        .map(|l| l.unit.clone())
        .unwrap_or_else(|| unit_from_key(&key).to_string());
    Ok(Expected {
        estimator: estimator_name.to_string(),
        inputs,
        result_key: key,
        expected: value,
        unit,
        observed,
    })
}

/// Result keys name their unit by suffix (`floor_ms`, `*_bytes*`).
fn unit_from_key(key: &str) -> &'static str {
    if key.ends_with("_ms") {
        "ms"
    } else if key.contains("bytes") {
        "B"
    } else {
        ""
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
        let e = attach("decode-floor", inputs.clone(), "floor_ms", Some(24.0)).unwrap();
        assert!((e.expected - 15.05).abs() < 0.01);
        assert_eq!(e.unit, "ms");
        assert!((e.ratio().unwrap() - 1.595).abs() < 0.01);
        let e = attach("decode-floor", inputs.clone(), "", None).unwrap();
        assert_eq!(e.result_key, "floor_ms");
        assert_eq!(e.ratio(), None);
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
}
