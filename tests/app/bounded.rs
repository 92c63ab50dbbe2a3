//! Hostile-cardinality input stays bounded: a gzipped trace whose every kernel runs on a
//! stream of its own is analysed with memory that does not grow per stream, and ends
//! `done` with a small stored analysis that says what it pooled; an analysis that keeps
//! dying ends `failed` with a reason instead of being retried forever.

use crate::common;

use std::io::Write;

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

    // A server process of its own, so its peak RSS is this upload's alone.
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "streams").await;
    let server = common::ServerProcess::start(&url, &[]).await;
    let pid = server.pid.to_string();
    let before = common::peak_rss_mib(&pid);
    let r = reqwest::Client::new()
        .post(format!(
            "{}/api/v1/artifacts?name=streams.json.gz",
            server.base
        ))
        .bearer_auth(&token)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, reqwest::StatusCode::CREATED, "{text}");
    let id = serde_json::from_str::<serde_json::Value>(&text).unwrap()["id"]
        .as_i64()
        .unwrap();
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
        .fetch_one(&pool)
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
    let after = common::peak_rss_mib(&pid);
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
    sqlx::query(
        "INSERT INTO webhooks (url, events, secret) \
         VALUES ('http://127.0.0.1:9/hook', '{artifact.failed}', 'a-secret-of-24-characters')",
    )
    .execute(&pool)
    .await
    .unwrap();
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
    // Given up, it is announced to the endpoints that asked (and the retried one is not).
    let announced: Vec<String> = sqlx::query_scalar(
        "SELECT d.body FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(announced.len(), 1, "{announced:?}");
    assert!(announced[0].contains("artifact.failed") && announced[0].contains("stopped 3 times"));
}

/// One gzip member holding `bytes`.
fn gz_member(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A gzip file (concatenated members, as `cat a.gz b.gz` makes) inflating to `head`,
/// then `mib` MiB of `filler`, then `tail`: gigabytes inflated from a few megabytes.
fn gz_filled(head: &[u8], filler: u8, mib: usize, tail: &[u8]) -> Vec<u8> {
    let block = gz_member(&vec![filler; 16 << 20]);
    let mut out = gz_member(head);
    for _ in 0..mib / 16 {
        out.extend_from_slice(&block);
    }
    out.extend_from_slice(&gz_member(tail));
    out
}

/// The stated peak of the server while it analyses any upload.
const SERVER_PEAK_MIB: u64 = 300;

const EVENT: &str =
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}";

/// Uploads shaped to exhaust memory, through HTTP to a server process of its own: each
/// ends `done` or `failed` with a reason, and the server's peak RSS (read from /proc)
/// stays within the stated bound over all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_shapes_keep_the_server_within_its_stated_peak() {
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "rss").await;
    let server = common::ServerProcess::start(&url, &[]).await;
    let (pid, base) = (server.pid.to_string(), server.base.clone());
    let http = reqwest::Client::new();
    let idle = common::peak_rss_mib(&pid);

    let head = format!("{{\"traceEvents\": [{EVENT},");
    let tail = format!("{EVENT}]}}");
    // The plain one is streamed: 400 MiB of blanks between two events.
    let plain_blanks = 400usize << 20;
    let cases: Vec<(&str, Option<Vec<u8>>, &str)> = vec![
        ("blanks.json", None, "done"),
        (
            "blanks.json.gz",
            Some(gz_filled(head.as_bytes(), b' ', 1024, tail.as_bytes())),
            "done",
        ),
        (
            "nested.json.gz",
            Some(gz_filled(b"{\"traceEvents\": [", b'[', 256, b"")),
            "failed",
        ),
        (
            "string.json.gz",
            Some(gz_filled(
                format!("{{\"traceEvents\": [{EVENT}, {{\"name\": \"").as_bytes(),
                b'x',
                256,
                b"\"}]}",
            )),
            "failed",
        ),
        (
            "number.json.gz",
            Some(gz_filled(
                format!("{{\"traceEvents\": [{EVENT}, {{\"ts\": 1").as_bytes(),
                b'1',
                256,
                b"}]}",
            )),
            "failed",
        ),
        (
            "bench-string.json.gz",
            Some(gz_filled(
                b"{\"num_prompts\": 2, \"model_id\": \"",
                b'm',
                256,
                b"\"}",
            )),
            "failed",
        ),
    ];
    let mut worst = idle;
    for (name, body, want) in cases {
        let body = match body {
            Some(b) => reqwest::Body::from(b),
            None => {
                let head = head.clone().into_bytes();
                let tail = tail.clone().into_bytes();
                let chunk = vec![b' '; 1 << 20];
                let parts = std::iter::once(head)
                    .chain(std::iter::repeat_n(chunk, plain_blanks >> 20))
                    .chain(std::iter::once(tail))
                    .map(Ok::<_, std::io::Error>);
                reqwest::Body::wrap_stream(futures::stream::iter(parts))
            }
        };
        let r = http
            .post(format!("{base}/api/v1/artifacts?name={name}"))
            .bearer_auth(&token)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        let (state, reason) = if status.is_client_error() {
            ("failed".to_string(), text.clone())
        } else {
            assert_eq!(status, reqwest::StatusCode::CREATED, "{name}: {text}");
            let id = serde_json::from_str::<serde_json::Value>(&text).unwrap()["id"]
                .as_i64()
                .unwrap();
            let waited = std::time::Instant::now();
            loop {
                let (s, e): (String, Option<String>) =
                    sqlx::query_as("SELECT status, error FROM artifacts WHERE id = $1")
                        .bind(id)
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                if s != "queued" && s != "analyzing" {
                    break (s, e.unwrap_or_default());
                }
                assert!(waited.elapsed().as_secs() < 600, "{name}: still {s}");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        };
        let peak = common::peak_rss_mib(&pid);
        worst = worst.max(peak);
        println!("{name}: {state} ({reason:.160}); server peak RSS so far {peak} MiB");
        assert_eq!(state, want, "{name}: {reason}");
        if want == "failed" {
            assert!(
                reason.contains("larger than") || reason.contains("longer than"),
                "{name}: the reason names the cap: {reason}"
            );
        }
    }
    println!("worst server peak RSS over the hostile uploads: {worst} MiB (idle {idle} MiB)");
    assert!(
        worst <= SERVER_PEAK_MIB,
        "the server's peak RSS reached {worst} MiB (bound {SERVER_PEAK_MIB} MiB)"
    );
    drop(server);
}
