//! Step 7 — the verdict of a matched before/after comparison: did the one
//! change move the metric beyond noise, and was the comparison fair at all?

use serde::{Deserialize, Serialize};

use super::reproduce::SingleChangeCheck;
use crate::metric::{format_value, Metric, Unit};
use crate::stats::{DiffCi, RunSpread, Statistic, Summary};

/// The smallest relative change (percent of the before value) a verdict calls a
/// change, when the investigation sets none: smaller moves are "no change" however
/// significant, since no one would act on them.
pub const DEFAULT_MIN_EFFECT_PCT: f64 = 2.0;
/// Estimates of the extra requests a side would need beyond this are not worth
/// stating as a number.
pub const MORE_REQUESTS_CAP: u64 = 1_000_000;
/// Failure rates (errors + cancellations) may differ by this much (absolute).
pub const FAILURE_RATE_TOLERANCE: f64 = 0.01;
/// Mean output tokens per request may differ by this fraction.
pub const OUTPUT_TOKENS_TOLERANCE: f64 = 0.05;

/// Outcome of a before/after comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Moved beyond noise in the good direction, and the change removed the
    /// cause the diagnosis proved.
    Confirmed,
    /// Moved beyond noise in the good direction; cause not proven.
    Improved,
    /// Within noise, and the interval still allows a change of at least the minimum
    /// effect.
    Inconclusive,
    /// Any change is smaller than the minimum effect: significant but small, or an
    /// interval lying within ± the minimum effect.
    NoChange,
    /// More than the declared variable differed, or the runs did different
    /// work: no conclusion can be drawn.
    InvalidComparison,
    /// Moved beyond noise in the bad direction.
    Regressed,
}

impl Verdict {
    pub fn slug(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Improved => "improved",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NoChange => "no_change",
            Verdict::InvalidComparison => "invalid_comparison",
            Verdict::Regressed => "regressed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Confirmed => "Confirmed",
            Verdict::Improved => "Improved",
            Verdict::Inconclusive => "Inconclusive",
            Verdict::NoChange => "No change",
            Verdict::InvalidComparison => "Invalid comparison",
            Verdict::Regressed => "Regressed",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Verdict> {
        [
            Verdict::Confirmed,
            Verdict::Improved,
            Verdict::Inconclusive,
            Verdict::NoChange,
            Verdict::InvalidComparison,
            Verdict::Regressed,
        ]
        .into_iter()
        .find(|v| v.slug() == slug)
    }
}

/// Everything known about one metric in a before/after comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    pub metric: Metric,
    pub unit: Unit,
    /// The statistic compared, e.g. p95; `ci` must be of the same statistic.
    pub statistic: Statistic,
    pub before: Summary,
    pub after: Summary,
    /// Bootstrap CI of `T(after) − T(before)`, with the p-value of the same bootstrap.
    pub ci: DiffCi,
    /// The smallest relative change (percent) worth calling a change.
    #[serde(default = "default_min_effect")]
    pub min_effect_pct: f64,
    /// Per-run spread when each side was measured in several runs.
    #[serde(default)]
    pub before_runs: Option<RunSpread>,
    #[serde(default)]
    pub after_runs: Option<RunSpread>,
    /// Why the comparison is not matched (see [`comparison_problems`]).
    #[serde(default)]
    pub invalid_reasons: Vec<String>,
    /// The diagnosis proved the cause this change removes.
    #[serde(default)]
    pub cause_proven: bool,
}

fn default_min_effect() -> f64 {
    DEFAULT_MIN_EFFECT_PCT
}

/// The verdict on one metric, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricVerdict {
    pub metric: Metric,
    pub statistic: Statistic,
    pub verdict: Verdict,
    /// `T(after) − T(before)`.
    pub observed_diff: f64,
    /// `observed_diff / T(before) · 100`, when the summary holds T(before).
    pub relative_change_pct: Option<f64>,
    pub ci_low: f64,
    pub ci_high: f64,
    pub p_value: f64,
    /// Why the verdict is what it is, one sentence each.
    pub reasons: Vec<String>,
    /// For an inconclusive result whose CI spans 0: roughly how many more
    /// requests per side would resolve it; see [`judge`].
    pub more_requests_per_side: Option<u64>,
    /// One line for the report and the journal.
    pub summary: String,
}

/// Judge one metric. One method gives both the interval and the p-value (the
/// bootstrap of [`DiffCi`]), so the interval leaves 0 out exactly when
/// `p < α = 1 − confidence`: "significant" below means both.
///
/// 1. Any invalid reason → InvalidComparison.
/// 2. Significant, the relative change |Δ| / T(before) at least the minimum
///    effect, and, with several runs per side, |Δ| above the run-to-run spread
///    (`max(range_before, range_after)` of the per-run statistic): on the
///    improving side (down for latency, up for throughput) → Confirmed when the
///    cause was proven, Improved otherwise; on the worsening side → Regressed.
/// 3. Significant but smaller than the minimum effect → NoChange.
/// 4. Not significant: when the whole interval lies within ± the minimum effect →
///    NoChange; when it still allows a change of the minimum effect → Inconclusive,
///    with roughly how many more requests per side would tell. The CI half-width w
///    shrinks as `1/√n`: to leave 0 out when |Δ| ≥ m (m the minimum effect in the
///    metric's unit) it must reach |Δ|, `n' = n · (w / |Δ|)²`; when |Δ| < m, to fit
///    within ±m it must reach `m − |Δ|`, `n' = n · (w / (m − |Δ|))²`; about
///    `n' − n` more (n = mean of the two sample sizes). It assumes the true change
///    equals the observed one — a rough guide, not a power calculation.
/// 5. Significant and large but within the run spread → Inconclusive.
pub fn judge(input: &MetricComparison) -> MetricVerdict {
    let ci = &input.ci;
    let d = ci.observed_diff;
    let before_stat = input.before.get(input.statistic);
    let relative_change_pct = before_stat.filter(|b| *b != 0.0).map(|b| d / b * 100.0);
    let min_effect = input.min_effect_pct.max(0.0);
    // The minimum effect in the metric's unit; without a before value there is no
    // relative scale, and any significant change counts.
    let min_abs = before_stat
        .filter(|b| *b != 0.0)
        .map_or(0.0, |b| b.abs() * min_effect / 100.0);
    let good_sign = if input.metric.higher_is_better() {
        1.0
    } else {
        -1.0
    };
    let significant = ci.excludes_zero();
    let improving = significant && d * good_sign > 0.0;
    let large = d.abs() >= min_abs;
    let possibly_large = ci.low.abs().max(ci.high.abs()) >= min_abs;
    let spread = [&input.before_runs, &input.after_runs]
        .into_iter()
        .flatten()
        .map(|s| s.range)
        .fold(None, |acc: Option<f64>, r| {
            Some(acc.map_or(r, |a| a.max(r)))
        });
    let beyond_spread = spread.is_none_or(|s| d.abs() > s);

    let unit = input.unit;
    let ci_text = format!(
        "the {:.0}% CI of the change is [{}, {}]",
        ci.confidence * 100.0,
        signed(ci.low, unit),
        signed(ci.high, unit)
    );
    let alpha = 1.0 - ci.confidence;
    let p_text = format_p(ci.p_value);
    let min_text = format!(
        "the minimum effect of {}% ({})",
        crate::fmt::format_number(min_effect, 1).trim_end_matches(".0"),
        format_value(min_abs, unit)
    );
    let pct_text = relative_change_pct.map_or_else(|| signed(d, unit), |p| format!("{p:+.1}%"));
    let mut reasons = Vec::new();
    let mut more_requests_per_side = None;

    let verdict = if !input.invalid_reasons.is_empty() {
        reasons.extend(input.invalid_reasons.iter().cloned());
        Verdict::InvalidComparison
    } else if significant && large && beyond_spread {
        let side = if improving { "improving" } else { "worsening" };
        reasons.push(format!(
            "{ci_text}, entirely on the {side} side ({p_text}), and the change ({pct_text}) reaches {min_text}"
        ));
        if !improving {
            Verdict::Regressed
        } else if input.cause_proven {
            reasons.push("The change removed the cause the diagnosis proved.".into());
            Verdict::Confirmed
        } else {
            reasons.push("The diagnosis did not prove that this change removes the cause, so the gain is not yet explained.".into());
            Verdict::Improved
        }
    } else if significant && !large {
        reasons.push(format!(
            "{ci_text} ({p_text}): the change ({pct_text}) is real but smaller than {min_text}"
        ));
        Verdict::NoChange
    } else if !significant && !possibly_large {
        reasons.push(format!(
            "{ci_text}, which includes 0 ({p_text} ≥ {alpha:.2}) and lies within ± {min_text}: any change is too small to matter"
        ));
        Verdict::NoChange
    } else {
        if significant {
            reasons.push(format!("{ci_text}, excluding 0 ({p_text})"));
        } else {
            reasons.push(format!(
                "{ci_text}, which includes 0 ({p_text} ≥ {alpha:.2}) but reaches beyond ± {min_text}"
            ));
            let w = ci.half_width();
            let target = if d.abs() >= min_abs {
                d.abs()
            } else {
                min_abs - d.abs()
            };
            if target > 0.0 && w > 0.0 {
                let n = (ci.n_before + ci.n_after) as f64 / 2.0;
                let needed = n * (w / target).powi(2);
                // Saturating float→int cast: absurd estimates stay finite.
                more_requests_per_side = Some((needed - n).max(0.0).ceil() as u64);
            }
        }
        if let Some(s) = spread.filter(|s| d.abs() <= *s) {
            reasons.push(format!(
                "the change ({}) is within the run-to-run spread ({}): repeat runs (A/B/B/A) before concluding",
                signed(d, unit),
                format_value(s, unit)
            ));
        }
        Verdict::Inconclusive
    };

    let direction = match d.partial_cmp(&0.0) {
        Some(std::cmp::Ordering::Less) => "fell",
        Some(std::cmp::Ordering::Greater) => "rose",
        _ => "stayed",
    };
    let after_stat = input.after.get(input.statistic);
    let movement = match (before_stat, after_stat) {
        (Some(b), Some(a)) => format!(
            "{direction} from {} to {}",
            format_value(b, unit),
            format_value(a, unit)
        ),
        _ => format!("changed by {}", signed(d, unit)),
    };
    let pct = relative_change_pct.map_or(String::new(), |p| format!(" ({p:+.1}%)"));
    let summary = format!(
        "{}: {} {} {movement}{pct}; {ci_text}, {p_text}",
        verdict.label(),
        input.statistic.label(),
        input.metric.short_label(),
    );
    MetricVerdict {
        metric: input.metric,
        statistic: input.statistic,
        verdict,
        observed_diff: d,
        relative_change_pct,
        ci_low: ci.low,
        ci_high: ci.high,
        p_value: ci.p_value,
        reasons,
        more_requests_per_side,
        summary,
    }
}

/// How many more requests per side an inconclusive result needs, as a phrase:
/// "needs ≈ 1,500 more requests per side to tell", and beyond
/// [`MORE_REQUESTS_CAP`] an honest "more than 1,000,000".
pub fn more_requests_text(n: u64) -> String {
    if n > MORE_REQUESTS_CAP {
        format!(
            "needs more than {} more requests per side — the difference is too small to matter",
            crate::fmt::grouped(MORE_REQUESTS_CAP)
        )
    } else {
        format!(
            "needs ≈ {} more requests per side to tell",
            crate::fmt::grouped(n)
        )
    }
}

fn signed(value: f64, unit: Unit) -> String {
    let text = format_value(value, unit);
    if value > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// "p < 0.001" or "p = 0.218".
fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

/// What one side of a comparison actually did; silent failures and early
/// end-of-sequence make a run look faster without doing the same work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunHealth {
    pub requests_sent: u64,
    pub succeeded: u64,
    pub errors: u64,
    pub cancelled: u64,
    /// Output tokens over the successful requests.
    pub output_tokens: u64,
    pub concurrency: Option<u64>,
}

/// Reasons a before/after pair is not a matched comparison: an undeclared
/// configuration change, different concurrency, failure rates differing by
/// more than 1 point, or mean output tokens per successful request differing
/// by more than 5%.
pub fn comparison_problems(
    check: &SingleChangeCheck,
    before: &RunHealth,
    after: &RunHealth,
) -> Vec<String> {
    let mut problems = check.problems.clone();
    if let (Some(b), Some(a)) = (before.concurrency, after.concurrency) {
        if a != b {
            problems.push(format!("Concurrency differs ({b} before, {a} after): compare distributions at a fixed concurrency."));
        }
    }
    for (side, h) in [("before", before), ("after", after)] {
        if h.succeeded == 0 {
            problems.push(format!("No successful requests {side} the change."));
        }
    }
    let failure_rate = |h: &RunHealth| {
        if h.requests_sent == 0 {
            0.0
        } else {
            (h.errors + h.cancelled) as f64 / h.requests_sent as f64
        }
    };
    let (fb, fa) = (failure_rate(before), failure_rate(after));
    if (fa - fb).abs() > FAILURE_RATE_TOLERANCE {
        problems.push(format!(
            "Errors and cancellations differ: {:.1}% of requests before, {:.1}% after. Failed requests are not faster requests.",
            fb * 100.0,
            fa * 100.0
        ));
    }
    if before.succeeded > 0 && after.succeeded > 0 {
        let tb = before.output_tokens as f64 / before.succeeded as f64;
        let ta = after.output_tokens as f64 / after.succeeded as f64;
        if tb > 0.0 && ((ta - tb) / tb).abs() > OUTPUT_TOKENS_TOLERANCE {
            problems.push(format!(
                "Mean output length changed from {tb:.0} to {ta:.0} tokens per request ({:+.0}%): early end-of-sequence or truncation changes the work, not the speed.",
                (ta - tb) / tb * 100.0
            ));
        }
    }
    problems
}

/// Where an observed value fell relative to a predicted range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PredictionScore {
    Inside,
    Below,
    Above,
}

/// Score a prediction `[low, high]` (bounds inclusive; given in either order)
/// against the observed value.
pub fn score_prediction(predicted_low: f64, predicted_high: f64, observed: f64) -> PredictionScore {
    let (low, high) = if predicted_low <= predicted_high {
        (predicted_low, predicted_high)
    } else {
        (predicted_high, predicted_low)
    };
    if observed < low {
        PredictionScore::Below
    } else if observed > high {
        PredictionScore::Above
    } else {
        PredictionScore::Inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::reproduce::{check_single_change, FrozenConfig};
    use crate::stats::{bootstrap_diff_ci, run_spread, BootstrapConfig};

    fn summary(p95: f64) -> Summary {
        Summary {
            count: 500,
            mean: Some(p95 * 0.6),
            std: Some(p95 * 0.3),
            min: Some(p95 * 0.2),
            max: Some(p95 * 1.5),
            p50: Some(p95 * 0.5),
            p90: Some(p95 * 0.9),
            p95: Some(p95),
            p99: Some(p95 * 1.2),
        }
    }

    fn ci(observed_diff: f64, low: f64, high: f64, p_value: f64) -> DiffCi {
        DiffCi {
            statistic: Statistic::P95,
            observed_diff,
            low,
            high,
            p_value,
            confidence: 0.95,
            resamples: 2000,
            seed: 1,
            n_before: 500,
            n_after: 500,
        }
    }

    fn comparison(
        metric: Metric,
        before: f64,
        after: f64,
        low: f64,
        high: f64,
        p: f64,
    ) -> MetricComparison {
        MetricComparison {
            metric,
            unit: if metric == Metric::Throughput {
                Unit::TokPerS
            } else {
                Unit::Ms
            },
            statistic: Statistic::P95,
            before: summary(before),
            after: summary(after),
            ci: ci(after - before, low, high, p),
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
            before_runs: None,
            after_runs: None,
            invalid_reasons: vec![],
            cause_proven: false,
        }
    }

    #[test]
    fn improved_and_confirmed() {
        let mut c = comparison(Metric::Ttft, 3200.0, 780.0, -2600.0, -2250.0, 1e-6);
        let v = judge(&c);
        assert_eq!(v.verdict, Verdict::Improved);
        assert_eq!(
            v.summary,
            "Improved: p95 TTFT fell from 3,200 ms to 780 ms (-75.6%); the 95% CI of the change is [-2,600 ms, -2,250 ms], p < 0.001"
        );
        assert!(
            v.reasons[0].contains("reaches the minimum effect of 2% (64.0 ms)"),
            "{:?}",
            v.reasons
        );
        c.cause_proven = true;
        assert_eq!(judge(&c).verdict, Verdict::Confirmed);
    }

    #[test]
    fn throughput_improves_upwards() {
        let up = comparison(Metric::Throughput, 2000.0, 2160.0, 90.0, 230.0, 0.001);
        assert_eq!(judge(&up).verdict, Verdict::Improved);
        let down = comparison(Metric::Throughput, 2000.0, 1800.0, -260.0, -140.0, 0.001);
        assert_eq!(judge(&down).verdict, Verdict::Regressed);
    }

    #[test]
    fn regressed_latency() {
        let v = judge(&comparison(Metric::Itl, 50.0, 58.0, 4.0, 12.0, 0.004));
        assert_eq!(v.verdict, Verdict::Regressed);
        assert!(v.reasons[0].contains("worsening"));
    }

    #[test]
    fn a_small_move_is_no_change_however_significant() {
        // p95 prefill 178 → 179 ms (+0.56%), the interval clear of 0: real, but
        // far below 2%.
        let v = judge(&comparison(Metric::Ttft, 178.0, 179.0, 0.4, 1.6, 0.001));
        assert_eq!(v.verdict, Verdict::NoChange, "{:?}", v.reasons);
        assert!(v.reasons[0].contains("smaller than the minimum effect of 2%"));
        assert!(
            v.summary.starts_with("No change: p95 TTFT rose"),
            "{}",
            v.summary
        );
        // +0.7% at p = 0.27, the interval within ±2%: no change either.
        let v = judge(&comparison(Metric::Ttft, 1000.0, 1007.0, -6.0, 19.0, 0.27));
        assert_eq!(v.verdict, Verdict::NoChange, "{:?}", v.reasons);
        assert_eq!(v.more_requests_per_side, None);
        // The same move judged against 0.5%: large enough, but not significant.
        let mut c = comparison(Metric::Ttft, 1000.0, 1007.0, -6.0, 19.0, 0.27);
        c.min_effect_pct = 0.5;
        assert_eq!(judge(&c).verdict, Verdict::Inconclusive);
        // A significant +3% with a 5% minimum: no change.
        let mut c = comparison(Metric::Ttft, 1000.0, 1030.0, 10.0, 50.0, 0.002);
        assert_eq!(judge(&c).verdict, Verdict::Regressed);
        c.min_effect_pct = 5.0;
        assert_eq!(judge(&c).verdict, Verdict::NoChange);
    }

    #[test]
    fn inconclusive_with_more_requests_estimate() {
        // Δ = −20 (2.5% of 800, above the 16 ms minimum), CI [−60, +20] → w = 40,
        // n' = 500 · (40/20)² = 2000 → 1500 more.
        let v = judge(&comparison(Metric::Ttft, 800.0, 780.0, -60.0, 20.0, 0.3));
        assert_eq!(v.verdict, Verdict::Inconclusive);
        assert_eq!(v.more_requests_per_side, Some(1500));
        assert!(v.reasons[0].contains("includes 0"));
        // No observed difference, wide interval: to fit within ±16 ms the half-width
        // 30 must shrink to 16, n' = 500 · (30/16)² = 1757.8 → 1258 more.
        let flat = judge(&comparison(Metric::Ttft, 800.0, 800.0, -30.0, 30.0, 0.9));
        assert_eq!(
            (flat.verdict, flat.more_requests_per_side),
            (Verdict::Inconclusive, Some(1258))
        );
        assert_eq!(
            more_requests_text(1258),
            "needs ≈ 1,258 more requests per side to tell"
        );
        assert_eq!(
            more_requests_text(17_005_247),
            "needs more than 1,000,000 more requests per side — the difference is too small to matter"
        );
    }

    #[test]
    fn invalid_comparison_wins() {
        let mut c = comparison(Metric::Ttft, 3200.0, 780.0, -2600.0, -2250.0, 1e-6);
        c.invalid_reasons = vec!["Also changed without being declared: Engine version.".into()];
        c.cause_proven = true;
        let v = judge(&c);
        assert_eq!(v.verdict, Verdict::InvalidComparison);
        assert_eq!(v.reasons, c.invalid_reasons);
    }

    #[test]
    fn must_exceed_run_to_run_spread() {
        let mut c = comparison(Metric::Ttft, 800.0, 760.0, -55.0, -25.0, 0.001);
        assert_eq!(judge(&c).verdict, Verdict::Improved);
        let runs = |values: &[f64]| RunSpread {
            statistic: Statistic::P95,
            per_run: values.to_vec(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            range: values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                - values.iter().copied().fold(f64::INFINITY, f64::min),
            mean: 0.0,
            stdev: None,
        };
        c.before_runs = Some(runs(&[760.0, 800.0, 840.0])); // range 80 > |Δ| = 40
        c.after_runs = Some(runs(&[750.0, 760.0, 770.0]));
        let v = judge(&c);
        assert_eq!(v.verdict, Verdict::Inconclusive);
        assert!(v.reasons.iter().any(|r| r.contains("run-to-run spread")));
        c.before_runs = Some(runs(&[795.0, 800.0, 805.0])); // range 10
        assert_eq!(judge(&c).verdict, Verdict::Improved);
    }

    #[test]
    fn end_to_end_with_real_statistics() {
        // Before/after TTFT samples from the Mann–Whitney reference test
        // (scipy p = 0.0021853274789521097).
        let before = [
            812.0, 790.0, 845.0, 901.0, 770.0, 833.0, 860.0, 795.0, 880.0, 815.0,
        ];
        let after = [
            760.0, 742.0, 801.0, 755.0, 790.0, 770.0, 748.0, 781.0, 765.0, 799.0,
        ];
        let ci = bootstrap_diff_ci(&before, &after, Statistic::P50, &BootstrapConfig::default())
            .unwrap();
        let c = MetricComparison {
            metric: Metric::Ttft,
            unit: Unit::Ms,
            statistic: Statistic::P50,
            before: Summary::of(&before).unwrap(),
            after: Summary::of(&after).unwrap(),
            ci,
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
            before_runs: Some(run_spread(&[&before[..5], &before[5..]], Statistic::P50).unwrap()),
            after_runs: Some(run_spread(&[&after[..5], &after[5..]], Statistic::P50).unwrap()),
            invalid_reasons: vec![],
            cause_proven: true,
        };
        let v = judge(&c);
        // Medians 824 → 767.5 (Δ = −56.5); run medians 812/833 and 760/770
        // spread 21 and 10, so the change is beyond run noise.
        assert_eq!(v.observed_diff, -56.5);
        assert_eq!(v.verdict, Verdict::Confirmed, "{:?}", v.reasons);
    }

    #[test]
    fn slugs() {
        for (v, s) in [
            (Verdict::Confirmed, "confirmed"),
            (Verdict::Improved, "improved"),
            (Verdict::Inconclusive, "inconclusive"),
            (Verdict::NoChange, "no_change"),
            (Verdict::InvalidComparison, "invalid_comparison"),
            (Verdict::Regressed, "regressed"),
        ] {
            assert_eq!(v.slug(), s);
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{s}\""));
            assert_eq!(Verdict::from_slug(s), Some(v));
        }
    }

    #[test]
    fn comparison_problems_found() {
        let before_cfg = FrozenConfig {
            chunked_prefill: Some(false),
            ..FrozenConfig::default()
        };
        let mut after_cfg = before_cfg.clone();
        after_cfg.chunked_prefill = Some(true);
        let check = check_single_change(&before_cfg, &after_cfg, "chunked prefill");
        let healthy = RunHealth {
            requests_sent: 1000,
            succeeded: 995,
            errors: 5,
            cancelled: 0,
            output_tokens: 995 * 250,
            concurrency: Some(64),
        };
        assert!(comparison_problems(&check, &healthy, &healthy).is_empty());
        let degraded = RunHealth {
            succeeded: 960,
            errors: 40,
            output_tokens: 960 * 200,
            concurrency: Some(128),
            ..healthy
        };
        let problems = comparison_problems(&check, &healthy, &degraded);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("Concurrency differs"));
        assert!(problems[1].contains("0.5% of requests before, 4.0% after"));
        assert!(problems[2].contains("250 to 200"));
        let undeclared = check_single_change(&before_cfg, &after_cfg, "tp");
        assert!(!comparison_problems(&undeclared, &healthy, &healthy).is_empty());
    }

    #[test]
    fn prediction_scores() {
        assert_eq!(
            score_prediction(700.0, 900.0, 780.0),
            PredictionScore::Inside
        );
        assert_eq!(
            score_prediction(700.0, 900.0, 900.0),
            PredictionScore::Inside
        );
        assert_eq!(
            score_prediction(900.0, 700.0, 650.0),
            PredictionScore::Below
        );
        assert_eq!(
            score_prediction(700.0, 900.0, 950.0),
            PredictionScore::Above
        );
    }
}
