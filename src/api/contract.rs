//! The exact shapes of the bodies and parameters that handlers read by hand (so their
//! refusals can name each field in words), written into the OpenAPI document. A client
//! generated from the document then sends what the server accepts, and a fuzzer's
//! schema-valid input is not refused for a rule the document did not state, nor its
//! schema-violating input accepted (the schemathesis test checks both directions).
//!
//! Rules that depend on what is stored (an artifact id must name an analyzed trace, a
//! capture host must be on the admin's list, an estimator's or a step's inputs must
//! describe a possible deployment) cannot be a schema; those answers stay 422s naming
//! the field, and the test lists the operations where that happens.

use serde_json::{json, Value};

use super::body::some_text;
use crate::core::method::bubbles as bubble_rules;

/// A positive artifact (or other row) id.
fn id() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": i64::MAX})
}

fn ids(max: Option<u64>) -> Value {
    let mut list = json!({"type": "array", "items": id(), "minItems": 1});
    if let Some(max) = max {
        list["maxItems"] = json!(max);
    }
    list
}

const PERCENTILES: [&str; 4] = ["p50", "p90", "p95", "p99"];

/// Text PostgreSQL can store: no NUL character.
fn storable() -> Value {
    json!({"type": "string", "pattern": "^[^\\x00]*$"})
}

/// Storable text with something in it besides spaces.
fn storable_some_text() -> Value {
    json!({"type": "string", "pattern": "^[^\\x00]*[^\\s\\x00][^\\x00]*$"})
}

fn journal_entry(with_version: bool) -> Value {
    let mut properties = json!({
        "title": {"type": "string", "maxLength": 200,
            "pattern": "^[^\\x00]*[^\\s\\x00][^\\x00]*$"},
        "date": {"type": "string", "format": "date", "description": "YYYY-MM-DD"},
        "symptom": storable(),
        "workload": storable(),
        "baseline": storable(),
        "diagnosis": storable(),
        "change": storable(),
        "result": storable(),
        "quality": storable(),
        "effort": storable(),
        "publish": {"type": "boolean",
            "description": "true publishes (a published entry stays published); false keeps a draft"},
    });
    let mut required = vec!["title", "date"];
    if with_version {
        properties["version"] = json!({"type": "integer", "minimum": -2147483648i64,
            "maximum": 2147483647,
            "description": "the version the edit started from (as GET returned it)"});
        required.push("version");
    }
    // The publish rule as `if`/`then`, not an `anyOf` beside the properties: client
    // generators read the properties and ignore `if` (an `anyOf` made typed models drop
    // title, date and publish), while a validator checks both.
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": properties,
        "description": "A draft needs a title and a date; publishing (or saving an entry \
            already published) also needs SYMPTOM, DIAGNOSIS, CHANGE and RESULT.",
        "if": {"required": ["publish"], "properties": {"publish": {"enum": [true]}}},
        "then": {
            "required": ["symptom", "diagnosis", "change", "result"],
            "properties": {
                "symptom": storable_some_text(), "diagnosis": storable_some_text(),
                "change": storable_some_text(), "result": storable_some_text()}
        }
    })
}

/// A figure as a step takes it: a number, or text with a unit ("1.2 s", "9%").
fn figure() -> Value {
    json!({"type": ["number", "string"]})
}

/// A per-token figure of step 2: a number of milliseconds per token (or text with a unit).
fn figure_ms_per_token(label: &str) -> Value {
    json!({"type": ["number", "string"], "description": format!("{label}, ms per token")})
}

/// An object of figures (and other named fields), none required.
fn object(properties: Value, required: &[&str]) -> Value {
    let mut o = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        o["required"] = json!(required);
    }
    o
}

/// A frozen configuration as step 0 and step 7's `after_config` take it: each setting by
/// its name (text, a number or a switch), `reproducible` and `notes`.
fn config() -> Value {
    use crate::core::method::reproduce::{FieldKind, CONFIG_FIELDS};
    let mut properties = serde_json::Map::new();
    for f in CONFIG_FIELDS {
        let shape = match f.kind {
            FieldKind::Text => json!({"type": "string", "description": f.label}),
            FieldKind::Integer | FieldKind::Decimal => {
                json!({"type": ["number", "string"], "description": f.label})
            }
            FieldKind::Flag => json!({"type": ["boolean", "string"], "description": f.label}),
        };
        properties.insert(f.name.to_string(), shape);
    }
    properties.insert(
        "reproducible".into(),
        json!({"type": "string", "description": "yes, no or not yet"}),
    );
    properties.insert("notes".into(), json!({"type": "string"}));
    Value::Object(properties)
}

/// The step bodies of `PUT /investigations/{id}/steps/{step}`, one schema per step, with
/// the form's field names nested (the reader is `core::pairs::from_json`).
pub fn step_bodies() -> Vec<(u8, &'static str, Value)> {
    use crate::core::method::phases::Phase;
    use crate::core::metric::{Metric, Percentile};
    let metrics: Vec<&str> = Metric::ALL.iter().map(|m| m.slug()).collect();
    let percentiles: Vec<&str> = Percentile::ALL.iter().map(|p| p.slug()).collect();
    let mut phases = serde_json::Map::new();
    for phase in Phase::ALL {
        phases.insert(
            phase.slug().to_string(),
            object(
                json!({"p50": figure(), "p90": figure(), "p95": figure(), "p99": figure(),
                    "share": figure(),
                    "source": {"type": "integer", "minimum": 1,
                        "description": "the artifact the row came from; leave out for numbers typed by hand"}}),
                &[],
            ),
        );
    }
    for step_figure in crate::core::method::per_token::StepFigure::ALL {
        phases.insert(
            step_figure.slug().to_string(),
            object(
                json!({"p50": figure_ms_per_token(step_figure.label()), "p90": figure(), "p95": figure(), "p99": figure(),
                    "source": {"type": "integer", "minimum": 1,
                        "description": "the artifact the figure came from; leave out for numbers typed by hand"}}),
                &[],
            ),
        );
    }
    let rows = |row: Value| json!({"type": "array", "maxItems": 50, "items": row});
    vec![
        (0, "Step0Body", object(config(), &[])),
        (
            1,
            "Step1Body",
            object(
                json!({
                    "metric": {"type": "string", "enum": metrics},
                    "percentile": {"type": "string", "enum": percentiles,
                        "description": "required for a latency; none for throughput or cost per million tokens, which are measured over the whole run"},
                    "observed": figure(),
                    "target": figure(),
                    "unit": {"type": "string"},
                    "confirm_target": {"type": ["boolean", "string"],
                        "description": "true saves a target far outside what the metric can be"},
                }),
                &["metric", "observed", "target"],
            ),
        ),
        (2, "Step2Body", object(Value::Object(phases), &[])),
        (
            3,
            "Step3Body",
            object(
                json!({"gpu_total": figure(), "cpu_total": figure(), "wall": figure()}),
                // CPU busy time is optional: without it only "GPU-bound or not" is judged.
                &["gpu_total", "wall"],
            ),
        ),
        (
            4,
            "Step4Body",
            object(
                json!({
                    "kernels": rows(object(
                        json!({"name": {"type": "string"}, "sm_pct": figure(), "dram_pct": figure()}),
                        &[],
                    )),
                    "decode": object(
                        json!({"measured_ms": figure(), "batch": figure(), "context": figure(),
                            "floor_ms": figure()}),
                        &[],
                    ),
                }),
                &[],
            ),
        ),
        (
            5,
            "Step5Body",
            object(
                json!({
                    "kernels": rows(object(
                        json!({"name": {"type": "string"}, "share": figure(), "time_ms": figure(),
                            "occupancy_pct": figure(), "notes": {"type": "string"}}),
                        &[],
                    )),
                    "phase_total_ms": figure(),
                }),
                &[],
            ),
        ),
        (
            6,
            "Step6Body",
            object(
                json!({
                    "candidates": rows(object(
                        json!({"description": {"type": "string"}, "share": figure(),
                            "speedup": figure(), "effort_days": figure()}),
                        &[],
                    )),
                }),
                &[],
            ),
        ),
        (
            7,
            "Step7Body",
            object(
                json!({
                    "change": {"type": "string"},
                    "after_config": object(config(), &[]),
                    "after_value": figure(),
                    "verdict": {"type": "string", "enum": ["confirmed", "improved",
                        "inconclusive", "no_change", "regressed", "invalid_comparison"]},
                    "quality": {"type": "string"},
                    "tradeoff": object(
                        json!({"metric": {"type": "string", "enum": metrics},
                            "percentile": {"type": "string", "enum": percentiles}}),
                        &[],
                    ),
                }),
                &["change", "after_value", "quality"],
            ),
        ),
    ]
    .into_iter()
    .map(|(n, name, mut body)| {
        body["properties"]["version"] = json!({"type": "integer", "minimum": 0,
            "maximum": 2147483647,
            "description": "the step's version the change starts from (0 when not yet \
                recorded); a save from an older version is refused with 409"});
        body["properties"][crate::investigations::EVIDENCE_FIELD] = json!({
            "type": "integer", "minimum": 1,
            "description": "the artifact whose analysis filled this step"});
        body["description"] = json!(format!("Step {n}'s fields, as the step's form names them."));
        (n, name, body)
    })
    .collect()
}

/// Request bodies by (method, path).
fn bodies() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "post",
            "/bubbles",
            json!({
                "type": "object",
                "required": ["trace", "queue"],
                "properties": {
                    "trace": id(),
                    "queue": id(),
                    "offset_ms": {"type": "number", "minimum": -bubble_rules::MAX_OFFSET_MS,
                        "maximum": bubble_rules::MAX_OFFSET_MS},
                    "min_idle_us": {"type": "number",
                        "minimum": crate::core::analyze::pytorch_trace::IDLE_INTERVAL_MIN_US,
                        "maximum": 1e9},
                }
            }),
        ),
        (
            "post",
            "/comparisons",
            json!({
                "type": "object",
                "required": ["baseline", "candidate", "variable"],
                "properties": {
                    "baseline": ids(None),
                    "candidate": ids(None),
                    "variable": some_text(None),
                    "investigation": id(),
                    "cause_proven": {"type": "boolean"},
                    "metric": {"type": "string"},
                    "percentile": {"type": "string", "enum": PERCENTILES},
                    "baseline_config": {"type": "object"},
                    "candidate_config": {"type": "object"},
                    "prediction": {"type": "object"},
                    "min_effect_pct": {"type": "number", "minimum": 0, "maximum": 100},
                }
            }),
        ),
        (
            "post",
            "/trace-diffs",
            json!({
                "type": "object",
                "required": ["control", "test"],
                "properties": {
                    "control": {"oneOf": [id(), ids(Some(64))]},
                    "test": {"oneOf": [id(), ids(Some(64))]},
                    "investigation": id(),
                }
            }),
        ),
        (
            "post",
            "/sweeps",
            json!({
                "type": "object",
                "oneOf": [
                    {"required": ["artifacts"], "not": {"required": ["artifact"]}},
                    {"required": ["artifact"], "not": {"required": ["artifacts"]}}
                ],
                "properties": {
                    "artifacts": ids(Some(64)),
                    "artifact": id(),
                    "series": {"type": "string"},
                    "slo": {
                        "type": "object",
                        "required": ["metric", "percentile", "max_ms"],
                        "properties": {
                            "metric": {"type": "string", "enum": ["ttft", "tpot", "itl", "e2e"]},
                            "percentile": {"type": "string", "enum": PERCENTILES},
                            "max_ms": {"type": "number", "exclusiveMinimum": 0}
                        }
                    }
                }
            }),
        ),
        (
            "post",
            "/proposals/{id}/review",
            json!({
                "type": "object",
                "required": ["version"],
                "properties": {
                    "version": {"type": "integer", "minimum": -2147483648i64, "maximum": 2147483647},
                    "state": {"type": "string", "enum":
                        ["approved", "changes_requested", "rejected", "rolled_out", "draft"]},
                    "comment": {"type": "string"},
                    "section": {"type": "string", "enum":
                        ["general", "deployment", "workload", "sizing", "evidence"]},
                }
            }),
        ),
        ("post", "/proposals/{id}/observed", observed()),
        (
            "post",
            "/journal",
            json!({"$ref": "#/components/schemas/NewJournalEntry"}),
        ),
        (
            "put",
            "/journal/{id}",
            json!({"$ref": "#/components/schemas/JournalEntryEdit"}),
        ),
    ]
}

fn observed() -> Value {
    let mut properties = serde_json::Map::new();
    for (name, label, unit, _) in crate::core::proposal::outcome::FIGURES {
        properties.insert(
            name.to_string(),
            json!({"type": "number", "exclusiveMinimum": 0, "description": format!("{label}, {unit}")}),
        );
    }
    properties.insert(
        "artifact_ids".into(),
        json!({"type": "array", "items": id()}),
    );
    properties.insert("note".into(), json!({"type": "string"}));
    json!({"type": "object", "additionalProperties": false, "properties": properties})
}

/// Query parameters by (method, path, name). None is required: an upload's `name` is
/// needed only for a raw body (a multipart part carries its file name), and its
/// `investigation` and `journal_entry` only attach the file.
fn parameters() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    // Empty: no bound (what a blank form field sends).
    let date = || json!({"type": "string", "anyOf": [{"format": "date"}, {"maxLength": 0}]});
    // The last path segment (what is kept) needs a printable character; no control
    // characters anywhere.
    let file_name = json!({"type": "string", "maxLength": 255,
        "pattern": "^([^\\x00-\\x1f\\x7f-\\x9f]*[/\\\\])?[^\\x00-\\x1f\\x7f-\\x9f/\\\\]*[^\\s\\x00-\\x1f\\x7f-\\x9f/\\\\][^\\x00-\\x1f\\x7f-\\x9f/\\\\]*$"});
    // An id as the query carries it; blank: none.
    let id_text = json!({"type": "string", "pattern": "^\\s*(\\+?0*[1-9][0-9]{0,17})?\\s*$"});
    // A choice; blank: the default (what a form's first option sends).
    let choice = |options: &[&str]| {
        let mut all = vec![""];
        all.extend_from_slice(options);
        json!({"type": "string", "enum": all})
    };
    vec![
        ("post", "/artifacts", "name", file_name),
        ("post", "/artifacts", "investigation", id_text.clone()),
        ("post", "/artifacts", "journal_entry", id_text),
        (
            "get",
            "/drills/{estimator}",
            "level",
            choice(&["chain", "step"]),
        ),
        ("get", "/search", "from", date()),
        ("get", "/search", "to", date()),
        ("get", "/search", "sort", choice(&["relevance", "newest"])),
        (
            "get",
            "/search",
            "metric",
            choice(&[
                "ttft",
                "itl",
                "tpot",
                "e2e",
                "throughput",
                "queue_wait",
                "cost_per_million",
            ]),
        ),
        (
            "get",
            "/search",
            "phase",
            choice(&[
                "tokenize",
                "queue_wait",
                "prefill",
                "decode",
                "detokenize",
                "network",
                "nothing",
            ]),
        ),
    ]
}

/// Writes the shapes into the document (as JSON: some of them use JSON Schema words,
/// such as `not` and `const`, that utoipa's types do not carry).
pub(crate) fn apply(doc: &mut Value) {
    for (method, path, body) in bodies() {
        if let Some(content) = doc
            .pointer_mut(&format!(
                "/paths/{}/{method}/requestBody/content",
                escape(path)
            ))
            .and_then(|c| c.get_mut("application/json"))
        {
            content["schema"] = body;
        }
    }
    // An empty file is refused (there is nothing to analyze).
    if let Some(upload) =
        doc.pointer_mut("/paths/~1artifacts/post/requestBody/content/application~1octet-stream")
    {
        upload["schema"] = json!({"type": "string", "format": "binary", "minLength": 1});
    }
    for (method, path, name, shape) in parameters() {
        let Some(Value::Array(list)) =
            doc.pointer_mut(&format!("/paths/{}/{method}/parameters", escape(path)))
        else {
            continue;
        };
        for parameter in list.iter_mut().filter(|p| p["name"] == name) {
            parameter["schema"] = shape.clone();
        }
    }
    if let Some(Value::Object(known)) = doc.pointer_mut("/components/schemas") {
        known.insert("NewJournalEntry".into(), journal_entry(false));
        known.insert("JournalEntryEdit".into(), journal_entry(true));
        for (_, name, body) in step_bodies() {
            known.insert(name.to_string(), body);
        }
    }
    typed_steps(doc);
}

/// `PUT /investigations/{id}/steps/{step}` takes any step's body; each step also has
/// its own path, `…/steps/0` to `…/steps/7` (the same handler), whose body is that
/// step's schema, so a generated client has one typed call per step.
fn typed_steps(doc: &mut Value) {
    const PATH: &str = "/investigations/{id}/steps/{step}";
    let refs: Vec<Value> = step_bodies()
        .iter()
        .map(|(_, name, _)| json!({"$ref": format!("#/components/schemas/{name}")}))
        .collect();
    let pointer = format!("/paths/{}/put", escape(PATH));
    let Some(put) = doc.pointer_mut(&pointer) else {
        return;
    };
    put["requestBody"]["content"]["application/json"]["schema"] = json!({"anyOf": refs});
    let template = put.clone();
    let Some(Value::Object(paths)) = doc.get_mut("paths") else {
        return;
    };
    for (n, name, _) in step_bodies() {
        let mut op = template.clone();
        op["operationId"] = json!(format!("put_step_{n}"));
        op["summary"] = json!(format!("Records step {n} (editor role)."));
        op["requestBody"]["content"]["application/json"]["schema"] =
            json!({"$ref": format!("#/components/schemas/{name}")});
        if let Some(Value::Array(params)) = op.get_mut("parameters") {
            params.retain(|p| p["name"] != "step");
        }
        paths.insert(PATH.replace("{step}", &n.to_string()), json!({"put": op}));
    }
}

/// A path as one JSON Pointer token.
fn escape(path: &str) -> String {
    path.replace('~', "~0").replace('/', "~1")
}
