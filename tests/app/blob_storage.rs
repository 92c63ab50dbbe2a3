//! How uploads are kept on disk: text compressed with zstd, files compressed already as
//! they came, blobs from before compression as they are; every reader (download, the
//! Perfetto hand-off, re-analysis) gets the bytes as uploaded. And what a failure keeps:
//! a body cut mid-way nothing at all, an analysis failing deep in a file the file.

use crate::common;

use std::io::{Read, Write};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::{artifact_count, files_under};
use common::TestApp;
use serde_json::Value;
use sha2::{Digest, Sha256};

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

use common::uploads::{artifact_json as fetch, editor_app, try_upload as upload};

/// The bytes a download answers with, exactly (the client's `Reply` keeps text only).
async fn download(app: &TestApp, path: &str, token: Option<&str>) -> (StatusCode, Vec<u8>) {
    let mut req = Request::get(path);
    match token {
        Some(t) => req = req.header(header::AUTHORIZATION, format!("Bearer {t}")),
        None => {
            if let Some(c) = &app.cookie {
                req = req.header(header::COOKIE, c);
            }
        }
    }
    let res = tower::ServiceExt::oneshot(app.app.clone(), req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, bytes.to_vec())
}

/// The API download of artifact `id` answers with exactly `body`, the bytes uploaded.
async fn assert_downloads_as_uploaded(app: &TestApp, token: &str, id: i64, body: &[u8]) {
    let (status, got) = download(
        app,
        &format!("/api/v1/artifacts/{id}/download"),
        Some(token),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        sha256(&got),
        sha256(body),
        "artifact {id} downloads other bytes than were uploaded"
    );
}

/// The analysis stored on artifact `id`.
async fn stored_analysis(pool: sqlx::PgPool, id: i64) -> Value {
    sqlx::query_scalar("SELECT analysis FROM artifacts WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The files of the blob store named after this content (the blob, in any encoding).
fn blob_files(app: &TestApp, sha: &str) -> Vec<std::path::PathBuf> {
    files_under(&app.blob_dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(sha))
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A Kineto trace of `n` kernels, each launched from the CPU, on one GPU stream.
fn trace(n: usize) -> Vec<u8> {
    let mut events = Vec::with_capacity(2 * n);
    for i in 0..n {
        let ts = i as f64 * 20.0;
        events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":4,"args":{{"correlation":{i}}}}}"#,
            ts - 6.0
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"gemm_{}","pid":0,"tid":7,"ts":{ts},"dur":{},"args":{{"device":0,"stream":7,"correlation":{i}}}}}"#,
            i % 13,
            10 + i % 7
        ));
    }
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        events.join(",\n")
    )
    .into_bytes()
}

/// Per-request telemetry, `n` lines.
fn request_log(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let queue = 20.0 + (i % 50) as f64;
        let first = 1.5 + queue + 150.0;
        out.push_str(&format!(
            "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"tokenize_ms\":1.5,\"queue_wait_ms\":{queue},\"prefill_ms\":150,\"first_token_ms\":{first},\"decode_ms\":4000,\"total_ms\":{},\"prompt_tokens\":1800,\"output_tokens\":250,\"tenant\":\"t{}\"}}\n",
            1_764_400_000.0 + i as f64 * 0.25,
            first + 4000.0,
            i % 3
        ));
    }
    out.into_bytes()
}

/// A JSON trace as a person would upload it uncompressed: the real one of about 10 MB
/// when the real fixtures are at hand, else a generated one of a few MB.
fn plain_trace() -> (String, Vec<u8>) {
    if let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES") {
        let path = std::path::Path::new(&root)
            .join("pytorch_trace")
            .join("hta__nccl_parser_config__nccl_data.json.gz");
        if let Ok(gz) = std::fs::read(&path) {
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&gz[..])
                .read_to_end(&mut plain)
                .unwrap();
            return ("nccl_data.json".into(), plain);
        }
    }
    ("trace.json".into(), trace(30_000))
}

/// Runs the analysis again through the page's button and the queue; the artifact after.
async fn reanalyze(app: &mut TestApp, token: &str, id: i64) -> Value {
    let r = app
        .post_form(&format!("/artifacts/{id}/reanalyze"), &[])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(app.drain_queue().await, 1);
    fetch(app, token, id).await
}

#[tokio::test]
async fn text_uploads_are_stored_as_zstd_and_every_reader_gets_the_original_bytes() {
    let (mut app, token) = editor_app().await;
    let (trace_name, trace) = plain_trace();
    for (name, body, kind) in [
        (trace_name.as_str(), trace, "pytorch_trace"),
        ("requests.jsonl", request_log(20_000), "request_log"),
    ] {
        let r = upload(&mut app, &token, name, body.clone()).await;
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
        assert_eq!(r.json()["kind"], kind, "{name}");
        let id = r.json()["id"].as_i64().unwrap();
        app.drain_queue().await;
        let a = fetch(&mut app, &token, id).await;
        assert_eq!(a["status"], "done", "{name}: {}", a["error"]);

        // Until the compactor passes, the disk holds the file as uploaded, under the
        // hash of its bytes, and the page says what comes next.
        assert_eq!(a["blob_encoding"], "identity", "{name}");
        assert_eq!(a["compress_pending"], true, "{name}");
        let files = blob_files(&app, &sha256(&body));
        assert_eq!(files.len(), 1, "{name}: {files:?}");
        assert!(std::fs::read(&files[0]).unwrap() == body, "{name}");
        assert_downloads_as_uploaded(&app, &token, id, &body).await;
        let page = app.get(&format!("/artifacts/{id}")).await;
        let note = page.select("#stored-note").join("");
        assert!(
            note.contains("stored as uploaded until its analysis is over, then with zstd"),
            "{name}: {note:?}"
        );
        assert_eq!(app.compact_blobs().await, 1, "{name}");
        let a = fetch(&mut app, &token, id).await;
        assert_eq!(a["compress_pending"], false, "{name}");

        // The name is the hash of the bytes as uploaded; the disk holds a zstd stream.
        assert_eq!(a["sha256"], sha256(&body), "{name}");
        assert_eq!(a["size_bytes"], body.len() as i64, "{name}");
        assert_eq!(a["blob_encoding"], "zstd", "{name}");
        let files = blob_files(&app, &sha256(&body));
        assert_eq!(files.len(), 1, "{name}: {files:?}");
        assert!(
            files[0].to_string_lossy().ends_with(".zst"),
            "{name}: {files:?}"
        );
        let on_disk = std::fs::read(&files[0]).unwrap();
        assert_eq!(on_disk[..4], ZSTD_MAGIC, "{name}");
        assert_eq!(a["stored_bytes"], on_disk.len() as i64, "{name}");
        assert!(
            on_disk.len() * 4 < body.len(),
            "{name}: {} bytes on disk for {} uploaded",
            on_disk.len(),
            body.len()
        );
        println!(
            "{name}: {} bytes uploaded, {} on disk ({:.1}%)",
            body.len(),
            on_disk.len(),
            on_disk.len() as f64 * 100.0 / body.len() as f64
        );

        // The API's download and the page's (which the Perfetto button fetches) give
        // the bytes as uploaded.
        let (status, got) = download(
            &app,
            &format!("/api/v1/artifacts/{id}/download"),
            Some(&token),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(got.len(), body.len(), "{name}");
        assert_eq!(sha256(&got), sha256(&body), "{name}: API download");
        let (status, got) = download(&app, &format!("/artifacts/{id}/download"), None).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(sha256(&got), sha256(&body), "{name}: page download");

        // The page says what the disk holds, with its unit.
        let page = app.get(&format!("/artifacts/{id}")).await;
        let note = page.select("#stored-note").join("");
        assert!(
            note.contains("stored as zstd,")
                && note.contains("B on disk (")
                && note.contains("% of the original"),
            "{name}: {note:?}"
        );

        // Analysing again reads the compressed blob and comes to the same result.
        let again = reanalyze(&mut app, &token, id).await;
        assert_eq!(again["status"], "done", "{name}: {}", again["error"]);
        assert_eq!(again["analysis"], a["analysis"], "{name}");
        assert_eq!(again["progress_bytes"], a["size_bytes"], "{name}");
    }

    // The same content again shares the blob once compressed, and both rows name it.
    let before = files_under(&app.blob_dir).len();
    let body = request_log(20_000);
    let r = upload(&mut app, &token, "again.jsonl", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    assert_eq!(app.compact_blobs().await, 1);
    assert_eq!(files_under(&app.blob_dir).len(), before);
    assert_eq!(fetch(&mut app, &token, id).await["blob_encoding"], "zstd");
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
}

/// Uploads a request log and runs its analysis; its id.
async fn uploaded_and_analyzed(app: &mut TestApp, token: &str, body: &[u8]) -> i64 {
    let r = upload(app, token, "requests.jsonl", body.to_vec()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    app.drain_queue().await;
    r.json()["id"].as_i64().unwrap()
}

#[tokio::test]
async fn a_reader_that_named_the_uncompressed_blob_gets_the_compressed_one() {
    // A download or an analysis reads the row, then opens the blob; the compactor may
    // switch the row and remove the uncompressed file in between.
    let (mut app, token) = editor_app().await;
    let body = request_log(5_000);
    let id = uploaded_and_analyzed(&mut app, &token, &body).await;
    let first = fetch(&mut app, &token, id).await;
    assert_eq!(first["blob_encoding"], "identity");
    assert_eq!(app.compact_blobs().await, 1);
    // The row as the reader saw it before the switch.
    sqlx::query("UPDATE artifacts SET blob_encoding = 'identity' WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let files = blob_files(&app, &sha256(&body));
    assert_eq!(files.len(), 1, "only the compressed blob: {files:?}");
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
    let again = reanalyze(&mut app, &token, id).await;
    assert_eq!(again["status"], "done", "{}", again["error"]);
    assert_eq!(again["analysis"], first["analysis"]);
}

#[tokio::test]
async fn a_stored_file_that_no_longer_matches_its_hash_is_left_as_it_is() {
    let (mut app, token) = editor_app().await;
    let body = request_log(5_000);
    let id = uploaded_and_analyzed(&mut app, &token, &body).await;
    // A disk fault (or a hand) changed the file after it was stored.
    let file = blob_files(&app, &sha256(&body)).pop().unwrap();
    let mut damaged = body.clone();
    damaged[100] ^= 1;
    std::fs::write(&file, &damaged).unwrap();
    assert_eq!(app.compact_blobs().await, 0);
    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["blob_encoding"], "identity");
    assert_eq!(a["compress_pending"], false, "not tried again");
    // Nothing was written under another name, and the file is not touched.
    assert_eq!(files_under(&app.blob_dir).len(), 1);
    assert!(std::fs::read(&file).unwrap() == damaged);
}

#[tokio::test]
async fn an_upload_compressed_already_is_stored_as_it_came() {
    let (mut app, token) = editor_app().await;
    let body = gzip(&request_log(5_000));
    let r = upload(&mut app, &token, "requests.jsonl.gz", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["status"], "done", "{}", a["error"]);
    assert_eq!(a["blob_encoding"], "identity");
    assert_eq!(a["stored_bytes"], a["size_bytes"]);
    let files = blob_files(&app, &sha256(&body));
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].file_name().unwrap().to_string_lossy(),
        sha256(&body),
        "no suffix: the file is the upload"
    );
    assert!(std::fs::read(&files[0]).unwrap() == body);
    let (_, got) = download(
        &app,
        &format!("/api/v1/artifacts/{id}/download"),
        Some(&token),
    )
    .await;
    assert!(got == body);
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert!(page.select("#stored-note").is_empty(), "nothing to say");
}

#[tokio::test]
async fn a_blob_stored_before_compression_still_downloads_analyzes_and_goes_with_its_row() {
    let (mut app, token) = editor_app().await;
    let body = request_log(3_000);
    let r = upload(&mut app, &token, "old.jsonl", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    app.compact_blobs().await;
    let first = fetch(&mut app, &token, id).await;
    // Made into what a server before compression left: the file as uploaded under its
    // hash, and a row that knows nothing of encodings.
    let sha = sha256(&body);
    let zst = blob_files(&app, &sha).pop().unwrap();
    std::fs::write(zst.with_file_name(&sha), &body).unwrap();
    std::fs::remove_file(&zst).unwrap();
    sqlx::query("UPDATE artifacts SET blob_encoding = DEFAULT, stored_bytes = NULL WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();

    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["blob_encoding"], "identity");
    assert_eq!(a["stored_bytes"], body.len() as i64);
    let (status, got) = download(
        &app,
        &format!("/api/v1/artifacts/{id}/download"),
        Some(&token),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sha256(&got), sha);
    let again = reanalyze(&mut app, &token, id).await;
    assert_eq!(again["status"], "done", "{}", again["error"]);
    assert_eq!(again["analysis"], first["analysis"]);

    // Deleting the artifact takes its blob, in whichever encoding it is stored.
    let r = app
        .api("DELETE", &format!("/api/v1/artifacts/{id}"), &token, None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert!(files_under(&app.blob_dir).is_empty());
}

#[tokio::test]
async fn a_body_cut_after_megabytes_leaves_no_row_no_blob_and_no_temporary_file() {
    let (mut app, token) = editor_app().await;
    // Several MiB of text (so the compressor has had several groups) and then the
    // connection breaks.
    let log = request_log(40_000);
    assert!(log.len() > 4 << 20);
    let mut chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        log.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    chunks.push(Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "client went away",
    )));
    let req = Request::post("/api/v1/artifacts?name=cut.jsonl")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.body.contains("nothing was stored"), "{}", r.body);
    assert_eq!(artifact_count(&app).await, 0);
    let left = files_under(&app.blob_dir);
    assert!(left.is_empty(), "files left under the blob dir: {left:?}");
    // The rows stored while the body arrived were never committed.
    assert_no_load_left(&app).await;
}

/// Transactions open on the test's database, other than the asking one.
async fn open_transactions(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND xact_start IS NOT NULL
           AND pid <> pg_backend_pid()",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// No load of request rows is left open or committed: no transaction still open on
/// the database (waited for: a load rolls back once its upload is given up), no chunk of
/// rows stored.
async fn assert_no_load_left(app: &TestApp) {
    let mut open = -1i64;
    for _ in 0..100 {
        open = open_transactions(&app.pool).await;
        if open == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        open, 0,
        "a transaction is still open after the upload ended"
    );
    let chunks: i64 = sqlx::query_scalar("SELECT count(*) FROM request_column_chunks")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(chunks, 0);
    let entries: i64 = sqlx::query_scalar("SELECT count(*) FROM request_columns")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(entries, 0);
}

#[tokio::test]
async fn a_big_request_log_is_loaded_while_it_arrives_as_from_its_stored_file() {
    let (mut app, token) = editor_app().await;
    let n = 170_000;
    let body = request_log(n);
    assert!(body.len() as u64 > perfjournal::artifacts::INLINE_ANALYSIS_BYTES);
    let r = upload(&mut app, &token, "big.jsonl", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let loaded = settled(&mut app, &token, id).await;
    assert_eq!(loaded["status"], "done", "{loaded}");
    // No worker took it: the rows were stored as the body arrived.
    assert_eq!(app.drain_queue().await, 0, "no job was left for a worker");
    let pool = app.pool.clone();
    let rows = |id: i64| {
        let pool = pool.clone();
        async move { common::uploads::stored_queue_sum(&pool, id).await }
    };
    let analysis = |id: i64| stored_analysis(pool.clone(), id);
    let (count, queue_sum) = rows(id).await;
    assert_eq!(count, n as i64);
    let expected: f64 = (0..n).map(|i| 20.0 + (i % 50) as f64).sum();
    assert!(
        (queue_sum - expected).abs() < 1e-6,
        "{queue_sum} vs {expected}"
    );
    let first = analysis(id).await;
    assert_eq!(first["rows_total"], n as i64, "{first}");
    // The decomposition page reads the same rows.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    // Loaded again from the stored (compressed) file: the same rows, the same numbers.
    let again = reanalyze(&mut app, &token, id).await;
    assert_eq!(again["status"], "done", "{again}");
    assert_eq!(rows(id).await, (count, queue_sum));
    assert_eq!(analysis(id).await, first);
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
}

#[tokio::test]
async fn a_request_log_arriving_too_slowly_gives_up_its_open_load_and_is_loaded_from_the_stored_file(
) {
    use futures::StreamExt;
    // Rows may go to the database beside the upload for one second only.
    let mut app = common::spawn_app_with(perfjournal::config::Config {
        streamed_load_budget: std::time::Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let n = 170_000;
    let body = request_log(n);
    assert!(body.len() as u64 > perfjournal::artifacts::INLINE_ANALYSIS_BYTES);
    // The first MiB (enough to start the load), then nothing for three seconds, then the rest.
    let (first, rest) = body.split_at(1 << 20);
    let (first, rest) = (first.to_vec(), rest.to_vec());
    let chunks = futures::stream::iter([first, rest]).then(|chunk| async move {
        if chunk.len() != 1 << 20 {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        }
        Ok::<_, std::io::Error>(chunk)
    });
    let req = Request::post("/api/v1/artifacts?name=trickle.jsonl")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from_stream(chunks))
        .unwrap();
    let pool = app.pool.clone();
    let open_during_pause = async move {
        // Past the budget, while the body is still paused: no transaction is left open.
        tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
        open_transactions(&pool).await
    };
    let (r, open) = tokio::join!(app.send(req), open_during_pause);
    assert_eq!(
        open, 0,
        "the load beside a paused body kept a transaction open past its budget"
    );
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let loaded = settled(&mut app, &token, id).await;
    assert_eq!(loaded["status"], "done", "{loaded}");
    // Loaded from the stored file by the upload itself, not left to a worker.
    assert_eq!(app.drain_queue().await, 0, "no job was left for a worker");
    let (count, queue_sum) = common::uploads::stored_queue_sum(&app.pool, id).await;
    assert_eq!(count, n as i64);
    let expected: f64 = (0..n).map(|i| 20.0 + (i % 50) as f64).sum();
    assert!(
        (queue_sum - expected).abs() < 1e-6,
        "{queue_sum} vs {expected}"
    );
    assert_eq!(
        stored_analysis(app.pool.clone(), id).await["rows_total"],
        n as i64
    );
    // Only the artifact's own rows are left: the given-up load was rolled back.
    let stored: Vec<i64> = sqlx::query_scalar("SELECT artifact_id FROM request_columns")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, vec![id]);
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
}

#[tokio::test]
async fn a_request_log_failing_deep_in_its_body_keeps_the_file_and_loads_no_row() {
    let (mut app, token) = editor_app().await;
    let mut body = request_log(170_000);
    // A line near the end that is not JSON.
    let at = body.len() - (1 << 20);
    let at = at + body[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    body.splice(at..at, b"{\"request_id\": oops}\n".iter().copied());
    let line = body[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let r = upload(&mut app, &token, "broken.jsonl", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed", "{a}");
    let error = a["error"].as_str().unwrap();
    assert!(error.contains(&format!("line {line}")), "{error}");
    println!("failed as: {error}");
    assert_no_load_left(&app).await;
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
}

/// The artifact once its analysis has ended (polled; at most a minute).
async fn settled(app: &mut common::TestApp, token: &str, id: i64) -> serde_json::Value {
    for _ in 0..600 {
        let a = fetch(app, token, id).await;
        if a["status"] != "analyzing" && a["status"] != "queued" {
            return a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("artifact {id} is still being analyzed after a minute");
}

#[tokio::test]
async fn an_analysis_failing_deep_in_a_big_file_keeps_the_file_and_says_where() {
    let (mut app, token) = editor_app().await;
    // A trace over the inline limit (so it is stored, then analyzed in the background)
    // whose JSON breaks a few MB before its end.
    let mut body = trace(260_000);
    assert!(body.len() as u64 > perfjournal::artifacts::INLINE_ANALYSIS_BYTES);
    let break_at = body.len() - (3 << 20);
    let break_at = break_at + body[break_at..].iter().position(|&b| b == b'{').unwrap();
    body.splice(break_at..break_at + 1, b"{\"ph\":}".iter().copied());
    let r = upload(&mut app, &token, "broken.json", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // The analysis ran on the bytes as they arrived: the answer says `analyzing`, and
    // the failure is recorded without a worker taking the job.
    assert_eq!(r.json()["status"], "analyzing");
    let id = r.json()["id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(app.drain_queue().await, 0, "no job was left for a worker");
    assert_eq!(a["status"], "failed", "{a}");
    let error = a["error"].as_str().unwrap().to_string();
    // The reason names where: a byte offset near the break, far into the file.
    let offset: u64 = error
        .split("byte ")
        .nth(1)
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("the reason names no byte offset: {error}"));
    assert!(
        offset + (64 << 10) >= break_at as u64 && offset <= break_at as u64 + (64 << 10),
        "the break is at byte {break_at}, the reason says {offset}: {error}"
    );
    println!("failed as: {error}");

    // The file is kept, compressed once the analysis failed, and downloads as uploaded.
    assert_eq!(app.compact_blobs().await, 1);
    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["blob_encoding"], "zstd");
    assert_downloads_as_uploaded(&app, &token, id, &body).await;
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Download the original"));
}

#[tokio::test]
async fn a_big_trace_is_analyzed_while_it_arrives_as_from_its_stored_file() {
    let (mut app, token) = editor_app().await;
    let body = trace(260_000);
    assert!(body.len() as u64 > perfjournal::artifacts::INLINE_ANALYSIS_BYTES);
    let r = upload(&mut app, &token, "big.json", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.json()["status"], "analyzing");
    let id = r.json()["id"].as_i64().unwrap();
    let streamed = settled(&mut app, &token, id).await;
    assert_eq!(streamed["status"], "done", "{streamed}");
    let analysis = |id: i64| stored_analysis(app.pool.clone(), id);
    let first = analysis(id).await;
    assert!(first["temporal"].is_array(), "{first}");
    // Analyzed again from the stored (compressed) file: the same numbers.
    sqlx::query("UPDATE artifacts SET status = 'queued', analysis = NULL WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(app.drain_queue().await, 1);
    assert_eq!(analysis(id).await, first);
}
