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
