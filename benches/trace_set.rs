//! Issue #30, item 7: an 8-rank trace set and a trace diff of two big traces, end to end,
//! with HolisticTraceAnalysis 0.5.0 on the same files in the same run.
//!
//! The ranks are copies of the big trace of `benches/trace.rs` (HTA's own `trace_diff/test`
//! trace repeated 27 times along time, 790.2 MB), each with its own `distributedInfo`
//! (`rank` 0..7, `world_size` 8), written once into PJ_BENCH_DATA by a streaming copy
//! that rewrites only the file's head.
//!
//! 1. Rank 0 alone on a fresh server (release binary, a child process): upload + analysis,
//!    the unit the set is held against.
//! 2. A fresh server: the 8 ranks uploaded over HTTP one after the other (as `perfjournal
//!    upload` does), then `POST /api/v1/trace-sets`, polled until `done`. Targets: from
//!    the first byte to `done` within 1.2 × 8 × (1), and the server's peak RSS over the
//!    whole set ≤ 400 MB.
//! 3. On the same server: the plain big trace uploaded as control, `POST
//!    /api/v1/trace-diffs {control, test: rank 1}`, polled until `done`: its time and the
//!    server's peak RSS during it.
//! 4. HTA on the same files, each in a process of its own, capped: `prlimit --as`
//!    (PJ_HTA_MEM_GIB, default 20 GiB, per process), a watchdog that kills its process
//!    group when its processes together hold more than that or the machine has less than
//!    1.5 GiB available, and a timeout (PJ_HTA_TIMEOUT_S, default 1800 s). The diff:
//!    `TraceDiff.compare_traces` of two `LabeledTrace`s; the set: `TraceAnalysis`, then
//!    `get_temporal_breakdown`, `get_comm_comp_overlap` and
//!    `get_gpu_kernel_breakdown(include_memory_kernels=True)`. When it finishes, its
//!    per-rank figures are printed beside ours.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres PJ_BENCH_DATA=/work/bench-data
//! PJ_HTA_VENV=/work/hta-venv cargo bench --bench trace_set`
//!
//! Env: PJ_BENCH_DATA (inputs kept between runs; default target/bench-data; the 8 ranks
//! take 8 × 790 MB), PJ_TRACE_COPIES (default 27), PJ_HTA_VENV (default target/hta-venv,
//! made on first use), PJ_HTA_TIMEOUT_S (default 1800, each HTA run), PJ_HTA_MEM_GIB
//! (default 20), PJ_SKIP_HTA=1 (ours only), PJ_SKIP_HTA_SET=1 (HTA on the diff only).

#[path = "common/mod.rs"]
mod common;
#[path = "common/server.rs"]
mod server;

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{num, secs, Table, MB, MIB};
use serde_json::{json, Value};
use server::Server;

const HTA_PACKAGE: &str = "HolisticTraceAnalysis==0.5.0";
const WORLD: usize = 8;
/// The set's targets: wall time against 8 ranks one by one, and the server's peak.
const TIME_FACTOR: f64 = 1.2;
const PEAK_TARGET_BYTES: f64 = 400e6;
/// How much of a trace's head is read to find its `distributedInfo`.
const HEAD_BYTES: u64 = 1 << 20;

fn main() -> anyhow::Result<()> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "trace set benchmark not run: DATABASE_URL is unset \
             (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres)"
        );
        return Ok(());
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copies = common::env_usize("PJ_TRACE_COPIES", 27);
    let data = std::env::var_os("PJ_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/bench-data"));
    std::fs::create_dir_all(&data)?;
    let plain = common::big_trace(manifest, &data, copies)?;
    let ranks = rank_files(&plain, &data.join(format!("trace-set-x{copies}-{WORLD}")))?;
    let flag = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
    let hta_python = if flag("PJ_SKIP_HTA") {
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
    let machine = machine(&data);
    println!("{machine}");
    let rank_size = std::fs::metadata(&ranks[0])?.len() as f64;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let work = tempfile::Builder::new()
        .prefix("pj-bench-trace-set-")
        .tempdir_in(&data)?;

    // 1. One rank alone.
    server::warm(&ranks[0])?;
    let alone = rt.block_on(rank_alone(&url, work.path(), &ranks[0]))?;
    println!(
        "rank 0 alone ({:.1} MB): upload {:.2} s, upload answered to done {:.2} s, total {:.2} s; \
         server peak RSS {:.0} MiB; load average {}",
        rank_size / MB,
        alone.upload,
        alone.total - alone.upload,
        alone.total,
        alone.peak_mib,
        common::loadavg()
    );

    // 2. and 3. The set, then the diff on the same server.
    for r in &ranks {
        server::warm(r)?;
    }
    server::warm(&plain)?;
    let set = rt.block_on(set_and_diff(&url, work.path(), &ranks, &plain))?;
    let budget = TIME_FACTOR * WORLD as f64 * alone.total;
    let time_met = set.total <= budget;
    let peak_met = set.peak_mib * MIB <= PEAK_TARGET_BYTES;
    let verdict = |met: bool| if met { "MET" } else { "NOT MET" };
    println!(
        "set of {WORLD}: first byte to done {:.2} s (uploads {:.2} s, last upload answered to set done {:.2} s) \
         against {TIME_FACTOR} × {WORLD} × {:.2} s = {budget:.2} s: {}; server peak RSS {:.0} MiB \
         ({:.0} MB) against ≤ 400 MB: {}; blob store {:.1} MB; load average {}",
        set.total,
        set.uploads.iter().sum::<f64>(),
        set.after_uploads,
        alone.total,
        verdict(time_met),
        set.peak_mib,
        set.peak_mib * MIB / MB,
        verdict(peak_met),
        set.blob_bytes / MB,
        common::loadavg()
    );
    let mut t = Table::new(&["rank", "file (MB)", "upload (s)", "MB/s"]);
    for (r, s) in set.uploads.iter().enumerate() {
        t.row(vec![
            r.to_string(),
            num(rank_size / MB, 1),
            num(*s, 2),
            num(rank_size / MB / s, 0),
        ]);
    }
    t.print("Per-rank uploads (one after the other)");
    println!(
        "straggler: {}",
        set.summary["straggler"]["evidence"]
            .as_str()
            .unwrap_or("(none given)")
    );
    println!(
        "diff (control: {}, test: rank 1): POST to done {:.2} s, status {}, server peak RSS {:.0} MiB; \
         classes {}; load average {}",
        plain.display(),
        set.diff_s,
        set.diff["status"],
        set.diff_peak_mib,
        set.diff["summary"],
        common::loadavg()
    );

    // 4. HTA, the diff first (it needs less), then the set.
    let cap_gib = common::env_usize("PJ_HTA_MEM_GIB", 20);
    let timeout = Duration::from_secs(common::env_usize("PJ_HTA_TIMEOUT_S", 1800) as u64);
    let (hta_diff, hta_set) = match &hta_python {
        Ok(python) => {
            let control = link_dir(work.path(), "hta-diff-control", &[&plain])?;
            let test = link_dir(work.path(), "hta-diff-test", &[&ranks[1]])?;
            let diff = run_hta(
                python,
                work.path(),
                "diff",
                HTA_DIFF,
                &[&control, &test],
                cap_gib,
                timeout,
            )?;
            let set = if flag("PJ_SKIP_HTA_SET") {
                Hta::Failed("not run (PJ_SKIP_HTA_SET=1)".into())
            } else {
                let refs: Vec<&Path> = ranks.iter().map(PathBuf::as_path).collect();
                let dir = link_dir(work.path(), "hta-set", &refs)?;
                run_hta(
                    python,
                    work.path(),
                    "set",
                    HTA_SET,
                    &[&dir],
                    cap_gib,
                    timeout,
                )?
            };
            (diff, set)
        }
        Err(why) => (Hta::Failed(why.clone()), Hta::Failed(why.clone())),
    };
    if let Hta::Done { report, .. } = &hta_diff {
        println!(
            "HTA's diff classes: {}; ours: {}",
            report["classes"], set.diff["summary"]
        );
    }
    if let Hta::Done { report, .. } = &hta_set {
        agreement(&set.summary, report);
    }

    // 5. The summary.
    let mut summary = Table::new(&[
        "what",
        "ours (s)",
        "ours: server peak RSS (MiB)",
        "HTA (s)",
        "HTA: peak RSS (MiB, largest process / all together)",
        "HTA ÷ ours",
        "target",
    ]);
    let hta_cells = |h: &Hta, ours: f64| match h {
        Hta::Done {
            wall,
            max_rss_mib,
            tree_rss_mib,
            ..
        } => (
            num(*wall, 1),
            format!("{} / {}", num(*max_rss_mib, 0), num(*tree_rss_mib, 0)),
            format!("{:.1}x", wall / ours),
        ),
        Hta::Failed(why) => (format!("- ({why})"), "-".into(), "-".into()),
    };
    summary.row(vec![
        format!("rank 0 alone, {:.1} MB", rank_size / MB),
        num(alone.total, 2),
        num(alone.peak_mib, 0),
        "-".into(),
        "-".into(),
        "-".into(),
        "unit of the set's target".into(),
    ]);
    let (a, b, c) = hta_cells(&hta_set, set.total);
    summary.row(vec![
        format!(
            "set of {WORLD} ranks, {:.1} MB",
            WORLD as f64 * rank_size / MB
        ),
        num(set.total, 2),
        num(set.peak_mib, 0),
        a,
        b,
        c,
        format!(
            "≤ {budget:.1} s: {}; ≤ 400 MB: {}",
            verdict(time_met),
            verdict(peak_met)
        ),
    ]);
    let (a, b, c) = hta_cells(&hta_diff, set.diff_s);
    summary.row(vec![
        "diff of two traces, POST to done".into(),
        num(set.diff_s, 2),
        num(set.diff_peak_mib, 0),
        a,
        b,
        c,
        "-".into(),
    ]);
    summary.print(&format!(
        "Trace set and trace diff through the HTTP API vs HTA {} in the same run ({}); \
         blob store after the set {:.1} MB; load average {} at the end",
        HTA_PACKAGE.trim_start_matches("HolisticTraceAnalysis=="),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        set.blob_bytes / MB,
        common::loadavg()
    ));
    println!("{machine}");
    Ok(())
}

/// CPUs, load, memory and the data directory's disk (`df -hT`), for the report.
fn machine(data: &Path) -> String {
    let df = Command::new("df")
        .arg("-hT")
        .arg(data)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("df failed: {e}"));
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or("unknown".into(), |kb| {
            format!("{:.1} GiB", kb / 1024.0 / 1024.0)
        });
    format!(
        "machine: {} CPUs, {mem} RAM, load average {}; data directory {}:\n{df}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg(),
        data.display()
    )
}

/// The rank files, made once in `dir` from the big trace.
fn rank_files(plain: &Path, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    (0..WORLD)
        .map(|rank| {
            let out = dir.join(format!("rank{rank}.json"));
            if !has_rank(&out, rank) {
                let t = Instant::now();
                let partial = dir.join(format!("rank{rank}.partial"));
                write_rank(plain, &partial, rank)?;
                std::fs::rename(&partial, &out)?;
                println!("wrote {} in {:.0} s", out.display(), secs(t.elapsed()));
            }
            Ok(out)
        })
        .collect()
}

/// Whether `file` exists and its head names `rank` the way HTA reads it.
fn has_rank(file: &Path, rank: usize) -> bool {
    let mut head = Vec::new();
    let wanted = format!("\"rank\": {rank},");
    std::fs::File::open(file)
        .and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut head))
        .is_ok()
        && head.windows(wanted.len()).any(|w| w == wanted.as_bytes())
}

/// Copies `src` to `dst` with its top-level `distributedInfo` naming `rank` of [`WORLD`]:
/// only the head (1 MiB) is held in memory, the rest is copied as it is.
fn write_rank(src: &Path, dst: &Path, rank: usize) -> anyhow::Result<()> {
    let mut input = BufReader::with_capacity(1 << 20, std::fs::File::open(src)?);
    let mut head = Vec::new();
    (&mut input).take(HEAD_BYTES).read_to_end(&mut head)?;
    let key = b"\"distributedInfo\"";
    let at = head
        .windows(key.len())
        .position(|w| w == key)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no distributedInfo in the first {HEAD_BYTES} bytes of {}",
                src.display()
            )
        })?;
    let mut i = at + key.len();
    while head.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    anyhow::ensure!(
        head.get(i) == Some(&b':'),
        "{}: distributedInfo is not a key",
        src.display()
    );
    i += 1;
    let mut values = serde_json::Deserializer::from_slice(&head[i..]).into_iter::<Value>();
    let old = values
        .next()
        .ok_or_else(|| anyhow::anyhow!("{}: distributedInfo has no value", src.display()))??;
    let end = i + values.byte_offset();
    let Value::Object(mut info) = old else {
        anyhow::bail!("{}: distributedInfo is not an object", src.display());
    };
    info.insert("rank".into(), json!(rank));
    info.insert("world_size".into(), json!(WORLD));
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(dst)?);
    out.write_all(&head[..i])?;
    // Spaced as Python's json.dumps writes it: HTA finds a file's rank with the pattern
    // `"rank":\s+(\d+)` and takes every file without a match for rank 0.
    let fields: Vec<String> = info
        .iter()
        .map(|(k, v)| format!("{}: {v}", Value::from(k.as_str())))
        .collect();
    write!(out, " {{{}}}", fields.join(", "))?;
    out.write_all(&head[end..])?;
    std::io::copy(&mut input, &mut out)?;
    out.flush()?;
    Ok(())
}

struct Alone {
    upload: f64,
    total: f64,
    peak_mib: f64,
}

/// A fresh server: one rank uploaded and analysed.
async fn rank_alone(url: &str, work: &Path, file: &Path) -> anyhow::Result<Alone> {
    let server = Server::start(url, work, &[]).await?;
    server.reset_peak();
    let t = Instant::now();
    let (id, upload) = server.upload(file, "rank0.json").await?;
    server.wait_analyzed(id, Duration::from_secs(1800)).await?;
    let total = secs(t.elapsed());
    let (_, peak_mib) = server.rss_mib();
    server.stop().await?;
    Ok(Alone {
        upload: secs(upload),
        total,
        peak_mib,
    })
}

struct SetRun {
    uploads: Vec<f64>,
    total: f64,
    after_uploads: f64,
    peak_mib: f64,
    blob_bytes: f64,
    summary: Value,
    diff: Value,
    diff_s: f64,
    diff_peak_mib: f64,
}

/// POSTs a JSON body; the answer's status and JSON.
async fn post_json(server: &Server, path: &str, body: &Value) -> anyhow::Result<Value> {
    let reply = server
        .process
        .client
        .post(format!("{}{path}", server.process.base))
        .bearer_auth(&server.token)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?)
        .send()
        .await?;
    let status = reply.status();
    let text = reply.text().await?;
    anyhow::ensure!(status.is_success(), "POST {path}: {status}: {text}");
    Ok(serde_json::from_str(&text)?)
}

/// Reads `path` every 50 ms until its status is no longer `analyzing`/`queued`.
async fn poll(server: &Server, path: &str, first: Value) -> anyhow::Result<Value> {
    let t = Instant::now();
    let mut v = first;
    while matches!(v["status"].as_str(), Some("analyzing") | Some("queued")) {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(1800),
            "{path} not finished after 1800 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        v = server.get_json(path).await?;
    }
    Ok(v)
}

/// A fresh server: the ranks uploaded one after the other, the set made and waited for;
/// then the diff of the big trace against rank 1.
async fn set_and_diff(
    url: &str,
    work: &Path,
    ranks: &[PathBuf],
    plain: &Path,
) -> anyhow::Result<SetRun> {
    let server = Server::start(url, work, &[]).await?;
    server.reset_peak();
    let t = Instant::now();
    let mut ids = Vec::new();
    let mut uploads = Vec::new();
    for (r, file) in ranks.iter().enumerate() {
        let (id, took) = server.upload(file, &format!("rank{r}.json")).await?;
        println!(
            "rank {r} uploaded in {:.2} s (artifact {id}); server RSS now {:.0} MiB",
            secs(took),
            server.rss_mib().0
        );
        ids.push(id);
        uploads.push(secs(took));
    }
    let uploaded = t.elapsed();
    let created = post_json(
        &server,
        "/api/v1/trace-sets",
        &json!({"name": format!("{WORLD} ranks of the big trace"), "artifacts": ids}),
    )
    .await?;
    let id = created["id"]
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no id in {created}"))?;
    let set = poll(&server, &format!("/api/v1/trace-sets/{id}"), created).await?;
    let total = t.elapsed();
    let (_, peak_mib) = server.rss_mib();
    anyhow::ensure!(
        set["status"] == "done",
        "the set ended {}: {}",
        set["status"],
        set["error"]
    );
    let blob_bytes = server.blob_store_bytes() as f64;

    let (control, _) = server.upload(plain, "control.json").await?;
    server
        .wait_analyzed(control, Duration::from_secs(1800))
        .await?;
    server.reset_peak();
    let t = Instant::now();
    let started = post_json(
        &server,
        "/api/v1/trace-diffs",
        &json!({"control": control, "test": ids[1]}),
    )
    .await?;
    let diff_id = started["id"]
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no id in {started}"))?;
    let diff = poll(&server, &format!("/api/v1/trace-diffs/{diff_id}"), started).await?;
    let diff_s = secs(t.elapsed());
    let (_, diff_peak_mib) = server.rss_mib();
    server.stop().await?;
    Ok(SetRun {
        uploads,
        total: secs(total),
        after_uploads: secs(total - uploaded),
        peak_mib,
        blob_bytes,
        summary: set["summary"].clone(),
        diff: json!({"status": diff["status"], "error": diff["error"],
                     "summary": diff["summary"], "headline": diff["headline"]}),
        diff_s,
        diff_peak_mib,
    })
}

/// A directory of symbolic links to `files` (HTA reads every trace in a directory).
fn link_dir(work: &Path, name: &str, files: &[&Path]) -> anyhow::Result<PathBuf> {
    let dir = work.join(name);
    std::fs::create_dir_all(&dir)?;
    for f in files {
        let link = dir.join(f.file_name().unwrap());
        if !link.exists() {
            std::os::unix::fs::symlink(f, &link)?;
        }
    }
    Ok(dir)
}

/// HTA's diff as the issue asks: two labelled traces, `compare_traces` with its defaults;
/// the classes counted as its `ops_diff` counts them (without comparing a second time).
const HTA_DIFF: &str = r#"
import json, sys, time
from hta.trace_diff import TraceDiff, LabeledTrace
t0 = time.perf_counter()
control = LabeledTrace(label="control", trace_dir=sys.argv[2])
test = LabeledTrace(label="test", trace_dir=sys.argv[3])
t1 = time.perf_counter()
df = TraceDiff.compare_traces(control, test)
t2 = time.perf_counter()
c, t, d = df["control_counts"], df["test_counts"], df["diff_counts"]
classes = {
    "added": int((c.eq(0) & t.gt(0)).sum()),
    "deleted": int((c.gt(0) & t.eq(0)).sum()),
    "increased": int((c.gt(0) & d.gt(0)).sum()),
    "decreased": int((t.gt(0) & d.lt(0)).sum()),
    "unchanged": int((t.gt(0) & d.eq(0)).sum()),
}
with open(sys.argv[1], "w") as f:
    json.dump({"load_s": t1 - t0, "compare_s": t2 - t1, "classes": classes}, f)
"#;

/// HTA's set analysis as the trace-set oracle (tests/oracles/hta_trace_sets.py) runs it.
const HTA_SET: &str = r#"
import json, sys, time
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[2])
t1 = time.perf_counter()
temporal = ta.get_temporal_breakdown(visualize=False)
t2 = time.perf_counter()
overlap = ta.get_comm_comp_overlap(visualize=False)
t3 = time.perf_counter()
kernel_types, _ = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
t4 = time.perf_counter()
records = lambda df: json.loads(df.to_json(orient="records"))
with open(sys.argv[1], "w") as f:
    json.dump({"load_s": t1 - t0, "temporal_s": t2 - t1, "overlap_s": t3 - t2,
               "kernel_types_s": t4 - t3, "temporal": records(temporal),
               "overlap": records(overlap), "kernel_types": records(kernel_types)}, f)
"#;

enum Hta {
    Done {
        wall: f64,
        /// The largest single process (`ru_maxrss` of the process and the children it waited for).
        max_rss_mib: f64,
        /// The largest sum of the resident sets of all its processes, sampled every 200 ms
        /// (pages shared after a fork are counted in each).
        tree_rss_mib: f64,
        report: Value,
    },
    Failed(String),
}

/// The resident bytes of `root` and all its descendants, from /proc.
fn tree_rss_bytes(root: u32) -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let mut parent = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the command may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent.insert(pid, ppid);
        }
    }
    let in_tree = |mut pid: u32| {
        for _ in 0..64 {
            if pid == root {
                return true;
            }
            match parent.get(&pid) {
                Some(&p) if p != 0 => pid = p,
                _ => return false,
            }
        }
        false
    };
    parent
        .keys()
        .filter(|&&pid| in_tree(pid))
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/statm")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>()
        * page
}

fn mem_available_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// Runs an HTA script under `prlimit --as` in a process group of its own, watched: its
/// group is killed past `timeout`, when its processes together hold more than the cap,
/// or when the machine has less than 1.5 GiB available.
fn run_hta(
    python: &Path,
    work: &Path,
    label: &str,
    script: &str,
    dirs: &[&Path],
    cap_gib: usize,
    timeout: Duration,
) -> anyhow::Result<Hta> {
    use std::os::unix::process::CommandExt;
    let cap = cap_gib as u64 * 1024 * 1024 * 1024;
    let script_path = work.join(format!("hta_{label}.py"));
    std::fs::write(&script_path, script)?;
    let out = work.join(format!("hta-{label}.json"));
    let err = work.join(format!("hta-{label}.err"));
    println!(
        "running HTA ({label}) on {} within {cap_gib} GiB and {} s …",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" and "),
        timeout.as_secs()
    );
    let started = Instant::now();
    let mut child = Command::new("prlimit");
    child
        .arg(format!("--as={cap}"))
        .arg("--")
        .arg(python)
        .arg(&script_path)
        .arg(&out)
        .args(dirs)
        .stdout(Stdio::from(std::fs::File::create(
            work.join(format!("hta-{label}.out")),
        )?))
        .stderr(Stdio::from(std::fs::File::create(&err)?))
        .process_group(0);
    let child = child.spawn()?;
    let pid = child.id();
    let mut tree_peak = 0u64;
    let mut killed: Option<String> = None;
    let mut last_sample = Instant::now() - Duration::from_secs(1);
    let (status, max_rss) = loop {
        let mut status: libc::c_int = 0;
        // SAFETY: plain syscall on our own child; `usage` is a zeroed out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid as libc::pid_t {
            use std::os::unix::process::ExitStatusExt;
            break (
                std::process::ExitStatus::from_raw(status),
                usage.ru_maxrss as u64 * 1024,
            );
        }
        anyhow::ensure!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if last_sample.elapsed() >= Duration::from_millis(200) {
            last_sample = Instant::now();
            let rss = tree_rss_bytes(pid);
            tree_peak = tree_peak.max(rss);
            let avail = mem_available_bytes().unwrap_or(u64::MAX);
            let why = if started.elapsed() > timeout {
                Some(format!("killed at the {} s timeout", timeout.as_secs()))
            } else if rss > cap {
                Some(format!(
                    "killed when its processes held {:.1} GiB together (cap {cap_gib} GiB)",
                    rss as f64 / 1024f64.powi(3)
                ))
            } else if avail < 3 * 512 * 1024 * 1024 {
                Some(format!(
                    "killed when the machine had {:.1} GiB available (its processes held {:.1} GiB)",
                    avail as f64 / 1024f64.powi(3),
                    rss as f64 / 1024f64.powi(3)
                ))
            } else {
                None
            };
            if killed.is_none() {
                if let Some(why) = why {
                    // SAFETY: signalling the process group of our own child.
                    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
                    killed = Some(why);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        // Pool workers left behind by a parent that failed go with its group.
        // SAFETY: signalling the process group of our own child.
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
    }
    let wall = secs(started.elapsed());
    let tree_rss_mib = tree_peak as f64 / MIB;
    let max_rss_mib = max_rss as f64 / MIB;
    println!(
        "HTA ({label}) ended after {wall:.1} s: {status:?}; largest process {max_rss_mib:.0} MiB, \
         all its processes together at most {tree_rss_mib:.0} MiB; load average {}",
        common::loadavg()
    );
    let fail = |why: String| {
        Ok(Hta::Failed(format!(
            "HTA could not finish within {cap_gib} GiB / the {} s timeout: {why}",
            timeout.as_secs()
        )))
    };
    if let Some(why) = killed {
        return fail(format!("{why} after {wall:.0} s"));
    }
    if !status.success() {
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return fail(format!("{status:?}: {}", last.unwrap_or("")));
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    println!("HTA ({label}) phases: {}", {
        let mut r = report.clone();
        if let Some(o) = r.as_object_mut() {
            o.retain(|k, _| k.ends_with("_s"));
        }
        r
    });
    Ok(Hta::Done {
        wall,
        max_rss_mib,
        tree_rss_mib,
        report,
    })
}

/// Ours against HTA, rank by rank: the temporal breakdown and the overlap; then the
/// kernel types summed over the ranks.
fn agreement(ours: &Value, hta: &Value) {
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let empty = Vec::new();
    let hta_rank = |list: &str, rank: i64| {
        hta[list]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .find(|r| r["rank"].as_i64() == Some(rank))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut t = Table::new(&[
        "rank",
        "span ours / HTA (µs)",
        "idle ours / HTA",
        "compute ours / HTA",
        "non-compute ours / HTA",
        "largest |diff| / span",
        "overlap ours / HTA (%)",
    ]);
    for r in ours["ranks"].as_array().unwrap_or(&empty) {
        let rank = r["rank"].as_i64().unwrap_or(-1);
        let o = &r["temporal"];
        let h = hta_rank("temporal", rank);
        let span = f(o, "span_us");
        let mut worst: f64 = 0.0;
        let mut cells = vec![rank.to_string()];
        for (ok, hk) in [
            ("span_us", "kernel_time(us)"),
            ("idle_us", "idle_time(us)"),
            ("compute_us", "compute_time(us)"),
            ("non_compute_us", "non_compute_time(us)"),
        ] {
            let (a, b) = (f(o, ok), f(&h, hk));
            worst = worst.max((a - b).abs() / span);
            cells.push(format!("{} / {}", num(a, 0), num(b, 0)));
        }
        cells.push(format!("{:.3}%", worst * 100.0));
        let ho = hta_rank("overlap", rank);
        cells.push(format!(
            "{} / {}",
            num(f(r, "comm_comp_overlap_pct"), 2),
            num(f(&ho, "comp_comm_overlap_pctg"), 2)
        ));
        t.row(cells);
    }
    t.print("Per rank, ours vs HTA (HTA rounds to whole µs)");
    let mut k = Table::new(&[
        "kernel type (all ranks)",
        "ours (µs)",
        "HTA (µs)",
        "ours / HTA (%)",
    ]);
    for h in hta["kernel_types"].as_array().unwrap_or(&empty) {
        let name = h["kernel_type"].as_str().unwrap_or("?");
        let o = ours["kernel_types"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .find(|o| o["kernel_type"].as_str() == Some(name));
        k.row(vec![
            name.to_string(),
            o.map_or("-".into(), |o| num(f(o, "us"), 0)),
            num(f(h, "sum"), 0),
            format!(
                "{} / {}",
                o.map_or("-".into(), |o| num(f(o, "pct"), 1)),
                num(f(h, "percentage"), 1)
            ),
        ]);
    }
    k.print("Kernel types, ours vs HTA");
}
