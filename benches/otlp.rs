//! OTLP request spans end to end: vLLM-shaped `llm_request` spans exported to the real
//! server (release build, a child process) on `POST /v1/traces` as protobuf, a batch per
//! request and four in flight, as an SDK's batch processor sends them; then the window
//! analysed on demand until its artifact is done and every span is a stored request
//! row. Beside it, in the same run, the same requests uploaded as a request
//! log (JSONL) until analysed.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench otlp`
//!
//! Env: PJ_BENCH_SPANS (default 200000), PJ_BENCH_BATCH (spans per export, default 512),
//! PJ_BENCH_RUNS (default 3), PJ_BENCH_DATA (scratch; default target/bench-data).

#[path = "common/mod.rs"]
mod common;
#[path = "common/server.rs"]
mod server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use perfjournal::core::analyze::otlp::proto::collector::trace::v1::ExportTraceServiceRequest;
use perfjournal::core::analyze::otlp::proto::common::v1::{any_value, AnyValue, KeyValue};
use perfjournal::core::analyze::otlp::proto::resource::v1::Resource;
use perfjournal::core::analyze::otlp::proto::trace::v1::{ResourceSpans, ScopeSpans, Span};
use perfjournal::core::analyze::otlp::{self as otlp, Message};

use common::{median, num, secs, Table, MB};
use server::Server;

/// 2026-12-02 14:00 UTC; the spans arrive 5 ms apart from there.
const T0_NS: u64 = 1_796_220_000_000_000_000;

fn attr(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// Request `i`'s latencies in seconds: queue, prefill, TTFT, decode, e2e; and tokens.
fn request(i: usize) -> ([f64; 5], i64, i64) {
    let queue = 0.002 + (i % 97) as f64 * 0.0013;
    let prefill = 0.015 + (i % 31) as f64 * 0.0009;
    let ttft = queue + prefill + 0.003;
    let decode = 0.3 + (i % 53) as f64 * 0.011;
    (
        [queue, prefill, ttft, decode, ttft + decode],
        200 + (i % 900) as i64,
        20 + (i % 300) as i64,
    )
}

fn span(i: usize) -> Span {
    use any_value::Value::*;
    let ([queue, prefill, ttft, decode, e2e], prompt, completion) = request(i);
    let start = T0_NS + i as u64 * 5_000_000;
    Span {
        trace_id: (i as u128 + 1).to_be_bytes().to_vec(),
        span_id: (i as u64 + 1).to_be_bytes().to_vec(),
        name: "llm_request".into(),
        kind: 2,
        start_time_unix_nano: start,
        end_time_unix_nano: start + (e2e * 1e9) as u64,
        attributes: vec![
            attr(otlp::REQUEST_ID, StringValue(format!("cmpl-{i:08}"))),
            attr(otlp::RESPONSE_MODEL, StringValue("llama-3.1-8b".into())),
            attr(otlp::MAX_TOKENS, IntValue(512)),
            attr("gen_ai.request.temperature", DoubleValue(0.7)),
            attr("gen_ai.request.top_p", DoubleValue(0.95)),
            attr("gen_ai.request.n", IntValue(1)),
            attr(otlp::TIME_IN_QUEUE, DoubleValue(queue)),
            attr(otlp::TIME_IN_MODEL_PREFILL, DoubleValue(prefill)),
            attr(otlp::TIME_TO_FIRST_TOKEN, DoubleValue(ttft)),
            attr(otlp::TIME_IN_MODEL_DECODE, DoubleValue(decode)),
            attr(otlp::E2E, DoubleValue(e2e)),
            attr(otlp::PROMPT_TOKENS, IntValue(prompt)),
            attr(otlp::COMPLETION_TOKENS, IntValue(completion)),
        ],
        ..Span::default()
    }
}

/// The exports, protobuf-encoded, `batch` spans each.
fn exports(spans: usize, batch: usize) -> Vec<Vec<u8>> {
    (0..spans)
        .step_by(batch)
        .map(|from| {
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    resource: Some(Resource {
                        attributes: vec![attr(
                            "service.name",
                            any_value::Value::StringValue("vllm-bench".into()),
                        )],
                        ..Resource::default()
                    }),
                    scope_spans: vec![ScopeSpans {
                        spans: (from..(from + batch).min(spans)).map(span).collect(),
                        ..ScopeSpans::default()
                    }],
                    ..ResourceSpans::default()
                }],
            }
            .encode_to_vec()
        })
        .collect()
}

/// The same requests as a request log.
fn write_log(spans: usize, path: &Path) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..spans {
        let ([queue, prefill, ttft, decode, e2e], prompt, completion) = request(i);
        let arrival = (T0_NS + i as u64 * 5_000_000) as f64 / 1e9;
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "request_id": format!("cmpl-{i:08}"), "arrival_ts": arrival,
                "queue_wait_ms": queue * 1000.0, "prefill_ms": prefill * 1000.0,
                "first_token_ms": ttft * 1000.0, "decode_ms": decode * 1000.0,
                "total_ms": e2e * 1000.0, "prompt_tokens": prompt, "output_tokens": completion,
                "model_version": "llama-3.1-8b", "max_tokens": 512,
            })
        )?;
    }
    out.flush()?;
    Ok(())
}

struct Run {
    received: f64,
    built: f64,
    end_to_end: f64,
    log: f64,
}

async fn one_run(
    url: &str,
    work: &Path,
    bodies: &[Vec<u8>],
    log: &Path,
    spans: usize,
) -> anyhow::Result<Run> {
    let server = Server::start(
        url,
        work,
        &[
            ("PERFJOURNAL_OTLP_MAX_ROWS_PER_WINDOW", "100000000"),
            ("PERFJOURNAL_OTLP_WINDOW_MINUTES", "1440"),
        ],
    )
    .await?;
    sqlx::query("CHECKPOINT").execute(&server.pool).await?;
    let endpoint = format!("{}/v1/traces", server.process.base);
    let t = Instant::now();
    let answers: Vec<anyhow::Result<()>> = futures::stream::iter(bodies.iter().cloned())
        .map(|body| {
            let call = server
                .process
                .client
                .post(&endpoint)
                .bearer_auth(&server.token)
                .header("content-type", "application/x-protobuf")
                .body(body);
            async move {
                let reply = call.send().await?;
                let status = reply.status();
                let bytes = reply.bytes().await?;
                anyhow::ensure!(status.is_success(), "/v1/traces answered {status}");
                let answer = otlp::ExportTraceServiceResponse::decode(bytes)?;
                anyhow::ensure!(
                    answer.partial_success.is_none(),
                    "spans refused: {answer:?}"
                );
                Ok(())
            }
        })
        .buffer_unordered(4)
        .collect()
        .await;
    answers.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let received = secs(t.elapsed());
    let windows = server.get_json("/api/v1/otlp/windows").await?;
    let window = windows["items"][0]["id"].as_i64().unwrap_or(0);
    anyhow::ensure!(windows["items"][0]["spans"] == spans, "window: {windows}");
    let built = Instant::now();
    let reply = server
        .process
        .client
        .post(format!(
            "{}/api/v1/otlp/windows/{window}/analyze",
            server.process.base
        ))
        .bearer_auth(&server.token)
        .send()
        .await?;
    anyhow::ensure!(
        reply.status().as_u16() == 202,
        "analyze: {}",
        reply.status()
    );
    let artifact = reply.json::<serde_json::Value>().await?["artifact_id"]
        .as_i64()
        .unwrap_or(0);
    let built_s = secs(built.elapsed());
    server
        .wait_analyzed(artifact, Duration::from_secs(900))
        .await?;
    let end_to_end = secs(t.elapsed());
    let rows: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(rows), 0)::bigint FROM request_column_chunks WHERE artifact_id = $1",
    )
    .bind(artifact)
    .fetch_one(&server.pool)
    .await?;
    anyhow::ensure!(rows as usize == spans, "{rows} rows of {spans} spans");

    sqlx::query("CHECKPOINT").execute(&server.pool).await?;
    let t = Instant::now();
    let (id, _) = server.upload(log, "requests.jsonl").await?;
    server.wait_analyzed(id, Duration::from_secs(900)).await?;
    let log_s = secs(t.elapsed());
    server.stop().await?;
    Ok(Run {
        received,
        built: built_s,
        end_to_end,
        log: log_s,
    })
}

fn main() -> anyhow::Result<()> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        println!(
            "otlp benchmark not run: DATABASE_URL is unset \
             (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres)"
        );
        return Ok(());
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spans = common::env_usize("PJ_BENCH_SPANS", 200_000);
    let batch = common::env_usize("PJ_BENCH_BATCH", 512).max(1);
    let runs = common::env_usize("PJ_BENCH_RUNS", 3);
    let data = std::env::var_os("PJ_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/bench-data"));
    std::fs::create_dir_all(&data)?;
    let work = tempfile::Builder::new()
        .prefix("pj-bench-otlp-")
        .tempdir_in(&data)?;
    let bodies = exports(spans, batch);
    let body_bytes: usize = bodies.iter().map(Vec::len).sum();
    let log = work.path().join("requests.jsonl");
    write_log(spans, &log)?;
    let log_bytes = std::fs::metadata(&log)?.len() as f64;
    println!(
        "{} CPUs, load average {} at the start; {} spans in {} exports of {batch} ({:.1} MB \
         protobuf); the same requests as JSONL {:.1} MB",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::loadavg(),
        num(spans as f64, 0),
        bodies.len(),
        body_bytes as f64 / MB,
        log_bytes / MB
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (mut received, mut built, mut e2e, mut logs) = (vec![], vec![], vec![], vec![]);
    for run in 1..=runs {
        let r = rt.block_on(one_run(&url, work.path(), &bodies, &log, spans))?;
        println!(
            "run {run}/{runs}: received {:.2} s; window built {:.2} s; end to end {:.2} s; \
             JSONL upload to done {:.2} s; load average {}",
            r.received,
            r.built,
            r.end_to_end,
            r.log,
            common::loadavg()
        );
        received.push(r.received);
        built.push(r.built);
        e2e.push(r.end_to_end);
        logs.push(r.log);
    }
    let n = spans as f64;
    let mut t = Table::new(&["median of runs", "seconds", "spans/s", "runs (s)"]);
    let line = |label: &str, v: &[f64]| {
        let m = median(v);
        vec![
            label.to_string(),
            num(m, 2),
            num(n / m, 0),
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
        ]
    };
    t.row(line(
        "received on /v1/traces (protobuf, 4 in flight)",
        &received,
    ));
    t.row(line("  the window's file written, artifact queued", &built));
    t.row(line("end to end: sent to an analysed artifact", &e2e));
    t.row(line("the same rows as JSONL: upload to analysed", &logs));
    t.print(&format!(
        "OTLP request spans through HTTP vs the same rows uploaded as JSONL; load average {}",
        common::loadavg()
    ));
    Ok(())
}
