//! An Nsight Systems SQLite export: the trace sections (same definitions as a PyTorch
//! trace), then NVTX ranges, memory work and the GPUs with their catalog entries.

use super::{num, opt, pytorch_trace, Section, Table};
use crate::core::analyze::nsys_sqlite::NsysSqliteAnalysis;
use crate::core::fmt::{bytes, ByteStyle};

/// Where the "at" columns point, for an export instead of a Kineto trace.
const LOOK_IN_NSYS: &str = "\"At\" is the export's own time (µs from the start of the \
     Nsight Systems session, as its timeline shows it), then the time from the first event.";

pub(super) fn sections(x: &NsysSqliteAnalysis) -> Vec<Section> {
    let mut out = pytorch_trace::sections(&x.trace);
    for s in &mut out {
        if let Some(lead) = s.lead.as_mut() {
            *lead = lead.replace(pytorch_trace::LOOK_IN_PERFETTO, LOOK_IN_NSYS);
        }
    }
    out.push(nvtx(x));
    if !x.memory.is_empty() {
        out.push(memory(x));
    }
    if !x.gpus.is_empty() {
        out.push(gpus(x));
    }
    out
}

/// Time per NVTX range name and the GPU busy time under it.
fn nvtx(x: &NsysSqliteAnalysis) -> Section {
    let mut s = Section::new("nvtx", "NVTX ranges (µs)");
    if x.nvtx.is_empty() {
        s.lead = Some(
            "No NVTX ranges in this export (annotate phases with NVTX, e.g. \
             torch.cuda.nvtx.range, and trace with `-t cuda,nvtx`)."
                .into(),
        );
        return s;
    }
    s.lead = Some(format!(
        "{} ranges under {} names, by total time. GPU busy: the time any GPU ran work \
         (kernels, copies, sets; on any device, counted once) inside the ranges; nested \
         ranges of one name count each time.",
        num(x.nvtx_ranges as f64),
        num(x.nvtx_names as f64)
    ));
    let mut t = Table::new(&[
        "range",
        "count",
        "total",
        "mean",
        "max",
        "GPU busy",
        "GPU busy %",
    ]);
    for r in &x.nvtx {
        t.row(vec![
            r.name.clone(),
            num(r.count as f64),
            num(r.total_us),
            num(r.mean_us),
            num(r.max_us),
            num(r.gpu_busy_us),
            r.gpu_busy_ratio
                .map(|v| format!("{:.1}%", v * 100.0))
                .unwrap_or_else(|| "—".into()),
        ]);
    }
    s.table = Some(t);
    s
}

/// Copies and sets per kind, with the bandwidth they reached.
fn memory(x: &NsysSqliteAnalysis) -> Section {
    let mut s = Section::new("memory", "Memory copies and sets");
    s.lead = Some(
        "From the export's CUPTI_ACTIVITY_KIND_MEMCPY and _MEMSET tables; GB/s = bytes ÷ \
         summed duration (10⁹ B/s)."
            .into(),
    );
    let mut t = Table::new(&["kind", "count", "bytes", "total µs", "GB/s"]);
    for m in &x.memory {
        t.row(vec![
            m.kind.clone(),
            num(m.count as f64),
            bytes(m.bytes as f64, ByteStyle::Size),
            num(m.total_us),
            opt(m.gb_per_s),
        ]);
    }
    s.table = Some(t);
    s
}

/// The GPUs the export describes, with the catalog's peaks where the name maps to one.
fn gpus(x: &NsysSqliteAnalysis) -> Section {
    let mut s = Section::new("gpus", "GPUs");
    s.lead = Some(
        "As TARGET_INFO_GPU reports them (the driver's figures), beside the GPU catalog's \
         datasheet peaks where the name maps to a catalog GPU."
            .into(),
    );
    let mut t = Table::new(&[
        "device",
        "name",
        "SMs",
        "memory",
        "SM clock GHz",
        "memory bandwidth GB/s (driver)",
        "catalog GPU",
        "HBM TB/s (datasheet)",
        "BF16 dense TFLOP/s (datasheet)",
    ]);
    t.numeric = vec![true, false, true, true, true, true, false, true, true];
    for g in &x.gpus {
        t.row(vec![
            g.device.to_string(),
            g.name.clone().unwrap_or_else(|| "—".into()),
            g.sm_count
                .map(|v| num(v as f64))
                .unwrap_or_else(|| "—".into()),
            g.total_memory_bytes
                .map(|v| bytes(v as f64, ByteStyle::Size))
                .unwrap_or_else(|| "—".into()),
            opt(g.clock_hz.map(|v| v / 1e9)),
            opt(g.memory_bandwidth_bps.map(|v| v / 1e9)),
            g.catalog
                .clone()
                .unwrap_or_else(|| "not in the catalog".into()),
            opt(g.catalog_hbm_bps.map(|v| v / 1e12)),
            opt(g.catalog_bf16_flops.map(|v| v / 1e12)),
        ]);
    }
    s.table = Some(t);
    s
}
