//! periodic-tail: why a long prompt arriving every period makes a p99 spike with a flat p50.
//!
//! plain step = the measured `plain_step_ms` when given, else the decode floor; chunk
//! compute = 2 × params × chunk_tokens / TP / (peak × MFU), at the peak of the compute
//! precision (weights × activations);
//! slow step = chunk compute + plain step; one long prompt makes ⌈long / chunk⌉ slow steps;
//! normal steps per period = (period − slow steps × slow step) / plain step, the plain
//! steps that fit in what the slow steps leave of the period (none when they fill it);
//! slow share = slow / (normal + slow). Every step hands each running request one token,
//! so the share of steps is the share of ITL samples, and percentile q lands on slow
//! steps when slow share > 1 − q.

use super::chain::Work;
use super::decode_floor::{BATCH, CONTEXT};
use super::fmt;
use super::input::{Parser, Rule};
use super::mixed_step::{CHUNK, MFU};
use super::setup::{self, need, opt, Mfu, Setup};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "periodic-tail";

const FIELDS: &[FieldSpec] = &[
    setup::MODEL,
    setup::CONFIG,
    setup::GPU,
    setup::TP,
    setup::WEIGHT_DTYPE,
    setup::ACTIVATION_DTYPE,
    setup::KV_DTYPE,
    BATCH,
    CONTEXT,
    CHUNK,
    need(
        "long_prompt_tokens",
        "Long prompt",
        "tokens",
        "Length of the periodic long prompt.",
    ),
    need("period_s", "Period", "s", "Seconds between long prompts."),
    opt(
        "plain_step_ms",
        "Measured plain step",
        "ms",
        None,
        "A measured step without a chunk (e.g. p50 ITL); without it the plain step is the \
         decode floor.",
    ),
    MFU,
    setup::PARAMS,
    setup::LAYERS,
    setup::KV_HEADS,
    setup::HEAD_DIM,
    setup::BANDWIDTH,
    setup::PEAK_FLOPS,
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Periodic tail",
    summary: "Whether a periodic long prompt's chunked prefill steps reach p50, p90 or p99 of ITL.",
    fields: FIELDS,
    example: "model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&chunk_tokens=2048&long_prompt_tokens=16384&period_s=10",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let setup = Setup::resolve(&mut p);
    let batch = p.req("batch", Rule::Count);
    let context = p.req("context", Rule::Count);
    let chunk = p.req("chunk_tokens", Rule::Count);
    let long = p.req("long_prompt_tokens", Rule::Count);
    let period = p.req("period_s", Rule::Positive);
    let measured = p.opt("plain_step_ms", Rule::Positive);
    let measured_given = p.given("plain_step_ms");
    let mfu = Mfu::read(&mut p);
    let (Some(s), Some(batch), Some(context), Some(chunk), Some(long), Some(period), Some(mfu)) =
        (setup, batch, context, chunk, long, period, mfu)
    else {
        return Err(p.into_errors());
    };
    if measured_given && measured.is_none() {
        return Err(p.into_errors());
    }
    let used = p.finish()?;

    let mut w = Work::new();
    let floor = s.decode_floor(&mut w, batch, context);
    let plain = match measured {
        Some(m) => {
            w.ms_line(
                "plain_step_used_ms",
                "Plain step (measured)",
                format!(
                    "plain_step_ms as given; {}× the {} floor",
                    fmt::num(m / floor.ms),
                    fmt::ms(floor.ms)
                ),
                m,
            );
            m
        }
        None => {
            w.ms_line(
                "plain_step_used_ms",
                "Plain step (the decode floor)",
                format!(
                    "{} floor: no measured plain_step_ms, so a lower bound",
                    fmt::ms(floor.ms)
                ),
                floor.ms,
            );
            floor.ms
        }
    };
    let (_, chunk_ms) = s.compute_lines(&mut w, chunk, mfu, "chunk_flops", "chunk_compute_ms");
    let slow = chunk_ms + plain;
    w.ms_line(
        "slow_step_ms",
        "Step with a chunk",
        format!("{} + {}", fmt::ms(chunk_ms), fmt::ms(plain)),
        slow,
    );
    let ratio = slow / plain;
    w.line(
        "slow_over_plain",
        "Slow / plain step",
        format!("{} / {}", fmt::ms(slow), fmt::ms(plain)),
        fmt::float(ratio),
        "×",
    );
    let chunks = (long / chunk).ceil();
    w.line(
        "chunks_per_long_prompt",
        "Slow steps per long prompt",
        format!("⌈{} / {}⌉", fmt::num(long), fmt::num(chunk)),
        fmt::whole(chunks),
        "steps",
    );
    let period_ms = period * 1e3;
    let normal = ((period_ms - chunks * slow) / plain).max(0.0);
    w.line(
        "normal_steps_per_period",
        "Plain steps per period",
        format!(
            "max(0, ({} − {} × {}) / {})",
            fmt::ms(period_ms),
            fmt::num(chunks),
            fmt::ms(slow),
            fmt::ms(plain)
        ),
        fmt::float(normal),
        "steps",
    );
    let share = chunks / (normal + chunks);
    w.line(
        "slow_step_share",
        "Share of slow steps",
        format!(
            "{} / ({} + {})",
            fmt::num(chunks),
            fmt::num(normal),
            fmt::num(chunks)
        ),
        fmt::float(share),
        "",
    );
    let hits = |q: f64| share > 1.0 - q;
    for (key, q) in [
        ("p50_hits_slow", 0.5),
        ("p90_hits_slow", 0.9),
        ("p99_hits_slow", 0.99),
    ] {
        w.line(
            key,
            &format!("p{} lands on slow steps", fmt::num(q * 100.0)),
            format!("{} > {}", fmt::num(share), fmt::num(1.0 - q)),
            hits(q).into(),
            "",
        );
        w.result(key, hits(q).into());
    }

    w.result("plain_step_ms", fmt::float(plain));
    w.result("floor_ms", fmt::float(floor.ms));
    w.result(
        "plain_step_source",
        if measured.is_some() {
            "measured"
        } else {
            "floor"
        }
        .into(),
    );
    w.result("chunk_compute_ms", fmt::float(chunk_ms));
    w.result("slow_step_ms", fmt::float(slow));
    w.result("slow_over_plain", fmt::float(ratio));
    w.result("chunks_per_long_prompt", fmt::whole(chunks));
    w.result("normal_steps_per_period", fmt::float(normal));
    w.result("slow_step_share", fmt::float(share));

    let worst = if hits(0.5) {
        "p50"
    } else if hits(0.9) {
        "p90"
    } else if hits(0.99) {
        "p99"
    } else {
        ""
    };
    let mut sanity = format!(
        "Each long prompt turns {} steps into {} steps ({}× a plain {} step); they are {}% of \
         all steps. ",
        fmt::num(chunks),
        fmt::ms(slow),
        fmt::num(ratio),
        fmt::ms(plain),
        fmt::pct(share)
    );
    sanity.push_str(&match worst {
        "" => {
            "That is under 1%, so even p99 stays on plain steps: the spike shows only in the max."
                .to_string()
        }
        "p50" => {
            "More than half the steps are slow, so the median moves too: this is no longer a tail."
                .to_string()
        }
        q => format!(
            "So {q} and above land on the slow steps while p50 stays flat: a periodic tail, not \
             a general slowdown. A smaller chunk lowers the spike and lengthens the prefill."
        ),
    });
    if chunks * slow > period_ms {
        sanity.push_str(" The slow steps alone take longer than the period: prompts pile up.");
    }
    sanity.push_str(if measured.is_some() {
        " The plain step is the measured one."
    } else {
        " The plain step is the bandwidth floor (no measured plain_step_ms): a real plain step \
         is longer, which makes the slow steps a larger share."
    });
    sanity.push_str(mfu.caveat());
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const E: &str = "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 chunk_tokens=2048";

    #[test]
    fn a_32k_prompt_every_10s_hits_p99_only() {
        // The reference chain computes the chunk at peak: mfu=1, a lower bound.
        let c = ok(
            "periodic-tail",
            &format!("{E} long_prompt_tokens=32768 period_s=10 mfu=1"),
        );
        close(&c, "plain_step_ms", 15.05);
        let chunk_ms = 2.0 * 8_030_261_248.0 * 2048.0 / 989e12 * 1e3;
        close(&c, "chunk_compute_ms", chunk_ms);
        close(&c, "slow_step_ms", chunk_ms + 15.05);
        close(&c, "slow_over_plain", (chunk_ms + 15.05) / 15.05);
        assert_eq!(c.results["chunks_per_long_prompt"], serde_json::json!(16));
        // The seed chain: plain steps fill what the 16 slow steps leave of the period.
        let normal = (10_000.0 - 16.0 * (chunk_ms + 15.0508)) / 15.0508;
        close(&c, "normal_steps_per_period", normal);
        close(&c, "slow_step_share", 16.0 / (normal + 16.0));
        assert_eq!(c.results["p50_hits_slow"], serde_json::json!(false));
        assert_eq!(c.results["p90_hits_slow"], serde_json::json!(false));
        assert_eq!(c.results["p99_hits_slow"], serde_json::json!(true));
        assert!(c.sanity.contains("p99"), "{}", c.sanity);
        assert!(c.sanity.contains("lower bound"), "{}", c.sanity);
        assert_eq!(c.inputs["mfu"], serde_json::json!(1));
        assert_eq!(c.results["plain_step_source"], serde_json::json!("floor"));
    }

    /// The incident: Llama 3.1 70B FP8 on 4×H100 SXM, TP 4, ~48 running at a
    /// context of ~2,000, a 22k-token prompt every 5 s, measured p50 ITL 23 ms.
    const FP8_70B: &str = "model=llama-3.1-70b gpu=h100-sxm tp=4 weight_dtype=fp8 batch=48 \
        context=2000 long_prompt_tokens=22000 period_s=5";

    #[test]
    fn fp8_weights_compute_at_the_fp8_peak_and_mfu_defaults_as_everywhere() {
        let c = ok("periodic-tail", &format!("{FP8_70B} chunk_tokens=2048"));
        assert_eq!(
            c.inputs["peak_flops"],
            serde_json::json!(1_979_000_000_000_000u64)
        );
        assert_eq!(c.inputs["mfu"], serde_json::json!(0.5));
        let flop = 2.0 * 70_553_706_496.0 * 2048.0;
        close(&c, "chunk_compute_ms", flop / 4.0 / (1979e12 * 0.5) * 1e3);
        let peak = c.lines.iter().find(|l| l.key == "compute_peak").unwrap();
        assert!(peak.formula.contains("W8A8"), "{}", peak.formula);
        let mfu = c.lines.iter().find(|l| l.key == "mfu").unwrap();
        assert!(mfu.formula.starts_with("default:"), "{}", mfu.formula);
    }

    #[test]
    fn a_measured_plain_step_replaces_the_floor_and_moves_p99_onto_slow_steps() {
        let floor = ok(
            "periodic-tail",
            &format!("{FP8_70B} chunk_tokens=2048 mfu=0.7"),
        );
        let measured = ok(
            "periodic-tail",
            &format!("{FP8_70B} chunk_tokens=2048 mfu=0.7 plain_step_ms=23"),
        );
        assert_eq!(
            measured.results["plain_step_source"],
            serde_json::json!("measured")
        );
        close(&measured, "plain_step_ms", 23.0);
        close(&measured, "floor_ms", num(&floor, "plain_step_ms"));
        let chunk_ms = num(&measured, "chunk_compute_ms");
        close(&measured, "slow_step_ms", chunk_ms + 23.0);
        // 11 slow steps of ~75 ms, the rest of 5 s in 23 ms steps: about 5 % slow.
        let normal = (5000.0 - 11.0 * (chunk_ms + 23.0)) / 23.0;
        close(&measured, "slow_step_share", 11.0 / (normal + 11.0));
        assert_eq!(measured.results["p99_hits_slow"], serde_json::json!(true));
        assert!(measured.sanity.contains("measured"), "{}", measured.sanity);
        assert!(floor.sanity.contains("bandwidth floor"), "{}", floor.sanity);
        assert!(num(&measured, "slow_step_share") > num(&floor, "slow_step_share"));
        let e = errs(
            "periodic-tail",
            &format!("{FP8_70B} chunk_tokens=2048 plain_step_ms=0"),
        );
        has_err(&e, "plain_step_ms", "greater than 0");
    }

    #[test]
    fn rare_prompts_stay_out_of_p99_and_frequent_reach_p90() {
        let rare = ok(
            "periodic-tail",
            &format!("{E} long_prompt_tokens=4096 period_s=60"),
        );
        assert_eq!(rare.results["p99_hits_slow"], serde_json::json!(false));
        let often = ok(
            "periodic-tail",
            &format!("{E} long_prompt_tokens=32768 period_s=1 mfu=0.5"),
        );
        assert_eq!(often.results["p90_hits_slow"], serde_json::json!(true));
        assert!(often.sanity.contains("pile up"));
        // The slow steps fill the whole second: no plain steps are left, all are slow.
        close(&often, "normal_steps_per_period", 0.0);
        close(&often, "slow_step_share", 1.0);
    }

    #[test]
    fn errors_name_fields() {
        let e = errs("periodic-tail", &format!("{E} period_s=0 mfu=2"));
        has_err(&e, "long_prompt_tokens", "required");
        has_err(&e, "period_s", "greater than 0");
        has_err(&e, "mfu", "(0, 1]");
    }
}
