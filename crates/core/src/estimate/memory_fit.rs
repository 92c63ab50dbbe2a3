//! memory-fit: why a server runs out of memory at start-up.
//!
//! budget = gpu_memory_utilization × GPU memory (as CUDA reports it); left = budget −
//! weights per GPU; fits ⇔ weights + activation peak + overhead + one max_model_len
//! sequence's KV ≤ budget; max_kv_tokens = ⌊(left − activation − overhead) / KV bytes
//! per token per GPU⌋ (0 if negative).
//!
//! Unless given, the reservation follows vLLM's own start-up profile (V1, 0.9–0.11):
//! KV = u × total − weights − the torch activation peak of one dummy forward and sampler
//! pass − the non-torch memory the instance adds. Each figure is stated in the chain:
//! - activation peak = the larger of the forward pass at `max_num_batched_tokens`
//!   (tokens × hidden × 2 B × [`WORKSPACE_FACTOR`]: about 20 hidden-sized BF16 vectors a
//!   token at the peak; 1.26 GiB for Llama 3 8B at 8,192 tokens, vllm-project/vllm PR
//!   10511) and the dummy sampler run over `min(max_num_batched_tokens, max_num_seqs)`
//!   sequences (sequences × vocab × [`SAMPLER_BYTES`]: the logits and the sampler's
//!   copies of them). The second wins on every model the llm-d-planner start-up logs
//!   profile (vLLM 0.11, H100): 4.76 GiB for Llama 3.1 8B, 5.56 for Qwen3-0.6B, 5.64
//!   for Qwen3-32B, 7.38 for gpt-oss: it follows the vocabulary, not the hidden size;
//! - non-torch memory ≈ [`OTHER_BYTES`], plus [`NCCL_BYTES`] at TP > 1 (0.13 GiB at TP 1,
//!   0.54–0.55 GiB at TP 2 in the same logs; from vLLM 0.11 the NCCL buffers set up
//!   before the memory snapshot fall outside the budget, in 0.9–0.10 they are inside);
//! - CUDA graphs: 0 in the budget. Through vLLM 0.11 they are captured after the KV
//!   cache is allocated, into the (1 − u) headroom (0.1–1 GiB in those logs): the chain
//!   states the headroom. Give `cuda_graph_bytes` for an engine that reserves them
//!   first (vLLM ≥ 0.21 estimates them before sizing the KV cache).
//!
//! Defaults as `vllm serve` sets them: max_num_batched_tokens 8,192 and max_num_seqs
//! 1,024 on GPUs with 70 GiB or more, 2,048 and 256 below.

use super::chain::Work;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};
use crate::fmt::ByteStyle;

const NAME: &str = "memory-fit";

pub(crate) const UTILIZATION: FieldSpec = opt(
    "gpu_memory_utilization",
    "Memory utilization",
    "",
    Some("0.92"),
    "Fraction of GPU memory the server may use, in (0, 1] (vLLM's gpu_memory_utilization).",
);

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::WEIGHT_DTYPE,
    setup::KV_DTYPE,
    UTILIZATION,
    need(
        "max_model_len",
        "Max model length",
        "tokens",
        "Longest sequence (prompt + output) the server must hold.",
    ),
    opt(
        "max_num_batched_tokens",
        "Tokens per profiling step",
        "tokens",
        Some("8192 on GPUs of 70 GiB or more, else 2048"),
        "vLLM's max_num_batched_tokens: the tokens of the forward pass that sets the activation peak.",
    ),
    opt(
        "max_num_seqs",
        "Sequences per step",
        "sequences",
        Some("1024 on GPUs of 70 GiB or more, else 256"),
        "vLLM's max_num_seqs: the profiling sampler run holds logits for this many sequences.",
    ),
    opt(
        "activation_bytes",
        "Activation peak",
        "B",
        Some("the larger of the forward pass and the sampler run"),
        "Peak activation memory per GPU during the profiling pass (e.g. 4.76 GiB from vLLM's start-up log).",
    ),
    opt(
        "cuda_graph_bytes",
        "CUDA graphs",
        "B",
        Some("0: captured after the KV cache, in the headroom"),
        "Memory of the captured CUDA graphs per GPU, for an engine that reserves it before the KV cache.",
    ),
    opt(
        "nccl_bytes",
        "NCCL buffers",
        "B",
        Some("0.44 GB when TP > 1"),
        "NCCL and custom all-reduce buffers per GPU inside the budget.",
    ),
    opt(
        "overhead_bytes",
        "Other runtime memory",
        "B",
        Some("0.14 GB"),
        "Non-torch memory the instance adds (CUDA context, library workspaces) per GPU.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HIDDEN,
    setup::HBM_BYTES,
];

/// Hidden-sized BF16 vectors per token at the forward pass's activation peak.
pub const WORKSPACE_FACTOR: f64 = 20.0;
/// Bytes per activation element (BF16/FP16).
const ACTIVATION_ELEMENT_BYTES: f64 = 2.0;
/// Bytes the profiling sampler run holds per vocabulary entry per sequence: about ten
/// FP32 copies of the logits. The mean of the llm-d-planner start-up logs (vLLM 0.11,
/// H100, 1,024 sequences): 38.4–39.6 over Llama 3.1 8B, Llama 3.3 70B FP8, Qwen3-0.6B,
/// Qwen3-32B and gpt-oss.
pub const SAMPLER_BYTES: f64 = 38.9;
/// vLLM's defaults on GPUs with at least [`LARGE_GPU_BYTES`] of memory, and below.
pub const DEFAULT_BATCHED_TOKENS: f64 = 8192.0;
const SMALL_GPU_BATCHED_TOKENS: f64 = 2048.0;
const DEFAULT_MAX_NUM_SEQS: f64 = 1024.0;
const SMALL_GPU_MAX_NUM_SEQS: f64 = 256.0;
const LARGE_GPU_BYTES: f64 = 70.0 * 1024.0 * 1024.0 * 1024.0;
/// NCCL and custom all-reduce buffers per GPU inside the budget when TP > 1.
pub const NCCL_BYTES: f64 = 0.44e9;
/// Non-torch memory an instance adds: CUDA context, library workspaces.
pub const OTHER_BYTES: f64 = 0.14e9;

/// vLLM's `max_num_batched_tokens` and `max_num_seqs` defaults for a GPU of this memory.
pub(crate) fn vllm_defaults(hbm_bytes: f64) -> (f64, f64) {
    if hbm_bytes >= LARGE_GPU_BYTES {
        (DEFAULT_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS)
    } else {
        (SMALL_GPU_BATCHED_TOKENS, SMALL_GPU_MAX_NUM_SEQS)
    }
}

/// The activation peak of vLLM's profiling pass: the larger of the forward pass at
/// `tokens` and the sampler run over `min(tokens, seqs)` sequences. Returns the bytes
/// and the formula.
pub(crate) fn activation_peak(
    tokens: f64,
    seqs: f64,
    hidden: f64,
    vocab: Option<f64>,
) -> (f64, String) {
    let forward = tokens * hidden * ACTIVATION_ELEMENT_BYTES * WORKSPACE_FACTOR;
    let forward_text = format!(
        "forward {} ({} tokens × {} hidden × {} B × {})",
        crate::fmt::bytes(forward, ByteStyle::Figure),
        fmt::num(tokens),
        fmt::num(hidden),
        fmt::num(ACTIVATION_ELEMENT_BYTES),
        fmt::num(WORKSPACE_FACTOR)
    );
    let Some(vocab) = vocab else {
        return (
            forward,
            format!("{forward_text}; no vocabulary to size the sampler"),
        );
    };
    let sampled = tokens.min(seqs);
    let sampler = sampled * vocab * SAMPLER_BYTES;
    (
        forward.max(sampler),
        format!(
            "max({forward_text}, sampler {} ({} seqs × {} vocab × {} B))",
            crate::fmt::bytes(sampler, ByteStyle::Figure),
            fmt::num(sampled),
            fmt::num(vocab),
            fmt::num(SAMPLER_BYTES)
        ),
    )
}

/// The memory per GPU that is neither weights nor KV, as vLLM reserves it by default:
/// the profiling pass's activation peak, NCCL buffers when TP > 1, and other non-torch
/// memory (CUDA graphs are captured after the KV cache). memory-fit and kv-pages share
/// this one ledger. Returns the bytes and the worked formula.
pub(crate) fn default_other_bytes(s: &Setup, tokens: f64, hidden: f64) -> (f64, String) {
    let (_, seqs) = vllm_defaults(s.gpu.hbm_bytes);
    let (act, act_text) = activation_peak(tokens, seqs, hidden, s.model.vocab.map(|v| v as f64));
    let nccl = if s.tp > 1 { NCCL_BYTES } else { 0.0 };
    let total = act + nccl + OTHER_BYTES;
    let formula = format!(
        "{} activations ({act_text}) + {} NCCL + {} other (vLLM's start-up profile; CUDA \
         graphs come after the KV cache)",
        crate::fmt::bytes(act, ByteStyle::Figure),
        crate::fmt::bytes(nccl, ByteStyle::Figure),
        crate::fmt::bytes(OTHER_BYTES, ByteStyle::Figure)
    );
    (total, formula)
}

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Memory fit",
    summary:
        "Whether weights, activations and one max-length sequence fit in each GPU's memory budget.",
    fields: FIELDS,
    example:
        "model=llama-3.3-70b&gpu=h100-sxm&tp=2&gpu_memory_utilization=0.92&max_model_len=131072",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let util = p.or(
        "gpu_memory_utilization",
        super::defaults::GPU_MEMORY_UTILIZATION.value,
        Rule::Fraction,
    );
    let max_len = p.req("max_model_len", Rule::Count);
    let tokens_given = p.given("max_num_batched_tokens");
    let tokens = p.opt("max_num_batched_tokens", Rule::Count);
    let seqs_given = p.given("max_num_seqs");
    let seqs = p.opt("max_num_seqs", Rule::Count);
    let act_given = p.given("activation_bytes");
    let act = p.bytes_or("activation_bytes", 0.0);
    let graphs = p.bytes_or("cuda_graph_bytes", 0.0);
    let nccl_default = match &setup {
        Some(s) if s.tp > 1 => NCCL_BYTES,
        _ => 0.0,
    };
    let nccl = p.bytes_or("nccl_bytes", nccl_default);
    let other = p.bytes_or("overhead_bytes", OTHER_BYTES);
    let overhead_typical = !["cuda_graph_bytes", "nccl_bytes", "overhead_bytes"]
        .iter()
        .any(|k| p.given(k));
    if let Some(s) = &setup {
        if !act_given && s.model.hidden.is_none() {
            p.fail(
                "hidden",
                "is required to estimate the activation peak when no model or config gives \
                 hidden_size (or give activation_bytes)",
            );
        }
    }
    let bad_count = (tokens_given && tokens.is_none()) || (seqs_given && seqs.is_none());
    let (
        Some(s),
        Some(util),
        Some(max_len),
        Some(act),
        Some(graphs),
        Some(nccl),
        Some(other),
        false,
    ) = (setup, util, max_len, act, graphs, nccl, other, bad_count)
    else {
        return Err(p.into_errors());
    };
    let (default_tokens, default_seqs) = vllm_defaults(s.gpu.hbm_bytes);
    let tokens = tokens.unwrap_or_else(|| {
        p.record_number("max_num_batched_tokens", default_tokens);
        default_tokens
    });
    let seqs = seqs.unwrap_or_else(|| {
        p.record_number("max_num_seqs", default_seqs);
        default_seqs
    });
    let hidden = match (act_given, s.model.hidden) {
        (true, _) => None,
        (false, Some(h)) => Some(h as f64),
        (false, None) => return Err(p.into_errors()),
    };
    let (act, act_formula) = match hidden {
        Some(h) => {
            let (a, formula) = activation_peak(tokens, seqs, h, s.model.vocab.map(|v| v as f64));
            p.record_number("activation_bytes", a);
            (a, Some(formula))
        }
        None => (act, None),
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let weights = s.weights_line(
        &mut w,
        "weight_bytes_per_gpu",
        "Weights per GPU",
        s.weight_dtype,
    );
    let budget = util * s.gpu.hbm_bytes;
    w.bytes_line(
        "budget_bytes_per_gpu",
        "Budget per GPU",
        format!(
            "{} × {}",
            fmt::num(util),
            crate::fmt::bytes(s.gpu.hbm_bytes, ByteStyle::Figure)
        ),
        budget,
    );
    let left = budget - weights;
    w.bytes_line(
        "left_bytes_per_gpu",
        "Left for activations, overhead, KV",
        format!(
            "{} − {}",
            crate::fmt::bytes(budget, ByteStyle::Figure),
            crate::fmt::bytes(weights, ByteStyle::Figure)
        ),
        left,
    );
    let per_token = s.kv_token_line(&mut w);
    let one_seq = s.model.kv.bytes_per_seq_per_gpu(s.kv_dtype, s.tp, max_len);
    let bounded = s.model.kv.bounded_formula(s.kv_dtype, s.tp, max_len);
    w.bytes_line(
        "kv_bytes_one_seq_per_gpu",
        "KV of one max-length sequence",
        format!(
            "{} tokens × {}{}",
            fmt::num(max_len),
            crate::fmt::bytes(per_token, ByteStyle::Figure),
            if bounded.is_empty() {
                String::new()
            } else {
                format!(" + {bounded}")
            }
        ),
        one_seq,
    );
    match act_formula {
        Some(formula) => w.bytes_line(
            "activation_bytes_per_gpu",
            "Activation peak (assumed)",
            format!("{formula} (vLLM's profiling pass; give activation_bytes to override)"),
            act,
        ),
        None => w.bytes_line(
            "activation_bytes_per_gpu",
            "Activation peak (given)",
            "activation_bytes".into(),
            act,
        ),
    }
    let overhead = graphs + nccl + other;
    w.bytes_line(
        "overhead_bytes_per_gpu",
        "Runtime overhead",
        format!(
            "{} CUDA graphs + {} NCCL buffers + {} other{}",
            crate::fmt::bytes(graphs, ByteStyle::Figure),
            crate::fmt::bytes(nccl, ByteStyle::Figure),
            crate::fmt::bytes(other, ByteStyle::Figure),
            if overhead_typical {
                " (vLLM 0.11's start-up profile: graphs come after the KV cache; override each)"
            } else {
                ""
            }
        ),
        overhead,
    );
    let needed = weights + act + overhead + one_seq;
    w.bytes_line(
        "needed_bytes_per_gpu",
        "Needed per GPU",
        format!(
            "{} + {} + {} + {}",
            crate::fmt::bytes(weights, ByteStyle::Figure),
            crate::fmt::bytes(act, ByteStyle::Figure),
            crate::fmt::bytes(overhead, ByteStyle::Figure),
            crate::fmt::bytes(one_seq, ByteStyle::Figure)
        ),
        needed,
    );
    let fits = needed <= budget;
    w.line(
        "fits",
        "Fits",
        format!(
            "{} ≤ {}",
            crate::fmt::bytes(needed, ByteStyle::Figure),
            crate::fmt::bytes(budget, ByteStyle::Figure)
        ),
        fits.into(),
        "",
    );
    let for_kv = left - act - overhead;
    let max_tokens = (for_kv / per_token).floor().max(0.0);
    w.line(
        "max_kv_tokens",
        "KV capacity",
        format!(
            "⌊({} − {} − {}) / {}⌋",
            crate::fmt::bytes(left, ByteStyle::Figure),
            crate::fmt::bytes(act, ByteStyle::Figure),
            crate::fmt::bytes(overhead, ByteStyle::Figure),
            crate::fmt::bytes(per_token, ByteStyle::Figure)
        ),
        fmt::whole(max_tokens),
        "tokens",
    );

    let headroom = (1.0 - util) * s.gpu.hbm_bytes;
    w.bytes_line(
        "headroom_bytes_per_gpu",
        "Headroom outside the budget",
        format!(
            "(1 − {}) × {}: CUDA graphs (0.1–1 GiB in vLLM 0.11's logs) and other processes \
             must fit here",
            fmt::num(util),
            crate::fmt::bytes(s.gpu.hbm_bytes, ByteStyle::Figure)
        ),
        headroom,
    );
    w.result("headroom_bytes_per_gpu", fmt::whole(headroom));
    w.result("weight_bytes_per_gpu", fmt::whole(weights));
    w.result("budget_bytes_per_gpu", fmt::whole(budget));
    w.result("left_bytes_per_gpu", fmt::whole(left));
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(per_token));
    w.result("kv_bytes_one_seq_per_gpu", fmt::whole(one_seq));
    w.result("activation_bytes_per_gpu", fmt::whole(act));
    w.result("overhead_bytes_per_gpu", fmt::whole(overhead));
    w.result("fits", fits.into());
    w.result("max_kv_tokens", fmt::whole(max_tokens));
    w.result("kv_pool_bytes_per_gpu", fmt::whole(for_kv.max(0.0)));

    let assumed = if hidden.is_some() {
        format!(
            " (Assumes vLLM's start-up profile: {} of activations and {} of runtime overhead \
             per GPU; override activation_bytes, cuda_graph_bytes, nccl_bytes or \
             overhead_bytes with the figures from the server's start-up log.)",
            crate::fmt::bytes(act, ByteStyle::Figure),
            crate::fmt::bytes(overhead, ByteStyle::Figure)
        )
    } else {
        String::new()
    };
    let sanity = if fits {
        format!(
            "Fits: after weights, activations and overhead each GPU keeps {} for KV, room for \
             {} tokens, {}× one {}-token sequence.",
            crate::fmt::bytes(for_kv, ByteStyle::Figure),
            fmt::num(max_tokens),
            fmt::num(max_tokens / max_len),
            fmt::num(max_len)
        )
    } else if for_kv <= 0.0 {
        format!(
            "Does not fit: weights, activations and overhead alone ({}) exceed the {} budget; \
             raise TP, use smaller weights or raise gpu_memory_utilization.",
            crate::fmt::bytes(weights + act + overhead, ByteStyle::Figure),
            crate::fmt::bytes(budget, ByteStyle::Figure)
        )
    } else {
        format!(
            "Does not fit: one {}-token sequence needs {} of KV per GPU but only {} is left \
             after weights, activations and overhead, so the server refuses to start. Lower \
             max_model_len to at most {} tokens, or use FP8 weights or more TP to free memory.",
            fmt::num(max_len),
            crate::fmt::bytes(one_seq, ByteStyle::Figure),
            crate::fmt::bytes(for_kv, ByteStyle::Figure),
            fmt::num(max_tokens)
        )
    };
    Ok(w.finish(NAME, used, format!("{sanity}{assumed}")))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const BASE: &str =
        "model=llama-3.3-70b gpu=h100-sxm gpu_memory_utilization=0.92 max_model_len=131072";

    #[test]
    fn reference_70b_tp2_does_not_fit() {
        let c = ok("memory-fit", &format!("{BASE} tp=2"));
        assert_eq!(
            c.results["weight_bytes_per_gpu"],
            serde_json::json!(70_553_706_496u64)
        );
        close(&c, "budget_bytes_per_gpu", 78.22e9);
        close(&c, "left_bytes_per_gpu", 7.66e9);
        assert_eq!(
            c.results["kv_bytes_one_seq_per_gpu"],
            serde_json::json!(21_474_836_480u64)
        );
        assert_eq!(c.results["fits"], serde_json::json!(false));
        // (7.66 GB − 5.11 GB sampler activations − 0.58 GB non-torch) / 163,840 B per token
        let left = 0.92_f64 * 85.02e9 - 70_553_706_496.0;
        let for_kv = left - 1024.0 * 128_256.0 * 38.9 - 0.58e9;
        assert_eq!(num(&c, "max_kv_tokens"), (for_kv / 163_840.0).floor());
        assert!(c.sanity.contains("Does not fit"));
    }

    #[test]
    fn fp8_or_tp4_leave_41_to_43_gb_for_kv() {
        for variant in ["tp=2 weight_dtype=fp8", "tp=4"] {
            let c = ok("memory-fit", &format!("{BASE} {variant}"));
            let left = num(&c, "left_bytes_per_gpu");
            assert!((41e9..=43e9).contains(&left), "{variant}: {left}");
            assert_eq!(c.results["fits"], serde_json::json!(true), "{variant}");
        }
    }

    #[test]
    fn activation_and_overhead_count() {
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b max_model_len=8192 activation_bytes=2e9 overhead_bytes=1e9 cuda_graph_bytes=0",
        );
        let budget = 0.92_f64 * 85.02e9;
        let for_kv = budget - 16_060_522_496.0 - 3e9;
        close(&c, "max_kv_tokens", (for_kv / 131_072.0).floor());
        assert_eq!(c.results["fits"], serde_json::json!(true));
        // weights alone too big: zero tokens, not negative
        let c = ok("memory-fit", "model=llama-3.1-405b max_model_len=1");
        assert_eq!(c.results["max_kv_tokens"], serde_json::json!(0));
        assert!(num(&c, "left_bytes_per_gpu") < 0.0);
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "memory-fit",
            "model=llama-3.1-8b gpu_memory_utilization=1.5 activation_bytes=-1 hbm_bytes=0",
        );
        has_err(&e, "gpu_memory_utilization", "(0, 1]");
        has_err(&e, "max_model_len", "required");
        has_err(&e, "activation_bytes", "0 or more");
        has_err(&e, "hbm_bytes", "greater than 0");
    }

    #[test]
    fn activations_and_overhead_follow_vllms_start_up_profile() {
        // Llama 3.1 8B on an H100: the sampler run's 1,024 seqs × 128,256 vocab × 38.9 B
        // = 5.11 GB outweighs the forward pass's 8,192 × 4,096 × 2 B × 20 = 1.34 GB
        // (vLLM 0.11 logs 4.76 GiB = 5.11 GB); no graphs in the budget, no NCCL at TP 1.
        let c = ok("memory-fit", "model=llama-3.1-8b max_model_len=8192");
        close(&c, "activation_bytes_per_gpu", 1024.0 * 128_256.0 * 38.9);
        close(&c, "overhead_bytes_per_gpu", 0.14e9);
        let budget = 0.92_f64 * 85.02e9;
        let for_kv = budget - 16_060_522_496.0 - 1024.0 * 128_256.0 * 38.9 - 0.14e9;
        close(&c, "max_kv_tokens", (for_kv / 131_072.0).floor());
        close(&c, "headroom_bytes_per_gpu", 0.08 * 85.02e9);
        let line = c
            .lines
            .iter()
            .find(|l| l.key == "activation_bytes_per_gpu")
            .unwrap();
        assert!(line.label.contains("assumed"), "{line:?}");
        assert!(
            line.formula.contains("1,024 seqs × 128,256 vocab"),
            "{}",
            line.formula
        );
        assert!(c.sanity.contains("vLLM's start-up profile"), "{}", c.sanity);
        // TP > 1 adds NCCL buffers
        let c = ok("memory-fit", &format!("{BASE} tp=2"));
        close(&c, "overhead_bytes_per_gpu", 0.58e9);
        // A smaller GPU takes vLLM's smaller defaults (2,048 tokens, 256 seqs).
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b gpu=l40s max_model_len=8192",
        );
        close(&c, "activation_bytes_per_gpu", 256.0 * 128_256.0 * 38.9);
        assert_eq!(c.inputs["max_num_seqs"], serde_json::json!(256));
        // Each figure can be overridden, with units.
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b max_model_len=8192 max_num_batched_tokens=2048 max_num_seqs=64 cuda_graph_bytes=1GB overhead_bytes=0.5GB nccl_bytes=1GiB",
        );
        close(&c, "activation_bytes_per_gpu", 2048.0 * 4096.0 * 2.0 * 20.0);
        close(&c, "overhead_bytes_per_gpu", 1e9 + 0.5e9 + 1_073_741_824.0);
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b max_model_len=8192 activation_bytes=1.26GiB",
        );
        close(&c, "activation_bytes_per_gpu", 1.26 * 1_073_741_824.0);
        assert!(!c.sanity.contains("Assumes"));
        let e = errs(
            "memory-fit",
            "model=llama-3.1-8b max_model_len=8192 nccl_bytes=3ms",
        );
        has_err(&e, "nccl_bytes", "this field takes");
        // No hidden size known and no activation given: say which field is missing.
        let e = errs(
            "memory-fit",
            "params=8e9 layers=32 kv_heads=8 head_dim=128 max_model_len=8192",
        );
        has_err(&e, "hidden", "activation_bytes");
    }
}
