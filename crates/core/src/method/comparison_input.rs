//! A comparison's input: one parse from the API's JSON or the page's form into a typed
//! [`NewComparison`]. Both adapters read into one draft, and [`Draft::check`] is the one
//! validator, so both paths check exactly the same things; each problem is a
//! [`FieldError`] naming the field as that input spells it.

use serde_json::Value;

use super::comparison::{Prediction, Series};
use super::FrozenConfig;
use crate::metric::Percentile;
use crate::FieldError;

/// A comparison as asked for, checked field by field.
#[derive(Debug, Clone)]
pub struct NewComparison {
    pub baseline: Vec<i64>,
    pub candidate: Vec<i64>,
    pub variable: String,
    pub investigation: Option<i64>,
    pub cause_proven: bool,
    pub metric: Series,
    pub percentile: Percentile,
    pub baseline_config: Option<FrozenConfig>,
    pub candidate_config: Option<FrozenConfig>,
    pub prediction: Option<Prediction>,
    /// The smallest relative change (percent) worth a verdict; `None`: the
    /// investigation's setting, or [`super::verdict::DEFAULT_MIN_EFFECT_PCT`].
    pub min_effect_pct: Option<f64>,
}

/// The largest minimum effect accepted (percent).
pub const MAX_MIN_EFFECT_PCT: f64 = 100.0;

fn min_effect(raw: Option<&str>, errors: &mut Vec<FieldError>) -> Option<f64> {
    let raw = raw.map(str::trim).filter(|s| !s.is_empty())?;
    let parsed = crate::quantity::read(raw, crate::quantity::Unit::Percent).ok();
    match parsed {
        Some(v) if v.is_finite() && (0.0..=MAX_MIN_EFFECT_PCT).contains(&v) => Some(v),
        _ => {
            errors.push(FieldError::new(
                "min_effect_pct",
                format!(
                    "{raw:?} is not a minimum effect: the smallest change worth a verdict, in percent of the before value, from 0 to 100 (e.g. 2)"
                ),
            ));
            None
        }
    }
}

fn series_or(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> Series {
    let raw = raw.map(str::trim).filter(|s| !s.is_empty());
    match raw {
        None => Series::TtftMs,
        Some(r) => Series::from_key(r).unwrap_or_else(|| {
            let keys: Vec<&str> = Series::ALL.iter().map(|s| s.key()).collect();
            errors.push(FieldError::new(
                field,
                format!(
                    "{r:?} is not a latency series; use one of {}",
                    keys.join(", ")
                ),
            ));
            Series::TtftMs
        }),
    }
}

fn percentile_or(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> Percentile {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Percentile::P95,
        Some(r) => Percentile::parse(r).unwrap_or_else(|| {
            errors.push(FieldError::new(
                field,
                format!("{r:?} is not a percentile; use p50, p90, p95 or p99"),
            ));
            Percentile::P95
        }),
    }
}

fn check_sides(baseline: &[i64], candidate: &[i64], errors: &mut Vec<FieldError>) {
    for (field, ids) in [("baseline", baseline), ("candidate", candidate)] {
        if ids.is_empty() {
            errors.push(FieldError::new(
                field,
                "choose at least one artifact for this side",
            ));
        }
        let mut seen = Vec::new();
        for id in ids {
            if seen.contains(id) {
                errors.push(FieldError::new(
                    field,
                    format!("artifact {id} is listed twice"),
                ));
            }
            seen.push(*id);
        }
    }
    for id in baseline.iter().filter(|id| candidate.contains(id)) {
        errors.push(FieldError::new(
            "candidate",
            format!("artifact {id} is on both sides: a run cannot be its own baseline"),
        ));
    }
}

fn check_variable(raw: &str, errors: &mut Vec<FieldError>) -> String {
    let v = raw.trim();
    if v.is_empty() {
        errors.push(FieldError::new(
            "variable",
            "say what was changed (the one variable), e.g. \"enable chunked prefill\"",
        ));
    } else if v.chars().count() > 500 {
        errors.push(FieldError::new("variable", "at most 500 characters"));
    }
    v.to_string()
}

/// A comparison request as written, before any check. The API's JSON and the page's
/// form each read into this (they differ only in how ids, settings and the prediction
/// are spelled); [`Draft::check`] is the one validator.
#[derive(Debug, Default)]
struct Draft {
    /// Each side's ids as written; `None` when the side is not a list at all.
    baseline: Option<Vec<String>>,
    candidate: Option<Vec<String>>,
    variable: String,
    investigation: Option<String>,
    cause_proven: Option<String>,
    metric: Option<String>,
    percentile: Option<String>,
    baseline_config: Option<ConfigDraft>,
    candidate_config: Option<ConfigDraft>,
    prediction: Option<PredictionDraft>,
    min_effect_pct: Option<String>,
    /// Problems of shape the adapter found (e.g. a JSON value of the wrong type).
    errors: Vec<FieldError>,
}

/// A side's step-0 settings: `name = value` lines (form) or a record (JSON).
#[derive(Debug)]
enum ConfigDraft {
    Lines(String),
    Record(Result<Box<FrozenConfig>, String>),
}

#[derive(Debug, Default)]
struct PredictionDraft {
    metric: Option<String>,
    percentile: Option<String>,
    low: Option<String>,
    high: Option<String>,
    source: String,
}

/// How an input names the prediction's fields in its error messages.
struct PredictionNames {
    metric: &'static str,
    percentile: &'static str,
    low: &'static str,
    high: &'static str,
}

const JSON_PREDICTION: PredictionNames = PredictionNames {
    metric: "prediction.metric",
    percentile: "prediction.percentile",
    low: "prediction.low_pct",
    high: "prediction.high_pct",
};

const FORM_PREDICTION: PredictionNames = PredictionNames {
    metric: "prediction_metric",
    percentile: "prediction_percentile",
    low: "prediction_low",
    high: "prediction_high",
};

/// A positive id, or an error naming the field.
fn positive_id(field: &str, raw: &str, what: &str, errors: &mut Vec<FieldError>) -> Option<i64> {
    let id = raw.trim().parse::<i64>().ok().filter(|n| *n > 0);
    if id.is_none() {
        errors.push(FieldError::new(
            field,
            format!("{raw} is not {what} (a positive integer)"),
        ));
    }
    id
}

fn side_ids(field: &str, raw: Option<&[String]>, errors: &mut Vec<FieldError>) -> Vec<i64> {
    match raw {
        Some(items) => items
            .iter()
            .filter_map(|v| positive_id(field, v, "an artifact id", errors))
            .collect(),
        None => {
            errors.push(FieldError::new(
                field,
                "a list of artifact ids is required, e.g. [12, 15]",
            ));
            Vec::new()
        }
    }
}

fn flag(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> bool {
    match raw.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "off" | "0" | "false" | "no") => false,
        Some("on" | "1" | "true" | "yes") => true,
        Some(_) => {
            errors.push(FieldError::new(field, "true or false"));
            false
        }
    }
}

fn config_of(
    field: &str,
    draft: Option<ConfigDraft>,
    errors: &mut Vec<FieldError>,
) -> Option<FrozenConfig> {
    match draft? {
        ConfigDraft::Record(Ok(cfg)) => Some(*cfg),
        ConfigDraft::Record(Err(e)) => {
            errors.push(FieldError::new(
                field,
                format!("not a step-0 configuration record: {e}"),
            ));
            None
        }
        ConfigDraft::Lines(text) => config_lines(field, &text, errors),
    }
}

/// `name = value` lines (blank lines and `#` comments skipped) as a step-0 record.
fn config_lines(field: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<FrozenConfig> {
    if text.trim().is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(['=', ':']) {
            Some((k, v)) => lines.push((k.trim().to_string(), v.trim().to_string())),
            None => errors.push(FieldError::new(
                field,
                format!(
                    "line {}: write name = value, e.g. chunked_prefill = on",
                    i + 1
                ),
            )),
        }
    }
    for (k, _) in &lines {
        if super::reproduce::config_field(k).is_none() {
            errors.push(FieldError::new(
                field,
                format!("{k:?} is not a step-0 setting (e.g. tp, chunked_prefill, max_num_batched_tokens)"),
            ));
        }
    }
    let (cfg, errs) = FrozenConfig::from_form(lines.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    errors.extend(
        errs.into_iter()
            .map(|e| FieldError::new(field, format!("{}: {}", e.field, e.message))),
    );
    Some(cfg)
}

fn percent(field: &str, raw: Option<&str>, errors: &mut Vec<FieldError>) -> f64 {
    let parsed = raw.and_then(|r| crate::quantity::read(r, crate::quantity::Unit::Percent).ok());
    match parsed {
        Some(v) if v.is_finite() && v.abs() <= 1e6 => v,
        _ => {
            errors.push(FieldError::new(
                field,
                "the expected change in percent, a finite number, e.g. -25",
            ));
            0.0
        }
    }
}

impl Draft {
    /// Every field checked; every problem named by the field it is about.
    fn check(self, names: &PredictionNames) -> Result<NewComparison, Vec<FieldError>> {
        let mut errors = self.errors;
        let baseline = side_ids("baseline", self.baseline.as_deref(), &mut errors);
        let candidate = side_ids("candidate", self.candidate.as_deref(), &mut errors);
        if !errors
            .iter()
            .any(|e| e.field == "baseline" || e.field == "candidate")
        {
            check_sides(&baseline, &candidate, &mut errors);
        }
        let variable = check_variable(&self.variable, &mut errors);
        let investigation = self
            .investigation
            .filter(|s| !s.trim().is_empty())
            .and_then(|s| positive_id("investigation", &s, "an investigation id", &mut errors));
        let cause_proven = flag("cause_proven", self.cause_proven.as_deref(), &mut errors);
        let metric = series_or("metric", self.metric.as_deref(), &mut errors);
        let percentile = percentile_or("percentile", self.percentile.as_deref(), &mut errors);
        let min_effect_pct = min_effect(self.min_effect_pct.as_deref(), &mut errors);
        let baseline_config = config_of("baseline_config", self.baseline_config, &mut errors);
        let candidate_config = config_of("candidate_config", self.candidate_config, &mut errors);
        let prediction = self.prediction.map(|p| Prediction {
            series: match p.metric.as_deref().map(str::trim) {
                None | Some("") => metric,
                m => series_or(names.metric, m, &mut errors),
            },
            percentile: match p.percentile.as_deref().map(str::trim) {
                None | Some("") => percentile,
                q => percentile_or(names.percentile, q, &mut errors),
            },
            low_pct: percent(names.low, p.low.as_deref(), &mut errors),
            high_pct: percent(names.high, p.high.as_deref(), &mut errors),
            source: p.source.trim().chars().take(500).collect(),
        });
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(NewComparison {
            baseline,
            candidate,
            variable,
            investigation,
            cause_proven,
            metric,
            percentile,
            baseline_config,
            candidate_config,
            prediction,
            min_effect_pct,
        })
    }
}

/// A JSON value as the text a form would carry: strings unquoted, numbers and
/// booleans as written, other values as JSON (which then fails the field's check).
fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        other => Some(format!("{other} ")),
    }
}

impl NewComparison {
    /// The API body: `{"baseline": [ids], "candidate": [ids], "variable": "…",
    /// "investigation"?, "cause_proven"?, "metric"?, "percentile"?,
    /// "baseline_config"?, "candidate_config"?, "prediction"?, "min_effect_pct"?}`.
    pub fn from_json(body: &Value) -> Result<NewComparison, Vec<FieldError>> {
        let Some(obj) = body.as_object() else {
            return Err(vec![FieldError::new("body", "expected a JSON object")]);
        };
        // A JSON string where a number or boolean belongs is kept quoted, so it fails.
        let strict = |v: &Value| match v {
            Value::String(s) => Some(format!("{s:?}")),
            other => json_text(other),
        };
        let ids = |k: &str| match obj.get(k) {
            Some(Value::Array(items)) => Some(items.iter().filter_map(strict).collect()),
            _ => None,
        };
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let config = |k: &str| match obj.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(ConfigDraft::Record(
                serde_json::from_value::<Box<FrozenConfig>>(v.clone()).map_err(|e| e.to_string()),
            )),
        };
        let mut errors = Vec::new();
        let prediction = match obj.get("prediction") {
            None | Some(Value::Null) => None,
            Some(Value::Object(p)) => {
                let t = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
                let n = |k: &str| p.get(k).filter(|v| v.is_number()).map(Value::to_string);
                Some(PredictionDraft {
                    metric: t("metric"),
                    percentile: t("percentile"),
                    low: n("low_pct"),
                    high: n("high_pct"),
                    source: t("source").unwrap_or_default(),
                })
            }
            Some(_) => {
                errors.push(FieldError::new(
                    "prediction",
                    "an object {\"metric\", \"percentile\", \"low_pct\", \"high_pct\"}",
                ));
                None
            }
        };
        Draft {
            baseline: ids("baseline"),
            candidate: ids("candidate"),
            variable: text("variable").unwrap_or_default(),
            investigation: obj.get("investigation").and_then(strict),
            cause_proven: obj.get("cause_proven").and_then(strict),
            metric: text("metric"),
            percentile: text("percentile"),
            baseline_config: config("baseline_config"),
            candidate_config: config("candidate_config"),
            prediction,
            min_effect_pct: obj.get("min_effect_pct").and_then(strict),
            errors,
        }
        .check(&JSON_PREDICTION)
    }

    /// The page's form: checkboxes `baseline`/`candidate` (repeated), `variable`,
    /// `metric`, `percentile`, `cause_proven`, `investigation`, settings textareas
    /// (`name = value` lines) and the prediction's fields (blank low and high: none).
    pub fn from_form(pairs: &[(String, String)]) -> Result<NewComparison, Vec<FieldError>> {
        let all = |k: &str| -> Vec<String> {
            pairs
                .iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .collect()
        };
        let one = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.trim().is_empty())
        };
        let (low, high) = (one("prediction_low"), one("prediction_high"));
        let prediction = (low.is_some() || high.is_some()).then(|| PredictionDraft {
            metric: one("prediction_metric"),
            percentile: one("prediction_percentile"),
            low,
            high,
            source: one("prediction_source").unwrap_or_default(),
        });
        Draft {
            baseline: Some(all("baseline")),
            candidate: Some(all("candidate")),
            variable: one("variable").unwrap_or_default(),
            investigation: one("investigation"),
            cause_proven: one("cause_proven"),
            metric: one("metric"),
            percentile: one("percentile"),
            baseline_config: one("baseline_config").map(ConfigDraft::Lines),
            candidate_config: one("candidate_config").map(ConfigDraft::Lines),
            prediction,
            min_effect_pct: one("min_effect_pct"),
            errors: Vec::new(),
        }
        .check(&FORM_PREDICTION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn form_and_json_read_into_the_same_comparison() {
        let form = NewComparison::from_form(&pairs(&[
            ("baseline", "3"),
            ("baseline", "4"),
            ("candidate", "5"),
            ("variable", " chunked prefill on "),
            ("investigation", "9"),
            ("cause_proven", "on"),
            ("metric", "itl_ms"),
            ("percentile", "p99"),
            ("prediction_low", "-30%"),
            ("prediction_high", "-20"),
            ("prediction_source", "mixed-step"),
            ("min_effect_pct", "5"),
        ]))
        .unwrap();
        let json = NewComparison::from_json(&serde_json::json!({
            "baseline": [3, 4], "candidate": [5], "variable": "chunked prefill on",
            "investigation": 9, "cause_proven": true, "metric": "itl_ms", "percentile": "p99",
            "prediction": {"low_pct": -30, "high_pct": -20, "source": "mixed-step"},
            "min_effect_pct": 5
        }))
        .unwrap();
        assert_eq!(format!("{form:?}"), format!("{json:?}"));
        assert_eq!(form.min_effect_pct, Some(5.0));
    }

    #[test]
    fn the_minimum_effect_is_a_percentage_from_0_to_100() {
        let base = [("baseline", "3"), ("candidate", "4"), ("variable", "tp")];
        let with = |v: &str| {
            let mut p = pairs(&base);
            p.push(("min_effect_pct".into(), v.into()));
            NewComparison::from_form(&p)
        };
        assert_eq!(with("").unwrap().min_effect_pct, None);
        assert_eq!(with("0.5%").unwrap().min_effect_pct, Some(0.5));
        for bad in ["-1", "150", "lots"] {
            let e = with(bad).unwrap_err();
            assert_eq!(e[0].field, "min_effect_pct");
            assert!(e[0].message.contains("from 0 to 100"), "{}", e[0].message);
        }
        let e = NewComparison::from_json(&serde_json::json!({
            "baseline": [3], "candidate": [4], "variable": "tp", "min_effect_pct": "2"
        }))
        .unwrap_err();
        assert_eq!(e[0].field, "min_effect_pct");
    }

    #[test]
    fn each_input_names_its_own_fields() {
        let form = NewComparison::from_form(&pairs(&[
            ("baseline", "3"),
            ("candidate", "x"),
            ("variable", "tp"),
            ("prediction_low", "lots"),
        ]))
        .unwrap_err();
        let fields: Vec<&str> = form.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["candidate", "prediction_low", "prediction_high"]);
        let json = NewComparison::from_json(&serde_json::json!({
            "baseline": [3], "candidate": ["4"], "variable": "tp",
            "cause_proven": "maybe", "prediction": {"low_pct": -5}
        }))
        .unwrap_err();
        let fields: Vec<&str> = json.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["candidate", "cause_proven", "prediction.high_pct"]);
    }
}
