//! prefix-reuse: how much more prefill work a request does when its cached prefix shrinks.
//!
//! computed = prompt_tokens − cached_tokens; prefill_ratio = computed_after / computed_before.

use super::chain::Work;
use super::fmt;
use super::input::{Parser, Rule};
use super::setup::{need, opt};
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "prefix-reuse";

const FIELDS: &[FieldSpec] = &[
    need(
        "prompt_tokens",
        "Prompt length",
        "tokens",
        "Tokens per prompt (the same before and after).",
    ),
    opt(
        "cached_tokens_before",
        "Cached tokens before",
        "tokens",
        None,
        "Prefix-cache hits per request before the change (e.g. cached tokens / requests). \
         Or give shared_prefix_tokens and hit_rate.",
    ),
    opt(
        "shared_prefix_tokens",
        "Shared prefix",
        "tokens",
        None,
        "Length of the prefix requests share, used with hit_rate instead of cached_tokens_before.",
    ),
    opt(
        "hit_rate",
        "Prefix hit rate",
        "",
        None,
        "Fraction of requests that find the shared prefix cached, in [0, 1].",
    ),
    opt(
        "cached_tokens_after",
        "Cached tokens after",
        "tokens",
        Some("0"),
        "Prefix-cache hits per request after the change.",
    ),
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Prefix-cache reuse",
    summary:
        "Prefill work per request before and after a change in how much of the prompt is cached.",
    fields: FIELDS,
    example: "prompt_tokens=3000&cached_tokens_before=2432",
    run,
};

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    let prompt = p.req("prompt_tokens", Rule::Count);
    let direct = p.given("cached_tokens_before");
    let via_hit = p.given("shared_prefix_tokens") || p.given("hit_rate");
    let before = match (direct, via_hit) {
        (true, true) => {
            p.fail(
                "cached_tokens_before",
                "give cached_tokens_before or shared_prefix_tokens with hit_rate, not both",
            );
            None
        }
        (true, false) => p
            .opt("cached_tokens_before", Rule::NonNegative)
            .map(|c| (c, None)),
        (false, true) => {
            let shared = p.req("shared_prefix_tokens", Rule::NonNegative);
            let hit = p.req("hit_rate", Rule::Probability);
            shared.zip(hit).map(|(s, h)| (s * h, Some((s, h))))
        }
        (false, false) => {
            p.fail(
                "cached_tokens_before",
                "is required (or give shared_prefix_tokens and hit_rate)",
            );
            None
        }
    };
    let after = p.or("cached_tokens_after", 0.0, Rule::NonNegative);
    let (Some(prompt), Some((before, split)), Some(after)) = (prompt, before, after) else {
        return Err(p.into_errors());
    };
    // At least one prompt token is always computed, so the ratio stays finite.
    let before_key = if split.is_some() {
        "shared_prefix_tokens"
    } else {
        "cached_tokens_before"
    };
    if before >= prompt {
        p.fail(
            before_key,
            format!(
                "cached tokens ({}) must be fewer than prompt_tokens ({})",
                fmt::num(before),
                fmt::num(prompt)
            ),
        );
    }
    if after >= prompt {
        p.fail(
            "cached_tokens_after",
            format!(
                "must be fewer than prompt_tokens ({}), got {}",
                fmt::num(prompt),
                fmt::num(after)
            ),
        );
    }
    let mut used = p.finish()?;
    used.insert("cached_tokens_before".into(), fmt::whole(before));

    let mut w = Work::new();
    if let Some((shared, hit)) = split {
        w.line(
            "cached_tokens_before",
            "Cached tokens before",
            format!("{} shared × {} hit rate", fmt::num(shared), fmt::num(hit)),
            fmt::whole(before),
            "tokens",
        );
    }
    let computed_before = prompt - before;
    let computed_after = prompt - after;
    let ratio = computed_after / computed_before;
    w.line(
        "computed_before",
        "Computed per request before",
        format!("{} − {}", fmt::num(prompt), fmt::num(before)),
        fmt::whole(computed_before),
        "tokens",
    );
    w.line(
        "computed_after",
        "Computed per request after",
        format!("{} − {}", fmt::num(prompt), fmt::num(after)),
        fmt::whole(computed_after),
        "tokens",
    );
    w.line(
        "prefill_ratio",
        "Prefill work after / before",
        format!(
            "{} / {}",
            fmt::num(computed_after),
            fmt::num(computed_before)
        ),
        fmt::float(ratio),
        "×",
    );
    w.result("computed_before", fmt::whole(computed_before));
    w.result("computed_after", fmt::whole(computed_after));
    w.result("prefill_ratio", fmt::float(ratio));

    let sanity = if ratio > 1.0 {
        format!(
            "The prompt length did not change ({} tokens); the reusable part did: each request \
             now computes {} tokens instead of {}, {}× the prefill work, which shows up as TTFT \
             and as longer mixed steps. Look for what made the prefix differ (a timestamp, an \
             id, reordered instructions).",
            fmt::num(prompt),
            fmt::num(computed_after),
            fmt::num(computed_before),
            fmt::num(ratio)
        )
    } else {
        format!(
            "Each request computes {} prompt tokens instead of {}: {}× the prefill work, so \
             prefill got cheaper, not dearer.",
            fmt::num(computed_after),
            fmt::num(computed_before),
            fmt::num(ratio)
        )
    };
    Ok(w.finish(NAME, used, sanity))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn reference_template_change() {
        // 243,200 cached tokens per 100 requests = 2,432 per request
        let c = ok(
            "prefix-reuse",
            "prompt_tokens=3000 cached_tokens_before=2432",
        );
        close(&c, "computed_before", 568.0);
        close(&c, "computed_after", 3000.0);
        close(&c, "prefill_ratio", 5.28);
        assert_eq!(c.results["computed_before"], serde_json::json!(568));
        assert!(c.sanity.contains("did not change"));
    }

    #[test]
    fn shared_prefix_and_hit_rate() {
        let c = ok(
            "prefix-reuse",
            "prompt_tokens=3000 shared_prefix_tokens=2560 hit_rate=0.95 cached_tokens_after=100",
        );
        close(&c, "computed_before", 568.0);
        close(&c, "computed_after", 2900.0);
        close(&c, "prefill_ratio", 2900.0 / 568.0);
        assert_eq!(c.inputs["cached_tokens_before"], serde_json::json!(2432));
    }

    #[test]
    fn errors_name_fields() {
        has_err(
            &errs("prefix-reuse", "cached_tokens_before=1"),
            "prompt_tokens",
            "required",
        );
        has_err(
            &errs("prefix-reuse", "prompt_tokens=3000"),
            "cached_tokens_before",
            "required",
        );
        has_err(
            &errs(
                "prefix-reuse",
                "prompt_tokens=3000 shared_prefix_tokens=2000",
            ),
            "hit_rate",
            "required",
        );
        has_err(
            &errs(
                "prefix-reuse",
                "prompt_tokens=3000 shared_prefix_tokens=2000 hit_rate=1.5",
            ),
            "hit_rate",
            "[0, 1]",
        );
        has_err(
            &errs(
                "prefix-reuse",
                "prompt_tokens=3000 cached_tokens_before=3000",
            ),
            "cached_tokens_before",
            "fewer than prompt_tokens",
        );
        has_err(
            &errs("prefix-reuse", "prompt_tokens=3000 cached_tokens_before=-1"),
            "cached_tokens_before",
            "0 or more",
        );
        let e = errs(
            "prefix-reuse",
            "prompt_tokens=abc cached_tokens_before=1 hit_rate=0.5",
        );
        has_err(&e, "prompt_tokens", "not a number");
        has_err(&e, "cached_tokens_before", "not both");
    }
}
