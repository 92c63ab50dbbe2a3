//! Issue #15 items 5 and 6, timed where the user waits: through the release server
//! (`perfjournal` binary, a child process) over HTTP on loopback.
//!
//! (a) A comparison of two request logs of 100,000 requests each:
//!     `POST /api/v1/comparisons` reads both sides' rows, compares every latency series
//!     (p50/p90/p95/p99 bootstrap intervals and their p-values, 2,000 resamples each,
//!     every value, no subsampling) and stores the report. Beside it, in this process:
//!     reading the two runs, and the statistics of one series (TTFT) — as `compare` runs
//!     them now (each side sorted once) and as before (a sort per statistic and test).
//! (b) The request decomposition page (`GET /artifacts/{id}/requests`) over 1,000,000
//!     rows: unfiltered, `tenant=batch`, `by=tenant`, each beside the chunk read and the
//!     selection timed in this process.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench compare`
//! Env: BENCH_FRESH=1 (rebuild the bench database), PJ_BENCH_ROWS (1000000),
//! PJ_BENCH_SIDE (100000 requests per comparison side), PJ_BENCH_RUNS (5: medians of 5).

#[path = "common/mod.rs"]
mod common;
#[path = "common/server.rs"]
mod server;

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use common::{median, num, secs, Table};
use perfjournal::artifacts::{self, columns, ingest, Owner};
use perfjournal::config::Config;
use perfjournal::core::analyze::request_columns::{self, Filter as ColumnFilter, GroupBy};
use perfjournal::core::method::comparison::{compare, Request, Run, Series};
use perfjournal::core::metric::Percentile;
use perfjournal::core::stats::{
    bootstrap_diff_ci, mann_whitney_u, BootstrapConfig, Statistic, Summary,
};
use perfjournal::state::AppState;
use perfjournal::storage::BlobStore;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

const DB: &str = "perfjournal_bench_compare";
const PASSWORD: &str = "bench-password-long-enough";

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

/// The id of the analyzed request log called `name`, uploading it first if needed.
async fn ensure_log(
    state: &AppState,
    user: i64,
    name: &str,
    rows: usize,
    seed: u64,
    slower: f64,
    work: &Path,
) -> anyhow::Result<i64> {
    let have: Option<i64> = sqlx::query_scalar(
        "SELECT a.id FROM artifacts a JOIN request_columns c ON c.artifact_id = a.id \
         WHERE a.name = $1 AND a.status = 'done' AND c.rows = $2 ORDER BY a.id DESC LIMIT 1",
    )
    .bind(name)
    .bind(rows as i64)
    .fetch_optional(&state.pool)
    .await?;
    if let Some(id) = have {
        return Ok(id);
    }
    let path = work.join(name);
    common::write_requests(rows, seed, slower, &path, None)?;
    let t = Instant::now();
    let file = tokio::fs::File::open(&path).await?;
    let body = tokio_util::io::ReaderStream::with_capacity(file, 1 << 20);
    let a = artifacts::receive(&state.artifacts(), Owner::default(), name, body, user, None)
        .await
        .map_err(|e| anyhow::anyhow!("upload failed: {e}"))?;
    // A big log is loaded while its body arrives and finishes after `receive` answers;
    // a small one waits for a worker.
    let done = loop {
        while ingest::process_next(&state.artifacts()).await? {}
        let a = artifacts::get(&state.pool, a.id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the artifact vanished"))?;
        if a.status != "analyzing" && a.status != "queued" {
            break a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    anyhow::ensure!(done.status == "done", "analysis ended {}", done.status);
    println!(
        "loaded {name}: {} requests in {:.1} s (setup, untimed)",
        num(rows as f64, 0),
        secs(t.elapsed())
    );
    std::fs::remove_file(&path).ok();
    Ok(a.id)
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::var("DATABASE_URL").map_err(|_| {
        anyhow::anyhow!(
            "set DATABASE_URL to a PostgreSQL server the bench may create a database on"
        )
    })?;
    let rows = common::env_usize("PJ_BENCH_ROWS", 1_000_000);
    let side = common::env_usize("PJ_BENCH_SIDE", 100_000);
    let runs = common::env_usize("PJ_BENCH_RUNS", 5);
    let server_opts = PgConnectOptions::from_str(&url)?;
    let admin = PgPool::connect_with(server_opts.clone()).await?;
    if std::env::var_os("BENCH_FRESH").is_some() {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
            .execute(&admin)
            .await?;
    }
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(DB)
            .fetch_one(&admin)
            .await?;
    if !exists {
        sqlx::query(&format!("CREATE DATABASE {DB}"))
            .execute(&admin)
            .await?;
    }
    admin.close().await;
    let pool = perfjournal::db::connect(server_opts.database(DB)).await?;
    let user = common::admin_user(&pool, "bench", PASSWORD).await?;

    let work = tempfile::tempdir()?;
    let state = AppState::new(
        pool.clone(),
        Config::default(),
        BlobStore::local(work.path())?,
    );
    let big = ensure_log(
        &state,
        user,
        "bench-requests-1m.jsonl",
        rows,
        42,
        1.0,
        work.path(),
    )
    .await?;
    let before = ensure_log(
        &state,
        user,
        "bench-before.jsonl",
        side,
        7,
        1.0,
        work.path(),
    )
    .await?;
    let after = ensure_log(&state, user, "bench-after.jsonl", side, 8, 0.9, work.path()).await?;

    // The release server on the bench database.
    let mut server =
        server::Process::spawn(&common::url_with_database(&url, DB), work.path(), &[]).await?;
    let (base, client) = (server.base.clone(), server.client.clone());
    let cookie = common::login(&client, &base, "bench", PASSWORD).await?;
    let (_, token) = perfjournal::auth::tokens::create(&pool, user, "bench").await?;
    println!(
        "release server up; {} decomposition rows, {} requests per comparison side; load average {}",
        num(rows as f64, 0),
        num(side as f64, 0),
        common::loadavg()
    );

    // (a) Comparisons.
    let mut t = Table::new(&[
        "comparison of 2 × 100k requests",
        "median s",
        "min s",
        "max s",
    ]);
    let add = |t: &mut Table, label: String, v: &[f64]| {
        t.row(vec![
            label,
            format!("{:.3}", median(v)),
            format!("{:.3}", common::min(v)),
            format!("{:.3}", common::max(v)),
        ]);
    };
    let body = serde_json::json!({
        "baseline": [before], "candidate": [after],
        "variable": "bench: faster prefill", "metric": "ttft_ms", "percentile": "p95"
    });
    let mut http = Vec::new();
    let mut series = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let r = client
            .post(format!("{base}/api/v1/comparisons"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let doc: serde_json::Value = r.json().await?;
        http.push(secs(t0.elapsed()));
        anyhow::ensure!(
            status.as_u16() == 201,
            "comparison answered {status}: {doc}"
        );
        series = doc["metrics"].as_object().map_or(0, serde_json::Map::len);
    }
    add(
        &mut t,
        format!("POST /api/v1/comparisons (HTTP, {series} series, stored)"),
        &http,
    );

    let mut read = Vec::new();
    let mut sides = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let (b, a, _) = perfjournal::comparisons::load_runs(&pool, &[before], &[after])
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        read.push(secs(t0.elapsed()));
        sides = Some((b, a));
    }
    add(&mut t, "(in process) read both sides' runs".into(), &read);
    let (b, a) = sides.expect("at least one run");
    let only_ttft = |runs: &[Run]| -> Vec<Run> {
        runs.iter()
            .map(|r| {
                let mut r = r.clone();
                r.series.retain(|s, _| *s == Series::TtftMs);
                r
            })
            .collect()
    };
    let (b1, a1) = (only_ttft(&b), only_ttft(&a));
    let cfg = BootstrapConfig::default();
    let mut now = Vec::new();
    let mut report = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let r = compare(&Request {
            baseline: &b1,
            candidate: &a1,
            variable: "bench",
            baseline_config: None,
            candidate_config: None,
            headline: (Series::TtftMs, Percentile::P95),
            cause_proven: false,
            prediction: None,
            bootstrap: cfg,
            min_effect_pct: perfjournal::core::method::verdict::DEFAULT_MIN_EFFECT_PCT,
        })
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        now.push(secs(t0.elapsed()));
        report = Some(r);
    }
    add(
        &mut t,
        "(in process) one series: summaries, 4 bootstraps with their p-values — sorted once".into(),
        &now,
    );
    let (xb, xa) = (
        &b1[0].series[&Series::TtftMs],
        &a1[0].series[&Series::TtftMs],
    );
    let mut previous = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        Summary::of(xb)?;
        Summary::of(xa)?;
        mann_whitney_u(xb, xa)?;
        let cis: Vec<_> = [
            Statistic::P50,
            Statistic::P90,
            Statistic::P95,
            Statistic::P99,
        ]
        .into_iter()
        .map(|s| bootstrap_diff_ci(xb, xa, s, &cfg))
        .collect::<Result<_, _>>()?;
        previous.push(secs(t0.elapsed()));
        // The same intervals either way (same seed, same draws).
        let row = report
            .as_ref()
            .and_then(|r| r.series(Series::TtftMs))
            .and_then(|s| s.row(Percentile::P95))
            .expect("a p95 row");
        anyhow::ensure!(
            (row.ci_low, row.ci_high) == (cis[2].low, cis[2].high),
            "the intervals differ"
        );
    }
    add(
        &mut t,
        "(in process) the same, a sort per statistic and test (previous)".into(),
        &previous,
    );
    t.print(&format!(
        "(a) Comparison statistics on every value, {} + {} TTFT values (target ≤ 1 s per series); load average {}",
        num(xb.len() as f64, 0),
        num(xa.len() as f64, 0),
        common::loadavg()
    ));

    // (b) The decomposition page.
    let pages: [(&str, &str, Option<&str>, Option<&'static str>); 3] = [
        ("unfiltered", "", None, None),
        ("tenant=batch", "tenant=batch", Some("batch"), None),
        ("by=tenant", "by=tenant", None, Some("tenant")),
    ];
    let mut t = Table::new(&[
        "GET /artifacts/{id}/requests (1M rows)",
        "median s",
        "min s",
        "max s",
        "in process, ms (median)",
    ]);
    for (label, query, tenant, by) in pages {
        let mut times = Vec::new();
        for _ in 0..runs {
            let t0 = Instant::now();
            let r = client
                .get(format!("{base}/artifacts/{big}/requests?{query}"))
                .header("cookie", &cookie)
                .send()
                .await?;
            let status = r.status();
            let html = r.text().await?;
            times.push(secs(t0.elapsed()));
            anyhow::ensure!(
                status.is_success() && html.contains("id=\"decomposition\""),
                "the page answered {status}"
            );
        }
        // Beside it, in this process: the chunk read and the selection.
        let f = ColumnFilter {
            tenant,
            ..ColumnFilter::default()
        };
        let group = by.map(|_| GroupBy::Tenant);
        let (mut read, mut select) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t0 = Instant::now();
            let chunks = columns::load(&pool, big, &f).await?;
            read.push(secs(t0.elapsed()) * 1e3);
            let t0 = Instant::now();
            request_columns::decompose(&chunks, &f, None, 1);
            if group.is_some() {
                request_columns::decompose(&chunks, &f, group, 50);
            }
            select.push(secs(t0.elapsed()) * 1e3);
        }
        t.row(vec![
            label.into(),
            format!("{:.3}", median(&times)),
            format!("{:.3}", common::min(&times)),
            format!("{:.3}", common::max(&times)),
            format!(
                "chunk read {:.0} + selection {:.0}",
                median(&read),
                median(&select)
            ),
        ]);
    }
    t.print(&format!(
        "(b) Request decomposition over {} rows, median of {runs} (target < 1 s); load average {}",
        num(rows as f64, 0),
        common::loadavg()
    ));
    server.kill().await;
    Ok(())
}
