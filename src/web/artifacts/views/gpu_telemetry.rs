//! GPU telemetry: per-GPU utilisation and power, and the series over time.

use super::{num, opt, Section, Table};
use crate::charts;
use crate::core::analyze::gpu_telemetry::GpuTelemetryAnalysis;

pub(super) fn sections(x: &GpuTelemetryAnalysis) -> Vec<Section> {
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
