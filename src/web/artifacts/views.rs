//! What an artifact page shows, per kind: sections of tables, pictures and notes built
//! from the stored analysis (typed again from its JSON), plus the SQL behind the
//! request-log decomposition.

use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::PgPool;

use crate::artifacts::{columns, Artifact};
use crate::charts;
use crate::core::analyze::{
    gpu_telemetry::GpuTelemetryAnalysis,
    ncu::NcuAnalysis,
    nsys::NsysAnalysis,
    prometheus::PrometheusAnalysis,
    pytorch_trace::TraceAnalysis,
    request_columns::{self, Filter as ColumnFilter, GroupBy, GroupNumbers, PHASES, TTFT_PARTS},
    request_log::{share_of, RequestLogAnalysis, SHARE_DEFINITION},
    sweep::{self, Slo, SweepAnalysis, SweepPoint},
    vllm_bench::VllmBenchAnalysis,
    Kind, Summary,
};
use crate::core::FieldError;

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
    fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            numeric: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
            kernel_names: headers.first() == Some(&"kernel"),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
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
    fn new(id: &str, title: &str) -> Self {
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

fn opt(x: Option<f64>) -> String {
    x.filter(|v| v.is_finite())
        .map(num)
        .unwrap_or_else(|| "—".into())
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn summary_cells(s: &Summary) -> Vec<String> {
    vec![
        opt(s.p50),
        opt(s.p90),
        opt(s.p95),
        opt(s.p99),
        opt(s.mean),
        num(s.count as f64),
    ]
}

fn typed<T: DeserializeOwned>(a: &Artifact) -> Option<T> {
    a.analysis
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok())
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
        Kind::RequestLog => typed(a).map(|x| request_log(a.id, &x)),
        Kind::VllmBench => typed(a).map(|x: VllmBenchAnalysis| {
            let mut out = sweep_sections(&x.points, slo);
            out.extend(vllm_bench(&x));
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
        Kind::Prometheus => typed(a).map(|x| prometheus(&x)),
        Kind::PytorchTrace => typed(a).map(|x| trace(&x)),
        Kind::NcuCsv => typed(a).map(|x| ncu(&x)),
        Kind::NsysKernSum => typed(a).map(|x| nsys(&x)),
        Kind::GpuTelemetry => typed(a).map(|x| gpu_telemetry(&x)),
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

/// One section per series of a load sweep: the knee and SLO sentences, the points
/// and the two pictures. Empty when there are no points.
pub fn sweep_sections(points: &[SweepPoint], slo: Option<&Slo>) -> Vec<Section> {
    let names = sweep::series_names(points);
    let many = names.len() > 1;
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = sweep::series_points(points, name);
            let id = if many {
                format!("sweep-{}", i + 1)
            } else {
                "sweep".into()
            };
            let title = if name.is_empty() {
                "Load sweep".to_string()
            } else {
                format!("Load sweep: {name}")
            };
            sweep_section(&id, &title, &pts, slo)
        })
        .collect()
}

fn sweep_section(id: &str, title: &str, pts: &[&SweepPoint], slo: Option<&Slo>) -> Section {
    let mut s = Section::new(id, title);
    let latency = slo
        .map(Slo::latency)
        .or_else(|| sweep::default_latency(pts));
    let knee = latency.and_then(|l| sweep::knee(pts, l));
    let mut lead = Vec::new();
    match (&knee, latency) {
        (Some(k), _) => lead.push(k.sentence.clone()),
        (None, Some(l)) => lead.push(format!(
            "No knee: {} never rose sharply against throughput between neighbouring points.",
            l.label()
        )),
        (None, None) => {}
    }
    let answer = slo.map(|slo| sweep::slo_answer(pts, *slo));
    match &answer {
        Some(Ok(a)) => lead.push(a.sentence.clone()),
        Some(Err(why)) => s
            .warnings
            .push(format!("The SLO cannot be answered: {why}.")),
        None => {}
    }
    if !lead.is_empty() {
        s.lead = Some(lead.join(" "));
    }
    let mut headers = vec![
        "load",
        "achieved req/s",
        "output tok/s",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "ITL p99 (ms)",
        "E2E p99 (ms)",
    ];
    if slo.is_some() {
        headers.push("meets SLO");
    }
    let mut t = Table::new(&headers);
    for p in pts {
        let mut row = vec![
            p.load_text(),
            opt(p.achieved_rps),
            opt(p.output_tps),
            opt(p.ttft_ms.p50),
            opt(p.ttft_ms.p99),
            opt(p.tpot_ms.p50),
            opt(p.itl_ms.p99),
            opt(p.e2el_ms.p99),
        ];
        if let Some(slo) = slo {
            row.push(
                match slo.latency().value_of(p) {
                    Some(v) if v <= slo.max_ms => "yes",
                    Some(_) => "no",
                    None => "not measured",
                }
                .into(),
            );
        }
        t.row(row);
    }
    s.table = Some(t);
    if let Some(l) = latency {
        if let Some(svg) =
            charts::sweep::latency_vs_throughput(pts, l, slo, knee.as_ref().map(|k| k.index))
        {
            s.charts.push(svg);
        }
    }
    if let Some(svg) = charts::sweep::achieved_vs_offered(pts) {
        s.charts.push(svg);
    }
    s.notes.push(format!(
        "The knee is the last point before latency turns up sharply: between neighbouring points latency rose by more than {:.0}% while throughput rose by less than {:.0}%, or latency rose more than {} times faster than throughput (relative changes).",
        sweep::KNEE_MIN_RISE * 100.0,
        sweep::KNEE_FLAT_THROUGHPUT * 100.0,
        sweep::KNEE_ELASTICITY
    ));
    s.notes.push(
        "A point meets an SLO when its latency is at most the limit (exactly at the limit counts as meeting)."
            .into(),
    );
    s
}

fn phase_label(key: &str) -> String {
    key.trim_end_matches("_ms").replace('_', " ")
}

fn request_log(id: i64, x: &RequestLogAnalysis) -> Vec<Section> {
    let mut out = Vec::new();
    let mut head = Section::new("phases", "Phases (ms)");
    head.lead = Some(format!(
        "{} requests{}. Dominant phase of TTFT: {}.",
        num(x.rows as f64),
        if x.rows != x.rows_total {
            format!(" of {}", num(x.rows_total as f64))
        } else {
            String::new()
        },
        match (&x.dominant_phase, x.dominant_share) {
            (Some(p), Some(s)) => format!("{} ({} of TTFT)", phase_label(p), pct(s)),
            (Some(p), None) => phase_label(p),
            _ => "nothing dominates".into(),
        }
    ));
    let mut t = Table::new(&[
        "phase",
        "p50",
        "p90",
        "p95",
        "p99",
        "mean",
        "count",
        "share of TTFT",
        "share of E2E",
    ]);
    for (phase, s) in &x.phases {
        let mut cells = vec![phase_label(phase)];
        cells.extend(summary_cells(s));
        cells.push(
            x.share_of_ttft
                .get(phase)
                .map(|v| pct(*v))
                .unwrap_or_default(),
        );
        cells.push(
            x.share_of_e2e
                .get(phase)
                .map(|v| pct(*v))
                .unwrap_or_default(),
        );
        t.row(cells);
    }
    head.table = Some(t);
    let parts = |m: &std::collections::BTreeMap<String, f64>| -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = m.iter().map(|(k, s)| (phase_label(k), *s)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    };
    if let Some(svg) = charts::share_bar(
        "Where the time goes",
        &[
            ("TTFT", parts(&x.share_of_ttft)),
            ("E2E", parts(&x.share_of_e2e)),
        ],
    ) {
        head.charts.push(svg);
    }
    head.notes = x.notes.clone();
    head.notes.push(SHARE_DEFINITION.to_string());
    head.notes.push(format!(
        "Filter by tenant, model version or time window, and group by tenant, on the decomposition page: /artifacts/{id}/requests"
    ));
    out.push(head);
    if !x.by_tenant.is_empty() {
        let mut s = Section::new("tenants", "By tenant");
        let mut t = Table::new(&[
            "tenant",
            "requests",
            "TTFT p95",
            "E2E p95",
            "dominant phase of TTFT",
        ]);
        for b in &x.by_tenant {
            t.row(vec![
                b.tenant.clone(),
                num(b.rows as f64),
                opt(b.first_token_ms.p95),
                opt(b.total_ms.p95),
                b.dominant_phase
                    .as_deref()
                    .map(phase_label)
                    .unwrap_or_else(|| "nothing dominates".into()),
            ]);
        }
        s.table = Some(t);
        out.push(s);
    }
    out
}

fn vllm_bench(x: &VllmBenchAnalysis) -> Vec<Section> {
    let r = &x.result;
    let mut out = Vec::new();
    let mut head = Section::new("summary", "Benchmark");
    head.lead = Some(format!(
        "{} completed, {} failed; {} req/s, {} output tok/s.",
        r.completed
            .map(|v| num(v as f64))
            .unwrap_or_else(|| "?".into()),
        r.failed
            .map(|v| num(v as f64))
            .unwrap_or_else(|| "?".into()),
        opt(r.request_throughput),
        opt(r.output_throughput)
    ));
    head.warnings = r.flags.iter().map(|f| f.message.clone()).collect();
    let mut t = Table::new(&["metric (ms)", "p50", "p90", "p95", "p99", "mean", "count"]);
    for (name, s) in [
        ("TTFT", &r.ttft_ms),
        ("TPOT", &r.tpot_ms),
        ("ITL", &r.itl_ms),
        ("E2E", &r.e2el_ms),
    ] {
        let mut cells = vec![name.to_string()];
        cells.extend(summary_cells(s));
        t.row(cells);
    }
    head.table = Some(t);
    for (title, samples) in [
        ("TTFT", &r.samples.ttft_ms),
        ("ITL", &r.samples.itl_ms),
        ("TPOT", &r.samples.tpot_ms),
        ("E2E latency", &r.samples.e2el_ms),
    ] {
        if let Some(svg) = charts::cdf(
            &format!("{title} CDF"),
            "ms",
            &[(title, samples.as_slice())],
        ) {
            head.charts.push(svg);
        }
    }
    head.notes
        .push(format!("Distributions from {}.", r.distributions_from));
    out.push(head);
    if !r.config.is_empty() {
        let mut s = Section::new("config", "Run configuration");
        let mut t = Table::new(&["setting", "value"]);
        t.numeric = vec![false, false];
        for (k, v) in &r.config {
            t.row(vec![k.clone(), crate::core::estimate::display(v)]);
        }
        s.table = Some(t);
        out.push(s);
    }
    if !x.runs.is_empty() {
        let mut s = Section::new("runs", "All runs in the file");
        let mut t = Table::new(&[
            "run",
            "completed",
            "failed",
            "TTFT p50",
            "TTFT p99",
            "ITL p50",
            "req/s",
        ]);
        for (i, run) in x.runs.iter().enumerate() {
            t.row(vec![
                format!("{}", i + 1),
                run.completed.map(|v| num(v as f64)).unwrap_or_default(),
                run.failed.map(|v| num(v as f64)).unwrap_or_default(),
                opt(run.ttft_ms.p50),
                opt(run.ttft_ms.p99),
                opt(run.itl_ms.p50),
                opt(run.request_throughput),
            ]);
        }
        s.table = Some(t);
        out.push(s);
    }
    out
}

fn prometheus(x: &PrometheusAnalysis) -> Vec<Section> {
    let mut s = Section::new("metrics", "Server metrics");
    s.lead = Some(format!(
        "{} — {}. Running {}, waiting {}, KV cache {}; preemptions {}; prefix-cache hit rate {}.",
        x.engine,
        if x.window {
            "a window between two snapshots"
        } else {
            "one snapshot (totals since start)"
        },
        opt(x.gauges.running),
        opt(x.gauges.waiting),
        x.gauges.kv_usage.map(pct).unwrap_or_else(|| "—".into()),
        opt(x.preemptions),
        x.prefix_cache_hit_rate
            .map(pct)
            .unwrap_or_else(|| "—".into()),
    ));
    let mut t = Table::new(&["histogram (s)", "p50", "p90", "p95", "p99", "mean", "count"]);
    for (name, q) in &x.quantiles {
        t.row(vec![
            name.clone(),
            opt(q.p50),
            opt(q.p90),
            opt(q.p95),
            opt(q.p99),
            opt(q.mean),
            num(q.count),
        ]);
    }
    s.table = Some(t);
    s.notes = x.notes.clone();
    let mut out = vec![s];
    if !x.counters.is_empty() {
        let mut c = Section::new("counters", "Counters");
        let mut t = Table::new(&["counter", "value"]);
        for (k, v) in &x.counters {
            t.row(vec![k.clone(), num(*v)]);
        }
        c.table = Some(t);
        out.push(c);
    }
    if let Some(c) = &x.capture {
        out.push(capture_series(c));
    }
    out
}

/// A live capture's scrapes over time: gauges as sampled, counters as rates.
fn capture_series(c: &crate::core::analyze::prometheus::CaptureSummary) -> Section {
    let mut s = Section::new("capture", "Capture over time");
    s.lead = Some(format!(
        "{} scrapes over {} s, {} to {}{}. Rates are per second since the scrape before.",
        c.snapshots,
        num(c.seconds),
        c.started,
        c.ended,
        c.url
            .as_deref()
            .map(|u| format!(", from {u}"))
            .unwrap_or_default()
    ));
    let mut t = Table::new(&[
        "at (s)",
        "running",
        "waiting",
        "KV cache",
        "prompt tok/s",
        "generated tok/s",
        "requests/s",
        "preemptions/s",
    ]);
    for p in &c.series {
        let rate = |k: &str| opt(p.rates.get(k).copied());
        t.row(vec![
            num(p.offset_s),
            opt(p.running),
            opt(p.waiting),
            p.kv_usage.map(pct).unwrap_or_else(|| "—".into()),
            rate("prompt_tokens"),
            rate("generation_tokens"),
            rate("requests_success"),
            rate("preemptions"),
        ]);
    }
    s.table = Some(t);
    s
}

fn us(x: f64) -> String {
    num(x)
}

fn trace(x: &TraceAnalysis) -> Vec<Section> {
    let mut out = vec![trace_temporal(x)];
    if !x.kernels.is_empty() {
        out.push(trace_kernels(x));
    }
    if !x.idle.is_empty() {
        out.push(trace_idle(x));
    }
    if x.launch.matched > 0 {
        out.push(trace_launches(x));
    }
    out
}

/// Span, busy and idle time with the busy/idle pictures and the trace's notes.
fn trace_temporal(x: &TraceAnalysis) -> Section {
    let mut s = Section::new("temporal", "GPU time (µs)");
    s.lead = Some(match x.gpu_busy_ratio {
        Some(r) => format!(
            "GPU busy {} of the span — {}",
            pct(r),
            if r >= 0.8 {
                "GPU-bound territory (step 3)."
            } else {
                "the GPU waits much of the time: look at the idle breakdown and the host (step 3)."
            }
        ),
        None => "No GPU kernels in this trace.".into(),
    });
    let mut t = Table::new(&[
        "rank",
        "span",
        "idle",
        "of which sync",
        "compute",
        "non-compute",
        "idle %",
        "compute %",
        "non-compute %",
    ]);
    for r in &x.temporal {
        t.row(vec![
            r.rank.to_string(),
            us(r.span_us),
            us(r.idle_us),
            us(r.sync_us),
            us(r.compute_us),
            us(r.non_compute_us),
            format!("{:.1}%", r.idle_pct),
            format!("{:.1}%", r.compute_pct),
            format!("{:.1}%", r.non_compute_pct),
        ]);
    }
    s.table = Some(t);
    if let Some(r) = x.temporal.first() {
        if r.span_us > 0.0 {
            let parts = vec![
                ("compute".to_string(), r.compute_us / r.span_us),
                ("non-compute".to_string(), r.non_compute_us / r.span_us),
                ("sync (idle)".to_string(), r.sync_us / r.span_us),
                (
                    "other idle".to_string(),
                    (r.idle_us - r.sync_us) / r.span_us,
                ),
            ];
            if let Some(svg) = charts::share_bar("Busy and idle", &[("GPU", parts)]) {
                s.charts.push(svg);
            }
        }
    }
    if let Some(first) = x.timeline.first() {
        let rows: Vec<(String, Vec<f64>)> = x
            .timeline
            .iter()
            .take(16)
            .map(|t| (stream_label(t.device, t.stream), t.busy.clone()))
            .collect();
        if let Some(svg) = charts::timeline("Busy and idle per stream", first.bucket_us, &rows) {
            s.charts.push(svg);
        }
    }
    s.notes = x.notes.clone();
    s
}

/// Kernels by total time, the top ones and the categories as pictures.
fn trace_kernels(x: &TraceAnalysis) -> Section {
    let mut k = Section::new("kernels", "Kernels by total time (µs)");
    let mut t = Table::new(&[
        "kernel",
        "category",
        "count",
        "total",
        "mean",
        "min",
        "max",
        "share",
        "longest at",
    ]);
    t.numeric = vec![false, false, true, true, true, true, true, true, true];
    for s in &x.kernels {
        t.row(vec![
            s.name.clone(),
            s.category.clone(),
            num(s.count as f64),
            us(s.sum_us),
            us(s.mean_us),
            us(s.min_us),
            us(s.max_us),
            format!("{:.1}%", s.pct),
            at_in_trace(s.longest_at_us, x.first_ts_us),
        ]);
    }
    k.table = Some(t);
    k.lead = Some(LOOK_IN_PERFETTO.into());
    let top: Vec<(String, f64)> = x
        .kernels
        .iter()
        .take(15)
        .map(|s| (s.name.clone(), s.sum_us))
        .collect();
    if let Some(svg) = charts::bars("Top kernels", ("total time", "µs"), &top) {
        k.charts.push(svg);
    }
    let cats: Vec<(String, f64)> = x
        .kernel_categories
        .iter()
        .map(|c| (c.category.clone(), c.pct / 100.0))
        .collect();
    if let Some(svg) = charts::share_bar("Kernel time by category", &[("kernels", cats)]) {
        k.charts.push(svg);
    }
    k
}

const LOOK_IN_PERFETTO: &str = "\"At\" is where to look in Perfetto: the trace's own \
     timestamp (µs), then the time from the trace's first event, which is what Perfetto's \
     timeline shows.";

/// `1,100 µs · +0.2 ms`: a trace timestamp and its offset from the trace's first event.
fn at_in_trace(ts: Option<f64>, first: Option<f64>) -> String {
    match (ts, first) {
        (Some(ts), Some(first)) => format!("{} µs · +{} ms", num(ts), num((ts - first) / 1000.0)),
        (Some(ts), None) => format!("{} µs", num(ts)),
        _ => "—".into(),
    }
}

/// "GPU 0 / stream 7", or "other streams" for the pooled row of a trace with very many.
fn stream_label(device: i64, stream: i64) -> String {
    use crate::core::analyze::pytorch_trace::POOLED;
    if (device, stream) == (POOLED, POOLED) {
        "other streams".to_string()
    } else {
        format!("GPU {device} / stream {stream}")
    }
}

/// Idle time per stream by cause.
fn trace_idle(x: &TraceAnalysis) -> Section {
    let mut i = Section::new("idle", "Idle time per stream (µs)");
    i.lead = Some(
        "Host wait: the kernel was launched after the previous one ended (the CPU was late). \
         Kernel wait: a gap under 30 µs between back-to-back kernels. Other: the rest. "
            .to_string()
            + LOOK_IN_PERFETTO,
    );
    let mut t = Table::new(&[
        "device / stream",
        "kernels",
        "host wait",
        "kernel wait",
        "other",
        "longest gap",
        "longest gap at",
    ]);
    for r in &x.idle {
        t.row(vec![
            stream_label(r.device, r.stream),
            num(r.kernels as f64),
            us(r.host_wait_us),
            us(r.kernel_wait_us),
            us(r.other_us),
            us(r.longest_gap_us),
            at_in_trace(r.longest_gap_at_us, x.first_ts_us),
        ]);
    }
    i.table = Some(t);
    i
}

/// Launch delay, CPU launch and GPU kernel durations.
fn trace_launches(x: &TraceAnalysis) -> Section {
    let mut l = Section::new("launch", "Launches (µs)");
    let mut t = Table::new(&["measure", "p50", "p90", "p95", "p99", "mean", "count"]);
    for (name, s) in [
        (
            "launch delay (kernel start − launch end; below 0: started before the call returned)",
            &x.launch.launch_delay_us,
        ),
        ("CPU launch duration", &x.launch.cpu_launch_us),
        ("GPU kernel duration", &x.launch.gpu_duration_us),
    ] {
        let mut cells = vec![name.to_string()];
        cells.extend(summary_cells(s));
        t.row(cells);
    }
    l.table = Some(t);
    if x.launch.shorter_than_launch > 0 {
        l.notes.push(format!(
            "{} kernels ran shorter than their CPU launch: the GPU cannot stay fed (CUDA graphs help).",
            num(x.launch.shorter_than_launch as f64)
        ));
    }
    l
}

fn ncu(x: &NcuAnalysis) -> Vec<Section> {
    let mut s = Section::new("kernels", "Kernels (Nsight Compute)");
    if let Some(e) = &x.profile_error {
        s.warnings.push(e.clone());
    }
    let mut t = Table::new(&[
        "kernel",
        "SM %",
        "DRAM %",
        "memory %",
        "achieved occupancy %",
        "duration µs",
        "regime",
    ]);
    t.numeric = vec![false, true, true, true, true, true, false];
    for k in &x.kernels {
        t.row(vec![
            k.name.clone(),
            opt(k.sm_pct),
            opt(k.dram_pct),
            opt(k.memory_pct),
            opt(k.achieved_occupancy_pct),
            opt(k.duration_us),
            k.regime.clone().unwrap_or_else(|| "—".into()),
        ]);
    }
    s.table = Some(t);
    s.notes = x.notes.clone();
    s.notes.extend(x.messages.iter().cloned());
    vec![s]
}

fn nsys(x: &NsysAnalysis) -> Vec<Section> {
    let mut s = Section::new("kernels", "Kernels (Nsight Systems)");
    s.lead = Some(format!(
        "{} kernels, {} ms of GPU time in total.",
        x.kernels.len(),
        num(x.total_ns / 1e6)
    ));
    let mut t = Table::new(&[
        "kernel",
        "time %",
        "total ms",
        "instances",
        "avg µs",
        "med µs",
        "max µs",
    ]);
    for k in &x.kernels {
        t.row(vec![
            k.name.clone(),
            opt(k.time_pct),
            num(k.total_ns / 1e6),
            k.instances.map(|v| num(v as f64)).unwrap_or_default(),
            opt(k.avg_ns.map(|v| v / 1e3)),
            opt(k.med_ns.map(|v| v / 1e3)),
            opt(k.max_ns.map(|v| v / 1e3)),
        ]);
    }
    s.table = Some(t);
    let top: Vec<(String, f64)> = x
        .kernels
        .iter()
        .take(15)
        .map(|k| (k.name.clone(), k.total_ns / 1e6))
        .collect();
    if let Some(svg) = charts::bars("Top kernels", ("total time", "ms"), &top) {
        s.charts.push(svg);
    }
    s.notes = x.notes.clone();
    vec![s]
}

fn gpu_telemetry(x: &GpuTelemetryAnalysis) -> Vec<Section> {
    let mut s = Section::new("gpus", "GPU utilisation");
    s.lead = Some(format!("From {}.", x.source));
    let mut t = Table::new(&[
        "GPU",
        "samples",
        "SM util mean",
        "SM util p95",
        "memory util mean",
        "power mean (W)",
    ]);
    for g in &x.gpus {
        t.row(vec![
            g.gpu.clone(),
            num(g.samples as f64),
            opt(g.sm_util.mean),
            opt(g.sm_util.p95),
            opt(g.mem_util.mean),
            opt(g.power_w.mean),
        ]);
    }
    s.table = Some(t);
    let series: Vec<(String, Vec<(f64, f64)>)> = x
        .series
        .iter()
        .map(|g| {
            let pts =
                g.t.iter()
                    .zip(&g.sm)
                    .filter_map(|(t, v)| v.map(|v| (*t, v)))
                    .collect();
            (format!("GPU {}", g.gpu), pts)
        })
        .collect();
    if let Some(svg) = charts::lines(
        "SM utilisation over time",
        if x.has_clock {
            ("time", "s")
        } else {
            ("sample", "")
        },
        ("SM utilisation", "%"),
        &series,
    ) {
        s.charts.push(svg);
    }
    s.notes = x.notes.clone();
    vec![s]
}

// ---------- the decomposition query (request logs) ----------

/// Filters of the decomposition page, validated.
pub struct RequestFilter {
    pub tenant: Option<String>,
    pub model_version: Option<String>,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub by: Option<&'static str>,
}

/// Accepts epoch seconds or an RFC 3339 time.
fn parse_time(field: &str, raw: &str) -> Result<Option<f64>, FieldError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    if let Ok(v) = raw.parse::<f64>() {
        return Ok(Some(v));
    }
    let with_zone = if raw.len() == 16 {
        format!("{raw}:00Z")
    } else {
        raw.to_string()
    };
    chrono::DateTime::parse_from_rfc3339(&with_zone)
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(&format!("{with_zone}Z")))
        .map(|t| Some(t.timestamp_millis() as f64 / 1000.0))
        .map_err(|_| {
            FieldError::new(
                field,
                format!("{raw:?} is not a time: use epoch seconds or 2025-01-02T03:04:05Z"),
            )
        })
}

impl RequestFilter {
    pub fn parse(
        tenant: &str,
        model: &str,
        from: &str,
        to: &str,
        by: &str,
    ) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let from = parse_time("from", from)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten();
        let to = parse_time("to", to)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten();
        if let (Some(f), Some(t)) = (from, to) {
            if t <= f {
                errors.push(FieldError::new("to", "the window ends before it starts"));
            }
        }
        let by = match by.trim() {
            "" => None,
            "tenant" => Some("tenant"),
            "model_version" => Some("model_version"),
            other => {
                errors.push(FieldError::new(
                    "by",
                    format!("group by tenant or model_version, not {other:?}"),
                ));
                None
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        Ok(RequestFilter {
            tenant: text(tenant),
            model_version: text(model),
            from,
            to,
            by,
        })
    }
}

const WHERE: &str = "artifact_id = $1 AND ($2::text IS NULL OR tenant = $2)
     AND ($3::text IS NULL OR model_version = $3)
     AND ($4::float8 IS NULL OR arrival_ts >= $4) AND ($5::float8 IS NULL OR arrival_ts < $5)";

/// At most this many groups are listed, most requests first.
const MAX_GROUPS: usize = 50;

fn phase_select() -> String {
    let mut cols: Vec<String> = PHASES
        .iter()
        .map(|p| {
            format!(
                "percentile_cont(ARRAY[0.5, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY {p}) AS {p}_q, avg({p}) AS {p}_mean"
            )
        })
        .collect();
    // Totals over the requests that have a TTFT, for the share of each part.
    cols.push("sum(first_token_ms) AS ttft_total".into());
    for i in TTFT_PARTS {
        let p = PHASES[i];
        cols.push(format!(
            "sum({p}) FILTER (WHERE first_token_ms IS NOT NULL) AS {p}_in_ttft"
        ));
    }
    cols.join(", ")
}

/// The numbers of one result row of [`phase_select`].
fn numbers_of_row(row: &sqlx::postgres::PgRow) -> sqlx::Result<GroupNumbers> {
    use sqlx::Row;
    let mut g = GroupNumbers {
        group: row.try_get("grp")?,
        rows: row.try_get::<i64, _>("n")?.max(0) as u64,
        ttft_total: row.try_get("ttft_total")?,
        ..GroupNumbers::default()
    };
    for (p, out) in PHASES.iter().zip(g.phases.iter_mut()) {
        let q: Option<Vec<f64>> = row.try_get(format!("{p}_q").as_str())?;
        out.quantiles = q.and_then(|q| <[f64; 4]>::try_from(q).ok());
        out.mean = row.try_get(format!("{p}_mean").as_str())?;
    }
    for (k, i) in TTFT_PARTS.iter().enumerate() {
        g.in_ttft[k] = row.try_get(format!("{}_in_ttft", PHASES[*i]).as_str())?;
    }
    Ok(g)
}

fn phase_rows(g: &GroupNumbers, t: &mut Table, label: Option<&str>) {
    for (i, (p, n)) in PHASES.iter().zip(&g.phases).enumerate() {
        // One definition of a share (see SHARE_DEFINITION), as the stored analysis.
        let in_ttft = TTFT_PARTS
            .iter()
            .position(|&part| part == i)
            .and_then(|k| g.in_ttft[k]);
        let share = match (in_ttft, g.ttft_total) {
            (Some(part), Some(total)) => share_of(part, total).map(pct).unwrap_or_default(),
            _ => String::new(),
        };
        let q = |k: usize| n.quantiles.map(|q| q[k]);
        let mut cells = Vec::new();
        if let Some(l) = label {
            cells.push(l.to_string());
        }
        cells.extend([
            phase_label(p),
            opt(q(0)),
            opt(q(1)),
            opt(q(2)),
            opt(q(3)),
            opt(n.mean),
            share,
        ]);
        t.row(cells);
    }
}

/// Phase percentiles over the filtered rows by ordered-set aggregates in SQL, one entry
/// per group (or one in all). The page uses this only for logs without a column copy
/// (loaded before it existed, or with too many tenant/model pairs).
pub async fn numbers_in_sql(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
    group: Option<&'static str>,
) -> sqlx::Result<Vec<GroupNumbers>> {
    let rows = sqlx::query(&decomposition_sql(group))
        .bind(id)
        .bind(&f.tenant)
        .bind(&f.model_version)
        .bind(f.from)
        .bind(f.to)
        .fetch_all(pool)
        .await?;
    rows.iter().map(numbers_of_row).collect()
}

/// The SQL of [`numbers_in_sql`] (binds: artifact id, tenant, model version, from, to).
pub fn decomposition_sql(group: Option<&str>) -> String {
    match group {
        Some(col) => format!(
            "SELECT {col} AS grp, count(*) AS n, {} FROM request_rows WHERE {WHERE} \
             GROUP BY {col} ORDER BY count(*) DESC, {col} NULLS FIRST LIMIT {MAX_GROUPS}",
            phase_select()
        ),
        None => format!(
            "SELECT NULL::text AS grp, count(*) AS n, {} FROM request_rows WHERE {WHERE}",
            phase_select()
        ),
    }
}

fn column_filter<'a>(
    tenant: &'a Option<String>,
    model_version: &'a Option<String>,
    from: Option<f64>,
    to: Option<f64>,
) -> ColumnFilter<'a> {
    ColumnFilter {
        tenant: tenant.as_deref(),
        model_version: model_version.as_deref(),
        from,
        to,
    }
}

fn group_by(col: &str) -> GroupBy {
    if col == "tenant" {
        GroupBy::Tenant
    } else {
        GroupBy::ModelVersion
    }
}

/// The same numbers from the artifact's column copy: the chunks the filter can select
/// are read, then the rows are filtered and the order statistics selected off the async
/// threads. `None` when the artifact has no column copy.
pub async fn numbers_from_columns(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
    group: Option<&'static str>,
) -> sqlx::Result<Option<(Vec<GroupNumbers>, Option<Vec<GroupNumbers>>)>> {
    if !columns::exists(pool, id).await? {
        return Ok(None);
    }
    let (tenant, model, from, to) = (f.tenant.clone(), f.model_version.clone(), f.from, f.to);
    let chunks = columns::load(pool, id, &column_filter(&tenant, &model, from, to)).await?;
    let computed = tokio::task::spawn_blocking(move || {
        let f = column_filter(&tenant, &model, from, to);
        let all = request_columns::decompose(&chunks, &f, None);
        let grouped = group.map(|col| {
            let mut g = request_columns::decompose(&chunks, &f, Some(group_by(col)));
            g.truncate(MAX_GROUPS);
            g
        });
        (all, grouped)
    })
    .await
    .map_err(|e| sqlx::Error::Protocol(format!("the decomposition failed: {e}")))?;
    Ok(Some(computed))
}

const DECOMPOSITION_COLUMNS: [&str; 7] = [
    "phase (ms)",
    "p50",
    "p90",
    "p95",
    "p99",
    "mean",
    "share of TTFT",
];

/// The method's question — where does p95 TTFT go — over the filtered rows, and the same
/// per tenant or model version when the filter groups.
pub async fn decomposition(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
) -> sqlx::Result<(Table, Option<Table>)> {
    let (all, grouped) = match numbers_from_columns(pool, id, f, f.by).await? {
        Some(found) => found,
        None => {
            let all = numbers_in_sql(pool, id, f, None).await?;
            let grouped = match f.by {
                Some(col) => Some(numbers_in_sql(pool, id, f, Some(col)).await?),
                None => None,
            };
            (all, grouped)
        }
    };
    let mut t = Table::new(&DECOMPOSITION_COLUMNS);
    if let Some(g) = all.first() {
        phase_rows(g, &mut t, None);
        t.headers[0] = format!("phase (ms) — {} requests", num(g.rows as f64));
    }
    let grouped = grouped.zip(f.by).map(|(groups, col)| {
        let mut headers = vec![col];
        headers.extend(DECOMPOSITION_COLUMNS);
        let mut t = Table::new(&headers);
        t.numeric[1] = false;
        for g in &groups {
            let label = format!(
                "{} ({} requests)",
                g.group.as_deref().unwrap_or("(none)"),
                num(g.rows as f64)
            );
            phase_rows(g, &mut t, Some(&label));
        }
        t
    });
    Ok((t, grouped))
}

/// Distinct tenants and model versions of an artifact's rows (for the filter menus), from
/// its column copy when it has one (a few rows per pair) rather than every request row.
pub async fn facets(pool: &PgPool, id: i64) -> sqlx::Result<(Vec<String>, Vec<String>)> {
    let table = if columns::exists(pool, id).await? {
        "request_column_chunks"
    } else {
        "request_rows"
    };
    let mut out = Vec::new();
    for col in ["tenant", "model_version"] {
        out.push(
            sqlx::query_scalar(&format!(
                "SELECT DISTINCT {col} FROM {table} WHERE artifact_id = $1 AND {col} IS NOT NULL ORDER BY 1 LIMIT 200"
            ))
            .bind(id)
            .fetch_all(pool)
            .await?,
        );
    }
    let models = out.pop().unwrap_or_default();
    let tenants = out.pop().unwrap_or_default();
    Ok((tenants, models))
}
