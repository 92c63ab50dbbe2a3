//! What one rank's trace says about distributed work, with HolisticTraceAnalysis
//! (HTA 0.5.0) definitions, so a set of ranks can be summed and compared:
//!
//! * Kernel type (`hta.utils.utils.get_kernel_type`): COMMUNICATION when the name
//!   matches `^nccl.*Kernel`; else MEMORY when it starts `Memcpy`, `Memset` or `dma`; else
//!   COMPUTATION unless it contains `Memcpy` or `Sync`; else OTHER (not counted).
//! * Kernel-type time (`get_gpu_kernel_breakdown(include_memory_kernels=True)`): the
//!   intervals of each type are merged, and the time line is cut into exclusive classes by
//!   which types run: `COMPUTATION`, `COMMUNICATION`, `MEMORY`, and each overlap such as
//!   `COMPUTATION overlapping COMMUNICATION` (types named in that order).
//! * Communication/computation overlap (`get_comm_comp_overlap`): the time when both a
//!   communication and a computation kernel run, over the merged communication time.
//! * Steps: each `ProfilerStep#N`; GPU work belongs to the step its launch call started
//!   in (as HTA assigns iterations). Per step: the union of computation kernels and of
//!   communication kernels, and the GPU span of the step's work. A trace without steps
//!   is one step, numbered −1, holding all its GPU work.
//! * Collectives: per collective (the NCCL kernel's `Collective name` argument, else the
//!   word after `ncclKernel_` / `ncclDevKernel_` in its name, lower-cased): kernels, their
//!   summed time, and bytes (`In msg nelems` × the size of `dtype`) where the trace has
//!   them.

use super::state::{CollArgs, FastMap, GpuEv, Launch};
use serde::{Deserialize, Serialize};

/// Steps kept per rank (the first ones); the rest are counted.
pub const MAX_STEPS: usize = 2_000;
/// Distinct collective names kept; more are pooled as "other".
pub const MAX_COLLECTIVES: usize = 64;
/// Buckets of the busy timeline.
pub const BUSY_BUCKETS: usize = 120;

/// HTA's kernel types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelType {
    Computation,
    Communication,
    Memory,
    Other,
}

impl KernelType {
    /// HTA's bit for the type (its order in the class names).
    fn bit(self) -> u8 {
        match self {
            KernelType::Computation => 1,
            KernelType::Communication => 2,
            KernelType::Memory => 4,
            KernelType::Other => 0,
        }
    }
}

/// `get_kernel_type` of HTA 0.5.0.
pub fn kernel_type(name: &str) -> KernelType {
    let comm = name
        .strip_prefix("nccl")
        .is_some_and(|rest| rest.contains("Kernel"));
    if comm {
        KernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelType::Memory
    } else if name.contains("Memcpy") || name.contains("Sync") {
        KernelType::Other
    } else {
        KernelType::Computation
    }
}

/// The name of an exclusive class: the types running, in HTA's order.
pub fn class_name(mask: u8) -> String {
    let names = [(1u8, "COMPUTATION"), (2, "COMMUNICATION"), (4, "MEMORY")];
    names
        .iter()
        .filter(|(b, _)| mask & b != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" overlapping ")
}

/// Time in one exclusive kernel-type class (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTypeTime {
    pub kernel_type: String,
    pub us: f64,
}

/// One collective's kernels over the analysed window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveStat {
    pub name: String,
    pub count: u64,
    /// Summed kernel time (µs), waiting included: an NCCL kernel runs while it waits for
    /// its peers.
    pub us: f64,
    /// Summed message bytes, of the kernels whose arguments give them.
    pub bytes: Option<f64>,
    /// How many of the kernels gave their bytes.
    pub with_bytes: u64,
}

/// One step of one rank (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// N of `ProfilerStep#N`; −1 for a trace without steps.
    pub step: i64,
    /// GPU span of the work launched in the step (first start to last end).
    pub gpu_us: f64,
    /// Union of its computation kernels.
    pub compute_us: f64,
    /// Union of its communication kernels (waiting for peers included).
    pub comm_us: f64,
}

/// The distributed view of one rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distributed {
    /// Whether the trace named its rank (`distributedInfo.rank`).
    pub rank_given: bool,
    pub world_size: Option<i64>,
    pub kernel_types: Vec<KernelTypeTime>,
    /// Share of communication time overlapped by computation (%); none without
    /// communication kernels.
    pub comm_comp_overlap_pct: Option<f64>,
    pub comm_us: f64,
    pub collectives: Vec<CollectiveStat>,
    pub steps: Vec<StepTime>,
    /// Steps past [`MAX_STEPS`], not listed.
    pub steps_dropped: u64,
    /// Busy fraction (0–1, any stream of any device) in [`BUSY_BUCKETS`] equal buckets
    /// from the first GPU start to the last end.
    pub busy: Vec<f64>,
}

/// The collective of an NCCL kernel name: `ncclKernel_AllReduce_RING_LL_Sum_float` and
/// `ncclDevKernel_AllReduce_Sum_f32_RING_LL` both give `allreduce`.
pub fn collective_of_name(name: &str) -> String {
    let rest = name
        .strip_prefix("ncclDevKernel_")
        .or_else(|| name.strip_prefix("ncclKernel_"));
    match rest.and_then(|r| r.split(['_', '(']).next()) {
        Some(w) if !w.is_empty() => w.to_ascii_lowercase(),
        _ => "unknown".to_string(),
    }
}

/// Lengths of the merged intervals (sorted by start) of one type, pushed as events.
fn merged(intervals: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (s, e) in intervals {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn union_len(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|(s, e)| e - s).sum()
}

/// Exclusive class time by mask over the merged intervals of each type.
fn class_times(by_type: &[(u8, Vec<(f64, f64)>)]) -> [f64; 8] {
    let mut points: Vec<(f64, i8)> = Vec::new();
    for (bit, v) in by_type {
        for &(s, e) in v {
            points.push((s, *bit as i8));
            points.push((e, -(*bit as i8)));
        }
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = [0.0f64; 8];
    let mut mask: i8 = 0;
    for w in 0..points.len() {
        mask += points[w].1;
        if let Some(next) = points.get(w + 1) {
            let m = (mask.clamp(0, 7)) as usize;
            out[m] += next.0 - points[w].0;
        }
    }
    out
}

/// The distributed view of the kept GPU work (`gpu` sorted by start).
#[allow(clippy::too_many_arguments)]
pub(super) fn distributed(
    gpu: &[GpuEv],
    names: &[String],
    launches: &FastMap<u64, Launch>,
    steps: &[(i64, f64, f64)],
    coll: &FastMap<u64, CollArgs>,
    rank_given: bool,
    world_size: Option<i64>,
    notes: &mut Vec<String>,
) -> Distributed {
    let types: Vec<KernelType> = names.iter().map(|n| kernel_type(n)).collect();
    let type_of = |e: &GpuEv| {
        types
            .get(e.name as usize)
            .copied()
            .unwrap_or(KernelType::Other)
    };
    let mut by_type = Vec::new();
    for t in [
        KernelType::Computation,
        KernelType::Communication,
        KernelType::Memory,
    ] {
        let v = merged(
            gpu.iter()
                .filter(|e| type_of(e) == t)
                .map(|e| (e.start, e.end)),
        );
        by_type.push((t.bit(), v));
    }
    let times = class_times(&by_type);
    let mut kernel_types: Vec<KernelTypeTime> = (1..8u8)
        .filter(|m| times[*m as usize] > 0.0)
        .map(|m| KernelTypeTime {
            kernel_type: class_name(m),
            us: times[m as usize],
        })
        .collect();
    kernel_types.sort_by(|a, b| b.us.total_cmp(&a.us));
    let comm_us = union_len(&by_type[1].1);
    let both: f64 = times[3] + times[7];
    let comm_comp_overlap_pct = (comm_us > 0.0).then(|| 100.0 * both / comm_us);

    // Collectives.
    let mut stats: Vec<CollectiveStat> = Vec::new();
    let mut pooled = 0u64;
    for e in gpu
        .iter()
        .filter(|e| type_of(e) == KernelType::Communication)
    {
        let args = coll.get(&e.correlation);
        let mut name = args
            .and_then(|a| a.name.as_deref())
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| collective_of_name(&names[e.name as usize]));
        if !stats.iter().any(|s| s.name == name) && stats.len() >= MAX_COLLECTIVES {
            pooled += 1;
            name = "other".to_string();
        }
        let i = match stats.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                stats.push(CollectiveStat {
                    name,
                    count: 0,
                    us: 0.0,
                    bytes: None,
                    with_bytes: 0,
                });
                stats.len() - 1
            }
        };
        let s = &mut stats[i];
        s.count += 1;
        s.us += e.end - e.start;
        if let Some(b) = args.and_then(|a| a.bytes) {
            s.bytes = Some(s.bytes.unwrap_or(0.0) + b);
            s.with_bytes += 1;
        }
    }
    if pooled > 0 {
        notes.push(format!(
            "more than {MAX_COLLECTIVES} distinct collectives; {pooled} kernels are counted as \"other\""
        ));
    }
    stats.sort_by(|a, b| b.us.total_cmp(&a.us));

    let (steps_out, steps_dropped) = step_times(gpu, &type_of, launches, steps);
    Distributed {
        rank_given,
        world_size,
        kernel_types,
        comm_comp_overlap_pct,
        comm_us,
        collectives: stats,
        steps: steps_out,
        steps_dropped,
        busy: busy_timeline(gpu),
    }
}

/// A step's first start, last end, and merged computation and communication intervals
/// (events come in start order).
type StepAcc = (f64, f64, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Per step: GPU span, computation and communication unions of the work launched in it.
fn step_times(
    gpu: &[GpuEv],
    type_of: &dyn Fn(&GpuEv) -> KernelType,
    launches: &FastMap<u64, Launch>,
    steps: &[(i64, f64, f64)],
) -> (Vec<StepTime>, u64) {
    let mut ranges: Vec<(i64, f64, f64)> = steps.to_vec();
    ranges.sort_by(|a, b| a.1.total_cmp(&b.1));
    ranges.dedup_by_key(|r| r.0);
    let no_steps = ranges.is_empty();
    // Step index of each event: by the start of its launch call.
    let step_of = |e: &GpuEv| -> Option<usize> {
        if no_steps {
            return Some(0);
        }
        let t = launches.get(&e.correlation)?.ts;
        let i = ranges.partition_point(|r| r.1 <= t);
        (i > 0 && t <= ranges[i - 1].2).then(|| i - 1)
    };
    let n = if no_steps { 1 } else { ranges.len() };
    let mut acc: Vec<StepAcc> = vec![(f64::INFINITY, f64::NEG_INFINITY, Vec::new(), Vec::new()); n];
    for e in gpu {
        let Some(i) = step_of(e) else { continue };
        let a = &mut acc[i];
        a.0 = a.0.min(e.start);
        a.1 = a.1.max(e.end);
        match type_of(e) {
            KernelType::Computation => push_merged(&mut a.2, e.start, e.end),
            KernelType::Communication => push_merged(&mut a.3, e.start, e.end),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut dropped = 0u64;
    for (i, a) in acc.into_iter().enumerate() {
        if a.1 < a.0 {
            continue; // no GPU work in this step (the last one, filtered)
        }
        if out.len() >= MAX_STEPS {
            dropped += 1;
            continue;
        }
        out.push(StepTime {
            step: if no_steps { -1 } else { ranges[i].0 },
            gpu_us: a.1 - a.0,
            compute_us: union_len(&a.2),
            comm_us: union_len(&a.3),
        });
    }
    (out, dropped)
}

/// Adds an interval to a merged list whose inputs come in start order.
fn push_merged(v: &mut Vec<(f64, f64)>, s: f64, e: f64) {
    match v.last_mut() {
        Some(last) if s <= last.1 => last.1 = last.1.max(e),
        _ => v.push((s, e)),
    }
}

/// Busy fraction of the device(s) in equal buckets over the GPU window.
fn busy_timeline(gpu: &[GpuEv]) -> Vec<f64> {
    let all = merged(gpu.iter().map(|e| (e.start, e.end)));
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Vec::new();
    };
    let (start, end) = (first.0, last.1);
    if end <= start {
        return Vec::new();
    }
    let width = (end - start) / BUSY_BUCKETS as f64;
    let mut b = vec![0.0f64; BUSY_BUCKETS];
    for &(s, e) in &all {
        let lo = (((s - start) / width) as usize).min(BUSY_BUCKETS - 1);
        let hi = (((e - start) / width) as usize).min(BUSY_BUCKETS - 1);
        for (k, cell) in b.iter_mut().enumerate().take(hi + 1).skip(lo) {
            let a = start + k as f64 * width;
            let o = e.min(a + width) - s.max(a);
            if o > 0.0 {
                *cell += o / width;
            }
        }
    }
    b.into_iter().map(|x| x.min(1.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pytorch_trace::state::dtype_bytes;

    #[test]
    fn kernel_types_follow_hta() {
        assert_eq!(
            kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            KernelType::Communication
        );
        assert_eq!(
            kernel_type("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"),
            KernelType::Communication
        );
        assert_eq!(
            kernel_type("Memcpy DtoH (Device -> Pinned)"),
            KernelType::Memory
        );
        assert_eq!(kernel_type("Memset (Device)"), KernelType::Memory);
        assert_eq!(
            kernel_type("void at::native::elementwise_kernel"),
            KernelType::Computation
        );
        // HTA counts neither of these as computation.
        assert_eq!(kernel_type("cudaStreamSynchronize"), KernelType::Other);
        assert_eq!(kernel_type("fused_Memcpy_like"), KernelType::Other);
        // "nccl" without "Kernel" after it is not communication.
        assert_eq!(kernel_type("ncclGroupEnd"), KernelType::Computation);
    }

    #[test]
    fn class_names_in_hta_order() {
        assert_eq!(class_name(1), "COMPUTATION");
        assert_eq!(class_name(3), "COMPUTATION overlapping COMMUNICATION");
        assert_eq!(class_name(6), "COMMUNICATION overlapping MEMORY");
        assert_eq!(
            class_name(7),
            "COMPUTATION overlapping COMMUNICATION overlapping MEMORY"
        );
    }

    #[test]
    fn exclusive_classes_partition_the_union() {
        // comp 0–10, comm 5–20, mem 18–25
        let t = class_times(&[
            (1, vec![(0.0, 10.0)]),
            (2, vec![(5.0, 20.0)]),
            (4, vec![(18.0, 25.0)]),
        ]);
        assert_eq!(t[1], 5.0);
        assert_eq!(t[3], 5.0);
        assert_eq!(t[2], 8.0);
        assert_eq!(t[6], 2.0);
        assert_eq!(t[4], 5.0);
        assert_eq!(t.iter().sum::<f64>(), 25.0);
    }

    #[test]
    fn collective_names_and_sizes() {
        assert_eq!(
            collective_of_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            "allreduce"
        );
        assert_eq!(
            collective_of_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*)"),
            "reducescatter"
        );
        assert_eq!(collective_of_name("ncclFoo"), "unknown");
        assert_eq!(dtype_bytes("Float"), Some(4.0));
        assert_eq!(dtype_bytes("BFloat16"), Some(2.0));
        assert_eq!(dtype_bytes("Long"), Some(8.0));
        assert_eq!(dtype_bytes("Float8_e4m3fn"), Some(1.0));
        assert_eq!(dtype_bytes("ComplexFloat"), None);
    }
}
