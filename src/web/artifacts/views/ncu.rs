//! An Nsight Compute CSV: kernels with their throughput and occupancy.

use super::{opt, Section, Table};
use crate::core::analyze::ncu::NcuAnalysis;

pub(super) fn sections(x: &NcuAnalysis) -> Vec<Section> {
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
