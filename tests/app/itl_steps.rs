//! The steps a newcomer walks for an ITL regression after an engine upgrade (p50 ITL
//! 14 → 23 ms, Qwen3-30B-A3B BF16 on 2×H100, TP 2): step 3 saved as a profiler trace
//! fills it, step 7's change declared in free words, step 1's throughput without a
//! percentile and its unit following the metric, step 0 saying what it read from a
//! pasted config.json.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use serde_json::{json, Value};

/// The incident's step-0 setup, as the API takes it.
fn setup() -> Value {
    json!({
        "reproducible": "yes",
        "engine": "vLLM",
        "engine_version": "0.10.1",
        "container_image": "vllm/vllm-openai:v0.10.1",
        "model": "Qwen3-30B-A3B",
        "weight_dtype": "bf16",
        "gpu_type": "H100 SXM",
        "gpu_count": 2,
        "tp": 2,
        "max_num_seqs": 64,
        "concurrency": 16,
    })
}

/// An admin's app, her token, and an investigation opened through the API.
async fn opened() -> (TestApp, String, i64) {
    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let id = app
        .open_investigation(&token, "ITL p50 14 → 23 ms after a vLLM upgrade")
        .await;
    (app, token, id)
}

async fn put_step(app: &mut TestApp, token: &str, id: i64, step: u8, body: Value) -> common::Reply {
    app.api(
        "PUT",
        &format!("/api/v1/investigations/{id}/steps/{step}"),
        token,
        Some(body),
    )
    .await
}

async fn investigation(app: &mut TestApp, token: &str, id: i64) -> Value {
    let r = app
        .api("GET", &format!("/api/v1/investigations/{id}"), token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.json()
}

async fn step_rows(app: &TestApp, id: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM investigation_steps WHERE investigation_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// The named inputs of a step page's form, with their values.
fn form_inputs(page: &common::Reply) -> Vec<(String, String)> {
    let html = page.html();
    let sel = scraper::Selector::parse(".step-form input[name]").unwrap();
    html.select(&sel)
        .filter(|e| e.value().attr("type") != Some("checkbox"))
        .map(|e| {
            let v = e.value();
            (
                v.attr("name").unwrap().to_string(),
                v.attr("value").unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn step_3_saves_as_a_real_profiler_trace_fills_it() {
    let Some(root) = crate::trace_diffs::fixtures() else {
        return;
    };
    let (mut app, url) = common::app_with_investigation("ITL p50 14 → 23 ms").await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let trace = std::fs::read(
        root.join("pytorch_trace/tracemap__1_mi300x_1000isl_10osl_32con.pt.trace.json.gz"),
    )
    .unwrap();
    let r = app
        .send(
            axum::http::Request::post(format!(
                "/api/v1/artifacts?name=decode.pt.trace.json.gz&investigation={id}"
            ))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/octet-stream")
            .body(axum::body::Body::from(trace))
            .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let artifact = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;

    let page = app
        .get(&format!("{url}/steps/3?from_artifact={artifact}"))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    let notice = page.select(".fill-notice").join(" ");
    assert!(notice.contains("CPU busy time is left blank"), "{notice}");
    assert!(notice.contains("The step saves without it"), "{notice}");
    let fields = form_inputs(&page);
    let value = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
    };
    let (gpu, wall) = (value("gpu_total"), value("wall"));
    assert!(!gpu.is_empty() && !wall.is_empty(), "{fields:?}");
    assert_eq!(value("cpu_total"), "", "the trace holds no CPU busy time");

    // Saved as filled: the step is done and judges only the GPU question.
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form(&format!("{url}/steps/3"), &pairs).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(&format!("{url}/steps/3")).await;
    let line = page.select(".classification").join(" ");
    assert!(line.contains("CPU not recorded"), "{line}");
    let gpu_ms: f64 = gpu.parse().unwrap();
    let wall_ms: f64 = wall.parse().unwrap();
    let expected = format!("GPU busy {:.0}% of wall", gpu_ms / wall_ms * 100.0);
    assert!(line.contains(&expected), "{line} / {expected}");
    assert!(
        !page.select(".not-judged").is_empty(),
        "what is not judged is said"
    );

    let v = investigation(&mut app, &token, id).await;
    assert_eq!(v["steps"][3]["state"], "done");
    assert_eq!(v["steps"][3]["data"]["cpu_total"], Value::Null);
    let results = &v["steps"][3]["results"];
    assert!(
        results["not_judged"]
            .as_str()
            .unwrap()
            .contains("CPU busy time was not recorded"),
        "{results}"
    );
    assert_eq!(results["cpu_ratio"], Value::Null);

    // A CPU time that does not read is still refused, naming the field; nothing changes.
    let r = app
        .post_form(
            &format!("{url}/steps/3"),
            &[("gpu_total", "8"), ("cpu_total", "busy"), ("wall", "10")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("CPU busy time"), "{}", r.body);
    let v = investigation(&mut app, &token, id).await;
    assert_eq!(v["steps"][3]["data"]["gpu_total"].as_f64(), Some(gpu_ms));
}

#[tokio::test]
async fn step_7_takes_the_change_in_free_words_and_still_flags_a_second_difference() {
    let (mut app, token, id) = opened().await;
    assert_eq!(
        put_step(&mut app, &token, id, 0, setup()).await.status,
        StatusCode::OK
    );
    let r = put_step(
        &mut app,
        &token,
        id,
        1,
        json!({"metric": "itl", "percentile": "p50", "observed": "23 ms", "target": "14 ms"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let mut after = setup();
    after["container_image"] = json!("vllm/vllm-openai:v0.10.1-moe-tuned");
    let change = |after: &Value| {
        json!({
            "change": "tuned fused_moe config file for H100",
            "after_config": after,
            "after_value": "14.2 ms",
            "verdict": "confirmed",
            "findings": "vLLM 0.10.1 ships no fused_moe config for E=128,N=384 on H100 and falls back to a default tiling",
            "quality": "200 paired generations identical",
        })
    };
    let r = put_step(&mut app, &token, id, 7, change(&after)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = investigation(&mut app, &token, id).await;
    let results = &v["steps"][7]["results"];
    assert_eq!(results["verdict"], "confirmed", "{results}");
    assert_eq!(results["check"]["ok"], true);
    assert_eq!(
        results["check"]["declared_fields"],
        json!(["container_image"])
    );
    assert!(
        results["check"]["note"]
            .as_str()
            .unwrap()
            .starts_with("The declared change shows in Container image (vllm/vllm-openai:v0.10.1 → vllm/vllm-openai:v0.10.1-moe-tuned)"),
        "{results}"
    );
    assert_eq!(results["before"]["value"], 23.0);
    assert_eq!(results["after"]["value"], 14.2);

    // The page says so.
    let page = app.get(&format!("/investigations/{id}/steps/7")).await;
    assert!(page.select(".config-diff-ok").len() == 1, "{}", page.body);
    assert!(page.select(".config-diff-note")[0].contains("Container image"));

    // A second setting differing as well: invalid, both named with their values.
    after["engine_version"] = json!("0.10.2");
    let r = put_step(&mut app, &token, id, 7, change(&after)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = investigation(&mut app, &token, id).await;
    let results = &v["steps"][7]["results"];
    assert_eq!(results["verdict"], "invalid_comparison", "{results}");
    let problem = results["check"]["problems"][0].as_str().unwrap();
    assert!(
        problem.starts_with("2 recorded settings differ"),
        "{problem}"
    );
    assert!(
        problem.contains("Engine version (0.10.1 → 0.10.2)"),
        "{problem}"
    );
    let page = app.get(&format!("/investigations/{id}/steps/7")).await;
    assert!(page.select(".config-diff-warning")[0].contains("Engine version"));
    assert_eq!(page.select(".config-diff tr.undeclared").len(), 2);

    // Naming one setting in the words makes the other the undeclared one.
    let mut named = change(&after);
    named["change"] = json!("container image with the tuned fused_moe config");
    let r = put_step(&mut app, &token, id, 7, named).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = investigation(&mut app, &token, id).await;
    let check = &v["steps"][7]["results"]["check"];
    assert_eq!(check["declared_fields"], json!(["container_image"]));
    assert_eq!(check["unexpected"][0]["field"], "engine_version");
}

#[tokio::test]
async fn a_throughput_target_takes_no_percentile() {
    let (mut app, token, id) = opened().await;
    let r = put_step(
        &mut app,
        &token,
        id,
        1,
        json!({"metric": "throughput", "observed": "1,800 tok/s", "target": 2500, "unit": "tok/s"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = investigation(&mut app, &token, id).await;
    assert_eq!(v["steps"][1]["state"], "done");
    assert_eq!(v["steps"][1]["data"]["percentile"], Value::Null);
    assert_eq!(
        v["steps"][1]["results"]["symptom_line"],
        "throughput 1,800 tok/s vs target 2,500 tok/s (1.4× short)"
    );
    let page = app.get(&format!("/investigations/{id}/steps/1")).await;
    assert_eq!(
        page.select(".symptom-line"),
        ["throughput 1,800 tok/s vs target 2,500 tok/s (1.4× short)"]
    );

    // A percentile given with a throughput is refused, naming why; nothing changes.
    let r = put_step(
        &mut app,
        &token,
        id,
        1,
        json!({"metric": "throughput", "percentile": "p95", "observed": 2000, "target": 2500, "unit": "tok/s"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let fields = r.json()["error"]["fields"].clone();
    assert_eq!(fields[0]["field"], "percentile");
    assert!(fields[0]["message"]
        .as_str()
        .unwrap()
        .contains("measured over the whole run"));
    let v = investigation(&mut app, &token, id).await;
    assert_eq!(v["steps"][1]["data"]["observed"], 1800.0);

    // A latency still needs its percentile.
    let r = put_step(
        &mut app,
        &token,
        id,
        1,
        json!({"metric": "itl", "observed": 23, "target": 14}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "percentile");
}

#[tokio::test]
async fn an_itl_left_in_tok_s_is_refused_naming_its_own_unit() {
    let (mut app, token, id) = opened().await;
    // The throughput's unit left in the form after switching the metric to ITL.
    let r = put_step(
        &mut app,
        &token,
        id,
        1,
        json!({"metric": "itl", "percentile": "p50", "observed": "23 ms", "target": "14 ms", "unit": "tok/s"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let fields = r.json()["error"]["fields"].as_array().unwrap().clone();
    assert_eq!(fields.len(), 1, "one error, not one per amount: {fields:?}");
    assert_eq!(fields[0]["field"], "unit");
    assert_eq!(
        fields[0]["message"],
        "'tok/s' does not measure ITL: ITL is in ms (or s)"
    );
    assert_eq!(step_rows(&app, id).await, 0);

    // The form page answers the same, and each metric option carries its own unit for
    // the page to reset the unit field with.
    let url = format!("/investigations/{id}/steps/1");
    let r = app
        .post_form(
            &url,
            &[
                ("metric", "itl"),
                ("percentile", "p50"),
                ("observed", "23"),
                ("target", "14"),
                ("unit", "tok/s"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.select(".field-error[data-field=unit]"),
        ["'tok/s' does not measure ITL: ITL is in ms (or s)"]
    );
    assert!(r.select(".field-error[data-field=observed]").is_empty());
    assert_eq!(step_rows(&app, id).await, 0);
    let page = app.get(&url).await;
    assert_eq!(
        page.select_attr("#f-metric option[value=itl]", "data-unit"),
        ["ms"]
    );
    assert_eq!(
        page.select_attr("#f-metric option[value=throughput]", "data-unit"),
        ["tok/s"]
    );
    assert_eq!(
        page.select_attr("#f-metric option[value=throughput]", "data-percentile"),
        ["no"]
    );
}

/// Qwen/Qwen3-30B-A3B's config.json (the fields that describe the architecture).
const QWEN3_30B_A3B: &str = r#"{
  "architectures": ["Qwen3MoeForCausalLM"],
  "model_type": "qwen3_moe",
  "hidden_size": 2048,
  "num_hidden_layers": 48,
  "num_attention_heads": 32,
  "num_key_value_heads": 4,
  "head_dim": 128,
  "intermediate_size": 6144,
  "moe_intermediate_size": 768,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "norm_topk_prob": true,
  "vocab_size": 151936,
  "tie_word_embeddings": false,
  "max_position_embeddings": 40960,
  "torch_dtype": "bfloat16"
}"#;

#[tokio::test]
async fn step_0_says_what_it_read_from_a_pasted_config_json() {
    let (mut app, url) = common::app_with_investigation("ITL p50 14 → 23 ms").await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let fields = [
        ("reproducible", "yes"),
        ("model", "my-qwen3-moe-finetune"),
        ("gpu_type", "H100 SXM"),
        ("gpu_count", "2"),
        ("tp", "2"),
        ("model_config", QWEN3_30B_A3B),
    ];
    let r = app.post_form(&format!("{url}/steps/0"), &fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(&format!("{url}/steps/0")).await;
    let read = page.select(".config-read[data-field=model_config]");
    assert_eq!(read.len(), 1, "{}", page.body);
    assert!(
        read[0].starts_with(
            "Read from config.json: qwen3_moe (Qwen3MoeForCausalLM), 48 layers, hidden size \
             2,048, 32 attention heads, 4 KV heads, 128 experts, 8 per token, 30.5 B \
             parameters (3.4 B active per token)."
        ),
        "{read:?}"
    );
    // The unknown name is not flagged: the pasted config stands in for it.
    assert!(page.select(".catalog-flag[data-field=model]").is_empty());

    let token = app.api_token("ada").await;
    let v = investigation(&mut app, &token, id).await;
    let reading = v["steps"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["field"] == "model_config")
        .unwrap()["read"]
        .clone();
    assert_eq!(reading["layers"], 48);
    assert_eq!(reading["experts"], 128);
    assert_eq!(reading["experts_per_token"], 8);
    assert_eq!(reading["model_type"], "qwen3_moe");

    // A config.json that does not read is refused, naming the field; the saved one stays.
    let mut broken = fields;
    broken[5] = (
        "model_config",
        r#"{"hidden_size": 2048, "num_hidden_layers": 48"#,
    );
    let r = app.post_form(&format!("{url}/steps/0"), &broken).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let error = r.select(".field-error[data-field=model_config]");
    assert!(
        error[0].starts_with("config.json is not valid JSON"),
        "{error:?}"
    );
    let v = investigation(&mut app, &token, id).await;
    assert!(v["steps"][0]["data"]["model_config"]
        .as_str()
        .unwrap()
        .contains("qwen3_moe"));
}
