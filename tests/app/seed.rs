//! Example content: `perfjournal seed-demo` and the setup page's option load three
//! finished investigations once, however often they run.

use crate::common;

use std::process::Command;

use axum::http::StatusCode;
use common::{spawn_app, TestApp, PASSWORD};

async fn counts(app: &TestApp) -> (i64, i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM investigations), \
         (SELECT count(*) FROM journal_entries WHERE published_at IS NOT NULL), \
         (SELECT count(*) FROM investigation_steps)",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

fn seed_demo(url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .arg("seed-demo")
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

#[tokio::test]
async fn seed_demo_loads_three_finished_walkthroughs_once() {
    let mut app = spawn_app().await;

    // Without an account there is no one to own the examples.
    let url = app.database_url.clone();
    let out = tokio::task::spawn_blocking(move || seed_demo(&url))
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no admin account yet"), "{stderr}");

    app.setup_admin("ada").await;
    for run in 0..2 {
        let url = app.database_url.clone();
        let out = tokio::task::spawn_blocking(move || seed_demo(&url))
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        if run == 0 {
            assert!(said.contains("loaded 3 example investigations"), "{said}");
        } else {
            assert!(said.contains("already loaded"), "{said}");
        }
        assert_eq!(counts(&app).await, (3, 3, 24), "after run {run}");
    }
    let again = perfjournal::investigations::seed::seed_demo(&app.pool, 1)
        .await
        .unwrap();
    assert_eq!(again, 0);

    // Each example is complete: all steps done, resolved, its entry on the journal.
    let list = app.get("/investigations").await;
    assert_eq!(
        list.select(".steps-recorded"),
        ["8 of 8", "8 of 8", "8 of 8"]
    );
    assert_eq!(
        list.select(".investigations .status"),
        ["resolved", "resolved", "resolved"]
    );
    let journal = app.get("/journal").await;
    assert_eq!(
        journal.select(".journal-item .entry-title"),
        [
            "Constant preemption at the evening peak",
            "Bad ITL with fine TTFT on the 8B model",
            "TTFT tripled after the prompt template deploy"
        ]
    );
    // The reference chains show through: prefix reuse lost, decode at 63% of its floor,
    // the KV pool too small for the admitted requests at full length.
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM investigations ORDER BY id")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    let p = app
        .get(&format!("/investigations/{}/steps/2", ids[0]))
        .await;
    assert_eq!(
        p.select(".dominant-phase")[0].split(' ').next(),
        Some("Prefill")
    );
    assert_eq!(p.select(".expected-figures .gap-ratio-cell"), ["0.93×"]);
    let p = app
        .get(&format!("/investigations/{}/steps/4", ids[1]))
        .await;
    assert_eq!(
        p.select(".decode-band .ratio"),
        ["63% of the physical limit"]
    );
    let p = app
        .get(&format!("/investigations/{}/steps/7", ids[2]))
        .await;
    assert_eq!(
        p.select(".config-diff-ok").len(),
        1,
        "each example changes one thing"
    );
    let p = app
        .get(&format!("/investigations/{}/steps/2", ids[2]))
        .await;
    assert_eq!(
        p.select(".expected-figures .expected-value")[0]
            .split(' ')
            .next(),
        Some("137")
    );
}

#[tokio::test]
async fn the_setup_page_can_load_the_examples() {
    let mut app = spawn_app().await;
    let page = app.get("/setup").await;
    assert_eq!(page.select("input[type=checkbox][name=demo]").len(), 1);
    let r = app
        .post_form(
            "/setup",
            &[
                ("name", "ada"),
                ("password", PASSWORD),
                ("confirm", PASSWORD),
                ("demo", "on"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.location(), Some("/investigations"));
    assert_eq!(counts(&app).await, (3, 3, 24));
}

/// An entry's Markdown carries the Estimates table its page shows (same figures), and
/// the file imports back to the same entry (the table is not part of it).
#[tokio::test]
async fn an_entrys_markdown_carries_its_estimates_table_and_imports_back() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let url = app.database_url.clone();
    let out = tokio::task::spawn_blocking(move || seed_demo(&url))
        .await
        .unwrap();
    assert!(out.status.success());
    let entries: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM journal_entries WHERE investigation_id IS NOT NULL ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut checked = 0;
    for id in entries {
        let page = app.get(&format!("/journal/{id}")).await;
        let gaps = page.select("table.expected .gap-ratio-cell");
        if gaps.is_empty() {
            continue;
        }
        let md = app.get(&format!("/journal/{id}/markdown")).await;
        assert_eq!(md.status, StatusCode::OK);
        let (entry_part, table) = md
            .body
            .split_once("## ESTIMATES")
            .expect("an Estimates section");
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("| "))
            .skip(1)
            .collect();
        assert_eq!(rows.len(), gaps.len(), "{table}");
        for (row, gap) in rows.iter().zip(&gaps) {
            assert!(
                row.trim_end().ends_with(&format!("| {gap} |")),
                "{row} vs {gap}"
            );
        }
        let parsed = perfjournal::core::method::journal::from_markdown(&md.body).unwrap();
        let again = perfjournal::core::method::journal::from_markdown(entry_part).unwrap();
        assert_eq!(parsed, again);
        checked += 1;
    }
    assert!(checked > 0, "no seeded entry has estimates");
}
