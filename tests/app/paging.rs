//! Every list pages (keyset, `?after=ID`): the pages and the API lists of investigations,
//! artifacts, comparisons, proposals and the journal. A page's size does not grow with the
//! table; following the links reads every row exactly once, in order, even when new rows
//! arrive between pages; filters ride along; a bad cursor or size is a 422 naming it.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use serde_json::Value;

const ROWS: i64 = 120;

/// Seeds `ROWS` rows of each list, oldest first (row g is g minutes older than now).
async fn seeded() -> (TestApp, String) {
    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let ada = app.user_id("ada").await;
    let inserts = [
        "INSERT INTO investigations (title, owner_id, created_at, updated_at) \
         SELECT 'Investigation ' || g, $1, now() - g * interval '1 minute', \
                now() - g * interval '1 minute' FROM generate_series(1, 120) g",
        "INSERT INTO artifacts (name, kind, sha256, size_bytes, status, uploaded_by, created_at) \
         SELECT 'upload-' || g || '.txt', 'unknown', repeat('a', 64), 10, 'not_analyzed', $1, \
                now() - g * interval '1 minute' FROM generate_series(1, 120) g",
        "INSERT INTO comparisons (variable, kind, metric, percentile, verdict, report, created_by, created_at) \
         SELECT 'change ' || g, 'vllm_bench', 'ttft', 'p50', 'inconclusive', '{}', $1, \
                now() - g * interval '1 minute' FROM generate_series(1, 120) g",
        "INSERT INTO journal_entries (author_id, title, entry_date, symptom, change, published_at) \
         SELECT $1, 'Entry ' || g, date '2026-06-01' - g, 'slow', 'a change', now() \
         FROM generate_series(1, 120) g",
    ];
    for sql in inserts {
        sqlx::query(sql).bind(ada).execute(&app.pool).await.unwrap();
    }
    // Proposals carry checked inputs and sizing: make one through the API, then copies.
    let body = common::chat_api_proposal();
    let r = app
        .api("POST", "/api/v1/proposals", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    sqlx::query(
        "INSERT INTO proposals (title, owner_id, input, sizing, sensitivity, model, gpu, engine, \
           engine_version, weight_dtype, replicas, cost_per_hour_usd) \
         SELECT 'Proposal ' || g, owner_id, input, sizing, sensitivity, model, gpu, engine, \
           engine_version, weight_dtype, replicas, cost_per_hour_usd \
         FROM proposals, generate_series(2, 120) g WHERE id = (SELECT min(id) FROM proposals)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    (app, token)
}

/// Follows a page's "Older" links from `first`; the first cell's link of each row, per page.
/// A new row of the list is inserted (by `insert`) after the first page was read.
async fn walk_pages(app: &mut TestApp, first: &str, insert: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next.take() {
        let r = app.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        assert!(
            r.body.len() < 100_000,
            "{path}: a page stays small ({} bytes)",
            r.body.len()
        );
        pages.push(r.select_attr("table tbody tr td:first-child a", "href"));
        next = r.select_attr("nav.pager a.older", "href").first().cloned();
        if pages.len() == 1 {
            sqlx::query(insert).execute(&app.pool).await.unwrap();
        }
        assert!(pages.len() < 10, "{first}: the links end");
    }
    pages
}

fn assert_every_row_once(what: &str, pages: &[Vec<String>], per_page: usize) {
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [per_page, per_page, ROWS as usize - 2 * per_page],
        "{what}: page sizes"
    );
    let all: Vec<&String> = pages.iter().flatten().collect();
    let unique: std::collections::HashSet<&&String> = all.iter().collect();
    assert_eq!(
        unique.len(),
        ROWS as usize,
        "{what}: every row once, none twice"
    );
}

#[tokio::test]
async fn the_list_pages_read_every_row_once_while_new_rows_arrive() {
    let (mut app, _) = seeded().await;
    let owner = "(SELECT id FROM users WHERE name = 'ada')";
    let cases = [
        (
            "/investigations",
            format!("INSERT INTO investigations (title, owner_id) VALUES ('Newest', {owner})"),
        ),
        (
            "/artifacts",
            format!(
                "INSERT INTO artifacts (name, kind, sha256, size_bytes, status, uploaded_by) \
                 VALUES ('newest.txt', 'unknown', repeat('b', 64), 1, 'not_analyzed', {owner})"
            ),
        ),
        (
            "/comparisons",
            "INSERT INTO comparisons (variable, kind, metric, percentile, verdict, report) \
             VALUES ('newest', 'vllm_bench', 'ttft', 'p50', 'inconclusive', '{}')"
                .to_string(),
        ),
        (
            "/proposals",
            "INSERT INTO proposals (title, owner_id, input, sizing, sensitivity, model, gpu, \
               engine, engine_version, weight_dtype, replicas, cost_per_hour_usd) \
             SELECT 'Newest', owner_id, input, sizing, sensitivity, model, gpu, engine, \
               engine_version, weight_dtype, replicas, cost_per_hour_usd \
             FROM proposals ORDER BY id LIMIT 1"
                .to_string(),
        ),
    ];
    for (list, insert) in &cases {
        let pages = walk_pages(&mut app, list, insert).await;
        assert_every_row_once(list, &pages, 50);
        println!(
            "{list}: pages of {:?} rows",
            pages.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }

    // Past the first page there is a way back; a bad cursor or size names the parameter.
    let second = app.get("/investigations?limit=10&after=999999").await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(
        second.select_attr("nav.pager a.newest", "href"),
        ["/investigations"]
    );
    for (bad, field) in [
        ("/artifacts?after=abc", "after"),
        ("/comparisons?limit=0", "limit"),
        ("/proposals?limit=5000", "limit"),
        ("/investigations?after=-1", "after"),
    ] {
        let r = app.get(bad).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert!(r.body.contains(field), "{bad}: the error names {field}");
        assert!(r.body.contains("<html"), "{bad}: the styled page");
    }
}

/// Reads an API list to its end by following `next`; the ids, per page.
async fn walk_api(app: &mut TestApp, token: &str, first: &str) -> Vec<Vec<i64>> {
    let mut pages = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next.take() {
        let r = app.api("GET", &path, token, None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        let v = r.json();
        pages.push(
            v["items"]
                .as_array()
                .unwrap_or_else(|| panic!("{path}: items: {v}"))
                .iter()
                .map(|i| i["id"].as_i64().unwrap())
                .collect(),
        );
        next = v["next"].as_str().map(str::to_string);
        assert!(pages.len() < 20, "{first}: next ends");
    }
    pages
}

#[tokio::test]
async fn every_api_list_pages_with_a_next_cursor() {
    let (mut app, token) = seeded().await;
    for list in [
        "/api/v1/investigations",
        "/api/v1/artifacts",
        "/api/v1/comparisons",
        "/api/v1/proposals",
        "/api/v1/journal",
    ] {
        let pages = walk_api(&mut app, &token, list).await;
        let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
        assert_eq!(sizes, [50, 50, 20], "{list}");
        let all: Vec<i64> = pages.concat();
        let unique: std::collections::HashSet<i64> = all.iter().copied().collect();
        assert_eq!(unique.len(), ROWS as usize, "{list}: every row once");

        let small = walk_api(&mut app, &token, &format!("{list}?limit=13")).await;
        assert_eq!(small.len(), 10, "{list}: 120 rows at 13 a page");
        assert_eq!(
            small.concat(),
            all,
            "{list}: the same order at any page size"
        );

        for (bad, field) in [
            ("after=x", "after"),
            ("limit=201", "limit"),
            ("colour=red", "colour"),
        ] {
            let r = app.api("GET", &format!("{list}?{bad}"), &token, None).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{list}?{bad}: {}",
                r.body
            );
            assert_eq!(
                r.json()["error"]["fields"][0]["field"],
                field,
                "{list}?{bad}"
            );
        }
    }

    // A filter rides along in `next`.
    let inv: i64 = sqlx::query_scalar("SELECT min(id) FROM investigations")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE artifacts SET investigation_id = $1 WHERE id % 3 = 0")
        .bind(inv)
        .execute(&app.pool)
        .await
        .unwrap();
    let r = app
        .api(
            "GET",
            &format!("/api/v1/artifacts?investigation={inv}&limit=15"),
            &token,
            None,
        )
        .await;
    let v: Value = r.json();
    assert!(v["next"]
        .as_str()
        .unwrap()
        .contains(&format!("investigation={inv}")));
    let pages = walk_api(
        &mut app,
        &token,
        &format!("/api/v1/artifacts?investigation={inv}&limit=15"),
    )
    .await;
    assert_eq!(
        pages.concat().len(),
        40,
        "only that investigation's uploads, all of them"
    );
}
