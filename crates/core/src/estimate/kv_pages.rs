//! kv-pages: the paged KV-cache ledger, and whether running requests will be preempted.
//!
//! pool = ⌊(device × utilization − weights per GPU − other) / (page_tokens × KV bytes per token per GPU)⌋;
//! a request needs ⌈tokens / page_tokens⌉ pages; preemption is expected when the pages the
//! admitted requests need at full length (prompt + output) exceed the pool.

use super::chain::Work;
use super::fmt;
use super::input::{Parser, Rule};
use super::memory_fit::{default_other_bytes, vllm_defaults, UTILIZATION};
use super::setup::{self, need, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};
use crate::fmt::ByteStyle;

const NAME: &str = "kv-pages";

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::WEIGHT_DTYPE,
    setup::KV_DTYPE,
    opt(
        "device_bytes",
        "Device memory",
        "B",
        None,
        "Memory of one GPU, e.g. 80e9; defaults to the GPU's memory (same as hbm_bytes).",
    ),
    UTILIZATION,
    opt(
        "other_bytes",
        "Everything else",
        "B",
        Some("memory-fit's ledger: activations + CUDA graphs + NCCL + other"),
        "Per-GPU memory that is neither weights nor KV: activations, CUDA graphs, context.",
    ),
    opt(
        "max_num_batched_tokens",
        "Tokens per profiling step",
        "tokens",
        Some("8192"),
        "vLLM's max_num_batched_tokens: sets the activation peak when other_bytes is not given.",
    ),
    opt(
        "page_tokens",
        "Page size",
        "tokens",
        Some("16"),
        "Tokens per KV-cache page (vLLM block_size).",
    ),
    need(
        "requests",
        "Requests",
        "requests",
        "Requests admitted together.",
    ),
    need(
        "prompt_tokens",
        "Prompt length",
        "tokens",
        "Prompt tokens per request.",
    ),
    need(
        "output_tokens",
        "Output length",
        "tokens",
        "Tokens each request will generate; their pages are owed too.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HIDDEN,
    setup::HBM_BYTES,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "KV page ledger",
    summary:
        "KV-cache pages available versus pages the admitted requests need now and at full length.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&device_bytes=80e9&gpu_memory_utilization=0.92&other_bytes=2e9&page_tokens=16&requests=200&prompt_tokens=2048&output_tokens=1024",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    if p.given("device_bytes") && p.given("hbm_bytes") {
        p.fail("device_bytes", "give device_bytes or hbm_bytes, not both");
    }
    let device = p.opt("device_bytes", Rule::Positive);
    let util = p.or(
        "gpu_memory_utilization",
        super::defaults::GPU_MEMORY_UTILIZATION.value,
        Rule::Fraction,
    );
    let other_given = p.given("other_bytes");
    let other = p.opt("other_bytes", Rule::NonNegative);
    let tokens = if p.given("max_num_batched_tokens") {
        p.opt("max_num_batched_tokens", Rule::Count)
    } else {
        setup.as_ref().map(|s| vllm_defaults(s.gpu.hbm_bytes).0)
    };
    // Without other_bytes, the same ledger as memory-fit (it needs the hidden size).
    let ledger = match (&setup, other_given, tokens) {
        (Some(s), false, Some(t)) => match s.model.hidden {
            Some(h) => {
                let (bytes, formula) = default_other_bytes(s, t, h as f64);
                p.record_number("max_num_batched_tokens", t);
                p.record_number("other_bytes", bytes);
                Some((bytes, formula))
            }
            None => {
                p.fail(
                    "other_bytes",
                    "is required when no model or config gives hidden_size (the activation \
                     peak needs it)",
                );
                None
            }
        },
        _ => None,
    };
    let other = match (other, &ledger) {
        (Some(o), _) => Some(o),
        (None, Some((bytes, _))) => Some(*bytes),
        (None, None) => None,
    };
    let page = p.or(
        "page_tokens",
        super::defaults::PAGE_TOKENS.value,
        Rule::Count,
    );
    let requests = p.req("requests", Rule::Count);
    let prompt = p.req("prompt_tokens", Rule::Count);
    let output = p.req("output_tokens", Rule::CountOrZero);
    let (Some(s), Some(util), Some(other), Some(page), Some(requests), Some(prompt), Some(output)) =
        (setup, util, other, page, requests, prompt, output)
    else {
        return Err(p.into_errors());
    };
    let mut used = p.finish()?;
    let device = match device {
        Some(d) => {
            // The catalog memory figure was not used; don't show it as if it were.
            used.remove("hbm_bytes");
            d
        }
        None => {
            used.insert("device_bytes".into(), fmt::whole(s.gpu.hbm_bytes));
            s.gpu.hbm_bytes
        }
    };

    let mut w = Work::new();
    let budget = device * util;
    w.bytes_line(
        "budget_bytes_per_gpu",
        "Budget per GPU",
        format!(
            "{} × {}",
            crate::fmt::bytes(device, ByteStyle::Figure),
            fmt::num(util)
        ),
        budget,
    );
    let weights = s.weights_line(
        &mut w,
        "weight_bytes_per_gpu",
        "Weights per GPU",
        s.weight_dtype,
    );
    if let Some((_, formula)) = &ledger {
        w.bytes_line(
            "other_bytes",
            "Everything else per GPU",
            formula.clone(),
            other,
        );
    }
    let pool_bytes = budget - weights - other;
    w.bytes_line(
        "pool_bytes",
        "KV pool per GPU",
        format!(
            "{} − {} − {}",
            crate::fmt::bytes(budget, ByteStyle::Figure),
            crate::fmt::bytes(weights, ByteStyle::Figure),
            crate::fmt::bytes(other, ByteStyle::Figure)
        ),
        pool_bytes,
    );
    let per_token = s.kv_token_line(&mut w);
    let page_bytes = page * per_token;
    w.bytes_line(
        "page_bytes",
        "Bytes per page",
        format!(
            "{} tokens × {}",
            fmt::num(page),
            crate::fmt::bytes(per_token, ByteStyle::Figure)
        ),
        page_bytes,
    );
    let pool_pages = (pool_bytes / page_bytes).floor().max(0.0);
    w.line(
        "pool_pages",
        "Pages in the pool",
        format!(
            "⌊{} / {}⌋",
            crate::fmt::bytes(pool_bytes, ByteStyle::Figure),
            crate::fmt::bytes(page_bytes, ByteStyle::Figure)
        ),
        fmt::whole(pool_pages),
        "pages",
    );
    let start_each = (prompt / page).ceil();
    let pages_at_start = requests * start_each;
    w.line(
        "pages_at_start",
        "Pages at admission",
        format!(
            "{} requests × ⌈{} / {}⌉ = {} × {}",
            fmt::num(requests),
            fmt::num(prompt),
            fmt::num(page),
            fmt::num(requests),
            fmt::num(start_each)
        ),
        fmt::whole(pages_at_start),
        "pages",
    );
    let finish_each = ((prompt + output) / page).ceil();
    let pages_at_finish = requests * finish_each;
    w.line(
        "pages_at_finish",
        "Pages at full length",
        format!(
            "{} requests × ⌈({} + {}) / {}⌉ = {} × {}",
            fmt::num(requests),
            fmt::num(prompt),
            fmt::num(output),
            fmt::num(page),
            fmt::num(requests),
            fmt::num(finish_each)
        ),
        fmt::whole(pages_at_finish),
        "pages",
    );
    let max_full = (pool_pages / finish_each).floor();
    w.line(
        "max_full_length_requests",
        "Requests that can reach full length together",
        format!("⌊{} / {}⌋", fmt::num(pool_pages), fmt::num(finish_each)),
        fmt::whole(max_full),
        "requests",
    );
    let preempt = pages_at_finish > pool_pages;
    w.line(
        "preemption_expected",
        "Preemption expected",
        format!("{} > {}", fmt::num(pages_at_finish), fmt::num(pool_pages)),
        preempt.into(),
        "",
    );

    w.result("other_bytes", fmt::whole(other));
    w.result("pool_pages", fmt::whole(pool_pages));
    w.result("pages_at_start", fmt::whole(pages_at_start));
    w.result("pages_at_finish", fmt::whole(pages_at_finish));
    w.result("max_full_length_requests", fmt::whole(max_full));
    w.result("preemption_expected", preempt.into());
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(per_token));

    let sanity = if pool_pages == 0.0 {
        format!(
            "There is no KV pool: weights and other memory ({}) take the whole {} budget.",
            crate::fmt::bytes(weights + other, ByteStyle::Figure),
            crate::fmt::bytes(budget, ByteStyle::Figure)
        )
    } else if pages_at_start > pool_pages {
        format!(
            "The prompts alone need {} pages but the pool holds {}: not even all {} requests \
             can be admitted, and only {} can reach full length together.",
            fmt::num(pages_at_start),
            fmt::num(pool_pages),
            fmt::num(requests),
            fmt::num(max_full)
        )
    } else if preempt {
        format!(
            "The prompts fit ({} of {} pages), but at full length the requests need {}: only \
             {} of {} can finish together, so preemption is certain. Future output pages \
             belong in the ledger.",
            fmt::num(pages_at_start),
            fmt::num(pool_pages),
            fmt::num(pages_at_finish),
            fmt::num(max_full),
            fmt::num(requests)
        )
    } else {
        format!(
            "All {} requests fit even at full length ({} of {} pages): no preemption from KV \
             pressure.",
            fmt::num(requests),
            fmt::num(pages_at_finish),
            fmt::num(pool_pages)
        )
    };
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const REF: &str = "model=llama-3.1-8b device_bytes=80e9 gpu_memory_utilization=0.92 \
        other_bytes=2e9 page_tokens=16 requests=200 prompt_tokens=2048";

    #[test]
    fn reference_preemption_ledger() {
        let c = ok("kv-pages", &format!("{REF} output_tokens=1024"));
        assert_eq!(c.results["pool_pages"], serde_json::json!(26_483));
        assert_eq!(c.results["pages_at_start"], serde_json::json!(25_600));
        assert_eq!(c.results["pages_at_finish"], serde_json::json!(38_400));
        assert_eq!(
            c.results["max_full_length_requests"],
            serde_json::json!(137)
        );
        assert_eq!(c.results["preemption_expected"], serde_json::json!(true));
        assert!(c.sanity.contains("preemption is certain"));
        assert!(!c.inputs.contains_key("hbm_bytes"));
    }

    #[test]
    fn short_outputs_fit() {
        let c = ok("kv-pages", &format!("{REF} output_tokens=16"));
        assert_eq!(c.results["pages_at_finish"], serde_json::json!(200 * 129));
        assert_eq!(c.results["preemption_expected"], serde_json::json!(false));
    }

    #[test]
    fn device_defaults_to_the_gpu() {
        let c = ok(
            "kv-pages",
            "model=llama-3.1-8b gpu=h100-sxm requests=1 prompt_tokens=1 output_tokens=0",
        );
        assert_eq!(
            c.inputs["device_bytes"],
            serde_json::json!(85_020_000_000u64)
        );
        // "Everything else" is memory-fit's ledger: the sampler run's 1,024 seqs ×
        // 128,256 vocab × 38.9 B of activations + 0.14 GB other (no NCCL at TP 1).
        let other = 1024.0 * 128_256.0 * 38.9 + 0.14e9;
        close(&c, "other_bytes", other);
        let pool = ((0.92_f64 * 85.02e9 - 16_060_522_496.0 - other) / (16.0 * 131_072.0)).floor();
        close(&c, "pool_pages", pool);
        // partial pages round up
        let c = ok(
            "kv-pages",
            "model=llama-3.1-8b requests=3 prompt_tokens=17 output_tokens=0",
        );
        assert_eq!(c.results["pages_at_start"], serde_json::json!(6));
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "kv-pages",
            "model=llama-3.1-8b device_bytes=80e9 hbm_bytes=80e9 page_tokens=0 requests=2.5",
        );
        has_err(&e, "device_bytes", "not both");
        has_err(&e, "page_tokens", "at least 1");
        has_err(&e, "requests", "whole number");
        has_err(&e, "prompt_tokens", "required");
        has_err(&e, "output_tokens", "required");
        has_err(
            &errs("kv-pages", &format!("{REF} output_tokens=-1")),
            "output_tokens",
            "at least 0",
        );
    }
}
