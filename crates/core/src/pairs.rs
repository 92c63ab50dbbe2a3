//! A form's submitted `name=value` pairs, and the one reader that turns a JSON body into
//! them, so a JSON client and a form are checked by exactly the same parser.
//!
//! Two readings of JSON are in use ([`JsonReading`]): an investigation step's form,
//! whose nested tables flatten into the form's names, and a flat object of fields (a
//! proposal's inputs, observed figures), where nesting is refused by key.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::FieldError;

/// Submitted `name=value` pairs in the order they came, looked up by name (the last
/// value wins).
#[derive(Debug, Clone, Default)]
pub struct Pairs(Vec<(String, String)>);

impl Pairs {
    pub fn new(pairs: Vec<(String, String)>) -> Pairs {
        Pairs(pairs)
    }

    /// Sets `name` to `value`, replacing any value it had.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        self.0.retain(|(k, _)| *k != name);
        self.0.push((name, value.into()));
    }

    /// The same pairs with one more (or a replaced) value.
    pub fn with(mut self, name: &str, value: String) -> Pairs {
        self.insert(name, value);
        self
    }

    /// Takes `name` out, giving its (last) value as sent.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let value = self.raw(name).map(str::to_string);
        self.0.retain(|(k, _)| k != name);
        value
    }

    /// The trimmed value, `None` when missing or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.raw(name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// The value exactly as sent (to show a form again), `None` when missing.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().to_string()
    }

    /// Whether any name starting with `prefix` has a value that is not blank.
    pub fn any_with_prefix(&self, prefix: &str) -> bool {
        self.0
            .iter()
            .any(|(k, v)| k.starts_with(prefix) && !v.trim().is_empty())
    }

    /// Every pair, in the order sent (a name may repeat).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Each name once with its last value, in name order.
    pub fn by_name(&self) -> BTreeMap<&str, &str> {
        self.iter().collect()
    }
}

impl FromIterator<(String, String)> for Pairs {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Pairs {
        Pairs(iter.into_iter().collect())
    }
}

/// How a JSON body becomes pairs.
#[derive(Debug, Clone, Copy)]
pub enum JsonReading {
    /// An investigation step's form: nested objects and lists flatten into the form's
    /// names (`{"kernels": [{"name": "x"}]}` is `kernels[0].name=x`), numbers print
    /// plainly (3200, not 3200.0), booleans as on/off, nulls are left out. Never refuses.
    Form,
    /// A flat object of fields: strings as they are, numbers as written, booleans as
    /// true/false, nulls left out; the names in `whole` keep an object as its JSON text.
    /// Any other object or list is refused by key, and a body that is not an object is
    /// refused as `body` with `not_object`.
    Fields {
        whole: &'static [&'static str],
        not_object: &'static str,
    },
}

/// Reads a JSON body into pairs the way `reading` says.
pub fn from_json(value: &Value, reading: JsonReading) -> Result<Pairs, Vec<FieldError>> {
    match reading {
        JsonReading::Form => Ok(Pairs::new(flatten(value))),
        JsonReading::Fields { whole, not_object } => fields(value, whole, not_object),
    }
}

fn fields(value: &Value, whole: &[&str], not_object: &str) -> Result<Pairs, Vec<FieldError>> {
    let Some(obj) = value.as_object() else {
        return Err(vec![FieldError::new("body", not_object)]);
    };
    let mut pairs = Pairs::default();
    let mut errors = Vec::new();
    for (k, v) in obj {
        let text = match v {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Object(_) if whole.contains(&k.as_str()) => v.to_string(),
            _ => {
                errors.push(FieldError::new(
                    k.as_str(),
                    "must be a string, number or boolean",
                ));
                continue;
            }
        };
        pairs.insert(k.clone(), text);
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(errors)
    }
}

/// Flattens JSON into a form's names: `{"kernels": [{"name": "x"}]}` becomes
/// `kernels[0].name=x`; numbers print plainly (3200, not 3200.0), booleans as on/off,
/// nulls are left out.
fn flatten(value: &Value) -> Vec<(String, String)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
        let key = |k: &str| {
            if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            }
        };
        match v {
            Value::Null => {}
            Value::Bool(b) => out.push((prefix.to_string(), if *b { "on" } else { "off" }.into())),
            Value::Number(n) => out.push((prefix.to_string(), plain_number(n))),
            Value::String(s) => out.push((prefix.to_string(), s.clone())),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), item, out);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    walk(&key(k), item, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk("", value, &mut out);
    out
}

fn plain_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        Some(f) => format!("{f}"),
        None => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIELDS: JsonReading = JsonReading::Fields {
        whole: &["config"],
        not_object: "must be an object",
    };

    #[test]
    fn a_form_reading_flattens_into_the_forms_names() {
        let json = json!({"kernels": [{"name": "gemm", "share": 0.5}], "flag": true, "n": 3200.0});
        let pairs = from_json(&json, JsonReading::Form).unwrap();
        assert_eq!(pairs.get("kernels[0].share"), Some("0.5"));
        assert_eq!(pairs.get("kernels[0].name"), Some("gemm"));
        assert_eq!(pairs.get("flag"), Some("on"));
        assert_eq!(pairs.get("n"), Some("3200"));
    }

    #[test]
    fn a_fields_reading_refuses_nesting_by_key() {
        let json = json!({"tp": 2, "on": true, "config": {"a": 1}, "gone": null});
        let pairs = from_json(&json, FIELDS).unwrap();
        assert_eq!(pairs.get("tp"), Some("2"));
        assert_eq!(pairs.get("on"), Some("true"));
        assert_eq!(pairs.get("config"), Some("{\"a\":1}"));
        assert_eq!(pairs.raw("gone"), None);
        let e = from_json(&json!({"tp": [1]}), FIELDS).unwrap_err();
        assert_eq!(e[0].field, "tp");
        let e = from_json(&json!([1]), FIELDS).unwrap_err();
        assert_eq!(
            (e[0].field.as_str(), e[0].message.as_str()),
            ("body", "must be an object")
        );
    }

    #[test]
    fn the_last_value_wins_and_blanks_read_as_missing() {
        let mut pairs: Pairs = [("a", " 1 "), ("b", " "), ("a", "2")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(pairs.get("a"), Some("2"));
        assert_eq!(pairs.get("b"), None);
        assert_eq!(pairs.raw("b"), Some(" "));
        assert_eq!(
            pairs.by_name().into_iter().collect::<Vec<_>>(),
            [("a", "2"), ("b", " ")]
        );
        assert_eq!(pairs.remove("a").as_deref(), Some("2"));
        assert_eq!(pairs.raw("a"), None);
        pairs.insert("b", "3");
        assert_eq!(pairs.iter().collect::<Vec<_>>(), [("b", "3")]);
    }
}
