//! The investigation page's Grafana card in a real browser, at desktop and phone widths:
//! an annotation that could not be sent says why and when it is tried next.

use crate::common;

use common::incident::incident_with_result;
use common::{browser, spawn_app_with};
use perfjournal::config::Config;
use perfjournal::grafana::{self, Target};

#[tokio::test]
async fn a_waiting_annotation_says_why_at_both_widths() {
    // Nothing listens on port 9 of loopback: every call is refused.
    let target = Target {
        url: "http://127.0.0.1:9".into(),
        token: "glsa_test".into(),
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
            &[("title", "p95 TTFT over target"), ("service", "chat")],
        )
        .await;
    let url = r.location().unwrap().to_string();
    incident_with_result(&mut app, &url).await;
    let client = grafana::client().unwrap();
    assert!(grafana::sync_due(&app.pool, &client, &target, None)
        .await
        .unwrap());

    let test = "a_waiting_annotation_says_why_at_both_widths";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    for width in [1400, 390] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        b.goto(&url).await;
        let card = b
            .wait_text(
                "#grafana .annotation[data-kind=change]",
                "could not connect",
            )
            .await;
        assert!(card.contains("not sent yet after 1 attempt"), "{card}");
        let v = b
            .driver
            .execute(
                "return document.documentElement.scrollWidth - window.innerWidth",
                vec![],
            )
            .await
            .unwrap()
            .json()
            .clone();
        assert!(v.as_i64().unwrap() <= 0, "{width} px: sideways scroll {v}");
        b.screenshot(&format!("grafana-card-{width}")).await;
    }
    b.quit().await;
}
