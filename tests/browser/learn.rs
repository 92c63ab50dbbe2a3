//! Training in a real browser: a viewer works one estimator drill (wrong working, then
//! the chain beside the answer) and replays one of the team's investigations blind;
//! both pages fit a 390 px phone.

use crate::common;

use common::{browser, spawn_app, PASSWORD};
use perfjournal::auth::Role;

async fn sign_in(b: &browser::Browser, name: &str) {
    b.goto("/login").await;
    b.fill("#name", name).await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", name).await;
}

/// Whether the page is wider than the window (horizontal overflow), naming the widest
/// element that sticks out.
async fn overflows(b: &browser::Browser) -> Option<String> {
    let v = b
        .driver
        .execute(
            "if (document.documentElement.scrollWidth <= window.innerWidth) return null; \
             let worst = null, right = 0; \
             for (const e of document.querySelectorAll('main *')) { \
               const r = e.getBoundingClientRect().right; \
               if (r > right) { right = r; worst = e; } } \
             return worst ? worst.tagName + '#' + worst.id + '.' + worst.className + ' ' + right : 'page';",
            vec![],
        )
        .await
        .unwrap()
        .json()
        .clone();
    v.as_str().map(str::to_string)
}

#[tokio::test]
async fn a_viewer_works_a_drill_and_replays_an_investigation_in_a_browser() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("vic", Role::Viewer).await;
    app.seed_demo().await;
    let test = "a_viewer_works_a_drill_and_replays_an_investigation_in_a_browser";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };

    sign_in(&b, "vic").await;
    b.click(".areas a[href='/learn']").await;
    b.wait_text("main h1", "Learn the method").await;
    b.click("#drills-link").await;
    b.wait_text("main h1", "Drills").await;
    b.click("#drill-cost").await;
    b.wait_text("main h1", "Drill: ").await;
    assert!(b.path().await.starts_with("/drills/cost?seed="));

    // A shared seed: $4.93/h × 8 GPUs at 2,700 tok/s is $4.058 per million tokens.
    b.goto("/drills/cost?seed=1").await;
    assert_eq!(b.text("#seed").await, "1");
    assert!(b.text("#tolerance").await.contains("5 %"));
    b.fill("#value", "5.2").await;
    b.click("#submit-answer").await;
    let verdict = b.wait_text("#verdict", "Not within 5 %").await;
    assert!(verdict.contains("4.058"), "{verdict}");
    b.fill("#value", "$4.05").await;
    b.click("#submit-answer").await;
    b.wait_text("#verdict .verdict-label", "Right").await;
    let chain = b.text("#chain-lines").await;
    assert!(chain.contains("4.058"), "{chain}");
    b.screenshot("learn-drill").await;

    // A blind replay: three steps, then the answer reveals the rest and the entry.
    b.goto("/replays").await;
    b.wait_text("main h1", "Blind replays").await;
    b.click("#replays li:last-child a").await;
    b.wait_text("main h1", "Replay: TTFT tripled").await;
    let replay = b.path().await;
    let steps = b
        .driver
        .find_all(thirtyfour::By::Css(".replay-step"))
        .await
        .unwrap();
    assert_eq!(steps.len(), 3);
    // Each step as the investigation shows it: labelled values with their units, the
    // phase table with its heads, and what was computed from it.
    let metric = b.text("#step-1 .record-fields").await;
    assert!(
        metric.contains("Observed") && metric.contains("1,450 ms"),
        "{metric}"
    );
    let phases = b.text("#step-2 .record-table").await;
    assert!(
        phases.contains("p95") && phases.contains("Prefill"),
        "{phases}"
    );
    b.wait_text("#step-2 .dominant-phase", "Prefill").await;
    assert!(!b.text("main").await.contains("rows["));
    b.driver
        .execute("document.getElementById('step-1').scrollIntoView()", vec![])
        .await
        .unwrap();
    b.screenshot("learn-replay-steps").await;
    b.fill(
        "#diagnosis",
        "the prefix cache stopped hitting after the template change",
    )
    .await;
    b.fill("#next_measurement", "prefix cache hit tokens per request")
        .await;
    b.screenshot("learn-replay-before").await;
    b.click("#submit-replay").await;
    b.wait_text("#journal-entry h2", "What the team found")
        .await;
    assert!(b
        .text("#your-answer")
        .await
        .contains("prefix cache stopped hitting"));
    let steps = b
        .driver
        .find_all(thirtyfour::By::Css(".replay-step"))
        .await
        .unwrap();
    assert_eq!(steps.len(), 8);
    assert!(b
        .text("#step-7 .record-fields")
        .await
        .contains("The cause found"));
    assert!(!b.text("#step-7 .verdict").await.is_empty());
    b.screenshot("learn-replay-revealed").await;

    // Both pages fit a phone.
    b.driver.set_window_rect(0, 0, 390, 844).await.unwrap();
    for path in [
        "/learn",
        "/drills/cost?seed=1",
        "/replays",
        replay.as_str(),
        "/learn/progress",
    ] {
        b.goto(path).await;
        b.wait_text("main h1", "").await;
        assert_eq!(overflows(&b).await, None, "{path} overflows at 390 px");
    }
    b.goto("/learn/estimation").await;
    assert_eq!(overflows(&b).await, None, "the guide overflows at 390 px");
    b.screenshot("learn-guide-390").await;
    b.quit().await;
}
