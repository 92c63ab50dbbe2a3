//! Estimators: what a symptom *should* have cost.
//!
//! Each estimator is a pure function from raw string inputs (CLI `key=value`, a web
//! form, or a JSON body turned into strings) to a [`Chain`]: the resolved inputs, each
//! derived line with its formula written out with the numbers substituted, the flat
//! results, and a sanity sentence. No I/O happens here: callers read files (e.g. a
//! `config.json`) and pass their text in.
//!
//! Conventions (GB = 1e9 B, TB/s = 1e12 B/s, TFLOP = 1e12 FLOP, times in ms):
//! - weight bytes per GPU = params × bytes per weight / TP;
//! - KV bytes per token per GPU = 2 × layers × ceil(kv_heads / TP) × head_dim × bytes
//!   (GQA), or layers × (kv_lora_rank + qk_rope_head_dim) × bytes on every rank (MLA);
//! - decode floor = (weight bytes + batch × context × KV bytes per token) / HBM bandwidth;
//! - prefill compute = 2 × params × tokens / TP at peak × MFU, the peak of the compute
//!   precision weights × activations map to ([`precision::compute_peak`]).

mod amdahl;
mod chain;
mod cost;
mod decode_floor;
pub mod defaults;
pub mod dtype;
pub mod expected_cost;
pub mod fitted;
pub mod fmt;
pub mod gpus;
mod input;
mod kv_pages;
pub mod layers;
mod memory_fit;
mod mixed_step;
pub mod models;
mod periodic_tail;
pub mod precision;
mod precision_change;
mod prefix_reuse;
pub mod quant;
mod setup;
pub mod spelling;
mod tp_allreduce;

use std::collections::BTreeMap;

use serde::Serialize;

pub use chain::{display, humanize_key, result_unit, show_in_unit, Chain, Line, Shown};
pub use dtype::Dtype;
pub use gpus::{GpuSpec, Provenance, Sourced};
pub use input::parse_number;
pub use models::{CatalogModel, KvLayout, ModelSpec, ModelSummary, ParamCount};

/// Raw inputs as they arrive: field name → text. Blank values count as not given,
/// so an empty web-form field falls back to its default.
pub type Inputs = BTreeMap<String, String>;

pub use crate::FieldError;

/// Why [`run`] produced no chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EstimateError {
    #[error("unknown estimator `{0}`; known: {known}", known = names().join(", "))]
    UnknownEstimator(String),
    #[error("invalid inputs: {}", list_errors(.0))]
    Invalid(Vec<FieldError>),
}

fn list_errors(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Describes one input field; the web form is generated from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldSpec {
    pub name: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub default: Option<&'static str>,
    pub help: &'static str,
    pub required: bool,
}

/// One estimator: its contract name, a title and one-line summary, the fields it
/// accepts (anything else is refused), and the pure function that runs it.
#[derive(Debug, Clone, Copy)]
pub struct EstimatorInfo {
    pub name: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    pub fields: &'static [FieldSpec],
    /// A worked example from the method's reference numbers, as a query string of inputs.
    pub example: &'static str,
    pub run: fn(&Inputs) -> Result<Chain, Vec<FieldError>>,
}

static REGISTRY: [EstimatorInfo; 10] = [
    prefix_reuse::INFO,
    decode_floor::INFO,
    mixed_step::INFO,
    memory_fit::INFO,
    kv_pages::INFO,
    precision_change::INFO,
    tp_allreduce::INFO,
    amdahl::INFO,
    periodic_tail::INFO,
    cost::INFO,
];

/// All estimators, in the order the issue lists them.
pub fn registry() -> &'static [EstimatorInfo] {
    &REGISTRY
}

/// The estimator with this exact name.
pub fn find(name: &str) -> Option<&'static EstimatorInfo> {
    REGISTRY.iter().find(|e| e.name == name)
}

fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// decode-floor on raw inputs with these constants, and its expected step's basis (what
/// the calibration fits the constants on).
pub fn decode_terms(
    inputs: &Inputs,
    constants: &expected_cost::Constants,
) -> Result<(Chain, expected_cost::Basis), EstimateError> {
    decode_floor::evaluate(inputs, constants).map_err(EstimateError::Invalid)
}

/// mixed-step on raw inputs with these constants, and its step's parts before them.
pub fn prefill_terms(
    inputs: &Inputs,
    constants: &expected_cost::Constants,
) -> Result<(Chain, expected_cost::PrefillParts), EstimateError> {
    mixed_step::evaluate(inputs, constants).map_err(EstimateError::Invalid)
}

/// Runs the estimator `name` on raw inputs.
pub fn run(name: &str, inputs: &Inputs) -> Result<Chain, EstimateError> {
    let info = find(name).ok_or_else(|| EstimateError::UnknownEstimator(name.to_string()))?;
    (info.run)(inputs).map_err(EstimateError::Invalid)
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// Builds inputs from `"k=v k=v"`, the way the CLI receives them.
    pub fn inputs(args: &str) -> Inputs {
        args.split_whitespace()
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("key=value");
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    pub fn ok(name: &str, args: &str) -> Chain {
        run(name, &inputs(args)).unwrap_or_else(|e| panic!("{name} {args}: {e}"))
    }

    pub fn errs(name: &str, args: &str) -> Vec<FieldError> {
        match run(name, &inputs(args)) {
            Err(EstimateError::Invalid(errors)) => errors,
            other => panic!("{name} {args}: expected field errors, got {other:?}"),
        }
    }

    /// Asserts that `field` has an error whose message contains `needle`.
    pub fn has_err(errors: &[FieldError], field: &str, needle: &str) {
        assert!(
            errors
                .iter()
                .any(|e| e.field == field && e.message.contains(needle)),
            "no error on `{field}` containing `{needle}` in {errors:?}"
        );
    }

    pub fn num(chain: &Chain, key: &str) -> f64 {
        chain.results[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} is not a number in {:?}", chain.results))
    }

    /// Relative error within 0.5%, the reference tolerance.
    pub fn close(chain: &Chain, key: &str, want: f64) {
        let got = num(chain, key);
        assert!(
            (got - want).abs() <= 0.005 * want.abs() + 1e-9,
            "{}: {key} = {got}, want {want}",
            chain.estimator
        );
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use serde_json::{json, Value};

    const E: &str = "model=llama-3.1-8b gpu=h100-sxm";

    /// The cases of shared/tools/check-estimators, through the same entry point.
    #[test]
    fn check_estimators_contract() {
        type Case = (&'static str, String, Vec<(&'static str, Value)>);
        let cases: Vec<Case> = vec![
            (
                "prefix-reuse",
                "prompt_tokens=3000 cached_tokens_before=2432".into(),
                vec![
                    ("computed_before", json!(568)),
                    ("computed_after", json!(3000)),
                    ("prefill_ratio", json!(5.282)),
                ],
            ),
            (
                "prefix-reuse",
                "prompt_tokens=3000 shared_prefix_tokens=2560 hit_rate=0.95".into(),
                vec![("computed_before", json!(568))],
            ),
            (
                "decode-floor",
                format!("{E} batch=64 context=4096 measured_itl_ms=24"),
                vec![
                    ("weight_bytes_per_gpu", json!(16060522496u64)),
                    ("kv_bytes_per_token_per_gpu", json!(131072)),
                    ("kv_bytes_per_step", json!(34359738368u64)),
                    ("floor_ms", json!(15.05)),
                    ("floor_over_measured", json!(0.627)),
                    ("band", json!("overhead")),
                ],
            ),
            (
                "mixed-step",
                format!("{E} batch=64 context=4096 chunk_tokens=2048 mfu=0.5"),
                vec![
                    ("step_tokens", json!(2112)),
                    ("prefill_flops", json!(33.92e12)),
                    ("compute_ms", json!(68.59)),
                    ("kv_ms", json!(10.26)),
                    ("step_ms", json!(78.85)),
                ],
            ),
            (
                "memory-fit",
                "model=llama-3.3-70b gpu=h100-sxm tp=2 gpu_memory_utilization=0.92 \
                 max_model_len=131072"
                    .into(),
                vec![
                    ("weight_bytes_per_gpu", json!(70553706496u64)),
                    ("budget_bytes_per_gpu", json!(78.2184e9)),
                    ("left_bytes_per_gpu", json!(7.6647e9)),
                    ("kv_bytes_one_seq_per_gpu", json!(21474836480u64)),
                    ("fits", json!(false)),
                ],
            ),
            (
                "kv-pages",
                "model=llama-3.1-8b device_bytes=80e9 gpu_memory_utilization=0.92 \
                 other_bytes=2e9 page_tokens=16 requests=200 prompt_tokens=2048 \
                 output_tokens=1024"
                    .into(),
                vec![
                    ("pool_pages", json!(26483)),
                    ("pages_at_start", json!(25600)),
                    ("pages_at_finish", json!(38400)),
                    ("max_full_length_requests", json!(137)),
                    ("preemption_expected", json!(true)),
                ],
            ),
            (
                "amdahl",
                "phases=prefill:0.4:1,decode:0.6:1.2".into(),
                vec![("end_to_end_speedup", json!(1.1111))],
            ),
            (
                "amdahl",
                "phases=rmsnorm:0.09:3,rest:0.91:1".into(),
                vec![("end_to_end_speedup", json!(1.0638))],
            ),
            (
                "cost",
                "gpu_hour_usd=2.5 gpus=8 output_tokens_per_s=3000".into(),
                vec![("usd_per_million_output_tokens", json!(1.852))],
            ),
        ];
        for (name, args, want) in cases {
            let chain = ok(name, &args);
            for (key, value) in want {
                match value {
                    Value::Number(n) => close(&chain, key, n.as_f64().unwrap()),
                    other => assert_eq!(chain.results[key], other, "{name} {key}"),
                }
            }
        }
    }

    #[test]
    fn registry_names_are_the_contract() {
        let names: Vec<_> = registry().iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "prefix-reuse",
                "decode-floor",
                "mixed-step",
                "memory-fit",
                "kv-pages",
                "precision-change",
                "tp-allreduce",
                "amdahl",
                "periodic-tail",
                "cost"
            ]
        );
        for info in registry() {
            assert!(!info.summary.contains('\n'), "{} summary", info.name);
            let mut seen = std::collections::BTreeSet::new();
            for f in info.fields {
                assert!(seen.insert(f.name), "{} lists {} twice", info.name, f.name);
                assert!(
                    !(f.required && f.default.is_some()),
                    "{}.{}",
                    info.name,
                    f.name
                );
            }
        }
        assert!(find("decode-floor").is_some());
        assert!(find("Decode-Floor").is_none());
    }

    #[test]
    fn model_estimators_share_the_common_fields() {
        for name in [
            "decode-floor",
            "mixed-step",
            "memory-fit",
            "kv-pages",
            "tp-allreduce",
            "periodic-tail",
        ] {
            let fields: Vec<_> = find(name).unwrap().fields.iter().map(|f| f.name).collect();
            for common in [
                "model", "config", "gpu", "tp", "kv_dtype", "params", "layers",
            ] {
                assert!(fields.contains(&common), "{name} lacks {common}");
            }
        }
    }

    #[test]
    fn unknown_estimator_is_named() {
        let err = run("decode-flor", &Inputs::new()).unwrap_err();
        assert!(matches!(err, EstimateError::UnknownEstimator(ref n) if n == "decode-flor"));
        assert!(err.to_string().contains("decode-floor"));
    }

    #[test]
    fn invalid_display_lists_every_field() {
        let err = run("decode-floor", &inputs("model=llama-3.1-8b batch=x")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("batch:"), "{text}");
        assert!(text.contains("context:"), "{text}");
    }

    #[test]
    fn chain_json_shape() {
        let chain = ok("decode-floor", &format!("{E} batch=64 context=4096"));
        let v = serde_json::to_value(&chain).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys.len(), 6);
        for k in ["estimator", "inputs", "results", "lines", "sanity", "units"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        let line = &v["lines"][0];
        for k in ["key", "label", "formula", "value", "unit"] {
            assert!(line.get(k).is_some(), "line.{k}");
        }
        assert_eq!(v["inputs"]["gpu"], "h100-sxm");
        assert_eq!(v["units"]["floor_ms"], "ms");
        assert_eq!(v["units"]["kv_bytes_per_step"], "B");
        let defaulted = ok("decode-floor", "model=llama-3.1-8b batch=1 context=1");
        assert_eq!(defaulted.inputs["gpu"], "h100-sxm (default)");
    }
}
