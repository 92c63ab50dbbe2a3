//! A load sweep's pictures in a real browser: the summary table's artifact page, an SLO
//! asked through the form, the marks with their titles and the SLO line, readable text
//! and no sideways scrolling of the page at 1400 px and 390 px.

use crate::common;

use common::uploads::{summary_table, upload_analyzed};
use common::{browser, spawn_app, PASSWORD};
use thirtyfour::By;

#[tokio::test]
async fn a_sweep_picture_with_its_slo_line_in_a_browser() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let id = upload_analyzed(&mut app, &token, "summary.json", summary_table()).await;
    let test = "a_sweep_picture_with_its_slo_line_in_a_browser";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    b.goto(&format!("/artifacts/{id}")).await;
    let lead = b
        .wait_text("#section-sweep .lead-sm", "Latency turns up")
        .await;
    assert!(lead.contains("after 6 req/s"), "{lead}");
    // Ask the SLO through the form: "0.2 s" is read as 200 ms.
    b.fill("#sweep-slo input[name=slo_max]", "0.2 s").await;
    b.click("#sweep-slo button[type=submit]").await;
    let lead = b
        .wait_text("#section-sweep .lead-sm", "Highest throughput within")
        .await;
    assert!(lead.contains("6.3 req/s achieved at 8 req/s"), "{lead}");
    assert!(b.path().await.contains("slo_max=0.2"));

    let charts = b
        .driver
        .find_all(By::Css("#section-sweep svg.sweep-chart"))
        .await
        .unwrap();
    assert_eq!(
        charts.len(),
        2,
        "latency vs throughput, achieved vs offered"
    );
    // Every mark has a title a person sees on hover.
    let titles: Vec<String> = b
        .driver
        .execute(
            "return [...document.querySelectorAll('#section-sweep svg circle.point')].map(c => c.querySelector('title')?.textContent || '');",
            vec![],
        )
        .await
        .unwrap()
        .convert()
        .unwrap();
    assert!(titles.len() >= 8, "{titles:?}");
    assert!(
        titles.iter().all(|t| t.contains("req/s achieved")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t == "8 req/s: 6.3 req/s achieved, p99 TTFT 200 ms"),
        "{titles:?}"
    );
    let slo: String = b
        .driver
        .execute(
            "return document.querySelector('#section-sweep svg .slo-line title').textContent;",
            vec![],
        )
        .await
        .unwrap()
        .convert()
        .unwrap();
    assert_eq!(slo, "SLO: p99 TTFT ≤ 200 ms");
    // The SLO line sits at 200 ms: the 8 req/s mark touches it.
    let (line_y, mark_y): (f64, f64) = {
        let v: Vec<f64> = b
            .driver
            .execute(
                "const svg = document.querySelector('#section-sweep svg.sweep-chart');
                 const line = svg.querySelector('.slo-line').getBoundingClientRect();
                 const mark = [...svg.querySelectorAll('circle.point')].find(c => c.querySelector('title').textContent.startsWith('8 req/s') && c.querySelector('title').textContent.includes('p99')).getBoundingClientRect();
                 return [line.top + line.height / 2, mark.top + mark.height / 2];",
                vec![],
            )
            .await
            .unwrap()
            .convert()
            .unwrap();
        (v[0], v[1])
    };
    assert!((line_y - mark_y).abs() < 2.0, "{line_y} vs {mark_y}");
    scroll_to_chart(&b).await;
    b.screenshot("sweep-1400").await;

    // On a phone: the page does not scroll sideways and chart text stays ≥ 11 px.
    b.driver.set_window_rect(0, 0, 390, 844).await.unwrap();
    b.goto(&format!(
        "/artifacts/{id}?slo_metric=ttft&slo_percentile=p99&slo_max=200"
    ))
    .await;
    b.wait_text("#section-sweep .lead-sm", "Highest throughput within")
        .await;
    for width in [390, 1400] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        let (overflow, smallest): (bool, f64) = {
            let v: Vec<serde_json::Value> = b
                .driver
                .execute(
                    "const doc = document.documentElement;
                     const sizes = [...document.querySelectorAll('#section-sweep svg.sweep-chart text')]
                       .map(t => t.getBoundingClientRect().height > 0 ? parseFloat(getComputedStyle(t).fontSize) * t.closest('svg').getBoundingClientRect().width / 640 : 99);
                     return [doc.scrollWidth > doc.clientWidth + 1, Math.min(...sizes)];",
                    vec![],
                )
                .await
                .unwrap()
                .convert()
                .unwrap();
            (v[0].as_bool().unwrap(), v[1].as_f64().unwrap())
        };
        assert!(!overflow, "the page scrolls sideways at {width} px");
        assert!(
            smallest >= 11.0,
            "chart text {smallest:.1} px at {width} px"
        );
    }
    b.driver.set_window_rect(0, 0, 390, 844).await.unwrap();
    scroll_to_chart(&b).await;
    b.screenshot("sweep-390").await;
    b.quit().await;
}

async fn scroll_to_chart(b: &browser::Browser) {
    b.driver
        .execute(
            "document.querySelector('#section-sweep figure').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
}
