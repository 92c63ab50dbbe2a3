//! Hostile-cardinality input stays bounded: a gzipped trace whose every kernel runs on a
//! stream of its own is analysed with memory that does not grow per stream, and ends
//! `done` with a small stored analysis that says what it pooled; an analysis that keeps
//! dying ends `failed` with a reason instead of being retried forever.

mod common;

use std::io::Write;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};

/// Peak resident memory of this process so far (VmHWM), in MiB.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// The stated bound on what analysing the trace below may add to the peak RSS. Before
/// the bounds, per-stream timelines alone took 120 × 8 bytes per stream (≈ 190 MB here,
/// and 6.7 GB for a 1M-stream file), plus their JSON.
const EXTRA_PEAK_MIB: u64 = 250;

#[tokio::test]
async fn a_trace_with_a_stream_per_kernel_stays_bounded() {
    let events = 200_000;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"{\"traceEvents\": [").unwrap();
    for i in 0..events {
        if i > 0 {
            gz.write_all(b",").unwrap();
        }
        write!(
            gz,
            "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k{}\",\"pid\":0,\"tid\":{i},\"ts\":{},\
             \"dur\":3,\"args\":{{\"device\":0,\"stream\":{i},\"correlation\":{i}}}}}",
            i % 1000,
            i * 5
        )
        .unwrap();
    }
    gz.write_all(b"]}").unwrap();
    let body = gz.finish().unwrap();
    println!(
        "trace: {events} kernels on {events} streams, {} KiB gzipped",
        body.len() / 1024
    );

    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let before = peak_rss_mib();
    let req = Request::post("/api/v1/artifacts?name=streams.json.gz")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    // An inline analysis past its time budget continues in the background: wait for it.
    let started = std::time::Instant::now();
    let (status, error, size, analysis) = loop {
        let row: (
            String,
            Option<String>,
            Option<i32>,
            Option<serde_json::Value>,
        ) = sqlx::query_as(
            "SELECT status, error, octet_length(analysis::text), analysis FROM artifacts \
                 WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if row.0 != "analyzing" && row.0 != "queued" {
            break row;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "analysis still {} after 5 minutes",
            row.0
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    let after = peak_rss_mib();
    println!(
        "status {status} after {:?}; stored analysis {} bytes; peak RSS {before} → {after} MiB \
         (bound: +{EXTRA_PEAK_MIB} MiB)",
        started.elapsed(),
        size.unwrap_or(0)
    );
    assert_eq!(status, "done", "{error:?}");
    let analysis = analysis.unwrap();
    assert!(size.unwrap() < 500_000, "stored analysis {size:?} bytes");
    assert!(analysis["timeline"].as_array().unwrap().len() <= 32);
    assert!(analysis["idle"].as_array().unwrap().len() <= 32);
    let notes = analysis["notes"].to_string();
    assert!(notes.contains("other streams"), "{notes}");
    assert!(
        after.saturating_sub(before) <= EXTRA_PEAK_MIB,
        "peak RSS grew by {} MiB",
        after - before
    );
}

#[tokio::test]
async fn an_analysis_that_keeps_dying_ends_failed_with_a_reason() {
    let (pool, _) = common::fresh_db().await;
    let insert = |attempts: i32| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO artifacts (name, kind, sha256, size_bytes, gzip, status, attempts, \
                 updated_at) VALUES ('t.json', 'pytorch_trace', repeat('a', 64), 10, false, \
                 'analyzing', $1, now() - interval '10 minutes') RETURNING id",
            )
            .bind(attempts)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let once = insert(1).await;
    let thrice = insert(perfjournal::artifacts::ingest::MAX_ATTEMPTS).await;
    perfjournal::artifacts::ingest::requeue_stale(&pool)
        .await
        .unwrap();
    let state = |id: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (String, Option<String>)>(
                "SELECT status, error FROM artifacts WHERE id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(state(once).await.0, "queued", "tried again");
    let (status, error) = state(thrice).await;
    assert_eq!(status, "failed");
    assert!(error.unwrap().contains("stopped 3 times"));
}
