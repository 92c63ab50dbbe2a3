//! How alike two symptoms are, for "seen before" and "related" lists.
//!
//! score = 0.20·metric + 0.20·phase + 0.10·regime + 0.15·model + 0.10·gpu
//!       + 0.05·engine version + 0.05·workload + 0.10·window + 0.05·text, each part in
//!       [0, 1]:
//! * metric, phase, regime: 1 when equal, 0 when different;
//! * model: 1 when equal, 0.5 in the same family (the name without its last
//!   `-` part: llama-3.1-8b and llama-3.1-70b), else 0;
//! * gpu: 1 when equal, 0.5 for the same chip (the name before its first `-`:
//!   h100-sxm and h100-pcie), else 0;
//! * engine version: 1 for the same engine and version, 0.5 for the same engine;
//! * workload: the mean over prompt and output length of min/max of the two;
//! * window: the share of the incident window's shape features both know that are
//!   equal (queue rising, KV cache full, preemptions, tail, slowest phase: see
//!   [`super::window_shape`]);
//! * text: Jaccard overlap of the words (3+ letters) of symptom and diagnosis.
//!
//! A part one side does not know counts 0.5 (neither evidence for nor against), so a
//! thin record is neither hidden nor promoted. Metric and phase carry the most weight
//! because the method's first two steps are what make two problems the same problem.

use std::collections::BTreeSet;

use super::Profile;
use crate::stats::mean;

pub const WEIGHTS: Parts = Parts {
    metric: 0.20,
    phase: 0.20,
    regime: 0.10,
    model: 0.15,
    gpu: 0.10,
    engine_version: 0.05,
    workload: 0.05,
    window: 0.10,
    text: 0.05,
};

/// One number per compared part: the weights, or one pair's part scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parts {
    pub metric: f64,
    pub phase: f64,
    pub regime: f64,
    pub model: f64,
    pub gpu: f64,
    pub engine_version: f64,
    pub workload: f64,
    pub window: f64,
    pub text: f64,
}

/// A profile with the words of its symptom and diagnosis.
#[derive(Debug, Clone)]
pub struct Symptom<'a> {
    pub profile: &'a Profile,
    pub text: &'a str,
}

/// The score and the parts it came from (shown as a tooltip).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Similarity {
    pub score: f64,
    pub parts: Parts,
}

const UNKNOWN: f64 = 0.5;

fn equal(a: &Option<String>, b: &Option<String>) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) => f64::from(u8::from(a == b)),
        _ => UNKNOWN,
    }
}

fn near(a: &Option<String>, b: &Option<String>, family: fn(&str) -> &str) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) if a == b => 1.0,
        (Some(a), Some(b)) if family(a) == family(b) => 0.5,
        (Some(_), Some(_)) => 0.0,
        _ => UNKNOWN,
    }
}

fn model_family(name: &str) -> &str {
    name.rsplit_once('-').map_or(name, |(head, _)| head)
}

fn gpu_chip(name: &str) -> &str {
    name.split_once('-').map_or(name, |(head, _)| head)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some(a.min(b) / a.max(b)),
        _ => None,
    }
}

/// Lower-case words of three or more letters.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return UNKNOWN;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// The similarity of two symptoms; see the module documentation for the formula.
pub fn similarity(a: &Symptom, b: &Symptom) -> Similarity {
    let (p, q) = (a.profile, b.profile);
    let engine_version = match (&p.engine, &q.engine) {
        (Some(e1), Some(e2)) if e1 == e2 => match (&p.engine_version, &q.engine_version) {
            (Some(v1), Some(v2)) if v1 == v2 => 1.0,
            (Some(_), Some(_)) => 0.5,
            _ => 0.75,
        },
        (Some(_), Some(_)) => 0.0,
        _ => UNKNOWN,
    };
    let shapes: Vec<f64> = [
        ratio(p.prompt_tokens, q.prompt_tokens),
        ratio(p.output_tokens, q.output_tokens),
    ]
    .into_iter()
    .flatten()
    .collect();
    let workload = mean(&shapes).unwrap_or(UNKNOWN);
    let s = Parts {
        metric: equal(&p.metric, &q.metric),
        phase: equal(&p.phase, &q.phase),
        regime: equal(&p.regime, &q.regime),
        model: near(&p.model, &q.model, model_family),
        gpu: near(&p.gpu, &q.gpu, gpu_chip),
        engine_version,
        workload,
        window: match (&p.window_shape, &q.window_shape) {
            (Some(x), Some(y)) => super::window_shape::alike(x, y).unwrap_or(UNKNOWN),
            _ => UNKNOWN,
        },
        text: jaccard(&words(a.text), &words(b.text)),
    };
    let w = WEIGHTS;
    let score = w.metric * s.metric
        + w.phase * s.phase
        + w.regime * s.regime
        + w.model * s.model
        + w.gpu * s.gpu
        + w.engine_version * s.engine_version
        + w.workload * s.workload
        + w.window * s.window
        + w.text * s.text;
    Similarity { score, parts: s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(model: &str, gpu: &str, version: &str, prompt: f64) -> Profile {
        Profile {
            metric: Some("ttft".into()),
            phase: Some("prefill".into()),
            regime: Some("compute-bound".into()),
            model: Some(model.into()),
            gpu: Some(gpu.into()),
            engine: Some("vllm".into()),
            engine_version: Some(version.into()),
            prompt_tokens: Some(prompt),
            output_tokens: Some(200.0),
            window_shape: Some("queue=rising;kv=full".into()),
            ..Profile::default()
        }
    }

    #[test]
    fn weights_sum_to_one_and_identical_scores_one() {
        let w = WEIGHTS;
        let sum = w.metric
            + w.phase
            + w.regime
            + w.model
            + w.gpu
            + w.engine_version
            + w.workload
            + w.window
            + w.text;
        assert!((sum - 1.0).abs() < 1e-12);
        let p = profile("llama-3.1-8b", "h100-sxm", "0.6.3", 3000.0);
        let a = Symptom {
            profile: &p,
            text: "prefix cache misses after template deploy",
        };
        assert!((similarity(&a, &a).score - 1.0).abs() < 1e-12);
    }

    #[test]
    fn closer_hardware_and_shape_rank_higher() {
        let me = profile("llama-3.1-8b", "h100-sxm", "0.6.3", 3000.0);
        let same_family = profile("llama-3.1-70b", "h100-pcie", "0.6.3", 3000.0);
        let other = profile("qwen-2.5-7b", "a100-80gb", "0.5.0", 500.0);
        let t = "prefill dominates TTFT";
        let s = |p: &Profile| {
            similarity(
                &Symptom {
                    profile: &me,
                    text: t,
                },
                &Symptom {
                    profile: p,
                    text: t,
                },
            )
        };
        let (near, far) = (s(&same_family), s(&other));
        assert_eq!(near.parts.model, 0.5);
        assert_eq!(near.parts.gpu, 0.5);
        assert_eq!(far.parts.model, 0.0);
        assert!((far.parts.workload - (500.0 / 3000.0 + 1.0) / 2.0).abs() < 1e-12);
        assert!(near.score > far.score);
    }

    #[test]
    fn a_window_of_the_same_shape_ranks_higher() {
        let shaped = |shape: &str| Profile {
            window_shape: Some(shape.into()),
            ..profile("llama-3.1-8b", "h100-sxm", "0.6.3", 3000.0)
        };
        let me = shaped("queue=rising;kv=full;preempt=yes;tail=heavy");
        let alike = shaped("queue=rising;kv=full;preempt=yes;tail=wide");
        let calm = shaped("queue=none;kv=room;preempt=no;tail=tight");
        let unknown = Profile {
            window_shape: None,
            ..profile("llama-3.1-8b", "h100-sxm", "0.6.3", 3000.0)
        };
        let s = |p: &Profile| {
            similarity(
                &Symptom {
                    profile: &me,
                    text: "",
                },
                &Symptom {
                    profile: p,
                    text: "",
                },
            )
        };
        assert_eq!(s(&alike).parts.window, 0.75);
        assert_eq!(s(&calm).parts.window, 0.0);
        assert_eq!(s(&unknown).parts.window, 0.5);
        assert!(s(&alike).score > s(&unknown).score);
        assert!(s(&unknown).score > s(&calm).score);
    }

    #[test]
    fn unknown_parts_count_half() {
        let known = profile("llama-3.1-8b", "h100-sxm", "0.6.3", 3000.0);
        let thin = Profile {
            metric: Some("ttft".into()),
            phase: Some("prefill".into()),
            ..Profile::default()
        };
        let s = similarity(
            &Symptom {
                profile: &known,
                text: "",
            },
            &Symptom {
                profile: &thin,
                text: "",
            },
        );
        assert_eq!(
            (
                s.parts.regime,
                s.parts.model,
                s.parts.workload,
                s.parts.text
            ),
            (0.5, 0.5, 0.5, 0.5)
        );
    }
}
