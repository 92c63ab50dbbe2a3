//! Nsight Systems reports exported to SQLite (`nsys export --type sqlite report.nsys-rep`).
//!
//! Tables and columns follow NVIDIA's documented export schema (Nsight Systems User
//! Guide, "SQLite Schema Reference"; the exporter documentation of 2021.5 and later):
//! * `CUPTI_ACTIVITY_KIND_KERNEL` (`start`, `end`, `deviceId`, `streamId`,
//!   `correlationId`, `globalPid`, `demangledName` / `shortName` → `StringIds(id, value)`):
//!   kernels (required: without it the file is not taken for an Nsight export);
//! * `CUPTI_ACTIVITY_KIND_MEMCPY` / `CUPTI_ACTIVITY_KIND_MEMSET` (`start`, `end`,
//!   `deviceId`, `streamId`, `correlationId`, `bytes`, `copyKind`): memory work (MEM);
//! * `CUPTI_ACTIVITY_KIND_RUNTIME` / `CUPTI_ACTIVITY_KIND_DRIVER` (`start`, `end`,
//!   `correlationId`, `nameId` → `StringIds`, `globalTid`): the host calls that launched
//!   the GPU work, joined by correlation id (within one process) for launch delays;
//! * `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION` (`start`, `end`, `streamId`, `correlationId`):
//!   synchronisation on a stream, as a trace's `cuda_sync`;
//! * `NVTX_EVENTS` (`start`, `end`, `eventType`, `text` or `textId` → `StringIds`): push/pop
//!   and start/end ranges, summed per range name with the GPU busy time under them;
//! * `TARGET_INFO_GPU` (`id`, `cuDevice`, `name`, `totalMemory` B, `smCount`, `clockRate`
//!   Hz, `memoryBandwidth` B/s): the devices, mapped onto the GPU catalog by name;
//! * `TARGET_INFO_CUDA_DEVICE` (`gpuId`, `cudaId`): the CUDA device id GPU work names
//!   for a `TARGET_INFO_GPU` id, where the GPU table has no `cuDevice` (newer exports) and
//!   every process saw the GPU under one id;
//! * `TARGET_INFO_SESSION_START_TIME` (`utcEpochNs`): the wall clock at time 0.
//!
//! Every table but the kernel table may be absent (an export without NVTX or copies);
//! columns that are absent read as NULL. Times in the export are ns; they are converted
//! to µs and fed into the PyTorch trace fold ([`TraceFold`]), so the temporal, kernel
//! and idle breakdowns and the launch delays have exactly the trace's definitions
//! (HTA's, see `pytorch_trace`). Rows are read one by one from prepared statements (GPU
//! work ordered by start); what is kept is what the trace fold keeps plus the merged GPU
//! busy intervals, and per-name tables are bounded. No file-system work here: the
//! caller opens the file (read-only) and hands over the connection.

use super::pytorch_trace::{GpuWork, TraceAnalysis, TraceFold};
use super::{AnalyzeError, Options};
use crate::fmt::grouped;
use rusqlite::types::ValueRef;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

pub use example::{generated_export_sql, EXAMPLE_EXPORT_SQL};
pub use rusqlite::{Connection, OpenFlags};

pub mod example;
mod schema;
use schema::Schema;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 1;

/// The first 16 bytes of every SQLite 3 database file.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The table without which a file is not an Nsight Systems export.
pub const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";

const MEMCPY_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const DRIVER_TABLE: &str = "CUPTI_ACTIVITY_KIND_DRIVER";
const SYNC_TABLE: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
const NVTX_TABLE: &str = "NVTX_EVENTS";
const STRINGS_TABLE: &str = "StringIds";
const GPU_TABLE: &str = "TARGET_INFO_GPU";
const SESSION_TABLE: &str = "TARGET_INFO_SESSION_START_TIME";
const CUDA_DEVICE_TABLE: &str = "TARGET_INFO_CUDA_DEVICE";

/// Every table read; the others are never looked at.
const TABLES: [&str; 11] = [
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    RUNTIME_TABLE,
    DRIVER_TABLE,
    SYNC_TABLE,
    NVTX_TABLE,
    STRINGS_TABLE,
    GPU_TABLE,
    SESSION_TABLE,
    CUDA_DEVICE_TABLE,
];

/// Longest name (kernel, call, range) read from the string table, in characters: a
/// hostile string table cannot make one name take more.
const MAX_NAME_CHARS: usize = 4096;

/// Distinct NVTX range names summed apart; later names are pooled under [`OTHER_RANGES`].
pub const MAX_NVTX_NAMES: usize = 10_000;
/// NVTX range names kept in the result (by total time).
pub const NVTX_SHOWN: usize = 200;
/// Devices read from `TARGET_INFO_GPU`.
const MAX_GPUS: usize = 256;

/// The name NVTX ranges past [`MAX_NVTX_NAMES`] distinct names are summed under.
pub const OTHER_RANGES: &str = "(other ranges: too many distinct names)";

/// SQLite's own memory (page cache, sorter) is capped at this, for the whole process:
/// a hostile file ends in an "out of memory" failure, not in a grown server.
const SQLITE_HEAP_LIMIT: i64 = 512 << 20;

/// NVTX ranges of one name (µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NvtxRange {
    pub name: String,
    pub count: u64,
    /// Summed length of the ranges (nested ranges of one name count each time).
    pub total_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// GPU busy time (any GPU work, on any device, as one union) inside the ranges.
    pub gpu_busy_us: f64,
    /// `gpu_busy_us` / `total_us` (0–1); none for ranges of zero length.
    pub gpu_busy_ratio: Option<f64>,
}

/// Memory work of one kind (`Memcpy HtoD`, `Memset` …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryWork {
    pub kind: String,
    pub count: u64,
    /// Bytes moved or set (the export's `bytes`).
    pub bytes: u64,
    pub total_us: f64,
    /// bytes / summed duration, in GB/s (10⁹ B/s); none when the duration is 0.
    pub gb_per_s: Option<f64>,
}

/// A GPU as `TARGET_INFO_GPU` describes it, with the catalog entry its name maps to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// The device id GPU work names (`cuDevice`, else `id`).
    pub device: i64,
    pub name: Option<String>,
    pub sm_count: Option<u64>,
    /// Bytes (`totalMemory`).
    pub total_memory_bytes: Option<u64>,
    /// Hz (`clockRate`).
    pub clock_hz: Option<f64>,
    /// B/s (`memoryBandwidth`), as the driver reports it.
    pub memory_bandwidth_bps: Option<f64>,
    /// The GPU catalog's name for it, when the name maps to one.
    pub catalog: Option<String>,
    /// The catalog's HBM bandwidth (B/s, datasheet) and dense BF16 peak (FLOP/s).
    pub catalog_hbm_bps: Option<f64>,
    pub catalog_bf16_flops: Option<f64>,
}

/// Result of the Nsight Systems SQLite analyzer: the trace analysis (same fields as a
/// PyTorch trace's), plus NVTX ranges, memory work and the devices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NsysSqliteAnalysis {
    #[serde(flatten)]
    pub trace: TraceAnalysis,
    /// NVTX ranges per name, by total time (at most [`NVTX_SHOWN`]).
    pub nvtx: Vec<NvtxRange>,
    /// NVTX ranges read, and distinct names among them (the pooled entry counting as one).
    pub nvtx_ranges: u64,
    pub nvtx_names: u64,
    pub memory: Vec<MemoryWork>,
    pub gpus: Vec<GpuInfo>,
    /// The Nsight tables the export had (of those read).
    pub tables: Vec<String>,
}

/// True when `head` starts with the SQLite 3 file header.
pub fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(SQLITE_HEADER)
}

/// What the analysis may keep of an export's rows, in bytes. The file's size does not
/// bound them (SQLite rows can be far smaller than a trace's JSON events), so the count
/// of rows does.
pub const ROW_MEMORY: u64 = 256 * 1024 * 1024;

/// What one kept row costs at the peak, in bytes: every GPU interval and every launch
/// is kept with its breakdowns. Measured: an export of 5,000,000 kernels with as many
/// runtime calls peaked at 976 MiB, about 100 B a row.
pub const ROW_BYTES: u64 = 100;

/// GPU rows (kernels, copies, sets) and runtime/driver calls read at most, together:
/// 2,684,354, what [`ROW_MEMORY`] holds at [`ROW_BYTES`] a row.
pub const MAX_ROWS: u64 = ROW_MEMORY / ROW_BYTES;

/// Analyze an Nsight Systems SQLite export through an open connection (the caller opens
/// the file read-only).
pub fn analyze(conn: &Connection, opts: &Options) -> Result<NsysSqliteAnalysis, AnalyzeError> {
    analyze_bounded(conn, opts, MAX_ROWS)
}

/// [`analyze`] with at most `max_rows` GPU rows and host calls together.
pub(crate) fn analyze_bounded(
    conn: &Connection,
    opts: &Options,
    max_rows: u64,
) -> Result<NsysSqliteAnalysis, AnalyzeError> {
    harden(conn)?;
    let schema = Schema::read(conn)?;
    if !schema.has(KERNEL_TABLE) {
        return Err(AnalyzeError::malformed(if schema.nsight {
            format!(
                "an Nsight Systems export that holds no GPU work: no {KERNEL_TABLE} table, \
                 so no CUDA activity was recorded (profile with `nsys profile --trace=cuda`)"
            )
        } else {
            format!("not an Nsight Systems export: no {KERNEL_TABLE} table")
        }));
    }
    let mut notes = Vec::new();
    let mut fold = TraceFold::new();
    fold.rank(0);

    // Correlation ids are per process: joined within a process when every table says
    // which process a row belongs to.
    let gpu_tables: Vec<&str> = [KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, SYNC_TABLE]
        .into_iter()
        .filter(|t| schema.has(t))
        .collect();
    let call_tables: Vec<&str> = [RUNTIME_TABLE, DRIVER_TABLE]
        .into_iter()
        .filter(|t| schema.has(t))
        .collect();
    let by_process = gpu_tables.iter().all(|t| schema.has_col(t, "globalPid"))
        && call_tables.iter().all(|t| schema.has_col(t, "globalTid"));

    let gpus = read_gpus(conn, &schema, &mut fold)?;
    if let Some(ns) = session_start(conn, &schema)? {
        fold.base_time_ns(ns);
    }
    let gpu = read_gpu_work(conn, &schema, by_process, max_rows, &mut fold)?;
    let gpu_rows = gpu.kernels + gpu.memcpy + gpu.memset + gpu.skipped;
    let calls = read_calls(
        conn,
        &schema,
        by_process,
        (max_rows.saturating_sub(gpu_rows), max_rows),
        &mut fold,
    )?;
    read_syncs(conn, &schema, by_process, &mut fold)?;
    let nvtx = read_nvtx(conn, &schema, &gpu.busy)?;

    notes.push(format!(
        "read from an Nsight Systems SQLite export: {} kernels, {} memory copies, {} memory \
         sets, {} runtime/driver calls, {} NVTX ranges (times in the export are ns, shown here in µs)",
        grouped(gpu.kernels),
        grouped(gpu.memcpy),
        grouped(gpu.memset),
        grouped(calls),
        grouped(nvtx.ranges)
    ));
    if gpu.skipped > 0 {
        notes.push(format!(
            "{} GPU rows without a start or end time were left out",
            grouped(gpu.skipped)
        ));
    }
    if call_tables.is_empty() {
        notes.push(format!(
            "no {RUNTIME_TABLE} table: launch delays and host waits cannot be told \
             (export with CUDA API tracing)"
        ));
    } else if !by_process {
        notes.push(
            "the export does not say which process each row belongs to; kernels are \
             joined to their launch calls by correlation id alone"
                .to_string(),
        );
    }
    if !schema.has(NVTX_TABLE) {
        notes.push(format!(
            "no {NVTX_TABLE} table: the export holds no NVTX ranges"
        ));
    }
    if !schema.has(STRINGS_TABLE) || !schema.strings_indexed {
        notes.push(format!(
            "no usable {STRINGS_TABLE} table (id INTEGER PRIMARY KEY): names are shown as string ids"
        ));
    }
    if nvtx.pooled > 0 {
        notes.push(format!(
            "more than {} distinct NVTX range names; {} ranges after those are summed as \"{OTHER_RANGES}\"",
            grouped(MAX_NVTX_NAMES as u64),
            grouped(nvtx.pooled)
        ));
    }
    if nvtx.names > NVTX_SHOWN as u64 {
        notes.push(format!(
            "NVTX: the {NVTX_SHOWN} range names with the most time are listed, of {}",
            grouped(nvtx.names)
        ));
    }
    let trace = fold.finish(opts, notes);
    let mut tables: Vec<String> = TABLES
        .iter()
        .filter(|t| schema.has(t))
        .map(|t| t.to_string())
        .collect();
    tables.sort();
    Ok(NsysSqliteAnalysis {
        trace,
        nvtx: nvtx.shown,
        nvtx_ranges: nvtx.ranges,
        nvtx_names: nvtx.names,
        memory: gpu.memory,
        gpus,
        tables,
    })
}

/// Read-only, no code from the file's schema, SQLite's memory capped.
fn harden(conn: &Connection) -> Result<(), AnalyzeError> {
    // Some of these answer with a row (the new value): each is stepped once.
    for pragma in [
        "PRAGMA query_only = ON".to_string(),
        "PRAGMA trusted_schema = OFF".to_string(),
        "PRAGMA temp_store = FILE".to_string(),
        "PRAGMA cache_size = -16384".to_string(),
        format!("PRAGMA hard_heap_limit = {SQLITE_HEAP_LIMIT}"),
    ] {
        let mut stmt = conn
            .prepare(&pragma)
            .map_err(|e| sql_error("opening the export", e))?;
        let mut rows = stmt
            .query([])
            .map_err(|e| sql_error("opening the export", e))?;
        rows.next()
            .map_err(|e| sql_error("opening the export", e))?;
    }
    Ok(())
}

/// What the GPU pass gathered besides the fold.
struct GpuPass {
    kernels: u64,
    memcpy: u64,
    memset: u64,
    skipped: u64,
    memory: Vec<MemoryWork>,
    busy: Busy,
}

/// The union of all GPU work as sorted disjoint intervals (µs), with the busy time
/// before each, so the busy time inside any window is two binary searches.
#[derive(Default)]
pub(crate) struct Busy {
    /// (start, end, busy time before start).
    spans: Vec<(f64, f64, f64)>,
}

impl Busy {
    /// Adds an interval; starts must come in ascending order.
    fn add(&mut self, s: f64, e: f64) {
        if let Some(last) = self.spans.last_mut() {
            if s <= last.1 {
                last.1 = last.1.max(e);
                return;
            }
            let before = last.2 + (last.1 - last.0);
            self.spans.push((s, e.max(s), before));
        } else {
            self.spans.push((s, e.max(s), 0.0));
        }
    }

    /// Busy time up to `x`.
    fn upto(&self, x: f64) -> f64 {
        let i = self.spans.partition_point(|sp| sp.0 <= x);
        if i == 0 {
            return 0.0;
        }
        let (s, e, before) = self.spans[i - 1];
        before + (x.min(e) - s).max(0.0)
    }

    /// Busy time inside `[a, b]`.
    pub(crate) fn within(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return 0.0;
        }
        (self.upto(b) - self.upto(a)).max(0.0)
    }
}

/// CUPTI's `CUpti_ActivityMemcpyKind` in the words traces use.
fn copy_kind(k: Option<i64>) -> &'static str {
    match k {
        Some(1) => "Memcpy HtoD",
        Some(2) => "Memcpy DtoH",
        Some(3) => "Memcpy HtoA",
        Some(4) => "Memcpy AtoH",
        Some(5) => "Memcpy AtoA",
        Some(6) => "Memcpy AtoD",
        Some(7) => "Memcpy DtoA",
        Some(8) => "Memcpy DtoD",
        Some(9) => "Memcpy HtoH",
        Some(10) => "Memcpy PtoP",
        _ => "Memcpy (unknown kind)",
    }
}

fn correlation_key(pid: Option<i64>, corr: Option<i64>) -> Option<u64> {
    let corr = corr? as u64 & 0xFFFF_FFFF;
    let pid = pid.unwrap_or(0) as u64 & 0xFFFF_FFFF;
    Some((pid << 32) | corr)
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The failure for an export with more rows than are kept (`what`: where it ran out).
fn too_many(what: &str, max_rows: u64) -> AnalyzeError {
    AnalyzeError::malformed(format!(
        "the export holds more than {} rows of GPU work and runtime/driver calls together \
         (it ran out at its {what}); each is kept (about {ROW_BYTES} B a row, {} MiB at \
         most), so it is not analyzed: profile a shorter window (nsys profile --duration, \
         or a capture range)",
        grouped(max_rows),
        ROW_MEMORY / (1024 * 1024)
    ))
}

fn read_gpu_work(
    conn: &Connection,
    schema: &Schema,
    by_process: bool,
    max_rows: u64,
    fold: &mut TraceFold,
) -> Result<GpuPass, AnalyzeError> {
    let part = |table: &str, work: u8, name: String, bytes: String, kind: String| {
        let pid = if by_process {
            schema.pid(table, "globalPid")
        } else {
            "NULL".to_string()
        };
        format!(
            "SELECT {start} AS s, {end}, {dev}, {stream}, {corr}, {pid}, {name}, {work}, {bytes}, {kind} \
             FROM \"{table}\" t",
            start = schema.col(table, "start"),
            end = schema.col(table, "end"),
            dev = schema.col(table, "deviceId"),
            stream = schema.col(table, "streamId"),
            corr = schema.col(table, "correlationId"),
        )
    };
    let mut parts = vec![part(
        KERNEL_TABLE,
        0,
        schema.string_of(KERNEL_TABLE, &["demangledName", "shortName", "mangledName"]),
        "NULL".into(),
        "NULL".into(),
    )];
    if schema.has(MEMCPY_TABLE) {
        parts.push(part(
            MEMCPY_TABLE,
            1,
            "NULL".into(),
            schema.col(MEMCPY_TABLE, "bytes"),
            schema.col(MEMCPY_TABLE, "copyKind"),
        ));
    }
    if schema.has(MEMSET_TABLE) {
        parts.push(part(
            MEMSET_TABLE,
            2,
            "NULL".into(),
            schema.col(MEMSET_TABLE, "bytes"),
            "NULL".into(),
        ));
    }
    let sql = format!("{} ORDER BY 1", parts.join(" UNION ALL "));
    let what = "reading the GPU work (kernels, copies, sets)";
    let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(what, e))?;
    let mut pass = GpuPass {
        kernels: 0,
        memcpy: 0,
        memset: 0,
        skipped: 0,
        memory: Vec::new(),
        busy: Busy::default(),
    };
    // Memory work per kind: a handful of kinds, so a small map.
    let mut memory: HashMap<&'static str, (u64, u64, f64)> = HashMap::new();
    let mut seen = 0u64;
    while let Some(row) = rows.next().map_err(|e| sql_error(what, e))? {
        seen += 1;
        if seen > max_rows {
            return Err(too_many("GPU rows (kernels, copies, sets)", max_rows));
        }
        let work = int(row, 7)?.unwrap_or(0);
        let table = match work {
            1 => MEMCPY_TABLE,
            2 => MEMSET_TABLE,
            _ => KERNEL_TABLE,
        };
        let (Some(start), Some(end)) = (
            int_in(row, 0, table, "start")?,
            int_in(row, 1, table, "end")?,
        ) else {
            pass.skipped += 1;
            continue;
        };
        let device = int_in(row, 2, table, "deviceId")?.unwrap_or(0);
        let stream = int_in(row, 3, table, "streamId")?.unwrap_or(-1);
        let corr = correlation_key(int(row, 5)?, int_in(row, 4, table, "correlationId")?);
        let (s, e) = (us(start), us(end.max(start)));
        pass.busy.add(s, e);
        match work {
            0 => {
                pass.kernels += 1;
                let name = text(row, 6)?.unwrap_or_else(|| "(unnamed kernel)".to_string());
                fold.gpu(GpuWork::Kernel, device, stream, s, e, corr, &name);
            }
            _ => {
                let (kind, gpu_work) = if work == 1 {
                    pass.memcpy += 1;
                    (
                        copy_kind(int_in(row, 9, table, "copyKind")?),
                        GpuWork::Memcpy,
                    )
                } else {
                    pass.memset += 1;
                    ("Memset", GpuWork::Memset)
                };
                let bytes = int_in(row, 8, table, "bytes")?.unwrap_or(0).max(0) as u64;
                let m = memory.entry(kind).or_insert((0, 0, 0.0));
                m.0 += 1;
                m.1 = m.1.saturating_add(bytes);
                m.2 += e - s;
                fold.gpu(gpu_work, device, stream, s, e, corr, kind);
            }
        }
    }
    let mut memory: Vec<MemoryWork> = memory
        .into_iter()
        .map(|(kind, (count, bytes, total_us))| MemoryWork {
            kind: kind.to_string(),
            count,
            bytes,
            total_us,
            gb_per_s: (total_us > 0.0).then(|| bytes as f64 / (total_us * 1e-6) / 1e9),
        })
        .collect();
    memory.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.kind.cmp(&b.kind)));
    pass.memory = memory;
    Ok(pass)
}

/// Runtime and driver calls into the fold's launch map; how many were read. `room` is
/// how many calls may still be read and the bound on all rows (for the message).
fn read_calls(
    conn: &Connection,
    schema: &Schema,
    by_process: bool,
    (room, max_rows): (u64, u64),
    fold: &mut TraceFold,
) -> Result<u64, AnalyzeError> {
    let mut n = 0;
    for table in [RUNTIME_TABLE, DRIVER_TABLE] {
        if !schema.has(table) {
            continue;
        }
        let pid = if by_process {
            schema.pid(table, "globalTid")
        } else {
            "NULL".to_string()
        };
        let sql = format!(
            "SELECT {}, {}, {}, {pid}, {} FROM \"{table}\" t",
            schema.col(table, "start"),
            schema.col(table, "end"),
            schema.col(table, "correlationId"),
            schema.string_of(table, &["nameId"]),
        );
        let what = format!("reading {table}");
        let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(&what, e))?;
        let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
        while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
            if n >= room {
                return Err(too_many("runtime and driver calls", max_rows));
            }
            let (Some(start), Some(end)) = (
                int_in(row, 0, table, "start")?,
                int_in(row, 1, table, "end")?,
            ) else {
                continue;
            };
            let corr = correlation_key(int(row, 3)?, int_in(row, 2, table, "correlationId")?);
            let name = text(row, 4)?.unwrap_or_default();
            fold.runtime_call(us(start), us(end.max(start)), corr, &name);
            n += 1;
        }
    }
    Ok(n)
}

/// Stream synchronisations, as a trace's `cuda_sync` events.
fn read_syncs(
    conn: &Connection,
    schema: &Schema,
    by_process: bool,
    fold: &mut TraceFold,
) -> Result<(), AnalyzeError> {
    if !schema.has(SYNC_TABLE) {
        return Ok(());
    }
    let pid = if by_process {
        schema.pid(SYNC_TABLE, "globalPid")
    } else {
        "NULL".to_string()
    };
    let sql = format!(
        "SELECT {}, {}, {}, {}, {pid} FROM \"{SYNC_TABLE}\" t",
        schema.col(SYNC_TABLE, "start"),
        schema.col(SYNC_TABLE, "end"),
        schema.col(SYNC_TABLE, "streamId"),
        schema.col(SYNC_TABLE, "correlationId"),
    );
    let what = format!("reading {SYNC_TABLE}");
    let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(&what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
    while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
        let (Some(start), Some(end)) = (
            int_in(row, 0, SYNC_TABLE, "start")?,
            int_in(row, 1, SYNC_TABLE, "end")?,
        ) else {
            continue;
        };
        // CUPTI marks a synchronisation of no single stream with an all-ones stream id.
        let stream = match int_in(row, 2, SYNC_TABLE, "streamId")? {
            Some(s) if (0..u32::MAX as i64).contains(&s) => s,
            _ => -1,
        };
        let corr = correlation_key(int(row, 4)?, int_in(row, 3, SYNC_TABLE, "correlationId")?);
        fold.sync(stream, us(start), us(end.max(start)), corr);
    }
    Ok(())
}

struct NvtxPass {
    shown: Vec<NvtxRange>,
    ranges: u64,
    names: u64,
    pooled: u64,
}

/// NVTX event types that are not ranges (category and thread names, marks, domains).
const NVTX_NOT_RANGES: &str = "33, 34, 39, 75, 76";

fn read_nvtx(conn: &Connection, schema: &Schema, busy: &Busy) -> Result<NvtxPass, AnalyzeError> {
    let mut pass = NvtxPass {
        shown: Vec::new(),
        ranges: 0,
        names: 0,
        pooled: 0,
    };
    if !schema.has(NVTX_TABLE) {
        return Ok(pass);
    }
    let text_col = if schema.has_col(NVTX_TABLE, "text") {
        format!("CAST(substr(t.\"text\", 1, {MAX_NAME_CHARS}) AS TEXT)")
    } else {
        "NULL".to_string()
    };
    let filter = if schema.has_col(NVTX_TABLE, "eventType") {
        format!(" AND (t.\"eventType\" IS NULL OR t.\"eventType\" NOT IN ({NVTX_NOT_RANGES}))")
    } else {
        String::new()
    };
    let sql = format!(
        "SELECT {}, {}, COALESCE({text_col}, {}) FROM \"{NVTX_TABLE}\" t \
         WHERE {} IS NOT NULL{filter}",
        schema.col(NVTX_TABLE, "start"),
        schema.col(NVTX_TABLE, "end"),
        schema.string_of(NVTX_TABLE, &["textId"]),
        schema.col(NVTX_TABLE, "end"),
    );
    let what = format!("reading {NVTX_TABLE}");
    let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(&what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
    // name → (count, total, max, busy)
    let mut acc: HashMap<String, (u64, f64, f64, f64)> = HashMap::new();
    while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
        let (Some(start), Some(end)) = (
            int_in(row, 0, NVTX_TABLE, "start")?,
            int_in(row, 1, NVTX_TABLE, "end")?,
        ) else {
            continue;
        };
        if end < start {
            continue;
        }
        pass.ranges += 1;
        let name = text(row, 2)?.unwrap_or_else(|| "(unnamed range)".to_string());
        let (s, e) = (us(start), us(end));
        let key = if acc.contains_key(&name) || acc.len() < MAX_NVTX_NAMES {
            name
        } else {
            pass.pooled += 1;
            OTHER_RANGES.to_string()
        };
        let a = acc.entry(key).or_insert((0, 0.0, 0.0, 0.0));
        a.0 += 1;
        a.1 += e - s;
        a.2 = a.2.max(e - s);
        a.3 += busy.within(s, e);
    }
    pass.names = acc.len() as u64;
    let mut all: Vec<NvtxRange> = acc
        .into_iter()
        .map(|(name, (count, total_us, max_us, gpu_busy_us))| NvtxRange {
            name,
            count,
            total_us,
            mean_us: total_us / count as f64,
            max_us,
            gpu_busy_us,
            gpu_busy_ratio: (total_us > 0.0).then(|| gpu_busy_us / total_us),
        })
        .collect();
    all.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    all.truncate(NVTX_SHOWN);
    pass.shown = all;
    Ok(pass)
}

fn read_gpus(
    conn: &Connection,
    schema: &Schema,
    fold: &mut TraceFold,
) -> Result<Vec<GpuInfo>, AnalyzeError> {
    if !schema.has(GPU_TABLE) {
        return Ok(Vec::new());
    }
    let name = if schema.has_col(GPU_TABLE, "name") {
        format!("CAST(substr(t.\"name\", 1, {MAX_NAME_CHARS}) AS TEXT)")
    } else {
        "NULL".to_string()
    };
    let sql = format!(
        "SELECT {}, {}, {name}, {}, {}, {}, {} FROM \"{GPU_TABLE}\" t LIMIT {}",
        schema.col(GPU_TABLE, "cuDevice"),
        schema.col(GPU_TABLE, "id"),
        schema.col(GPU_TABLE, "totalMemory"),
        schema.col(GPU_TABLE, "smCount"),
        schema.col(GPU_TABLE, "clockRate"),
        schema.col(GPU_TABLE, "memoryBandwidth"),
        MAX_GPUS * 4,
    );
    let cuda_ids = cuda_ids(conn, schema)?;
    let what = format!("reading {GPU_TABLE}");
    let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(&what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
    let mut out: Vec<GpuInfo> = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
        let gpu_id = int_in(row, 1, GPU_TABLE, "id")?;
        let device = int_in(row, 0, GPU_TABLE, "cuDevice")?
            .or(gpu_id.and_then(|g| cuda_ids.get(&g).copied().flatten()))
            .or(gpu_id)
            .unwrap_or(out.len() as i64);
        // One line per device (an export lists a GPU again per process or context).
        if out.iter().any(|g| g.device == device) || out.len() >= MAX_GPUS {
            continue;
        }
        let name = text(row, 2)?.filter(|n| !n.trim().is_empty());
        let positive = |v: Option<i64>| v.filter(|x| *x > 0);
        let total_memory_bytes =
            positive(int_in(row, 3, GPU_TABLE, "totalMemory")?).map(|x| x as u64);
        let sm_count = positive(int_in(row, 4, GPU_TABLE, "smCount")?).map(|x| x as u64);
        let clock_hz = positive(int_in(row, 5, GPU_TABLE, "clockRate")?).map(|x| x as f64);
        let memory_bandwidth_bps =
            positive(int_in(row, 6, GPU_TABLE, "memoryBandwidth")?).map(|x| x as f64);
        let spec = name.as_deref().and_then(crate::estimate::gpus::find);
        fold.device(device, name.as_deref(), total_memory_bytes, sm_count);
        out.push(GpuInfo {
            device,
            name,
            sm_count,
            total_memory_bytes,
            clock_hz,
            memory_bandwidth_bps,
            catalog: spec.map(|g| g.name.to_string()),
            catalog_hbm_bps: spec.map(|g| g.hbm_bandwidth.value),
            catalog_bf16_flops: spec.map(|g| g.bf16_flops.value),
        });
    }
    out.sort_by_key(|g| g.device);
    Ok(out)
}

/// `TARGET_INFO_CUDA_DEVICE`: GPU id → the one CUDA device id processes saw it under
/// (none when they saw it under several).
fn cuda_ids(conn: &Connection, schema: &Schema) -> Result<HashMap<i64, Option<i64>>, AnalyzeError> {
    let mut out: HashMap<i64, Option<i64>> = HashMap::new();
    if !schema.has_col(CUDA_DEVICE_TABLE, "gpuId") || !schema.has_col(CUDA_DEVICE_TABLE, "cudaId") {
        return Ok(out);
    }
    let what = format!("reading {CUDA_DEVICE_TABLE}");
    let mut stmt = conn
        .prepare(&format!(
            "SELECT t.\"gpuId\", t.\"cudaId\" FROM \"{CUDA_DEVICE_TABLE}\" t LIMIT {}",
            MAX_GPUS * 64
        ))
        .map_err(|e| sql_error(&what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
    while let Some(row) = rows.next().map_err(|e| sql_error(&what, e))? {
        let (Some(gpu), Some(cuda)) = (
            int_in(row, 0, CUDA_DEVICE_TABLE, "gpuId")?,
            int_in(row, 1, CUDA_DEVICE_TABLE, "cudaId")?,
        ) else {
            continue;
        };
        match out.get(&gpu) {
            None if out.len() < MAX_GPUS => {
                out.insert(gpu, Some(cuda));
            }
            Some(Some(seen)) if *seen != cuda => {
                out.insert(gpu, None);
            }
            _ => {}
        }
    }
    Ok(out)
}

fn session_start(conn: &Connection, schema: &Schema) -> Result<Option<u64>, AnalyzeError> {
    if !schema.has_col(SESSION_TABLE, "utcEpochNs") {
        return Ok(None);
    }
    let what = format!("reading {SESSION_TABLE}");
    let mut stmt = conn
        .prepare(&format!(
            "SELECT t.\"utcEpochNs\" FROM \"{SESSION_TABLE}\" t LIMIT 1"
        ))
        .map_err(|e| sql_error(&what, e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_error(&what, e))?;
    match rows.next().map_err(|e| sql_error(&what, e))? {
        Some(row) => Ok(int_in(row, 0, SESSION_TABLE, "utcEpochNs")?
            .filter(|x| *x > 0)
            .map(|x| x as u64)),
        None => Ok(None),
    }
}

/// A text cell as a string (invalid UTF-8 replaced; numbers as written); NULL is none.
fn text(row: &rusqlite::Row<'_>, i: usize) -> Result<Option<String>, AnalyzeError> {
    let v = row.get_ref(i).map_err(|e| sql_error("reading a row", e))?;
    Ok(match v {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(x) => Some(x.to_string()),
        ValueRef::Text(b) | ValueRef::Blob(b) => {
            let b = &b[..b.len().min(MAX_NAME_CHARS * 4)];
            Some(String::from_utf8_lossy(b).into_owned())
        }
    })
}

/// An integer cell; NULL is none; anything else is refused.
fn int(row: &rusqlite::Row<'_>, i: usize) -> Result<Option<i64>, AnalyzeError> {
    int_in(row, i, "the export", "a column")
}

/// An integer cell of `table.col`; a whole real number is taken, text or a fraction is
/// refused naming the table and column.
fn int_in(
    row: &rusqlite::Row<'_>,
    i: usize,
    table: &str,
    col: &str,
) -> Result<Option<i64>, AnalyzeError> {
    let v = row
        .get_ref(i)
        .map_err(|e| sql_error(&format!("reading {table}"), e))?;
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(n) => Ok(Some(n)),
        ValueRef::Real(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.2e18 => {
            Ok(Some(x as i64))
        }
        other => Err(AnalyzeError::malformed(format!(
            "{table}.{col} holds {}, not an integer",
            match other {
                ValueRef::Real(x) => format!("the number {x}"),
                ValueRef::Text(_) => "text".to_string(),
                _ => "a blob".to_string(),
            }
        ))),
    }
}

/// A SQLite error while `what`, in words for the artifact page.
fn sql_error(what: &str, e: rusqlite::Error) -> AnalyzeError {
    use rusqlite::ErrorCode;
    let reason = match &e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            ErrorCode::NotADatabase => {
                "the file is not an SQLite database (or is encrypted)".to_string()
            }
            ErrorCode::DatabaseCorrupt => format!(
                "the SQLite file is corrupt ({})",
                msg.as_deref().unwrap_or("database disk image is malformed")
            ),
            ErrorCode::OutOfMemory => format!(
                "reading it needed more than the {} MiB of memory allowed for SQLite",
                SQLITE_HEAP_LIMIT >> 20
            ),
            _ => format!("SQLite: {e}"),
        },
        _ => format!("SQLite: {e}"),
    };
    AnalyzeError::malformed(format!("{what}: {reason}"))
}

#[cfg(test)]
mod tests;
