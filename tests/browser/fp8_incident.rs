//! An incident off the reference path, in a real browser: a p99 ITL spike on Llama 3.1
//! 70B in FP8 on four H100s with chunked prefill, from step 0 to a published entry, with
//! the tail estimators offered at step 2 and a proposal sized at the setting the change
//! measured.

use crate::common;

use common::{browser, spawn_app};

async fn submit_and_wait(b: &browser::Browser, css: &str, needle: &str) -> String {
    b.click(".step-form button[type=submit]").await;
    b.wait_text(css, needle).await
}

async fn next(b: &browser::Browser, title: &str) {
    b.click(".step-nav a.next-link").await;
    b.wait_text("h1.step-title", title).await;
}

#[tokio::test]
async fn an_fp8_itl_tail_from_step_zero_to_a_published_entry_and_a_proposal() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let test = "an_fp8_itl_tail_from_step_zero_to_a_published_entry_and_a_proposal";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;

    b.goto("/investigations/new").await;
    b.wait_text("main h1", "Open an investigation").await;
    b.fill(
        "#title",
        "p99 ITL 140 ms on chat-api since Tuesday's deploy",
    )
    .await;
    b.fill("#service", "chat-api").await;
    b.fill("#tags", "itl, fp8").await;
    b.click("form[action='/investigations'] button[type=submit]")
        .await;
    b.wait_text("h1.inv-title", "p99 ITL 140 ms").await;
    let inv = b.path().await;
    b.click(".next-step a.button").await;
    b.wait_text("h1.step-title", "Step 0").await;

    // Step 0: FP8 weights and activations, TP 4, chunked prefill at 8,192 tokens.
    b.click("#f-reproducible option[value=yes]").await;
    for (name, value) in [
        ("engine", "vllm"),
        ("engine_version", "0.6.3"),
        ("model", "llama-3.1-70b"),
        ("weight_dtype", "fp8"),
        ("activation_dtype", "fp8"),
        ("gpu_type", "H100 SXM 80GB"),
        ("tp", "4"),
        ("max_num_batched_tokens", "8,192"),
        ("concurrency", "48"),
        (
            "prompt_len_dist",
            "22k-token prompts about every 5 s among short chats",
        ),
    ] {
        b.fill(&format!("[name='{name}']"), value).await;
    }
    b.click("#f-chunked_prefill option[value=on]").await;
    submit_and_wait(&b, ".catalog-match[data-field=gpu_type]", "h100-sxm").await;

    // Step 1: p99 ITL 140 ms against a 60 ms SLO.
    next(&b, "Step 1").await;
    b.click("#f-metric option[value=itl]").await;
    b.click("#f-percentile option[value=p99]").await;
    b.fill("[name=observed]", "140 ms").await;
    b.fill("[name=target]", "60 ms").await;
    submit_and_wait(&b, ".gap-ratio .value", "2.33×").await;

    // Step 2: decode p50 23 ms, p99 136 ms. The tail rule holds, and the tail
    // estimators come before the floor.
    next(&b, "Step 2").await;
    for (name, value) in [("decode.p50", "23"), ("decode.p99", "136")] {
        b.fill(&format!("[name='{name}']"), value).await;
    }
    let rule = submit_and_wait(&b, ".tail-rule", "5.9×").await;
    assert!(rule.contains("p99") && rule.contains("2×"), "{rule}");
    let first = b.text("ol.next-checks li:first-child").await;
    assert!(first.contains("periodic-tail"), "{first}");
    let last = b.text("ol.next-checks li:last-child").await;
    assert!(last.contains("floor"), "{last}");
    assert!(b.text(".mixed-step-link").await.contains("mixed-step"));
    b.screenshot("fp8-step2").await;

    // periodic-tail from the measured plain step: at FP8 peak, 22k-token prompts every
    // 5 s make the slow steps over 1% of all steps, so p99 lands on them.
    b.click(".tail-estimator-link").await;
    b.wait_text("main h1", "periodic-tail").await;
    let url = b.path().await;
    assert!(
        url.contains("plain_step_ms=23")
            && url.contains("weight_dtype=fp8")
            && url.contains("activation_dtype=fp8")
            && url.contains("chunk_tokens=8192")
            && url.contains("tp=4"),
        "{url}"
    );
    b.fill("[name=context]", "2000").await;
    b.fill("[name=long_prompt_tokens]", "22000").await;
    b.fill("[name=period_s]", "5").await;
    b.click("#estimate-form button[type=submit]").await;
    let sanity = b.wait_text("#sanity", "land on the slow steps").await;
    assert!(sanity.contains("p99 and above"), "{sanity}");
    assert!(
        sanity.contains("The plain step is the measured one"),
        "{sanity}"
    );
    let chain = b.text("#chain").await;
    assert!(
        chain.contains("FP8"),
        "the chain names the FP8 peak: {chain}"
    );
    b.screenshot("fp8-periodic-tail").await;

    // Steps 3 to 6, briefly.
    b.goto(&format!("{inv}/steps/3")).await;
    b.wait_text("h1.step-title", "Step 3").await;
    b.fill("[name=gpu_total]", "92").await;
    b.fill("[name=cpu_total]", "30").await;
    b.fill("[name=wall]", "100").await;
    submit_and_wait(&b, ".classification", "GPU").await;
    next(&b, "Step 4").await;
    b.fill("[name='decode.measured_ms']", "23").await;
    b.fill("[name='decode.context']", "2000").await;
    submit_and_wait(&b, ".decode-band .ratio", "of the physical limit").await;
    next(&b, "Step 5").await;
    b.fill("[name='kernels[0].name']", "fp8 gemm (prefill chunk)")
        .await;
    b.fill("[name='kernels[0].share']", "55%").await;
    submit_and_wait(&b, ".ranked-kernels td.name", "fp8 gemm").await;
    next(&b, "Step 6").await;
    b.fill(
        "[name='candidates[0].description']",
        "chunk of 2,048 tokens",
    )
    .await;
    b.fill("[name='candidates[0].share']", "0.7").await;
    b.fill("[name='candidates[0].speedup']", "4").await;
    b.fill("[name='candidates[0].effort_days']", "0.5").await;
    submit_and_wait(&b, ".ranked-fixes td.ceiling", "×").await;

    // Step 7: the one change, its result and its trade-off.
    next(&b, "Step 7").await;
    b.fill("[name=change]", "max_num_batched_tokens 8,192 → 2,048")
        .await;
    b.fill("[name='after_config.max_num_batched_tokens']", "2048")
        .await;
    b.fill("[name=after_value]", "55 ms").await;
    b.click("#f-verdict option[value=confirmed]").await;
    b.click("[id='f-tradeoff.metric'] option[value=ttft]").await;
    b.click("[id='f-tradeoff.percentile'] option[value=p95]")
        .await;
    b.fill("[name='tradeoff.before']", "1.9 s").await;
    b.fill("[name='tradeoff.after']", "2.6 s").await;
    b.fill("[name=quality]", "same outputs on 200 paired prompts")
        .await;
    b.fill("[name=effort]", "one restart").await;
    submit_and_wait(&b, ".config-diff-ok", "Only the declared setting changed").await;

    // Draft and publish: the RESULT carries the trade-off.
    b.click(".draft-form button[type=submit]").await;
    b.wait_text("main h1", "Edit and publish the draft").await;
    b.click("button.publish").await;
    b.wait_text(".entry-meta .status", "published").await;
    b.wait_text(".section-symptom", "p99 ITL 140 ms vs target 60")
        .await;
    let result = b.text(".section-result").await;
    assert!(result.contains("55") && result.contains("TTFT"), "{result}");
    b.screenshot("fp8-journal-entry").await;

    // A proposal at the setting the change measured: FP8, TP 4, a 2,048-token chunk.
    b.goto("/proposals/new").await;
    b.wait_text("main h1", "New proposal").await;
    for (field, value) in [
        ("#title", "chat-api at a 2,048-token chunk"),
        (
            "#question",
            "serve chat-api at 4 req/s with p99 ITL < 60 ms on 70B FP8",
        ),
        ("#model", "llama-3.1-70b"),
        ("#weight_dtype", "fp8"),
        ("#gpu_type", "h100-sxm"),
        ("#gpus_per_replica", "4"),
        ("#tp", "4"),
        ("#engine", "vllm"),
        ("#engine_version", "0.6.3"),
        ("#max_num_batched_tokens", "2,048"),
        ("#arrival_rate", "4"),
        ("#prompt_tokens_mean", "2000"),
        ("#prompt_tokens_p95", "22000"),
        ("#output_tokens_mean", "300"),
        ("#output_tokens_p95", "800"),
        ("#slo_ttft_p95_ms", "3000"),
        ("#slo_itl_p99_ms", "60"),
        ("#gpu_hour_usd", "2.5"),
    ] {
        b.fill(field, value).await;
    }
    b.click("#save-proposal").await;
    b.wait_text("#headline", "replicas").await;
    assert_eq!(b.text("#state").await, "draft");
    let page = b.text("main").await;
    assert!(
        page.contains("2,048") || page.contains("2048"),
        "the chunk it was sized at"
    );
    b.screenshot("fp8-proposal").await;
    let saved: i64 = sqlx::query_scalar("SELECT count(*) FROM proposals")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(saved, 1);
    b.quit().await;
}
