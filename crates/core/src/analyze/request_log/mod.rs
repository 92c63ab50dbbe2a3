//! Per-request telemetry (JSON Lines) with the fields of methodology.md:
//! `request_id, arrival_ts, tokenize_ms, queue_wait_ms, prefill_ms,
//! first_token_ms, decode_ms, itl_p50_ms, itl_p99_ms, detokenize_ms, total_ms,
//! prompt_tokens, output_tokens, batch_size_at_admission, kv_blocks_used,
//! prefix_cache_hit_tokens, model_version, tenant`.
//!
//! Any field may be missing; numbers may be integers or floats; unknown fields
//! are kept in `extra`. Bare `NaN`/`Infinity` are rejected with the line number
//! (never silently dropped). The file is read one line at a time.

use super::{AnalyzeError, Options};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// Longest accepted line; one request never needs more.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// At most this many distinct tenants / model versions are tracked; the rest
/// are counted under "(other)" so a high-cardinality field cannot grow memory.
const MAX_FACETS: usize = 1000;

/// Per-tenant breakdowns listed (largest tenants first).
const MAX_TENANT_BREAKDOWNS: usize = 50;

mod plain;
mod row;
pub use plain::Hint;
pub use row::*;

/// How one request ended, as far as its optional `status`, `finish_reason` and `error`
/// fields say (a row without them counts as succeeded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Errored,
    Cancelled,
}

/// Cancelled: `finish_reason` or `status` abort/aborted/cancel(l)ed. Errored: a
/// non-empty `error`, an HTTP `status` of 400 or more, a `status` of error, failed,
/// failure or timeout, or `finish_reason` error.
pub fn outcome(status: Option<&str>, finish_reason: Option<&str>, error: Option<&str>) -> Outcome {
    let norm = |v: Option<&str>| v.map(|s| s.trim().to_ascii_lowercase()).unwrap_or_default();
    let (status, finish) = (norm(status), norm(finish_reason));
    let cancelled =
        |s: &str| matches!(s, "abort" | "aborted" | "cancelled" | "canceled" | "cancel");
    if cancelled(&finish) || cancelled(&status) {
        return Outcome::Cancelled;
    }
    let error = error
        .map(str::trim)
        .is_some_and(|e| !e.is_empty() && e != "null");
    let http_error = status.parse::<u16>().is_ok_and(|code| code >= 400);
    let failed = matches!(
        status.as_str(),
        "error" | "errored" | "failed" | "failure" | "fail" | "timeout" | "timed_out"
    );
    if error || http_error || failed || finish == "error" {
        Outcome::Errored
    } else {
        Outcome::Succeeded
    }
}

/// Count of rows per distinct tenant / model version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Facet {
    pub name: String,
    /// Rows with this value in the whole file (before filters).
    pub rows: u64,
}

/// Phase timings of one tenant (filters applied).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantBreakdown {
    pub tenant: String,
    pub rows: u64,
    pub first_token_ms: Summary,
    pub total_ms: Summary,
    pub share_of_ttft: BTreeMap<String, f64>,
    pub dominant_phase: Option<String>,
}

/// Result of the request-log analyzer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestLogAnalysis {
    /// Rows that passed the filters (and were analyzed).
    pub rows: u64,
    /// All rows in the file.
    pub rows_total: u64,
    /// Per phase field (`tokenize_ms`, `queue_wait_ms`, `prefill_ms`,
    /// `first_token_ms`, `decode_ms`, `detokenize_ms`, `total_ms`, in ms per request;
    /// `itl_p50_ms`, `itl_p99_ms` and the computed `tpot_ms`, in ms per token):
    /// distribution over rows that have it.
    pub phases: BTreeMap<String, Summary>,
    /// Σ phase / Σ first_token_ms over rows with both, for tokenize, queue
    /// wait and prefill; `other_ms` is the unexplained rest (sampling, gaps).
    pub share_of_ttft: BTreeMap<String, f64>,
    /// Like `share_of_ttft` but of `total_ms`, adding decode and detokenize.
    pub share_of_e2e: BTreeMap<String, f64>,
    /// `share_of_ttft` over the slow tail only: rows whose first_token_ms is at
    /// or above its p95 ("where does p95 TTFT go").
    pub share_of_ttft_p95_tail: BTreeMap<String, f64>,
    /// The phase with the largest share of TTFT (of E2E when TTFT is absent);
    /// `other_ms` means the time is between the recorded phases.
    pub dominant_phase: Option<String>,
    pub dominant_share: Option<f64>,
    /// The phase with the largest share of E2E latency.
    pub dominant_phase_e2e: Option<String>,
    pub tenants: Vec<Facet>,
    pub model_versions: Vec<Facet>,
    /// Per tenant (largest first, at most 50), filters applied.
    pub by_tenant: Vec<TenantBreakdown>,
    /// First and last `arrival_ts` among analyzed rows (epoch seconds).
    pub arrival_first: Option<f64>,
    pub arrival_last: Option<f64>,
    /// Set when the log held more matching rows than are kept in memory: the
    /// percentiles, shares and per-tenant tables are of a uniform sample of this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_rows: Option<u64>,
    pub notes: Vec<String>,
}

/// Column indices in the per-row store.
const TOK: usize = 0;
const QUEUE: usize = 1;
const PREFILL: usize = 2;
pub(super) const FIRST: usize = 3;
const DECODE: usize = 4;
const DETOK: usize = 5;
const TOTAL: usize = 6;
const NCOLS: usize = 10;
/// The kept columns; `tpot_ms` is computed per request ([`RequestRow::tpot_ms`]).
pub(super) const COL_NAMES: [&str; NCOLS] = [
    "tokenize_ms",
    "queue_wait_ms",
    "prefill_ms",
    "first_token_ms",
    "decode_ms",
    "detokenize_ms",
    "total_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "tpot_ms",
];
pub(super) const TTFT_PARTS: [usize; 3] = [TOK, QUEUE, PREFILL];
const E2E_PARTS: [usize; 5] = [TOK, QUEUE, PREFILL, DECODE, DETOK];

/// Bounded-cardinality value counter.
#[derive(Default)]
struct Facets {
    /// foldhash: looked up twice per row, and SipHash showed in the load's profile.
    index: HashMap<String, u32, foldhash::fast::RandomState>,
    names: Vec<String>,
    rows: Vec<u64>,
    overflow_rows: u64,
}

/// Names up to which a list is searched in order rather than through its index: a
/// log's tenants and model versions are usually a handful, and comparing a few short
/// names costs less than hashing one.
const FEW_NAMES: usize = 8;

/// The position of `name` in `names` (which `index` maps), if there.
pub(crate) fn known_name(
    names: &[impl AsRef<str>],
    index: &HashMap<String, u32, foldhash::fast::RandomState>,
    name: &str,
) -> Option<u32> {
    if names.len() <= FEW_NAMES {
        names
            .iter()
            .position(|n| n.as_ref() == name)
            .map(|i| i as u32)
    } else {
        index.get(name).copied()
    }
}

/// Index used for "no value" and for values past the cardinality cap.
const NO_FACET: u32 = u32::MAX;

impl Facets {
    fn add(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return NO_FACET };
        if let Some(i) = known_name(&self.names, &self.index, v) {
            self.rows[i as usize] += 1;
            return i;
        }
        if self.names.len() >= MAX_FACETS {
            self.overflow_rows += 1;
            return NO_FACET;
        }
        let i = self.names.len() as u32;
        self.index.insert(v.to_string(), i);
        self.names.push(v.to_string());
        self.rows.push(1);
        i
    }

    fn list(&self) -> Vec<Facet> {
        let mut v: Vec<Facet> = self
            .names
            .iter()
            .zip(&self.rows)
            .map(|(n, &r)| Facet {
                name: n.clone(),
                rows: r,
            })
            .collect();
        v.sort_by(|a, b| b.rows.cmp(&a.rows).then_with(|| a.name.cmp(&b.name)));
        if self.overflow_rows > 0 {
            v.push(Facet {
                name: "(other)".into(),
                rows: self.overflow_rows,
            });
        }
        v
    }
}

/// Rows whose phase times are kept for the percentiles and shares: about 100 bytes each
/// at the peak (72 in the columns, the rest while the result is built), so ~100 MB. A
/// log with more matching rows is analyzed on a uniform sample of this many (reservoir
/// sampling, the same sample for the same file), and the result says so; counts, the
/// arrival window and the tenant and model facets still cover every row.
pub const SAMPLE_ROWS: usize = 1_000_000;

/// Analyze a request log: phase percentiles, shares of TTFT and E2E, the
/// dominant phase, tenants and model versions. Filters from `opts` are
/// applied while streaming. Columns are kept as one f64 per row per phase
/// (NaN = missing), for at most [`SAMPLE_ROWS`] rows.
pub fn analyze<R: Read + Send>(
    reader: R,
    opts: &Options,
) -> Result<RequestLogAnalysis, AnalyzeError> {
    let mut acc = Accumulator::new(opts);
    for_each_request(reader, |row: &RequestRow| -> Result<(), AnalyzeError> {
        acc.add(row);
        Ok(())
    })?;
    Ok(acc.finish())
}

/// The analysis built one row at a time, so a caller that already streams the rows
/// (the database load) gets the phase table from the same pass.
pub struct Accumulator<'a> {
    opts: &'a Options,
    cols: [Vec<f64>; NCOLS],
    tenant_of_row: Vec<u32>,
    tenants: Facets,
    models: Facets,
    rows_total: u64,
    arrival_first: f64,
    arrival_last: f64,
    negative_rows: u64,
    /// Rows that passed the filters (the kept ones are a sample of these past `cap`).
    matched: u64,
    cap: usize,
    /// SplitMix64 state for the reservoir's choices (fixed seed: same file, same sample).
    rng: u64,
}

impl<'a> Accumulator<'a> {
    pub fn new(opts: &'a Options) -> Self {
        Accumulator {
            matched: 0,
            cap: SAMPLE_ROWS,
            rng: 0x5DEE_CE66_D1CE_5EED,
            opts,
            cols: Default::default(),
            tenant_of_row: Vec::new(),
            tenants: Facets::default(),
            models: Facets::default(),
            rows_total: 0,
            arrival_first: f64::INFINITY,
            arrival_last: f64::NEG_INFINITY,
            negative_rows: 0,
        }
    }

    /// Keeps at most `cap` rows' phase times (a uniform sample past that).
    pub fn with_sample_cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        self
    }

    /// A uniform draw in `0..n` (n ≥ 1).
    fn below(&mut self, n: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((u128::from(z) * u128::from(n)) >> 64) as u64
    }

    /// Counts one row, and keeps its phase times when it passes the filters.
    pub fn add(&mut self, row: &RequestRow) {
        let opts = self.opts;
        self.rows_total += 1;
        let t = self.tenants.add(row.tenant.as_deref());
        self.models.add(row.model_version.as_deref());
        if let Some(want) = &opts.tenant {
            if row.tenant.as_deref() != Some(want.as_str()) {
                return;
            }
        }
        if let Some(want) = &opts.model_version {
            if row.model_version.as_deref() != Some(want.as_str()) {
                return;
            }
        }
        if opts.arrival_from.is_some() || opts.arrival_to.is_some() {
            let Some(ts) = row.arrival_ts else {
                return;
            };
            if opts.arrival_from.is_some_and(|f| ts < f) || opts.arrival_to.is_some_and(|e| ts >= e)
            {
                return;
            }
        }
        if let Some(ts) = row.arrival_ts {
            self.arrival_first = self.arrival_first.min(ts);
            self.arrival_last = self.arrival_last.max(ts);
        }
        let [tok, queue, prefill, first, decode, detok, total] = row.phases();
        let vals = [
            tok,
            queue,
            prefill,
            first,
            decode,
            detok,
            total,
            row.itl_p50_ms,
            row.itl_p99_ms,
            row.tpot_ms(),
        ];
        if vals.iter().flatten().any(|v| *v < 0.0) {
            self.negative_rows += 1;
        }
        self.matched += 1;
        if self.tenant_of_row.len() < self.cap {
            for (col, v) in self.cols.iter_mut().zip(vals) {
                col.push(v.unwrap_or(f64::NAN));
            }
            self.tenant_of_row.push(t);
            return;
        }
        // Reservoir sampling (Algorithm R): row n replaces a kept one with chance cap/n.
        let slot = self.below(self.matched) as usize;
        if slot < self.cap {
            for (col, v) in self.cols.iter_mut().zip(vals) {
                col[slot] = v.unwrap_or(f64::NAN);
            }
            self.tenant_of_row[slot] = t;
        }
    }

    /// Percentiles, shares, the dominant phase and the per-tenant breakdowns.
    pub fn finish(self) -> RequestLogAnalysis {
        let Accumulator {
            cols,
            tenant_of_row,
            tenants,
            models,
            rows_total,
            arrival_first,
            arrival_last,
            negative_rows,
            matched,
            ..
        } = self;
        let rows = matched;
        let kept = tenant_of_row.len() as u64;
        let mut notes = Vec::new();
        let sample_rows = (kept < matched).then(|| {
            notes.push(format!(
                "percentiles, shares and the per-tenant tables come from a uniform sample of \
                 {kept} of the {matched} matching rows (the most kept in memory); the counts \
                 cover every row"
            ));
            kept
        });
        if rows_total == 0 {
            notes.push("the file holds no request rows".to_string());
        } else if rows == 0 {
            notes.push(format!(
                "no rows match the filters ({rows_total} rows in the file)"
            ));
        }
        if negative_rows > 0 {
            notes.push(format!(
                "{negative_rows} rows have negative phase times (clock skew between components?)"
            ));
        }
        if tenants.overflow_rows > 0 || models.overflow_rows > 0 {
            notes.push(format!(
                "more than {MAX_FACETS} distinct tenants or model versions; the rest are counted as \"(other)\""
            ));
        }

        let all_rows: Vec<usize> = (0..tenant_of_row.len()).collect();
        let share_of_ttft = shares(&cols, &all_rows, FIRST, &TTFT_PARTS, &mut notes, "TTFT");
        let share_of_e2e = shares(&cols, &all_rows, TOTAL, &E2E_PARTS, &mut notes, "E2E");

        // The tenants' tables while the columns are summarised.
        let (summaries, by_tenant) = std::thread::scope(|scope| {
            let by_tenant =
                scope.spawn(|| tenant_breakdowns(&cols, &tenant_of_row, &tenants.names));
            let summaries = column_summaries(&cols);
            (
                summaries,
                by_tenant
                    .join()
                    .expect("the tenant tables' thread panicked"),
            )
        });
        let mut phases = BTreeMap::new();
        for (i, s) in summaries.into_iter().enumerate() {
            if s.count > 0 {
                phases.insert(COL_NAMES[i].to_string(), s);
            }
        }

        let share_of_ttft_p95_tail = match phases.get("first_token_ms").and_then(|s| s.p95) {
            Some(p95) => {
                let tail: Vec<usize> = all_rows
                    .iter()
                    .copied()
                    .filter(|&r| cols[FIRST][r] >= p95)
                    .collect();
                shares(&cols, &tail, FIRST, &TTFT_PARTS, &mut Vec::new(), "TTFT")
            }
            None => BTreeMap::new(),
        };

        let (dominant_phase, dominant_share) = if !share_of_ttft.is_empty() {
            argmax(&share_of_ttft)
        } else {
            argmax(&share_of_e2e)
        };
        let (dominant_phase_e2e, _) = argmax(&share_of_e2e);
        if dominant_phase.as_deref() == Some("other_ms") {
            notes.push(
                "most of the time is outside the recorded phases: check the measurement, or look at gaps between phases (step 3)"
                    .to_string(),
            );
        }

        RequestLogAnalysis {
            rows,
            rows_total,
            phases,
            share_of_ttft,
            share_of_e2e,
            share_of_ttft_p95_tail,
            dominant_phase,
            dominant_share,
            dominant_phase_e2e,
            tenants: tenants.list(),
            model_versions: models.list(),
            by_tenant,
            arrival_first: arrival_first.is_finite().then_some(arrival_first),
            arrival_last: arrival_last.is_finite().then_some(arrival_last),
            sample_rows,
            notes,
        }
    }
}

/// The one definition of a phase's share of TTFT (or E2E), used by the stored analysis,
/// the request pages and the step-2 fill alike. Shown on the pages.
pub const SHARE_DEFINITION: &str = "A phase's share of TTFT (or E2E) is its total time over the total TTFT (E2E) of the same requests: Σ phase ms ÷ Σ TTFT ms, over the requests that have a TTFT (a request without the phase counts 0). Shares of totals add up; a phase's p95 over the p95 TTFT does not, and is not used.";

/// A phase's share by [`SHARE_DEFINITION`]: `None` when the metric's total is not
/// positive.
pub fn share_of(phase_total_ms: f64, metric_total_ms: f64) -> Option<f64> {
    (metric_total_ms > 0.0 && phase_total_ms.is_finite()).then(|| phase_total_ms / metric_total_ms)
}

/// Shares of `target` explained by each of `parts`, over `rows` that have
/// the target: Σ part / Σ target (a missing part counts as 0 for that row),
/// plus `other_ms` = the unexplained rest (clamped at 0).
/// Per tenant, largest first: the most-served [`MAX_TENANT_BREAKDOWNS`] tenants' TTFT and
/// E2E summaries, TTFT shares and dominant phase.
fn tenant_breakdowns(
    cols: &[Vec<f64>; NCOLS],
    tenant_of_row: &[u32],
    names: &[String],
) -> Vec<TenantBreakdown> {
    let mut by_tenant = Vec::new();
    let mut tenant_rows: HashMap<u32, Vec<usize>> = HashMap::new();
    for (r, &t) in tenant_of_row.iter().enumerate() {
        if t != NO_FACET {
            tenant_rows.entry(t).or_default().push(r);
        }
    }
    let mut order: Vec<(u32, usize)> = tenant_rows.iter().map(|(&t, v)| (t, v.len())).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (t, _) in order.into_iter().take(MAX_TENANT_BREAKDOWNS) {
        let idx = &tenant_rows[&t];
        let pick = |c: usize| -> Summary {
            let mut v: Vec<f64> = idx.iter().map(|&r| cols[c][r]).collect();
            Summary::from_values(&mut v)
        };
        let share = shares(cols, idx, FIRST, &TTFT_PARTS, &mut Vec::new(), "TTFT");
        let (dom, _) = if share.is_empty() {
            argmax(&shares(
                cols,
                idx,
                TOTAL,
                &E2E_PARTS,
                &mut Vec::new(),
                "E2E",
            ))
        } else {
            argmax(&share)
        };
        by_tenant.push(TenantBreakdown {
            tenant: names[t as usize].clone(),
            rows: idx.len() as u64,
            first_token_ms: pick(FIRST),
            total_ms: pick(TOTAL),
            share_of_ttft: share,
            dominant_phase: dom,
        });
    }
    by_tenant
}

/// Each column's summary, the columns shared among the cores (each sorts a copy): on
/// the path between a log's last row and its analysis, where one core took 0.15 s for
/// 1,000,000 rows.
fn column_summaries(cols: &[Vec<f64>; NCOLS]) -> Vec<Summary> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, NCOLS));
    let mut out: Vec<Option<Summary>> = (0..NCOLS).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || {
                    (w..NCOLS)
                        .step_by(workers)
                        .map(|i| (i, Summary::from_values(&mut cols[i].clone())))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (i, summary) in handle.join().expect("a summary thread panicked") {
                out[i] = Some(summary);
            }
        }
    });
    out.into_iter().flatten().collect()
}

fn shares(
    cols: &[Vec<f64>; NCOLS],
    rows: &[usize],
    target: usize,
    parts: &[usize],
    notes: &mut Vec<String>,
    label: &str,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut total = 0.0;
    let mut sums = vec![0.0; parts.len()];
    let mut present = vec![false; parts.len()];
    for &r in rows {
        let t = cols[target][r];
        if t.is_nan() {
            continue;
        }
        total += t;
        for (k, &p) in parts.iter().enumerate() {
            let v = cols[p][r];
            if !v.is_nan() {
                sums[k] += v;
                present[k] = true;
            }
        }
    }
    if total <= 0.0 || !present.iter().any(|&p| p) {
        return out;
    }
    let mut explained = 0.0;
    for (k, &p) in parts.iter().enumerate() {
        if let Some(share) = share_of(sums[k], total).filter(|_| present[k]) {
            out.insert(COL_NAMES[p].to_string(), share);
            explained += share;
        }
    }
    if explained > 1.0 + 1e-9 {
        notes.push(format!(
            "the phases add up to {:.0}% of {label}: they overlap or {label} is measured differently",
            explained * 100.0
        ));
    }
    out.insert("other_ms".to_string(), (1.0 - explained).max(0.0));
    out
}

fn argmax(m: &BTreeMap<String, f64>) -> (Option<String>, Option<f64>) {
    m.iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, v)| (Some(k.clone()), Some(*v)))
        .unwrap_or((None, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn run(text: &str, opts: &Options) -> Result<RequestLogAnalysis, AnalyzeError> {
        analyze(text.as_bytes(), opts)
    }

    /// A deterministic generator with the same shape as
    /// shared/tools/gen_requests.py: queue wait dominates TTFT for tenant
    /// "batch", prefill for tenant "chat".
    fn synthetic(n: usize) -> String {
        let mut s = String::new();
        let mut x: u64 = 42;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for i in 0..n {
            let tenant = if i % 3 == 0 { "batch" } else { "chat" };
            let pt = 800.0 + rnd() * 2000.0;
            let queue = if tenant == "batch" {
                1800.0 * (0.5 + rnd())
            } else {
                40.0 * rnd()
            };
            let prefill = pt * 0.045;
            let tok = 0.2 + rnd() * 0.3;
            let first = tok + queue + prefill + 0.5;
            let decode = 200.0 * 21.0;
            let total = first + decode + 2.0;
            s.push_str(&format!(
                "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"tokenize_ms\":{tok},\"queue_wait_ms\":{queue},\"prefill_ms\":{prefill},\"first_token_ms\":{first},\"decode_ms\":{decode},\"detokenize_ms\":2,\"total_ms\":{total},\"prompt_tokens\":{},\"model_version\":\"m@rev{}\",\"tenant\":\"{tenant}\",\"gpu\":\"h100\"}}\n",
                1_764_400_000.0 + i as f64 * 0.02,
                pt as i64,
                i % 2
            ));
        }
        s
    }

    #[test]
    fn each_requests_tpot_is_its_decode_over_the_tokens_after_the_first() {
        // 7,303.43 ms over 318 tokens: 317 steps of 23.04 ms; 1 output token has no step.
        let log =
            "{\"decode_ms\":7303.43,\"output_tokens\":318,\"itl_p50_ms\":22.1,\"itl_p99_ms\":61}\n\
                   {\"decode_ms\":40,\"output_tokens\":1}\n\
                   {\"decode_ms\":900}\n";
        let a = run(log, &Options::default()).unwrap();
        let tpot = &a.phases["tpot_ms"];
        assert_eq!(tpot.count, 1);
        assert!((tpot.p50.unwrap() - 7303.43 / 317.0).abs() < 1e-9);
        assert_eq!(a.phases["itl_p50_ms"].p50, Some(22.1));
        assert_eq!(a.phases["decode_ms"].count, 3);
        let row = RequestRow {
            decode_ms: Some(100.0),
            output_tokens: Some(2),
            ..RequestRow::default()
        };
        assert_eq!(row.tpot_ms(), Some(100.0));
    }

    #[test]
    fn a_nul_in_a_text_field_is_refused_with_its_line() {
        let log = "{\"request_id\": \"a\", \"queue_wait_ms\": 1}\n\
                   {\"request_id\": \"b\\u0000c\", \"queue_wait_ms\": 1}\n";
        let e = for_each_request(log.as_bytes(), |_| Ok::<(), AnalyzeError>(())).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("line 2") && text.contains("request_id"),
            "{text}"
        );
        let extra = "{\"queue_wait_ms\": 1, \"region\": \"eu\\u0000\"}\n";
        let e = for_each_request(extra.as_bytes(), |_| Ok::<(), AnalyzeError>(())).unwrap_err();
        assert!(e.to_string().contains("region"), "{e}");
    }

    fn capped(text: &str, opts: &Options, cap: usize) -> RequestLogAnalysis {
        let mut acc = Accumulator::new(opts).with_sample_cap(cap);
        for_each_request(
            text.as_bytes(),
            |row: &RequestRow| -> Result<(), AnalyzeError> {
                acc.add(row);
                Ok(())
            },
        )
        .unwrap();
        acc.finish()
    }

    /// Past the kept-row cap the analysis runs on a uniform sample and says so; its
    /// percentiles and shares stay close to the full analysis, and counts stay exact.
    #[test]
    fn a_log_past_the_row_cap_is_analyzed_on_a_stated_uniform_sample() {
        let text = synthetic(30_000);
        let opts = Options::default();
        let full = run(&text, &opts).unwrap();
        let sampled = capped(&text, &opts, 3_000);
        assert_eq!(full.sample_rows, None);
        assert_eq!(sampled.sample_rows, Some(3_000));
        assert_eq!((sampled.rows, sampled.rows_total), (30_000, 30_000));
        assert!(
            sampled
                .notes
                .iter()
                .any(|n| n.contains("uniform sample of 3000 of the 30000")),
            "{:?}",
            sampled.notes
        );
        for phase in ["first_token_ms", "queue_wait_ms", "total_ms"] {
            let (f, s) = (&full.phases[phase], &sampled.phases[phase]);
            for (a, b) in [(f.p50, s.p50), (f.p95, s.p95)] {
                let (a, b) = (a.unwrap(), b.unwrap());
                assert!((a - b).abs() / a < 0.08, "{phase}: full {a}, sample {b}");
            }
        }
        assert_eq!(full.dominant_phase, sampled.dominant_phase);
        for (k, v) in &full.share_of_ttft {
            assert!((v - sampled.share_of_ttft[k]).abs() < 0.03, "{k}");
        }
        // The same file gives the same sample.
        let again = capped(&text, &opts, 3_000);
        assert_eq!(again, sampled);
    }

    #[test]
    fn dominant_phase_by_tenant() {
        let text = synthetic(3000);
        let a = run(&text, &Options::default()).unwrap();
        assert_eq!(a.rows, 3000);
        assert_eq!(a.rows_total, 3000);
        let by: HashMap<_, _> = a.by_tenant.iter().map(|t| (t.tenant.as_str(), t)).collect();
        assert_eq!(by["batch"].dominant_phase.as_deref(), Some("queue_wait_ms"));
        assert_eq!(by["chat"].dominant_phase.as_deref(), Some("prefill_ms"));
        assert_eq!(a.dominant_phase_e2e.as_deref(), Some("decode_ms"));
        let batch = run(
            &text,
            &Options {
                tenant: Some("batch".into()),
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(batch.rows, 1000);
        assert_eq!(batch.dominant_phase.as_deref(), Some("queue_wait_ms"));
        let chat = run(
            &text,
            &Options {
                tenant: Some("chat".into()),
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(chat.dominant_phase.as_deref(), Some("prefill_ms"));
        // Shares add up to 1 with the residual.
        let sum: f64 = chat.share_of_ttft.values().sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert_eq!(
            a.tenants[0],
            Facet {
                name: "chat".into(),
                rows: 2000
            }
        );
        assert_eq!(a.model_versions.len(), 2);
        // The slow tail of the mix is batch traffic waiting in the queue.
        let tail = &a.share_of_ttft_p95_tail;
        assert!(tail["queue_wait_ms"] > 0.8, "{tail:?}");
        let p = &a.phases["queue_wait_ms"];
        assert_eq!(p.count, 3000);
        assert!(p.p50.unwrap() < p.p95.unwrap());
    }

    #[test]
    fn filters_by_model_and_time_window() {
        let text = synthetic(100);
        let opts = Options {
            model_version: Some("m@rev1".into()),
            arrival_from: Some(1_764_400_000.0 + 0.5),
            arrival_to: Some(1_764_400_000.0 + 1.0),
            ..Options::default()
        };
        let a = run(&text, &opts).unwrap();
        // Rows 25..50 are in the window; the odd ones (13) are rev1.
        assert_eq!(a.rows, 13, "{a:?}");
        assert!(a.arrival_first.unwrap() >= 1_764_400_000.5);
        let none = run(
            &text,
            &Options {
                tenant: Some("nobody".into()),
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(none.rows, 0);
        assert!(none.notes[0].contains("no rows match"));
        assert!(none.phases.is_empty());
    }

    #[test]
    fn nan_and_infinity_are_rejected_with_line() {
        let text = "{\"request_id\":\"a\",\"queue_wait_ms\":1}\n\n{\"request_id\":\"b\",\"queue_wait_ms\":NaN}\n";
        let e = run(text, &Options::default()).unwrap_err();
        let s = e.to_string();
        assert!(
            matches!(e, AnalyzeError::Malformed { line: Some(3), .. }),
            "{s}"
        );
        assert!(s.contains("NaN") && s.contains("queue_wait_ms"), "{s}");
        let e = run("{\"total_ms\": -Infinity}\n", &Options::default()).unwrap_err();
        assert!(e.to_string().contains("-Infinity"), "{e}");
        let e = run("{\"total_ms\": \"NaN\"}\n", &Options::default()).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        let e = run("{\"total_ms\": 1}\n{\"total_ms\": 2\n", &Options::default()).unwrap_err();
        assert!(e.to_string().starts_with("line 2:"), "{e}");
        let e = run("[1,2]\n", &Options::default()).unwrap_err();
        assert!(e.to_string().contains("JSON object"), "{e}");
        let e = run("{\"prompt_tokens\": 1.5}\n", &Options::default()).unwrap_err();
        assert!(e.to_string().contains("whole number"), "{e}");
        let e = run("{\"tenant\": [1]}\n", &Options::default()).unwrap_err();
        assert!(e.to_string().contains("must be a string"), "{e}");
    }

    #[test]
    fn rows_keep_unknown_fields_and_mixed_types() {
        let text = "\u{feff}{\"request_id\": 7, \"arrival_ts\": \"2025-01-02T03:04:05.5Z\", \"prompt_tokens\": 12.0, \"queue_wait_ms\": \"3.5\", \"gpu\": {\"kind\": \"h100\"}, \"tenant\": null}\r\n";
        let mut rows = Vec::new();
        let n = for_each_request(text.as_bytes(), |r| -> Result<(), AnalyzeError> {
            rows.push(r.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1);
        let r = &rows[0];
        assert_eq!(r.request_id.as_deref(), Some("7"));
        assert_eq!(r.prompt_tokens, Some(12));
        assert_eq!(r.queue_wait_ms, Some(3.5));
        assert_eq!(r.tenant, None);
        assert_eq!(r.arrival_ts, Some(1_735_787_045.5));
        assert_eq!(r.extra["gpu"]["kind"], "h100");
        assert_eq!(r.line, 1);
    }

    #[test]
    fn callback_errors_stop_the_stream() {
        #[derive(Debug)]
        enum MyErr {
            Analyze(#[allow(dead_code)] AnalyzeError),
            Stop,
        }
        impl From<AnalyzeError> for MyErr {
            fn from(e: AnalyzeError) -> Self {
                MyErr::Analyze(e)
            }
        }
        let text = synthetic(10);
        let mut seen = 0;
        let r = for_each_request(text.as_bytes(), |_| {
            seen += 1;
            if seen == 3 {
                Err(MyErr::Stop)
            } else {
                Ok(())
            }
        });
        assert!(matches!(r, Err(MyErr::Stop)));
        assert_eq!(seen, 3);
        let r = for_each_request("{oops}\n".as_bytes(), |_| Ok::<(), MyErr>(()));
        assert!(matches!(
            r,
            Err(MyErr::Analyze(AnalyzeError::Malformed {
                line: Some(1),
                ..
            }))
        ));
    }

    #[test]
    fn outcomes_from_status_finish_reason_and_error() {
        assert_eq!(outcome(None, None, None), Outcome::Succeeded);
        assert_eq!(
            outcome(Some("ok"), Some("stop"), Some("")),
            Outcome::Succeeded
        );
        assert_eq!(
            outcome(Some("200"), Some("length"), None),
            Outcome::Succeeded
        );
        assert_eq!(outcome(Some("503"), None, None), Outcome::Errored);
        assert_eq!(outcome(Some("Failed"), None, None), Outcome::Errored);
        assert_eq!(outcome(None, None, Some("CUDA OOM")), Outcome::Errored);
        assert_eq!(outcome(None, Some("abort"), None), Outcome::Cancelled);
        assert_eq!(
            outcome(Some("cancelled"), None, Some("x")),
            Outcome::Cancelled
        );
    }

    #[test]
    fn rfc3339_parsing() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_rfc3339("2000-03-01 00:00:00"), Some(951_868_800.0));
        assert_eq!(
            parse_rfc3339("2025-01-02T04:04:05+01:00"),
            Some(1_735_787_045.0)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2025-13-02T04:04:05Z"), None);
        // A multi-byte character inside the offset is refused, not sliced through.
        assert_eq!(parse_rfc3339("2025-01-01T00:00:00+1é:0"), None);
        assert_eq!(parse_rfc3339("2025-01-01T00:00:00+é1:00"), None);
        assert_eq!(
            parse_rfc3339("2025-01-01T00:00:00.5-01:30"),
            Some(1_735_695_000.5)
        );
    }

    #[test]
    fn long_lines_are_refused() {
        let mut text = String::from("{\"a\":\"");
        text.push_str(&"x".repeat(MAX_LINE_BYTES + 10));
        text.push_str("\"}\n");
        let e = run(&text, &Options::default()).unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
    }

    /// The shared generator, when python3 is available (it is on the dev
    /// machines; the test says so and returns otherwise).
    #[test]
    fn shared_generator_shape() {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|p| p.join("shared/tools/gen_requests.py"))
            .find(|p| p.exists())
            .or_else(|| {
                Some(std::path::PathBuf::from(
                    "/work/shared/tools/gen_requests.py",
                ))
                .filter(|p| p.exists())
            });
        let Some(script) = script else {
            crate::test_skip::skip("shared_generator_shape", "gen_requests.py not found");
            return;
        };
        let out = std::env::temp_dir().join(format!("pj-gen-{}.jsonl", std::process::id()));
        let status = Command::new("python3")
            .arg(&script)
            .arg("10000")
            .arg(&out)
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            crate::test_skip::skip(
                "shared_generator_shape",
                "python3 could not run gen_requests.py",
            );
            return;
        }
        let file = std::fs::File::open(&out).unwrap();
        let a = analyze(file, &Options::default()).unwrap();
        let _ = std::fs::remove_file(&out);
        assert_eq!(a.rows, 10_000);
        let by: HashMap<_, _> = a.by_tenant.iter().map(|t| (t.tenant.as_str(), t)).collect();
        assert_eq!(by["batch"].dominant_phase.as_deref(), Some("queue_wait_ms"));
        assert_eq!(by["chat"].dominant_phase.as_deref(), Some("prefill_ms"));
        assert!(a.phases["first_token_ms"].p95.unwrap() > a.phases["first_token_ms"].p50.unwrap());
    }

    #[test]
    fn a_file_of_many_blocks_reads_in_order_with_true_line_numbers() {
        // About 5 MB: several blocks for the parsing threads, with blank lines, CRLF
        // endings and a BOM.
        let mut text = String::from("\u{FEFF}");
        let mut want = Vec::new();
        for i in 0..40_000u64 {
            if i % 1000 == 7 {
                text.push_str("  \r\n");
                continue;
            }
            text.push_str(&format!(
                "{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{i}.5,\"tenant\":\"t{}\",\"pad\":\"{}\"}}\r\n",
                i % 3,
                "x".repeat(100)
            ));
            want.push((i + 1, format!("r{i}")));
        }
        let mut got = Vec::new();
        let n = for_each_request(text.as_bytes(), |r| -> Result<(), AnalyzeError> {
            got.push((r.line, r.request_id.as_deref().unwrap().to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(n as usize, want.len());
        assert_eq!(got, want);

        // The first bad line of the file is the one named, however far in.
        let mut bad = text.clone();
        let at = bad
            .match_indices("{\"request_id\":\"r31234\"")
            .next()
            .unwrap()
            .0;
        bad.insert_str(at, "oops");
        let e = for_each_request(bad.as_bytes(), |_| Ok::<(), AnalyzeError>(())).unwrap_err();
        assert!(e.to_string().contains("line 31235"), "{e}");

        // A line past the limit in the middle of the file.
        let mut long = text.clone();
        let at = long
            .match_indices("{\"request_id\":\"r20000\"")
            .next()
            .unwrap()
            .0;
        long.insert_str(
            at,
            &format!("{{\"pad\":\"{}\"}}\n", "y".repeat(MAX_LINE_BYTES + 10)),
        );
        let e = for_each_request(long.as_bytes(), |_| Ok::<(), AnalyzeError>(())).unwrap_err();
        assert!(
            e.to_string().contains("line 20001") && e.to_string().contains("longer than"),
            "{e}"
        );
    }
}
