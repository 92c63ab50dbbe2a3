//! Step 3 — GPU, CPU or waiting. Compare busy time with wall-clock time over
//! the same window: if neither processor is busy most of the time, the
//! request is waiting on something, and neither kernels nor Python help.

use serde::Serialize;

use super::FieldError;

/// A busy/wall ratio at or above this means "that processor is the limit".
pub const BUSY_RATIO: f64 = 0.8;
/// Busy time above wall by more than 5% cannot come from one timeline.
pub const INCONSISTENT_RATIO: f64 = 1.05;

/// What the window was bound by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Boundness {
    GpuBound,
    CpuBound,
    /// The GPU was mostly idle and no CPU busy time was recorded: CPU-bound and
    /// waiting cannot be told apart, so neither is judged.
    NotGpuBound,
    /// Both processors mostly idle: the time goes to waiting. The suspects
    /// are listed most common first.
    Waiting {
        suspects: Vec<&'static str>,
    },
}

/// Step-3 result.
///
/// `gpu_ratio = GPU kernel time / wall`, `cpu_ratio = CPU busy time / wall`.
/// GPU-bound when `gpu_ratio ≥ 0.8` (checked first: when the GPU is that busy
/// it is the critical resource whatever the host does); else CPU-bound when
/// `cpu_ratio ≥ 0.8`; else waiting. Without a CPU busy time only the first
/// question is answered: a GPU below 0.8 is "not GPU-bound", and `not_judged` says
/// what is left open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    pub bound: Boundness,
    pub gpu_ratio: f64,
    /// `None` when no CPU busy time was recorded.
    pub cpu_ratio: Option<f64>,
    /// What could not be judged for want of the CPU busy time.
    pub not_judged: Option<String>,
    /// Ratios above 1.05: kernel time summed over several streams or GPUs,
    /// CPU time summed over threads, or windows that do not match.
    pub warnings: Vec<FieldError>,
}

impl Classification {
    pub fn slug(&self) -> &'static str {
        match self.bound {
            Boundness::GpuBound => "gpu_bound",
            Boundness::CpuBound => "cpu_bound",
            Boundness::NotGpuBound => "not_gpu_bound",
            Boundness::Waiting { .. } => "waiting",
        }
    }

    /// "GPU-bound (GPU busy 92% of wall, CPU 31%)"; "not GPU-bound (GPU busy 40% of
    /// wall, CPU not recorded)".
    pub fn line(&self) -> String {
        let what = match self.bound {
            Boundness::GpuBound => "GPU-bound",
            Boundness::CpuBound => "CPU-bound",
            Boundness::NotGpuBound => "not GPU-bound",
            Boundness::Waiting { .. } => "waiting",
        };
        let cpu = match self.cpu_ratio {
            Some(r) => format!("CPU {:.0}%", r * 100.0),
            None => "CPU not recorded".to_string(),
        };
        format!(
            "{what} (GPU busy {:.0}% of wall, {cpu})",
            self.gpu_ratio * 100.0
        )
    }
}

/// What a window without CPU busy time leaves open, when the GPU was not the limit.
pub const NOT_JUDGED_CPU_BOUND: &str = "CPU busy time was not recorded, so whether the host \
    is the limit (CPU-bound) or the window waits on a lock, a host-device sync, the network \
    or a collective (waiting) is not judged. Add the busiest request-path thread's CPU time \
    over the same window (from a CPU profile such as py-spy or perf) to judge it.";

/// What a GPU-bound window without CPU busy time leaves open.
pub const NOT_JUDGED_HOST: &str = "CPU busy time was not recorded: the GPU is the limit \
    whatever the host does, but how busy the host was is not judged.";

/// Classify a window from summed GPU kernel time, CPU busy time (optional) and wall
/// time (same unit for all three). Errors when wall ≤ 0 or a total is negative or not
/// a number.
pub fn classify(
    gpu_total: f64,
    cpu_total: Option<f64>,
    wall: f64,
) -> Result<Classification, Vec<FieldError>> {
    let mut errors = Vec::new();
    if !(wall.is_finite() && wall > 0.0) {
        errors.push(FieldError::new(
            "wall",
            "Wall-clock time must be a number greater than 0",
        ));
    }
    for (field, value, what) in [
        ("gpu_total", Some(gpu_total), "GPU kernel time"),
        ("cpu_total", cpu_total, "CPU busy time"),
    ] {
        let Some(value) = value else { continue };
        if !(value.is_finite() && value >= 0.0) {
            errors.push(FieldError::new(
                field,
                format!("{what} must be a number ≥ 0"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    let gpu_ratio = gpu_total / wall;
    let cpu_ratio = cpu_total.map(|c| c / wall);
    let mut warnings = Vec::new();
    if gpu_ratio > INCONSISTENT_RATIO {
        warnings.push(FieldError::new(
            "gpu_total",
            format!(
                "GPU kernel time is {:.0}% of wall: kernels on several streams or GPUs were summed, or the windows differ. Use one GPU's timeline over the same window.",
                gpu_ratio * 100.0
            ),
        ));
    }
    if let Some(cpu_ratio) = cpu_ratio.filter(|r| *r > INCONSISTENT_RATIO) {
        warnings.push(FieldError::new(
            "cpu_total",
            format!(
                "CPU busy time is {:.0}% of wall: time from several threads was summed, or the windows differ. Use the busiest thread on the request path.",
                cpu_ratio * 100.0
            ),
        ));
    }

    let bound = if gpu_ratio >= BUSY_RATIO {
        Boundness::GpuBound
    } else if cpu_ratio.is_none() {
        Boundness::NotGpuBound
    } else if cpu_ratio.is_some_and(|r| r >= BUSY_RATIO) {
        Boundness::CpuBound
    } else {
        Boundness::Waiting {
            suspects: vec![
                "insufficient offered load: the queue was empty while the GPU idled (replay at higher fixed concurrency)",
                "lock contention on the request path",
                "an implicit host-device sync such as .item(), .cpu() or a blocking copy",
                "network or RPC waits between components",
                "a collective (all-reduce, all-gather) waiting on a slower rank",
            ],
        }
    };
    let not_judged = match (&bound, cpu_ratio) {
        (_, Some(_)) => None,
        (Boundness::GpuBound, None) => Some(NOT_JUDGED_HOST.to_string()),
        (_, None) => Some(NOT_JUDGED_CPU_BOUND.to_string()),
    };
    Ok(Classification {
        bound,
        gpu_ratio,
        cpu_ratio,
        not_judged,
        warnings,
    })
}

/// The low-load suspect, which step 2 rules out when requests queue.
pub const LOW_LOAD: &str = "insufficient offered load";

/// The suspects for a waiting window made consistent with step 2: when queue wait
/// dominates, requests were waiting for admission, so "the queue was empty" cannot be
/// the cause; admission and capacity lead instead.
pub fn consistent_with_queueing(bound: Boundness, queue_dominates: bool) -> Boundness {
    match bound {
        Boundness::Waiting { suspects } if queue_dominates => {
            let mut list = vec![
                "admission or capacity: step 2 shows requests waiting in the queue while the GPU idles — check max_num_seqs, KV-cache preemptions and the scheduler's admission rules",
            ];
            list.extend(suspects.into_iter().filter(|s| !s.starts_with(LOW_LOAD)));
            Boundness::Waiting { suspects: list }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands() {
        let gpu = classify(92.0, Some(30.0), 100.0).unwrap();
        assert_eq!(gpu.bound, Boundness::GpuBound);
        assert_eq!(gpu.line(), "GPU-bound (GPU busy 92% of wall, CPU 30%)");
        assert_eq!(
            classify(80.0, Some(0.0), 100.0).unwrap().bound,
            Boundness::GpuBound,
            "0.8 is the edge"
        );
        assert_eq!(
            classify(79.0, Some(85.0), 100.0).unwrap().bound,
            Boundness::CpuBound
        );
        assert_eq!(
            classify(90.0, Some(95.0), 100.0).unwrap().slug(),
            "gpu_bound",
            "GPU checked first"
        );
        let waiting = classify(35.0, Some(20.0), 100.0).unwrap();
        match &waiting.bound {
            Boundness::Waiting { suspects } => {
                assert!(suspects.iter().any(|s| s.contains(".item()")));
                assert!(suspects.iter().any(|s| s.contains("collective")));
                assert!(suspects.iter().any(|s| s.contains("lock")));
            }
            other => panic!("{other:?}"),
        }
        assert!(waiting.warnings.is_empty());
    }

    #[test]
    fn inconsistent_ratios_are_flagged() {
        let c = classify(210.0, Some(104.0), 100.0).unwrap();
        assert_eq!(c.bound, Boundness::GpuBound);
        assert_eq!(c.warnings.len(), 1, "1.04 is within tolerance");
        assert_eq!(c.warnings[0].field, "gpu_total");
        assert_eq!(
            classify(10.0, Some(106.0), 100.0).unwrap().warnings[0].field,
            "cpu_total"
        );
    }

    #[test]
    fn invalid_input() {
        let errors = classify(-1.0, Some(f64::NAN), 0.0).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["wall", "gpu_total", "cpu_total"]);
    }

    #[test]
    fn a_dominant_queue_rules_out_low_load() {
        let c = classify(40.0, Some(20.0), 1000.0).unwrap();
        let Boundness::Waiting { suspects } = consistent_with_queueing(c.bound.clone(), true)
        else {
            panic!("waiting")
        };
        assert!(suspects[0].starts_with("admission or capacity"));
        assert!(suspects.iter().all(|s| !s.starts_with(LOW_LOAD)));
        let Boundness::Waiting { suspects } = consistent_with_queueing(c.bound, false) else {
            panic!("waiting")
        };
        assert!(suspects[0].starts_with(LOW_LOAD));
    }

    #[test]
    fn without_cpu_time_only_the_gpu_question_is_judged() {
        let busy = classify(92.0, None, 100.0).unwrap();
        assert_eq!(busy.bound, Boundness::GpuBound);
        assert_eq!(
            busy.line(),
            "GPU-bound (GPU busy 92% of wall, CPU not recorded)"
        );
        assert!(busy.not_judged.unwrap().contains("how busy the host was"));
        let idle = classify(40.0, None, 100.0).unwrap();
        assert_eq!(idle.slug(), "not_gpu_bound");
        assert_eq!(
            idle.line(),
            "not GPU-bound (GPU busy 40% of wall, CPU not recorded)"
        );
        assert!(idle.not_judged.unwrap().contains("is not judged"));
        assert!(classify(40.0, Some(20.0), 100.0)
            .unwrap()
            .not_judged
            .is_none());
    }
}
