//! memory-fit: why a server runs out of memory at start-up.
//!
//! budget = gpu_memory_utilization × GPU memory; left = budget − weights per GPU;
//! fits ⇔ weights + activation peak + overhead + max_model_len × KV bytes per token per GPU ≤ budget;
//! max_kv_tokens = ⌊(left − activation − overhead) / KV bytes per token per GPU⌋ (0 if negative).
//!
//! Unless given, activations and overhead default to what vLLM typically reserves, so a
//! "fits" is not an optimistic 0 B assumption (each figure is stated in the chain):
//! - activation peak ≈ max_num_batched_tokens × hidden × 2 B × [`WORKSPACE_FACTOR`]: the
//!   profiling forward pass holds about 20 hidden-sized BF16 vectors per token at its
//!   peak (MLP gate/up outputs, attention q/k/v, residual, norms). Fitted to vLLM's own
//!   profile of Llama 3 8B (hidden 4,096) on an H100: "PyTorch activation peak memory
//!   1.26 GiB" at 8,192 tokens, the same at TP 1 and TP 2 (vllm-project/vllm PR 10511),
//!   hence not divided by TP;
//! - CUDA graphs ≈ [`CUDA_GRAPH_BYTES`]: vLLM logs "Graph capturing finished …, took
//!   0.13 GiB" for a ~0.5B model and 6–28 MiB per captured batch size for larger ones,
//!   over ~67 default sizes (PRs 22897, 23184; mellea PR 416); 1 GB is a typical 7–70B
//!   figure. `cuda_graph_bytes=0` for `--enforce-eager`;
//! - NCCL and custom all-reduce buffers ≈ [`NCCL_BYTES`] per GPU when TP > 1: vLLM's
//!   non-torch memory for Llama 3 8B grew from 1.79 GiB at TP 1 to 3.58 GiB at TP 2 in
//!   the same profile (PR 10511);
//! - other runtime memory (CUDA context, library workspaces) ≈ [`OTHER_BYTES`]: vLLM V1
//!   logs "non_torch_memory takes 0.16 GiB" on single-GPU H100 runs.

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
        Some("8192"),
        "vLLM's max_num_batched_tokens: the tokens of the forward pass that sets the activation peak.",
    ),
    opt(
        "activation_bytes",
        "Activation peak",
        "B",
        Some("tokens × hidden × 2 B × 20"),
        "Peak activation memory per GPU during the profiling forward pass (e.g. 1.3 GiB from vLLM's start-up log).",
    ),
    opt(
        "cuda_graph_bytes",
        "CUDA graphs",
        "B",
        Some("1 GB"),
        "Memory of the captured CUDA graphs per GPU; 0 with --enforce-eager.",
    ),
    opt(
        "nccl_bytes",
        "NCCL buffers",
        "B",
        Some("1.9 GB when TP > 1"),
        "NCCL and custom all-reduce buffers per GPU.",
    ),
    opt(
        "overhead_bytes",
        "Other runtime memory",
        "B",
        Some("0.2 GB"),
        "CUDA context and library workspaces per GPU.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HIDDEN,
    setup::HBM_BYTES,
];

/// Hidden-sized BF16 vectors per token at the profiling pass's activation peak.
pub const WORKSPACE_FACTOR: f64 = 20.0;
/// Bytes per activation element (BF16/FP16).
const ACTIVATION_ELEMENT_BYTES: f64 = 2.0;
/// vLLM's max_num_batched_tokens when not given (a common setting with chunked prefill).
pub const DEFAULT_BATCHED_TOKENS: f64 = 8192.0;
/// Captured CUDA graphs per GPU, typical for 7–70B models.
pub const CUDA_GRAPH_BYTES: f64 = 1.0e9;
/// NCCL and custom all-reduce buffers per GPU when TP > 1.
pub const NCCL_BYTES: f64 = 1.9e9;
/// CUDA context and library workspaces per GPU.
pub const OTHER_BYTES: f64 = 0.2e9;

/// The memory per GPU that is neither weights nor KV, as vLLM reserves it by default:
/// the profiling pass's activation peak at `tokens` batched tokens, CUDA graphs, NCCL
/// buffers when TP > 1, and other runtime memory. memory-fit and kv-pages share this one
/// ledger. Returns the bytes and the worked formula.
pub(crate) fn default_other_bytes(tokens: f64, hidden: f64, tp: u64) -> (f64, String) {
    let act = tokens * hidden * ACTIVATION_ELEMENT_BYTES * WORKSPACE_FACTOR;
    let nccl = if tp > 1 { NCCL_BYTES } else { 0.0 };
    let total = act + CUDA_GRAPH_BYTES + nccl + OTHER_BYTES;
    let formula = format!(
        "{} activations ({} tokens × {} hidden × {} B × {}) + {} CUDA graphs + {} NCCL + {} \
         other (memory-fit's typical vLLM figures)",
        crate::fmt::bytes(act, ByteStyle::Figure),
        fmt::num(tokens),
        fmt::num(hidden),
        fmt::num(ACTIVATION_ELEMENT_BYTES),
        fmt::num(WORKSPACE_FACTOR),
        crate::fmt::bytes(CUDA_GRAPH_BYTES, ByteStyle::Figure),
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
    let tokens = p.or(
        "max_num_batched_tokens",
        DEFAULT_BATCHED_TOKENS,
        Rule::Count,
    );
    let act_given = p.given("activation_bytes");
    let act = p.bytes_or("activation_bytes", 0.0);
    let graphs = p.bytes_or("cuda_graph_bytes", CUDA_GRAPH_BYTES);
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
    let (
        Some(s),
        Some(util),
        Some(max_len),
        Some(tokens),
        Some(act),
        Some(graphs),
        Some(nccl),
        Some(other),
    ) = (setup, util, max_len, tokens, act, graphs, nccl, other)
    else {
        return Err(p.into_errors());
    };
    let hidden = match (act_given, s.model.hidden) {
        (true, _) => None,
        (false, Some(h)) => Some(h as f64),
        (false, None) => return Err(p.into_errors()),
    };
    let act = match hidden {
        Some(h) => {
            let a = tokens * h * ACTIVATION_ELEMENT_BYTES * WORKSPACE_FACTOR;
            p.record_number("activation_bytes", a);
            a
        }
        None => act,
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
    let one_seq = max_len * per_token;
    w.bytes_line(
        "kv_bytes_one_seq_per_gpu",
        "KV of one max-length sequence",
        format!(
            "{} tokens × {}",
            fmt::num(max_len),
            crate::fmt::bytes(per_token, ByteStyle::Figure)
        ),
        one_seq,
    );
    match hidden {
        Some(h) => w.bytes_line(
            "activation_bytes_per_gpu",
            "Activation peak (assumed)",
            format!(
                "{} tokens × {} hidden × {} B × {} (vLLM's profiling pass; give activation_bytes to override)",
                fmt::num(tokens),
                fmt::num(h),
                fmt::num(ACTIVATION_ELEMENT_BYTES),
                fmt::num(WORKSPACE_FACTOR)
            ),
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
                " (typical vLLM figures; override each)"
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

    w.result("weight_bytes_per_gpu", fmt::whole(weights));
    w.result("budget_bytes_per_gpu", fmt::whole(budget));
    w.result("left_bytes_per_gpu", fmt::whole(left));
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(per_token));
    w.result("kv_bytes_one_seq_per_gpu", fmt::whole(one_seq));
    w.result("activation_bytes_per_gpu", fmt::whole(act));
    w.result("overhead_bytes_per_gpu", fmt::whole(overhead));
    w.result("fits", fits.into());
    w.result("max_kv_tokens", fmt::whole(max_tokens));

    let assumed = if hidden.is_some() {
        format!(
            " (Assumes vLLM's typical {} of activations and {} of runtime overhead per GPU; \
             override activation_bytes, cuda_graph_bytes, nccl_bytes or overhead_bytes with \
             the figures from the server's start-up log.)",
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
        // (7.66 GB − 2.68 GB activations − 3.1 GB overhead) / 163,840 B per token
        let left = 0.92_f64 * 85.02e9 - 70_553_706_496.0;
        let for_kv = left - 8192.0 * 8192.0 * 2.0 * 20.0 - 3.1e9;
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
    fn activations_and_overhead_default_to_typical_vllm_figures() {
        // Llama 3.1 8B (hidden 4,096), one GPU: 8,192 × 4,096 × 2 B × 20 = 1.342 GB of
        // activations (vLLM logs 1.26 GiB = 1.353 GB for Llama 3 8B); graphs 1 GB, no NCCL
        // at TP 1, 0.2 GB other.
        let c = ok("memory-fit", "model=llama-3.1-8b max_model_len=8192");
        assert_eq!(
            c.results["activation_bytes_per_gpu"],
            serde_json::json!(1_342_177_280u64)
        );
        close(&c, "overhead_bytes_per_gpu", 1.2e9);
        let budget = 0.92_f64 * 85.02e9;
        let for_kv = budget - 16_060_522_496.0 - 1_342_177_280.0 - 1.2e9;
        close(&c, "max_kv_tokens", (for_kv / 131_072.0).floor());
        let line = c
            .lines
            .iter()
            .find(|l| l.key == "activation_bytes_per_gpu")
            .unwrap();
        assert!(line.label.contains("assumed"), "{line:?}");
        assert!(line
            .formula
            .contains("8,192 tokens × 4,096 hidden × 2 B × 20"));
        assert!(c.sanity.contains("Assumes vLLM's typical"), "{}", c.sanity);
        // TP > 1 adds NCCL buffers; 70B's hidden is 8,192.
        let c = ok("memory-fit", &format!("{BASE} tp=2"));
        close(&c, "overhead_bytes_per_gpu", 3.1e9);
        close(&c, "activation_bytes_per_gpu", 8192.0 * 8192.0 * 2.0 * 20.0);
        // Each figure can be overridden, with units.
        let c = ok(
            "memory-fit",
            "model=llama-3.1-8b max_model_len=8192 max_num_batched_tokens=2048 cuda_graph_bytes=0 overhead_bytes=0.5GB nccl_bytes=1GiB",
        );
        close(&c, "activation_bytes_per_gpu", 2048.0 * 4096.0 * 2.0 * 20.0);
        close(&c, "overhead_bytes_per_gpu", 0.5e9 + 1_073_741_824.0);
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
