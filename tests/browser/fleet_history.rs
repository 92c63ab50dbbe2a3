//! The team's own runs calibrate the expected cost: an investigation whose setup past
//! investigations measured shows that history beside the expected step, and its band
//! reads the new step against the fleet's ratio.

use serde_json::json;

use crate::common;

use common::{browser, spawn_app, TestApp};

const SETUP: &str = r#"{"reproducible": "yes", "engine": "vLLM 0.11.0", "model": "llama-3.1-8b",
    "gpu_type": "h100-sxm", "tp": 1, "concurrency": 64}"#;

/// An investigation of the shared setup through the API, with steps 0 to 3 recorded
/// and, when given, step 4's measured decode step at batch 64 and context 4,096.
async fn investigation(app: &mut TestApp, token: &str, title: &str, decode_ms: Option<f64>) -> i64 {
    let id = app.open_investigation(token, title).await;
    let base = format!("/api/v1/investigations/{id}");
    // steps 1 and 2 measured the same ITL as step 4: one point each investigation
    let itl = decode_ms.unwrap_or(24.0);
    let mut steps = vec![
        (0u8, serde_json::from_str(SETUP).unwrap()),
        (
            1,
            json!({"metric": "itl", "percentile": "p50", "observed": itl, "target": 15}),
        ),
        (2, json!({"decode": {"p50": itl, "p95": 30, "p99": 40}})),
        (3, json!({"gpu_total": 92, "cpu_total": 30, "wall": 100})),
    ];
    if let Some(ms) = decode_ms {
        steps.push((
            4,
            json!({"decode": {"measured_ms": ms, "batch": 64, "context": 4096}}),
        ));
    }
    for (step, body) in steps {
        let r = app
            .api("PUT", &format!("{base}/steps/{step}"), token, Some(body))
            .await;
        assert_eq!(r.status.as_u16(), 200, "step {step}: {}", r.body);
    }
    id
}

#[tokio::test]
async fn past_runs_of_the_setup_show_beside_the_expected_step() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    // Three past investigations measured this setup at about 1.3× the published
    // expectation (17.61 ms at batch 64, context 4,096): the team's normal.
    let mut past = Vec::new();
    for (title, ms) in [
        ("Decode check after the driver update", 22.6),
        ("Evening ITL review", 23.0),
        ("Batch 64 baseline", 23.4),
    ] {
        past.push(investigation(&mut app, &token, title, Some(ms)).await);
    }
    // Another setup's history does not count.
    let other = app.open_investigation(&token, "An SGLang run").await;
    for (step, body) in [
        (
            0u8,
            json!({"reproducible": "yes", "engine": "sglang", "model": "llama-3.1-8b", "gpu_type": "h100-sxm"}),
        ),
        (
            4,
            json!({"decode": {"measured_ms": 40, "batch": 64, "context": 4096}}),
        ),
    ] {
        app.api(
            "PUT",
            &format!("/api/v1/investigations/{other}/steps/{step}"),
            &token,
            Some(body),
        )
        .await;
    }
    let id = investigation(&mut app, &token, "ITL looks high on the 8B", None).await;

    let test = "past_runs_of_the_setup_show_beside_the_expected_step";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    b.goto(&format!("/investigations/{id}/steps/4")).await;
    b.wait_text("h1.step-title", "Step 4").await;
    b.fill("[name='decode.measured_ms']", "24").await;
    b.fill("[name='decode.batch']", "64").await;
    b.fill("[name='decode.context']", "4096").await;
    b.click(".step-form button[type=submit]").await;

    // The history beside the expected step: 1.3× over three steps, each linked.
    let sentence = b
        .wait_text(".fleet-sentence", "On your fleet this setup has run at")
        .await;
    assert!(sentence.contains("run at 1.3"), "{sentence}");
    assert!(
        sentence.contains("3 measured steps in 3 investigations"),
        "{sentence}"
    );
    let table = b.text(".fleet-points").await;
    for title in [
        "Decode check after the driver update",
        "Evening ITL review",
        "Batch 64 baseline",
    ] {
        assert!(table.contains(title), "{table}");
    }
    assert!(!table.contains("SGLang"), "{table}");
    // 24 ms is 1.36× the published expectation (overhead), but about this team's
    // normal: against the fleet's 1.31× it reads healthy.
    let band = b.text(".decode-band").await;
    assert!(
        band.contains("times this setup's ratio on your fleet"),
        "{band}"
    );
    assert_eq!(b.text(".decode-band .band-label").await, "healthy");
    assert!(b
        .text(".fleet-history")
        .await
        .contains("vllm · llama-3.1-8b · h100-sxm · TP 1 · bf16"));
    b.screenshot("fleet-history").await;
    assert!(b.console_errors().await.is_empty());
    b.quit().await;
    let _ = past;
}
