//! Whether two sides can be compared at all: the settings each run was frozen with, the
//! workload they were offered, and the defects their runs carry.

use super::*;

/// Whether the two sides may be compared: the workload settings side by side, the
/// problems that make the comparison invalid (another change than the declared one,
/// other health or workload) and the warnings that do not.
pub(super) fn validity(req: &Request) -> (Vec<SettingRow>, Vec<String>, Vec<String>) {
    let declared = fields_named_in(req.variable);
    let (settings, mut problems) = settings_check(req, &declared);
    let mut warnings = Vec::new();

    // Entered step-0 records go through the full single-change check; without
    // them only the workload recorded in the files can be checked.
    let check = match (req.baseline_config, req.candidate_config) {
        (None, None) => {
            warnings.push("No step-0 configuration was entered for either side, so only the workload recorded in the files was checked, not that the declared change is the only one.".into());
            SingleChangeCheck {
                changed: vec![],
                unexpected: vec![],
                declared_fields: declared.clone(),
                problems: vec![],
                note: None,
                ok: true,
            }
        }
        (b, a) => check_single_change(
            b.unwrap_or(&FrozenConfig::default()),
            a.unwrap_or(&FrozenConfig::default()),
            req.variable,
        ),
    };
    let mut health_before = total_health(req.baseline);
    let mut health_after = total_health(req.candidate);
    if declared.contains(&"concurrency") {
        // Concurrency is the experiment: comparison_problems must not refuse it.
        health_before.concurrency = None;
        health_after.concurrency = None;
    }
    problems.extend(comparison_problems(&check, &health_before, &health_after));
    problems.extend(workload_problems(req, &declared));
    warnings.extend(defect_warnings(req.baseline, req.candidate));
    if req.baseline.len() == 1 && req.candidate.len() == 1 {
        warnings.push("One run per side: run-to-run noise is unknown. Repeat the runs (A/B/B/A) before trusting a small change.".into());
    }
    (settings, problems, warnings)
}

/// The settings table, and the problems it shows: runs of one side that
/// disagree, and settings that differ between the sides without being declared.
pub(super) fn settings_check(req: &Request, declared: &[&str]) -> (Vec<SettingRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (side, runs) in [("baseline", req.baseline), ("candidate", req.candidate)] {
        let named: Vec<(String, BTreeMap<String, String>)> = runs
            .iter()
            .map(|r| (r.name.clone(), r.settings.clone()))
            .collect();
        let keys: Vec<(&str, &str)> = workload_settings().collect();
        for d in setting_differences(&named, &keys) {
            problems.push(format!(
                "The {side} runs differ among themselves in {} ({}): every run of a side must repeat the same setup.",
                d.label, d.listed
            ));
        }
    }
    for &(key, label, field) in WORKLOAD_SETTINGS {
        let mut sides = Vec::new();
        for runs in [req.baseline, req.candidate] {
            sides.push(runs.first().and_then(|r| r.settings.get(key)).cloned());
        }
        let (before, after) = (sides[0].clone(), sides[1].clone());
        if before.is_none() && after.is_none() {
            continue;
        }
        let status = if before == after {
            "same"
        } else if !field.is_empty() && declared.contains(&field) {
            "declared"
        } else {
            // Concurrency is judged by comparison_problems from RunHealth.
            if key != "max_concurrency" {
                problems.push(format!(
                    "{label} differs ({} before, {} after) and is not the declared change: a comparison is valid only when one thing changes.",
                    before.as_deref().unwrap_or("not recorded"),
                    after.as_deref().unwrap_or("not recorded")
                ));
            }
            "differs"
        };
        rows.push(SettingRow {
            name: key.into(),
            label: label.into(),
            before,
            after,
            status: status.into(),
        });
    }
    (rows, problems)
}

/// Requests per run and prompt lengths must match: a different workload is a
/// different experiment.
pub(super) fn workload_problems(req: &Request, declared: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let per_run = |runs: &[Run]| {
        runs.iter()
            .map(|r| r.health.requests_sent as f64)
            .sum::<f64>()
            / runs.len() as f64
    };
    let (rb, ra) = (per_run(req.baseline), per_run(req.candidate));
    if rb > 0.0 && ((ra - rb) / rb).abs() > REQUEST_COUNT_TOLERANCE {
        problems.push(format!(
            "Request count differs: {} requests per run before, {} after. Both sides must send the same requests.",
            format_number(rb, 0),
            format_number(ra, 0)
        ));
    }
    let mean_input = |runs: &[Run]| {
        let v: Vec<f64> = runs.iter().filter_map(|r| r.input_tokens_mean).collect();
        if v.len() == runs.len() {
            mean(&v)
        } else {
            None
        }
    };
    if let (Some(ib), Some(ia)) = (mean_input(req.baseline), mean_input(req.candidate)) {
        let changed = ib > 0.0 && ((ia - ib) / ib).abs() > PROMPT_TOKENS_TOLERANCE;
        if changed && !declared.contains(&"prompt_len_dist") {
            problems.push(format!(
                "Prompt lengths differ: {ib:.0} tokens per request on average before, {ia:.0} after ({:+.0}%, tolerance {:.0}%). Longer prompts change prefill work, not speed.",
                (ia - ib) / ib * 100.0,
                PROMPT_TOKENS_TOLERANCE * 100.0
            ));
        }
    }
    problems
}

/// Defects seen on both sides are warnings; on one side only they are named
/// (the tolerance checks decide whether they break the comparison).
pub(super) fn defect_warnings(baseline: &[Run], candidate: &[Run]) -> Vec<String> {
    let codes = |runs: &[Run]| -> BTreeMap<String, String> {
        runs.iter()
            .flat_map(|r| r.defects.iter())
            .map(|d| (d.code.clone(), d.message.clone()))
            .collect()
    };
    let (b, a) = (codes(baseline), codes(candidate));
    let mut out = Vec::new();
    for (code, message) in &b {
        match a.get(code) {
            Some(other) => {
                let seen = if other == message {
                    message.clone()
                } else {
                    format!("before — {message}; after — {other}")
                };
                out.push(format!(
                    "On both sides ({code}): {seen}. Equal defects do not invalidate the comparison, but its numbers cover only what succeeded."
                ));
            }
            None => out.push(format!("Only before the change ({code}): {message}.")),
        }
    }
    for (code, message) in a.iter().filter(|(c, _)| !b.contains_key(*c)) {
        out.push(format!("Only after the change ({code}): {message}."));
    }
    out
}
