//! The JSON API for investigations and the journal, with bearer tokens.

use crate::common;

use axum::http::StatusCode;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use serde_json::json;

async fn app_with_tokens() -> (TestApp, String, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("vic", Role::Viewer).await;
    let editor = app.api_token("ada").await;
    let viewer = app.api_token("vic").await;
    (app, editor, viewer)
}

/// Opens an investigation titled "t" and returns its id.
async fn open(app: &mut TestApp, token: &str) -> i64 {
    app.open_investigation(token, "t").await
}

#[tokio::test]
async fn a_script_opens_an_investigation_and_records_steps() {
    let (mut app, token, _) = app_with_tokens().await;
    let r = app
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(json!({"title": "Alert: p95 TTFT > 800 ms", "symptom": "fired 14:05", "tags": ["alert", "ttft"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["url"], format!("/investigations/{id}"));
    let base = format!("/api/v1/investigations/{id}");

    for (step, body) in [
        (
            0u8,
            json!({"reproducible": "yes", "model": "llama-3.1-8b", "gpu_type": "h100-sxm", "tp": 1, "chunked_prefill": false}),
        ),
        (
            1,
            json!({"metric": "ttft", "percentile": "p95", "observed": 3200, "target": 800}),
        ),
        (
            2,
            json!({"queue_wait": {"p50": 900, "p95": 2300, "p99": 2900}, "prefill": {"p50": 100, "p95": 180, "p99": 220}}),
        ),
        (3, json!({"gpu_total": 92, "cpu_total": 30, "wall": 100})),
        (
            6,
            json!({"candidates": [
                {"description": "rmsnorm", "share": 0.03, "speedup": 3, "effort_days": 1},
                {"description": "chunked prefill", "share": 0.7, "speedup": 3, "effort_days": 0.5}
            ]}),
        ),
    ] {
        let r = app
            .api("PUT", &format!("{base}/steps/{step}"), &token, Some(body))
            .await;
        assert_eq!(r.status, StatusCode::OK, "step {step}: {}", r.body);
        assert_eq!(r.json()["state"], "done");
    }

    let r = app.api("GET", &base, &token, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    assert_eq!(v["tags"], json!(["alert", "ttft"]));
    assert_eq!(v["steps"][0]["data"]["model"], "llama-3.1-8b");
    assert_eq!(v["steps"][0]["data"]["chunked_prefill"], false);
    assert_eq!(v["steps"][1]["results"]["gap_ratio"], 4.0);
    assert_eq!(v["steps"][2]["results"]["dominant_phase"], "queue_wait");
    assert!(v["steps"][2]["results"]["next_checks"]["checks"][0]
        .as_str()
        .unwrap()
        .contains("running batch"));
    assert_eq!(v["steps"][3]["results"]["classification"], "gpu_bound");
    let fixes = v["steps"][6]["results"].as_array().unwrap();
    assert_eq!(fixes[0]["candidate"]["description"], "chunked prefill");
    assert!((fixes[0]["ceiling"].as_f64().unwrap() - 1.875).abs() < 1e-9);
    assert!(fixes[1]["warning"]
        .as_str()
        .unwrap()
        .starts_with("Touches under 5%"));
    // Step 6 was saved before steps 4 and 5: that save recorded the skip.
    assert_eq!(v["steps"][4]["state"], "skipped");
    assert_eq!(v["steps"][4]["data"], serde_json::Value::Null);

    let list = app.api("GET", "/api/v1/investigations", &token, None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(
        list.json()["items"][0]["steps_recorded"],
        json!([0, 1, 2, 3, 6])
    );
}

#[tokio::test]
async fn a_step_is_validated_like_the_form() {
    let (mut app, token, _) = app_with_tokens().await;
    let id = open(&mut app, &token).await;
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/1"),
            &token,
            Some(json!({"metric": "ttft", "percentile": "p95", "observed": "slow", "target": 800})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields = r.json()["error"]["fields"].clone();
    assert_eq!(fields[0]["field"], "observed");
    assert!(fields[0]["message"]
        .as_str()
        .unwrap()
        .contains("not a measurement"));

    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/5"),
            &token,
            Some(json!({"kernels": [{"name": "gemm", "share": 1.5}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "kernels[0].share");

    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/3"),
            &token,
            Some(json!([1, 2])),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/9"),
            &token,
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(json!({"title": ""})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "title");

    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_steps")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    let r = app
        .api("GET", "/api/v1/investigations/424242", &token, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn viewers_read_through_the_api_but_cannot_write() {
    let (mut app, editor, viewer) = app_with_tokens().await;
    let id = open(&mut app, &editor).await;
    let r = app
        .api(
            "POST",
            "/api/v1/investigations",
            &viewer,
            Some(json!({"title": "v"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/3"),
            &viewer,
            Some(json!({"gpu_total": 1, "cpu_total": 1, "wall": 2})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.api("GET", "/api/v1/investigations", &viewer, None)
            .await
            .status,
        StatusCode::OK
    );
    let r = app
        .api("GET", "/api/v1/investigations", "not-a-token", None)
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_journal_is_readable_as_json() {
    let (mut app, token, _) = app_with_tokens().await;
    perfjournal::investigations::seed::seed_demo(&app.pool, 1)
        .await
        .unwrap();
    let r = app.api("GET", "/api/v1/journal", &token, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let page = r.json();
    assert_eq!(
        page["next"],
        serde_json::Value::Null,
        "one page holds three entries"
    );
    let list = &page["items"];
    let dates: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["date"].as_str().unwrap())
        .collect();
    assert_eq!(dates, ["2026-11-05", "2026-10-16", "2026-10-02"]);
    let id = list[1]["id"].as_i64().unwrap();
    let r = app
        .api("GET", &format!("/api/v1/journal/{id}"), &token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let e = r.json();
    assert_eq!(e["title"], "Bad ITL with fine TTFT on the 8B model");
    assert!(e["symptom"].as_str().unwrap().starts_with("p50 ITL 24"));
    assert!(e["diagnosis"]
        .as_str()
        .unwrap()
        .contains("The measured decode step is 1.4× its expected step (what a well-run server of this setup takes), 63% of the bandwidth floor (overhead"));
    assert_eq!(e["published"], true);
    assert_eq!(e["estimates"][0]["estimator"], "decode-floor");
    assert!(e["markdown"].as_str().unwrap().starts_with("# Bad ITL"));
    assert!(e["investigation"]["url"]
        .as_str()
        .unwrap()
        .starts_with("/investigations/"));
    let r = app.api("GET", "/api/v1/journal/999999", &token, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_openapi_document_lists_the_new_routes() {
    let (mut app, token, _) = app_with_tokens().await;
    let doc = app
        .api("GET", "/api/v1/openapi.json", &token, None)
        .await
        .json();
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/investigations", "post"),
        ("/investigations", "get"),
        ("/investigations/{id}", "get"),
        ("/investigations/{id}/steps/{step}", "put"),
        ("/journal", "get"),
        ("/journal/{id}", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn an_alert_opens_a_prefilled_investigation_in_one_call() {
    let (mut app, token, _) = app_with_tokens().await;
    let body = json!({
        "title": "Alert: p95 TTFT 3.2 s",
        "tags": ["alert"],
        "steps": {
            "1": {"metric": "ttft", "percentile": "p95", "observed": 3200, "target": 800},
            "0": {"reproducible": "not_yet", "model": "llama-3.1-8b"}
        }
    });
    let r = app
        .api("POST", "/api/v1/investigations", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let v = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &token, None)
        .await
        .json();
    assert_eq!(v["steps_recorded"], json!([0, 1]));
    assert_eq!(v["steps"][1]["results"]["gap_ratio"], 4.0);
    assert_eq!(v["steps"][0]["data"]["reproducible"], "not_yet");

    // One bad step refuses the whole call.
    let body = json!({
        "title": "Alert: slow",
        "steps": {"1": {"metric": "ttft", "percentile": "p95", "observed": "slow", "target": 800}, "9": {}}
    });
    let r = app
        .api("POST", "/api/v1/investigations", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, ["steps.1.observed", "steps.9"]);
    // A phase row cannot name a source: a new investigation has no artifacts.
    let body = json!({
        "title": "Alert: queue",
        "steps": {"2": {"queue_wait": {"p50": 900, "p95": 2000, "source": 7}}}
    });
    let r = app
        .api("POST", "/api/v1/investigations", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(
        r.json()["error"]["fields"][0]["field"],
        "steps.2.queue_wait.source"
    );
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigations")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

/// A step saved through the API with the `version` it started from: a stale one is
/// refused with 409, the fields the other save changed, and the version to send.
#[tokio::test]
async fn a_stale_step_version_is_refused_with_the_changed_fields() {
    let (mut app, token, _) = app_with_tokens().await;
    app.add_user("bob", Role::Editor).await;
    let bob = app.api_token("bob").await;
    let id = open(&mut app, &token).await;
    let path = format!("/api/v1/investigations/{id}/steps/1");
    let body = |observed: f64, version: serde_json::Value| {
        json!({"metric": "ttft", "percentile": "p95", "observed": observed, "target": 800,
               "version": version})
    };
    let r = app
        .api("PUT", &path, &token, Some(body(3200.0, json!(0))))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["version"], 1);

    let r = app
        .api("PUT", &path, &bob, Some(body(3300.0, json!(0))))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let j = r.json();
    assert_eq!(j["error"]["status"], 409);
    assert_eq!(j["version"], 1);
    assert_eq!(j["saved_by"], "ada");
    let changed = j["changed"].as_array().unwrap();
    let observed = changed.iter().find(|c| c["name"] == "observed").unwrap();
    assert!(observed["theirs"].as_str().unwrap().contains("3200"), "{j}");
    assert!(observed["yours"].as_str().unwrap().contains("3300"), "{j}");
    assert!(changed.iter().all(|c| c["name"] != "target"), "{j}");
    let step = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &token, None)
        .await;
    assert_eq!(step.json()["steps"][1]["data"]["observed"], 3200.0);

    // Bad versions are refused and change nothing.
    for bad in [json!(-1), json!("one"), json!(1.5), json!(1u64 << 40)] {
        let r = app
            .api("PUT", &path, &bob, Some(body(1.0, bad.clone())))
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            r.body
        );
        assert_eq!(r.json()["error"]["fields"][0]["field"], "version");
    }
    // With the current version it goes through; without one, the save just wins.
    let r = app
        .api("PUT", &path, &bob, Some(body(3300.0, json!(1))))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["version"], 2);
    let r = app
        .api("PUT", &path, &token, Some(body(3400.0, json!(null))))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["version"], 3);
    let step = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &token, None)
        .await;
    assert_eq!(step.json()["steps"][1]["data"]["observed"], 3400.0);
}

/// The document bounds what the server bounds: every list's `limit`, `after` and
/// `page` declares its range, and the server takes the ends and refuses one past them.
#[tokio::test]
async fn the_openapi_document_declares_the_paging_bounds_the_server_applies() {
    let (mut app, token, _) = app_with_tokens().await;
    let doc = app
        .api("GET", "/api/v1/openapi.json", &token, None)
        .await
        .json();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(params) = item["get"]["parameters"].as_array() else {
            continue;
        };
        for p in params {
            let name = p["name"].as_str().unwrap();
            let schema = &p["schema"];
            let (min, max) = match name {
                "limit" => (1, Some(200)),
                "after" => (1, None),
                "page" => (1, Some(500)),
                _ => continue,
            };
            assert_eq!(schema["minimum"], min, "{path} {name}: {schema}");
            assert_eq!(schema["maximum"].as_i64(), max, "{path} {name}: {schema}");
            if path.contains('{') {
                continue;
            }
            let url = |v: i64| format!("/api/v1{path}?{name}={v}");
            if name != "after" {
                let top = max.unwrap();
                let r = app.api("GET", &url(top), &token, None).await;
                assert_eq!(r.status, StatusCode::OK, "{path}?{name}={top}: {}", r.body);
                let r = app.api("GET", &url(top + 1), &token, None).await;
                assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{path} {name}");
            }
            let r = app.api("GET", &url(min - 1), &token, None).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{path}?{name}=0: {}",
                r.body
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} paging parameters found");
}

/// Right after an investigation is opened (before the search index has caught up with
/// it), "similar" answers 200 with `ready: false`, not 404; an unknown id is still 404.
#[tokio::test]
async fn similar_is_not_ready_rather_than_missing_right_after_creation() {
    use tower::ServiceExt;
    let (mut app, token, _) = app_with_tokens().await;
    let id = open(&mut app, &token).await;
    // Straight to the router: `TestApp::send` lets the index catch up first.
    let request = axum::http::Request::get(format!("/api/v1/investigations/{id}/similar"))
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let reply = app.app.clone().oneshot(request).await.unwrap();
    assert_eq!(reply.status(), StatusCode::OK);
    let bytes = http_body_util::BodyExt::collect(reply.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body, json!({"ready": false, "similar": []}));
    let r = app
        .api("GET", "/api/v1/investigations/999999/similar", &token, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Request bodies declare what the server requires of them: an investigation's title
/// (1–200 characters, not blank) and its service's length, a capture's window; the
/// server takes the longest title the document allows and refuses one longer.
#[tokio::test]
async fn the_openapi_document_declares_the_body_fields_the_server_requires() {
    let (mut app, token, _) = app_with_tokens().await;
    let doc = app
        .api("GET", "/api/v1/openapi.json", &token, None)
        .await
        .json();
    let schemas = &doc["components"]["schemas"];
    let new = &schemas["NewInvestigation"];
    assert_eq!(new["required"], json!(["title"]), "{new}");
    let title = &new["properties"]["title"];
    assert_eq!(
        (&title["minLength"], &title["maxLength"], &title["pattern"]),
        (&json!(1), &json!(200), &json!("\\S")),
        "{title}"
    );
    assert_eq!(new["properties"]["service"]["maxLength"], 100, "{new}");
    let capture = &schemas["CaptureBody"];
    assert_eq!(capture["required"], json!(["url", "seconds"]), "{capture}");
    let seconds = &capture["properties"]["seconds"];
    assert_eq!(
        (&seconds["minimum"], &seconds["maximum"]),
        (&json!(1), &json!(3600))
    );
    assert_eq!(
        capture["properties"]["interval_s"]["minimum"], 1,
        "{capture}"
    );

    let post = |title: String| json!({ "title": title });
    let r = app
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(post("t".repeat(200))),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    for refused in ["t".repeat(201), "   ".to_string()] {
        let r = app
            .api(
                "POST",
                "/api/v1/investigations",
                &token,
                Some(post(refused)),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    }
}
