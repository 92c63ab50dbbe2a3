//! decode-floor: the fastest a decode step can possibly be, set by HBM bandwidth, and
//! what a well-run server of this setup takes for it.
//!
//! floor = (weight bytes per GPU + batch × context × KV bytes per token per GPU) / bandwidth.
//! expected = the floor at the bandwidth kernels reach, plus the fixed costs per layer,
//! per MoE layer, per collective and per step, plus the prefills riding in decode steps
//! at the observed load ([`super::expected_cost`], constants fitted on published runs).
//! A measured inter-token latency is read against the expected step: measured / expected
//! ≤ 1.2 healthy, ≤ 2.5 overhead, beyond structural; floor / measured is still shown.

use super::chain::Work;
use super::expected_cost::{self, Basis, Constants};
use super::fitted::FITTED;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};
use crate::fmt::ByteStyle;

const NAME: &str = "decode-floor";

pub(crate) const BATCH: FieldSpec = need(
    "batch",
    "Batch",
    "sequences",
    "Sequences decoding together in one step.",
);
pub(crate) const CONTEXT: FieldSpec = need(
    "context",
    "Context",
    "tokens",
    "Mean tokens already in each sequence's KV cache.",
);
pub(crate) const PROMPT: FieldSpec = opt(
    "prompt_tokens",
    "Prompt length",
    "tokens",
    None,
    "Mean prompt tokens per request: with the output length, the prefill work that rides in \
     decode steps at this load (chunked prefill) enters the expected step.",
);
pub(crate) const OUTPUT: FieldSpec = opt(
    "output_tokens",
    "Output length",
    "tokens",
    None,
    "Mean output tokens per request (see prompt_tokens).",
);

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::EP,
    setup::WEIGHT_DTYPE,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    PROMPT,
    OUTPUT,
    opt(
        "measured_itl_ms",
        "Measured ITL",
        "ms",
        None,
        "Measured inter-token latency (e.g. p50) to compare with the expected step and the floor.",
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
    title: "Decode step floor and expected step",
    summary: "The bandwidth-bound minimum decode step, what a well-run server takes for it, and how a measured ITL compares.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&measured_itl_ms=24",
    run,
};

/// Prefill tokens a decode step carries at steady state when each request brings
/// `prompt` tokens and leaves after `output`: `batch × prompt / output`.
pub(crate) fn riding_prefill(batch: f64, load: Option<(f64, f64)>) -> (f64, String) {
    match load {
        Some((prompt, output)) => (
            batch * prompt / output,
            format!(
                "{} seqs × {} prompt / {} output tokens a step",
                fmt::num(batch),
                fmt::num(prompt),
                fmt::num(output)
            ),
        ),
        None => (0.0, String::new()),
    }
}

/// The expected decode step of a setup, as the chain and the calibration both compute it.
pub(crate) fn expected(
    w: &mut Work,
    s: &Setup,
    c: &Constants,
    reads: (f64, f64),
    batch: f64,
    load: Option<(f64, f64)>,
) -> (f64, Basis) {
    let (prefill, formula) = riding_prefill(batch, load);
    let basis = s.basis(reads, prefill, batch + prefill);
    let shape = s.shape(batch + prefill, prefill, formula);
    (expected_cost::decode_lines(w, c, &basis, &shape), basis)
}

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    evaluate(inputs, &FITTED).map(|(chain, _)| chain)
}

/// The chain with these constants, and the expected step's basis before them.
pub(crate) fn evaluate(inputs: &Inputs, c: &Constants) -> Result<(Chain, Basis), Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let prompt = p.opt("prompt_tokens", Rule::Count);
    let output = p.opt("output_tokens", Rule::Count);
    if prompt.is_some() != output.is_some()
        && !p.has_error("prompt_tokens")
        && !p.has_error("output_tokens")
    {
        let missing = if prompt.is_none() {
            "prompt_tokens"
        } else {
            "output_tokens"
        };
        p.fail(
            missing,
            "give prompt_tokens and output_tokens together (or neither)",
        );
    }
    let measured = p.opt("measured_itl_ms", Rule::Positive);
    let (Some(s), Some(batch), Some(context)) = (setup, batch, context) else {
        return Err(p.into_errors());
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let floor = s.decode_floor(&mut w, batch, context);
    let (expected_ms, basis) = expected(
        &mut w,
        &s,
        c,
        (floor.weights_read, floor.kv_per_step),
        batch,
        prompt.zip(output),
    );
    w.result("weight_bytes_per_gpu", fmt::whole(floor.weight_bytes));
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(floor.kv_per_token));
    w.result("kv_bytes_per_step", fmt::whole(floor.kv_per_step));
    if s.model.routed.is_some() {
        w.result("weight_bytes_read_per_step", fmt::whole(floor.weights_read));
    }
    w.result("floor_ms", fmt::float(floor.ms));
    w.result("expected_ms", fmt::float(expected_ms));

    let mut sanity = format!(
        "No decode step of this setup on {} can take less than {}: each step streams {} per \
         GPU from HBM ({} of it KV). A well-run server takes about {} ({}× the floor: the \
         bandwidth kernels reach and the fixed costs of each layer and step).",
        s.gpu.name,
        fmt::ms(floor.ms),
        crate::fmt::bytes(floor.weights_read + floor.kv_per_step, ByteStyle::Figure),
        crate::fmt::bytes(floor.kv_per_step, ByteStyle::Figure),
        fmt::ms(expected_ms),
        fmt::num(expected_ms / floor.ms)
    );
    if let Some(m) = measured {
        let ratio = floor.ms / m;
        w.line(
            "floor_over_measured",
            "Floor / measured",
            format!("{} / {}", fmt::ms(floor.ms), fmt::ms(m)),
            fmt::float(ratio),
            "",
        );
        w.result("floor_over_measured", fmt::float(ratio));
        let b = expected_cost::judge(&mut w, expected_ms, m);
        sanity.push(' ');
        sanity.push_str(&verdict(b, m, expected_ms, ratio));
    }
    Ok((w.finish(NAME, used, sanity), basis))
}

/// The sentence for a measured step in its band.
pub(crate) fn verdict(
    band: &str,
    measured: f64,
    expected: f64,
    floor_over_measured: f64,
) -> String {
    if floor_over_measured > 1.0 {
        return format!(
            "The measured {} is below the floor, which cannot be: check bandwidth, dtypes, \
             batch and context.",
            fmt::ms(measured)
        );
    }
    let times = fmt::num(measured / expected);
    match band {
        "healthy" => format!(
            "The measured {} is {times}× the expected step ({} of the floor): a healthy \
             server of this setup; only fewer bytes (smaller dtypes, shorter context, more TP) \
             or fewer fixed costs (another engine, larger batches) make it faster.",
            fmt::ms(measured),
            fmt::pct(floor_over_measured) + "%"
        ),
        "overhead" => format!(
            "The measured {} is {times}× the expected step: overhead beyond what a well-run \
             server of this setup spends; profile the step (CUDA graphs, kernel choice, scheduling, \
             sampling) for the {} it loses.",
            fmt::ms(measured),
            fmt::ms(measured - expected)
        ),
        _ => format!(
            "The measured {} is {times}× the expected step: something structural (CPU-bound \
             scheduling, synchronisation, preemption, the wrong batch or parallelism) \
             dominates.",
            fmt::ms(measured)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const E: &str = "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096";

    #[test]
    fn reference_llama_8b_h100() {
        let c = ok("decode-floor", &format!("{E} measured_itl_ms=24"));
        assert_eq!(
            c.results["weight_bytes_per_gpu"],
            serde_json::json!(16_060_522_496u64)
        );
        assert_eq!(
            c.results["kv_bytes_per_token_per_gpu"],
            serde_json::json!(131_072)
        );
        assert_eq!(
            c.results["kv_bytes_per_step"],
            serde_json::json!(34_359_738_368u64)
        );
        close(&c, "floor_ms", 15.05);
        close(&c, "floor_over_measured", 0.63);
        assert_eq!(c.results["band"], "overhead");
        let floor = c.lines.iter().find(|l| l.key == "floor_ms").unwrap();
        assert_eq!(floor.formula, "(16.06 GB + 34.36 GB) / 3.35 TB/s");
        assert!(c.sanity.contains("overhead"));
    }

    #[test]
    fn bands_read_the_measured_step_against_the_expected_one() {
        let c = ok("decode-floor", E);
        let expected = num(&c, "expected_ms");
        let floor = num(&c, "floor_ms");
        assert!(
            expected > floor && expected < 2.0 * floor,
            "{expected} vs {floor}"
        );
        let at = |m: f64| ok("decode-floor", &format!("{E} measured_itl_ms={m}"));
        assert_eq!(at(expected).results["band"], "healthy");
        assert_eq!(at(expected * 1.6).results["band"], "overhead");
        assert_eq!(at(expected * 3.0).results["band"], "structural");
        assert!(at(expected * 3.0).sanity.contains("structural"));
        assert!(at(expected).sanity.contains("healthy"));
        let below = at(10.0);
        assert!(below.sanity.contains("cannot be"));
        // the floor ratio is still there
        close(&at(expected), "floor_over_measured", floor / expected);
    }

    #[test]
    fn every_term_of_the_expected_step_is_a_line() {
        let dense = ok("decode-floor", E);
        let keys: Vec<&str> = dense.lines.iter().map(|l| l.key.as_str()).collect();
        for k in [
            "expected_weights_ms",
            "expected_kv_ms",
            "expected_layer_ms",
            "expected_step_overhead_ms",
            "expected_ms",
        ] {
            assert!(keys.contains(&k), "{k} in {keys:?}");
        }
        // no collectives at TP 1, no MoE term for a dense model
        assert!(!keys.contains(&"expected_collective_ms") && !keys.contains(&"expected_moe_ms"));
        let moe = ok(
            "decode-floor",
            "model=deepseek-r1 gpu=h200 tp=8 batch=8 context=1000 prompt_tokens=1000 output_tokens=1000",
        );
        let keys: Vec<&str> = moe.lines.iter().map(|l| l.key.as_str()).collect();
        for k in [
            "expected_moe_ms",
            "expected_collective_ms",
            "expected_link_ms",
            "expected_interference_ms",
        ] {
            assert!(keys.contains(&k), "{k} in {keys:?}");
        }
        let sum: f64 = moe
            .lines
            .iter()
            .filter(|l| l.key.starts_with("expected_") && l.key != "expected_ms")
            .map(|l| l.value.as_f64().unwrap())
            .sum();
        close(&moe, "expected_ms", sum);
        for l in moe
            .lines
            .iter()
            .filter(|l| l.key.starts_with("expected_") && l.key != "expected_ms")
        {
            assert!(
                l.formula.contains("fitted")
                    || l.formula.contains("assumed")
                    || l.formula.contains("default"),
                "{} has no source: {}",
                l.key,
                l.formula
            );
        }
        let e = errs("decode-floor", &format!("{E} prompt_tokens=100"));
        has_err(&e, "output_tokens", "together");
    }

    #[test]
    fn without_measurement_no_band() {
        let c = ok("decode-floor", E);
        assert!(!c.results.contains_key("band"));
        assert!(!c.results.contains_key("floor_over_measured"));
    }

    #[test]
    fn fp8_kv_halves_kv_bytes() {
        let c = ok("decode-floor", &format!("{E} kv_dtype=fp8"));
        assert_eq!(
            c.results["kv_bytes_per_token_per_gpu"],
            serde_json::json!(65_536)
        );
        close(
            &c,
            "floor_ms",
            (16.060522496e9 + 17.179869184e9) / 3.35e12 * 1e3,
        );
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "decode-floor",
            "model=llama-3.1-8b batch=0 context=-4 measured_itl_ms=0 contxt=1",
        );
        has_err(&e, "batch", "at least 1");
        has_err(&e, "context", "at least 1");
        has_err(&e, "measured_itl_ms", "greater than 0");
        has_err(&e, "contxt", "did you mean `context`");
        // mixed-step's knobs are not accepted here
        has_err(
            &errs("decode-floor", &format!("{E} mfu=0.5")),
            "mfu",
            "unknown input",
        );
    }
}
