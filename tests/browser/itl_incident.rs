//! An ITL regression on a MoE model, walked in a real browser from step 0 to a published
//! entry: "p50 ITL 14 → 23 ms after a vLLM upgrade; Qwen3-30B-A3B BF16 on 2×H100, TP 2".
//! Step 0 takes the model's config.json and says what it read; step 2 is filled from a
//! request log and decomposes the per-token metric into the decode step (no share above
//! 100 %), its decode-floor link hands the estimator ms per token; step 3 saves as a
//! profiler trace fills it; step 7 declares the change in free words; a comparison on
//! ITL of the two logs reads "Improved" while TTFT's +0.7 % is no finding.

use crate::common;

use common::{browser, spawn_app};

const PASSWORD: &str = "correct horse battery staple";

/// The model's config.json as Hugging Face publishes it (the fields the reader uses).
const QWEN3_30B_A3B: &str = r#"{"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936, "tie_word_embeddings": false, "torch_dtype": "bfloat16"}"#;

/// A request log of the incident: 600 requests of 2,000 prompt tokens and 318 output
/// tokens at 64 concurrent, each request's median gap between tokens about `itl` ms
/// (`itl_p50_ms`), TTFT about `ttft` ms.
fn request_log(ttft: f64, itl: f64, tag: &str) -> Vec<u8> {
    let n = 600;
    let mut out = String::new();
    for i in 0..n {
        let u = (((i * 37) % n) as f64 + 0.5) / n as f64;
        let first = ttft * (1.0 + 0.05 * u);
        let gap = itl * (1.0 + 0.1 * u);
        let decode = gap * 317.0 * 1.04;
        out.push_str(
            &serde_json::json!({
                "request_id": format!("{tag}{i}"), "arrival_ts": 1_764_400_000.0 + i as f64 * 0.1,
                "queue_wait_ms": 5.0, "prefill_ms": first - 5.0,
                "first_token_ms": first, "decode_ms": decode, "total_ms": first + decode,
                "itl_p50_ms": gap, "itl_p99_ms": 2.0 * gap,
                "prompt_tokens": 2000, "output_tokens": 318, "batch_size_at_admission": 64,
            })
            .to_string(),
        );
        out.push('\n');
    }
    out.into_bytes()
}

/// Uploads a file to the investigation and runs the analysis queue; its id.
async fn upload(
    app: &mut common::TestApp,
    token: &str,
    name: &str,
    body: Vec<u8>,
    inv: i64,
) -> i64 {
    let name = format!("{name}&investigation={inv}");
    let r = common::uploads::upload(app, token, &name, body).await;
    app.drain_queue().await;
    r.json()["id"].as_i64().unwrap()
}

async fn submit_and_wait(b: &browser::Browser, css: &str, needle: &str) -> String {
    b.click(".step-form button[type=submit]").await;
    b.wait_text(css, needle).await
}

#[tokio::test]
async fn an_itl_regression_on_a_moe_model_from_step_zero_to_a_published_entry() {
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(std::path::PathBuf::from)
    else {
        common::skip(
            "an_itl_regression_on_a_moe_model_from_step_zero_to_a_published_entry",
            "PERFJOURNAL_REAL_FIXTURES is not set (step 3 is filled from a real profiler trace)",
        );
        return;
    };
    let mut app = spawn_app().await;
    let test = "an_itl_regression_on_a_moe_model_from_step_zero_to_a_published_entry";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.goto("/").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.fill("#confirm", PASSWORD).await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    b.goto("/investigations/new").await;
    b.fill("#title", "p50 ITL 14 → 23 ms after the vLLM upgrade")
        .await;
    b.fill("#service", "moe-chat").await;
    b.fill("#tags", "itl, moe").await;
    b.click("form[action='/investigations'] button[type=submit]")
        .await;
    b.wait_text("h1.inv-title", "p50 ITL 14").await;
    let inv_url = b.path().await;
    let inv: i64 = inv_url.rsplit('/').next().unwrap().parse().unwrap();

    // Step 0: the setup, the model given by name and by its config.json.
    b.goto(&format!("{inv_url}/steps/0")).await;
    b.wait_text("h1.step-title", "Step 0").await;
    b.click("#f-reproducible option[value=yes]").await;
    for (name, value) in [
        ("engine", "vllm"),
        ("engine_version", "0.10.1"),
        ("container_image", "vllm/vllm-openai:v0.10.1"),
        ("model", "Qwen3-30B-A3B"),
        ("weight_dtype", "bf16"),
        ("gpu_type", "H100 SXM 80GB"),
        ("tp", "2"),
        ("concurrency", "64"),
        ("prompt_len_dist", "2,000-token prompts, 318 output tokens"),
    ] {
        b.fill(&format!("[name='{name}']"), value).await;
    }
    b.fill("[name='model_config']", QWEN3_30B_A3B).await;
    let read = submit_and_wait(
        &b,
        ".config-read[data-field=model_config]",
        "Read from config.json",
    )
    .await;
    assert!(
        read.contains("48 layers") && read.contains("128 experts, 8 per token"),
        "{read}"
    );

    // Step 1: p50 ITL 23 ms against 14 ms.
    b.goto(&format!("{inv_url}/steps/1")).await;
    b.wait_text("h1.step-title", "Step 1").await;
    b.click("#f-metric option[value=itl]").await;
    b.click("#f-percentile option[value=p50]").await;
    assert_eq!(
        b.value("[name=unit]").await,
        "ms",
        "ITL brings its own unit"
    );
    b.fill("[name=observed]", "23").await;
    b.fill("[name=target]", "14").await;
    submit_and_wait(&b, ".gap-ratio .value", "1.64×").await;

    // Step 2 from the upgraded build's request log: the step decomposed, never a
    // request's whole decode time as a share of a per-token metric.
    let token = app.api_token("ada").await;
    let before = upload(
        &mut app,
        &token,
        "upgraded-before.jsonl",
        request_log(1000.0, 21.05, "b"),
        inv,
    )
    .await;
    b.goto(&format!("{inv_url}/steps/2?from_artifact={before}"))
        .await;
    b.wait_text("h1.step-title", "Step 2").await;
    submit_and_wait(&b, ".dominant-phase", "Decode step").await;
    let shares = b
        .driver
        .find_all(thirtyfour::By::Css(".results-card .shares td.num"))
        .await
        .unwrap();
    for cell in shares {
        let text = cell.text().await.unwrap();
        if let Some(p) = text.strip_suffix('%') {
            let p: f64 = p.trim().replace(',', "").parse().unwrap();
            assert!(p <= 100.0, "a share of {text}");
        }
    }
    let dominant = b.text(".dominant-phase").await;
    assert_eq!(dominant, "Decode step (96% of the metric)");
    b.screenshot("itl-step2").await;

    // The decode-floor link carries ms per token; the estimate is no "structural".
    let href = b
        .driver
        .find_all(thirtyfour::By::Css(".results-card a.estimator-link"))
        .await
        .unwrap();
    let mut floor = None;
    for a in href {
        let h = a.attr("href").await.unwrap().unwrap_or_default();
        if h.starts_with("/estimators/decode-floor") {
            floor = Some(h);
        }
    }
    let floor = floor.expect("a decode-floor link");
    let itl: f64 = floor
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("measured_itl_ms="))
        .expect("measured_itl_ms in the link")
        .parse()
        .unwrap();
    assert!(itl > 15.0 && itl < 30.0, "{floor}");
    b.goto(&format!("{floor}&context=2159")).await;
    b.click("#estimate-form button[type=submit]").await;
    let sanity = b.wait_text("#sanity", "floor").await;
    assert!(!sanity.contains("structural"), "{sanity}");
    b.screenshot("itl-decode-floor").await;

    // Step 3 from a profiler trace: saved without CPU time, what is not judged said.
    let trace = std::fs::read(
        root.join("pytorch_trace/tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz"),
    )
    .unwrap();
    let traced = upload(&mut app, &token, "decode.pt.trace.json.gz", trace, inv).await;
    b.goto(&format!("{inv_url}/steps/3?from_artifact={traced}"))
        .await;
    b.wait_text(".fill-notice", "CPU busy time is left blank")
        .await;
    submit_and_wait(&b, ".classification", "CPU not recorded").await;

    // Step 7: the change in free words, only the image differing; the comparison holds.
    b.goto(&format!("{inv_url}/steps/7")).await;
    b.wait_text("h1.step-title", "Step 7").await;
    b.fill("[name=change]", "tuned fused_moe config file for H100")
        .await;
    b.fill(
        "[name='after_config.container_image']",
        "vllm/vllm-openai:v0.10.1-moe-tuned",
    )
    .await;
    b.fill("[name=after_value]", "14.5 ms").await;
    b.click("#f-verdict option[value=confirmed]").await;
    b.fill("[name=quality]", "200 paired generations identical")
        .await;
    b.fill("[name=effort]", "one restart").await;
    let ok = submit_and_wait(&b, ".config-diff-ok", "declared").await;
    assert!(!ok.is_empty());
    assert!(b
        .text(".config-diff-note")
        .await
        .contains("Container image"));

    // The comparison on ITL of the two logs: improved, and TTFT's +0.7 % no finding.
    let after = upload(
        &mut app,
        &token,
        "fixed-after.jsonl",
        request_log(1007.0, 14.0, "a"),
        inv,
    )
    .await;
    b.goto(&format!("/comparisons?investigation={inv}")).await;
    b.wait_text("main h1", "Comparisons").await;
    // The pair is ticked by the runs' names (before / after), not by upload order.
    for id in [format!("#baseline-{before}"), format!("#candidate-{after}")] {
        assert!(b.is_ticked(&id).await, "{id} is ticked");
    }
    b.fill("#variable", "tuned fused_moe config").await;
    b.click("#metric option[value=itl_ms]").await;
    b.click("#percentile option[value=p50]").await;
    b.click("#compare").await;
    b.wait_text("#verdict-label", "Improved").await;
    let rows = b
        .driver
        .find_all(thirtyfour::By::Css("#metrics tbody tr"))
        .await
        .unwrap();
    for row in rows {
        let text = row.text().await.unwrap();
        assert!(!text.contains("Regressed"), "{text}");
    }
    b.screenshot("itl-comparison-walk").await;

    // Draft and publish: the DIAGNOSIS names the decode step, never 100 % of requests.
    b.goto(&format!("{inv_url}/steps/7")).await;
    b.click(".draft-form button[type=submit]").await;
    b.wait_text("main h1", "Edit and publish the draft").await;
    b.click("button.publish").await;
    b.wait_text(".entry-meta .status", "published").await;
    let diagnosis = b.text(".section-diagnosis").await;
    // The median request's ITL p50 is 22.1 ms of the observed 23 ms: 96 %, in ms per
    // token, never a request's whole decode time against a per-token metric.
    assert!(
        diagnosis.contains("Decode step dominates the p50 ITL (96%")
            && diagnosis.contains("ms per token"),
        "{diagnosis}"
    );
    b.screenshot("itl-journal-entry").await;
    b.quit().await;
}
