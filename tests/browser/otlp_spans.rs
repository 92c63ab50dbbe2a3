//! Request spans into an investigation in a real browser: a service's spans were received
//! (stored as `/v1/traces` stores them); the form on the investigation page takes those
//! between two times; a refused time comes back beside its field, what was typed kept;
//! the artifact page follows to `done` and counts the spans.

use crate::common;

use common::{browser, spawn_app};
use perfjournal::core::analyze::otlp::proto::collector::trace::v1::ExportTraceServiceRequest;
use perfjournal::core::analyze::otlp::proto::common::v1::{any_value, AnyValue, KeyValue};
use perfjournal::core::analyze::otlp::proto::resource::v1::Resource;
use perfjournal::core::analyze::otlp::proto::trace::v1::{ResourceSpans, ScopeSpans, Span};

fn attr(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// The start of the hour two days ago (inside the spans' retention).
fn t0() -> u64 {
    let now = chrono::Utc::now().timestamp() as u64;
    (now - 2 * 86_400) / 3600 * 3600
}

/// A time as typed in the form.
fn typed(t: u64) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .unwrap()
        .format("%Y-%m-%d %H:%M")
        .to_string()
}

/// Twelve vLLM request spans from the hour's start, five minutes apart.
fn export(t0: u64) -> ExportTraceServiceRequest {
    use any_value::Value::*;
    let spans = (0..12u64)
        .map(|i| Span {
            name: "llm_request".into(),
            trace_id: (u128::from(i) + 1).to_be_bytes().to_vec(),
            span_id: (i + 1).to_be_bytes().to_vec(),
            start_time_unix_nano: (t0 + 300 * i) * 1_000_000_000,
            end_time_unix_nano: (t0 + 1 + 300 * i) * 1_000_000_000,
            attributes: vec![
                attr("gen_ai.request.id", StringValue(format!("cmpl-{i}"))),
                attr("gen_ai.latency.time_in_queue", DoubleValue(0.01 * i as f64)),
                attr("gen_ai.latency.time_in_model_prefill", DoubleValue(0.05)),
                attr(
                    "gen_ai.latency.time_to_first_token",
                    DoubleValue(0.07 + 0.01 * i as f64),
                ),
                attr("gen_ai.latency.e2e", DoubleValue(0.9)),
            ],
            ..Span::default()
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![attr("service.name", StringValue("vllm-chat".into()))],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

#[tokio::test]
async fn spans_between_two_times_are_taken_from_the_investigation_page_form() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app.open_investigation(&token, "Queueing at noon").await;
    // Received as vLLM's exporter sends them.
    use perfjournal::core::analyze::otlp::Message;
    let t0 = t0();
    let r = app
        .send(
            axum::http::Request::post("/v1/traces")
                .header("content-type", "application/x-protobuf")
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::from(export(t0).encode_to_vec()))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.body);
    let Some(b) = browser::start(
        &app,
        "spans_between_two_times_are_taken_from_the_investigation_page_form",
    )
    .await
    else {
        return;
    };
    b.sign_in("ada").await;
    b.goto(&format!("/investigations/{inv}")).await;
    b.wait_text("#otlp-spans h2", "request spans").await;
    // The service that sent spans is offered.
    assert_eq!(b.value("#span-service").await, "vllm-chat");
    // An end before the start is refused beside the field, what was typed kept.
    b.fill("#span-start", &typed(t0 + 1800)).await;
    b.fill("#span-end", &typed(t0)).await;
    b.click("#otlp-spans-submit").await;
    b.wait_text("p.field-error[data-field=end]", "after the start")
        .await;
    b.fill("#span-end", &typed(t0 + 3600)).await;
    b.click("#otlp-spans-submit").await;
    // The spans are queued as the API queues them; the page follows the worker's run.
    b.wait_text("#status", "queued").await;
    app.drain_queue().await;
    b.wait_text("#status", "done").await;
    b.wait_text("#section-spans", "6 request spans became rows")
        .await;
    b.screenshot("otlp-spans-artifact").await;
    let path = b.path().await;
    assert!(path.starts_with("/artifacts/"), "{path}");
    b.quit().await;
}
