//! The published measurements the estimators are held against: each with its source
//! and the whole setup as the source names it. Figures are copied as published (times
//! in ms; one source printed seconds); where a setup needs a figure the source does not
//! print (mean lengths of a random range, running sequences), [`Case::derivation`] says
//! how it was found.
//!
//! The cases are kept by kind: `serving` holds serving benchmarks (decode steps and
//! TTFTs under load, and the lone requests of those benchmarks), `lone_ttft` the TTFTs
//! of requests sent one at a time to an in-process engine, `memory` vLLM's start-up
//! memory profiles; `sources` names where each was published.

mod lone_ttft;
mod memory;
mod serving;
mod sources;

use serde::Serialize;

/// Where a case's numbers were published.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Source {
    pub key: &'static str,
    pub title: &'static str,
    /// A URL, or `repository@commit:path` for a file in a public repository.
    pub location: &'static str,
}

/// How load was offered, which sets how many sequences decode together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Load {
    /// Requests arrived at random (Poisson) at a set rate; the running sequences follow
    /// from Little's law: completed requests/s × mean request time.
    Paced {
        rate: f64,
        completed_per_s: f64,
        mean_ttft_ms: f64,
        mean_tpot_ms: f64,
    },
    /// Every prompt sent at once (`--request-rate inf`): as above, but TTFT includes
    /// waiting behind earlier prompts, which no estimator here models.
    Burst {
        completed_per_s: f64,
        mean_ttft_ms: f64,
        mean_tpot_ms: f64,
    },
    /// A fixed number of requests in flight (`--max-concurrency`).
    Closed { concurrency: u32 },
}

/// One measured figure of a case.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    pub ms: f64,
    /// What exactly was measured, e.g. "mean TPOT".
    pub what: &'static str,
    /// A per-request average (TPOT, mean ITL) counts the steps that carried other
    /// requests' prefills; a median ITL is a plain step.
    pub includes_prefills: bool,
    /// Why the figure is shown but neither fitted nor scored, when it is not.
    pub unscored: Option<&'static str>,
}

/// One published measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Case {
    pub id: &'static str,
    pub source: &'static Source,
    /// Engine, version, model, precision, GPU and parallelism, as the source gives them.
    pub setup: &'static str,
    /// The estimators' setup inputs (`key=value` separated by spaces).
    pub inputs: &'static str,
    pub prompt_tokens: f64,
    pub output_tokens: f64,
    pub load: Load,
    /// The measured decode step (TPOT or ITL).
    pub decode: Option<Measured>,
    /// The measured time to first token.
    pub ttft: Option<Measured>,
}

/// vLLM's memory profile from a start-up log: what memory-fit predicts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryCase {
    pub id: &'static str,
    pub source: &'static Source,
    pub setup: &'static str,
    pub inputs: &'static str,
    /// "Model loading took …" (GiB), when the log shows it.
    pub weights_gib: Option<f64>,
    /// The KV cache the engine allocated (GiB).
    pub kv_cache_gib: f64,
    /// Why the case is shown but not scored, when it is not.
    pub unscored: Option<&'static str>,
}

pub use memory::MEMORY_CASES;
pub use sources::*;

/// Every published serving measurement, in table order: the serving benchmarks, then
/// the in-process lone requests.
pub const CASES: &[Case] =
    &concat::<{ serving::CASES.len() + lone_ttft::CASES.len() }>(serving::CASES, lone_ttft::CASES);

/// `a` then `b`, at compile time.
const fn concat<const N: usize>(a: &[Case], b: &[Case]) -> [Case; N] {
    assert!(a.len() + b.len() == N && N > 0);
    let mut out = [if a.is_empty() { b[0] } else { a[0] }; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - a.len()];
        i += 1;
    }
    out
}

impl Case {
    /// Sequences decoding together on average, and how that was found.
    pub fn running(&self) -> f64 {
        match self.load {
            Load::Paced {
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
                ..
            }
            | Load::Burst {
                completed_per_s,
                mean_ttft_ms,
                mean_tpot_ms,
            } => {
                completed_per_s * (mean_ttft_ms + mean_tpot_ms * (self.output_tokens - 1.0))
                    / 1000.0
            }
            Load::Closed { concurrency } => f64::from(concurrency),
        }
    }

    /// Mean tokens in a running sequence's KV cache: the prompt and half the output.
    pub fn context(&self) -> f64 {
        self.prompt_tokens + self.output_tokens / 2.0
    }

    pub fn derivation(&self) -> String {
        let running = match self.load {
            Load::Paced { .. } | Load::Burst { .. } => format!(
                "running ≈ completed/s × (mean TTFT + mean TPOT × (output − 1)) = {:.1}",
                self.running()
            ),
            Load::Closed { concurrency } => format!("running = {concurrency} in flight"),
        };
        format!(
            "{running}; context ≈ prompt + output / 2 = {:.0} + {:.0} / 2 = {:.0} tokens",
            self.prompt_tokens,
            self.output_tokens,
            self.context()
        )
    }

    pub fn load_label(&self) -> String {
        match self.load {
            Load::Paced { rate, .. } => format!("Poisson arrivals at {rate} req/s"),
            Load::Burst { .. } => "all prompts at once".to_string(),
            Load::Closed { concurrency } => format!("{concurrency} in flight"),
        }
    }

    /// TTFT is held against a step estimate only when requests do not queue behind
    /// each other's prefill: paced arrivals, or one request in flight.
    pub fn ttft_comparable(&self) -> bool {
        match self.load {
            Load::Paced { .. } => true,
            Load::Burst { .. } => false,
            Load::Closed { concurrency } => concurrency == 1,
        }
    }
}
