//! Every public reference number, through each face: the CLI, the JSON API and the page.
//! Plus bad input answered by field on each face, and the catalogs' pages.

use crate::common;

use std::process::Command;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::{browser, spawn_app, TestApp};
use serde_json::{json, Value};

const E: &str = "model=llama-3.1-8b gpu=h100-sxm";

/// (estimator, inputs as CLI words, expected results) — the values of estimators.md.
/// (estimator, CLI words, expected results).
type Case = (&'static str, String, Vec<(&'static str, Value)>);

fn cases() -> Vec<Case> {
    vec![
        ("prefix-reuse", "prompt_tokens=3000 cached_tokens_before=2432".into(),
         vec![("computed_before", json!(568)), ("computed_after", json!(3000)), ("prefill_ratio", json!(5.282))]),
        ("prefix-reuse", "prompt_tokens=3000 shared_prefix_tokens=2560 hit_rate=0.95".into(),
         vec![("computed_before", json!(568))]),
        ("decode-floor", format!("{E} batch=64 context=4096 measured_itl_ms=24"),
         vec![("weight_bytes_per_gpu", json!(16060522496u64)), ("kv_bytes_per_token_per_gpu", json!(131072)),
              ("kv_bytes_per_step", json!(34359738368u64)), ("floor_ms", json!(15.05)),
              ("floor_over_measured", json!(0.627)), ("band", json!("overhead"))]),
        ("mixed-step", format!("{E} batch=64 context=4096 chunk_tokens=2048 mfu=0.5"),
         vec![("step_tokens", json!(2112)), ("prefill_flops", json!(33.92e12)), ("compute_ms", json!(68.59)),
              ("kv_ms", json!(10.26)), ("step_ms", json!(78.85))]),
        ("memory-fit", "model=llama-3.3-70b gpu=h100-sxm tp=2 gpu_memory_utilization=0.92 max_model_len=131072".into(),
         vec![("weight_bytes_per_gpu", json!(70553706496u64)), ("budget_bytes_per_gpu", json!(78.2184e9)),
              ("left_bytes_per_gpu", json!(7.6647e9)), ("kv_bytes_one_seq_per_gpu", json!(21474836480u64)),
              ("fits", json!(false))]),
        ("kv-pages", "model=llama-3.1-8b device_bytes=80e9 gpu_memory_utilization=0.92 other_bytes=2e9 page_tokens=16 requests=200 prompt_tokens=2048 output_tokens=1024".into(),
         vec![("pool_pages", json!(26483)), ("pages_at_start", json!(25600)), ("pages_at_finish", json!(38400)),
              ("max_full_length_requests", json!(137)), ("preemption_expected", json!(true))]),
        ("amdahl", "phases=prefill:0.4:1,decode:0.6:1.2".into(), vec![("end_to_end_speedup", json!(1.1111))]),
        ("amdahl", "phases=rmsnorm:0.09:3,rest:0.91:1".into(), vec![("end_to_end_speedup", json!(1.0638))]),
        ("cost", "gpu_hour_usd=2.5 gpus=8 output_tokens_per_s=3000".into(),
         vec![("usd_per_million_output_tokens", json!(1.852))]),
    ]
}

fn close(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => (g - w).abs() <= 0.005 * w.abs() + 1e-9,
        _ => got == want,
    }
}

fn check(face: &str, name: &str, args: &str, results: &Value, want: &[(&str, Value)]) {
    for (key, w) in want {
        assert!(
            close(&results[*key], w),
            "{face} {name} {args}: {key} = {}, want {w}",
            results[*key]
        );
    }
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .arg("estimate")
        .args(args)
        .env_remove("DATABASE_URL")
        .env("PERFJOURNAL_DATA_DIR", "/nonexistent/never-used")
        .output()
        .unwrap()
}

#[test]
fn cli_reproduces_every_reference_number_without_a_database() {
    for (name, args, want) in cases() {
        let mut words: Vec<&str> = vec![name];
        words.extend(args.split_whitespace());
        words.push("--json");
        let out = cli(&words);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let chain: Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in ["estimator", "inputs", "results", "lines", "sanity"] {
            assert!(chain.get(key).is_some(), "{name}: JSON lacks {key}");
        }
        check("cli", name, &args, &chain["results"], &want);
    }
}

#[test]
fn cli_text_shows_the_formulas_and_bad_input_exits_2_naming_the_field() {
    let out = cli(&[
        "decode-floor",
        "model=llama-3.1-8b",
        "batch=64",
        "context=4096",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(16.06 GB + 34.36 GB) / 3.35 TB/s"), "{text}");
    assert!(text.contains("15.05 ms"));

    let out = cli(&[
        "decode-floor",
        "model=llama-3.1-8b",
        "batch=0",
        "context=4096",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("batch"));
    let out = cli(&[
        "memory-fit",
        "model=llama-3.3-70b",
        "gpu_memory_utilization=1.5",
        "max_model_len=1024",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpu_memory_utilization"));
    let out = cli(&["amdahl", "phases=a:0.5:2,b:0.2:1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("phases"));
    let out = cli(&["no-such-estimator"]);
    assert_eq!(out.status.code(), Some(2));
    let out = cli(&["--list"]);
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    for name in [
        "prefix-reuse",
        "decode-floor",
        "mixed-step",
        "memory-fit",
        "kv-pages",
        "precision-change",
        "tp-allreduce",
        "amdahl",
        "periodic-tail",
        "cost",
    ] {
        assert!(list.contains(name), "--list lacks {name}");
    }
}

#[test]
fn cli_reads_a_config_json_file_and_reports_where_it_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("config.json");
    std::fs::write(&good, r#"{"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": false}"#).unwrap();
    let arg = format!("config={}", good.display());
    let out = cli(&["decode-floor", &arg, "batch=64", "context=4096", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chain: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        chain["results"]["weight_bytes_per_gpu"],
        json!(16060522496u64)
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"hidden_size\": 4096,\n  oops\n}").unwrap();
    let arg = format!("config={}", bad.display());
    let out = cli(&["decode-floor", &arg, "batch=64", "context=4096"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config") && err.contains("line 3"), "{err}");
}

async fn signed_in() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("vic", perfjournal::auth::Role::Viewer).await;
    let token = app.api_token("vic").await;
    (app, token)
}

fn json_body(args: &str) -> Value {
    let mut map = serde_json::Map::new();
    for kv in args.split_whitespace() {
        let (k, v) = kv.split_once('=').unwrap();
        // Numbers as JSON numbers where they parse, the way a script would send them.
        let value = v
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(v));
        map.insert(k.to_string(), value);
    }
    Value::Object(map)
}

#[tokio::test]
async fn api_reproduces_every_reference_number_for_any_role() {
    let (mut app, token) = signed_in().await;
    for (name, args, want) in cases() {
        let r = app
            .api(
                "POST",
                &format!("/api/v1/estimate/{name}"),
                &token,
                Some(json_body(&args)),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{name}: {}", r.body);
        check("api", name, &args, &r.json()["results"], &want);
        assert!(r.json()["lines"][0]["formula"].as_str().is_some());
    }
    // periodic-tail counts the plain steps in what the slow steps leave of the period.
    let r = app
        .api(
            "POST",
            "/api/v1/estimate/periodic-tail",
            &token,
            Some(json_body(
                "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 chunk_tokens=2048 long_prompt_tokens=32768 period_s=10",
            )),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let res = &r.json()["results"];
    let (plain, slow) = (
        res["plain_step_ms"].as_f64().unwrap(),
        res["slow_step_ms"].as_f64().unwrap(),
    );
    let normal = res["normal_steps_per_period"].as_f64().unwrap();
    assert!(
        ((10_000.0 - 16.0 * slow) / plain - normal).abs() < 1e-6,
        "{res}"
    );
    let list = app
        .api("GET", "/api/v1/estimate", &token, None)
        .await
        .json();
    assert_eq!(list.as_array().unwrap().len(), 10);
}

#[tokio::test]
async fn api_bad_input_is_422_naming_each_field() {
    let (mut app, token) = signed_in().await;
    let r = app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &token,
            Some(json!({"model": "llama-3.1-8b", "batch": -4, "context": "lots", "bacth": 3})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    for f in ["batch", "context", "bacth"] {
        assert!(
            fields.contains(&f.to_string()),
            "{f} not named in {fields:?}"
        );
    }
    let r = app.api("POST", "/api/v1/estimate/kv-pages", &token,
                    Some(json!({"model": "llama-3.1-8b", "gpu_memory_utilization": 0, "requests": 1, "prompt_tokens": 1, "output_tokens": 1}))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.json()["error"]["fields"][0]["field"],
        "gpu_memory_utilization"
    );
    let r = app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &token,
            Some(json!({"config": {"hidden_size": "big"}, "batch": 1, "context": 1})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "config");
    // Sizes near 2^32 overflow the 64-bit parameter count: refused, naming the field.
    let huge = json!({"hidden_size": 4_294_967_296u64, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 4_294_967_295u64});
    let r = app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &token,
            Some(json!({"config": huge.to_string(), "batch": 1, "context": 1})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let field = &r.json()["error"]["fields"][0];
    assert_eq!(field["field"], "config");
    assert!(
        field["message"]
            .as_str()
            .unwrap()
            .contains("`hidden_size` = 4294967296"),
        "{field}"
    );

    let broken = Request::post("/api/v1/estimate/cost")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"gpus\": 8,"))
        .unwrap();
    let r = app.send(broken).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.json()["error"]["fields"][0]["message"]
        .as_str()
        .unwrap()
        .contains("line 1"));
    let r = app
        .api("POST", "/api/v1/estimate/nope", &token, Some(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

fn page_query(args: &str) -> String {
    let pairs: Vec<(&str, &str)> = args
        .split_whitespace()
        .map(|kv| kv.split_once('=').unwrap())
        .collect();
    serde_urlencoded::to_string(pairs).unwrap()
}

#[tokio::test]
async fn page_reproduces_every_reference_number_from_its_url() {
    let (mut app, _) = signed_in().await;
    for (name, args, want) in cases() {
        let r = app
            .get(&format!("/estimators/{name}?{}", page_query(&args)))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{name}: {}", r.body);
        let keys = r.select("#results .result .k");
        // The exact value rides in data-value; the text is rounded to its unit.
        let values = r.select_attr("#results .result", "data-value");
        for (key, w) in &want {
            let i = keys
                .iter()
                .position(|k| k == key)
                .unwrap_or_else(|| panic!("{name}: no {key} on the page"));
            let shown = values[i].replace(',', "");
            let got: Value = shown
                .parse::<f64>()
                .map(Value::from)
                .unwrap_or_else(|_| match shown.as_str() {
                    "true" => json!(true),
                    "false" => json!(false),
                    s => json!(s),
                });
            // The page rounds to about four significant digits: compare within that.
            let ok = match (got.as_f64(), w.as_f64()) {
                (Some(g), Some(w)) => (g - w).abs() <= 0.005 * w.abs() + 1e-9,
                _ => &got == w,
            };
            assert!(ok, "page {name}: {key} shows {shown}, want {w}");
        }
        assert!(
            !r.select("#chain-lines .formula").is_empty(),
            "{name}: formulas shown"
        );
        assert!(!r.select("#sanity")[0].is_empty());
    }
    // The decode-floor formula is written out with its numbers.
    let r = app
        .get(&format!(
            "/estimators/decode-floor?{}",
            page_query(&format!("{E} batch=64 context=4096"))
        ))
        .await;
    assert!(r
        .select("#chain-lines .formula")
        .contains(&"(16.06 GB + 34.36 GB) / 3.35 TB/s".to_string()));
}

#[tokio::test]
async fn page_marks_bad_fields_and_htmx_gets_only_the_chain() {
    let (mut app, _) = signed_in().await;
    let r = app.get("/estimators/memory-fit?model=llama-3.3-70b&gpu_memory_utilization=1.2&max_model_len=abc").await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let sel = scraper::Selector::parse("#f-gpu_memory_utilization[aria-invalid=true]").unwrap();
    assert_eq!(r.html().select(&sel).count(), 1);
    let errors = r.select("#estimate-errors li");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("gpu_memory_utilization")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("max_model_len")),
        "{errors:?}"
    );
    assert!(r.select("#chain-result").is_empty());

    let partial = Request::get("/estimators/cost?gpu_hour_usd=2.5&gpus=8&output_tokens_per_s=3000")
        .header("hx-request", "true")
        .header("hx-target", "chain")
        .body(Body::empty())
        .unwrap();
    let r = app.send(partial).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.body.contains("<html"), "partial only");
    assert!(r
        .headers
        .get(header::VARY)
        .unwrap()
        .to_str()
        .unwrap()
        .to_lowercase()
        .contains("hx-request"));
    assert_eq!(r.select("#permalink").len(), 1);

    let r = app.get("/estimators/no-such").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app.get("/estimators").await;
    assert_eq!(r.select("#estimators tbody tr").len(), 10);
}

/// The live preview (htmx, as inputs are typed) of an unfinished form answers 200 with
/// what to fix, and /metrics counts no 422 for it; submitting the same form is a 422.
#[tokio::test]
async fn live_previews_of_unfinished_inputs_are_not_counted_as_failed_requests() {
    let (mut app, _) = signed_in().await;
    let query = "/estimators/memory-fit?model=llama-3.3-70b&gpu_memory_utilization=1.2";
    for _ in 0..3 {
        let preview = Request::get(query)
            .header("hx-request", "true")
            .header("hx-target", "chain")
            .body(Body::empty())
            .unwrap();
        let r = app.send(preview).await;
        assert_eq!(r.status, StatusCode::OK);
        let errors = r.select("#estimate-errors li");
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("gpu_memory_utilization")),
            "{errors:?}"
        );
    }
    let metrics = app.get("/metrics").await;
    let failed: Vec<&str> = metrics
        .body
        .lines()
        .filter(|l| l.contains("/estimators/") && l.contains("status=\"422\""))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        app.get(query).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
}

#[tokio::test]
async fn each_estimator_shows_how_far_off_it_has_been_against_published_runs() {
    let (mut app, _) = signed_in().await;
    // The whole table: every case, its setup, the scored error or why it is not scored.
    let r = app.get("/estimators/accuracy").await;
    assert_eq!(r.status, StatusCode::OK);
    let rows = r.select("#accuracy-rows tbody tr");
    assert!(rows.len() >= 30, "{}", rows.len());
    let tp8 = rows
        .iter()
        .find(|t| t.contains("llm-k8s tp8 qps 1") && t.contains("decode-floor"))
        .unwrap();
    // floor 11.4 ms, measured 24.3 ms, and the held-out expected step beside them
    assert!(
        tp8.contains("11.4 ms") && tp8.contains("24.3 ms") && tp8.contains("dense bf16 TP 8"),
        "{tp8}"
    );
    assert!(r.select("#accuracy-categories tbody tr").len() >= 6);
    assert!(
        tp8.contains("A100 SXM 40GB") && tp8.contains("vLLM 0.8.3"),
        "{tp8}"
    );
    assert!(rows
        .iter()
        .any(|t| t.contains("all at once") && t.contains("not scored")));
    let links = r.select_attr("#accuracy-rows a", "href");
    assert!(
        links
            .iter()
            .any(|h| h.starts_with("/estimators/decode-floor?")
                && h.contains("gpu=a100-40gb")
                && h.contains("tp=8")),
        "{links:?}"
    );
    // The row's link reproduces it on the estimator's own page.
    let href = links
        .iter()
        .find(|h| h.starts_with("/estimators/decode-floor?") && h.contains("tp=8"))
        .unwrap()
        .replace("&amp;", "&");
    let page = app.get(&href).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("overhead"), "the band of the row");

    // Beside the estimator: its running error over the published cases.
    let r = app.get("/estimators/decode-floor").await;
    let card = r.select("#running-error")[0].clone();
    assert!(
        card.contains("decode step")
            && card.contains("73")
            && card.contains("leave-one-source-out"),
        "{card}"
    );
    // per category, and the bands' thresholds
    let categories = r.select("#running-error .by-category tbody tr");
    assert!(
        categories.iter().any(|t| t.contains("MoE fp8 TP 8")),
        "{categories:?}"
    );
    assert!(r.select("#bands .thresholds")[0].contains("healthy up to 1.2×"));
    let r = app.get("/estimators/memory-fit").await;
    let card = r.select("#running-error")[0].clone();
    assert!(
        card.contains("model weights per GPU") && card.contains("KV cache per GPU"),
        "{card}"
    );
    // An estimator with no published case says so rather than showing an empty table.
    let r = app.get("/estimators/amdahl").await;
    let card = r.select("#running-error")[0].clone();
    assert!(card.contains("No published measurement"), "{card}");
}

#[tokio::test]
async fn catalog_pages_show_derived_figures_and_provenance() {
    let (mut app, _) = signed_in().await;
    let r = app.get("/estimators/models").await;
    assert_eq!(r.status, StatusCode::OK);
    let rows = r.select("#models tbody tr");
    assert!(rows.len() >= 8);
    let llama8 = rows.iter().find(|t| t.contains("llama-3.1-8b")).unwrap();
    assert!(llama8.contains("8,030,261,248"), "{llama8}");
    let llama70 = rows.iter().find(|t| t.contains("llama-3.3-70b")).unwrap();
    assert!(
        llama70.contains("70,553,706,496") && llama70.contains("327,680 B"),
        "{llama70}"
    );
    for m in [
        "llama-3.1-405b",
        "qwen2.5-7b",
        "qwen2.5-72b",
        "mixtral-8x7b",
        "deepseek-v3",
    ] {
        assert!(rows.iter().any(|t| t.contains(m)), "{m} missing");
    }

    let r = app.get("/estimators/gpus").await;
    let h100 = r.select("#gpu-h100-sxm")[0].clone();
    assert!(
        h100.contains("85.02 GB") && h100.contains("as reported by the driver"),
        "{h100}"
    );
    assert!(
        h100.contains("3.35 TB/s") && h100.contains("989 TFLOP/s") && h100.contains("datasheet")
    );
    for g in [
        "h100-pcie",
        "h200",
        "a100-80gb",
        "a100-40gb",
        "l40s",
        "l4",
        "b200",
        "mi300x",
    ] {
        assert_eq!(r.select(&format!("#gpu-{g}")).len(), 1, "{g}");
    }
}

#[tokio::test]
async fn estimator_form_updates_the_chain_as_you_type_in_a_browser() {
    let (app, _) = signed_in().await;
    let Some(b) = browser::start(
        &app,
        "estimator_form_updates_the_chain_as_you_type_in_a_browser",
    )
    .await
    else {
        return;
    };
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", common::PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    b.goto("/estimators").await;
    b.click("a[href='/estimators/decode-floor']").await;
    b.wait_text("main h1", "decode-floor").await;
    // Choose from the presets and type: htmx re-renders the chain without a submit.
    use thirtyfour::prelude::*;
    let model = b.driver.find(By::Css("#f-model")).await.unwrap();
    model.send_keys("llama-3.1-8b").await.unwrap();
    b.fill("#f-batch", "64").await;
    b.fill("#f-context", "4096").await;
    b.fill("#f-measured_itl_ms", "24").await;
    b.wait_text("#results", "15.05").await;
    b.wait_text("#results", "overhead").await;
    // The address now reproduces the estimate.
    let path = b.path().await;
    assert!(
        path.contains("batch=64") && path.contains("context=4096"),
        "{path}"
    );
    b.screenshot("decode-floor").await;

    // A bad value is named beside the chain.
    b.fill("#f-batch", "-3").await;
    b.wait_text("#estimate-errors", "batch").await;
    b.quit().await;
}

#[tokio::test]
async fn a_pasted_config_json_drives_the_page_and_a_broken_one_is_named() {
    let (mut app, _) = signed_in().await;
    let config = r#"{"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": false}"#;
    let query = serde_urlencoded::to_string([
        ("config", config),
        ("gpu", "h100-sxm"),
        ("batch", "8"),
        ("context", "1024"),
    ])
    .unwrap();
    let r = app.get(&format!("/estimators/decode-floor?{query}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let keys = r.select("#results .result .k");
    let values = r.select("#results .result .v");
    let i = keys
        .iter()
        .position(|k| k == "kv_bytes_per_token_per_gpu")
        .unwrap();
    // Qwen2.5-7B: 2 × 28 layers × 4 KV heads × 128 dims × 2 B.
    assert_eq!(values[i], "57,344 B");
    let sel = scraper::Selector::parse("#f-config").unwrap();
    assert!(
        r.html()
            .select(&sel)
            .next()
            .unwrap()
            .text()
            .collect::<String>()
            .contains("qwen2"),
        "the box keeps the pasted text"
    );

    let broken = serde_urlencoded::to_string([
        ("config", "{\"hidden_size\": 4096,,}"),
        ("batch", "8"),
        ("context", "1024"),
    ])
    .unwrap();
    let r = app.get(&format!("/estimators/decode-floor?{broken}")).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let errors = r.select("#estimate-errors li");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("config") && e.contains("line 1")),
        "{errors:?}"
    );
}

/// Estimator forms and the API read numbers with the one quantity reader: "2,000",
/// "$3.00", "5 s" where the unit fits; a unit of another dimension is refused naming the
/// field; plain numbers read as before.
#[tokio::test]
async fn estimator_inputs_take_separators_and_units_where_the_unit_fits() {
    let (mut app, token) = signed_in().await;
    let plain = app
        .api(
            "POST",
            "/api/v1/estimate/cost",
            &token,
            Some(json!({"gpu_hour_usd": 3, "gpus": 8, "output_tokens_per_s": 2000})),
        )
        .await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    let typed = app
        .api(
            "POST",
            "/api/v1/estimate/cost",
            &token,
            Some(
                json!({"gpu_hour_usd": "$3.00", "gpus": "8", "output_tokens_per_s": "2,000 tok/s"}),
            ),
        )
        .await;
    assert_eq!(typed.status, StatusCode::OK, "{}", typed.body);
    assert_eq!(typed.json()["results"], plain.json()["results"]);

    let page = app
        .get("/estimators/cost?gpu_hour_usd=%243.00&gpus=8&output_tokens_per_s=2%2C000")
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);

    let r = app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &token,
            Some(json!({"model": "llama-3.1-8b", "batch": "64", "context": "2 s"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let field = &r.json()["error"]["fields"][0];
    assert_eq!(field["field"], "context");
    assert!(
        field["message"].as_str().unwrap().contains("a time in s"),
        "{field}"
    );
    let page = app
        .get("/estimators/decode-floor?model=llama-3.1-8b&batch=64&context=23+ms")
        .await;
    assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.select("#estimate-errors li")[0].starts_with("context"));
}
