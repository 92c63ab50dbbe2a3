//! Artifacts end to end: upload through API, page and CLI, detection, background
//! analysis, results, download, and every bad-input case the issue names.

use crate::common;

use std::io::Write;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::{artifact_count, files_under};
use common::{spawn_app, TestApp};
use serde_json::Value;

async fn editor_app() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

async fn upload(app: &mut TestApp, token: &str, query: &str, body: Vec<u8>) -> common::Reply {
    let req = Request::post(format!("/api/v1/artifacts?{query}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .unwrap();
    app.send(req).await
}

async fn fetch(app: &mut TestApp, token: &str, id: i64) -> Value {
    let r = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.json()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// Per-request telemetry where queue wait dominates TTFT for tenant "batch".
fn request_log(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let tenant = if i % 2 == 0 { "batch" } else { "chat" };
        let queue = if tenant == "batch" {
            2000.0 + i as f64
        } else {
            20.0
        };
        let prefill = 150.0 + (i % 7) as f64;
        let tok = 1.5;
        let first = tok + queue + prefill + 0.5;
        let decode = 4000.0;
        out.push_str(&format!(
            "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"tokenize_ms\":{tok},\"queue_wait_ms\":{queue},\"prefill_ms\":{prefill},\"first_token_ms\":{first},\"decode_ms\":{decode},\"detokenize_ms\":2,\"total_ms\":{},\"prompt_tokens\":1800,\"output_tokens\":250,\"model_version\":\"m@{}\",\"tenant\":\"{tenant}\",\"region\":\"eu\"}}\n",
            1_764_400_000.0 + i as f64,
            first + decode + 2.0,
            i % 2
        ));
    }
    out.into_bytes()
}

fn vllm_bench() -> Vec<u8> {
    serde_json::json!({
        "date": "20251129-101010", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 4, "request_rate": "inf", "max_concurrency": 4, "duration": 2.0,
        "completed": 4, "failed": 0, "total_input_tokens": 400, "total_output_tokens": 40,
        "request_throughput": 2.0, "output_throughput": 20.0,
        "input_lens": [100, 100, 100, 100], "output_lens": [10, 10, 10, 10],
        "ttfts": [0.1, 0.2, 0.3, 0.4],
        "itls": [[0.01, 0.01], [0.02, 0.02], [0.03], [0.04]],
        "generated_texts": ["a", "b", "c", "d"], "errors": ["", "", "", ""]
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn request_log_uploads_analyzes_and_loads_its_rows() {
    let (mut app, token) = editor_app().await;
    let r = upload(&mut app, &token, "name=requests.jsonl", request_log(200)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let created = r.json();
    assert_eq!(created["kind"], "request_log");
    // Small files are analyzed before the answer.
    assert_eq!(created["status"], "done");
    let id = created["id"].as_i64().unwrap();
    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["analysis"]["rows"], 200);
    assert_eq!(a["analysis"]["dominant_phase"], "queue_wait_ms");
    for p in ["p50", "p90", "p95", "p99"] {
        assert!(
            a["analysis"]["phases"]["queue_wait_ms"][p].is_number(),
            "{p}"
        );
    }
    assert_eq!(common::uploads::stored_rows(&app.pool, id).await, 200);
    let file = app
        .api(
            "GET",
            &format!("/api/v1/artifacts/{id}/download"),
            &token,
            None,
        )
        .await;
    assert!(
        file.body.contains("\"region\""),
        "unknown fields are kept in the file"
    );

    // The decomposition page, filtered and grouped.
    let page = app
        .get(&format!("/artifacts/{id}/requests?tenant=batch"))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    let head = page.select("#decomposition thead th");
    assert!(head[0].contains("100 requests"), "{head:?}");
    let grouped = app
        .get(&format!("/artifacts/{id}/requests?by=tenant"))
        .await;
    let rows = grouped.select("#decomposition-grouped tbody tr td:first-child");
    assert!(
        rows.iter().any(|r| r.starts_with("batch (100 requests)")),
        "{rows:?}"
    );
    let bad = app
        .get(&format!("/artifacts/{id}/requests?from=yesterday"))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.select(".field-error")[0].contains("from"));

    // The artifact page shows the phase table and a picture.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.select("#status"), vec!["done"]);
    assert!(!page.select("#section-phases table tbody tr").is_empty());
    assert_eq!(page.select("#section-phases svg.chart").len(), 1);

    // Analysed again, its rows are replaced, not added to; the page still reads them.
    perfjournal::artifacts::requeue(&app.pool, id, &Default::default())
        .await
        .unwrap();
    app.drain_queue().await;
    assert_eq!(fetch(&mut app, &token, id).await["status"], "done");
    let chunks = common::uploads::stored_entries(&app.pool, "request_column_chunks", id).await;
    assert_eq!(chunks, 1, "one chunk of 200 rows, not two");
    assert_eq!(common::uploads::stored_rows(&app.pool, id).await, 200);
    let page = app
        .get(&format!("/artifacts/{id}/requests?tenant=batch"))
        .await;
    assert!(page.select("#decomposition thead th")[0].contains("100 requests"));

    // Its rows go with the artifact.
    sqlx::query("DELETE FROM artifacts WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(common::uploads::stored_rows(&app.pool, id).await, 0);
    let entries = common::uploads::stored_entries(&app.pool, "request_columns", id).await;
    assert_eq!(entries, 0);
}

/// A log with gaps: phases, tenants, model versions and arrival times missing on some
/// lines, ties, and three tenants of different sizes.
fn ragged_request_log(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let mut fields = vec![format!("\"request_id\": \"r{i}\"")];
        if i % 11 != 0 {
            fields.push(format!(
                "\"arrival_ts\": {}",
                1_764_400_000.0 + i as f64 * 0.5
            ));
        }
        match i % 5 {
            0 | 1 => fields.push("\"tenant\": \"chat\"".into()),
            2 => fields.push("\"tenant\": \"batch\"".into()),
            3 => fields.push("\"tenant\": \"eval\"".into()),
            _ => {}
        }
        if i % 7 != 0 {
            fields.push(format!("\"model_version\": \"m{}\"", i % 3));
        }
        let v = ((i * 7919) % 503) as f64 / 4.0;
        for (k, x) in [
            ("tokenize_ms", Some(v / 50.0)),
            ("queue_wait_ms", (i % 4 != 0).then_some(v * 3.0)),
            ("prefill_ms", Some(40.0 + (i % 13) as f64)),
            ("first_token_ms", (i % 9 != 0).then_some(v * 3.0 + 50.0)),
            ("decode_ms", Some(1000.0 - v)),
            ("detokenize_ms", (i % 2 == 0).then_some(0.5)),
            ("total_ms", Some(v * 3.0 + 1100.0)),
        ] {
            if let Some(x) = x {
                fields.push(format!("\"{k}\": {x}"));
            }
        }
        out.push_str(&format!("{{{}}}\n", fields.join(", ")));
    }
    out.into_bytes()
}

/// The decomposition by PostgreSQL's ordered-set aggregates (`percentile_cont`) over the
/// same lines, read from their JSON text into a table of one connection: how the page
/// computed before the rows had a single store, and an independent check of it now.
async fn reference_numbers(
    conn: &mut sqlx::PgConnection,
    f: &perfjournal::artifacts::decomposition::RequestFilter,
    group: Option<&str>,
) -> Vec<perfjournal::core::analyze::request_columns::GroupNumbers> {
    use perfjournal::core::analyze::request_columns::{GroupNumbers, PHASES, TTFT_PARTS};
    use sqlx::Row;
    let mut cols: Vec<String> = PHASES
        .iter()
        .map(|p| {
            format!(
                "percentile_cont(ARRAY[0.5, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY {p}) AS {p}_q, \
                 avg({p}) AS {p}_mean"
            )
        })
        .collect();
    cols.push("sum(first_token_ms) AS ttft_total".into());
    for i in TTFT_PARTS {
        let p = PHASES[i];
        cols.push(format!(
            "sum({p}) FILTER (WHERE first_token_ms IS NOT NULL) AS {p}_in_ttft"
        ));
    }
    let select = cols.join(", ");
    let filter = "($1::text IS NULL OR tenant = $1) AND ($2::text IS NULL OR model_version = $2) \
         AND ($3::float8 IS NULL OR arrival_ts >= $3) AND ($4::float8 IS NULL OR arrival_ts < $4)";
    let sql = match group {
        Some(col) => format!(
            "SELECT {col} AS grp, count(*) AS n, {select} FROM reference_rows WHERE {filter} \
             GROUP BY {col} ORDER BY count(*) DESC, {col} NULLS FIRST LIMIT 50"
        ),
        None => format!(
            "SELECT NULL::text AS grp, count(*) AS n, {select} FROM reference_rows WHERE {filter}"
        ),
    };
    let rows = sqlx::query(&sql)
        .bind(&f.tenant)
        .bind(&f.model_version)
        .bind(f.from)
        .bind(f.to)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    rows.iter()
        .map(|row| {
            let mut g = GroupNumbers {
                group: row.get("grp"),
                rows: row.get::<i64, _>("n") as u64,
                ttft_total: row.get("ttft_total"),
                ..GroupNumbers::default()
            };
            for (p, out) in PHASES.iter().zip(g.phases.iter_mut()) {
                let q: Option<Vec<f64>> = row.get(format!("{p}_q").as_str());
                out.quantiles = q.and_then(|q| <[f64; 4]>::try_from(q).ok());
                out.mean = row.get(format!("{p}_mean").as_str());
            }
            for (k, i) in TTFT_PARTS.iter().enumerate() {
                g.in_ttft[k] = row.get(format!("{}_in_ttft", PHASES[*i]).as_str());
            }
            g
        })
        .collect()
}

#[tokio::test]
async fn the_stored_rows_give_the_numbers_of_sql_aggregates_over_the_same_lines() {
    use perfjournal::artifacts::decomposition::{self, RequestFilter};
    let (mut app, token) = editor_app().await;
    let file = ragged_request_log(3_000);
    let r = upload(&mut app, &token, "name=ragged.jsonl", file.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    let stored: i64 = sqlx::query_scalar("SELECT rows FROM request_columns WHERE artifact_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 3_000, "the load stores every row");
    // The same lines, parsed by PostgreSQL, into a table of this connection.
    let lines: Vec<String> = String::from_utf8(file)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut conn = app.pool.acquire().await.unwrap();
    let phases = perfjournal::core::analyze::request_columns::PHASES
        .iter()
        .map(|p| format!("(j->>'{p}')::float8 AS {p}"))
        .collect::<Vec<_>>()
        .join(", ");
    sqlx::query(&format!(
        "CREATE TEMP TABLE reference_rows AS SELECT j->>'tenant' AS tenant, \
         j->>'model_version' AS model_version, (j->>'arrival_ts')::float8 AS arrival_ts, {phases} \
         FROM (SELECT line::jsonb AS j FROM unnest($1::text[]) AS line) AS l"
    ))
    .bind(&lines)
    .execute(&mut *conn)
    .await
    .unwrap();
    let from = "1764400100";
    let to = "1764401000.25";
    for (tenant, model, from, to, by) in [
        ("", "", "", "", ""),
        ("chat", "", "", "", ""),
        ("", "m1", from, to, ""),
        ("", "", from, "", "tenant"),
        ("", "", "", to, "model_version"),
        ("batch", "m2", "", "", "tenant"),
        ("nobody", "", "", "", ""),
        ("nobody", "", "", "", "tenant"),
    ] {
        let f = RequestFilter::parse(tenant, model, from, to, by).unwrap();
        let (all, grouped) = decomposition::numbers(&app.pool, id, &f).await.unwrap();
        let sql_all = reference_numbers(&mut conn, &f, None).await;
        let sql_grouped = match f.by {
            Some(col) => Some(reference_numbers(&mut conn, &f, Some(col)).await),
            None => None,
        };
        let case = format!("{tenant}/{model}/{from}/{to}/{by}");
        same_numbers(&all, &sql_all, &case);
        assert_eq!(grouped.is_some(), sql_grouped.is_some());
        if let (Some(g), Some(s)) = (grouped, sql_grouped) {
            same_numbers(&g, &s, &case);
        }
    }
    // The filter menus list what the rows hold.
    let (tenants, models) = decomposition::facets(&app.pool, id).await.unwrap();
    assert_eq!(tenants, ["batch", "chat", "eval"]);
    assert_eq!(models, ["m0", "m1", "m2"]);
}

fn same_numbers(
    a: &[perfjournal::core::analyze::request_columns::GroupNumbers],
    b: &[perfjournal::core::analyze::request_columns::GroupNumbers],
    case: &str,
) {
    let close = |x: Option<f64>, y: Option<f64>, what: &str| match (x, y) {
        (Some(x), Some(y)) => assert!(
            (x - y).abs() <= 1e-9 * y.abs().max(1.0),
            "{case}: {what} {x} vs {y}"
        ),
        _ => assert_eq!(x, y, "{case}: {what}"),
    };
    assert_eq!(a.len(), b.len(), "{case}: groups");
    for (x, y) in a.iter().zip(b) {
        assert_eq!((&x.group, x.rows), (&y.group, y.rows), "{case}");
        for (p, (px, py)) in x.phases.iter().zip(&y.phases).enumerate() {
            // Order statistics are values of the data and the interpolation is the same
            // formula: equal to the last bit.
            assert_eq!(px.quantiles, py.quantiles, "{case}: phase {p}");
            close(px.mean, py.mean, "mean");
        }
        close(x.ttft_total, y.ttft_total, "ttft total");
        for k in 0..3 {
            close(x.in_ttft[k], y.in_ttft[k], "part of ttft");
        }
    }
}

#[tokio::test]
async fn big_files_are_analyzed_in_the_background_with_progress() {
    let (mut app, token) = editor_app().await;
    // Over the inline limit: the upload answers while its rows are still being
    // committed (they were stored as the body arrived), and the page polls until done.
    let mut body = request_log(1);
    let line = body.clone();
    while (body.len() as u64) <= perfjournal::artifacts::INLINE_ANALYSIS_BYTES {
        body.extend_from_slice(&line);
    }
    let r = upload(&mut app, &token, "name=big.jsonl", body).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["status"], "analyzing");
    let id = r.json()["id"].as_i64().unwrap();
    let page = app.get(&format!("/artifacts/{id}")).await;
    let sel = scraper::Selector::parse("#artifact-status[hx-trigger='every 1s']").unwrap();
    let mut a = fetch(&mut app, &token, id).await;
    if a["status"] == "analyzing" {
        assert_eq!(
            page.html().select(&sel).count(),
            1,
            "the page polls while analyzing"
        );
    }
    for _ in 0..600 {
        if a["status"] != "analyzing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        a = fetch(&mut app, &token, id).await;
    }
    assert_eq!(app.drain_queue().await, 0, "nothing was left for a worker");
    assert_eq!(a["status"], "done", "{a}");
    assert_eq!(a["progress_bytes"], a["size_bytes"]);
    let status = app.get(&format!("/artifacts/{id}/status")).await;
    assert_eq!(
        status.html().select(&sel).count(),
        0,
        "polling stops when done"
    );
}

#[tokio::test]
async fn each_kind_is_detected_from_content_and_analyzed() {
    let (mut app, token) = editor_app().await;
    let prom = "# HELP vllm:num_requests_running Running\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 7\n# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 5\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} 10\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 10\nvllm:time_to_first_token_seconds_count 10\nvllm:time_to_first_token_seconds_sum 3\n";
    let nsys = "Processing [report.sqlite] with [cuda_gpu_kern_sum.py]...\n\nTime (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n60.0,600,3,200,200,100,300,50,gemm_kernel\n40.0,400,4,100,100,90,110,5,\"void flash<float>(int)\"\n";
    let ncu = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"85.5\"\n\"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"DRAM Throughput\",\"%\",\"20.1\"\n\"0\",\"1\",\"python\",\"h\",\"gemm\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"12,904\"\n";
    let trace = serde_json::json!({
        "schemaVersion": 1,
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0, "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.0, "dur": 50.0, "args": {"correlation": 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 70.0, "dur": 5.0, "args": {"correlation": 2}},
            {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 100.0, "dur": 20.0, "args": {"correlation": 2}}
        ]
    })
    .to_string();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("bench.json", vllm_bench(), "vllm_bench"),
        ("metrics.txt", prom.as_bytes().to_vec(), "prometheus"),
        ("kern.csv", nsys.as_bytes().to_vec(), "nsys_kern_sum"),
        ("ncu.csv", ncu.as_bytes().to_vec(), "ncu_csv"),
        // The extension says nothing; gzip is found by its magic bytes.
        ("trace.bin", gzip(trace.as_bytes()), "pytorch_trace"),
    ];
    for (name, body, kind) in cases {
        let r = upload(&mut app, &token, &format!("name={name}"), body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
        assert_eq!(r.json()["kind"], kind, "{name}");
        let a = fetch(&mut app, &token, r.json()["id"].as_i64().unwrap()).await;
        assert_eq!(a["status"], "done", "{name}: {a}");
        let an = &a["analysis"];
        match kind {
            "vllm_bench" => {
                assert_eq!(an["completed"], 4);
                assert_eq!(an["failed"], 0);
                // Seconds in the file, milliseconds out.
                assert!((an["ttft_ms"]["p50"].as_f64().unwrap() - 250.0).abs() < 1e-6);
                for k in [
                    "tpot_ms",
                    "itl_ms",
                    "e2el_ms",
                    "request_throughput",
                    "output_throughput",
                    "flags",
                ] {
                    assert!(!an[k].is_null(), "{k}");
                }
            }
            "prometheus" => assert_eq!(an["gauges"]["running"], 7.0),
            "nsys_kern_sum" => assert_eq!(an["kernels"][0]["name"], "gemm_kernel"),
            "ncu_csv" => {
                let k = &an["kernels"][0];
                assert_eq!(k["sm_pct"], 85.5);
                assert_eq!(k["duration_us"], 12904.0);
                assert_eq!(k["regime"], "compute-bound");
            }
            "pytorch_trace" => {
                let t = &an["temporal"][0];
                assert_eq!(t["span_us"], 110.0);
                assert_eq!(t["idle_us"], 40.0);
                assert_eq!(t["compute_us"], 50.0);
                assert_eq!(t["non_compute_us"], 20.0);
                for k in ["kernels", "idle", "gpu_busy_ratio"] {
                    assert!(!an[k].is_null(), "{k}");
                }
            }
            _ => unreachable!(),
        }
    }
}

#[tokio::test]
async fn a_trace_counts_stream_synchronisation_in_its_span_and_explains_negative_delays() {
    let (mut app, token) = editor_app().await;
    let trace = serde_json::json!({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.0, "dur": 90.0, "args": {"device": 0, "stream": 7, "correlation": 1}},
        // This launch call returns at 160, after its kernel started at 150.
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110.0, "dur": 50.0, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 150.0, "dur": 50.0, "args": {"device": 0, "stream": 7, "correlation": 2}},
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 200.0, "dur": 100.0, "args": {"device": 0, "stream": 7, "correlation": 3}}
    ]})
    .to_string();
    let r = upload(&mut app, &token, "name=sync.json", trace.into_bytes()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let a = fetch(&mut app, &token, r.json()["id"].as_i64().unwrap()).await;
    let t = &a["analysis"]["temporal"][0];
    // HTA's span: first kernel start (10) to the end of the sync (300).
    assert_eq!(t["span_us"], 290.0, "{t}");
    assert_eq!(t["sync_us"], 100.0, "{t}");
    assert_eq!(a["analysis"]["launch"]["negative_delays"], 1);
    let page = app.get(&format!("/artifacts/{}", a["id"])).await;
    assert!(
        page.body.contains("of which sync"),
        "the idle column for synchronisation"
    );
    assert!(page.body.contains("before their launch call returned"));
}

#[tokio::test]
async fn downloads_return_the_original_bytes_as_an_attachment_and_duplicates_share_a_blob() {
    let (mut app, token) = editor_app().await;
    let body = gzip(&request_log(10));
    let first = upload(&mut app, &token, "name=a.jsonl.gz", body.clone())
        .await
        .json();
    let second = upload(&mut app, &token, "name=b.jsonl.gz", body.clone())
        .await
        .json();
    assert_ne!(first["id"], second["id"]);
    let a = fetch(&mut app, &token, first["id"].as_i64().unwrap()).await;
    let b = fetch(&mut app, &token, second["id"].as_i64().unwrap()).await;
    assert_eq!(a["sha256"], b["sha256"]);
    let blobs = files_under(&app.blob_dir);
    assert_eq!(blobs.len(), 1, "one blob for identical content: {blobs:?}");

    let r = app
        .api(
            "GET",
            &format!("/api/v1/artifacts/{}/download", a["id"]),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers[header::CONTENT_DISPOSITION]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename=\"a.jsonl.gz\""));
    assert_eq!(r.headers[header::CONTENT_TYPE], "application/octet-stream");
    let req = Request::get(format!("/api/v1/artifacts/{}/download", a["id"]))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.app.clone(), req)
        .await
        .unwrap();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(bytes.as_ref(), body.as_slice());
}

#[tokio::test]
async fn malformed_content_is_refused_with_the_line_and_nothing_is_kept() {
    let (mut app, token) = editor_app().await;
    let mut body = request_log(3);
    body.extend_from_slice(b"{\"request_id\": \"r9\", \"queue_wait_ms\": NaN}\n");
    let r = upload(&mut app, &token, "name=bad.jsonl", body).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let msg = r.json()["error"]["fields"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("line 4"), "{msg}");
    assert_eq!(artifact_count(&app).await, 0);
    assert!(files_under(&app.blob_dir).is_empty(), "no orphan blob");
}

#[tokio::test]
async fn an_empty_upload_is_refused_and_nothing_is_kept() {
    let (mut app, token) = editor_app().await;
    let r = upload(&mut app, &token, "name=empty.jsonl", Vec::new()).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let field = &r.json()["error"]["fields"][0];
    assert_eq!(field["field"], "file");
    assert!(
        field["message"]
            .as_str()
            .unwrap()
            .contains("empty.jsonl is empty"),
        "{field}"
    );
    assert_eq!(artifact_count(&app).await, 0);
    assert!(
        files_under(&app.blob_dir).is_empty(),
        "no 0-byte blob left behind"
    );
}

#[tokio::test]
async fn a_timestamp_with_a_multibyte_offset_is_refused_not_a_crash() {
    let (mut app, token) = editor_app().await;
    let mut body = request_log(2);
    body.extend_from_slice(
        "{\"request_id\": \"r9\", \"arrival_ts\": \"2025-01-01T00:00:00+1é:0\", \"queue_wait_ms\": 1}\n"
            .as_bytes(),
    );
    let r = upload(&mut app, &token, "name=ts.jsonl", body).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let msg = r.json()["error"]["fields"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("line 3") && msg.contains("arrival_ts"),
        "{msg}"
    );
    assert_eq!(artifact_count(&app).await, 0);
}

#[tokio::test]
async fn oversized_uploads_get_413_and_store_nothing() {
    let config = perfjournal::config::Config {
        upload_limit: 1000,
        ..perfjournal::config::Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let r = upload(&mut app, &token, "name=big.jsonl", request_log(50)).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("upload limit"));
    // Without a declared length the stream is cut at the limit all the same.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..20).map(|_| Ok(vec![b'x'; 100])).collect();
    let req = Request::post("/api/v1/artifacts?name=streamed.txt")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    assert_eq!(app.send(req).await.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(artifact_count(&app).await, 0);
    assert!(files_under(&app.blob_dir).is_empty());
}

#[tokio::test]
async fn an_interrupted_upload_leaves_no_row_and_no_blob() {
    let (mut app, token) = editor_app().await;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![
        Ok(request_log(5)),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "client went away",
        )),
    ];
    let req = Request::post("/api/v1/artifacts?name=cut.jsonl")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(artifact_count(&app).await, 0);
    assert!(files_under(&app.blob_dir).is_empty());
}

#[tokio::test]
async fn a_gzip_bomb_stops_at_the_decompressed_cap() {
    let (mut app, token) = editor_app().await;
    // 64 MiB of one repeated request line compresses to a few hundred KiB.
    let line = request_log(1);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut written = 0usize;
    while written < 64 << 20 {
        enc.write_all(&line).unwrap();
        written += line.len();
    }
    let bomb = enc.finish().unwrap();
    let r = upload(&mut app, &token, "name=bomb.jsonl.gz", bomb).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let id = r.json()["id"].as_i64().unwrap();
    // The first analysis (default cap) may outlast the upload's inline budget and finish
    // in the background: let it end before analysing again.
    for _ in 0..600 {
        let status = fetch(&mut app, &token, id).await["status"].clone();
        if status != "analyzing" && status != "queued" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // Analyze with a 1 MiB cap, as a smaller configured cap would.
    let options = perfjournal::core::analyze::Options {
        max_decompressed_bytes: 1 << 20,
        ..Default::default()
    };
    perfjournal::artifacts::requeue(&app.pool, id, &options)
        .await
        .unwrap();
    app.drain_queue().await;
    let a = fetch(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed");
    assert!(
        a["error"].as_str().unwrap().contains("decompressed size"),
        "{a}"
    );
}

#[tokio::test]
async fn unknown_content_is_stored_and_says_not_analyzed() {
    let (mut app, token) = editor_app().await;
    let r = upload(
        &mut app,
        &token,
        "name=notes.txt",
        b"just some notes from the incident\n".to_vec(),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["kind"], "unknown");
    assert_eq!(r.json()["status"], "not_analyzed");
    let page = app.get(&format!("/artifacts/{}", r.json()["id"])).await;
    assert!(page.select("#analysis-error")[0].contains("not analyzed"));
    assert_eq!(page.select("#download").len(), 1);
}

#[tokio::test]
async fn upload_input_errors_name_the_field_and_viewers_cannot_upload() {
    let (mut app, token) = editor_app().await;
    let r = upload(&mut app, &token, "investigation=abc", request_log(1)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "investigation");
    let r = upload(&mut app, &token, "", request_log(1)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "name");

    app.add_user("vic", perfjournal::auth::Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    let r = upload(&mut app, &viewer, "name=x.jsonl", request_log(1)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(artifact_count(&app).await, 0);
}

#[tokio::test]
async fn the_list_refuses_an_investigation_id_of_zero_or_less_naming_the_filter() {
    let (mut app, token) = editor_app().await;
    let r = upload(&mut app, &token, "name=bench.jsonl", request_log(1)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    for id in ["0", "-3"] {
        let r = app
            .api(
                "GET",
                &format!("/api/v1/artifacts?investigation={id}"),
                &token,
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        assert_eq!(r.json()["error"]["fields"][0]["field"], "investigation");
    }
    assert_eq!(artifact_count(&app).await, 1);
}

#[tokio::test]
async fn the_page_form_uploads_multipart_and_redirects_to_the_artifact() {
    let (mut app, _) = editor_app().await;
    let csrf = app.csrf().await;
    let boundary = "XyZ123";
    let mut body = Vec::new();
    body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bench.json\"\r\nContent-Type: application/json\r\n\r\n").as_bytes());
    body.extend_from_slice(&vllm_bench());
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let req = Request::post(format!("/artifacts?_csrf={csrf}"))
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(Body::from(body))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let page = app.get(r.location().unwrap()).await;
    assert_eq!(page.select("#kind"), vec!["vllm_bench"]);
    assert_eq!(page.select("#status"), vec!["done"]);
    assert!(
        page.select("#section-summary svg.chart").len() >= 2,
        "CDF pictures"
    );
    let list = app.get("/artifacts").await;
    assert_eq!(
        list.select("#artifacts tbody tr td:first-child"),
        vec!["bench.json"]
    );
}

#[tokio::test]
async fn real_fixtures_upload_and_analyze() {
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES").map(std::path::PathBuf::from)
    else {
        common::skip(
            "real_fixtures_upload_and_analyze",
            "PERFJOURNAL_REAL_FIXTURES unset",
        );
        return;
    };
    let (mut app, token) = editor_app().await;
    let expect = [
        ("vllm_bench", "vllm_bench"),
        ("prometheus", "prometheus"),
        ("nsys", "nsys_kern_sum"),
        ("ncu", "ncu_csv"),
        ("pytorch_trace", "pytorch_trace"),
    ];
    for (dir, kind) in expect {
        let files = files_under(&root.join(dir));
        // An empty or missing folder would make this test pass without checking anything.
        assert!(
            !files.is_empty(),
            "no fixtures under {}",
            root.join(dir).display()
        );
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            let r = upload(
                &mut app,
                &token,
                &format!("name={name}"),
                std::fs::read(&file).unwrap(),
            )
            .await;
            assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
            assert_eq!(r.json()["kind"], kind, "{name}");
            let a = fetch(&mut app, &token, r.json()["id"].as_i64().unwrap()).await;
            assert_eq!(a["status"], "done", "{name}: {}", a["error"]);
            if name.contains("raw_error_only") {
                assert!(a["analysis"]["profile_error"]
                    .as_str()
                    .unwrap()
                    .contains("profile failed"));
            }
            if name.starts_with("llmk8s") {
                assert_eq!(a["analysis"]["completed"], 200);
            }
            if name.contains("inference_rank_1") {
                let t = &a["analysis"]["temporal"][0];
                // HTA 0.5.0 on the same file: idle 1599 µs, compute 30 µs, span 1629 µs.
                assert!((t["span_us"].as_f64().unwrap() - 1629.0).abs() <= 0.005 * 1629.0);
                assert!((t["idle_us"].as_f64().unwrap() - 1599.0).abs() <= 0.005 * 1629.0);
            }
            let page = app.get(&format!("/artifacts/{}", a["id"])).await;
            assert_eq!(page.status, StatusCode::OK, "{name}");
        }
    }
}

#[tokio::test]
async fn the_cli_streams_files_to_a_running_server() {
    let (mut app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("requests.jsonl");
    std::fs::write(&good, request_log(20)).unwrap();
    let bad = dir.path().join("broken.jsonl");
    std::fs::write(&bad, b"{\"request_id\":\"a\",\"queue_wait_ms\":1,\"first_token_ms\":2}\n{\"request_id\":\"b\",\"queue_wait_ms\":oops}\n").unwrap();
    let (good_arg, bad_arg, server_arg) = (
        good.display().to_string(),
        bad.display().to_string(),
        format!("http://{addr}"),
    );
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
            .args([
                "upload",
                &good_arg,
                &bad_arg,
                "--server",
                &server_arg,
                "--token",
                &token,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    server.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "one file was malformed");
    assert!(stdout.contains("\trequest_log\tdone\t"), "{stdout}");
    assert!(
        stderr.contains("broken.jsonl") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert_eq!(artifact_count(&app).await, 1);
    let _ = app.get("/").await;
}

#[tokio::test]
async fn an_artifact_fills_a_step_and_stays_linked_as_its_evidence() {
    let (mut app, token) = editor_app().await;
    let inv = app
        .open_investigation(&token, "GPU idle between steps")
        .await;
    let trace = serde_json::json!({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.0, "dur": 6000.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6100.0, "dur": 5.0, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 8010.0, "dur": 2000.0, "args": {"correlation": 2}}
    ]});
    let r = upload(
        &mut app,
        &token,
        &format!("name=trace.json&investigation={inv}"),
        trace.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let artifact = r.json()["id"].as_i64().unwrap();

    // The artifact page offers the steps its analysis can fill.
    let page = app.get(&format!("/artifacts/{artifact}")).await;
    let links = page.select("#use-in a");
    assert!(
        links.iter().any(|l| l.starts_with("step 3"))
            && links.iter().any(|l| l.starts_with("step 5")),
        "{links:?}"
    );

    // Step 3's form comes back filled; the person adds the CPU time and saves.
    let form = app
        .get(&format!(
            "/investigations/{inv}/steps/3?from_artifact={artifact}"
        ))
        .await;
    assert_eq!(form.status, StatusCode::OK);
    let value = |css: &str| {
        let sel = scraper::Selector::parse(css).unwrap();
        form.html()
            .select(&sel)
            .next()
            .and_then(|e| e.value().attr("value").map(str::to_string))
    };
    assert_eq!(value("input[name=gpu_total]").as_deref(), Some("8"));
    assert_eq!(value("input[name=wall]").as_deref(), Some("10"));
    assert_eq!(
        value("input[name=evidence_artifact]"),
        Some(artifact.to_string())
    );
    let r = app
        .post_form(
            &format!("/investigations/{inv}/steps/3"),
            &[
                ("gpu_total", "8"),
                ("cpu_total", "1"),
                ("wall", "10"),
                ("evidence_artifact", &artifact.to_string()),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let step = app.get(&format!("/investigations/{inv}/steps/3")).await;
    assert!(
        step.select("#evidence")[0].contains("trace.json"),
        "{:?}",
        step.select("#evidence")
    );
    let api = app
        .api(
            "GET",
            &format!("/api/v1/investigations/{inv}"),
            &token,
            None,
        )
        .await
        .json();
    assert_eq!(api["steps"][3]["data"]["gpu_total"], 8.0, "{api}");
    assert_eq!(api["steps"][3]["results"]["classification"], "gpu_bound");
}

/// The API saves a step the way the page does: the artifact whose numbers filled it
/// is linked as its evidence in the same save, and one that is not this
/// investigation's is refused naming the field, with nothing saved.
#[tokio::test]
async fn a_step_saved_through_the_api_links_its_evidence_as_the_page_does() {
    let (mut app, token) = editor_app().await;
    let inv = app
        .open_investigation(&token, "GPU idle, over the API")
        .await;
    let other = app.open_investigation(&token, "another one").await;
    let trace = serde_json::json!({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.0, "dur": 6000.0}
    ]})
    .to_string()
    .into_bytes();
    let mine = upload(
        &mut app,
        &token,
        &format!("name=trace.json&investigation={inv}"),
        trace.clone(),
    )
    .await
    .json()["id"]
        .as_i64()
        .unwrap();
    let mut theirs_body = trace;
    theirs_body.push(b'\n');
    let theirs = upload(
        &mut app,
        &token,
        &format!("name=other.json&investigation={other}"),
        theirs_body,
    )
    .await
    .json()["id"]
        .as_i64()
        .unwrap();
    let linked = |app: &TestApp| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM step_evidence WHERE investigation_id = $1 AND step = 3",
            )
            .bind(inv)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let put = format!("/api/v1/investigations/{inv}/steps/3");
    for (bad, why) in [
        (serde_json::json!(theirs), "not attached"),
        (serde_json::json!("trace"), "whole number"),
    ] {
        let r = app
            .api(
                "PUT",
                &put,
                &token,
                Some(serde_json::json!({"gpu_total": 8, "cpu_total": 1, "wall": 10, "evidence_artifact": bad})),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        assert_eq!(
            r.json()["error"]["fields"][0]["field"],
            "evidence_artifact",
            "{}",
            r.body
        );
        assert!(r.body.contains(why), "{}", r.body);
        assert_eq!(linked(&app).await, 0);
        let steps: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM investigation_steps WHERE investigation_id = $1",
        )
        .bind(inv)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(steps, 0, "a refused save stores nothing");
    }
    let r = app
        .api(
            "PUT",
            &put,
            &token,
            Some(serde_json::json!({"gpu_total": 8, "cpu_total": 1, "wall": 10, "evidence_artifact": mine})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(linked(&app).await, 1);
    let step = app.get(&format!("/investigations/{inv}/steps/3")).await;
    assert!(
        step.select("#evidence")[0].contains("trace.json"),
        "{:?}",
        step.select("#evidence")
    );
    let page = app.get(&format!("/investigations/{inv}")).await;
    assert!(page
        .body
        .contains(&format!("step 3 filled from artifact {mine}")));
}

/// Whether the artifact has request rows stored.
async fn rows_exist(app: &TestApp, id: i64) -> bool {
    common::uploads::stored_rows(&app.pool, id).await > 0
}

#[tokio::test]
async fn the_uploader_or_an_admin_deletes_an_artifact_and_everything_it_left() {
    use perfjournal::auth::Role;
    let (mut app, admin) = editor_app().await;
    app.add_user("eve", Role::Editor).await;
    app.add_user("vic", Role::Viewer).await;
    app.add_user("bob", Role::Editor).await;
    let eve = app.api_token("eve").await;
    let vic = app.api_token("vic").await;
    let bob = app.api_token("bob").await;
    let inv = app.open_investigation(&eve, "secret upload").await;
    let r = upload(
        &mut app,
        &eve,
        &format!("name=requests.jsonl&investigation={inv}"),
        request_log(50),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    app.drain_queue().await;
    assert_eq!(fetch(&mut app, &eve, id).await["status"], "done");
    assert!(rows_exist(&app, id).await);
    let blobs_before = common::uploads::files_under(&app.blob_dir).len();

    // Neither a viewer nor another editor may; nothing changes.
    for token in [&vic, &bob] {
        let r = app
            .api("DELETE", &format!("/api/v1/artifacts/{id}"), token, None)
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
        assert!(r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("uploaded"));
    }
    assert_eq!(fetch(&mut app, &eve, id).await["status"], "done");

    // The uploader may: the row, rows, partition and blob go; the history says who.
    let r = app
        .api("DELETE", &format!("/api/v1/artifacts/{id}"), &eve, None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let r = app
        .api("GET", &format!("/api/v1/artifacts/{id}"), &eve, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(!rows_exist(&app, id).await);
    assert_eq!(
        common::uploads::files_under(&app.blob_dir).len(),
        blobs_before - 1,
        "the blob is removed"
    );
    let who: String = sqlx::query_scalar(
        "SELECT u.name FROM artifact_deletions d JOIN users u ON u.id = d.deleted_by WHERE d.artifact_id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(who, "eve");
    app.login("eve").await;
    let page = app.get(&format!("/investigations/{inv}")).await;
    assert!(
        page.body.contains(&format!("deleted artifact {id}")),
        "the investigation's history names the deletion"
    );
    // Deleting again: 404.
    let r = app
        .api("DELETE", &format!("/api/v1/artifacts/{id}"), &eve, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // An admin may delete anyone's; one used by a comparison is refused, naming it.
    let a = upload(&mut app, &eve, "name=a.json", vllm_bench())
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    let mut other = vllm_bench();
    other.extend_from_slice(b"\n");
    let b = upload(&mut app, &eve, "name=b.json", other).await.json()["id"]
        .as_i64()
        .unwrap();
    let c = app
        .api(
            "POST",
            "/api/v1/comparisons",
            &eve,
            Some(serde_json::json!({"baseline": [a], "candidate": [b], "variable": "x"})),
        )
        .await;
    assert_eq!(c.status, StatusCode::CREATED, "{}", c.body);
    let cid = c.json()["id"].as_i64().unwrap();
    let r = app
        .api("DELETE", &format!("/api/v1/artifacts/{a}"), &admin, None)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains(&format!("comparison {cid}")), "{}", r.body);
    assert_eq!(fetch(&mut app, &eve, a).await["status"], "done");

    // Through the page: the uploader sees the button, a viewer does not.
    let d = upload(&mut app, &eve, "name=d.json", vllm_bench())
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    app.login("vic").await;
    let page = app.get(&format!("/artifacts/{d}")).await;
    assert!(page.select("#delete-artifact").is_empty());
    app.login("ada").await;
    let page = app.get(&format!("/artifacts/{d}")).await;
    assert_eq!(page.select("#delete-artifact").len(), 1);
    let r = app.post_form(&format!("/artifacts/{d}/delete"), &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.location(), Some("/artifacts"));
    assert_eq!(
        app.get(&format!("/artifacts/{d}")).await.status,
        StatusCode::NOT_FOUND
    );
}

/// A retry of an upload whose answer was lost, under the same Idempotency-Key, gets the
/// artifact stored the first time (200), and nothing is stored twice; a key is the
/// uploader's own, and a bad one is refused naming the header.
#[tokio::test]
async fn an_upload_retried_with_its_idempotency_key_is_stored_once() {
    let (mut app, token) = common::uploads::editor_app().await;
    let send = |key: &str, body: &str| {
        axum::http::Request::post("/api/v1/artifacts?name=requests.jsonl")
            .header("authorization", format!("Bearer {token}"))
            .header("idempotency-key", key)
            .body(axum::body::Body::from(body.to_string()))
            .unwrap()
    };
    let line = r#"{"request_id":"a","arrival_ts":1,"total_ms":900,"first_token_ms":80}"#;
    let first = app.send(send("upload-7f3a", line)).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let again = app.send(send("upload-7f3a", line)).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.json()["id"], first.json()["id"]);
    assert_eq!(common::uploads::artifact_count(&app).await, 1);
    // Another key is another upload.
    let other = app.send(send("upload-7f3b", line)).await;
    assert_eq!(other.status, StatusCode::CREATED, "{}", other.body);
    // Another user's same key is theirs.
    app.add_user("bob", perfjournal::auth::Role::Editor).await;
    let bob = app.api_token("bob").await;
    let theirs = app
        .send(
            axum::http::Request::post("/api/v1/artifacts?name=requests.jsonl")
                .header("authorization", format!("Bearer {bob}"))
                .header("idempotency-key", "upload-7f3a")
                .body(axum::body::Body::from(line.to_string()))
                .unwrap(),
        )
        .await;
    assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.body);
    let bad = app.send(send("has space", line)).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
    assert_eq!(bad.json()["error"]["fields"][0]["field"], "Idempotency-Key");
    assert_eq!(common::uploads::artifact_count(&app).await, 3);
}
