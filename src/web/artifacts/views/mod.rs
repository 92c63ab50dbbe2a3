//! What an artifact page shows, per kind: sections of tables, pictures and notes built
//! from the stored analysis (typed again from its JSON). One file per kind renders it;
//! this one holds the shared pieces and picks the renderer.

mod gpu_telemetry;
mod ncu;
mod nsys;
mod nsys_sqlite;
mod prometheus;
mod pytorch_trace;
mod request_log;
mod sweep;
mod vllm_bench;

pub use request_log::decomposition;
use sweep::sweep_sections;

use serde_json::Value;

use crate::artifacts::Artifact;
use crate::core::analyze::{
    otlp::OtlpSpansAnalysis, sweep::Slo, sweep::SweepAnalysis, vllm_bench::VllmBenchAnalysis, Kind,
    Of, Summary,
};

pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Right-aligned (numeric) columns.
    pub numeric: Vec<bool>,
    /// The first column holds kernel names: shown folded, the full name on hover and in
    /// a details row.
    pub kernel_names: bool,
}

impl Table {
    pub(super) fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
            kernel_names: headers.first() == Some(&"kernel"),
        }
    }

    pub(super) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_numeric(&self, i: &usize) -> bool {
        self.numeric.get(*i).copied().unwrap_or(false)
    }
}

#[derive(Default)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub lead: Option<String>,
    pub warnings: Vec<String>,
    pub table: Option<Table>,
    /// SVG markup produced by `charts` (escaped text, no inline style).
    pub charts: Vec<String>,
    pub notes: Vec<String>,
}

impl Section {
    pub(super) fn new(id: &str, title: &str) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            ..Section::default()
        }
    }
}

/// A number as people read it: separators, about four significant digits.
pub fn num(x: f64) -> String {
    crate::core::estimate::show_in_unit(&Value::from(x), "")
}

pub(super) fn opt(x: Option<f64>) -> String {
    x.filter(|v| v.is_finite())
        .map(num)
        .unwrap_or_else(|| "—".into())
}

pub(super) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub(super) fn summary_cells(s: &Summary) -> Vec<String> {
    vec![
        opt(s.p50),
        opt(s.p90),
        opt(s.p95),
        opt(s.p99),
        opt(s.mean),
        num(s.count as f64),
    ]
}

fn typed<T: Of + Clone>(a: &Artifact) -> Option<T> {
    a.analysis.as_ref().and_then(T::of).cloned()
}

/// The result sections of a finished analysis (empty otherwise).
pub fn sections(a: &Artifact) -> Vec<Section> {
    sections_with_slo(a, None)
}

/// The result sections, a load sweep's answered against `slo` when one is given.
pub fn sections_with_slo(a: &Artifact, slo: Option<&Slo>) -> Vec<Section> {
    if a.status != "done" {
        return Vec::new();
    }
    let built = match a.kind() {
        Kind::RequestLog => typed(a).map(|x| request_log::sections(a.id, &x)),
        Kind::OtlpSpans => typed(a).map(|x: OtlpSpansAnalysis| {
            let mut out = vec![request_log::span_counts(&x.spans)];
            out.extend(request_log::sections(a.id, &x.requests));
            out
        }),
        Kind::VllmBench => typed(a).map(|x: VllmBenchAnalysis| {
            let mut out = sweep_sections(&x.points, slo);
            out.extend(vllm_bench::sections(&x));
            out
        }),
        Kind::Sweep => typed(a).map(|x: SweepAnalysis| {
            let mut out = sweep_sections(&x.points, slo);
            if !x.notes.is_empty() {
                let mut s = Section::new("sweep-notes", "Reading the table");
                s.notes = x.notes.clone();
                out.push(s);
            }
            out
        }),
        Kind::Prometheus => typed(a).map(|x| prometheus::sections(&x)),
        Kind::PrometheusRange => typed(a).map(|x| prometheus::range_sections(&x)),
        Kind::PytorchTrace => typed(a).map(|x| pytorch_trace::sections(&x)),
        Kind::NcuCsv => typed(a).map(|x| ncu::sections(&x)),
        Kind::NsysKernSum => typed(a).map(|x| nsys::sections(&x)),
        Kind::NsysSqlite => typed(a).map(|x| nsys_sqlite::sections(&x)),
        Kind::GpuTelemetry => typed(a).map(|x| gpu_telemetry::sections(&x)),
        Kind::Unknown => None,
    };
    built.unwrap_or_else(|| {
        let mut s = Section::new("raw", "Analysis");
        s.notes.push(
            "This analysis was stored by another analyzer version; re-analyze to see it here."
                .into(),
        );
        vec![s]
    })
}
