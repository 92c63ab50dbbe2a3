//! Issue #15, PyTorch traces end to end: a real profiler trace (HTA's own test trace)
//! repeated along time to ~0.89 GB with `../shared/tools/gen_big_trace.py`, uploaded to
//! the real server (release build, a child process) over HTTP until its analysis is done,
//! plain and gzip-compressed; beside it, in the same run on the same file,
//! HolisticTraceAnalysis 0.5.0 loading the trace and computing its temporal breakdown.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench trace`
//!
//! Env: PJ_TRACE_COPIES (default 27), PJ_BENCH_RUNS (default 3, our runs per file),
//! PJ_BENCH_DATA (where the generated traces are kept between runs; default
//! target/bench-data), PJ_HTA_VENV (default target/hta-venv; made on first use with
//! `pip install HolisticTraceAnalysis==0.5.0`), PJ_HTA_TIMEOUT_S (default 1200),
//! PJ_SKIP_HTA=1 (ours only, for profiling), PJ_ONLY=plain|gzip; PJ_COMPRESS_ONLY=FILE
//! measures the blob store's zstd level on one thread instead.

#[path = "common/mod.rs"]
mod common;
#[path = "common/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, num, secs, Table, MB};
use serde_json::Value;
use server::Server;

const HTA_PACKAGE: &str = "HolisticTraceAnalysis==0.5.0";

fn main() -> anyhow::Result<()> {
    if let Some(path) = std::env::var_os("PJ_ANALYZE_ONLY") {
        return analyze_only(Path::new(&path));
    }
    if let Some(path) = std::env::var_os("PJ_COMPRESS_ONLY") {
        return compress_only(Path::new(&path));
    }
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "trace benchmark not run: DATABASE_URL is unset \
             (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres)"
        );
        return Ok(());
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copies = common::env_usize("PJ_TRACE_COPIES", 27);
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let data = std::env::var_os("PJ_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/bench-data"));
    std::fs::create_dir_all(&data)?;
    let (plain, gz) = inputs(manifest, &data, copies)?;
    let only = std::env::var("PJ_ONLY").unwrap_or_default();

    let hta_python = if std::env::var("PJ_SKIP_HTA").is_ok_and(|v| v == "1") {
        Err("PJ_SKIP_HTA=1".to_string())
    } else {
        let venv = std::env::var_os("PJ_HTA_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| manifest.join("target/hta-venv"));
        server::python_venv(&venv, &[HTA_PACKAGE])
    };
    if let Err(why) = &hta_python {
        println!("HTA will not run: {why}");
    }
    println!(
        "{} CPUs, load average {} at the start",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let work = tempfile::Builder::new()
        .prefix("pj-bench-trace-")
        .tempdir_in(&data)?;
    // One server takes every upload of the run, as a long-running server would: its
    // peak over the whole run includes whatever the allocator keeps between uploads.
    let server = rt.block_on(Server::start(&url, work.path(), &[]))?;
    let mut run_peak: f64 = 0.0;
    let mut summary = Table::new(&[
        "file",
        "ours: upload (s)",
        "upload answered to done (s)",
        "total (s)",
        "server peak RSS (MiB)",
        "blob store (MB)",
        "HTA (s)",
        "HTA peak RSS (MiB)",
        "HTA / ours",
        "target",
    ]);
    for (label, file, target) in [("plain", &plain, 30.0), ("gzip", &gz, 20.0)] {
        if !only.is_empty() && only != label {
            continue;
        }
        let size = std::fs::metadata(file)?.len() as f64;
        println!("\n== {label}: {} ({:.1} MB)", file.display(), size / MB);
        let mut upload = Vec::new();
        let mut analysis = Vec::new();
        let mut total = Vec::new();
        let mut peak: f64 = 0.0;
        let mut stored: f64 = 0.0;
        let mut ours = Value::Null;
        for run in 1..=runs {
            server::warm(file)?;
            let r = rt.block_on(one_run(&server, file))?;
            println!(
                "run {run}/{runs}: upload {:.2} s ({:.0} MB/s), from the upload's answer to done {:.2} s \
                 (worker: parse {}, database {}), total {:.2} s; written to the blob store {:.1} MB \
                 ({:.1}% of the upload); server peak RSS {:.0} MiB; load average {}",
                r.upload,
                size / MB / r.upload,
                r.analysis,
                r.parse.map_or("-".into(), |s| format!("{s:.2} s")),
                r.db.map_or("-".into(), |s| format!("{s:.2} s")),
                r.upload + r.analysis,
                r.stored_bytes / MB,
                r.stored_bytes * 100.0 / size,
                r.peak_mib,
                common::loadavg()
            );
            upload.push(r.upload);
            analysis.push(r.analysis);
            total.push(r.upload + r.analysis);
            peak = peak.max(r.peak_mib);
            run_peak = run_peak.max(r.peak_mib);
            stored = r.stored_bytes;
            ours = r.result;
        }
        let hta = match &hta_python {
            Ok(python) => {
                server::warm(file)?;
                run_hta(python, work.path(), label, file)?
            }
            Err(why) => Hta::Failed(why.clone()),
        };
        let ours_total = median(&total);
        let (hta_s, hta_rss, ratio, verdict) = match &hta {
            Hta::Done {
                wall,
                rss_mib,
                report,
            } => {
                agreement(&ours, report);
                let ratio = wall / ours_total;
                (
                    num(*wall, 1),
                    num(*rss_mib, 0),
                    format!("{ratio:.1}x"),
                    format!(
                        ">= {target:.0}x and <= 300 MB: {}",
                        if ratio >= target && peak * common::MIB <= 300e6 {
                            "MET"
                        } else {
                            "NOT MET"
                        }
                    ),
                )
            }
            Hta::Failed(why) => {
                println!("HTA did not give a result: {why}");
                ("-".into(), "-".into(), "-".into(), "no reference".into())
            }
        };
        summary.row(vec![
            format!("{label} {:.0} MB", size / MB),
            num(median(&upload), 2),
            num(median(&analysis), 2),
            num(ours_total, 2),
            num(peak, 0),
            num(stored / MB, 1),
            hta_s,
            hta_rss,
            ratio,
            verdict,
        ]);
    }
    let (rss_after, _) = server.rss_mib();
    rt.block_on(server.stop())?;
    summary.print(&format!(
        "PyTorch trace through the HTTP API (median of {runs}) vs HTA {} in the same run; load average {}",
        HTA_PACKAGE.trim_start_matches("HolisticTraceAnalysis=="),
        common::loadavg()
    ));
    println!(
        "one server took every upload: its peak RSS over the whole run {run_peak:.0} MiB \
         (target <= 300 MB: {}), {rss_after:.0} MiB resident at the end",
        if run_peak * common::MIB <= 300e6 {
            "MET"
        } else {
            "NOT MET"
        }
    );
    Ok(())
}

/// A diagnostic, for profiling the analyzer alone: `PJ_ANALYZE_ONLY=FILE` analyzes the
/// file in this process (no server, no upload) and prints the time.
fn analyze_only(path: &Path) -> anyhow::Result<()> {
    use perfjournal::core::analyze::{self, Kind, Options};
    let t = Instant::now();
    let file = std::fs::File::open(path)?;
    let a = analyze::analyze(Kind::PytorchTrace, file, &Options::default(), &|_| {})?;
    let took = secs(t.elapsed());
    let size = std::fs::metadata(path)?.len() as f64;
    let json = a.to_json();
    println!(
        "analyzed {} in {took:.2} s ({:.0} MB/s): events {}, temporal {}",
        path.display(),
        size / MB / took,
        json["events"],
        json["temporal"]
    );
    Ok(())
}

/// A diagnostic for the blob store's compression: `PJ_COMPRESS_ONLY=FILE` compresses the
/// file (read into memory first) with zstd at the store's level on this one thread, then
/// decompresses it, and prints the ratio and both speeds.
fn compress_only(path: &Path) -> anyhow::Result<()> {
    let plain = std::fs::read(path)?;
    let level = perfjournal::core::blob::ZSTD_LEVEL;
    let t = Instant::now();
    let packed = zstd::encode_all(&plain[..], level)?;
    let packing = secs(t.elapsed());
    let t = Instant::now();
    let unpacked = zstd::decode_all(&packed[..])?;
    let unpacking = secs(t.elapsed());
    anyhow::ensure!(unpacked == plain, "the round trip changed the bytes");
    let size = plain.len() as f64;
    println!(
        "zstd level {level}, one thread: {} {:.1} MB -> {:.2} MB ({:.1}%, x{:.1}); \
         compressed at {:.0} MB/s, decompressed at {:.0} MB/s",
        path.display(),
        size / MB,
        packed.len() as f64 / MB,
        packed.len() as f64 * 100.0 / size,
        size / packed.len() as f64,
        size / MB / packing,
        size / MB / unpacking
    );
    Ok(())
}

/// The generated trace and its gzip, made once and kept in `data`.
fn inputs(manifest: &Path, data: &Path, copies: usize) -> anyhow::Result<(PathBuf, PathBuf)> {
    let plain = common::big_trace(manifest, data, copies)?;
    let gz = data.join(format!("hta-test-x{copies}.json.gz"));
    if !gz.exists() {
        let t = Instant::now();
        let partial = gz.with_extension("partial");
        let mut input = std::fs::File::open(&plain)?;
        let mut out = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(std::fs::File::create(&partial)?),
            flate2::Compression::default(),
        );
        std::io::copy(&mut input, &mut out)?;
        std::io::Write::flush(&mut out.finish()?)?;
        std::fs::rename(&partial, &gz)?;
        println!("compressed {} in {:.0} s", gz.display(), secs(t.elapsed()));
    }
    Ok((plain, gz))
}

struct Run {
    upload: f64,
    analysis: f64,
    parse: Option<f64>,
    db: Option<f64>,
    peak_mib: f64,
    /// Bytes the upload cost the blob store (on disk, after compression).
    stored_bytes: f64,
    result: Value,
}

/// One upload to the run's server, then the wait for its analysis; the server's own
/// split from its log. The artifact is deleted after (so the next upload of the same
/// bytes is stored anew); the peak covers this upload and what earlier ones left.
async fn one_run(server: &Server, file: &Path) -> anyhow::Result<Run> {
    server.reset_peak();
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let t = Instant::now();
    let (id, upload) = server.upload(file, &name).await?;
    let artifact = server.wait_analyzed(id, Duration::from_secs(1800)).await?;
    let total = t.elapsed();
    let (_, peak_mib) = server.rss_mib();
    let timing = server.timing(id);
    let f = |k: &str| timing.as_ref().and_then(|t| t[k].as_f64());
    let run = Run {
        upload: secs(upload),
        analysis: secs(total - upload),
        parse: f("parse_s"),
        db: f("db_s"),
        peak_mib,
        stored_bytes: server.blob_store_bytes() as f64,
        result: artifact["analysis"].clone(),
    };
    server.delete_artifact(id).await?;
    Ok(run)
}

enum Hta {
    Done {
        wall: f64,
        rss_mib: f64,
        report: Value,
    },
    Failed(String),
}

/// What the issue timed: HTA's loader and its temporal breakdown, default options.
const HTA_SCRIPT: &str = r#"
import json, sys, time
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
t1 = time.perf_counter()
temporal = ta.get_temporal_breakdown(visualize=False)
t2 = time.perf_counter()
json.dump({"load_s": t1 - t0, "temporal_s": t2 - t1,
           "temporal": json.loads(temporal.to_json(orient="records"))}, sys.stdout)
"#;

/// HTA in a process of its own on a directory holding just `file`; its whole wall time
/// (interpreter start and imports included) and peak RSS.
fn run_hta(python: &Path, work: &Path, label: &str, file: &Path) -> anyhow::Result<Hta> {
    let dir = work.join(format!("hta-{label}"));
    std::fs::create_dir_all(&dir)?;
    let link = dir.join(file.file_name().unwrap());
    if !link.exists() {
        std::os::unix::fs::symlink(file, &link)?;
    }
    let script = work.join("hta_temporal.py");
    std::fs::write(&script, HTA_SCRIPT)?;
    let out = work.join(format!("hta-{label}.json"));
    let err = work.join(format!("hta-{label}.err"));
    let timeout = Duration::from_secs(common::env_usize("PJ_HTA_TIMEOUT_S", 1200) as u64);
    println!("running HTA on {} …", file.display());
    let started = Instant::now();
    let child = Command::new(python)
        .arg(&script)
        .arg(&dir)
        .stdout(Stdio::from(std::fs::File::create(&out)?))
        .stderr(Stdio::from(std::fs::File::create(&err)?))
        .spawn()?;
    let r = common::wait_child(child, started, timeout);
    let rss_mib = r.max_rss_bytes as f64 / common::MIB;
    if r.timed_out {
        return Ok(Hta::Failed(format!(
            "killed at the {} s timeout",
            timeout.as_secs()
        )));
    }
    if !r.status.success() {
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Ok(Hta::Failed(format!(
            "{:?}: {}",
            r.status,
            last.unwrap_or("")
        )));
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    println!(
        "HTA: {:.1} s wall (load {:.1} s, temporal breakdown {:.1} s), peak RSS {rss_mib:.0} MiB; load average {}",
        secs(r.wall),
        report["load_s"].as_f64().unwrap_or(f64::NAN),
        report["temporal_s"].as_f64().unwrap_or(f64::NAN),
        common::loadavg()
    );
    Ok(Hta::Done {
        wall: secs(r.wall),
        rss_mib,
        report,
    })
}

/// Ours against HTA's temporal breakdown, for the trace's (first) rank.
fn agreement(ours: &Value, hta: &Value) {
    let (Some(o), Some(h)) = (ours["temporal"].get(0), hta["temporal"].get(0)) else {
        println!("no temporal breakdown to compare");
        return;
    };
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let span = f(o, "span_us");
    let rank = format!("rank {} (µs)", o["rank"]);
    let mut t = Table::new(&[rank.as_str(), "ours", "HTA", "diff / span"]);
    for (label, ok, hk) in [
        ("span", "span_us", "kernel_time(us)"),
        ("idle", "idle_us", "idle_time(us)"),
        ("compute", "compute_us", "compute_time(us)"),
        ("non-compute", "non_compute_us", "non_compute_time(us)"),
    ] {
        let (a, b) = (f(o, ok), f(h, hk));
        t.row(vec![
            label.into(),
            num(a, 0),
            num(b, 0),
            format!("{:.3}%", (a - b).abs() / span * 100.0),
        ]);
    }
    t.print("Temporal breakdown, ours vs HTA (HTA rounds to whole µs)");
}
