//! Step 6 — estimate the fix. Amdahl's law bounds what a fix can give before
//! anyone writes it; ranking by gain per day of effort puts cheap, large
//! wins first.

use serde::{Deserialize, Serialize};

use super::FieldError;

/// Below this share a candidate cannot move the metric much, however fast.
pub const SMALL_SHARE: f64 = 0.05;

/// A proposed fix: the share `s` of the metric's time it touches, the
/// speedup `k` it gives on that share, and the effort in days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub description: String,
    /// s, fraction of the time the fix touches, in (0, 1].
    pub share: f64,
    /// k, how many times faster the touched part gets (> 0).
    pub speedup: f64,
    pub effort_days: f64,
}

/// Amdahl ceiling: the overall speedup when a share `s` of the time gets `k`
/// times faster, `1 / ((1 − s) + s / k)`.
pub fn amdahl_ceiling(share: f64, speedup: f64) -> f64 {
    1.0 / ((1.0 - share) + share / speedup)
}

/// A candidate with its estimate.
///
/// `ceiling = 1 / ((1 − s) + s / k)`, `gain_percent = (ceiling − 1)·100`,
/// `gain_per_day = gain_percent / effort_days`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedCandidate {
    /// 1-based, by gain per day.
    pub rank: usize,
    pub candidate: Candidate,
    pub ceiling: f64,
    pub gain_percent: f64,
    pub gain_per_day: f64,
    /// Set when the candidate touches under 5% of the time.
    pub warning: Option<String>,
}

/// Check every candidate: share in (0, 1], speedup > 0, effort > 0.
pub fn validate(candidates: &[Candidate]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let at = |f: &str| format!("candidates[{i}].{f}");
        if c.description.trim().is_empty() {
            errors.push(FieldError::new(at("description"), "Describe the fix"));
        }
        if !(c.share > 0.0 && c.share <= 1.0) {
            errors.push(FieldError::new(
                at("share"),
                format!("The share of time the fix touches is a fraction above 0 and at most 1 (9% is 0.09), got {}", c.share),
            ));
        }
        if !(c.speedup > 0.0 && c.speedup.is_finite()) {
            errors.push(FieldError::new(
                at("speedup"),
                format!(
                    "The speedup must be greater than 0 (2 means twice as fast), got {}",
                    c.speedup
                ),
            ));
        }
        if !(c.effort_days > 0.0 && c.effort_days.is_finite()) {
            errors.push(FieldError::new(
                at("effort_days"),
                format!("Effort must be more than 0 days, got {}", c.effort_days),
            ));
        }
    }
    errors
}

/// Estimate and rank candidates by gain per effort day, highest first
/// (ties: larger gain first).
pub fn rank(candidates: &[Candidate]) -> Result<Vec<RankedCandidate>, Vec<FieldError>> {
    let errors = validate(candidates);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut ranked: Vec<RankedCandidate> = candidates
        .iter()
        .map(|c| {
            let ceiling = amdahl_ceiling(c.share, c.speedup);
            let gain_percent = (ceiling - 1.0) * 100.0;
            let warning = (c.share < SMALL_SHARE).then(|| {
                // Even an infinitely fast fix only removes the share itself.
                let best = (1.0 / (1.0 - c.share) - 1.0) * 100.0;
                format!("Touches under 5% of the time: at most {best:.1}% gain even if that part took no time at all.")
            });
            RankedCandidate {
                rank: 0,
                candidate: c.clone(),
                ceiling,
                gain_percent,
                gain_per_day: gain_percent / c.effort_days,
                warning,
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.gain_per_day
            .total_cmp(&a.gain_per_day)
            .then(b.gain_percent.total_cmp(&a.gain_percent))
    });
    for (i, r) in ranked.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(description: &str, share: f64, speedup: f64, effort_days: f64) -> Candidate {
        Candidate {
            description: description.into(),
            share,
            speedup,
            effort_days,
        }
    }

    #[test]
    fn amdahl_examples() {
        // 9% of the step made 3× faster: 1 / (0.91 + 0.03) = 1 / 0.94.
        assert!((amdahl_ceiling(0.09, 3.0) - 1.0638).abs() < 5e-5);
        // Decode-only 1.2× on 60%: 1 / (0.4 + 0.5) = 1 / 0.9.
        assert!((amdahl_ceiling(0.6, 1.2) - 1.1111).abs() < 5e-5);
        assert_eq!(amdahl_ceiling(1.0, 2.0), 2.0);
        assert_eq!(amdahl_ceiling(0.5, 1.0), 1.0);
    }

    #[test]
    fn ranked_by_gain_per_effort_day() {
        let ranked = rank(&[
            c("rewrite attention kernel", 0.09, 3.0, 10.0), // 6.38% / 10 d = 0.64
            c("enable chunked prefill", 0.6, 1.2, 0.5),     // 11.1% / 0.5 d = 22.2
            c("FP8 KV cache", 0.4, 1.5, 2.0),               // 15.4% / 2 d = 7.7
            c("fuse rms_norm", 0.03, 2.0, 1.0),             // 1.52% / 1 d
        ])
        .unwrap();
        let order: Vec<&str> = ranked
            .iter()
            .map(|r| r.candidate.description.as_str())
            .collect();
        assert_eq!(
            order,
            [
                "enable chunked prefill",
                "FP8 KV cache",
                "fuse rms_norm",
                "rewrite attention kernel"
            ]
        );
        assert_eq!(ranked[0].rank, 1);
        assert!((ranked[0].gain_percent - 11.1111).abs() < 1e-3);
        assert!((ranked[0].gain_per_day - 22.2222).abs() < 1e-3);
        assert!((ranked[3].ceiling - 1.0638).abs() < 5e-5);
    }

    #[test]
    fn small_share_warning() {
        let ranked = rank(&[
            c("tweak tokenizer", 0.04, 10.0, 1.0),
            c("other", 0.05, 2.0, 1.0),
        ])
        .unwrap();
        let small = ranked.iter().find(|r| r.candidate.share == 0.04).unwrap();
        // 1 / (1 − 0.04) − 1 = 4.1667%.
        assert_eq!(
            small.warning.as_deref(),
            Some("Touches under 5% of the time: at most 4.2% gain even if that part took no time at all.")
        );
        assert!(ranked
            .iter()
            .find(|r| r.candidate.share == 0.05)
            .unwrap()
            .warning
            .is_none());
    }

    #[test]
    fn validation() {
        let errors = rank(&[c("", 0.0, 0.0, 0.0), c("x", 1.5, 2.0, 1.0)]).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "candidates[0].description",
                "candidates[0].share",
                "candidates[0].speedup",
                "candidates[0].effort_days",
                "candidates[1].share"
            ]
        );
        assert!(rank(&[c("x", 1.0, 2.0, 1.0)]).is_ok(), "share 1 is allowed");
    }
}
