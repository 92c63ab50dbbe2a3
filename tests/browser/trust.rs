//! Issue 11 in a real browser: opening a later step changes nothing until it is saved,
//! a fill merges into the form and says what it changed, and a comparison of another
//! setup never replaces the RESULT recorded in step 7.

use crate::common;

use common::incident::{
    incident_with_result, link_comparison, save, upload_bench, vllm_scrape, STEP0, STEP1,
};
use common::{browser, TestApp, PASSWORD};

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn login(b: &browser::Browser) {
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;
}

#[tokio::test]
async fn opening_a_later_step_warns_and_records_the_skip_only_on_save() {
    let (mut app, url) = common::app_with_investigation("p95 TTFT 3.2 s").await;
    save(&mut app, &url, 0, STEP0).await;
    let test = "opening_a_later_step_warns_and_records_the_skip_only_on_save";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    login(&b).await;
    let events = count(&app, "investigation_events").await;
    b.goto(&format!("{url}/steps/5")).await;
    b.wait_text(
        ".skip-warning",
        "Kernel work is the most expensive place to start",
    )
    .await;
    b.goto(&format!("{url}/steps/6")).await;
    b.wait_text(".skip-warning", "A fix can only be estimated")
        .await;
    assert_eq!(count(&app, "investigation_skips").await, 0);
    assert_eq!(count(&app, "investigation_events").await, events);

    b.goto(&format!("{url}/steps/5")).await;
    b.fill("[name='kernels[0].name']", "flash_fwd").await;
    b.fill("[name='kernels[0].share']", "40%").await;
    b.click(".step-form button[type=submit]").await;
    b.wait_text(".rail-step.state-skipped .skip-reason", "Kernel work")
        .await;
    assert_eq!(count(&app, "investigation_skips").await, 1);
    b.screenshot("trust-skip-on-save").await;
    b.quit().await;
}

#[tokio::test]
async fn a_fill_keeps_what_was_typed_and_names_what_it_changed() {
    let (mut app, url) = common::app_with_investigation("p95 TTFT 3.2 s").await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut app, &url, 1, STEP1).await;
    save(
        &mut app,
        &url,
        2,
        &[
            ("tokenize.p50", "4"),
            ("tokenize.p95", "9"),
            ("queue_wait.p50", "100"),
            ("queue_wait.p95", "200"),
        ],
    )
    .await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("vllm-70b.prom&investigation={id}"),
        vllm_scrape("meta-llama/Llama-3.3-70B-Instruct"),
    )
    .await;
    let test = "a_fill_keeps_what_was_typed_and_names_what_it_changed";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    login(&b).await;
    b.goto(&format!("{url}/steps/2")).await;
    b.click(".artifact-fill button[type=submit]").await;
    b.wait_text(".fill-notice .fill-changed", "queue_wait.p50")
        .await;
    b.wait_text(".fill-notice .fill-kept", "tokenize.p50").await;
    b.wait_text(".fill-setup-warning", "model: step 0 froze llama-3.1-8b")
        .await;
    b.wait_text("small.bucket[data-field='queue_wait.p95']", "ms bucket")
        .await;
    b.screenshot("trust-fill-merge").await;
    b.click(".step-form button[type=submit]").await;
    b.wait_text(".results-card .dominant", "Dominant phase")
        .await;
    let stored: serde_json::Value =
        sqlx::query_scalar("SELECT data FROM investigation_steps WHERE step = 2")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let rows = stored["rows"].as_array().unwrap();
    assert_eq!(rows[0]["phase"], "tokenize");
    assert_eq!(rows[0]["p50"], 4.0);
    assert!(rows.iter().any(|r| r["phase"] == "prefill"), "{stored}");
    assert_ne!(rows[1]["p50"], 100.0, "{stored}");
    b.quit().await;
}

#[tokio::test]
async fn the_draft_keeps_step_seven_when_the_linked_comparison_is_of_another_setup() {
    let (mut app, url) = common::app_with_investigation("p95 TTFT 3.2 s").await;
    incident_with_result(&mut app, &url).await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let before = upload_bench(&mut app, &token, "70b-before.json", "a").await;
    let after = upload_bench(&mut app, &token, "70b-after.json", "b").await;
    let r = link_comparison(&mut app, &token, [before, after], id).await;
    assert_eq!(r.json()["verdict"], "invalid_comparison", "{}", r.body);
    let test = "the_draft_keeps_step_seven_when_the_linked_comparison_is_of_another_setup";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    login(&b).await;
    b.goto(&format!("{url}/steps/7")).await;
    b.click(".draft-form button[type=submit]").await;
    let result = b.wait_text("#result", "780 ms").await;
    assert!(result.contains("3,200 ms"), "{result}");
    assert!(
        result.contains("A linked comparison was not used for this RESULT: Invalid comparison"),
        "{result}"
    );
    assert!(!result.starts_with("Inconclusive"), "{result}");
    b.screenshot("trust-draft-keeps-result").await;
    b.quit().await;
}
