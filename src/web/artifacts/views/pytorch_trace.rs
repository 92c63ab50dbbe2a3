//! A PyTorch profiler trace: busy and idle time, kernels, idle per stream, launches.

use super::{num, pct, summary_cells, Section, Table};
use crate::charts;
use crate::core::analyze::pytorch_trace::{exact_if_differs, TraceAnalysis};

fn us(x: f64) -> String {
    num(x)
}

/// HTA's figure, and the exact one beside it where they differ by more than 1 %
/// (a trace with fractional times; the notes say why).
fn hta_us(hta: f64, exact: Option<f64>) -> String {
    match exact.and_then(|x| exact_if_differs(hta, x)) {
        Some(x) => format!("{} (exact {})", us(hta), us(x)),
        None => us(hta),
    }
}

pub(super) fn sections(x: &TraceAnalysis) -> Vec<Section> {
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
    if let (Some(lead), Some(share)) = (s.lead.as_mut(), x.launch.graph_share) {
        lead.push(' ');
        lead.push_str(&graph_sentence(&x.launch, share));
    }
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
        let e = r.exact.as_ref();
        t.row(vec![
            r.rank.to_string(),
            hta_us(r.span_us, e.map(|e| e.span_us)),
            hta_us(r.idle_us, e.map(|e| e.idle_us)),
            hta_us(r.sync_us, e.map(|e| e.sync_us)),
            hta_us(r.compute_us, e.map(|e| e.compute_us)),
            hta_us(r.non_compute_us, e.map(|e| e.non_compute_us)),
            format!("{:.1}%", r.idle_pct),
            format!("{:.1}%", r.compute_pct),
            format!("{:.1}%", r.non_compute_pct),
        ]);
    }
    s.table = Some(t);
    let definition = if x.rounded {
        "HTA's get_temporal_breakdown, its rounding included: this trace's times have \
         fractions of a µs, and HTA rounds each GPU event's start up and its end down to \
         a whole µs. \"exact\" is the trace's own arithmetic, shown where it differs by \
         more than 1 %."
    } else {
        "HTA's get_temporal_breakdown: span = first GPU work to last; idle = no kernel, copy \
         or set running; compute = computation kernels; non-compute = the other GPU work."
    };
    if let Some(lead) = s.lead.as_mut() {
        lead.push(' ');
        lead.push_str(definition);
    }
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

/// The trace's CUDA-graph share in words.
fn graph_sentence(l: &crate::core::analyze::pytorch_trace::LaunchStats, share: f64) -> String {
    if l.graph_launches == 0 {
        return "CUDA graphs: none (0% of GPU time) — every kernel was launched on its own.".into();
    }
    format!(
        "CUDA graphs: {} of GPU time — {} graph launches ran {} GPU events, {} µs (counted in every breakdown, each with its launch).",
        pct(share),
        num(l.graph_launches as f64),
        num(l.graph_gpu_events as f64),
        us(l.graph_gpu_us)
    )
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

pub(super) const LOOK_IN_PERFETTO: &str = "\"At\" is where to look in Perfetto: the trace's own \
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
    if x.rounded {
        i.lead.as_mut().unwrap().push_str(
            " As HTA's get_idle_time_breakdown, on its rounded times (see the GPU time notes); \
             \"exact\" where the trace's own times differ by more than 1 %.",
        );
    }
    for r in &x.idle {
        let e = r.exact.as_ref();
        t.row(vec![
            stream_label(r.device, r.stream),
            num(r.kernels as f64),
            hta_us(r.host_wait_us, e.map(|e| e.host_wait_us)),
            hta_us(r.kernel_wait_us, e.map(|e| e.kernel_wait_us)),
            hta_us(r.other_us, e.map(|e| e.other_us)),
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
