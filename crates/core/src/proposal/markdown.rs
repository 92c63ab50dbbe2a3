//! The Markdown export, for the design doc a team already writes.

use super::input::ProposalInput;
use super::outcome::Score;
use super::sizing::{Sizing, Variant};
use crate::estimate::fmt;

/// One linked piece of evidence as the export lists it.
pub struct EvidenceLine {
    pub title: String,
    pub url: String,
    pub stale: Vec<String>,
}

/// One review event as the export lists it.
pub struct ReviewLine {
    pub who: String,
    pub what: String,
    pub section: String,
    pub comment: String,
}

pub struct Export<'a> {
    pub id: i64,
    pub url: String,
    pub owner: String,
    pub state: &'a str,
    pub input: &'a ProposalInput,
    pub sizing: &'a Sizing,
    pub sensitivity: &'a [Variant],
    pub evidence: &'a [EvidenceLine],
    pub reviews: &'a [ReviewLine],
    pub scores: &'a [Score],
}

fn opt_num(v: Option<f64>) -> String {
    v.map(fmt::num).unwrap_or_else(|| "—".into())
}

pub fn markdown(e: &Export) -> String {
    let p = e.input;
    let s = e.sizing;
    let mut out = format!("# Capacity proposal {}: {}\n\n", e.id, p.title);
    out.push_str(&format!(
        "Owner: {} · State: {} · {}\n\n> {}\n\n",
        e.owner, e.state, e.url, p.question
    ));
    out.push_str("## Deployment\n\n");
    out.push_str(&format!(
        "- Model: {}\n- GPU: {} × {} per replica (TP {}, PP {})\n- Precision: weights {}, KV {}\n\
         - Engine: {} {} (max_num_seqs {}, max_num_batched_tokens {}, chunked prefill {}, \
         prefix caching {})\n\n",
        p.model_name(),
        p.gpu_type,
        p.gpus_per_replica,
        p.tp,
        p.pp,
        p.weight_dtype,
        p.kv_dtype,
        p.engine,
        p.engine_version,
        p.max_num_seqs,
        p.max_num_batched_tokens,
        if p.chunked_prefill { "on" } else { "off" },
        if p.prefix_caching { "on" } else { "off" },
    ));
    out.push_str("## Workload and SLOs\n\n");
    out.push_str(&format!(
        "- Arrival rate at peak: {} req/s, headroom {}\n- Prompt: mean {} tokens, p95 {}\n\
         - Output: mean {} tokens, p95 {}\n- Shared prefix: {} tokens at a {} hit rate\n\
         - SLOs: TTFT p95 ≤ {} ms, ITL p99 ≤ {} ms{}\n- Price: ${} per GPU-hour\n\n",
        fmt::num(p.arrival_rate),
        fmt::num(p.headroom),
        p.prompt_tokens_mean,
        p.prompt_tokens_p95,
        p.output_tokens_mean,
        p.output_tokens_p95,
        p.shared_prefix_tokens,
        fmt::num(p.prefix_hit_rate),
        fmt::num(p.slo_ttft_p95_ms),
        fmt::num(p.slo_itl_p99_ms),
        p.slo_e2e_p95_ms
            .map(|e| format!(", E2E p95 ≤ {} ms", fmt::num(e)))
            .unwrap_or_default(),
        fmt::num(p.gpu_hour_usd),
    ));
    let mut findings = String::new();
    if !s.meets_slo {
        findings.push_str("**These settings do not meet the SLOs** (figures at batch 1):\n\n");
        for f in &s.slo_findings {
            findings.push_str(&format!("- {}\n", f.line()));
        }
        findings.push('\n');
    }
    out.push_str(&format!(
        "## Sizing\n\n**{} replicas ({} GPUs), ${}/h, ${} per million output tokens.**\n\n{findings}\
         | Figure | Value | Worked | From | Driven by |\n|---|---|---|---|---|\n",
        s.replicas_needed,
        s.gpus,
        fmt::num(s.cost_per_hour_usd),
        fmt::num(s.cost_per_million_tokens_usd)
    ));
    for f in &s.figures {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            f.label,
            f.display_value(),
            f.formula.replace('|', "\\|"),
            f.source,
            f.drivers.join(", ")
        ));
    }
    out.push_str("\n### Estimator chains\n");
    for r in &s.runs {
        out.push_str(&format!(
            "\n{} ({}):\n\n```\n{}```\n",
            r.purpose,
            r.estimator,
            r.chain.to_text()
        ));
    }
    out.push_str("\n## Sensitivity\n\n| If | Replicas | Change | $/h | $ per M tokens |\n|---|---|---|---|---|\n");
    for v in e.sensitivity {
        match &v.problem {
            Some(problem) => out.push_str(&format!("| {} | — | — | — | {} |\n", v.label, problem)),
            None => out.push_str(&format!(
                "| {} | {} | {:+} | {} | {} |\n",
                v.label,
                v.replicas_needed.unwrap_or(0),
                v.replicas_change.unwrap_or(0),
                opt_num(v.cost_per_hour_usd),
                opt_num(v.cost_per_million_tokens_usd)
            )),
        }
    }
    out.push_str("\n## Evidence\n\n");
    if e.evidence.is_empty() {
        out.push_str("None linked.\n");
    }
    for ev in e.evidence {
        if ev.stale.is_empty() {
            out.push_str(&format!("- [{}]({})\n", ev.title, ev.url));
        } else {
            out.push_str(&format!(
                "- [{}]({}) — stale: {}\n",
                ev.title,
                ev.url,
                ev.stale.join("; ")
            ));
        }
    }
    for (what, h) in [
        ("prompt", &p.prompt_tokens_histogram),
        ("output", &p.output_tokens_histogram),
    ] {
        if let Some(h) = h {
            out.push_str(&format!(
                "\nThe {what} mean and p95 were read from the histogram `{h}`.\n"
            ));
        }
    }
    if !e.reviews.is_empty() {
        out.push_str("\n## Review\n\n");
        for r in e.reviews {
            out.push_str(&format!("- {} {} ({})", r.who, r.what, r.section));
            if !r.comment.is_empty() {
                out.push_str(&format!(": {}", r.comment));
            }
            out.push('\n');
        }
    }
    if !e.scores.is_empty() {
        out.push_str("\n## After rollout\n\n| Figure | Expected | Observed | Error | Estimator |\n|---|---|---|---|---|\n");
        for sc in e.scores {
            out.push_str(&format!(
                "| {} | {} {} | {} {} | {:+.1} % | {} |\n",
                sc.label,
                fmt::num(sc.expected),
                sc.unit,
                fmt::num(sc.observed),
                sc.unit,
                sc.error_pct,
                sc.estimator
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::input::{parse, tests::chat_api};
    use super::super::sizing::{sensitivity, size};
    use super::*;

    #[test]
    fn export_carries_the_figures_and_chains() {
        let p = parse(&chat_api()).unwrap();
        let s = size(&p).unwrap();
        let v = sensitivity(&p, &s);
        let md = markdown(&Export {
            id: 7,
            url: "/proposals/7".into(),
            owner: "ada".into(),
            state: "draft",
            input: &p,
            sizing: &s,
            sensitivity: &v,
            evidence: &[EvidenceLine {
                title: "bench".into(),
                url: "/artifacts/1".into(),
                stale: vec!["engine version 0.5.4, the proposal has 0.6.3".into()],
            }],
            reviews: &[],
            scores: &[],
        });
        assert!(md.starts_with("# Capacity proposal 7: chat-api on H100"));
        assert!(md.contains(&format!("**{} replicas", s.replicas_needed)));
        assert!(md.contains("memory-fit: Memory fit"));
        assert!(md.contains("prompt length +30 %"));
        assert!(md.contains("stale: engine version 0.5.4"));
    }
}
