//! What an editor token (the one vLLM is given) can send, against a server process of
//! its own: small bodies that inflate into millions of spans, ids of megabytes, span
//! windows for every hour of five centuries, tar headers that claim gigabytes, bodies
//! that stop half-way. Each ends in a clear 4xx or a partial success naming the reason,
//! within its timeout, with nothing half-stored; the server's peak RSS stays under
//! [`PEAK_MIB`] over all of them. The sizes are small enough for two cores in CI, and
//! large enough that the readers before this round (which built every message a body
//! named) would have passed the bound several times over.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::uploads::multipart;
use perfjournal::core::analyze::otlp::proto::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use perfjournal::core::analyze::otlp::proto::common::v1::{any_value, AnyValue, KeyValue};
use perfjournal::core::analyze::otlp::proto::resource::v1::Resource;
use perfjournal::core::analyze::otlp::proto::trace::v1::{ResourceSpans, ScopeSpans, Span};
use perfjournal::core::analyze::otlp::Message;
use sqlx::PgPool;

/// The bound on the server's peak resident memory over every case.
const PEAK_MIB: u64 = 400;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// resource_spans { scope_spans { spans: {} × n } } in protobuf, two bytes a span.
fn empty_spans(n: usize) -> Vec<u8> {
    let mut scope = vec![0x12];
    put_len(&mut scope, 2 * n);
    scope.extend(std::iter::repeat_n([0x12u8, 0x00], n).flatten());
    let mut body = vec![0x0a];
    put_len(&mut body, scope.len());
    body.extend(scope);
    body
}

fn attr(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// A vLLM `llm_request` span starting at `start` (seconds).
fn vllm_span(i: u64, start: f64) -> Span {
    use any_value::Value::*;
    let ns = (start * 1e9) as u64;
    Span {
        trace_id: (u128::from(i) + 1).to_be_bytes().to_vec(),
        span_id: (i + 1).to_be_bytes().to_vec(),
        name: "llm_request".into(),
        start_time_unix_nano: ns,
        end_time_unix_nano: ns + 500_000_000,
        attributes: vec![
            attr("gen_ai.request.id", StringValue(format!("r{i}"))),
            attr("gen_ai.latency.time_to_first_token", DoubleValue(0.05)),
            attr("gen_ai.latency.e2e", DoubleValue(0.5)),
            attr("gen_ai.usage.prompt_tokens", IntValue(100)),
            attr("gen_ai.usage.completion_tokens", IntValue(20)),
        ],
        ..Span::default()
    }
}

fn export(by_service: Vec<(String, Vec<Span>)>) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: by_service
            .into_iter()
            .map(|(service, spans)| ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![attr("service.name", any_value::Value::StringValue(service))],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            })
            .collect(),
    }
    .encode_to_vec()
}

struct Server {
    process: common::ServerProcess,
    token: String,
    pool: PgPool,
    http: reqwest::Client,
}

/// What `/v1/traces` answered: status, the partial success (rejected, message), time.
struct Answer {
    status: u16,
    rejected: i64,
    message: String,
    took: Duration,
}

impl Server {
    fn peak(&self) -> u64 {
        common::peak_rss_mib(&self.process.pid.to_string())
    }

    async fn traces(&self, body: Vec<u8>, content_type: &str, gzipped: bool) -> Answer {
        let started = Instant::now();
        let mut req = self
            .http
            .post(format!("{}/v1/traces", self.process.base))
            .bearer_auth(&self.token)
            .header("content-type", content_type)
            .body(body);
        if gzipped {
            req = req.header("content-encoding", "gzip");
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let bytes = r.bytes().await.unwrap();
        let (rejected, message) = if status == 200 && content_type.contains("protobuf") {
            let answer = ExportTraceServiceResponse::decode(&bytes[..]).unwrap();
            answer
                .partial_success
                .map_or((0, String::new()), |p| (p.rejected_spans, p.error_message))
        } else {
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let p = &v["partialSuccess"];
            (
                p["rejectedSpans"]
                    .as_str()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                p["errorMessage"]
                    .as_str()
                    .or(v["message"].as_str())
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        Answer {
            status,
            rejected,
            message,
            took: started.elapsed(),
        }
    }

    async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

fn report(name: &str, server: &Server, a: &Answer) {
    println!(
        "{name}: {} in {:.1} s, rejected {} ({:.200}); server peak RSS so far {} MiB",
        a.status,
        a.took.as_secs_f64(),
        a.rejected,
        a.message,
        server.peak()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_token_cannot_take_the_memory_or_hold_the_server() {
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "vllm").await;
    let process = common::ServerProcess::start(
        &url,
        &[
            ("PERFJOURNAL_UPLOAD_IDLE_TIMEOUT", "3"),
            ("PERFJOURNAL_OTLP_MAX_SERVICES", "10"),
            ("PERFJOURNAL_OTLP_MAX_WINDOWS_PER_USER", "45"),
        ],
    )
    .await;
    let server = Server {
        process,
        token,
        pool,
        http: reqwest::Client::new(),
    };
    let now = chrono::Utc::now().timestamp() as f64;
    let protobuf = "application/x-protobuf";

    // 1. 4 M empty spans, 8 MB of protobuf in a few KB of gzip: read up to the export's
    // limit (each refused for its ids), the rest counted unread; no window opened.
    let body = gzip(&empty_spans(4_000_000));
    println!("empty spans: {} bytes of gzip", body.len());
    let a = server.traces(body, protobuf, true).await;
    report("empty spans", &server, &a);
    assert_eq!(a.status, 200);
    assert_eq!(a.rejected, 4_000_000);
    assert!(
        a.message.contains("16384 span(s) refused: an invalid id"),
        "{}",
        a.message
    );
    assert!(
        a.message
            .contains("3983616 span(s) refused: over the limit of spans in one export"),
        "{}",
        a.message
    );
    assert_eq!(server.count("otlp_windows").await, 0);

    // 2. 200,000 small vLLM spans: the first 16,384 kept, the rest refused by count.
    let spans = (0..200_000u64).map(|i| vllm_span(i, now - 60.0)).collect();
    let body = gzip(&export(vec![("vllm-a".into(), spans)]));
    let a = server.traces(body, protobuf, true).await;
    report("vllm spans", &server, &a);
    assert_eq!(
        (a.status, a.rejected),
        (200, 200_000 - 16_384),
        "{}",
        a.message
    );
    assert_eq!(server.count("otlp_span_rows").await, 16_384);

    // 3. A 60 MB trace id in 60 KB of gzip: the span is refused, nothing is stored.
    let mut json = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":""#.to_vec();
    json.extend(std::iter::repeat_n(b'a', 60_000_000));
    json.extend(
        format!(
            r#"","spanId":"0102030405060708","name":"llm_request","startTimeUnixNano":"{}",
               "attributes":[{{"key":"gen_ai.request.id","value":{{"stringValue":"x"}}}}]}}]}}]}}]}}"#,
            (now * 1e9) as u64
        )
        .as_bytes(),
    );
    let body = gzip(&json);
    drop(json);
    let rows = server.count("otlp_span_rows").await;
    let a = server.traces(body, "application/json", true).await;
    report("long trace id", &server, &a);
    assert_eq!((a.status, a.rejected), (200, 1), "{}", a.message);
    assert!(a.message.contains("invalid id"), "{}", a.message);
    assert_eq!(server.count("otlp_span_rows").await, rows);

    // 4. Services and windows: 20 services (9 taken: vllm-a is the tenth), then one service over 100 past
    // hours, five centuries ahead and beyond the retention (32 windows an export, 45 a
    // user, the rest refused with the reason).
    let services = (0..20u64)
        .map(|i| (format!("svc-{i}"), vec![vllm_span(i, now)]))
        .collect();
    let a = server.traces(export(services), protobuf, false).await;
    report("20 services", &server, &a);
    assert_eq!((a.status, a.rejected), (200, 11), "{}", a.message);
    assert!(
        a.message.contains("new service past the limit"),
        "{}",
        a.message
    );
    let mut spans: Vec<Span> = (0..100u64)
        .map(|h| vllm_span(h, now - 3600.0 * h as f64))
        .collect();
    spans.push(vllm_span(500, 18_000_000_000.0));
    spans.push(vllm_span(501, now - 31.0 * 86_400.0));
    let a = server
        .traces(export(vec![("svc-0".into(), spans)]), protobuf, false)
        .await;
    report("100 past hours", &server, &a);
    assert_eq!(a.status, 200);
    assert!(
        a.message
            .contains("2 span(s) refused: a start time outside"),
        "{}",
        a.message
    );
    assert!(a.message.contains("new window"), "{}", a.message);
    let windows = server.count("otlp_windows").await;
    assert!(windows <= 45, "{windows} windows");
    let spans: Vec<Span> = (0..40u64)
        .map(|h| vllm_span(h, now - 3600.0 * (h + 200) as f64))
        .collect();
    let a = server
        .traces(export(vec![("svc-1".into(), spans)]), protobuf, false)
        .await;
    report("40 more hours", &server, &a);
    assert_eq!(
        server.count("otlp_windows").await,
        45,
        "the user's windows are capped"
    );
    assert!(a.message.contains("new window"), "{}", a.message);

    // 5. Bodies that stop: the user's four upload places are held until the idle
    // timeout (408), a fifth is refused at once (429); none is held past its timeout.
    let mut held = Vec::new();
    for i in 0..6 {
        let (tx, rx) = futures::channel::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
        let mut tx = tx;
        tx.try_send(Ok(vec![b'{'; 4 << 20])).unwrap();
        let request = server
            .http
            .post(format!("{}/v1/traces", server.process.base))
            .bearer_auth(&server.token)
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(rx));
        let started = Instant::now();
        held.push((i, tx, started, tokio::spawn(request.send())));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut statuses = Vec::new();
    for (i, _tx, started, answer) in held {
        let r = answer.await.unwrap().unwrap();
        let took = started.elapsed();
        println!(
            "stalled body {i}: {} after {:.1} s",
            r.status(),
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(20), "held {took:?}");
        statuses.push(r.status().as_u16());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [408, 408, 408, 408, 429, 429], "{statuses:?}");

    // 6. An OTLP JSON file of 2 M empty spans through the ordinary upload: read a span
    // at a time, it ends with a state and a reason.
    let mut file = br#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name",
        "value":{"stringValue":"vllm-a"}}]},"scopeSpans":[{"spans":["#
        .to_vec();
    file.extend(b"{},".repeat(1_999_999));
    file.extend(br#"{}]}]}]}"#);
    let body = gzip(&file);
    drop(file);
    let r = server
        .http
        .post(format!(
            "{}/api/v1/artifacts?name=spans.otlp.json.gz",
            server.process.base
        ))
        .bearer_auth(&server.token)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    println!(
        "spans file: {status} {text:.300}; server peak RSS so far {} MiB",
        server.peak()
    );
    if status.is_success() {
        let id = serde_json::from_str::<serde_json::Value>(&text).unwrap()["id"]
            .as_i64()
            .unwrap();
        let waited = Instant::now();
        loop {
            let state: String = sqlx::query_scalar("SELECT status FROM artifacts WHERE id = $1")
                .bind(id)
                .fetch_one(&server.pool)
                .await
                .unwrap();
            if state != "queued" && state != "analyzing" {
                println!("spans file: {state}");
                // No request span among them: the file says so rather than failing.
                assert!(["done", "failed"].contains(&state.as_str()), "{state}");
                break;
            }
            assert!(waited.elapsed() < Duration::from_secs(300), "still {state}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    } else {
        assert!(status.is_client_error(), "{status} {text}");
    }

    // 7. A trace set's tar.gz whose long-name header claims 3 GB: refused at the header.
    let mut tar = Vec::new();
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::GNULongName);
    header.set_path("././@LongLink").unwrap();
    header.set_size(3_000_000_000);
    header.set_cksum();
    tar.extend_from_slice(header.as_bytes());
    tar.extend(std::iter::repeat_n(0u8, 64 << 20));
    let archive = gzip(&tar);
    drop(tar);
    let (content_type, body) = multipart(&[("file", Some("prof.tar.gz"), archive)]);
    let r = server
        .http
        .post(format!(
            "{}/api/v1/trace-sets/upload?name=long",
            server.process.base
        ))
        .bearer_auth(&server.token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    println!(
        "long-name tar: {status} {text:.300}; server peak RSS so far {} MiB",
        server.peak()
    );
    assert_eq!(status.as_u16(), 422, "{text}");
    assert!(text.contains("extension header"), "{text}");
    let sets: i64 = sqlx::query_scalar("SELECT count(*) FROM trace_sets")
        .fetch_one(&server.pool)
        .await
        .unwrap();
    assert_eq!(sets, 0);

    let peak = server.peak();
    println!("worst server peak RSS over the editor-token cases: {peak} MiB");
    assert!(peak < PEAK_MIB, "the server's peak RSS reached {peak} MiB");
}
