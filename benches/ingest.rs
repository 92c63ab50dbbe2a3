//! Issue #15, telemetry ingest end to end: 1,000,000 per-request JSONL rows
//! (`../shared/tools/gen_requests.py`) uploaded to the real server (release build, a child
//! process) over HTTP until the analysis is done and every row is stored;
//! beside it, in the same run against the same PostgreSQL, `psql \copy` of the same rows
//! as CSV into a plain table, and DuckDB loading the same JSONL file into a database
//! file and computing the same 21 phase quantiles (7 phases × p50, p95, p99). Each round
//! runs the three one after another, so they alternate over the rounds.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench ingest`
//!
//! Env: PJ_BENCH_ROWS (default 1000000), PJ_BENCH_RUNS (default 3), PJ_BENCH_DATA (where
//! the generated rows are kept between runs; default target/bench-data), PSQL (default psql),
//! PJ_BENCH_PYTHON (a Python with `duckdb` installed; default PERFJOURNAL_PYTHON, else
//! python3).

#[path = "common/mod.rs"]
mod common;
#[path = "common/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, num, secs, Table, MB};
use server::Server;

/// The CSV column order of gen_requests.py.
const CSV_COLUMNS: &str = "request_id, arrival_ts, tokenize_ms, queue_wait_ms, prefill_ms, \
     first_token_ms, decode_ms, itl_p50_ms, itl_p99_ms, detokenize_ms, total_ms, prompt_tokens, \
     output_tokens, batch_size_at_admission, kv_blocks_used, prefix_cache_hit_tokens, \
     model_version, tenant";

/// The reference's table: the same columns, no key, index or constraint.
const PLAIN_TABLE: &str = "CREATE TABLE copy_reference (request_id text, arrival_ts float8, \
     tokenize_ms float8, queue_wait_ms float8, prefill_ms float8, first_token_ms float8, \
     decode_ms float8, itl_p50_ms float8, itl_p99_ms float8, detokenize_ms float8, \
     total_ms float8, prompt_tokens bigint, output_tokens bigint, \
     batch_size_at_admission bigint, kv_blocks_used bigint, prefix_cache_hit_tokens bigint, \
     model_version text, tenant text)";

/// DuckDB's side: the JSONL file into a table of a database file, then the quantiles of
/// the seven phases the analysis summarizes; prints the row count.
const DUCKDB_LOAD: &str = r#"
import sys, duckdb
jsonl, db = sys.argv[1], sys.argv[2]
con = duckdb.connect(db)
con.execute("CREATE TABLE requests AS SELECT * FROM read_json_auto(?, format = 'newline_delimited')", [jsonl])
phases = ["tokenize_ms", "queue_wait_ms", "prefill_ms", "first_token_ms", "decode_ms", "detokenize_ms", "total_ms"]
cols = ", ".join(f"quantile_cont({p}, [0.5, 0.95, 0.99])" for p in phases)
row = con.execute(f"SELECT count(*), {cols} FROM requests").fetchone()
assert sum(len(q) for q in row[1:]) == 21
print(row[0])
"#;

fn main() -> anyhow::Result<()> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "ingest benchmark not run: DATABASE_URL is unset \
             (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres)"
        );
        return Ok(());
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rows = common::env_usize("PJ_BENCH_ROWS", 1_000_000);
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let psql = std::env::var("PSQL").unwrap_or_else(|_| "psql".into());
    let python = std::env::var("PJ_BENCH_PYTHON")
        .or_else(|_| std::env::var("PERFJOURNAL_PYTHON"))
        .unwrap_or_else(|_| "python3".into());
    let has_duckdb = Command::new(&python)
        .args(["-c", "import duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    anyhow::ensure!(
        has_duckdb,
        "{python} cannot import duckdb: `{python} -m pip install duckdb`, or set PJ_BENCH_PYTHON"
    );
    let data = std::env::var_os("PJ_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/bench-data"));
    std::fs::create_dir_all(&data)?;
    let (jsonl, csv) = inputs(manifest, &data, rows)?;
    let jsonl_bytes = std::fs::metadata(&jsonl)?.len() as f64;
    let csv_bytes = std::fs::metadata(&csv)?.len() as f64;
    println!(
        "{} CPUs, load average {} at the start; {} rows: JSONL {:.1} MB, CSV {:.1} MB",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg(),
        num(rows as f64, 0),
        jsonl_bytes / MB,
        csv_bytes / MB
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let work = tempfile::Builder::new()
        .prefix("pj-bench-ingest-")
        .tempdir_in(&data)?;

    // One server and database for the whole run, as a long-running server: its peak
    // over the run includes what the allocator keeps between uploads.
    let server = rt.block_on(Server::start(&url, work.path(), &[]))?;
    let mut reference = Vec::new();
    let mut duck = Vec::new();
    let mut upload = Vec::new();
    let mut analysis = Vec::new();
    let mut total = Vec::new();
    let mut parse = Vec::new();
    let mut db = Vec::new();
    let mut peak: f64 = 0.0;
    let mut stored = Vec::new();
    let mut compressing = Vec::new();
    let mut cpu = Vec::new();
    let mut pg_cpu = Vec::new();
    for run in 1..=runs {
        server::warm(&jsonl)?;
        server::warm(&csv)?;
        let r = rt.block_on(one_run(&server, &psql, &python, &jsonl, &csv, rows))?;
        println!(
            "run {run}/{runs}: DuckDB {:.2} s ({:.2} CPU-s); psql \\copy {:.2} s; ours {:.2} s = upload {:.2} s ({:.0} MB/s) + analysis and store {:.2} s \
             (worker: parse {:.2} s busy, waiting on PostgreSQL {:.2} s); then compressed in {:.2} s \
             ({:.2} CPU-s) to {:.1} MB in the blob store ({:.1}% of the upload); server peak RSS {:.0} MiB ({:.0} MiB until the upload answered, \
             {:.0} MiB before it); CPU-seconds on the machine: psql's load {:.2} (PostgreSQL {:.2}), ours {:.2} (PostgreSQL {:.2}, the server {:.2}, its busiest thread {:.2}); \
             taken by the host meanwhile: {:.2} and {:.2}; \
             load average {}",
            r.duckdb,
            r.duckdb_cpu,
            r.reference,
            r.upload + r.analysis,
            r.upload,
            jsonl_bytes / MB / r.upload,
            r.analysis,
            r.parse,
            r.db,
            r.compressed,
            r.compress_cpu,
            r.stored_bytes / MB,
            r.stored_bytes * 100.0 / jsonl_bytes,
            r.peak_mib,
            r.upload_peak_mib,
            r.before_mib,
            r.reference_cpu,
            r.postgres.0,
            r.ours_cpu,
            r.postgres.1,
            r.server_cpu,
            r.busiest_thread,
            r.stolen.0,
            r.stolen.1,
            common::loadavg()
        );
        reference.push(r.reference);
        duck.push((r.duckdb, r.duckdb_cpu));
        upload.push(r.upload);
        analysis.push(r.analysis);
        total.push(r.upload + r.analysis);
        parse.push(r.parse);
        db.push(r.db);
        peak = peak.max(r.peak_mib);
        stored.push(r.stored_bytes);
        compressing.push(r.compressed);
        cpu.push((r.reference_cpu, r.ours_cpu, r.server_cpu));
        pg_cpu.push(r.postgres);
    }

    rt.block_on(server.stop())?;
    let n = rows as f64;
    let mut t = Table::new(&["median of runs", "seconds", "rows/s", "MB/s", "runs (s)"]);
    let line = |label: &str, v: &[f64], bytes: f64| {
        let m = median(v);
        vec![
            label.to_string(),
            num(m, 2),
            num(n / m, 0),
            num(bytes / MB / m, 1),
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
        ]
    };
    t.row(line(
        "DuckDB: JSONL into a database file + 21 quantiles",
        &duck.iter().map(|d| d.0).collect::<Vec<_>>(),
        jsonl_bytes,
    ));
    t.row(line(
        "psql \\copy CSV into a plain table",
        &reference,
        csv_bytes,
    ));
    t.row(line(
        "ours: upload + analysis + store (HTTP)",
        &total,
        jsonl_bytes,
    ));
    t.row(line(
        "  upload (body hashed and stored as it came)",
        &upload,
        jsonl_bytes,
    ));
    t.row(line(
        "  analysis + store, to status done",
        &analysis,
        jsonl_bytes,
    ));
    t.row(line(
        "  after done: the blob compressed (zstd)",
        &compressing,
        jsonl_bytes,
    ));
    t.row(line("  (worker) parsing, busy", &parse, jsonl_bytes));
    t.row(line("  (worker) waiting on PostgreSQL", &db, jsonl_bytes));
    t.print(&format!(
        "Telemetry ingest through the HTTP API vs psql \\copy in the same run; one server for every upload, its peak RSS over the run {peak:.0} MiB (target <= 300 MB: {}); load average {}",
        if peak * common::MIB <= 300e6 { "MET" } else { "NOT MET" },
        common::loadavg()
    ));
    println!(
        "written to the blob store per upload: {:.1} MB for {:.1} MB uploaded ({:.1}%)",
        median(&stored) / MB,
        jsonl_bytes / MB,
        median(&stored) * 100.0 / jsonl_bytes
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let of = |pick: fn(&(f64, f64, f64)) -> f64| median(&cpu.iter().map(pick).collect::<Vec<_>>());
    println!(
        "CPU-seconds the machine spent during DuckDB's load (median): {:.2} in {:.2} s",
        median(&duck.iter().map(|d| d.1).collect::<Vec<_>>()),
        median(&duck.iter().map(|d| d.0).collect::<Vec<_>>()),
    );
    println!(
        "CPU-seconds the machine spent (medians): psql's load {:.2} in {:.2} s, of which \
         PostgreSQL {:.2}; ours {:.2} in {:.2} s, of which PostgreSQL {:.2} and the server {:.2} \
         (the rest: the client); {cores:.0} cores give at most {:.2} CPU-seconds in psql's time",
        of(|c| c.0),
        median(&reference),
        median(&pg_cpu.iter().map(|p| p.0).collect::<Vec<_>>()),
        of(|c| c.1),
        median(&total),
        median(&pg_cpu.iter().map(|p| p.1).collect::<Vec<_>>()),
        of(|c| c.2),
        cores * median(&reference),
    );
    let duckdb = median(&duck.iter().map(|d| d.0).collect::<Vec<_>>());
    let faster = duckdb.min(median(&reference));
    let ratio = faster / median(&total);
    println!(
        "ours / DuckDB {:.2}x, ours / psql \\copy {:.2}x (rows/s, medians); ours / the faster \
         of the two: {ratio:.2}x; target >= 1.0x: {}",
        duckdb / median(&total),
        median(&reference) / median(&total),
        if ratio >= 1.0 { "MET" } else { "NOT MET" }
    );
    let with_compression: Vec<f64> = total.iter().zip(&compressing).map(|(t, c)| t + c).collect();
    println!(
        "counting the compression after done as well: ours {:.2} s, {:.2}x the faster of the two",
        median(&with_compression),
        faster / median(&with_compression)
    );
    Ok(())
}

/// The generated rows as JSONL and as CSV, made once and kept in `data`.
fn inputs(manifest: &Path, data: &Path, rows: usize) -> anyhow::Result<(PathBuf, PathBuf)> {
    let jsonl = data.join(format!("requests-{rows}.jsonl"));
    let csv = data.join(format!("requests-{rows}.csv"));
    if jsonl.exists() && csv.exists() {
        return Ok((jsonl, csv));
    }
    let tool = manifest.join("../shared/tools/gen_requests.py");
    anyhow::ensure!(tool.exists(), "the bench needs {}", tool.display());
    let t = Instant::now();
    let (pj, pc) = (
        jsonl.with_extension("partial"),
        csv.with_extension("partial-csv"),
    );
    let status = Command::new("python3")
        .arg(&tool)
        .arg(rows.to_string())
        .arg(&pj)
        .arg(&pc)
        .status()?;
    anyhow::ensure!(status.success(), "gen_requests.py failed");
    std::fs::rename(&pc, &csv)?;
    std::fs::rename(&pj, &jsonl)?;
    println!("generated {} rows in {:.0} s", rows, secs(t.elapsed()));
    Ok((jsonl, csv))
}

struct Run {
    reference: f64,
    /// DuckDB's load and quantiles, and the machine's CPU-seconds meanwhile.
    duckdb: f64,
    duckdb_cpu: f64,
    upload: f64,
    analysis: f64,
    parse: f64,
    db: f64,
    peak_mib: f64,
    /// The server's peak RSS until the upload answered (the analysis runs after it).
    upload_peak_mib: f64,
    /// The server's RSS just before the upload.
    before_mib: f64,
    /// Bytes the upload cost the blob store (on disk, after compression).
    stored_bytes: f64,
    /// Seconds from `done` until the blob was compressed, and the server's CPU-seconds
    /// meanwhile.
    compressed: f64,
    compress_cpu: f64,
    /// CPU-seconds the whole machine spent during psql's load, and during ours (first
    /// byte to `done`), and the server's own share of the latter; and the CPU-seconds the
    /// host took from the machine during the two (stolen).
    reference_cpu: f64,
    ours_cpu: f64,
    server_cpu: f64,
    /// CPU-seconds of the server's busiest thread during our load: a bound no second
    /// core lifts.
    busiest_thread: f64,
    /// CPU-seconds of PostgreSQL's processes during psql's load and during ours.
    postgres: (f64, f64),
    stolen: (f64, f64),
}

/// One run on the bench's server and database: first the reference load into a new
/// plain table (after a checkpoint), then ours (after another); both are removed after.
async fn one_run(
    server: &Server,
    psql: &str,
    python: &str,
    jsonl: &Path,
    csv: &Path,
    rows: usize,
) -> anyhow::Result<Run> {
    let (duckdb, duckdb_cpu) = duckdb_load(python, jsonl, rows)?;
    sqlx::query("DROP TABLE IF EXISTS copy_reference")
        .execute(&server.pool)
        .await?;
    sqlx::query(PLAIN_TABLE).execute(&server.pool).await?;
    sqlx::query("CHECKPOINT").execute(&server.pool).await?;
    let ((busy, stolen), pg_busy) = (common::machine_cpu_secs(), common::postgres_cpu_secs());
    let t = Instant::now();
    let out = Command::new(psql)
        .arg(&server.db_url)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!(
            "\\copy copy_reference ({CSV_COLUMNS}) FROM '{}' WITH (FORMAT csv)",
            csv.display()
        ))
        .output()?;
    let reference = secs(t.elapsed());
    let (reference_cpu, reference_stolen, reference_pg) = {
        let (b, s) = common::machine_cpu_secs();
        (b - busy, s - stolen, common::postgres_cpu_secs() - pg_busy)
    };
    anyhow::ensure!(
        out.status.success(),
        "psql \\copy failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied: i64 = sqlx::query_scalar("SELECT count(*) FROM copy_reference")
        .fetch_one(&server.pool)
        .await?;
    anyhow::ensure!(copied as usize == rows, "psql loaded {copied} rows");
    sqlx::query("CHECKPOINT").execute(&server.pool).await?;

    server.reset_peak();
    let (before_mib, _) = server.rss_mib();
    let ((busy, stolen), server_busy, pg_busy) = (
        common::machine_cpu_secs(),
        common::process_cpu_secs(server.process.pid),
        common::postgres_cpu_secs(),
    );
    let threads = common::thread_cpu_secs(server.process.pid);
    let t = Instant::now();
    let (id, up) = server.upload(jsonl, "requests.jsonl").await?;
    let (_, upload_peak_mib) = server.rss_mib();
    server.wait_analyzed(id, Duration::from_secs(900)).await?;
    let total = t.elapsed();
    let ((ours_cpu, ours_stolen), server_cpu, ours_pg) = {
        let (b, s) = common::machine_cpu_secs();
        (
            (b - busy, s - stolen),
            common::process_cpu_secs(server.process.pid) - server_busy,
            common::postgres_cpu_secs() - pg_busy,
        )
    };
    let busiest_thread =
        common::busiest_thread_secs(&threads, &common::thread_cpu_secs(server.process.pid));
    // The blob is compressed after the analysis: the next side starts only once that
    // is over too, so it never shares the cores with our compression.
    let done = Instant::now();
    let compress_cpu = common::process_cpu_secs(server.process.pid);
    loop {
        let pending: bool =
            sqlx::query_scalar("SELECT compress_pending FROM artifacts WHERE id = $1")
                .bind(id)
                .fetch_one(&server.pool)
                .await?;
        if !pending {
            break;
        }
        anyhow::ensure!(
            done.elapsed() < Duration::from_secs(600),
            "the upload was never compressed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let compressed = secs(done.elapsed());
    let compress_cpu = common::process_cpu_secs(server.process.pid) - compress_cpu;
    let (_, peak_mib) = server.rss_mib();
    let loaded: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(rows), 0)::bigint FROM request_column_chunks WHERE artifact_id = $1",
    )
    .bind(id)
    .fetch_one(&server.pool)
    .await?;
    anyhow::ensure!(loaded as usize == rows, "the server loaded {loaded} rows");
    let timing = server.timing(id).unwrap_or_default();
    let f = |k: &str| timing[k].as_f64().unwrap_or(f64::NAN);
    let run = Run {
        reference,
        duckdb,
        duckdb_cpu,
        upload: secs(up),
        analysis: secs(total - up),
        parse: f("parse_s"),
        db: f("db_s"),
        peak_mib,
        upload_peak_mib,
        before_mib,
        stored_bytes: server.blob_store_bytes() as f64,
        compressed,
        compress_cpu,
        reference_cpu,
        ours_cpu,
        server_cpu,
        busiest_thread,
        postgres: (reference_pg, ours_pg),
        stolen: (reference_stolen, ours_stolen),
    };
    server.delete_artifact(id).await?;
    sqlx::query("DROP TABLE copy_reference")
        .execute(&server.pool)
        .await?;
    Ok(run)
}

/// DuckDB's load of the JSONL file into a new database file and its quantiles: the
/// seconds and the machine's CPU-seconds. The file is removed after.
fn duckdb_load(python: &str, jsonl: &Path, rows: usize) -> anyhow::Result<(f64, f64)> {
    let db = jsonl.with_extension("duckdb");
    let remove = |db: &Path| {
        let _ = std::fs::remove_file(db);
        let _ = std::fs::remove_file(db.with_extension("duckdb.wal"));
    };
    remove(&db);
    let (busy, _) = common::machine_cpu_secs();
    let t = Instant::now();
    let out = Command::new(python)
        .args(["-c", DUCKDB_LOAD])
        .arg(jsonl)
        .arg(&db)
        .output()?;
    let seconds = secs(t.elapsed());
    let cpu = common::machine_cpu_secs().0 - busy;
    remove(&db);
    anyhow::ensure!(
        out.status.success(),
        "DuckDB's load failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loaded: usize = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    anyhow::ensure!(loaded == rows, "DuckDB loaded {loaded} rows");
    Ok((seconds, cpu))
}
