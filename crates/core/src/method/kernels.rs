//! Step 5 — which kernel and why. Rank kernels by the share of the phase
//! that matters, so effort goes to the ones that can move the metric.

use serde::{Deserialize, Serialize};

use super::FieldError;

/// One kernel as recorded from a profile of the dominant phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelRow {
    pub name: String,
    /// Fraction of the phase's time (0..1). When absent it is derived from
    /// `time_ms`; see [`rank_with_total`].
    pub share: Option<f64>,
    pub time_ms: Option<f64>,
    pub occupancy_pct: Option<f64>,
    /// Stall reasons, sectors per request, anything worth keeping.
    pub notes: String,
}

/// A kernel in rank order with the running total of shares.
///
/// `cumulative_shareₖ = Σ_{j ≤ k} share_j` over kernels sorted by share,
/// largest first: where it passes ~0.8 the rest of the list can wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedKernel {
    /// 1-based.
    pub rank: usize,
    pub name: String,
    pub share: f64,
    pub cumulative_share: f64,
    pub time_ms: Option<f64>,
    pub occupancy_pct: Option<f64>,
    pub notes: String,
}

/// Rank kernels by share; shares missing are derived from times over the sum
/// of all listed times.
pub fn rank(rows: &[KernelRow]) -> Result<Vec<RankedKernel>, Vec<FieldError>> {
    rank_with_total(rows, None)
}

/// Rank kernels by share. A missing share is `time_ms / phase_total_ms`, or
/// `time_ms / Σ time_ms` of the listed kernels when the phase total is not
/// known (then the listed kernels are taken to be the whole phase).
pub fn rank_with_total(
    rows: &[KernelRow],
    phase_total_ms: Option<f64>,
) -> Result<Vec<RankedKernel>, Vec<FieldError>> {
    let mut errors = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let at = |f: &str| format!("kernels[{i}].{f}");
        if row.name.trim().is_empty() {
            errors.push(FieldError::new(at("name"), "Give the kernel's name"));
        }
        if let Some(s) = row.share.filter(|s| !(0.0..=1.0).contains(s)) {
            errors.push(FieldError::new(
                at("share"),
                format!("A share is a fraction of the phase between 0 and 1, got {s}"),
            ));
        }
        if let Some(t) = row.time_ms.filter(|t| !(t.is_finite() && *t >= 0.0)) {
            errors.push(FieldError::new(
                at("time_ms"),
                format!("Time must be ≥ 0 ms, got {t}"),
            ));
        }
        if let Some(o) = row.occupancy_pct.filter(|o| !(0.0..=100.0).contains(o)) {
            errors.push(FieldError::new(
                at("occupancy_pct"),
                format!("Occupancy is a percentage between 0 and 100, got {o}"),
            ));
        }
        if row.share.is_none() && row.time_ms.is_none() {
            errors.push(FieldError::new(
                at("share"),
                "Give the kernel's share of the phase or its time",
            ));
        }
    }
    if let Some(t) = phase_total_ms.filter(|t| !(t.is_finite() && *t > 0.0)) {
        errors.push(FieldError::new(
            "phase_total_ms",
            format!("The phase total must be greater than 0 ms, got {t}"),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    let listed_time: f64 = rows.iter().filter_map(|r| r.time_ms).sum();
    let denominator = phase_total_ms.unwrap_or(listed_time);
    let mut ranked: Vec<RankedKernel> = rows
        .iter()
        .map(|r| RankedKernel {
            rank: 0,
            name: r.name.trim().to_string(),
            share: r.share.unwrap_or_else(|| {
                let t = r.time_ms.unwrap_or(0.0);
                if denominator > 0.0 {
                    t / denominator
                } else {
                    0.0
                }
            }),
            cumulative_share: 0.0,
            time_ms: r.time_ms,
            occupancy_pct: r.occupancy_pct,
            notes: r.notes.clone(),
        })
        .collect();
    ranked.sort_by(|a, b| b.share.total_cmp(&a.share));
    let mut running = 0.0;
    for (i, k) in ranked.iter_mut().enumerate() {
        running += k.share;
        k.rank = i + 1;
        k.cumulative_share = running;
    }
    // Shares of one phase cannot add up to more than the phase (small
    // rounding in hand-entered shares is tolerated).
    if running > 1.01 {
        return Err(vec![FieldError::new(
            "kernels",
            format!(
                "The shares add up to {:.0}% of the phase: they must be fractions of the same phase's time",
                running * 100.0
            ),
        )]);
    }
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str, share: Option<f64>, time_ms: Option<f64>) -> KernelRow {
        KernelRow {
            name: name.into(),
            share,
            time_ms,
            ..KernelRow::default()
        }
    }

    #[test]
    fn ranks_by_share_with_cumulative() {
        let ranked = rank(&[
            k("rms_norm", Some(0.05), None),
            k("paged_attention_v2", Some(0.55), None),
            k("gemm_bf16", Some(0.30), None),
        ])
        .unwrap();
        let names: Vec<&str> = ranked.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["paged_attention_v2", "gemm_bf16", "rms_norm"]);
        assert_eq!(ranked[0].rank, 1);
        assert!((ranked[1].cumulative_share - 0.85).abs() < 1e-12);
        assert!((ranked[2].cumulative_share - 0.90).abs() < 1e-12);
    }

    #[test]
    fn shares_derived_from_time() {
        let rows = [k("a", None, Some(30.0)), k("b", None, Some(10.0))];
        let ranked = rank(&rows).unwrap();
        assert_eq!((ranked[0].share, ranked[1].share), (0.75, 0.25));
        let of_phase = rank_with_total(&rows, Some(80.0)).unwrap();
        assert_eq!(
            (of_phase[0].share, of_phase[1].cumulative_share),
            (0.375, 0.5)
        );
    }

    #[test]
    fn invalid_rows() {
        let mut bad = k("", Some(1.2), Some(-1.0));
        bad.occupancy_pct = Some(120.0);
        let errors = rank(&[bad, k("x", None, None)]).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "kernels[0].name",
                "kernels[0].share",
                "kernels[0].time_ms",
                "kernels[0].occupancy_pct",
                "kernels[1].share"
            ]
        );
        let over = rank(&[k("a", Some(0.7), None), k("b", Some(0.6), None)]).unwrap_err();
        assert!(over[0].message.contains("130%"));
    }
}
