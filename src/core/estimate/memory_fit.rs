//! memory-fit: why a server runs out of memory at start-up.
//!
//! budget = gpu_memory_utilization × GPU memory; left = budget − weights per GPU;
//! fits ⇔ weights + activation peak + overhead + max_model_len × KV bytes per token per GPU ≤ budget;
//! max_kv_tokens = ⌊(left − activation − overhead) / KV bytes per token per GPU⌋ (0 if negative).

use super::chain::Work;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

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
        "activation_bytes",
        "Activation peak",
        "B",
        Some("0"),
        "Peak activation memory per GPU during the profiling forward pass.",
    ),
    opt(
        "overhead_bytes",
        "Runtime overhead",
        "B",
        Some("0"),
        "Other memory per GPU: CUDA context, graphs, NCCL buffers.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HBM_BYTES,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Memory fit",
    summary:
        "Whether weights, activations and one max-length sequence fit in each GPU's memory budget.",
    fields: FIELDS,
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let util = p.or("gpu_memory_utilization", 0.92, Rule::Fraction);
    let max_len = p.req("max_model_len", Rule::Count);
    let act = p.or("activation_bytes", 0.0, Rule::NonNegative);
    let overhead = p.or("overhead_bytes", 0.0, Rule::NonNegative);
    let (Some(s), Some(util), Some(max_len), Some(act), Some(overhead)) =
        (setup, util, max_len, act, overhead)
    else {
        return Err(p.into_errors());
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
        format!("{} × {}", fmt::num(util), fmt::bytes(s.gpu.hbm_bytes)),
        budget,
    );
    let left = budget - weights;
    w.bytes_line(
        "left_bytes_per_gpu",
        "Left for activations, overhead, KV",
        format!("{} − {}", fmt::bytes(budget), fmt::bytes(weights)),
        left,
    );
    let per_token = s.kv_token_line(&mut w);
    let one_seq = max_len * per_token;
    w.bytes_line(
        "kv_bytes_one_seq_per_gpu",
        "KV of one max-length sequence",
        format!("{} tokens × {}", fmt::num(max_len), fmt::bytes(per_token)),
        one_seq,
    );
    let needed = weights + act + overhead + one_seq;
    w.bytes_line(
        "needed_bytes_per_gpu",
        "Needed per GPU",
        format!(
            "{} + {} + {} + {}",
            fmt::bytes(weights),
            fmt::bytes(act),
            fmt::bytes(overhead),
            fmt::bytes(one_seq)
        ),
        needed,
    );
    let fits = needed <= budget;
    w.line(
        "fits",
        "Fits",
        format!("{} ≤ {}", fmt::bytes(needed), fmt::bytes(budget)),
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
            fmt::bytes(left),
            fmt::bytes(act),
            fmt::bytes(overhead),
            fmt::bytes(per_token)
        ),
        fmt::whole(max_tokens),
        "tokens",
    );

    w.result("weight_bytes_per_gpu", fmt::whole(weights));
    w.result("budget_bytes_per_gpu", fmt::whole(budget));
    w.result("left_bytes_per_gpu", fmt::whole(left));
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(per_token));
    w.result("kv_bytes_one_seq_per_gpu", fmt::whole(one_seq));
    w.result("fits", fits.into());
    w.result("max_kv_tokens", fmt::whole(max_tokens));

    let sanity = if fits {
        format!(
            "Fits: after weights, activations and overhead each GPU keeps {} for KV, room for \
             {} tokens, {}× one {}-token sequence.",
            fmt::bytes(for_kv),
            fmt::num(max_tokens),
            fmt::num(max_tokens / max_len),
            fmt::num(max_len)
        )
    } else if for_kv <= 0.0 {
        format!(
            "Does not fit: weights, activations and overhead alone ({}) exceed the {} budget; \
             raise TP, use smaller weights or raise gpu_memory_utilization.",
            fmt::bytes(weights + act + overhead),
            fmt::bytes(budget)
        )
    } else {
        format!(
            "Does not fit: one {}-token sequence needs {} of KV per GPU but only {} is left \
             after weights, activations and overhead, so the server refuses to start. Lower \
             max_model_len to at most {} tokens, or use FP8 weights or more TP to free memory.",
            fmt::num(max_len),
            fmt::bytes(one_seq),
            fmt::bytes(for_kv),
            fmt::num(max_tokens)
        )
    };
    Ok(w.finish(NAME, used, sanity))
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
        // 7.66 GB / 163,840 B per token
        let left = 0.92_f64 * 85.02e9 - 70_553_706_496.0;
        assert_eq!(num(&c, "max_kv_tokens"), (left / 163_840.0).floor());
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
            "model=llama-3.1-8b max_model_len=8192 activation_bytes=2e9 overhead_bytes=1e9",
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
}
