//! What is kept while a trace streams by, and how one event is folded into it: GPU
//! intervals, launches by correlation id, interned kernel names, step markers, counts.

use super::POOLED;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Distinct `ProfilerStep` names tracked (a trace has one per step).
const MAX_STEP_NAMES: usize = 100_000;

const NO_CORRELATION: u64 = u64::MAX;

/// Distinct (device, stream) pairs kept apart; more are pooled (see [`State::stream_of`]).
pub(super) const MAX_STREAMS: usize = 1024;

/// Distinct kernel names kept; more are counted under one pooled name.
pub(super) const MAX_KERNEL_NAMES: usize = 50_000;

/// Event category, from `cat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cat {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    CpuOp,
    PythonFunction,
    UserAnnotation,
    GpuUserAnnotation,
    ProfilerRange,
    Sync,
    Other,
}

impl Cat {
    pub(super) fn from_str(s: &str) -> Cat {
        match s {
            "kernel" | "Kernel" => Cat::Kernel,
            "gpu_memcpy" | "Memcpy" => Cat::Memcpy,
            "gpu_memset" | "Memset" => Cat::Memset,
            "cuda_runtime" | "Runtime" | "cuda_driver" | "Driver" => Cat::Runtime,
            "cpu_op" | "Operator" => Cat::CpuOp,
            "python_function" => Cat::PythonFunction,
            "user_annotation" => Cat::UserAnnotation,
            "gpu_user_annotation" => Cat::GpuUserAnnotation,
            "cuda_profiler_range" => Cat::ProfilerRange,
            "cuda_sync" => Cat::Sync,
            _ => Cat::Other,
        }
    }

    fn is_gpu(self) -> bool {
        matches!(self, Cat::Kernel | Cat::Memcpy | Cat::Memset)
    }
}

/// The maps filled once per event: foldhash (seeded per process) instead of SipHash,
/// which took a tenth of the parsing thread's time on launch ids.
pub(super) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One GPU interval (40 bytes).
#[derive(Clone, Copy, Debug)]
pub(super) struct GpuEv {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) correlation: u64,
    pub(super) name: u32,
    pub(super) stream: u32,
    pub(super) is_mem: bool,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Launch {
    pub(super) ts: f64,
    pub(super) dur: f64,
    /// A CUDA-graph launch (`cudaGraphLaunch`, `cuGraphLaunch`, `hipGraphLaunch`): one
    /// call that runs every kernel of the graph, all with its correlation id.
    pub(super) graph: bool,
}

/// Whether a runtime or driver call launches a whole CUDA (or HIP) graph.
pub(super) fn is_graph_launch(name: &str) -> bool {
    let name = name.strip_suffix("_v10000").unwrap_or(name);
    matches!(
        name,
        "cudaGraphLaunch" | "cuGraphLaunch" | "hipGraphLaunch" | "cudaGraphLaunch_ptsz"
    )
}

/// Interned strings (kernel names), at most [`MAX_KERNEL_NAMES`] of them.
#[derive(Default)]
pub(super) struct Interner {
    pub(super) index: FastMap<String, u32>,
    pub(super) names: Vec<String>,
    /// Events whose name came after the limit (counted under [`OTHER_KERNELS`]).
    pub(super) pooled: u64,
}

/// The name kernels past [`MAX_KERNEL_NAMES`] distinct names are counted under.
pub(super) const OTHER_KERNELS: &str = "(other kernels: too many distinct names)";

impl Interner {
    fn intern_pooled(&mut self) -> u32 {
        if let Some(&i) = self.index.get(OTHER_KERNELS) {
            return i;
        }
        let i = self.names.len() as u32;
        self.index.insert(OTHER_KERNELS.to_string(), i);
        self.names.push(OTHER_KERNELS.to_string());
        i
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        if self.names.len() >= MAX_KERNEL_NAMES {
            self.pooled += 1;
            return self.intern_pooled();
        }
        let i = self.names.len() as u32;
        self.index.insert(s.to_string(), i);
        self.names.push(s.to_string());
        i
    }
}

#[derive(Default)]
pub(super) struct Counts {
    pub(super) events: u64,
    pub(super) complete: u64,
    pub(super) kernels: u64,
    pub(super) memcpy: u64,
    pub(super) memset: u64,
    pub(super) runtime: u64,
    pub(super) cpu_ops: u64,
    pub(super) python: u64,
    pub(super) user_annotations: u64,
    pub(super) profiler_ranges: u64,
    pub(super) syncs: u64,
    pub(super) hip_runtime: u64,
}

/// Everything kept while streaming.
#[derive(Default)]
pub(super) struct State {
    pub(super) gpu: Vec<GpuEv>,
    /// `cuda_sync` events on a GPU stream: (start, end, correlation).
    pub(super) syncs: Vec<(f64, f64, u64)>,
    pub(super) launches: FastMap<u64, Launch>,
    pub(super) names: Interner,
    pub(super) stream_index: FastMap<(i64, i64), u32>,
    pub(super) streams: Vec<(i64, i64)>,
    /// GPU events that fell into the pooled "other streams" entry.
    pub(super) pooled_streams: u64,
    pub(super) step_names: HashSet<String>,
    pub(super) last_step_start: Option<f64>,
    pub(super) last_step_end: Option<f64>,
    /// End of every `ProfilerStep` annotation (at most [`MAX_STEP_NAMES`]), to say when an
    /// idle interval holds a step boundary.
    pub(super) step_ends: Vec<f64>,
    pub(super) counts: Counts,
    /// Some event's `ts` is a JSON float or missing: HTA rounds the trace's times.
    pub(super) float_ts: bool,
    pub(super) rank: Option<i64>,
    pub(super) base_time_ns: Option<u64>,
    /// Earliest `ts` of a complete event.
    pub(super) first_ts: Option<f64>,
    pub(super) device_props: Vec<Value>,
    /// `distributedInfo.world_size`.
    pub(super) world_size: Option<i64>,
    /// Each `ProfilerStep#N` annotation: (N, start, end), at most [`MAX_STEP_NAMES`].
    pub(super) step_ranges: Vec<(i64, f64, f64)>,
    /// What NCCL kernels' arguments say (collective, bytes), by correlation id.
    pub(super) coll: FastMap<u64, CollArgs>,
    /// Reused buffer for the current event's name.
    pub(super) name_buf: String,
    pub(super) cat_buf: String,
}

impl State {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fold_event(
        &mut self,
        is_complete: bool,
        cat: Cat,
        pid: Id,
        tid: Id,
        ts: Option<f64>,
        dur: Option<f64>,
        args: Args,
    ) {
        self.counts.events += 1;
        if !is_complete {
            return;
        }
        let (Some(ts), Some(dur)) = (ts, dur) else {
            return;
        };
        self.counts.complete += 1;
        if ts.is_finite() && self.first_ts.is_none_or(|f| ts < f) {
            self.first_ts = Some(ts);
        }
        let dur = dur.max(0.0);
        if cat.is_gpu() {
            match cat {
                Cat::Kernel => self.counts.kernels += 1,
                Cat::Memcpy => self.counts.memcpy += 1,
                _ => self.counts.memset += 1,
            }
            let device = args.device.or(pid.num()).unwrap_or(0);
            let stream = args.stream.or(tid.num()).unwrap_or(-1);
            let stream_idx = self.stream_of(device, stream);
            let name = self.names.intern(&self.name_buf);
            if cat == Cat::Kernel && (args.collective.is_some() || args.nelems.is_some()) {
                if let Some(c) = args.correlation {
                    let bytes = match (args.nelems, args.dtype.as_deref().and_then(dtype_bytes)) {
                        (Some(n), Some(size)) if n >= 0 => Some(n as f64 * size),
                        _ => None,
                    };
                    self.coll.insert(
                        c,
                        CollArgs {
                            name: args.collective.clone(),
                            bytes,
                        },
                    );
                }
            }
            self.gpu.push(GpuEv {
                start: ts,
                end: ts + dur,
                correlation: args.correlation.unwrap_or(NO_CORRELATION),
                name,
                stream: stream_idx,
                is_mem: cat != Cat::Kernel,
            });
            return;
        }
        match cat {
            Cat::Runtime => {
                self.counts.runtime += 1;
                if self.name_buf.starts_with("hip") {
                    self.counts.hip_runtime += 1;
                }
            }
            Cat::CpuOp => self.counts.cpu_ops += 1,
            Cat::PythonFunction => self.counts.python += 1,
            Cat::UserAnnotation | Cat::GpuUserAnnotation => self.counts.user_annotations += 1,
            Cat::ProfilerRange => self.counts.profiler_ranges += 1,
            Cat::Sync => {
                self.counts.syncs += 1;
                if args.stream.is_some_and(|s| s >= 0) {
                    let corr = args.correlation.unwrap_or(NO_CORRELATION);
                    self.syncs.push((ts, ts + dur, corr));
                }
            }
            _ => {}
        }
        // HTA joins kernels to any CPU-side event with the same correlation;
        // in practice the runtime/driver launch call.
        if let Some(c) = args.correlation {
            if !matches!(cat, Cat::Sync | Cat::GpuUserAnnotation | Cat::ProfilerRange) {
                let graph = is_graph_launch(&self.name_buf);
                self.launches.insert(c, Launch { ts, dur, graph });
            }
        }
        if self.name_buf.contains("ProfilerStep") {
            if self.step_names.len() < MAX_STEP_NAMES && !self.step_names.contains(&self.name_buf) {
                self.step_names.insert(self.name_buf.clone());
            }
            self.last_step_start = Some(self.last_step_start.map_or(ts, |s| s.max(ts)));
            let end = ts + dur;
            self.last_step_end = Some(self.last_step_end.map_or(end, |s| s.max(end)));
            if self.step_ends.len() < MAX_STEP_NAMES {
                self.step_ends.push(end);
                if let Some(n) =
                    step_number(&self.name_buf).filter(|_| cat != Cat::GpuUserAnnotation)
                {
                    self.step_ranges.push((n, ts, end));
                }
            }
        }
    }
}

impl State {
    /// The index of a (device, stream) pair. Past [`MAX_STREAMS`] distinct pairs, events
    /// share one pooled "other streams" entry (device and stream [`POOLED`]), so a trace
    /// with a stream per event cannot grow memory or the stored analysis per stream.
    fn stream_of(&mut self, device: i64, stream: i64) -> u32 {
        if let Some(&i) = self.stream_index.get(&(device, stream)) {
            return i;
        }
        if self.streams.len() >= MAX_STREAMS {
            self.pooled_streams += 1;
            if let Some(&i) = self.stream_index.get(&(POOLED, POOLED)) {
                return i;
            }
            let i = self.streams.len() as u32;
            self.stream_index.insert((POOLED, POOLED), i);
            self.streams.push((POOLED, POOLED));
            return i;
        }
        let i = self.streams.len() as u32;
        self.stream_index.insert((device, stream), i);
        self.streams.push((device, stream));
        i
    }
}

/// pid/tid/stream/device values: numbers, or strings ("Spans", "stream 7", "0x0").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Id {
    Num(i64),
    Text,
    Missing,
}

impl Id {
    pub(super) fn num(self) -> Option<i64> {
        match self {
            Id::Num(n) => Some(n),
            _ => None,
        }
    }
}

#[derive(Default)]
pub(super) struct Args {
    pub(super) correlation: Option<u64>,
    pub(super) stream: Option<i64>,
    pub(super) device: Option<i64>,
    /// NCCL kernels: `Collective name`, `In msg nelems`, `dtype`.
    pub(super) collective: Option<String>,
    pub(super) nelems: Option<i64>,
    pub(super) dtype: Option<String>,
}

/// N of `ProfilerStep#N` (HTA's `ProfilerStep\s*#\s*(\d+)`).
pub(super) fn step_number(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep")?.trim_start();
    let digits = rest.strip_prefix('#')?.trim_start();
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// What the reader kept of an NCCL kernel's arguments.
#[derive(Clone, Debug, Default)]
pub(super) struct CollArgs {
    pub(super) name: Option<String>,
    pub(super) bytes: Option<f64>,
}

/// Bytes per element of an NCCL `dtype` argument as PyTorch writes it.
pub(super) fn dtype_bytes(dtype: &str) -> Option<f64> {
    let d = dtype.trim().to_ascii_lowercase();
    Some(match d.as_str() {
        "float" | "float32" | "int" | "int32" | "uint32" => 4.0,
        "double" | "float64" | "long" | "int64" | "uint64" => 8.0,
        "half" | "float16" | "bfloat16" | "short" | "int16" => 2.0,
        "byte" | "char" | "int8" | "uint8" | "bool" => 1.0,
        _ if d.starts_with("float8") => 1.0,
        _ => return None,
    })
}
