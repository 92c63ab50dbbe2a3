//! mixed-step: a decode step that also carries a prefill chunk.
//!
//! step_tokens = chunk_tokens + batch; compute = 2 × params × step_tokens / TP at
//! peak × MFU, the peak of the compute precision weights × activations map to; the
//! weight read = the weights the step's tokens touch (every expert a large chunk
//! routes to) / bandwidth; KV read = batch × context × KV bytes per token per GPU /
//! bandwidth; step ≈ max(compute, weight read) + KV read: the GEMMs stream the weights
//! while they multiply, so the step is never faster than reading them.
//!
//! The expected step ([`super::expected_cost`]) adds what a well-run server spends: the
//! compute counted as the kernels run it (no matmul for the embedding lookup, the LM head
//! for the chunk's last token and each decode only) with the chunk's attention over
//! itself, at the fitted prefill efficiency; the bytes at the achievable bandwidth; and
//! the fixed costs per layer, MoE layer, collective and step. With no decodes riding
//! along (batch 0) it is a lone request's prefill, and its TTFT adds the fitted request
//! path.

use super::chain::Work;
use super::decode_floor::CONTEXT;
use super::expected_cost::{self, Constants, PrefillParts};
use super::fitted::FITTED;
use super::fmt;
use super::gpus;
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Mfu, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};
use crate::fmt::ByteStyle;

const NAME: &str = "mixed-step";

/// The one MFU field (its default is [`super::defaults::MFU`]).
pub(crate) const MFU: FieldSpec = opt(
    "mfu",
    "MFU",
    "",
    Some("0.5"),
    "Fraction of the compute peak the GEMMs reach, in (0, 1]; 1 gives the bound at peak.",
);

pub(crate) const CHUNK: FieldSpec = need(
    "chunk_tokens",
    "Prefill chunk",
    "tokens",
    "Prefill tokens scheduled into the step (chunked prefill budget).",
);

const DECODES: FieldSpec = need(
    "batch",
    "Decoding sequences",
    "sequences",
    "Sequences decoding in the step beside the chunk; 0 for a lone request's prefill.",
);

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::EP,
    setup::WEIGHT_DTYPE,
    setup::ACTIVATION_DTYPE,
    setup::KV_DTYPE,
    DECODES,
    CONTEXT,
    CHUNK,
    MFU,
    opt(
        "measured_ms",
        "Measured step",
        "ms",
        None,
        "A measured step carrying such a chunk (or, with batch 0, a lone request's TTFT) to \
         read against the expected one.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::HIDDEN,
    setup::BANDWIDTH,
    setup::PEAK_FLOPS,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Mixed prefill/decode step",
    summary: "Time of a decode step that also carries a prefill chunk (or a lone prefill): compute or weight read, KV read, and what a well-run server takes.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&chunk_tokens=2048&mfu=0.5",
    run,
};

/// The expected step (and, for a lone prefill, its TTFT) as chain lines.
pub(crate) struct Expected {
    pub step_ms: f64,
    pub ttft_ms: Option<f64>,
}

pub(crate) fn expected(
    w: &mut Work,
    s: &Setup,
    c: &Constants,
    (tokens, chunk, batch): (f64, f64, f64),
    (weights_ms, kv_ms): (f64, f64),
) -> (Expected, PrefillParts) {
    // logits for the chunk's last token and for each decode
    let gemm_at_peak = s.step_gemm_ms_at_peak(tokens, 1.0 + batch);
    let attention_flops = s.chunk_attention_flops(chunk);
    let attention_at_peak = attention_flops / s.gpu.spec.bf16_flops.value * 1e3;
    let ceiling = s.gpu.spec.matmul_ceiling();
    let parts = PrefillParts {
        compute_at_peak_ms: gemm_at_peak + attention_at_peak,
        matmul_ceiling: ceiling.value,
        weights_ms,
        kv_ms,
        fixed: s.basis((0.0, 0.0), 0.0, tokens),
    };
    let compute = parts.compute(c);
    w.ms_line(
        "expected_compute_ms",
        "Compute with the chunk's attention",
        format!(
            "({} GEMMs as the kernels run them (the layers for every token, the LM head for \
             {} (the embedding lookup is no matmul)) + {} attention over the chunk ({} at \
             the 16-bit peak)) at peak / {} (the GPU's matmul ceiling: large BF16 matmuls \
             reach {:.1}% of the dense peak on {}, {}; {}) × {} (prefill reaches {}% of that \
             ceiling; fitted on {} published TTFTs from {} sources)",
            fmt::ms(gemm_at_peak),
            if batch > 0.0 {
                format!("the last prompt token and the {} decodes", fmt::num(batch))
            } else {
                "the last prompt token only".to_string()
            },
            fmt::ms(attention_at_peak),
            fmt::flop(attention_flops),
            fmt::num(ceiling.value),
            ceiling.value * 100.0,
            s.gpu.spec.name,
            ceiling.note,
            gpus::MATMUL_CEILING_SOURCE,
            fmt::num(c.prefill_compute_factor),
            fmt::pct(1.0 / c.prefill_compute_factor),
            c.ttft_cases,
            c.ttft_sources
        ),
        compute,
    );
    let weights = parts.weights(c);
    w.ms_line(
        "expected_weights_ms",
        "Weight read at the achievable bandwidth",
        format!(
            "{} × {} (kernels reach {}% of HBM bandwidth; fitted)",
            fmt::ms(weights_ms),
            fmt::num(c.bandwidth_factor),
            fmt::pct(1.0 / c.bandwidth_factor)
        ),
        weights,
    );
    let kv = kv_ms * c.kv_bandwidth_factor;
    w.ms_line(
        "expected_kv_ms",
        "KV read at the achievable bandwidth",
        format!(
            "{} × {} (attention reaches {}% of HBM bandwidth; fitted)",
            fmt::ms(kv_ms),
            fmt::num(c.kv_bandwidth_factor),
            fmt::pct(1.0 / c.kv_bandwidth_factor)
        ),
        kv,
    );
    let shape = s.shape(tokens, 0.0, String::new());
    let fixed = expected_cost::fixed_lines(w, c, &parts.fixed, &shape);
    let step = parts.expected(c);
    w.ms_line(
        "expected_ms",
        "Expected step",
        format!(
            "max({} compute, {} weights) + {} KV + {} fixed",
            fmt::ms(compute),
            fmt::ms(weights),
            fmt::ms(kv),
            fmt::ms(fixed)
        ),
        step,
    );
    let ttft = (batch == 0.0).then(|| {
        let ttft = step + c.request_ms;
        w.ms_line(
            "expected_ttft_ms",
            "Lone request's TTFT",
            format!(
                "{} prefill + {} request path (HTTP, tokenizing, scheduling, the first \
                 token's return; fitted on {} published TTFTs from {} sources)",
                fmt::ms(step),
                fmt::ms(c.request_ms),
                c.ttft_cases,
                c.ttft_sources
            ),
            ttft,
        );
        ttft
    });
    (
        Expected {
            step_ms: step,
            ttft_ms: ttft,
        },
        parts,
    )
}

/// The chain with these constants, and the step's parts before them.
pub(crate) fn evaluate(
    inputs: &Inputs,
    c: &Constants,
) -> Result<(Chain, PrefillParts), Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::CountOrZero);
    let context = p.req("context", Rule::CountOrZero);
    let chunk = p.req("chunk_tokens", Rule::Count);
    let mfu = Mfu::read(&mut p);
    let measured = p.opt("measured_ms", Rule::Positive);
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
    let resident = s.weight_bytes_per_gpu(s.weight_dtype);
    let weights = s.weights_read(&mut w, s.weight_dtype, step_tokens, resident, "");
    let weights_ms = weights / s.gpu.bandwidth * 1e3;
    w.ms_line(
        "weight_read_ms",
        "Weight read time",
        format!(
            "{} / {} (every weight the step's tokens touch, read once)",
            crate::fmt::bytes(weights, ByteStyle::Figure),
            fmt::rate(s.gpu.bandwidth)
        ),
        weights_ms,
    );
    let per_token = s.kv_token_line(&mut w);
    let kv_bytes = s.kv_step_line(&mut w, batch, context, per_token);
    let kv_ms = kv_bytes / s.gpu.bandwidth * 1e3;
    w.ms_line(
        "kv_ms",
        "KV read time",
        format!(
            "{} / {}",
            crate::fmt::bytes(kv_bytes, ByteStyle::Figure),
            fmt::rate(s.gpu.bandwidth)
        ),
        kv_ms,
    );
    let step_ms = compute_ms.max(weights_ms) + kv_ms;
    w.ms_line(
        "step_ms",
        "Mixed step",
        format!(
            "max({} compute, {} weight read) + {}",
            fmt::ms(compute_ms),
            fmt::ms(weights_ms),
            fmt::ms(kv_ms)
        ),
        step_ms,
    );
    let (e, parts) = expected(
        &mut w,
        &s,
        c,
        (step_tokens, chunk, batch),
        (weights_ms, kv_ms),
    );

    w.result("step_tokens", fmt::whole(step_tokens));
    w.result("prefill_flops", fmt::whole(flop));
    w.result("compute_ms", fmt::float(compute_ms));
    w.result("weight_bytes_per_gpu", fmt::whole(resident));
    w.result("weight_bytes_read_per_step", fmt::whole(weights));
    w.result("weight_read_ms", fmt::float(weights_ms));
    w.result("kv_bytes_per_step", fmt::whole(kv_bytes));
    w.result("kv_ms", fmt::float(kv_ms));
    w.result("step_ms", fmt::float(step_ms));
    w.result("expected_ms", fmt::float(e.step_ms));
    if let Some(t) = e.ttft_ms {
        w.result("expected_ttft_ms", fmt::float(t));
    }

    let peak = s.compute.as_ref().map_or("", |c| c.precision.name());
    let bound = if weights_ms > compute_ms {
        format!(
            "reading the {} of weights its tokens touch ({}) outlasts the compute ({} at {}% \
             of the {} peak)",
            crate::fmt::bytes(weights, ByteStyle::Figure),
            fmt::ms(weights_ms),
            fmt::ms(compute_ms),
            fmt::pct(mfu.value),
            peak
        )
    } else {
        format!(
            "{} compute at {}% of the {} peak",
            fmt::ms(compute_ms),
            fmt::pct(mfu.value),
            peak
        )
    };
    let mut sanity = format!(
        "A step carrying a {}-token prefill chunk takes about {} ({bound}, {} reading KV), \
         and every running request waits that long for its next token; a well-run server \
         takes about {} with its fixed costs. A smaller chunk trades TTFT for ITL.{}",
        fmt::num(chunk),
        fmt::ms(step_ms),
        fmt::ms(kv_ms),
        fmt::ms(e.step_ms),
        mfu.caveat()
    );
    if let Some(t) = e.ttft_ms {
        sanity.push_str(&format!(
            " Alone, the request's TTFT should be about {}.",
            fmt::ms(t)
        ));
    }
    if let Some(m) = measured {
        let against = e.ttft_ms.unwrap_or(e.step_ms);
        let b = expected_cost::judge(&mut w, against, m);
        sanity.push_str(&format!(
            " The measured {} is {}× the expected {}: {b}.",
            fmt::ms(m),
            fmt::num(m / against),
            if e.ttft_ms.is_some() { "TTFT" } else { "step" }
        ));
    }
    Ok((w.finish(NAME, used, sanity), parts))
}

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    evaluate(inputs, &FITTED).map(|(chain, _)| chain)
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

    /// The FP8 example: Llama 3.1 70B FP8 on 4×H100 SXM, TP 4, a 2,048-token
    /// chunk riding with 48 decodes at a context of 2,000: ≈ 56 ms at the FP8 peak and
    /// MFU 0.7 (55 ms was measured); the BF16 peak made it 152 ms.
    #[test]
    fn fp8_70b_tp4_chunk_2048_is_about_56_ms() {
        let c = ok(
            "mixed-step",
            "model=llama-3.1-70b gpu=h100-sxm tp=4 weight_dtype=fp8 batch=48 context=2000 \
             chunk_tokens=2048 mfu=0.7",
        );
        let flop = 2.0 * 70_553_706_496.0 * 2096.0;
        close(&c, "compute_ms", flop / 4.0 / (1979e12 * 0.7) * 1e3);
        close(&c, "step_ms", 55.7);
        assert_eq!(c.inputs["compute_precision"], serde_json::json!("FP8"));
        assert!(c.sanity.contains("FP8 peak"), "{}", c.sanity);
        // Weight-only FP8 (W8A16) runs at the BF16 peak: twice the compute time.
        let w8a16 = ok(
            "mixed-step",
            "model=llama-3.1-70b gpu=h100-sxm tp=4 weight_dtype=fp8 activation_dtype=bf16 \
             batch=48 context=2000 chunk_tokens=2048 mfu=0.7",
        );
        close(&w8a16, "compute_ms", num(&c, "compute_ms") * 1979.0 / 989.0);
    }

    #[test]
    fn w4a16_tp8_and_int8_w8a8_take_their_peaks() {
        let base = "model=llama-3.1-405b gpu=h100-sxm tp=8 batch=32 context=4096 \
                    chunk_tokens=1024 mfu=0.5";
        let w4 = ok("mixed-step", &format!("{base} weight_dtype=int4"));
        let flop = num(&w4, "prefill_flops");
        close(&w4, "compute_ms", flop / 8.0 / (989e12 * 0.5) * 1e3);
        assert_eq!(w4.inputs["compute_precision"], serde_json::json!("BF16"));
        let int8 = ok(
            "mixed-step",
            &format!("{base} weight_dtype=int8 activation_dtype=int8"),
        );
        close(&int8, "compute_ms", flop / 8.0 / (1979e12 * 0.5) * 1e3);
        // FP8 on an A100: no FP8 tensor cores, weight-only at the BF16 peak, said so.
        let a100 = ok(
            "mixed-step",
            "model=llama-3.1-8b gpu=a100-80gb weight_dtype=fp8 activation_dtype=fp8 batch=8 \
             context=1024 chunk_tokens=512",
        );
        let peak = a100.lines.iter().find(|l| l.key == "compute_peak").unwrap();
        assert!(
            peak.formula.contains("no FP8 tensor cores"),
            "{}",
            peak.formula
        );
        close(
            &a100,
            "compute_ms",
            2.0 * 8_030_261_248.0 * 520.0 / (312e12 * 0.5) * 1e3,
        );
        // FP4 on a B200
        let b200 = ok(
            "mixed-step",
            "model=llama-3.1-8b gpu=b200 weight_dtype=fp4 batch=8 context=1024 chunk_tokens=512",
        );
        assert_eq!(b200.inputs["compute_precision"], serde_json::json!("FP4"));
        close(
            &b200,
            "compute_ms",
            2.0 * 8_030_261_248.0 * 520.0 / (9e15 * 0.5) * 1e3,
        );
        has_err(
            &errs(
                "mixed-step",
                "model=llama-3.1-8b activation_dtype=fp8 batch=8 context=1 chunk_tokens=1",
            ),
            "activation_dtype",
            "bf16 weights with fp8 activations",
        );
    }

    #[test]
    fn moe_fp8_computes_active_params_at_the_fp8_peak() {
        let c = ok(
            "mixed-step",
            "model=deepseek-v3 gpu=h200 tp=8 weight_dtype=fp8 batch=64 context=4096 \
             chunk_tokens=2048 mfu=0.5",
        );
        let active = crate::estimate::models::find("deepseek-v3")
            .unwrap()
            .spec
            .params()
            .unwrap()
            .active as f64;
        close(
            &c,
            "compute_ms",
            2.0 * active * 2112.0 / 8.0 / (1979e12 * 0.5) * 1e3,
        );
    }

    #[test]
    fn at_peak_the_chain_says_lower_bound() {
        let c = ok(
            "mixed-step",
            "model=llama-3.1-8b batch=64 context=4096 chunk_tokens=2048 mfu=1",
        );
        assert!(c.sanity.contains("lower bound"), "{}", c.sanity);
        let half = ok(
            "mixed-step",
            "model=llama-3.1-8b batch=64 context=4096 chunk_tokens=2048",
        );
        assert!(!half.sanity.contains("lower bound"));
        let mfu = half.lines.iter().find(|l| l.key == "mfu").unwrap();
        assert!(mfu.formula.contains("default"), "{}", mfu.formula);
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

    /// A 1,000-token prefill touches essentially every expert: each GPU streams all its
    /// weights once, so the step can never be faster than that read.
    #[test]
    fn a_moe_prefill_step_is_never_faster_than_reading_its_weights() {
        for model in [
            "deepseek-r1 gpu=h200 tp=8",
            "qwen3-next-80b-a3b gpu=h100-sxm tp=2 weight_dtype=fp8",
            "minimax-m2 gpu=mi300x tp=2",
        ] {
            let c = ok(
                "mixed-step",
                &format!("model={model} batch=0 context=0 chunk_tokens=1000"),
            );
            let read = num(&c, "weight_bytes_read_per_step");
            let all = num(&c, "weight_bytes_per_gpu");
            assert!(read / all > 0.95, "{model}: {read} of {all}");
            let bw: f64 = c.inputs["bandwidth"].as_f64().unwrap();
            let read_ms = read / bw * 1e3;
            assert!(num(&c, "step_ms") >= read_ms, "{model}");
            assert!(num(&c, "expected_ms") >= read_ms, "{model}");
            assert!(num(&c, "expected_ttft_ms") > num(&c, "expected_ms"));
        }
        // and never below the same batch's decode floor
        let setup =
            "model=qwen3-next-80b-a3b gpu=h100-sxm tp=2 weight_dtype=fp8 batch=8 context=1000";
        let mixed = ok("mixed-step", &format!("{setup} chunk_tokens=512"));
        let floor = ok("decode-floor", setup);
        assert!(num(&mixed, "step_ms") >= num(&floor, "floor_ms"));
        assert!(num(&mixed, "expected_ms") >= num(&floor, "expected_ms"));
    }

    /// A lone prefill's compute runs at the GPU's measured matmul ceiling times the
    /// fitted efficiency, and its line says which ceiling and where it comes from.
    #[test]
    fn a_prefill_runs_at_the_gpus_matmul_ceiling() {
        let c = super::FITTED;
        let compute = |gpu: &str| {
            let chain = ok(
                "mixed-step",
                &format!("model=llama-3.1-8b gpu={gpu} batch=0 context=0 chunk_tokens=4096"),
            );
            let line = chain
                .lines
                .iter()
                .find(|l| l.key == "expected_compute_ms")
                .unwrap()
                .clone();
            (line.value.as_f64().unwrap(), line.formula)
        };
        let (h100, text) = compute("h100-sxm");
        assert!(text.contains("/ 0.803"), "{text}");
        assert!(
            text.contains("80.3% of the dense peak on h100-sxm"),
            "{text}"
        );
        assert!(text.contains("794.5 of 989 TFLOP/s"), "{text}");
        assert!(text.contains("ml-engineering"), "{text}");
        // the H800 has the H100's peaks and no measurement of its own: the default
        let (h800, text) = compute("h800");
        assert!(text.contains("not measured on this GPU"), "{text}");
        assert!((h800 - h100).abs() < 1e-9 * h100);
        // the MI300X reaches 51.1 % of its peak: the same work at the same fitted
        // efficiency takes 0.803 / 0.511 of the time it would at the H100's fraction
        let (mi300x, text) = compute("mi300x");
        assert!(text.contains("/ 0.511"), "{text}");
        let at_peak = mi300x * 0.511 / c.prefill_compute_factor;
        assert!(
            at_peak > 0.0 && mi300x > at_peak * 1.9,
            "{mi300x} vs {at_peak}"
        );
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
