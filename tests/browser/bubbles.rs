//! The bubble picture in a real browser: step 3 draws the GPU's idle intervals coloured
//! by class with the queue depth beneath on the same time axis, so the bar of waiting
//! requests sits under the bubble it explains, at 1400 px and at 390 px without
//! horizontal overflow.

use crate::common;

use common::bubble_data;
use common::{browser, spawn_app};
use serde_json::json;

async fn script(b: &browser::Browser, js: &str) -> serde_json::Value {
    b.driver.execute(js, vec![]).await.unwrap().json().clone()
}

/// (page scroll width, viewport width) at a window `width` px wide.
async fn widths_at(b: &browser::Browser, width: u32) -> (f64, f64) {
    b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
    let v = script(
        b,
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
    )
    .await;
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

#[tokio::test]
async fn the_bubble_picture_lines_the_queue_up_under_the_gpu_timeline() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let (inv, trace, log) = bubble_data::investigation_with_a_bubble(&mut app, &token).await;
    let r = app
        .api(
            "POST",
            "/api/v1/bubbles",
            &token,
            Some(json!({"trace": trace, "queue": log})),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.body);

    let test = "the_bubble_picture_lines_the_queue_up_under_the_gpu_timeline";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;

    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.goto(&format!("/investigations/{inv}/steps/3")).await;
    b.wait_text(".bubble-finding", "runtime bubbles").await;

    // One mark per idle interval, coloured by class, with a legend naming every class.
    let marks = script(
        &b,
        "return [...document.querySelectorAll('svg.bubbles-chart rect.idle')]
            .map(r => [r.dataset.class, r.getAttribute('fill'), r.querySelector('title').textContent]);",
    )
    .await;
    let marks = marks.as_array().unwrap();
    assert_eq!(marks.len(), 2, "{marks:?}");
    assert_eq!(marks[0][0], "runtime_bubble");
    assert_eq!(marks[1][0], "insufficient_load");
    assert_ne!(marks[0][1], marks[1][1], "classes have their own colours");
    let title = marks[0][2].as_str().unwrap();
    assert!(
        title.contains("idle 2.00 ms from +10.0 ms") && title.contains("work queued for 1.50 ms"),
        "{title}"
    );
    let legend = b.text("svg.bubbles-chart").await;
    for class in ["runtime bubble", "upstream", "insufficient load", "unknown"] {
        assert!(legend.contains(class), "{class} missing from {legend:?}");
    }
    // Labels are at least 11 px as drawn at 1400 px.
    let smallest = script(
        &b,
        "return Math.min(...[...document.querySelectorAll('svg.bubbles-chart text')]
            .map(t => t.getBoundingClientRect().height));",
    )
    .await;
    assert!(smallest.as_f64().unwrap() >= 11.0, "{smallest}");

    // The same time axis: the waiting requests (9–11.5 ms) start before the bubble
    // (10–12 ms) and end inside it.
    let aligned = script(
        &b,
        "const idle = document.querySelector('svg.bubbles-chart rect.idle[data-class=runtime_bubble]').getBoundingClientRect();
         const bars = [...document.querySelectorAll('svg.bubbles-chart rect.depth')]
            .filter(r => parseFloat(r.getAttribute('height')) > 0)
            .map(r => r.getBoundingClientRect());
         return [idle.left, idle.right, Math.min(...bars.map(b => b.left)), Math.max(...bars.map(b => b.right)), idle.bottom, Math.min(...bars.map(b => b.top))];",
    )
    .await;
    let v: Vec<f64> = aligned
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let (idle_left, idle_right, queue_left, queue_right) = (v[0], v[1], v[2], v[3]);
    assert!(
        queue_left < idle_left && idle_left < queue_right && queue_right < idle_right,
        "{v:?}"
    );
    assert!(
        v[5] > v[4],
        "the queue is drawn beneath the GPU lane: {v:?}"
    );
    b.screenshot("bubbles-1400").await;

    // No horizontal overflow at 1400 px or 390 px.
    for width in [1400, 390] {
        let (scroll, client) = widths_at(&b, width).await;
        assert!(
            scroll <= client + 1.0,
            "{width} px: scroll {scroll} > {client}"
        );
    }
    b.goto(&format!("/investigations/{inv}/steps/3")).await;
    b.wait_text(".bubble-finding", "runtime bubbles").await;
    let (scroll, client) = widths_at(&b, 390).await;
    assert!(scroll <= client + 1.0, "390 px: scroll {scroll} > {client}");
    // The picture keeps its labels legible and scrolls inside its frame instead.
    let frame = script(
        &b,
        "const f = document.querySelector('.bubbles-figure');
         f.scrollIntoView();
         return [f.getBoundingClientRect().right,
                 Math.min(...[...f.querySelectorAll('svg text')].map(t => t.getBoundingClientRect().height))];",
    )
    .await;
    assert!(frame[0].as_f64().unwrap() <= client + 1.0, "{frame}");
    assert!(frame[1].as_f64().unwrap() >= 11.0, "{frame}");
    b.screenshot("bubbles-390").await;
    b.quit().await;
}
