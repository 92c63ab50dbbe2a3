//! A record you can trust (issue 11): no page view writes, no number in the wrong
//! unit, one reading of every amount, fills that merge, comparisons checked against
//! step 0, one definition of a phase's share.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use axum::http::StatusCode;
use common::incident::{
    incident_with_result, link_comparison, save, upload_bench, vllm_scrape, DECODE_21_MS, STEP0,
    STEP1,
};
use common::tables::{row_counts, write_counters};
use common::TestApp;
use sqlx::PgPool;

async fn app_with_investigation() -> (TestApp, String) {
    common::app_with_investigation("p95 TTFT 3.2 s against 800 ms").await
}

/// Row counts of every table in the app's schema.
/// Internal links of a page: `href` and `hx-get` values that stay on the site.
fn links(body: &str) -> Vec<String> {
    let html = scraper::Html::parse_document(body);
    let sel = scraper::Selector::parse("[href], [hx-get]").unwrap();
    html.select(&sel)
        .flat_map(|e| [e.value().attr("href"), e.value().attr("hx-get")])
        .flatten()
        .filter(|h| h.starts_with('/') && !h.starts_with("//"))
        .map(|h| h.split('#').next().unwrap_or_default().to_string())
        .filter(|h| !h.is_empty() && !h.starts_with("/static/") && h != "/logout")
        .collect()
}

#[tokio::test]
async fn a_crawl_of_every_page_as_an_editor_writes_nothing() {
    let (mut app, url) = app_with_investigation().await;
    app.seed_demo().await;
    // Step 0 only: every later step's page carries the skip warning.
    save(&mut app, &url, 0, STEP0).await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let scrape = "vllm:num_requests_running{model_name=\"m\"} 3\n\
                  vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"m\"} 10\n\
                  vllm:time_to_first_token_seconds_bucket{le=\"1.0\",model_name=\"m\"} 18\n\
                  vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 20\n\
                  vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 12\n\
                  vllm:time_to_first_token_seconds_count{model_name=\"m\"} 20\n";
    common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("metrics.prom&investigation={id}"),
        scrape.as_bytes().to_vec(),
    )
    .await;
    // The search index catches up with what was written before the crawl.
    perfjournal::search::refresh(&app.pool).await.unwrap();

    // What the setup queued for the search index is indexed first (the server's indexer
    // would have done it by now), so the crawl starts from a quiet database.
    app.state.search.catch_up(&app.pool).await.unwrap();
    let counts = row_counts(&app.pool).await;
    let counters = write_counters(&app.pool).await;

    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<String> = ["/", "/investigations", "/journal", "/artifacts"]
        .into_iter()
        .map(String::from)
        .collect();
    for step in 0..8 {
        queue.push_back(format!("{url}/steps/{step}"));
    }
    for api in ["/api/v1/investigations", "/api/v1/journal"] {
        queue.push_back(api.to_string());
    }
    queue.push_back(format!("/api/v1/investigations/{id}"));
    while let Some(path) = queue.pop_front() {
        if seen.len() >= 400 || !seen.insert(path.clone()) {
            continue;
        }
        let r = app.get(&path).await;
        // An estimator link with inputs still to fill answers 422 with its form.
        assert!(
            r.status.is_success()
                || r.status.is_redirection()
                || (r.status == StatusCode::UNPROCESSABLE_ENTITY
                    && path.starts_with("/estimators/")),
            "GET {path}: {} {}",
            r.status,
            r.body
        );
        let html = r
            .headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or_default().starts_with("text/html"));
        if html {
            queue.extend(links(&r.body).into_iter().filter(|l| !seen.contains(l)));
        }
    }
    assert!(seen.len() > 40, "crawled only {seen:?}");
    for must in [
        format!("{url}/steps/5"),
        "/estimators".to_string(),
        "/search".to_string(),
    ] {
        assert!(seen.contains(&must), "{must} not crawled: {seen:?}");
    }
    assert!(
        seen.iter().any(|p| p.contains("from_artifact=")),
        "no fill link crawled: {seen:?}"
    );

    assert_eq!(row_counts(&app.pool).await, counts, "row counts changed");
    assert_eq!(
        write_counters(&app.pool).await,
        counters,
        "rows were inserted, updated or deleted by GETs"
    );
}

#[tokio::test]
async fn an_expected_value_must_be_in_the_unit_the_step_observes() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut app, &url, 4, DECODE_21_MS).await;
    let inputs = "model=llama-3.1-8b gpu=h100-sxm batch=64 context=4096 measured_itl_ms=21";
    let expected_rows = |pool: PgPool| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT (SELECT count(*) FROM investigation_expected) + (SELECT count(*) FROM investigation_events)",
        )
        .fetch_one(&pool)
        .await
        .unwrap()
    };
    let before = expected_rows(app.pool.clone()).await;
    // The ratio against the measured time is refused, naming both units; nothing written.
    let r = app
        .post_form(
            &format!("{url}/steps/4/expected"),
            &[
                ("estimator", "decode-floor"),
                ("inputs", inputs),
                ("result_key", "floor_over_measured"),
                ("observed", "21"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let e = r.select("[data-field=result_key]");
    assert!(
        e[0].contains("a plain ratio")
            && e[0].contains("a time in ms")
            && e[0].contains("floor_ms"),
        "{e:?}"
    );
    assert_eq!(expected_rows(app.pool.clone()).await, before);

    // Result left blank: the estimator's expected step, expected_ms, is the expected
    // value (the floor is a limit, not an expectation).
    let r = app
        .post_form(
            &format!("{url}/steps/4/expected"),
            &[
                ("estimator", "decode-floor"),
                ("inputs", inputs),
                ("observed", "21"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let key: String = sqlx::query_scalar("SELECT result_key FROM investigation_expected")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(key, "expected_ms");
    let p = app.get(&format!("{url}/steps/4")).await;
    assert_eq!(p.select(".expected-figures .gap-ratio-cell"), ["1.19×"]);

    // An expected value attached under the old rules (a ratio against a time) is
    // flagged and shows no gap.
    sqlx::query(
        "UPDATE investigation_expected SET result_key = 'floor_over_measured', expected = 0.716, unit = ''",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let p = app.get(&format!("{url}/steps/4")).await;
    let cell = p.select(".expected-figures .gap-ratio-cell");
    assert!(cell[0].starts_with('—'), "{cell:?}");
    let flag = p.select(".expected-figures .unit-mismatch");
    assert!(
        flag[0].contains("attached before units were checked"),
        "{flag:?}"
    );
    let overview = app.get(&url).await;
    assert_eq!(overview.select("table.expected .unit-mismatch").len(), 1);
    let token = app.api_token("ada").await;
    let id = url.rsplit('/').next().unwrap();
    let api = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &token, None)
        .await;
    let observed = &api.json()["steps"][4]["observed"];
    assert_eq!(observed["unit"], "ms", "{observed}");
    assert_eq!(observed["dimension"], "time", "{observed}");
    let step4 = &api.json()["steps"][4]["expected"];
    assert!(step4["ratio"].is_null(), "{step4}");
    assert!(step4["unit_problem"].is_string(), "{step4}");
}

#[tokio::test]
async fn every_step_reads_amounts_the_same_way() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut app, &url, 1, STEP1).await;
    // Step 2 with p50 and p90 only, in seconds and milliseconds.
    save(
        &mut app,
        &url,
        2,
        &[
            ("queue_wait.p50", "1.9 s"),
            ("queue_wait.p90", "2,700 ms"),
            ("prefill.p50", "180"),
            ("prefill.p99", "0.31 s"),
        ],
    )
    .await;
    // Step 3 takes "620 ms" like step 1 takes "800 ms".
    save(
        &mut app,
        &url,
        3,
        &[
            ("gpu_total", "620 ms"),
            ("cpu_total", "0.2 s"),
            ("wall", "3,200 ms"),
        ],
    )
    .await;
    let data: serde_json::Value =
        sqlx::query_scalar("SELECT data FROM investigation_steps WHERE step = 3")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(data["gpu_total"], 620.0);
    assert_eq!(data["cpu_total"], 200.0);
    assert_eq!(data["wall"], 3200.0);
    let data: serde_json::Value =
        sqlx::query_scalar("SELECT data FROM investigation_steps WHERE step = 2")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(data["rows"][0]["p90"], 2700.0);
    assert_eq!(data["rows"][1]["p99"], 310.0);

    // A percentage where a time belongs: 422 naming both units, nothing written.
    let steps_before: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_steps")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let r = app
        .post_form(
            &format!("{url}/steps/4"),
            &[("decode.measured_ms", "46%"), ("decode.floor_ms", "15 ms")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let e = r.select("[data-field='decode.measured_ms']");
    assert!(
        e[0].contains("a ratio in %") && e[0].contains("a time"),
        "{e:?}"
    );
    let steps_after: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_steps")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(steps_after, steps_before);
}

#[tokio::test]
async fn step_zero_names_map_to_the_catalog_and_step_four_is_never_done_without_its_floor() {
    let (mut app, url) = app_with_investigation().await;
    let mut step0: Vec<(&str, &str)> = STEP0
        .iter()
        .filter(|(k, _)| *k != "model" && *k != "gpu_type")
        .copied()
        .collect();
    step0.push(("model", "meta-llama/Llama-3.1-8B-Instruct"));
    step0.push(("gpu_type", "H100 SXM 80GB"));
    save(&mut app, &url, 0, &step0).await;
    let p = app.get(&format!("{url}/steps/0")).await;
    assert!(p.select("datalist#catalog-models option").len() > 5);
    let matches = p.select(".catalog-match");
    assert!(matches[0].contains("llama-3.1-8b"), "{matches:?}");
    assert!(matches[1].contains("h100-sxm"), "{matches:?}");
    assert!(p.select(".catalog-flag").is_empty());
    // Step 4's floor is estimated from those names.
    save(&mut app, &url, 4, DECODE_21_MS).await;
    let p = app.get(&format!("{url}/steps/4")).await;
    assert_eq!(p.select(".rail-step.state-done").len(), 2, "steps 0 and 4");

    // An unknown model is flagged at step 0 with the nearest catalog names, and step 4
    // cannot be saved on it: nothing is written, and it is not done.
    let (mut app, url) = app_with_investigation().await;
    let mut step0: Vec<(&str, &str)> = STEP0
        .iter()
        .filter(|(k, _)| *k != "model")
        .copied()
        .collect();
    step0.push(("model", "llama-9b"));
    save(&mut app, &url, 0, &step0).await;
    let p = app.get(&format!("{url}/steps/0")).await;
    let flag = p.select(".catalog-flag[data-field=model]");
    assert!(
        flag[0].contains("nearest in the catalog: llama-3.1-8b"),
        "{flag:?}"
    );
    let r = app.post_form(&format!("{url}/steps/4"), DECODE_21_MS).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let e = r.select("[data-field='decode.floor_ms']");
    assert!(e[0].contains("unknown model `llama-9b`"), "{e:?}");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_steps WHERE step = 4")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

/// The incident recorded through step 7: the app, the investigation's address and id,
/// and an API token.
async fn recorded_incident() -> (TestApp, String, i64, String) {
    let (mut app, url) = app_with_investigation().await;
    incident_with_result(&mut app, &url).await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    (app, url, id, token)
}

/// Drafts the investigation's journal entry and answers its RESULT.
async fn drafted_result(app: &mut TestApp, url: &str) -> String {
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    sqlx::query_scalar("SELECT result FROM journal_entries")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_comparison_of_another_setup_never_replaces_the_recorded_result() {
    let (mut app, url, id, token) = recorded_incident().await;
    // Bench files of a 70B model on eight GPUs, not the investigation's 8B on one.
    let before = upload_bench(&mut app, &token, "70b-before.json", "a").await;
    let same = upload_bench(&mut app, &token, "70b-copy.json", "a").await;
    // The same file on both sides is refused with that reason; nothing is stored.
    let r = link_comparison(&mut app, &token, [before, same], id).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("the same file (sha256"), "{}", r.body);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM comparisons")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);

    // A 70B bench linked to the 8B investigation is invalid, naming the model.
    let after = upload_bench(&mut app, &token, "70b-after.json", "b").await;
    let r = link_comparison(&mut app, &token, [before, after], id).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["verdict"], "invalid_comparison");
    let reasons = doc["reasons"].to_string();
    assert!(
        reasons.contains(
            "model: step 0 froze llama-3.1-8b, this has meta-llama/Llama-3.3-70B-Instruct"
        ),
        "{reasons}"
    );

    // The draft keeps step 7's RESULT and says the comparison was not used.
    let result = drafted_result(&mut app, &url).await;
    assert!(
        result.contains("3,200 ms") && result.contains("780 ms"),
        "{result}"
    );
    assert!(
        result.contains("A linked comparison was not used for this RESULT: Invalid comparison"),
        "{result}"
    );
}

fn input_value(page: &common::Reply, name: &str) -> String {
    let html = page.html();
    let sel = scraper::Selector::parse(&format!("input[name='{name}']")).unwrap();
    html.select(&sel)
        .next()
        .and_then(|e| e.value().attr("value"))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn filling_from_an_artifact_merges_says_what_changed_and_warns_of_another_setup() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(
        &mut app,
        &url,
        2,
        &[
            ("tokenize.p50", "4"),
            ("tokenize.p95", "9"),
            ("queue_wait.p50", "100"),
            ("queue_wait.p95", "200"),
        ],
    )
    .await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let scrape = common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("vllm-70b.prom&investigation={id}"),
        vllm_scrape("meta-llama/Llama-3.3-70B-Instruct"),
    )
    .await;
    let p = app
        .get(&format!("{url}/steps/2?from_artifact={scrape}"))
        .await;
    assert_eq!(p.status, StatusCode::OK);
    // The histograms set queue, prefill and decode; the typed tokenize row stays.
    assert_eq!(input_value(&p, "tokenize.p50"), "4");
    assert_eq!(input_value(&p, "tokenize.p95"), "9");
    assert_ne!(input_value(&p, "queue_wait.p50"), "100");
    assert!(!input_value(&p, "prefill.p95").is_empty());
    let changed = p.select(".fill-notice .fill-changed");
    assert!(
        changed[0].contains("queue_wait.p50") && changed[0].contains("prefill.p95"),
        "{changed:?}"
    );
    let kept = p.select(".fill-notice .fill-kept");
    assert!(kept[0].contains("tokenize.p50"), "{kept:?}");
    // Each histogram value states its bucket.
    let buckets = p.select("small.bucket[data-field='queue_wait.p50']");
    assert!(buckets[0].contains("ms bucket"), "{buckets:?}");
    // The scrape is of a 70B model; step 0 froze the 8B.
    let w = p.select(".fill-setup-warning");
    assert!(w[0].contains("model: step 0 froze llama-3.1-8b"), "{w:?}");
    // Nothing was written by the fill (a GET).
    let stored: serde_json::Value =
        sqlx::query_scalar("SELECT data FROM investigation_steps WHERE step = 2")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored["rows"][1]["p50"], 100.0);
}

#[tokio::test]
async fn prometheus_fills_only_the_steps_its_histograms_support() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let vllm = common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("vllm.prom&investigation={id}"),
        vllm_scrape("meta-llama/Llama-3.1-8B-Instruct"),
    )
    .await;
    let page = app.get(&format!("/artifacts/{vllm}")).await;
    let offered = page.select("#use-in a");
    assert_eq!(offered.len(), 2, "{offered:?}");
    assert!(offered[0].starts_with("step 1") && offered[1].starts_with("step 2"));
    let p = app
        .get(&format!("{url}/steps/2?from_artifact={vllm}"))
        .await;
    assert_eq!(p.select(".fill-notice.ok").len(), 1);
    for phase in ["queue_wait", "prefill", "decode"] {
        assert!(
            !input_value(&p, &format!("{phase}.p50")).is_empty(),
            "{phase}"
        );
    }
    assert!(p.select(".fill-setup-warning").is_empty());

    // SGLang's documented example has TTFT, E2E and ITL histograms but no phase ones:
    // it fills step 1 (TTFT p95, with its bucket) and is not offered for step 2.
    let Some(dir) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES") else {
        assert!(
            std::env::var_os("PERFJOURNAL_REQUIRE_ALL").is_none(),
            "PERFJOURNAL_REAL_FIXTURES is unset"
        );
        eprintln!("skipped the SGLang half: PERFJOURNAL_REAL_FIXTURES is unset");
        return;
    };
    let body = std::fs::read(
        std::path::Path::new(&dir).join("prometheus/sglang_docs_production_metrics_example.prom"),
    )
    .unwrap();
    let sglang = common::uploads::upload_analyzed(
        &mut app,
        &token,
        &format!("sglang.prom&investigation={id}"),
        body,
    )
    .await;
    let page = app.get(&format!("/artifacts/{sglang}")).await;
    let offered = page.select("#use-in a");
    assert_eq!(offered.len(), 1, "{offered:?}");
    assert!(offered[0].starts_with("step 1"), "{offered:?}");
    let p = app
        .get(&format!("{url}/steps/1?from_artifact={sglang}"))
        .await;
    assert!(!input_value(&p, "observed").is_empty());
    // Its p95 lies past the last finite bucket: the note says the value is a lower bound.
    let b = p.select("small.bucket[data-field=observed]");
    assert!(b[0].contains("a lower bound"), "{b:?}");
    // Step 2's picker does not list it.
    let p = app.get(&format!("{url}/steps/2")).await;
    let options = p.select("#from-artifact option");
    assert!(
        options.iter().all(|o| !o.contains("sglang.prom")),
        "{options:?}"
    );
    let p = app
        .get(&format!("{url}/steps/2?from_artifact={sglang}"))
        .await;
    assert_eq!(p.select(".fill-notice.error").len(), 1);
}

/// Per-request telemetry whose queue wait has a heavy tail, so a phase's p95 over the
/// p95 TTFT is far from its share of the TTFT time.
fn skewed_request_log(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let u = ((i * 37) % n) as f64 / n as f64;
        let queue = if u > 0.9 { 4000.0 * u } else { 50.0 * u };
        let prefill = 150.0 + 300.0 * u;
        let first = 2.0 + queue + prefill;
        out.push_str(&format!(
            "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"tokenize_ms\":2,\"queue_wait_ms\":{queue},\"prefill_ms\":{prefill},\"first_token_ms\":{first},\"decode_ms\":900,\"total_ms\":{}}}\n",
            1_764_400_000 + i,
            first + 900.0
        ));
    }
    out.into_bytes()
}

/// phase label → the cell of column `col` of the table `css`.
fn column(page: &common::Reply, css: &str, col: usize) -> BTreeMap<String, String> {
    let html = page.html();
    let rows = scraper::Selector::parse(&format!("{css} tbody tr")).unwrap();
    let cells = scraper::Selector::parse("td").unwrap();
    html.select(&rows)
        .map(|r| {
            let c: Vec<String> = r
                .select(&cells)
                .map(|c| c.text().collect::<String>().trim().to_string())
                .collect();
            (c[0].clone(), c.get(col).cloned().unwrap_or_default())
        })
        .collect()
}

#[tokio::test]
async fn the_analysis_and_the_request_page_give_one_share_per_phase() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut app, &url, 1, STEP1).await;
    let inv: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let token = app.api_token("ada").await;
    let name = format!("skewed.jsonl&investigation={inv}");
    let id =
        common::uploads::upload_analyzed(&mut app, &token, &name, skewed_request_log(400)).await;
    let shown = app.get(&format!("/artifacts/{id}")).await;
    let analysis = column(&shown, "section#section-phases table", 7);
    let page = app.get(&format!("/artifacts/{id}/requests")).await;
    let decomposition = column(&page, "#decomposition", 6);
    for phase in ["tokenize", "queue wait", "prefill"] {
        let a = &analysis[phase];
        assert!(a.ends_with('%'), "{phase}: {analysis:?}");
        assert_eq!(
            &decomposition[phase], a,
            "{phase}: page {decomposition:?} vs analysis {analysis:?}"
        );
    }
    // Step 2 filled from the log (the metric is TTFT) carries the same shares.
    let filled = app.get(&format!("{url}/steps/2?from_artifact={id}")).await;
    for (phase, slug) in [("queue wait", "queue_wait"), ("prefill", "prefill")] {
        let share: f64 = input_value(&filled, &format!("{slug}.share"))
            .parse()
            .unwrap();
        assert_eq!(format!("{:.1}%", share * 100.0), analysis[phase], "{phase}");
    }
    // The definition is stated on both pages, and on step 2.
    assert!(page.select(".share-definition")[0].contains("Σ phase ms ÷ Σ TTFT ms"));
    assert!(filled.select(".share-definition")[0].contains("Σ phase ÷ Σ metric"));
    assert!(shown.body.contains("Σ phase ms ÷ Σ TTFT ms"));
}

#[tokio::test]
async fn guidance_follows_what_earlier_steps_established() {
    let (mut app, url) = app_with_investigation().await;
    incident_with_result(&mut app, &url).await;
    // Step 2: queue wait is 84% of the p95 TTFT.
    save(
        &mut app,
        &url,
        2,
        &[
            ("queue_wait.p50", "1,900"),
            ("queue_wait.p95", "2,690"),
            ("prefill.p50", "150"),
            ("prefill.p95", "300"),
        ],
    )
    .await;
    // Step 3: both processors mostly idle.
    save(
        &mut app,
        &url,
        3,
        &[
            ("gpu_total", "620 ms"),
            ("cpu_total", "200 ms"),
            ("wall", "3,200 ms"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/3")).await;
    let suspects = p.select("ol.suspects li");
    assert!(
        suspects[0].starts_with("admission or capacity"),
        "{suspects:?}"
    );
    assert!(
        suspects.iter().all(|s| !s.contains("queue was empty")),
        "{suspects:?}"
    );
    // Step 4: a decode measurement, which says nothing about TTFT.
    save(&mut app, &url, 4, DECODE_21_MS).await;
    // Step 4's findings are bounded by step 3's: the GPU was mostly idle.
    let p = app.get(&format!("{url}/steps/4")).await;
    let note = p.select(".regime-context");
    assert!(note[0].contains("busy only 19%"), "{note:?}");
    // Step 6: the best candidate's ceiling is 1.25×, far below 3,200 → 780 ms (4.1×).
    save(
        &mut app,
        &url,
        6,
        &[
            ("candidates[0].description", "chunked prefill"),
            ("candidates[0].share", "20%"),
            ("candidates[0].speedup", "100"),
            ("candidates[0].effort_days", "1"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/7")).await;
    let flag = p.select(".ceiling-flag");
    assert!(
        flag[0].contains("beats step 6's Amdahl ceiling")
            && flag[0].contains("something else changed"),
        "{flag:?}"
    );
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let (diagnosis, result): (String, String) =
        sqlx::query_as("SELECT diagnosis, result FROM journal_entries")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(diagnosis.contains("Queue wait dominates"), "{diagnosis}");
    assert!(!diagnosis.contains("bandwidth floor"), "{diagnosis}");
    assert!(
        result.contains("the ceiling was wrong or something else changed"),
        "{result}"
    );
}

#[tokio::test]
async fn a_comparison_stored_before_the_setup_check_is_caught_when_drafting() {
    let (mut app, url, id, token) = recorded_incident().await;
    let before = upload_bench(&mut app, &token, "70b-before.json", "a").await;
    let after = upload_bench(&mut app, &token, "70b-after.json", "b").await;
    // Made without the investigation (nothing to check against), then linked, as a
    // comparison stored under the old rules would be.
    let body = serde_json::json!({"baseline": [before], "candidate": [after],
        "variable": "chunked prefill"});
    let r = app
        .api("POST", "/api/v1/comparisons", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_ne!(r.json()["verdict"], "invalid_comparison");
    sqlx::query("UPDATE comparisons SET investigation_id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let result = drafted_result(&mut app, &url).await;
    assert!(result.starts_with("p95 TTFT"), "{result}");
    assert!(
        result.contains("not used for this RESULT: Invalid comparison for this investigation: Not the investigation's setup (baseline runs) — model: step 0 froze llama-3.1-8b"),
        "{result}"
    );
}
