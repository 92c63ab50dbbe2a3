//! The Prometheus window in a real browser: the admin registers a source on its page,
//! then the form on the investigation page (its times prefilled) reads a window from it;
//! a refused time comes back beside its field; the artifact page follows to `done`.

use crate::common;

use axum::extract::Query;
use axum::routing::get;
use axum::Json;
use common::{browser, spawn_app};
use serde_json::{json, Value};
use std::collections::HashMap;

/// A stand-in for a Prometheus server's HTTP API: one vLLM TTFT histogram and the
/// waiting gauge, answered in Prometheus's JSON shapes.
async fn fake_prometheus() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let ok = |data: Value| Json(json!({"status": "success", "data": data}));
    let router = axum::Router::new()
        .route(
            "/api/v1/label/__name__/values",
            get(move || async move {
                ok(json!([
                    "vllm:time_to_first_token_seconds_bucket",
                    "vllm:num_requests_waiting"
                ]))
            }),
        )
        .route(
            "/api/v1/query",
            get(move |Query(q): Query<HashMap<String, String>>| async move {
                let query = q.get("query").cloned().unwrap_or_default();
                let result = if query.contains("by (le)") {
                    [("0.1", "20"), ("0.5", "60"), ("1", "78"), ("+Inf", "80")]
                        .iter()
                        .map(|(le, v)| json!({"metric": {"le": le}, "value": [1.0, v]}))
                        .collect::<Vec<_>>()
                } else {
                    vec![json!({"metric": {}, "value": [1.0, "24"]})]
                };
                ok(json!({"resultType": "vector", "result": result}))
            }),
        )
        .route(
            "/api/v1/query_range",
            get(move || async move {
                ok(
                    json!({"resultType": "matrix", "result": [{"metric": {}, "values": [
                        [1796216400.0, "0"], [1796216460.0, "3"], [1796216520.0, "1"]
                    ]}]}),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (addr, task)
}

#[tokio::test]
async fn a_window_is_read_from_the_investigation_page_form() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app
        .open_investigation(&token, "TTFT doubled yesterday")
        .await;
    let (addr, server) = fake_prometheus().await;
    let Some(b) = browser::start(&app, "a_window_is_read_from_the_investigation_page_form").await
    else {
        return;
    };
    b.sign_in("ada").await;
    b.goto("/admin/capture-hosts").await;
    b.fill("#host_port", &addr.to_string()).await;
    b.click("form[action='/admin/capture-hosts'] button[type=submit]")
        .await;
    b.wait_text("#capture-hosts", &addr.to_string()).await;

    // The admin registers the fleet's Prometheus with a bearer token.
    b.goto("/admin/prometheus").await;
    b.fill("#name", "fleet-prom").await;
    b.fill("#url", &format!("http://{addr}")).await;
    b.click("#auth option[value=bearer]").await;
    b.fill("#secret", "a-token").await;
    b.click("#add-source button[type=submit]").await;
    b.wait_text("#sources", "fleet-prom").await;
    assert!(b.text("#sources").await.contains("secret kept"));

    // The investigation page offers the form, its times prefilled.
    b.goto(&format!("/investigations/{inv}")).await;
    b.wait_text("#prometheus-window h2", "Prometheus").await;
    let start = b.value("#prom-start").await;
    assert_eq!(start.len(), "2026-12-02 14:00:00".len(), "{start:?}");
    // The form fits a phone's width.
    b.driver.set_window_rect(0, 0, 390, 900).await.unwrap();
    let widths = b
        .driver
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap()
        .json()
        .clone();
    assert!(widths[0].as_i64() <= widths[1].as_i64(), "{widths}");
    b.driver
        .execute(
            "document.getElementById('prometheus-window').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
    b.screenshot("prometheus-window-form-narrow").await;
    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.click("#prom-source option:nth-child(2)").await;
    // An end before the start is refused beside the field, what was typed kept.
    b.fill("#prom-start", "2026-12-02 14:00").await;
    b.fill("#prom-end", "2026-12-02 13:00").await;
    b.click("#prometheus-submit").await;
    b.wait_text("p.field-error[data-field=end]", "after the start")
        .await;
    b.fill("#prom-end", "2026-12-02 15:00").await;
    b.click("#prometheus-submit").await;
    b.wait_text("#status", "done").await;
    b.wait_text("#section-window", "only as fine as the bucket")
        .await;
    assert!(b.text("#section-window").await.contains("ttft_ms"));
    b.screenshot("prometheus-window-artifact").await;
    let path = b.path().await;
    assert!(path.starts_with("/artifacts/"), "{path}");
    // The window compares with another (here with itself) on the comparison page. The
    // page followed the analysis in place; the link comes with a fresh load.
    b.goto(&path).await;
    b.click("#compare-window").await;
    b.wait_text("h1", "Compare two Prometheus windows").await;
    b.click("#window-after option:nth-child(2)").await;
    b.click("#window-compare-submit").await;
    b.wait_text("#window-deltas", "ttft").await;
    assert!(b.text("#window-deltas").await.contains("within one bucket"));
    b.screenshot("prometheus-window-comparison").await;
    server.abort();
    b.quit().await;
}
