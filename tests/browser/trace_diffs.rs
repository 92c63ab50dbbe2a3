//! A trace diff started from a PyTorch trace's page, in headless Chromium: the form
//! picks the other trace, the diff page shows the headline, the class counts, the
//! top-movers chart and the rows, and fits a desktop (1400 px) and a phone (390 px)
//! without sideways scrolling or console errors.

use crate::common;

use std::time::Duration;

use common::{browser, spawn_app};

async fn number(b: &browser::Browser, script: &str) -> f64 {
    b.driver
        .execute(script, vec![])
        .await
        .unwrap()
        .json()
        .as_f64()
        .unwrap_or_else(|| panic!("{script} gave no number"))
}

#[tokio::test]
async fn trace_diff_page_from_the_trace_page_fits_desktop_and_phone() {
    let test = "trace_diff_page_from_the_trace_page_fits_desktop_and_phone";
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(std::path::PathBuf::from)
    else {
        common::skip(test, "PERFJOURNAL_REAL_FIXTURES unset");
        return;
    };
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let mut ids = Vec::new();
    for file in [
        "pytorch_trace/hta__trace_compare__base__base.json.gz",
        "pytorch_trace/hta__trace_diff__test__test.json.gz",
    ] {
        let name = file.rsplit('/').next().unwrap();
        let bytes = std::fs::read(root.join(file)).unwrap();
        ids.push(common::uploads::upload_analyzed(&mut app, &token, name, bytes).await);
    }
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.goto(&format!("/artifacts/{}", ids[0])).await;
    let picked = b
        .driver
        .execute(
            &format!(
                "const s = document.querySelector('#diff-test'); s.value = '{}'; return s.value;",
                ids[1]
            ),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(picked.json().as_str(), Some(ids[1].to_string().as_str()));
    b.click("#trace-diff-form button[type=submit]").await;
    let headline = b.wait_text("#diff-headline", "cudaMemcpyAsync").await;
    assert_eq!(
        headline,
        "the change moved 41.0 ms into cudaMemcpyAsync, +802 calls."
    );
    assert!(b.path().await.starts_with("/trace-diffs/"));
    assert_eq!(b.text("#count-added").await, "287");

    for width in [1400u32, 390] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        b.driver.refresh().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let overflow = number(
            &b,
            "return document.documentElement.scrollWidth - window.innerWidth",
        )
        .await;
        assert!(
            overflow <= 0.0,
            "the diff page at {width} px scrolls sideways by {overflow} px"
        );
        let charts = number(
            &b,
            "return document.querySelectorAll('#movers-chart svg.chart').length",
        )
        .await;
        assert_eq!(charts, 1.0, "the top-movers chart at {width} px");
        let errors = b.console_errors().await;
        assert!(errors.is_empty(), "at {width} px: {errors:?}");
        b.screenshot(&format!("trace-diff-{width}")).await;
    }
    b.quit().await;
}
