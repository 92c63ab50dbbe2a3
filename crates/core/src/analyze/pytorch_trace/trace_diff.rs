//! Trace diff: two traces compared op by op and kernel by kernel, with the
//! definitions of HolisticTraceAnalysis 0.5.0 (`hta/trace_diff.py`,
//! `TraceDiff.compare_traces` and `TraceDiff.ops_diff`, called with their defaults).
//!
//! What HTA counts, and so what is counted here:
//! * Rows: every event of `traceEvents` with a `dur` and a `cat` (any phase), except
//!   `cat` "Trace"; rows without a string `name` cannot be grouped and are left out.
//! * Times: when any event's `ts` is a JSON float (or missing), HTA rounds every start
//!   up and every end down to whole µs (`dur = floor(ts + dur) − ceil(ts)`); traces
//!   with integer times are taken as they are.
//! * The iteration compared is the first one: the lowest N of the `ProfilerStep#N`
//!   events. An event on the CPU side (`args.stream` absent or negative) belongs to
//!   the last step, in document order, with `step.ts <= ts < step.ts + step.dur`; a
//!   GPU event (`args.stream` > 0) belongs to the step of the CPU event with the same
//!   `args.correlation` (its launch; all kernels of one CUDA-graph launch share it).
//!   Stream 0 belongs to no step. A trace without any `ProfilerStep` is compared whole
//!   (HTA refuses such a trace; the result says so).
//! * Per name: count and summed duration (µs); the classes are HTA's `ops_diff`:
//!   added (absent in control), deleted (absent in test), increased / decreased /
//!   unchanged (present in both, by count).
//!
//! Memory is bounded whatever the trace's size: the trace is read three times
//! (steps; launches inside the compared step; totals per name), keeping only the
//! steps, the correlation ids launched in the compared step and one row per distinct
//! name, each table capped (past the caps the result says so).

use super::super::json_split::{PartKind, Splitter};
use super::super::lenient::{Lenient, Scalar, TextInto};
use super::super::readers::decompressing_reader;
use super::super::AnalyzeError;
use super::read::{BLOCK_BYTES, MAX_PART_BYTES};
use super::state::FastMap;
use crate::fmt::grouped;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use std::io::Read;

/// Distinct names kept per trace; events of further names are pooled under [`OTHER_OPS`].
pub const MAX_OP_NAMES: usize = 50_000;
/// The name events past [`MAX_OP_NAMES`] distinct names are counted under.
pub const OTHER_OPS: &str = "(other ops: too many distinct names)";
/// `ProfilerStep` events kept.
pub const MAX_STEPS: usize = 10_000;
/// Correlation ids kept for the compared step (launches in it).
pub const MAX_LAUNCHES: usize = 5_000_000;

/// One name's totals in one trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpTotal {
    pub name: String,
    pub count: u64,
    pub dur_us: f64,
}

/// What was counted in one trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpTotals {
    /// The `ProfilerStep#N` compared (the lowest N), or none: the whole trace.
    pub iteration: Option<i64>,
    /// Events counted.
    pub events: u64,
    pub dur_us: f64,
    /// Whether times were rounded to whole µs (float timestamps), as HTA does.
    pub rounded: bool,
    /// Per name, in name order.
    pub ops: Vec<OpTotal>,
    pub notes: Vec<String>,
}

/// HTA `ops_diff`'s classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Absent in control, present in test.
    Added,
    /// Present in control, absent in test.
    Deleted,
    /// In both, more often in test.
    Increased,
    /// In both, less often in test.
    Decreased,
    /// In both, as often.
    Unchanged,
}

impl Change {
    pub fn slug(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Deleted => "deleted",
            Change::Increased => "increased",
            Change::Decreased => "decreased",
            Change::Unchanged => "unchanged",
        }
    }

    fn of(control: u64, test: u64) -> Change {
        match (control, test) {
            (0, _) => Change::Added,
            (_, 0) => Change::Deleted,
            (c, t) if t > c => Change::Increased,
            (c, t) if t < c => Change::Decreased,
            _ => Change::Unchanged,
        }
    }
}

/// One name compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpDiff {
    pub name: String,
    pub control_count: u64,
    pub control_us: f64,
    pub test_count: u64,
    pub test_us: f64,
    /// test − control.
    pub diff_count: i64,
    /// test − control (µs).
    pub diff_us: f64,
    pub change: Change,
}

/// How many names fall in each class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffSummary {
    pub added: u64,
    pub deleted: u64,
    pub increased: u64,
    pub decreased: u64,
    pub unchanged: u64,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceDiffResult {
    pub summary: DiffSummary,
    /// Sorted by |diff_us|, largest first (then by name).
    pub ops: Vec<OpDiff>,
    pub control: SideInfo,
    pub test: SideInfo,
    /// Rows left out by [`TraceDiffResult::keep_top`] (the smallest moves).
    #[serde(default)]
    pub ops_not_kept: u64,
}

/// What one side counted, without its rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub iteration: Option<i64>,
    pub events: u64,
    pub dur_us: f64,
    pub rounded: bool,
    pub names: u64,
    pub notes: Vec<String>,
}

impl SideInfo {
    fn of(t: &OpTotals) -> SideInfo {
        SideInfo {
            iteration: t.iteration,
            events: t.events,
            dur_us: t.dur_us,
            rounded: t.rounded,
            names: t.ops.len() as u64,
            notes: t.notes.clone(),
        }
    }
}

/// One side made of several traces (the ranks of one run): counts and times summed per
/// name, as HTA sums the ranks it is given; each trace is counted over its own first
/// `ProfilerStep` (the lowest one is reported).
pub fn merge(parts: Vec<OpTotals>) -> OpTotals {
    let mut side = SideSum::default();
    for p in parts {
        side.add(p);
    }
    side.finish()
}

/// A side's totals summed one trace at a time, so that a side of many ranks holds one
/// table of names (the ranks of a run share their names) rather than one per rank. The
/// summed table keeps at most [`MAX_OP_NAMES`] names as one trace does; ranks that
/// together name more are counted under [`OTHER_OPS`].
#[derive(Default)]
pub struct SideSum {
    out: Option<OpTotals>,
    index: FastMap<String, usize>,
    /// Events of names past the bound, counted under [`OTHER_OPS`].
    pooled: u64,
}

impl SideSum {
    /// Adds one trace's totals; the trace's own table is dropped here.
    pub fn add(&mut self, p: OpTotals) {
        let Some(out) = self.out.as_mut() else {
            self.index = p
                .ops
                .iter()
                .enumerate()
                .map(|(i, o)| (o.name.clone(), i))
                .collect();
            self.out = Some(p);
            return;
        };
        out.iteration = match (out.iteration, p.iteration) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        out.events += p.events;
        out.dur_us += p.dur_us;
        out.rounded |= p.rounded;
        for n in p.notes {
            if !out.notes.contains(&n) {
                out.notes.push(n);
            }
        }
        for mut o in p.ops {
            if !self.index.contains_key(&o.name) && out.ops.len() >= MAX_OP_NAMES {
                self.pooled += o.count;
                o.name = OTHER_OPS.to_string();
            }
            match self.index.get(&o.name) {
                Some(&i) => {
                    out.ops[i].count += o.count;
                    out.ops[i].dur_us += o.dur_us;
                }
                None => {
                    self.index.insert(o.name.clone(), out.ops.len());
                    out.ops.push(o);
                }
            }
        }
    }

    /// The summed side, its names in order.
    pub fn finish(self) -> OpTotals {
        let mut out = self.out.unwrap_or_default();
        if self.pooled > 0 {
            out.notes.push(format!(
                "the traces together name more than {} distinct ops: {} events are \
                 counted under \"{OTHER_OPS}\"",
                grouped(MAX_OP_NAMES as u64),
                grouped(self.pooled)
            ));
        }
        out.ops.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

/// Compare two traces' totals.
pub fn diff(control: &OpTotals, test: &OpTotals) -> TraceDiffResult {
    let mut rows: FastMap<&str, (u64, f64, u64, f64)> = FastMap::default();
    for o in &control.ops {
        let r = rows.entry(o.name.as_str()).or_default();
        r.0 += o.count;
        r.1 += o.dur_us;
    }
    for o in &test.ops {
        let r = rows.entry(o.name.as_str()).or_default();
        r.2 += o.count;
        r.3 += o.dur_us;
    }
    let mut summary = DiffSummary::default();
    let mut ops: Vec<OpDiff> = rows
        .into_iter()
        .map(|(name, (cc, cu, tc, tu))| {
            let change = Change::of(cc, tc);
            match change {
                Change::Added => summary.added += 1,
                Change::Deleted => summary.deleted += 1,
                Change::Increased => summary.increased += 1,
                Change::Decreased => summary.decreased += 1,
                Change::Unchanged => summary.unchanged += 1,
            }
            OpDiff {
                name: name.to_string(),
                control_count: cc,
                control_us: cu,
                test_count: tc,
                test_us: tu,
                diff_count: tc as i64 - cc as i64,
                diff_us: tu - cu,
                change,
            }
        })
        .collect();
    ops.sort_by(|a, b| {
        b.diff_us
            .abs()
            .total_cmp(&a.diff_us.abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    TraceDiffResult {
        summary,
        ops,
        control: SideInfo::of(control),
        test: SideInfo::of(test),
        ops_not_kept: 0,
    }
}

impl TraceDiffResult {
    /// Keeps the `n` rows that moved most time (the summary still counts every name).
    pub fn keep_top(&mut self, n: usize) {
        if self.ops.len() > n {
            self.ops_not_kept += (self.ops.len() - n) as u64;
            self.ops.truncate(n);
        }
    }

    /// The op that moved most time, leaving out the whole-step `ProfilerStep` rows.
    pub fn top_mover(&self) -> Option<&OpDiff> {
        self.ops
            .iter()
            .find(|o| !o.name.starts_with("ProfilerStep") && o.diff_us != 0.0)
    }

    /// A sentence for the write-up: "the change moved 30.8 ms into cudaMemcpyAsync,
    /// +764 calls".
    pub fn headline(&self) -> Option<String> {
        let o = self.top_mover()?;
        let ms = o.diff_us.abs() / 1000.0;
        let calls = match o.diff_count {
            0 => "as many calls".to_string(),
            n if n > 0 => format!("+{} calls", grouped(n as u64)),
            n => format!("−{} calls", grouped(n.unsigned_abs())),
        };
        Some(if o.diff_us > 0.0 {
            format!("the change moved {ms:.1} ms into {}, {calls}", o.name)
        } else {
            format!("the change took {ms:.1} ms out of {}, {calls}", o.name)
        })
    }
}

// ---------------------------------------------------------------------------------
// Reading.

/// `ts` as read, and whether it was written as a JSON float.
#[derive(Clone, Copy)]
struct Ts {
    value: Option<f64>,
    float: bool,
}

struct TsReader;

impl Scalar for TsReader {
    type Value = Ts;
    const EXPECTING: &'static str = "a time in microseconds";
    fn float<E: de::Error>(self, v: f64) -> Result<Ts, E> {
        Ok(Ts {
            value: v.is_finite().then_some(v),
            float: true,
        })
    }
    fn int<E: de::Error>(self, v: i64) -> Result<Ts, E> {
        Ok(Ts {
            value: Some(v as f64),
            float: false,
        })
    }
    fn uint<E: de::Error>(self, v: u64) -> Result<Ts, E> {
        Ok(Ts {
            value: Some(v as f64),
            float: false,
        })
    }
    fn text<E: de::Error>(self, v: &str) -> Result<Ts, E> {
        Ok(Ts {
            value: v.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
            float: false,
        })
    }
    fn other(self) -> Ts {
        Ts {
            value: None,
            float: true,
        }
    }
}

/// `dur`: a number, else absent.
struct DurReader;

impl Scalar for DurReader {
    type Value = Option<f64>;
    const EXPECTING: &'static str = "a duration in microseconds";
    fn float<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        Ok(v.is_finite().then_some(v))
    }
    fn text<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        Ok(v.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
    }
    fn other(self) -> Option<f64> {
        None
    }
}

/// An integer arg (stream, correlation); HTA turns what is not one into −1.
struct IntReader;

impl Scalar for IntReader {
    type Value = i64;
    const EXPECTING: &'static str = "an integer";
    fn float<E: de::Error>(self, v: f64) -> Result<i64, E> {
        Ok(if v.is_finite() && v.abs() < 9.0e18 {
            v.trunc() as i64
        } else {
            -1
        })
    }
    fn int<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn uint<E: de::Error>(self, v: u64) -> Result<i64, E> {
        Ok(i64::try_from(v).unwrap_or(-1))
    }
    fn text<E: de::Error>(self, v: &str) -> Result<i64, E> {
        Ok(v.trim().parse().unwrap_or(-1))
    }
    fn other(self) -> i64 {
        -1
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Cat,
    Name,
    Ts,
    Dur,
    Args,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ArgKey {
    Stream,
    Correlation,
    #[serde(other)]
    Other,
}

/// One event as the diff needs it (strings in reused buffers).
struct Ev {
    has_cat: bool,
    has_name: bool,
    ts: Ts,
    dur: Option<f64>,
    stream: i64,
    correlation: i64,
}

struct Bufs {
    cat: String,
    name: String,
}

struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = (i64, i64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(i64, i64), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = (i64, i64);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("event args")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(i64, i64), A::Error> {
        let (mut stream, mut corr) = (-1, -1);
        while let Some(k) = map.next_key::<ArgKey>()? {
            match k {
                ArgKey::Stream => stream = map.next_value_seed(Lenient(IntReader))?,
                ArgKey::Correlation => corr = map.next_value_seed(Lenient(IntReader))?,
                ArgKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((stream, corr))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(i64, i64), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((-1, -1))
    }
    fn visit_unit<E>(self) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
    fn visit_str<E>(self, _: &str) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
    fn visit_i64<E>(self, _: i64) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
    fn visit_u64<E>(self, _: u64) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
    fn visit_f64<E>(self, _: f64) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
    fn visit_bool<E>(self, _: bool) -> Result<(i64, i64), E> {
        Ok((-1, -1))
    }
}

/// Reads one element of `traceEvents`; `None` for a non-object.
struct EvSeed<'a>(&'a mut Bufs);

impl<'de> DeserializeSeed<'de> for EvSeed<'_> {
    type Value = Option<Ev>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Ev>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EvSeed<'_> {
    type Value = Option<Ev>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Ev>, A::Error> {
        let b = self.0;
        b.cat.clear();
        b.name.clear();
        let mut ev = Ev {
            has_cat: false,
            has_name: false,
            // A missing `ts` makes pandas' column float, as a float literal does.
            ts: Ts {
                value: None,
                float: true,
            },
            dur: None,
            stream: -1,
            correlation: -1,
        };
        while let Some(k) = map.next_key::<Key>()? {
            match k {
                Key::Cat => {
                    map.next_value_seed(Lenient(TextInto(&mut b.cat)))?;
                    ev.has_cat = !b.cat.is_empty();
                }
                Key::Name => {
                    map.next_value_seed(Lenient(TextInto(&mut b.name)))?;
                    ev.has_name = !b.name.is_empty();
                }
                Key::Ts => ev.ts = map.next_value_seed(Lenient(TsReader))?,
                Key::Dur => ev.dur = map.next_value_seed(Lenient(DurReader))?,
                Key::Args => (ev.stream, ev.correlation) = map.next_value_seed(ArgsSeed)?,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(ev))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Ev>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Ev>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Ev>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Ev>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Ev>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Ev>, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<Ev>, E> {
        Ok(None)
    }
}

/// Calls `f` for each event of the trace, in document order.
fn each_event<R: Read>(reader: R, mut f: impl FnMut(&Ev, &str, &str)) -> Result<(), AnalyzeError> {
    let mut splitter = Splitter::new(reader, b"traceEvents", BLOCK_BYTES, MAX_PART_BYTES);
    let mut bufs = Bufs {
        cat: String::new(),
        name: String::new(),
    };
    let mut batch = Default::default();
    while let Some(b) = splitter.next_batch(batch)? {
        for part in &b.parts {
            if !matches!(part.kind, PartKind::Element) {
                continue;
            }
            let mut de = serde_json::Deserializer::from_slice(b.value(part));
            let ev = EvSeed(&mut bufs)
                .deserialize(&mut de)
                .map_err(|e| AnalyzeError::json_in_part(e, part.at))?;
            if let Some(ev) = ev {
                f(&ev, &bufs.cat, &bufs.name);
            }
        }
        batch = b;
    }
    Ok(())
}

/// HTA's rows: a `dur`, a `cat` other than "Trace".
fn is_row(ev: &Ev, cat: &str) -> bool {
    ev.dur.is_some() && ev.has_cat && cat != "Trace"
}

/// The GPU side of HTA's launch join.
fn gpu_side(ev: &Ev, name: &str) -> bool {
    (ev.stream >= 0 && ev.correlation >= 0) || name == "Event Sync" || name == "Context Sync"
}

/// `N` of "ProfilerStep#N" (spaces allowed around `#`).
fn step_number(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep")?.trim_start();
    let rest = rest.strip_prefix('#')?.trim_start();
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    digits.parse().ok()
}

/// Start and duration as HTA has them.
fn times(ts: Option<f64>, dur: f64, round: bool) -> (Option<f64>, f64) {
    match ts {
        Some(t) if round => {
            let start = t.ceil();
            (Some(start), (t + dur).floor() - start)
        }
        Some(t) => (Some(t), dur),
        None if round => (None, dur.floor()),
        None => (None, dur),
    }
}

/// Count and sum per name over the first profiler step of a trace, the way HTA's
/// `compare_traces` does. `open` is called once per pass (three times) and yields the
/// artifact as stored (gzip is undone here); at most `max_decompressed` bytes are read
/// from each pass.
pub fn op_totals<R: Read>(
    mut open: impl FnMut() -> std::io::Result<R>,
    max_decompressed: u64,
) -> Result<OpTotals, AnalyzeError> {
    // Pass 1: the steps, and whether times are rounded.
    let mut round = false;
    let mut steps: Vec<(Option<f64>, f64, i64)> = Vec::new();
    let mut steps_dropped = 0u64;
    each_event(
        decompressing_reader(open()?, max_decompressed),
        |ev, cat, name| {
            round |= ev.ts.float;
            if is_row(ev, cat) && ev.has_name {
                if let Some(n) = step_number(name) {
                    if steps.len() < MAX_STEPS {
                        steps.push((ev.ts.value, ev.dur.unwrap_or(0.0), n));
                    } else {
                        steps_dropped += 1;
                    }
                }
            }
        },
    )?;
    let mut notes = Vec::new();
    if steps_dropped > 0 {
        notes.push(format!(
            "only the first {} ProfilerStep events were read; {} more were not",
            grouped(MAX_STEPS as u64),
            grouped(steps_dropped)
        ));
    }
    let steps: Vec<(f64, f64, i64)> = steps
        .into_iter()
        .filter_map(|(ts, dur, n)| {
            let (ts, dur) = times(ts, dur, round);
            ts.map(|t| (t, dur, n))
        })
        .collect();
    let iteration = steps.iter().map(|s| s.2).min();
    // The steps that decide membership in the first one: it, and those overlapping it
    // (a later one in document order wins, as in HTA).
    let relevant: Vec<(f64, f64, i64)> = match iteration {
        None => Vec::new(),
        Some(first) => {
            let firsts: Vec<(f64, f64)> = steps
                .iter()
                .filter(|s| s.2 == first)
                .map(|s| (s.0, s.0 + s.1))
                .collect();
            steps
                .iter()
                .filter(|s| s.2 == first || firsts.iter().any(|&(a, b)| s.0 < b && a < s.0 + s.1))
                .copied()
                .collect()
        }
    };
    let in_first = |ts: Option<f64>| -> bool {
        let Some(first) = iteration else { return true };
        let Some(ts) = ts else { return false };
        relevant
            .iter()
            .rev()
            .find(|s| s.0 <= ts && ts < s.0 + s.1)
            .is_some_and(|s| s.2 == first)
    };
    if iteration.is_none() {
        notes.push(
            "the trace has no ProfilerStep: the whole trace is compared (HTA compares one step and refuses such a trace)"
                .to_string(),
        );
    }

    // Pass 2: launches (CPU-side events with a correlation id) inside the step.
    let mut launches: HashSet<i64, foldhash::fast::RandomState> = HashSet::default();
    let mut launches_dropped = 0u64;
    each_event(
        decompressing_reader(open()?, max_decompressed),
        |ev, cat, name| {
            if !is_row(ev, cat) || ev.correlation == -1 || gpu_side(ev, name) {
                return;
            }
            let (ts, _) = times(ev.ts.value, ev.dur.unwrap_or(0.0), round);
            if ev.stream < 0 && in_first(ts) {
                if launches.len() < MAX_LAUNCHES {
                    launches.insert(ev.correlation);
                } else {
                    launches_dropped += 1;
                }
            }
        },
    )?;
    if launches_dropped > 0 {
        notes.push(format!(
            "more than {} launches in the step: the GPU work of {} of them is not counted",
            grouped(MAX_LAUNCHES as u64),
            grouped(launches_dropped)
        ));
    }

    // Pass 3: totals per name.
    let mut index: FastMap<String, usize> = FastMap::default();
    let mut ops: Vec<OpTotal> = Vec::new();
    let mut pooled = 0u64;
    let mut events = 0u64;
    let mut total = 0.0;
    each_event(
        decompressing_reader(open()?, max_decompressed),
        |ev, cat, name| {
            if !is_row(ev, cat) || !ev.has_name {
                return;
            }
            let (ts, dur) = times(ev.ts.value, ev.dur.unwrap_or(0.0), round);
            let counted = if iteration.is_none() {
                true
            } else if ev.stream < 0 {
                in_first(ts)
            } else if ev.stream > 0 {
                gpu_side(ev, name) && launches.contains(&ev.correlation)
            } else {
                false
            };
            if !counted {
                return;
            }
            events += 1;
            total += dur;
            let i = match index.get(name) {
                Some(&i) => i,
                None => {
                    let key = if ops.len() < MAX_OP_NAMES {
                        name
                    } else {
                        pooled += 1;
                        OTHER_OPS
                    };
                    match index.get(key) {
                        Some(&i) => i,
                        None => {
                            index.insert(key.to_string(), ops.len());
                            ops.push(OpTotal {
                                name: key.to_string(),
                                count: 0,
                                dur_us: 0.0,
                            });
                            ops.len() - 1
                        }
                    }
                }
            };
            ops[i].count += 1;
            ops[i].dur_us += dur;
        },
    )?;
    if pooled > 0 {
        notes.push(format!(
            "more than {} distinct names: {} events are counted under \"{OTHER_OPS}\"",
            grouped(MAX_OP_NAMES as u64),
            grouped(pooled)
        ));
    }
    ops.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(OpTotals {
        iteration,
        events,
        dur_us: total,
        rounded: round,
        ops,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::test_support::{open, real_fixtures};
    use super::*;
    use serde_json::{json, Value};

    fn totals(doc: &Value) -> OpTotals {
        let bytes = doc.to_string().into_bytes();
        op_totals(|| Ok(std::io::Cursor::new(bytes.clone())), u64::MAX).unwrap()
    }

    fn op<'a>(t: &'a OpTotals, name: &str) -> Option<&'a OpTotal> {
        t.ops.iter().find(|o| o.name == name)
    }

    fn cpu(name: &str, ts: Value, dur: Value) -> Value {
        json!({"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur})
    }

    fn launch(name: &str, ts: i64, corr: i64) -> Value {
        json!({"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": 2,
               "args": {"correlation": corr}})
    }

    fn kernel(name: &str, ts: i64, dur: i64, stream: i64, corr: i64) -> Value {
        json!({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
               "args": {"stream": stream, "correlation": corr}})
    }

    #[test]
    fn only_the_first_step_is_counted_with_kernels_joined_to_their_launch() {
        let doc = json!({"traceEvents": [
            // Kernels before their launches in the document; one launched in step 8,
            // two by one graph launch in step 7, one on stream 0 (belongs nowhere).
            kernel("gemm", 150, 10, 7, 2),
            kernel("gemm", 60, 10, 7, 1),
            kernel("relu", 61, 4, 7, 1),
            kernel("zero_stream", 62, 4, 0, 1),
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "ts": 100, "dur": 100},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 100},
            cpu("aten::mm", json!(10), json!(30)),
            cpu("aten::mm", json!(110), json!(30)),
            cpu("aten::add", json!(99), json!(5)),
            launch("cudaGraphLaunch", 50, 1),
            launch("cudaLaunchKernel", 120, 2),
            // Left out: the Trace category, no dur, no cat, flow events.
            {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "ts": 0, "dur": 500},
            {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 5},
            {"ph": "X", "name": "nocat", "ts": 5, "dur": 1},
            {"ph": "s", "cat": "ac2g", "name": "flow", "ts": 50, "id": 1},
        ]});
        let t = totals(&doc);
        assert_eq!(t.iteration, Some(7));
        assert!(!t.rounded);
        assert_eq!(
            op(&t, "aten::mm").map(|o| (o.count, o.dur_us)),
            Some((1, 30.0))
        );
        assert_eq!(op(&t, "aten::add").map(|o| o.count), Some(1));
        assert_eq!(op(&t, "gemm").map(|o| (o.count, o.dur_us)), Some((1, 10.0)));
        assert_eq!(op(&t, "relu").map(|o| o.count), Some(1));
        assert_eq!(op(&t, "cudaGraphLaunch").map(|o| o.count), Some(1));
        assert_eq!(op(&t, "ProfilerStep#7").map(|o| o.dur_us), Some(100.0));
        for absent in [
            "cudaLaunchKernel",
            "ProfilerStep#8",
            "zero_stream",
            "PyTorch Profiler",
            "instant",
            "nocat",
        ] {
            assert!(op(&t, absent).is_none(), "{absent}");
        }
        assert_eq!(t.events, 6);
    }

    #[test]
    fn float_times_are_rounded_as_hta_rounds_them() {
        let doc = json!({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0.5, "dur": 100.0},
            // ceil(10.2) = 11, floor(10.2 + 5.7) = 15: 4 µs.
            cpu("a", json!(10.2), json!(5.7)),
            // Starts at 100.2 → 101: outside the step [1, 100).
            cpu("b", json!(100.2), json!(1.0)),
        ]});
        let t = totals(&doc);
        assert!(t.rounded);
        assert_eq!(op(&t, "a").map(|o| o.dur_us), Some(4.0));
        assert!(op(&t, "b").is_none());
        assert_eq!(op(&t, "ProfilerStep#1").map(|o| o.dur_us), Some(99.0));
    }

    /// HTA 0.5.0 on these two traces (each alone in a folder, `compare_traces` and
    /// `ops_diff` with defaults): control a 1 × 4 µs, cudaGraphLaunch 1 × 2, k1 1 × 2,
    /// k2 1 × 3, ProfilerStep#1 1 × 99; test a 2 × 14, k1 1 × 3, cudaLaunchKernel 1 × 3,
    /// ProfilerStep#3 1 × 100; added [ProfilerStep#3, cudaLaunchKernel], deleted
    /// [ProfilerStep#1, cudaGraphLaunch, k2], increased [a], unchanged [k1].
    #[test]
    fn float_times_and_a_graph_launch_agree_with_hta() {
        let control = json!({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0.5, "dur": 100.0},
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 10.2, "dur": 5.7},
            {"ph": "X", "cat": "cpu_op", "name": "b", "ts": 100.2, "dur": 1.0},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 20.4, "dur": 3.3, "args": {"correlation": 5}},
            {"ph": "X", "cat": "kernel", "name": "k1", "ts": 30.6, "dur": 2.9, "args": {"correlation": 5, "stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "k2", "ts": 33.1, "dur": 4.05, "args": {"correlation": 5, "stream": 7}},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 101.0, "dur": 50.0},
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 110.0, "dur": 5.0},
        ]});
        let test = json!({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 10, "dur": 7},
            {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 20, "dur": 7},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 30, "dur": 3, "args": {"correlation": 9}},
            {"ph": "X", "cat": "kernel", "name": "k1", "ts": 40, "dur": 3, "args": {"correlation": 9, "stream": 7}},
        ]});
        let d = diff(&totals(&control), &totals(&test));
        let mut rows: Vec<(&str, u64, f64, u64, f64)> = d
            .ops
            .iter()
            .map(|o| {
                (
                    o.name.as_str(),
                    o.control_count,
                    o.control_us,
                    o.test_count,
                    o.test_us,
                )
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(
            rows,
            [
                ("ProfilerStep#1", 1, 99.0, 0, 0.0),
                ("ProfilerStep#3", 0, 0.0, 1, 100.0),
                ("a", 1, 4.0, 2, 14.0),
                ("cudaGraphLaunch", 1, 2.0, 0, 0.0),
                ("cudaLaunchKernel", 0, 0.0, 1, 3.0),
                ("k1", 1, 2.0, 1, 3.0),
                ("k2", 1, 3.0, 0, 0.0),
            ]
        );
        assert_eq!(
            d.summary,
            DiffSummary {
                added: 2,
                deleted: 3,
                increased: 1,
                decreased: 0,
                unchanged: 1
            }
        );
    }

    #[test]
    fn a_trace_without_steps_is_compared_whole_and_says_so() {
        let t = totals(
            &json!({"traceEvents": [cpu("a", json!(1), json!(2)), cpu("a", json!(5), json!(2))]}),
        );
        assert_eq!(t.iteration, None);
        assert_eq!(op(&t, "a").map(|o| o.count), Some(2));
        assert!(t.notes[0].contains("no ProfilerStep"), "{:?}", t.notes);
    }

    #[test]
    fn distinct_names_are_capped_and_the_cap_is_stated() {
        let events: Vec<Value> = (0..MAX_OP_NAMES + 3)
            .map(|i| cpu(&format!("op{i}"), json!(i), json!(1)))
            .collect();
        let t = totals(&json!({ "traceEvents": events }));
        assert_eq!(t.ops.len(), MAX_OP_NAMES + 1);
        assert_eq!(op(&t, OTHER_OPS).map(|o| o.count), Some(3));
        assert!(
            t.notes.iter().any(|n| n.contains("distinct names")),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn a_side_of_several_ranks_sums_per_name() {
        let mut a = side(&[("mm", 2, 10.0), ("add", 1, 1.0)]);
        a.iteration = Some(5);
        a.events = 3;
        let mut b = side(&[("mm", 3, 20.0), ("nccl", 1, 7.0)]);
        b.iteration = Some(4);
        b.events = 4;
        let m = merge(vec![a, b]);
        assert_eq!(m.iteration, Some(4));
        assert_eq!(m.events, 7);
        let got: Vec<(&str, u64, f64)> = m
            .ops
            .iter()
            .map(|o| (o.name.as_str(), o.count, o.dur_us))
            .collect();
        assert_eq!(got, [("add", 1, 1.0), ("mm", 5, 30.0), ("nccl", 1, 7.0)]);
    }

    #[test]
    fn ranks_with_distinct_names_sum_into_one_bounded_table() {
        // Each rank names its own ops: the summed side keeps the bound one trace keeps,
        // and the rest are counted under one name with a note.
        let rank = |r: usize| {
            let names: Vec<String> = (0..MAX_OP_NAMES / 4)
                .map(|i| format!("r{r}op{i}"))
                .collect();
            let ops: Vec<(&str, u64, f64)> = names.iter().map(|n| (n.as_str(), 2, 1.0)).collect();
            side(&ops)
        };
        let mut sum = SideSum::default();
        for r in 0..6 {
            sum.add(rank(r));
        }
        let m = sum.finish();
        assert_eq!(m.ops.len(), MAX_OP_NAMES + 1);
        let other = op(&m, OTHER_OPS).expect("the pooled names");
        assert_eq!(other.count, 2 * 2 * (MAX_OP_NAMES / 4) as u64);
        assert_eq!(
            m.ops.iter().map(|o| o.count).sum::<u64>(),
            6 * 2 * (MAX_OP_NAMES / 4) as u64
        );
        assert!(
            m.notes
                .iter()
                .any(|n| n.contains("together name more than 50,000")),
            "{:?}",
            m.notes
        );
    }

    fn side(ops: &[(&str, u64, f64)]) -> OpTotals {
        OpTotals {
            ops: ops
                .iter()
                .map(|&(n, c, d)| OpTotal {
                    name: n.to_string(),
                    count: c,
                    dur_us: d,
                })
                .collect(),
            ..OpTotals::default()
        }
    }

    #[test]
    fn classes_follow_hta_ops_diff_and_rows_sort_by_moved_time() {
        let c = side(&[
            ("gone", 2, 10.0),
            ("more", 1, 5.0),
            ("less", 3, 9.0),
            ("same", 4, 40.0),
        ]);
        let t = side(&[
            ("new", 1, 1.0),
            ("more", 764, 30_805.0),
            ("less", 1, 3.0),
            ("same", 4, 41.0),
        ]);
        let d = diff(&c, &t);
        assert_eq!(
            d.summary,
            DiffSummary {
                added: 1,
                deleted: 1,
                increased: 1,
                decreased: 1,
                unchanged: 1
            }
        );
        let names: Vec<&str> = d.ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["more", "gone", "less", "new", "same"]);
        let more = &d.ops[0];
        assert_eq!(
            (more.diff_count, more.diff_us, more.change),
            (763, 30_800.0, Change::Increased)
        );
        assert_eq!(d.ops[1].change, Change::Deleted);
        assert_eq!(d.ops[1].diff_us, -10.0);
        assert_eq!(
            d.headline().as_deref(),
            Some("the change moved 30.8 ms into more, +763 calls")
        );
        let back = diff(&t, &c);
        assert_eq!(
            back.headline().as_deref(),
            Some("the change took 30.8 ms out of more, −763 calls")
        );
    }

    /// HTA 0.5.0 (`pip install HolisticTraceAnalysis==0.5.0`), each fixture in its own
    /// folder: `TraceDiff.compare_traces(LabeledTrace(label="control", trace_dir=c),
    /// LabeledTrace(label="test", trace_dir=t))` and `TraceDiff.ops_diff` on the same,
    /// defaults otherwise (first rank, first iteration, CPU and GPU).
    /// Control: trace_compare/base. Test: trace_diff/test.
    /// Summary (added, deleted, increased, decreased, unchanged) = (287, 0, 6, 0, 1);
    /// rows 294; control 7 events, 100384 µs; test 11187 events, 673157 µs.
    /// Top movers (name, test count, test µs; absent in control):
    const HTA_TOP: &[(&str, u64, f64)] = &[
        ("cudaMemcpyAsync", 802, 40994.0),
        ("## sparse_data_dist ##", 1, 36898.0),
        ("aten::item", 5, 32455.0),
        ("aten::_local_scalar_dense", 5, 32448.0),
        ("## backward ##", 1, 32224.0),
        ("## forward ##", 1, 23748.0),
    ];

    fn fixture_totals(root: &std::path::Path, rel: &str) -> OpTotals {
        op_totals(|| Ok(open(root, rel)), u64::MAX).unwrap()
    }

    #[test]
    fn agrees_with_hta_trace_diff_on_real_fixtures() {
        let Some(root) = real_fixtures() else { return };
        let base = fixture_totals(
            &root,
            "pytorch_trace/hta__trace_compare__base__base.json.gz",
        );
        let cmp = fixture_totals(
            &root,
            "pytorch_trace/hta__trace_compare__test__test.json.gz",
        );
        let test = fixture_totals(&root, "pytorch_trace/hta__trace_diff__test__test.json.gz");
        // trace_compare base vs test: HTA finds the 7 ops of step 1009 unchanged.
        let d = diff(&base, &cmp);
        assert_eq!(
            d.summary,
            DiffSummary {
                unchanged: 7,
                ..DiffSummary::default()
            }
        );
        assert_eq!((base.events, base.dur_us), (7, 100_384.0));
        let d = diff(&base, &test);
        assert_eq!(
            d.summary,
            DiffSummary {
                added: 287,
                deleted: 0,
                increased: 6,
                decreased: 0,
                unchanged: 1
            }
        );
        assert_eq!(d.ops.len(), 294);
        assert_eq!((test.events, test.dur_us), (11_187, 673_157.0));
        assert_eq!(test.iteration, Some(1009));
        for (o, &(name, count, us)) in d.ops.iter().zip(HTA_TOP) {
            assert_eq!(
                (o.name.as_str(), o.test_count, o.control_count),
                (name, count, 0)
            );
            assert!(
                (o.test_us - us).abs() <= 0.005 * us,
                "{name}: {} vs HTA {us}",
                o.test_us
            );
        }
        assert_eq!(
            d.headline().as_deref(),
            Some("the change moved 41.0 ms into cudaMemcpyAsync, +802 calls")
        );
        // The same, the other way round: everything added is deleted.
        let back = diff(&test, &base);
        assert_eq!(
            back.summary,
            DiffSummary {
                added: 0,
                deleted: 287,
                increased: 0,
                decreased: 6,
                unchanged: 1
            }
        );
    }
}
