//! Real files of the kinds added with the fixtures of `PERFJOURNAL_REAL_FIXTURES`
//! (Nsight Systems SQLite exports, GenAI-Perf and AIPerf exports, a GuideLLM run, a
//! vLLM 0.25 summary-only bench file), uploaded as a user uploads them, and their
//! figures against an independent computation of the same files:
//! `tests/app/real_fixtures.py` (Python's sqlite3 on the exports, json on the rest).
//! The PyTorch traces of that folder are checked against HTA 0.5.0 in the core crate
//! (`pytorch_trace::tests`). A skip is recorded when the fixtures or the Python are
//! missing.

use crate::common;

use axum::http::StatusCode;
use common::uploads::{artifact_json, editor_app, try_upload};
use serde_json::Value;

fn close(got: &Value, want: &Value, what: &str) {
    let (Some(g), Some(w)) = (got.as_f64(), want.as_f64()) else {
        panic!("{what}: got {got}, want {want}");
    };
    assert!(
        (g - w).abs() <= 1e-9 * w.abs().max(1.0),
        "{what}: ours {g}, the file's {w}"
    );
}

/// The oracle's figures for every fixture, or `None` after recording the skip.
fn oracle(test: &str) -> Option<(std::path::PathBuf, Value)> {
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(std::path::PathBuf::from)
    else {
        common::skip(test, "PERFJOURNAL_REAL_FIXTURES unset");
        return None;
    };
    let python = match std::env::var("PERFJOURNAL_PYTHON") {
        Ok(p) if std::path::Path::new(&p).exists() => p,
        _ => {
            common::skip(test, "PERFJOURNAL_PYTHON unset (.ci/run makes one)");
            return None;
        }
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/app/real_fixtures.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&root)
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((root, serde_json::from_slice(&out.stdout).unwrap()))
}

/// Uploads a fixture; its analysis (or the refusal's reply).
async fn upload_fixture(
    app: &mut common::TestApp,
    token: &str,
    root: &std::path::Path,
    rel: &str,
) -> common::Reply {
    let name = rel.rsplit('/').next().unwrap();
    try_upload(app, token, name, std::fs::read(root.join(rel)).unwrap()).await
}

#[tokio::test]
async fn nsight_systems_exports_match_sqlite3() {
    let Some((root, want)) = oracle("nsight_systems_exports_match_sqlite3") else {
        return;
    };
    let (mut app, token) = editor_app().await;
    for (rel, w) in want.as_object().unwrap() {
        if !rel.starts_with("nsys_sqlite/") {
            continue;
        }
        let r = upload_fixture(&mut app, &token, &root, rel).await;
        if w["kernel_table"] == false {
            // An export of a run traced without CUDA: refused, saying it holds no GPU work.
            assert_eq!(w["nsight_tables"], true, "{rel}");
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{rel}: {}",
                r.body
            );
            let message = r.json()["error"]["fields"][0]["message"].to_string();
            assert!(message.contains("holds no GPU work"), "{rel}: {message}");
            continue;
        }
        assert_eq!(r.status, StatusCode::CREATED, "{rel}: {}", r.body);
        let id = r.json()["id"].as_i64().unwrap();
        let a = artifact_json(&mut app, &token, id).await["analysis"].clone();
        assert_eq!(a["events"]["kernels"], w["kernels"], "{rel}");
        assert_eq!(a["events"]["memcpy"], w["memcpy"], "{rel}");
        assert_eq!(a["events"]["memset"], w["memset"], "{rel}");
        assert_eq!(a["events"]["runtime"], w["calls"], "{rel}");
        let t = &a["temporal"][0];
        close(&t["busy_us"], &w["busy_us"], &format!("{rel} busy"));
        close(&t["span_us"], &w["span_us"], &format!("{rel} span"));
        for (name, us) in w["kernel_us"].as_object().unwrap() {
            let ours: f64 = a["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|k| k["name"].as_str().unwrap().starts_with(name.as_str()))
                .map(|k| k["sum_us"].as_f64().unwrap())
                .sum();
            close(&ours.into(), us, &format!("{rel} kernel {name}"));
        }
        println!("{rel}: {} µs busy of {} µs", t["busy_us"], t["span_us"]);
    }
}

#[tokio::test]
async fn benchmark_exports_match_the_files_figures() {
    let Some((root, want)) = oracle("benchmark_exports_match_the_files_figures") else {
        return;
    };
    let (mut app, token) = editor_app().await;
    let mut seen = 0;
    for (rel, w) in want.as_object().unwrap() {
        if rel.starts_with("nsys_sqlite/") {
            continue;
        }
        seen += 1;
        let r = upload_fixture(&mut app, &token, &root, rel).await;
        assert_eq!(r.status, StatusCode::CREATED, "{rel}: {}", r.body);
        assert_eq!(r.json()["kind"], "vllm_bench", "{rel}");
        let id = r.json()["id"].as_i64().unwrap();
        let a = artifact_json(&mut app, &token, id).await["analysis"].clone();
        assert_eq!(a["source"], w["source"], "{rel}");
        assert_eq!(a["completed"], w["completed"], "{rel}");
        if !w["failed"].is_null() {
            assert_eq!(a["failed"], w["failed"], "{rel}");
        }
        for series in ["ttft_ms", "itl_ms", "tpot_ms", "e2el_ms"] {
            let Some(stats) = w[series].as_object() else {
                continue;
            };
            for (stat, v) in stats {
                close(&a[series][stat], v, &format!("{rel} {series}.{stat}"));
            }
        }
        close(
            &a["request_throughput"],
            &w["request_throughput"],
            &format!("{rel} request_throughput"),
        );
        if let Some(mean) = w["ttft_mean_from_requests"].as_f64() {
            // GuideLLM's own mean agrees with its per-request records.
            let ours = a["ttft_ms"]["mean"].as_f64().unwrap();
            assert!(
                (ours - mean).abs() <= 1e-6 * mean,
                "{rel}: {ours} vs {mean}"
            );
        }
        // The page names the tool that wrote the file.
        let page = app.get(&format!("/artifacts/{id}")).await;
        let label = match w["source"].as_str().unwrap() {
            "aiperf" => "AIPerf:",
            "genai_perf" => "GenAI-Perf:",
            "guidellm" => "GuideLLM:",
            _ => "vLLM bench serve:",
        };
        assert!(page.body.contains(label), "{rel}: no {label} on the page");
    }
    assert_eq!(seen, 4, "GenAI-Perf, AIPerf, GuideLLM and the vLLM summary");
}
