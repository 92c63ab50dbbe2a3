//! Nsight Systems SQLite exports through the upload API: detected by the SQLite header,
//! analysed from a spooled file (removed afterwards), the numbers of the trace sections
//! plus NVTX ranges and GPUs; a corrupt or foreign SQLite file ends with SQLite's reason.
//!
//! The exports are built with the example SQL of the core crate, whose tables follow
//! NVIDIA's documented export schema (Nsight Systems User Guide, "SQLite Schema
//! Reference", 2021.5 through 2025.x).

use crate::common;

use std::io::Write;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::{artifact_count, artifact_json, editor_app, files_under, try_upload};
use perfjournal::core::analyze::nsys_sqlite::{Connection, EXAMPLE_EXPORT_SQL};
use serde_json::Value;

/// The example export as a file's bytes, after `extra` SQL (padding, changes).
fn export_with(extra: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.sqlite");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(EXAMPLE_EXPORT_SQL).unwrap();
    conn.execute_batch(extra).unwrap();
    drop(conn);
    std::fs::read(&path).unwrap()
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-6)
}

/// The numbers of the example export (see its docs), as a user reads them.
fn assert_example_numbers(a: &Value) {
    assert_eq!(a["kind"], "nsys_sqlite", "{a}");
    assert_eq!(a["status"], "done", "{a}");
    let an = &a["analysis"];
    let t = &an["temporal"][0];
    assert!(close(&t["span_us"], 400.0), "{t}");
    assert!(close(&t["busy_us"], 205.0), "{t}");
    assert!(close(&t["compute_us"], 90.0), "{t}");
    assert_eq!(an["kernels"][0]["category"], "COMM");
    assert!(close(&an["kernels"][0]["sum_us"], 100.0));
    assert_eq!(an["launch"]["matched"], 4);
    assert!(close(&an["launch"]["launch_delay_us"]["max"], 90.0));
    assert!(close(&an["idle"][0]["host_wait_us"], 185.0));
    assert_eq!(an["nvtx"][0]["name"], "allreduce");
    assert!(close(&an["nvtx"][1]["gpu_busy_us"], 105.0));
    assert_eq!(an["memory"][0]["kind"], "Memcpy HtoD");
    assert!(close(&an["memory"][0]["gb_per_s"], 1000.0));
    assert_eq!(an["gpus"][0]["catalog"], "h100-sxm");
    assert_eq!(an["devices"][0]["num_sms"], 132);
}

async fn download(app: &common::TestApp, token: &str, id: i64) -> Vec<u8> {
    let req = Request::get(format!("/api/v1/artifacts/{id}/download"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.app.clone(), req)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

#[tokio::test]
async fn an_nsight_systems_export_is_analyzed_like_a_trace_with_nvtx_ranges_and_gpus() {
    let (mut app, token) = editor_app().await;
    let body = export_with("");
    assert!(body.starts_with(b"SQLite format 3\0"));
    let r = try_upload(&mut app, &token, "report.sqlite", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let a = artifact_json(&mut app, &token, id).await;
    assert_example_numbers(&a);
    assert_eq!(
        download(&app, &token, id).await,
        body,
        "the download is the upload"
    );
    let spool = app.blob_dir.join("spool");
    assert!(
        files_under(&spool).is_empty(),
        "the spooled copy is removed: {:?}",
        files_under(&spool)
    );

    // Analysed again from the stored (compressed) blob: the same numbers.
    assert!(
        perfjournal::artifacts::requeue(&app.pool, id, &Default::default())
            .await
            .unwrap()
    );
    app.drain_queue().await;
    let again = artifact_json(&mut app, &token, id).await;
    assert_eq!(again["analysis"], a["analysis"]);

    // The page: the trace's sections, then the NVTX ranges and the GPUs.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    for section in [
        "section-temporal",
        "section-kernels",
        "section-idle",
        "section-launch",
        "section-nvtx",
        "section-memory",
        "section-gpus",
    ] {
        assert!(page.body.contains(section), "{section} on the page");
    }
    assert!(page.body.contains("allreduce"));
    assert!(page.body.contains("NVIDIA H100 80GB HBM3"));
    assert!(page.body.contains("h100-sxm"));
}

#[tokio::test]
async fn a_larger_export_is_read_while_it_arrives_and_gzip_is_undone() {
    let (mut app, token) = editor_app().await;
    // Past the 64 KiB head, so the analysis starts while the body arrives.
    let body = export_with(
        "CREATE TABLE ANALYSIS_DETAILS (padding BLOB); \
         INSERT INTO ANALYSIS_DETAILS VALUES (randomblob(300000));",
    );
    assert!(body.len() > 300_000);
    let r = try_upload(&mut app, &token, "big.sqlite", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let a = artifact_json(&mut app, &token, r.json()["id"].as_i64().unwrap()).await;
    assert_example_numbers(&a);

    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&export_with("")).unwrap();
    let gz = enc.finish().unwrap();
    let r = try_upload(&mut app, &token, "report.sqlite.gz", gz).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let a = artifact_json(&mut app, &token, r.json()["id"].as_i64().unwrap()).await;
    assert_example_numbers(&a);
    assert!(files_under(&app.blob_dir.join("spool")).is_empty());
}

#[tokio::test]
async fn a_small_corrupt_or_foreign_sqlite_file_is_refused_with_the_reason() {
    let (mut app, token) = editor_app().await;
    // The header, then garbage.
    let mut corrupt = b"SQLite format 3\0".to_vec();
    corrupt.extend((0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let r = try_upload(&mut app, &token, "corrupt.sqlite", corrupt).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let message = r.json()["error"]["fields"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.starts_with("corrupt.sqlite: ")
            && (message.contains("not an SQLite database") || message.contains("corrupt")),
        "{message}"
    );

    // A sound SQLite file that is not an Nsight Systems export.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("optuna.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE trials (id INTEGER PRIMARY KEY, value REAL); INSERT INTO trials VALUES (1, 0.5);")
        .unwrap();
    drop(conn);
    let r = try_upload(&mut app, &token, "optuna.db", std::fs::read(&path).unwrap()).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(
        r.json()["error"]["fields"][0]["message"],
        "optuna.db: not an Nsight Systems export: no CUPTI_ACTIVITY_KIND_KERNEL table"
    );
    assert_eq!(artifact_count(&app).await, 0, "nothing is kept");
    assert!(files_under(&app.blob_dir.join("spool")).is_empty());
}

#[tokio::test]
async fn a_large_export_with_a_corrupt_kernel_table_ends_failed_with_the_reason() {
    let (mut app, token) = editor_app().await;
    // Larger than what is analyzed before the upload answers (32 MiB), so the upload is
    // stored and the analysis ends on the artifact.
    let mut body = export_with(
        "CREATE TABLE ANALYSIS_DETAILS (padding BLOB); \
         INSERT INTO ANALYSIS_DETAILS VALUES (zeroblob(34 * 1024 * 1024));",
    );
    // Overwrite the kernel table's root page with garbage.
    let page_size = u16::from_be_bytes([body[16], body[17]]) as usize;
    let root = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        std::fs::write(&path, &body).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as usize
    };
    let at = (root - 1) * page_size;
    for (i, b) in body[at..at + page_size].iter_mut().enumerate() {
        *b = 0xA5 ^ (i as u8);
    }
    let r = try_upload(&mut app, &token, "big-corrupt.sqlite", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let mut a = artifact_json(&mut app, &token, id).await;
    for _ in 0..600 {
        if a["status"] != "analyzing" && a["status"] != "queued" {
            break;
        }
        app.drain_queue().await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        a = artifact_json(&mut app, &token, id).await;
    }
    assert_eq!(a["status"], "failed", "{a}");
    let error = a["error"].as_str().unwrap();
    assert!(
        error.contains("corrupt") && error.contains("malformed"),
        "the reason is SQLite's: {error}"
    );
    assert_eq!(
        download(&app, &token, id).await,
        body,
        "the file is kept as sent"
    );
    assert!(files_under(&app.blob_dir.join("spool")).is_empty());
}

/// The bubble test's trace (kernels 0–10, 12–30 and 35–50 ms, launched at −0.1, 11.5 and
/// 29 ms) as an Nsight Systems export: its times 1 ms after a session start 1 ms before
/// the trace's zero, so the clocks agree.
fn bubble_export() -> Vec<u8> {
    let base_ns = (common::bubble_data::BASE_S * 1e9) as i64 - 1_000_000;
    let at = |ms: f64| (ms * 1e6) as i64 + 1_000_000;
    let mut sql = String::from(
        "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME;
         DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;
         DELETE FROM TARGET_INFO_SESSION_START_TIME;",
    );
    sql.push_str(&format!(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES ({base_ns}, '', '');"
    ));
    for (corr, launch, start, dur) in [
        (1, -0.1, 0.0, 10.0),
        (2, 11.5, 12.0, 18.0),
        (3, 29.0, 35.0, 15.0),
    ] {
        sql.push_str(&format!(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid,
               correlationId, nameId, returnValue) VALUES ({}, {}, 1, 1677721701, {corr}, 5, 0);
             INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,
               correlationId, globalPid, demangledName, shortName, registersPerThread, gridX,
               gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
               localMemoryPerThread, localMemoryTotal, gridId)
             VALUES ({}, {}, 0, 1, 7, {corr}, 1677721600, 1, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, {corr});",
            at(launch),
            at(launch) + 5_000,
            at(start),
            at(start + dur),
        ));
    }
    export_with(&sql)
}

#[tokio::test]
async fn an_export_is_a_trace_for_bubble_attribution_with_the_same_answer() {
    let (mut app, token) = editor_app().await;
    let trace =
        common::uploads::upload_analyzed(&mut app, &token, "bubble.sqlite", bubble_export()).await;
    let log = common::uploads::upload_analyzed(
        &mut app,
        &token,
        "requests.jsonl",
        common::bubble_data::log_with_a_bubble(),
    )
    .await;
    let r = app
        .api(
            "POST",
            "/api/v1/bubbles",
            &token,
            Some(serde_json::json!({"trace": trace, "queue": log})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    let classes: Vec<&str> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["class"].as_str().unwrap())
        .collect();
    // As for the Kineto trace of the bubble tests.
    assert_eq!(classes, ["runtime_bubble", "insufficient_load"]);
    let first = &doc["intervals"][0];
    let start = first["start_us"].as_f64().unwrap();
    let want = common::bubble_data::BASE_S * 1e6 + 10_000.0;
    assert!((start - want).abs() < 1.0, "{start} vs {want}");
    assert_eq!(first["preceded_by"], "host_wait");
    assert_eq!(doc["intervals"][1]["preceded_by"], "launch_gap");
    assert!((first["recoverable_us"].as_f64().unwrap() - 1500.0).abs() < 1.0);
    assert_eq!(doc["totals_us"]["runtime_bubble"], 2000.0);
    assert_eq!(doc["totals_us"]["insufficient_load"], 5000.0);
}
