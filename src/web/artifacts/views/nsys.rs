//! An Nsight Systems kernel summary: kernels by total time.

use super::{num, opt, Section, Table};
use crate::charts;
use crate::core::analyze::nsys::NsysAnalysis;

pub(super) fn sections(x: &NsysAnalysis) -> Vec<Section> {
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
