//! The [`TraceAnalysis`] assembled from the folded state: the last-step filter, the
//! breakdowns, the device list and the notes that explain what was left out.

use super::super::Options;
use super::breakdown::{
    exact_temporal, idle_breakdown, idle_intervals, kernel_breakdown, launch_stats, round_like_hta,
    shown_idle_rows, stream_timelines, temporal_breakdown,
};
use super::distributed::{distributed, Distributed};
use super::state::{Counts, GpuEv, State, MAX_KERNEL_NAMES, MAX_STREAMS, OTHER_KERNELS};
use super::{
    DeviceInfo, EventCounts, ExactIdle, IdleRow, LaunchStats, Temporal, TraceAnalysis,
    IDLE_INTERVAL_MIN_US, POOLED,
};
use crate::fmt::{format_number, grouped};
use serde_json::Value;
use std::collections::HashMap;

pub(super) fn finish(mut st: State, opts: &Options, mut notes: Vec<String>) -> TraceAnalysis {
    let rank = st.rank.unwrap_or(0);
    if st.rank.is_none() {
        notes.push("no distributedInfo.rank in the trace; rank 0 assumed".to_string());
    }
    if st.counts.hip_runtime > 0 {
        notes.push("AMD ROCm trace (HIP runtime)".to_string());
    }
    let excluded = keep_work_before_last_step(&mut st, opts, &mut notes);
    let events = event_counts(&st.counts);

    let mut gpu = std::mem::take(&mut st.gpu);
    if gpu.is_empty() {
        notes.push(describe_without_gpu(&events, excluded));
        return TraceAnalysis {
            rank,
            temporal: Vec::new(),
            kernels: Vec::new(),
            kernel_categories: Vec::new(),
            idle: Vec::new(),
            launch: LaunchStats::default(),
            gpu_busy_ratio: None,
            devices: device_list(&st, &[]),
            events,
            profiler_steps: st.step_names.len() as u64,
            excluded_gpu_events: excluded,
            base_time_ns: st.base_time_ns,
            rounded: false,
            first_ts_us: st.first_ts,
            notes,
            timeline: Vec::new(),
            gpu_window_us: None,
            idle_intervals: Vec::new(),
            idle_intervals_found: 0,
            idle_intervals_dropped_us: 0.0,
            distributed: Some(Distributed {
                rank_given: st.rank.is_some(),
                world_size: st.world_size,
                ..Distributed::default()
            }),
        };
    }
    gpu.sort_unstable_by(|a, b| a.start.total_cmp(&b.start));
    let mut syncs = std::mem::take(&mut st.syncs);
    // With fractional times, the exact breakdowns first; HTA's rounded ones below.
    let exact = st.float_ts.then(|| {
        (
            temporal_breakdown(rank, &gpu, &syncs, &st.names, &mut Vec::new()),
            idle_breakdown(rank, &gpu, &st),
        )
    });
    let (idle_kept, idle_found, idle_dropped_us) = idle_intervals(&gpu, &st, &syncs);
    if idle_found > idle_kept.len() as u64 {
        notes.push(format!(
            "{} GPU idle intervals of {} µs or more; the longest {} are kept for attribution",
            grouped(idle_found),
            IDLE_INTERVAL_MIN_US,
            grouped(idle_kept.len() as u64)
        ));
    }
    let gpu_window_us = Some([
        gpu[0].start,
        gpu.iter().map(|e| e.end).fold(f64::NEG_INFINITY, f64::max),
    ]);
    let top = if opts.top_kernels == 0 {
        50
    } else {
        opts.top_kernels
    };
    let (kernels, kernel_categories) = kernel_breakdown(&gpu, &st.names, top);
    let launch = launch_stats(&gpu, &st.launches, &mut notes);
    let timeline = stream_timelines(&gpu, &st.streams, &mut notes);
    let devices_exact = device_list(&st, &gpu);
    // The collectives, steps and busy timeline keep the exact times; the kernel-type
    // time and the overlap (HTA's) are taken from the rounded ones below.
    let distributed_exact = exact
        .is_some()
        .then(|| distributed_of(&st, &gpu, &mut notes));
    if exact.is_some() {
        round_like_hta(&mut gpu, &mut syncs, &mut st.launches);
    }
    let mut temporal = temporal_breakdown(rank, &gpu, &syncs, &st.names, &mut notes);
    let mut idle = idle_breakdown(rank, &gpu, &st);
    if let Some((exact_t, exact_idle)) = exact {
        notes.push(rounding_note(&temporal, &exact_t));
        temporal.exact = Some(exact_temporal(&exact_t));
        for (r, x) in idle.iter_mut().zip(exact_idle) {
            r.exact = Some(ExactIdle {
                host_wait_us: x.host_wait_us,
                kernel_wait_us: x.kernel_wait_us,
                other_us: x.other_us,
            });
        }
    }
    let devices = with_stream_counts(devices_exact, &idle);
    let idle = shown_idle_rows(idle, &mut notes);
    if st.pooled_streams > 0 {
        notes.push(format!(
            "the trace names more than {} GPU streams; {} events on the streams after those \
             are pooled as \"other streams\" (device and stream {POOLED})",
            grouped(MAX_STREAMS as u64),
            grouped(st.pooled_streams)
        ));
    }
    if st.names.pooled > 0 {
        notes.push(format!(
            "the trace names more than {} distinct kernels; {} events after those are counted \
             as \"{OTHER_KERNELS}\"",
            grouped(MAX_KERNEL_NAMES as u64),
            grouped(st.names.pooled)
        ));
    }
    let distributed = match distributed_exact {
        Some(exact) => {
            let hta = distributed_of(&st, &gpu, &mut Vec::new());
            Distributed {
                kernel_types: hta.kernel_types,
                comm_comp_overlap_pct: hta.comm_comp_overlap_pct,
                comm_us: hta.comm_us,
                ..exact
            }
        }
        None => distributed_of(&st, &gpu, &mut notes),
    };
    TraceAnalysis {
        distributed: Some(distributed),
        timeline,
        rank,
        gpu_busy_ratio: (temporal.span_us > 0.0).then(|| temporal.busy_us / temporal.span_us),
        temporal: vec![temporal],
        kernels,
        kernel_categories,
        idle,
        launch,
        devices,
        events,
        profiler_steps: st.step_names.len() as u64,
        excluded_gpu_events: excluded,
        base_time_ns: st.base_time_ns,
        rounded: st.float_ts,
        first_ts_us: st.first_ts,
        notes,
        gpu_window_us,
        idle_intervals: idle_kept,
        idle_intervals_found: idle_found,
        idle_intervals_dropped_us: idle_dropped_us,
    }
}

/// HTA's last-step filter (see module docs): drops GPU work (and synchronisation)
/// launched in or after the last `ProfilerStep`; how many GPU events it dropped.
fn keep_work_before_last_step(st: &mut State, opts: &Options, notes: &mut Vec<String>) -> u64 {
    if st.step_names.len() == 1 {
        notes.push("only one ProfilerStep in the trace: all GPU work is analyzed".to_string());
    }
    if st.step_names.len() < 2 {
        return 0;
    }
    let launches = &st.launches;
    // With fractional times, on HTA's rounded times (module docs).
    let round = st.float_ts;
    let (limit, inclusive) = if opts.include_last_profiler_step {
        let end = st.last_step_end.unwrap_or(f64::INFINITY);
        (if round { end.floor() } else { end }, true)
    } else {
        let start = st.last_step_start.unwrap_or(f64::INFINITY);
        (if round { start.ceil() } else { start }, false)
    };
    let before = st.gpu.len();
    let kept = |correlation: u64| match launches.get(&correlation) {
        Some(l) => {
            let ts = if round { l.ts.ceil() } else { l.ts };
            if inclusive {
                ts <= limit
            } else {
                ts < limit
            }
        }
        None => false,
    };
    st.gpu.retain(|e| kept(e.correlation));
    st.syncs.retain(|s| kept(s.2));
    let excluded = (before - st.gpu.len()) as u64;
    if excluded > 0 {
        let what = if opts.include_last_profiler_step {
            "launched after the last ProfilerStep ended or never launched from the CPU"
        } else {
            "launched in the last ProfilerStep (often cut short; include_last_profiler_step keeps it) or never launched from the CPU"
        };
        notes.push(format!("{} GPU events left out: {what}", grouped(excluded)));
    }
    excluded
}

fn event_counts(counts: &Counts) -> EventCounts {
    EventCounts {
        total: counts.events,
        kernels: counts.kernels,
        memcpy: counts.memcpy,
        memset: counts.memset,
        runtime: counts.runtime,
        cpu_ops: counts.cpu_ops,
        python_functions: counts.python,
        user_annotations: counts.user_annotations,
        profiler_ranges: counts.profiler_ranges,
        syncs: counts.syncs,
    }
}

/// Plain words for a trace without GPU work.
fn describe_without_gpu(ev: &EventCounts, excluded: u64) -> String {
    let mut parts = Vec::new();
    let mut add = |n: u64, what: &str| {
        if n > 0 {
            parts.push(format!("{} {what}", grouped(n)));
        }
    };
    add(ev.cpu_ops, "CPU ops");
    add(ev.python_functions, "Python functions");
    add(ev.runtime, "CUDA/HIP runtime calls");
    add(ev.user_annotations, "user annotations");
    add(
        ev.profiler_ranges,
        "cuda_profiler_range events (CUPTI range-profiler counters per kernel, without a GPU timeline)",
    );
    let held = if parts.is_empty() {
        format!(
            "{} events, none of them CPU ops or GPU work",
            grouped(ev.total)
        )
    } else {
        parts.join(", ")
    };
    if excluded > 0 {
        format!("no GPU kernels left after the step filter; the trace holds {held}")
    } else {
        format!("no GPU kernels: {held} only")
    }
}

/// The distributed view of the (filtered) GPU work.
fn distributed_of(st: &State, gpu: &[GpuEv], notes: &mut Vec<String>) -> Distributed {
    distributed(
        gpu,
        &st.names.names,
        &st.launches,
        &st.step_ranges,
        &st.coll,
        st.rank.is_some(),
        st.world_size,
        notes,
    )
}

/// Each device's stream count: the idle table's rows on it (one per stream).
fn with_stream_counts(mut devices: Vec<DeviceInfo>, idle: &[IdleRow]) -> Vec<DeviceInfo> {
    for d in &mut devices {
        d.streams = idle.iter().filter(|r| r.device == d.device).count() as u64;
    }
    devices
}

/// What the rounding did to the temporal breakdown, in words.
fn rounding_note(hta: &Temporal, exact: &Temporal) -> String {
    format!(
        "the trace's times have fractions of a µs: the temporal and idle breakdowns round \
         each start up and each end down to a whole µs, as HTA does, and so equal HTA's; \
         in exact arithmetic the GPU is busy {} µs of {} (HTA: {} of {}), idle {} µs \
         (HTA: {}); an exact figure is shown beside HTA's where they differ by more than 1 %",
        format_number(exact.busy_us, 1),
        format_number(exact.span_us, 1),
        format_number(hta.busy_us, 1),
        format_number(hta.span_us, 1),
        format_number(exact.idle_us, 1),
        format_number(hta.idle_us, 1),
    )
}

fn device_list(st: &State, gpu: &[GpuEv]) -> Vec<DeviceInfo> {
    // Busy union per device in one pass (events are sorted by start).
    struct Acc {
        count: u64,
        busy: f64,
        cur: Option<(f64, f64)>,
        first: f64,
        last: f64,
    }
    let mut acc: HashMap<i64, Acc> = HashMap::new();
    for e in gpu {
        let dev = st.streams[e.stream as usize].0;
        let a = acc.entry(dev).or_insert(Acc {
            count: 0,
            busy: 0.0,
            cur: None,
            first: e.start,
            last: e.end,
        });
        a.count += 1;
        a.last = a.last.max(e.end);
        match a.cur.as_mut() {
            Some((_, ce)) if e.start <= *ce => *ce = ce.max(e.end),
            _ => {
                if let Some((cs, ce)) = a.cur {
                    a.busy += ce - cs;
                }
                a.cur = Some((e.start, e.end));
            }
        }
    }
    let prop = |dev: i64| -> Option<&Value> {
        st.device_props
            .iter()
            .find(|p| p.get("id").and_then(Value::as_i64) == Some(dev))
    };
    let mut out: Vec<DeviceInfo> = acc
        .into_iter()
        .map(|(dev, mut a)| {
            if let Some((cs, ce)) = a.cur.take() {
                a.busy += ce - cs;
            }
            let span = a.last - a.first;
            let p = prop(dev);
            DeviceInfo {
                device: dev,
                name: p
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .map(String::from),
                total_global_mem: p
                    .and_then(|p| p.get("totalGlobalMem"))
                    .and_then(Value::as_u64),
                num_sms: p.and_then(|p| p.get("numSms")).and_then(Value::as_u64),
                gpu_events: a.count,
                streams: 0,
                busy_us: a.busy,
                span_us: span,
                busy_ratio: (span > 0.0).then(|| a.busy / span),
            }
        })
        .collect();
    out.sort_by_key(|d| d.device);
    if out.is_empty() {
        // No GPU work: list the devices the trace describes.
        for p in &st.device_props {
            if let Some(dev) = p.get("id").and_then(Value::as_i64) {
                out.push(DeviceInfo {
                    device: dev,
                    name: p.get("name").and_then(Value::as_str).map(String::from),
                    total_global_mem: p.get("totalGlobalMem").and_then(Value::as_u64),
                    num_sms: p.get("numSms").and_then(Value::as_u64),
                    gpu_events: 0,
                    streams: 0,
                    busy_us: 0.0,
                    span_us: 0.0,
                    busy_ratio: None,
                });
            }
        }
    }
    out
}
