//! A capacity proposal in a real browser: written by one editor, reviewed and approved
//! by a second, rolled out, and scored against an observation.

use crate::common;

use common::{browser, spawn_app, PASSWORD};
use perfjournal::auth::Role;

async fn sign_in(b: &browser::Browser, name: &str) {
    b.goto("/login").await;
    b.fill("#name", name).await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", name).await;
}

async fn sign_out(b: &browser::Browser) {
    b.click(".user-menu summary").await;
    b.click(".user-menu button[type=submit]").await;
    b.wait_text("main h1", "Sign in").await;
}

#[tokio::test]
async fn a_proposal_is_written_reviewed_rolled_out_and_scored_in_a_browser() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("bob", Role::Editor).await;
    let test = "a_proposal_is_written_reviewed_rolled_out_and_scored_in_a_browser";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };

    // ada writes it through the form.
    sign_in(&b, "ada").await;
    b.click(".areas a[href='/proposals']").await;
    b.wait_text("main h1", "Proposals").await;
    b.click("#new-proposal").await;
    b.wait_text("main h1", "New proposal").await;
    for (field, value) in [
        ("#title", "chat-api on H100"),
        (
            "#question",
            "serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms",
        ),
        ("#model", "llama-3.1-8b"),
        ("#gpu_type", "h100-sxm"),
        // TP 3 does not divide the heads first: the form says so beside the field.
        ("#gpus_per_replica", "3"),
        ("#tp", "3"),
        ("#engine", "vllm"),
        ("#engine_version", "0.6.3"),
        ("#max_num_batched_tokens", "1536"),
        ("#arrival_rate", "45"),
        ("#prompt_tokens_mean", "1500"),
        ("#prompt_tokens_p95", "4000"),
        ("#output_tokens_mean", "300"),
        ("#output_tokens_p95", "800"),
        ("#shared_prefix_tokens", "600"),
        ("#prefix_hit_rate", "0.8"),
        ("#slo_ttft_p95_ms", "800"),
        ("#slo_itl_p99_ms", "60"),
        ("#gpu_hour_usd", "2.5"),
    ] {
        b.fill(field, value).await;
    }
    b.click("#save-proposal").await;
    let said = b.wait_text("#tp-error", "must divide").await;
    assert!(said.contains("32 attention heads"), "{said}");
    b.fill("#tp", "1").await;
    b.fill("#gpus_per_replica", "1").await;
    b.click("#save-proposal").await;
    let headline = b.wait_text("#headline", "replicas").await;
    assert!(headline.contains("GPUs"), "{headline}");
    assert_eq!(b.text("#state").await, "draft");
    b.screenshot("proposal-sized").await;
    let url = b.path().await;

    // ada asks for review.
    b.click("#review-state option[value='in_review']").await;
    b.click("#submit-review").await;
    b.wait_text("#state", "in review").await;
    // ada owns it: the form offers her no verdict, and says who gives one.
    let offered = b.text("#review-state").await;
    assert!(
        !offered.contains("approved") && !offered.contains("rejected"),
        "{offered}"
    );
    b.wait_text("#owner-review-note", "another editor").await;
    // bob comments through the API while ada's page is open: her comment, sent from the
    // older version, is refused with what changed, and kept in the form to send again.
    let bob_token = app.api_token("bob").await;
    let r = app
        .api(
            "POST",
            &format!("/api/v1{url}/review"),
            &bob_token,
            Some(serde_json::json!({"comment": "looking at it now", "version": 2})),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.body);
    b.fill("#review-comment", "FP8 KV would double the pool")
        .await;
    b.click("#submit-review").await;
    let why = b
        .wait_text("#review-error", "changed since your version")
        .await;
    assert!(why.contains("bob commented"), "{why}");
    assert_eq!(
        b.value("#review-comment").await,
        "FP8 KV would double the pool"
    );
    b.screenshot("proposal-review-refused").await;
    b.click("#submit-review").await;
    b.wait_text("#history", "FP8 KV would double the pool")
        .await;
    sign_out(&b).await;

    // bob reviews as a second user: a comment on the workload, then approves.
    sign_in(&b, "bob").await;
    b.goto(&url).await;
    b.click("#review-section option[value='workload']").await;
    b.fill("#review-comment", "p95 prompt from last month's logs?")
        .await;
    b.click("#submit-review").await;
    b.wait_text("#history", "p95 prompt from last month's logs?")
        .await;
    b.click("#review-state option[value='approved']").await;
    b.click("#review-section option[value='sizing']").await;
    b.click("#submit-review").await;
    b.wait_text("#state", "approved").await;
    let history = b.text("#history").await;
    assert!(
        history.contains("bob moved it from in review to approved"),
        "{history}"
    );
    sign_out(&b).await;

    // ada rolls it out and attaches what production measured.
    sign_in(&b, "ada").await;
    b.goto(&url).await;
    b.click("#review-state option[value='rolled_out']").await;
    b.click("#submit-review").await;
    b.wait_text("#state", "rolled out").await;
    b.fill("#obs-tokens_per_s_per_replica", "4000").await;
    b.fill("#obs-ttft_p95_ms", "250").await;
    b.click("#submit-observed").await;
    let scored = b.wait_text("#after-rollout table", "Error").await;
    assert!(scored.contains("Output tokens/s per replica"), "{scored}");
    assert!(scored.contains("%"), "{scored}");
    b.screenshot("proposal-scored").await;

    // The list shows the running record per estimator.
    b.goto("/proposals").await;
    let record = b.wait_text("#error-record", "mixed-step").await;
    assert!(record.contains("Mean |error|"), "{record}");
    b.quit().await;
}
