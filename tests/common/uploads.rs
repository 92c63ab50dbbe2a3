//! Uploading generated or fixture files through the API and waiting for nothing:
//! small files are analyzed before the upload answers.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};

use super::TestApp;
use serde_json::json;

/// A fresh app with an admin, "ada", and her API token.
pub async fn editor_app() -> (TestApp, String) {
    let mut app = super::spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

/// Sends `body` as an upload named `name`, whatever the answer.
pub async fn try_upload(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> super::Reply {
    let req = Request::post(format!("/api/v1/artifacts?name={name}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .unwrap();
    app.send(req).await
}

/// An artifact as the API gives it (asserts 200).
pub async fn artifact_json(app: &mut TestApp, token: &str, id: i64) -> serde_json::Value {
    let r = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.json()
}

/// Uploads `body` as `name` with a bearer token; asserts it was stored (201).
pub async fn upload(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> super::Reply {
    let r = try_upload(app, token, name, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
    r
}

/// Uploads `body` as `name` with a bearer token; asserts it was analyzed, returns its id.
pub async fn upload_analyzed(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> i64 {
    let r = upload(app, token, name, body).await;
    assert_eq!(r.json()["status"], "done", "{}", r.body);
    r.json()["id"].as_i64().unwrap()
}

/// Every file under a directory, at any depth (blobs and temporary files alike).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// How many artifact rows the database holds.
pub async fn artifact_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// A vLLM benchmark-suite summary table: one test at five rates, latency turning up
/// after 6 req/s.
pub fn summary_table() -> Vec<u8> {
    summary_table_of(&[
        ("2", 2.0, 100.0),
        ("4", 3.9, 110.0),
        ("6", 5.8, 120.0),
        ("8", 6.3, 200.0),
        ("inf", 6.4, 2400.0),
    ])
}

/// A summary table of one test with rows (qps, achieved req/s, p99 TTFT ms).
pub fn summary_table_of(rows: &[(&str, f64, f64)]) -> Vec<u8> {
    let row = |qps: &str, tput: f64, p99: f64| {
        json!({
            "Test name": format!("serving_llama8B_tp1_sharegpt_qps_{qps}"),
            "GPU": "H100", "# of req.": 200,
            "Tput (req/s)": tput, "Output Tput (tok/s)": tput * 190.0,
            "Mean TTFT (ms)": p99 * 0.5, "Median TTFT (ms)": p99 * 0.4, "P99 TTFT (ms)": p99,
            "Mean TPOT (ms)": 21.0, "Median TPOT (ms)": 20.0, "P99 TPOT (ms)": 33.0,
            "Mean ITL (ms)": 20.0, "Median ITL (ms)": 18.0, "P99 ITL (ms)": 55.0
        })
    };
    let rows: Vec<serde_json::Value> = rows.iter().map(|(q, t, p)| row(q, *t, *p)).collect();
    serde_json::to_vec_pretty(&rows).unwrap()
}

/// A rank of a synthetic decode run: `steps` ProfilerSteps of 1 ms, each a compute
/// kernel of `compute_us` and then an all-reduce of `comm_us` (2 MiB of bf16).
pub fn rank_trace(rank: i64, world: i64, compute_us: f64, comm_us: f64, steps: u64) -> Vec<u8> {
    let mut ev = Vec::new();
    for k in 0..steps {
        let t0 = 1000.0 * k as f64;
        let (c1, c2) = (2 * k + 1, 2 * k + 2);
        ev.push(json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{k}"), "pid": 1, "tid": 1, "ts": t0, "dur": 1000.0}));
        ev.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 1.0, "dur": 2.0, "args": {"correlation": c1}}));
        ev.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 4.0, "dur": 2.0, "args": {"correlation": c2}}));
        ev.push(json!({"ph": "X", "cat": "kernel", "name": "ampere_bf16_gemm", "pid": 0, "tid": 7, "ts": t0 + 10.0, "dur": compute_us, "args": {"device": 0, "stream": 7, "correlation": c1}}));
        ev.push(json!({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)", "pid": 0, "tid": 7, "ts": t0 + 10.0 + compute_us, "dur": comm_us,
            "args": {"device": 0, "stream": 7, "correlation": c2, "Collective name": "allreduce", "In msg nelems": 1048576, "dtype": "BFloat16"}}));
    }
    json!({"distributedInfo": {"rank": rank, "world_size": world, "backend": "nccl"}, "traceEvents": ev})
        .to_string()
        .into_bytes()
}

/// Runs the test build of the `perfjournal` binary with `args` (a client
/// command such as `upload` against a test server) off the async threads, so the test
/// server keeps answering it; its exit status and output.
pub async fn run_cli(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// A multipart body of `(field, file name, bytes)` parts (no file name: a text field).
pub fn multipart(parts: &[(&str, Option<&str>, Vec<u8>)]) -> (String, Vec<u8>) {
    let boundary = "pjSetBoundary42";
    let mut body = Vec::new();
    for (field, file, bytes) in parts {
        let disposition = match file {
            Some(f) => format!("form-data; name=\"{field}\"; filename=\"{f}\""),
            None => format!("form-data; name=\"{field}\""),
        };
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Request rows stored for an artifact: the rows of its column chunks (0 when it has none).
pub async fn stored_rows(pool: &sqlx::PgPool, id: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT coalesce(sum(rows), 0)::bigint FROM request_column_chunks WHERE artifact_id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The request rows stored for an artifact, read back from its chunks: how many, and the
/// sum of their queue waits (ms).
pub async fn stored_queue_sum(pool: &sqlx::PgPool, id: i64) -> (i64, f64) {
    let chunks = perfjournal::artifacts::columns::load_all(pool, id)
        .await
        .unwrap();
    let rows = chunks.iter().map(|c| c.rows() as i64).sum();
    let queue = chunks
        .iter()
        .flat_map(|c| c.iter())
        .filter_map(|r| r.queue_wait_ms())
        .sum();
    (rows, queue)
}

/// The artifact's rows in `request_columns` (its one entry, or none) and in
/// `request_column_chunks` (its chunks): `table` is one of the two.
pub async fn stored_entries(pool: &sqlx::PgPool, table: &str, id: i64) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {table} WHERE artifact_id = $1"
    ))
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}
