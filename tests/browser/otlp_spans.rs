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

/// Twelve vLLM request spans from 14:00 UTC on 2026-12-02, five minutes apart.
fn export() -> ExportTraceServiceRequest {
    use any_value::Value::*;
    let spans = (0..12u64)
        .map(|i| Span {
            name: "llm_request".into(),
            start_time_unix_nano: (1_796_220_000 + 300 * i) * 1_000_000_000,
            end_time_unix_nano: (1_796_220_001 + 300 * i) * 1_000_000_000,
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
    let groups = perfjournal::core::analyze::otlp::split(&export(), 3600, 0.0);
    perfjournal::otlp::store(&app.pool, groups, 3600, 1000)
        .await
        .unwrap();
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
    b.fill("#span-start", "2026-12-02 14:30").await;
    b.fill("#span-end", "2026-12-02 14:00").await;
    b.click("#otlp-spans-submit").await;
    b.wait_text("p.field-error[data-field=end]", "after the start")
        .await;
    b.fill("#span-end", "2026-12-02 15:00").await;
    b.click("#otlp-spans-submit").await;
    b.wait_text("#status", "done").await;
    b.wait_text("#section-spans", "6 request spans became rows")
        .await;
    b.screenshot("otlp-spans-artifact").await;
    let path = b.path().await;
    assert!(path.starts_with("/artifacts/"), "{path}");
    b.quit().await;
}
