//! An Nsight Systems SQLite export's page in a real browser at 1400 px and 390 px: the
//! trace sections, the NVTX ranges, memory work and the GPUs, without the page scrolling
//! sideways (wide tables scroll inside their frame).

use crate::common;

use common::uploads::try_upload;
use common::{browser, spawn_app};
use perfjournal::core::analyze::nsys_sqlite::{Connection, EXAMPLE_EXPORT_SQL};

async fn script(b: &browser::Browser, js: &str) -> serde_json::Value {
    b.driver.execute(js, vec![]).await.unwrap().json().clone()
}

#[tokio::test]
async fn an_nsight_export_page_shows_nvtx_ranges_and_gpus_at_both_widths() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(EXAMPLE_EXPORT_SQL).unwrap();
    drop(conn);
    let r = try_upload(
        &mut app,
        &token,
        "report.sqlite",
        std::fs::read(&path).unwrap(),
    )
    .await;
    assert_eq!(r.status, axum::http::StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();

    let test = "an_nsight_export_page_shows_nvtx_ranges_and_gpus_at_both_widths";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    for (width, name) in [
        (1400u32, "artifact-nsys-sqlite-1400"),
        (390, "artifact-nsys-sqlite-390"),
    ] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        b.goto(&format!("/artifacts/{id}")).await;
        b.wait_text("#kind", "nsys_sqlite").await;
        b.wait_text("#status", "done").await;
        b.wait_text("#section-temporal", "GPU busy").await;
        b.wait_text("#section-kernels", "ncclKernel_AllReduce")
            .await;
        let nvtx = b.wait_text("#section-nvtx", "allreduce").await;
        assert!(nvtx.contains("decode"), "{nvtx}");
        b.wait_text("#section-memory", "Memcpy HtoD").await;
        let gpus = b.wait_text("#section-gpus", "NVIDIA H100 80GB HBM3").await;
        assert!(gpus.contains("h100-sxm"), "{gpus}");
        let v = script(
            &b,
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
        )
        .await;
        let (scroll, client) = (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
        assert!(
            scroll <= client + 1.0,
            "{width} px: scroll {scroll} > {client}"
        );
        // The new sections in view for the picture.
        script(
            &b,
            "document.querySelector('#section-nvtx').scrollIntoView(); return 0;",
        )
        .await;
        b.screenshot(name).await;
    }
    assert!(b.console_errors().await.is_empty());
    b.quit().await;
}
