//! Webhooks against a real HTTP receiver on loopback: the signature (checked with
//! openssl, not our own code), retries with backoff after a 500, no redirects followed,
//! an unreachable endpoint, the Slack body, the admin page's log, and bad input.

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::common::{self, spawn_app, TestApp};
use perfjournal::auth::Role;
use perfjournal::webhooks;

const SECRET: &str = "a-secret-of-24-characters";

#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(HeaderMap, String)>>>);

/// A receiver that answers each request with the next status in `answers` (then 200).
async fn receiver(answers: Vec<u16>) -> (String, Received) {
    let got = Received::default();
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let state = got.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: String| {
            let state = state.clone();
            let answers = answers.clone();
            async move {
                state.0.lock().unwrap().push((headers, body));
                let code = answers.lock().unwrap().next().unwrap_or(200);
                let mut res = axum::response::Response::new(axum::body::Body::empty());
                *res.status_mut() = StatusCode::from_u16(code).unwrap();
                if code == 302 {
                    res.headers_mut()
                        .insert("location", "http://127.0.0.1:9/elsewhere".parse().unwrap());
                }
                res
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), got)
}

fn openssl_hmac(secret: &str, body: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(["dgst", "-sha256", "-hmac", secret, "-r"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("openssl is installed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256={}", text.split_whitespace().next().unwrap())
}

async fn add_endpoint(app: &mut TestApp, url: &str, events: &[&str], slack: bool) {
    let mut fields = vec![("url", url), ("secret", SECRET)];
    for e in events {
        fields.push(("events", e));
    }
    if slack {
        fields.push(("slack", "on"));
    }
    let r = app.post_form("/admin/webhooks", &fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

async fn publish(app: &mut TestApp, token: &str, title: &str) {
    let r = app
        .api(
            "POST",
            "/api/v1/journal",
            token,
            Some(json!({
                "title": title,
                "date": "2026-11-20",
                "symptom": "p99 ITL 140 ms vs target 60 ms",
                "diagnosis": "22k-token prompts in 8,192-token chunks stall decode",
                "change": "max_num_batched_tokens 2048",
                "result": "p99 ITL 55 ms",
                "publish": true
            })),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

async fn send_all_due(app: &TestApp) -> usize {
    let client = webhooks::client().unwrap();
    let mut n = 0;
    while webhooks::send_due(&app.pool, &client, &webhooks::Allowed::default())
        .await
        .unwrap()
    {
        n += 1;
    }
    n
}

async fn delivery(app: &TestApp) -> (String, i32, Option<i32>, Option<String>) {
    sqlx::query_as(
        "SELECT status, attempts, last_status, last_error FROM webhook_deliveries ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Makes every pending delivery due now (the test does not wait out the backoff).
async fn due_now(app: &TestApp) {
    sqlx::query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending'")
        .execute(&app.pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_published_entry_reaches_the_endpoint_signed_and_a_500_is_retried() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (url, got) = receiver(vec![500]).await;
    add_endpoint(
        &mut app,
        &url,
        &["journal.published", "proposal.approved"],
        false,
    )
    .await;

    publish(&mut app, &token, "ITL spikes on chat-api").await;
    // Publishing queued the delivery and answered without waiting for the receiver.
    assert!(got.0.lock().unwrap().is_empty());
    let (status, attempts, _, _) = delivery(&app).await;
    assert_eq!((status.as_str(), attempts), ("pending", 0));

    // First try: the receiver answers 500; the delivery waits ~10 s for the next.
    assert_eq!(send_all_due(&app).await, 1);
    let (status, attempts, code, error) = delivery(&app).await;
    assert_eq!((status.as_str(), attempts, code), ("pending", 1, Some(500)));
    assert!(error.unwrap().contains("500"));
    let wait: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM next_attempt_at - now())::float8 FROM webhook_deliveries",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!((5.0..=11.0).contains(&wait), "backoff {wait} s");
    assert_eq!(send_all_due(&app).await, 0, "not due yet");

    due_now(&app).await;
    assert_eq!(send_all_due(&app).await, 1);
    let (status, attempts, code, _) = delivery(&app).await;
    assert_eq!(
        (status.as_str(), attempts, code),
        ("delivered", 2, Some(200))
    );

    // Both attempts carried the same body, signed with the secret.
    let received = got.0.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    for (headers, body) in &received {
        assert_eq!(headers["x-perfjournal-event"], "journal.published");
        assert_eq!(
            headers["x-perfjournal-signature"].to_str().unwrap(),
            openssl_hmac(SECRET, body)
        );
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["event"], "journal.published");
        assert_eq!(v["data"]["title"], "ITL spikes on chat-api");
        assert!(v["data"]["url"].as_str().unwrap().starts_with("/journal/"));
        assert!(v["text"]
            .as_str()
            .unwrap()
            .contains("ITL spikes on chat-api"));
    }
    assert_eq!(received[0].1, received[1].1);

    // The admin page shows the log.
    let page = app.get("/admin/webhooks").await;
    assert_eq!(page.status, StatusCode::OK);
    let rows = page.select("table.deliveries tr.delivery");
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].contains("delivered") && rows[0].contains("journal.published"),
        "{rows:?}"
    );
}

#[tokio::test]
async fn redirects_are_not_followed_an_unreachable_endpoint_is_logged_and_slack_gets_text() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (redirecting, got) = receiver(vec![302; 20]).await;
    add_endpoint(&mut app, &redirecting, &["journal.published"], true).await;
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    add_endpoint(
        &mut app,
        "http://127.0.0.1:9/hook",
        &["journal.published"],
        false,
    )
    .await;
    publish(&mut app, &token, "Slack me").await;
    assert_eq!(send_all_due(&app).await, 2);
    let rows: Vec<(String, String, Option<i32>, Option<String>)> = sqlx::query_as(
        "SELECT w.url, d.status, d.last_status, d.last_error FROM webhook_deliveries d \
         JOIN webhooks w ON w.id = d.webhook_id ORDER BY d.id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows[0].1, "pending");
    assert_eq!(rows[0].2, Some(302));
    assert!(rows[0]
        .3
        .as_deref()
        .unwrap()
        .contains("redirects are not followed"));
    assert_eq!(rows[1].1, "pending");
    assert_eq!(rows[1].2, None);
    assert!(
        rows[1].3.as_deref().unwrap().contains("could not connect"),
        "{rows:?}"
    );
    let received = got.0.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "the redirect target was not asked");
    let slack: Value = serde_json::from_str(&received[0].1).unwrap();
    assert!(slack["text"].as_str().unwrap().contains("Slack me"));
    assert_eq!(slack["blocks"][0]["type"], "section");

    // After the last attempt a delivery is marked failed and kept in the log.
    for _ in 0..perfjournal::core::webhook::MAX_ATTEMPTS {
        due_now(&app).await;
        send_all_due(&app).await;
    }
    let failed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM webhook_deliveries WHERE status = 'failed' AND attempts = $1",
    )
    .bind(perfjournal::core::webhook::MAX_ATTEMPTS)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(failed, 2);
    let page = app.get("/admin/webhooks").await;
    assert!(page.body.contains("gave up"));
}

#[tokio::test]
async fn reviews_resolutions_and_failed_artifacts_are_announced() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let (url, got) = receiver(vec![]).await;
    add_endpoint(
        &mut app,
        &url,
        &[
            "investigation.resolved",
            "artifact.failed",
            "proposal.review_requested",
        ],
        false,
    )
    .await;
    let token = app.api_token("ada").await;
    // A request log that analyses, then fails when analysed again under a 16-byte cap.
    let log = common::bubble_data::request_log(&[(0.0, 10.0, 50.0), (5.0, 12.0, 60.0)]);
    let r = common::uploads::upload(&mut app, &token, "small.jsonl", log).await;
    let id = r.json()["id"].as_i64().unwrap();
    let options = perfjournal::core::analyze::Options {
        max_decompressed_bytes: 16,
        ..Default::default()
    };
    perfjournal::artifacts::requeue(&app.pool, id, &options)
        .await
        .unwrap();
    app.drain_queue().await;
    // An investigation marked resolved.
    let inv = app.open_investigation(&token, "resolved one").await;
    let r = app
        .post_form(
            &format!("/investigations/{inv}/status"),
            &[("status", "resolved")],
        )
        .await;
    assert!(r.status.is_redirection(), "{}", r.body);
    send_all_due(&app).await;
    let events: Vec<String> = got
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(h, _)| h["x-perfjournal-event"].to_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["artifact.failed", "investigation.resolved"]);
}

#[tokio::test]
async fn only_admins_add_endpoints_and_bad_input_changes_nothing() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let r = app
        .post_form(
            "/admin/webhooks",
            &[("url", "ftp://x"), ("events", "nope"), ("secret", "short")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    for f in ["url", "events", "secret"] {
        assert_eq!(
            r.select(&format!(".field-error[data-field={f}]")).len(),
            1,
            "{f}"
        );
    }
    app.add_user("eve", Role::Editor).await;
    app.login("eve").await;
    let r = app.get("/admin/webhooks").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .post_form(
            "/admin/webhooks",
            &[
                ("url", "https://x.example/h"),
                ("events", "journal.published"),
                ("secret", SECRET),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn the_api_adds_lists_and_removes_endpoints_without_returning_secrets() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("eve", Role::Editor).await;
    let admin = app.api_token("ada").await;
    let editor = app.api_token("eve").await;
    let body = json!({"url": "https://hooks.example.com/pj", "events": ["journal.published"],
        "secret": SECRET, "slack": true});
    let r = app
        .api("POST", "/api/v1/webhooks", &editor, Some(body.clone()))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api(
            "POST",
            "/api/v1/webhooks",
            &admin,
            Some(json!({"url": "https://u:p@x.example/", "events": ["nope"], "secret": 5})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "secret");
    let r = app
        .api(
            "POST",
            "/api/v1/webhooks",
            &admin,
            Some(json!({"url": "https://u:p@x.example/", "events": ["nope"], "secret": SECRET})),
        )
        .await;
    let fields: Vec<&str> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_owned().leak() as &str)
        .collect();
    assert_eq!(fields, ["url", "events"]);
    let r = app
        .api("POST", "/api/v1/webhooks", &admin, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["slack"], true);
    assert!(!r.body.contains(SECRET), "the secret is never returned");
    let r = app.api("GET", "/api/v1/webhooks", &admin, None).await;
    assert_eq!(r.json()["items"][0]["url"], "https://hooks.example.com/pj");
    assert!(!r.body.contains(SECRET));
    let r = app
        .api("DELETE", &format!("/api/v1/webhooks/{id}"), &admin, None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = app
        .api("DELETE", &format!("/api/v1/webhooks/{id}"), &admin, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Link-local targets (where clouds answer instance metadata) are refused when an
/// endpoint is added, unless an admin allowed the network; one saved before is not
/// called at delivery (no connection is tried), and says why in the log.
#[tokio::test]
async fn metadata_and_link_local_targets_are_refused_unless_allowed() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let admin = app.api_token("ada").await;
    for url in [
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[fe80::1]:9000/hook",
        "http://metadata.google.internal/computeMetadata/v1/",
    ] {
        let r = app
            .api(
                "POST",
                "/api/v1/webhooks",
                &admin,
                Some(json!({"url": url, "events": ["journal.published"], "secret": SECRET})),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{url}: {}",
            r.body
        );
        assert_eq!(r.json()["error"]["fields"][0]["field"], "url");
        assert!(
            r.body.contains("PERFJOURNAL_WEBHOOK_ALLOW_CIDRS"),
            "{}",
            r.body
        );
    }
    let hooks: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(hooks, 0, "nothing was stored");

    // Saved before the rule (or by hand): the delivery is not sent.
    let user = app.user_id("ada").await;
    sqlx::query(
        "INSERT INTO webhooks (url, events, secret, slack, created_by)
         VALUES ('http://169.254.169.254/latest/', ARRAY['journal.published'], $1, false, $2)",
    )
    .bind(SECRET)
    .bind(user)
    .execute(&app.pool)
    .await
    .unwrap();
    let token = app.api_token("ada").await;
    publish(&mut app, &token, "p99 ITL after the upgrade").await;
    assert_eq!(send_all_due(&app).await, 1);
    let (status, _, code, error) = delivery(&app).await;
    assert_eq!((status.as_str(), code), ("pending", None));
    assert!(error.unwrap_or_default().contains("link-local"));

    // An admin's allowed network is reachable.
    let allowed = perfjournal::config::Config {
        webhook_allowed: webhooks::Allowed(vec!["169.254.10.0/24".parse().unwrap()]),
        ..perfjournal::config::Config::default()
    };
    let mut app = common::spawn_app_with(allowed).await;
    app.setup_admin("ada").await;
    let admin = app.api_token("ada").await;
    let r = app
        .api(
            "POST",
            "/api/v1/webhooks",
            &admin,
            Some(json!({"url": "http://169.254.10.7:9000/hook",
                        "events": ["journal.published"], "secret": SECRET})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}
