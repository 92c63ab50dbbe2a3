//! Estimator drills: for each estimator, realistic inputs drawn from a seed (catalog
//! models and GPUs, plausible batch, context and rates), the one result the learner is
//! asked for, and the grade of an answer against the estimator's own chain.
//!
//! A drill is fully named by its id, `{estimator}.{seed}` (whole chain) or
//! `{estimator}.{seed}.step` (one step of it), so nothing needs storing to pose it and
//! `perfjournal estimate NAME key=value …` with its inputs reproduces the expected value.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::rng::Dice;
use super::{within_tolerance, TOLERANCE};
use crate::estimate::{self, gpus, models, Chain, Inputs};
use crate::quantity::{self, Unit};
use crate::FieldError;

/// How much of a chain one drill asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// One step of the chain (weights per GPU, KV bytes per token, …).
    Step,
    /// The chain's end result.
    Chain,
}

impl Level {
    pub fn slug(self) -> &'static str {
        match self {
            Level::Step => "step",
            Level::Chain => "chain",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Level::Step => "single step",
            Level::Chain => "whole chain",
        }
    }
}

/// The result a drill asks for: a numeric key of the estimator's `results`, its unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asks {
    pub key: String,
    pub unit: Unit,
}

/// One posed drill: no expected value in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Drill {
    pub estimator: &'static str,
    pub seed: u64,
    pub level: Level,
    /// The estimator's own input keys with scalar values.
    pub inputs: BTreeMap<String, Value>,
    pub asks: Asks,
    /// What the estimator gives for these inputs (kept out of what is shown).
    chain: Chain,
}

/// Which result each estimator's drills ask for: (estimator, whole chain, single step).
const ASKS: &[(&str, &str, Option<&str>)] = &[
    ("prefix-reuse", "prefill_ratio", Some("computed_before")),
    ("decode-floor", "floor_ms", Some("weight_bytes_per_gpu")),
    ("mixed-step", "step_ms", Some("prefill_flops")),
    (
        "memory-fit",
        "left_bytes_per_gpu",
        Some("weight_bytes_per_gpu"),
    ),
    (
        "kv-pages",
        "max_full_length_requests",
        Some("kv_bytes_per_token_per_gpu"),
    ),
    (
        "precision-change",
        "expected_speedup",
        Some("weight_bytes_per_gpu_to"),
    ),
    ("tp-allreduce", "step_ms", Some("bytes_per_token_per_gpu")),
    ("amdahl", "end_to_end_speedup", None),
    ("periodic-tail", "slow_step_share", Some("chunk_compute_ms")),
    ("cost", "usd_per_million_output_tokens", None),
];

/// Tries per seed before giving up; the tests show every seed succeeds well before.
const TRIES: usize = 64;

/// Whether `estimator` has drills at `level`.
pub fn has_level(estimator: &str, level: Level) -> bool {
    ASKS.iter()
        .any(|(name, _, step)| *name == estimator && (level == Level::Chain || step.is_some()))
}

/// The key a drill of this estimator and level asks for.
fn asked_key(estimator: &str, level: Level) -> Option<&'static str> {
    let (_, chain, step) = ASKS.iter().find(|(name, ..)| *name == estimator)?;
    match level {
        Level::Chain => Some(chain),
        Level::Step => *step,
    }
}

/// `{estimator}.{seed}` or `{estimator}.{seed}.step`.
pub fn drill_id(estimator: &str, seed: u64, level: Level) -> String {
    match level {
        Level::Chain => format!("{estimator}.{seed}"),
        Level::Step => format!("{estimator}.{seed}.step"),
    }
}

/// The parts of a drill id, when it names a known estimator, a seed and a level.
pub fn parse_drill_id(id: &str) -> Option<(&'static str, u64, Level)> {
    let mut parts = id.split('.');
    let name = parts.next()?;
    let seed = parts.next()?.parse().ok()?;
    let level = match parts.next() {
        None => Level::Chain,
        Some("step") => Level::Step,
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    let info = estimate::find(name)?;
    has_level(info.name, level).then_some((info.name, seed, level))
}

impl Drill {
    pub fn id(&self) -> String {
        drill_id(self.estimator, self.seed, self.level)
    }

    /// The inputs as the estimator reads them (and as `perfjournal estimate` takes them).
    pub fn raw_inputs(&self) -> Inputs {
        raw(&self.inputs)
    }

    /// `key=value …` for the command line.
    pub fn command(&self) -> String {
        let args: Vec<String> = self
            .raw_inputs()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("perfjournal estimate {} {}", self.estimator, args.join(" "))
    }

    /// The expected value of the asked result.
    pub fn expected(&self) -> f64 {
        self.chain.results[&self.asks.key]
            .as_f64()
            .unwrap_or(f64::NAN)
    }

    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The chain's lines up to and including the one that gives the asked result (a
    /// single-step drill stops early): the steps a learner may type along the way.
    pub fn steps(&self) -> Vec<&estimate::Line> {
        let end = self
            .chain
            .lines
            .iter()
            .position(|l| l.key == self.asks.key)
            .map_or(self.chain.lines.len(), |i| i + 1);
        self.chain.lines[..end]
            .iter()
            .filter(|l| l.value.is_number())
            .collect()
    }
}

fn raw(inputs: &BTreeMap<String, Value>) -> Inputs {
    inputs
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}

/// The drill for `estimator` at `level` from `seed`; `None` for an unknown estimator or a
/// level it has no drill for.
pub fn generate(estimator: &str, seed: u64, level: Level) -> Option<Drill> {
    let info = estimate::find(estimator)?;
    let key = asked_key(info.name, level)?;
    // The stream does not depend on the level: the step drill of a seed is a step of the
    // chain drill of that seed.
    let mut dice = Dice::new(seed, info.name);
    for _ in 0..TRIES {
        let inputs = candidate(info.name, &mut dice);
        let Ok(chain) = estimate::run(info.name, &raw(&inputs)) else {
            continue;
        };
        let (Some(value), Some(unit)) = (
            chain.results.get(key).and_then(Value::as_f64),
            chain.units.get(key).copied(),
        ) else {
            continue;
        };
        if !value.is_finite() || value.abs() < 1e-9 || !realistic(info.name, &chain) {
            continue;
        }
        return Some(Drill {
            estimator: info.name,
            seed,
            level,
            inputs,
            asks: Asks {
                key: key.to_string(),
                unit,
            },
            chain,
        });
    }
    None
}

/// Rejects draws that are valid but teach nothing (a model that does not fit at all).
fn realistic(estimator: &str, chain: &Chain) -> bool {
    let num = |k: &str| chain.results.get(k).and_then(Value::as_f64);
    match estimator {
        "memory-fit" => num("left_bytes_per_gpu").is_some_and(|v| v > 0.0),
        "kv-pages" => num("max_full_length_requests").is_some_and(|v| v >= 1.0),
        "periodic-tail" => num("slow_step_share").is_some_and(|v| v > 0.0 && v < 1.0),
        _ => true,
    }
}

const BATCHES: &[u64] = &[1, 4, 8, 16, 32, 64, 128, 256];
const CONTEXTS: &[u64] = &[512, 1024, 2048, 4096, 8192, 16384, 32768];
const CHUNKS: &[u64] = &[512, 1024, 2048, 4096, 8192];
const TPS: &[u64] = &[1, 2, 4, 8];

/// A catalog model, a GPU, and the smallest tensor-parallel degree at which bf16 weights
/// take at most 70 % of each GPU's memory (`min_tp` forces some parallelism).
fn deployment(d: &mut Dice, min_tp: u64) -> Option<(&'static str, &'static str, u64)> {
    let model = d.pick(models::CATALOG);
    let gpu = d.pick(gpus::GPUS);
    let params = model.spec.params()?.total as f64;
    let tp = TPS
        .iter()
        .copied()
        .filter(|&tp| tp >= min_tp)
        .find(|&tp| params * 2.0 / tp as f64 <= 0.7 * gpu.memory_bytes.value)?;
    Some((model.name, gpu.name, tp))
}

fn put(map: &mut BTreeMap<String, Value>, key: &str, value: Value) {
    map.insert(key.to_string(), value);
}

/// States the precision a compute drill runs at (the chain names the peak it takes
/// from weights × activations), so the learner knows which peak to divide by.
fn precision(m: &mut BTreeMap<String, Value>) {
    put(m, "weight_dtype", json!("bf16"));
    put(m, "activation_dtype", json!("bf16"));
}

/// Rounds to two decimals, so inputs read as a person would write them.
fn cents(x: f64) -> Value {
    json!((x * 100.0).round() / 100.0)
}

/// One draw of inputs for `estimator` (valid or not: the caller runs it and retries).
fn candidate(estimator: &str, d: &mut Dice) -> BTreeMap<String, Value> {
    let mut m = BTreeMap::new();
    let needs_model = !matches!(estimator, "prefix-reuse" | "amdahl" | "cost");
    if needs_model {
        let min_tp = if estimator == "tp-allreduce" { 2 } else { 1 };
        let Some((model, gpu, tp)) = deployment(d, min_tp) else {
            return m;
        };
        put(&mut m, "model", json!(model));
        put(&mut m, "gpu", json!(gpu));
        put(&mut m, "tp", json!(tp));
    }
    match estimator {
        "prefix-reuse" => {
            let prompt = d.stepped(1000.0, 8000.0, 100.0);
            let cached = (prompt * d.between(0.5, 0.95) / 16.0).round() * 16.0;
            put(&mut m, "prompt_tokens", json!(prompt as u64));
            put(&mut m, "cached_tokens_before", json!(cached as u64));
        }
        "decode-floor" | "tp-allreduce" => {
            put(&mut m, "batch", json!(d.pick(BATCHES)));
            put(&mut m, "context", json!(d.pick(CONTEXTS)));
        }
        "mixed-step" => {
            put(&mut m, "batch", json!(d.pick(BATCHES)));
            put(&mut m, "context", json!(d.pick(CONTEXTS)));
            put(&mut m, "chunk_tokens", json!(d.pick(CHUNKS)));
            put(&mut m, "mfu", cents(d.between(0.3, 0.7)));
            precision(&mut m);
        }
        "memory-fit" => {
            put(
                &mut m,
                "gpu_memory_utilization",
                cents(d.between(0.85, 0.95)),
            );
            put(&mut m, "max_model_len", json!(d.pick(CONTEXTS)));
        }
        "kv-pages" => {
            put(
                &mut m,
                "gpu_memory_utilization",
                cents(d.between(0.85, 0.95)),
            );
            put(
                &mut m,
                "requests",
                json!(d.pick(&[32u64, 64, 128, 256, 512])),
            );
            put(
                &mut m,
                "prompt_tokens",
                json!(d.pick(&[512u64, 1024, 2048, 4096])),
            );
            put(
                &mut m,
                "output_tokens",
                json!(d.pick(&[128u64, 256, 512, 1024])),
            );
        }
        "precision-change" => {
            put(&mut m, "batch", json!(d.pick(BATCHES)));
            put(&mut m, "context", json!(d.pick(CONTEXTS)));
            put(&mut m, "from", json!("bf16"));
            put(&mut m, "to", json!(d.pick(&["fp8", "int8", "int4"])));
        }
        "periodic-tail" => {
            put(&mut m, "batch", json!(d.pick(&[16u64, 32, 64, 128])));
            put(&mut m, "context", json!(d.pick(&[1024u64, 2048, 4096])));
            put(&mut m, "chunk_tokens", json!(d.pick(CHUNKS)));
            put(
                &mut m,
                "long_prompt_tokens",
                json!(d.pick(&[16384u64, 32768, 65536])),
            );
            put(&mut m, "period_s", json!(d.pick(&[1u64, 2, 5, 10])));
            put(&mut m, "mfu", cents(d.between(0.4, 0.7)));
            precision(&mut m);
        }
        "amdahl" => {
            let names = ["prefill", "decode", "sampling", "scheduling"];
            let n = 2 + d.below(2);
            let mut left = 100u64;
            let mut parts = Vec::new();
            for (i, name) in names.iter().take(n).enumerate() {
                let share = if i + 1 == n {
                    left
                } else {
                    let s = (d.stepped(10.0, 70.0, 5.0) as u64).min(left - 10);
                    left -= s;
                    s
                };
                let speedup = if i == 0 {
                    d.stepped(1.2, 4.0, 0.1)
                } else {
                    d.stepped(1.0, 2.0, 0.1)
                };
                parts.push(format!("{name}:{}:{}", share as f64 / 100.0, speedup));
            }
            put(&mut m, "phases", json!(parts.join(",")));
        }
        "cost" => {
            put(&mut m, "gpu_hour_usd", cents(d.between(1.5, 6.0)));
            put(&mut m, "gpus", json!(d.pick(&[1u64, 2, 4, 8])));
            put(
                &mut m,
                "output_tokens_per_s",
                json!(d.stepped(500.0, 20000.0, 100.0) as u64),
            );
        }
        _ => {}
    }
    if needs_model {
        state_dtypes(estimator, &mut m);
    }
    m
}

/// States every dtype the estimator reads and the drill left at its default (weights,
/// KV cache, activations): the figures depend on them, so the learner must see them.
fn state_dtypes(estimator: &str, m: &mut BTreeMap<String, Value>) {
    let Some(info) = crate::estimate::find(estimator) else {
        return;
    };
    for f in info.fields {
        if matches!(f.name, "weight_dtype" | "kv_dtype" | "activation_dtype") {
            // A default that is a rule rather than a dtype ("follows the weights") is
            // left to the drill itself to state (`precision`).
            let default = f
                .default
                .filter(|d| crate::estimate::dtype::Dtype::parse(d).is_ok());
            if let (false, Some(default)) = (m.contains_key(f.name), default) {
                put(m, f.name, json!(default));
            }
        }
    }
}

/// What the learner sent: the asked value, and any intermediate values by line key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    pub value: f64,
    pub steps: BTreeMap<String, f64>,
}

/// One typed intermediate value against the chain's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepCheck {
    pub key: String,
    pub label: String,
    pub typed: f64,
    pub expected: f64,
    pub unit: String,
    pub correct: bool,
}

/// The grade of one answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub correct: bool,
    pub expected: f64,
    pub given: f64,
    pub tolerance: f64,
    /// (given − expected) / expected.
    pub error: f64,
    /// The typed intermediate values in chain order.
    pub steps: Vec<StepCheck>,
    /// The first typed step that was off by more than the tolerance.
    pub first_wrong_step: Option<String>,
}

/// Grades `answer` against the drill's own chain.
pub fn grade(drill: &Drill, answer: &Answer) -> Grade {
    let expected = drill.expected();
    let steps: Vec<StepCheck> = drill
        .steps()
        .into_iter()
        .filter_map(|line| {
            let typed = *answer.steps.get(&line.key)?;
            let want = line.value.as_f64()?;
            Some(StepCheck {
                key: line.key.clone(),
                label: line.label.clone(),
                typed,
                expected: want,
                unit: line.unit.clone(),
                correct: within_tolerance(typed, want),
            })
        })
        .collect();
    let first_wrong_step = steps.iter().find(|s| !s.correct).map(|s| s.key.clone());
    Grade {
        correct: within_tolerance(answer.value, expected),
        expected,
        given: answer.value,
        tolerance: TOLERANCE,
        error: (answer.value - expected) / expected,
        steps,
        first_wrong_step,
    }
}

/// The unit a chain line's value is written in, when it is one of ours (`×` and bare
/// lines are plain ratios; `%/day` and the like have none).
fn line_unit(unit: &str) -> Option<Unit> {
    if unit.is_empty() {
        Some(Unit::Ratio)
    } else {
        Unit::parse(unit)
    }
}

/// Reads an answer as typed: the asked value in the drill's unit (a value typed in
/// another unit of the same dimension is converted, another dimension is refused), and
/// the intermediate values by line key, each in its line's unit. Blank steps are skipped.
pub fn read_answer(
    drill: &Drill,
    value: &str,
    steps: &BTreeMap<String, String>,
) -> Result<Answer, Vec<FieldError>> {
    let mut errors = Vec::new();
    let main = if value.trim().is_empty() {
        errors.push(FieldError::new(
            "value",
            format!(
                "is required: the {} this chain gives, in {}",
                drill.asks.key,
                drill.asks.unit.name()
            ),
        ));
        None
    } else {
        quantity::read(value, drill.asks.unit)
            .map_err(|e| errors.push(FieldError::new("value", e.to_string())))
            .ok()
    };
    let lines = drill.steps();
    let mut typed = BTreeMap::new();
    for (key, raw) in steps {
        if raw.trim().is_empty() {
            continue;
        }
        let field = format!("steps.{key}");
        let Some(line) = lines.iter().find(|l| &l.key == key) else {
            errors.push(FieldError::new(
                field,
                "is not a step of this drill's chain",
            ));
            continue;
        };
        let read = match line_unit(&line.unit) {
            Some(unit) => quantity::read(raw, unit).map_err(|e| e.to_string()),
            None => match quantity::split(raw) {
                Ok((v, None)) => Ok(v),
                Ok((_, Some(u))) => Err(format!(
                    "type the number in {} (got {})",
                    line.unit,
                    u.name()
                )),
                Err(e) => Err(e.to_string()),
            },
        };
        match read {
            Ok(v) => {
                typed.insert(key.clone(), v);
            }
            Err(msg) => errors.push(FieldError::new(field, msg)),
        }
    }
    match main {
        Some(value) if errors.is_empty() => Ok(Answer {
            value,
            steps: typed,
        }),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEDS: u64 = 300;

    #[test]
    fn every_estimator_has_a_drill_and_the_ids_round_trip() {
        for info in estimate::registry() {
            assert!(has_level(info.name, Level::Chain), "{}", info.name);
            let d = generate(info.name, 7, Level::Chain).unwrap();
            assert_eq!(parse_drill_id(&d.id()), Some((info.name, 7, Level::Chain)));
            if has_level(info.name, Level::Step) {
                let s = generate(info.name, 7, Level::Step).unwrap();
                assert_eq!(s.id(), format!("{}.7.step", info.name));
                assert_eq!(parse_drill_id(&s.id()), Some((info.name, 7, Level::Step)));
                // the step drill is a step of the same chain
                assert_eq!(s.inputs, d.inputs);
            }
        }
        assert_eq!(parse_drill_id("decode-flor.1"), None);
        assert_eq!(parse_drill_id("decode-floor.x"), None);
        assert_eq!(parse_drill_id("decode-floor.1.hard"), None);
        assert_eq!(parse_drill_id("cost.1.step"), None);
        assert_eq!(parse_drill_id("cost.1.step.x"), None);
    }

    /// For many seeds, every generator's inputs are valid for its estimator, asked for
    /// a numeric result with a unit, and the expected value is the estimator's result.
    #[test]
    fn generated_inputs_are_valid_and_expected_is_the_estimators_result() {
        for info in estimate::registry() {
            for level in [Level::Chain, Level::Step] {
                if !has_level(info.name, level) {
                    continue;
                }
                for seed in 0..SEEDS {
                    let d = generate(info.name, seed, level)
                        .unwrap_or_else(|| panic!("{} seed {seed} {level:?}", info.name));
                    let fields: Vec<&str> = info.fields.iter().map(|f| f.name).collect();
                    for (k, v) in &d.inputs {
                        assert!(fields.contains(&k.as_str()), "{} has no {k}", info.name);
                        assert!(v.is_string() || v.is_number(), "{k} = {v} is not scalar");
                    }
                    let chain = estimate::run(info.name, &d.raw_inputs())
                        .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", info.name));
                    let want = chain.results[&d.asks.key].as_f64().unwrap();
                    assert_eq!(d.expected(), want);
                    assert!(want.is_finite() && want != 0.0);
                    assert_eq!(chain.units[&d.asks.key], d.asks.unit);
                    assert!(
                        d.steps().iter().any(|l| l.key == d.asks.key)
                            || chain.lines.iter().all(|l| l.key != d.asks.key)
                    );
                }
            }
        }
    }

    /// Every drill on a model states each dtype its estimator reads.
    #[test]
    fn every_model_drill_states_the_dtypes_its_estimator_reads() {
        for info in crate::estimate::registry() {
            let reads: Vec<&str> = info
                .fields
                .iter()
                .map(|f| f.name)
                .filter(|n| n.ends_with("_dtype"))
                .collect();
            if reads.is_empty() {
                continue;
            }
            let mut posed = 0;
            for seed in 0..5 {
                let Some(d) = generate(info.name, seed, Level::Chain) else {
                    continue;
                };
                posed += 1;
                for name in &reads {
                    assert!(
                        d.inputs.contains_key(*name),
                        "{} seed {seed}: {name} not stated in {:?}",
                        info.name,
                        d.inputs
                    );
                    assert!(
                        d.inputs[*name]
                            .as_str()
                            .is_some_and(|v| crate::estimate::dtype::Dtype::parse(v).is_ok()),
                        "{} seed {seed}: {name} = {}",
                        info.name,
                        d.inputs[*name]
                    );
                }
            }
            assert!(posed > 0, "{}: no drill posed in five seeds", info.name);
        }
    }

    #[test]
    fn compute_drills_state_the_precision_and_the_chain_names_the_peak() {
        for name in ["mixed-step", "periodic-tail"] {
            let d = generate(name, 7, Level::Chain).unwrap();
            assert_eq!(d.inputs["weight_dtype"], json!("bf16"), "{name}");
            assert_eq!(d.inputs["activation_dtype"], json!("bf16"), "{name}");
            assert!(d.command().contains("activation_dtype=bf16"), "{name}");
            let peak = d.chain().lines.iter().find(|l| l.key == "compute_peak");
            assert!(peak.is_some_and(|l| l.formula.contains("W16A16")), "{name}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_drill_and_seeds_differ() {
        for info in estimate::registry() {
            let a = generate(info.name, 42, Level::Chain).unwrap();
            let b = generate(info.name, 42, Level::Chain).unwrap();
            assert_eq!(a, b, "{}", info.name);
            let distinct: std::collections::BTreeSet<String> = (0..20)
                .map(|s| {
                    serde_json::to_string(&generate(info.name, s, Level::Chain).unwrap().inputs)
                        .unwrap()
                })
                .collect();
            assert!(distinct.len() >= 10, "{}: {}", info.name, distinct.len());
        }
    }

    #[test]
    fn a_seed_is_pinned_to_its_inputs() {
        // If this changes, every shared seed names another drill: do not change it lightly.
        let d = generate("cost", 1, Level::Chain).unwrap();
        assert_eq!(
            d.command(),
            "perfjournal estimate cost gpu_hour_usd=4.93 gpus=8 output_tokens_per_s=2700"
        );
        assert_eq!(d.asks.key, "usd_per_million_output_tokens");
        assert!((d.expected() - 4.0576).abs() < 1e-3);
    }

    #[test]
    fn grading_is_within_five_percent() {
        let d = generate("decode-floor", 3, Level::Chain).unwrap();
        let e = d.expected();
        let ok = grade(
            &d,
            &Answer {
                value: e * 1.04,
                steps: BTreeMap::new(),
            },
        );
        assert!(ok.correct);
        assert_eq!(ok.tolerance, 0.05);
        assert!(
            !grade(
                &d,
                &Answer {
                    value: e * 1.06,
                    steps: BTreeMap::new()
                }
            )
            .correct
        );
        assert!(
            grade(
                &d,
                &Answer {
                    value: e * 0.96,
                    steps: BTreeMap::new()
                }
            )
            .correct
        );
    }

    #[test]
    fn the_first_wrong_step_is_found_in_chain_order() {
        let d = generate("decode-floor", 5, Level::Chain).unwrap();
        let lines = d.steps();
        assert!(lines.len() >= 3, "{lines:?}");
        let v = |i: usize| lines[i].value.as_f64().unwrap();
        let mut steps = BTreeMap::new();
        steps.insert(lines[0].key.clone(), v(0));
        steps.insert(lines[1].key.clone(), v(1) * 2.0);
        steps.insert(lines[2].key.clone(), v(2) * 3.0);
        let g = grade(
            &d,
            &Answer {
                value: d.expected(),
                steps,
            },
        );
        assert!(g.correct);
        assert_eq!(g.steps.len(), 3);
        assert!(g.steps[0].correct && !g.steps[1].correct);
        assert_eq!(g.first_wrong_step.as_deref(), Some(lines[1].key.as_str()));
        let none = grade(
            &d,
            &Answer {
                value: 0.0,
                steps: BTreeMap::new(),
            },
        );
        assert_eq!(none.first_wrong_step, None);
        assert!(!none.correct);
    }

    #[test]
    fn answers_are_read_in_the_asked_unit() {
        let d = generate("decode-floor", 9, Level::Step).unwrap();
        assert_eq!(d.asks.unit, Unit::Bytes);
        let e = d.expected();
        let typed = format!("{} GB", e / 1e9);
        let a = read_answer(&d, &typed, &BTreeMap::new()).unwrap();
        assert!((a.value - e).abs() < 1.0);
        let errs = read_answer(&d, "12 ms", &BTreeMap::new()).unwrap_err();
        assert_eq!(errs[0].field, "value");
        assert!(errs[0].message.contains("ms"), "{errs:?}");
        let errs = read_answer(&d, "", &BTreeMap::new()).unwrap_err();
        assert!(errs[0].message.contains("weight_bytes_per_gpu"), "{errs:?}");
        let mut steps = BTreeMap::new();
        steps.insert("nonsense".to_string(), "1".to_string());
        let errs = read_answer(&d, "1 GB", &steps).unwrap_err();
        assert_eq!(errs[0].field, "steps.nonsense");
        // a typed step in its line's unit
        let line = &d.steps()[0];
        let mut steps = BTreeMap::new();
        steps.insert(line.key.clone(), format!("{} {}", line.value, line.unit));
        steps.insert("ignored_blank".to_string(), " ".to_string());
        let a = read_answer(&d, "1 GB", &steps).unwrap();
        assert_eq!(a.steps.len(), 1);
    }
}
