//! Trace diffs through HTTP on a real PostgreSQL: the real HTA fixtures uploaded, the
//! diff posted, its figures held against HolisticTraceAnalysis 0.5.0's; bad input
//! refused with a 422 naming the field and nothing stored; the pages.

use crate::common;

use axum::http::StatusCode;
use common::uploads::upload_analyzed;
use common::{spawn_app, TestApp};
use serde_json::{json, Value};

const BASE: &str = "pytorch_trace/hta__trace_compare__base__base.json.gz";
const DIFF_TEST: &str = "pytorch_trace/hta__trace_diff__test__test.json.gz";

/// HTA 0.5.0 (`pip install HolisticTraceAnalysis==0.5.0`), each fixture alone in a
/// folder: `TraceDiff.ops_diff(LabeledTrace(label="control", trace_dir=base),
/// LabeledTrace(label="test", trace_dir=test))` and `TraceDiff.compare_traces` on the
/// same (defaults: first rank, first iteration, CPU and GPU), control trace_compare/base,
/// test trace_diff/test: class sizes (added, deleted, increased, decreased, unchanged)
/// and the top rows by |diff_duration| (name, test_counts, test_total_duration µs; all
/// absent in control).
const HTA_SUMMARY: [u64; 5] = [287, 0, 6, 0, 1];
const HTA_TOP: &[(&str, i64, f64)] = &[
    ("cudaMemcpyAsync", 802, 40994.0),
    ("## sparse_data_dist ##", 1, 36898.0),
    ("aten::item", 5, 32455.0),
    ("aten::_local_scalar_dense", 5, 32448.0),
    ("## backward ##", 1, 32224.0),
];

/// The real fixtures folder, or `None` after recording the skip.
pub(crate) fn fixtures() -> Option<std::path::PathBuf> {
    let root = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(std::path::PathBuf::from);
    if root.is_none() {
        common::skip(
            &common::test_skip::current_test(),
            "PERFJOURNAL_REAL_FIXTURES unset",
        );
    }
    root
}

/// An app with an admin, ada, and her API token.
pub(crate) async fn editor_app() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

async fn rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM trace_diffs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Reads the diff back until it is no longer analyzing.
async fn finished(app: &mut TestApp, token: &str, id: i64) -> Value {
    for _ in 0..600 {
        let r = app
            .api("GET", &format!("/api/v1/trace-diffs/{id}"), token, None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let doc = r.json();
        if doc["status"] != "analyzing" {
            return doc;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("trace diff {id} still analyzing after a minute");
}

async fn upload_fixture(
    app: &mut TestApp,
    token: &str,
    root: &std::path::Path,
    rel: &str,
    query: &str,
) -> i64 {
    let name = rel.rsplit('/').next().unwrap();
    upload_analyzed(
        app,
        token,
        &format!("{name}{query}"),
        std::fs::read(root.join(rel)).unwrap(),
    )
    .await
}

#[tokio::test]
async fn trace_diff_of_the_hta_fixtures_matches_hta() {
    let Some(root) = fixtures() else { return };
    let (mut app, token) = editor_app().await;
    let inv = app
        .open_investigation(&token, "copies after the change")
        .await;
    let query = format!("&investigation={inv}");
    let control = upload_fixture(&mut app, &token, &root, BASE, &query).await;
    let test = upload_fixture(&mut app, &token, &root, DIFF_TEST, &query).await;

    let r = app
        .api(
            "POST",
            "/api/v1/trace-diffs",
            &token,
            Some(json!({"control": control, "test": test})),
        )
        .await;
    assert!(
        r.status == StatusCode::CREATED || r.status == StatusCode::ACCEPTED,
        "{}",
        r.body
    );
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["url"], format!("/trace-diffs/{id}"));
    let doc = finished(&mut app, &token, id).await;
    assert_eq!(doc["status"], "done", "{}", doc["error"]);
    assert_eq!(doc["investigation"], inv, "joins the traces' investigation");
    let s = &doc["summary"];
    let ours: Vec<u64> = ["added", "deleted", "increased", "decreased", "unchanged"]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .collect();
    assert_eq!(ours, HTA_SUMMARY);
    let ops = doc["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 294);
    for (o, &(name, count, us)) in ops.iter().zip(HTA_TOP) {
        assert_eq!(o["name"], name);
        assert_eq!(o["test_count"], count, "{name}");
        assert_eq!(o["diff_count"], count, "{name}");
        assert_eq!(o["control_count"], 0, "{name}");
        assert_eq!(o["change"], "added", "{name}");
        let got = o["test_us"].as_f64().unwrap();
        assert!(
            (got - us).abs() <= 0.005 * us,
            "{name}: {got} µs, HTA {us} µs"
        );
        assert_eq!(o["diff_us"].as_f64(), Some(got));
    }
    assert_eq!(doc["control_side"]["iteration"], 1009);
    assert_eq!(doc["test_side"]["events"], 11187);
    assert_eq!(
        doc["headline"],
        "the change moved 41.0 ms into cudaMemcpyAsync, +802 calls"
    );

    // The page: class counts, the chart, the rows by time moved with units.
    app.login("ada").await;
    let page = app.get(&format!("/trace-diffs/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_eq!(page.select("#count-added"), vec!["287"]);
    assert_eq!(page.select("#count-unchanged"), vec!["1"]);
    assert!(page.body.contains("id=\"movers-chart\""));
    assert!(page.body.contains("Δ time (ms)"));
    let first_row = page.select("#diff-ops tbody tr:first-child td");
    assert_eq!(first_row[0], "cudaMemcpyAsync");
    assert_eq!(first_row[7], "+40.994");
    assert_eq!(page.select("#diff-ops tbody tr").len(), 100);
    let next = app.get(&format!("/trace-diffs/{id}?from=200")).await;
    assert_eq!(next.select("#diff-ops tbody tr").len(), 94);

    // Linked from both traces' pages and from step 7 with the ready sentence.
    let a = app.get(&format!("/artifacts/{control}")).await;
    assert!(
        a.body.contains(&format!("href=\"/trace-diffs/{id}\"")),
        "{}",
        a.body
    );
    assert!(a.body.contains("id=\"trace-diff-form\""));
    // The test trace's page gives its CUDA-graph share (10 graph launches kept).
    let t = app.get(&format!("/artifacts/{test}")).await;
    assert!(
        t.body
            .contains("CUDA graphs: 29.5% of GPU time — 10 graph launches ran 4,205 GPU events"),
        "{}",
        t.body
    );
    let step = app.get(&format!("/investigations/{inv}/steps/7")).await;
    assert_eq!(step.status, StatusCode::OK);
    let lines = step.select("#trace-diff-lines p");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].ends_with("the change moved 41.0 ms into cudaMemcpyAsync, +802 calls."),
        "{lines:?}"
    );
}

#[tokio::test]
async fn trace_diff_refuses_bad_input_and_stores_nothing() {
    let (mut app, token) = editor_app().await;
    let trace = |step: u32| {
        json!({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "ts": 0, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 20},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 30, "dur": 5, "args": {"stream": 7, "correlation": 1, "device": 0}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 15, "dur": 2, "args": {"correlation": 1}}
        ]})
        .to_string()
        .into_bytes()
    };
    let a = upload_analyzed(&mut app, &token, "a.trace.json", trace(1)).await;
    let b = upload_analyzed(&mut app, &token, "b.trace.json", trace(2)).await;
    let log = upload_analyzed(
        &mut app,
        &token,
        "log.jsonl",
        b"{\"request_id\":\"r1\",\"arrival_ts\":1764400000,\"queue_wait_ms\":3,\"prefill_ms\":150,\"first_token_ms\":153,\"decode_ms\":400,\"total_ms\":553,\"prompt_tokens\":100,\"output_tokens\":20}\n".to_vec(),
    )
    .await;
    // An upload still queued (not analyzed): a row set back by hand.
    let c = upload_analyzed(&mut app, &token, "c.trace.json", trace(3)).await;
    sqlx::query("UPDATE artifacts SET status = 'queued' WHERE id = $1")
        .bind(c)
        .execute(&app.pool)
        .await
        .unwrap();

    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"control": a, "test": a}),
            "test",
            "the control itself",
        ),
        (
            json!({"control": a, "test": log}),
            "test",
            "is a request_log",
        ),
        (
            json!({"control": 999_999, "test": b}),
            "control",
            "no artifact 999999",
        ),
        (json!({"control": a, "test": c}), "test", "not analyzed"),
        (json!({"test": b}), "control", "is required"),
        (
            json!({"control": "a", "test": b}),
            "control",
            "positive integer",
        ),
        (
            json!({"control": a, "test": b, "investigation": 999_999}),
            "investigation",
            "no investigation",
        ),
        (json!([a, b]), "body", "JSON object"),
        (
            json!({"control": a, "test": [b, a]}),
            "test",
            "the control itself",
        ),
        (json!({"control": [a], "test": [b, b]}), "test", "twice"),
        (json!({"control": [], "test": b}), "control", "1 to 64"),
        (
            json!({"control": [a, log], "test": b}),
            "control",
            "is a request_log",
        ),
    ];
    for (body, field, words) in cases {
        let r = app
            .api("POST", "/api/v1/trace-diffs", &token, Some(body.clone()))
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        let fields = r.json()["error"]["fields"].clone();
        let hit = fields
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["field"] == field && f["message"].as_str().unwrap().contains(words));
        assert!(hit, "{body}: expected {field} ~ {words}, got {fields}");
    }
    assert_eq!(rows(&app).await, 0, "a refused diff stores nothing");

    // The two small traces diff at once.
    let r = app
        .api(
            "POST",
            "/api/v1/trace-diffs",
            &token,
            Some(json!({"control": a, "test": b})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["status"], "done");
    // Steps 1 and 2 hold the same ops: unchanged, except the step annotations.
    assert_eq!(doc["summary"]["unchanged"], 3);
    assert_eq!(doc["summary"]["added"], 1);
    assert_eq!(doc["summary"]["deleted"], 1);
    assert_eq!(
        app.api("GET", "/api/v1/trace-diffs/424242", &token, None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

/// A diff whose server stopped mid-way (left `analyzing`) reads as failed once it is
/// older than an hour, and says to start it again; a recent one still reads analyzing.
#[tokio::test]
async fn trace_diff_left_analyzing_by_a_stopped_server_reads_as_failed() {
    let (mut app, token) = editor_app().await;
    let doc = |step: u32| {
        json!({"traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{step}"), "ts": 0, "dur": 100},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 30, "dur": 5, "args": {"stream": 7, "correlation": 1, "device": 0}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 15, "dur": 2, "args": {"correlation": 1}}
        ]})
        .to_string()
        .into_bytes()
    };
    let a = upload_analyzed(&mut app, &token, "a.trace.json", doc(1)).await;
    let b = upload_analyzed(&mut app, &token, "b.trace.json", doc(2)).await;
    let mut ids = Vec::new();
    for age in ["2 hours", "1 minute"] {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO trace_diffs (control_artifact_id, test_artifact_id, status, created_at)
             VALUES ($1, $2, 'analyzing', now() - $3::interval) RETURNING id",
        )
        .bind(a)
        .bind(b)
        .bind(age)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        ids.push(id);
    }
    let old = app
        .api(
            "GET",
            &format!("/api/v1/trace-diffs/{}", ids[0]),
            &token,
            None,
        )
        .await
        .json();
    assert_eq!(old["status"], "failed");
    assert!(old["error"].as_str().unwrap().contains("start it again"));
    let recent = app
        .api(
            "GET",
            &format!("/api/v1/trace-diffs/{}", ids[1]),
            &token,
            None,
        )
        .await
        .json();
    assert_eq!(recent["status"], "analyzing");
    assert_eq!(recent["summary"], Value::Null);
    app.login("ada").await;
    let page = app.get(&format!("/trace-diffs/{}", ids[1])).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("hx-trigger=\"every 2s\""),
        "an analyzing diff's page polls"
    );
}

/// A side of several traces (the ranks of one run) sums per name: the diff of base against
/// {compare-test, diff-test} counts, per name, what the two single diffs count together.
#[tokio::test]
async fn trace_diff_of_a_set_of_ranks_sums_them() {
    let Some(root) = fixtures() else { return };
    let (mut app, token) = editor_app().await;
    let base = upload_fixture(&mut app, &token, &root, BASE, "").await;
    let cmp = upload_fixture(
        &mut app,
        &token,
        &root,
        "pytorch_trace/hta__trace_compare__test__test.json.gz",
        "",
    )
    .await;
    let test = upload_fixture(&mut app, &token, &root, DIFF_TEST, "").await;
    let mut docs = Vec::new();
    for sides in [json!(cmp), json!(test), json!([cmp, test])] {
        let r = app
            .api(
                "POST",
                "/api/v1/trace-diffs",
                &token,
                Some(json!({"control": base, "test": sides})),
            )
            .await;
        assert!(r.status.is_success(), "{}", r.body);
        let id = r.json()["id"].as_i64().unwrap();
        let doc = finished(&mut app, &token, id).await;
        assert_eq!(doc["status"], "done", "{}", doc["error"]);
        docs.push(doc);
    }
    let counts = |doc: &Value| -> std::collections::BTreeMap<String, i64> {
        doc["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["name"].as_str().unwrap().to_string(),
                    o["test_count"].as_i64().unwrap(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    };
    let (one, two, both) = (counts(&docs[0]), counts(&docs[1]), counts(&docs[2]));
    let mut summed = one.clone();
    for (k, v) in &two {
        *summed.entry(k.clone()).or_default() += v;
    }
    assert_eq!(both, summed);
    assert_eq!(docs[2]["test_side"]["events"], 7 + 11_187);
    assert_eq!(docs[2]["test_artifacts"], json!([cmp, test]));
    assert_eq!(docs[2]["control_artifacts"], json!([base]));
    app.login("ada").await;
    let page = app.get(&format!("/trace-diffs/{}", docs[2]["id"])).await;
    assert_eq!(page.select("#test-traces a").len(), 2);
    // Each trace's page links the diffs it takes part in.
    let t = app.get(&format!("/artifacts/{cmp}")).await;
    assert!(t
        .body
        .contains(&format!("href=\"/trace-diffs/{}\"", docs[2]["id"])));
}
