//! A trace set in headless Chromium: four rank traces chosen together in the artifacts
//! page's "Upload a trace set" form; the set page shows the straggler callout, the ranks
//! with the straggler marked, the busy heatmap, kernel types and collectives, and fits a
//! desktop (1400 px) and a phone (390 px) without sideways scrolling or console errors.

use crate::common;

use std::time::Duration;

use common::{browser, spawn_app};
use thirtyfour::By;

#[tokio::test]
async fn a_trace_set_uploaded_from_the_form_fits_desktop_and_phone() {
    let test = "a_trace_set_uploaded_from_the_form_fits_desktop_and_phone";
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for rank in 0..4 {
        let (c, w) = if rank == 1 {
            (700.0, 100.0)
        } else {
            (500.0, 300.0)
        };
        let p = dir.path().join(format!("rank{rank}.pt.trace.json"));
        std::fs::write(&p, common::uploads::rank_trace(rank, 4, c, w, 5)).unwrap();
        paths.push(p.display().to_string());
    }
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.goto("/artifacts").await;
    b.fill("#set-upload-name", "TP=4 decode").await;
    let input = b.driver.find(By::Css("#set-upload-files")).await.unwrap();
    input.send_keys(paths.join("\n")).await.unwrap();
    b.click("#trace-set-upload button[type=submit]").await;
    let callout = b.wait_text("#straggler-callout", "Rank 1").await;
    assert!(
        callout.starts_with(
            "Rank 1 is the straggler: 0.20 ms (25.0 % of a step) more computation per step than the other ranks' median. Rank 1 computes 0.70 ms per step"
        ),
        "{callout}"
    );
    assert!(b.path().await.starts_with("/trace-sets/"));
    assert_eq!(b.text("#set-status").await, "done");
    let rows = b
        .driver
        .find_all(By::Css("#set-ranks tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(b.text("#set-ranks tr.straggler td").await, "1");
    assert_eq!(b.text("#set-collectives tbody td").await, "allreduce");

    for width in [1400u32, 390] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        b.driver.refresh().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let overflow = b
            .driver
            .execute(
                "return document.documentElement.scrollWidth - window.innerWidth",
                vec![],
            )
            .await
            .unwrap()
            .json()
            .as_f64()
            .unwrap();
        assert!(
            overflow <= 0.0,
            "the set page at {width} px scrolls sideways by {overflow} px"
        );
        let cells = b
            .driver
            .find_all(By::Css("#set-heatmap svg rect"))
            .await
            .unwrap();
        assert_eq!(cells.len(), 4 * 120, "the heatmap at {width} px");
        let errors = b.console_errors().await;
        assert!(errors.is_empty(), "at {width} px: {errors:?}");
        b.screenshot(&format!("trace-set-{width}")).await;
    }
    b.quit().await;
}
