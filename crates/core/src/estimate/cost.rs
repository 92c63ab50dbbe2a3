//! cost: dollars per million tokens from GPU price and measured throughput.
//!
//! usd_per_million = gpu_hour_usd × gpus / (tokens_per_s × 3600) × 1e6;
//! tokens/s for a target = gpu_hour_usd × gpus × 1e6 / (target × 3600).

use super::chain::Work;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{need, opt};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "cost";

const FIELDS: &[FieldSpec] = &[
    need(
        "gpu_hour_usd",
        "Price per GPU-hour",
        "USD",
        "What one GPU costs per hour.",
    ),
    need(
        "gpus",
        "GPUs",
        "GPUs",
        "GPUs serving the measured throughput.",
    ),
    need(
        "output_tokens_per_s",
        "Output throughput",
        "tokens/s",
        "Measured output (generated) tokens per second across those GPUs.",
    ),
    opt(
        "input_tokens_per_s",
        "Input throughput",
        "tokens/s",
        None,
        "Measured input (prompt) tokens per second, to price input tokens too.",
    ),
    opt(
        "target_usd_per_million",
        "Target price",
        "USD per 1M output tokens",
        None,
        "A cost target; gives the output throughput needed to meet it.",
    ),
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Cost per token",
    summary: "Dollars per million tokens from GPU-hour price, GPU count and measured throughput.",
    fields: FIELDS,
    example: "gpu_hour_usd=2.5&gpus=8&output_tokens_per_s=3000",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let price = p.req("gpu_hour_usd", Rule::Positive);
    let gpus = p.req("gpus", Rule::Count);
    let out = p.req("output_tokens_per_s", Rule::Positive);
    let input = p.opt("input_tokens_per_s", Rule::Positive);
    let target = p.opt("target_usd_per_million", Rule::Positive);
    let (Some(price), Some(gpus), Some(out)) = (price, gpus, out) else {
        return Err(p.into_errors());
    };
    let used = p.finish()?;

    let mut w = Work::new();
    let per_hour = price * gpus;
    w.line(
        "usd_per_hour",
        "Fleet cost per hour",
        format!("${} × {} GPUs", fmt::num(price), fmt::num(gpus)),
        fmt::float(per_hour),
        "USD/h",
    );
    let per_million = |tps: f64| per_hour / (tps * 3600.0) * 1e6;
    let out_cost = per_million(out);
    w.line(
        "usd_per_million_output_tokens",
        "Per million output tokens",
        format!(
            "${} / ({} tok/s × 3600 s) × 1e6",
            fmt::num(per_hour),
            fmt::num(out)
        ),
        fmt::float(out_cost),
        "USD",
    );
    w.result("usd_per_million_output_tokens", fmt::float(out_cost));

    if let Some(i) = input {
        let in_cost = per_million(i);
        w.line(
            "usd_per_million_input_tokens",
            "Per million input tokens",
            format!(
                "${} / ({} tok/s × 3600 s) × 1e6",
                fmt::num(per_hour),
                fmt::num(i)
            ),
            fmt::float(in_cost),
            "USD",
        );
        w.result("usd_per_million_input_tokens", fmt::float(in_cost));
    }
    if let Some(t) = target {
        let needed = per_hour * 1e6 / (t * 3600.0);
        w.line(
            "output_tokens_per_s_for_target",
            "Output throughput for the target",
            format!(
                "${} × 1e6 / (${} × 3600 s)",
                fmt::num(per_hour),
                fmt::num(t)
            ),
            fmt::float(needed),
            "tokens/s",
        );
        w.result("output_tokens_per_s_for_target", fmt::float(needed));
    }

    let mut sanity = format!(
        "At {} output tokens/s, {} GPUs at ${}/h cost ${} per million output tokens",
        fmt::num(out),
        fmt::num(gpus),
        fmt::num(price),
        fmt::num(out_cost)
    );
    if input.is_some() {
        // Both figures charge the whole bill to one kind of token: ceilings, not a split.
        sanity.push_str(
            "; each per-token price charges the whole bill to that kind of token, so they do \
             not add up",
        );
    }
    sanity.push('.');
    if let Some(t) = target {
        let needed = per_hour * 1e6 / (t * 3600.0);
        sanity.push_str(&format!(
            " Meeting ${} per million needs {} output tokens/s, {}× today's.",
            fmt::num(t),
            fmt::num(needed),
            fmt::num(needed / out)
        ));
    }
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn reference_eight_gpus() {
        let c = ok("cost", "gpu_hour_usd=2.5 gpus=8 output_tokens_per_s=3000");
        close(&c, "usd_per_million_output_tokens", 1.852);
        assert!(!c.results.contains_key("usd_per_million_input_tokens"));
    }

    #[test]
    fn input_and_target() {
        let c = ok(
            "cost",
            "gpu_hour_usd=2.5 gpus=8 output_tokens_per_s=3000 input_tokens_per_s=30000 \
             target_usd_per_million=1",
        );
        close(&c, "usd_per_million_input_tokens", 0.1852);
        close(&c, "output_tokens_per_s_for_target", 20.0 * 1e6 / 3600.0);
        assert!(c.sanity.contains("1.852×"), "{}", c.sanity);
    }

    #[test]
    fn errors_name_fields() {
        let e = errs("cost", "gpu_hour_usd=-1 gpus=0 target_usd_per_million=0");
        has_err(&e, "gpu_hour_usd", "greater than 0");
        has_err(&e, "gpus", "at least 1");
        has_err(&e, "output_tokens_per_s", "required");
        has_err(&e, "target_usd_per_million", "greater than 0");
    }
}
