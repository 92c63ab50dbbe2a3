//! Which of an investigation's runs a new comparison's form may tick in advance. Only a
//! pair the names settle is ticked: upload order says nothing about which run was
//! measured before the change (the "after" log is often uploaded first, or the
//! "before" one re-uploaded last).

/// Words in a file name that mark a run measured before the change.
const BEFORE_WORDS: &[&str] = &["before", "baseline", "base", "old", "pre", "control"];
/// Words that mark a run measured after it.
const AFTER_WORDS: &[&str] = &["after", "candidate", "new", "post", "fixed", "treatment"];

/// Which side a name says, from its words (split on anything not a letter or digit).
fn side_of(name: &str) -> Option<bool> {
    let lower = name.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let before = words.iter().any(|w| BEFORE_WORDS.contains(w));
    let after = words.iter().any(|w| AFTER_WORDS.contains(w));
    match (before, after) {
        (true, false) => Some(false),
        (false, true) => Some(true),
        _ => None,
    }
}

/// `(baseline, candidate)` when exactly two runs are given, one named as before and
/// the other as after the change; `None` otherwise, so the user chooses.
pub fn pick_pair(runs: &[(i64, &str)]) -> Option<(i64, i64)> {
    let [(a, an), (b, bn)] = runs else {
        return None;
    };
    match (side_of(an)?, side_of(bn)?) {
        (false, true) => Some((*a, *b)),
        (true, false) => Some((*b, *a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_that_settle_the_pair_pick_it() {
        // The before log uploaded last: still the baseline.
        assert_eq!(
            pick_pair(&[(9, "vllm-0.9-before.jsonl"), (8, "vllm-0.10-after.jsonl")]),
            Some((9, 8))
        );
        assert_eq!(
            pick_pair(&[(3, "baseline_run.json"), (4, "candidate_run.json")]),
            Some((3, 4))
        );
        // Names that say nothing, or the same side twice: the user chooses.
        assert_eq!(pick_pair(&[(1, "run-a.jsonl"), (2, "run-b.jsonl")]), None);
        assert_eq!(
            pick_pair(&[(1, "before-1.jsonl"), (2, "before-2.jsonl")]),
            None
        );
        // "prefill" is not "pre"; a name saying both sides says neither.
        assert_eq!(pick_pair(&[(1, "prefill.jsonl"), (2, "after.jsonl")]), None);
        assert_eq!(
            pick_pair(&[(1, "before-after.jsonl"), (2, "after.jsonl")]),
            None
        );
        // Three runs: no pair to pick.
        assert_eq!(
            pick_pair(&[
                (1, "before.jsonl"),
                (2, "after.jsonl"),
                (3, "after-2.jsonl")
            ]),
            None
        );
    }
}
