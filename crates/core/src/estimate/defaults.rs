//! One default per quantity, with where it comes from. Every estimator, the proposals
//! and the drills take an unstated quantity from here, and each chain that uses one
//! says so with its source, so the same step is never 590 ms in one place and 300 ms
//! in another.

/// A default and the sentence a chain shows for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Default {
    pub value: f64,
    pub source: &'static str,
}

/// Fraction of the dense peak the GEMMs of a prefill chunk reach. Give `mfu=1` for the
/// bound at peak (the result is then a lower bound on the time).
pub const MFU: Default = Default {
    value: 0.5,
    source: "half the dense peak, what large prefill GEMMs typically reach in serving \
             engines (the reference chains' 50 %); a measured MFU is better",
};

/// vLLM's `gpu_memory_utilization` as the reference chains set it (vLLM's own default
/// is 0.9).
pub const GPU_MEMORY_UTILIZATION: Default = Default {
    value: 0.92,
    source: "the reference chains' setting; vLLM's own default is 0.90",
};

/// Bytes per element of an all-reduced activation: engines all-reduce in the model's
/// 16-bit dtype even when the GEMMs run in FP8.
pub const ALLREDUCE_ELEMENT_BYTES: Default = Default {
    value: 2.0,
    source: "the 16-bit output dtype engines all-reduce in, even with FP8 GEMMs",
};

/// Tokens per KV-cache page.
pub const PAGE_TOKENS: Default = Default {
    value: 16.0,
    source: "vLLM's default block_size",
};

/// How a chain names a value: `given` or `default: <source>`.
pub fn provenance(given: bool, d: &Default) -> String {
    if given {
        "given".to_string()
    } else {
        format!("default: {}", d.source)
    }
}
