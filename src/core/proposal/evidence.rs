//! Evidence: journal entries, comparisons and artifacts that measured this model on this
//! GPU and engine. Evidence measured on another engine version, GPU, model or precision
//! is stale, and the difference is named.

use serde::{Deserialize, Serialize};

use super::input::ProposalInput;

/// Evidence kinds a proposal can link.
pub const KINDS: [&str; 3] = ["journal", "comparison", "artifact"];

/// What a piece of evidence says it measured (lower-case; None when unknown).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facets {
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub precision: Option<String>,
}

fn norm(s: &str) -> String {
    s.trim().to_lowercase()
}

/// Each way the evidence differs from the proposal, named ("engine version 0.5.4, the
/// proposal runs 0.6.3"). Empty: current. Unknown facets are not held against it.
pub fn differences(p: &ProposalInput, e: &Facets) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |what: &str, theirs: &Option<String>, ours: &str| {
        if let Some(t) = theirs {
            if !t.trim().is_empty() && norm(t) != norm(ours) {
                out.push(format!("{what} {t}, the proposal has {ours}"));
            }
        }
    };
    cmp("model", &e.model, &p.model_name());
    cmp("GPU", &e.gpu, &p.gpu_type);
    cmp("engine", &e.engine, &p.engine);
    cmp("engine version", &e.engine_version, &p.engine_version);
    cmp("weight precision", &e.precision, &p.weight_dtype);
    out
}

#[cfg(test)]
mod tests {
    use super::super::input::{parse, tests::chat_api};
    use super::*;

    #[test]
    fn another_version_or_gpu_is_named() {
        let p = parse(&chat_api()).unwrap();
        let same = Facets {
            model: Some("Llama-3.1-8B".into()),
            gpu: Some("h100-sxm".into()),
            engine: Some("vllm".into()),
            engine_version: Some("0.6.3".into()),
            precision: None,
        };
        assert!(differences(&p, &same).is_empty());
        let old = Facets {
            engine_version: Some("0.5.4".into()),
            gpu: Some("a100-80gb".into()),
            ..same
        };
        let d = differences(&p, &old);
        assert_eq!(
            d,
            [
                "GPU a100-80gb, the proposal has h100-sxm",
                "engine version 0.5.4, the proposal has 0.6.3"
            ]
        );
    }
}
