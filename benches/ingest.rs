//! Issue #5, telemetry ingest: 1,000,000 per-request JSONL rows through the app's own
//! path (blob put with sha256, then the worker's analysis and COPY into `request_rows`)
//! against `psql \copy` loading the same rows from CSV into the same table; then the
//! phase table for those rows, both as the stored analysis (the request_log analyzer)
//! and as the SQL decomposition the request page runs.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench ingest`
//! Env: PJ_BENCH_ROWS (default 1000000), PJ_BENCH_RUNS (default 3),
//! PJ_GEN_REQUESTS (path of gen_requests.py; default ../shared/tools/gen_requests.py),
//! PSQL (default psql).

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Instant;

use common::{median, num, secs, Table, MB};
use perfjournal::artifacts::{self, ingest, Owner};
use perfjournal::config::Config;
use perfjournal::core::analyze::{self, request_log, AnalyzeError, Kind, Options};
use perfjournal::state::AppState;
use perfjournal::storage::BlobStore;
use perfjournal::web::artifacts::views;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgPool};

/// The CSV column order of gen_requests.py, after the artifact id we prepend.
const CSV_COLUMNS: &str = "artifact_id, request_id, arrival_ts, tokenize_ms, queue_wait_ms, \
     prefill_ms, first_token_ms, decode_ms, itl_p50_ms, itl_p99_ms, detokenize_ms, total_ms, \
     prompt_tokens, output_tokens, batch_size_at_admission, kv_blocks_used, \
     prefix_cache_hit_tokens, model_version, tenant";

fn main() -> anyhow::Result<()> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "ingest benchmark skipped: DATABASE_URL is unset \
             (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres)"
        );
        return Ok(());
    };
    let rows = common::env_usize("PJ_BENCH_ROWS", 1_000_000);
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let psql = std::env::var("PSQL").unwrap_or_else(|_| "psql".into());

    let work = tempfile::Builder::new()
        .prefix("pj-bench-ingest-")
        .tempdir()?;
    let jsonl = work.path().join("requests.jsonl");
    let csv_plain = work.path().join("requests.csv");
    let t = Instant::now();
    let how = generate(rows, &jsonl, &csv_plain)?;
    println!(
        "generated {} rows with {how} in {:.1} s",
        num(rows as f64, 0),
        secs(t.elapsed())
    );

    println!(
        "{} CPUs, load average {} at the start",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let db_name = format!("pj_bench_{}", uuid::Uuid::new_v4().simple());
    let server = PgConnectOptions::from_str(&url)?;
    let outcome = rt.block_on(run(
        &server,
        &url,
        &db_name,
        &psql,
        rows,
        runs,
        work.path(),
        &jsonl,
        &csv_plain,
    ));
    // The scratch database goes whatever happened.
    rt.block_on(async {
        if let Ok(mut conn) =
            sqlx::PgConnection::connect_with(&server.clone().database("postgres")).await
        {
            let _ = sqlx::query(&format!(
                "DROP DATABASE IF EXISTS \"{db_name}\" WITH (FORCE)"
            ))
            .execute(&mut conn)
            .await;
        }
    });
    outcome
}

#[allow(clippy::too_many_arguments)]
async fn run(
    server: &PgConnectOptions,
    url: &str,
    db_name: &str,
    psql: &str,
    rows: usize,
    runs: usize,
    work: &Path,
    jsonl: &Path,
    csv_plain: &Path,
) -> anyhow::Result<()> {
    let pool = perfjournal::db::connect(server.clone().database(db_name)).await?;
    let user = perfjournal::auth::users::create(
        &pool,
        "bench",
        perfjournal::auth::password::decoy_hash(),
        perfjournal::auth::Role::Admin,
        false,
    )
    .await
    .map_err(|e| anyhow::anyhow!("creating the bench user: {e}"))?;

    // psql loads under an artifact row of its own, so both loads hit the same table,
    // the same foreign key and the same index.
    let ref_id: i64 = sqlx::query_scalar(
        "INSERT INTO artifacts (name, kind, sha256, size_bytes, status)
         VALUES ('psql-reference.csv', 'request_log', repeat('0', 64), 0, 'done') RETURNING id",
    )
    .fetch_one(&pool)
    .await?;
    let csv = work.join("requests-with-id.csv");
    prefix_csv(csv_plain, &csv, ref_id)?;
    let jsonl_bytes = std::fs::metadata(jsonl)?.len() as f64;
    let csv_bytes = std::fs::metadata(&csv)?.len() as f64;
    let scratch_url = common::url_with_database(url, db_name);

    let mut ours_total = Vec::new();
    let mut ours_put = Vec::new();
    let mut ours_drain = Vec::new();
    let mut reference = Vec::new();
    let mut last_id = 0;
    for run in 1..=runs {
        // Alternating, each load on an empty table after a checkpoint, so neither side
        // pays for the other's dirty pages or WAL.
        reset(&pool).await?;
        let t = Instant::now();
        let out = Command::new(psql)
            .arg(&scratch_url)
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!(
                "\\copy request_rows ({CSV_COLUMNS}) FROM '{}' WITH (FORMAT csv)",
                csv.display()
            ))
            .output()?;
        let psql_time = t.elapsed();
        anyhow::ensure!(
            out.status.success(),
            "psql \\copy failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        check_rows(&pool, ref_id, rows).await?;
        reference.push(secs(psql_time));

        reset(&pool).await?;
        // A fresh blob directory each run, so the upload is never a dedupe hit.
        let blob_dir = work.join(format!("blobs-{run}"));
        std::fs::create_dir_all(&blob_dir)?;
        let state = AppState::new(
            pool.clone(),
            Config::default(),
            BlobStore::local(&blob_dir)?,
        );
        let t = Instant::now();
        let file = tokio::fs::File::open(jsonl).await?;
        let body = tokio_util::io::ReaderStream::with_capacity(file, 1 << 20);
        let artifact = artifacts::receive(
            &state.artifacts(),
            Owner::default(),
            "requests.jsonl",
            body,
            user.id,
        )
        .await
        .map_err(|e| anyhow::anyhow!("upload failed: {e}"))?;
        let put = t.elapsed();
        let store = state.artifacts();
        let mut processed = 0;
        while ingest::process_next(&store).await? {
            processed += 1;
        }
        let total = t.elapsed();
        let done = artifacts::get(&pool, artifact.id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the artifact vanished"))?;
        // Files under 32 MiB are analyzed inside `receive` already (processed == 0).
        anyhow::ensure!(
            done.status == "done" && processed <= 1,
            "analysis ended {} ({:?})",
            done.status,
            done.error
        );
        check_rows(&pool, artifact.id, rows).await?;
        ours_put.push(secs(put));
        ours_drain.push(secs(total - put));
        ours_total.push(secs(total));
        last_id = artifact.id;
        println!(
            "run {run}/{runs}: psql \\copy {:.2} s; ours {:.2} s (put {:.2} s + analysis and COPY {:.2} s)",
            secs(psql_time),
            secs(total),
            secs(put),
            secs(total - put)
        );
        std::fs::remove_dir_all(&blob_dir).ok();
    }

    let n = rows as f64;
    let mut t = Table::new(&[
        "ingest (median of runs)",
        "seconds",
        "rows/s",
        "input MB/s",
        "runs (s)",
    ]);
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
    t.row(line("psql \\copy CSV (reference)", &reference, csv_bytes));
    t.row(line(
        "ours: upload + analysis + COPY",
        &ours_total,
        jsonl_bytes,
    ));
    t.row(line("  of which blob put (sha256)", &ours_put, jsonl_bytes));
    t.row(line(
        "  of which worker: analysis + COPY",
        &ours_drain,
        jsonl_bytes,
    ));
    t.print(&format!(
        "Telemetry ingest, {} rows: JSONL {:.1} MB, CSV {:.1} MB",
        num(n, 0),
        jsonl_bytes / MB,
        csv_bytes / MB
    ));
    let ratio = median(&reference) / median(&ours_total);
    println!(
        "ratio ours / psql (rows/s, medians): {ratio:.2}x  target >= 0.80x: {}",
        if ratio >= 0.8 { "MET" } else { "NOT MET" }
    );

    phase_table(&pool, last_id, jsonl, rows).await
}

/// The phase table two ways: recomputed by the request_log analyzer (what the worker
/// stores and the artifact page shows), and the SQL the request page runs.
async fn phase_table(pool: &PgPool, id: i64, jsonl: &Path, rows: usize) -> anyhow::Result<()> {
    let runs = 5;
    let mut t = Table::new(&[
        "phase table",
        "first (s)",
        "median (s)",
        "min (s)",
        "max (s)",
    ]);
    let mut add = |label: &str, v: Vec<f64>| {
        t.row(vec![
            label.into(),
            format!("{:.3}", v[0]),
            format!("{:.3}", median(&v)),
            format!("{:.3}", common::min(&v)),
            format!("{:.3}", common::max(&v)),
        ]);
    };

    let mut analyzer = Vec::new();
    for _ in 0..3 {
        let path = jsonl.to_path_buf();
        let t = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(path)?;
            analyze::analyze(Kind::RequestLog, file, &Options::default(), &|_| {})
                .map_err(anyhow::Error::from)
        })
        .await??;
        analyzer.push(secs(t.elapsed()));
        let v = result.to_json();
        anyhow::ensure!(v["rows"] == rows, "the analyzer saw {} rows", v["rows"]);
    }
    add("request_log analyzer over the JSONL file", analyzer);

    // Where the worker's second pass goes: parsing and COPY encoding alone, no database.
    let mut encode = Vec::new();
    for _ in 0..3 {
        let path = jsonl.to_path_buf();
        let t = Instant::now();
        let n = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(path)?;
            let mut buf = Vec::with_capacity(1 << 20);
            let n = request_log::for_each_request(file, |row| -> Result<(), AnalyzeError> {
                row.write_copy_binary(1, &mut buf);
                if buf.len() >= 1 << 20 {
                    buf.clear();
                }
                Ok(())
            })?;
            Ok::<u64, anyhow::Error>(n)
        })
        .await??;
        encode.push(secs(t.elapsed()));
        anyhow::ensure!(n as usize == rows, "parsed {n} rows");
    }
    add("(diagnostic) parse + COPY encoding, no DB", encode);

    let mut stored = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let a = artifacts::get(pool, id).await?;
        anyhow::ensure!(a.and_then(|a| a.analysis).is_some(), "no stored analysis");
        stored.push(secs(t.elapsed()));
    }
    add("stored analysis read back (artifact page)", stored);

    let all =
        views::RequestFilter::parse("", "", "", "", "").map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut page = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        views::facets(pool, id).await?;
        let (table, _) = views::decomposition(pool, id, &all).await?;
        page.push(secs(t.elapsed()));
        anyhow::ensure!(!table.rows.is_empty(), "empty decomposition");
    }
    add("decomposition, all rows (facets + table)", page);

    let by = views::RequestFilter::parse("", "", "", "", "tenant")
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut grouped = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        views::facets(pool, id).await?;
        views::decomposition(pool, id, &by).await?;
        grouped.push(secs(t.elapsed()));
    }
    add("decomposition grouped by tenant (page)", grouped);

    let chat = views::RequestFilter::parse("chat", "", "", "", "")
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut filtered = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        views::facets(pool, id).await?;
        views::decomposition(pool, id, &chat).await?;
        filtered.push(secs(t.elapsed()));
    }
    add("decomposition, tenant=chat filter", filtered);

    println!("load average {} at the end", common::loadavg());
    t.print(&format!(
        "Phase table for the {} rows (target < 1 s)",
        num(rows as f64, 0)
    ));
    Ok(())
}

/// Empties the table and flushes dirty pages, so each load starts from the same state.
async fn reset(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query("TRUNCATE request_rows").execute(pool).await?;
    sqlx::query("CHECKPOINT").execute(pool).await?;
    Ok(())
}

async fn check_rows(pool: &PgPool, id: i64, rows: usize) -> anyhow::Result<()> {
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM request_rows WHERE artifact_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await?;
    anyhow::ensure!(n as usize == rows, "{n} rows loaded, expected {rows}");
    Ok(())
}

/// Writes the CSV again with the artifact id as the first column (untimed).
fn prefix_csv(from: &Path, to: &Path, id: i64) -> anyhow::Result<()> {
    let input = std::io::BufReader::new(std::fs::File::open(from)?);
    let mut out = BufWriter::new(std::fs::File::create(to)?);
    let prefix = format!("{id},");
    for line in input.lines() {
        out.write_all(prefix.as_bytes())?;
        out.write_all(line?.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// JSONL and CSV of the same rows: the shared generator when python3 and the script
/// are there, else the same fields and distributions from here.
fn generate(rows: usize, jsonl: &Path, csv: &Path) -> anyhow::Result<&'static str> {
    let script = std::env::var_os("PJ_GEN_REQUESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/gen_requests.py")
        });
    if script.is_file() {
        let status = Command::new("python3")
            .arg(&script)
            .arg(rows.to_string())
            .arg(jsonl)
            .arg(csv)
            .status();
        if let Ok(s) = status {
            if s.success() {
                return Ok("gen_requests.py");
            }
        }
        println!("gen_requests.py did not run; generating the rows in Rust instead");
    }
    common::write_requests(rows, 42, 1.0, jsonl, Some(csv))?;
    Ok("the built-in generator")
}
