//! mixed-step: a decode step that also carries a prefill chunk.
//!
//! step_tokens = chunk_tokens + batch; compute = 2 × params × step_tokens / TP at
//! peak × MFU; KV read = batch × context × KV bytes per token per GPU / bandwidth;
//! step ≈ compute + KV read. The weight read overlaps the (compute-bound) GEMMs and
//! the chunk's attention over its own prefix is left out, so this is a lower estimate.

use super::chain::Work;
use super::decode_floor::{BATCH, CONTEXT};
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "mixed-step";

pub(crate) const CHUNK: FieldSpec = need(
    "chunk_tokens",
    "Prefill chunk",
    "tokens",
    "Prefill tokens scheduled into the step (chunked prefill budget).",
);

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    CHUNK,
    opt(
        "mfu",
        "MFU",
        "",
        Some("0.5"),
        "Fraction of peak the GEMMs reach, in (0, 1].",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::BANDWIDTH,
    setup::PEAK_FLOPS,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Mixed prefill/decode step",
    summary: "Time of a decode step that also carries a prefill chunk: compute for all its tokens plus the KV read.",
    fields: FIELDS,
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let chunk = p.req("chunk_tokens", Rule::Count);
    let mfu = p.or("mfu", 0.5, Rule::Fraction);
    let (Some(s), Some(batch), Some(context), Some(chunk), Some(mfu)) =
        (setup, batch, context, chunk, mfu)
    else {
        return Err(p.into_errors());
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let step_tokens = chunk + batch;
    w.line(
        "step_tokens",
        "Tokens in the step",
        format!("{} chunk + {} decode", fmt::num(chunk), fmt::num(batch)),
        fmt::whole(step_tokens),
        "tokens",
    );
    let (flop, compute_ms) =
        s.compute_lines(&mut w, step_tokens, mfu, "prefill_flops", "compute_ms");
    let per_token = s.kv_token_line(&mut w);
    let kv_bytes = s.kv_step_line(&mut w, batch, context, per_token);
    let kv_ms = kv_bytes / s.gpu.bandwidth * 1e3;
    w.ms_line(
        "kv_ms",
        "KV read time",
        format!("{} / {}", fmt::bytes(kv_bytes), fmt::rate(s.gpu.bandwidth)),
        kv_ms,
    );
    let step_ms = compute_ms + kv_ms;
    w.ms_line(
        "step_ms",
        "Mixed step",
        format!("{} + {}", fmt::ms(compute_ms), fmt::ms(kv_ms)),
        step_ms,
    );

    w.result("step_tokens", fmt::whole(step_tokens));
    w.result("prefill_flops", fmt::whole(flop));
    w.result("compute_ms", fmt::float(compute_ms));
    w.result("kv_bytes_per_step", fmt::whole(kv_bytes));
    w.result("kv_ms", fmt::float(kv_ms));
    w.result("step_ms", fmt::float(step_ms));

    let sanity = format!(
        "A step carrying a {}-token prefill chunk takes about {} ({} compute at {}% of peak, \
         {} reading KV), and every running request waits that long for its next token. A \
         smaller chunk trades TTFT for ITL.",
        fmt::num(chunk),
        fmt::ms(step_ms),
        fmt::ms(compute_ms),
        fmt::pct(mfu),
        fmt::ms(kv_ms)
    );
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn reference_chunk_2048() {
        let c = ok(
            "mixed-step",
            "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 chunk_tokens=2048 mfu=0.5",
        );
        assert_eq!(c.results["step_tokens"], serde_json::json!(2112));
        close(&c, "prefill_flops", 33.9e12);
        close(&c, "compute_ms", 68.6);
        close(&c, "kv_ms", 10.3);
        close(&c, "step_ms", 79.0);
        assert!(c.sanity.contains("TTFT"));
    }

    #[test]
    fn default_mfu_and_tp() {
        let c = ok(
            "mixed-step",
            "model=llama-3.3-70b tp=4 batch=32 context=2048 chunk_tokens=512",
        );
        assert_eq!(c.inputs["mfu"], serde_json::json!(0.5));
        let flop = 2.0 * 70_553_706_496.0 * 544.0;
        close(&c, "compute_ms", flop / 4.0 / (989e12 * 0.5) * 1e3);
        close(&c, "kv_ms", 32.0 * 2048.0 * 81_920.0 / 3.35e12 * 1e3);
    }

    #[test]
    fn moe_compute_uses_active_params() {
        let c = ok(
            "mixed-step",
            "model=mixtral-8x7b tp=2 batch=1 context=1 chunk_tokens=999",
        );
        let active = crate::estimate::models::find("mixtral-8x7b")
            .unwrap()
            .spec
            .params()
            .unwrap()
            .active as f64;
        close(&c, "prefill_flops", 2.0 * active * 1000.0);
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "mixed-step",
            "model=llama-3.1-8b batch=64 context=4096 mfu=1.2",
        );
        has_err(&e, "chunk_tokens", "required");
        has_err(&e, "mfu", "(0, 1]");
        has_err(
            &errs(
                "mixed-step",
                "model=llama-3.1-8b batch=64 context=4096 chunk_tokens=1 mfu=0",
            ),
            "mfu",
            "(0, 1]",
        );
    }
}
