//! Trace sets through HTTP on a real PostgreSQL: rank traces uploaded and grouped, the
//! set's figures held against HolisticTraceAnalysis 0.5.0's on HTA's own NCCL trace;
//! a straggler found and shown; bad input refused with nothing stored; a rank named
//! twice, a rank that fails and a thousand tiny ranks all end done or failed with the
//! trace named, never stuck.

use crate::common;
use common::uploads::multipart;

use crate::trace_diffs::{editor_app, fixtures};
use axum::http::StatusCode;
use common::uploads::{rank_trace, upload_analyzed};
use common::TestApp;
use perfjournal::auth::Role;
use serde_json::{json, Value};

async fn set_rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM trace_sets")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Posts a set and reads it back until it is no longer analyzing.
async fn make_set(app: &mut TestApp, token: &str, body: Value) -> Value {
    let r = app
        .api("POST", "/api/v1/trace-sets", token, Some(body))
        .await;
    assert!(
        r.status == StatusCode::CREATED || r.status == StatusCode::ACCEPTED,
        "{}",
        r.body
    );
    let id = r.json()["id"].as_i64().unwrap();
    for _ in 0..100 {
        app.drain_queue().await;
        let r = app
            .api("GET", &format!("/api/v1/trace-sets/{id}"), token, None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        if r.json()["status"] != "analyzing" {
            return r.json();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("trace set {id} still analyzing");
}

/// HTA's NCCL test trace as ranks 0 and 1 (times cut to whole µs, as
/// `tests/oracles/hta_trace_sets.py` does): HTA 0.5.0 gives per rank idle 337,597 µs,
/// compute 76,067, non-compute 21,923, span 435,587, overlap 14.52 %; kernel types
/// summed over both: COMPUTATION 145,082 µs (74.0 %), COMMUNICATION 41,094 (21.0 %),
/// COMPUTATION overlapping COMMUNICATION 7,052 (3.6 %), MEMORY 2,338 (1.2 %),
/// COMMUNICATION overlapping MEMORY 414 (0.2 %).
#[tokio::test]
async fn a_set_of_hta_ranks_matches_hta() {
    let Some(root) = fixtures() else { return };
    let (mut app, token) = editor_app().await;
    let raw = std::fs::read(root.join("pytorch_trace/hta__nccl_parser_config__nccl_data.json.gz"))
        .unwrap();
    let mut doc: Value = serde_json::from_reader(flate2::read::GzDecoder::new(&raw[..])).unwrap();
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        for k in ["ts", "dur"] {
            if let Some(x) = e.get(k).filter(|v| v.is_f64()).and_then(Value::as_f64) {
                e[k] = (x.floor() as i64).into();
            }
        }
    }
    let mut ids = Vec::new();
    for rank in [0, 1] {
        doc["distributedInfo"]["rank"] = rank.into();
        ids.push(
            upload_analyzed(
                &mut app,
                &token,
                &format!("rank{rank}.json"),
                serde_json::to_vec(&doc).unwrap(),
            )
            .await,
        );
    }
    let set = make_set(
        &mut app,
        &token,
        json!({"name": "nccl pair", "artifacts": ids}),
    )
    .await;
    assert_eq!(set["status"], "done", "{}", set["error"]);
    let s = &set["summary"];
    for r in s["ranks"].as_array().unwrap() {
        let t = &r["temporal"];
        for (k, hta) in [
            ("idle_us", 337_597.0),
            ("compute_us", 76_067.0),
            ("non_compute_us", 21_923.0),
            ("span_us", 435_587.0),
        ] {
            let v = t[k].as_f64().unwrap();
            assert!(
                (v - hta).abs() <= 0.005 * hta,
                "rank {} {k}: {v}, HTA {hta}",
                r["rank"]
            );
        }
        let o = r["comm_comp_overlap_pct"].as_f64().unwrap();
        assert!((o - 14.52).abs() <= 0.5, "overlap {o} %, HTA 14.52 %");
    }
    let kt = s["kernel_types"].as_array().unwrap();
    for (name, us, pct) in [
        ("COMPUTATION", 145_082.0, 74.0),
        ("COMMUNICATION", 41_094.0, 21.0),
        ("COMPUTATION overlapping COMMUNICATION", 7_052.0, 3.6),
        ("MEMORY", 2_338.0, 1.2),
        ("COMMUNICATION overlapping MEMORY", 414.0, 0.2),
    ] {
        let k = kt.iter().find(|k| k["kernel_type"] == name).unwrap();
        let v = k["us"].as_f64().unwrap();
        assert!(
            (v - us).abs() <= 0.005 * us + 1.0,
            "{name}: {v} µs, HTA {us}"
        );
        let p = k["pct"].as_f64().unwrap();
        assert!((p - pct).abs() <= 0.5, "{name}: {p} %, HTA {pct} %");
    }
    // Identical ranks: no straggler (HTA picks rank 0 of the tie).
    assert!(s["straggler"]["rank"].is_null());
    // The all-reduces with their bytes from the NCCL arguments (Float, 4 bytes).
    let ar = s["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "allreduce")
        .unwrap();
    assert!(ar["bytes"].as_f64().unwrap() > 0.0);
    assert_eq!(ar["ranks"], 2);
}

#[tokio::test]
async fn a_straggler_is_found_and_shown() {
    let (mut app, token) = editor_app().await;
    let inv = app.open_investigation(&token, "TP=4 decode slower").await;
    let mut ids = Vec::new();
    for rank in 0..4 {
        let (c, w) = if rank == 2 {
            (700.0, 100.0)
        } else {
            (500.0, 300.0)
        };
        let body = rank_trace(rank, 4, c, w, 5);
        ids.push(
            upload_analyzed(
                &mut app,
                &token,
                &format!("rank{rank}.trace.json&investigation={inv}"),
                body,
            )
            .await,
        );
    }
    let set = make_set(
        &mut app,
        &token,
        json!({"name": "TP=4 decode", "artifacts": ids}),
    )
    .await;
    assert_eq!(set["status"], "done", "{}", set["error"]);
    assert_eq!(set["investigation"], inv, "joins its traces' investigation");
    let st = &set["summary"]["straggler"];
    assert_eq!(st["rank"], 2, "{st}");
    assert!((st["skew_ms"].as_f64().unwrap() - 0.2).abs() < 1e-6, "{st}");
    assert!(
        (st["skew_pct"].as_f64().unwrap() - 25.0).abs() < 1e-6,
        "{st}"
    );
    // Four steps: the last is left out as HTA leaves it out.
    assert_eq!(st["steps"], 4);
    let ar = &set["summary"]["collectives"][0];
    assert_eq!(ar["name"], "allreduce");
    assert_eq!(ar["count"], 1.0);
    assert_eq!(ar["bytes"], 2_097_152.0);
    // Mean all-reduce time per step over the four ranks: (3 × 300 + 100) / 4 µs.
    assert!((ar["us"].as_f64().unwrap() - 250.0).abs() < 1e-6, "{ar}");

    // The page: the callout, the ranks with the straggler marked, the heatmap.
    app.login("ada").await;
    let id = set["id"].as_i64().unwrap();
    let page = app.get(&format!("/trace-sets/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let callout = page.select("#straggler-callout");
    assert!(
        callout[0].starts_with("Rank 2 is the straggler: 0.20 ms (25.0 % of a step) more computation per step than the other ranks' median. Rank 2 computes 0.70 ms per step"),
        "{callout:?}"
    );
    assert_eq!(page.select("#set-ranks tbody tr").len(), 4);
    assert_eq!(
        page.select("#set-ranks tr.straggler td:first-child"),
        vec!["2"]
    );
    assert!(page.body.contains("id=\"set-heatmap\""));
    assert_eq!(
        page.select("#set-collectives tbody td:first-child"),
        vec!["allreduce"]
    );
    // Step 3 offers the measured all-reduce against tp-allreduce for step 0's setup; held
    // against it, the ratio is unit-checked like any expected value.
    let url = format!("/investigations/{inv}");
    common::incident::save(
        &mut app,
        &url,
        0,
        &[
            ("reproducible", "yes"),
            ("model", "llama-3.3-70b"),
            ("gpu_type", "h100-sxm"),
            ("gpu_count", "4"),
            ("tp", "4"),
            ("max_num_seqs", "64"),
        ],
    )
    .await;
    let step3 = app.get(&format!("{url}/steps/3")).await;
    let lines = step3.select("#trace-set-lines .trace-set-line p");
    assert_eq!(
        lines[0],
        "Trace set TP=4 decode: 4 ranks, straggler rank 2 (+0.20 ms, 25.0 % of a step), all-reduce 0.250 ms per step (1 call, 2.10 MB)."
    );
    let inputs = step3.select_attr("#trace-set-lines input[name=inputs]", "value");
    assert_eq!(
        inputs,
        vec!["batch=64 gpu=h100-sxm model=llama-3.3-70b tp=4"]
    );
    let step5 = app.get(&format!("{url}/steps/5")).await;
    assert_eq!(
        step5.select("#trace-set-lines form.allreduce-offer").len(),
        1
    );
    let r = app
        .post_form(
            &format!("{url}/steps/3/expected"),
            &[
                ("estimator", "tp-allreduce"),
                ("result_key", "allreduce_ms"),
                ("observed", "0.25 ms"),
                (
                    "inputs",
                    "batch=64 gpu=h100-sxm model=llama-3.3-70b tp=4 context=4096",
                ),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let step3 = app.get(&format!("{url}/steps/3")).await;
    assert_eq!(step3.select(".observed-value"), vec!["0.25 ms"]);
    assert_eq!(step3.select(".expected-section code"), vec!["allreduce_ms"]);
    assert_eq!(step3.select(".gap-ratio-cell").len(), 1);
    // Step 7 links the set too.
    let step7 = app.get(&format!("{url}/steps/7")).await;
    assert_eq!(step7.select("#trace-set-lines a").len(), 1);

    // Linked from each trace's page.
    let a = app.get(&format!("/artifacts/{}", ids[0])).await;
    assert!(a.body.contains(&format!("href=\"/trace-sets/{id}\"")));
}

#[tokio::test]
async fn bad_sets_are_refused_and_store_nothing() {
    let (mut app, token) = editor_app().await;
    let t = upload_analyzed(
        &mut app,
        &token,
        "r0.json",
        rank_trace(0, 2, 500.0, 300.0, 3),
    )
    .await;
    let csv = upload_analyzed(
        &mut app,
        &token,
        "summary.json",
        common::uploads::summary_table(),
    )
    .await;
    for (body, field, words) in [
        (json!({"artifacts": [t]}), "name", "is required"),
        (json!({"name": "x"}), "artifacts", "is required"),
        (
            json!({"name": "x", "artifacts": []}),
            "artifacts",
            "1 to 1024",
        ),
        (
            json!({"name": "x", "artifacts": [t, t]}),
            "artifacts",
            "twice",
        ),
        (
            json!({"name": "x", "artifacts": [999_999]}),
            "artifacts",
            "no artifact 999999",
        ),
        (
            json!({"name": "x", "artifacts": [t, csv]}),
            "artifacts",
            "a trace set holds PyTorch profiler traces",
        ),
        (
            json!({"name": "x", "artifacts": [t], "investigation": 424_242}),
            "investigation",
            "no investigation",
        ),
        (
            json!({"name": "x", "artifacts": "1,2"}),
            "artifacts",
            "must be an array",
        ),
    ] {
        let r = app
            .api("POST", "/api/v1/trace-sets", &token, Some(body.clone()))
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        assert!(
            r.body.contains(field) && r.body.contains(words),
            "{body}: {}",
            r.body
        );
    }
    assert_eq!(set_rows(&app).await, 0);
    app.add_user("vic", Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    let r = app
        .api(
            "POST",
            "/api/v1/trace-sets",
            &viewer,
            Some(json!({"name": "x", "artifacts": [t]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(set_rows(&app).await, 0);
    let r = app.api("GET", "/api/v1/trace-sets/77", &token, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn duplicate_failed_and_many_ranks_end_named_never_stuck() {
    let (mut app, token) = editor_app().await;
    let a = upload_analyzed(
        &mut app,
        &token,
        "a.json",
        rank_trace(1, 2, 500.0, 300.0, 3),
    )
    .await;
    let b = upload_analyzed(
        &mut app,
        &token,
        "b.json",
        rank_trace(1, 2, 500.0, 300.0, 3),
    )
    .await;
    let set = make_set(
        &mut app,
        &token,
        json!({"name": "dup", "artifacts": [a, b]}),
    )
    .await;
    assert_eq!(set["status"], "failed");
    let e = set["error"].as_str().unwrap();
    assert!(
        e.contains(&format!(
            "rank 1 is in artifact {a} (a.json) and artifact {b} (b.json)"
        )),
        "{e}"
    );

    // A rank whose analysis was given up (as after a worker died three times on it):
    // the set is done without it, and names it.
    let r0 = upload_analyzed(
        &mut app,
        &token,
        "r0.json",
        rank_trace(0, 2, 500.0, 300.0, 3),
    )
    .await;
    let broken = upload_analyzed(
        &mut app,
        &token,
        "r1.json",
        rank_trace(1, 2, 500.0, 300.0, 3),
    )
    .await;
    sqlx::query("UPDATE artifacts SET status = 'failed', error = 'the analysis stopped 3 times' WHERE id = $1")
        .bind(broken)
        .execute(&app.pool)
        .await
        .unwrap();
    let set = make_set(
        &mut app,
        &token,
        json!({"name": "one broken", "artifacts": [r0, broken]}),
    )
    .await;
    assert_eq!(set["status"], "done", "{}", set["error"]);
    assert_eq!(set["summary"]["failed"][0]["artifact_id"], broken);
    assert!(
        set["summary"]["failed"][0]["reason"]
            .as_str()
            .unwrap()
            .len()
            > 5
    );
    assert_eq!(set["summary"]["missing_ranks"], json!([1]));
    app.login("ada").await;
    let page = app.get(&format!("/trace-sets/{}", set["id"])).await;
    assert_eq!(page.select(".failed-rank").len(), 1);

    // A thousand small ranks, rank 950 the straggler: the page shows them 100 at a time,
    // the straggler's row pinned above the table on the pages that do not hold it.
    let mut ids = Vec::new();
    for rank in 0..1000 {
        let (c, w) = if rank == 950 {
            (700.0, 100.0)
        } else {
            (500.0, 300.0)
        };
        let body = rank_trace(rank, 1000, c, w, 2);
        ids.push(upload_analyzed(&mut app, &token, &format!("r{rank}.json"), body).await);
    }
    let set = make_set(&mut app, &token, json!({"name": "many", "artifacts": ids})).await;
    assert_eq!(set["status"], "done", "{}", set["error"]);
    assert_eq!(set["summary"]["ranks"].as_array().unwrap().len(), 1000);
    assert_eq!(set["summary"]["straggler"]["rank"], 950);
    let id = set["id"].as_i64().unwrap();
    let page = app.get(&format!("/trace-sets/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let rows = page.select("#set-ranks tbody td:first-child");
    assert_eq!(rows.len(), 100);
    assert_eq!((rows[0].as_str(), rows[99].as_str()), ("0", "99"));
    assert_eq!(
        page.select("#set-ranks-shown"),
        ["Ranks 1–100 of the 1000 in rank order, 100 a page."]
    );
    assert_eq!(
        page.select_attr(".pager a[rel=next]", "href"),
        [format!("/trace-sets/{id}?page=2")]
    );
    assert!(page.select(".pager a[rel=prev]").is_empty());
    assert_eq!(
        page.select("#set-straggler-pinned tr.straggler td:first-child"),
        ["950"]
    );
    assert_eq!(
        page.select_attr("#straggler-row-link", "href"),
        [format!("/trace-sets/{id}?page=10#rank-950")]
    );
    let last = app.get(&format!("/trace-sets/{id}?page=10")).await;
    assert_eq!(last.status, StatusCode::OK);
    let rows = last.select("#set-ranks tbody td:first-child");
    assert_eq!(rows.len(), 100);
    assert_eq!((rows[0].as_str(), rows[99].as_str()), ("900", "999"));
    assert_eq!(
        last.select("#set-ranks tr#rank-950.straggler td:first-child"),
        ["950"]
    );
    assert!(last.select("#set-straggler-pinned").is_empty(), "not twice");
    assert!(last.select(".pager a[rel=next]").is_empty());
    assert_eq!(
        last.select_attr(".pager a[rel=prev]", "href"),
        [format!("/trace-sets/{id}?page=9")]
    );
    for bad in ["abc", "0", "-2", "1.5"] {
        let r = app.get(&format!("/trace-sets/{id}?page={bad}")).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "page={bad}");
        assert!(r.body.contains("must be a page number"), "{}", r.body);
    }
    let past = app.get(&format!("/trace-sets/{id}?page=11")).await;
    assert_eq!(past.status, StatusCode::NOT_FOUND);
    assert!(past.body.contains("no page 11"), "{}", past.body);
    // The API still answers the whole set.
    let api = app
        .api("GET", &format!("/api/v1/trace-sets/{id}"), &token, None)
        .await;
    assert_eq!(
        api.json()["summary"]["ranks"].as_array().unwrap().len(),
        1000
    );
}

async fn post_set_upload(
    app: &mut TestApp,
    token: &str,
    query: &str,
    parts: &[(&str, Option<&str>, Vec<u8>)],
) -> common::Reply {
    let (content_type, body) = multipart(parts);
    let req = axum::http::Request::post(format!("/api/v1/trace-sets/upload?{query}"))
        .header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"))
        .header(axum::http::header::CONTENT_TYPE, content_type)
        .body(axum::body::Body::from(body))
        .unwrap();
    app.send(req).await
}

/// A `.tar.gz` of a profiler folder: the ranks' traces and a file that is not one.
fn tar_gz(ranks: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (rank, bytes) in ranks {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(
            &mut h,
            format!("prof/host_{rank}.pt.trace.json"),
            &bytes[..],
        )
        .unwrap();
    }
    let readme = b"profiled with torch.profiler";
    let mut h = tar::Header::new_gnu();
    h.set_size(readme.len() as u64);
    h.set_cksum();
    tar.append_data(&mut h, "prof/README.txt", &readme[..])
        .unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

fn zip_of(ranks: &[(i64, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (rank, bytes) in ranks {
        z.start_file(
            format!("run/rank{rank}.json"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

#[tokio::test]
async fn a_set_uploads_as_files_or_as_an_archive_of_the_profiler_folder() {
    let (mut app, token) = editor_app().await;
    let ranks: Vec<(i64, Vec<u8>)> = (0..4)
        .map(|r| {
            let (c, w) = if r == 3 {
                (700.0, 100.0)
            } else {
                (500.0, 300.0)
            };
            (r, rank_trace(r, 4, c, w, 4))
        })
        .collect();
    // Files chosen together.
    let parts: Vec<(&str, Option<&str>, Vec<u8>)> = vec![
        ("file", Some("rank0.json"), ranks[0].1.clone()),
        ("file", Some("rank1.json"), ranks[1].1.clone()),
    ];
    let r = post_set_upload(&mut app, &token, "name=two+files", &parts).await;
    assert!(r.status.is_success(), "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["artifacts"].as_array().unwrap().len(), 2);
    app.drain_queue().await;
    let id = doc["id"].as_i64().unwrap();
    let r = app
        .api("GET", &format!("/api/v1/trace-sets/{id}"), &token, None)
        .await;
    assert_eq!(r.json()["status"], "done", "{}", r.body);

    // A .tar.gz of the folder: its four traces, the README left out; the name as a form
    // field before the files.
    let parts = vec![
        ("name", None, b"TP=4 from the archive".to_vec()),
        ("file", Some("prof.tar.gz"), tar_gz(&ranks)),
    ];
    let r = post_set_upload(&mut app, &token, "", &parts).await;
    assert!(r.status.is_success(), "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["name"], "TP=4 from the archive");
    let names: Vec<&str> = doc["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "prof.tar.gz:prof/host_0.pt.trace.json");
    assert_eq!(names.len(), 4);
    app.drain_queue().await;
    let id = doc["id"].as_i64().unwrap();
    let set = app
        .api("GET", &format!("/api/v1/trace-sets/{id}"), &token, None)
        .await
        .json();
    assert_eq!(set["status"], "done", "{set}");
    assert_eq!(set["summary"]["straggler"]["rank"], 3);

    // A .zip.
    let r = post_set_upload(
        &mut app,
        &token,
        "name=zipped",
        &[("file", Some("run.zip"), zip_of(&ranks[..2]))],
    )
    .await;
    assert!(r.status.is_success(), "{}", r.body);
    assert_eq!(r.json()["artifacts"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_refused_set_upload_leaves_nothing() {
    let (mut app, token) = editor_app().await;
    let before = common::uploads::artifact_count(&app).await;
    let good = rank_trace(0, 2, 500.0, 300.0, 3);
    // No name: refused before any file is stored.
    let r = post_set_upload(
        &mut app,
        &token,
        "",
        &[("file", Some("r0.json"), good.clone())],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "name");
    // A file that is not a trace after a good one: both gone.
    let r = post_set_upload(
        &mut app,
        &token,
        "name=mixed",
        &[
            ("file", Some("r0.json"), good.clone()),
            (
                "file",
                Some("summary.json"),
                common::uploads::summary_table(),
            ),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("summary.json is a"), "{}", r.body);
    // A damaged archive: cut in the middle.
    let mut cut = tar_gz(&[(0, good.clone()), (1, good.clone())]);
    cut.truncate(cut.len() / 2);
    let r = post_set_upload(
        &mut app,
        &token,
        "name=cut",
        &[("file", Some("p.tar.gz"), cut)],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("p.tar.gz"), "{}", r.body);
    // An archive without traces.
    let r = post_set_upload(
        &mut app,
        &token,
        "name=empty",
        &[("file", Some("e.zip"), zip_of(&[]))],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(common::uploads::artifact_count(&app).await, before);
    assert_eq!(set_rows(&app).await, 0);
}

#[tokio::test]
async fn the_cli_uploads_a_set() {
    let (app, token) = editor_app().await;
    let (addr, server) = app.serve_on_port().await;
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["upload".to_string()];
    for r in 0..2 {
        let p = dir.path().join(format!("rank{r}.json"));
        std::fs::write(&p, rank_trace(r, 2, 500.0, 300.0, 3)).unwrap();
        args.push(p.display().to_string());
    }
    args.extend([
        "--trace-set".into(),
        "from the command line".into(),
        "--server".into(),
        format!("http://{addr}"),
        "--token".into(),
        token.clone(),
    ]);
    let out = common::uploads::run_cli(args).await;
    server.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("trace set 1\t"), "{stdout}");
    assert!(stdout.contains("\t2 traces\t"), "{stdout}");
    assert_eq!(set_rows(&app).await, 1);
}

#[tokio::test]
async fn an_archive_that_expands_past_the_limit_is_refused_and_leaves_nothing() {
    let mut app = common::spawn_app_with(perfjournal::config::Config {
        max_decompressed_bytes: 1 << 20,
        ..perfjournal::config::Config::default()
    })
    .await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    // Two ranks of 800 steps each: well over 1 MiB unpacked, a few KB packed.
    let ranks: Vec<(i64, Vec<u8>)> = (0..2)
        .map(|r| (r, rank_trace(r, 2, 500.0, 300.0, 800)))
        .collect();
    assert!(ranks.iter().map(|r| r.1.len()).sum::<usize>() > 1 << 20);
    let r = post_set_upload(
        &mut app,
        &token,
        "name=bomb",
        &[("file", Some("bomb.tar.gz"), tar_gz(&ranks))],
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(
        r.body
            .contains("bomb.tar.gz: its traces expand past 1048576 bytes"),
        "{}",
        r.body
    );
    assert_eq!(common::uploads::artifact_count(&app).await, 0);
    assert_eq!(set_rows(&app).await, 0);
}

/// A set whose traces all failed has no summary: the document says `summary` may be null.
#[tokio::test]
async fn the_document_lets_a_summary_be_null() {
    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let doc = app
        .api("GET", "/api/v1/openapi.json", &token, None)
        .await
        .json();
    let summary = &doc["components"]["schemas"]["TraceSetDoc"]["properties"]["summary"];
    let nullable = summary["type"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "null"))
        || summary["oneOf"]
            .as_array()
            .is_some_and(|o| o.iter().any(|s| s["type"] == "null"));
    assert!(nullable, "{summary}");
}
