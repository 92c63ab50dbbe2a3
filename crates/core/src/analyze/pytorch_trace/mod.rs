//! PyTorch profiler (Kineto) Chrome-trace JSON, any size.
//!
//! The document is cut into whole events by [`super::json_split`] on the reading
//! thread; a second thread parses each event from memory with a serde visitor
//! (names borrowed, not allocated) and folds it in; per event only what the
//! results need is kept: GPU intervals as 40-byte records (interned kernel
//! name, stream index, correlation id), launch times by correlation id, and
//! step markers. Everything else (args we don't use, NCCL ids above 2^63,
//! shapes, stacks) is skipped with `IgnoredAny`. Invalid UTF-8 is replaced
//! with U+FFFD before parsing (by the splitter).
//!
//! Definitions follow HolisticTraceAnalysis (HTA), `hta/analyzers/breakdown_analysis.py`:
//! * GPU events: `ph` "X" with cat `kernel`, `gpu_memcpy`, `gpu_memset` (older
//!   traces: `Kernel`, `Memcpy`, `Memset`); stream = `args.stream` (else `tid`).
//! * Temporal breakdown per rank (`distributedInfo.rank`, default 0):
//!   span = last end − first start over the GPU events *and* the `cuda_sync`
//!   events on GPU streams (HTA takes every event with a stream); busy = length
//!   of the union of the GPU intervals (synchronisation is not work); idle =
//!   span − busy, of which `sync_us` is covered by synchronisation and by no GPU
//!   event; compute = union of computation kernels; non-compute = busy − compute.
//! * Kernel categories: COMM (name contains `nccl`), MEM (memcpy/memset
//!   events, or names starting `Memcpy`/`Memset`/`dma`), COMP (the rest).
//! * Idle breakdown per stream, for each gap before a kernel: *host wait* when
//!   its launch (the CPU event with the same `args.correlation`) started after
//!   the previous kernel on that stream ended; else *kernel wait* when the gap
//!   is under 30 µs (HTA's `consecutive_kernel_delay` default of 30; its
//!   docstring says ns, but it is compared with trace times, which are µs);
//!   else *other*. Host wait is tested first, as in HTA.
//! * Launch delay = kernel start − (launch start + launch duration). It is
//!   negative when the kernel started before its launch call returned (an idle
//!   GPU picks the kernel up while the call is still running; a CUDA graph
//!   launch enqueues many kernels in one long call); such delays are counted
//!   and kept, as HTA keeps them.
//! * CUDA graphs: a kernel run by a graph launch (`cudaGraphLaunch`, as vLLM and SGLang
//!   decode) carries the launch's correlation id, so it joins that one call like any
//!   kernel joins its launch, and counts in every breakdown; `launch.graph_*` give the
//!   graph launches, their GPU events and those events' share of all GPU time.
//! * Step filter: when the trace has at least two distinct `ProfilerStep#`
//!   names, HTA keeps only GPU work whose launch started before the last step
//!   (`include_last_profiler_step=False`, its default) or before the last
//!   step ended (`True`); unlaunched GPU work is then dropped too.
//!
//! * Rounding: when any event's `ts` is a JSON float (or missing), HTA rounds every
//!   event's start up and its end down to whole µs (`hta/common/trace_parser.py`,
//!   `round_down_time_stamps`; an event shorter than a µs can end before it starts).
//!   The temporal and idle breakdowns, and the last-step filter, do the same, so they
//!   equal HTA's; their exact figures are kept beside (`exact`), and a page shows them
//!   where they differ by more than 1 %. On short kernels the two part ways: a vLLM
//!   decode trace of 13,818 kernels loses a µs or two at each, and HTA's idle time is
//!   half again the exact one.
//!
//! Our own figures (kernels, launches, idle intervals, timelines, devices) keep the
//! trace's fractional microseconds.

mod assemble;
mod breakdown;
pub mod distributed;
mod feed;
mod read;
mod state;
#[cfg(test)]
mod tests;
pub mod trace_diff;

use super::json_split::{SplitError, Splitter};
use super::{AnalyzeError, Options};
use crate::fmt::grouped;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::io::Read;

pub use feed::{GpuWork, TraceFold};

use assemble::finish;
pub use distributed::Distributed;
use read::{split_and_fold, Stop, BLOCK_BYTES, MAX_PART_BYTES};
use state::State;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 5;

/// HTA's default `consecutive_kernel_delay`: gaps below it are launch overhead.
pub const KERNEL_WAIT_THRESHOLD_US: f64 = 30.0;

/// Device and stream id of the pooled "other streams" entry.
pub const POOLED: i64 = -99;

/// HTA temporal breakdown for one rank (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Temporal {
    pub rank: i64,
    pub span_us: f64,
    pub idle_us: f64,
    /// The part of the idle time covered by `cuda_sync` events (and no GPU work).
    #[serde(default)]
    pub sync_us: f64,
    pub compute_us: f64,
    pub non_compute_us: f64,
    pub busy_us: f64,
    pub idle_pct: f64,
    pub compute_pct: f64,
    pub non_compute_pct: f64,
    /// The same figures in exact arithmetic, when the figures above are HTA's rounded
    /// ones (a trace whose times have fractions of a µs; see [`TraceAnalysis::rounded`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<ExactTemporal>,
}

/// [`Temporal`]'s figures without HTA's rounding (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactTemporal {
    pub span_us: f64,
    pub idle_us: f64,
    pub sync_us: f64,
    pub compute_us: f64,
    pub non_compute_us: f64,
    pub busy_us: f64,
}

/// [`IdleRow`]'s figures without HTA's rounding (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactIdle {
    pub host_wait_us: f64,
    pub kernel_wait_us: f64,
    pub other_us: f64,
}

/// How far HTA's rounded figure may lie from the exact one before a page shows both.
pub const EXACT_SHOWN_ABOVE: f64 = 0.01;

/// The exact value, when HTA's figure differs from it by more than [`EXACT_SHOWN_ABOVE`]
/// of it (any difference when it is zero).
pub fn exact_if_differs(hta: f64, exact: f64) -> Option<f64> {
    let diff = (hta - exact).abs();
    let differs = if exact == 0.0 {
        diff > 0.0
    } else {
        diff > EXACT_SHOWN_ABOVE * exact.abs()
    };
    differs.then_some(exact)
}

/// Per kernel name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelStat {
    pub name: String,
    /// `COMM`, `MEM` or `COMP`.
    pub category: String,
    pub count: u64,
    pub sum_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Share of the summed duration of all GPU events.
    pub pct: f64,
    /// Where its longest run starts: the trace's own `ts` (µs), to find it in Perfetto.
    #[serde(default)]
    pub longest_at_us: Option<f64>,
}

/// Totals per kernel category.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategoryStat {
    pub category: String,
    pub count: u64,
    pub sum_us: f64,
    pub pct: f64,
}

/// HTA idle breakdown for one stream (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleRow {
    pub rank: i64,
    pub device: i64,
    pub stream: i64,
    pub host_wait_us: f64,
    pub kernel_wait_us: f64,
    pub other_us: f64,
    pub kernels: u64,
    /// The stream's longest gap between two GPU events, and where it starts (the end
    /// of the event before it, as the trace's own `ts` in µs).
    #[serde(default)]
    pub longest_gap_us: f64,
    #[serde(default)]
    pub longest_gap_at_us: Option<f64>,
    /// Host wait, kernel wait and other in exact arithmetic, when the figures above
    /// are HTA's rounded ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<ExactIdle>,
}

/// Launch statistics over GPU events matched to their launch call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchStats {
    /// GPU events with a launch event of the same correlation id.
    pub matched: u64,
    pub unmatched: u64,
    /// kernel start − (launch start + launch duration).
    pub launch_delay_us: Summary,
    /// Duration of the CPU launch call.
    pub cpu_launch_us: Summary,
    /// Duration of the GPU event.
    pub gpu_duration_us: Summary,
    /// GPU events shorter than their launch call (launch-bound work).
    pub shorter_than_launch: u64,
    /// Launch calls longer than 50 µs (HTA's runtime_cutoff).
    pub launch_outliers: u64,
    /// Launch delays far above the trace's own (modified z-score above 3.5: above
    /// `delay_outlier_above_us`). HTA's fixed 100 µs cutoff says nothing on a GPU-bound
    /// trace, where the host runs ahead and every delay is the queue's length.
    pub delay_outliers: u64,
    /// The delay above which a launch is an outlier; none when the delays do not spread.
    #[serde(default)]
    pub delay_outlier_above_us: Option<f64>,
    /// Launches that started several GPU events (CUDA graphs): delays of the
    /// later events are measured to the one graph launch.
    pub multi_kernel_launches: u64,
    /// Kernels that started before their launch call returned (negative delay).
    #[serde(default)]
    pub negative_delays: u64,
    /// Of those, the kernels run by a CUDA-graph launch.
    #[serde(default)]
    pub negative_delays_in_graphs: u64,
    /// Memory copies and sets that started before their call returned: a synchronous
    /// copy (`cudaMemcpy`, `hipMemcpyWithStream`) runs inside its call.
    #[serde(default)]
    pub negative_delay_copies: u64,
    /// CUDA-graph launches (`cudaGraphLaunch` and kin) whose GPU work was kept.
    #[serde(default)]
    pub graph_launches: u64,
    /// GPU events (kernels, copies, sets) run by those graph launches.
    #[serde(default)]
    pub graph_gpu_events: u64,
    /// Their summed duration (µs).
    #[serde(default)]
    pub graph_gpu_us: f64,
    /// Their share of the summed duration of all GPU events (0–1); none without GPU work.
    #[serde(default)]
    pub graph_share: Option<f64>,
}

/// A GPU seen in the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub device: i64,
    pub name: Option<String>,
    pub total_global_mem: Option<u64>,
    pub num_sms: Option<u64>,
    pub gpu_events: u64,
    pub streams: u64,
    pub busy_us: f64,
    pub span_us: f64,
    pub busy_ratio: Option<f64>,
}

/// Event counts by kind, to say plainly what the trace holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventCounts {
    pub total: u64,
    pub kernels: u64,
    pub memcpy: u64,
    pub memset: u64,
    pub runtime: u64,
    pub cpu_ops: u64,
    pub python_functions: u64,
    pub user_annotations: u64,
    pub profiler_ranges: u64,
    pub syncs: u64,
}

/// Result of the trace analyzer.
/// How busy one stream was over the trace, in equal time buckets (for a timeline picture).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamTimeline {
    pub device: i64,
    pub stream: i64,
    /// Start of the first bucket (trace µs).
    pub start_us: f64,
    pub bucket_us: f64,
    /// Busy fraction (0–1) of each bucket: kernel, memcpy and memset time on this stream.
    pub busy: Vec<f64>,
}

/// What came immediately before a GPU idle interval, most specific first: a
/// synchronisation covering its start, a `ProfilerStep` boundary inside it, a memory
/// copy or set as the last GPU work, the next kernel launched only after the GPU went
/// idle (the host was late), the next kernel launched before (it started late), or no
/// launch event to tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preceded {
    Sync,
    StepEnd,
    Memcpy,
    HostWait,
    LaunchGap,
    Other,
}

impl Preceded {
    pub const ALL: [Preceded; 6] = [
        Preceded::Sync,
        Preceded::StepEnd,
        Preceded::Memcpy,
        Preceded::HostWait,
        Preceded::LaunchGap,
        Preceded::Other,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            Preceded::Sync => "sync",
            Preceded::StepEnd => "step_end",
            Preceded::Memcpy => "memcpy",
            Preceded::HostWait => "host_wait",
            Preceded::LaunchGap => "launch_gap",
            Preceded::Other => "other",
        }
    }

    /// Plain words for a page.
    pub fn label(self) -> &'static str {
        match self {
            Preceded::Sync => "a host–device synchronisation",
            Preceded::StepEnd => "the end of a step",
            Preceded::Memcpy => "a memory copy or set",
            Preceded::HostWait => "host wait (the next launch came late)",
            Preceded::LaunchGap => "a launch gap (launched, started late)",
            Preceded::Other => "nothing the trace names",
        }
    }
}

/// One interval during which a GPU ran nothing (no kernel, copy or set on any of its
/// streams), in trace time: add `base_time_ns` / 1000 for the absolute clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleInterval {
    pub device: i64,
    /// The stream of the last GPU work before the interval.
    pub stream: i64,
    pub start_us: f64,
    pub dur_us: f64,
    pub preceded_by: Preceded,
}

/// Idle intervals shorter than this are not kept one by one (they are launch overhead,
/// and there can be one per kernel).
pub const IDLE_INTERVAL_MIN_US: f64 = 50.0;
/// At most this many idle intervals are kept: the longest ones.
pub const MAX_IDLE_INTERVALS: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceAnalysis {
    pub rank: i64,
    pub temporal: Vec<Temporal>,
    /// Top kernels by total time (`Options::top_kernels`).
    pub kernels: Vec<KernelStat>,
    pub kernel_categories: Vec<CategoryStat>,
    pub idle: Vec<IdleRow>,
    pub launch: LaunchStats,
    /// busy / span of the rank.
    pub gpu_busy_ratio: Option<f64>,
    pub devices: Vec<DeviceInfo>,
    pub events: EventCounts,
    /// Distinct `ProfilerStep#` names seen.
    pub profiler_steps: u64,
    /// GPU events left out by the last-step filter.
    pub excluded_gpu_events: u64,
    pub base_time_ns: Option<u64>,
    /// The trace's times have fractions of a µs and the temporal and idle breakdowns
    /// round them as HTA does (each start up, each end down to a whole µs); their exact
    /// figures are kept beside (`exact`).
    #[serde(default)]
    pub rounded: bool,
    /// The earliest `ts` (µs) of a complete event: where Perfetto's timeline starts,
    /// so `ts − first_ts_us` is the time Perfetto shows.
    #[serde(default)]
    pub first_ts_us: Option<f64>,
    pub notes: Vec<String>,
    /// Busy fraction over time per stream.
    #[serde(default)]
    pub timeline: Vec<StreamTimeline>,
    /// First GPU work start and last end (trace µs), the window the idle intervals lie in.
    #[serde(default)]
    pub gpu_window_us: Option<[f64; 2]>,
    /// GPU idle intervals of at least [`IDLE_INTERVAL_MIN_US`] per device (the longest
    /// [`MAX_IDLE_INTERVALS`]), in start order.
    #[serde(default)]
    pub idle_intervals: Vec<IdleInterval>,
    /// How many such intervals the trace had (kept or not), and the idle time of those
    /// not kept.
    #[serde(default)]
    pub idle_intervals_found: u64,
    #[serde(default)]
    pub idle_intervals_dropped_us: f64,
    /// Kernel types, communication overlap, collectives and steps (see [`distributed`]);
    /// absent from analyses made before it existed.
    #[serde(default)]
    pub distributed: Option<Distributed>,
}

/// Analyze a (decompressed) Kineto trace.
pub fn analyze<R: Read>(reader: R, opts: &Options) -> Result<TraceAnalysis, AnalyzeError> {
    let mut st = State::default();
    let mut notes = Vec::new();
    let mut splitter = Splitter::new(reader, b"traceEvents", BLOCK_BYTES, MAX_PART_BYTES);
    match split_and_fold(&mut splitter, &mut st) {
        Ok(()) => {}
        // A trace cut off mid-write still has useful events before the cut.
        Err(Stop::Split(SplitError::Truncated { at })) if st.counts.events > 0 => {
            notes.push(format!(
                "the trace ends early (line {}, column {}); analyzed the {} events before the cut",
                at.line,
                at.column,
                grouped(st.counts.events)
            ));
        }
        Err(Stop::Split(e)) => return Err(e.into()),
        Err(Stop::Fold(e)) => return Err(e),
    }
    if splitter.replaced() > 0 {
        notes.push(format!(
            "{} invalid UTF-8 sequences were replaced with U+FFFD",
            grouped(splitter.replaced())
        ));
    }
    Ok(finish(st, opts, notes))
}
