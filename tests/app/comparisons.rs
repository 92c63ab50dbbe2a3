//! Before/after comparisons end to end, on generated distributions: every verdict,
//! the validity checks, agreement with a numpy/scipy reference, bad input, roles,
//! the pages and the prediction record.

use crate::common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::uploads::upload_analyzed;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use perfjournal::core::stats::{bootstrap_diff_ci, BootstrapConfig, Statistic};
use serde_json::{json, Value};

async fn editor_app() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

/// A skewed, latency-like TTFT sample in ms: `scale · (1 + 0.6u + 1.5u⁴)` with
/// `u = ((37i mod n) + ½)/n`, stored in the file as seconds (÷ 1000) and read back
/// × 1000 by the analyzer — the reference script does the same arithmetic.
fn ttft_ms(scale: f64, n: usize) -> Vec<f64> {
    ttft_seconds(scale, n).iter().map(|s| s * 1000.0).collect()
}

/// The same sample as the file stores it.
fn ttft_seconds(scale: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = (((i * 37) % n) as f64 + 0.5) / n as f64;
            scale * (1.0 + 0.6 * u + 1.5 * (u * u * u * u)) / 1000.0
        })
        .collect()
}

/// What one generated vLLM `bench serve --save-result` file looks like.
#[derive(Clone)]
struct Bench {
    tag: &'static str,
    n: usize,
    ttft_scale: f64,
    itl_ms: f64,
    max_concurrency: u64,
    num_prompts: Option<usize>,
    failed: usize,
    output_len: u64,
    throughput: f64,
}

impl Bench {
    fn new(tag: &'static str, n: usize, ttft_scale: f64) -> Bench {
        Bench {
            tag,
            n,
            ttft_scale,
            itl_ms: 20.0,
            max_concurrency: 16,
            num_prompts: None,
            failed: 0,
            output_len: 8,
            throughput: 1000.0,
        }
    }

    fn json(&self) -> Vec<u8> {
        let ttfts = ttft_seconds(self.ttft_scale, self.n);
        let total = self.n + self.failed;
        let mut ttft_s = Vec::new();
        let mut itls = Vec::new();
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (i, t) in ttfts.iter().enumerate() {
            ttft_s.push(*t);
            let u = ((i * 13) % 10) as f64 / 10.0;
            let gap = self.itl_ms * (1.0 + 0.1 * u) / 1000.0;
            itls.push(vec![gap; self.output_len as usize - 1]);
            out.push(self.output_len);
            errors.push(String::new());
        }
        for _ in 0..self.failed {
            ttft_s.push(0.0);
            itls.push(vec![]);
            out.push(0);
            errors.push("Timeout while waiting for the server".to_string());
        }
        json!({
            "date": format!("20261129-{}", self.tag), "backend": "vllm",
            "model_id": "meta-llama/Llama-3.1-8B-Instruct",
            "num_prompts": self.num_prompts.unwrap_or(total),
            "request_rate": "inf", "max_concurrency": self.max_concurrency,
            "completed": self.n, "failed": self.failed,
            "total_output_tokens": self.n as u64 * self.output_len,
            "request_throughput": self.throughput / self.output_len as f64,
            "output_throughput": self.throughput,
            "input_lens": vec![200; total], "output_lens": out,
            "ttfts": ttft_s, "itls": itls, "errors": errors
        })
        .to_string()
        .into_bytes()
    }
}

async fn bench(app: &mut TestApp, token: &str, b: &Bench) -> i64 {
    upload_analyzed(app, token, &format!("{}.json", b.tag), b.json()).await
}

async fn compare(app: &mut TestApp, token: &str, body: Value) -> common::Reply {
    app.api("POST", "/api/v1/comparisons", token, Some(body))
        .await
}

async fn created(app: &mut TestApp, token: &str, body: Value) -> Value {
    let r = compare(app, token, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.json()
}

/// Creates a comparison and checks its verdict.
async fn judged(app: &mut TestApp, token: &str, body: Value, verdict: &str) -> Value {
    let doc = created(app, token, body).await;
    assert_eq!(doc["verdict"], verdict, "{}", reasons(&doc));
    doc
}

fn has_reason(doc: &Value, needle: &str) {
    let all = reasons(doc);
    assert!(all.contains(needle), "{needle:?} not in: {all}");
}

/// A fresh app with two generated runs uploaded and compared; `extra` adds fields
/// to the request. Answers the app, the token, the two artifact ids and the result.
async fn compared(before: Bench, after: Bench, extra: Value) -> (TestApp, String, [i64; 2], Value) {
    let (mut app, token) = editor_app().await;
    let b = bench(&mut app, &token, &before).await;
    let a = bench(&mut app, &token, &after).await;
    let mut body = json!({"baseline": [b], "candidate": [a], "variable": "chunked prefill"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let doc = created(&mut app, &token, body).await;
    (app, token, [b, a], doc)
}

fn reasons(doc: &Value) -> String {
    doc["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(" | ")
}

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn improved_confirmed_and_regressed() {
    let (mut app, token) = editor_app().await;
    let base = bench(&mut app, &token, &Bench::new("base", 200, 100.0)).await;
    let better = bench(&mut app, &token, &Bench::new("better", 200, 70.0)).await;
    let worse = bench(&mut app, &token, &Bench::new("worse", 200, 130.0)).await;

    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [better], "variable": "enable chunked prefill"}),
        "improved",
    )
    .await;
    has_reason(&doc, "did not prove");
    let p95 = &doc["metrics"]["ttft_ms"]["p95"];
    for k in ["before", "after", "diff", "ci_low", "ci_high", "p_value"] {
        assert!(p95[k].is_number(), "{k}: {p95}");
    }
    assert!(p95["ci_high"].as_f64().unwrap() < 0.0);
    assert!((p95["ratio"].as_f64().unwrap() - 0.7).abs() < 1e-9);
    for series in ["itl_ms", "tpot_ms", "e2el_ms"] {
        assert!(doc["metrics"][series]["p99"].is_object(), "{series}");
    }
    // ITL did not change: that series is "no change", not a regression.
    assert_eq!(doc["metrics"]["itl_ms"]["p50"]["verdict"], "no_change");
    assert_eq!(doc["itl_source"], "per_token_gaps");
    // One run per side: throughput is reported without a verdict.
    assert!(doc["throughput"]["judged"].is_null());
    let result = doc["journal_result"].as_str().unwrap();
    let id = doc["id"].as_i64().unwrap();
    assert!(
        result.starts_with("Improved: p95 TTFT fell from"),
        "{result}"
    );
    assert!(result.contains("95% CI"), "{result}");
    assert!(
        result.ends_with(&format!("comparison: /comparisons/{id}")),
        "{result}"
    );

    // Inside an investigation whose diagnosis names this change, the cause is proven
    // without saying so, and the comparison becomes the journal entry's RESULT.
    let inv = app.open_investigation(&token, "TTFT tail").await;
    for (step, body) in [
        (
            2,
            json!({"queue_wait": {"p50": 900, "p95": 2300, "p99": 2900}}),
        ),
        (
            7,
            json!({"change": "Enable chunked prefill", "after_value": 780,
                   "findings": "22k-token prompts blocked the queue", "verdict": "improved",
                   "quality": "200 paired generations identical", "effort": "30 minutes"}),
        ),
    ] {
        let r = app
            .api(
                "PUT",
                &format!("/api/v1/investigations/{inv}/steps/{step}"),
                &token,
                Some(body),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "step {step}: {}", r.body);
    }
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [better], "variable": "enable chunked prefill",
               "investigation": inv}),
        "confirmed",
    )
    .await;
    assert_eq!(doc["investigation"], inv);
    let latest = perfjournal::comparisons::latest_for_investigation(&app.pool, inv)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.id, doc["id"].as_i64().unwrap());
    assert_eq!(
        latest.journal_result(),
        doc["journal_result"].as_str().unwrap()
    );
    let r = app
        .post_form(&format!("/investigations/{inv}/journal"), &[])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let entry = app.get(r.location().unwrap()).await;
    assert!(
        entry.body.contains(&format!("/comparisons/{}", latest.id)),
        "the drafted entry quotes the comparison as its RESULT"
    );
    let r = app
        .api("POST", "/api/v1/comparisons", &token,
             Some(json!({"baseline": [base], "candidate": [better], "variable": "x", "investigation": inv + 1000})))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "investigation");

    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [worse], "variable": "enable chunked prefill",
               "cause_proven": true}),
        "regressed",
    )
    .await;
    has_reason(&doc, "worsening side");

    // Read back through the API.
    let id = doc["id"].as_i64().unwrap();
    let r = app
        .api("GET", &format!("/api/v1/comparisons/{id}"), &token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["verdict"], "regressed");
    assert_eq!(r.json()["baseline"], json!([base]));
    let missing = app
        .api("GET", "/api/v1/comparisons/9999", &token, None)
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let openapi = app.api("GET", "/api/v1/openapi.json", &token, None).await;
    let paths = &openapi.json()["paths"];
    assert!(paths["/comparisons"]["post"].is_object(), "{paths}");
    assert!(paths["/comparisons/{id}"]["get"].is_object(), "{paths}");
}

#[tokio::test]
async fn inconclusive_from_tiny_samples_says_how_many_more() {
    let (_app, _, _, doc) = compared(
        Bench::new("tiny-a", 6, 100.0),
        Bench::new("tiny-b", 6, 92.0),
        json!({"metric": "ttft_ms", "percentile": "p50"}),
    )
    .await;
    assert_eq!(doc["verdict"], "inconclusive", "{}", reasons(&doc));
    let p50 = &doc["metrics"]["ttft_ms"]["p50"];
    assert!(p50["ci_low"].as_f64().unwrap() < 0.0 && p50["ci_high"].as_f64().unwrap() > 0.0);
    let more = p50["more_requests_per_side"].as_u64().unwrap();
    assert!(more > 6, "{more}");
    has_reason(&doc, "includes 0");
    has_reason(&doc, "more requests per side");
    has_reason(&doc, "would narrow the interval enough to tell");
}

#[tokio::test]
async fn invalid_when_a_second_variable_changes() {
    let (mut app, token) = editor_app().await;
    let base = bench(&mut app, &token, &Bench::new("base", 200, 100.0)).await;
    let mut other = Bench::new("conc32", 200, 70.0);
    other.max_concurrency = 32;
    let conc = bench(&mut app, &token, &other).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [conc], "variable": "enable chunked prefill"}),
        "invalid_comparison",
    )
    .await;
    has_reason(&doc, "Concurrency differs (16 before, 32 after)");
    let setting = doc["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "max_concurrency")
        .unwrap()
        .clone();
    assert_eq!(setting["status"], "differs");
    // Every row carries the verdict: no number of an invalid pairing is "improved".
    assert_eq!(
        doc["metrics"]["ttft_ms"]["p50"]["verdict"],
        "invalid_comparison"
    );
    assert!(doc["journal_result"]
        .as_str()
        .unwrap()
        .starts_with("Invalid comparison"));

    // A different prompt count is a different workload.
    let mut fewer = Bench::new("fewer", 150, 70.0);
    fewer.num_prompts = Some(150);
    let fewer = bench(&mut app, &token, &fewer).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [fewer], "variable": "enable chunked prefill"}),
        "invalid_comparison",
    )
    .await;
    let text = reasons(&doc);
    assert!(
        text.contains("Prompt count differs (200 before, 150 after)"),
        "{text}"
    );
    assert!(text.contains("Request count differs"), "{text}");

    // Entered step-0 records: a second setting changed without being declared.
    let same = bench(&mut app, &token, &Bench::new("same", 200, 70.0)).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [same], "variable": "chunked prefill",
               "baseline_config": {"chunked_prefill": false, "tp": 4},
               "candidate_config": {"chunked_prefill": true, "tp": 8}}),
        "invalid_comparison",
    )
    .await;
    has_reason(
        &doc,
        "Also changed without being declared: Tensor parallelism",
    );

    // Declaring concurrency makes it the experiment, not a defect.
    judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [conc], "variable": "max concurrency 16 to 32"}),
        "improved",
    )
    .await;
}

#[tokio::test]
async fn equal_defects_are_warnings_unequal_ones_break_it() {
    let (mut app, token) = editor_app().await;
    let mut a = Bench::new("fail-a", 200, 100.0);
    a.failed = 4;
    let mut b = Bench::new("fail-b", 200, 70.0);
    b.failed = 4;
    let (ia, ib) = (
        bench(&mut app, &token, &a).await,
        bench(&mut app, &token, &b).await,
    );
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [ia], "candidate": [ib], "variable": "chunked prefill"}),
        "improved",
    )
    .await;
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("On both sides (failures)"), "{warnings}");

    // Many more failures after the change: failed requests are not faster requests.
    let mut c = Bench::new("fail-c", 200, 70.0);
    c.failed = 30;
    c.num_prompts = Some(204);
    let ic = bench(&mut app, &token, &c).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [ia], "candidate": [ic], "variable": "chunked prefill"}),
        "invalid_comparison",
    )
    .await;
    has_reason(&doc, "Errors and cancellations differ");

    // Early EOS: shorter outputs after the change look faster but are less work.
    let mut d = Bench::new("short", 200, 70.0);
    d.output_len = 6;
    let id = bench(&mut app, &token, &d).await;
    let base = bench(&mut app, &token, &Bench::new("eos-base", 200, 100.0)).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [base], "candidate": [id], "variable": "chunked prefill"}),
        "invalid_comparison",
    )
    .await;
    has_reason(&doc, "Mean output length changed from 8 to 6");
}

/// Reference (numpy 2.4.6, scipy 1.17.1), for before = ttft_ms(100, 150) and
/// after = ttft_ms(85, 120):
///
/// ```python
/// import numpy as np
/// from scipy.stats import mannwhitneyu
/// def ttft(scale, n):
///     out = []
///     for i in range(n):
///         u = (((i * 37) % n) + 0.5) / n
///         ms = scale * (1.0 + 0.6 * u + 1.5 * (u * u * u * u))
///         out.append((ms / 1000.0) * 1000.0)
///     return np.array(out)
/// b, a = ttft(100.0, 150), ttft(85.0, 120)
/// mannwhitneyu(b, a, alternative="two-sided", method="asymptotic", use_continuity=True).pvalue
/// rng = np.random.default_rng(2026); B = 200_000
/// for q in (0.5, 0.95):
///     diffs = [np.quantile(rng.choice(a, a.size), q) - np.quantile(rng.choice(b, b.size), q)
///              for _ in range(B)]          # vectorized in the real script
///     np.quantile(b, q), np.quantile(a, q), np.quantile(diffs, [0.025, 0.975]), np.std(diffs)
/// ```
/// (Mann–Whitney p = 1.0733409830382532e-05; the app's p-value is the bootstrap's own,
/// checked against the core function and against its interval.)
/// p50: before 139.3775000185185, after 118.47207035092954, diff −20.90542966758896,
///      CI [−36.042222244411874, −5.779690719382927], bootstrap sd 7.66
/// p95: before 277.46883163333325, after 235.48052201108575, diff −41.9883096222475,
///      CI [−70.23985703738066, −13.950802645019536], bootstrap sd 14.27
///
/// The app's interval is a 2,000-resample bootstrap from rand_pcg's PCG-64, a
/// different stream than numpy's, so its endpoints carry Monte-Carlo error: the
/// standard error of a 2.5% quantile of B = 2,000 draws is about 0.06 bootstrap sd
/// here, so 0.3 sd (five standard errors) bounds it. Reproducibility is checked
/// exactly instead: the same core function with the same seed gives the same
/// interval to 3 significant figures (in fact bit for bit).
#[tokio::test]
async fn interval_and_p_value_agree_with_reference() {
    let (_app, _, _, doc) = compared(
        Bench::new("ref-before", 150, 100.0),
        Bench::new("ref-after", 120, 85.0),
        json!({}),
    )
    .await;
    let sig3 = |got: f64, want: f64| {
        assert!(
            (got - want).abs() <= 5e-4 * want.abs(),
            "got {got}, reference {want} (3 significant figures)"
        );
    };
    let before = ttft_ms(100.0, 150);
    let after = ttft_ms(85.0, 120);
    for (p, stat, want, ci_ref, sd) in [
        (
            "p50",
            Statistic::P50,
            (139.3775000185185, 118.47207035092954, -20.90542966758896),
            (-36.042222244411874, -5.779690719382927),
            7.66,
        ),
        (
            "p95",
            Statistic::P95,
            (277.46883163333325, 235.48052201108575, -41.9883096222475),
            (-70.23985703738066, -13.950802645019536),
            14.27,
        ),
    ] {
        let cell = &doc["metrics"]["ttft_ms"][p];
        let f = |k: &str| cell[k].as_f64().unwrap();
        sig3(f("before"), want.0);
        sig3(f("after"), want.1);
        sig3(f("diff"), want.2);
        assert_eq!(cell["n_before"], 150);
        assert_eq!(cell["n_after"], 120);
        let ours = bootstrap_diff_ci(&before, &after, stat, &BootstrapConfig::default()).unwrap();
        sig3(f("p_value"), ours.p_value);
        // The interval lies below 0, and the p-value of the same resamples agrees.
        assert!(f("ci_high") < 0.0 && f("p_value") < 0.05, "{cell}");
        sig3(f("ci_low"), ours.low);
        sig3(f("ci_high"), ours.high);
        assert!(
            (f("ci_low") - ci_ref.0).abs() < 0.3 * sd,
            "{p} low {} vs {}",
            f("ci_low"),
            ci_ref.0
        );
        assert!(
            (f("ci_high") - ci_ref.1).abs() < 0.3 * sd,
            "{p} high {} vs {}",
            f("ci_high"),
            ci_ref.1
        );
    }
}

#[tokio::test]
async fn bad_input_is_422_naming_the_field_and_nothing_is_saved() {
    let (mut app, token) = editor_app().await;
    let base = bench(&mut app, &token, &Bench::new("base", 20, 100.0)).await;
    let cand = bench(&mut app, &token, &Bench::new("cand", 20, 90.0)).await;
    let log = upload_analyzed(
        &mut app,
        &token,
        "requests.jsonl",
        request_log(20, 2000.0, "x"),
    )
    .await;
    let queued = bench(&mut app, &token, &Bench::new("queued", 20, 90.0)).await;
    sqlx::query("UPDATE artifacts SET status = 'queued' WHERE id = $1")
        .bind(queued)
        .execute(&app.pool)
        .await
        .unwrap();
    let cases = [
        (
            json!({"baseline": [9999], "candidate": [cand], "variable": "tp"}),
            "baseline",
            "no artifact 9999",
        ),
        (
            json!({"baseline": [base], "candidate": [log], "variable": "tp"}),
            "candidate",
            "both sides need the same kind",
        ),
        (
            json!({"baseline": [base], "candidate": [queued], "variable": "tp"}),
            "candidate",
            "not analyzed yet",
        ),
        (
            json!({"baseline": [], "candidate": [cand], "variable": "tp"}),
            "baseline",
            "at least one artifact",
        ),
        (
            json!({"candidate": [cand], "variable": "tp"}),
            "baseline",
            "list of artifact ids",
        ),
        (
            json!({"baseline": [base], "candidate": [cand]}),
            "variable",
            "say what was changed",
        ),
        (
            json!({"baseline": [base], "candidate": [base], "variable": "tp"}),
            "candidate",
            "on both sides",
        ),
        (
            json!({"baseline": ["x"], "candidate": [cand], "variable": "tp"}),
            "baseline",
            "not an artifact id",
        ),
        (
            json!({"baseline": [base], "candidate": [cand], "variable": "tp", "metric": "queue_wait_ms"}),
            "metric",
            "not in both sides",
        ),
        (
            json!({"baseline": [base], "candidate": [cand], "variable": "tp", "percentile": "p42"}),
            "percentile",
            "not a percentile",
        ),
        (
            json!({"baseline": [base], "candidate": [cand], "variable": "tp", "prediction": {"metric": "ttft_ms"}}),
            "prediction.low_pct",
            "percent",
        ),
        (
            json!({"baseline": [base], "candidate": [cand], "variable": "tp", "baseline_config": {"tp": "four"}}),
            "baseline_config",
            "step-0",
        ),
    ];
    for (body, field, needle) in cases {
        let r = compare(&mut app, &token, body.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        let fields = r.json()["error"]["fields"].clone();
        let hit = fields
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["field"] == field && f["message"].as_str().unwrap().contains(needle));
        assert!(hit, "{body}: expected {field} ~ {needle:?}, got {fields}");
    }
    let r = app
        .send(
            Request::post("/api/v1/comparisons")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::from("{not json"))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "body");
    assert_eq!(count(&app, "comparisons").await, 0);
    assert_eq!(count(&app, "comparison_artifacts").await, 0);
}

#[tokio::test]
async fn viewers_read_but_cannot_create() {
    let (mut app, _, [a, b], doc) = compared(
        Bench::new("a", 30, 100.0),
        Bench::new("b", 30, 80.0),
        json!({}),
    )
    .await;
    let id = doc["id"].as_i64().unwrap();
    app.add_user("vic", Role::Viewer).await;
    let viewer_token = app.api_token("vic").await;
    let body = json!({"baseline": [a], "candidate": [b], "variable": "tp"});
    let r = compare(&mut app, &viewer_token, body).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = app
        .api(
            "GET",
            &format!("/api/v1/comparisons/{id}"),
            &viewer_token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);

    let mut vic = app.new_client();
    vic.login("vic").await;
    let page = vic.get("/comparisons").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.select("form#new-comparison").is_empty(),
        "viewers get no form"
    );
    assert_eq!(
        vic.get(&format!("/comparisons/{id}")).await.status,
        StatusCode::OK
    );
    let a_s = a.to_string();
    let b_s = b.to_string();
    let r = vic
        .post_form(
            "/comparisons",
            &[("baseline", &a_s), ("candidate", &b_s), ("variable", "tp")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(count(&app, "comparisons").await, 1);
}

#[tokio::test]
async fn the_form_creates_a_comparison_and_the_page_shows_it() {
    let (mut app, token) = editor_app().await;
    let a = bench(&mut app, &token, &Bench::new("page-a", 120, 100.0)).await;
    let b = bench(&mut app, &token, &Bench::new("page-b", 120, 75.0)).await;
    let page = app.get("/comparisons").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select(&format!("#baseline-{a}")).len(), 1);
    assert_eq!(page.select(&format!("#candidate-{b}")).len(), 1);

    // Refused: nothing chosen for the candidate; the form comes back as typed.
    let (a_s, b_s) = (a.to_string(), b.to_string());
    let r = app
        .post_form(
            "/comparisons",
            &[("baseline", &a_s), ("variable", "chunked prefill")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.select("#form-errors li")[0].contains("candidate"));
    let html = r.html();
    let checked = scraper::Selector::parse(&format!("#baseline-{a}[checked]")).unwrap();
    assert_eq!(html.select(&checked).count(), 1);

    let r = app
        .post_form(
            "/comparisons",
            &[
                ("baseline", &a_s),
                ("candidate", &b_s),
                ("variable", "chunked prefill"),
                ("metric", "ttft_ms"),
                ("percentile", "p95"),
                ("cause_proven", "on"),
                ("baseline_config", "chunked_prefill = off\ntp = 4"),
                ("candidate_config", "chunked_prefill = on\ntp = 4"),
                ("prediction_low", "-30"),
                ("prediction_high", "-20"),
                ("prediction_source", "mixed-step estimator"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let target = r.location().unwrap().to_string();
    let page = app.get(&target).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#verdict-label"), ["Confirmed"]);
    assert_eq!(
        page.select("#metrics tbody tr").len(),
        16,
        "4 series × 4 percentiles"
    );
    assert_eq!(page.select("#metrics tr.headline-row td")[0], "TTFT");
    assert!(page.select("#prediction")[0].contains("inside"));
    assert!(page.select("#journal-result")[0].contains(&target));
    assert_eq!(page.select("#pictures svg").len(), 4, "one CDF per series");
    assert!(!page.body.contains("style="), "CSP forbids inline style");
    let list = app.get("/comparisons").await;
    assert_eq!(list.select("#comparisons tbody tr").len(), 1);

    // Bad step-0 lines are refused with the field named.
    let r = app
        .post_form(
            "/comparisons",
            &[
                ("baseline", &a_s),
                ("candidate", &b_s),
                ("variable", "chunked prefill"),
                ("baseline_config", "warp_speed = 9"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.select("#form-errors li")[0].contains("baseline_config"));
}

/// Per-request telemetry where queue wait is `queue` ms per request.
fn request_log(n: usize, queue: f64, tag: &str) -> Vec<u8> {
    request_log_failing(n, queue, tag, usize::MAX)
}

/// The same log with every `every`-th request ending in an error (`status` 500).
fn request_log_failing(n: usize, queue: f64, tag: &str, every: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let status = if (i + 1) % every == 0 { 500 } else { 200 };
        let u = ((i * 37) % n) as f64 / n as f64;
        let q = queue * (0.5 + u);
        let prefill = 150.0 + 30.0 * u;
        let first = 1.5 + q + prefill + 0.5;
        let decode = 2500.0 + 100.0 * u;
        out.push_str(&format!(
            "{{\"request_id\":\"{tag}{i}\",\"status\":{status},\"arrival_ts\":{},\"tokenize_ms\":1.5,\"queue_wait_ms\":{q},\"prefill_ms\":{prefill},\"first_token_ms\":{first},\"decode_ms\":{decode},\"total_ms\":{},\"prompt_tokens\":1800,\"output_tokens\":250,\"tenant\":\"t\"}}\n",
            1_764_400_000.0 + i as f64,
            first + decode
        ));
    }
    out.into_bytes()
}

#[tokio::test]
async fn every_request_counts_and_errors_come_from_the_rows() {
    let (mut app, token) = editor_app().await;
    // More rows than the 2,000 the comparison used to keep per run.
    let (log_a, log_b) = (request_log(2600, 900.0, "a"), request_log(2600, 880.0, "b"));
    let before = upload_analyzed(&mut app, &token, "all.jsonl", log_a.clone()).await;
    let after = upload_analyzed(&mut app, &token, "ok.jsonl", log_b.clone()).await;
    let doc = created(
        &mut app,
        &token,
        json!({"baseline": [before], "candidate": [after], "variable": "chunked prefill"}),
    )
    .await;
    let ttft = &doc["metrics"]["ttft_ms"]["p95"];
    assert_eq!(ttft["n_before"], 2600, "{ttft}");
    assert_eq!(ttft["n_after"], 2600, "{ttft}");
    // The stored rows give the p95 the lines of each file give (to rounding: the
    // comparison interpolates between order statistics in its own arithmetic).
    let p95_of = |log: &[u8]| {
        let values: Vec<f64> = std::str::from_utf8(log)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["first_token_ms"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        perfjournal::core::stats::quantile(&values, 0.95).unwrap()
    };
    for (side, log) in [("before", &log_a), ("after", &log_b)] {
        let (got, want) = (ttft[side].as_f64().unwrap(), p95_of(log));
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "{side}: {got} vs {want}"
        );
    }
    assert_ne!(doc["verdict"], "invalid_comparison", "{}", reasons(&doc));
    // One request in ten fails on the candidate: its rows say so, and that breaks it.
    let failing = request_log_failing(2600, 880.0, "c", 10);
    let after = upload_analyzed(&mut app, &token, "failing.jsonl", failing).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [before], "candidate": [after], "variable": "chunked prefill"}),
        "invalid_comparison",
    )
    .await;
    has_reason(&doc, "0.0% of requests before, 10.0% after");
}

#[tokio::test]
async fn request_logs_abba_with_a_prediction_record() {
    let (mut app, token) = editor_app().await;
    let a1 = upload_analyzed(&mut app, &token, "a1.jsonl", request_log(150, 2000.0, "a1")).await;
    let b1 = upload_analyzed(&mut app, &token, "b1.jsonl", request_log(150, 600.0, "b1")).await;
    let b2 = upload_analyzed(&mut app, &token, "b2.jsonl", request_log(150, 610.0, "b2")).await;
    let a2 = upload_analyzed(&mut app, &token, "a2.jsonl", request_log(150, 1990.0, "a2")).await;
    let doc = judged(
        &mut app,
        &token,
        json!({"baseline": [a1, a2], "candidate": [b1, b2], "variable": "chunked prefill",
               "cause_proven": true,
               "prediction": {"metric": "ttft_ms", "percentile": "p95", "low_pct": -80, "high_pct": -60,
                              "source": "queueing estimate"}}), "confirmed").await;
    for s in [
        "queue_wait_ms",
        "prefill_ms",
        "decode_ms",
        "ttft_ms",
        "e2el_ms",
        "tpot_ms",
    ] {
        assert!(doc["metrics"][s]["p95"].is_object(), "{s}");
    }
    // These logs carry no itl_p50_ms: ITL is each request's TPOT, and says so.
    assert!(
        doc["metrics"]["itl_ms"]["p95"].is_object(),
        "{}",
        doc["metrics"]
    );
    assert_eq!(doc["itl_source"], "tpot");
    let q = &doc["metrics"]["queue_wait_ms"]["p95"];
    assert!(q["before_run_range"].as_f64().unwrap() > 0.0, "{q}");
    assert_eq!(q["n_before"], 300);
    assert_eq!(
        doc["prediction"]["score"], "inside",
        "{}",
        doc["prediction"]
    );
    let id = doc["id"].as_i64().unwrap();

    // A second, missed prediction, and one on an invalid comparison (not counted).
    created(
        &mut app,
        &token,
        json!({"baseline": [a1], "candidate": [b1], "variable": "chunked prefill",
               "prediction": {"low_pct": -20, "high_pct": -10}}),
    )
    .await;
    let other = upload_analyzed(&mut app, &token, "short.jsonl", request_log(90, 600.0, "s")).await;
    judged(
        &mut app,
        &token,
        json!({"baseline": [a1], "candidate": [other], "variable": "chunked prefill",
               "prediction": {"low_pct": -80, "high_pct": -60}}),
        "invalid_comparison",
    )
    .await;
    let record = app.get("/comparisons/predictions").await;
    assert_eq!(record.status, StatusCode::OK);
    assert_eq!(record.select("#predictions tbody tr").len(), 3);
    assert!(
        record.select("#hit-rate")[0].starts_with("50% inside"),
        "{:?}",
        record.select("#hit-rate")
    );

    let page = app.get(&format!("/comparisons/{id}")).await;
    // Seven CDFs (ITL from TPOT among them) and the TTFT phase bar before/after.
    assert_eq!(page.select("#pictures svg").len(), 8);
    assert!(page.select("#itl-source")[0].contains("decode_ms ÷ (output_tokens − 1)"));
    assert!(page.body.contains("queue wait"));
}

#[tokio::test]
async fn step_seven_links_to_a_prefilled_comparison_form() {
    let (mut app, token) = editor_app().await;
    let inv = app.open_investigation(&token, "ITL spikes").await;
    let step = app.get(&format!("/investigations/{inv}/steps/7")).await;
    let sel = scraper::Selector::parse("#compare-link a").unwrap();
    let href = step
        .html()
        .select(&sel)
        .next()
        .and_then(|a| a.value().attr("href").map(str::to_string))
        .unwrap();
    let form = app.get(&href).await;
    assert_eq!(form.status, StatusCode::OK);
    let sel = scraper::Selector::parse("#investigation").unwrap();
    let value = form
        .html()
        .select(&sel)
        .next()
        .and_then(|e| e.value().attr("value").map(str::to_string));
    assert_eq!(value, Some(inv.to_string()));
}
