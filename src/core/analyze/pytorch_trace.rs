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
//! * Step filter: when the trace has at least two distinct `ProfilerStep#`
//!   names, HTA keeps only GPU work whose launch started before the last step
//!   (`include_last_profiler_step=False`, its default) or before the last
//!   step ended (`True`); unlaunched GPU work is then dropped too.
//!
//! Differences from HTA, on purpose: timestamps keep their fractional
//! microseconds (HTA rounds starts up and ends down to whole µs).

use super::json_split::{Batch, PartKind, SplitError, Splitter};
use super::stats::union_length_sorted;
use super::{out_of_range, AnalyzeError, Options, MAX_MAGNITUDE};
use crate::fmt::grouped;
use crate::stats::Summary;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 2;

/// HTA's default `consecutive_kernel_delay`: gaps below it are launch overhead.
pub const KERNEL_WAIT_THRESHOLD_US: f64 = 30.0;

/// HTA's `runtime_cutoff`: a launch call longer than this is an outlier.
const LAUNCH_OUTLIER_US: f64 = 50.0;
/// HTA's `launch_delay_cutoff`.
const DELAY_OUTLIER_US: f64 = 100.0;

/// Distinct `ProfilerStep` names tracked (a trace has one per step).
const MAX_STEP_NAMES: usize = 100_000;

const NO_CORRELATION: u64 = u64::MAX;

/// Event category, from `cat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
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
    fn from_str(s: &str) -> Cat {
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
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One GPU interval (40 bytes).
#[derive(Clone, Copy, Debug)]
struct GpuEv {
    start: f64,
    end: f64,
    correlation: u64,
    name: u32,
    stream: u32,
    is_mem: bool,
}

#[derive(Clone, Copy, Debug)]
struct Launch {
    ts: f64,
    dur: f64,
}

/// Interned strings (kernel names), at most [`MAX_KERNEL_NAMES`] of them.
#[derive(Default)]
struct Interner {
    index: FastMap<String, u32>,
    names: Vec<String>,
    /// Events whose name came after the limit (counted under [`OTHER_KERNELS`]).
    pooled: u64,
}

/// The name kernels past [`MAX_KERNEL_NAMES`] distinct names are counted under.
const OTHER_KERNELS: &str = "(other kernels: too many distinct names)";

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
struct Counts {
    events: u64,
    complete: u64,
    kernels: u64,
    memcpy: u64,
    memset: u64,
    runtime: u64,
    cpu_ops: u64,
    python: u64,
    user_annotations: u64,
    profiler_ranges: u64,
    syncs: u64,
    hip_runtime: u64,
}

/// Everything kept while streaming.
#[derive(Default)]
struct State {
    gpu: Vec<GpuEv>,
    /// `cuda_sync` events on a GPU stream: (start, end, correlation).
    syncs: Vec<(f64, f64, u64)>,
    launches: FastMap<u64, Launch>,
    names: Interner,
    stream_index: FastMap<(i64, i64), u32>,
    streams: Vec<(i64, i64)>,
    /// GPU events that fell into the pooled "other streams" entry.
    pooled_streams: u64,
    step_names: HashSet<String>,
    last_step_start: Option<f64>,
    last_step_end: Option<f64>,
    /// End of every `ProfilerStep` annotation (at most [`MAX_STEP_NAMES`]), to say when an
    /// idle interval holds a step boundary.
    step_ends: Vec<f64>,
    counts: Counts,
    rank: Option<i64>,
    base_time_ns: Option<u64>,
    /// Earliest `ts` of a complete event.
    first_ts: Option<f64>,
    device_props: Vec<Value>,
    /// Reused buffer for the current event's name.
    name_buf: String,
    cat_buf: String,
}

/// A number, numeric string or hex string ("0x0") as i64.
fn parse_int_text(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    s.parse::<i64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.fract() == 0.0)
            .map(|x| x as i64)
    })
}

/// pid/tid/stream/device values: numbers, or strings ("Spans", "stream 7", "0x0").
#[derive(Clone, Copy, Debug, PartialEq)]
enum Id {
    Num(i64),
    Text,
    Missing,
}

impl Id {
    fn num(self) -> Option<i64> {
        match self {
            Id::Num(n) => Some(n),
            _ => None,
        }
    }
}

struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = Id;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Id, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an id")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Num(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Id, E> {
        Ok(i64::try_from(v).map_or(Id::Text, Id::Num))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Id, E> {
        Ok(if v.fract() == 0.0 && v.abs() < 9.0e18 {
            Id::Num(v as i64)
        } else {
            Id::Text
        })
    }
    fn visit_str<E>(self, v: &str) -> Result<Id, E> {
        Ok(parse_int_text(v).map_or(Id::Text, Id::Num))
    }
    fn visit_unit<E>(self) -> Result<Id, E> {
        Ok(Id::Missing)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Id, E> {
        Ok(Id::Text)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Id, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Id::Text)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Id, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Id::Text)
    }
}

/// ts/dur: numbers (often floats with ns precision) or numeric strings. A value no clock
/// gives (beyond ±[`MAX_MAGNITUDE`] µs) is refused, naming the field: summed into the
/// breakdowns it would turn every figure of the trace into infinity.
struct TimeSeed(&'static str);

impl<'de> DeserializeSeed<'de> for TimeSeed {
    type Value = Option<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        d.deserialize_any(TimeVisitor(self.0))
    }
}

struct TimeVisitor(&'static str);

impl TimeVisitor {
    fn checked<E: de::Error>(&self, v: f64) -> Result<Option<f64>, E> {
        if v.is_finite() && v.abs() > MAX_MAGNITUDE {
            return Err(E::custom(out_of_range(self.0, v, "µs")));
        }
        Ok(v.is_finite().then_some(v))
    }
}

impl<'de> Visitor<'de> for TimeVisitor {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time in microseconds")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<f64>, E> {
        self.checked(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<f64>, E> {
        self.checked(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        self.checked(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        match v.trim().parse::<f64>() {
            Ok(x) => self.checked(x),
            Err(_) => Ok(None),
        }
    }
    fn visit_unit<E>(self) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<f64>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<f64>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<f64>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// Copies a string value into a reused buffer (no allocation per event).
struct StrInto<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for StrInto<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrInto<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(v);
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.clear();
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.0.clear();
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        self.0.clear();
        Ok(())
    }
}

/// Keys of an event we look at.
enum EventKey {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EventKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event key")
            }
            fn visit_str<E>(self, v: &str) -> Result<EventKey, E> {
                Ok(match v {
                    "ph" => EventKey::Ph,
                    "cat" => EventKey::Cat,
                    "name" => EventKey::Name,
                    "pid" => EventKey::Pid,
                    "tid" => EventKey::Tid,
                    "ts" => EventKey::Ts,
                    "dur" => EventKey::Dur,
                    "args" => EventKey::Args,
                    _ => EventKey::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

enum ArgKey {
    Correlation,
    Stream,
    Device,
    Other,
}

impl<'de> Deserialize<'de> for ArgKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ArgKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an args key")
            }
            fn visit_str<E>(self, v: &str) -> Result<ArgKey, E> {
                Ok(match v {
                    "correlation" => ArgKey::Correlation,
                    "stream" => ArgKey::Stream,
                    "device" => ArgKey::Device,
                    _ => ArgKey::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

#[derive(Default)]
struct Args {
    correlation: Option<u64>,
    stream: Option<i64>,
    device: Option<i64>,
}

struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = Args;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Args, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = Args;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("event args")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args, A::Error> {
        let mut a = Args::default();
        while let Some(k) = map.next_key::<ArgKey>()? {
            match k {
                ArgKey::Correlation => {
                    a.correlation = map
                        .next_value_seed(IdSeed)?
                        .num()
                        .filter(|c| *c >= 0)
                        .map(|c| c as u64)
                }
                ArgKey::Stream => a.stream = map.next_value_seed(IdSeed)?.num(),
                ArgKey::Device => a.device = map.next_value_seed(IdSeed)?.num(),
                ArgKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }
    fn visit_unit<E>(self) -> Result<Args, E> {
        Ok(Args::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Args, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Args::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Args, E> {
        Ok(Args::default())
    }
}

/// One element of `traceEvents`, folded into the state.
struct EventSeed<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        let mut is_complete = false;
        let mut cat = Cat::Other;
        let mut pid = Id::Missing;
        let mut tid = Id::Missing;
        let mut ts = None;
        let mut dur = None;
        let mut args = Args::default();
        st.name_buf.clear();
        while let Some(k) = map.next_key::<EventKey>()? {
            match k {
                EventKey::Ph => {
                    map.next_value_seed(StrInto(&mut st.cat_buf))?;
                    is_complete = st.cat_buf == "X";
                }
                EventKey::Cat => {
                    map.next_value_seed(StrInto(&mut st.cat_buf))?;
                    cat = Cat::from_str(&st.cat_buf);
                }
                EventKey::Name => map.next_value_seed(StrInto(&mut st.name_buf))?,
                EventKey::Pid => pid = map.next_value_seed(IdSeed)?,
                EventKey::Tid => tid = map.next_value_seed(IdSeed)?,
                EventKey::Ts => ts = map.next_value_seed(TimeSeed("ts"))?,
                EventKey::Dur => dur = map.next_value_seed(TimeSeed("dur"))?,
                EventKey::Args => args = map.next_value_seed(ArgsSeed)?,
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.fold_event(is_complete, cat, pid, tid, ts, dur, args);
        Ok(())
    }
    // Non-object elements are ignored (counted as events only).
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.0.counts.events += 1;
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
}

impl State {
    #[allow(clippy::too_many_arguments)]
    fn fold_event(
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
                self.launches.insert(c, Launch { ts, dur });
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

/// Distinct (device, stream) pairs kept apart; more are pooled (see [`State::stream_of`]).
const MAX_STREAMS: usize = 1024;
/// Device and stream id of the pooled "other streams" entry.
pub const POOLED: i64 = -99;
/// Distinct kernel names kept; more are counted under one pooled name.
const MAX_KERNEL_NAMES: usize = 50_000;
/// Streams drawn in the timeline and listed in the idle table; the rest are summed into
/// one "other streams" row (and said so in the notes).
const SHOWN_STREAMS: usize = 32;

/// `traceEvents`: fold each element as it is parsed.
struct EventsSeed<'a>(&'a mut State);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(EventSeed(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Results

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
    /// Launch delays above 100 µs (HTA's launch_delay_cutoff).
    pub delay_outliers: u64,
    /// Launches that started several GPU events (CUDA graphs): delays of the
    /// later events are measured to the one graph launch.
    pub multi_kernel_launches: u64,
    /// Kernels that started before their launch call returned (negative delay).
    #[serde(default)]
    pub negative_delays: u64,
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

/// Buckets per stream timeline: fine enough to see phases, small enough to store.
const TIMELINE_BUCKETS: usize = 120;

/// The idle table's rows: the [`SHOWN_STREAMS`] streams with the most events, and the
/// rest summed into one "other streams" row.
fn shown_idle_rows(mut idle: Vec<IdleRow>, notes: &mut Vec<String>) -> Vec<IdleRow> {
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
    };
    for r in rest {
        if r.longest_gap_us > other.longest_gap_us {
            other.longest_gap_us = r.longest_gap_us;
            other.longest_gap_at_us = r.longest_gap_at_us;
        }
        other.host_wait_us += r.host_wait_us;
        other.kernel_wait_us += r.kernel_wait_us;
        other.other_us += r.other_us;
        other.kernels += r.kernels;
    }
    idle.push(other);
    idle.sort_by_key(|r| (r.device, r.stream));
    idle
}

/// Per-stream busy fractions over `TIMELINE_BUCKETS` equal buckets spanning all GPU work,
/// for the [`SHOWN_STREAMS`] busiest streams.
fn stream_timelines(
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

/// Every interval of at least [`IDLE_INTERVAL_MIN_US`] between GPU work on one device
/// (the union over its streams), with what preceded it; the longest
/// [`MAX_IDLE_INTERVALS`] are kept, in start order. Also returns how many there were
/// and how much idle time the dropped ones held.
fn idle_intervals(
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
}

fn category(name: &str, is_mem: bool) -> &'static str {
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

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
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

/// Bytes read at a time.
const BLOCK_BYTES: usize = 1 << 20;
/// The largest single event (or top-level field) accepted. Real events are a few
/// hundred bytes (a kernel with long template names a few KiB); the cap bounds what one
/// hostile part (a giant string, number or nesting) costs the reader, a few buffers of it.
const MAX_PART_BYTES: usize = 32 << 20;

enum Stop {
    /// Reading or splitting the document stopped (I/O, syntax, the input ended early).
    Split(SplitError),
    /// A part failed to parse.
    Fold(AnalyzeError),
}

/// Two stages on two threads: this one reads (and decompresses) the input and cuts it
/// into whole events; a second parses each event from memory and folds it into `st`.
/// Buffers go back and forth, so memory is a few blocks whatever the trace's size.
fn split_and_fold<R: Read>(splitter: &mut Splitter<R>, st: &mut State) -> Result<(), Stop> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(3);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let folder = scope.spawn(move || -> Result<(), AnalyzeError> {
            for batch in full_rx {
                fold_batch(st, &batch)?;
                let _ = empty_tx.send(batch);
            }
            Ok(())
        });
        let mut split = Ok(());
        loop {
            let batch = empty_rx.try_recv().unwrap_or_default();
            match splitter.next_batch(batch) {
                Ok(Some(b)) => {
                    // A closed channel: the folder stopped on an error, reported below.
                    if full_tx.send(b).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    split = Err(e);
                    break;
                }
            }
        }
        drop(full_tx);
        let folded = folder
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // The folder's error comes first in the document (it has every part before the
        // splitter's stop).
        folded.map_err(Stop::Fold)?;
        split.map_err(Stop::Split)
    })
}

fn fold_batch(st: &mut State, batch: &Batch) -> Result<(), AnalyzeError> {
    for part in &batch.parts {
        let bytes = batch.value(part);
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let folded = match part.kind {
            PartKind::Element => EventSeed(st).deserialize(&mut de),
            PartKind::Field => fold_field(st, batch.key(part), &mut de),
        };
        folded.map_err(|e| AnalyzeError::json_in_part(e, part.at))?;
    }
    Ok(())
}

/// A top-level field other than the event array.
fn fold_field(
    st: &mut State,
    key: &[u8],
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
) -> Result<(), serde_json::Error> {
    match key {
        // Not an array (else the splitter would have handed out its elements).
        b"traceEvents" => EventsSeed(st).deserialize(de)?,
        b"distributedInfo" => {
            let v = Value::deserialize(de)?;
            st.rank = v.get("rank").and_then(|r| match r {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            });
        }
        b"deviceProperties" => {
            if let Value::Array(a) = Value::deserialize(de)? {
                st.device_props = a.into_iter().take(1024).collect();
            }
        }
        b"baseTimeNanoseconds" => {
            let v = Value::deserialize(de)?;
            st.base_time_ns = v.as_u64().or_else(|| v.as_f64().map(|x| x as u64));
        }
        _ => {
            IgnoredAny::deserialize(de)?;
        }
    }
    Ok(())
}

fn finish(mut st: State, opts: &Options, mut notes: Vec<String>) -> TraceAnalysis {
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
            devices: device_list(&st, &[], &[]),
            events,
            profiler_steps: st.step_names.len() as u64,
            excluded_gpu_events: excluded,
            base_time_ns: st.base_time_ns,
            first_ts_us: st.first_ts,
            notes,
            timeline: Vec::new(),
            gpu_window_us: None,
            idle_intervals: Vec::new(),
            idle_intervals_found: 0,
            idle_intervals_dropped_us: 0.0,
        };
    }
    gpu.sort_unstable_by(|a, b| a.start.total_cmp(&b.start));
    let syncs = std::mem::take(&mut st.syncs);
    let temporal = temporal_breakdown(rank, &gpu, &syncs, &st.names, &mut notes);
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
    let idle = idle_breakdown(rank, &gpu, &st);
    let launch = launch_stats(&gpu, &st.launches, &mut notes);
    let devices = device_list(&st, &gpu, &idle);
    let idle = shown_idle_rows(idle, &mut notes);
    let timeline = stream_timelines(&gpu, &st.streams, &mut notes);
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
    TraceAnalysis {
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
    let (limit, inclusive) = if opts.include_last_profiler_step {
        (st.last_step_end.unwrap_or(f64::INFINITY), true)
    } else {
        (st.last_step_start.unwrap_or(f64::INFINITY), false)
    };
    let before = st.gpu.len();
    let kept = |correlation: u64| match launches.get(&correlation) {
        Some(l) if inclusive => l.ts <= limit,
        Some(l) => l.ts < limit,
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

/// Span, busy, idle (with its synchronisation part), compute and non-compute time
/// of GPU events sorted by start; synchronisation on GPU streams counts in the span.
fn temporal_breakdown(
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
        .map(|n| category(n, false) == "COMP")
        .collect();
    let busy = union_length_sorted(gpu.iter().map(|e| (e.start, e.end)));
    let compute = union_length_sorted(
        gpu.iter()
            .filter(|e| !e.is_mem && is_comp[e.name as usize])
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
    }
}

/// Time per kernel name (memcpy and memset keep their own names), the `top` largest,
/// and per category (COMM, MEM, COMP), largest first.
fn kernel_breakdown(
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
fn idle_breakdown(rank: i64, gpu: &[GpuEv], st: &State) -> Vec<IdleRow> {
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
            }),
        }
        prev = Some(e);
    }
    idle
}

/// Launch delay, CPU launch time and GPU time of every GPU event matched to its
/// launch call by correlation id, with the outliers and what the notes must say.
fn launch_stats(
    gpu: &[GpuEv],
    launches: &FastMap<u64, Launch>,
    notes: &mut Vec<String>,
) -> LaunchStats {
    let mut delays = Vec::new();
    let mut cpu = Vec::new();
    let mut gpu_d = Vec::new();
    let mut launch = LaunchStats::default();
    let mut corr_seen: Vec<u64> = Vec::new();
    for e in gpu {
        match launches.get(&e.correlation) {
            Some(l) => {
                launch.matched += 1;
                let delay = e.start - (l.ts + l.dur);
                let d = e.end - e.start;
                delays.push(delay);
                if delay < 0.0 {
                    launch.negative_delays += 1;
                }
                cpu.push(l.dur);
                gpu_d.push(d);
                if d < l.dur {
                    launch.shorter_than_launch += 1;
                }
                if l.dur > LAUNCH_OUTLIER_US {
                    launch.launch_outliers += 1;
                }
                if delay > DELAY_OUTLIER_US {
                    launch.delay_outliers += 1;
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
    launch.launch_delay_us = Summary::from_values(&mut delays);
    launch.cpu_launch_us = Summary::from_values(&mut cpu);
    launch.gpu_duration_us = Summary::from_values(&mut gpu_d);
    if launch.negative_delays > 0 {
        notes.push(format!(
            "{} of {} kernels started before their launch call returned (negative launch delay): an idle GPU picks a kernel up while the call is still running, and a CUDA graph launch enqueues many kernels in one long call; the delay is kept signed, as HTA does",
            grouped(launch.negative_delays),
            grouped(launch.matched)
        ));
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

fn device_list(st: &State, gpu: &[GpuEv], idle: &[IdleRow]) -> Vec<DeviceInfo> {
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
                streams: idle.iter().filter(|r| r.device == dev).count() as u64,
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{gzip, open, real_fixtures};
    use super::*;
    use serde_json::json;

    fn run(doc: &Value, opts: &Options) -> TraceAnalysis {
        analyze(doc.to_string().as_bytes(), opts).unwrap()
    }

    fn kernel(name: &str, ts: f64, dur: f64, stream: i64, corr: u64) -> Value {
        json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": stream, "correlation": corr}})
    }

    fn launch(ts: f64, dur: f64, corr: u64) -> Value {
        json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
               "ts": ts, "dur": dur, "args": {"correlation": corr}})
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// HTA 0.5.0's temporal breakdown on the real fixtures, produced with
    /// `pip install HolisticTraceAnalysis` and, per fixture in its own folder:
    /// `TraceAnalysis(trace_dir=d, include_last_profiler_step=True).get_temporal_breakdown(visualize=False)`
    /// (the same numbers with `False`). Columns: rank, idle, compute,
    /// non-compute, kernel_time (= span), all in µs. HTA raises on the other
    /// two fixtures, which hold no GPU kernels.
    const HTA_TEMPORAL: &[(&str, i64, f64, f64, f64, f64)] = &[
        (
            "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            0,
            8780.0,
            96.0,
            35.0,
            8911.0,
        ),
        (
            "hta__trace_file_list__inference_rank_1.json.gz",
            1,
            1599.0,
            30.0,
            0.0,
            1629.0,
        ),
    ];

    #[test]
    fn longest_runs_and_gaps_say_where_to_look() {
        let doc = json!({"traceEvents": [
            launch(900.0, 5.0, 1),
            kernel("gemm", 1000.0, 50.0, 7, 1),
            kernel("gemm", 1100.0, 80.0, 7, 2),
            kernel("softmax", 1500.0, 10.0, 7, 3),
            kernel("gemm", 1520.0, 20.0, 7, 4),
        ]});
        let a = run(&doc, &Options::default());
        // The first complete event is the launch call at 900 µs.
        assert_eq!(a.first_ts_us, Some(900.0));
        let gemm = a.kernels.iter().find(|k| k.name == "gemm").unwrap();
        assert_eq!(gemm.longest_at_us, Some(1100.0));
        let idle = &a.idle[0];
        // Gaps: 50 (1050→1100), 320 (1180→1500), 10 (1510→1520).
        assert_eq!(idle.longest_gap_us, 320.0);
        assert_eq!(idle.longest_gap_at_us, Some(1180.0));
    }

    #[test]
    fn a_stream_per_event_stays_bounded() {
        // Every kernel on its own stream: the structures and the stored analysis stay small,
        // and the analysis says what it pooled.
        let n = MAX_STREAMS + 500;
        let events: Vec<Value> = (0..n)
            .map(|i| kernel(&format!("k{i}"), i as f64 * 10.0, 5.0, i as i64, i as u64))
            .collect();
        let a = run(&json!({ "traceEvents": events }), &Options::default());
        assert!(a.timeline.len() <= SHOWN_STREAMS, "{}", a.timeline.len());
        assert!(a.idle.len() <= SHOWN_STREAMS, "{}", a.idle.len());
        assert!(a.idle.iter().any(|r| r.stream == POOLED));
        assert_eq!(
            a.idle.iter().map(|r| r.kernels).sum::<u64>(),
            n as u64,
            "every event counted"
        );
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("pooled as \"other streams\"")),
            "{:?}",
            a.notes
        );
        let stored = serde_json::to_vec(&a).unwrap().len();
        assert!(stored < 200_000, "stored analysis {stored} bytes");
    }

    #[test]
    fn timeline_buckets_hold_each_streams_busy_fraction() {
        // Stream 7 busy for the first half of 0–120 µs, stream 8 for the last quarter.
        let doc = json!({"traceEvents": [
            kernel("a", 0.0, 60.0, 7, 1), launch(-5.0, 1.0, 1),
            kernel("b", 90.0, 30.0, 8, 2), launch(-4.0, 1.0, 2),
        ]});
        let t = run(&doc, &Options::default()).timeline;
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].stream, t[1].stream), (7, 8));
        assert_eq!(t[0].busy.len(), TIMELINE_BUCKETS);
        assert!(close(t[0].bucket_us, 1.0));
        assert!(close(t[0].busy[0], 1.0) && close(t[0].busy[59], 1.0) && close(t[0].busy[60], 0.0));
        assert!(
            close(t[1].busy[89], 0.0) && close(t[1].busy[90], 1.0) && close(t[1].busy[119], 1.0)
        );
    }

    #[test]
    fn idle_intervals_per_device_with_what_preceded_them() {
        let step = |name: &str, ts: f64, dur: f64| {
            json!({"ph": "X", "cat": "user_annotation", "name": name, "pid": 100, "tid": 100,
                   "ts": ts, "dur": dur})
        };
        let doc = json!({
            "baseTimeNanoseconds": 1_700_000_000_000_000_000u64,
            "traceEvents": [
                step("ProfilerStep#1", -20.0, 720.0), step("ProfilerStep#2", 700.0, 300.0),
                step("ProfilerStep#3", 1000.0, 100.0),
                launch(-10.0, 5.0, 1), kernel("a", 0.0, 100.0, 7, 1),
                // Launched before the GPU went idle, started 100 µs later.
                launch(50.0, 5.0, 2), kernel("b", 200.0, 100.0, 7, 2),
                // Launched after the GPU went idle: host wait.
                launch(350.0, 5.0, 3), kernel("c", 400.0, 50.0, 7, 3),
                // A synchronisation covers the start of the next gap.
                launch(450.0, 150.0, 10),
                {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
                 "ts": 450.0, "dur": 150.0, "args": {"stream": 7, "correlation": 10}},
                launch(599.0, 1.0, 4), kernel("d", 600.0, 50.0, 7, 4),
                // A step boundary (700) inside the gap.
                launch(750.0, 5.0, 5), kernel("e", 800.0, 50.0, 7, 5),
                // Another stream keeps the device busy: a 10 µs gap is not kept.
                launch(855.0, 1.0, 6), kernel("f", 860.0, 10.0, 9, 6)
            ]
        });
        let a = run(&doc, &Options::default());
        let got: Vec<(f64, f64, Preceded, i64)> = a
            .idle_intervals
            .iter()
            .map(|i| (i.start_us, i.dur_us, i.preceded_by, i.stream))
            .collect();
        assert_eq!(
            got,
            [
                (100.0, 100.0, Preceded::LaunchGap, 7),
                (300.0, 100.0, Preceded::HostWait, 7),
                (450.0, 150.0, Preceded::Sync, 7),
                (650.0, 150.0, Preceded::StepEnd, 7),
            ]
        );
        assert_eq!(a.idle_intervals_found, 4);
        assert_eq!(a.gpu_window_us, Some([0.0, 870.0]));
    }

    #[test]
    fn temporal_kernel_and_idle_breakdowns() {
        // Stream 7: gemm [0,100), nccl [110,160) overlapping memcpy on stream 8 [150,200).
        // Stream 7 then waits for the host: launch of k3 at 300 > previous end 160.
        let doc = json!({
            "schemaVersion": 1,
            "distributedInfo": {"rank": 3, "world_size": 8},
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85_000_000_000u64, "numSms": 132}],
            "traceEvents": [
                launch(-10.0, 5.0, 1), kernel("gemm", 0.0, 100.0, 7, 1),
                launch(50.0, 5.0, 2), kernel("ncclDevKernel_AllReduce", 110.0, 50.0, 7, 2),
                launch(60.0, 5.0, 3),
                {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 8,
                 "ts": 150.0, "dur": 50.0, "args": {"device": 0, "stream": 8, "correlation": 3, "bytes": 1024}},
                launch(300.0, 10.0, 4), kernel("gemm", 400.0, 100.0, 7, 4),
                kernel("gemm", 520.0, 10.0, 7, 99),
                {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
                {"ph": "i", "name": "marker", "ts": 1}
            ]
        });
        let a = run(&doc, &Options::default());
        assert_eq!(a.rank, 3);
        let t = &a.temporal[0];
        assert!(close(t.span_us, 530.0));
        // busy = [0,100) + [110,200) + [400,500) + [520,530) = 300
        assert!(close(t.busy_us, 300.0));
        assert!(close(t.idle_us, 230.0));
        assert!(close(t.compute_us, 210.0));
        assert!(close(t.non_compute_us, 90.0));
        assert!(close(a.gpu_busy_ratio.unwrap(), 300.0 / 530.0));
        let gemm = a.kernels.iter().find(|k| k.name == "gemm").unwrap();
        assert_eq!((gemm.count, gemm.category.as_str()), (3, "COMP"));
        assert!(close(gemm.sum_us, 210.0) && close(gemm.min_us, 10.0) && close(gemm.max_us, 100.0));
        assert_eq!(a.kernels[0].name, "gemm");
        let cats: HashMap<_, _> = a
            .kernel_categories
            .iter()
            .map(|c| (c.category.as_str(), c.sum_us))
            .collect();
        assert!(close(cats["COMM"], 50.0) && close(cats["MEM"], 50.0));
        // Stream 7 gaps: 10 (kernel wait), 240 (host wait: launch at 300 > 160),
        // 20 (k 99 has no launch: kernel wait).
        let s7 = a.idle.iter().find(|r| r.stream == 7).unwrap();
        assert!(close(s7.host_wait_us, 240.0), "{s7:?}");
        assert!(close(s7.kernel_wait_us, 30.0), "{s7:?}");
        assert!(close(s7.other_us, 0.0));
        assert_eq!(s7.kernels, 4);
        // Launch delays: 0-(−5)=5, 110-55=55, 150-65=85, 400-310=90.
        assert_eq!(a.launch.matched, 4);
        assert_eq!(a.launch.unmatched, 1);
        assert!(close(a.launch.launch_delay_us.max.unwrap(), 90.0));
        assert!(close(a.launch.launch_delay_us.min.unwrap(), 5.0));
        let d = &a.devices[0];
        assert_eq!(d.name.as_deref(), Some("NVIDIA H100"));
        assert_eq!(d.num_sms, Some(132));
        assert_eq!(d.streams, 2);
        assert!(close(d.busy_us, 300.0));
        let v = serde_json::to_value(&a).unwrap();
        for k in [
            "temporal",
            "kernels",
            "idle",
            "launch",
            "gpu_busy_ratio",
            "devices",
            "notes",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        for k in ["rank", "span_us", "idle_us", "compute_us", "non_compute_us"] {
            assert!(v["temporal"][0].get(k).is_some(), "{k}");
        }
        for k in [
            "name", "category", "count", "sum_us", "mean_us", "min_us", "max_us",
        ] {
            assert!(v["kernels"][0].get(k).is_some(), "{k}");
        }
        for k in [
            "rank",
            "stream",
            "host_wait_us",
            "kernel_wait_us",
            "other_us",
        ] {
            assert!(v["idle"][0].get(k).is_some(), "{k}");
        }
    }

    #[test]
    fn other_gap_when_long_and_not_host_bound() {
        let doc = json!({"traceEvents": [
            launch(0.0, 1.0, 1), kernel("a", 10.0, 10.0, 7, 1),
            launch(2.0, 1.0, 2), kernel("b", 100.0, 10.0, 7, 2),
        ]});
        let a = run(&doc, &Options::default());
        let s = &a.idle[0];
        assert!(
            close(s.other_us, 80.0) && close(s.host_wait_us, 0.0) && close(s.kernel_wait_us, 0.0)
        );
        assert!(a.notes.iter().any(|n| n.contains("rank 0 assumed")));
    }

    #[test]
    fn last_profiler_step_filter_like_hta() {
        let step = |n: u32, ts: f64, dur: f64| {
            json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{n}"),
                   "pid": 100, "tid": 100, "ts": ts, "dur": dur})
        };
        let doc = json!({"traceEvents": [
            step(1, 0.0, 100.0), launch(10.0, 1.0, 1), kernel("a", 20.0, 10.0, 7, 1),
            step(2, 100.0, 100.0), launch(110.0, 1.0, 2), kernel("b", 120.0, 10.0, 7, 2),
            launch(250.0, 1.0, 3), kernel("c", 260.0, 10.0, 7, 3),
            kernel("orphan", 40.0, 10.0, 7, 77)
        ]});
        let dropped = run(&doc, &Options::default());
        assert_eq!(dropped.profiler_steps, 2);
        assert_eq!(dropped.excluded_gpu_events, 3);
        assert!(close(dropped.temporal[0].span_us, 10.0));
        let kept = run(
            &doc,
            &Options {
                include_last_profiler_step: true,
                ..Options::default()
            },
        );
        // c launched after the last step ended, orphan never launched: both out.
        assert_eq!(kept.excluded_gpu_events, 2);
        assert!(close(kept.temporal[0].span_us, 110.0));
    }

    #[test]
    fn traps_big_ints_strings_old_cats_and_bad_utf8() {
        let mut text = String::from(
            r#"{"traceEvents": [
              {"ph": "X", "cat": "Kernel", "name": "old_kernel", "pid": 0, "tid": "stream 7",
               "ts": 1665536373729077, "dur": 4,
               "args": {"stream": 7, "correlation": 538860, "External id": 0, "grid": [64, 1, 1]}},
              {"ph": "X", "cat": "", "name": "nccl:all_reduce", "pid": "Spans", "tid": "x", "ts": 1, "dur": 1},
              {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1665536373729000, "dur": 2,
               "args": {"Process Group ID": 18446744073709551615000, "pg id": -92233720368547758070, "seq": "7"}},
              {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": "1665536373729070", "dur": 2.5, "args": {"correlation": "538860", "stream": "0x0"}},
              {"ph": "X", "cat": "cpu_op", "name": "bad "#,
        );
        let mut bytes = std::mem::take(&mut text).into_bytes();
        bytes.extend_from_slice(&[0xff, 0xfe]);
        bytes.extend_from_slice(br#" name", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]}"#);
        let a = analyze(&bytes[..], &Options::default()).unwrap();
        assert_eq!(a.events.kernels, 1);
        assert_eq!(a.events.cpu_ops, 2);
        assert_eq!(a.launch.matched, 1);
        assert!(close(a.launch.launch_delay_us.mean.unwrap(), 4.5));
        assert_eq!(a.idle[0].stream, 7);
        assert!(a.notes.iter().any(|n| n.contains("UTF-8")), "{:?}", a.notes);
        // The same through gzip and the top-level analyze().
        let gz = gzip(&bytes);
        let top = super::super::analyze(
            super::super::Kind::PytorchTrace,
            &gz[..],
            &Options::default(),
            &|_| {},
        )
        .unwrap();
        assert_eq!(top.kind(), super::super::Kind::PytorchTrace);
    }

    #[test]
    fn stream_synchronisation_counts_in_the_span_as_idle() {
        // Kernels 0–100 and 150–200; a stream sync 200–260 after the last kernel and
        // one 90–120 overlapping a kernel. HTA's span runs to the end of the sync.
        let sync = |ts: f64, dur: f64, corr: u64| {
            json!({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7,
                   "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr}})
        };
        let doc = json!({"traceEvents": [
            launch(-10.0, 5.0, 1), kernel("gemm", 0.0, 100.0, 7, 1),
            launch(140.0, 5.0, 2), kernel("gemm", 150.0, 50.0, 7, 2),
            sync(200.0, 60.0, 3), sync(90.0, 30.0, 4),
            // A sync with no stream (a context sync) is not on a GPU stream.
            json!({"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": 0,
                   "ts": 300.0, "dur": 50.0, "args": {"device": 0, "stream": -1}}),
        ]});
        let a = run(&doc, &Options::default());
        let t = &a.temporal[0];
        assert!(close(t.span_us, 260.0), "{t:?}");
        assert!(close(t.idle_us, 110.0), "{t:?}");
        // 100–120 (the overlapping sync past the kernel) and 200–260.
        assert!(close(t.sync_us, 80.0), "{t:?}");
        assert!(
            a.notes.iter().any(|n| n.contains("cuda_sync")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn negative_launch_delays_are_counted_and_explained() {
        // The second kernel starts 20 µs before its 50 µs launch call returns.
        let doc = json!({"traceEvents": [
            launch(0.0, 5.0, 1), kernel("a", 10.0, 5.0, 7, 1),
            launch(20.0, 50.0, 2), kernel("b", 50.0, 5.0, 7, 2),
        ]});
        let a = run(&doc, &Options::default());
        assert_eq!(a.launch.negative_delays, 1);
        assert!(close(a.launch.launch_delay_us.min.unwrap(), -20.0));
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("before their launch call returned")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn cpu_only_trace_says_what_it_holds() {
        let mut events = Vec::new();
        for i in 0..1234 {
            events.push(json!({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": i, "dur": 1}));
        }
        events.push(json!({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000}));
        let a = run(
            &json!({"deviceProperties": [{"id": 0, "name": "A100"}], "traceEvents": events}),
            &Options::default(),
        );
        assert!(a.temporal.is_empty());
        assert_eq!(a.gpu_busy_ratio, None);
        assert!(
            a.notes
                .iter()
                .any(|n| n == "no GPU kernels: 1,234 CPU ops, 1 user annotations only"),
            "{:?}",
            a.notes
        );
        assert_eq!(a.devices[0].name.as_deref(), Some("A100"));
    }

    #[test]
    fn bare_array_truncated_and_broken_traces() {
        let arr = json!([kernel("k", 0.0, 5.0, 1, 1), kernel("k", 10.0, 5.0, 1, 2)]);
        let a = run(&arr, &Options::default());
        assert!(close(a.temporal[0].span_us, 15.0));
        // Cut mid-write: the events before the cut are analyzed, with a note.
        let full =
            json!({"traceEvents": [kernel("k", 0.0, 5.0, 1, 1), kernel("k", 10.0, 5.0, 1, 2)]})
                .to_string();
        let cut = &full[..full.len() - 20];
        let a = analyze(cut.as_bytes(), &Options::default()).unwrap();
        assert!(
            a.notes.iter().any(|n| n.contains("ends early")),
            "{:?}",
            a.notes
        );
        assert_eq!(a.events.kernels, 1);
        let e = analyze(&b"{\"traceEvents\": [}"[..], &Options::default()).unwrap_err();
        assert!(
            matches!(e, AnalyzeError::Malformed { line: Some(1), .. }),
            "{e:?}"
        );
        let e = analyze(
            &b"{\"traceEvents\": [{\"ph\": \"X\"}], \"x\": tru}"[..],
            &Options::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("column"), "{e}");
    }

    #[test]
    fn agrees_with_hta_on_real_fixtures() {
        let Some(root) = real_fixtures() else { return };
        let opts = Options {
            include_last_profiler_step: true,
            ..Options::default()
        };
        for &(file, rank, idle, compute, non_compute, span) in HTA_TEMPORAL {
            let f = open(&root, &format!("pytorch_trace/{file}"));
            let a =
                super::super::analyze(super::super::Kind::PytorchTrace, f, &opts, &|_| {}).unwrap();
            let Analysis::PytorchTrace(a) = a else {
                panic!()
            };
            let t = &a.temporal[0];
            assert_eq!(t.rank, rank, "{file}");
            let tol = 0.005 * span;
            let report = format!(
                "{file}: ours idle {:.3} compute {:.3} non-compute {:.3} span {:.3}; HTA {idle} {compute} {non_compute} {span}",
                t.idle_us, t.compute_us, t.non_compute_us, t.span_us
            );
            println!("{report}");
            assert!((t.idle_us - idle).abs() <= tol, "{report}");
            assert!((t.compute_us - compute).abs() <= tol, "{report}");
            assert!((t.non_compute_us - non_compute).abs() <= tol, "{report}");
            assert!((t.span_us - span).abs() <= tol, "{report}");
            // The idle intervals kept for attribution lie in the GPU window, are at least
            // the minimum long, and cannot add up to more than the idle time (one device).
            let [w0, w1] = a.gpu_window_us.unwrap();
            let kept: f64 = a.idle_intervals.iter().map(|i| i.dur_us).sum();
            assert!(kept <= t.idle_us + 1e-6, "{file}: {kept} > {}", t.idle_us);
            assert!(a
                .idle_intervals
                .iter()
                .all(|i| i.dur_us >= IDLE_INTERVAL_MIN_US
                    && i.start_us >= w0
                    && i.start_us + i.dur_us <= w1));
            assert!(a
                .idle_intervals
                .windows(2)
                .all(|p| p[0].start_us <= p[1].start_us));
            assert_eq!(
                a.idle_intervals_found,
                a.idle_intervals.len() as u64,
                "{file}"
            );
            println!(
                "{file}: {} idle intervals, {kept:.1} µs",
                a.idle_intervals.len()
            );
        }
    }

    use super::super::Analysis;

    #[test]
    fn real_fixtures_without_gpu_kernels() {
        let Some(root) = real_fixtures() else { return };
        let f = open(
            &root,
            "pytorch_trace/hta__distributed_info_unavailable__distributed_info_not_found.json.gz",
        );
        let Analysis::PytorchTrace(a) = super::super::analyze(
            super::super::Kind::PytorchTrace,
            f,
            &Options::default(),
            &|_| {},
        )
        .unwrap() else {
            panic!()
        };
        assert!(a.temporal.is_empty());
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("no GPU kernels: 2,424 CPU ops")),
            "{:?}",
            a.notes
        );
        let f = open(
            &root,
            "pytorch_trace/hta__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
        );
        let Analysis::PytorchTrace(a) = super::super::analyze(
            super::super::Kind::PytorchTrace,
            f,
            &Options::default(),
            &|_| {},
        )
        .unwrap() else {
            panic!()
        };
        assert!(
            a.notes.iter().any(|n| n.contains("cuda_profiler_range")),
            "{:?}",
            a.notes
        );
        assert_eq!(a.rank, 0);
        assert_eq!(a.devices.len(), 8);
        // AMD: HIP runtime recognized, launches joined by correlation.
        let f = open(
            &root,
            "pytorch_trace/hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        );
        let Analysis::PytorchTrace(a) = super::super::analyze(
            super::super::Kind::PytorchTrace,
            f,
            &Options::default(),
            &|_| {},
        )
        .unwrap() else {
            panic!()
        };
        assert!(a.notes.iter().any(|n| n.contains("ROCm")));
        assert_eq!(a.launch.matched, 16);
        assert_eq!(a.base_time_ns, Some(1_735_632_360_000_000_000));
        assert_eq!(a.devices[0].device, 2);
    }

    /// A deterministic synthetic trace: 3 profiler steps, two streams,
    /// compute, NCCL and memcpy work, host-bound and launch-bound gaps, all on
    /// whole microseconds so HTA's rounding changes nothing.
    fn hta_synthetic_trace() -> Value {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let names = [
            "gemm_kernel",
            "elementwise",
            "ncclDevKernel_AllReduce_Sum",
            "Memcpy DtoD (Device -> Device)",
        ];
        let gaps = [0, 2, 5, 20, 45, 100];
        let mut ev = Vec::new();
        let mut ts: u64 = 1000;
        let mut gpu_free = [1100u64, 1100u64];
        let mut corr = 1u64;
        for step in 1..=3 {
            let step_start = ts;
            for j in 0..60 {
                let s = if j % 3 == 0 { 1 } else { 0 };
                let stream = 7 + s as i64;
                let name = names[rnd(4) as usize];
                let cat = if name.starts_with("Memcpy") {
                    "gpu_memcpy"
                } else {
                    "kernel"
                };
                let ldur = 3 + rnd(10);
                ev.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                               "ts": ts, "dur": ldur, "args": {"correlation": corr}}));
                let start = (gpu_free[s] + gaps[rnd(6) as usize]).max(ts + ldur + 1 + rnd(8));
                let d = 2 + rnd(79);
                ev.push(json!({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": d,
                               "args": {"device": 0, "stream": stream, "correlation": corr}}));
                gpu_free[s] = start + d;
                ts += ldur + 1 + rnd(30);
                corr += 1;
            }
            ev.push(
                json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"),
                           "pid": 10, "tid": 10, "ts": step_start, "dur": ts - step_start + 1}),
            );
            ts += 5;
        }
        json!({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": ev})
    }

    /// HTA 0.5.0 on [`hta_synthetic_trace`] written to a file, with
    /// `TraceAnalysis(trace_dir, include_last_profiler_step=…)`:
    /// `get_temporal_breakdown()` (idle, compute, non-compute, span) and
    /// `get_idle_time_breakdown()` per stream (host wait, kernel wait, other), µs.
    /// (include_last_profiler_step, [idle, compute, non-compute, span],
    /// [(stream, [host wait, kernel wait, other])]).
    type HtaRun = (bool, [f64; 4], [(i64, [f64; 3]); 2]);
    const HTA_SYNTHETIC: [HtaRun; 2] = [
        (
            true,
            [2632.0, 3856.0, 2240.0, 8728.0],
            [(7, [0.0, 707.0, 2940.0]), (8, [690.0, 268.0, 660.0])],
        ),
        (
            false,
            [1725.0, 2616.0, 1672.0, 6013.0],
            [(7, [0.0, 475.0, 1960.0]), (8, [386.0, 214.0, 425.0])],
        ),
    ];

    #[test]
    fn matches_hta_on_synthetic_trace() {
        let doc = hta_synthetic_trace();
        for (include, temporal, idle) in HTA_SYNTHETIC {
            let opts = Options {
                include_last_profiler_step: include,
                ..Options::default()
            };
            let a = run(&doc, &opts);
            let t = &a.temporal[0];
            let ours = [t.idle_us, t.compute_us, t.non_compute_us, t.span_us];
            assert_eq!(ours, temporal, "include_last_profiler_step={include}");
            for (stream, [host, kernel, other]) in idle {
                let r = a.idle.iter().find(|r| r.stream == stream).unwrap();
                assert_eq!(
                    [r.host_wait_us, r.kernel_wait_us, r.other_us],
                    [host, kernel, other],
                    "stream {stream}, include_last_profiler_step={include}"
                );
            }
        }
    }

    /// A large synthetic trace, streamed from a generator reader: checks the
    /// result and that nothing per event is kept beyond the GPU records.
    #[test]
    fn streams_a_large_generated_trace() {
        struct Gen {
            i: u64,
            n: u64,
            buf: Vec<u8>,
            pos: usize,
            done: bool,
        }
        impl Read for Gen {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                while self.pos >= self.buf.len() {
                    if self.done {
                        return Ok(0);
                    }
                    self.buf.clear();
                    self.pos = 0;
                    if self.i == 0 {
                        self.buf
                            .extend_from_slice(b"{\"schemaVersion\": 1, \"traceEvents\": [");
                    }
                    let end = (self.i + 1000).min(self.n);
                    while self.i < end {
                        let i = self.i;
                        let sep = if i == 0 { "" } else { "," };
                        let ts = i as f64 * 10.0;
                        self.buf.extend_from_slice(format!(
                            "{sep}{{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":{ts},\"dur\":2,\"args\":{{\"correlation\":{i},\"cbid\":211}}}},\
                             {{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k{}\",\"pid\":0,\"tid\":7,\"ts\":{},\"dur\":5.5,\"args\":{{\"device\":0,\"stream\":7,\"correlation\":{i},\"grid\":[1,1,1],\"registers per thread\":32}}}}",
                            i % 17,
                            ts + 3.0
                        ).as_bytes());
                        self.i += 1;
                    }
                    if self.i == self.n {
                        self.buf.extend_from_slice(b"]}");
                        self.done = true;
                    }
                }
                let k = out.len().min(self.buf.len() - self.pos);
                out[..k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
                self.pos += k;
                Ok(k)
            }
        }
        let n = 200_000;
        let a = analyze(
            Gen {
                i: 0,
                n,
                buf: Vec::new(),
                pos: 0,
                done: false,
            },
            &Options::default(),
        )
        .unwrap();
        assert_eq!(a.events.kernels, n);
        assert_eq!(a.launch.matched, n);
        assert!(close(a.launch.launch_delay_us.p50.unwrap(), 1.0));
        assert_eq!(a.kernels.len(), 17);
        let t = &a.temporal[0];
        assert!((t.busy_us - 5.5 * n as f64).abs() < 1e-3);
        // Each 4.5 µs gap: the next launch starts 1.5 µs after the previous
        // kernel ended, so the GPU waited on the host.
        assert!((a.idle[0].host_wait_us - 4.5 * (n - 1) as f64).abs() < 1e-3);
        assert_eq!(a.idle[0].kernel_wait_us, 0.0);
    }
}
