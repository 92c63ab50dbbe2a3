//! A comparison of two vLLM benchmark runs, made and read in a real browser.
//!
//! Only one real `vllm bench serve --save-result` file exists among the fixtures
//! (`$PERFJOURNAL_REAL_FIXTURES/vllm_bench/*.json`, Llama-3.3-70B at 4 req/s). It is
//! the baseline; the candidate is derived from it by multiplying every request's
//! TTFT by 0.8 and leaving everything else (settings, ITLs, lengths) as measured —
//! a change that cuts time to first token by a fifth and nothing else.

use crate::common;

use common::uploads::upload_analyzed;
use common::{browser, spawn_app, PASSWORD};
use serde_json::Value;

fn real_bench_file() -> Option<std::path::PathBuf> {
    let root = std::env::var_os("PERFJOURNAL_REAL_FIXTURES")?;
    let dir = std::path::Path::new(&root).join("vllm_bench");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().next()
}

/// The candidate: the same run with every TTFT × 0.8.
fn faster_first_token(original: &[u8]) -> Vec<u8> {
    let mut doc: Value = serde_json::from_slice(original).expect("the fixture is JSON");
    let ttfts = doc["ttfts"].as_array_mut().expect("per-request ttfts");
    for t in ttfts.iter_mut() {
        *t = Value::from(t.as_f64().unwrap() * 0.8);
    }
    doc["date"] = Value::from("derived: ttfts x 0.8");
    serde_json::to_vec(&doc).unwrap()
}

#[tokio::test]
async fn comparison_of_two_vllm_runs_in_a_browser() {
    let Some(path) = real_bench_file() else {
        common::skip(
            "comparison_of_two_vllm_runs_in_a_browser",
            "PERFJOURNAL_REAL_FIXTURES is unset (it names the folder holding vllm_bench/*.json)",
        );
        return;
    };
    let mut app = spawn_app().await;
    let Some(b) = browser::start(&app, "comparison_of_two_vllm_runs_in_a_browser").await else {
        return;
    };

    // Sign up as the first admin in the browser.
    b.goto("/").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.fill("#confirm", PASSWORD).await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    // Both runs go in through the API, as a benchmark job would send them.
    let token = app.api_token("ada").await;
    let original = std::fs::read(&path).unwrap();
    let before = upload_analyzed(&mut app, &token, "baseline.json", original.clone()).await;
    let after = upload_analyzed(
        &mut app,
        &token,
        "candidate.json",
        faster_first_token(&original),
    )
    .await;

    // The comparison is made through the page's form.
    b.click(".areas a[href='/comparisons']").await;
    b.wait_text("main h1", "Comparisons").await;
    b.click(&format!("#baseline-{before}")).await;
    b.click(&format!("#candidate-{after}")).await;
    b.fill("#variable", "enable chunked prefill").await;
    b.screenshot("comparison-form").await;
    b.click("#compare").await;

    let verdict = b.wait_text("#verdict-label", "Improved").await;
    assert_eq!(verdict, "Improved");
    let headline = b.text(".verdict-headline").await;
    assert!(headline.contains("p95 TTFT fell"), "{headline}");
    assert!(headline.contains("(-20.0%)"), "{headline}");
    let rows = b
        .driver
        .find_all(thirtyfour::By::Css("#metrics tbody tr"))
        .await
        .unwrap();
    assert_eq!(
        rows.len(),
        16,
        "TTFT, ITL, TPOT and E2E at four percentiles"
    );
    let head = b.text("#metrics tr.headline-row").await;
    assert!(head.starts_with("TTFT p95"), "{head}");
    assert!(head.contains("Improved"), "{head}");
    let charts = b
        .driver
        .find_all(thirtyfour::By::Css("#pictures svg"))
        .await
        .unwrap();
    assert_eq!(charts.len(), 4);
    let result = b.text("#journal-result").await;
    assert!(result.contains("comparison: /comparisons/"), "{result}");
    b.screenshot("comparison").await;
    b.driver
        .execute(
            "document.querySelector('#metrics').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
    b.screenshot("comparison-metrics").await;
    b.quit().await;
}

/// A request log shaped like the incident (Qwen3-30B-A3B on 2×H100, TP 2): TTFT about
/// `ttft` ms, each request's median gap between tokens about `itl` ms (`itl_p50_ms`),
/// 200 output tokens.
fn incident_log(ttft: f64, itl: f64, tag: &str) -> Vec<u8> {
    let n = 600;
    let mut out = String::new();
    for i in 0..n {
        let u = (((i * 37) % n) as f64 + 0.5) / n as f64;
        let first = ttft * (1.0 + 0.05 * u);
        let gap = itl * (1.0 + 0.1 * u);
        let decode = gap * 199.0;
        out.push_str(
            &serde_json::json!({
                "request_id": format!("{tag}{i}"), "arrival_ts": 1_764_400_000.0 + i as f64,
                "queue_wait_ms": 5.0, "prefill_ms": 178.0 * (1.0 + 0.05 * u),
                "first_token_ms": first, "decode_ms": decode, "total_ms": first + decode,
                "itl_p50_ms": gap, "itl_p99_ms": 2.0 * gap,
                "prompt_tokens": 1800, "output_tokens": 200,
            })
            .to_string(),
        );
        out.push('\n');
    }
    out.into_bytes()
}

async fn upload_to(
    app: &mut common::TestApp,
    token: &str,
    name: &str,
    body: Vec<u8>,
    investigation: i64,
) -> i64 {
    use axum::http::{header, Request, StatusCode};
    let req = Request::post(format!(
        "/api/v1/artifacts?name={name}&investigation={investigation}"
    ))
    .header(header::AUTHORIZATION, format!("Bearer {token}"))
    .header(header::CONTENT_TYPE, "application/octet-stream")
    .body(axum::body::Body::from(body))
    .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.json()["status"], "done", "{}", r.body);
    r.json()["id"].as_i64().unwrap()
}

#[tokio::test]
async fn an_itl_comparison_of_two_request_logs_in_a_browser() {
    let mut app = spawn_app().await;
    let Some(b) = browser::start(&app, "an_itl_comparison_of_two_request_logs_in_a_browser").await
    else {
        return;
    };
    b.goto("/").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.fill("#confirm", PASSWORD).await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    // The upgraded build's log (ITL 23 ms) is the baseline, the fixed build's (14 ms,
    // TTFT +0.7%) the candidate; the before log is uploaded last.
    let token = app.api_token("ada").await;
    let inv = app
        .open_investigation(&token, "ITL p50 14 → 23 ms after a vLLM upgrade")
        .await;
    let after = upload_to(
        &mut app,
        &token,
        "fixed-after.jsonl",
        incident_log(1007.0, 14.0, "a"),
        inv,
    )
    .await;
    let before = upload_to(
        &mut app,
        &token,
        "upgraded-before.jsonl",
        incident_log(1000.0, 23.0, "b"),
        inv,
    )
    .await;

    // The form for the investigation ticks the pair by name, not the newest upload.
    b.goto(&format!("/comparisons?investigation={inv}")).await;
    b.wait_text("main h1", "Comparisons").await;
    assert!(b.is_ticked(&format!("#baseline-{before}")).await);
    assert!(b.is_ticked(&format!("#candidate-{after}")).await);
    assert!(!b.is_ticked(&format!("#candidate-{before}")).await);
    assert!(b.text("#pick-note").await.contains("upgraded-before.jsonl"));
    assert_eq!(b.value("#min_effect_pct").await, "2");
    b.fill("#variable", "vLLM version").await;
    b.click("#metric option[value=itl_ms]").await;
    b.click("#percentile option[value=p50]").await;
    b.screenshot("itl-comparison-form").await;
    b.click("#compare").await;

    let verdict = b.wait_text("#verdict-label", "Improved").await;
    assert_eq!(verdict, "Improved");
    let headline = b.text(".verdict-headline").await;
    assert!(headline.contains("p50 ITL fell from 24"), "{headline}");
    assert!(b.text("#itl-source").await.contains("itl_p50_ms"));
    assert_eq!(b.text("#min-effect").await, "2%");
    // TTFT moved +0.7%: real, but under 2% — "No change" on every TTFT row, no
    // "Regressed" anywhere, and nothing listed as a finding.
    let rows = b
        .driver
        .find_all(thirtyfour::By::Css("#metrics tbody tr"))
        .await
        .unwrap();
    let mut ttft_rows = 0;
    for row in rows {
        let text = row.text().await.unwrap();
        assert!(!text.contains("Regressed"), "{text}");
        if text.starts_with("TTFT") {
            assert!(text.contains("No change"), "{text}");
            ttft_rows += 1;
        }
    }
    assert_eq!(ttft_rows, 4);
    assert!(!b.text("#reasons").await.contains("Elsewhere"));
    b.screenshot("itl-comparison").await;
    b.quit().await;
}
