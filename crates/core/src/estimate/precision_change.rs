//! precision-change: the decode gain expected from changing weight precision while the
//! KV cache keeps its dtype, against the gain actually observed.
//!
//! step_ms(d) = (params × bytes(d) / TP + batch × context × KV bytes per token per GPU) / bandwidth;
//! expected_speedup = step_ms(from) / step_ms(to). An observed throughput change c
//! (−0.15 = 15% fewer tokens/s) means observed_step_ms = step_ms(from) / (1 + c), and
//! observed_over_expected = observed_step_ms / step_ms(to) (> 1: slower than the bytes explain).

use super::chain::Work;
use super::decode_floor::{BATCH, CONTEXT};
use super::input::{Parser, Rule};
use super::setup::{self, need, opt, Setup};
use super::{fmt, Chain, Dtype, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "precision-change";

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    opt(
        "from",
        "From weight dtype",
        "",
        Some("bf16"),
        "Weight dtype before the change: bf16, fp16, fp8, int8, int4 or fp4.",
    ),
    need(
        "to",
        "To weight dtype",
        "",
        "Weight dtype after the change: bf16, fp16, fp8, int8, int4 or fp4.",
    ),
    opt(
        "observed_change",
        "Observed throughput change",
        "",
        None,
        "Relative change in decode tokens/s after the switch: -0.15 for a 15% loss, 0.3 for a 30% gain.",
    ),
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::BANDWIDTH,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Weight precision change",
    summary: "Expected decode speedup from a change of weight precision (KV unchanged), and observed over expected.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&from=bf16&to=fp8&observed_change=0.2",
    run,
};

fn weight_dtype(p: &mut Parser, key: &str, default: Option<Dtype>) -> Option<Dtype> {
    let parsed = match (p.text(key), default) {
        (Some(text), _) => Dtype::parse(text),
        (None, Some(d)) => Ok(d),
        (None, None) => Err("is required (bf16, fp16, fp8, int8, int4 or fp4)".to_string()),
    };
    match parsed {
        Ok(d) => {
            p.record(key, d.name());
            Some(d)
        }
        Err(msg) => {
            p.fail(key, msg);
            None
        }
    }
}

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let from = weight_dtype(&mut p, "from", Some(Dtype::Bf16));
    let to = weight_dtype(&mut p, "to", None);
    let observed = p.opt("observed_change", Rule::Change);
    let (Some(s), Some(batch), Some(context), Some(from), Some(to)) =
        (setup, batch, context, from, to)
    else {
        return Err(p.into_errors());
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let w_from = s.weights_line(
        &mut w,
        "weight_bytes_per_gpu_from",
        "Weights per GPU before",
        from,
    );
    let w_to = s.weights_line(
        &mut w,
        "weight_bytes_per_gpu_to",
        "Weights per GPU after",
        to,
    );
    let per_token = s.kv_token_line(&mut w);
    let kv = s.kv_step_line(&mut w, batch, context, per_token);
    let read_from = s.weights_read(&mut w, from, batch, w_from, "_from");
    let read_to = s.weights_read(&mut w, to, batch, w_to, "_to");
    let from_ms = s.floor_line(&mut w, "step_ms_from", "Step floor before", read_from, kv);
    let to_ms = s.floor_line(&mut w, "step_ms_to", "Step floor after", read_to, kv);
    let speedup = from_ms / to_ms;
    w.line(
        "expected_speedup",
        "Expected speedup",
        format!("{} / {}", fmt::ms(from_ms), fmt::ms(to_ms)),
        fmt::float(speedup),
        "×",
    );
    w.result("weight_bytes_per_gpu_from", fmt::whole(w_from));
    w.result("weight_bytes_per_gpu_to", fmt::whole(w_to));
    w.result("kv_bytes_per_step", fmt::whole(kv));
    w.result("step_ms_from", fmt::float(from_ms));
    w.result("step_ms_to", fmt::float(to_ms));
    w.result("expected_speedup", fmt::float(speedup));

    let kv_share = kv / (read_from + kv);
    let mut sanity = format!(
        "Going from {} to {} weights should make a bandwidth-bound decode step {}× faster \
         ({} → {}); KV is {}% of the bytes before and does not shrink, which caps the gain.",
        from.name(),
        to.name(),
        fmt::num(speedup),
        fmt::ms(from_ms),
        fmt::ms(to_ms),
        fmt::pct(kv_share)
    );
    if let Some(c) = observed {
        let obs_ms = from_ms / (1.0 + c);
        let ratio = obs_ms / to_ms;
        w.ms_line(
            "observed_step_ms",
            "Observed step (scaled)",
            if c < 0.0 {
                format!("{} / (1 − {})", fmt::ms(from_ms), fmt::num(-c))
            } else {
                format!("{} / (1 + {})", fmt::ms(from_ms), fmt::num(c))
            },
            obs_ms,
        );
        w.line(
            "observed_over_expected",
            "Observed / expected step",
            format!("{} / {}", fmt::ms(obs_ms), fmt::ms(to_ms)),
            fmt::float(ratio),
            "",
        );
        w.result("observed_step_ms", fmt::float(obs_ms));
        w.result("observed_over_expected", fmt::float(ratio));
        sanity.push(' ');
        sanity.push_str(&if ratio > 1.05 {
            format!(
                "The observed step is {}× the expected one: the new kernels (dequantisation, \
                 unsupported fast paths) cost more than the saved bytes give back.",
                fmt::num(ratio)
            )
        } else if ratio < 0.95 {
            format!(
                "The observed step is {}× the expected one: faster than the bytes alone \
                 explain, so something else changed too (batch, context, kernels).",
                fmt::num(ratio)
            )
        } else {
            "The observation matches the bytes: the change did what it could.".to_string()
        });
    }
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const E: &str = "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096";

    #[test]
    fn bf16_to_fp8_halves_only_the_weights() {
        let c = ok("precision-change", &format!("{E} to=fp8"));
        let kv = 34_359_738_368.0;
        let from = (16_060_522_496.0 + kv) / 3.35e12 * 1e3;
        let to = (8_030_261_248.0 + kv) / 3.35e12 * 1e3;
        close(&c, "step_ms_from", 15.05);
        close(&c, "step_ms_to", to);
        close(&c, "expected_speedup", from / to);
        assert!(num(&c, "expected_speedup") < 1.2);
        assert_eq!(c.inputs["from"], "bf16");
    }

    #[test]
    fn observed_loss_against_expected_gain() {
        let c = ok(
            "precision-change",
            &format!("{E} from=bf16 to=fp8 observed_change=-0.15"),
        );
        let from = num(&c, "step_ms_from");
        let to = num(&c, "step_ms_to");
        close(&c, "observed_step_ms", from / 0.85);
        close(&c, "observed_over_expected", from / 0.85 / to);
        assert!(c.sanity.contains("cost more"));
        let c = ok(
            "precision-change",
            &format!("{E} to=fp8 observed_change=0.19"),
        );
        assert!(c.sanity.contains("matches"));
    }

    #[test]
    fn int4_weights() {
        let c = ok(
            "precision-change",
            "model=llama-3.1-8b batch=1 context=1 to=int4",
        );
        assert_eq!(
            c.results["weight_bytes_per_gpu_to"],
            serde_json::json!(4_015_130_624u64)
        );
        let line = c
            .lines
            .iter()
            .find(|l| l.key == "weight_bytes_per_gpu_to")
            .unwrap();
        assert!(
            line.formula.contains("group scales ignored"),
            "{}",
            line.formula
        );
    }

    #[test]
    fn errors_name_fields() {
        let e = errs(
            "precision-change",
            &format!("{E} from=fp6 observed_change=-1"),
        );
        has_err(&e, "from", "unknown dtype");
        has_err(&e, "to", "required");
        has_err(&e, "observed_change", "greater than -1");
        has_err(
            &errs("precision-change", &format!("{E} to=fp8 weight_dtype=fp8")),
            "weight_dtype",
            "unknown input",
        );
    }
}
