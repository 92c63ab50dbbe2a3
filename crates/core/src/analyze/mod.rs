//! Streaming analyzers for the performance artifacts perfjournal accepts.
//!
//! Everything here is pure: input is a `std::io::Read` (or, for the SQLite exports
//! of [`nsys_sqlite`], a connection the shell opened), output is plain serde
//! structs. No file system, network or environment access, so the web shell
//! decides where bytes come from and where results go.
//!
//! Flow the shell is expected to follow:
//! 1. read the first KiBs through [`decompressing_reader`] and call [`detect`];
//! 2. call [`analyze`] with the detected [`Kind`] on a fresh reader over the
//!    *raw* upload (gzip is undone inside, so progress counts raw bytes);
//! 3. store the [`Analysis`] JSON next to [`Kind::analyzer_version`], so a newer
//!    analyzer can recompute old uploads.
//!
//! Memory stays bounded by design: text formats are read line by line, JSON
//! documents are walked with serde visitors that keep only what a result needs
//! (see `crates.md`, "Large JSON").

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, Read};

mod detect;
pub(crate) mod json_split;
mod lenient;
mod readers;
mod stats;

pub mod gpu_telemetry;
pub mod ncu;
pub mod nsys;
pub mod nsys_sqlite;
pub mod otlp;
pub mod point;
pub mod prometheus;
pub mod pytorch_trace;
pub mod request_columns;
pub mod request_log;
pub mod sweep;
pub mod trace_set;
pub mod vllm_bench;

pub use crate::stats::Summary;
pub use detect::{detect, is_gzip, DETECT_HEAD_BYTES};
pub use prometheus::{parse_snapshot, window, Snapshot};
pub use readers::{decompressing_reader, CountingReader, SizeCapExceeded};
pub use request_log::{for_each_request, RequestRow};

/// Default cap on decompressed bytes (64 GiB): far above any real trace, low
/// enough that a gzip bomb stops long before it fills a disk or the clock.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: u64 = 64 << 30;

/// What an uploaded artifact is, decided from its content by [`detect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Per-request telemetry, one JSON object per line (methodology.md).
    RequestLog,
    /// `vllm bench serve --save-result` JSON / JSONL, GenAI-Perf and GuideLLM summaries.
    VllmBench,
    /// Prometheus text exposition from a serving engine's `/metrics`.
    Prometheus,
    /// A Prometheus server's answers over an incident window (fetched by the server).
    PrometheusRange,
    /// PyTorch profiler (Kineto) Chrome trace JSON.
    PytorchTrace,
    /// Nsight Compute CSV (`--page details` or `--page raw`).
    NcuCsv,
    /// Nsight Systems `cuda_gpu_kern_sum` / `gpukernsum` CSV.
    NsysKernSum,
    /// Nsight Systems report exported to SQLite (`nsys export --type sqlite`): analysed
    /// as a PyTorch trace is, plus NVTX ranges (see [`nsys_sqlite`]).
    NsysSqlite,
    /// `nvidia-smi dmon`, `nvidia-smi --query-gpu … --format=csv`, DCGM exporter text.
    GpuTelemetry,
    /// A load sweep's summary table (vLLM benchmark suite: one row per request rate).
    Sweep,
    /// OpenTelemetry request spans (vLLM `llm_request`, SGLang request roots) as OTLP
    /// JSON: received on `/v1/traces` or uploaded; analysed as a request log.
    OtlpSpans,
    /// Anything else: stored, not analyzed.
    Unknown,
}

impl Kind {
    /// Every kind, in a stable order (for menus and tests).
    pub const ALL: [Kind; 12] = [
        Kind::RequestLog,
        Kind::VllmBench,
        Kind::Prometheus,
        Kind::PrometheusRange,
        Kind::PytorchTrace,
        Kind::NcuCsv,
        Kind::NsysKernSum,
        Kind::NsysSqlite,
        Kind::GpuTelemetry,
        Kind::Sweep,
        Kind::OtlpSpans,
        Kind::Unknown,
    ];

    /// Stable identifier stored in the database and used in URLs.
    pub fn slug(self) -> &'static str {
        match self {
            Kind::RequestLog => "request_log",
            Kind::VllmBench => "vllm_bench",
            Kind::Prometheus => "prometheus",
            Kind::PrometheusRange => "prometheus_range",
            Kind::PytorchTrace => "pytorch_trace",
            Kind::NcuCsv => "ncu_csv",
            Kind::NsysKernSum => "nsys_kern_sum",
            Kind::NsysSqlite => "nsys_sqlite",
            Kind::GpuTelemetry => "gpu_telemetry",
            Kind::Sweep => "sweep",
            Kind::OtlpSpans => "otlp_spans",
            Kind::Unknown => "unknown",
        }
    }

    /// Inverse of [`Kind::slug`].
    pub fn from_slug(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.slug() == s)
    }

    /// Version of the analyzer for this kind; bump it whenever the output of
    /// that analyzer changes so stored results can be recomputed.
    pub fn analyzer_version(self) -> u32 {
        match self {
            Kind::RequestLog => request_log::ANALYZER_VERSION,
            Kind::VllmBench => vllm_bench::ANALYZER_VERSION,
            Kind::Prometheus => prometheus::ANALYZER_VERSION,
            Kind::PrometheusRange => prometheus::range::ANALYZER_VERSION,
            Kind::PytorchTrace => pytorch_trace::ANALYZER_VERSION,
            Kind::NcuCsv => ncu::ANALYZER_VERSION,
            Kind::NsysKernSum => nsys::ANALYZER_VERSION,
            Kind::NsysSqlite => nsys_sqlite::ANALYZER_VERSION,
            Kind::GpuTelemetry => gpu_telemetry::ANALYZER_VERSION,
            Kind::Sweep => sweep::ANALYZER_VERSION,
            Kind::OtlpSpans => otlp::ANALYZER_VERSION,
            Kind::Unknown => 0,
        }
    }

    /// Kinds whose content is per-request rows: stored as column chunks and analysed
    /// by the request-log analysis (phase quantiles, decomposition, comparisons).
    pub fn has_request_rows(self) -> bool {
        matches!(self, Kind::RequestLog | Kind::OtlpSpans)
    }

    /// Kinds read from a file on disk (a database), not from a stream of bytes: the shell
    /// spools the upload to a file and calls the kind's own analyzer (see [`analyze`]).
    pub fn needs_file(self) -> bool {
        matches!(self, Kind::NsysSqlite)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.slug())
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::from_slug(s).ok_or_else(|| format!("unknown artifact kind '{s}'"))
    }
}

/// Knobs for [`analyze`]. `Default` gives the behaviour documented per field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    /// request_log: keep only rows whose `tenant` equals this.
    pub tenant: Option<String>,
    /// request_log: keep only rows whose `model_version` equals this.
    pub model_version: Option<String>,
    /// request_log: keep rows with `arrival_ts >= arrival_from` (epoch seconds).
    /// Rows without `arrival_ts` are excluded while a window is set.
    pub arrival_from: Option<f64>,
    /// request_log: keep rows with `arrival_ts < arrival_to` (epoch seconds).
    pub arrival_to: Option<f64>,
    /// pytorch_trace: HTA drops GPU work launched in the last `ProfilerStep#`
    /// (often cut short when the profiler stops); `true` keeps it. Default
    /// `false`, as HTA's `TraceAnalysis(include_last_profiler_step=False)`.
    pub include_last_profiler_step: bool,
    /// pytorch_trace: how many kernels (by total time) to list. Default 50.
    pub top_kernels: usize,
    /// Gzip-bomb guard: stop once more than this many decompressed bytes were
    /// produced. Default [`DEFAULT_MAX_DECOMPRESSED_BYTES`].
    pub max_decompressed_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tenant: None,
            model_version: None,
            arrival_from: None,
            arrival_to: None,
            include_last_profiler_step: false,
            top_kernels: 50,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

/// One analysis result. Serialized *untagged*: the JSON is exactly the
/// per-kind shape (the shell stores the kind next to it).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
// One value per upload, moved once: boxing the large variants buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Analysis {
    RequestLog(request_log::RequestLogAnalysis),
    VllmBench(vllm_bench::VllmBenchAnalysis),
    Prometheus(prometheus::PrometheusAnalysis),
    PrometheusRange(prometheus::range::PrometheusRangeAnalysis),
    PytorchTrace(pytorch_trace::TraceAnalysis),
    NcuCsv(ncu::NcuAnalysis),
    NsysKernSum(nsys::NsysAnalysis),
    NsysSqlite(nsys_sqlite::NsysSqliteAnalysis),
    GpuTelemetry(gpu_telemetry::GpuTelemetryAnalysis),
    Sweep(sweep::SweepAnalysis),
    OtlpSpans(otlp::OtlpSpansAnalysis),
}

impl Analysis {
    /// The kind this result belongs to.
    pub fn kind(&self) -> Kind {
        match self {
            Analysis::RequestLog(_) => Kind::RequestLog,
            Analysis::VllmBench(_) => Kind::VllmBench,
            Analysis::Prometheus(_) => Kind::Prometheus,
            Analysis::PrometheusRange(_) => Kind::PrometheusRange,
            Analysis::PytorchTrace(_) => Kind::PytorchTrace,
            Analysis::NcuCsv(_) => Kind::NcuCsv,
            Analysis::NsysKernSum(_) => Kind::NsysKernSum,
            Analysis::NsysSqlite(_) => Kind::NsysSqlite,
            Analysis::GpuTelemetry(_) => Kind::GpuTelemetry,
            Analysis::Sweep(_) => Kind::Sweep,
            Analysis::OtlpSpans(_) => Kind::OtlpSpans,
        }
    }

    /// Reads a stored result back as the kind it was stored under: the one decode of a
    /// stored analysis. `None` for [`Kind::Unknown`] or a value that is not that kind's
    /// shape (a result written by an analyzer older than its kind's version).
    pub fn read(kind: Kind, value: &serde_json::Value) -> Option<Analysis> {
        fn de<'a, T: serde::Deserialize<'a>>(v: &'a serde_json::Value) -> Option<T> {
            T::deserialize(v).ok()
        }
        Some(match kind {
            Kind::RequestLog => Analysis::RequestLog(de(value)?),
            Kind::VllmBench => Analysis::VllmBench(de(value)?),
            Kind::Prometheus => Analysis::Prometheus(de(value)?),
            Kind::PrometheusRange => Analysis::PrometheusRange(de(value)?),
            Kind::PytorchTrace => Analysis::PytorchTrace(de(value)?),
            Kind::NcuCsv => Analysis::NcuCsv(de(value)?),
            Kind::NsysKernSum => Analysis::NsysKernSum(de(value)?),
            Kind::NsysSqlite => Analysis::NsysSqlite(de(value)?),
            Kind::GpuTelemetry => Analysis::GpuTelemetry(de(value)?),
            Kind::Sweep => Analysis::Sweep(de(value)?),
            Kind::OtlpSpans => Analysis::OtlpSpans(de(value)?),
            Kind::Unknown => return None,
        })
    }

    /// The result as a JSON value (what the shell stores).
    pub fn to_json(&self) -> serde_json::Value {
        // Serializing plain structs of numbers/strings cannot fail.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// A kind's own result type, taken out of an [`Analysis`] without decoding it again.
/// A request log's result is also the one request spans carry, and a PyTorch trace's
/// the one an Nsight Systems export carries.
pub trait Of: Sized {
    fn of(analysis: &Analysis) -> Option<&Self>;
}

macro_rules! of {
    ($($variant:ident => $ty:ty),* $(,)?) => {
        $(impl Of for $ty {
            fn of(analysis: &Analysis) -> Option<&Self> {
                match analysis {
                    Analysis::$variant(a) => Some(a),
                    _ => None,
                }
            }
        })*
    };
}

of! {
    VllmBench => vllm_bench::VllmBenchAnalysis,
    Prometheus => prometheus::PrometheusAnalysis,
    PrometheusRange => prometheus::range::PrometheusRangeAnalysis,
    NcuCsv => ncu::NcuAnalysis,
    NsysKernSum => nsys::NsysAnalysis,
    NsysSqlite => nsys_sqlite::NsysSqliteAnalysis,
    GpuTelemetry => gpu_telemetry::GpuTelemetryAnalysis,
    Sweep => sweep::SweepAnalysis,
    OtlpSpans => otlp::OtlpSpansAnalysis,
}

impl Of for request_log::RequestLogAnalysis {
    fn of(analysis: &Analysis) -> Option<&Self> {
        match analysis {
            Analysis::RequestLog(a) => Some(a),
            Analysis::OtlpSpans(a) => Some(&a.requests),
            _ => None,
        }
    }
}

impl Of for pytorch_trace::TraceAnalysis {
    fn of(analysis: &Analysis) -> Option<&Self> {
        match analysis {
            Analysis::PytorchTrace(a) => Some(a),
            Analysis::NsysSqlite(a) => Some(&a.trace),
            _ => None,
        }
    }
}

/// Why an analysis failed. Messages name the line and/or byte and the problem.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The content is not what its kind promises (bad JSON, wrong columns …).
    #[error("{}", malformed_text(*line, *byte, message))]
    Malformed {
        /// 1-based line of the decompressed content, when known.
        line: Option<u64>,
        /// 0-based byte offset in the decompressed content, when known.
        byte: Option<u64>,
        message: String,
    },
    /// Reading the input failed (including a truncated or corrupt gzip stream).
    #[error("could not read the upload: {0}")]
    Io(#[source] io::Error),
    /// More decompressed bytes than `Options::max_decompressed_bytes`.
    #[error("the content is larger than the allowed decompressed size (gzip-bomb guard)")]
    TooLarge,
    /// A kind read from a file ([`Kind::needs_file`]) was handed a stream of bytes.
    #[error("{0} is read from a file, not from a stream")]
    NeedsFile(Kind),
    /// Kind `unknown`: the shell stores the file and shows "not analyzed".
    #[error("not analyzed: the content matches no supported artifact kind")]
    NotAnalyzed,
}

fn malformed_text(line: Option<u64>, byte: Option<u64>, message: &str) -> String {
    match (line, byte) {
        (Some(l), Some(b)) => format!("line {l} (byte {b}): {message}"),
        (Some(l), None) => format!("line {l}: {message}"),
        (None, Some(b)) => format!("byte {b}: {message}"),
        (None, None) => message.to_string(),
    }
}

impl AnalyzeError {
    /// A `Malformed` error without position.
    pub fn malformed(message: impl Into<String>) -> Self {
        AnalyzeError::Malformed {
            line: None,
            byte: None,
            message: message.into(),
        }
    }

    /// A `Malformed` error at a 1-based line.
    pub fn at_line(line: u64, message: impl Into<String>) -> Self {
        AnalyzeError::Malformed {
            line: Some(line),
            byte: None,
            message: message.into(),
        }
    }
}

impl From<io::Error> for AnalyzeError {
    fn from(e: io::Error) -> Self {
        readers::classify_io_error(e)
    }
}

/// serde_json's message without the position it appends.
fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.split(" at line ")
        .next()
        .unwrap_or(text.as_str())
        .to_string()
}

impl AnalyzeError {
    /// A JSON error inside a part of a document that starts at `at` (positions in the
    /// error are relative to the part).
    pub(crate) fn json_in_part(e: serde_json::Error, at: json_split::Pos) -> Self {
        if e.is_io() {
            return io::Error::from(e).into();
        }
        let p = at.within(e.line(), e.column());
        AnalyzeError::Malformed {
            line: Some(p.line),
            byte: Some(p.byte),
            message: format!("column {}: invalid JSON: {}", p.column, json_reason(&e)),
        }
    }
}

impl From<json_split::SplitError> for AnalyzeError {
    fn from(e: json_split::SplitError) -> Self {
        use json_split::SplitError;
        let (at, message) = match e {
            SplitError::Io(e) => return e.into(),
            SplitError::Syntax { at, ref message } => (at, message.clone()),
            SplitError::Truncated { at } => {
                (at, "EOF while parsing: the document ends early".into())
            }
            SplitError::TooLarge { at, limit } => (
                at,
                format!(
                    "one element is larger than {} MiB; such a trace is not analyzed",
                    limit >> 20
                ),
            ),
        };
        AnalyzeError::Malformed {
            line: Some(at.line),
            byte: Some(at.byte),
            message: format!("column {}: invalid JSON: {message}", at.column),
        }
    }
}

impl From<serde_json::Error> for AnalyzeError {
    fn from(e: serde_json::Error) -> Self {
        if e.is_io() {
            return io::Error::from(e).into();
        }
        let line = (e.line() > 0).then_some(e.line() as u64);
        let column = e.column();
        let reason = json_reason(&e);
        let message = if line.is_some() {
            format!("column {column}: invalid JSON: {reason}")
        } else {
            format!("invalid JSON: {reason}")
        };
        AnalyzeError::Malformed {
            line,
            byte: None,
            message,
        }
    }
}

impl From<csv::Error> for AnalyzeError {
    fn from(e: csv::Error) -> Self {
        let pos = e.position().cloned();
        match e.into_kind() {
            csv::ErrorKind::Io(io) => io.into(),
            other => {
                let message = match other {
                    csv::ErrorKind::Utf8 { err, .. } => format!("invalid UTF-8 in CSV: {err}"),
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!("CSV row has {len} fields, expected {expected_len}"),
                    _ => "invalid CSV".to_string(),
                };
                AnalyzeError::Malformed {
                    line: pos.as_ref().map(|p| p.line()),
                    byte: pos.as_ref().map(|p| p.byte()),
                    message,
                }
            }
        }
    }
}

/// The largest magnitude a number read from an upload may have. Nothing measured in
/// these files comes near it (nanoseconds since 1970 are 1.8e18, byte counters of a
/// year of traffic 1e17); beyond it a value is a fault or an attack, and summed or
/// squared it would leave infinities in the result, which JSON cannot hold.
pub const MAX_MAGNITUDE: f64 = 1e19;

/// True for a finite number within ±[`MAX_MAGNITUDE`].
pub fn in_range(x: f64) -> bool {
    x.is_finite() && x.abs() <= MAX_MAGNITUDE
}

/// The message for a number refused as out of range.
pub fn out_of_range(field: &str, value: f64, unit: &str) -> String {
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    format!(
        "\"{field}\" is {value:e}{unit}, out of range (numbers beyond ±{MAX_MAGNITUDE:e} are refused)"
    )
}

/// The first number in a stored result beyond ±[`MAX_MAGNITUDE`], with its path
/// (`samples.ttft_ms.p99`, `kernels[3].total_us`): the last guard before a result is
/// kept, for values an analyzer took from a field it does not check itself.
pub fn first_out_of_range(v: &serde_json::Value) -> Option<(String, f64)> {
    use serde_json::Value;
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| !in_range(*x))
            .map(|x| (String::new(), x)),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
            first_out_of_range(x).map(|(p, x)| (format!("[{i}]{}", dotted(&p)), x))
        }),
        Value::Object(map) => map.iter().find_map(|(k, x)| {
            first_out_of_range(x).map(|(p, x)| (format!("{k}{}", dotted(&p)), x))
        }),
        _ => None,
    }
}

fn dotted(rest: &str) -> String {
    if rest.is_empty() || rest.starts_with('[') {
        rest.to_string()
    } else {
        format!(".{rest}")
    }
}

/// Analyze one artifact of a known kind.
///
/// Kinds for which [`Kind::needs_file`] holds (an SQLite export) are not read here: the
/// shell writes the (decompressed) bytes to a file, opens it read-only and calls the
/// kind's analyzer with the connection (`nsys_sqlite::analyze`); here they give
/// [`AnalyzeError::NeedsFile`].
///
/// `reader` yields the upload as stored (gzip is detected by its magic bytes
/// and undone here). `progress` is called with the number of raw (possibly
/// compressed) bytes consumed so far, about every MiB and once at the end.
pub fn analyze(
    kind: Kind,
    reader: impl Read + Send,
    opts: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Analysis, AnalyzeError> {
    if kind == Kind::Unknown {
        return Err(AnalyzeError::NotAnalyzed);
    }
    if kind.needs_file() {
        return Err(AnalyzeError::NeedsFile(kind));
    }
    let counted = readers::CountingReader::new(reader, progress);
    let input = decompressing_reader(counted, opts.max_decompressed_bytes);
    Ok(match kind {
        Kind::RequestLog => Analysis::RequestLog(request_log::analyze(input, opts)?),
        Kind::VllmBench => Analysis::VllmBench(vllm_bench::analyze(input)?),
        Kind::Prometheus => Analysis::Prometheus(prometheus::analyze(input)?),
        Kind::PrometheusRange => Analysis::PrometheusRange(prometheus::range::analyze(input)?),
        Kind::PytorchTrace => Analysis::PytorchTrace(pytorch_trace::analyze(input, opts)?),
        Kind::NcuCsv => Analysis::NcuCsv(ncu::analyze(input)?),
        Kind::NsysKernSum => Analysis::NsysKernSum(nsys::analyze(input)?),
        Kind::NsysSqlite => return Err(AnalyzeError::NeedsFile(kind)),
        Kind::GpuTelemetry => Analysis::GpuTelemetry(gpu_telemetry::analyze(input)?),
        Kind::Sweep => Analysis::Sweep(sweep::analyze(input)?),
        Kind::OtlpSpans => Analysis::OtlpSpans(otlp::analyze(input, opts)?),
        Kind::Unknown => return Err(AnalyzeError::NotAnalyzed),
    })
}

/// Shared helpers for tests that read the real fixtures.
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::PathBuf;

    /// The folder of real fixtures, or `None` (after recording the skip) when the
    /// `PERFJOURNAL_REAL_FIXTURES` variable is unset or names an empty folder.
    pub fn real_fixtures() -> Option<PathBuf> {
        let skip = |reason: &str| crate::test_skip::skip(&crate::test_skip::current_test(), reason);
        let Some(p) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(PathBuf::from) else {
            skip("PERFJOURNAL_REAL_FIXTURES unset");
            return None;
        };
        if std::fs::read_dir(&p).map_or(true, |mut d| d.next().is_none()) {
            skip(&format!("{} is missing or empty", p.display()));
            return None;
        }
        Some(p)
    }

    /// Open a fixture file under the real-fixtures folder.
    pub fn open(root: &std::path::Path, rel: &str) -> std::fs::File {
        let p = root.join(rel);
        std::fs::File::open(&p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()))
    }

    /// Gzip `data` in memory (for synthetic `.gz` inputs).
    pub fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_number_out_of_range_is_named_by_its_path() {
        let v = serde_json::json!({"a": 1.0, "b": {"c": [0.5, -1e300]}, "d": 2e19});
        let (path, x) = first_out_of_range(&v).unwrap();
        assert_eq!(path, "b.c[1]");
        assert_eq!(x, -1e300);
        assert!(first_out_of_range(&serde_json::json!({"ts": 1.7e18, "n": [1, 2]})).is_none());
        assert!(in_range(-MAX_MAGNITUDE) && !in_range(f64::NAN) && !in_range(f64::INFINITY));
        assert_eq!(
            out_of_range("dur", 1e300, "µs"),
            "\"dur\" is 1e300 µs, out of range (numbers beyond ±1e19 are refused)"
        );
    }

    #[test]
    fn slugs_round_trip_and_match_serde() {
        let expected = [
            "request_log",
            "vllm_bench",
            "prometheus",
            "prometheus_range",
            "pytorch_trace",
            "ncu_csv",
            "nsys_kern_sum",
            "nsys_sqlite",
            "gpu_telemetry",
            "sweep",
            "otlp_spans",
            "unknown",
        ];
        for (k, s) in Kind::ALL.iter().zip(expected) {
            assert_eq!(k.slug(), s);
            assert_eq!(Kind::from_slug(s), Some(*k));
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::json!(s));
            assert_eq!(s.parse::<Kind>().unwrap(), *k);
        }
        assert!(Kind::from_slug("nope").is_none());
        for k in Kind::ALL {
            if k != Kind::Unknown {
                assert!(k.analyzer_version() >= 1);
            }
        }
    }

    #[test]
    fn unknown_is_not_analyzed() {
        let err = analyze(Kind::Unknown, &b"hello"[..], &Options::default(), &|_| {}).unwrap_err();
        assert!(matches!(err, AnalyzeError::NotAnalyzed));
        assert!(err.to_string().contains("not analyzed"));
    }

    #[test]
    fn analyze_reports_progress_in_raw_bytes_and_gunzips() {
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!(
                "{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{},\"first_token_ms\":{}}}\n",
                i % 7,
                10 + i % 7
            ));
        }
        let gz = test_support::gzip(text.as_bytes());
        let last = std::sync::atomic::AtomicU64::new(0);
        let calls = std::sync::atomic::AtomicU64::new(0);
        let progress = |n: u64| {
            assert!(n >= last.load(std::sync::atomic::Ordering::Relaxed));
            last.store(n, std::sync::atomic::Ordering::Relaxed);
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let a = analyze(Kind::RequestLog, &gz[..], &Options::default(), &progress).unwrap();
        assert_eq!(
            last.into_inner(),
            gz.len() as u64,
            "final progress = raw bytes"
        );
        assert!(calls.into_inner() >= 1);
        match a {
            Analysis::RequestLog(r) => assert_eq!(r.rows, 20_000),
            other => panic!("unexpected {:?}", other.kind()),
        }
    }

    #[test]
    fn gzip_bomb_guard_gives_too_large() {
        let big = vec![b' '; 4 << 20];
        let mut doc = b"{\"traceEvents\": [".to_vec();
        doc.extend_from_slice(&big);
        doc.extend_from_slice(b"]}");
        let gz = test_support::gzip(&doc);
        let opts = Options {
            max_decompressed_bytes: 1 << 20,
            ..Options::default()
        };
        let err = analyze(Kind::PytorchTrace, &gz[..], &opts, &|_| {}).unwrap_err();
        assert!(matches!(err, AnalyzeError::TooLarge), "{err:?}");
    }

    #[test]
    fn malformed_messages_name_positions() {
        let e = AnalyzeError::Malformed {
            line: Some(3),
            byte: Some(40),
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "line 3 (byte 40): bad");
        assert_eq!(AnalyzeError::at_line(7, "x").to_string(), "line 7: x");
        let j: serde_json::Error =
            serde_json::from_str::<serde_json::Value>("{\n\"a\": tru}").unwrap_err();
        let e: AnalyzeError = j.into();
        let s = e.to_string();
        assert!(s.starts_with("line 2:"), "{s}");
    }

    #[test]
    fn analysis_serializes_untagged() {
        let a = analyze(
            Kind::NsysKernSum,
            &b"Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n100.0,10,1,10,10,10,10,0,k\n"[..],
            &Options::default(),
            &|_| {},
        )
        .unwrap();
        assert_eq!(a.kind(), Kind::NsysKernSum);
        let v = a.to_json();
        assert_eq!(v["total_ns"], serde_json::json!(10.0));
        assert!(v.get("NsysKernSum").is_none());
    }
}
