//! A column copy of a request log's phase times, and the decomposition page's numbers
//! computed from it: per phase the exact p50/p90/p95/p99 (`percentile_cont`'s rule,
//! linear between order statistics), the mean, and the sums behind each part's share of
//! TTFT — the same numbers the SQL ordered-set aggregates give, without a sort per phase.
//!
//! Rows are kept per (tenant, model version) in chunks of at most [`CHUNK_ROWS`], in file
//! order, as 8 columns of f64: arrival time, then the [`PHASES`]. A missing value is NaN
//! (the parser refuses NaN in the input, so NaN cannot be a real value). Pure: no I/O.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::request_log::{self, RequestRow};
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

/// Rows per chunk: 1 MiB of data; a time window skips whole chunks outside it.
pub const CHUNK_ROWS: usize = 16_384;

/// More distinct (tenant, model version) pairs than this and no column copy is kept (the
/// page then computes in SQL): each pair has its own chunks.
pub const MAX_KEYS: usize = 1_000;

const COLUMNS: usize = 1 + PHASES.len();

/// Rows of one tenant and model version.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub tenant: Option<String>,
    pub model_version: Option<String>,
    /// Arrival time (epoch seconds), NaN when absent.
    pub arrival: Vec<f64>,
    /// One column per phase of [`PHASES`] (ms), NaN when absent.
    pub phases: [Vec<f64>; 7],
}

impl Chunk {
    fn new(tenant: Option<&str>, model_version: Option<&str>) -> Self {
        Chunk {
            tenant: tenant.map(str::to_string),
            model_version: model_version.map(str::to_string),
            arrival: Vec::new(),
            phases: Default::default(),
        }
    }

    pub fn rows(&self) -> usize {
        self.arrival.len()
    }

    /// Least and greatest arrival time, `None` when no row has one.
    pub fn arrival_range(&self) -> Option<(f64, f64)> {
        let mut present = self.arrival.iter().copied().filter(|v| !v.is_nan());
        let first = present.next()?;
        Some(present.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    }

    /// The 8 columns one after the other, little-endian f64.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows() * COLUMNS * 8);
        for col in std::iter::once(&self.arrival).chain(self.phases.iter()) {
            for v in col {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// The inverse of [`Chunk::encode`] for `rows` rows.
    pub fn decode(
        tenant: Option<String>,
        model_version: Option<String>,
        rows: usize,
        data: &[u8],
    ) -> Result<Chunk, String> {
        if data.len() != rows * COLUMNS * 8 {
            return Err(format!(
                "a column chunk of {rows} rows holds {} bytes, not {}",
                data.len(),
                rows * COLUMNS * 8
            ));
        }
        let mut cols = data.chunks_exact(rows * 8).map(|col| {
            col.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect::<Vec<f64>>()
        });
        let arrival = cols.next().unwrap_or_default();
        let phases = std::array::from_fn(|_| cols.next().unwrap_or_default());
        Ok(Chunk {
            tenant,
            model_version,
            arrival,
            phases,
        })
    }

    fn push(&mut self, row: &RequestRow) {
        let v = |x: Option<f64>| x.unwrap_or(f64::NAN);
        self.arrival.push(v(row.arrival_ts));
        for (col, x) in self.phases.iter_mut().zip(row.phases()) {
            col.push(v(x));
        }
    }
}

/// Collects rows into chunks while a log is read.
#[derive(Default)]
pub struct ColumnBuilder {
    /// `tenant \0 model` (each prefixed by a presence byte) → index into `open`.
    keys: HashMap<String, usize, foldhash::fast::RandomState>,
    key_buf: String,
    open: Vec<Chunk>,
    full: Vec<Chunk>,
    rows: u64,
    too_many_keys: bool,
}

impl ColumnBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, row: &RequestRow) {
        if self.too_many_keys {
            return;
        }
        self.rows += 1;
        let (tenant, model) = (row.tenant.as_deref(), row.model_version.as_deref());
        self.key_buf.clear();
        for part in [tenant, model] {
            match part {
                Some(s) => {
                    self.key_buf.push('+');
                    self.key_buf.push_str(s);
                }
                None => self.key_buf.push('-'),
            }
            self.key_buf.push('\0');
        }
        let i = match self.keys.get(self.key_buf.as_str()) {
            Some(&i) => i,
            None => {
                if self.keys.len() >= MAX_KEYS {
                    self.too_many_keys = true;
                    self.open = Vec::new();
                    self.full = Vec::new();
                    return;
                }
                self.open.push(Chunk::new(tenant, model));
                self.keys.insert(self.key_buf.clone(), self.open.len() - 1);
                self.open.len() - 1
            }
        };
        let chunk = &mut self.open[i];
        chunk.push(row);
        if chunk.rows() >= CHUNK_ROWS {
            let done = std::mem::replace(chunk, Chunk::new(tenant, model));
            self.full.push(done);
        }
    }

    /// The rows counted and their chunks; `None` when the log has more than
    /// [`MAX_KEYS`] (tenant, model version) pairs.
    pub fn finish(self) -> Option<(u64, Vec<Chunk>)> {
        if self.too_many_keys {
            return None;
        }
        let mut chunks = self.full;
        chunks.extend(self.open.into_iter().filter(|c| c.rows() > 0));
        Some((self.rows, chunks))
    }
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
    fn keeps_chunk(&self, c: &Chunk) -> bool {
        let key = |want: Option<&str>, have: &Option<String>| {
            want.is_none_or(|w| have.as_deref() == Some(w))
        };
        key(self.tenant, &c.tenant) && key(self.model_version, &c.model_version)
    }

    fn keeps_arrival(&self, t: f64) -> bool {
        // NaN (no arrival time) fails both comparisons, as NULL does in SQL.
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|to| t < to)
    }
}

/// Grouping of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Tenant,
    ModelVersion,
}

/// One phase over the selected rows (ms); `None` when no selected row has the phase.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PhaseNumbers {
    /// At [`PERCENTILES`].
    pub quantiles: Option<[f64; 4]>,
    pub mean: Option<f64>,
}

/// The numbers of one group (or of all selected rows).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupNumbers {
    /// The tenant or model version; `None` for rows without one, or when not grouped.
    pub group: Option<String>,
    pub rows: u64,
    pub phases: [PhaseNumbers; 7],
    /// Sum of TTFT over the rows that have one (ms).
    pub ttft_total: Option<f64>,
    /// Per part of [`TTFT_PARTS`]: its sum over the rows that have a TTFT (ms).
    pub in_ttft: [Option<f64>; 3],
}

/// The decomposition of the rows `filter` selects: one entry when `by` is `None` (also
/// when nothing is selected), else one per group, most rows first (then by name).
pub fn decompose(chunks: &[Chunk], filter: &Filter, by: Option<GroupBy>) -> Vec<GroupNumbers> {
    // Which rows of which chunk count, and the group of each kept chunk.
    let windowed = filter.from.is_some() || filter.to.is_some();
    let mut kept: Vec<(&Chunk, Option<Vec<bool>>, usize)> = Vec::new();
    let mut groups: Vec<GroupNumbers> = Vec::new();
    for c in chunks.iter().filter(|c| filter.keeps_chunk(c)) {
        let mask = windowed.then(|| {
            c.arrival
                .iter()
                .map(|&t| filter.keeps_arrival(t))
                .collect::<Vec<bool>>()
        });
        let n = match &mask {
            Some(m) => m.iter().filter(|k| **k).count(),
            None => c.rows(),
        };
        if n == 0 {
            continue;
        }
        let name = match by {
            None => None,
            Some(GroupBy::Tenant) => c.tenant.clone(),
            Some(GroupBy::ModelVersion) => c.model_version.clone(),
        };
        let g = match groups.iter().position(|g| g.group == name) {
            Some(g) => g,
            None => {
                groups.push(GroupNumbers {
                    group: name,
                    ..GroupNumbers::default()
                });
                groups.len() - 1
            }
        };
        groups[g].rows += n as u64;
        kept.push((c, mask, g));
    }
    if by.is_none() && groups.is_empty() {
        groups.push(GroupNumbers::default());
    }
    // Each (group, phase) is independent: spread them over the cores (two here).
    let tasks: Vec<(usize, usize)> = (0..groups.len())
        .flat_map(|g| (0..PHASES.len()).map(move |p| (g, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, tasks.len().max(1));
    let done: Vec<PhaseOfGroup> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    while let Some(&(g, p)) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        out.push(phase_of_group(&kept, g, p, groups[g].rows as usize));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for d in done {
        let group = &mut groups[d.group];
        group.phases[d.phase] = d.numbers;
        if d.phase == TTFT {
            group.ttft_total = d.sum;
        }
        if let Some(k) = TTFT_PARTS.iter().position(|&part| part == d.phase) {
            group.in_ttft[k] = d.in_ttft;
        }
    }
    groups.sort_by(|a, b| b.rows.cmp(&a.rows).then_with(|| a.group.cmp(&b.group)));
    groups
}

/// One phase of one group.
struct PhaseOfGroup {
    group: usize,
    phase: usize,
    numbers: PhaseNumbers,
    /// Sum of the phase's values (`None` without any).
    sum: Option<f64>,
    /// Sum over the rows that have a TTFT (`None` without any).
    in_ttft: Option<f64>,
}

/// Gathers phase `p` of the selected rows of group `g` (in chunk order) and computes.
fn phase_of_group(
    kept: &[(&Chunk, Option<Vec<bool>>, usize)],
    g: usize,
    p: usize,
    rows: usize,
) -> PhaseOfGroup {
    let mut values = Vec::with_capacity(rows);
    let mut in_ttft: Option<f64> = None;
    for (c, mask, _) in kept.iter().filter(|k| k.2 == g) {
        let (column, ttft) = (&c.phases[p], &c.phases[TTFT]);
        for i in 0..c.rows() {
            let v = column[i];
            if v.is_nan() || mask.as_ref().is_some_and(|m| !m[i]) {
                continue;
            }
            values.push(v);
            if !ttft[i].is_nan() {
                *in_ttft.get_or_insert(0.0) += v;
            }
        }
    }
    let sum = (!values.is_empty()).then(|| values.iter().sum());
    PhaseOfGroup {
        group: g,
        phase: p,
        numbers: phase_numbers(&mut values),
        sum,
        in_ttft,
    }
}

/// Quantiles and mean of the values (reordered).
fn phase_numbers(values: &mut [f64]) -> PhaseNumbers {
    let Some(mean) = mean(values) else {
        return PhaseNumbers::default();
    };
    PhaseNumbers {
        quantiles: Some(quantiles(values)),
        mean: Some(mean),
    }
}

/// [`PERCENTILES`] of non-empty values by PostgreSQL's `percentile_cont` rule (the same
/// linear rule as numpy's), by selection: see [`quantiles_select`].
pub fn quantiles(values: &mut [f64]) -> [f64; 4] {
    quantiles_select(values, PERCENTILES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::quantile;

    fn row(tenant: Option<&str>, model: Option<&str>, arrival: Option<f64>, v: f64) -> RequestRow {
        RequestRow {
            tenant: tenant.map(str::to_string),
            model_version: model.map(str::to_string),
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
        let mut b = ColumnBuilder::new();
        rows.iter().for_each(|r| b.add(r));
        let (n, chunks) = b.finish().unwrap();
        assert_eq!(n, rows.len() as u64);
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
        // 6 (tenant, model) pairs; 40,000 rows in chunks of at most CHUNK_ROWS.
        assert!(chunks
            .iter()
            .all(|c| c.rows() <= CHUNK_ROWS && c.rows() > 0));
        assert_eq!(chunks.iter().map(Chunk::rows).sum::<usize>(), 40_000);
        for c in &chunks {
            let back = Chunk::decode(
                c.tenant.clone(),
                c.model_version.clone(),
                c.rows(),
                &c.encode(),
            )
            .unwrap();
            // NaN != NaN: compare the bytes.
            assert_eq!(back.encode(), c.encode());
            assert_eq!(back.tenant, c.tenant);
        }
        assert!(Chunk::decode(None, None, 3, &[0u8; 10]).is_err());
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
            let got = decompose(&chunks, &f, by);
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
                        Some(GroupBy::Tenant) => r.tenant == g.group,
                        Some(GroupBy::ModelVersion) => r.model_version == g.group,
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
        let by_tenant = decompose(&chunks, &Filter::default(), Some(GroupBy::Tenant));
        let names: Vec<Option<&str>> = by_tenant.iter().map(|g| g.group.as_deref()).collect();
        assert_eq!(names, vec![Some("chat"), None, Some("batch")]);
    }

    #[test]
    fn too_many_pairs_keep_no_copy() {
        let mut b = ColumnBuilder::new();
        for i in 0..=MAX_KEYS {
            b.add(&row(Some(&format!("t{i}")), None, None, 1.0));
        }
        assert!(b.finish().is_none());
    }
}
