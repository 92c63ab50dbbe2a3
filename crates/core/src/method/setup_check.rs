//! Evidence against step 0's frozen record: a comparison, or an artifact that fills a
//! step, must come from the setup the investigation froze (same model, GPU type and
//! count, TP/PP, engine and version). Names are compared through the catalogs, so
//! "meta-llama/Llama-3.1-8B-Instruct" and `llama-3.1-8b` are the same model.

use super::reproduce::FrozenConfig;
use crate::estimate::{gpus, spelling};

/// What a piece of evidence says about its setup; `None` where it says nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claimed {
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub gpu_count: Option<i64>,
    pub tp: Option<i64>,
    pub pp: Option<i64>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    /// Workload shape: requests in flight, and the arrival rate (req/s).
    pub concurrency: Option<i64>,
    pub arrival_rate: Option<f64>,
}

impl Claimed {
    /// What a benchmark file's recorded settings say (`model_id`, `max_concurrency`,
    /// a finite `request_rate`), looked up through `setting`.
    pub fn of_bench_settings(setting: impl Fn(&str) -> Option<String>) -> Claimed {
        let number = |key: &str| setting(key).and_then(|v| v.trim().parse::<f64>().ok());
        Claimed {
            model: setting("model_id"),
            concurrency: number("max_concurrency")
                .filter(|v| v.fract() == 0.0 && *v > 0.0)
                .map(|v| v as i64),
            arrival_rate: number("request_rate").filter(|v| v.is_finite()),
            ..Claimed::default()
        }
    }

    /// Everything a configuration records.
    pub fn of_config(c: &FrozenConfig) -> Claimed {
        Claimed {
            model: c.model.clone(),
            gpu: c.gpu_type.clone(),
            gpu_count: c.gpu_count,
            tp: c.tp,
            pp: c.pp,
            engine: c.engine.clone(),
            engine_version: c.engine_version.clone(),
            concurrency: c.concurrency,
            arrival_rate: c.arrival_rate,
        }
    }
}

/// One dimension on which evidence and step 0 disagree, as a sentence naming both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub dimension: &'static str,
    pub step0: String,
    pub evidence: String,
}

impl Mismatch {
    pub fn sentence(&self) -> String {
        format!(
            "{}: step 0 froze {}, this has {}",
            self.dimension, self.step0, self.evidence
        )
    }
}

/// The model a name means: its catalog entry's key, or the name reduced the same way.
pub fn model_identity(name: &str) -> String {
    match crate::estimate::models::find(name) {
        Some(m) => m.name.to_string(),
        None => spelling::model_key(name),
    }
}

/// The GPU a name means: its catalog id ("H100 SXM 80GB" is `h100-sxm`), or the name
/// lower-cased.
pub fn gpu_identity(name: &str) -> String {
    match gpus::find(name) {
        Some(g) => g.name.to_string(),
        None => name.trim().to_lowercase(),
    }
}

fn text(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

/// Every dimension both sides record and disagree on (a dimension either side leaves
/// blank is not judged).
pub fn mismatches(step0: &FrozenConfig, claimed: &Claimed) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut names = |dimension: &'static str,
                     ours: Option<&str>,
                     theirs: Option<&str>,
                     same: fn(&str) -> String| {
        if let (Some(a), Some(b)) = (ours, theirs) {
            if same(a) != same(b) {
                out.push(Mismatch {
                    dimension,
                    step0: a.to_string(),
                    evidence: b.to_string(),
                });
            }
        }
    };
    names(
        "model",
        text(&step0.model),
        text(&claimed.model),
        model_identity,
    );
    names(
        "GPU type",
        text(&step0.gpu_type),
        text(&claimed.gpu),
        gpu_identity,
    );
    names("engine", text(&step0.engine), text(&claimed.engine), |s| {
        s.to_lowercase()
    });
    names(
        "engine version",
        text(&step0.engine_version),
        text(&claimed.engine_version),
        |s| s.trim_start_matches(['v', 'V']).to_string(),
    );
    for (dimension, ours, theirs) in [
        ("GPU count", step0.gpu_count, claimed.gpu_count),
        ("tensor parallelism", step0.tp, claimed.tp),
        ("pipeline parallelism", step0.pp, claimed.pp),
        (
            "workload concurrency",
            step0.concurrency,
            claimed.concurrency,
        ),
    ] {
        if let (Some(a), Some(b)) = (ours, theirs) {
            if a != b {
                out.push(Mismatch {
                    dimension,
                    step0: a.to_string(),
                    evidence: b.to_string(),
                });
            }
        }
    }
    if let (Some(a), Some(b)) = (step0.arrival_rate, claimed.arrival_rate) {
        if (a - b).abs() > 1e-9 * a.abs().max(1.0) {
            out.push(Mismatch {
                dimension: "workload arrival rate (req/s)",
                step0: a.to_string(),
                evidence: b.to_string(),
            });
        }
    }
    out
}

/// Why a comparison linked to an investigation is not about that investigation's
/// setup: what each run's file records (model, workload shape; both sides), the
/// baseline configuration (every dimension) and the candidate's model, against step 0. Empty when nothing disagrees.
pub fn comparison_reasons(
    step0: &FrozenConfig,
    runs: &[(&str, &str, Claimed)],
    baseline_config: Option<&FrozenConfig>,
    candidate_config: Option<&FrozenConfig>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for (side, name, claimed) in runs {
        for m in mismatches(step0, claimed) {
            let whose = if name.is_empty() {
                format!("{side} runs")
            } else {
                format!("{side} run {name}")
            };
            reasons.push(format!(
                "Not the investigation's setup ({whose}) — {}.",
                m.sentence()
            ));
        }
    }
    if let Some(c) = baseline_config {
        for m in mismatches(step0, &Claimed::of_config(c)) {
            reasons.push(format!(
                "Not the investigation's setup (baseline configuration) — {}.",
                m.sentence()
            ));
        }
    }
    if let Some(c) = candidate_config {
        let claimed = Claimed {
            model: c.model.clone(),
            ..Claimed::default()
        };
        for m in mismatches(step0, &claimed) {
            reasons.push(format!(
                "Not the investigation's setup (candidate configuration) — {}.",
                m.sentence()
            ));
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step0() -> FrozenConfig {
        FrozenConfig {
            model: Some("llama-3.1-8b".into()),
            gpu_type: Some("h100-sxm".into()),
            gpu_count: Some(1),
            tp: Some(1),
            engine: Some("vllm".into()),
            engine_version: Some("0.6.3".into()),
            ..FrozenConfig::default()
        }
    }

    #[test]
    fn the_same_setup_spelled_differently_matches() {
        let claimed = Claimed {
            model: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
            gpu: Some("NVIDIA H100 80GB HBM3".into()),
            engine: Some("vLLM".into()),
            engine_version: Some("v0.6.3".into()),
            ..Claimed::default()
        };
        assert_eq!(mismatches(&step0(), &claimed), []);
    }

    #[test]
    fn another_model_and_gpu_count_are_named() {
        let claimed = Claimed {
            model: Some("meta-llama/Llama-3.3-70B-Instruct".into()),
            gpu_count: Some(8),
            tp: Some(8),
            ..Claimed::default()
        };
        let m = mismatches(&step0(), &claimed);
        let dims: Vec<&str> = m.iter().map(|x| x.dimension).collect();
        assert_eq!(dims, ["model", "GPU count", "tensor parallelism"]);
        assert_eq!(
            m[0].sentence(),
            "model: step 0 froze llama-3.1-8b, this has meta-llama/Llama-3.3-70B-Instruct"
        );
    }
}
