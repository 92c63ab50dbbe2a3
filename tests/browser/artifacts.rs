//! Uploading an artifact in a real browser: file input → htmx upload → the artifact
//! page with its analysis and pictures.

use crate::common;

use std::io::Write;

use common::{browser, spawn_app, PASSWORD};
use thirtyfour::prelude::*;

fn synthetic_trace() -> Vec<u8> {
    let mut events = Vec::new();
    for i in 0..40u64 {
        let t = i as f64 * 100.0;
        events.push(
            serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
            "pid": 1, "tid": 1, "ts": t, "dur": 4.0, "args": {"correlation": i}}),
        );
        let (name, stream) = if i % 4 == 3 {
            ("ncclKernel_AllReduce", 8)
        } else {
            ("sm90_gemm", 7)
        };
        events.push(
            serde_json::json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0,
            "tid": stream, "ts": t + 10.0, "dur": 60.0, "args": {"correlation": i}}),
        );
    }
    let doc = serde_json::json!({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": events});
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(doc.to_string().as_bytes()).unwrap();
    enc.finish().unwrap()
}

#[tokio::test]
async fn upload_a_trace_and_see_its_analysis_in_a_browser() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let Some(b) = browser::start(&app, "upload_a_trace_and_see_its_analysis_in_a_browser").await
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rank0.pt.trace.json.gz");
    std::fs::write(&file, synthetic_trace()).unwrap();

    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    b.goto("/artifacts").await;
    let input = b.driver.find(By::Css("#upload-file")).await.unwrap();
    input.send_keys(file.display().to_string()).await.unwrap();
    b.click("form.upload button[type=submit]").await;
    b.wait_text("#kind", "pytorch_trace").await;
    b.wait_text("#status", "done").await;
    let temporal = b.wait_text("#section-temporal", "GPU busy").await;
    assert!(temporal.contains("GPU busy"), "{temporal}");
    let charts = b
        .driver
        .find_all(By::Css("#section-temporal svg.chart"))
        .await
        .unwrap();
    assert_eq!(charts.len(), 2, "busy/idle bar and per-stream timeline");
    b.wait_text("#section-kernels", "sm90_gemm").await;
    b.screenshot("artifact-trace").await;
    assert!(b.path().await.starts_with("/artifacts/"));
    b.quit().await;
}
