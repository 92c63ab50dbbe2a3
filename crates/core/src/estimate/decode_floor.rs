//! decode-floor: the fastest a decode step can possibly be, set by HBM bandwidth.
//!
//! floor = (weight bytes per GPU + batch × context × KV bytes per token per GPU) / bandwidth.
//! Against a measured inter-token latency, floor / measured falls in a band:
//! > 0.8 near the limit, 0.4–0.8 overhead (kernels, launches, scheduling), < 0.4 structural.

use super::chain::Work;
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

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::WEIGHT_DTYPE,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    opt(
        "measured_itl_ms",
        "Measured ITL",
        "ms",
        None,
        "Measured inter-token latency (e.g. p50) to compare with the floor.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::BANDWIDTH,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Decode step floor",
    summary:
        "The bandwidth-bound minimum decode step time, and how far a measured ITL is above it.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&measured_itl_ms=24",
    run,
};

/// Where floor / measured falls: how much of the step the bandwidth floor explains.
pub(crate) fn band(ratio: f64) -> &'static str {
    if ratio > 0.8 {
        "near-limit"
    } else if ratio >= 0.4 {
        "overhead"
    } else {
        "structural"
    }
}

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let measured = p.opt("measured_itl_ms", Rule::Positive);
    let (Some(s), Some(batch), Some(context)) = (setup, batch, context) else {
        return Err(p.into_errors());
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let floor = s.decode_floor(&mut w, batch, context);
    w.result("weight_bytes_per_gpu", fmt::whole(floor.weight_bytes));
    w.result("kv_bytes_per_token_per_gpu", fmt::whole(floor.kv_per_token));
    w.result("kv_bytes_per_step", fmt::whole(floor.kv_per_step));
    if s.model.routed.is_some() {
        w.result("weight_bytes_read_per_step", fmt::whole(floor.weights_read));
    }
    w.result("floor_ms", fmt::float(floor.ms));

    let mut sanity = format!(
        "No decode step of this setup on {} can take less than {}: each step streams {} per \
         GPU from HBM ({} of it KV).",
        s.gpu.name,
        fmt::ms(floor.ms),
        crate::fmt::bytes(floor.weights_read + floor.kv_per_step, ByteStyle::Figure),
        crate::fmt::bytes(floor.kv_per_step, ByteStyle::Figure)
    );
    if let Some(m) = measured {
        let ratio = floor.ms / m;
        let b = band(ratio);
        w.line(
            "floor_over_measured",
            "Floor / measured",
            format!("{} / {}", fmt::ms(floor.ms), fmt::ms(m)),
            fmt::float(ratio),
            "",
        );
        w.line(
            "band",
            "Band",
            match b {
                "near-limit" => format!("{} > 0.8", fmt::num(ratio)),
                "overhead" => format!("0.4 ≤ {} ≤ 0.8", fmt::num(ratio)),
                _ => format!("{} < 0.4", fmt::num(ratio)),
            },
            b.into(),
            "",
        );
        w.result("floor_over_measured", fmt::float(ratio));
        w.result("band", b.into());
        sanity.push(' ');
        sanity.push_str(&if ratio > 1.0 {
            format!(
                "The measured {} is below the floor, which cannot be: check bandwidth, dtypes, \
                 batch and context.",
                fmt::ms(m)
            )
        } else {
            match b {
                "near-limit" => format!(
                    "The measured {} is within 20% of it: decode is bandwidth-bound; only fewer \
                     bytes (smaller dtypes, shorter context, more TP) make it faster.",
                    fmt::ms(m)
                ),
                "overhead" => format!(
                    "The measured {} is {}× the floor: the gap is kernel or launch overhead \
                     (CUDA graphs, scheduling, sampling) rather than bytes.",
                    fmt::ms(m),
                    fmt::num(1.0 / ratio)
                ),
                _ => format!(
                    "The measured {} is {}× the floor: something structural (CPU-bound \
                     scheduling, synchronisation, preemption, the wrong batch) dominates.",
                    fmt::ms(m),
                    fmt::num(1.0 / ratio)
                ),
            }
        });
    }
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::band;

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
    fn bands() {
        assert_eq!(band(0.81), "near-limit");
        assert_eq!(band(0.8), "overhead");
        assert_eq!(band(0.4), "overhead");
        assert_eq!(band(0.39), "structural");
        let c = ok("decode-floor", &format!("{E} measured_itl_ms=16"));
        assert_eq!(c.results["band"], "near-limit");
        let c = ok("decode-floor", &format!("{E} measured_itl_ms=100"));
        assert_eq!(c.results["band"], "structural");
        let c = ok("decode-floor", &format!("{E} measured_itl_ms=10"));
        assert!(c.sanity.contains("cannot be"));
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
