//! Request bodies parsed once: a body is a typed struct that both reads the JSON and
//! documents it in the OpenAPI document (its `ToSchema`), so the shape is written once.
//! A problem is a 422 naming the field, as the hand-written readers said it.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

use crate::error::AppError;

/// Text as a form field carries it: a string, a number (as its decimal text), or empty
/// when the field is null or absent; anything else is "a string" on that field. Fields
/// of this type take `#[serde(default)]` and state their documented type with
/// `#[schema(value_type = …)]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(pub String);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Text(s)),
            serde_json::Value::Number(n) => Ok(Text(n.to_string())),
            serde_json::Value::Null => Ok(Text::default()),
            _ => Err(D::Error::custom("a string")),
        }
    }
}

/// A field that must be a JSON string when given (null included): absent is empty.
/// For `#[serde(default, deserialize_with = "body::string")]`.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        _ => Err(D::Error::custom("a string")),
    }
}

/// A list of strings, or `what` as the field's problem.
pub(crate) fn strings<'de, D: Deserializer<'de>>(
    d: D,
    what: &'static str,
) -> Result<Vec<String>, D::Error> {
    Vec::<String>::deserialize(serde_json::Value::deserialize(d)?)
        .map_err(|_| D::Error::custom(what))
}

/// A switch: true or false, null or absent being false.
pub(crate) fn switch<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Bool(b) => Ok(b),
        serde_json::Value::Null => Ok(false),
        _ => Err(D::Error::custom("true or false")),
    }
}

/// A JSON object body read into `T`. Not JSON is a 422 on `body` naming the line and
/// column; not an object, a 422 on `body` giving the expected `shape`; a field of the
/// wrong type, a 422 on that field (its path, as `steps.1.observed`).
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8], shape: &str) -> Result<T, AppError> {
    let v = super::json_body(body)?;
    if !v.is_object() {
        return Err(AppError::field("body", format!("a JSON object {shape}")));
    }
    serde_path_to_error::deserialize(v)
        .map_err(|e| AppError::field(&e.path().to_string(), e.inner().to_string()))
}

/// A body type's schema written as JSON Schema, for the input types whose rules the
/// derive cannot state (patterns built from the core's limits, enums from its lists).
/// The shape is read into utoipa's schema types and written back: a keyword those types
/// would drop or change stops the document from being built (every test that reads the
/// document would fail), so what is served is exactly what is written here.
pub(crate) fn schema(
    shape: serde_json::Value,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    let schema: utoipa::openapi::schema::Schema = serde_json::from_value(shape.clone())
        .unwrap_or_else(|e| panic!("a body schema utoipa cannot read: {e}"));
    let back = serde_json::to_value(&schema).expect("a schema serializes");
    assert_eq!(back, shape, "utoipa's schema types changed a body schema");
    schema.into()
}

/// Text with something in it besides spaces, at most `max` characters.
pub(crate) fn some_text(max: Option<u64>) -> serde_json::Value {
    let mut text = serde_json::json!({"type": "string", "minLength": 1, "pattern": "\\S"});
    if let Some(max) = max {
        text["maxLength"] = serde_json::json!(max);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Window {
        #[serde(default)]
        start: Text,
        #[serde(default)]
        end: Text,
    }

    #[test]
    fn hand_written_schemas_reach_the_document_unchanged() {
        use utoipa::PartialSchema;
        for schema in [
            crate::api::webhooks::WebhookInput::schema(),
            crate::api::search::SynonymInput::schema(),
            crate::api::investigations::NewInvestigation::schema(),
            crate::api::trace_sets::TraceSetAsk::schema(),
        ] {
            let json = serde_json::to_value(&schema).unwrap();
            assert_eq!(json["type"], "object", "{json}");
            assert!(
                json["required"].as_array().is_some_and(|r| !r.is_empty()),
                "{json}"
            );
        }
    }

    fn fields(e: AppError) -> Vec<(String, String)> {
        e.fields()
            .iter()
            .map(|f| (f.field.clone(), f.message.clone()))
            .collect()
    }

    #[test]
    fn text_takes_strings_numbers_and_nothing() {
        let w: Window = parse(
            br#"{"start": "2026-12-02T14:00:00Z", "end": 1764687600}"#,
            "",
        )
        .unwrap();
        assert_eq!(w.start.as_str(), "2026-12-02T14:00:00Z");
        assert_eq!(w.end.as_str(), "1764687600");
        let w: Window = parse(br#"{"start": null}"#, "").unwrap();
        assert_eq!((w.start.as_str(), w.end.as_str()), ("", ""));
    }

    #[test]
    fn problems_name_the_field_or_the_body() {
        let e = parse::<Window>(br#"{"start": ["x"]}"#, "{start, end}").unwrap_err();
        assert_eq!(fields(e), [("start".into(), "a string".into())]);
        let e = parse::<Window>(b"[1]", "{start, end}").unwrap_err();
        assert_eq!(
            fields(e),
            [("body".into(), "a JSON object {start, end}".into())]
        );
        let e = parse::<Window>(b"{\"start\": ", "{start, end}").unwrap_err();
        assert!(fields(e)[0].1.starts_with("not valid JSON at line 1"));
    }
}
