//! The capture pages in a real browser at 1400 px and 390 px: the form, the admin's
//! allowlist, and a finished capture's artifact page, none scrolling sideways; and the
//! form starting a capture that the artifact page follows to `done`.

use crate::common;

use std::time::Duration;

use axum::routing::get;
use common::{browser, spawn_app, PASSWORD};

/// A tiny engine: vLLM gauges and a counter that grows at every scrape.
async fn engine() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let router = axum::Router::new().route(
        "/metrics",
        get(move || {
            let n = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                format!(
                    "# TYPE vllm:num_requests_running gauge\n\
                     vllm:num_requests_running{{model_name=\"m\"}} 4\n\
                     # TYPE vllm:generation_tokens counter\n\
                     vllm:generation_tokens_total{{model_name=\"m\"}} {}\n",
                    1000 * (n + 1)
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (addr, task)
}

async fn overflow(b: &browser::Browser) -> (i64, i64) {
    let v = b
        .driver
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap()
        .json()
        .clone();
    (v[0].as_i64().unwrap(), v[1].as_i64().unwrap())
}

#[tokio::test]
async fn capture_from_the_form_and_read_the_pages_at_both_widths() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app.open_investigation(&token, "Queue grows at noon").await;
    let (addr, server) = engine().await;
    let Some(b) = browser::start(
        &app,
        "capture_from_the_form_and_read_the_pages_at_both_widths",
    )
    .await
    else {
        return;
    };
    b.goto("/login").await;
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;

    // The admin allows the engine, then a capture starts from the investigation.
    b.goto("/admin/capture-hosts").await;
    b.fill("#host_port", &addr.to_string()).await;
    b.fill("#note", "vllm-0 metrics").await;
    b.click("form[action='/admin/capture-hosts'] button[type=submit]")
        .await;
    b.wait_text("#capture-hosts", &addr.to_string()).await;
    b.goto(&format!("/investigations/{inv}")).await;
    b.click("#capture-link").await;
    b.fill("#url", &format!("http://{addr}/metrics")).await;
    b.fill("#seconds", "2").await;
    b.fill("#interval_s", "1").await;
    b.click("form[action$='/captures'] button[type=submit]")
        .await;
    b.wait_text("#status", "capturing").await;
    // The page polls until the window ends and the analysis is in.
    b.wait_text("#status", "done").await;
    b.wait_text("#section-capture", "3 scrapes").await;
    let artifact = b.path().await;
    assert!(artifact.starts_with("/artifacts/"), "{artifact}");

    for (width, suffix) in [(1400, "wide"), (390, "narrow")] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        for (path, name) in [
            (
                format!("/investigations/{inv}/captures/new"),
                "capture-form",
            ),
            ("/admin/capture-hosts".to_string(), "capture-hosts"),
            (artifact.clone(), "capture-artifact"),
        ] {
            b.goto(&path).await;
            b.wait_text("main h1", "").await;
            let (scroll, inner) = overflow(&b).await;
            assert!(scroll <= inner, "{path} at {width} px: {scroll} > {inner}");
            b.screenshot(&format!("{name}-{suffix}")).await;
        }
    }
    server.abort();
    b.quit().await;
}
