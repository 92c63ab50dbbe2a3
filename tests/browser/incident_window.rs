//! The incident window and step 2's sources in a real browser: an editor sets the window
//! on the investigation page (a refused time comes back beside its field), the
//! Prometheus form starts on it; step 2 filled from a request log says where each row
//! came from, and says "edited" once a number is changed.

use crate::common;

use common::{browser, spawn_app};

#[tokio::test]
async fn the_window_is_set_and_step_2_names_its_sources() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app.open_investigation(&token, "Queue grew at noon").await;
    let log: String = (0..40)
        .map(|i| {
            format!(
                "{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{},\"prefill_ms\":180,\"first_token_ms\":{},\"decode_ms\":4000}}\n",
                2000 + i * 10,
                2182 + i * 10
            )
        })
        .collect();
    common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("requests.jsonl&investigation={inv}"),
        log.into_bytes(),
    )
    .await;
    let Some(b) = browser::start(&app, "the_window_is_set_and_step_2_names_its_sources").await
    else {
        return;
    };
    b.sign_in("ada").await;
    b.goto(&format!("/investigations/{inv}")).await;
    b.wait_text("#incident-window h2", "Incident window").await;
    assert!(b.text("#window-label").await.starts_with("Not set yet"));

    // An end before the start comes back beside the field, with what was typed.
    b.fill("#window-start", "2026-11-30 12:00").await;
    b.fill("#window-end", "2026-11-30 11:00").await;
    b.click("#window-submit").await;
    b.wait_text("p.field-error[data-field=end]", "after the start")
        .await;
    assert_eq!(b.value("#window-start").await, "2026-11-30 12:00");
    // The 422 is logged by the browser as a failed load; nothing else may be.
    b.console_errors().await;
    b.fill("#window-end", "2026-11-30 13:30").await;
    b.click("#window-submit").await;
    b.wait_text("#window-label", "(1.5 hours)").await;
    assert!(b
        .path()
        .await
        .starts_with(&format!("/investigations/{inv}")));
    assert_eq!(b.value("#prom-start").await, "2026-11-30 12:00:00");
    assert_eq!(b.value("#prom-end").await, "2026-11-30 13:30:00");
    b.driver
        .execute(
            "document.getElementById('incident-window').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
    b.screenshot("incident-window").await;

    // Step 2 filled from the request log: each row names it.
    b.goto(&format!("/investigations/{inv}/steps/2")).await;
    b.click(".artifact-fill button[type=submit]").await;
    b.wait_text(".fill-notice", "Filled from requests.jsonl")
        .await;
    b.click("form[method=post] button.primary").await;
    b.wait_text(
        ".row-source[data-phase=prefill]",
        "from requests.jsonl (per-request log)",
    )
    .await;
    // A number changed by hand: the row says so after the save.
    b.fill("input[name='prefill.p50']", "170").await;
    b.click("form[method=post] button.primary").await;
    b.wait_text(
        ".row-source[data-phase=prefill]",
        "edited after filling from",
    )
    .await;
    assert!(b
        .text(".row-source[data-phase=queue_wait]")
        .await
        .starts_with("from requests.jsonl"));
    // The table with its sources fits a phone's width (it scrolls inside its box).
    b.driver.set_window_rect(0, 0, 390, 900).await.unwrap();
    let widths = b
        .driver
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap()
        .json()
        .clone();
    assert!(widths[0].as_i64() <= widths[1].as_i64(), "{widths}");
    b.screenshot("step-2-row-sources-narrow").await;
    let errors = b.console_errors().await;
    assert!(errors.is_empty(), "{errors:?}");
    b.quit().await;
}
