//! The whole path in a real browser: open an investigation, record steps 0–7, draft the
//! journal entry, publish it, and find it on the journal.

use crate::common;

use common::{browser, spawn_app, PASSWORD};

#[tokio::test]
async fn an_investigation_from_symptom_to_published_journal_entry() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let test = "an_investigation_from_symptom_to_published_journal_entry";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };

    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    // Open it from the symptom.
    b.click(".areas a[href='/investigations']").await;
    b.wait_text("main h1", "Investigations").await;
    b.click("a[href='/investigations/new']").await;
    b.wait_text("main h1", "Open an investigation").await;
    b.fill("#title", "p95 TTFT four times the target").await;
    b.fill("#service", "chat").await;
    b.fill("#tags", "ttft, browser").await;
    b.click("form[action='/investigations'] button[type=submit]")
        .await;
    b.wait_text("h1.inv-title", "p95 TTFT four times the target")
        .await;
    b.click(".next-step a.button").await;
    b.wait_text("h1.step-title", "Step 0").await;

    // Step 0: the frozen setup.
    b.click("#f-reproducible option[value=yes]").await;
    for (name, value) in [
        ("model", "llama-3.1-8b"),
        ("gpu_type", "h100-sxm"),
        ("tp", "1"),
        ("concurrency", "64"),
        ("prompt_len_dist", "mean 1,800 tokens"),
        ("arrival_rate", "45"),
    ] {
        b.fill(&format!("[name='{name}']"), value).await;
    }
    b.click("#f-chunked_prefill option[value=off]").await;
    submit_and_wait(&b, ".reproducible", "yes").await;

    // Step 1: the metric, refused without a number first.
    next(&b, "Step 1").await;
    b.click("#f-metric option[value=ttft]").await;
    b.click("#f-percentile option[value=p95]").await;
    b.fill("[name=observed]", "slow").await;
    b.fill("[name=target]", "800").await;
    submit_and_wait(&b, ".field-error[data-field=observed]", "not a measurement").await;
    b.fill("[name=observed]", "3200").await;
    submit_and_wait(&b, ".gap-ratio .value", "4.00×").await;

    // Step 2: phases.
    next(&b, "Step 2").await;
    for (name, value) in [
        ("queue_wait.p50", "900"),
        ("queue_wait.p95", "2300"),
        ("queue_wait.p99", "2900"),
        ("prefill.p50", "120"),
        ("prefill.p95", "180"),
        ("prefill.p99", "240"),
    ] {
        b.fill(&format!("[name='{name}']"), value).await;
    }
    submit_and_wait(&b, ".dominant-phase", "Queue wait").await;
    b.screenshot("investigation-step2").await;

    // Step 3.
    next(&b, "Step 3").await;
    b.fill("[name=gpu_total]", "40").await;
    b.fill("[name=cpu_total]", "20").await;
    b.fill("[name=wall]", "100").await;
    submit_and_wait(&b, ".classification", "waiting").await;

    // Step 4: a kernel's regime and decode against the floor from step 0.
    next(&b, "Step 4").await;
    b.fill("[name='kernels[0].name']", "paged_attention").await;
    b.fill("[name='kernels[0].sm_pct']", "20").await;
    b.fill("[name='kernels[0].dram_pct']", "85").await;
    b.fill("[name='decode.measured_ms']", "24").await;
    b.fill("[name='decode.context']", "4096").await;
    submit_and_wait(&b, ".decode-band .ratio", "63%").await;

    // Step 5.
    next(&b, "Step 5").await;
    b.fill("[name='kernels[0].name']", "flash_attn").await;
    b.fill("[name='kernels[0].share']", "60%").await;
    b.fill("[name='kernels[1].name']", "gemm").await;
    b.fill("[name='kernels[1].share']", "0.3").await;
    submit_and_wait(&b, ".ranked-kernels td.name", "flash_attn").await;

    // Step 6.
    next(&b, "Step 6").await;
    b.fill("[name='candidates[0].description']", "chunked prefill")
        .await;
    b.fill("[name='candidates[0].share']", "0.7").await;
    b.fill("[name='candidates[0].speedup']", "3").await;
    b.fill("[name='candidates[0].effort_days']", "0.5").await;
    submit_and_wait(&b, ".ranked-fixes td.ceiling", "1.875×").await;

    // Step 7: the after-configuration starts as step 0; change one thing.
    next(&b, "Step 7").await;
    b.fill("[name=change]", "enable chunked prefill").await;
    b.click("[id='f-after_config.chunked_prefill'] option[value=on]")
        .await;
    b.fill("[name=after_value]", "780").await;
    b.click("#f-verdict option[value=confirmed]").await;
    b.fill("[name=quality]", "200 paired generations identical")
        .await;
    b.fill("[name=effort]", "30 minutes").await;
    submit_and_wait(&b, ".config-diff-ok", "Only the declared setting changed").await;
    b.screenshot("investigation-step7").await;

    // Draft the entry, publish it, find it on the journal.
    b.click(".draft-form button[type=submit]").await;
    b.wait_text("main h1", "Edit and publish the draft").await;
    b.click("button.publish").await;
    b.wait_text(".entry-meta .status", "published").await;
    b.wait_text(".section-symptom", "p95 TTFT 3,200 ms vs target 800 ms")
        .await;
    b.screenshot("journal-entry").await;
    b.click("a.investigation-link").await;
    b.wait_text(".history", "published the journal entry").await;
    b.screenshot("investigation-overview").await;
    b.click(".areas a[href='/journal']").await;
    b.wait_text(
        ".journal-item .entry-title",
        "p95 TTFT four times the target",
    )
    .await;
    b.wait_text(".journal-item .symptom-line", "(4.0× over)")
        .await;
    b.screenshot("journal").await;
    b.quit().await;
}

async fn submit_and_wait(b: &browser::Browser, css: &str, needle: &str) {
    b.click(".step-form button[type=submit]").await;
    b.wait_text(css, needle).await;
}

async fn next(b: &browser::Browser, title: &str) {
    b.click(".step-nav a.next-link").await;
    b.wait_text("h1.step-title", title).await;
}

/// Polls a form field until its value is `want`.
async fn wait_value(b: &browser::Browser, css: &str, want: &str) {
    let mut last = String::new();
    for _ in 0..100 {
        last = b.value(css).await;
        if last == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{css} never held {want:?}; last value: {last:?}");
}

#[tokio::test]
async fn switching_step_1_metric_brings_its_own_unit_and_percentile() {
    let (app, url) =
        common::app_with_investigation("ITL p50 14 → 23 ms after a vLLM upgrade").await;
    let test = "switching_step_1_metric_brings_its_own_unit_and_percentile";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;
    b.goto(&format!("{url}/steps/1")).await;
    b.wait_text("h1.step-title", "Step 1").await;

    // A throughput: tok/s, and no percentile to choose.
    b.click("#f-metric option[value=throughput]").await;
    wait_value(&b, "[name=unit]", "tok/s").await;
    wait_value(&b, "#f-percentile", "").await;
    b.fill("[name=observed]", "1800").await;
    b.fill("[name=target]", "2500").await;
    submit_and_wait(
        &b,
        ".symptom-line",
        "throughput 1,800 tok/s vs target 2,500 tok/s (1.4× short)",
    )
    .await;

    // Switching to ITL resets the unit to ms and gives the percentile back.
    b.click("#f-metric option[value=itl]").await;
    wait_value(&b, "[name=unit]", "ms").await;
    b.click("#f-percentile option[value=p50]").await;
    wait_value(&b, "#f-percentile", "p50").await;
    b.fill("[name=observed]", "23").await;
    b.fill("[name=target]", "14").await;
    submit_and_wait(&b, ".symptom-line", "p50 ITL 23.0 ms vs target 14.0 ms").await;
    assert!(b.console_errors().await.is_empty());
    b.quit().await;
}
