//! Bubble attribution (methodology.md, "Bubbles"): for each GPU idle interval of a
//! trace, was eligible work queued at the time?
//!
//! * The queue-depth timeline comes from a per-request log (a request is *upstream*
//!   from `arrival_ts` for `tokenize_ms`, then *queued* for `queue_wait_ms`) or from
//!   Prometheus samples of `num_requests_waiting` (each sample holds until the next;
//!   the last for the median spacing).
//! * Clocks: the trace's absolute time is `baseTimeNanoseconds` + `ts` (Unix epoch);
//!   the log's `arrival_ts` and Prometheus sample timestamps are Unix epoch too. Both
//!   are the wall clocks of the machines that wrote them, so an offset of 0 is assumed;
//!   `offset_ms` is added to every queue time to correct it (queue + offset = trace).
//! * Classes, for an interval `[s, s + d)` with `d ≥ min_idle_us`:
//!   `runtime_bubble` when the scheduler queue held work for any part of it (the
//!   *recoverable* time is that part); else `upstream` when requests were in
//!   tokenization; else `insufficient_load` when the queue data covers the whole
//!   interval (the queue was empty throughout); else `unknown`.
//! * Share of a class = its idle time ÷ (window × devices), the window being first GPU
//!   work start to last end.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analyze::pytorch_trace::{
    Preceded, TraceAnalysis, IDLE_INTERVAL_MIN_US, MAX_IDLE_INTERVALS,
};
use crate::fmt::{format_number, grouped};
use crate::FieldError;

/// Idle intervals shorter than this are not attributed unless asked.
pub const DEFAULT_MIN_IDLE_US: f64 = 100.0;
/// Buckets of the queue-depth series kept for the picture.
const DEPTH_BUCKETS: usize = 240;
/// Runtime bubbles listed by recoverable time.
const RANKED: usize = 20;
/// Trace times above this (µs) are already Unix epoch times (after September 2001).
const EPOCH_US: f64 = 1.0e15;
/// A correction larger than a day is a typo, not a clock offset.
pub const MAX_OFFSET_MS: f64 = 86_400_000.0;

/// What an idle interval was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BubbleClass {
    RuntimeBubble,
    InsufficientLoad,
    Upstream,
    Unknown,
}

impl BubbleClass {
    pub const ALL: [BubbleClass; 4] = [
        BubbleClass::RuntimeBubble,
        BubbleClass::Upstream,
        BubbleClass::InsufficientLoad,
        BubbleClass::Unknown,
    ];

    pub fn slug(self) -> &'static str {
        match self {
            BubbleClass::RuntimeBubble => "runtime_bubble",
            BubbleClass::InsufficientLoad => "insufficient_load",
            BubbleClass::Upstream => "upstream",
            BubbleClass::Unknown => "unknown",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            BubbleClass::RuntimeBubble => "runtime bubble (work queued)",
            BubbleClass::InsufficientLoad => "insufficient load (queue empty)",
            BubbleClass::Upstream => "upstream (work in tokenization)",
            BubbleClass::Unknown => "unknown (no queue data)",
        }
    }
}

/// A piecewise-constant depth: `depth[i]` holds from `t[i]` until `t[i + 1]` (the last
/// for ever); 0 before `t[0]`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Steps {
    t: Vec<f64>,
    depth: Vec<f64>,
}

impl Steps {
    /// How many spans `[a, b)` are open at each time.
    fn from_spans(spans: &[(f64, f64)]) -> Steps {
        let mut edges: Vec<(f64, f64)> = Vec::with_capacity(spans.len() * 2);
        for &(a, b) in spans {
            if b > a {
                edges.push((a, 1.0));
                edges.push((b, -1.0));
            }
        }
        edges.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut steps = Steps::default();
        let mut depth = 0.0;
        for (t, change) in edges {
            depth += change;
            match steps.t.last() {
                Some(&last) if last == t => *steps.depth.last_mut().expect("paired") = depth,
                _ => {
                    steps.t.push(t);
                    steps.depth.push(depth);
                }
            }
        }
        steps
    }

    /// The segments overlapping `[a, b)`: (start, end, depth), clipped.
    fn segments(&self, a: f64, b: f64) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        let first = self.t.partition_point(|&t| t <= a).saturating_sub(1);
        (first..self.t.len())
            .take_while(move |&k| self.t[k] < b)
            .filter_map(move |k| {
                let lo = self.t[k].max(a);
                let hi = self.t.get(k + 1).copied().unwrap_or(f64::INFINITY).min(b);
                (hi > lo).then_some((lo, hi, self.depth[k]))
            })
    }

    /// Time within `[a, b)` with depth above 0.
    fn positive_len(&self, a: f64, b: f64) -> f64 {
        self.segments(a, b)
            .filter(|s| s.2 > 0.0)
            .map(|s| s.1 - s.0)
            .sum()
    }

    fn max_in(&self, a: f64, b: f64) -> f64 {
        self.segments(a, b).map(|s| s.2).fold(0.0, f64::max)
    }
}

/// Where the queue data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueSource {
    RequestLog,
    Prometheus,
}

impl QueueSource {
    pub fn slug(self) -> &'static str {
        match self {
            QueueSource::RequestLog => "request_log",
            QueueSource::Prometheus => "prometheus",
        }
    }
}

/// The queue depth over time on the queue's own clock (Unix epoch µs).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueTimeline {
    pub source: QueueSource,
    waiting: Steps,
    /// Requests in tokenization (request logs with `tokenize_ms` only).
    upstream: Option<Steps>,
    /// The time the data speaks for.
    covered: Option<(f64, f64)>,
    pub notes: Vec<String>,
}

/// Folds request-log rows into a [`QueueTimeline`]; rows whose queue time cannot touch
/// `clip` (queue clock, µs) are counted for coverage but not kept, so memory follows the
/// trace window, not the log.
#[derive(Debug)]
pub struct RequestQueue {
    clip: Option<(f64, f64)>,
    queued: Vec<(f64, f64)>,
    upstream: Vec<(f64, f64)>,
    first: f64,
    last: f64,
    rows: u64,
    unusable: u64,
    with_tokenize: u64,
}

impl RequestQueue {
    pub fn new(clip: Option<(f64, f64)>) -> RequestQueue {
        RequestQueue {
            clip,
            queued: Vec::new(),
            upstream: Vec::new(),
            first: f64::INFINITY,
            last: f64::NEG_INFINITY,
            rows: 0,
            unusable: 0,
            with_tokenize: 0,
        }
    }

    /// One request: arrival in Unix epoch seconds, phase durations in ms.
    pub fn add(
        &mut self,
        arrival_s: Option<f64>,
        tokenize_ms: Option<f64>,
        queue_wait_ms: Option<f64>,
        total_ms: Option<f64>,
    ) {
        self.rows += 1;
        let ok = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0);
        let (Some(arrival), Some(wait)) = (arrival_s.filter(|a| a.is_finite()), ok(queue_wait_ms))
        else {
            self.unusable += 1;
            return;
        };
        let at = arrival * 1e6;
        let tok = ok(tokenize_ms).map_or(0.0, |t| t * 1000.0);
        if tokenize_ms.is_some() {
            self.with_tokenize += 1;
        }
        let queued = (at + tok, at + tok + wait * 1000.0);
        let end = ok(total_ms).map_or(queued.1, |t| (at + t * 1000.0).max(queued.1));
        self.first = self.first.min(at);
        self.last = self.last.max(end);
        let touches = |a: f64, b: f64| self.clip.is_none_or(|(lo, hi)| b > lo && a < hi);
        if queued.1 > queued.0 && touches(queued.0, queued.1) {
            self.queued.push(queued);
        }
        if tok > 0.0 && touches(at, at + tok) {
            self.upstream.push((at, at + tok));
        }
    }

    pub fn finish(self) -> QueueTimeline {
        let mut notes = Vec::new();
        if self.unusable > 0 {
            notes.push(format!(
                "{} of {} requests have no arrival_ts or queue_wait_ms and were left out; \
                 if they queued, idle time counted as insufficient load may hide bubbles",
                grouped(self.unusable),
                grouped(self.rows)
            ));
        }
        if self.with_tokenize == 0 && self.rows > self.unusable {
            notes.push(
                "the log has no tokenize_ms: upstream (front-end) waiting cannot be seen"
                    .to_string(),
            );
        }
        let covered = (self.last >= self.first).then_some((self.first, self.last));
        QueueTimeline {
            source: QueueSource::RequestLog,
            waiting: Steps::from_spans(&self.queued),
            upstream: (self.with_tokenize > 0).then(|| Steps::from_spans(&self.upstream)),
            covered,
            notes,
        }
    }
}

impl QueueTimeline {
    /// From `(Unix epoch ms, requests waiting)` samples, e.g. `vllm:num_requests_waiting`
    /// scraped every few seconds. Each sample holds until the next; the last one for the
    /// median spacing. One sample covers no interval.
    pub fn from_waiting_samples(samples: &[(f64, f64)]) -> QueueTimeline {
        let mut pts: Vec<(f64, f64)> = samples
            .iter()
            .filter(|(t, v)| t.is_finite() && v.is_finite())
            .map(|&(t, v)| (t * 1000.0, v.max(0.0)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.dedup_by(|later, earlier| later.0 == earlier.0);
        let mut notes = Vec::new();
        let mut gaps: Vec<f64> = pts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort_by(f64::total_cmp);
        let hold = gaps.get(gaps.len() / 2).copied();
        let covered = match (pts.first(), pts.last(), hold) {
            (Some(f), Some(l), Some(h)) => {
                notes.push(format!(
                    "{} samples of the waiting-requests gauge, about every {} ms: an interval \
                     shorter than that is judged by the sample before it",
                    grouped(pts.len() as u64),
                    format_number(h / 1000.0, 0)
                ));
                Some((f.0, l.0 + h))
            }
            _ => {
                notes.push(
                    "fewer than two timestamped samples of the waiting-requests gauge: a \
                     single scrape says nothing about the queue over time"
                        .to_string(),
                );
                None
            }
        };
        QueueTimeline {
            source: QueueSource::Prometheus,
            waiting: Steps {
                t: pts.iter().map(|p| p.0).collect(),
                depth: pts.iter().map(|p| p.1).collect(),
            },
            upstream: None,
            covered,
            notes,
        }
    }
}

/// One classified idle interval; `start_us` is on the trace's absolute clock (Unix
/// epoch µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classified {
    pub device: i64,
    pub stream: i64,
    pub start_us: f64,
    pub dur_us: f64,
    pub class: BubbleClass,
    pub preceded_by: Preceded,
    /// The part of the interval with work queued (what removing the bubble could win).
    pub recoverable_us: f64,
    /// Most requests waiting at once during the interval (0 when unknown).
    pub waiting_max: f64,
}

/// Idle time per class (µs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub runtime_bubble: f64,
    pub insufficient_load: f64,
    pub upstream: f64,
    pub unknown: f64,
}

impl Totals {
    pub fn get(&self, c: BubbleClass) -> f64 {
        match c {
            BubbleClass::RuntimeBubble => self.runtime_bubble,
            BubbleClass::InsufficientLoad => self.insufficient_load,
            BubbleClass::Upstream => self.upstream,
            BubbleClass::Unknown => self.unknown,
        }
    }

    fn add(&mut self, c: BubbleClass, us: f64) {
        match c {
            BubbleClass::RuntimeBubble => self.runtime_bubble += us,
            BubbleClass::InsufficientLoad => self.insufficient_load += us,
            BubbleClass::Upstream => self.upstream += us,
            BubbleClass::Unknown => self.unknown += us,
        }
    }

    pub fn all(&self) -> f64 {
        self.runtime_bubble + self.insufficient_load + self.upstream + self.unknown
    }
}

/// One class: total idle time, its share of the window, how many intervals, and what
/// preceded them (slug → count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub class: BubbleClass,
    pub total_us: f64,
    pub share: f64,
    pub count: u64,
    pub preceded_by: BTreeMap<String, u64>,
}

/// Queue depth in one bucket of the trace window (`None` where no queue data covers it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DepthBucket {
    pub start_us: f64,
    pub waiting: Option<f64>,
    pub upstream: Option<f64>,
}

/// The attribution of a trace's idle time against a queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub source: QueueSource,
    pub offset_ms: f64,
    pub min_idle_us: f64,
    /// How the clocks were aligned, in words.
    pub alignment: String,
    /// The trace window on its absolute clock (µs).
    pub window_start_us: f64,
    pub window_end_us: f64,
    pub devices: u64,
    pub intervals: Vec<Classified>,
    pub totals_us: Totals,
    pub classes: Vec<ClassSummary>,
    /// Σ recoverable time of the runtime bubbles.
    pub recoverable_us: f64,
    /// The runtime bubbles with the most recoverable time, most first.
    pub ranked: Vec<Classified>,
    pub queue_depth: Vec<DepthBucket>,
    pub notes: Vec<String>,
}

impl Attribution {
    pub fn window_us(&self) -> f64 {
        self.window_end_us - self.window_start_us
    }

    pub fn summary(&self, c: BubbleClass) -> Option<&ClassSummary> {
        self.classes.iter().find(|s| s.class == c)
    }
}

/// Checks `offset_ms` and `min_idle_us` as a person gave them.
pub fn check_knobs(offset_ms: f64, min_idle_us: f64) -> Result<(), Vec<FieldError>> {
    let mut errors = Vec::new();
    if !(offset_ms.is_finite() && offset_ms.abs() <= MAX_OFFSET_MS) {
        errors.push(FieldError::new(
            "offset_ms",
            "must be a number of milliseconds between -86,400,000 and 86,400,000 (one day)",
        ));
    }
    if !(min_idle_us.is_finite() && (IDLE_INTERVAL_MIN_US..=1e9).contains(&min_idle_us)) {
        errors.push(FieldError::new(
            "min_idle_us",
            format!(
                "must be between {IDLE_INTERVAL_MIN_US} µs (the shortest idle interval the trace \
                 analysis keeps) and 1,000,000,000 µs"
            ),
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The trace's GPU window on its absolute clock (µs), and the offset to add to trace
/// `ts`: `baseTimeNanoseconds` / 1000, or 0 when `ts` are epoch times already (or no
/// base is known).
fn trace_clock(trace: &TraceAnalysis) -> Option<(f64, f64, f64)> {
    let [first, last] = trace.gpu_window_us?;
    let base = trace.base_time_ns.map_or(0.0, |ns| ns as f64 / 1000.0);
    Some((base, base + first, base + last))
}

/// The trace window on the queue's clock (µs), for reading only the queue data that can
/// touch it.
pub fn queue_window(trace: &TraceAnalysis, offset_ms: f64) -> Option<(f64, f64)> {
    let (_, w0, w1) = trace_clock(trace)?;
    let off = offset_ms * 1000.0;
    Some((w0 - off, w1 - off))
}

/// Classifies every idle interval of `trace` of at least `min_idle_us` against `queue`,
/// with `offset_ms` added to the queue's clock.
pub fn attribute(
    trace: &TraceAnalysis,
    queue: &QueueTimeline,
    offset_ms: f64,
    min_idle_us: f64,
) -> Result<Attribution, Vec<FieldError>> {
    check_knobs(offset_ms, min_idle_us)?;
    let Some((base, w0, w1)) = trace_clock(trace) else {
        let why = if trace.temporal.is_empty() {
            "the trace holds no GPU work, so it has no idle intervals to attribute"
        } else {
            "the trace was analyzed before idle intervals were kept: re-analyze it"
        };
        return Err(vec![FieldError::new("trace", why)]);
    };
    let mut notes = Vec::new();
    let clock = match trace.base_time_ns {
        Some(_) => "baseTimeNanoseconds + ts (µs)",
        None if w0 > EPOCH_US => "ts (already Unix epoch µs; no baseTimeNanoseconds)",
        None => {
            notes.push(
                "the trace has no baseTimeNanoseconds and its ts are not epoch times: its \
                 clock cannot be placed next to the queue's without offset_ms (queue time + \
                 offset = trace ts)"
                    .to_string(),
            );
            "ts (µs from an unknown origin)"
        }
    };
    let queue_clock = match queue.source {
        QueueSource::RequestLog => "arrival_ts (Unix epoch s)",
        QueueSource::Prometheus => "sample timestamps (Unix epoch ms)",
    };
    let offset_us = offset_ms * 1000.0;
    let alignment = if offset_ms == 0.0 {
        format!(
            "trace {clock} against the queue's {queue_clock}: both are wall clocks of the \
             machines that wrote them, so an offset of 0 ms is assumed; pass offset_ms \
             (queue time + offset = trace time) to correct it"
        )
    } else {
        format!(
            "trace {clock} against the queue's {queue_clock}, queue times shifted by {} ms \
             as given (queue time + offset = trace time)",
            format_number(offset_ms, 3)
        )
    };
    // The queue's coverage on the trace clock.
    let covered = queue.covered.map(|(a, b)| (a + offset_us, b + offset_us));
    match covered {
        Some((a, b)) if b <= w0 || a >= w1 => notes.push(format!(
            "the queue data ({} s to {} s on the trace clock) does not overlap the trace window \
             ({} s to {} s): every interval is unknown; an offset_ms near {} lines their starts up",
            format_number(a / 1e6, 3),
            format_number(b / 1e6, 3),
            format_number(w0 / 1e6, 3),
            format_number(w1 / 1e6, 3),
            format_number((w0 - a) / 1000.0 + offset_ms, 0)
        )),
        _ => {}
    }
    notes.extend(queue.notes.iter().cloned());
    if trace.idle_intervals_found > trace.idle_intervals.len() as u64 {
        notes.push(format!(
            "the trace had {} idle intervals of {IDLE_INTERVAL_MIN_US} µs or more; the longest {} \
             are attributed ({} ms of idle time in the rest is not)",
            grouped(trace.idle_intervals_found),
            grouped(MAX_IDLE_INTERVALS as u64),
            format_number(trace.idle_intervals_dropped_us / 1000.0, 1)
        ));
    }

    let mut intervals = Vec::new();
    for iv in trace
        .idle_intervals
        .iter()
        .filter(|i| i.dur_us >= min_idle_us)
    {
        let s = base + iv.start_us;
        let e = s + iv.dur_us;
        // On the queue clock.
        let (qs, qe) = (s - offset_us, e - offset_us);
        let covered_len = covered.map_or(0.0, |(a, b)| (e.min(b) - s.max(a)).max(0.0));
        let queued = queue.waiting.positive_len(qs, qe);
        let upstream = queue
            .upstream
            .as_ref()
            .map_or(0.0, |u| u.positive_len(qs, qe));
        let class = if covered_len <= 0.0 {
            BubbleClass::Unknown
        } else if queued > 0.0 {
            BubbleClass::RuntimeBubble
        } else if upstream > 0.0 {
            BubbleClass::Upstream
        } else if covered_len + 1e-6 >= iv.dur_us {
            BubbleClass::InsufficientLoad
        } else {
            BubbleClass::Unknown
        };
        intervals.push(Classified {
            device: iv.device,
            stream: iv.stream,
            start_us: s,
            dur_us: iv.dur_us,
            class,
            preceded_by: iv.preceded_by,
            recoverable_us: if class == BubbleClass::RuntimeBubble {
                queued
            } else {
                0.0
            },
            waiting_max: if class == BubbleClass::Unknown {
                0.0
            } else {
                queue.waiting.max_in(qs, qe)
            },
        });
    }

    let devices = trace
        .devices
        .iter()
        .filter(|d| d.gpu_events > 0)
        .count()
        .max(1) as u64;
    let denominator = (w1 - w0) * devices as f64;
    let mut totals = Totals::default();
    let mut classes: Vec<ClassSummary> = Vec::new();
    for c in BubbleClass::ALL {
        let mine: Vec<&Classified> = intervals.iter().filter(|i| i.class == c).collect();
        let total: f64 = mine.iter().map(|i| i.dur_us).sum();
        totals.add(c, total);
        let mut preceded_by = BTreeMap::new();
        for i in &mine {
            *preceded_by
                .entry(i.preceded_by.slug().to_string())
                .or_insert(0) += 1;
        }
        classes.push(ClassSummary {
            class: c,
            total_us: total,
            share: if denominator > 0.0 {
                total / denominator
            } else {
                0.0
            },
            count: mine.len() as u64,
            preceded_by,
        });
    }
    let mut ranked: Vec<Classified> = intervals
        .iter()
        .filter(|i| i.class == BubbleClass::RuntimeBubble)
        .cloned()
        .collect();
    ranked.sort_by(|a, b| {
        b.recoverable_us
            .total_cmp(&a.recoverable_us)
            .then(a.start_us.total_cmp(&b.start_us))
    });
    ranked.truncate(RANKED);
    let recoverable_us = intervals.iter().map(|i| i.recoverable_us).sum();

    let queue_depth = depth_series(queue, covered, w0, w1, offset_us);
    Ok(Attribution {
        source: queue.source,
        offset_ms,
        min_idle_us,
        alignment,
        window_start_us: w0,
        window_end_us: w1,
        devices,
        intervals,
        totals_us: totals,
        classes,
        recoverable_us,
        ranked,
        queue_depth,
        notes,
    })
}

/// The most requests waiting (and in tokenization) per bucket of the trace window.
fn depth_series(
    queue: &QueueTimeline,
    covered: Option<(f64, f64)>,
    w0: f64,
    w1: f64,
    offset_us: f64,
) -> Vec<DepthBucket> {
    if w1 <= w0 {
        return Vec::new();
    }
    let width = (w1 - w0) / DEPTH_BUCKETS as f64;
    (0..DEPTH_BUCKETS)
        .map(|b| {
            let s = w0 + b as f64 * width;
            let e = s + width;
            let seen = covered.is_some_and(|(a, z)| e > a && s < z);
            let (qs, qe) = (s - offset_us, e - offset_us);
            DepthBucket {
                start_us: s,
                waiting: seen.then(|| queue.waiting.max_in(qs, qe)),
                upstream: queue
                    .upstream
                    .as_ref()
                    .filter(|_| seen)
                    .map(|u| u.max_in(qs, qe)),
            }
        })
        .collect()
}

/// What the attribution means for the method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// No idle interval long enough to attribute.
    NoIdle,
    /// No queue data covers any interval.
    Unknown,
    /// Every covered interval had an empty queue.
    AllInsufficientLoad,
    /// The scheduler queue was empty but the front end had work: front-end starvation.
    Upstream,
    /// Work was queued while the GPU idled.
    RuntimeBubbles,
}

impl Finding {
    pub fn slug(self) -> &'static str {
        match self {
            Finding::NoIdle => "no_idle",
            Finding::Unknown => "unknown",
            Finding::AllInsufficientLoad => "all_insufficient_load",
            Finding::Upstream => "upstream",
            Finding::RuntimeBubbles => "runtime_bubbles",
        }
    }
}

/// Step 3's reading of an attribution and the report fields it gives the journal.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    pub finding: Finding,
    pub headline: String,
    /// The dominant bubble, or why there is none.
    pub dominant: String,
    /// The recoverable-time estimate, in words.
    pub recoverable: String,
    pub ruled_out: String,
    /// The smallest next experiment.
    pub next_experiment: String,
    /// Scheduler, batching and kernel suggestions must not be offered.
    pub no_tuning: bool,
}

/// The first experiment when the GPU idles with an empty queue.
pub const REPLAY_EXPERIMENT: &str = "Replay at a higher fixed concurrency with everything else \
    unchanged (same model, engine, flags, prompt and output lengths), trace the same window and \
    attribute again: only idle time with work still queued is a bubble worth scheduler, \
    batching or kernel work.";

fn ms(us: f64) -> String {
    format!("{} ms", format_number(us / 1000.0, 1))
}

/// "1 interval", "12 intervals".
fn intervals(n: u64) -> String {
    if n == 1 {
        "1 interval".to_string()
    } else {
        format!("{} intervals", grouped(n))
    }
}

fn pct(x: f64) -> String {
    format!("{}%", format_number(x * 100.0, 0))
}

/// Reads an attribution the way the method does (see the module docs for the classes).
pub fn advise(a: &Attribution) -> Advice {
    let t = &a.totals_us;
    let count = |c| a.summary(c).map_or(0, |s| s.count);
    let window = a.window_us() * a.devices as f64;
    let share = |us: f64| if window > 0.0 { us / window } else { 0.0 };
    let recoverable = format!(
        "{} of {} GPU time ({})",
        ms(a.recoverable_us),
        ms(window),
        pct(share(a.recoverable_us))
    );
    if a.intervals.is_empty() {
        return Advice {
            finding: Finding::NoIdle,
            headline: format!(
                "No GPU idle interval of {} µs or more in the trace window: idle time is not \
                 where this window's time goes.",
                format_number(a.min_idle_us, 0)
            ),
            dominant: "none: no idle interval to attribute".to_string(),
            recoverable,
            ruled_out: "GPU bubbles: the GPU ran work throughout the window".to_string(),
            next_experiment: "Rank the kernels that hold the time (steps 4 and 5).".to_string(),
            no_tuning: false,
        };
    }
    let known = t.runtime_bubble + t.upstream + t.insufficient_load;
    let unknown_part = if t.unknown > 0.0 {
        format!(
            " {} in {} has no queue data.",
            ms(t.unknown),
            intervals(count(BubbleClass::Unknown))
        )
    } else {
        String::new()
    };
    if known <= 0.0 {
        return Advice {
            finding: Finding::Unknown,
            headline: format!(
                "No queue data covers the {} of GPU idle time: bubbles can be neither called \
                 nor ruled out.",
                ms(t.unknown)
            ),
            dominant: "unknown: no queue data over the idle intervals".to_string(),
            recoverable,
            ruled_out: "nothing yet".to_string(),
            next_experiment: "Capture a request log (arrival_ts, queue_wait_ms) or timestamped \
                Prometheus scrapes over the same window as the trace, or correct offset_ms, \
                and attribute again."
                .to_string(),
            no_tuning: false,
        };
    }
    if t.runtime_bubble <= 0.0 && t.upstream <= 0.0 {
        return Advice {
            finding: Finding::AllInsufficientLoad,
            headline: format!(
                "All {} of GPU idle time the queue data covers ({}, {} of the window) \
                 had an empty queue: this is insufficient offered load, not a runtime bubble.{}",
                ms(t.insufficient_load),
                intervals(count(BubbleClass::InsufficientLoad)),
                pct(share(t.insufficient_load)),
                unknown_part
            ),
            dominant: "none: the GPU idled only while no request was waiting".to_string(),
            recoverable: format!("{recoverable}; none by scheduler, batching or kernel changes"),
            ruled_out: "runtime bubbles: the queue was empty in every idle interval with queue \
                data, so scheduler, batching and kernel changes cannot recover this idle time"
                .to_string(),
            next_experiment: REPLAY_EXPERIMENT.to_string(),
            no_tuning: true,
        };
    }
    if t.upstream > t.runtime_bubble {
        return Advice {
            finding: Finding::Upstream,
            headline: format!(
                "In {} ({}) the scheduler queue was empty while requests were still \
                 being tokenized: front-end starvation, not a GPU-side bubble.{}",
                intervals(count(BubbleClass::Upstream)),
                ms(t.upstream),
                unknown_part
            ),
            dominant: format!(
                "front-end starvation: {} of idle time while work waited upstream",
                ms(t.upstream)
            ),
            recoverable,
            ruled_out: "insufficient offered load: requests had arrived; scheduler and kernel \
                changes: the scheduler had nothing to run"
                .to_string(),
            next_experiment: "Measure the front end (tokenization, preprocessing) at the same \
                fixed concurrency; add front-end workers or take tokenization off the serving \
                loop, then attribute again."
                .to_string(),
            no_tuning: true,
        };
    }
    // Runtime bubbles: the cause holding the most recoverable time.
    let mut by_cause: BTreeMap<Preceded, (f64, u64)> = BTreeMap::new();
    for i in a
        .intervals
        .iter()
        .filter(|i| i.class == BubbleClass::RuntimeBubble)
    {
        let e = by_cause.entry(i.preceded_by).or_insert((0.0, 0));
        e.0 += i.recoverable_us;
        e.1 += 1;
    }
    let (cause, (cause_us, cause_n)) = by_cause
        .into_iter()
        .max_by(|x, y| x.1 .0.total_cmp(&y.1 .0))
        .expect("at least one runtime bubble");
    let empty = if t.insufficient_load > 0.0 {
        format!(
            " ({} of other idle time had an empty queue)",
            ms(t.insufficient_load)
        )
    } else {
        String::new()
    };
    Advice {
        finding: Finding::RuntimeBubbles,
        headline: format!(
            "Work was queued during {} of GPU idle time in {}: runtime bubbles, \
             ranked below by recoverable time.{}",
            ms(a.recoverable_us),
            intervals(count(BubbleClass::RuntimeBubble)),
            unknown_part
        ),
        dominant: format!(
            "idle after {}: {}, {} recoverable",
            cause.label(),
            intervals(cause_n),
            ms(cause_us)
        ),
        recoverable,
        ruled_out: format!(
            "insufficient offered load: requests were waiting while the GPU idled{empty}"
        ),
        next_experiment: format!(
            "{} Then attribute again at the same fixed concurrency.",
            remedy(cause)
        ),
        no_tuning: false,
    }
}

/// The smallest change that tests a bubble cause.
fn remedy(cause: Preceded) -> &'static str {
    match cause {
        Preceded::Sync => {
            "Find the synchronisation before the bubbles (.item(), .cpu(), a blocking copy) and \
             make it asynchronous or move it off the step."
        }
        Preceded::StepEnd => {
            "The gap sits between steps: time the scheduler's per-step work and try the \
             engine's asynchronous scheduling or output processing."
        }
        Preceded::Memcpy => {
            "Make the copy before the bubbles asynchronous (pinned memory, non-blocking) so it \
             overlaps compute."
        }
        Preceded::HostWait => {
            "The next launch came late: profile the host between steps (scheduling, sampling, \
             Python) and shorten it, or capture the step in a CUDA graph."
        }
        Preceded::LaunchGap => {
            "Kernels were launched but started late: cut launch overhead (CUDA graphs, fewer \
             small kernels)."
        }
        Preceded::Other => "Open the trace at the largest bubble and name what the host did.",
    }
}

/// The report fields of the method for the journal draft, one line each.
pub fn report_lines(a: &Attribution) -> Vec<String> {
    let v = advise(a);
    vec![
        format!("Dominant bubble: {}", v.dominant),
        format!("Recoverable time: {}", v.recoverable),
        format!("Ruled out: {}", v.ruled_out),
        format!("Next experiment: {}", v.next_experiment),
    ]
}

/// Step 3's suspects for a waiting window read against an attribution: none when it
/// rules scheduler, batching and kernel work out (the advice says what to do instead);
/// without the low-load suspect when work was seen queued.
pub fn suspects_with(suspects: Vec<&'static str>, advice: &Advice) -> Vec<&'static str> {
    match advice.finding {
        _ if advice.no_tuning => Vec::new(),
        Finding::RuntimeBubbles => suspects
            .into_iter()
            .filter(|s| !s.starts_with(super::resources::LOW_LOAD))
            .collect(),
        _ => suspects,
    }
}

/// The journal draft's RESULT followed by the method's report fields from an attribution.
pub fn with_report(result: &str, a: &Attribution) -> String {
    let report = report_lines(a).join("\n");
    if result.trim().is_empty() {
        report
    } else {
        format!("{result}\n\n{report}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pytorch_trace::{DeviceInfo, IdleInterval};

    /// Trace zero at 1,700,000,000 s (Unix epoch).
    const BASE_NS: u64 = 1_700_000_000_000_000_000;
    const BASE_S: f64 = 1_700_000_000.0;

    fn trace(gaps: &[(f64, f64, Preceded)], span_us: f64) -> TraceAnalysis {
        let doc = format!(r#"{{"baseTimeNanoseconds": {BASE_NS}, "traceEvents": []}}"#);
        let mut t = crate::analyze::pytorch_trace::analyze(
            doc.as_bytes(),
            &crate::analyze::Options::default(),
        )
        .unwrap();
        t.gpu_window_us = Some([0.0, span_us]);
        t.devices = vec![DeviceInfo {
            device: 0,
            name: None,
            total_global_mem: None,
            num_sms: None,
            gpu_events: 10,
            streams: 1,
            busy_us: span_us,
            span_us,
            busy_ratio: None,
        }];
        t.idle_intervals = gaps
            .iter()
            .map(|&(start_us, dur_us, preceded_by)| IdleInterval {
                device: 0,
                stream: 7,
                start_us,
                dur_us,
                preceded_by,
            })
            .collect();
        t.idle_intervals_found = gaps.len() as u64;
        t
    }

    /// A request at `at_ms` after the trace zero: tokenize, then queued.
    fn log(requests: &[(f64, Option<f64>, f64, f64)]) -> QueueTimeline {
        let mut q = RequestQueue::new(None);
        for &(at_ms, tok, wait, total) in requests {
            q.add(Some(BASE_S + at_ms / 1000.0), tok, Some(wait), Some(total));
        }
        q.finish()
    }

    fn classes(a: &Attribution) -> Vec<BubbleClass> {
        a.intervals.iter().map(|i| i.class).collect()
    }

    #[test]
    fn a_gap_while_requests_wait_is_a_runtime_bubble() {
        // Idle 10–12 ms; a request waits in the queue 9–11.5 ms; the log runs 0–50 ms.
        let t = trace(&[(10_000.0, 2_000.0, Preceded::HostWait)], 50_000.0);
        let q = log(&[(0.0, None, 0.0, 50.0), (9.0, None, 2.5, 20.0)]);
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&a), [BubbleClass::RuntimeBubble]);
        let iv = &a.intervals[0];
        assert!((iv.recoverable_us - 1_500.0).abs() < 1e-3, "{iv:?}");
        assert_eq!(iv.waiting_max, 1.0);
        assert!((iv.start_us - (BASE_S * 1e6 + 10_000.0)).abs() < 1.0);
        assert_eq!(a.totals_us.runtime_bubble, 2_000.0);
        assert_eq!(a.ranked.len(), 1);
        let v = advise(&a);
        assert_eq!(v.finding, Finding::RuntimeBubbles);
        assert!(v.dominant.contains("host wait"), "{}", v.dominant);
        assert!(v.ruled_out.starts_with("insufficient offered load"));
        assert!(!v.no_tuning);
        let suspects = vec![
            "insufficient offered load: the queue was empty",
            "lock contention",
        ];
        assert_eq!(suspects_with(suspects, &v), ["lock contention"]);
    }

    #[test]
    fn a_gap_with_an_empty_queue_is_insufficient_load() {
        // The only queued request waits 1–3 ms; the gap is 20–25 ms, inside the log's span.
        let t = trace(&[(20_000.0, 5_000.0, Preceded::StepEnd)], 50_000.0);
        let q = log(&[(1.0, Some(0.5), 1.5, 49.0)]);
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&a), [BubbleClass::InsufficientLoad]);
        let s = a.summary(BubbleClass::InsufficientLoad).unwrap();
        assert_eq!(s.count, 1);
        assert!((s.share - 0.1).abs() < 1e-9);
        assert_eq!(s.preceded_by.get("step_end"), Some(&1));
        let v = advise(&a);
        assert_eq!(v.finding, Finding::AllInsufficientLoad);
        assert!(v.no_tuning);
        assert_eq!(v.next_experiment, REPLAY_EXPERIMENT);
        assert!(
            v.headline.contains("insufficient offered load"),
            "{}",
            v.headline
        );
        let suspects = vec!["insufficient offered load: …", "lock contention"];
        assert!(suspects_with(suspects, &v).is_empty());
        let drafted = with_report("p95 TTFT 780 ms", &a);
        assert!(drafted.starts_with("p95 TTFT 780 ms\n\nDominant bubble: none"));
        let lines = report_lines(&a);
        assert!(lines[0].starts_with("Dominant bubble: none"));
        assert!(lines[2].starts_with("Ruled out: runtime bubbles"));
        assert!(lines[3].contains("higher fixed concurrency"));
    }

    #[test]
    fn a_gap_no_data_covers_is_unknown() {
        // The log ends at 5 ms; the gap is 30–31 ms. A gap half covered is unknown too.
        let t = trace(
            &[
                (30_000.0, 1_000.0, Preceded::Sync),
                (4_000.0, 2_000.0, Preceded::Memcpy),
            ],
            50_000.0,
        );
        let q = log(&[(0.0, None, 0.0, 5.0)]);
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&a), [BubbleClass::Unknown, BubbleClass::Unknown]);
        assert_eq!(advise(&a).finding, Finding::Unknown);
        assert!(!advise(&a).no_tuning);
    }

    #[test]
    fn a_clock_offset_moves_the_queue_onto_the_trace() {
        // The log's clock runs 100 ms behind: the request's queue time 9–12 ms on the trace
        // clock is written as −91…−88 ms. Without the offset the gap looks empty.
        let t = trace(&[(10_000.0, 1_000.0, Preceded::LaunchGap)], 50_000.0);
        let q = log(&[(-100.0, None, 0.0, 60.0), (-91.0, None, 3.0, 10.0)]);
        let plain = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&plain), [BubbleClass::Unknown]);
        assert!(plain.notes.iter().any(|n| n.contains("does not overlap")));
        assert!(plain.alignment.contains("offset of 0 ms is assumed"));
        let shifted = attribute(&t, &q, 100.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&shifted), [BubbleClass::RuntimeBubble]);
        assert!((shifted.recoverable_us - 1_000.0).abs() < 1e-3);
        assert!(shifted.alignment.contains("shifted by 100.000 ms"));
    }

    #[test]
    fn tokenization_without_a_queue_is_upstream() {
        let t = trace(&[(10_000.0, 2_000.0, Preceded::HostWait)], 50_000.0);
        // Tokenizing 9–13 ms, queued 13–13.1 ms (after the gap).
        let q = log(&[(0.0, None, 0.0, 50.0), (9.0, Some(4.0), 0.1, 30.0)]);
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(classes(&a), [BubbleClass::Upstream]);
        let v = advise(&a);
        assert_eq!(v.finding, Finding::Upstream);
        assert!(v.no_tuning);
    }

    #[test]
    fn min_idle_filters_and_bad_knobs_are_refused() {
        let t = trace(
            &[
                (1_000.0, 80.0, Preceded::Other),
                (2_000.0, 500.0, Preceded::Other),
            ],
            10_000.0,
        );
        let q = log(&[(0.0, None, 0.0, 10.0)]);
        assert_eq!(attribute(&t, &q, 0.0, 100.0).unwrap().intervals.len(), 1);
        assert_eq!(attribute(&t, &q, 0.0, 50.0).unwrap().intervals.len(), 2);
        let errors = attribute(&t, &q, f64::NAN, 10.0).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["offset_ms", "min_idle_us"]);
        let mut none = t.clone();
        none.gpu_window_us = None;
        assert_eq!(
            attribute(&none, &q, 0.0, 100.0).unwrap_err()[0].field,
            "trace"
        );
    }

    #[test]
    fn prometheus_samples_hold_until_the_next() {
        // Scrapes every 2 s from trace zero; 3 waiting at 2 s, 0 otherwise.
        let zero_ms = BASE_S * 1000.0;
        let q = QueueTimeline::from_waiting_samples(&[
            (zero_ms, 0.0),
            (zero_ms + 2_000.0, 3.0),
            (zero_ms + 4_000.0, 0.0),
            (zero_ms + 6_000.0, 0.0),
        ]);
        let t = trace(
            &[
                (1_000_000.0, 500_000.0, Preceded::Other),
                (2_500_000.0, 1_000.0, Preceded::HostWait),
                (9_000_000.0, 1_000.0, Preceded::Other),
            ],
            10_000_000.0,
        );
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(
            classes(&a),
            [
                BubbleClass::InsufficientLoad,
                BubbleClass::RuntimeBubble,
                BubbleClass::Unknown
            ]
        );
        assert_eq!(a.intervals[1].waiting_max, 3.0);
        let single = QueueTimeline::from_waiting_samples(&[(zero_ms, 4.0)]);
        let a = attribute(&t, &single, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert!(a.intervals.iter().all(|i| i.class == BubbleClass::Unknown));
        assert!(a.notes.iter().any(|n| n.contains("single scrape")));
    }

    #[test]
    fn depth_series_follows_the_queue_and_marks_what_is_not_covered() {
        let t = trace(&[(10_000.0, 2_000.0, Preceded::HostWait)], 48_000.0);
        let q = log(&[
            (0.0, None, 0.0, 24.0),
            (9.0, None, 2.5, 10.0),
            (9.5, None, 1.0, 5.0),
        ]);
        let a = attribute(&t, &q, 0.0, DEFAULT_MIN_IDLE_US).unwrap();
        assert_eq!(a.queue_depth.len(), DEPTH_BUCKETS);
        let max = a
            .queue_depth
            .iter()
            .filter_map(|b| b.waiting)
            .fold(0.0, f64::max);
        assert_eq!(max, 2.0);
        assert_eq!(
            a.queue_depth.last().unwrap().waiting,
            None,
            "log ends at 24 ms"
        );
        assert_eq!(a.queue_depth[0].waiting, Some(0.0));
    }

    #[test]
    fn steps_count_overlapping_spans() {
        let s = Steps::from_spans(&[(0.0, 10.0), (5.0, 15.0), (20.0, 30.0)]);
        assert_eq!(s.positive_len(0.0, 40.0), 25.0);
        assert_eq!(s.max_in(0.0, 40.0), 2.0);
        assert_eq!(s.max_in(10.0, 20.0), 1.0);
        assert_eq!(s.positive_len(15.0, 20.0), 0.0);
        assert_eq!(s.positive_len(-5.0, 2.0), 2.0);
    }
}
