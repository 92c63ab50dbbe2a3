//! Capacity proposals on real PostgreSQL: the API, the review states and 409, evidence
//! staleness, after-rollout scoring, and the sized figures against the standalone
//! estimators.

use crate::common;

use axum::http::StatusCode;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use serde_json::{json, Value};

use common::chat_api_proposal as chat_api;

/// ada (editor, owner), bob (editor, reviewer), vic (viewer).
async fn app() -> (TestApp, String, String, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("bob", Role::Editor).await;
    app.add_user("vic", Role::Viewer).await;
    let ada = app.api_token("ada").await;
    let bob = app.api_token("bob").await;
    let vic = app.api_token("vic").await;
    (app, ada, bob, vic)
}

async fn create(app: &mut TestApp, token: &str, body: Value) -> Value {
    let r = app
        .api("POST", "/api/v1/proposals", token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.json()
}

async fn observations(app: &TestApp, id: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM proposal_observations WHERE proposal_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM proposals")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_proposal_is_sized_by_the_standalone_estimators() {
    let (mut app, ada, _, vic) = app().await;
    let doc = create(&mut app, &ada, chat_api()).await;
    let id = doc["id"].as_i64().unwrap();
    assert_eq!(doc["url"], format!("/proposals/{id}"));
    assert_eq!(doc["state"], "draft");
    assert_eq!(doc["version"], 1);
    let s = &doc["sizing"];
    for key in [
        "kv_concurrency",
        "decode_step_ms",
        "tokens_per_s_per_replica",
        "replicas_needed",
        "cost_per_hour_usd",
        "cost_per_million_tokens_usd",
    ] {
        assert!(s[key].is_number(), "{key}: {s}");
    }
    assert_eq!(doc["sensitivity"].as_array().unwrap().len(), 7);

    // memory_fit is exactly what the standalone estimator answers at p95 + p95 tokens
    // and the proposal's own max_num_batched_tokens.
    let standalone = app
        .api(
            "POST",
            "/api/v1/estimate/memory-fit",
            &vic,
            Some(json!({"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1,
                "weight_dtype": "bf16", "kv_dtype": "bf16", "gpu_memory_utilization": 0.92,
                "max_model_len": 4800, "max_num_batched_tokens": 1536})),
        )
        .await;
    assert_eq!(standalone.status, StatusCode::OK, "{}", standalone.body);
    assert_eq!(s["memory_fit"], standalone.json()["results"]);

    // Every estimator run equals the standalone endpoint on the same inputs.
    for run in s["runs"].as_array().unwrap() {
        let name = run["estimator"].as_str().unwrap();
        let r = app
            .api(
                "POST",
                &format!("/api/v1/estimate/{name}"),
                &vic,
                Some(run["inputs"].clone()),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{name}: {}", r.body);
        assert_eq!(r.json()["results"], run["chain"]["results"], "{name}");
    }
    let runs = s["runs"].as_array().unwrap();
    let by = |name: &str| runs.iter().find(|r| r["estimator"] == name).unwrap();
    assert_eq!(
        s["decode_floor_ms"],
        by("decode-floor")["chain"]["results"]["floor_ms"]
    );
    assert_eq!(
        s["mixed_step_ms"],
        by("mixed-step")["chain"]["results"]["step_ms"]
    );
    assert_eq!(
        s["cost_per_million_tokens_usd"],
        by("cost")["chain"]["results"]["usd_per_million_output_tokens"]
    );
    let replicas = s["replicas_needed"].as_f64().unwrap();
    assert_eq!(
        s["cost_per_hour_usd"].as_f64().unwrap(),
        replicas * 1.0 * 2.5
    );

    // GET returns the same document; viewers read.
    let got = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &vic, None)
        .await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json()["sizing"], doc["sizing"]);
    // …but do not propose.
    let r = app
        .api("POST", "/api/v1/proposals", &vic, Some(chat_api()))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // The OpenAPI document lists the endpoints.
    let spec = app.api("GET", "/api/v1/openapi.json", &vic, None).await;
    let paths = &spec.json()["paths"];
    for (p, method) in [
        ("/proposals", "post"),
        ("/proposals/{id}", "get"),
        ("/proposals/{id}/review", "post"),
        ("/proposals/{id}/observed", "post"),
    ] {
        assert!(
            paths.get(p).and_then(|p| p.get(method)).is_some(),
            "{method} {p} missing from OpenAPI"
        );
    }
}

#[tokio::test]
async fn impossible_inputs_say_what_would_work_and_save_nothing() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    body["tp"] = json!(3);
    body["gpus_per_replica"] = json!(3);
    let r = app.api("POST", "/api/v1/proposals", &ada, Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("must divide"), "{}", r.body);

    let mut body = chat_api();
    body["model"] = json!("llama-3.1-405b");
    let r = app.api("POST", "/api/v1/proposals", &ada, Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body.contains("does not fit at any concurrency"),
        "{}",
        r.body
    );

    let r = app
        .api(
            "POST",
            "/api/v1/proposals",
            &ada,
            Some(json!({"title": "x"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("gpu_type"), "{}", r.body);
    assert_eq!(count(&app).await, 0);
}

/// An SLO the settings cannot meet is no longer a 422: the proposal is a document under
/// review, saved with `meets_slo: false` and findings saying which SLO fails, by how
/// much, and which setting would meet it; the page and the Markdown show them.
#[tokio::test]
async fn an_slo_the_settings_miss_is_saved_with_findings() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    body["model"] = json!("llama-3.3-70b");
    body["tp"] = json!(2);
    body["gpus_per_replica"] = json!(2);
    body["slo_itl_p99_ms"] = json!(10);
    let doc = create(&mut app, &ada, body).await;
    let s = &doc["sizing"];
    assert_eq!(s["meets_slo"], json!(false));
    let f = &s["slo_findings"][0];
    assert_eq!(f["slo"], "slo_itl_p99_ms");
    assert_eq!(f["target_ms"], json!(10.0));
    assert!(f["over_by_ms"].as_f64().unwrap() > 11.0, "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(message.contains("the decode floor alone is"), "{message}");
    assert!(message.contains("TP "), "{message}");
    assert_eq!(count(&app).await, 1);

    let id = doc["id"].as_i64().unwrap();
    app.login("ada").await;
    let page = app.get(&format!("/proposals/{id}")).await;
    let shown = page.select("#slo-finding-slo_itl_p99_ms").join("");
    assert!(shown.contains("ITL p99 SLO 10 ms"), "{shown}");
    assert!(shown.contains("the decode floor alone is"), "{shown}");
    let md = app.get(&format!("/proposals/{id}/export.md")).await;
    assert!(md.body.contains("do not meet the SLOs"), "{}", md.body);

    // A proposal that meets them says so.
    let ok = create(&mut app, &ada, chat_api()).await;
    assert_eq!(ok["sizing"]["meets_slo"], json!(true));
    assert_eq!(ok["sizing"]["slo_findings"], json!([]));
}

/// Every memory figure on a proposal comes from one ledger built from its own inputs:
/// memory-fit at the proposal's max_num_batched_tokens, kv-pages with memory-fit's
/// activations and overhead as "everything else".
#[tokio::test]
async fn memory_figures_come_from_one_ledger_of_the_proposals_settings() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    body["model"] = json!("llama-3.1-70b");
    body["tp"] = json!(4);
    body["gpus_per_replica"] = json!(4);
    body["weight_dtype"] = json!("fp8");
    body["max_num_batched_tokens"] = json!(768);
    body["slo_itl_p99_ms"] = json!(200);
    body["slo_ttft_p95_ms"] = json!(3000);
    let doc = create(&mut app, &ada, body).await;
    let runs = doc["sizing"]["runs"].as_array().unwrap();
    let by = |name: &str| runs.iter().find(|r| r["estimator"] == name).unwrap();
    let mem = &by("memory-fit")["chain"]["results"];
    let act = mem["activation_bytes_per_gpu"].as_f64().unwrap();
    // the profiling pass at the proposal's 768 tokens: its sampler run over 768
    // sequences of the 128,256 vocab, not the 8,192-token default's 1,024
    assert!(
        (act - 768.0 * 128_256.0 * 38.9).abs() < 1.0,
        "not the 8,192-token default: {act}"
    );
    let kv = &by("kv-pages")["chain"]["results"];
    let other = kv["other_bytes"].as_f64().unwrap();
    assert_eq!(other, act + mem["overhead_bytes_per_gpu"].as_f64().unwrap());
    let pages = kv["pool_pages"].as_f64().unwrap();
    let tokens = mem["max_kv_tokens"].as_f64().unwrap();
    assert!(
        pages * 16.0 <= tokens && tokens < (pages + 1.0) * 16.0,
        "{pages} vs {tokens}"
    );
    // FP8 weights compute at the FP8 peak, named in the chain.
    let mixed = &by("mixed-step")["chain"];
    assert_eq!(mixed["inputs"]["compute_precision"], "FP8");
    assert_eq!(
        mixed["inputs"]["peak_flops"],
        json!(1_979_000_000_000_000u64)
    );
}

/// Links evidence through the page's form.
async fn link(app: &mut TestApp, id: i64, kind: &str, source: i64) {
    let r = app
        .post_form(
            &format!("/proposals/{id}/evidence"),
            &[("kind", kind), ("source_id", &source.to_string())],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

async fn review(app: &mut TestApp, token: &str, id: i64, body: Value) -> common::Reply {
    app.api(
        "POST",
        &format!("/api/v1/proposals/{id}/review"),
        token,
        Some(body),
    )
    .await
}

#[tokio::test]
async fn review_states_like_a_pull_request_with_409_on_a_stale_version() {
    let (mut app, ada, bob, vic) = app().await;
    let id = create(&mut app, &ada, chat_api()).await["id"]
        .as_i64()
        .unwrap();

    let r = review(
        &mut app,
        &ada,
        id,
        json!({"state": "in_review", "version": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["state"], "in_review");
    assert_eq!(r.json()["version"], 2);

    // The owner cannot approve their own proposal.
    let r = review(
        &mut app,
        &ada,
        id,
        json!({"state": "approved", "version": 2}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("another editor"), "{}", r.body);
    // Viewers read only.
    let r = review(&mut app, &vic, id, json!({"comment": "hm", "version": 2})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // bob comments on the workload, then requests changes.
    let r = review(
        &mut app,
        &bob,
        id,
        json!({"comment": "is p95 4000 from last month?", "section": "workload", "version": 2}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // ada reviews from version 2 while it is at 3: 409 naming bob's comment.
    let r = review(&mut app, &ada, id, json!({"comment": "ping", "version": 2})).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("version 3: bob commented"), "{}", r.body);
    assert!(
        r.body.contains("is p95 4000 from last month?"),
        "{}",
        r.body
    );

    // A move that is not allowed names the allowed ones.
    let r = review(
        &mut app,
        &bob,
        id,
        json!({"state": "rolled_out", "version": 3}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body.contains("approved, changes_requested, rejected"),
        "{}",
        r.body
    );

    let r = review(
        &mut app,
        &bob,
        id,
        json!({"state": "approved", "section": "sizing", "comment": "numbers re-derive", "version": 3}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = review(
        &mut app,
        &ada,
        id,
        json!({"state": "rolled_out", "version": 4}),
    )
    .await;
    assert_eq!(r.json()["state"], "rolled_out");

    let history = r.json()["history"].clone();
    let kinds: Vec<_> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_string(),
                e["to_state"].clone(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 5, "{history}");
    assert_eq!(history[2]["section"], "workload");
    assert_eq!(history[3]["actor"], "bob");
    assert_eq!(history[3]["to_state"], "approved");
}

#[tokio::test]
async fn after_rollout_observations_are_scored_and_kept_per_estimator() {
    let (mut app, ada, bob, _) = app().await;
    let doc = create(&mut app, &ada, chat_api()).await;
    let id = doc["id"].as_i64().unwrap();
    let expected_tps = doc["sizing"]["tokens_per_s_per_replica"].as_f64().unwrap();
    let expected_ttft = doc["sizing"]["ttft_p95_ms"].as_f64().unwrap();

    // Not rolled out yet: 409.
    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({"ttft_p95_ms": 300})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("after rollout"), "{}", r.body);

    // ada submits, bob approves, ada rolls it out.
    for (token, state, version) in [
        (&ada, "in_review", 1),
        (&bob, "approved", 2),
        (&ada, "rolled_out", 3),
    ] {
        let r = review(
            &mut app,
            token,
            id,
            json!({"state": state, "version": version}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }

    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({"tokens_per_s_per_replica": 4000, "ttft_p95_ms": 300, "bogus": 1})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("bogus"), "{}", r.body);

    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({"tokens_per_s_per_replica": 4000, "ttft_p95_ms": 300})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let scores = r.json()["scores"].clone();
    assert_eq!(scores.as_array().unwrap().len(), 2);
    assert_eq!(scores[0]["figure"], "tokens_per_s_per_replica");
    assert_eq!(scores[0]["observed"], 4000.0);
    assert_eq!(scores[0]["expected"], expected_tps);
    let err = scores[0]["error_pct"].as_f64().unwrap();
    assert!((err - (expected_tps - 4000.0) / 4000.0 * 100.0).abs() < 1e-9);
    assert_eq!(scores[1]["estimator"], "mixed-step");
    assert!(
        (scores[1]["error_pct"].as_f64().unwrap() - (expected_ttft - 300.0) / 3.0).abs() < 1e-9
    );

    // An artifact id of zero is refused naming the field, and nothing is kept.
    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({"ttft_p95_ms": 300, "artifact_ids": [0]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "artifact_ids");
    assert_eq!(observations(&app, id).await, 1);

    // The page's form refuses it the same way.
    app.login("ada").await;
    let r = app
        .post_form(
            &format!("/proposals/{id}/observed"),
            &[("ttft_p95_ms", "300"), ("artifact_ids", "12, 0")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("`0` is not an artifact id"), "{}", r.body);
    assert_eq!(observations(&app, id).await, 1);

    // The running record on /proposals shows the error per estimator.
    let page = app.get("/proposals").await;
    assert_eq!(page.status, StatusCode::OK);
    let record = page.select("#error-record td").join(" | ");
    assert!(record.contains("mixed-step"), "{record}");
    assert!(record.contains(&format!("{:.1} %", err.abs())), "{record}");
}

#[tokio::test]
async fn evidence_from_another_version_or_gpu_is_stale_with_the_difference_named() {
    let (mut app, ada, _, _) = app().await;
    let id = create(&mut app, &ada, chat_api()).await["id"]
        .as_i64()
        .unwrap();
    // Two journal entries: one on this deployment, one on an older vLLM on A100.
    let mut ids = Vec::new();
    for (gpu, version) in [("h100-sxm", "0.6.3"), ("a100-80gb", "0.5.4")] {
        let entry: i64 = sqlx::query_scalar(
            "INSERT INTO journal_entries (title, entry_date, symptom, workload, baseline, \
             diagnosis, change, result, author_id, published_at) VALUES ($1, current_date, \
             'p95 TTFT', 'chat', $2, 'prefill', 'chunked prefill', 'ok', \
             (SELECT id FROM users WHERE name = 'ada'), now()) RETURNING id",
        )
        .bind(format!("bench on {gpu}"))
        .bind(format!("llama-3.1-8b on {gpu}, vllm {version}"))
        .fetch_one(&app.pool)
        .await
        .unwrap();
        ids.push(entry);
    }
    app.login("ada").await;
    // The page suggests both (same model) before they are linked.
    let page = app.get(&format!("/proposals/{id}")).await;
    let suggested = page.select("#suggestions li").join(" | ");
    assert!(suggested.contains("bench on h100-sxm"), "{suggested}");
    for entry in &ids {
        link(&mut app, id, "journal", *entry).await;
    }
    let doc = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &ada, None)
        .await
        .json();
    let evidence = doc["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 2);
    assert_eq!(evidence[0]["stale"], json!([]), "{}", evidence[0]);
    let stale: Vec<_> = evidence[1]["stale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        stale.contains(&"GPU a100-80gb, the proposal has h100-sxm"),
        "{stale:?}"
    );
    assert!(
        stale.contains(&"engine version 0.5.4, the proposal has 0.6.3"),
        "{stale:?}"
    );
    let page = app.get(&format!("/proposals/{id}")).await;
    let shown = page.select("#evidence li").join(" | ");
    assert!(shown.contains("stale: GPU a100-80gb"), "{shown}");
}

#[tokio::test]
async fn proposals_are_searchable_and_export_to_markdown_and_json() {
    let (mut app, ada, _, _) = app().await;
    let id = create(&mut app, &ada, chat_api()).await["id"]
        .as_i64()
        .unwrap();
    app.login("ada").await;
    let r = app.get("/search?q=chat-api").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains(&format!("/proposals/{id}")), "{}", r.body);
    // A journal entry about throughput on this model lists it among related records.
    let entry: i64 = sqlx::query_scalar(
        "INSERT INTO journal_entries (title, entry_date, symptom, workload, baseline, author_id, \
         published_at) VALUES ('tokens/s short', current_date, 'throughput below target', \
         'chat', 'llama-3.1-8b on h100-sxm, vllm 0.6.3', \
         (SELECT id FROM users WHERE name = 'ada'), now()) RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let related = app.get(&format!("/journal/{entry}/related")).await;
    assert!(
        related.body.contains(&format!("/proposals/{id}")),
        "{}",
        related.body
    );
    let md = app.get(&format!("/proposals/{id}/export.md")).await;
    assert_eq!(md.status, StatusCode::OK);
    assert!(md
        .body
        .starts_with(&format!("# Capacity proposal {id}: chat-api on H100")));
    assert!(md.body.contains("## Sensitivity"));
    let js = app.get(&format!("/proposals/{id}/export.json")).await;
    assert_eq!(js.json()["id"], id);
    assert!(js.json()["sizing"]["memory_fit"]["fits"].as_bool().unwrap());
}

#[tokio::test]
async fn seed_demo_adds_one_proposal_in_review_and_one_rolled_out_with_observations() {
    let (mut app, _, _, _) = app().await;
    for _ in 0..2 {
        perfjournal::investigations::seed::seed_demo(&app.pool, 1)
            .await
            .unwrap();
    }
    let states: Vec<(String, i64)> = sqlx::query_as(
        "SELECT p.state, (SELECT count(*) FROM proposal_observations o WHERE o.proposal_id = p.id) \
         FROM proposals p ORDER BY p.id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        states,
        [("rolled_out".to_string(), 1), ("in_review".to_string(), 0)]
    );
    app.login("ada").await;
    let list = app.get("/proposals").await;
    assert_eq!(list.select("#proposals tbody tr").len(), 2);
    let record = list.select("#error-record td").join(" | ");
    // The demo observed 0.78× the expected tokens/s: the estimate was 28.2 % high.
    assert!(record.contains("+28.2 %"), "{record}");
}

#[tokio::test]
async fn the_form_names_each_problem_beside_its_field_and_saves_nothing() {
    let (mut app, _, _, _) = app().await;
    app.login("ada").await;
    let pairs: Vec<(String, String)> = chat_api()
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect();
    let mut bad = pairs.clone();
    for (k, v) in bad.iter_mut() {
        if k == "tp" || k == "gpus_per_replica" {
            *v = "3".into();
        }
    }
    let fields: Vec<(&str, &str)> = bad.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = app.post_form("/proposals", &fields).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let beside = r.select("#tp-error").join("");
    assert!(beside.contains("must divide"), "{beside}");
    assert_eq!(r.select_attr("#title", "value"), ["chat-api on H100"]);
    assert_eq!(count(&app).await, 0);

    let fields: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form("/proposals", &fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(r.location().unwrap()).await;
    assert!(page.select("#figure-replicas_needed td").len() == 5);
    assert_eq!(page.select("#sensitivity tbody tr").len(), 8);
    assert_eq!(page.select("details.chain").len(), 6);
}

#[tokio::test]
async fn an_edit_from_an_older_version_gets_409_naming_what_changed() {
    let (mut app, ada, bob, _) = app().await;
    let doc = create(&mut app, &ada, chat_api()).await;
    let id = doc["id"].as_i64().unwrap();
    let replicas = doc["sizing"]["replicas_needed"].as_i64().unwrap();
    app.login("ada").await;
    let form = app.get(&format!("/proposals/{id}/edit")).await;
    assert_eq!(form.select_attr("input[name=version]", "value"), ["1"]);
    assert_eq!(form.select_attr("#arrival_rate", "value"), ["45"]);

    // bob comments meanwhile.
    let r = review(
        &mut app,
        &bob,
        id,
        json!({"comment": "arrivals doubled last week", "version": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let mut fields: Vec<(String, String)> = doc["input"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (
                k.clone(),
                if k == "arrival_rate" {
                    "90".into()
                } else {
                    text
                },
            )
        })
        .collect();
    fields.push(("version".into(), "1".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app
        .post_form(&format!("/proposals/{id}/edit"), &pairs)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let said = r.select("#conflict").join("");
    assert!(said.contains("arrivals doubled last week"), "{said}");
    // The form keeps the typed 90 req/s, now on version 2.
    assert_eq!(r.select_attr("#arrival_rate", "value"), ["90"]);
    assert_eq!(r.select_attr("input[name=version]", "value"), ["2"]);
    let unchanged = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &ada, None)
        .await
        .json();
    assert_eq!(unchanged["input"]["arrival_rate"], 45.0);

    fields.pop();
    fields.push(("version".into(), "2".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app
        .post_form(&format!("/proposals/{id}/edit"), &pairs)
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let edited = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &ada, None)
        .await
        .json();
    assert_eq!(edited["version"], 3);
    assert!(edited["sizing"]["replicas_needed"].as_i64().unwrap() > replicas);
    assert_eq!(edited["history"][2]["kind"], "edited");
}

#[tokio::test]
async fn a_linked_bench_shows_estimate_vs_measurement_and_sizes_from_it_when_asked() {
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES") else {
        eprintln!("skipped: PERFJOURNAL_REAL_FIXTURES is unset (it names the folder holding vllm_bench/*.json)");
        return;
    };
    let dir = std::path::Path::new(&root).join("vllm_bench");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let bench = std::fs::read(&files[0]).unwrap();
    let measured = serde_json::from_slice::<Value>(&bench).unwrap()["output_throughput"]
        .as_f64()
        .unwrap();

    let (mut app, ada, _, _) = app().await;
    // The bench is Llama-3.3-70B on TP 8 (H100): the proposal sizes that deployment.
    let mut body = chat_api();
    body["model"] = json!("llama-3.3-70b");
    body["tp"] = json!(8);
    body["gpus_per_replica"] = json!(8);
    body["max_num_batched_tokens"] = json!(1024);
    let doc = create(&mut app, &ada, body).await;
    let id = doc["id"].as_i64().unwrap();
    let artifact =
        common::uploads::upload_analyzed(&mut app, &ada, "bench.json", bench.clone()).await;

    app.login("ada").await;
    link(&mut app, id, "artifact", artifact).await;
    let page = app.get(&format!("/proposals/{id}")).await;
    let shown = page.select("#evidence .measured").join("");
    assert!(
        shown.contains(&format!("measured {measured:.0} output tokens/s")),
        "{shown}"
    );
    // The bench's concurrency is read from it (its limit, else Little's law: req/s ×
    // mean end-to-end latency), offered in the box beside the button and used when the
    // box is left empty.
    let json_bench: Value = serde_json::from_slice(&bench).unwrap();
    // This file has no limit and no mean E2E: each request's E2E is its TTFT plus its
    // gaps between tokens (s), as vLLM's own per-request arrays give them.
    let f = |v: &Value| v.as_f64().unwrap();
    let e2e: Vec<f64> = json_bench["ttfts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(json_bench["itls"].as_array().unwrap())
        .map(|(t, gaps)| f(t) + gaps.as_array().unwrap().iter().map(f).sum::<f64>())
        .collect();
    let mean_e2e_s = e2e.iter().sum::<f64>() / e2e.len() as f64;
    let in_flight = json_bench["max_concurrency"]
        .as_f64()
        .unwrap_or(f(&json_bench["request_throughput"]) * mean_e2e_s);
    let in_flight = in_flight.round().max(1.0);
    assert_eq!(
        common::form_value(&page, "#evidence input[name=measured_concurrency]"),
        format!("{in_flight}")
    );
    let r = app
        .post_form(
            &format!("/proposals/{id}/use-measurement"),
            &[
                ("kind", "artifact"),
                ("source_id", &artifact.to_string()),
                ("measured_concurrency", ""),
                ("version", "1"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let after = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &ada, None)
        .await
        .json();
    assert_eq!(
        after["input"]["measured_concurrency"].as_f64(),
        Some(in_flight),
        "{after}"
    );
    let s = &after["sizing"];
    assert_eq!(s["uses_measurement"], true);
    assert_eq!(s["tokens_per_s_per_replica"], measured);
    assert_eq!(
        s["estimated_tokens_per_s_per_replica"],
        doc["sizing"]["estimated_tokens_per_s_per_replica"]
    );
    let needed = (45.0_f64 * 1.2 / (measured / 300.0)).ceil();
    assert_eq!(s["replicas_needed"].as_f64().unwrap(), needed);

    // After rollout the same bench, attached without typed figures, is scored on what
    // it measured: its p95 TTFT and p99 ITL.
    let bob = app.api_token("bob").await;
    for (token, state, version) in [
        (&ada, "in_review", 2),
        (&bob, "approved", 3),
        (&ada, "rolled_out", 4),
    ] {
        let r = review(
            &mut app,
            token,
            id,
            json!({"state": state, "version": version}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({"artifact_ids": [artifact], "note": "the rollout bench"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let analysis: Value = sqlx::query_scalar("SELECT analysis FROM artifacts WHERE id = $1")
        .bind(artifact)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let scores = r.json()["scores"].clone();
    let figures: Vec<_> = scores
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["figure"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(figures, ["ttft_p95_ms", "itl_p99_ms"]);
    assert_eq!(scores[0]["observed"], analysis["ttft_ms"]["p95"]);
    assert_eq!(scores[1]["observed"], analysis["itl_ms"]["p99"]);
    let r = app
        .api(
            "POST",
            &format!("/api/v1/proposals/{id}/observed"),
            &ada,
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body.contains("at least one observed figure"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn viewers_read_proposals_but_get_no_forms_and_histograms_size_too() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    let o = body.as_object_mut().unwrap();
    o.remove("prompt_tokens_mean");
    o.remove("prompt_tokens_p95");
    o.insert(
        "prompt_tokens_histogram".into(),
        json!("512:120, 2048:300, 8192:40"),
    );
    let doc = create(&mut app, &ada, body).await;
    assert_eq!(doc["input"]["prompt_tokens_mean"], 1347);
    assert_eq!(doc["input"]["prompt_tokens_p95"], 8192);
    assert_eq!(doc["sizing"]["max_model_len"], 8192 + 800);
    let id = doc["id"].as_i64().unwrap();

    app.login("vic").await;
    let page = app.get(&format!("/proposals/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.select("#figures tr").len() > 10);
    for form in ["#review-form", "#link-evidence", "#edit"] {
        assert!(page.select(form).is_empty(), "{form} shown to a viewer");
    }
    assert_eq!(
        app.get("/proposals/new").await.status,
        StatusCode::FORBIDDEN
    );
    let r = app
        .post_form(
            &format!("/proposals/{id}/review"),
            &[("comment", "x"), ("version", "1")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_list_pages_fifty_at_a_time() {
    let (mut app, ada, _, _) = app().await;
    create(&mut app, &ada, chat_api()).await;
    sqlx::query(
        "INSERT INTO proposals (title, owner_id, input, sizing, sensitivity, model, gpu, engine, \
         engine_version, weight_dtype, replicas, cost_per_hour_usd) \
         SELECT title || ' ' || n, owner_id, input, sizing, sensitivity, model, gpu, engine, \
         engine_version, weight_dtype, replicas, cost_per_hour_usd \
         FROM proposals, generate_series(1, 50) AS n",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    app.login("ada").await;
    let first = app.get("/proposals").await;
    assert_eq!(first.select("#proposals tbody tr").len(), 50);
    let older = first.select_attr("a[rel=next]", "href");
    assert_eq!(older.len(), 1);
    let rest = app.get(&older[0]).await;
    let rows = rest.select("#proposals tbody tr td:first-child a");
    assert_eq!(rows, ["chat-api on H100"]);
    assert!(rest.select_attr("a[rel=next]", "href").is_empty());
}

/// The proposal form and API read "1,500", "0.8 s", "60 ms" and "$2.50" with the one
/// quantity reader; a time where a rate belongs is refused naming the field.
#[tokio::test]
async fn proposal_inputs_take_separators_and_units_where_the_unit_fits() {
    let (mut app, ada, _, _) = app().await;
    let plain = create(&mut app, &ada, chat_api()).await;
    let mut typed = chat_api();
    typed["prompt_tokens_mean"] = "1,500".into();
    typed["slo_ttft_p95_ms"] = "0.8 s".into();
    typed["slo_itl_p99_ms"] = "60 ms".into();
    typed["gpu_hour_usd"] = "$2.50".into();
    let typed = create(&mut app, &ada, typed).await;
    assert_eq!(typed["input"], plain["input"]);

    let mut wrong = chat_api();
    wrong["arrival_rate"] = "45 ms".into();
    let r = app
        .api("POST", "/api/v1/proposals", &ada, Some(wrong))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let field = &r.json()["error"]["fields"][0];
    assert_eq!(field["field"], "arrival_rate");
    assert!(
        field["message"]
            .as_str()
            .unwrap()
            .contains("a request rate"),
        "{field}"
    );
    assert_eq!(count(&app).await, 2);
}

/// A measured throughput needs the bench's concurrency (422 naming it, nothing saved);
/// with it the page compares the estimate at that concurrency and says what the ratio
/// means.
#[tokio::test]
async fn a_measurement_is_compared_at_the_benchs_concurrency_and_explained() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    body["measured_tokens_per_s_per_replica"] = json!(1000);
    let r = app
        .api("POST", "/api/v1/proposals", &ada, Some(body.clone()))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("measured_concurrency"), "{}", r.body);
    assert!(r.body.contains("is required with"), "{}", r.body);
    assert_eq!(count(&app).await, 0);

    body["measured_concurrency"] = json!(16);
    let doc = create(&mut app, &ada, body).await;
    let s = &doc["sizing"];
    assert_eq!(s["compared_batch"], 16);
    let at16 = s["estimated_tokens_per_s_at_measured_concurrency"]
        .as_f64()
        .unwrap();
    let sized = s["estimated_tokens_per_s_per_replica"].as_f64().unwrap();
    assert!(at16 < sized, "fewer requests in flight, less throughput");
    let figure = s["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "estimate_over_measured")
        .unwrap();
    assert!((figure["value"].as_f64().unwrap() - at16 / 1000.0).abs() < 1e-9);

    app.login("ada").await;
    let id = doc["id"].as_i64().unwrap();
    let page = app.get(&format!("/proposals/{id}")).await;
    let row = page.select("#figure-estimate_over_measured").join(" ");
    assert!(row.contains("at the bench's concurrency"), "{row}");
    assert!(row.contains("the bench's 16 requests in flight"), "{row}");
    assert!(row.contains("what the bench measured"), "{row}");
    assert_eq!(
        page.select("#measured-input"),
        ["Measured in a bench: 1000 output tokens/s per replica with 16 requests in flight"]
    );
    assert!(
        row.contains(&format!("At the sized batch of {}", s["batch"])),
        "{row}"
    );
}

/// The README's example: Qwen3-30B-A3B BF16 on 2×H100 TP 2 at batch 256 with
/// max_num_batched_tokens 8,192 prefills 8,192 − 256 = 7,936 tokens in the step that
/// sets ITL p99: 59.9 ms on the page, as `perfjournal estimate` adds it up.
#[tokio::test]
async fn itl_p99_carries_the_whole_chunk_budget_as_the_cli_computes_it() {
    let (mut app, ada, _, _) = app().await;
    let mut body = chat_api();
    for (k, v) in [
        ("model", json!("qwen3-30b-a3b")),
        ("gpus_per_replica", json!(2)),
        ("tp", json!(2)),
        ("max_num_seqs", json!(256)),
        ("max_num_batched_tokens", json!(8192)),
        ("prompt_tokens_mean", json!(1000)),
        ("prompt_tokens_p95", json!(1100)),
        ("output_tokens_mean", json!(200)),
        ("output_tokens_p95", json!(400)),
        ("shared_prefix_tokens", json!(0)),
        ("prefix_hit_rate", json!(0)),
        ("slo_ttft_p95_ms", json!(2000)),
        ("slo_itl_p99_ms", json!(100)),
    ] {
        body[k] = v;
    }
    let doc = create(&mut app, &ada, body.clone()).await;
    let s = &doc["sizing"];
    assert_eq!(s["batch"], 256);
    assert_eq!(s["chunk_tokens"], 7936);
    let cli = |name: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
            .args([
                "estimate",
                name,
                "model=qwen3-30b-a3b",
                "gpu=h100-sxm",
                "tp=2",
                "batch=256",
                "context=1100",
                "chunk_tokens=7936",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["results"].clone()
    };
    let mixed = cli("mixed-step")["step_ms"].as_f64().unwrap();
    let allreduce = {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
            .args([
                "estimate",
                "tp-allreduce",
                "model=qwen3-30b-a3b",
                "gpu=h100-sxm",
                "tp=2",
                "batch=256",
                "context=1100",
                "--json",
            ])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["results"]["allreduce_ms"]
            .as_f64()
            .unwrap()
    };
    let itl = s["itl_p99_ms"].as_f64().unwrap();
    assert!(
        (itl - (mixed + allreduce)).abs() < 1e-9,
        "{itl} vs {mixed} + {allreduce}"
    );
    assert!((itl - 59.9).abs() < 0.05, "{itl}");
    app.login("ada").await;
    let id = doc["id"].as_i64().unwrap();
    let page = app.get(&format!("/proposals/{id}")).await;
    let row = page.select("#figure-itl_p99_ms").join(" ");
    assert!(row.contains("59.9 ms"), "{row}");
    assert!(row.contains("7936 chunk tokens + 256 decode"), "{row}");

    // Against the 50 ms SLO the settings are kept with a finding naming the budget.
    body["slo_itl_p99_ms"] = json!(50);
    let tight = create(&mut app, &ada, body).await;
    assert_eq!(tight["sizing"]["meets_slo"], false);
    let finding = tight["sizing"]["slo_findings"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        finding.contains("max_num_batched_tokens of at most"),
        "{finding}"
    );
}

/// A model given by its config.json keeps the name the person gave it, so its entry
/// reads as the same model as the journal's; without one, the config's _name_or_path.
#[tokio::test]
async fn a_config_json_model_keeps_the_name_given() {
    let (mut app, ada, _, _) = app().await;
    let config = json!({"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
        "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
        "vocab_size": 151936, "torch_dtype": "bfloat16"});
    let mut body = chat_api();
    body["model"] = json!("Qwen3-30B-A3B");
    body["config"] = config.clone();
    body["gpus_per_replica"] = json!(2);
    body["tp"] = json!(2);
    let doc = create(&mut app, &ada, body.clone()).await;
    let id = doc["id"].as_i64().unwrap();
    let model: String = sqlx::query_scalar("SELECT model FROM proposals WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(model, "qwen3-30b-a3b");
    app.login("ada").await;
    let page = app.get(&format!("/proposals/{id}")).await;
    let inputs = page.select("#inputs li").join(" ");
    assert!(inputs.contains("Qwen3-30B-A3B on 2 × h100-sxm"), "{inputs}");
    assert!(!inputs.contains("qwen3_moe"), "{inputs}");
    let md = app.get(&format!("/proposals/{id}/export.md")).await;
    assert!(md.body.contains("Qwen3-30B-A3B"), "{}", md.body);

    // A config alone is named by its _name_or_path.
    body.as_object_mut().unwrap().remove("model");
    let mut named = config;
    named["_name_or_path"] = json!("Qwen/Qwen3-30B-A3B");
    body["config"] = named;
    let doc = create(&mut app, &ada, body).await;
    let page = app.get(&format!("/proposals/{}", doc["id"])).await;
    let inputs = page.select("#inputs li").join(" ");
    assert!(inputs.contains("Qwen/Qwen3-30B-A3B on"), "{inputs}");
}

/// The owner is not offered a verdict on their own proposal; a refused review shows the
/// form again with the comment kept and why (422), and a stale one says what changed
/// (409); the API answers the same codes with the message.
#[tokio::test]
async fn a_refused_review_keeps_the_comment_and_says_why() {
    let (mut app, ada, bob, _) = app().await;
    let id = create(&mut app, &ada, chat_api()).await["id"]
        .as_i64()
        .unwrap();
    let r = review(
        &mut app,
        &ada,
        id,
        json!({"state": "in_review", "version": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    app.login("ada").await;
    let page = app.get(&format!("/proposals/{id}")).await;
    let offered = page.select("#review-state option");
    assert_eq!(offered, ["(comment only)"], "the owner gets no verdict");
    assert!(!page.select("#owner-review-note").is_empty());

    // A hand-made approval by the owner: 422, the form again with the comment kept.
    let comment = "Sizing checked against last week's bench";
    let r = app
        .post_form(
            &format!("/proposals/{id}/review"),
            &[
                ("state", "approved"),
                ("comment", comment),
                ("section", "sizing"),
                ("version", "2"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let html = scraper::Html::parse_document(&r.body);
    let text = |sel: &str| {
        html.select(&scraper::Selector::parse(sel).unwrap())
            .map(|e| e.text().collect::<String>())
            .collect::<Vec<_>>()
    };
    assert!(text("#review-error")[0].contains("the owner cannot approve their own proposal"));
    assert_eq!(text("#review-comment"), [comment]);
    assert_eq!(text("#review-section option[selected]"), ["sizing"]);
    let version: i32 = sqlx::query_scalar("SELECT version FROM proposals WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(version, 2, "nothing changed");

    // bob is offered the verdicts; a stale version gets 409 with the account, comment kept.
    let r = review(
        &mut app,
        &bob,
        id,
        json!({"comment": "p95 from when?", "version": 2}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app
        .post_form(
            &format!("/proposals/{id}/review"),
            &[("comment", "and the prefix hit rate?"), ("version", "2")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("version 3: bob commented"), "{}", r.body);
    assert!(r.body.contains("and the prefix hit rate?"), "{}", r.body);

    app.login("bob").await;
    let page = app.get(&format!("/proposals/{id}")).await;
    assert_eq!(
        page.select("#review-state option"),
        [
            "(comment only)",
            "approved",
            "changes requested",
            "rejected"
        ]
    );
    // The API: the owner's approval is 422 with the message.
    let r = review(
        &mut app,
        &ada,
        id,
        json!({"state": "approved", "version": 3}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body
            .contains("the owner cannot approve their own proposal"),
        "{}",
        r.body
    );
}
