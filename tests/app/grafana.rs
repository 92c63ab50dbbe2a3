//! Grafana annotations against a local HTTP receiver that answers as Grafana's annotation
//! API does (`POST /api/annotations` → `{"id", "message"}`, `PUT /api/annotations/{id}`):
//! the CHANGE and the published entry are posted with the token, tags and the incident
//! window, an edit updates the same annotation, and a failure is retried and shown.

use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{post, put};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::common::{self, incident, spawn_app_with, TestApp};
use perfjournal::config::Config;
use perfjournal::grafana::{self, Target};

const TOKEN: &str = "glsa_test_token";

/// One call Grafana received: method, annotation id (PUT), headers, body.
type Call = (String, Option<i64>, HeaderMap, Value);

#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<Call>>>,
    fail_next: Arc<Mutex<u32>>,
    /// Every annotation was deleted in Grafana: PUT answers 404.
    gone: Arc<Mutex<bool>>,
}

async fn fake_grafana(fake: Fake) -> String {
    let (a, b) = (fake.clone(), fake.clone());
    let app = Router::new()
        .route(
            "/api/annotations",
            post(move |headers: HeaderMap, Json(body): Json<Value>| {
                let f = a.clone();
                async move {
                    if std::mem::take(&mut *f.fail_next.lock().unwrap()) > 0 {
                        return (
                            StatusCode::SERVICE_UNAVAILABLE,
                            Json(json!({"message": "down"})),
                        );
                    }
                    let mut calls = f.calls.lock().unwrap();
                    calls.push(("POST".into(), None, headers, body));
                    let id = calls.len() as i64 + 40;
                    (
                        StatusCode::OK,
                        Json(json!({"id": id, "message": "Annotation added"})),
                    )
                }
            }),
        )
        .route(
            "/api/annotations/{id}",
            put(
                move |Path(id): Path<i64>, headers: HeaderMap, Json(body): Json<Value>| {
                    let f = b.clone();
                    async move {
                        f.calls
                            .lock()
                            .unwrap()
                            .push(("PUT".into(), Some(id), headers, body));
                        if *f.gone.lock().unwrap() {
                            return (
                                StatusCode::NOT_FOUND,
                                Json(json!({"message": "Annotation not found"})),
                            );
                        }
                        (
                            StatusCode::OK,
                            Json(json!({"message": "Annotation updated"})),
                        )
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn sync(app: &TestApp, target: &Target) -> usize {
    let client = grafana::client().unwrap();
    let mut n = 0;
    while grafana::sync_due(&app.pool, &client, target, Some("https://pj.example.com"))
        .await
        .unwrap()
    {
        n += 1;
    }
    n
}

/// Saves the entry's edit form with one field changed, as `action` (publish or save).
async fn edit_entry(app: &mut TestApp, edit: &str, change: (&str, &str), action: &str) {
    let page = app.get(edit).await;
    let fields = common::journal_edit_fields(&page, &[change], action);
    let refs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form(edit.trim_end_matches("/edit"), &refs).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

#[tokio::test]
async fn the_change_and_the_entry_are_annotated_updated_and_retried() {
    let fake = Fake::default();
    let target = Target {
        url: fake_grafana(fake.clone()).await,
        token: TOKEN.into(),
    };
    let mut app = spawn_app_with(Config {
        grafana: Some(target.clone()),
        ..Config::default()
    })
    .await;
    app.setup_admin("ada").await;
    let r = app
        .post_form(
            "/investigations",
            &[
                ("title", "p95 TTFT four times the target"),
                ("service", "chat"),
            ],
        )
        .await;
    let url = r.location().unwrap().to_string();

    // Step 7's CHANGE: queued with the step, sent by the worker. Grafana is down once.
    incident::incident_with_result(&mut app, &url).await;
    *fake.fail_next.lock().unwrap() = 1;
    assert_eq!(sync(&app, &target).await, 1);
    let page = app.get(&url).await;
    let shown = page.select("#grafana .annotation[data-kind=change]");
    assert!(
        shown[0].contains("not sent yet after 1 attempt") && shown[0].contains("503"),
        "{shown:?}"
    );
    sqlx::query("UPDATE grafana_annotations SET next_attempt_at = now()")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(sync(&app, &target).await, 1);
    let page = app.get(&url).await;
    let shown = page.select("#grafana .annotation[data-kind=change]");
    assert!(shown[0].contains("#41, up to date"), "{shown:?}");
    {
        let calls = fake.calls.lock().unwrap();
        let (method, _, headers, body) = &calls[0];
        assert_eq!(method, "POST");
        assert_eq!(headers["authorization"], format!("Bearer {TOKEN}"));
        let tags: Vec<&str> = body["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tags, ["perfjournal", "change", "chat", "ttft"]);
        assert!(body["time"].as_i64().unwrap() <= body["timeEnd"].as_i64().unwrap());
        let text = body["text"].as_str().unwrap();
        assert!(text.contains("CHANGE: chunked prefill"), "{text}");
        assert!(
            text.contains("https://pj.example.com/investigations/"),
            "{text}"
        );
    }

    // Draft and publish the entry: its own annotation.
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    let edit = r.location().unwrap().to_string();
    edit_entry(
        &mut app,
        &edit,
        ("diagnosis", "queue wait holds 84% of the p95 TTFT"),
        "publish",
    )
    .await;
    assert_eq!(sync(&app, &target).await, 1);
    // Edited after publishing: the same annotation is updated, not a new one added.
    edit_entry(
        &mut app,
        &edit,
        ("result", "p95 TTFT 760 ms after the change"),
        "save",
    )
    .await;
    assert_eq!(sync(&app, &target).await, 1);
    assert_eq!(sync(&app, &target).await, 0, "nothing left to send");
    {
        let calls = fake.calls.lock().unwrap();
        let methods: Vec<(&str, Option<i64>)> = calls.iter().map(|c| (c.0.as_str(), c.1)).collect();
        assert_eq!(methods, [("POST", None), ("POST", None), ("PUT", Some(42))]);
        let text = calls[2].3["text"].as_str().unwrap();
        assert!(
            text.contains("760 ms") && text.contains("/journal/"),
            "{text}"
        );
        assert_eq!(calls[2].3["tags"][1], "entry");
    }

    // Someone deleted it in Grafana: the next update finds it gone and posts it again.
    *fake.gone.lock().unwrap() = true;
    edit_entry(&mut app, &edit, ("effort", "an afternoon"), "save").await;
    assert_eq!(
        sync(&app, &target).await,
        2,
        "a PUT that finds nothing, then a POST"
    );
    let methods: Vec<(String, Option<i64>)> = fake.calls.lock().unwrap()[3..]
        .iter()
        .map(|c| (c.0.clone(), c.1))
        .collect();
    assert_eq!(
        methods,
        [("PUT".to_string(), Some(42)), ("POST".to_string(), None)]
    );
    let page = app.get(&url).await;
    let shown = page.select("#grafana .annotation[data-kind=entry]");
    assert!(shown[0].contains("#45, up to date"), "{shown:?}");
}

/// Teams without Grafana see nothing of it; the annotation waits, to be sent if one is
/// configured later.
#[tokio::test]
async fn without_grafana_nothing_is_shown_and_the_annotation_waits() {
    let (mut app, url) = common::app_with_investigation("no grafana here").await;
    incident::incident_with_result(&mut app, &url).await;
    let page = app.get(&url).await;
    assert!(page.select("#grafana").is_empty());
    let waiting: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM grafana_annotations WHERE status = 'pending' AND kind = 'change'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(waiting, 1);
}
