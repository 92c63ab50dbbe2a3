//! Turning raw string inputs into checked values, collecting every problem so the
//! user sees all of them at once instead of fixing one field per round trip.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{fmt, FieldError, FieldSpec, Inputs};

/// What a numeric field must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// > 0 (sizes, rates, prices).
    Positive,
    /// ≥ 0 (extra bytes, cached tokens).
    NonNegative,
    /// In (0, 1] (utilization, MFU).
    Fraction,
    /// In [0, 1] (hit rates).
    Probability,
    /// > −1 (a relative change: −0.15 is a 15% loss).
    Change,
    /// Whole number ≥ 1 (batch, tokens, TP).
    Count,
    /// Whole number ≥ 0.
    CountOrZero,
}

/// Parses a number as written by a person: `3000`, `0.92`, `80e9`, `-0.15`.
/// Digit separators (`1_000`, `1,000`), `inf` and `NaN` are refused, because a
/// silently misread size is worse than an error.
pub fn parse_number(raw: &str) -> Result<f64, String> {
    let s = raw.trim();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    match s.parse::<f64>() {
        Ok(v) if plain && v.is_finite() => Ok(v),
        _ => Err(format!(
            "`{raw}` is not a number (write e.g. 3000, 0.92 or 80e9)"
        )),
    }
}

fn check(value: f64, rule: Rule) -> Result<f64, String> {
    let bad = |what: &str| Err(format!("must be {what} (got {})", fmt::num(value)));
    let whole = value.fract() == 0.0 && value.abs() < 9.0e15;
    match rule {
        Rule::Positive if value <= 0.0 => bad("greater than 0"),
        Rule::NonNegative if value < 0.0 => bad("0 or more"),
        Rule::Fraction if value <= 0.0 || value > 1.0 => bad("in (0, 1]"),
        Rule::Probability if !(0.0..=1.0).contains(&value) => bad("in [0, 1]"),
        Rule::Change if value <= -1.0 => bad("greater than -1 (-1 would be a 100% loss)"),
        Rule::Count if !whole || value < 1.0 => bad("a whole number of at least 1"),
        Rule::CountOrZero if !whole || value < 0.0 => bad("a whole number of at least 0"),
        _ => Ok(value),
    }
}

/// Edit distance, to suggest the intended key for a typo.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Reads one estimator's inputs. Knows the accepted fields, records the values
/// actually used (for [`super::Chain::inputs`]) and collects errors.
pub(crate) struct Parser<'a> {
    inputs: &'a Inputs,
    fields: &'static [FieldSpec],
    errors: Vec<FieldError>,
    used: BTreeMap<String, Value>,
}

impl<'a> Parser<'a> {
    /// Starts by refusing unknown keys: a typo like `contxt` must not silently
    /// fall back to a default.
    pub fn new(inputs: &'a Inputs, fields: &'static [FieldSpec]) -> Self {
        let mut p = Self {
            inputs,
            fields,
            errors: Vec::new(),
            used: BTreeMap::new(),
        };
        for key in inputs.keys() {
            if fields.iter().any(|f| f.name == key) {
                continue;
            }
            let accepted: Vec<_> = fields.iter().map(|f| f.name).collect();
            let hint = fields
                .iter()
                .map(|f| (distance(key, f.name), f.name))
                .filter(|(d, _)| *d <= 2)
                .min()
                .map(|(_, n)| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            p.fail(
                key,
                format!(
                    "unknown input `{key}`{hint}; accepted: {}",
                    accepted.join(", ")
                ),
            );
        }
        p
    }

    /// Whether this estimator takes `key` at all.
    pub fn accepts(&self, key: &str) -> bool {
        self.fields.iter().any(|f| f.name == key)
    }

    /// The trimmed text of an accepted, non-blank input.
    pub fn text(&self, key: &str) -> Option<&'a str> {
        if !self.accepts(key) {
            return None;
        }
        self.inputs
            .get(key)
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
    }

    pub fn given(&self, key: &str) -> bool {
        self.text(key).is_some()
    }

    pub fn fail(&mut self, field: &str, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, message));
    }

    pub fn has_error(&self, field: &str) -> bool {
        self.errors.iter().any(|e| e.field == field)
    }

    /// Notes a value used by the estimate (shown in the chain's inputs).
    pub fn record(&mut self, key: &str, value: impl Into<Value>) {
        self.used.insert(key.to_string(), value.into());
    }

    pub fn record_number(&mut self, key: &str, value: f64) {
        self.used.insert(key.to_string(), fmt::whole(value));
    }

    /// An optional number: `None` when absent or invalid (an invalid one is reported).
    /// Read by the one quantity reader in the field's unit ("2,000", "23 ms", "$3.00").
    pub fn opt(&mut self, key: &str, rule: Rule) -> Option<f64> {
        let raw = self.text(key)?;
        let unit = self
            .fields
            .iter()
            .find(|f| f.name == key)
            .map_or("", |f| f.unit);
        let read = crate::quantity::read_field(raw, unit)
            .map_err(|e| e.to_string())
            .and_then(|v| check(v, rule));
        self.accept(key, read)
    }

    /// Records a value read for `key`, or reports why it could not be read.
    fn accept(&mut self, key: &str, read: Result<f64, String>) -> Option<f64> {
        match read {
            Ok(v) => {
                self.record_number(key, v);
                Some(v)
            }
            Err(msg) => {
                self.fail(key, msg);
                None
            }
        }
    }

    /// A required number; its absence is reported with the field's label.
    pub fn req(&mut self, key: &str, rule: Rule) -> Option<f64> {
        if !self.given(key) {
            let what = self.fields.iter().find(|f| f.name == key).map_or(key, |f| {
                if f.help.is_empty() {
                    f.label
                } else {
                    f.help
                }
            });
            self.fail(key, format!("is required: {}", what.trim_end_matches('.')));
            return None;
        }
        self.opt(key, rule)
    }

    /// A number with a default, which is recorded as used when the field is blank.
    pub fn or(&mut self, key: &str, default: f64, rule: Rule) -> Option<f64> {
        if self.given(key) {
            self.opt(key, rule)
        } else {
            self.record_number(key, default);
            Some(default)
        }
    }

    /// An amount of bytes, typed bare (`2e9`) or with a unit (`2 GB`, `1.5 GiB`) through
    /// `core::quantity` (another dimension is refused naming both units); `default`
    /// when blank. Must be 0 or more.
    pub fn bytes_or(&mut self, key: &str, default: f64) -> Option<f64> {
        let Some(raw) = self.text(key) else {
            self.record_number(key, default);
            return Some(default);
        };
        let read = crate::quantity::read(raw, crate::quantity::Unit::Bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| check(v, Rule::NonNegative));
        self.accept(key, read)
    }

    /// The collected errors; call after a required value came back `None`.
    pub fn into_errors(mut self) -> Vec<FieldError> {
        if self.errors.is_empty() {
            // Defensive: a `None` always comes with an error, but never return Err(vec![]).
            self.errors
                .push(FieldError::new("inputs", "could not read the inputs"));
        }
        self.errors
    }

    /// The recorded inputs, or every collected error.
    pub fn finish(self) -> Result<BTreeMap<String, Value>, Vec<FieldError>> {
        if self.errors.is_empty() {
            Ok(self.used)
        } else {
            Err(self.errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[FieldSpec] = &[
        FieldSpec {
            name: "batch",
            label: "Batch size",
            unit: "sequences",
            default: None,
            help: "",
            required: true,
        },
        FieldSpec {
            name: "mfu",
            label: "MFU",
            unit: "",
            default: Some("0.5"),
            help: "",
            required: false,
        },
    ];

    fn inputs(pairs: &[(&str, &str)]) -> Inputs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn numbers_as_people_write_them() {
        assert_eq!(parse_number("80e9"), Ok(80e9));
        assert_eq!(parse_number("3000"), Ok(3000.0));
        assert_eq!(parse_number(" 0.92 "), Ok(0.92));
        assert_eq!(parse_number("-0.15"), Ok(-0.15));
        assert_eq!(parse_number("1E-3"), Ok(0.001));
        for bad in ["1_000", "1,000", "inf", "NaN", "", "12GB", "0x10", "1e400"] {
            assert!(parse_number(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rules() {
        assert!(check(0.0, Rule::Positive).is_err());
        assert!(check(-1.0, Rule::Positive).is_err());
        assert!(check(0.0, Rule::NonNegative).is_ok());
        assert!(check(1.0, Rule::Fraction).is_ok());
        assert!(check(1.01, Rule::Fraction).is_err());
        assert!(check(0.0, Rule::Fraction).is_err());
        assert!(check(0.0, Rule::Probability).is_ok());
        assert!(check(-1.0, Rule::Change).is_err());
        assert!(check(2.5, Rule::Count).is_err());
        assert!(check(80e9, Rule::Count).is_ok());
        assert!(check(0.0, Rule::CountOrZero).is_ok());
    }

    #[test]
    fn unknown_keys_are_refused_with_a_hint() {
        let raw = inputs(&[("bacth", "4"), ("zzz", "1")]);
        let p = Parser::new(&raw, FIELDS);
        let errs = p.finish().unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(errs[0].message.contains("did you mean `batch`"), "{errs:?}");
        assert!(errs[0].message.contains("accepted: batch, mfu"), "{errs:?}");
        assert_eq!(errs[1].field, "zzz");
    }

    #[test]
    fn collects_every_error_and_records_defaults() {
        let raw = inputs(&[("mfu", "1.5")]);
        let mut p = Parser::new(&raw, FIELDS);
        assert_eq!(p.req("batch", Rule::Count), None);
        assert_eq!(p.or("mfu", 0.5, Rule::Fraction), None);
        let errs = p.finish().unwrap_err();
        assert!(errs[0].field == "batch" && errs[0].message.contains("required"));
        assert!(errs[1].field == "mfu" && errs[1].message.contains("(0, 1]"));

        let raw = inputs(&[("batch", "8"), ("mfu", " ")]);
        let mut p = Parser::new(&raw, FIELDS);
        assert_eq!(p.req("batch", Rule::Count), Some(8.0));
        assert_eq!(p.or("mfu", 0.5, Rule::Fraction), Some(0.5));
        let used = p.finish().unwrap();
        assert_eq!(used["batch"], serde_json::json!(8));
        assert_eq!(used["mfu"], serde_json::json!(0.5));
    }
}
