//! Search in a real browser: type, see highlighted results arrive (htmx), narrow by a
//! facet, open a result.

use crate::common;

use std::time::Duration;

use common::{browser, spawn_app, PASSWORD};
use thirtyfour::prelude::*;

#[tokio::test]
async fn search_as_you_type_narrow_and_open_in_a_browser() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.seed_demo().await;
    let Some(b) = browser::start(&app, "search_as_you_type_narrow_and_open_in_a_browser").await
    else {
        return;
    };
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    b.click(".areas a[href='/search']").await;
    b.wait_text("main h1", "Search").await;
    // Typing is enough: no submit, the results region refreshes itself.
    let input = b.driver.find(By::Css("#q")).await.unwrap();
    input.send_keys("prefix").await.unwrap();
    b.wait_text(".result-count", "results").await;
    let mut marks = Vec::new();
    for _ in 0..50 {
        marks = b.driver.find_all(By::Css(".snippet mark")).await.unwrap();
        if !marks.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!marks.is_empty(), "no highlighted words");
    assert_eq!(marks[0].text().await.unwrap().to_lowercase(), "prefix");
    // The URL holds the query.
    for _ in 0..50 {
        if b.path().await.contains("q=prefix") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        b.path().await.starts_with("/search?q=prefix"),
        "{}",
        b.path().await
    );

    // Narrow to journal entries through the facet.
    b.click(".facet[data-facet=kind] a[data-value=journal]")
        .await;
    b.wait_text(".active-filters", "kind: journal").await;
    let kinds = b.driver.find_all(By::Css(".search-result")).await.unwrap();
    assert!(!kinds.is_empty());
    for k in &kinds {
        assert_eq!(
            k.attr("data-kind").await.unwrap().as_deref(),
            Some("journal")
        );
    }
    assert!(b.path().await.contains("kind=journal"));
    // Newest first keeps the words and the facet.
    b.click(".sort-newest").await;
    b.wait_text(".sort-order strong", "newest").await;
    let path = b.path().await;
    assert!(
        path.contains("q=prefix") && path.contains("kind=journal") && path.contains("sort=newest"),
        "{path}"
    );
    b.screenshot("search").await;

    // Open the first result: its journal entry.
    let title = b.text(".search-result .result-title").await;
    b.click(".search-result .result-title").await;
    b.wait_text("h1.entry-title", &title).await;
    assert!(b.path().await.starts_with("/journal/"));
    // The entry loads its related list.
    b.wait_text("#related h2", "Related").await;
    b.quit().await;
}
