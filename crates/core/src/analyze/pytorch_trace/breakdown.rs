//! The HTA breakdowns over the GPU intervals: temporal, per kernel and category,
//! idle time per stream, launch delays, GPU idle intervals and stream timelines.

use super::super::stats::union_length_sorted;
use super::distributed::{kernel_type, KernelType};
use super::state::{FastMap, GpuEv, Interner, Launch, State};
use super::{
    CategoryStat, ExactIdle, ExactTemporal, IdleInterval, IdleRow, KernelStat, LaunchStats,
    Preceded, StreamTimeline, Temporal, IDLE_INTERVAL_MIN_US, KERNEL_WAIT_THRESHOLD_US,
    MAX_IDLE_INTERVALS, POOLED,
};
use crate::fmt::grouped;
use crate::stats::{upper_outlier_threshold, Summary};
use std::collections::HashMap;

/// HTA's `runtime_cutoff`: a launch call longer than this is an outlier.
const LAUNCH_OUTLIER_US: f64 = 50.0;

/// Streams drawn in the timeline and listed in the idle table; the rest are summed into
/// one "other streams" row (and said so in the notes).
pub(super) const SHOWN_STREAMS: usize = 32;

/// Buckets per stream timeline: fine enough to see phases, small enough to store.
pub(super) const TIMELINE_BUCKETS: usize = 120;

/// The idle table's rows: the [`SHOWN_STREAMS`] streams with the most events, and the
/// rest summed into one "other streams" row.
pub(super) fn shown_idle_rows(mut idle: Vec<IdleRow>, notes: &mut Vec<String>) -> Vec<IdleRow> {
    if idle.len() <= SHOWN_STREAMS {
        return idle;
    }
    idle.sort_by_key(|r| std::cmp::Reverse(r.kernels));
    let rest = idle.split_off(SHOWN_STREAMS - 1);
    notes.push(format!(
        "idle time: the {} busiest streams are listed; {} more are summed as \"other streams\"",
        SHOWN_STREAMS - 1,
        grouped(rest.len() as u64)
    ));
    let mut other = IdleRow {
        rank: rest[0].rank,
        device: POOLED,
        stream: POOLED,
        host_wait_us: 0.0,
        kernel_wait_us: 0.0,
        other_us: 0.0,
        kernels: 0,
        longest_gap_us: 0.0,
        longest_gap_at_us: None,
        exact: None,
    };
    for r in rest {
        if r.longest_gap_us > other.longest_gap_us {
            other.longest_gap_us = r.longest_gap_us;
            other.longest_gap_at_us = r.longest_gap_at_us;
        }
        other.host_wait_us += r.host_wait_us;
        other.kernel_wait_us += r.kernel_wait_us;
        other.other_us += r.other_us;
        if let Some(x) = r.exact {
            let sum = other.exact.get_or_insert(ExactIdle {
                host_wait_us: 0.0,
                kernel_wait_us: 0.0,
                other_us: 0.0,
            });
            sum.host_wait_us += x.host_wait_us;
            sum.kernel_wait_us += x.kernel_wait_us;
            sum.other_us += x.other_us;
        }
        other.kernels += r.kernels;
    }
    idle.push(other);
    idle.sort_by_key(|r| (r.device, r.stream));
    idle
}

/// Per-stream busy fractions over `TIMELINE_BUCKETS` equal buckets spanning all GPU work,
/// for the [`SHOWN_STREAMS`] busiest streams.
pub(super) fn stream_timelines(
    gpu: &[GpuEv],
    streams: &[(i64, i64)],
    notes: &mut Vec<String>,
) -> Vec<StreamTimeline> {
    let start = gpu.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
    let end = gpu.iter().map(|e| e.end).fold(f64::NEG_INFINITY, f64::max);
    if gpu.is_empty() || end <= start {
        return Vec::new();
    }
    // Which streams to draw: the busiest, by summed event time.
    let mut total = vec![0.0f64; streams.len()];
    for e in gpu {
        total[e.stream as usize] += e.end - e.start;
    }
    let mut ranked: Vec<usize> = (0..streams.len()).filter(|&i| total[i] > 0.0).collect();
    ranked.sort_by(|&a, &b| total[b].total_cmp(&total[a]));
    if ranked.len() > SHOWN_STREAMS {
        notes.push(format!(
            "timeline: the {SHOWN_STREAMS} busiest of {} streams are drawn",
            grouped(ranked.len() as u64)
        ));
        ranked.truncate(SHOWN_STREAMS);
    }
    let mut row_of = vec![usize::MAX; streams.len()];
    for (row, &i) in ranked.iter().enumerate() {
        row_of[i] = row;
    }
    let width = (end - start) / TIMELINE_BUCKETS as f64;
    let mut busy = vec![vec![0.0f64; TIMELINE_BUCKETS]; ranked.len()];
    for e in gpu {
        let Some(row) = busy.get_mut(row_of[e.stream as usize]) else {
            continue;
        };
        let first = (((e.start - start) / width) as usize).min(TIMELINE_BUCKETS - 1);
        let last = (((e.end - start) / width) as usize).min(TIMELINE_BUCKETS - 1);
        for (b, cell) in row.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = start + b as f64 * width;
            let overlap = e.end.min(lo + width) - e.start.max(lo);
            if overlap > 0.0 {
                *cell += overlap / width;
            }
        }
    }
    let mut out: Vec<StreamTimeline> = ranked
        .iter()
        .map(|&i| streams[i])
        .zip(busy)
        .filter(|(_, b)| b.iter().any(|v| *v > 0.0))
        .map(|((device, stream), b)| StreamTimeline {
            device,
            stream,
            start_us: start,
            bucket_us: width,
            busy: b.into_iter().map(|v| v.min(1.0)).collect(),
        })
        .collect();
    out.sort_by_key(|t| (t.device, t.stream));
    out
}

/// Every interval of at least [`IDLE_INTERVAL_MIN_US`] between GPU work on one device
/// (the union over its streams), with what preceded it; the longest
/// [`MAX_IDLE_INTERVALS`] are kept, in start order. Also returns how many there were
/// and how much idle time the dropped ones held.
pub(super) fn idle_intervals(
    gpu: &[GpuEv],
    st: &State,
    syncs: &[(f64, f64, u64)],
) -> (Vec<IdleInterval>, u64, f64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // Synchronisation by start, with the latest end so far, to ask "was a sync running at t".
    let mut sync_spans: Vec<(f64, f64)> = syncs.iter().map(|s| (s.0, s.1)).collect();
    sync_spans.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut reach = Vec::with_capacity(sync_spans.len());
    let mut far = f64::NEG_INFINITY;
    for s in &sync_spans {
        far = far.max(s.1);
        reach.push(far);
    }
    let sync_at = |t: f64| {
        let n = sync_spans.partition_point(|s| s.0 <= t);
        n > 0 && reach[n - 1] > t
    };
    let mut step_ends = st.step_ends.clone();
    step_ends.sort_unstable_by(f64::total_cmp);
    let step_end_in = |a: f64, b: f64| {
        let i = step_ends.partition_point(|&e| e < a);
        step_ends.get(i).is_some_and(|&e| e <= b)
    };
    // Per device: where its work so far ends, and the event that ends it.
    let mut last: HashMap<i64, (f64, usize)> = HashMap::new();
    let mut kept: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut found: Vec<IdleInterval> = Vec::new();
    let (mut total, mut dropped_us) = (0u64, 0.0f64);
    for (i, e) in gpu.iter().enumerate() {
        let device = st.streams[e.stream as usize].0;
        let Some(&(end, prev)) = last.get(&device) else {
            last.insert(device, (e.end, i));
            continue;
        };
        let gap = e.start - end;
        if gap >= IDLE_INTERVAL_MIN_US {
            let p = &gpu[prev];
            let launch = st.launches.get(&e.correlation).map(|l| l.ts);
            let preceded_by = if sync_at(end) {
                Preceded::Sync
            } else if step_end_in(end, e.start) {
                Preceded::StepEnd
            } else if p.is_mem {
                Preceded::Memcpy
            } else {
                match launch {
                    Some(t) if t > end => Preceded::HostWait,
                    Some(_) => Preceded::LaunchGap,
                    None => Preceded::Other,
                }
            };
            total += 1;
            let iv = IdleInterval {
                device,
                stream: st.streams[p.stream as usize].1,
                start_us: end,
                dur_us: gap,
                preceded_by,
            };
            // Non-negative floats order like their bit patterns.
            kept.push(Reverse((gap.to_bits(), found.len())));
            found.push(iv);
            if kept.len() > MAX_IDLE_INTERVALS {
                if let Some(Reverse((bits, _))) = kept.pop() {
                    dropped_us += f64::from_bits(bits);
                }
            }
            // Keep `found` from growing past twice the limit: compact to the kept ones.
            if found.len() >= 2 * MAX_IDLE_INTERVALS {
                let mut keep: Vec<usize> = kept.iter().map(|r| r.0 .1).collect();
                keep.sort_unstable();
                found = keep.iter().map(|&k| found[k].clone()).collect();
                kept = found
                    .iter()
                    .enumerate()
                    .map(|(k, iv)| Reverse((iv.dur_us.to_bits(), k)))
                    .collect();
            }
        }
        if e.end > end {
            last.insert(device, (e.end, i));
        }
    }
    let mut keep: Vec<usize> = kept.into_iter().map(|r| r.0 .1).collect();
    keep.sort_unstable();
    let mut out: Vec<IdleInterval> = keep.into_iter().map(|k| found[k].clone()).collect();
    out.sort_by(|a, b| {
        a.start_us
            .total_cmp(&b.start_us)
            .then(a.device.cmp(&b.device))
    });
    (out, total, dropped_us)
}

pub(super) fn category(name: &str, is_mem: bool) -> &'static str {
    if name.to_ascii_lowercase().contains("nccl") {
        "COMM"
    } else if is_mem
        || name.starts_with("Memcpy")
        || name.starts_with("Memset")
        || name.starts_with("dma")
    {
        "MEM"
    } else {
        "COMP"
    }
}

pub(super) fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// Span, busy, idle (with its synchronisation part), compute and non-compute time
/// of GPU events sorted by start; synchronisation on GPU streams counts in the span.
pub(super) fn temporal_breakdown(
    rank: i64,
    gpu: &[GpuEv],
    syncs: &[(f64, f64, u64)],
    names: &Interner,
    notes: &mut Vec<String>,
) -> Temporal {
    let first = syncs.iter().map(|s| s.0).fold(gpu[0].start, f64::min);
    let last = gpu
        .iter()
        .map(|e| e.end)
        .chain(syncs.iter().map(|s| s.1))
        .fold(f64::NEG_INFINITY, f64::max);
    let span = last - first;
    let is_comp: Vec<bool> = names
        .names
        .iter()
        .map(|n| kernel_type(n) == KernelType::Computation)
        .collect();
    let busy = union_length_sorted(gpu.iter().map(|e| (e.start, e.end)));
    let compute = union_length_sorted(
        gpu.iter()
            .filter(|e| is_comp[e.name as usize])
            .map(|e| (e.start, e.end)),
    );
    let sync_idle = if syncs.is_empty() {
        0.0
    } else {
        let mut all: Vec<(f64, f64)> = gpu.iter().map(|e| (e.start, e.end)).collect();
        all.extend(syncs.iter().map(|s| (s.0, s.1)));
        all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        union_length_sorted(all.into_iter()) - busy
    };
    if !syncs.is_empty() {
        notes.push(format!(
            "{} cuda_sync events on GPU streams count in the span as idle time, as in HTA: {} µs of the idle time is synchronisation",
            grouped(syncs.len() as u64),
            crate::fmt::format_number(sync_idle, 1)
        ));
    }
    Temporal {
        rank,
        span_us: span,
        idle_us: span - busy,
        sync_us: sync_idle,
        compute_us: compute,
        non_compute_us: busy - compute,
        busy_us: busy,
        idle_pct: pct(span - busy, span),
        compute_pct: pct(compute, span),
        non_compute_pct: pct(busy - compute, span),
        exact: None,
    }
}

/// HTA's rounding of a trace with fractional times (module docs): every start up and
/// every end down to a whole µs, GPU work, synchronisation and launch calls alike. GPU
/// work stays sorted by start (rounding up keeps the order).
pub(super) fn round_like_hta(
    gpu: &mut [GpuEv],
    syncs: &mut [(f64, f64, u64)],
    launches: &mut FastMap<u64, Launch>,
) {
    for e in gpu.iter_mut() {
        (e.start, e.end) = (e.start.ceil(), e.end.floor());
    }
    for s in syncs.iter_mut() {
        (s.0, s.1) = (s.0.ceil(), s.1.floor());
    }
    for l in launches.values_mut() {
        let start = l.ts.ceil();
        l.dur = (l.ts + l.dur).floor() - start;
        l.ts = start;
    }
}

/// The exact figures of a temporal breakdown, kept beside HTA's rounded ones.
pub(super) fn exact_temporal(t: &Temporal) -> ExactTemporal {
    ExactTemporal {
        span_us: t.span_us,
        idle_us: t.idle_us,
        sync_us: t.sync_us,
        compute_us: t.compute_us,
        non_compute_us: t.non_compute_us,
        busy_us: t.busy_us,
    }
}

/// Time per kernel name (memcpy and memset keep their own names), the `top` largest,
/// and per category (COMM, MEM, COMP), largest first.
pub(super) fn kernel_breakdown(
    gpu: &[GpuEv],
    names: &Interner,
    top: usize,
) -> (Vec<KernelStat>, Vec<CategoryStat>) {
    struct Acc {
        count: u64,
        sum: f64,
        min: f64,
        max: f64,
        max_at: f64,
        is_mem: bool,
    }
    let mut by_name: HashMap<u32, Acc> = HashMap::new();
    let mut total_dur = 0.0;
    for e in gpu {
        let d = e.end - e.start;
        total_dur += d;
        let a = by_name.entry(e.name).or_insert(Acc {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            max_at: e.start,
            is_mem: e.is_mem,
        });
        a.count += 1;
        a.sum += d;
        a.min = a.min.min(d);
        if d > a.max {
            a.max = d;
            a.max_at = e.start;
        }
    }
    let mut kernels: Vec<KernelStat> = by_name
        .iter()
        .map(|(&id, a)| {
            let name = &names.names[id as usize];
            KernelStat {
                name: name.clone(),
                category: category(name, a.is_mem).to_string(),
                count: a.count,
                sum_us: a.sum,
                mean_us: a.sum / a.count as f64,
                min_us: a.min,
                max_us: a.max,
                pct: pct(a.sum, total_dur),
                longest_at_us: Some(a.max_at),
            }
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.sum_us
            .total_cmp(&a.sum_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut categories: Vec<CategoryStat> = Vec::new();
    for k in &kernels {
        match categories.iter_mut().find(|c| c.category == k.category) {
            Some(c) => {
                c.count += k.count;
                c.sum_us += k.sum_us;
            }
            None => categories.push(CategoryStat {
                category: k.category.clone(),
                count: k.count,
                sum_us: k.sum_us,
                pct: 0.0,
            }),
        }
    }
    for c in &mut categories {
        c.pct = pct(c.sum_us, total_dur);
    }
    categories.sort_by(|a, b| b.sum_us.total_cmp(&a.sum_us));
    kernels.truncate(top);
    (kernels, categories)
}

/// Idle time per stream by cause (host wait, kernel wait, other): each stream's
/// events walked in start order.
pub(super) fn idle_breakdown(rank: i64, gpu: &[GpuEv], st: &State) -> Vec<IdleRow> {
    let mut order: Vec<u32> = (0..gpu.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&gpu[a as usize], &gpu[b as usize]);
        x.stream.cmp(&y.stream).then(x.start.total_cmp(&y.start))
    });
    let mut idle: Vec<IdleRow> = Vec::new();
    let mut prev: Option<&GpuEv> = None;
    for &i in &order {
        let e = &gpu[i as usize];
        let (device, stream) = st.streams[e.stream as usize];
        match prev {
            Some(p) if p.stream == e.stream => {
                let gap = (e.start - p.end).max(0.0);
                let row = idle.last_mut().expect("row exists for this stream");
                row.kernels += 1;
                if gap > row.longest_gap_us {
                    row.longest_gap_us = gap;
                    row.longest_gap_at_us = Some(p.end);
                }
                let launch_ts = st.launches.get(&e.correlation).map(|l| l.ts);
                if launch_ts.is_some_and(|t| t > p.end) {
                    row.host_wait_us += gap;
                } else if gap < KERNEL_WAIT_THRESHOLD_US {
                    row.kernel_wait_us += gap;
                } else {
                    row.other_us += gap;
                }
            }
            _ => idle.push(IdleRow {
                rank,
                device,
                stream,
                host_wait_us: 0.0,
                kernel_wait_us: 0.0,
                other_us: 0.0,
                kernels: 1,
                longest_gap_us: 0.0,
                longest_gap_at_us: None,
                exact: None,
            }),
        }
        prev = Some(e);
    }
    idle
}

/// Launch delay, CPU launch time and GPU time of every GPU event matched to its
/// launch call by correlation id, with the outliers and what the notes must say.
pub(super) fn launch_stats(
    gpu: &[GpuEv],
    launches: &FastMap<u64, Launch>,
    notes: &mut Vec<String>,
) -> LaunchStats {
    let mut delays = Vec::new();
    let mut cpu = Vec::new();
    let mut gpu_d = Vec::new();
    let mut launch = LaunchStats::default();
    let mut corr_seen: Vec<u64> = Vec::new();
    let mut graph_corr: Vec<u64> = Vec::new();
    let mut all_us = 0.0;
    let mut kernels_matched = 0u64;
    for e in gpu {
        all_us += e.end - e.start;
        match launches.get(&e.correlation) {
            Some(l) => {
                launch.matched += 1;
                kernels_matched += u64::from(!e.is_mem);
                if l.graph {
                    launch.graph_gpu_events += 1;
                    launch.graph_gpu_us += e.end - e.start;
                    graph_corr.push(e.correlation);
                }
                let delay = e.start - (l.ts + l.dur);
                let d = e.end - e.start;
                delays.push(delay);
                if delay < 0.0 {
                    if e.is_mem {
                        launch.negative_delay_copies += 1;
                    } else {
                        launch.negative_delays += 1;
                        launch.negative_delays_in_graphs += u64::from(l.graph);
                    }
                }
                cpu.push(l.dur);
                gpu_d.push(d);
                if d < l.dur {
                    launch.shorter_than_launch += 1;
                }
                if l.dur > LAUNCH_OUTLIER_US {
                    launch.launch_outliers += 1;
                }
                corr_seen.push(e.correlation);
            }
            None => launch.unmatched += 1,
        }
    }
    corr_seen.sort_unstable();
    launch.multi_kernel_launches = corr_seen
        .chunk_by(|a, b| a == b)
        .filter(|g| g.len() > 1)
        .count() as u64;
    graph_corr.sort_unstable();
    graph_corr.dedup();
    launch.graph_launches = graph_corr.len() as u64;
    launch.graph_share = (all_us > 0.0).then(|| launch.graph_gpu_us / all_us);
    launch.delay_outlier_above_us = upper_outlier_threshold(&delays);
    if let Some(limit) = launch.delay_outlier_above_us {
        launch.delay_outliers = delays.iter().filter(|d| **d > limit).count() as u64;
    }
    launch.launch_delay_us = Summary::from_values(&mut delays);
    launch.cpu_launch_us = Summary::from_values(&mut cpu);
    launch.gpu_duration_us = Summary::from_values(&mut gpu_d);
    if launch.negative_delays > 0 {
        let graphs = match launch.negative_delays_in_graphs {
            0 => String::new(),
            n if n == launch.negative_delays => {
                "; all of them were run by CUDA-graph launches, one long call that enqueues \
                 many kernels"
                    .to_string()
            }
            n => format!(
                "; {} of them were run by CUDA-graph launches, one long call that enqueues \
                 many kernels",
                grouped(n)
            ),
        };
        notes.push(format!(
            "{} of {} kernels started before their launch call returned (negative launch \
             delay): an idle GPU picks a kernel up while the call is still running{graphs}; \
             the delay is kept signed, as HTA does",
            grouped(launch.negative_delays),
            grouped(kernels_matched)
        ));
    }
    if launch.negative_delay_copies > 0 {
        notes.push(format!(
            "{} memory copies or sets started before their call returned: a synchronous copy \
             runs inside its call (these are not counted as kernels above)",
            grouped(launch.negative_delay_copies)
        ));
    }
    if launch.delay_outliers > 0 {
        if let Some(limit) = launch.delay_outlier_above_us {
            notes.push(format!(
                "{} of {} launch delays are outliers: above {} µs, far out of this trace's own \
                 (modified z-score above {}: median and median absolute deviation)",
                grouped(launch.delay_outliers),
                grouped(launch.matched),
                crate::fmt::format_number(limit, 1),
                crate::stats::outlier::MODIFIED_Z_LIMIT
            ));
        }
    }
    if launch.multi_kernel_launches > 0 {
        notes.push(format!(
            "{} launches started more than one GPU event (CUDA graphs): their later kernels' launch delay is measured to the graph launch",
            grouped(launch.multi_kernel_launches)
        ));
    }
    if launch.unmatched > 0 {
        notes.push(format!(
            "{} GPU events have no launch event with the same correlation id",
            grouped(launch.unmatched)
        ));
    }
    launch
}
