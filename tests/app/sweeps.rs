//! Load sweeps end to end: a vLLM summary table uploaded and shown as points (API and
//! page), a sweep made of single-rate benchmark artifacts with its SLO answer, and the
//! refusals (a different model, bad SLO input, a single run sent as a sweep).

use crate::common;

use axum::http::StatusCode;
use common::uploads::{summary_table, summary_table_of, upload_analyzed};
use common::{spawn_app, TestApp};
use serde_json::{json, Value};

async fn editor_app() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

/// One `vllm bench serve --save-result` file (summary keys only) at `rate`.
fn bench_file(model: &str, rate: Value, rps: f64, p99_ttft: f64) -> Vec<u8> {
    json!({
        "date": "20261201-120000", "backend": "vllm", "model_id": model,
        "tokenizer_id": model, "num_prompts": 200, "request_rate": rate,
        "burstiness": 1.0, "max_concurrency": null, "completed": 200, "failed": 0,
        "request_throughput": rps, "output_throughput": rps * 180.0,
        "mean_ttft_ms": p99_ttft / 2.0, "median_ttft_ms": p99_ttft / 2.2, "p99_ttft_ms": p99_ttft,
        "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p99_tpot_ms": 30.0,
        "mean_itl_ms": 19.0, "median_itl_ms": 18.0, "p99_itl_ms": 50.0
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn a_summary_table_is_a_sweep_with_points() {
    let (mut app, token) = editor_app().await;
    let id = upload_analyzed(&mut app, &token, "summary.json", summary_table()).await;
    let r = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), &token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let doc = r.json();
    assert_eq!(doc["kind"], "sweep");
    let points = doc["analysis"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 5);
    assert_eq!(points[0]["offered_rate"], 2.0);
    assert_eq!(points[0]["achieved_rps"], 2.0);
    assert_eq!(points[2]["ttft_ms"]["p99"], 120.0);
    assert_eq!(points[2]["tpot_ms"]["p50"], 20.0);
    assert_eq!(points[2]["itl_ms"]["mean"], 20.0);
    assert!(points[4]["offered_rate"].is_null(), "{}", points[4]);
    assert_eq!(points[4]["unbounded"], true);

    // The sweep endpoint on the file: exactly at the limit (200 ms at 8 req/s) meets it.
    let slo = json!({"metric": "ttft", "percentile": "p99", "max_ms": 200});
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifact": id, "slo": slo})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let a = r.json();
    assert_eq!(a["best"]["offered_rate"], 8.0);
    assert_eq!(a["best"]["achieved_rps"], 6.3);
    assert_eq!(a["meets_slo_at_last_point"], false);
    assert_eq!(a["knee"]["offered_rate"], 6.0);
    assert_eq!(a["points"].as_array().unwrap().len(), 5);

    // The page: both pictures, the knee sentence, the SLO answer and the table.
    let page = app
        .get(&format!(
            "/artifacts/{id}?slo_metric=ttft&slo_percentile=p99&slo_max=0.2+s"
        ))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#section-sweep svg.sweep-chart").len(), 2);
    assert_eq!(page.select("#section-sweep svg .slo-line").len(), 1);
    let lead = page.select("#section-sweep .lead-sm").join(" ");
    assert!(lead.contains("after 6 req/s"), "{lead}");
    assert!(lead.contains("6.3 req/s achieved at 8 req/s"), "{lead}");
    let rows = page.select("#section-sweep table tbody tr");
    assert_eq!(rows.len(), 5);
    assert!(
        rows[3].contains("yes") && rows[4].contains("no"),
        "{rows:?}"
    );

    // A bad limit is a 422 naming the field, with the form kept.
    let bad = app
        .get(&format!(
            "/artifacts/{id}?slo_metric=ttft&slo_percentile=p99&slo_max=5+tok%2Fs"
        ))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let err = bad.select("#sweep-slo .field-error").join(" ");
    assert!(err.contains("slo_max") && err.contains("tok/s"), "{err}");
}

#[tokio::test]
async fn a_sweep_made_of_artifacts_and_its_refusals() {
    let (mut app, token) = editor_app().await;
    let m = "meta-llama/Llama-3.1-8B-Instruct";
    let mut ids = Vec::new();
    for (rate, rps, p99) in [(8.0, 7.1, 260.0), (2.0, 2.0, 90.0), (4.0, 3.9, 100.0)] {
        let name = format!("rate{rate}.json");
        ids.push(
            upload_analyzed(
                &mut app,
                &token,
                &name,
                bench_file(m, json!(rate), rps, p99),
            )
            .await,
        );
    }
    let slo = json!({"metric": "ttft", "percentile": "p99", "max_ms": "0.3 s"});
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": ids, "slo": slo})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let a = r.json();
    let rates: Vec<f64> = a["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["offered_rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [2.0, 4.0, 8.0]);
    assert_eq!(a["points"][2]["artifact"], ids[0]);
    // The highest load measured still meets the SLO: say the limit may be higher.
    assert_eq!(a["best"]["offered_rate"], 8.0);
    assert_eq!(a["meets_slo_at_last_point"], true);
    assert!(a["sentences"]
        .to_string()
        .contains("true limit may be higher"));

    // Nothing meets a tight SLO.
    let tight = json!({"metric": "ttft", "percentile": "p99", "max_ms": 50});
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": ids, "slo": tight})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.json()["best"].is_null());
    assert_eq!(r.json()["meets_slo_at_last_point"], false);

    // Another model at a fourth rate: refused, naming the model on each side.
    let other = upload_analyzed(
        &mut app,
        &token,
        "other.json",
        bench_file("meta-llama/Llama-3.1-70B-Instruct", json!(16.0), 9.0, 900.0),
    )
    .await;
    let mut mixed = ids.clone();
    mixed.push(other);
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": mixed})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let text = r.body.clone();
    assert!(text.contains("Model"), "{text}");
    assert!(
        text.contains("Llama-3.1-70B-Instruct in artifact"),
        "{text}"
    );
    assert!(text.contains("other.json"), "{text}");

    // One single-rate run sent as a sweep file; an SLO on a statistic the files lack;
    // a metric that is no latency; no source at all.
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifact": ids[0]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("one run at one load"), "{}", r.body);
    let p95 = json!({"metric": "ttft", "percentile": "p95", "max_ms": 100});
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": ids, "slo": p95})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("no p95 TTFT"), "{}", r.body);
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": ids, "slo": {"metric": "throughput", "percentile": "p99", "max_ms": 1}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("slo.metric"), "{}", r.body);
    let r = app
        .api("POST", "/api/v1/sweeps", &token, Some(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("artifacts"), "{}", r.body);
    let r = app
        .api(
            "POST",
            "/api/v1/sweeps",
            &token,
            Some(json!({"artifacts": [999999, ids[0]]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("no artifact 999999"), "{}", r.body);
}

/// The sweep after the change: lower latency, 8.1 req/s within 200 ms p99 TTFT.
fn after_table() -> Vec<u8> {
    summary_table_of(&[
        ("2", 2.0, 70.0),
        ("6", 5.9, 80.0),
        ("8", 7.9, 120.0),
        ("10", 8.1, 190.0),
    ])
}

#[tokio::test]
async fn two_sweeps_compared_by_slo_capacity() {
    let (mut app, token) = editor_app().await;
    let before = upload_analyzed(&mut app, &token, "before.json", summary_table()).await;
    let after = upload_analyzed(&mut app, &token, "after.json", after_table()).await;
    let page = app.get("/comparisons/sweeps").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(
        page.select("#sweep-before option").len(),
        3,
        "two sweeps and 'choose'"
    );
    assert!(page.select("#sweep-capacity").is_empty());

    let page = app
        .get(&format!(
            "/comparisons/sweeps?before={before}&after={after}&slo_metric=ttft&slo_percentile=p99&slo_max=200+ms"
        ))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let sentence = page.select("#capacity-sentence").join("");
    assert_eq!(
        sentence,
        "p99 TTFT at 8 req/s went 200 → 120 ms; max rate at SLO (p99 TTFT ≤ 200 ms) 6.3 → 8.1+ req/s"
    );
    let rows = page.select("#sweep-capacity tbody tr");
    assert!(
        rows[0].contains("6.30 req/s at 8 req/s") && rows[0].contains("8.10 req/s at 10 req/s"),
        "{rows:?}"
    );
    assert!(rows[3].contains("1.29×"), "{rows:?}");
    assert_eq!(page.select("#sweep-capacity svg.sweep-chart").len(), 2);

    // Missing limit and a single run as a side: 422, each named.
    let single = upload_analyzed(
        &mut app,
        &token,
        "one.json",
        bench_file("m", json!(4.0), 3.9, 100.0),
    )
    .await;
    let page = app
        .get(&format!(
            "/comparisons/sweeps?before={before}&after={single}&slo_max="
        ))
        .await;
    assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY);
    let errs = page.select("#sweep-compare .field-error").join(" | ");
    assert!(
        errs.contains("after") && errs.contains("one run at one load"),
        "{errs}"
    );
    assert!(errs.contains("slo_max"), "{errs}");
}

#[tokio::test]
async fn steps_one_and_seven_read_the_investigations_sweeps() {
    let (mut app, token) = editor_app().await;
    app.login("ada").await;
    let inv = app.open_investigation(&token, "chat-api at peak").await;
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{inv}/steps/1"),
            &token,
            Some(json!({"metric": "ttft", "percentile": "p99", "observed": 900, "target": 200, "unit": "ms"})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    // No sweep yet: nothing is said.
    let page = app.get(&format!("/investigations/{inv}/steps/1")).await;
    assert!(page.select("#sweep-lines").is_empty());

    let before = format!("before.json&investigation={inv}");
    upload_analyzed(&mut app, &token, &before, summary_table()).await;
    let page = app.get(&format!("/investigations/{inv}/steps/1")).await;
    let one = page.select("#sweep-lines p").join(" ");
    assert!(
        one.contains("Baseline sweep before.json: Highest throughput within p99 TTFT ≤ 200 ms: 6.3 req/s achieved at 8 req/s"),
        "{one}"
    );
    let after = format!("after.json&investigation={inv}");
    upload_analyzed(&mut app, &token, &after, after_table()).await;
    let page = app.get(&format!("/investigations/{inv}/steps/7")).await;
    assert_eq!(page.status, StatusCode::OK);
    let seven = page.select("#sweep-lines p").join(" ");
    assert_eq!(
        seven,
        "Sweeps before.json → after.json: p99 TTFT at 8 req/s went 200 → 120 ms; max rate at SLO (p99 TTFT ≤ 200 ms) 6.3 → 8.1+ req/s."
    );
}

#[tokio::test]
async fn a_proposal_sizes_from_a_sweeps_throughput_at_its_slos_only_when_asked() {
    let (mut app, token) = editor_app().await;
    let body = json!({"title": "chat-api", "question": "serve chat-api at 45 req/s",
        "model": "llama-3.1-8b", "gpu_type": "h100-sxm", "gpus_per_replica": 1,
        "engine": "vllm", "engine_version": "0.6.3", "arrival_rate": 45,
        "prompt_tokens_mean": 1500, "prompt_tokens_p95": 4000, "output_tokens_mean": 300,
        "output_tokens_p95": 800, "max_num_batched_tokens": 1536, "slo_ttft_p95_ms": 800, "slo_itl_p99_ms": 60, "gpu_hour_usd": 2.5});
    let r = app
        .api("POST", "/api/v1/proposals", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let sweep = upload_analyzed(&mut app, &token, "summary.json", summary_table()).await;
    app.login("ada").await;
    let r = app
        .post_form(
            &format!("/proposals/{id}/evidence"),
            &[("kind", "artifact"), ("source_id", &sweep.to_string())],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    // Linked: the measurement is offered (p99 TTFT standing in for p95), not used.
    let doc = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &token, None)
        .await
        .json();
    let e = &doc["evidence"][0];
    let measured = e["measured_tokens_per_s"].as_f64().unwrap();
    assert!((measured - 6.3 * 190.0).abs() < 1e-6, "{e}");
    let note = e["measured_note"].as_str().unwrap();
    assert!(
        note.contains("at 8 req/s") && note.contains("stands in"),
        "{note}"
    );
    assert_eq!(doc["sizing"]["uses_measurement"], false);
    let page = app.get(&format!("/proposals/{id}")).await;
    assert!(page
        .select("#evidence .measured-note")
        .join("")
        .contains("8 req/s"));

    let r = app
        .post_form(
            &format!("/proposals/{id}/use-measurement"),
            &[
                ("kind", "artifact"),
                ("source_id", &sweep.to_string()),
                ("version", "1"),
            ],
        )
        .await;
    // A summary table holds no concurrency and no mean latency: the box beside the
    // button is required, and a post without it is refused naming the field.
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("measured_concurrency"), "{}", r.body);
    let r = app
        .post_form(
            &format!("/proposals/{id}/use-measurement"),
            &[
                ("kind", "artifact"),
                ("source_id", &sweep.to_string()),
                ("measured_concurrency", "32"),
                ("version", "1"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let after = app
        .api("GET", &format!("/api/v1/proposals/{id}"), &token, None)
        .await
        .json();
    assert_eq!(after["sizing"]["uses_measurement"], true);
    assert!(
        (after["sizing"]["tokens_per_s_per_replica"]
            .as_f64()
            .unwrap()
            - measured)
            .abs()
            < 1e-6
    );
}
