//! The incident window: set on the investigation page or the API, checked (nothing
//! changes on a refusal), used by the Prometheus form, and linked from the journal
//! entry with the telemetry read over windows.

use crate::common;

use axum::http::StatusCode;
use perfjournal::auth::Role;
use serde_json::json;

async fn window_rows(app: &common::TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM incident_windows")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_window_is_set_on_the_page_and_prefills_the_prometheus_form() {
    let (mut app, url) = common::app_with_investigation("TTFT spike at 14:05").await;
    let page = app.get(&url).await;
    assert_eq!(page.select("#incident-window h2"), ["Incident window"]);
    assert!(page.select("#window-label")[0].starts_with("Not set yet"));

    // Refused: the end before the start, and a time that does not read. Nothing stored;
    // the typed values come back with the reasons.
    let r = app
        .post_form(
            &format!("{url}/incident-window"),
            &[("start", "2026-11-30 15:00"), ("end", "2026-11-30 14:00")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.select(".field-error[data-field=end]"),
        ["the end comes after the start"]
    );
    assert_eq!(common::form_value(&r, "#window-start"), "2026-11-30 15:00");
    let r = app
        .post_form(
            &format!("{url}/incident-window"),
            &[("start", "half past two"), ("end", "2126-01-01 00:00")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.select(".field-error[data-field=start]")[0].contains("is not a time"));
    let r = app
        .post_form(
            &format!("{url}/incident-window"),
            &[("start", "2126-01-01 00:00"), ("end", "2126-01-01 01:00")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.select(".field-error[data-field=start]")[0].contains("future"));
    assert_eq!(window_rows(&app).await, 0);

    let r = app
        .post_form(
            &format!("{url}/incident-window"),
            &[
                ("start", "2026-11-30 14:00"),
                ("end", "2026-11-30T15:30:00Z"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(&url).await;
    assert_eq!(
        page.select("#window-label")[0],
        "2026-11-30 14:00:00 – 2026-11-30 15:30:00 UTC (1.5 hours) set by ada"
    );
    // The Prometheus form starts on the incident window.
    assert_eq!(
        common::form_value(&page, "#prom-start"),
        "2026-11-30 14:00:00"
    );
    assert_eq!(
        common::form_value(&page, "#prom-end"),
        "2026-11-30 15:30:00"
    );
    // The history says who set it.
    assert!(page
        .body
        .contains("incident window set to 2026-11-30 14:00:00"));

    // A viewer reads it but cannot move it.
    app.add_user("vic", Role::Viewer).await;
    let mut viewer = app.new_client();
    viewer.login("vic").await;
    assert_eq!(viewer.get(&url).await.select("#window-form").len(), 0);
    let r = viewer
        .post_form(
            &format!("{url}/incident-window"),
            &[("start", "2026-11-30 10:00"), ("end", "2026-11-30 11:00")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = viewer
        .post_form(&format!("{url}/incident-window/remove"), &[])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(app.get(&url).await.select("#window-label")[0].starts_with("2026-11-30 14:00:00"));

    let r = app
        .post_form(&format!("{url}/incident-window/remove"), &[])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(window_rows(&app).await, 0);
}

#[tokio::test]
async fn the_api_sets_reads_and_removes_the_window() {
    let (mut app, url) = common::app_with_investigation("queue grows at noon").await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let path = format!("/api/v1/investigations/{id}/incident-window");
    let r = app.api("GET", &path, &token, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["window"], serde_json::Value::Null);

    for (body, field) in [
        (json!({"start": "2026-11-30T12:00:00Z"}), "end"),
        (
            json!({"start": "2026-11-30T12:00:00Z", "end": "2027-01-01T12:00:01Z"}),
            "end",
        ),
        (json!({"start": 5, "end": "x"}), "end"),
        (
            json!({"start": [1], "end": "2026-11-30T13:00:00Z"}),
            "start",
        ),
    ] {
        let r = app.api("PUT", &path, &token, Some(body.clone())).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        assert!(
            r.body.contains(&format!("\"{field}\"")),
            "{body}: {}",
            r.body
        );
    }
    let r = app.api("PUT", &path, &token, Some(json!([1, 2]))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(window_rows(&app).await, 0);

    let r = app
        .api(
            "PUT",
            &path,
            &token,
            Some(json!({"start": "2026-11-30T12:00:00Z", "end": 1_796_044_800})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = r.json();
    assert_eq!(v["window"]["starts_at"], "2026-11-30T12:00:00Z");
    assert_eq!(v["window"]["ends_at"], "2026-11-30T13:20:00Z");
    assert_eq!(v["window"]["set_by"], "ada");

    // Viewers read, never write; an unknown investigation is a 404.
    app.add_user("vic", Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    assert_eq!(
        app.api("GET", &path, &viewer, None).await.status,
        StatusCode::OK
    );
    let r = app
        .api(
            "PUT",
            &path,
            &viewer,
            Some(json!({"start": "2026-11-30T10:00:00Z", "end": "2026-11-30T11:00:00Z"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.api("DELETE", &path, &viewer, None).await.status,
        StatusCode::FORBIDDEN
    );
    let r = app
        .api(
            "GET",
            "/api/v1/investigations/999999/incident-window",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    assert_eq!(
        app.api("DELETE", &path, &token, None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(window_rows(&app).await, 0);
    // Removing a window already gone is no error.
    assert_eq!(
        app.api("DELETE", &path, &token, None).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn the_journal_entry_links_the_window_and_the_telemetry_over_it() {
    let (mut app, url) = common::app_with_investigation("decode slower after upgrade").await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let r = app
        .post_form(
            &format!("{url}/incident-window"),
            &[("start", "2026-11-30 14:00"), ("end", "2026-11-30 15:00")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    // Two Prometheus windows read earlier: one over the incident, one the day before
    // (its analysis holds the range it covers, Unix seconds).
    for (name, start, end) in [
        (
            "prometheus-vllm-incident.json",
            1_796_044_800.0,
            1_796_048_800.0,
        ),
        (
            "prometheus-vllm-day-before.json",
            1_795_960_800.0,
            1_795_964_400.0,
        ),
    ] {
        sqlx::query(
            "INSERT INTO artifacts (investigation_id, name, kind, sha256, size_bytes, status, analysis)
             VALUES ($1, $2, 'prometheus_range', repeat('0', 64), 0, 'done', $3)",
        )
        .bind(id)
        .bind(name)
        .bind(json!({"start": start, "end": end}))
        .execute(&app.pool)
        .await
        .unwrap();
    }
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let entry = r.location().unwrap().trim_end_matches("/edit").to_string();
    let page = app.get(&entry).await;
    assert_eq!(
        page.select("#incident-window .window-label"),
        ["2026-11-30 14:00:00 – 2026-11-30 15:00:00 UTC (1 hour)"]
    );
    let lines = page.select("#incident-window .window-telemetry li");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("prometheus-vllm-incident.json (Prometheus window, bucket estimates): 2026-11-30 13:20:00 – 2026-11-30 14:26:40 UTC; overlaps"),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with("outside the incident window"),
        "{lines:?}"
    );
    let links = page.select_attr("#incident-window .window-telemetry a", "href");
    assert_eq!(links.len(), 2);
    assert!(links[0].starts_with("/artifacts/"));
}
