//! The incident of issue 11, shared by the trust tests and their browser twins: an 8B
//! model on one H100 whose p95 TTFT is 3.2 s against 800 ms, chunked prefill off;
//! generated bench files and scrapes of it (or of a 70B model on eight GPUs).

use axum::http::StatusCode;

use super::TestApp;

/// Step 4's decode check: 21 ms per step at batch 64, context 4,096.
pub const DECODE_21_MS: &[(&str, &str)] = &[
    ("decode.measured_ms", "21"),
    ("decode.batch", "64"),
    ("decode.context", "4096"),
];

/// Step 1: p95 TTFT 3.2 s against a target of 800 ms.
pub const STEP1: &[(&str, &str)] = &[
    ("metric", "ttft"),
    ("percentile", "p95"),
    ("observed", "3.2 s"),
    ("target", "800 ms"),
];

pub const STEP0: &[(&str, &str)] = &[
    ("reproducible", "yes"),
    ("engine", "vllm"),
    ("engine_version", "0.6.3"),
    ("model", "llama-3.1-8b"),
    ("gpu_type", "h100-sxm"),
    ("gpu_count", "1"),
    ("tp", "1"),
    ("max_num_seqs", "256"),
    ("chunked_prefill", "off"),
    ("concurrency", "64"),
];

pub async fn save(app: &mut TestApp, url: &str, step: u8, fields: &[(&str, &str)]) {
    let r = app.post_form(&format!("{url}/steps/{step}"), fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "step {step}: {}", r.body);
}

/// A vLLM `bench serve --save-result` file of `model` with TTFTs around `ttft_ms`.
pub fn bench_file(model: &str, ttft_ms: f64, tag: &str) -> Vec<u8> {
    let n = 60;
    let ttfts: Vec<f64> = (0..n)
        .map(|i| ttft_ms * (1.0 + 0.3 * ((i * 37 % n) as f64 / n as f64)) / 1000.0)
        .collect();
    serde_json::json!({
        "date": format!("20261201-{tag}"), "backend": "vllm", "model_id": model,
        "num_prompts": n, "request_rate": "inf", "max_concurrency": 16,
        "completed": n, "failed": 0, "total_output_tokens": n * 8,
        "request_throughput": 10.0, "output_throughput": 80.0,
        "input_lens": vec![200; n], "output_lens": vec![8; n],
        "ttfts": ttfts, "itls": vec![vec![0.02; 7]; n], "errors": vec![""; n]
    })
    .to_string()
    .into_bytes()
}

/// Steps 0, 1 and 7 of the incident: 3,200 → 780 ms after chunked prefill, confirmed.
pub async fn incident_with_result(app: &mut TestApp, url: &str) {
    save(app, url, 0, STEP0).await;
    save(app, url, 1, STEP1).await;
    let mut step7: Vec<(String, String)> = STEP0
        .iter()
        .filter(|(k, _)| *k != "reproducible" && *k != "chunked_prefill")
        .map(|(k, v)| (format!("after_config.{k}"), v.to_string()))
        .collect();
    for (k, v) in [
        ("after_config.chunked_prefill", "on"),
        ("change", "chunked prefill"),
        ("after_value", "780 ms"),
        ("verdict", "confirmed"),
        ("quality", "200 paired generations identical"),
    ] {
        step7.push((k.to_string(), v.to_string()));
    }
    let fields: Vec<(&str, &str)> = step7
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    save(app, url, 7, &fields).await;
}

pub async fn upload_bench(app: &mut TestApp, token: &str, name: &str, tag: &str) -> i64 {
    let body = bench_file("meta-llama/Llama-3.3-70B-Instruct", 64.3, tag);
    super::uploads::upload_analyzed(app, token, name, body).await
}

pub async fn link_comparison(
    app: &mut TestApp,
    token: &str,
    [before, after]: [i64; 2],
    investigation: i64,
) -> super::Reply {
    let body = serde_json::json!({"baseline": [before], "candidate": [after],
        "variable": "chunked prefill", "investigation": investigation});
    app.api("POST", "/api/v1/comparisons", token, Some(body))
        .await
}

/// A vLLM `/metrics` scrape of `model` with queue, prefill, decode and TTFT histograms.
pub fn vllm_scrape(model: &str) -> Vec<u8> {
    let mut out = String::new();
    for (family, bounds, counts) in [
        ("request_queue_time_seconds", [0.5, 1.0, 2.5], [10, 40, 95]),
        (
            "request_prefill_time_seconds",
            [0.1, 0.25, 0.5],
            [30, 90, 99],
        ),
        ("request_decode_time_seconds", [1.0, 2.5, 5.0], [20, 70, 98]),
        ("time_to_first_token_seconds", [1.0, 2.5, 5.0], [5, 60, 97]),
    ] {
        out.push_str(&format!("# TYPE vllm:{family} histogram\n"));
        for (b, c) in bounds.iter().zip(counts) {
            out.push_str(&format!(
                "vllm:{family}_bucket{{le=\"{b}\",model_name=\"{model}\"}} {c}\n"
            ));
        }
        out.push_str(&format!(
            "vllm:{family}_bucket{{le=\"+Inf\",model_name=\"{model}\"}} 100\n\
             vllm:{family}_sum{{model_name=\"{model}\"}} 120\n\
             vllm:{family}_count{{model_name=\"{model}\"}} 100\n"
        ));
    }
    out.into_bytes()
}
