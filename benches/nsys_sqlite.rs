//! Nsight Systems SQLite exports: the analyzer on a generated export of many kernels,
//! each with its runtime launch call, and one NVTX range per hundred kernels (the
//! export's tables as NVIDIA documents them; see `perfjournal_core::analyze::nsys_sqlite::example`).
//! No server and no database: the file is written to a temporary directory, opened
//! read-only and analysed in this process, as the analysis job does.
//!
//! `cargo bench --bench nsys_sqlite`
//!
//! Env: PJ_NSYS_KERNELS (default 1,000,000), PJ_BENCH_RUNS (default 3; the time is the
//! median, the peak RSS the process's over all runs).

#[path = "common/mod.rs"]
mod common;

use std::time::Instant;

use common::{median, num, secs, Table, MIB};
use perfjournal_core::analyze::nsys_sqlite::{
    analyze, generated_export_sql, Connection, OpenFlags,
};
use perfjournal_core::analyze::Options;

/// A `/proc/self/status` figure in MiB (0 where there is none).
fn status_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() -> anyhow::Result<()> {
    let kernels = common::env_usize("PJ_NSYS_KERNELS", 1_000_000) as u64;
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let path = std::env::temp_dir().join(format!("pj-nsys-bench-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&path);

    let started = Instant::now();
    let conn = Connection::open(&path)?;
    conn.execute_batch(&generated_export_sql(kernels))?;
    drop(conn);
    let written = started.elapsed();
    let size = std::fs::metadata(&path)?.len() as f64;
    println!(
        "export of {} kernels written in {:.1} s ({} MiB); load {}",
        num(kernels as f64, 0),
        secs(written),
        num(size / MIB, 0),
        common::loadavg()
    );

    let rss_before = status_mib("VmRSS:");
    let mut times = Vec::new();
    let mut ranges = 0;
    let result = (|| -> anyhow::Result<()> {
        for _ in 0..runs {
            let t = Instant::now();
            let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
            let a = match analyze(&conn, &Options::default()) {
                Ok(a) => a,
                Err(e) => {
                    // An export past the row bound is refused: how soon, and at what peak.
                    println!(
                        "refused after {:.1} s, peak RSS {} MiB: {e}",
                        secs(t.elapsed()),
                        num(status_mib("VmHWM:"), 0)
                    );
                    return Ok(());
                }
            };
            times.push(secs(t.elapsed()));
            anyhow::ensure!(
                a.trace.events.kernels == kernels && a.trace.launch.matched == kernels,
                "the analysis saw {} kernels ({} launches matched), not {kernels}",
                a.trace.events.kernels,
                a.trace.launch.matched
            );
            ranges = a.nvtx_ranges;
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    result?;
    if times.is_empty() {
        return Ok(());
    }

    let mut table = Table::new(&[
        "kernels",
        "runtime calls",
        "NVTX ranges",
        "file (MiB)",
        "analysis (s, median)",
        "min (s)",
        "RSS before (MiB)",
        "peak RSS (MiB)",
    ]);
    table.row(vec![
        num(kernels as f64, 0),
        num(kernels as f64, 0),
        num(ranges as f64, 0),
        num(size / MIB, 0),
        num(median(&times), 2),
        num(common::min(&times), 2),
        num(rss_before, 0),
        num(status_mib("VmHWM:"), 0),
    ]);
    table.print(&format!(
        "Nsight Systems SQLite export analysed ({runs} run{})",
        if runs == 1 { "" } else { "s" }
    ));
    Ok(())
}
