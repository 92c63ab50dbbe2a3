//! The order of the steps. Each step rules out whole classes of causes
//! cheaply, so skipping ahead usually costs more than it saves; a later step's
//! page says so while earlier steps are missing, and saving it records the skip.

use serde::Serialize;

/// One step of the method, for navigation and help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepInfo {
    pub number: u8,
    pub slug: &'static str,
    pub title: &'static str,
    pub purpose: &'static str,
}

/// Steps 0–7 in order.
pub const STEPS: [StepInfo; 8] = [
    StepInfo {
        number: 0,
        slug: "reproduce",
        title: "Reproduce",
        purpose: "Make it slow on demand and freeze everything a later comparison must hold equal.",
    },
    StepInfo {
        number: 1,
        slug: "metric",
        title: "Define the metric",
        purpose: "Pick one metric and percentile, with the observed value and the target in numbers.",
    },
    StepInfo {
        number: 2,
        slug: "phases",
        title: "Decompose by phase",
        purpose: "Split the metric into tokenize, queue, prefill, decode, detokenize and network, and find the phase that holds the time.",
    },
    StepInfo {
        number: 3,
        slug: "resources",
        title: "GPU, CPU or waiting",
        purpose: "Compare GPU and CPU busy time with wall-clock time to see whether anything is actually working.",
    },
    StepInfo {
        number: 4,
        slug: "regime",
        title: "Which regime",
        purpose: "Tell compute-bound from memory-bound from latency-bound, and a decode step from what it should cost and from its bandwidth floor.",
    },
    StepInfo {
        number: 5,
        slug: "kernels",
        title: "Which kernel and why",
        purpose: "Rank the kernels of the phase that matters and record why each is slow.",
    },
    StepInfo {
        number: 6,
        slug: "fixes",
        title: "Estimate the fix",
        purpose: "Bound each candidate fix with Amdahl's law and rank by gain per day of effort.",
    },
    StepInfo {
        number: 7,
        slug: "change",
        title: "Change one thing, re-measure, record",
        purpose: "Make exactly one change, compare matched before/after distributions, and write the journal entry.",
    },
];

/// Steps before `target_step` that are not in `done_steps`.
pub fn missing_before(target_step: u8, done_steps: &[u8]) -> Vec<u8> {
    (0..target_step.min(8))
        .filter(|s| !done_steps.contains(s))
        .collect()
}

/// One sentence on why the order matters, when `target_step` is opened with
/// an earlier step not done; `None` when nothing was skipped (or the step
/// does not exist).
pub fn skip_warning(target_step: u8, done_steps: &[u8]) -> Option<&'static str> {
    if missing_before(target_step, done_steps).is_empty() {
        return None;
    }
    Some(match target_step {
        1 => "A target means little until the slowdown can be reproduced: step 0 records the setup that every later measurement repeats.",
        2 => "A phase breakdown needs a total to split: step 1 fixes the metric, its percentile and the number to explain.",
        3 => "Check the phase breakdown (step 2) first: it settles about half of all investigations without a profiler.",
        4 => "Regimes describe GPU work, and step 3 first checks that the time is on the GPU at all rather than spent waiting.",
        5 => "Kernel work is the most expensive place to start: the phase breakdown (step 2) often shows the time is not in the GPU at all.",
        6 => "A fix can only be estimated from the share of time it touches, and that share comes from the earlier steps.",
        7 => "A change made before the cause is found can at best be called an improvement, never a confirmed fix.",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_numbered_in_order() {
        for (i, step) in STEPS.iter().enumerate() {
            assert_eq!(step.number as usize, i);
            assert!(!step.title.is_empty() && !step.purpose.is_empty());
        }
    }

    #[test]
    fn warns_only_when_a_step_is_skipped() {
        assert_eq!(skip_warning(0, &[]), None);
        assert_eq!(skip_warning(2, &[0, 1]), None);
        assert_eq!(skip_warning(5, &[0, 1, 2, 3, 4]), None);
        let w = skip_warning(5, &[0, 1]).unwrap();
        assert!(w.starts_with("Kernel work is the most expensive place to start"));
        assert!(skip_warning(3, &[0, 2]).is_some(), "step 1 missing");
        assert_eq!(missing_before(4, &[0, 2]), vec![1, 3]);
        assert_eq!(skip_warning(9, &[]), None);
        for step in 1..8 {
            assert!(skip_warning(step, &[]).is_some(), "step {step}");
        }
    }
}
