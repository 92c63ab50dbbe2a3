//! Ranking drills: five findings, each with the share of time it touches, the local
//! speedup a fix would give and the days it takes. The learner orders them by Amdahl
//! gain per day of effort; the amdahl estimator's `findings` mode grades, so the
//! ceilings are the estimator's own: ceiling = 1 / ((1 − share) + share / speedup),
//! gain = (ceiling − 1) × 100 %, ranked by gain / effort days.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rng::Dice;
use crate::estimate::{self, Chain, Inputs};
use crate::FieldError;

pub const FINDINGS: usize = 5;

const NAMES: &[&str] = &[
    "rmsnorm",
    "sampler",
    "attention",
    "mlp_gemm",
    "tokenizer",
    "scheduler",
    "kv_copy",
    "allreduce",
    "detokenize",
    "logits",
];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub name: String,
    /// Share of the end-to-end time the finding touches, in (0, 1].
    pub share: f64,
    /// Local speedup of the touched part.
    pub speedup: f64,
    pub effort_days: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RankingDrill {
    pub seed: u64,
    /// In the order shown (not the answer's order).
    pub findings: Vec<Finding>,
    chain: Chain,
}

/// One finding as the answer shows it, in the correct order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    pub name: String,
    pub ceiling: f64,
    pub gain_percent: f64,
    pub gain_per_day: f64,
}

fn inputs(findings: &[Finding]) -> Inputs {
    let list: Vec<String> = findings
        .iter()
        .map(|f| format!("{}:{}:{}:{}", f.name, f.share, f.speedup, f.effort_days))
        .collect();
    Inputs::from([("findings".to_string(), list.join(","))])
}

/// The drill for `seed`: distinct names, shares summing to at most 0.95, and gains per
/// day at least 5 % apart so the order is never a coin toss.
pub fn generate(seed: u64) -> RankingDrill {
    let mut d = Dice::new(seed, "ranking");
    loop {
        let mut names: Vec<&str> = NAMES.to_vec();
        let mut findings = Vec::new();
        let mut total = 0.0;
        for _ in 0..FINDINGS {
            let name = names.remove(d.below(names.len()));
            let share = d.stepped(0.02, 0.35, 0.01);
            total += share;
            findings.push(Finding {
                name: name.to_string(),
                share,
                speedup: d.stepped(1.2, 5.0, 0.1),
                effort_days: d.stepped(0.5, 10.0, 0.5),
            });
        }
        if total > 0.95 {
            continue;
        }
        let Ok(chain) = estimate::run("amdahl", &inputs(&findings)) else {
            continue;
        };
        let drill = RankingDrill {
            seed,
            findings,
            chain,
        };
        let per_day: Vec<f64> = drill.order().iter().map(|r| r.gain_per_day).collect();
        if per_day.windows(2).all(|w| w[1] < w[0] * 0.95) {
            return drill;
        }
    }
}

impl RankingDrill {
    /// The correct order, most gain per day first, with each ceiling.
    pub fn order(&self) -> Vec<Ranked> {
        let list = self.chain.results["ranking"].as_array().cloned();
        list.unwrap_or_default()
            .iter()
            .map(|r| Ranked {
                name: r["name"].as_str().unwrap_or_default().to_string(),
                ceiling: r["ceiling"].as_f64().unwrap_or(f64::NAN),
                gain_percent: r["gain_percent"].as_f64().unwrap_or(f64::NAN),
                gain_per_day: r["gain_per_day"].as_f64().unwrap_or(f64::NAN),
            })
            .collect()
    }

    pub fn chain(&self) -> &Chain {
        &self.chain
    }
}

/// Reads the learner's ranks (finding name → "1".."5"): every finding ranked once.
pub fn read_order(
    drill: &RankingDrill,
    ranks: &BTreeMap<String, String>,
) -> Result<Vec<String>, Vec<FieldError>> {
    let n = drill.findings.len();
    let mut errors = Vec::new();
    let mut slots: Vec<Option<String>> = vec![None; n];
    for f in &drill.findings {
        let field = format!("rank.{}", f.name);
        let raw = ranks.get(&f.name).map(|s| s.trim()).unwrap_or("");
        match raw.parse::<usize>() {
            Ok(r) if (1..=n).contains(&r) => {
                if let Some(other) = &slots[r - 1] {
                    errors.push(FieldError::new(
                        field,
                        format!("rank {r} is already given to {other}; use each rank once"),
                    ));
                } else {
                    slots[r - 1] = Some(f.name.clone());
                }
            }
            _ => errors.push(FieldError::new(
                field,
                format!("give {} a rank from 1 to {n}", f.name),
            )),
        }
    }
    if errors.is_empty() {
        Ok(slots.into_iter().flatten().collect())
    } else {
        Err(errors)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingGrade {
    pub correct: bool,
    /// How many places the learner got right.
    pub places_right: usize,
    pub given: Vec<String>,
    pub expected: Vec<Ranked>,
}

pub fn grade(drill: &RankingDrill, given: &[String]) -> RankingGrade {
    let expected = drill.order();
    let places_right = expected
        .iter()
        .zip(given)
        .filter(|(e, g)| &e.name == *g)
        .count();
    RankingGrade {
        correct: places_right == expected.len() && given.len() == expected.len(),
        places_right,
        given: given.to_vec(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drills_are_reproducible_with_five_distinct_clear_findings() {
        for seed in 0..200 {
            let d = generate(seed);
            assert_eq!(d, generate(seed));
            assert_eq!(d.findings.len(), FINDINGS);
            let names: std::collections::BTreeSet<_> = d.findings.iter().map(|f| &f.name).collect();
            assert_eq!(names.len(), FINDINGS);
            let total: f64 = d.findings.iter().map(|f| f.share).sum();
            assert!(total <= 0.95 + 1e-9, "{total}");
            let order = d.order();
            assert_eq!(order.len(), FINDINGS);
            for r in &order {
                let f = d.findings.iter().find(|f| f.name == r.name).unwrap();
                let ceiling = 1.0 / ((1.0 - f.share) + f.share / f.speedup);
                assert!((r.ceiling - ceiling).abs() < 1e-9);
                assert!((r.gain_per_day - (ceiling - 1.0) * 100.0 / f.effort_days).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn grading_compares_the_whole_order() {
        let d = generate(11);
        let right: Vec<String> = d.order().into_iter().map(|r| r.name).collect();
        let g = grade(&d, &right);
        assert!(g.correct);
        assert_eq!(g.places_right, FINDINGS);
        let mut swapped = right.clone();
        swapped.swap(0, 1);
        let g = grade(&d, &swapped);
        assert!(!g.correct);
        assert_eq!(g.places_right, FINDINGS - 2);
    }

    #[test]
    fn ranks_must_use_each_place_once() {
        let d = generate(2);
        let mut ranks: BTreeMap<String, String> = d
            .order()
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.clone(), (i + 1).to_string()))
            .collect();
        let order = read_order(&d, &ranks).unwrap();
        assert!(grade(&d, &order).correct);
        let first = d.order()[0].name.clone();
        let second = d.order()[1].name.clone();
        ranks.insert(second.clone(), "1".into());
        let errs = read_order(&d, &ranks).unwrap_err();
        assert!(
            errs.iter().any(|e| e.message.contains("already given")),
            "{errs:?}"
        );
        ranks.insert(first.clone(), "9".into());
        let errs = read_order(&d, &ranks).unwrap_err();
        assert!(
            errs.iter().any(|e| e.field == format!("rank.{first}")),
            "{errs:?}"
        );
    }
}
