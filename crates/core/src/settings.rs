//! The workload settings of a benchmark file (model, rate, concurrency, lengths …)
//! and how runs that should repeat one experiment are checked against each other.
//! Below both the readers (a load sweep's runs) and the method (a comparison's
//! sides), so neither reaches into the other for them.

use std::collections::{BTreeMap, BTreeSet};

/// Workload settings of a benchmark file compared across (and within) the
/// sides: (key, label, the step-0 field a declaration names to change it).
pub const WORKLOAD_SETTINGS: &[(&str, &str, &str)] = &[
    ("model_id", "Model", "model"),
    ("tokenizer_id", "Tokenizer", "model"),
    ("backend", "Benchmark backend", "engine"),
    ("endpoint_type", "Endpoint type", "engine"),
    ("request_rate", "Request rate", "arrival_rate"),
    ("burstiness", "Burstiness", "arrival_rate"),
    ("max_concurrency", "Max concurrency", "concurrency"),
    ("num_prompts", "Prompt count", ""),
    ("dataset_name", "Dataset", "prompt_len_dist"),
    ("random_input_len", "Random input length", "prompt_len_dist"),
    (
        "random_output_len",
        "Random output length",
        "output_len_dist",
    ),
    (
        "random_range_ratio",
        "Random length range",
        "prompt_len_dist",
    ),
    (
        "sharegpt_output_len",
        "ShareGPT output length",
        "output_len_dist",
    ),
    ("ignore_eos", "Ignore EOS", "output_len_dist"),
];

/// The settings keys the shell should copy from a benchmark file's config.
pub fn workload_setting_keys() -> impl Iterator<Item = &'static str> {
    WORKLOAD_SETTINGS.iter().map(|(k, _, _)| *k)
}

/// A recorded setting as display text; null and blank text are "not recorded".
pub fn setting_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) if s.trim().is_empty() => None,
        serde_json::Value::String(s) => Some(s.trim().to_string()),
        other => Some(other.to_string()),
    }
}

/// The workload settings as (key, label), for other checks of "the same experiment"
/// (a load sweep's runs).
pub fn workload_settings() -> impl Iterator<Item = (&'static str, &'static str)> {
    WORKLOAD_SETTINGS.iter().map(|(k, l, _)| (*k, *l))
}

/// A setting on which named runs disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingDifference {
    pub key: String,
    pub label: String,
    /// Every run's value: "a in run 1, not recorded in run 2".
    pub listed: String,
}

/// The settings (of `keys`, as (key, label); a label shared by several keys is
/// reported once) on which the named runs disagree, a missing value counting as a
/// value of its own.
pub fn setting_differences(
    runs: &[(String, BTreeMap<String, String>)],
    keys: &[(&str, &str)],
) -> Vec<SettingDifference> {
    let mut out: Vec<SettingDifference> = Vec::new();
    for &(key, label) in keys {
        let values: BTreeSet<Option<&String>> = runs.iter().map(|(_, s)| s.get(key)).collect();
        if values.len() <= 1 || out.iter().any(|d| d.label == label) {
            continue;
        }
        let listed: Vec<String> = runs
            .iter()
            .map(|(name, s)| {
                format!(
                    "{} in {name}",
                    s.get(key).map_or("not recorded", String::as_str)
                )
            })
            .collect();
        out.push(SettingDifference {
            key: key.into(),
            label: label.into(),
            listed: listed.join(", "),
        });
    }
    out
}
