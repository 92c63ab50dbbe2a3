//! Bubble attribution on real PostgreSQL: a trace and a queue uploaded through the API,
//! `POST /api/v1/bubbles`, refusals naming the field, and inside an investigation step 3's
//! wording and the journal draft.

use crate::common;

use axum::http::StatusCode;
use common::bubble_data::{self, BASE_S};
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use serde_json::{json, Value};

async fn attribute(app: &mut TestApp, token: &str, body: Value) -> common::Reply {
    app.api("POST", "/api/v1/bubbles", token, Some(body)).await
}

fn classes(doc: &Value) -> Vec<&str> {
    doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["class"].as_str().unwrap())
        .collect()
}

async fn attributions(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM bubble_attributions")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_trace_and_a_request_log_are_attributed_through_the_api() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (trace, log) =
        bubble_data::upload_pair(&mut app, &token, None, bubble_data::log_with_a_bubble()).await;

    let r = attribute(&mut app, &token, json!({"trace": trace, "queue": log})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["offset_ms"], 0.0);
    assert_eq!(doc["source"], "request_log");
    assert_eq!(classes(&doc), ["runtime_bubble", "insufficient_load"]);
    let first = &doc["intervals"][0];
    // start_us is on the trace's absolute clock: baseTimeNanoseconds + 10 ms.
    let start = first["start_us"].as_f64().unwrap();
    assert!((start - (BASE_S * 1e6 + 10_000.0)).abs() < 1.0, "{start}");
    assert_eq!(first["dur_us"], 2000.0);
    assert_eq!(
        (first["device"].as_i64(), first["stream"].as_i64()),
        (Some(0), Some(7))
    );
    assert_eq!(first["preceded_by"], "host_wait");
    assert_eq!(doc["intervals"][1]["preceded_by"], "launch_gap");
    // Queued 9–11.5 ms: 1.5 ms of the 10–12 ms interval is recoverable.
    assert!((first["recoverable_us"].as_f64().unwrap() - 1500.0).abs() < 1.0);
    assert_eq!(doc["totals_us"]["runtime_bubble"], 2000.0);
    assert_eq!(doc["totals_us"]["insufficient_load"], 5000.0);
    assert_eq!(doc["totals_us"]["unknown"], 0.0);
    assert_eq!(doc["ranked"].as_array().unwrap().len(), 1);
    assert_eq!(doc["advice"]["finding"], "runtime_bubbles");
    assert!(doc["alignment"]
        .as_str()
        .unwrap()
        .contains("offset of 0 ms"));
    assert_eq!(doc["investigation"], Value::Null);
    assert_eq!(
        attributions(&app).await,
        0,
        "kept only inside an investigation"
    );

    // A correction of a minute moves the queue off the trace; the note names the offset
    // that lines them up again (0 here).
    let r = attribute(
        &mut app,
        &token,
        json!({"trace": trace, "queue": log, "offset_ms": 60000}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    assert_eq!(classes(&doc), ["unknown", "unknown"]);
    assert_eq!(doc["advice"]["finding"], "unknown");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("does not overlap") && notes.contains("offset_ms near 0 "),
        "{notes}"
    );

    // A longer minimum leaves only the 5 ms interval.
    let r = attribute(
        &mut app,
        &token,
        json!({"trace": trace, "queue": log, "min_idle_us": 3000}),
    )
    .await;
    assert_eq!(classes(&r.json()), ["insufficient_load"]);
}

#[tokio::test]
async fn a_prometheus_capture_of_timestamped_scrapes_is_a_queue_too() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let trace =
        bubble_data::upload(&mut app, &token, "trace.json", None, bubble_data::trace()).await;
    // 2 waiting from 10 to 12 ms, none otherwise.
    let zero = (BASE_S * 1000.0) as u64;
    let capture: String = [(0, 0), (10, 2), (12, 0), (40, 0), (60, 0)]
        .iter()
        .map(|(ms, waiting)| {
            format!(
                "vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} {waiting} {}\n",
                zero + ms
            )
        })
        .collect();
    let prom =
        bubble_data::upload(&mut app, &token, "metrics.prom", None, capture.into_bytes()).await;
    let r = attribute(&mut app, &token, json!({"trace": trace, "queue": prom})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["source"], "prometheus");
    assert_eq!(classes(&doc), ["runtime_bubble", "insufficient_load"]);
    assert_eq!(doc["intervals"][0]["waiting_max"], 2.0);
}

#[tokio::test]
async fn bad_input_is_refused_naming_the_field_and_nothing_is_kept() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("vic", Role::Viewer).await;
    let token = app.api_token("ada").await;
    let viewer = app.api_token("vic").await;
    let (_, trace, log) = bubble_data::investigation_with_a_bubble(&mut app, &token).await;
    let field = |r: &common::Reply| {
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        r.json()["error"]["fields"][0]["field"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let r = attribute(&mut app, &token, json!({"trace": trace})).await;
    assert_eq!(field(&r), "queue");
    assert!(r.body.contains("is required"), "{}", r.body);
    let r = attribute(&mut app, &token, json!({"trace": log, "queue": log})).await;
    assert_eq!(field(&r), "trace");
    assert!(r.body.contains("is a request_log"), "{}", r.body);
    let r = attribute(&mut app, &token, json!({"trace": trace, "queue": trace})).await;
    assert_eq!(field(&r), "queue");
    let r = attribute(&mut app, &token, json!({"trace": 999_999, "queue": log})).await;
    assert_eq!(field(&r), "trace");
    assert!(r.body.contains("there is no artifact 999999"), "{}", r.body);
    let r = attribute(
        &mut app,
        &token,
        json!({"trace": trace, "queue": log, "min_idle_us": 10}),
    )
    .await;
    assert_eq!(field(&r), "min_idle_us");
    let r = attribute(
        &mut app,
        &token,
        json!({"trace": trace, "queue": log, "offset_ms": "soon"}),
    )
    .await;
    assert_eq!(field(&r), "offset_ms");
    let r = attribute(&mut app, &token, json!([trace, log])).await;
    assert_eq!(field(&r), "body");
    let r = attribute(&mut app, &viewer, json!({"trace": trace, "queue": log})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(attributions(&app).await, 0);
}

#[tokio::test]
async fn the_step_3_form_refuses_an_artifact_id_of_zero_naming_the_field() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (inv, trace, _) = bubble_data::investigation_with_a_bubble(&mut app, &token).await;
    app.login("ada").await;
    let r = app
        .post_form(
            &format!("/investigations/{inv}/bubbles"),
            &[("trace", &trace.to_string()), ("queue", "0")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let error = r.select(".bubble-errors li[data-field=queue]");
    assert_eq!(error.len(), 1, "{}", r.body);
    assert!(error[0].contains("choose an artifact"), "{}", error[0]);
    assert_eq!(attributions(&app).await, 0);
}

#[tokio::test]
async fn step_3_says_when_all_idle_time_is_insufficient_load_and_the_journal_carries_it() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app
        .open_investigation(&token, "p95 TTFT with an idle GPU")
        .await;
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{inv}/steps/3"),
            &token,
            Some(json!({"gpu_total": 40, "cpu_total": 20, "wall": 100})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Before any attribution the waiting window lists the usual suspects.
    let page = app.get(&format!("/investigations/{inv}/steps/3")).await;
    assert!(!page.select("ol.suspects li").is_empty());
    assert!(page.select("#bubbles").is_empty());

    let trace = bubble_data::upload(
        &mut app,
        &token,
        "trace.json",
        Some(inv),
        bubble_data::trace(),
    )
    .await;
    let quiet = bubble_data::upload(
        &mut app,
        &token,
        "quiet.jsonl",
        Some(inv),
        bubble_data::log_without_waiting(),
    )
    .await;
    let r = attribute(&mut app, &token, json!({"trace": trace, "queue": quiet})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["investigation"], inv);
    assert_eq!(doc["step_url"], format!("/investigations/{inv}/steps/3"));
    assert_eq!(classes(&doc), ["insufficient_load", "insufficient_load"]);
    assert_eq!(doc["advice"]["no_tuning"], true);

    let page = app.get(&format!("/investigations/{inv}/steps/3")).await;
    assert_eq!(page.status, StatusCode::OK);
    let finding = page.select(".bubble-finding[data-finding=all_insufficient_load]");
    assert_eq!(finding.len(), 1, "{}", page.body);
    assert!(
        finding[0].contains("All 7.0 ms of GPU idle time")
            && finding[0].contains("insufficient offered load, not a runtime bubble"),
        "{}",
        finding[0]
    );
    // No scheduler or kernel suspects; the first experiment instead.
    assert!(page.select("ol.suspects").is_empty(), "{}", page.body);
    let no_tuning = page.select(".no-tuning");
    assert_eq!(no_tuning.len(), 1);
    assert!(no_tuning[0].contains("higher fixed concurrency with everything else unchanged"));
    assert!(page.select(".next-experiment")[0].starts_with("Replay at a higher fixed concurrency"));
    assert!(page.select(".ruled-out")[0].starts_with("runtime bubbles"));
    assert_eq!(
        page.select("svg.bubbles-chart rect.idle[data-class=insufficient_load]")
            .len(),
        2
    );
    assert_eq!(
        page.select("table.bubble-classes tr[data-class=insufficient_load] td.num")[2],
        "2"
    );
    let evidence = page.select_attr("#evidence a", "href");
    assert!(
        evidence.contains(&format!("/artifacts/{trace}")),
        "{evidence:?}"
    );
    assert!(
        evidence.contains(&format!("/artifacts/{quiet}")),
        "{evidence:?}"
    );

    // The journal draft carries the report fields after RESULT.
    let r = app
        .post_form(&format!("/investigations/{inv}/journal"), &[])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let entry: i64 = r
        .location()
        .unwrap()
        .trim_start_matches("/journal/")
        .trim_end_matches("/edit")
        .parse()
        .unwrap();
    let e = app
        .api("GET", &format!("/api/v1/journal/{entry}"), &token, None)
        .await
        .json();
    let result = e["result"].as_str().unwrap();
    assert!(result.contains("Dominant bubble: none"), "{result}");
    assert!(
        result.contains("Recoverable time: 0.0 ms of 50.0 ms GPU time"),
        "{result}"
    );
    assert!(result.contains("Ruled out: runtime bubbles"), "{result}");
    assert!(
        result.contains("Next experiment: Replay at a higher fixed concurrency"),
        "{result}"
    );

    // Attributed again from the page against a log where a request waited: a bubble,
    // ranked, and the low-load suspect is gone while the others come back.
    let busy = bubble_data::upload(
        &mut app,
        &token,
        "busy.jsonl",
        Some(inv),
        bubble_data::log_with_a_bubble(),
    )
    .await;
    let r = app
        .post_form(
            &format!("/investigations/{inv}/bubbles"),
            &[
                ("trace", &trace.to_string()),
                ("queue", &busy.to_string()),
                ("offset_ms", "0 ms"),
                ("min_idle_us", ""),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(&format!("/investigations/{inv}/steps/3")).await;
    assert_eq!(
        page.select(".bubble-finding[data-finding=runtime_bubbles]")
            .len(),
        1
    );
    assert_eq!(page.select("table.ranked-bubbles tbody tr").len(), 1);
    assert_eq!(page.select("td.recoverable")[0], "1.50 ms");
    let suspects = page.select("ol.suspects li");
    assert!(!suspects.is_empty());
    assert!(suspects
        .iter()
        .all(|s| !s.starts_with("insufficient offered load")));
    assert!(page.select(".no-tuning").is_empty());
    // A unit from another dimension is refused, naming both.
    let r = app
        .post_form(
            &format!("/investigations/{inv}/bubbles"),
            &[
                ("trace", &trace.to_string()),
                ("queue", &busy.to_string()),
                ("offset_ms", "3 GB"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    // Step 3 comes back with the form as sent and the error beside it.
    let error = r.select(".bubble-errors li[data-field=offset_ms]");
    assert_eq!(error.len(), 1, "{}", r.body);
    assert!(error[0].contains("GB"), "{}", error[0]);
    assert_eq!(r.select_attr("#b-offset", "value"), ["3 GB"]);
    assert_eq!(
        r.select_attr("#b-queue option[selected]", "value"),
        [busy.to_string()]
    );
    // A trace where the queue goes is refused by field too.
    let r = app
        .post_form(
            &format!("/investigations/{inv}/bubbles"),
            &[("trace", &trace.to_string()), ("queue", &trace.to_string())],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.select(".bubble-errors li[data-field=queue]").len(), 1);
    assert_eq!(attributions(&app).await, 2);
}
