//! "Open in Perfetto UI" on a trace artifact: the static script is served, the page
//! wires the button to our download URL, the summary says where to look, and in a real
//! browser the click opens ui.perfetto.dev and hands it the trace after PING/PONG
//! (window.open is stubbed, so nothing reaches Perfetto).

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::{browser, spawn_app, TestApp, PASSWORD};
use serde_json::Value;

/// Two launches and three kernels on one stream, starting at ts 5,000 µs.
fn trace() -> Vec<u8> {
    serde_json::json!({"distributedInfo": {"rank": 0}, "traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5000.0, "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 5010.0, "dur": 600.0, "args": {"correlation": 1, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 7000.0, "dur": 5.0, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 7010.0, "dur": 900.0, "args": {"correlation": 2, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "softmax", "pid": 0, "tid": 7, "ts": 7920.0, "dur": 50.0, "args": {"correlation": 3, "device": 0, "stream": 7}}
    ]})
    .to_string()
    .into_bytes()
}

async fn upload(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> i64 {
    let req = Request::post(format!("/api/v1/artifacts?name={name}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    id
}

#[tokio::test]
async fn the_script_is_served_and_the_trace_page_wires_the_button() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;

    let js = app.get("/static/perfetto.js").await;
    assert_eq!(js.status, StatusCode::OK);
    assert!(js.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(js.body.contains("'PING'") && js.body.contains("perfetto: {"));

    let id = upload(&mut app, &token, "rank0.trace.json", trace()).await;
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.select("#status"), vec!["done"]);
    let button = |attr: &str| page.select_attr("#open-perfetto", attr);
    assert_eq!(page.select("#open-perfetto"), vec!["Open in Perfetto UI"]);
    assert_eq!(
        button("data-trace-url"),
        vec![format!("/artifacts/{id}/download")]
    );
    assert_eq!(
        button("data-perfetto-origin"),
        vec!["https://ui.perfetto.dev"]
    );
    assert_eq!(button("data-trace-file"), vec!["rank0.trace.json"]);
    assert_eq!(button("data-note-id"), vec!["perfetto-note"]);
    assert_eq!(
        page.select_attr("script[src='/static/perfetto.js']", "defer")
            .len(),
        1
    );
    // No inline script anywhere on the page (the CSP would block it).
    assert!(page
        .select_attr("script", "src")
        .len()
        .eq(&page.select("script").len()));
    assert!(page.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("script-src 'self'"));

    // The URL the script fetches is the original, as an attachment.
    let file = app.get(&format!("/artifacts/{id}/download")).await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(
        file.headers[header::CONTENT_DISPOSITION],
        "attachment; filename=\"rank0.trace.json\""
    );
    assert_eq!(file.body.as_bytes(), trace().as_slice());

    // The summary says where to look: absolute ts and time from the first event.
    let kernels = page.select("#section-kernels tbody tr");
    let gemm = kernels.iter().find(|r| r.contains("sm90_gemm")).unwrap();
    assert!(gemm.contains("7,010 µs · +2.01 ms"), "{gemm}");
    let idle = page.select("#section-idle tbody tr");
    // The longest gap is 5,610 → 7,010 µs.
    assert!(idle[0].contains("5,610 µs · +0.61 ms"), "{idle:?}");

    // Other kinds have no button and no script.
    let prom = upload(
        &mut app,
        &token,
        "m.prom",
        b"vllm:num_requests_running 3\n".to_vec(),
    )
    .await;
    let page = app.get(&format!("/artifacts/{prom}")).await;
    assert!(page.select("#open-perfetto").is_empty());
    assert!(page
        .select_attr("script[src='/static/perfetto.js']", "src")
        .is_empty());
}

async fn script(b: &browser::Browser, js: &str) -> Value {
    b.driver.execute(js, vec![]).await.unwrap().json().clone()
}

#[tokio::test]
async fn clicking_opens_perfetto_and_posts_the_trace_after_the_handshake() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let id = upload(&mut app, &token, "rank0.trace.json", trace()).await;
    let Some(b) = browser::start(
        &app,
        "clicking_opens_perfetto_and_posts_the_trace_after_the_handshake",
    )
    .await
    else {
        return;
    };
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    // A blocked popup: window.open answers null, and the page says so.
    b.goto(&format!("/artifacts/{id}")).await;
    script(&b, "window.open = function () { return null; };").await;
    b.click("#open-perfetto").await;
    let note = b.wait_text("#perfetto-note", "blocked").await;
    assert!(note.contains("Allow pop-ups"), "{note}");

    // window.open stubbed with a same-origin frame's window standing in for Perfetto's:
    // it records what was posted and answers the first PING with PONG.
    b.goto(&format!("/artifacts/{id}")).await;
    script(
        &b,
        "window.__opened = []; window.__posted = [];
         window.open = function (url, target) {
           window.__opened.push([url, target]);
           var frame = document.createElement('iframe');
           frame.hidden = true;
           document.body.appendChild(frame);
           var ui = frame.contentWindow;
           ui.postMessage = function (message, origin) {
             window.__posted.push({message: message, origin: origin});
             if (message === 'PING') {
               window.dispatchEvent(new MessageEvent('message', {data: 'PONG', source: ui}));
             }
           };
           return ui;
         };",
    )
    .await;
    b.click("#open-perfetto").await;
    b.wait_text("#perfetto-note", "Sent to the Perfetto UI")
        .await;
    let opened = script(&b, "return window.__opened;").await;
    assert!(
        opened[0][0]
            .as_str()
            .unwrap()
            .starts_with("https://ui.perfetto.dev"),
        "{opened}"
    );
    let posted = script(
        &b,
        "return window.__posted.map(function (p) {
           var m = p.message;
           return m && m.perfetto
             ? {origin: p.origin, bytes: m.perfetto.buffer.byteLength, buffer: m.perfetto.buffer instanceof ArrayBuffer,
                title: m.perfetto.title, fileName: m.perfetto.fileName, url: m.perfetto.url}
             : {origin: p.origin, message: m};
         });",
    )
    .await;
    let posted = posted.as_array().unwrap();
    assert_eq!(posted[0]["message"], "PING", "{posted:?}");
    let trace_msg = posted.last().unwrap();
    assert_eq!(trace_msg["origin"], "https://ui.perfetto.dev");
    assert_eq!(trace_msg["buffer"], true);
    assert_eq!(trace_msg["bytes"].as_u64().unwrap(), trace().len() as u64);
    assert!(trace_msg["title"]
        .as_str()
        .unwrap()
        .contains("rank0.trace.json"));
    assert_eq!(trace_msg["fileName"], "rank0.trace.json");
    assert!(trace_msg["url"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/artifacts/{id}")));
    tokio::time::sleep(Duration::from_millis(50)).await;
    b.screenshot("artifact-perfetto").await;
    b.quit().await;
}
