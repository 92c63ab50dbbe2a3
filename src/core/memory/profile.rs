//! A symptom's profile: the facets search narrows by and the similar-symptom score
//! compares. Investigations get theirs from the recorded steps (the method's own
//! computations); an entry written directly gets what its text states plainly.

use serde::{Deserialize, Serialize};

use crate::core::method::record::{Evaluation, Records};
use crate::core::method::{Dominance, JournalEntry, Metric, Percentile, Phase, Regime};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// A [`Metric`] slug.
    pub metric: Option<String>,
    pub percentile: Option<String>,
    /// A [`Phase`] slug, or "nothing".
    pub phase: Option<String>,
    /// A regime label ("memory-bound" …).
    pub regime: Option<String>,
    /// A verdict slug.
    pub verdict: Option<String>,
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    /// Typical prompt and output lengths, in tokens.
    pub prompt_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
}

fn clean(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
}

impl Profile {
    /// From an investigation's steps and what the method computed from them.
    pub fn from_records(records: &Records, evaluation: &Evaluation) -> Profile {
        let config = records.reproduce.as_ref();
        let regime = evaluation.regime.as_ref().and_then(|r| {
            r.kernels
                .first()
                .map(|k| k.regime.label().to_string())
                .or_else(|| r.decode.as_ref().map(|_| "decode".to_string()))
        });
        let verdict = evaluation
            .change
            .as_ref()
            .and_then(|c| c.verdict)
            .map(|v| v.slug().to_string());
        Profile {
            metric: records.metric.as_ref().map(|m| m.metric.slug().to_string()),
            percentile: records
                .metric
                .as_ref()
                .map(|m| m.percentile.slug().to_string()),
            phase: evaluation.phases.as_ref().map(|p| match &p.dominance {
                Dominance::Phase { phase, .. } => phase.slug().to_string(),
                Dominance::Nothing { .. } => "nothing".to_string(),
            }),
            regime,
            verdict,
            model: config.and_then(|c| clean(&c.model)),
            gpu: config.and_then(|c| clean(&c.gpu_type)),
            engine: config.and_then(|c| clean(&c.engine)),
            engine_version: config.and_then(|c| clean(&c.engine_version)),
            prompt_tokens: config.and_then(|c| c.prompt_len_dist.as_deref().and_then(first_number)),
            output_tokens: config.and_then(|c| c.output_len_dist.as_deref().and_then(first_number)),
        }
    }

    /// From an entry's text: the metric and percentile named in SYMPTOM, the phase
    /// DIAGNOSIS says dominates, the verdict RESULT states, token counts in WORKLOAD.
    /// Only plain statements count; anything unclear stays unknown.
    pub fn from_entry(entry: &JournalEntry) -> Profile {
        let symptom = entry.symptom.to_lowercase();
        let words: Vec<&str> = symptom
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        let metric = Metric::ALL
            .into_iter()
            .find(|m| {
                let short = m.short_label().to_lowercase();
                if short.contains(' ') {
                    symptom.contains(&short)
                } else {
                    words.contains(&short.as_str()) || words.contains(&m.slug())
                }
            })
            .map(|m| m.slug().to_string());
        let percentile = Percentile::ALL
            .into_iter()
            .find(|p| words.contains(&p.slug()))
            .map(|p| p.slug().to_string());
        let diagnosis = entry.diagnosis.to_lowercase();
        let phase = Phase::ALL
            .into_iter()
            .find(|p| diagnosis.contains(&format!("{} dominates", p.label().to_lowercase())))
            .map(|p| p.slug().to_string());
        let regime = [
            Regime::ComputeBound,
            Regime::MemoryBound,
            Regime::LatencyBound,
        ]
        .into_iter()
        .find(|r| diagnosis.contains(r.label()))
        .map(|r| r.label().to_string());
        let result = entry.result.to_lowercase();
        let verdict = result
            .split_once("verdict:")
            .map(|(_, rest)| rest.trim().replace(' ', "_"))
            .and_then(|rest| {
                crate::core::method::Verdict::from_slug(
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or(""),
                )
                .or_else(|| {
                    crate::core::method::Verdict::from_slug(rest.trim_end_matches(['.', ';']))
                })
            })
            .map(|v| v.slug().to_string());
        let workload = entry.workload.to_lowercase();
        Profile {
            metric,
            percentile,
            phase,
            regime,
            verdict,
            prompt_tokens: number_after(&workload, "prompt"),
            output_tokens: number_after(&workload, "output"),
            ..Profile::default()
        }
    }

    /// Fills what `self` does not know from `other` (an entry's own text under its
    /// investigation's steps).
    pub fn or(self, other: Profile) -> Profile {
        Profile {
            metric: self.metric.or(other.metric),
            percentile: self.percentile.or(other.percentile),
            phase: self.phase.or(other.phase),
            regime: self.regime.or(other.regime),
            verdict: self.verdict.or(other.verdict),
            model: self.model.or(other.model),
            gpu: self.gpu.or(other.gpu),
            engine: self.engine.or(other.engine),
            engine_version: self.engine_version.or(other.engine_version),
            prompt_tokens: self.prompt_tokens.or(other.prompt_tokens),
            output_tokens: self.output_tokens.or(other.output_tokens),
        }
    }
}

/// The first number in a text: "mean 1,800 tokens" → 1800.
pub fn first_number(text: &str) -> Option<f64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.' || *c == '_')
        .filter(|c| *c != ',' && *c != '_')
        .collect();
    digits.trim_end_matches('.').parse().ok()
}

/// The first number after `word` within the same clause ("prompt tokens mean 1,800;").
fn number_after(text: &str, word: &str) -> Option<f64> {
    let at = text.find(word)?;
    let clause = text[at..].split(';').next().unwrap_or("");
    first_number(clause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_text_gives_plain_facts_only() {
        let e = JournalEntry {
            symptom: "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)".into(),
            workload: "prompt tokens mean 1,800; output tokens mean 250; 45 req/s".into(),
            diagnosis: "Queue wait dominates the p95 TTFT (92%). The top kernels are memory-bound."
                .into(),
            result: "p95 TTFT 780 ms; verdict: confirmed".into(),
            ..JournalEntry::default()
        };
        let p = Profile::from_entry(&e);
        assert_eq!(p.metric.as_deref(), Some("ttft"));
        assert_eq!(p.percentile.as_deref(), Some("p95"));
        assert_eq!(p.phase.as_deref(), Some("queue_wait"));
        assert_eq!(p.regime.as_deref(), Some("memory-bound"));
        assert_eq!(p.verdict.as_deref(), Some("confirmed"));
        assert_eq!(p.prompt_tokens, Some(1800.0));
        assert_eq!(p.output_tokens, Some(250.0));

        let vague = Profile::from_entry(&JournalEntry {
            symptom: "things felt slow".into(),
            result: "verdict: great".into(),
            ..JournalEntry::default()
        });
        assert_eq!(vague, Profile::default());
    }

    #[test]
    fn multiword_metrics_and_numbers() {
        let p = Profile::from_entry(&JournalEntry {
            symptom: "p99 queue wait 2,300 ms".into(),
            result: "verdict: invalid comparison".into(),
            ..JournalEntry::default()
        });
        assert_eq!(p.metric.as_deref(), Some("queue_wait"));
        assert_eq!(p.verdict.as_deref(), Some("invalid_comparison"));
        assert_eq!(first_number("about 3.5k"), Some(3.5));
        assert_eq!(first_number("none"), None);
    }
}
