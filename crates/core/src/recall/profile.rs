//! A symptom's profile: the facets search narrows by and the similar-symptom score
//! compares. Investigations get theirs from the recorded steps (the method's own
//! computations); an entry written directly gets what its text states plainly.

use serde::{Deserialize, Serialize};

use crate::method::record::{Evaluation, Records};
use crate::method::{JournalEntry, Phase, Regime};
use crate::metric::{Metric, Percentile};

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
    /// The incident window's shape (see [`super::window_shape`]), when a Prometheus
    /// window of the investigation gives one.
    #[serde(default)]
    pub window_shape: Option<String>,
}

fn clean(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
}

impl Profile {
    /// The model and GPU as catalog ids ("meta-llama/Llama-3.1-8B-Instruct" is
    /// `llama-3.1-8b`, "H100 SXM 80GB" is `h100-sxm`), so facets, similarity and evidence
    /// checks see one name per thing; a name the catalog lacks stays as typed, reduced.
    pub fn with_catalog_ids(self) -> Profile {
        use crate::method::setup_check::{gpu_identity, model_identity};
        Profile {
            model: self.model.as_deref().map(model_identity),
            gpu: self.gpu.as_deref().map(gpu_identity),
            ..self
        }
    }

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
                .and_then(|m| m.percentile.map(|p| p.slug().to_string())),
            phase: evaluation.phases.as_ref().map(|p| {
                p.dominance
                    .phase()
                    .map_or("nothing", Phase::slug)
                    .to_string()
            }),
            regime,
            verdict,
            model: config.and_then(|c| clean(&c.model)),
            gpu: config.and_then(|c| clean(&c.gpu_type)),
            engine: config.and_then(|c| clean(&c.engine)),
            engine_version: config.and_then(|c| clean(&c.engine_version)),
            prompt_tokens: config.and_then(|c| c.prompt_len_dist.as_deref().and_then(first_number)),
            output_tokens: config.and_then(|c| c.output_len_dist.as_deref().and_then(first_number)),
            // Read from the investigation's Prometheus window by the shell.
            window_shape: None,
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
                crate::method::Verdict::from_slug(
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or(""),
                )
                .or_else(|| crate::method::Verdict::from_slug(rest.trim_end_matches(['.', ';'])))
            })
            .map(|v| v.slug().to_string());
        let workload = entry.workload.to_lowercase();
        // Hardware and software as BASELINE, WORKLOAD or SYMPTOM name them, first found.
        let setting = [&entry.baseline, &entry.workload, &entry.symptom];
        let first = |find: fn(&[String]) -> Option<String>| {
            setting.iter().find_map(|text| find(&words_of(text)))
        };
        let engine = setting.iter().find_map(|text| engine_in(&words_of(text)));
        Profile {
            metric,
            percentile,
            phase,
            regime,
            verdict,
            model: first(|w| named_in(w, crate::estimate::models::CATALOG.iter().map(|m| m.name))),
            gpu: first(|w| named_in(w, crate::estimate::gpus::GPUS.iter().map(|g| g.name))),
            engine: engine.as_ref().map(|(e, _)| e.to_string()),
            engine_version: engine.and_then(|(_, v)| v),
            prompt_tokens: number_after(&workload, "prompt"),
            output_tokens: number_after(&workload, "output"),
            window_shape: None,
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
            window_shape: self.window_shape.or(other.window_shape),
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

/// A text's words, lower-case, split at spaces and punctuation that never sits inside a
/// model or version name; a leading count ("4×H100", "8xA100") is dropped.
fn words_of(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| c.is_whitespace() || ",;:()[]{}/=\"'|+@".contains(c))
        .map(|w| w.trim_end_matches(['.', '!', '?']))
        .filter(|w| !w.is_empty())
        .map(|w| {
            let digits = w.len() - w.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let rest = &w[digits..];
            match rest.strip_prefix(['x', '×']) {
                Some(name) if digits > 0 && name.starts_with(|c: char| c.is_alphabetic()) => {
                    name.to_string()
                }
                _ => w.to_string(),
            }
        })
        .collect()
}

/// Letters, digits and dots only: "Llama 3.1 8B", "llama-3.1-8b" → "llama3.18b".
fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric() || *c == '.')
        .collect()
}

/// The first catalog name the words spell, alone or over up to four words, followed by
/// nothing, a suffix in letters ("-Instruct") or one digit ("SXM5").
fn named_in<'a>(words: &[String], names: impl Iterator<Item = &'a str>) -> Option<String> {
    let names: Vec<(&str, String)> = names.map(|n| (n, squash(n))).collect();
    for start in 0..words.len() {
        let mut joined = String::new();
        for word in &words[start..words.len().min(start + 4)] {
            joined.push_str(&squash(word));
            for (name, squashed) in &names {
                if let Some(rest) = joined.strip_prefix(squashed.as_str()) {
                    // "H100 SXM5" is the h100-sxm, but a digit after a name that ends in
                    // one continues its model number: "L40" is not the l4.
                    let one_digit = rest.len() == 1
                        && rest.chars().all(|c| c.is_ascii_digit())
                        && !squashed.ends_with(|c: char| c.is_ascii_digit());
                    if rest.is_empty() || rest.starts_with(char::is_alphabetic) || one_digit {
                        return Some(name.to_string());
                    }
                }
            }
        }
    }
    None
}

/// The serving engine the words name, and the version written right after it
/// ("vLLM 0.6.3", "SGLang v0.3.2", "TensorRT-LLM 0.12").
fn engine_in(words: &[String]) -> Option<(&'static str, Option<String>)> {
    const ENGINES: [(&str, &[&str]); 5] = [
        ("vllm", &["vllm"]),
        ("sglang", &["sglang"]),
        ("tensorrt-llm", &["tensorrtllm", "trtllm"]),
        ("tgi", &["tgi", "textgenerationinference"]),
        ("lmdeploy", &["lmdeploy"]),
    ];
    words.iter().enumerate().find_map(|(i, word)| {
        let squashed = squash(word);
        let (engine, _) = ENGINES
            .iter()
            .find(|(_, names)| names.contains(&squashed.as_str()))?;
        let version = words.get(i + 1).and_then(|next| {
            let v = next.strip_prefix('v').unwrap_or(next);
            let end = v
                .find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(v.len());
            let v = v[..end].trim_end_matches('.');
            (v.contains('.') && v.starts_with(|c: char| c.is_ascii_digit())).then(|| v.to_string())
        });
        Some((*engine, version))
    })
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
    fn model_gpu_and_engine_as_an_entry_names_them() {
        let p = Profile::from_entry(&JournalEntry {
            baseline: "p95 TTFT 3,200 ms on Llama 3.1 70B Instruct, 4×H100 SXM5, vLLM v0.6.3."
                .into(),
            ..JournalEntry::default()
        });
        assert_eq!(p.model.as_deref(), Some("llama-3.1-70b"));
        assert_eq!(p.gpu.as_deref(), Some("h100-sxm"));
        assert_eq!(p.engine.as_deref(), Some("vllm"));
        assert_eq!(p.engine_version.as_deref(), Some("0.6.3"));

        let p = Profile::from_entry(&JournalEntry {
            workload: "meta-llama/Llama-3.1-8B-Instruct on 8xA100-80GB with TensorRT-LLM 0.12"
                .into(),
            symptom: "p99 ITL on qwen2.5-72b".into(),
            ..JournalEntry::default()
        });
        assert_eq!(
            p.model.as_deref(),
            Some("llama-3.1-8b"),
            "WORKLOAD before SYMPTOM"
        );
        assert_eq!(p.gpu.as_deref(), Some("a100-80gb"));
        assert_eq!(p.engine.as_deref(), Some("tensorrt-llm"));
        assert_eq!(p.engine_version.as_deref(), Some("0.12"));

        // Near misses stay unknown: another size, an ambiguous GPU, a version-less engine.
        let p = Profile::from_entry(&JournalEntry {
            baseline: "llama-3.1-80b on an L40 and an H100, SGLang nightly; mixtral-8x7b".into(),
            ..JournalEntry::default()
        });
        assert_eq!(p.model.as_deref(), Some("mixtral-8x7b"));
        assert_eq!(p.gpu, None);
        assert_eq!(p.engine.as_deref(), Some("sglang"));
        assert_eq!(p.engine_version, None);
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
