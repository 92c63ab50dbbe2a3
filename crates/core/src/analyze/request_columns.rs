//! The one store of a request log's rows: columns in chunks, and the numbers computed
//! from them. The decomposition page's per-phase p50/p90/p95/p99 (`percentile_cont`'s
//! rule, linear between order statistics), means and the sums behind each part's share
//! of TTFT; the comparison's per-request series; the queue timeline of bubbles.
//!
//! Rows are kept in file order, in chunks of at most [`CHUNK_ROWS`]. Each chunk holds
//! what a reader of single rows needs: the arrival time, the seven [`PHASES`], the
//! request's ITL p50/p99, its prompt and output tokens, how it ended ([`Outcome`]), and
//! its tenant and model version as indices into the chunk's own lists of names. A
//! missing float is NaN (the parser refuses NaN in the input, so NaN cannot be a real
//! value); a missing count is [`MISSING_COUNT`]; a missing name is [`NO_NAME`]. The other
//! fields of a row (request id, batch size, KV blocks, prefix hits, unknown fields) are in
//! the stored file and its analysis; no reader needs them row by row. Pure: no I/O.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::request_log::{self, Outcome, RequestRow};
use crate::stats::mean;
use crate::stats::quantile::quantiles_select;

/// The phases of the decomposition, in the page's order (milliseconds): the first
/// seven columns of the request-log analysis.
pub const PHASES: [&str; 7] = {
    let c = request_log::COL_NAMES;
    [c[0], c[1], c[2], c[3], c[4], c[5], c[6]]
};

/// Index of `first_token_ms` (TTFT) in [`PHASES`].
pub const TTFT: usize = request_log::FIRST;

/// The phases a TTFT is made of (indices into [`PHASES`]).
pub const TTFT_PARTS: [usize; 3] = request_log::TTFT_PARTS;

/// The percentiles the page shows.
pub const PERCENTILES: [f64; 4] = [0.5, 0.9, 0.95, 0.99];

/// Rows per chunk (about 1.7 MB encoded); a time window skips whole chunks outside it.
pub const CHUNK_ROWS: usize = 16_384;

/// A chunk is closed early once its tenant and model names come to this many bytes, so
/// a log of long distinct names cannot grow one chunk without bound.
pub const MAX_NAME_BYTES: usize = 1 << 20;

/// A row without a tenant (or model version).
pub const NO_NAME: u32 = u32::MAX;

/// A row without a token count.
pub const MISSING_COUNT: i64 = i64::MIN;

/// Float columns: arrival, the seven phases, ITL p50, ITL p99.
const FLOATS: usize = 1 + PHASES.len() + 2;
/// Bytes per row in [`Chunk::encode`]: the floats, two i64 counts, two u32 name
/// indices and the outcome byte.
pub const ROW_BYTES: usize = FLOATS * 8 + 2 * 8 + 2 * 4 + 1;

/// Rows of a request log, column by column.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chunk {
    /// Distinct tenants of the chunk; a row's `tenant` indexes this list.
    pub tenants: Vec<String>,
    /// Distinct model versions of the chunk; a row's `model` indexes this list.
    pub models: Vec<String>,
    pub tenant: Vec<u32>,
    pub model: Vec<u32>,
    /// Arrival time (epoch seconds), NaN when absent.
    pub arrival: Vec<f64>,
    /// One column per phase of [`PHASES`] (ms), NaN when absent.
    pub phases: [Vec<f64>; 7],
    /// The request's own ITL p50 and p99 (ms per token), NaN when absent.
    pub itl: [Vec<f64>; 2],
    /// Prompt and output tokens, [`MISSING_COUNT`] when absent.
    pub tokens: [Vec<i64>; 2],
    /// How the request ended ([`outcome_code`]).
    pub outcome: Vec<u8>,
}

/// One row of a chunk, as its readers see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowView<'a> {
    pub tenant: Option<&'a str>,
    pub model_version: Option<&'a str>,
    pub arrival_ts: Option<f64>,
    /// The seven [`PHASES`], ms.
    pub phases: [Option<f64>; 7],
    pub itl_p50_ms: Option<f64>,
    pub itl_p99_ms: Option<f64>,
    pub prompt_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub outcome: Outcome,
}

impl RowView<'_> {
    pub fn first_token_ms(&self) -> Option<f64> {
        self.phases[TTFT]
    }
    pub fn queue_wait_ms(&self) -> Option<f64> {
        self.phases[1]
    }
    pub fn prefill_ms(&self) -> Option<f64> {
        self.phases[2]
    }
    pub fn decode_ms(&self) -> Option<f64> {
        self.phases[4]
    }
    pub fn total_ms(&self) -> Option<f64> {
        self.phases[6]
    }
    pub fn tokenize_ms(&self) -> Option<f64> {
        self.phases[0]
    }
}

/// The byte an [`Outcome`] is stored as.
pub fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Succeeded => 0,
        Outcome::Errored => 1,
        Outcome::Cancelled => 2,
    }
}

fn outcome_of_code(code: u8) -> Option<Outcome> {
    match code {
        0 => Some(Outcome::Succeeded),
        1 => Some(Outcome::Errored),
        2 => Some(Outcome::Cancelled),
        _ => None,
    }
}

fn float(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

impl Chunk {
    pub fn rows(&self) -> usize {
        self.arrival.len()
    }

    /// Least and greatest arrival time, `None` when no row has one.
    pub fn arrival_range(&self) -> Option<(f64, f64)> {
        let mut present = self.arrival.iter().copied().filter(|v| !v.is_nan());
        let first = present.next()?;
        Some(present.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    }

    fn name(names: &[String], i: u32) -> Option<&str> {
        names.get(i as usize).map(String::as_str)
    }

    /// Row `i` (< [`Chunk::rows`]).
    pub fn row(&self, i: usize) -> RowView<'_> {
        let count = |x: i64| (x != MISSING_COUNT).then_some(x);
        RowView {
            tenant: Self::name(&self.tenants, self.tenant[i]),
            model_version: Self::name(&self.models, self.model[i]),
            arrival_ts: float(self.arrival[i]),
            phases: std::array::from_fn(|p| float(self.phases[p][i])),
            itl_p50_ms: float(self.itl[0][i]),
            itl_p99_ms: float(self.itl[1][i]),
            prompt_tokens: count(self.tokens[0][i]),
            output_tokens: count(self.tokens[1][i]),
            outcome: outcome_of_code(self.outcome[i]).unwrap_or(Outcome::Succeeded),
        }
    }

    /// Every row, in file order.
    pub fn iter(&self) -> impl Iterator<Item = RowView<'_>> {
        (0..self.rows()).map(|i| self.row(i))
    }

    fn float_columns(&self) -> impl Iterator<Item = &Vec<f64>> {
        std::iter::once(&self.arrival)
            .chain(self.phases.iter())
            .chain(self.itl.iter())
    }

    /// The columns one after the other, little-endian: the floats (arrival, phases,
    /// ITL p50, p99), the two counts, the two name indices, the outcome bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows() * ROW_BYTES);
        for col in self.float_columns() {
            for v in col {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        for col in &self.tokens {
            for v in col {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        for col in [&self.tenant, &self.model] {
            for v in col {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.outcome);
        out
    }

    /// The inverse of [`Chunk::encode`] for `rows` rows with the chunk's name lists;
    /// refuses data of another length, a name index past its list and an unknown outcome.
    pub fn decode(
        tenants: Vec<String>,
        models: Vec<String>,
        rows: usize,
        data: &[u8],
    ) -> Result<Chunk, String> {
        if data.len() != rows * ROW_BYTES {
            return Err(format!(
                "a column chunk of {rows} rows holds {} bytes, not {}",
                data.len(),
                rows * ROW_BYTES
            ));
        }
        let (floats, rest) = data.split_at(rows * FLOATS * 8);
        let (counts, rest) = rest.split_at(rows * 2 * 8);
        let (names, outcome) = rest.split_at(rows * 2 * 4);
        let mut f = floats.chunks_exact(rows.max(1) * 8).map(|col| {
            col.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect::<Vec<f64>>()
        });
        let mut next_f = || f.next().unwrap_or_default();
        let arrival = next_f();
        let phases = std::array::from_fn(|_| next_f());
        let itl = std::array::from_fn(|_| next_f());
        let mut c = counts.chunks_exact(rows.max(1) * 8).map(|col| {
            col.chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect::<Vec<i64>>()
        });
        let tokens = std::array::from_fn(|_| c.next().unwrap_or_default());
        let mut n = names.chunks_exact(rows.max(1) * 4).map(|col| {
            col.chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect::<Vec<u32>>()
        });
        let (tenant, model) = (n.next().unwrap_or_default(), n.next().unwrap_or_default());
        for (col, list, what) in [(&tenant, &tenants, "tenant"), (&model, &models, "model")] {
            if let Some(bad) = col
                .iter()
                .find(|&&i| i != NO_NAME && i as usize >= list.len())
            {
                return Err(format!(
                    "a column chunk names {what} {bad} of {}",
                    list.len()
                ));
            }
        }
        if let Some(bad) = outcome.iter().find(|&&b| outcome_of_code(b).is_none()) {
            return Err(format!("a column chunk holds an unknown outcome {bad}"));
        }
        Ok(Chunk {
            tenants,
            models,
            tenant,
            model,
            arrival,
            phases,
            itl,
            tokens,
            outcome: outcome.to_vec(),
        })
    }
}

/// A chunk ready to be stored: its name lists, arrival range, row count and
/// [`Chunk::encode`]d columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub tenants: Vec<String>,
    pub models: Vec<String>,
    pub arrival_range: Option<(f64, f64)>,
    pub rows: usize,
    pub data: Vec<u8>,
}

impl Chunk {
    /// Room for `rows` more rows in every column.
    fn reserve(&mut self, rows: usize) {
        for col in [&mut self.tenant, &mut self.model] {
            col.reserve_exact(rows);
        }
        let floats = std::iter::once(&mut self.arrival)
            .chain(&mut self.phases)
            .chain(&mut self.itl);
        for col in floats {
            col.reserve_exact(rows);
        }
        for col in &mut self.tokens {
            col.reserve_exact(rows);
        }
        self.outcome.reserve_exact(rows);
    }

    /// The chunk as it is stored.
    pub fn into_encoded(self) -> Encoded {
        Encoded {
            arrival_range: self.arrival_range(),
            rows: self.rows(),
            data: self.encode(),
            tenants: self.tenants,
            models: self.models,
        }
    }
}

/// Collects rows into chunks while a log is read; a chunk is handed back as it fills.
#[derive(Default)]
pub struct ColumnBuilder {
    open: Chunk,
    tenant_ids: HashMap<String, u32, foldhash::fast::RandomState>,
    model_ids: HashMap<String, u32, foldhash::fast::RandomState>,
    name_bytes: usize,
    rows: u64,
}

impl ColumnBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn id_of(
        ids: &mut HashMap<String, u32, foldhash::fast::RandomState>,
        names: &mut Vec<String>,
        name_bytes: &mut usize,
        name: Option<&str>,
    ) -> u32 {
        let Some(name) = name else { return NO_NAME };
        if let Some(id) = crate::analyze::request_log::known_name(names, ids, name) {
            return id;
        }
        let id = names.len() as u32;
        names.push(name.to_string());
        ids.insert(name.to_string(), id);
        *name_bytes += name.len();
        id
    }

    /// Adds a row; returns a chunk when this row filled one.
    pub fn add(&mut self, row: &RequestRow) -> Option<Chunk> {
        self.rows += 1;
        let c = &mut self.open;
        if c.rows() == 0 {
            // A chunk's columns at their full size from its first row: grown by
            // doubling, each was copied 14 times on the way to 16,384 rows.
            c.reserve(CHUNK_ROWS);
        }
        let v = |x: Option<f64>| x.unwrap_or(f64::NAN);
        let tenant = Self::id_of(
            &mut self.tenant_ids,
            &mut c.tenants,
            &mut self.name_bytes,
            row.tenant.as_deref(),
        );
        let model = Self::id_of(
            &mut self.model_ids,
            &mut c.models,
            &mut self.name_bytes,
            row.model_version.as_deref(),
        );
        c.tenant.push(tenant);
        c.model.push(model);
        c.arrival.push(v(row.arrival_ts));
        for (col, x) in c.phases.iter_mut().zip(row.phases()) {
            col.push(v(x));
        }
        c.itl[0].push(v(row.itl_p50_ms));
        c.itl[1].push(v(row.itl_p99_ms));
        c.tokens[0].push(row.prompt_tokens.unwrap_or(MISSING_COUNT));
        c.tokens[1].push(row.output_tokens.unwrap_or(MISSING_COUNT));
        c.outcome.push(outcome_code(row.outcome()));
        (c.rows() >= CHUNK_ROWS || self.name_bytes >= MAX_NAME_BYTES).then(|| self.close())
    }

    fn close(&mut self) -> Chunk {
        self.tenant_ids.clear();
        self.model_ids.clear();
        self.name_bytes = 0;
        std::mem::take(&mut self.open)
    }

    /// The rows counted, and the last chunk when it holds any.
    pub fn finish(mut self) -> (u64, Option<Chunk>) {
        let last = (self.open.rows() > 0).then(|| self.close());
        (self.rows, last)
    }
}

/// All the chunks of `rows` (for tests and benches; a load hands them on as they fill).
pub fn chunks_of<'a>(rows: impl IntoIterator<Item = &'a RequestRow>) -> Vec<Chunk> {
    let mut b = ColumnBuilder::new();
    let mut out: Vec<Chunk> = rows.into_iter().filter_map(|r| b.add(r)).collect();
    out.extend(b.finish().1);
    out
}

/// Which rows count: the page's filters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub tenant: Option<&'a str>,
    pub model_version: Option<&'a str>,
    /// Arrival at or after (epoch s); rows without an arrival time are left out.
    pub from: Option<f64>,
    /// Arrival before (epoch s); rows without an arrival time are left out.
    pub to: Option<f64>,
}

impl Filter<'_> {
    fn keeps_arrival(&self, t: f64) -> bool {
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to)
    }

    fn windowed(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }

    /// The index a wanted name has in `names`: `Ok(None)` when any will do, `Err` when
    /// the chunk has no row with it.
    fn wanted(want: Option<&str>, names: &[String]) -> Result<Option<u32>, ()> {
        match want {
            None => Ok(None),
            Some(w) => names
                .iter()
                .position(|n| n == w)
                .map(|i| Some(i as u32))
                .ok_or(()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Tenant,
    ModelVersion,
}

/// One phase's numbers over a group's rows.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PhaseNumbers {
    /// p50, p90, p95, p99 (`None` when no row has the phase).
    pub quantiles: Option<[f64; 4]>,
    pub mean: Option<f64>,
}

/// The decomposition of one group (or of all rows when `group` is `None`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupNumbers {
    pub group: Option<String>,
    pub rows: u64,
    pub phases: [PhaseNumbers; 7],
    /// Σ first_token_ms over rows that have it.
    pub ttft_total: Option<f64>,
    /// Σ of each [`TTFT_PARTS`] phase over rows that have a TTFT.
    pub in_ttft: [Option<f64>; 3],
}

/// A row left out by the filter.
const SKIP: u32 = u32::MAX;

/// The numbers over the rows `filter` keeps, one entry in all (`by` = `None`) or one per
/// group for the `max_groups` largest groups, most rows first (ties by name). Each phase
/// is computed on its own thread.
pub fn decompose(
    chunks: &[Chunk],
    filter: &Filter,
    by: Option<GroupBy>,
    max_groups: usize,
) -> Vec<GroupNumbers> {
    // First each kept row's key (its group's name), counted; only the `max_groups`
    // largest groups are then computed, so a log of a million distinct tenants costs a
    // count per name here, not a million groups' numbers.
    let mut keys: Vec<(Option<&str>, u64)> = Vec::new();
    let mut key_of_name: HashMap<Option<&str>, u32> = HashMap::new();
    // Per kept chunk, each row's key (SKIP when the filter leaves it out).
    let mut kept: Vec<(&Chunk, Vec<u32>)> = Vec::new();
    for c in chunks {
        let (Ok(want_t), Ok(want_m)) = (
            Filter::wanted(filter.tenant, &c.tenants),
            Filter::wanted(filter.model_version, &c.models),
        ) else {
            continue;
        };
        let (names, of_row): (&[String], &[u32]) = match by {
            Some(GroupBy::Tenant) => (&c.tenants, &c.tenant),
            Some(GroupBy::ModelVersion) => (&c.models, &c.model),
            None => (&[], &[]),
        };
        // The chunk's name index → key, resolved on first use (the last slot: no name).
        let mut local: Vec<u32> = vec![SKIP; names.len() + 1];
        let mut slots = Vec::with_capacity(c.rows());
        let mut any = false;
        for (i, &arrival) in c.arrival.iter().enumerate() {
            let keep = want_t.is_none_or(|w| c.tenant[i] == w)
                && want_m.is_none_or(|w| c.model[i] == w)
                && (!filter.windowed() || filter.keeps_arrival(arrival));
            if !keep {
                slots.push(SKIP);
                continue;
            }
            let at = match by {
                None => 0,
                Some(_) => of_row[i].min(names.len() as u32) as usize,
            };
            if local[at] == SKIP {
                let name = names.get(at).map(String::as_str);
                local[at] = *key_of_name.entry(name).or_insert_with(|| {
                    keys.push((name, 0));
                    keys.len() as u32 - 1
                });
            }
            keys[local[at] as usize].1 += 1;
            slots.push(local[at]);
            any = true;
        }
        if any {
            kept.push((c, slots));
        }
    }
    drop(key_of_name);
    // The largest groups, most rows first, ties by name (no name first).
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    let rank = |&a: &u32, &b: &u32| {
        let (x, y) = (keys[a as usize], keys[b as usize]);
        y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0))
    };
    if order.len() > max_groups {
        order.select_nth_unstable_by(max_groups, rank);
        order.truncate(max_groups);
    }
    order.sort_by(rank);
    let mut group_of_key = vec![SKIP; keys.len()];
    let mut groups: Vec<GroupNumbers> = Vec::with_capacity(order.len());
    for (g, &k) in order.iter().enumerate() {
        group_of_key[k as usize] = g as u32;
        let (name, rows) = keys[k as usize];
        groups.push(GroupNumbers {
            group: name.map(str::to_string),
            rows,
            ..GroupNumbers::default()
        });
    }
    for (_, slots) in &mut kept {
        for slot in slots.iter_mut().filter(|s| **s != SKIP) {
            *slot = group_of_key[*slot as usize];
        }
    }
    if by.is_none() && groups.is_empty() {
        groups.push(GroupNumbers::default());
    }
    let sizes: Vec<usize> = groups.iter().map(|g| g.rows as usize).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, PHASES.len());
    let done: Vec<PhaseOfGroups> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let p = next.fetch_add(1, Ordering::Relaxed);
                        if p >= PHASES.len() {
                            break out;
                        }
                        out.push(phase_of_groups(&kept, &sizes, p));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for d in done {
        for (g, (numbers, sum, in_ttft)) in groups.iter_mut().zip(d.per_group) {
            g.phases[d.phase] = numbers;
            if d.phase == TTFT {
                g.ttft_total = sum;
            }
            if let Some(k) = TTFT_PARTS.iter().position(|&part| part == d.phase) {
                g.in_ttft[k] = in_ttft;
            }
        }
    }
    groups
}

/// One phase over every group: (numbers, Σ values, Σ values of rows with a TTFT).
struct PhaseOfGroups {
    phase: usize,
    per_group: Vec<(PhaseNumbers, Option<f64>, Option<f64>)>,
}

/// One pass over the kept rows for phase `p`: each value goes to its group's list.
fn phase_of_groups(kept: &[(&Chunk, Vec<u32>)], sizes: &[usize], p: usize) -> PhaseOfGroups {
    let mut values: Vec<Vec<f64>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    let mut in_ttft: Vec<Option<f64>> = vec![None; sizes.len()];
    for (c, slots) in kept {
        let (column, ttft) = (&c.phases[p], &c.phases[TTFT]);
        for (i, &g) in slots.iter().enumerate() {
            let v = column[i];
            if g == SKIP || v.is_nan() {
                continue;
            }
            values[g as usize].push(v);
            if !ttft[i].is_nan() {
                *in_ttft[g as usize].get_or_insert(0.0) += v;
            }
        }
    }
    let per_group = values
        .iter_mut()
        .zip(in_ttft)
        .map(|(v, in_ttft)| {
            let sum = (!v.is_empty()).then(|| v.iter().sum());
            (phase_numbers(v), sum, in_ttft)
        })
        .collect();
    PhaseOfGroups {
        phase: p,
        per_group,
    }
}

fn phase_numbers(values: &mut [f64]) -> PhaseNumbers {
    let Some(mean) = mean(values) else {
        return PhaseNumbers::default();
    };
    PhaseNumbers {
        quantiles: Some(quantiles(values)),
        mean: Some(mean),
    }
}

/// p50, p90, p95, p99 of non-empty values without NaN (reordered in place).
pub fn quantiles(values: &mut [f64]) -> [f64; 4] {
    quantiles_select(values, PERCENTILES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::quantile;

    fn row(tenant: Option<&str>, model: Option<&str>, arrival: Option<f64>, v: f64) -> RequestRow {
        RequestRow {
            tenant: tenant.map(Into::into),
            model_version: model.map(Into::into),
            arrival_ts: arrival,
            tokenize_ms: Some(v / 10.0),
            queue_wait_ms: Some(v),
            prefill_ms: (v as i64 % 3 != 0).then_some(v * 2.0),
            first_token_ms: (v as i64 % 5 != 0).then_some(v * 3.5),
            decode_ms: Some(100.0 - v),
            detokenize_ms: None,
            total_ms: Some(v * 10.0),
            ..RequestRow::default()
        }
    }

    fn rows() -> Vec<RequestRow> {
        (0..40_000)
            .map(|i| {
                let v = ((i * 7919) % 1000) as f64 + 0.25;
                let tenant = match i % 4 {
                    0 => Some("batch"),
                    1 | 2 => Some("chat"),
                    _ => None,
                };
                let model = if i % 2 == 0 { "m0" } else { "m1" };
                row(tenant, Some(model), (i % 10 != 9).then_some(i as f64), v)
            })
            .collect()
    }

    fn chunks(rows: &[RequestRow]) -> Vec<Chunk> {
        let chunks = chunks_of(rows);
        assert_eq!(
            chunks.iter().map(Chunk::rows).sum::<usize>(),
            rows.len(),
            "every row in a chunk"
        );
        chunks
    }

    /// The page's numbers straight from the definition: filter rows, take each phase's
    /// present values, numpy's linear quantile (= percentile_cont).
    fn reference(rows: &[&RequestRow], phase: usize) -> (Option<[f64; 4]>, Option<f64>) {
        let values: Vec<f64> = rows.iter().filter_map(|r| r.phases()[phase]).collect();
        if values.is_empty() {
            return (None, None);
        }
        let q = PERCENTILES.map(|p| quantile(&values, p).unwrap());
        (Some(q), mean(&values))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn quantiles_follow_percentile_cont() {
        // n = 5: h = 2, 3.6, 3.8, 3.96 over [1, 2, 3, 4, 10].
        let mut v = vec![10.0, 3.0, 1.0, 4.0, 2.0];
        let q = quantiles(&mut v);
        assert_eq!(q[0], 3.0);
        assert!(close(q[1], 4.0 + 0.6 * 6.0), "{q:?}");
        assert!(close(q[2], 4.0 + 0.8 * 6.0), "{q:?}");
        assert!(close(q[3], 4.0 + 0.96 * 6.0), "{q:?}");
        assert_eq!(quantiles(&mut [7.0]), [7.0; 4]);
        // Against the sort-based rule, bit for bit, on many sizes and ties.
        for n in [2usize, 3, 10, 101, 1000, 4097] {
            let base: Vec<f64> = (0..n).map(|i| ((i * 37) % 97) as f64 * 0.5).collect();
            let got = quantiles(&mut base.clone());
            for (g, p) in got.iter().zip(PERCENTILES) {
                assert_eq!(*g, quantile(&base, p).unwrap(), "n = {n}, p = {p}");
            }
        }
    }

    #[test]
    fn chunks_round_trip_and_split() {
        let rows = rows();
        let chunks = chunks(&rows);
        // 40,000 rows in file order, in chunks of CHUNK_ROWS and the rest.
        let sizes: Vec<usize> = chunks.iter().map(Chunk::rows).collect();
        assert_eq!(sizes, vec![CHUNK_ROWS, CHUNK_ROWS, 40_000 - 2 * CHUNK_ROWS]);
        for c in &chunks {
            let back =
                Chunk::decode(c.tenants.clone(), c.models.clone(), c.rows(), &c.encode()).unwrap();
            // NaN != NaN: compare the bytes.
            assert_eq!(back.encode(), c.encode());
            assert_eq!(back.tenants, c.tenants);
        }
        // Rows read back as they went in, in file order.
        let back: Vec<RowView> = chunks.iter().flat_map(Chunk::iter).collect();
        for (r, v) in rows.iter().zip(&back) {
            assert_eq!(v.tenant, r.tenant.as_deref());
            assert_eq!(v.model_version, r.model_version.as_deref());
            assert_eq!(v.arrival_ts, r.arrival_ts);
            assert_eq!(v.phases, r.phases());
            assert_eq!(v.output_tokens, r.output_tokens);
            assert_eq!(v.outcome, Outcome::Succeeded);
        }
        assert!(Chunk::decode(vec![], vec![], 3, &[0u8; 10]).is_err());
        assert!(Chunk::decode(vec![], vec![], 0, &[]).unwrap().rows() == 0);
    }

    #[test]
    fn counts_outcomes_and_itl_survive_the_round_trip() {
        let mut failed = row(Some("t"), None, Some(1.0), 3.0);
        failed.itl_p50_ms = Some(12.5);
        failed.prompt_tokens = Some(1024);
        failed.extra.insert("status".into(), serde_json::json!(503));
        let mut cancelled = row(None, Some("m"), None, 4.0);
        cancelled
            .extra
            .insert("finish_reason".into(), serde_json::json!("abort"));
        let chunks = chunks(&[failed, cancelled]);
        let c = Chunk::decode(
            chunks[0].tenants.clone(),
            chunks[0].models.clone(),
            2,
            &chunks[0].encode(),
        )
        .unwrap();
        let (a, b) = (c.row(0), c.row(1));
        assert_eq!(
            (a.outcome, b.outcome),
            (Outcome::Errored, Outcome::Cancelled)
        );
        assert_eq!((a.itl_p50_ms, a.itl_p99_ms), (Some(12.5), None));
        assert_eq!((a.prompt_tokens, b.prompt_tokens), (Some(1024), None));
        assert_eq!((a.tenant, b.tenant), (Some("t"), None));
        assert_eq!((a.model_version, b.model_version), (None, Some("m")));
    }

    #[test]
    fn a_damaged_chunk_is_refused() {
        let c = chunks(&[row(Some("t"), None, None, 1.0)]).remove(0);
        let mut data = c.encode();
        // The tenant index names a second tenant the chunk does not list.
        let at = FLOATS * 8 + 2 * 8;
        data[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        let e = Chunk::decode(c.tenants.clone(), vec![], 1, &data).unwrap_err();
        assert!(e.contains("tenant 1 of 1"), "{e}");
        let mut data = c.encode();
        *data.last_mut().unwrap() = 9;
        let e = Chunk::decode(c.tenants.clone(), vec![], 1, &data).unwrap_err();
        assert!(e.contains("unknown outcome 9"), "{e}");
    }

    #[test]
    fn filtered_and_grouped_numbers_match_the_definition() {
        let rows = rows();
        let chunks = chunks(&rows);
        let cases: [(Filter, Option<GroupBy>); 5] = [
            (Filter::default(), None),
            (
                Filter {
                    tenant: Some("chat"),
                    ..Filter::default()
                },
                None,
            ),
            (
                Filter {
                    model_version: Some("m1"),
                    from: Some(5_000.0),
                    to: Some(31_000.5),
                    ..Filter::default()
                },
                Some(GroupBy::Tenant),
            ),
            (Filter::default(), Some(GroupBy::ModelVersion)),
            (
                Filter {
                    tenant: Some("nobody"),
                    ..Filter::default()
                },
                None,
            ),
        ];
        for (f, by) in cases {
            let got = decompose(&chunks, &f, by, usize::MAX);
            let selected: Vec<&RequestRow> = rows
                .iter()
                .filter(|r| f.tenant.is_none_or(|t| r.tenant.as_deref() == Some(t)))
                .filter(|r| {
                    f.model_version
                        .is_none_or(|m| r.model_version.as_deref() == Some(m))
                })
                .filter(|r| {
                    (f.from.is_none() && f.to.is_none())
                        || r.arrival_ts.is_some_and(|t| f.keeps_arrival(t))
                })
                .collect();
            if f.tenant == Some("nobody") {
                assert_eq!(got.len(), 1);
                assert_eq!(got[0].rows, 0);
                assert_eq!(got[0].phases[0], PhaseNumbers::default());
                assert_eq!(got[0].ttft_total, None);
                continue;
            }
            assert_eq!(
                got.iter().map(|g| g.rows).sum::<u64>(),
                selected.len() as u64
            );
            for w in got.windows(2) {
                assert!(w[0].rows >= w[1].rows, "most rows first");
            }
            for g in &got {
                let mine: Vec<&RequestRow> = selected
                    .iter()
                    .copied()
                    .filter(|r| match by {
                        None => true,
                        Some(GroupBy::Tenant) => r.tenant.as_deref() == g.group.as_deref(),
                        Some(GroupBy::ModelVersion) => {
                            r.model_version.as_deref() == g.group.as_deref()
                        }
                    })
                    .collect();
                assert_eq!(g.rows, mine.len() as u64, "{:?}", g.group);
                for p in 0..PHASES.len() {
                    let (q, mean) = reference(&mine, p);
                    match (g.phases[p].quantiles, q) {
                        (Some(a), Some(b)) => assert_eq!(a, b, "phase {p}"),
                        (a, b) => assert_eq!(a, b, "phase {p}"),
                    }
                    match (g.phases[p].mean, mean) {
                        (Some(a), Some(b)) => assert!(close(a, b), "{a} vs {b}"),
                        (a, b) => assert_eq!(a, b),
                    }
                }
                let with_ttft: Vec<&&RequestRow> =
                    mine.iter().filter(|r| r.first_token_ms.is_some()).collect();
                let total: f64 = with_ttft.iter().filter_map(|r| r.first_token_ms).sum();
                assert!(close(g.ttft_total.unwrap(), total));
                let queue: f64 = with_ttft.iter().filter_map(|r| r.queue_wait_ms).sum();
                assert!(close(g.in_ttft[1].unwrap(), queue));
                let prefill: f64 = with_ttft.iter().filter_map(|r| r.prefill_ms).sum();
                assert!(close(g.in_ttft[2].unwrap(), prefill));
            }
        }
        // The ungrouped tenant filter has no rows without a tenant; grouping keeps them.
        let by_tenant = decompose(
            &chunks,
            &Filter::default(),
            Some(GroupBy::Tenant),
            usize::MAX,
        );
        let names: Vec<Option<&str>> = by_tenant.iter().map(|g| g.group.as_deref()).collect();
        assert_eq!(names, vec![Some("chat"), None, Some("batch")]);
    }

    #[test]
    fn many_long_names_close_a_chunk_early() {
        let long = "x".repeat(100_000);
        let rows: Vec<RequestRow> = (0..25)
            .map(|i| row(Some(&format!("{long}{i}")), None, None, 1.0))
            .collect();
        let chunks = chunks(&rows);
        assert!(chunks.len() >= 2, "{} chunks", chunks.len());
        for c in &chunks {
            let bytes: usize = c.tenants.iter().map(String::len).sum();
            assert!(bytes <= MAX_NAME_BYTES + 100_010, "{bytes}");
        }
        // Thousands of tenants are fine: grouped numbers list each one.
        let rows: Vec<RequestRow> = (0..5_000)
            .map(|i| row(Some(&format!("t{i}")), None, None, i as f64))
            .collect();
        let chunks = chunks_of(&rows);
        let got = decompose(
            &chunks,
            &Filter::default(),
            Some(GroupBy::Tenant),
            usize::MAX,
        );
        assert_eq!(got.len(), 5_000);
        assert!(got.iter().all(|g| g.rows == 1));
        // Asked for the 50 largest, only those are computed: here the first 50 names.
        let top = decompose(&chunks, &Filter::default(), Some(GroupBy::Tenant), 50);
        assert_eq!(top, got[..50].to_vec());
    }
}
