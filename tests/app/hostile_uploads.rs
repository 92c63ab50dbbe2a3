//! Hostile uploads: content built to break the ingest path. Each one ends in a clear 4xx
//! naming the problem, or in an artifact that settles `failed` with its reason; never a
//! 5xx, never an artifact left queued or analyzing, never a panic's text, and a cut-off
//! upload leaves no row, no blob and no temporary file.

use crate::common;

use std::io::Write;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::{artifact_count, files_under};
use common::TestApp;
use tokio::io::AsyncWriteExt;

use common::uploads::{editor_app, try_upload as upload};

fn no_panic_text(what: &str, body: &str) {
    let lower = body.to_ascii_lowercase();
    assert!(
        !lower.contains("panick") && !lower.contains("rust_backtrace") && !lower.contains(".rs:"),
        "{what}: internal text reached the client: {body}"
    );
}

/// How a hostile upload ended.
#[derive(Debug)]
enum Outcome {
    /// Refused at the door: status and the error message.
    Refused(StatusCode, String),
    /// Stored, then analysis ended with this status and reason.
    Settled(String, Option<String>),
}

/// Uploads, then runs the analysis queue to the end; asserts the result is terminal and
/// clean, and returns it.
async fn outcome(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> Outcome {
    let r = upload(app, token, name, body).await;
    no_panic_text(name, &r.body);
    assert!(
        !r.status.is_server_error(),
        "{name}: {} {}",
        r.status,
        r.body
    );
    if r.status.is_client_error() {
        let json = r.json();
        let message = json["error"]["fields"][0]["message"]
            .as_str()
            .or(json["error"]["message"].as_str())
            .unwrap_or_default();
        // The file's own name leads the message; the reason is what follows.
        let prefix = format!("{name}: ");
        let message = message.strip_prefix(&prefix).unwrap_or(message).to_string();
        assert!(
            !message.is_empty(),
            "{name}: a refusal says why: {}",
            r.body
        );
        println!("{name}: refused {} — {message}", r.status);
        return Outcome::Refused(r.status, message);
    }
    assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    let a = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), token, None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    no_panic_text(name, &a.body);
    let doc = a.json();
    let status = doc["status"].as_str().unwrap().to_string();
    assert!(
        !["queued", "analyzing"].contains(&status.as_str()),
        "{name}: left {status} after the queue ran dry"
    );
    let error = doc["error"].as_str().map(str::to_string);
    if status == "failed" {
        assert!(
            error.as_deref().is_some_and(|e| !e.trim().is_empty()),
            "{name}: failed without a reason: {doc}"
        );
    }
    // The artifact's page shows it without a server error either.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert!(
        !page.status.is_server_error(),
        "{name}: page {}",
        page.status
    );
    no_panic_text(name, &page.body);
    println!(
        "{name}: {status} — {}",
        error.as_deref().unwrap_or("no error")
    );
    Outcome::Settled(status, error)
}

/// Refused with a 4xx, or stored and failed with a reason mentioning one of `words`.
fn refused_or_failed(name: &str, o: &Outcome, words: &[&str]) {
    let text = match o {
        Outcome::Refused(status, m) => format!("{status}: {m}"),
        Outcome::Settled(s, e) if s == "failed" => e.clone().unwrap_or_default(),
        other => panic!("{name}: expected a refusal or a failure, got {other:?}"),
    };
    let lower = text.to_ascii_lowercase();
    assert!(
        words.iter().any(|w| lower.contains(w)),
        "{name}: the reason should mention one of {words:?}: {text}"
    );
}

fn request_line(i: usize, tenant: &[u8]) -> Vec<u8> {
    let mut line = format!(
        "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"queue_wait_ms\":20,\"prefill_ms\":150,\"first_token_ms\":171,\"decode_ms\":4000,\"total_ms\":4173,\"prompt_tokens\":1800,\"output_tokens\":250,\"model_version\":\"m@1\",\"region\":\"eu\",\"tenant\":\"",
        1_764_400_000 + i
    )
    .into_bytes();
    line.extend_from_slice(tenant);
    line.extend_from_slice(b"\"}\n");
    line
}

fn request_log(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| request_line(i, b"chat")).collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[tokio::test]
async fn a_truncated_gzip_is_refused_or_fails_saying_so() {
    let (mut app, token) = editor_app().await;
    let whole = gzip(&request_log(2000));
    let cut = whole[..whole.len() / 2].to_vec();
    let o = outcome(&mut app, &token, "cut.jsonl.gz", cut).await;
    refused_or_failed(
        "truncated gzip",
        &o,
        &["gzip", "compress", "truncat", "unexpected end", "eof"],
    );
}

#[tokio::test]
async fn random_bytes_are_not_taken_for_a_known_format() {
    let (mut app, token) = editor_app().await;
    // A fixed xorshift stream: the same "random" bytes on every run.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..256 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    for name in ["noise.bin", "noise.jsonl", "noise.json.gz"] {
        match outcome(&mut app, &token, name, bytes.clone()).await {
            // Unrecognised content is kept as a file and says it was not analyzed.
            Outcome::Settled(s, _) if s == "not_analyzed" => {}
            o => refused_or_failed(name, &o, &["line", "json", "format", "gzip", "utf-8"]),
        }
    }
}

#[tokio::test]
async fn a_line_longer_than_the_line_limit_fails_naming_the_limit() {
    let (mut app, token) = editor_app().await;
    let limit = perfjournal::core::analyze::request_log::MAX_LINE_BYTES;
    let mut body = request_log(3);
    body.extend_from_slice(b"{\"request_id\":\"");
    body.extend(std::iter::repeat_n(b'a', limit + 1024));
    // No closing quote, no newline: the line never ends.
    let o = outcome(&mut app, &token, "long.jsonl", body).await;
    refused_or_failed("huge line", &o, &["line 4", "longer", "limit", "too long"]);
}

#[tokio::test]
async fn invalid_utf8_in_any_text_field_is_refused_naming_the_line() {
    let (mut app, token) = editor_app().await;
    for field in ["request_id", "tenant", "model_version", "region"] {
        let mut body = request_log(2);
        let good = String::from_utf8(request_line(2, b"chat")).unwrap();
        let needle = format!("\"{field}\":\"");
        let at = good.find(&needle).unwrap() + needle.len();
        let mut bad = good.as_bytes()[..at].to_vec();
        bad.extend_from_slice(b"\xff\xfe\xc3(");
        bad.extend_from_slice(&good.as_bytes()[at..]);
        body.extend_from_slice(&bad);
        let name = format!("utf8-{field}.jsonl");
        let o = outcome(&mut app, &token, &name, body).await;
        refused_or_failed(&name, &o, &["line 3", "utf-8", "utf8"]);
    }
}

#[tokio::test]
async fn nul_bytes_in_text_fields_are_refused_or_fail_with_a_reason() {
    let (mut app, token) = editor_app().await;
    // A raw NUL byte inside a string (a control character JSON forbids): the detector
    // takes NUL for binary content, so the file is kept unanalyzed and says why.
    let mut raw = request_log(2);
    raw.extend(request_line(2, b"ch\0at"));
    match outcome(&mut app, &token, "nul-raw.jsonl", raw).await {
        Outcome::Settled(s, Some(why)) if s == "not_analyzed" => {
            assert!(why.contains("none of the supported kinds"), "{why}")
        }
        o => refused_or_failed("raw NUL", &o, &["line 3", "control", "nul"]),
    }
    // … and the escaped form, valid JSON that PostgreSQL text cannot hold.
    let mut escaped = request_log(2);
    escaped.extend(request_line(2, b"ch\\u0000at"));
    // The reader refuses it naming the line and the field.
    match outcome(&mut app, &token, "nul-escaped.jsonl", escaped).await {
        Outcome::Refused(status, m) => {
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{m}");
            assert!(
                m.contains("line 3") && m.contains("tenant") && m.contains("NUL"),
                "{m}"
            );
        }
        o => panic!("escaped NUL: expected a 422 naming line 3 and tenant, got {o:?}"),
    }
    // A file of NUL bytes only.
    match outcome(&mut app, &token, "zeros.jsonl", vec![0u8; 4096]).await {
        Outcome::Settled(s, _) if s == "not_analyzed" => {}
        o => refused_or_failed("NUL file", &o, &["line", "json", "nul", "format"]),
    }
}

#[tokio::test]
async fn one_byte_over_the_upload_limit_is_413_and_the_limit_itself_is_accepted() {
    let limit = 4096;
    let config = perfjournal::config::Config {
        upload_limit: limit,
        ..perfjournal::config::Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let mut body = request_log(40);
    body.truncate(limit as usize);
    // Exactly the limit: stored (whatever its truncated last line makes of the analysis).
    let at = upload(&mut app, &token, "at-limit.jsonl", body.clone()).await;
    assert!(
        at.status == StatusCode::CREATED || at.status == StatusCode::UNPROCESSABLE_ENTITY,
        "{} {}",
        at.status,
        at.body
    );
    let before = artifact_count(&app).await;
    let blobs_before = files_under(&app.blob_dir).len();
    body.push(b'\n');
    let over = upload(&mut app, &token, "over.jsonl", body).await;
    assert_eq!(over.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", over.body);
    let message = over.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("4096"), "the limit is named: {message}");
    assert_eq!(artifact_count(&app).await, before);
    assert_eq!(files_under(&app.blob_dir).len(), blobs_before);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_upload_leaves_no_row_blob_or_temp_file() {
    let (app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;

    // Promise 32 MiB, send 3 MiB of a real request log, then hang up.
    let declared = 32usize << 20;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/artifacts?name=cut.jsonl HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {declared}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let log = request_log(20_000);
    let mut sent = 0usize;
    while sent < 3 << 20 {
        let n = log.len().min((3 << 20) - sent);
        stream.write_all(&log[..n]).await.unwrap();
        sent += n;
    }
    stream.flush().await.unwrap();
    // The server is writing the body to a temporary file when the client goes.
    let mut during = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        during = files_under(&app.blob_dir);
        if !during.is_empty() {
            break;
        }
    }
    assert!(
        during.iter().any(|p| p.to_string_lossy().contains("tmp")),
        "the upload is being written to a temporary file: {during:?}"
    );
    drop(stream);

    // Give the server a moment to notice and clean up, then look.
    let mut left = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = files_under(&app.blob_dir);
        if left.is_empty() {
            break;
        }
    }
    assert!(left.is_empty(), "files left under the blob dir: {left:?}");
    assert_eq!(artifact_count(&app).await, 0, "no artifact row");
    server.abort();
}

/// The page's multipart form: a file past the limit, a body that stops before its closing
/// boundary, and a body that is not multipart at all each get a 4xx page (no 5xx, no
/// internals) and keep nothing.
#[tokio::test]
async fn hostile_page_form_uploads_are_refused_and_keep_nothing() {
    let config = perfjournal::config::Config {
        upload_limit: 4096,
        ..perfjournal::config::Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let csrf = app.csrf().await;
    let boundary = "HostileBoundary42";
    let part = |content: &[u8]| {
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"requests.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(content);
        body
    };
    let mut over = part(&request_log(60));
    over.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let cut = part(&request_log(5));
    let cases: Vec<(&str, String, Vec<u8>)> = vec![
        (
            "over the limit",
            format!("multipart/form-data; boundary={boundary}"),
            over,
        ),
        (
            "no closing boundary",
            format!("multipart/form-data; boundary={boundary}"),
            cut,
        ),
        (
            "not multipart",
            format!("multipart/form-data; boundary={boundary}"),
            b"\x00\x01garbage without any boundary".to_vec(),
        ),
    ];
    for (what, content_type, body) in cases {
        let req = Request::post(format!("/artifacts?_csrf={csrf}"))
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap();
        let r = app.send(req).await;
        let message = r.select(".message").join(" ");
        println!("page form, {what}: {} — {message}", r.status);
        assert!(
            r.status.is_client_error(),
            "{what}: {} {}",
            r.status,
            r.body
        );
        assert!(!message.is_empty(), "{what}: the page says what went wrong");
        no_panic_text(what, &r.body);
        assert_eq!(artifact_count(&app).await, 0, "{what}: no row");
        assert!(files_under(&app.blob_dir).is_empty(), "{what}: no file");
    }
}

/// The largest finite f64, as tools print it.
const F64_MAX: &str = "1.7976931348623157e308";

/// One small file of each kind holding `x` where a number belongs.
fn files_holding(x: &str) -> Vec<(String, Vec<u8>)> {
    let trace = format!(
        "{{\"schemaVersion\": 1, \"traceEvents\": [\
         {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 0.0, \"dur\": 5.0, \"args\": {{\"correlation\": 1}}}},\
         {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 10.0, \"dur\": {x}, \"args\": {{\"correlation\": 1}}}}]}}"
    );
    let requests = format!(
        "{{\"request_id\":\"r1\",\"arrival_ts\":1764400000,\"queue_wait_ms\":20,\"prefill_ms\":150,\"first_token_ms\":171,\"decode_ms\":{x},\"total_ms\":4173,\"prompt_tokens\":1800,\"output_tokens\":250}}\n\
         {{\"request_id\":\"r2\",\"arrival_ts\":1764400001,\"queue_wait_ms\":20,\"prefill_ms\":150,\"first_token_ms\":171,\"decode_ms\":4000,\"total_ms\":4173,\"prompt_tokens\":1800,\"output_tokens\":250}}\n"
    );
    let bench = format!(
        "{{\"backend\": \"vllm\", \"num_prompts\": 2, \"completed\": 2, \"failed\": 0, \"duration\": 2.0,\
         \"request_throughput\": {x}, \"output_throughput\": 20.0, \"input_lens\": [100, 100], \"output_lens\": [10, 10],\
         \"ttfts\": [0.1, {x}], \"itls\": [[0.01, {x}], [0.02]], \"errors\": [\"\", \"\"]}}"
    );
    let prom = format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} {x}\n\
         # TYPE vllm:time_to_first_token_seconds histogram\n\
         vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} 5\nvllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} 10\n\
         vllm:time_to_first_token_seconds_count 10\nvllm:time_to_first_token_seconds_sum {x}\n"
    );
    let nsys = format!(
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
         60.0,{x},3,200,200,100,300,50,gemm_kernel\n40.0,400,4,100,100,90,110,5,flash\n"
    );
    let ncu = format!(
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"{x}\"\n"
    );
    let smi = format!(
        "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n\
         2025/11/29 10:00:00.000, 0, 90 %, {x} MiB, 300 W\n2025/11/29 10:00:01.000, 0, 80 %, 100 MiB, 310 W\n"
    );
    let sweep = format!(
        "[{{\"Test name\": \"serving_llama8B_tp1_sharegpt_qps_2\", \"Tput (req/s)\": {x}, \"Output Tput (tok/s)\": 380,\
         \"Mean TTFT (ms)\": 50, \"Median TTFT (ms)\": 40, \"P99 TTFT (ms)\": {x}, \"Median TPOT (ms)\": 20, \"P99 TPOT (ms)\": 33}},\
         {{\"Test name\": \"serving_llama8B_tp1_sharegpt_qps_4\", \"Tput (req/s)\": 3.9, \"Output Tput (tok/s)\": 700,\
         \"Mean TTFT (ms)\": 55, \"Median TTFT (ms)\": 44, \"P99 TTFT (ms)\": 110, \"Median TPOT (ms)\": 21, \"P99 TPOT (ms)\": 34}}]"
    );
    [
        ("trace.json", trace),
        ("requests.jsonl", requests),
        ("bench.json", bench),
        ("metrics.txt", prom),
        ("kern.csv", nsys),
        ("ncu.csv", ncu),
        ("smi.csv", smi),
        ("sweep.json", sweep),
    ]
    .into_iter()
    .map(|(n, b)| (n.to_string(), b.into_bytes()))
    .collect()
}

/// The pages and lists that every user opens answer without a server error.
async fn lists_still_answer(app: &mut TestApp, token: &str, what: &str) {
    for path in ["/artifacts", "/comparisons"] {
        let r = app.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{what}: {path}: {}", r.body);
    }
    let r = app.api("GET", "/api/v1/artifacts", token, None).await;
    assert_eq!(r.status, StatusCode::OK, "{what}: API list: {}", r.body);
}

#[tokio::test]
async fn extreme_numbers_in_every_kind_never_break_a_page() {
    let (mut app, token) = editor_app().await;
    app.login("ada").await;
    for x in [
        F64_MAX,
        "-1.7976931348623157e308",
        "1e308",
        "5e-324",
        "1e400",
    ] {
        for (name, body) in files_holding(x) {
            let name = format!("{x}-{name}");
            let before = artifact_count(&app).await;
            let o = outcome(&mut app, &token, &name, body).await;
            match &o {
                // A refusal stores nothing.
                Outcome::Refused(..) => assert_eq!(artifact_count(&app).await, before, "{name}"),
                // Stored: settled as done (the value flagged or taken) or failed naming
                // the line; either way it reads back.
                Outcome::Settled(status, error) => {
                    assert!(
                        status == "done" || status == "failed" || status == "not_analyzed",
                        "{name}: {status}"
                    );
                    if status == "failed" {
                        let e = error.clone().unwrap_or_default().to_ascii_lowercase();
                        assert!(
                            e.contains("line") || e.contains("row") || e.contains("range"),
                            "{name}: the reason names where: {e}"
                        );
                    }
                }
            }
            lists_still_answer(&mut app, &token, &name).await;
        }
    }
}

#[tokio::test]
async fn one_unreadable_stored_analysis_shows_as_damaged_and_lists_still_answer() {
    let (mut app, token) = editor_app().await;
    app.login("ada").await;
    let bench = files_holding("1.5").swap_remove(2).1;
    let r = upload(&mut app, &token, "bench.json", bench).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    // What an older server, or a hand edit, could leave: a number no f64 holds.
    sqlx::query(
        "UPDATE artifacts SET analysis = '{\"request_throughput\": 1e400}'::jsonb WHERE id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    lists_still_answer(&mut app, &token, "damaged row").await;
    let list = app.get("/artifacts").await;
    assert!(
        list.body.contains("damaged"),
        "the list marks the row: {}",
        list.body
    );
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("damaged"), "{}", page.body);
    let api = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), &token, None)
        .await;
    assert_eq!(api.status, StatusCode::OK, "{}", api.body);
    assert_eq!(api.json()["damaged"].as_bool(), Some(true), "{}", api.body);
}
