//! amdahl: what a local speedup is worth end to end.
//!
//! phases: end_to_end_speedup = 1 / Σ (share_i / speedup_i), shares summing to 1.
//! findings: each alone gives a ceiling of 1 / ((1 − s) + s / k); they are ranked by
//! gain per day of effort, where gain_percent = (ceiling − 1) × 100.

use serde_json::json;

use super::chain::Work;
use super::fmt;
use super::input::{parse_number, Parser};
use super::setup::opt;
use super::{Chain, EstimatorInfo, FieldError, FieldSpec, Inputs};

const NAME: &str = "amdahl";

/// Shares in `phases` may miss 1 by this much (rounded percentages).
const SHARE_TOLERANCE: f64 = 0.001;
/// Findings touching less than this share of the time get a warning.
const SMALL_SHARE: f64 = 0.05;

const FIELDS: &[FieldSpec] = &[
    opt(
        "phases",
        "Phases",
        "name:share:speedup,…",
        None,
        "Every phase of the time with its share (summing to 1) and its speedup, e.g. \
         prefill:0.4:1,decode:0.6:1.2. Give this or findings.",
    ),
    opt(
        "findings",
        "Findings",
        "name:share:speedup:effort_days,…",
        None,
        "Candidate fixes, each with the share of time it touches, its local speedup and the \
         days it takes, e.g. rmsnorm:0.09:3:2,sampler:0.03:2:1.",
    ),
];

pub(super) const INFO: EstimatorInfo = EstimatorInfo {
    name: NAME,
    title: "Amdahl's law",
    summary: "End-to-end gain of speeding up some phases, or a ranking of findings by gain per day of effort.",
    fields: FIELDS,
    example: "phases=prefill:0.4:1,decode:0.6:1.2",
    run,
};

struct Item {
    name: String,
    share: f64,
    speedup: f64,
    effort: f64,
}

/// Parses `name:a:b[:c],…`; every problem is reported against `field`.
fn parse_items(p: &mut Parser, field: &str, text: &str, with_effort: bool) -> Option<Vec<Item>> {
    let shape = if with_effort {
        "name:share:speedup:effort_days"
    } else {
        "name:share:speedup"
    };
    let mut items = Vec::new();
    let mut ok = true;
    for (i, raw) in text.split(',').enumerate() {
        let parts: Vec<&str> = raw.split(':').map(str::trim).collect();
        let n = i + 1;
        if parts.len() != if with_effort { 4 } else { 3 } || parts[0].is_empty() {
            p.fail(field, format!("item {n} `{}` must be {shape}", raw.trim()));
            ok = false;
            continue;
        }
        let mut number = |what: &str, s: &str| match parse_number(s) {
            Ok(v) => Some(v),
            Err(msg) => {
                p.fail(field, format!("item {n} ({}): {what} {msg}", parts[0]));
                None
            }
        };
        let share = number("share", parts[1]);
        let speedup = number("speedup", parts[2]);
        let effort = if with_effort {
            number("effort_days", parts[3])
        } else {
            Some(1.0)
        };
        let (Some(share), Some(speedup), Some(effort)) = (share, speedup, effort) else {
            ok = false;
            continue;
        };
        let mut bad = |msg: String| {
            p.fail(field, format!("item {n} ({}): {msg}", parts[0]));
            ok = false;
        };
        let share_ok = if with_effort {
            share > 0.0 && share <= 1.0
        } else {
            (0.0..=1.0).contains(&share)
        };
        if !share_ok {
            let range = if with_effort { "(0, 1]" } else { "[0, 1]" };
            bad(format!(
                "share must be in {range} (got {})",
                fmt::num(share)
            ));
        }
        if speedup <= 0.0 {
            bad(format!(
                "speedup must be greater than 0 (got {})",
                fmt::num(speedup)
            ));
        }
        if effort <= 0.0 {
            bad(format!(
                "effort_days must be greater than 0 (got {})",
                fmt::num(effort)
            ));
        }
        items.push(Item {
            name: parts[0].to_string(),
            share,
            speedup,
            effort,
        });
    }
    ok.then_some(items)
}

fn run(inputs: &Inputs) -> Result<Chain, Vec<FieldError>> {
    let mut p = Parser::new(inputs, FIELDS);
    match (p.text("phases"), p.text("findings")) {
        (Some(_), Some(_)) => {
            p.fail("findings", "give phases or findings, not both");
            Err(p.into_errors())
        }
        (None, None) => {
            p.fail(
                "phases",
                "is required (name:share:speedup,…), or give findings (name:share:speedup:effort_days,…)",
            );
            Err(p.into_errors())
        }
        (Some(text), None) => {
            p.record("phases", text);
            let Some(items) = parse_items(&mut p, "phases", text, false) else {
                return Err(p.into_errors());
            };
            let total: f64 = items.iter().map(|i| i.share).sum();
            if (total - 1.0).abs() > SHARE_TOLERANCE {
                p.fail(
                    "phases",
                    format!(
                        "shares must sum to 1 (±{SHARE_TOLERANCE}), they sum to {}",
                        fmt::num(total)
                    ),
                );
            }
            let used = p.finish()?;
            Ok(phases(items, used))
        }
        (None, Some(text)) => {
            p.record("findings", text);
            let Some(items) = parse_items(&mut p, "findings", text, true) else {
                return Err(p.into_errors());
            };
            let used = p.finish()?;
            Ok(findings(items, used))
        }
    }
}

fn phases(items: Vec<Item>, used: std::collections::BTreeMap<String, serde_json::Value>) -> Chain {
    let mut w = Work::new();
    let terms: Vec<String> = items
        .iter()
        .map(|i| format!("{}/{}", fmt::num(i.share), fmt::num(i.speedup)))
        .collect();
    let time: f64 = items.iter().map(|i| i.share / i.speedup).sum();
    w.line(
        "new_time_fraction",
        "New time / old time",
        terms.join(" + "),
        fmt::float(time),
        "",
    );
    let speedup = 1.0 / time;
    let gain = (speedup - 1.0) * 100.0;
    w.line(
        "end_to_end_speedup",
        "End-to-end speedup",
        format!("1 / {}", fmt::num(time)),
        fmt::float(speedup),
        "×",
    );
    w.line(
        "gain_percent",
        "Gain",
        format!("({} − 1) × 100", fmt::num(speedup)),
        fmt::float(gain),
        "%",
    );
    w.result("end_to_end_speedup", fmt::float(speedup));
    w.result("gain_percent", fmt::float(gain));

    let best_local = items
        .iter()
        .map(|i| i.speedup)
        .fold(f64::NEG_INFINITY, f64::max);
    let sanity = format!(
        "End to end the change is worth {}× ({}%), although the best phase got {}× faster: \
         the phases it does not touch still take their time.",
        fmt::num(speedup),
        fmt::num(gain),
        fmt::num(best_local)
    );
    w.finish(NAME, used, sanity)
}

fn findings(
    items: Vec<Item>,
    used: std::collections::BTreeMap<String, serde_json::Value>,
) -> Chain {
    let mut w = Work::new();
    let mut ranked = Vec::new();
    let mut small = Vec::new();
    for i in &items {
        let ceiling = 1.0 / ((1.0 - i.share) + i.share / i.speedup);
        let gain = (ceiling - 1.0) * 100.0;
        let per_day = gain / i.effort;
        let warn = if i.share < SMALL_SHARE {
            small.push(i.name.clone());
            " (touches < 5% of the time)"
        } else {
            ""
        };
        w.line(
            &format!("ceiling_{}", i.name),
            &format!("{}{warn}", i.name),
            format!(
                "1 / ((1 − {}) + {}/{})",
                fmt::num(i.share),
                fmt::num(i.share),
                fmt::num(i.speedup)
            ),
            fmt::float(ceiling),
            "×",
        );
        ranked.push((i.name.clone(), ceiling, gain, per_day));
    }
    // Most gain per day first; ties keep the given order (the sort is stable).
    ranked.sort_by(|a, b| b.3.total_cmp(&a.3));
    for (rank, (name, _, gain, per_day)) in ranked.iter().enumerate() {
        w.line(
            &format!("rank_{}", rank + 1),
            &format!("#{} by gain per day", rank + 1),
            format!("{name}: {}% gain", fmt::num(*gain)),
            fmt::float(*per_day),
            "%/day",
        );
    }
    let ranking: Vec<_> = ranked
        .iter()
        .map(|(name, ceiling, gain, per_day)| {
            json!({"name": name, "ceiling": ceiling, "gain_percent": gain, "gain_per_day": per_day})
        })
        .collect();
    let (best, best_ceiling, best_gain, _) = ranked[0].clone();
    w.result("ranking", ranking.into());
    w.result("best", best.clone().into());
    w.result("best_ceiling", fmt::float(best_ceiling));
    w.result("best_gain_percent", fmt::float(best_gain));

    let mut sanity = format!(
        "Do {best} first: alone it makes the whole {}× faster ({}%), the most per day of \
         effort. A ceiling assumes the rest of the time stays as it is.",
        fmt::num(best_ceiling),
        fmt::num(best_gain)
    );
    if !small.is_empty() {
        sanity.push_str(&format!(
            " Warning: {} {} less than 5% of the time, so even an infinite speedup gains \
             little there.",
            small.join(", "),
            if small.len() == 1 { "touches" } else { "touch" }
        ));
    }
    w.finish(NAME, used, sanity)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn reference_decode_only_gain() {
        let c = ok("amdahl", "phases=prefill:0.4:1,decode:0.6:1.2");
        close(&c, "end_to_end_speedup", 1.11);
        close(&c, "gain_percent", 11.11);
    }

    #[test]
    fn reference_single_finding() {
        let c = ok("amdahl", "phases=rmsnorm:0.09:3,rest:0.91:1");
        close(&c, "end_to_end_speedup", 1.064);
        close(&c, "gain_percent", 6.4);
        let line = &c.lines[0];
        assert_eq!(line.formula, "0.09/3 + 0.91/1");
        close(&c, "end_to_end_speedup", 1.0 / (0.91 + 0.03));
    }

    #[test]
    fn findings_ranked_by_gain_per_day() {
        let c = ok(
            "amdahl",
            "findings=rmsnorm:0.09:3:2,sampler:0.03:2:0.5,attn:0.5:1.5:10",
        );
        let ranking = c.results["ranking"].as_array().unwrap();
        assert_eq!(ranking.len(), 3);
        let per_day: Vec<f64> = ranking
            .iter()
            .map(|r| r["gain_per_day"].as_f64().unwrap())
            .collect();
        assert!(per_day.windows(2).all(|w| w[0] >= w[1]), "{per_day:?}");
        let rms = ranking.iter().find(|r| r["name"] == "rmsnorm").unwrap();
        assert!((rms["ceiling"].as_f64().unwrap() - 1.0 / 0.94).abs() < 1e-9);
        assert!((rms["gain_percent"].as_f64().unwrap() - 6.383).abs() < 0.01);
        assert_eq!(c.results["best"], ranking[0]["name"]);
        // sampler touches 3%: warned
        assert!(
            c.sanity.contains("sampler touches less than 5%"),
            "{}",
            c.sanity
        );
        assert!(c
            .lines
            .iter()
            .any(|l| l.label.contains("sampler (touches < 5%")));
    }

    #[test]
    fn errors_name_fields() {
        has_err(&errs("amdahl", ""), "phases", "required");
        has_err(
            &errs("amdahl", "phases=a:0.5:2,b:0.4:1"),
            "phases",
            "sum to 1",
        );
        has_err(
            &errs("amdahl", "phases=a:1:0"),
            "phases",
            "speedup must be greater than 0",
        );
        has_err(
            &errs("amdahl", "phases=a:1"),
            "phases",
            "name:share:speedup",
        );
        has_err(&errs("amdahl", "phases=a:x:2"), "phases", "not a number");
        has_err(&errs("amdahl", "findings=a:0:2:1"), "findings", "(0, 1]");
        has_err(
            &errs("amdahl", "findings=a:0.5:2:0"),
            "findings",
            "effort_days",
        );
        has_err(
            &errs("amdahl", "findings=a:0.5:2"),
            "findings",
            "effort_days",
        );
        has_err(
            &errs("amdahl", "phases=a:1:2 findings=a:1:2:1"),
            "findings",
            "not both",
        );
        // shares off by less than the tolerance are accepted
        ok("amdahl", "phases=a:0.3333:2,b:0.6667:1");
    }
}
