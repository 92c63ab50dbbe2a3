//! OTLP request spans end to end: the OpenTelemetry SDK for Python (PyPI's
//! `opentelemetry-sdk` and `opentelemetry-exporter-otlp-proto-http`, installed by
//! `.ci/run` into the venv `PERFJOURNAL_PYTHON` names) records vLLM-shaped `llm_request`
//! spans and sends them to `POST /v1/traces` with its own exporter (protobuf), and as
//! OTLP/JSON, gzip and not; the numbers that land in the request rows are the spans'
//! attributes in milliseconds. Also: refusals (401, 403, 400 in the OTLP Status shape,
//! nothing stored), spans of other shapes counted and said, the window limit, windows
//! per service and hour, an investigation's spans between two times analysed exactly as
//! the same rows uploaded as a request log, and an OTLP JSON file detected on upload.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::{artifact_json, editor_app, upload_analyzed};
use common::TestApp;
use perfjournal::auth::Role;
use perfjournal::config::Config;
use perfjournal::core::analyze::otlp::{Message, Status};
use perfjournal::otlp::OtlpLimits;
use serde_json::{json, Value};

/// The start of the hour two days ago: closed when the tests run, and inside the spans'
/// retention (older starts are refused).
fn t0() -> f64 {
    let now = chrono::Utc::now().timestamp();
    (now - 2 * 86_400).div_euclid(3600) as f64 * 3600.0
}

/// A time as the API and the forms write it (`%Y-%m-%dT%H:%M:%SZ`, or another format).
fn at(t: f64, format: &str) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .unwrap()
        .format(format)
        .to_string()
}

const SENDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/app/otlp_send.py");

/// The python with the OpenTelemetry SDK, or `None` after recording the skip.
fn python(test: &str) -> Option<String> {
    let found = std::env::var("PERFJOURNAL_PYTHON").ok().filter(|p| {
        Command::new(p)
            .args([
                "-c",
                "import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        common::skip(
            test,
            "PERFJOURNAL_PYTHON is unset or lacks opentelemetry-sdk and \
             opentelemetry-exporter-otlp-proto-http (bash .ci/run installs them)",
        );
    }
    found
}

/// A vLLM `llm_request` span: latencies in seconds, as vLLM sets them.
#[derive(Clone, Debug)]
struct Req {
    service: String,
    id: String,
    start: f64,
    queue: f64,
    prefill: f64,
    ttft: f64,
    decode: f64,
    e2e: f64,
    prompt: i64,
    completion: i64,
}

impl Req {
    fn new(service: &str, id: &str, start: f64, k: usize) -> Req {
        let k = k as f64;
        Req {
            service: service.into(),
            id: id.into(),
            start,
            queue: 0.004 + 0.013 * (k % 7.0),
            prefill: 0.020 + 0.0031 * (k % 5.0),
            ttft: 0.030 + 0.013 * (k % 7.0) + 0.0031 * (k % 5.0),
            decode: 0.4 + 0.05 * (k % 3.0),
            e2e: 0.45 + 0.013 * (k % 7.0) + 0.05 * (k % 3.0),
            prompt: 100 + 7 * k as i64,
            completion: 20 + k as i64,
        }
    }

    fn span(&self) -> Value {
        let ns = (self.start * 1e9).round() as u64;
        json!({
            "service": self.service,
            "name": "llm_request",
            "start_ns": ns,
            "end_ns": ns + (self.e2e * 1e9) as u64,
            "attributes": {
                "gen_ai.request.id": self.id,
                "gen_ai.response.model": "llama-3-8b",
                "gen_ai.request.max_tokens": 256,
                "gen_ai.request.temperature": 0.7,
                "gen_ai.latency.time_in_queue": self.queue,
                "gen_ai.latency.time_in_model_prefill": self.prefill,
                "gen_ai.latency.time_to_first_token": self.ttft,
                "gen_ai.latency.time_in_model_decode": self.decode,
                "gen_ai.latency.e2e": self.e2e,
                "gen_ai.latency.time_in_scheduler": 0.0005,
                "gen_ai.usage.prompt_tokens": self.prompt,
                "gen_ai.usage.completion_tokens": self.completion,
            }
        })
    }

    /// The same request as a line of a request log.
    fn log_line(&self) -> String {
        json!({
            "request_id": self.id,
            "arrival_ts": self.start,
            "queue_wait_ms": self.queue * 1000.0,
            "prefill_ms": self.prefill * 1000.0,
            "first_token_ms": self.ttft * 1000.0,
            "decode_ms": self.decode * 1000.0,
            "total_ms": self.e2e * 1000.0,
            "prompt_tokens": self.prompt,
            "output_tokens": self.completion,
            "model_version": "llama-3-8b",
        })
        .to_string()
    }
}

/// A span of another shape (an HTTP server span).
fn http_span(service: &str, start: f64) -> Value {
    let ns = (start * 1e9) as u64;
    json!({"service": service, "name": "POST /v1/completions", "start_ns": ns,
           "end_ns": ns + 1_000_000, "attributes": {"http.method": "POST"}})
}

/// Runs the sender; its JSON answer.
async fn send(
    python: &str,
    endpoint: &str,
    token: &str,
    mode: &str,
    gzip: bool,
    spans: Vec<Value>,
) -> Value {
    let args = [
        SENDER.to_string(),
        endpoint.to_string(),
        token.to_string(),
        mode.to_string(),
        if gzip { "gzip" } else { "none" }.to_string(),
    ];
    let python = python.to_string();
    let input = Value::from(spans).to_string();
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(&python)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the sender");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "sender failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if args[3] == "dump" {
            return Value::String(text);
        }
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
    })
    .await
    .unwrap()
}

/// The request rows stored for an artifact, by arrival: (arrival, queue, prefill, ttft,
/// decode, total, prompt, output, model).
type Row = (f64, f64, f64, f64, f64, f64, i64, i64, String);

async fn rows_of(app: &TestApp, artifact: i64) -> Vec<Row> {
    let chunks = perfjournal::artifacts::columns::load_all(&app.pool, artifact)
        .await
        .unwrap();
    let mut rows: Vec<Row> = chunks
        .iter()
        .flat_map(|c| c.iter())
        .map(|r| {
            (
                r.arrival_ts.unwrap(),
                r.queue_wait_ms().unwrap(),
                r.prefill_ms().unwrap(),
                r.first_token_ms().unwrap(),
                r.decode_ms().unwrap(),
                r.total_ms().unwrap(),
                r.prompt_tokens.unwrap(),
                r.output_tokens.unwrap(),
                r.model_version.unwrap().to_string(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    rows
}

/// Equal JSON, numbers to the last few bits (a standard deviation summed in another
/// order may differ in its last digit).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0)
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

fn assert_rows_equal_spans(rows: &[Row], reqs: &[Req]) {
    assert_eq!(rows.len(), reqs.len());
    for (row, r) in rows.iter().zip(reqs) {
        assert!(
            close(row.0, r.start),
            "{}: arrival {} vs {}",
            r.id,
            row.0,
            r.start
        );
        for (got, want) in [
            (row.1, r.queue),
            (row.2, r.prefill),
            (row.3, r.ttft),
            (row.4, r.decode),
            (row.5, r.e2e),
        ] {
            assert!(close(got, want * 1000.0), "{}: {got} ms vs {want} s", r.id);
        }
        assert_eq!((row.6, row.7), (r.prompt, r.completion), "{}", r.id);
        assert_eq!(row.8, "llama-3-8b");
    }
}

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn windows(app: &mut TestApp, token: &str, query: &str) -> Value {
    let r = app
        .api("GET", &format!("/api/v1/otlp/windows{query}"), token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_from_the_sdk_exporter_land_as_request_rows_in_ms() {
    let Some(python) = python("spans_from_the_sdk_exporter_land_as_request_rows_in_ms") else {
        return;
    };
    let (mut app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;
    let endpoint = format!("http://{addr}/v1/traces");
    let mut all = Vec::new();
    let cases = [
        ("exporter", false),
        ("exporter", true),
        ("protobuf", true),
        ("json", false),
        ("json", true),
        // The SDK's JSON printer as it writes by default: enum names, base64 ids.
        ("sdk_json", false),
    ];
    for (i, (mode, gzip)) in cases.into_iter().enumerate() {
        let reqs: Vec<Req> = (0..4)
            .map(|k| {
                let n = i * 4 + k;
                Req::new(
                    "vllm-a",
                    &format!("cmpl-{mode}-{gzip}-{k}"),
                    t0() + 60.0 * n as f64 + 0.25,
                    n,
                )
            })
            .collect();
        let out = send(
            &python,
            &endpoint,
            &token,
            mode,
            gzip,
            reqs.iter().map(Req::span).collect(),
        )
        .await;
        if mode == "exporter" {
            assert_eq!(out["result"], "SUCCESS", "{out}");
        } else {
            assert_eq!(out["status"], 200, "{out}");
            // A full success has no partial_success.
            let answer = out.get("body").or(out.get("response")).unwrap();
            assert!(answer.get("partialSuccess").is_none(), "{out}");
        }
        all.extend(reqs);
    }
    assert_eq!(count(&app, "otlp_span_rows").await, 24);
    let listed = windows(&mut app, &token, "").await;
    let w = &listed["items"][0];
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        (
            w["service"].as_str(),
            w["spans"].as_i64(),
            w["ignored"].as_i64()
        ),
        (Some("vllm-a"), Some(24), Some(0))
    );
    assert_eq!(w["status"], "closed", "{w}");

    // The window closed long ago: the sweep builds its artifact, the worker analyses it.
    let built = perfjournal::otlp::build_closed(&app.state.artifacts())
        .await
        .unwrap();
    assert_eq!(built, 1);
    assert_eq!(app.drain_queue().await, 1);
    let w = windows(&mut app, &token, "").await["items"][0].clone();
    assert_eq!(w["status"], "done", "{w}");
    let artifact = w["artifact_id"].as_i64().unwrap();
    assert_rows_equal_spans(&rows_of(&app, artifact).await, &all);
    let a = artifact_json(&mut app, &token, artifact).await;
    assert_eq!(a["kind"], "otlp_spans", "{a}");
    let analysis = &a["analysis"];
    assert_eq!(analysis["rows"], 24, "{a}");
    assert_eq!(analysis["spans"]["requests"], 24);
    assert_eq!(analysis["spans"]["engines"]["vllm"], 24);
    // Nothing new: the sweep leaves it be.
    assert_eq!(
        perfjournal::otlp::build_closed(&app.state.artifacts())
            .await
            .unwrap(),
        0
    );
    server.abort();
}

async fn post_traces(
    app: &mut TestApp,
    token: Option<&str>,
    content_type: &str,
    encoding: Option<&str>,
    body: Vec<u8>,
) -> common::Reply {
    let mut req = Request::post("/v1/traces").header(header::CONTENT_TYPE, content_type);
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    if let Some(e) = encoding {
        req = req.header(header::CONTENT_ENCODING, e);
    }
    app.send(req.body(Body::from(body)).unwrap()).await
}

#[tokio::test]
async fn refusals_answer_in_the_otlp_status_shape_and_store_nothing() {
    let (mut app, token) = editor_app().await;
    app.add_user("vic", Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    let empty = br#"{"resourceSpans": []}"#.to_vec();
    let json = "application/json";

    let r = post_traces(&mut app, None, json, None, empty.clone()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(r.json()["code"], 16);
    assert!(
        r.json()["message"].as_str().unwrap().contains("Bearer"),
        "{}",
        r.body
    );
    let r = post_traces(&mut app, Some("pj_not-a-token"), json, None, empty.clone()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let r = post_traces(&mut app, Some(&viewer), json, None, empty.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.json()["code"], 7);
    assert!(
        r.json()["message"].as_str().unwrap().contains("editor"),
        "{}",
        r.body
    );

    // Malformed JSON: 400, {"code": 3, "message": …} naming the place.
    let r = post_traces(
        &mut app,
        Some(&token),
        json,
        None,
        br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}"#
            .to_vec(),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let v = r.json();
    assert_eq!(v["code"], 3);
    let m = v["message"].as_str().unwrap();
    assert!(
        m.contains("not an OTLP ExportTraceServiceRequest in JSON") && m.contains("column"),
        "{m}"
    );
    // Malformed protobuf: 400 with a protobuf Status.
    let req = Request::post("/v1/traces")
        .header(header::CONTENT_TYPE, "application/x-protobuf")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(vec![0x0a, 0xff, 0xff, 0x01]))
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.app.clone(), req)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        res.headers()[header::CONTENT_TYPE],
        "application/x-protobuf"
    );
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status = Status::decode(bytes).unwrap();
    assert_eq!(status.code, 3, "{status:?}");
    assert!(status.message.contains("protobuf"), "{}", status.message);
    // Not gzip though it says so; an unknown encoding; an unknown content type.
    let r = post_traces(&mut app, Some(&token), json, Some("gzip"), empty.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.json()["message"].as_str().unwrap().contains("gzip"));
    let r = post_traces(&mut app, Some(&token), json, Some("br"), empty.clone()).await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", r.body);
    let r = post_traces(&mut app, Some(&token), "text/plain", None, empty.clone()).await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", r.body);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("application/x-protobuf"));
    assert_eq!(count(&app, "otlp_windows").await, 0);
    assert_eq!(count(&app, "otlp_span_rows").await, 0);
    // An empty export is fine and stores nothing.
    let r = post_traces(&mut app, Some(&token), json, None, empty).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json(), json!({}));
}

#[tokio::test]
async fn bodies_over_the_limits_are_413_and_store_nothing() {
    let config = Config {
        otlp: OtlpLimits {
            body_limit: 4096,
            max_decompressed: 8192,
            ..OtlpLimits::default()
        },
        ..Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let mut big = br#"{"resourceSpans": [], "pad": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 20_000));
    big.extend(br#""}"#);
    let r = post_traces(
        &mut app,
        Some(&token),
        "application/json",
        None,
        big.clone(),
    )
    .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.body);
    assert_eq!(r.json()["code"], 8);
    // Small as sent, too large once gunzipped (a gzip bomb in miniature).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&big).unwrap();
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 4096);
    let r = post_traces(&mut app, Some(&token), "application/json", Some("gzip"), gz).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.body);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("once decompressed"));
    assert_eq!(count(&app, "otlp_windows").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_shapes_and_spans_over_the_limit_are_counted_and_said() {
    let Some(python) = python("other_shapes_and_spans_over_the_limit_are_counted_and_said") else {
        return;
    };
    let config = Config {
        otlp: OtlpLimits {
            max_rows_per_window: 3,
            ..OtlpLimits::default()
        },
        ..Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (addr, server) = app.serve_on_port().await;
    let endpoint = format!("http://{addr}/v1/traces");
    let mut spans: Vec<Value> = (0..5)
        .map(|k| Req::new("vllm-a", &format!("r{k}"), t0() + k as f64, k).span())
        .collect();
    spans.push(http_span("vllm-a", t0() + 10.0));
    spans.push(http_span("vllm-a", t0() + 11.0));
    let out = send(&python, &endpoint, &token, "json", false, spans).await;
    assert_eq!(out["status"], 200, "{out}");
    let partial = &out["body"]["partialSuccess"];
    // HTTP server spans beside vLLM's are a healthy server's traffic: counted on the
    // window, not reported as rejected (exporters would warn on every export).
    assert_eq!(partial["rejectedSpans"], "2", "{out}");
    let message = partial["errorMessage"].as_str().unwrap();
    assert_eq!(
        message, "2 span(s) refused: over the window's span limit",
        "{message}"
    );
    // In protobuf, an export of other shapes only is a plain success.
    let out = send(
        &python,
        &endpoint,
        &token,
        "protobuf",
        false,
        vec![http_span("vllm-a", t0() + 12.0)],
    )
    .await;
    assert_eq!(out["status"], 200, "{out}");
    assert!(out["response"]["partialSuccess"].is_null(), "{out}");

    let w = windows(&mut app, &token, "").await["items"][0].clone();
    assert_eq!(
        (w["spans"].as_i64(), w["ignored"].as_i64()),
        (Some(3), Some(5)),
        "{w}"
    );
    assert_eq!(
        w["ignored_reasons"]["over the window's span limit"], 2,
        "{w}"
    );
    // Built on demand, before the sweep.
    let r = app
        .api(
            "POST",
            &format!("/api/v1/otlp/windows/{}/analyze", w["id"]),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let artifact = r.json()["artifact_id"].as_i64().unwrap();
    // While a worker analyses the previous file, the window is not rebuilt under it.
    sqlx::query("UPDATE artifacts SET status = 'analyzing' WHERE id = $1")
        .bind(artifact)
        .execute(&app.pool)
        .await
        .unwrap();
    let again = format!("/api/v1/otlp/windows/{}/analyze", w["id"]);
    let r = app.api("POST", &again, &token, None).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(
        perfjournal::otlp::build_closed(&app.state.artifacts())
            .await
            .unwrap(),
        0
    );
    sqlx::query("UPDATE artifacts SET status = 'queued' WHERE id = $1")
        .bind(artifact)
        .execute(&app.pool)
        .await
        .unwrap();
    app.drain_queue().await;
    let page = app.get(&format!("/artifacts/{artifact}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let text = page.select("main").join(" ");
    assert!(text.contains("other shape"), "{text}");
    assert!(text.contains("over the window's span limit"), "{text}");
    assert!(text.contains("5 spans were ignored"), "{text}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_are_split_per_service_and_hour() {
    let Some(python) = python("windows_are_split_per_service_and_hour") else {
        return;
    };
    let (mut app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;
    let endpoint = format!("http://{addr}/v1/traces");
    let spans = vec![
        Req::new("vllm-a", "a1", t0() + 10.0, 0).span(),
        Req::new("vllm-a", "a2", t0() + 3599.5, 1).span(),
        Req::new("vllm-a", "a3", t0() + 3600.0, 2).span(),
        Req::new("sglang-b", "b1", t0() + 7300.0, 3).span(),
    ];
    let out = send(&python, &endpoint, &token, "protobuf", true, spans).await;
    assert_eq!(out["status"], 200, "{out}");
    let all = windows(&mut app, &token, "").await;
    let mut shape: Vec<(String, String, i64)> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["service"].as_str().unwrap().to_string(),
                w["window_start"].as_str().unwrap().to_string(),
                w["spans"].as_i64().unwrap(),
            )
        })
        .collect();
    shape.sort();
    assert_eq!(
        shape,
        [
            (
                "sglang-b".into(),
                at(t0() + 7200.0, "%Y-%m-%dT%H:%M:%SZ"),
                1
            ),
            ("vllm-a".into(), at(t0(), "%Y-%m-%dT%H:%M:%SZ"), 2),
            ("vllm-a".into(), at(t0() + 3600.0, "%Y-%m-%dT%H:%M:%SZ"), 1),
        ]
    );
    // One service's, a page at a time.
    let page = windows(&mut app, &token, "?service=vllm-a&limit=1").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let next = page["next"].as_str().unwrap().to_string();
    let r = app.api("GET", &next, &token, None).await;
    assert_eq!(r.json()["items"][0]["service"], "vllm-a", "{}", r.body);
    assert!(r.json()["next"].is_null());
    let r = app
        .api("GET", "/api/v1/otlp/windows?colour=red", &token, None)
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        perfjournal::otlp::build_closed(&app.state.artifacts())
            .await
            .unwrap(),
        3
    );
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_investigation_takes_spans_between_two_times_like_the_same_rows_as_a_log() {
    let Some(python) =
        python("an_investigation_takes_spans_between_two_times_like_the_same_rows_as_a_log")
    else {
        return;
    };
    let (mut app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;
    let endpoint = format!("http://{addr}/v1/traces");
    // 48 requests over two hours; the stretch asked for is the middle hour.
    let reqs: Vec<Req> = (0..48)
        .map(|k| Req::new("vllm-a", &format!("q{k}"), t0() + 150.0 * k as f64 + 0.5, k))
        .collect();
    let out = send(
        &python,
        &endpoint,
        &token,
        "exporter",
        true,
        reqs.iter().map(Req::span).collect(),
    )
    .await;
    assert_eq!(out["result"], "SUCCESS", "{out}");
    let investigation = app.open_investigation(&token, "TTFT regression").await;
    let path = format!("/api/v1/investigations/{investigation}/otlp-spans");
    let (start, end) = (t0() + 1800.0, t0() + 5400.0);
    let r = app
        .api("POST", &path, &token, Some(json!({"service": "vllm-a", "start": at(start, "%Y-%m-%d %H:%M"), "end": at(end, "%Y-%m-%dT%H:%M:%SZ")})))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let spans_artifact = r.json()["artifact_id"].as_i64().unwrap();
    app.drain_queue().await;
    let inside: Vec<Req> = reqs
        .iter()
        .filter(|r| r.start >= start && r.start < end)
        .cloned()
        .collect();
    assert_eq!(inside.len(), 24);
    assert_rows_equal_spans(&rows_of(&app, spans_artifact).await, &inside);

    // The same rows as a request log.
    let log: String = inside.iter().map(|r| r.log_line() + "\n").collect();
    let log_artifact = upload_analyzed(&mut app, &token, "same.jsonl", log.into_bytes()).await;
    let a = artifact_json(&mut app, &token, spans_artifact).await;
    let b = artifact_json(&mut app, &token, log_artifact).await;
    assert_eq!(
        (a["kind"].as_str(), b["kind"].as_str()),
        (Some("otlp_spans"), Some("request_log"))
    );
    assert_eq!(a["investigation"], investigation, "{a}");
    for key in [
        "rows",
        "phases",
        "share_of_ttft",
        "share_of_e2e",
        "dominant_phase",
        "arrival_first",
        "arrival_last",
    ] {
        assert!(
            same(&a["analysis"][key], &b["analysis"][key]),
            "{key}: {} vs {}",
            a["analysis"][key],
            b["analysis"][key]
        );
    }
    // The decomposition pages show the same table.
    let table = |r: &common::Reply| r.select("table td");
    let da = app
        .get(&format!("/artifacts/{spans_artifact}/requests"))
        .await;
    let db = app
        .get(&format!("/artifacts/{log_artifact}/requests"))
        .await;
    assert_eq!(da.status, StatusCode::OK, "{}", da.body);
    assert!(!table(&da).is_empty());
    assert_eq!(table(&da), table(&db));

    // Refusals: nothing of that service then, an unknown service, bad times, a viewer.
    let r = app
        .api(
            "POST",
            &path,
            &token,
            Some(json!({"service": "vllm-a", "start": t0() - 7200.0, "end": t0() - 3600.0})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("no spans of service vllm-a"), "{}", r.body);
    let r = app
        .api(
            "POST",
            &path,
            &token,
            Some(json!({"service": "nope", "start": start, "end": end})),
        )
        .await;
    assert!(r.body.contains("the services are: vllm-a"), "{}", r.body);
    let r = app
        .api(
            "POST",
            &path,
            &token,
            Some(json!({"service": "", "start": "later", "end": start})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let body = r.json();
    let fields: Vec<&str> = body["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["service", "start"]);
    let r = app
        .api(
            "POST",
            "/api/v1/investigations/999999/otlp-spans",
            &token,
            Some(json!({"service": "vllm-a", "start": start, "end": end})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    app.add_user("vic", Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    let r = app
        .api(
            "POST",
            &path,
            &viewer,
            Some(json!({"service": "vllm-a", "start": start, "end": end})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let artifacts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE investigation_id = $1")
            .bind(investigation)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(artifacts, 1, "refusals stored nothing");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otlp_json_file_upload_is_detected_and_analysed() {
    let Some(python) = python("an_otlp_json_file_upload_is_detected_and_analysed") else {
        return;
    };
    let (mut app, token) = editor_app().await;
    let first: Vec<Req> = (0..3)
        .map(|k| Req::new("vllm-a", &format!("f{k}"), t0() + k as f64, k))
        .collect();
    let second: Vec<Req> = (3..5)
        .map(|k| Req::new("vllm-a", &format!("f{k}"), t0() + k as f64, k))
        .collect();
    let mut second_spans: Vec<Value> = second.iter().map(Req::span).collect();
    second_spans.push(http_span("vllm-a", t0() + 9.0));
    // Two export batches, one per line, as the Collector's file exporter writes them.
    let a = send(
        &python,
        "-",
        "-",
        "dump",
        false,
        first.iter().map(Req::span).collect(),
    )
    .await;
    let b = send(&python, "-", "-", "dump", false, second_spans).await;
    let file = format!(
        "{}\n{}\n",
        a.as_str().unwrap().trim(),
        b.as_str().unwrap().trim()
    );
    let id = upload_analyzed(&mut app, &token, "traces.json", file.into_bytes()).await;
    let got = artifact_json(&mut app, &token, id).await;
    assert_eq!(got["kind"], "otlp_spans", "{got}");
    assert_eq!(got["analysis"]["spans"]["spans"], 6);
    assert_eq!(got["analysis"]["spans"]["ignored"], 1);
    let all: Vec<Req> = first.into_iter().chain(second).collect();
    assert_rows_equal_spans(&rows_of(&app, id).await, &all);
    // One pretty-printed object is read too.
    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<Value>(a.as_str().unwrap().trim()).unwrap(),
    )
    .unwrap();
    let id = upload_analyzed(&mut app, &token, "one.json", pretty.into_bytes()).await;
    let got = artifact_json(&mut app, &token, id).await;
    assert_eq!(
        (got["kind"].as_str(), got["analysis"]["rows"].as_i64()),
        (Some("otlp_spans"), Some(3)),
        "{got}"
    );
}
