//! Progress: per learner, attempts and accuracy per estimator and per drill type, the
//! streak of consecutive days with a drill, and the learning path — what to practise
//! next, weakest estimator first. The shell passes the attempts and today's date.

use chrono::NaiveDate;
use serde::Serialize;

use crate::estimate;

/// Drill types, as attempts record them.
pub const KINDS: [(&str, &str); 5] = [
    ("step", "Single step"),
    ("chain", "Whole chain"),
    ("regime", "Which regime"),
    ("ranking", "Ranking by gain per day"),
    ("replay", "Blind replay"),
];

/// Right answers an estimator needs, with at least [`MASTERY`] accuracy, to count as done.
pub const RIGHT_TO_MASTER: u32 = 3;
pub const MASTERY: f64 = 0.6;

/// One stored attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub kind: String,
    pub estimator: Option<String>,
    /// None for an answer that is not graded right or wrong (a replay).
    pub correct: Option<bool>,
    pub day: NaiveDate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tally {
    pub name: String,
    pub title: String,
    pub attempts: u32,
    pub right: u32,
}

impl Tally {
    fn new(name: &str, title: &str) -> Tally {
        Tally {
            name: name.to_string(),
            title: title.to_string(),
            attempts: 0,
            right: 0,
        }
    }

    /// Right / graded attempts; `None` before any.
    pub fn accuracy(&self) -> Option<f64> {
        (self.attempts > 0).then(|| f64::from(self.right) / f64::from(self.attempts))
    }

    /// "67 %" or "–".
    pub fn accuracy_text(&self) -> String {
        self.accuracy()
            .map_or("–".to_string(), |a| format!("{:.0} %", a * 100.0))
    }

    fn mastered(&self, right_needed: u32) -> bool {
        self.right >= right_needed && self.accuracy().unwrap_or(0.0) >= MASTERY
    }
}

/// One place on the learning path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathItem {
    pub name: String,
    pub title: String,
    /// Where to practise it.
    pub href: String,
    pub done: bool,
    /// What is still missing, in words.
    pub todo: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub per_estimator: Vec<Tally>,
    pub per_kind: Vec<Tally>,
    /// Consecutive days with at least one drill, ending today (or yesterday, when today
    /// has none yet).
    pub streak: u32,
    /// Not done first, weakest estimator first; then what is done.
    pub path: Vec<PathItem>,
    pub finished: bool,
}

impl Progress {
    pub fn next(&self) -> Option<&PathItem> {
        self.path.iter().find(|p| !p.done)
    }

    pub fn done_count(&self) -> usize {
        self.path.iter().filter(|p| p.done).count()
    }
}

fn todo(t: &Tally, needed: u32) -> String {
    if t.attempts == 0 {
        "not tried yet".to_string()
    } else if t.right < needed {
        format!("{} of {needed} right answers", t.right)
    } else {
        format!(
            "accuracy {} is under {:.0} %",
            t.accuracy_text(),
            MASTERY * 100.0
        )
    }
}

/// Progress over `attempts` as of `today`.
pub fn progress(attempts: &[Attempt], today: NaiveDate) -> Progress {
    let mut per_estimator: Vec<Tally> = estimate::registry()
        .iter()
        .map(|e| Tally::new(e.name, e.title))
        .collect();
    let mut per_kind: Vec<Tally> = KINDS.iter().map(|(k, t)| Tally::new(k, t)).collect();
    let mut replays = 0u32;
    for a in attempts {
        let right = u32::from(a.correct == Some(true));
        if let Some(t) = per_kind.iter_mut().find(|t| t.name == a.kind) {
            t.attempts += 1;
            t.right += right;
        }
        if a.kind == "replay" {
            replays += 1;
        }
        if let Some(name) = &a.estimator {
            if let Some(t) = per_estimator.iter_mut().find(|t| &t.name == name) {
                t.attempts += 1;
                t.right += right;
            }
        }
    }

    let mut path: Vec<(PathItem, f64, usize)> = per_estimator
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let done = t.mastered(RIGHT_TO_MASTER);
            let item = PathItem {
                name: t.name.clone(),
                title: t.title.clone(),
                href: format!("/drills/{}", t.name),
                done,
                todo: if done {
                    String::new()
                } else {
                    todo(t, RIGHT_TO_MASTER)
                },
            };
            (item, t.accuracy().unwrap_or(0.0), i)
        })
        .collect();
    // Weakest first: lowest accuracy (untried counts as none right), then fewest tries.
    path.sort_by(|a, b| {
        a.0.done
            .cmp(&b.0.done)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut path: Vec<PathItem> = path.into_iter().map(|(p, ..)| p).collect();
    let kind = |name: &str| per_kind.iter().find(|t| t.name == name).cloned();
    let mut extras = Vec::new();
    if let Some(t) = kind("regime") {
        extras.push((t, 3, "/drills/regime"));
    }
    if let Some(t) = kind("ranking") {
        extras.push((t, 2, "/drills/ranking"));
    }
    for (t, needed, href) in extras {
        let done = t.mastered(needed);
        path.push(PathItem {
            name: t.name.clone(),
            title: t.title.clone(),
            href: href.to_string(),
            done,
            todo: if done {
                String::new()
            } else {
                todo(&t, needed)
            },
        });
    }
    path.push(PathItem {
        name: "replay".to_string(),
        title: "Blind replay".to_string(),
        href: "/replays".to_string(),
        done: replays > 0,
        todo: if replays > 0 {
            String::new()
        } else {
            "answer one replay".to_string()
        },
    });
    // Keep every open item ahead of the finished ones.
    path.sort_by_key(|p| p.done);
    let finished = path.iter().all(|p| p.done);
    Progress {
        per_estimator,
        per_kind,
        streak: streak(attempts, today),
        path,
        finished,
    }
}

fn streak(attempts: &[Attempt], today: NaiveDate) -> u32 {
    let days: std::collections::BTreeSet<NaiveDate> = attempts.iter().map(|a| a.day).collect();
    let mut day = if days.contains(&today) {
        today
    } else {
        match today.pred_opt() {
            Some(d) => d,
            None => return 0,
        }
    };
    let mut n = 0;
    while days.contains(&day) {
        n += 1;
        match day.pred_opt() {
            Some(d) => day = d,
            None => break,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, d).unwrap()
    }

    fn a(kind: &str, est: Option<&str>, correct: bool, d: u32) -> Attempt {
        Attempt {
            kind: kind.into(),
            estimator: est.map(Into::into),
            correct: Some(correct),
            day: day(d),
        }
    }

    #[test]
    fn empty_progress_starts_with_the_first_estimator() {
        let p = progress(&[], day(10));
        assert_eq!(p.streak, 0);
        assert!(!p.finished);
        assert_eq!(p.next().unwrap().name, "prefix-reuse");
        assert_eq!(p.per_estimator.len(), 10);
        assert_eq!(p.per_kind.len(), 5);
        assert_eq!(p.path.len(), 13);
        assert_eq!(p.next().unwrap().todo, "not tried yet");
    }

    #[test]
    fn accuracy_per_estimator_and_kind_and_weakest_first() {
        let attempts = vec![
            a("chain", Some("cost"), true, 1),
            a("chain", Some("cost"), false, 1),
            a("step", Some("decode-floor"), true, 1),
            a("regime", None, true, 1),
        ];
        let p = progress(&attempts, day(1));
        let cost = p.per_estimator.iter().find(|t| t.name == "cost").unwrap();
        assert_eq!((cost.attempts, cost.right), (2, 1));
        assert_eq!(cost.accuracy_text(), "50 %");
        let chain = p.per_kind.iter().find(|t| t.name == "chain").unwrap();
        assert_eq!((chain.attempts, chain.right), (2, 1));
        // untried estimators (accuracy 0) come before cost (50 %) and decode-floor (100 %)
        let order: Vec<&str> = p.path.iter().map(|i| i.name.as_str()).collect();
        let pos = |n: &str| order.iter().position(|o| *o == n).unwrap();
        assert!(pos("prefix-reuse") < pos("cost"));
        assert!(pos("cost") < pos("decode-floor"));
    }

    #[test]
    fn the_path_finishes_when_everything_is_mastered() {
        let mut attempts = Vec::new();
        for e in estimate::registry() {
            for _ in 0..RIGHT_TO_MASTER {
                attempts.push(a("chain", Some(e.name), true, 5));
            }
        }
        for _ in 0..3 {
            attempts.push(a("regime", None, true, 5));
        }
        let p = progress(&attempts, day(5));
        assert!(!p.finished);
        assert_eq!(p.next().unwrap().name, "ranking");
        attempts.push(a("ranking", None, true, 5));
        attempts.push(a("ranking", None, true, 5));
        attempts.push(Attempt {
            kind: "replay".into(),
            estimator: None,
            correct: None,
            day: day(5),
        });
        let p = progress(&attempts, day(5));
        assert!(p.finished, "{:?}", p.next());
        assert_eq!(p.done_count(), p.path.len());
    }

    #[test]
    fn streaks_count_consecutive_days() {
        let attempts = vec![
            a("regime", None, true, 3),
            a("regime", None, false, 4),
            a("regime", None, true, 5),
            a("regime", None, true, 7),
        ];
        assert_eq!(progress(&attempts, day(7)).streak, 1);
        assert_eq!(progress(&attempts, day(5)).streak, 3);
        // nothing yet today: yesterday's streak still counts
        assert_eq!(progress(&attempts, day(6)).streak, 3);
        assert_eq!(progress(&attempts, day(9)).streak, 0);
    }
}
