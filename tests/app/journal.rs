//! The journal: drafting from an investigation, publishing, writing directly, and
//! edits with optimistic concurrency.

use crate::common;

use axum::http::StatusCode;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;

/// An admin with an investigation walked to step 7; returns its URL.
async fn finished_investigation(app: &mut TestApp) -> String {
    let r = app
        .post_form("/investigations", &[("title", "Queue-bound TTFT at peak")])
        .await;
    let url = r.location().unwrap().to_string();
    for (step, fields) in [
        (
            0u8,
            vec![
                ("reproducible", "yes"),
                ("chunked_prefill", "off"),
                ("prompt_len_dist", "mean 1,800"),
                ("arrival_rate", "45"),
            ],
        ),
        (
            1,
            vec![
                ("metric", "ttft"),
                ("percentile", "p95"),
                ("observed", "3200"),
                ("target", "800"),
            ],
        ),
        (
            2,
            vec![
                ("queue_wait.p50", "1000"),
                ("queue_wait.p95", "2900"),
                ("queue_wait.p99", "3400"),
            ],
        ),
        (
            7,
            vec![
                ("change", "chunked prefill"),
                ("after_config.chunked_prefill", "on"),
                ("after_config.prompt_len_dist", "mean 1,800"),
                ("after_config.arrival_rate", "45"),
                ("after_value", "780"),
                ("verdict", "confirmed"),
                ("quality", "200 paired generations identical"),
                ("effort", "30 minutes"),
            ],
        ),
    ] {
        let r = app.post_form(&format!("{url}/steps/{step}"), &fields).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "step {step}: {}", r.body);
    }
    url
}

async fn post(app: &mut TestApp, path: &str, fields: &[(String, String)]) -> common::Reply {
    let refs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    app.post_form(path, &refs).await
}

#[tokio::test]
async fn step_7_drafts_the_entry_which_is_listed_once_published() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let url = finished_investigation(&mut app).await;

    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let edit = r.location().unwrap().to_string();
    assert!(edit.ends_with("/edit"), "{edit}");
    // Drafting again opens the same entry.
    let again = app.post_form(&format!("{url}/journal"), &[]).await;
    assert_eq!(again.location(), Some(edit.as_str()));

    let page = app.get(&edit).await;
    assert_eq!(
        common::form_value(&page, "[name=symptom]"),
        "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"
    );
    assert!(common::form_value(&page, "[name=diagnosis]")
        .starts_with("Queue wait dominates the p95 TTFT"));
    assert!(common::form_value(&page, "[name=result]")
        .contains("p95 TTFT 780 ms (was 3,200 ms, -75.6%)"));
    assert_eq!(
        common::form_value(&page, "[name=quality]"),
        "200 paired generations identical"
    );
    assert_eq!(
        common::form_value(&page, "[name=workload]"),
        "prompt tokens mean 1,800; 45 req/s"
    );

    // A draft is not on the journal yet.
    let list = app.get("/journal").await;
    assert!(list.select(".journal-item").is_empty());
    assert_eq!(list.select(".drafts li a"), ["Queue-bound TTFT at peak"]);

    let entry_path = edit.trim_end_matches("/edit").to_string();
    let fields = common::journal_edit_fields(&page, &[("effort", "35 minutes")], "publish");
    let r = post(&mut app, &entry_path, &fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    let list = app.get("/journal").await;
    assert_eq!(
        list.select(".journal-item .entry-title"),
        ["Queue-bound TTFT at peak"]
    );
    assert_eq!(
        list.select(".journal-item .symptom-line"),
        ["p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"]
    );
    let entry = app.get(&entry_path).await;
    assert_eq!(entry.select(".section-effort"), ["35 minutes"]);
    assert_eq!(entry.select(".entry-meta .status"), ["published"]);
    assert_eq!(
        entry.select("a.investigation-link"),
        ["Queue-bound TTFT at peak"]
    );
    let overview = app.get(&url).await;
    assert!(overview
        .select(".history .what")
        .iter()
        .any(|w| w.starts_with("published the journal entry")));

    // An upload on the investigation shows on its page and on the entry.
    let inv_id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    sqlx::query(
        "INSERT INTO artifacts (investigation_id, name, kind, sha256, size_bytes, status) \
         VALUES ($1, 'requests.jsonl', 'request_log', repeat('a', 64), 10, 'done')",
    )
    .bind(inv_id)
    .execute(&app.pool)
    .await
    .unwrap();
    let overview = app.get(&url).await;
    assert_eq!(
        overview.select(".artifacts-section li a"),
        ["requests.jsonl"]
    );
    let html = overview.html();
    let sel = scraper::Selector::parse("form.upload").unwrap();
    let action = html
        .select(&sel)
        .next()
        .unwrap()
        .value()
        .attr("action")
        .unwrap()
        .to_string();
    assert!(
        action.ends_with(&format!("&investigation={inv_id}")),
        "{action}"
    );
    let entry = app.get(&entry_path).await;
    assert_eq!(entry.select(".artifacts-section li a"), ["requests.jsonl"]);
    let token = app.api_token("ada").await;
    let entry_id = entry_path.rsplit('/').next().unwrap();
    let api = app
        .api("GET", &format!("/api/v1/journal/{entry_id}"), &token, None)
        .await;
    assert_eq!(api.json()["artifacts"][0]["name"], "requests.jsonl");

    let md = app.get(&format!("{entry_path}/markdown")).await;
    assert!(
        md.body
            .starts_with("# Queue-bound TTFT at peak\n\n## DATE\n\n"),
        "{}",
        md.body
    );
    assert!(md.body.contains("## EFFORT\n\n35 minutes\n"));
}

#[tokio::test]
async fn a_stale_save_gets_409_shows_what_changed_and_overwrites_nothing() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("bob", Role::Editor).await;
    let mut bob = app.new_client();
    bob.login("bob").await;

    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "Proxy buffering doubled client TTFT"),
                ("date", "2026-11-20"),
                ("symptom", "client p95 TTFT 1.9 s vs server 0.6 s"),
                ("diagnosis", "the gateway buffered streamed responses"),
                ("change", "proxy_buffering off"),
                ("result", "client p95 TTFT 0.7 s"),
                ("action", "publish"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let path = r.location().unwrap().to_string();

    // Both open the editor at version 1.
    let ada_page = app.get(&format!("{path}/edit")).await;
    let bob_page = bob.get(&format!("{path}/edit")).await;
    assert_eq!(common::form_value(&ada_page, "[name=version]"), "1");

    let ada_fields = common::journal_edit_fields(
        &ada_page,
        &[("diagnosis", "nginx buffered the SSE stream")],
        "save",
    );
    assert_eq!(
        post(&mut app, &path, &ada_fields).await.status,
        StatusCode::SEE_OTHER
    );

    let bob_fields =
        common::journal_edit_fields(&bob_page, &[("result", "client p95 TTFT 0.62 s")], "save");
    let r = post(&mut bob, &path, &bob_fields).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.select(".conflict-fields tbody tr td:first-child"),
        ["DIAGNOSIS"]
    );
    assert_eq!(
        r.select(".conflict-fields .theirs"),
        ["nginx buffered the SSE stream"]
    );
    assert!(r.select(".conflict p strong")[0].contains("ada saved this entry"));
    // Bob's text is kept in the form, now on the current version.
    assert_eq!(
        common::form_value(&r, "[name=result]"),
        "client p95 TTFT 0.62 s"
    );
    assert_eq!(common::form_value(&r, "[name=version]"), "2");

    let (diagnosis, result, version): (String, String, i32) =
        sqlx::query_as("SELECT diagnosis, result, version FROM journal_entries")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(diagnosis, "nginx buffered the SSE stream");
    assert_eq!(result, "client p95 TTFT 0.7 s");
    assert_eq!(version, 2);

    // Saving again from the conflict page is a deliberate overwrite of version 2.
    let fields: Vec<(String, String)> = common::journal_edit_fields(&r, &[], "save");
    assert_eq!(
        post(&mut bob, &path, &fields).await.status,
        StatusCode::SEE_OTHER
    );
    let entry = bob.get(&path).await;
    assert_eq!(entry.select(".section-result"), ["client p95 TTFT 0.62 s"]);
}

#[tokio::test]
async fn entries_written_directly_are_checked_and_listed_newest_first() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    assert_eq!(app.get("/journal/new").await.status, StatusCode::OK);
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "x"),
                ("date", "2026-02-30"),
                ("symptom", ""),
                ("change", "y"),
                ("action", "publish"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select(".field-error[data-field=date]").len(), 1);
    assert_eq!(r.select(".field-error[data-field=symptom]").len(), 1);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_entries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);

    for (title, date) in [
        ("older", "2026-01-10"),
        ("newer", "2026-03-01"),
        ("middle", "2026-02-01"),
    ] {
        let r = app
            .post_form(
                "/journal",
                &[
                    ("title", title),
                    ("date", date),
                    ("symptom", "s"),
                    ("diagnosis", "d"),
                    ("change", "c"),
                    ("result", "r"),
                    ("action", "publish"),
                ],
            )
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
    }
    let list = app.get("/journal").await;
    assert_eq!(
        list.select(".journal-item .entry-title"),
        ["newer", "middle", "older"]
    );

    // Text is text: markup typed into a field is shown, not run; line breaks stay.
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "markup"),
                ("date", "2026-03-02"),
                ("symptom", "s"),
                ("diagnosis", "<b>bold</b>\nsecond line"),
                ("change", "c"),
                ("result", "r"),
                ("action", "publish"),
            ],
        )
        .await;
    let entry = app.get(r.location().unwrap()).await;
    assert!(entry.select(".section-diagnosis b").is_empty());
    assert_eq!(entry.select(".section-diagnosis br").len(), 1);
    assert_eq!(
        entry.select(".section-diagnosis"),
        ["<b>bold</b>second line"]
    );
    assert_eq!(list.select("main h1"), ["Journal"]);
}

#[tokio::test]
async fn viewers_cannot_write_the_journal() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "t"),
                ("date", "2026-01-10"),
                ("symptom", "s"),
                ("diagnosis", "d"),
                ("change", "c"),
                ("result", "r"),
                ("action", "publish"),
            ],
        )
        .await;
    let path = r.location().unwrap().to_string();
    app.add_user("vic", Role::Viewer).await;
    let mut vic = app.new_client();
    vic.login("vic").await;
    assert_eq!(vic.get(&path).await.status, StatusCode::OK);
    assert_eq!(vic.get("/journal/new").await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        vic.get(&format!("{path}/edit")).await.status,
        StatusCode::FORBIDDEN
    );
    let r = vic
        .post_form(
            &path,
            &[
                ("title", "mine"),
                ("date", "2026-01-10"),
                ("symptom", "s"),
                ("change", "c"),
                ("version", "1"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = vic.post_form("/journal", &[("title", "mine")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let title: String = sqlx::query_scalar("SELECT title FROM journal_entries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(title, "t");
}

/// The journal list pages (50 a page, "Older entries" links) instead of growing with the
/// journal; a page is stable when new entries arrive meanwhile.
#[tokio::test]
async fn the_journal_list_pages_and_a_page_is_stable_under_new_entries() {
    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    let author = app.user_id("ada").await;
    sqlx::query(
        "INSERT INTO journal_entries (author_id, title, entry_date, symptom, change, published_at) \
         SELECT $1, 'Entry ' || g, date '2026-01-01' + g, 'slow', 'a change', now() \
         FROM generate_series(1, 120) g",
    )
    .bind(author)
    .execute(&app.pool)
    .await
    .unwrap();
    let titles = |r: &common::Reply| r.select(".journal-item .entry-title");
    let first = app.get("/journal").await;
    assert_eq!(first.status, StatusCode::OK);
    let page1 = titles(&first);
    assert_eq!(page1.len(), 50);
    assert_eq!(page1[0], "Entry 120");
    let older = first.select_attr("a.older", "href")[0].clone();

    // A new entry arrives; the second page still starts where the first ended.
    sqlx::query(
        "INSERT INTO journal_entries (author_id, title, entry_date, symptom, change, published_at) \
         VALUES ($1, 'Newest', date '2027-01-01', 'slow', 'a change', now())",
    )
    .bind(author)
    .execute(&app.pool)
    .await
    .unwrap();
    let second = app.get(&older).await;
    let page2 = titles(&second);
    assert_eq!(page2.len(), 50);
    assert_eq!(page2[0], "Entry 70");
    let third = app.get(&second.select_attr("a.older", "href")[0]).await;
    let page3 = titles(&third);
    assert_eq!(page3.len(), 20);
    assert_eq!(page3.last().unwrap(), "Entry 1");
    assert!(
        third.select_attr("a.older", "href").is_empty(),
        "no page after the last"
    );
    assert!(third.body.len() < 100_000, "a page stays small");

    let bad = app.get("/journal?after=abc").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_published_entry_offers_to_resolve_its_investigation_in_one_post() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let url = finished_investigation(&mut app).await;
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    let edit = r.location().unwrap().to_string();
    let entry_path = edit.trim_end_matches("/edit").to_string();

    // A draft does not offer it yet.
    assert!(app.get(&url).await.select("form.resolve-offer").is_empty());
    assert!(app
        .get(&entry_path)
        .await
        .select("form.resolve-offer")
        .is_empty());

    let page = app.get(&edit).await;
    let fields = common::journal_edit_fields(&page, &[], "publish");
    let r = post(&mut app, &entry_path, &fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    // Published while the investigation is open: both pages offer the one button.
    let entry = app.get(&entry_path).await;
    let action = format!("{url}/status");
    assert_eq!(
        entry.select_attr("form.resolve-offer", "action"),
        [action.as_str()]
    );
    assert_eq!(
        entry.select_attr("form.resolve-offer input[name=status]", "value"),
        ["resolved"]
    );
    let overview = app.get(&url).await;
    assert_eq!(
        overview.select_attr("form.resolve-offer", "action"),
        [action.as_str()]
    );
    assert_eq!(
        overview.select(".inv-meta .status"),
        ["open"],
        "nothing changed by showing it"
    );

    let r = app.post_form(&action, &[("status", "resolved")]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.location(), Some(url.as_str()));
    let overview = app.get(&url).await;
    assert_eq!(overview.select(".inv-meta .status"), ["resolved"]);
    assert!(overview.select("form.resolve-offer").is_empty());
    assert!(app
        .get(&entry_path)
        .await
        .select("form.resolve-offer")
        .is_empty());
}

/// Publishing refuses an entry missing SYMPTOM, DIAGNOSIS, CHANGE or RESULT, naming each;
/// a draft may be partial; a published entry cannot be emptied by an edit.
#[tokio::test]
async fn publishing_needs_the_four_sections_and_a_draft_may_be_partial() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let count = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM journal_entries")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "ITL spikes on chat-api"),
                ("date", "2026-11-20"),
                ("symptom", "p99 ITL 140 ms vs target 60 ms"),
                ("change", "max_num_batched_tokens 2048"),
                ("action", "publish"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select(".field-error[data-field=diagnosis]").len(), 1);
    assert_eq!(r.select(".field-error[data-field=result]").len(), 1);
    assert!(r.select(".field-error[data-field=diagnosis]")[0].starts_with("DIAGNOSIS is empty"));
    assert!(r.select(".field-error[data-field=symptom]").is_empty());
    assert_eq!(count(app.pool.clone()).await, 0);

    // A draft with only its title and date is kept.
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "ITL spikes on chat-api"),
                ("date", "2026-11-20"),
                ("action", "save"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let path = r.location().unwrap().to_string();
    let page = app.get(&format!("{path}/edit")).await;
    let fields = common::journal_edit_fields(
        &page,
        &[
            ("symptom", "p99 ITL 140 ms vs target 60 ms"),
            (
                "diagnosis",
                "22k-token prompts in 8,192-token chunks stall decode",
            ),
            ("change", "max_num_batched_tokens 2048"),
            ("result", "p99 ITL 55 ms"),
        ],
        "publish",
    );
    assert_eq!(
        post(&mut app, &path, &fields).await.status,
        StatusCode::SEE_OTHER
    );

    // Emptying a published entry's RESULT is refused and changes nothing.
    let page = app.get(&format!("{path}/edit")).await;
    let fields = common::journal_edit_fields(&page, &[("result", " ")], "save");
    let r = post(&mut app, &path, &fields).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select(".field-error[data-field=result]").len(), 1);
    let (result, version): (String, i32) =
        sqlx::query_as("SELECT result, version FROM journal_entries")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((result.as_str(), version), ("p99 ITL 55 ms", 2));
}

/// The journal's API writes with the page's rules: POST drafts or publishes (422 naming
/// fields), PUT saves over a version (409 when stale), both in the OpenAPI document.
#[tokio::test]
async fn the_api_writes_entries_with_the_forms_rules_and_versions() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let full = serde_json::json!({
        "title": "ITL spikes on chat-api",
        "date": "2026-11-20",
        "symptom": "p99 ITL 140 ms vs target 60 ms",
        "diagnosis": "22k-token prompts in 8,192-token chunks stall decode",
        "change": "max_num_batched_tokens 2048",
        "result": "p99 ITL 55 ms",
        "publish": true
    });

    let mut partial = full.clone();
    partial["diagnosis"] = "".into();
    partial["date"] = "2026-02-30".into();
    let r = app
        .api("POST", "/api/v1/journal", &token, Some(partial.clone()))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let fields: Vec<String> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, ["date", "diagnosis"]);
    let r = app
        .api(
            "POST",
            "/api/v1/journal",
            &token,
            Some(serde_json::json!({"title": "t", "colour": "red"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "body");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM journal_entries")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);

    // A partial draft is kept.
    partial["date"] = "2026-11-20".into();
    partial["publish"] = false.into();
    let r = app
        .api("POST", "/api/v1/journal", &token, Some(partial))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let draft = r.json();
    assert_eq!(draft["published"], false);
    assert_eq!(draft["version"], 1);
    let id = draft["id"].as_i64().unwrap();
    let url = format!("/api/v1/journal/{id}");

    // Publishing it needs the DIAGNOSIS; with it, version 2 is published.
    let mut edit = full.clone();
    edit["version"] = 1.into();
    edit["diagnosis"] = "".into();
    let r = app.api("PUT", &url, &token, Some(edit.clone())).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "diagnosis");
    edit["diagnosis"] = full["diagnosis"].clone();
    let r = app.api("PUT", &url, &token, Some(edit.clone())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["published"], true);
    assert_eq!(r.json()["version"], 2);

    // A save from version 1 again is stale: 409, nothing changed.
    edit["result"] = "p99 ITL 50 ms".into();
    let r = app.api("PUT", &url, &token, Some(edit.clone())).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("version 2"));
    edit.as_object_mut().unwrap().remove("version");
    let r = app.api("PUT", &url, &token, Some(edit)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "version");
    let got = app.api("GET", &url, &token, None).await.json();
    assert_eq!(
        (got["result"].as_str(), got["version"].as_i64()),
        (Some("p99 ITL 55 ms"), Some(2))
    );

    // Viewers read but do not write; the document names both operations.
    app.add_user("vic", Role::Viewer).await;
    let vic = app.api_token("vic").await;
    let r = app.api("POST", "/api/v1/journal", &vic, Some(full)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let doc = app
        .api("GET", "/api/v1/openapi.json", &token, None)
        .await
        .json();
    assert!(doc["paths"]["/journal"]["post"].is_object());
    assert!(doc["paths"]["/journal/{id}"]["put"]["responses"]["409"].is_object());
}
