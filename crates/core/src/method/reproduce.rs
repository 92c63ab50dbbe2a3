//! Step 0 — reproduce. The frozen configuration is the baseline every later
//! comparison is checked against: two runs compare only when every recorded
//! setting is equal except the one declared change.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::FieldError;
use crate::quantity::{self, Unit};
use FieldKind::{Decimal, Flag, Integer, Text};

/// Can the slowdown be produced on demand?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reproducible {
    Yes,
    No,
    NotYet,
    #[default]
    Unanswered,
}

impl Reproducible {
    pub fn slug(self) -> &'static str {
        match self {
            Reproducible::Yes => "yes",
            Reproducible::No => "no",
            Reproducible::NotYet => "not_yet",
            Reproducible::Unanswered => "unanswered",
        }
    }

    /// Lenient reading of a form value ("yes", "not yet", "not_yet", "").
    pub fn parse(raw: &str) -> Option<Reproducible> {
        match normalize(raw).as_str() {
            "" | "unanswered" => Some(Reproducible::Unanswered),
            "yes" | "y" | "true" => Some(Reproducible::Yes),
            "no" | "n" | "false" => Some(Reproducible::No),
            "not yet" | "notyet" => Some(Reproducible::NotYet),
            _ => None,
        }
    }
}

/// Everything that must stay fixed between a "before" and an "after" run
/// (step 0 of the method). `None` means "not recorded".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FrozenConfig {
    // code
    pub code_revision: Option<String>,
    pub container_image: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    // model
    pub model: Option<String>,
    /// The model's Hugging Face `config.json`, pasted, for a model the catalog lacks.
    pub model_config: Option<String>,
    pub model_revision: Option<String>,
    pub weight_dtype: Option<String>,
    pub kv_dtype: Option<String>,
    pub activation_dtype: Option<String>,
    // hardware
    pub gpu_type: Option<String>,
    pub gpu_count: Option<i64>,
    pub interconnect: Option<String>,
    // parallelism
    pub tp: Option<i64>,
    pub pp: Option<i64>,
    pub dp: Option<i64>,
    // scheduler
    pub max_num_seqs: Option<i64>,
    pub max_num_batched_tokens: Option<i64>,
    pub chunked_prefill: Option<bool>,
    pub prefix_caching: Option<bool>,
    pub gpu_memory_utilization: Option<f64>,
    pub block_size: Option<i64>,
    // workload
    pub prompt_len_dist: Option<String>,
    pub output_len_dist: Option<String>,
    pub concurrency: Option<i64>,
    pub arrival_rate: Option<f64>,
    pub sampling: Option<String>,
    pub cache_state: Option<String>,
    pub success_criteria: Option<String>,
    // the step's answer
    pub reproducible: Reproducible,
    pub notes: String,
}

/// How a configuration field is typed, for form widgets and parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Text,
    /// Whole number > 0.
    Integer,
    /// Decimal number > 0 (utilization additionally ≤ 1).
    Decimal,
    /// On/off switch.
    Flag,
}

/// Describes one field of [`FrozenConfig`] for forms, diffs and matching a
/// declared change ("chunked prefill") to the field it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConfigField {
    /// The serde name of the field in [`FrozenConfig`].
    pub name: &'static str,
    pub label: &'static str,
    /// One of [`CONFIG_GROUPS`].
    pub group: &'static str,
    pub kind: FieldKind,
    /// Other words people use for this setting when declaring a change.
    pub aliases: &'static [&'static str],
}

/// Form sections, in display order.
pub const CONFIG_GROUPS: [&str; 6] = [
    "code",
    "model",
    "hardware",
    "parallelism",
    "scheduler",
    "workload",
];

const fn field(
    name: &'static str,
    label: &'static str,
    group: &'static str,
    kind: FieldKind,
    aliases: &'static [&'static str],
) -> ConfigField {
    ConfigField {
        name,
        label,
        group,
        kind,
        aliases,
    }
}

/// All comparable fields of [`FrozenConfig`], in form order (`reproducible`
/// and `notes` are the step's answer, not configuration, and are not listed).
pub const CONFIG_FIELDS: &[ConfigField] = &[
    field(
        "code_revision",
        "Code revision",
        "code",
        Text,
        &["commit", "git sha", "code"],
    ),
    field(
        "container_image",
        "Container image",
        "code",
        Text,
        &["image", "docker image", "container"],
    ),
    field("engine", "Serving engine", "code", Text, &[]),
    field(
        "engine_version",
        "Engine version",
        "code",
        Text,
        &["engine upgrade", "vllm version", "sglang version"],
    ),
    field("model", "Model", "model", Text, &[]),
    field(
        "model_config",
        "Model config.json (paste, for a model not in the catalog)",
        "model",
        Text,
        &["config.json"],
    ),
    field(
        "model_revision",
        "Model revision",
        "model",
        Text,
        &["checkpoint"],
    ),
    field(
        "weight_dtype",
        "Weight precision",
        "model",
        Text,
        &[
            "weight dtype",
            "weights dtype",
            "weight quantization",
            "quantization",
            "quantize weights",
        ],
    ),
    field(
        "kv_dtype",
        "KV-cache precision",
        "model",
        Text,
        &[
            "kv dtype",
            "kv cache dtype",
            "kv cache quantization",
            "kv quantization",
        ],
    ),
    field(
        "activation_dtype",
        "Activation precision",
        "model",
        Text,
        &["activation dtype", "activations dtype"],
    ),
    field(
        "gpu_type",
        "GPU type",
        "hardware",
        Text,
        &["gpu", "gpu model"],
    ),
    field(
        "gpu_count",
        "GPU count",
        "hardware",
        Integer,
        &["number of gpus", "gpus"],
    ),
    field(
        "interconnect",
        "Interconnect",
        "hardware",
        Text,
        &["nvlink", "pcie", "infiniband"],
    ),
    field(
        "tp",
        "Tensor parallelism",
        "parallelism",
        Integer,
        &["tensor parallel", "tensor parallel size", "tp size"],
    ),
    field(
        "pp",
        "Pipeline parallelism",
        "parallelism",
        Integer,
        &["pipeline parallel", "pipeline parallel size", "pp size"],
    ),
    field(
        "dp",
        "Data parallelism",
        "parallelism",
        Integer,
        &["data parallel", "data parallel size", "dp size"],
    ),
    field(
        "max_num_seqs",
        "Max concurrent sequences",
        "scheduler",
        Integer,
        &["max seqs", "max batch size", "batch size"],
    ),
    field(
        "max_num_batched_tokens",
        "Max batched tokens per step",
        "scheduler",
        Integer,
        &["max batched tokens", "batched tokens", "token budget"],
    ),
    field(
        "chunked_prefill",
        "Chunked prefill",
        "scheduler",
        Flag,
        &["enable chunked prefill"],
    ),
    field(
        "prefix_caching",
        "Prefix caching",
        "scheduler",
        Flag,
        &["prefix cache", "automatic prefix caching"],
    ),
    field(
        "gpu_memory_utilization",
        "GPU memory utilization",
        "scheduler",
        Decimal,
        &["gpu memory", "memory utilization"],
    ),
    field(
        "block_size",
        "KV block size",
        "scheduler",
        Integer,
        &["block size", "page size"],
    ),
    field(
        "prompt_len_dist",
        "Prompt length distribution",
        "workload",
        Text,
        &["prompt length", "prompt lengths", "input length"],
    ),
    field(
        "output_len_dist",
        "Output length distribution",
        "workload",
        Text,
        &["output length", "output lengths", "max tokens"],
    ),
    field(
        "concurrency",
        "Concurrency",
        "workload",
        Integer,
        &["concurrent requests"],
    ),
    field(
        "arrival_rate",
        "Request arrival rate (req/s)",
        "workload",
        Decimal,
        &["arrival rate", "request rate", "qps", "rps"],
    ),
    field(
        "sampling",
        "Sampling parameters",
        "workload",
        Text,
        &["temperature", "top p"],
    ),
    field(
        "cache_state",
        "Cache state",
        "workload",
        Text,
        &["warm cache", "cold cache"],
    ),
    field(
        "success_criteria",
        "Success criteria",
        "workload",
        Text,
        &["slo"],
    ),
];

/// The descriptor of a field by its name.
pub fn config_field(name: &str) -> Option<&'static ConfigField> {
    CONFIG_FIELDS.iter().find(|f| f.name == name)
}

impl FrozenConfig {
    /// Build a configuration from raw form pairs (`name=value`). Empty values
    /// mean "not recorded"; unknown names (CSRF tokens, buttons) are ignored.
    /// Returns the parsed part together with one error per unreadable value.
    pub fn from_form<'a, I>(pairs: I) -> (FrozenConfig, Vec<FieldError>)
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut map = Map::new();
        let mut errors = Vec::new();
        for (name, raw) in pairs {
            let text = raw.trim();
            match name {
                "notes" => {
                    map.insert("notes".into(), Value::String(raw.to_string()));
                }
                "reproducible" => match Reproducible::parse(text) {
                    Some(r) => {
                        map.insert("reproducible".into(), Value::String(r.slug().into()));
                    }
                    None => errors.push(FieldError::new(
                        "reproducible",
                        format!("'{text}' is not an answer: choose yes, no or not yet"),
                    )),
                },
                _ => {
                    let Some(desc) = config_field(name) else {
                        continue;
                    };
                    if text.is_empty() {
                        continue;
                    }
                    match parse_value(desc, text) {
                        Ok(v) => {
                            map.insert(desc.name.into(), v);
                        }
                        Err(message) => errors.push(FieldError::new(desc.name, message)),
                    }
                }
            }
        }
        // Every value was built to match its field's type, so this cannot fail;
        // fall back to the default rather than panic if the two ever drift.
        let config = serde_json::from_value(Value::Object(map)).unwrap_or_default();
        (config, errors)
    }

    /// The display value of a field ("on"/"off" for flags), `None` when not
    /// recorded (blank text counts as not recorded).
    pub fn display_value(&self, name: &str) -> Option<String> {
        let value = serde_json::to_value(self).ok()?;
        display(value.get(name)?)
    }
}

/// The unit a numeric setting is kept in: token budgets in tokens, the arrival rate
/// in req/s, memory utilization as a fraction ("90%" reads as 0.9), the rest counts.
fn field_unit(name: &str) -> Unit {
    match name {
        "max_num_batched_tokens" | "block_size" => Unit::Tokens,
        "arrival_rate" => Unit::ReqPerS,
        "gpu_memory_utilization" => Unit::Ratio,
        _ => Unit::Count,
    }
}

fn parse_value(desc: &ConfigField, text: &str) -> Result<Value, String> {
    match desc.kind {
        Text => Ok(Value::String(text.to_string())),
        Integer => quantity::read(text, field_unit(desc.name))
            .map_err(|e| format!("{} ({})", e, desc.label))
            .and_then(|v| {
                (v.fract() == 0.0 && v.abs() < 9.0e15)
                    .then_some(Value::from(v as i64))
                    .ok_or_else(|| format!("'{text}' is not a whole number ({})", desc.label))
            }),
        Decimal => quantity::read(text, field_unit(desc.name))
            .map(Value::from)
            .map_err(|e| format!("{} ({})", e, desc.label)),
        Flag => match normalize(text).as_str() {
            "on" | "true" | "yes" | "1" | "enabled" | "enable" => Ok(Value::Bool(true)),
            "off" | "false" | "no" | "0" | "disabled" | "disable" => Ok(Value::Bool(false)),
            _ => Err(format!("'{text}' is not on or off ({})", desc.label)),
        },
    }
}

fn display(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Bool(true) => Some("on".into()),
        Value::Bool(false) => Some("off".into()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(s.trim().to_string()),
        other => Some(other.to_string()),
    }
}

/// Check a configuration before step 0 counts as done: numbers positive,
/// GPU memory utilization in (0, 1], and the reproducibility question answered
/// with yes or "not yet".
pub fn validate(config: &FrozenConfig) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ints = [
        ("gpu_count", config.gpu_count),
        ("tp", config.tp),
        ("pp", config.pp),
        ("dp", config.dp),
        ("max_num_seqs", config.max_num_seqs),
        ("max_num_batched_tokens", config.max_num_batched_tokens),
        ("block_size", config.block_size),
        ("concurrency", config.concurrency),
    ];
    for (name, value) in ints {
        if let Some(v) = value.filter(|v| *v <= 0) {
            let label = config_field(name).map_or(name, |f| f.label);
            errors.push(FieldError::new(
                name,
                format!("{label} must be a positive whole number, not {v}"),
            ));
        }
    }
    if let Some(u) = config.gpu_memory_utilization {
        if !(u > 0.0 && u <= 1.0) {
            let hint = if u > 1.0 && u <= 100.0 {
                format!(" (did you mean {}?)", u / 100.0)
            } else {
                String::new()
            };
            errors.push(FieldError::new(
                "gpu_memory_utilization",
                format!(
                    "GPU memory utilization is a fraction of GPU memory, above 0 and at most 1, e.g. 0.9; got {u}{hint}"
                ),
            ));
        }
    }
    if let Some(r) = config.arrival_rate {
        if !(r > 0.0 && r.is_finite()) {
            errors.push(FieldError::new(
                "arrival_rate",
                format!("Arrival rate must be a positive number of requests per second, not {r}"),
            ));
        }
    }
    match config.reproducible {
        Reproducible::Yes | Reproducible::NotYet => {}
        Reproducible::Unanswered => errors.push(FieldError::new(
            "reproducible",
            "Answer whether the slowdown can be produced on demand: yes, or \"not yet\" while you \
             are still trying. Every later comparison re-runs this setup, so step 0 is not done \
             without an answer.",
        )),
        Reproducible::No => errors.push(FieldError::new(
            "reproducible",
            "A slowdown that cannot be reproduced cannot be checked after a change. Keep the \
             answer at \"not yet\" and note what you tried, or capture the conditions under \
             which it happens (load, prompt mix, time of day) and try again.",
        )),
    }
    errors
}

/// Step 0 is done when [`validate`] finds nothing.
pub fn is_done(config: &FrozenConfig) -> bool {
    validate(config).is_empty()
}

/// One setting that differs between two configurations (display values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigChange {
    pub field: &'static str,
    pub label: &'static str,
    pub group: &'static str,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Every field of [`CONFIG_FIELDS`] whose display value differs, in form
/// order. A field recorded on one side only counts as a change: the
/// comparison cannot show that it stayed equal.
pub fn diff(before: &FrozenConfig, after: &FrozenConfig) -> Vec<ConfigChange> {
    let (Ok(b), Ok(a)) = (serde_json::to_value(before), serde_json::to_value(after)) else {
        return Vec::new();
    };
    CONFIG_FIELDS
        .iter()
        .filter_map(|f| {
            let before = b.get(f.name).and_then(display);
            let after = a.get(f.name).and_then(display);
            (before != after).then_some(ConfigChange {
                field: f.name,
                label: f.label,
                group: f.group,
                before,
                after,
            })
        })
        .collect()
}

/// Outcome of checking that only the declared setting changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SingleChangeCheck {
    /// Every setting that differs.
    pub changed: Vec<ConfigChange>,
    /// Settings that differ but were not declared.
    pub unexpected: Vec<ConfigChange>,
    /// The fields the declaration names (by name, label or alias).
    pub declared_fields: Vec<&'static str>,
    /// Human explanations when `ok` is false.
    pub problems: Vec<String>,
    /// True when the declaration names at least one field, something changed,
    /// and nothing undeclared changed.
    pub ok: bool,
}

/// Compare two configurations against a declared change such as
/// "chunked_prefill", "Chunked prefill" or "enable chunked prefill with a
/// 4096-token budget". Matching is case-insensitive on whole words of the
/// field's name, label or aliases; when two matches overlap the longer one
/// wins ("model revision" is not also "model"). A declaration may name more
/// than one field when one change needs two knobs (chunked prefill plus its
/// token budget).
pub fn check_single_change(
    before: &FrozenConfig,
    after: &FrozenConfig,
    declared: &str,
) -> SingleChangeCheck {
    let changed = diff(before, after);
    let declared_fields = fields_named_in(declared);
    let unexpected: Vec<ConfigChange> = changed
        .iter()
        .filter(|c| !declared_fields.contains(&c.field))
        .cloned()
        .collect();

    let mut problems = Vec::new();
    if declared_fields.is_empty() {
        problems.push(format!(
            "'{}' does not name a recorded setting: name the field the change touches, e.g. \
             \"code revision\" for a patch or \"chunked prefill\" for a scheduler flag",
            declared.trim()
        ));
    }
    if changed.is_empty() {
        problems.push(
            "Nothing differs between the two configurations: record the setting that was changed."
                .into(),
        );
    }
    if !unexpected.is_empty() {
        let names: Vec<&str> = unexpected.iter().map(|c| c.label).collect();
        problems.push(format!(
            "Also changed without being declared: {}. A comparison is valid only when one thing changes.",
            names.join(", ")
        ));
    }
    SingleChangeCheck {
        ok: problems.is_empty(),
        changed,
        unexpected,
        declared_fields,
        problems,
    }
}

/// Lower-case, every run of non-alphanumeric characters becomes one space.
fn normalize(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Fields named in free text, by whole-word match of name, label or alias.
fn fields_named_in(declared: &str) -> Vec<&'static str> {
    let haystack = format!(" {} ", normalize(declared));
    // (field, start, end) of every whole-word occurrence.
    let mut hits: Vec<(&'static str, usize, usize)> = Vec::new();
    for f in CONFIG_FIELDS {
        let phrases = [f.name, f.label]
            .into_iter()
            .chain(f.aliases.iter().copied());
        for phrase in phrases {
            let needle = format!(" {} ", normalize(phrase));
            if needle.trim().is_empty() {
                continue;
            }
            let mut from = 0;
            while let Some(pos) = haystack[from..].find(&needle) {
                let start = from + pos;
                hits.push((f.name, start, start + needle.len()));
                from = start + 1;
            }
        }
    }
    // Drop a hit lying inside a longer hit of another field.
    let kept = hits.iter().filter(|(name, s, e)| {
        !hits
            .iter()
            .any(|(other, os, oe)| other != name && os <= s && e <= oe && (oe - os) > (e - s))
    });
    let mut fields: Vec<&'static str> = Vec::new();
    for (name, _, _) in kept {
        if !fields.contains(name) {
            fields.push(name);
        }
    }
    // Report in form order, not match order.
    fields.sort_by_key(|n| CONFIG_FIELDS.iter().position(|f| f.name == *n));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline() -> FrozenConfig {
        FrozenConfig {
            code_revision: Some("a1b2c3d".into()),
            engine: Some("vLLM".into()),
            engine_version: Some("0.6.3".into()),
            model: Some("Llama-3.1-70B-Instruct".into()),
            model_revision: Some("main@2024-09-01".into()),
            weight_dtype: Some("bf16".into()),
            kv_dtype: Some("fp8".into()),
            gpu_type: Some("H100 SXM".into()),
            gpu_count: Some(4),
            tp: Some(4),
            pp: Some(1),
            dp: Some(1),
            max_num_seqs: Some(256),
            max_num_batched_tokens: Some(8192),
            chunked_prefill: Some(false),
            prefix_caching: Some(true),
            gpu_memory_utilization: Some(0.9),
            prompt_len_dist: Some("mean 1,800, p99 22,000".into()),
            output_len_dist: Some("mean 250".into()),
            arrival_rate: Some(45.0),
            reproducible: Reproducible::Yes,
            ..FrozenConfig::default()
        }
    }

    #[test]
    fn descriptors_cover_every_serialized_field() {
        let value = serde_json::to_value(FrozenConfig::default()).unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), CONFIG_FIELDS.len() + 2, "reproducible + notes");
        for f in CONFIG_FIELDS {
            assert!(
                value.get(f.name).is_some(),
                "{} not a FrozenConfig field",
                f.name
            );
            assert!(CONFIG_GROUPS.contains(&f.group), "{}", f.group);
        }
    }

    #[test]
    fn validate_positive_numbers_and_utilization() {
        let mut c = baseline();
        assert!(is_done(&c));
        c.tp = Some(0);
        c.gpu_memory_utilization = Some(90.0);
        c.arrival_rate = Some(-1.0);
        let errors = validate(&c);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tp", "gpu_memory_utilization", "arrival_rate"]);
        assert!(
            errors[1].message.contains("did you mean 0.9?"),
            "{}",
            errors[1].message
        );
        c = baseline();
        c.gpu_memory_utilization = Some(1.0);
        assert!(validate(&c).is_empty(), "1.0 is allowed");
        c.gpu_memory_utilization = Some(0.0);
        assert_eq!(validate(&c).len(), 1);
    }

    #[test]
    fn step_zero_needs_yes_or_not_yet() {
        let mut c = baseline();
        c.reproducible = Reproducible::NotYet;
        assert!(is_done(&c));
        c.reproducible = Reproducible::Unanswered;
        let errors = validate(&c);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "reproducible");
        assert!(errors[0].message.contains("not yet"));
        c.reproducible = Reproducible::No;
        assert_eq!(validate(&c)[0].field, "reproducible");
        assert!(!is_done(&FrozenConfig::default()));
    }

    #[test]
    fn form_parsing_with_errors() {
        let (c, errors) = FrozenConfig::from_form([
            ("tp", " 4 "),
            ("max_num_batched_tokens", "8,192"),
            ("chunked_prefill", "on"),
            ("gpu_memory_utilization", "0.92"),
            ("model", "Llama"),
            ("engine", ""),
            ("reproducible", "not yet"),
            ("csrf_token", "ignored"),
            ("pp", "two"),
            ("prefix_caching", "maybe"),
        ]);
        assert_eq!(c.tp, Some(4));
        assert_eq!(c.max_num_batched_tokens, Some(8192));
        assert_eq!(c.chunked_prefill, Some(true));
        assert_eq!(c.gpu_memory_utilization, Some(0.92));
        assert_eq!(c.model.as_deref(), Some("Llama"));
        assert_eq!(c.engine, None);
        assert_eq!(c.reproducible, Reproducible::NotYet);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["pp", "prefix_caching"]);
        assert!(
            errors[0].message.contains("'two' is not a number"),
            "{errors:?}"
        );
        // The quantity parser reads settings like every other field.
        let (c, errors) = FrozenConfig::from_form([
            ("gpu_memory_utilization", "90%"),
            ("max_num_batched_tokens", "8,192 tokens"),
            ("tp", "2.5"),
            ("arrival_rate", "12 rps"),
            ("concurrency", "64 GB"),
        ]);
        assert_eq!(c.gpu_memory_utilization, Some(0.9));
        assert_eq!(c.max_num_batched_tokens, Some(8192));
        assert_eq!(c.arrival_rate, Some(12.0));
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tp", "concurrency"]);
        assert!(
            errors[1].message.contains("a size in bytes in GB"),
            "{errors:?}"
        );
    }

    #[test]
    fn serde_round_trip() {
        let c = baseline();
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains("\"reproducible\":\"yes\""));
        assert_eq!(serde_json::from_str::<FrozenConfig>(&json).unwrap(), c);
        // Missing fields default, so older records still load.
        let partial: FrozenConfig = serde_json::from_str(r#"{"tp": 2}"#).unwrap();
        assert_eq!(partial.tp, Some(2));
        assert_eq!(partial.reproducible, Reproducible::Unanswered);
    }

    #[test]
    fn diff_lists_changed_fields_in_form_order() {
        let before = baseline();
        let mut after = baseline();
        after.chunked_prefill = Some(true);
        after.max_num_batched_tokens = Some(4096);
        after.notes = "ignored: notes are not configuration".into();
        after.model = Some("  Llama-3.1-70B-Instruct ".into());
        after.interconnect = Some("".into());
        let changes = diff(&before, &after);
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].field, "max_num_batched_tokens");
        assert_eq!(
            (changes[0].before.as_deref(), changes[0].after.as_deref()),
            (Some("8192"), Some("4096"))
        );
        assert_eq!(changes[1].label, "Chunked prefill");
        assert_eq!(
            after.display_value("chunked_prefill").as_deref(),
            Some("on")
        );
        assert_eq!(after.display_value("interconnect"), None);
        assert_eq!(
            (changes[1].before.as_deref(), changes[1].after.as_deref()),
            (Some("off"), Some("on"))
        );
        // Recorded on one side only is a change.
        after = baseline();
        after.block_size = Some(16);
        assert_eq!(diff(&before, &after)[0].before, None);
    }

    #[test]
    fn single_change_accepts_name_label_or_words() {
        let before = baseline();
        let mut after = baseline();
        after.chunked_prefill = Some(true);
        for declared in [
            "chunked_prefill",
            "Chunked prefill",
            "CHUNKED-PREFILL",
            "turn on chunked prefill",
        ] {
            let check = check_single_change(&before, &after, declared);
            assert!(check.ok, "{declared}: {:?}", check.problems);
            assert_eq!(check.declared_fields, ["chunked_prefill"]);
        }
    }

    #[test]
    fn single_change_flags_undeclared_changes() {
        let before = baseline();
        let mut after = baseline();
        after.chunked_prefill = Some(true);
        after.engine_version = Some("0.6.4".into());
        let check = check_single_change(&before, &after, "chunked prefill");
        assert!(!check.ok);
        assert_eq!(check.changed.len(), 2);
        assert_eq!(check.unexpected.len(), 1);
        assert_eq!(check.unexpected[0].field, "engine_version");
        assert!(check.problems[0].contains("Engine version"));
    }

    #[test]
    fn one_change_may_need_two_knobs() {
        let before = baseline();
        let mut after = baseline();
        after.chunked_prefill = Some(true);
        after.max_num_batched_tokens = Some(4096);
        let check = check_single_change(
            &before,
            &after,
            "Enable chunked prefill with a 4,096-token budget",
        );
        assert_eq!(
            check.declared_fields,
            ["max_num_batched_tokens", "chunked_prefill"]
        );
        assert!(check.ok, "{:?}", check.problems);
    }

    #[test]
    fn longer_phrase_wins_and_unknown_words_fail() {
        assert_eq!(fields_named_in("new model revision"), ["model_revision"]);
        assert_eq!(fields_named_in("tp 4 -> 8"), ["tp"]);
        assert_eq!(fields_named_in("KV cache dtype fp8"), ["kv_dtype"]);
        let before = baseline();
        let mut after = baseline();
        after.code_revision = Some("e5f6".into());
        let check = check_single_change(&before, &after, "patched the attention kernel");
        assert!(!check.ok);
        assert!(check.declared_fields.is_empty());
        assert!(check.problems[0].contains("does not name a recorded setting"));
        let nothing = check_single_change(&before, &before, "tp");
        assert!(!nothing.ok);
        assert!(nothing.problems[0].starts_with("Nothing differs"));
    }
}

/// How step 0's model and GPU read against the estimators' catalogs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogMatch {
    /// `model` or `gpu_type`.
    pub field: &'static str,
    pub typed: String,
    /// The catalog entry it maps to, when it maps to one.
    pub catalog: Option<&'static str>,
    /// Why it maps to none, with the nearest catalog names.
    pub problem: Option<String>,
}

/// The catalog entries step 0's model and GPU map to ("H100 SXM 80GB" is `h100-sxm`,
/// "meta-llama/Llama-3.1-8B-Instruct" is `llama-3.1-8b`), or why they map to none. A
/// pasted config.json stands in for a model the catalog lacks.
pub fn catalog_matches(config: &FrozenConfig) -> Vec<CatalogMatch> {
    use crate::estimate::{gpus, models};
    let mut out = Vec::new();
    fn typed(v: &Option<String>) -> Option<&str> {
        v.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }
    let pasted = typed(&config.model_config).is_some();
    if let Some(name) = typed(&config.model) {
        let catalog = models::find(name).map(|m| m.name);
        out.push(CatalogMatch {
            field: "model",
            typed: name.to_string(),
            catalog,
            problem: (catalog.is_none() && !pasted).then(|| models::unknown(name)),
        });
    }
    if let Some(name) = typed(&config.gpu_type) {
        let catalog = gpus::find(name).map(|g| g.name);
        out.push(CatalogMatch {
            field: "gpu_type",
            typed: name.to_string(),
            catalog,
            problem: catalog.is_none().then(|| gpus::unknown(name)),
        });
    }
    out
}

#[cfg(test)]
mod catalog_tests {
    use super::*;

    #[test]
    fn step_zero_spellings_map_to_the_catalog_or_are_flagged() {
        let config = FrozenConfig {
            model: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
            gpu_type: Some("H100 SXM 80GB".into()),
            ..FrozenConfig::default()
        };
        let m = catalog_matches(&config);
        assert_eq!(m[0].catalog, Some("llama-3.1-8b"));
        assert_eq!(m[1].catalog, Some("h100-sxm"));
        assert!(m.iter().all(|x| x.problem.is_none()));
        let config = FrozenConfig {
            model: Some("llama-9b".into()),
            gpu_type: Some("h10".into()),
            ..FrozenConfig::default()
        };
        let m = catalog_matches(&config);
        assert!(m[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("nearest in the catalog: llama-3.1-8b"));
        assert!(m[1].problem.as_deref().unwrap().contains("h100"));
        // A pasted config.json stands in for the model.
        let config = FrozenConfig {
            model: Some("my-finetune".into()),
            model_config: Some("{}".into()),
            ..FrozenConfig::default()
        };
        assert_eq!(catalog_matches(&config)[0].problem, None);
    }
}
