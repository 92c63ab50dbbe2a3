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
    if let Some(text) = config
        .model_config
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    {
        if let Err(e) = read_model_config(text) {
            errors.push(FieldError::new(
                "model_config",
                format!("{e}. Paste the model's whole config.json, or leave the box empty"),
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

/// Outcome of checking that only the declared change differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SingleChangeCheck {
    /// Every setting that differs.
    pub changed: Vec<ConfigChange>,
    /// Settings that differ beyond the one that carries the declared change.
    pub unexpected: Vec<ConfigChange>,
    /// The differing settings that carry the declared change: those it names (by name,
    /// label or alias), or else the one setting that differs.
    pub declared_fields: Vec<&'static str>,
    /// Human explanations when `ok` is false.
    pub problems: Vec<String>,
    /// What the check took the declaration to mean, when it had to infer it ("The
    /// declared change shows in Container image"), or that it lies outside the record.
    pub note: Option<String>,
    /// True when at most the declared change differs.
    pub ok: bool,
}

/// Compare two configurations against a declared change. The declaration is free
/// text ("tuned fused_moe config file for H100", "enable chunked prefill with a
/// 4096-token budget") or a field's name ("chunked_prefill"):
///
/// - the differing settings it names (case-insensitive whole words of a field's name,
///   label or aliases; of two overlapping matches the longer wins, so "model revision"
///   is not also "model") carry the change; one change may need two knobs (chunked
///   prefill plus its token budget). Any other differing setting is undeclared;
/// - when it names none of the differing settings, the one setting that differs
///   carries it (a new container image holding the tuned file); two or more differing
///   settings make the comparison invalid, since one of them is not the change;
/// - when nothing recorded differs the change lies outside the record (a file, a
///   patch) and the comparison stands, unless the declaration is just a setting's
///   name, which then must differ.
pub fn check_single_change(
    before: &FrozenConfig,
    after: &FrozenConfig,
    declared: &str,
) -> SingleChangeCheck {
    let changed = diff(before, after);
    let named = fields_named_in(declared);
    let mut declared_fields: Vec<&'static str> = changed
        .iter()
        .filter(|c| named.contains(&c.field))
        .map(|c| c.field)
        .collect();
    let mut problems = Vec::new();
    let mut note = None;
    let listed = |list: &[ConfigChange]| {
        list.iter()
            .map(|c| {
                format!(
                    "{} ({} → {})",
                    c.label,
                    c.before.as_deref().unwrap_or("not recorded"),
                    c.after.as_deref().unwrap_or("not recorded")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bare = exact_field(declared).filter(|f| !changed.iter().any(|c| c.field == f.name));
    let unexpected: Vec<ConfigChange> = if let Some(f) = bare {
        // The declaration is just a setting's name, and that setting did not change.
        let instead = if changed.is_empty() {
            String::new()
        } else {
            format!(" What differs instead: {}.", listed(&changed))
        };
        problems.push(format!(
            "'{}' names a recorded setting, but {} is the same in both configurations: \
             record its value after the change.{instead}",
            declared.trim(),
            f.label
        ));
        changed.clone()
    } else if declared_fields.is_empty() {
        match changed.as_slice() {
            [] => {
                note = Some(
                    "No recorded setting differs: the declared change lies outside the \
                     step-0 record, and everything recorded matched."
                        .into(),
                );
                Vec::new()
            }
            [one] => {
                declared_fields.push(one.field);
                note = Some(format!(
                    "The declared change shows in {}: the one recorded setting that differs.",
                    listed(std::slice::from_ref(one))
                ));
                Vec::new()
            }
            many => {
                problems.push(format!(
                    "{} recorded settings differ: {}. A comparison is valid only when one \
                     thing changes: re-run with all but the changed one equal, or name in \
                     the declared change each setting it needed.",
                    many.len(),
                    listed(many)
                ));
                many.to_vec()
            }
        }
    } else {
        let rest: Vec<ConfigChange> = changed
            .iter()
            .filter(|c| !declared_fields.contains(&c.field))
            .cloned()
            .collect();
        if !rest.is_empty() {
            problems.push(format!(
                "Also changed without being declared: {}. A comparison is valid only when one \
                 thing changes.",
                listed(&rest)
            ));
        }
        rest
    };
    SingleChangeCheck {
        ok: problems.is_empty(),
        changed,
        unexpected,
        declared_fields,
        problems,
        note,
    }
}

/// The field a declaration is nothing but the name, label or alias of.
fn exact_field(declared: &str) -> Option<&'static ConfigField> {
    let text = normalize(declared);
    CONFIG_FIELDS.iter().find(|f| {
        [f.name, f.label]
            .into_iter()
            .chain(f.aliases.iter().copied())
            .any(|p| normalize(p) == text)
    })
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
pub fn fields_named_in(declared: &str) -> Vec<&'static str> {
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

/// Inputs for decode-floor from the step-0 setup (model, GPU, TP, precisions) plus a
/// batch and context; blank settings are left out so the estimator's defaults apply.
pub fn decode_floor_inputs(
    config: Option<&FrozenConfig>,
    batch: Option<i64>,
    context: Option<i64>,
) -> crate::estimate::Inputs {
    let mut inputs = crate::estimate::Inputs::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.trim().is_empty()) {
            inputs.insert(k.to_string(), v.trim().to_string());
        }
    };
    if let Some(c) = config {
        // A pasted config.json stands for the model (the estimators take one or the other).
        match c.model_config.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(json) => put("config", Some(json.to_string())),
            None => put("model", c.model.clone()),
        }
        put("gpu", c.gpu_type.clone());
        put("tp", c.tp.map(|v| v.to_string()));
        put("weight_dtype", c.weight_dtype.clone());
        put("kv_dtype", c.kv_dtype.clone());
    }
    put(
        "batch",
        batch
            .or(config.and_then(|c| c.concurrency.or(c.max_num_seqs)))
            .map(|v| v.to_string()),
    );
    put("context", context.map(|v| v.to_string()));
    inputs
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
    fn longer_phrase_wins() {
        assert_eq!(fields_named_in("new model revision"), ["model_revision"]);
        assert_eq!(fields_named_in("tp 4 -> 8"), ["tp"]);
        assert_eq!(fields_named_in("KV cache dtype fp8"), ["kv_dtype"]);
    }

    #[test]
    fn a_free_text_change_is_carried_by_the_one_differing_setting() {
        let before = baseline();
        let mut after = baseline();
        after.container_image = Some("vllm:0.10.1-moe-tuned".into());
        // The words name no differing setting ("H100" is the unchanged GPU type): the
        // one setting that differs carries the change.
        let declared = "tuned fused_moe config file for H100";
        let check = check_single_change(&before, &after, declared);
        assert!(check.ok, "{:?}", check.problems);
        assert_eq!(check.declared_fields, ["container_image"]);
        assert!(check.unexpected.is_empty());
        let note = check.note.unwrap();
        assert!(
            note.contains("Container image (not recorded → vllm:0.10.1-moe-tuned)"),
            "{note}"
        );
        // A second differing setting is still flagged, both named with their values.
        after.engine_version = Some("0.10.1".into());
        let check = check_single_change(&before, &after, declared);
        assert!(!check.ok);
        assert_eq!(check.unexpected.len(), 2);
        assert!(
            check.problems[0].starts_with("2 recorded settings differ: Container image"),
            "{:?}",
            check.problems
        );
        assert!(
            check.problems[0].contains("Engine version (0.6.3 → 0.10.1)"),
            "{:?}",
            check.problems
        );
        // Naming one of them makes the other the undeclared one.
        let check = check_single_change(&before, &after, "new container image");
        assert_eq!(check.declared_fields, ["container_image"]);
        assert_eq!(check.unexpected[0].field, "engine_version");
        assert!(
            check.problems[0].starts_with("Also changed without being declared: Engine version")
        );
    }

    #[test]
    fn a_change_outside_the_record_stands_but_a_bare_field_name_must_differ() {
        let before = baseline();
        let outside = check_single_change(&before, &before, "patched the attention kernel");
        assert!(outside.ok, "{:?}", outside.problems);
        assert!(outside
            .note
            .unwrap()
            .starts_with("No recorded setting differs"));
        let nothing = check_single_change(&before, &before, "tp");
        assert!(!nothing.ok);
        assert!(
            nothing.problems[0].contains("Tensor parallelism is the same in both"),
            "{:?}",
            nothing.problems
        );
        let mut after = baseline();
        after.chunked_prefill = Some(true);
        let elsewhere = check_single_change(&before, &after, "TP");
        assert!(!elsewhere.ok);
        assert!(
            elsewhere.problems[0].ends_with("What differs instead: Chunked prefill (off → on)."),
            "{:?}",
            elsewhere.problems
        );
    }
}

/// How step 0's model and GPU read against the estimators' catalogs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogMatch {
    /// `model`, `gpu_type` or `model_config` (a pasted config.json).
    pub field: &'static str,
    pub typed: String,
    /// The catalog entry it maps to, when it maps to one.
    pub catalog: Option<&'static str>,
    /// Why it maps to none, with the nearest catalog names.
    pub problem: Option<String>,
    /// What a pasted config.json was read as, for the person to confirm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<ModelConfigReading>,
}

/// What the estimators read from a pasted Hugging Face config.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelConfigReading {
    /// `model_type` ("qwen3_moe").
    pub model_type: Option<String>,
    /// The first of `architectures` ("Qwen3MoeForCausalLM").
    pub architecture: Option<String>,
    /// `_name_or_path`, when the file carries it.
    pub name: Option<String>,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    /// Routed experts per MoE layer and those a token uses; `None` for a dense model.
    pub experts: Option<u64>,
    pub experts_per_token: Option<u64>,
    /// Parameters from the architecture: all, and those one token uses.
    pub params: Option<u64>,
    pub active_params: Option<u64>,
    /// The reading in one sentence.
    pub line: String,
}

/// Reads a pasted config.json as the estimators will; the error says what is wrong.
pub fn read_model_config(text: &str) -> Result<ModelConfigReading, String> {
    use crate::estimate::models::ModelSpec;
    let spec = ModelSpec::from_config_json(text)?;
    // The spec's reader accepted the text, so it is a JSON object.
    let root: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let text_of = |key: &str| {
        root.get(key)
            .or_else(|| root.get("text_config").and_then(|t| t.get(key)))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let architecture = root
        .get("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string);
    let params = spec.params();
    let billions = |n: u64| format!("{} B", crate::fmt::format_number(n as f64 / 1e9, 1));
    let mut parts = Vec::new();
    let kind = match (text_of("model_type"), &architecture) {
        (Some(t), Some(a)) => format!("{t} ({a})"),
        (Some(t), None) => t,
        (None, Some(a)) => a.clone(),
        (None, None) => "a model of no stated type".to_string(),
    };
    parts.push(match text_of("_name_or_path") {
        Some(n) => format!("{n}: {kind}"),
        None => kind,
    });
    parts.push(format!("{} layers", spec.layers));
    parts.push(format!("hidden size {}", crate::fmt::grouped(spec.hidden)));
    parts.push(format!(
        "{} attention heads, {} KV heads",
        spec.heads, spec.kv_heads
    ));
    match spec.moe {
        Some(m) => parts.push(format!(
            "{} experts, {} per token",
            m.experts, m.experts_per_tok
        )),
        None => parts.push("dense (no experts)".to_string()),
    }
    if let Some(p) = params {
        parts.push(if spec.moe.is_some() {
            format!(
                "{} parameters ({} active per token)",
                billions(p.total),
                billions(p.active)
            )
        } else {
            format!("{} parameters", billions(p.total))
        });
    }
    Ok(ModelConfigReading {
        model_type: text_of("model_type"),
        architecture,
        name: text_of("_name_or_path"),
        layers: spec.layers,
        hidden: spec.hidden,
        heads: spec.heads,
        kv_heads: spec.kv_heads,
        experts: spec.moe.map(|m| m.experts),
        experts_per_token: spec.moe.map(|m| m.experts_per_tok),
        params: params.map(|p| p.total),
        active_params: params.map(|p| p.active),
        line: format!("Read from config.json: {}.", parts.join(", ")),
    })
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
            read: None,
        });
    }
    if let Some(text) = typed(&config.model_config) {
        let (read, problem) = match read_model_config(text) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        out.push(CatalogMatch {
            field: "model_config",
            typed: "config.json".to_string(),
            catalog: None,
            problem,
            read,
        });
    }
    if let Some(name) = typed(&config.gpu_type) {
        let catalog = gpus::find(name).map(|g| g.name);
        out.push(CatalogMatch {
            field: "gpu_type",
            typed: name.to_string(),
            catalog,
            problem: catalog.is_none().then(|| gpus::unknown(name)),
            read: None,
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
        // …but one that does not read is flagged where it is shown.
        assert!(catalog_matches(&config)[1]
            .problem
            .as_deref()
            .unwrap()
            .contains("config.json has no hidden_size"));
    }

    /// Qwen/Qwen3-30B-A3B's config.json, abridged to the fields the reader takes.
    pub(crate) const QWEN3_30B_A3B_CONFIG: &str = r#"{
      "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
      "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
      "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
      "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
      "vocab_size": 151936, "tie_word_embeddings": false, "torch_dtype": "bfloat16"
    }"#;

    #[test]
    fn a_pasted_config_is_read_back_for_confirmation() {
        let r = read_model_config(QWEN3_30B_A3B_CONFIG).unwrap();
        assert_eq!(r.model_type.as_deref(), Some("qwen3_moe"));
        assert_eq!(
            (r.layers, r.experts, r.experts_per_token),
            (48, Some(128), Some(8))
        );
        assert_eq!(
            r.line,
            "Read from config.json: qwen3_moe (Qwen3MoeForCausalLM), 48 layers, hidden size \
             2,048, 32 attention heads, 4 KV heads, 128 experts, 8 per token, 30.5 B \
             parameters (3.4 B active per token)."
        );
        let config = FrozenConfig {
            model_config: Some(QWEN3_30B_A3B_CONFIG.into()),
            reproducible: Reproducible::Yes,
            ..FrozenConfig::default()
        };
        let m = catalog_matches(&config);
        assert_eq!(m[0].field, "model_config");
        assert_eq!(m[0].read.as_ref().unwrap().params, r.params);
        assert!(validate(&config).is_empty());
        let broken = FrozenConfig {
            model_config: Some("{\"hidden_size\": 2048,".into()),
            ..config
        };
        let errors = validate(&broken);
        assert_eq!(errors[0].field, "model_config");
        assert!(
            errors[0]
                .message
                .starts_with("config.json is not valid JSON"),
            "{}",
            errors[0].message
        );
    }
}
