//! The ITL incident of issue 48: "ITL p50 14 → 23 ms after a vLLM upgrade; Qwen3-30B-A3B
//! BF16 on 2×H100 TP 2". Step 2 of a per-token metric decomposes the decode step (each
//! request's ITL and TPOT, ms per token), never divides a request's whole decode time by
//! the ITL, and hands the estimators per-token values.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use serde_json::{json, Value};

/// Step 0 of the incident, as the API takes it.
fn step0() -> Value {
    json!({
        "reproducible": "yes",
        "engine": "vllm",
        "model": "qwen3-30b-a3b",
        "gpu_type": "h100-sxm",
        "gpu_count": 2,
        "tp": 2,
        "weight_dtype": "bf16",
        "kv_dtype": "bf16",
        "concurrency": 64,
    })
}

/// Step 1: ITL p50 23 ms against the 14 ms it was before the upgrade.
fn step1() -> Value {
    json!({"metric": "itl", "percentile": "p50", "observed": 23, "target": 14, "unit": "ms"})
}

struct Incident {
    app: TestApp,
    token: String,
    id: i64,
    url: String,
}

async fn incident() -> Incident {
    let (app, url) =
        common::app_with_investigation("ITL p50 14 → 23 ms after a vLLM upgrade").await;
    let token = app.api_token("ada").await;
    let id = url.rsplit('/').next().unwrap().parse().unwrap();
    let mut i = Incident {
        app,
        token,
        id,
        url,
    };
    i.put(0, step0()).await;
    i.put(1, step1()).await;
    i
}

impl Incident {
    async fn put(&mut self, step: u8, body: Value) -> common::Reply {
        let r = self
            .app
            .api(
                "PUT",
                &format!("/api/v1/investigations/{}/steps/{step}", self.id),
                &self.token,
                Some(body),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "step {step}: {}", r.body);
        r
    }

    async fn step2_page(&mut self) -> common::Reply {
        let p = self.app.get(&format!("{}/steps/2", self.url)).await;
        assert_eq!(p.status, StatusCode::OK);
        p
    }

    /// Uploads a request log onto the investigation, fills step 2 from it on the page
    /// and saves the form as it was filled.
    async fn fill_step2_from(&mut self, log: String) -> i64 {
        let artifact = common::uploads::upload_analyzed(
            &mut self.app,
            &self.token,
            &format!("requests.jsonl&investigation={}", self.id),
            log.into_bytes(),
        )
        .await;
        let filled = self
            .app
            .get(&format!("{}/steps/2?from_artifact={artifact}", self.url))
            .await;
        assert_eq!(filled.status, StatusCode::OK);
        let fields = form_fields(&filled, &self.url);
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = self
            .app
            .post_form(&format!("{}/steps/2", self.url), &pairs)
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        artifact
    }

    /// The DIAGNOSIS of the journal entry drafted from the steps.
    async fn drafted_diagnosis(&mut self) -> String {
        let r = self
            .app
            .api(
                "POST",
                &format!("/api/v1/investigations/{}/journal", self.id),
                &self.token,
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        sqlx::query_scalar("SELECT diagnosis FROM journal_entries WHERE id = $1")
            .bind(r.json()["id"].as_i64().unwrap())
            .fetch_one(&self.app.pool)
            .await
            .unwrap()
    }

    /// Step 2's computed results as the API serves them.
    async fn step2_results(&mut self) -> Value {
        let r = self
            .app
            .api(
                "GET",
                &format!("/api/v1/investigations/{}", self.id),
                &self.token,
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        r.json()["steps"][2]["results"].clone()
    }
}

/// The step form's inputs with a value, as the page would post them.
fn form_fields(page: &common::Reply, url: &str) -> Vec<(String, String)> {
    let html = page.html();
    let sel = scraper::Selector::parse(&format!(
        "form[method=post][action='{url}/steps/2'] input[name]"
    ))
    .unwrap();
    html.select(&sel)
        .filter(|e| !matches!(e.value().attr("type"), Some("checkbox" | "radio")))
        .map(|e| {
            let v = e.value();
            (
                v.attr("name").unwrap().to_string(),
                v.attr("value").unwrap_or_default().to_string(),
            )
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// Every percentage the step page's results show, as numbers.
fn percentages(page: &common::Reply) -> Vec<f64> {
    let mut texts = page.select(".results-card .shares td.num");
    texts.extend(page.select(".dominant-phase"));
    texts
        .iter()
        .flat_map(|t| {
            t.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '%'))
                .filter_map(|w| w.strip_suffix('%').and_then(|n| n.parse::<f64>().ok()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A request log of 40 requests of the incident: decode p50 7,303.43 ms over 318 output
/// tokens, prompts of 2,000 tokens, admitted at batch 64; with each request's ITL p50
/// (median 22.1 ms) and p99 when `itl`, and its output tokens when `tokens`.
fn request_log(itl: bool, tokens: bool) -> String {
    (0..40)
        .map(|i| {
            let mut row = json!({
                "request_id": format!("r{i}"),
                "tokenize_ms": 3,
                "queue_wait_ms": 40 + i,
                "prefill_ms": 180,
                "first_token_ms": 225 + i,
                "decode_ms": 7303.43 + (f64::from(i) - 19.5) * 2.0,
                "detokenize_ms": 4,
                "prompt_tokens": 2000,
                "batch_size_at_admission": 64,
            });
            if tokens {
                row["output_tokens"] = json!(318);
            }
            if itl {
                row["itl_p50_ms"] = json!(22.1 + f64::from(i % 5 - 2) * 0.1);
                row["itl_p99_ms"] = json!(58 + i % 5);
            }
            format!("{row}\n")
        })
        .collect()
}

/// The decode-floor link of step 2's results, and its query as estimator inputs.
fn decode_floor_link(page: &common::Reply) -> (String, serde_json::Map<String, Value>) {
    let href = page
        .select_attr(".results-card a.estimator-link", "href")
        .into_iter()
        .find(|h| h.starts_with("/estimators/decode-floor"))
        .expect("a decode-floor link");
    let query = href.split_once('?').map_or("", |q| q.1);
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
    let inputs = pairs
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    (href, inputs)
}

#[tokio::test]
async fn per_request_decode_times_are_never_a_share_of_a_per_token_itl() {
    let mut i = incident().await;
    // The reproduction: step 2 holds the request log's per-request decode times.
    i.put(
        2,
        json!({"decode": {"p50": 7303.43, "p95": 9100, "p99": 9800},
               "prefill": {"p50": 180, "p99": 240}}),
    )
    .await;
    let page = i.step2_page().await;
    let shown = percentages(&page);
    assert!(
        shown.iter().all(|p| *p <= 100.0),
        "no share above 100%: {shown:?}"
    );
    assert!(!page.body.contains("31754"), "7,303 ms ÷ 23 ms is no share");
    assert_eq!(page.select(".dominant-phase"), ["Nothing dominates"]);
    let reason = page.select(".results-card .muted").join(" ");
    assert!(
        reason.contains("per-request decode times") && reason.contains("output_tokens"),
        "it says in words why the rows cannot answer an ITL: {reason}"
    );
    let results = i.step2_results().await;
    assert_eq!(results["dominance"]["kind"], "nothing");
    assert_eq!(results["shares"], json!([]));

    // The decode-floor link carries a per-token value (step 1's p50 ITL), never 7,303 ms.
    let (href, inputs) = decode_floor_link(&page);
    assert_eq!(inputs["measured_itl_ms"], "23", "{href}");

    let overview = i.app.get(&i.url).await;
    assert!(
        !overview.body.contains("Decode dominates (100%)"),
        "the overview carries no false 100%"
    );
    let diagnosis = i.drafted_diagnosis().await;
    assert!(
        diagnosis.starts_with("No phase dominates: ITL is a per-token time"),
        "{diagnosis}"
    );
    assert!(!diagnosis.contains("100%"), "{diagnosis}");
}

#[tokio::test]
async fn a_request_log_with_itl_fields_decomposes_the_decode_step() {
    let mut i = incident().await;
    let artifact = i.fill_step2_from(request_log(true, true)).await;
    // What the fill stored: the per-request phases and the per-token figures, typed.
    let stored = i.step2_results().await;
    assert_eq!(stored["dominance"]["kind"], "step", "{stored}");
    assert_eq!(stored["dominance"]["part"], "typical_step");
    let step = &stored["per_token"];
    assert_eq!(step["typical_ms"], 22.1);
    assert_eq!(step["observed_ms"], 23.0);
    let data: Value = sqlx::query_scalar(
        "SELECT data FROM investigation_steps WHERE investigation_id = $1 AND step = 2",
    )
    .bind(i.id)
    .fetch_one(&i.app.pool)
    .await
    .unwrap();
    let figures: Vec<&str> = data["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["figure"].as_str().unwrap())
        .collect();
    assert_eq!(figures, ["tpot", "itl_p50", "itl_p99"]);
    assert!(data["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["source"] == artifact));
    let tpot = data["steps"][0]["p50"].as_f64().unwrap();
    assert!(
        (tpot - 7303.43 / 317.0).abs() < 0.01,
        "TPOT {tpot} ms/token"
    );

    let page = i.step2_page().await;
    assert_eq!(
        page.select(".dominant-phase"),
        ["Decode step (96% of the metric)"]
    );
    let shown = percentages(&page);
    assert!(shown.iter().all(|p| *p <= 100.0), "{shown:?}");
    let parts = page.select(".step-parts tbody tr");
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts[0].contains("Decode step") && parts[0].contains("22.10 ms"));
    assert!(parts[1].contains("Above the typical decode step") && parts[1].contains("4%"));
    assert!(page
        .select(".per-token-basis")
        .concat()
        .contains("the median request's ITL p50"));
    // The form shows the per-token figures in ms per token, from the log.
    assert_eq!(
        common::form_value(&page, "input[name='itl_p50.p50']"),
        "22.1"
    );

    let overview = i.app.get(&i.url).await;
    assert!(
        overview.body.contains("Decode step dominates (96%)"),
        "the overview names the per-token decomposition"
    );
    assert!(!overview.body.contains("Decode dominates (100%)"));
    let diagnosis = i.drafted_diagnosis().await;
    assert!(
        diagnosis.starts_with(
            "Decode step dominates the p50 ITL (96%: a typical step of 22.1 ms per token, \
             of the observed 23.0 ms)."
        ),
        "{diagnosis}"
    );
}

#[tokio::test]
async fn the_decode_floor_link_hands_the_estimator_ms_per_token() {
    let mut i = incident().await;
    i.fill_step2_from(request_log(true, true)).await;
    let page = i.step2_page().await;
    let (href, mut inputs) = decode_floor_link(&page);
    assert_eq!(inputs["measured_itl_ms"], "22.1", "{href}");
    assert_eq!(inputs["model"], "qwen3-30b-a3b");
    assert_eq!(inputs["tp"], "2");
    assert_eq!(inputs["batch"], "64", "the request log's concurrency");
    // The link leaves the context to give: the log's 2,000-token prompts and half of the
    // 318 output tokens.
    inputs.insert("context".into(), json!(2159));
    let r = i
        .app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &i.token,
            Some(Value::Object(inputs)),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let chain = r.json();
    let ratio: f64 = chain["results"]["floor_over_measured"]
        .as_str()
        .map_or_else(
            || chain["results"]["floor_over_measured"].as_f64().unwrap(),
            |s| s.parse().unwrap(),
        );
    assert!(ratio < 1.0 && ratio > 0.2, "floor / measured = {ratio}");
    assert_ne!(chain["results"]["band"], "structural", "{chain}");
    let sanity = chain["sanity"].as_str().unwrap();
    assert!(!sanity.contains("structural"), "{sanity}");
    // The estimator page opened from the link (with the context) agrees.
    let est = i.app.get(&format!("{href}&context=2159")).await;
    assert_eq!(est.status, StatusCode::OK);
    assert!(!est.body.contains("something structural"));
}

#[tokio::test]
async fn a_request_log_without_itl_fields_or_output_tokens_says_it_cannot_answer() {
    let mut i = incident().await;
    i.fill_step2_from(request_log(false, false)).await;
    let page = i.step2_page().await;
    assert_eq!(page.select(".dominant-phase"), ["Nothing dominates"]);
    let reason = page.select(".results-card .muted").join(" ");
    assert!(
        reason.contains("per-request decode times (p50 7,303 ms")
            && reason.contains("itl_p50_ms / itl_p99_ms"),
        "{reason}"
    );
    let shown = percentages(&page);
    assert!(shown.iter().all(|p| *p <= 100.0), "{shown:?}");
    let (href, inputs) = decode_floor_link(&page);
    assert_eq!(inputs["measured_itl_ms"], "23", "{href}");
    let diagnosis = i.drafted_diagnosis().await;
    assert!(
        diagnosis.contains("no phase dominates") || diagnosis.starts_with("No phase dominates")
    );
    assert!(!diagnosis.contains("100%"), "{diagnosis}");

    // Output tokens without ITL fields: each request's TPOT is the step.
    let mut j = incident().await;
    j.fill_step2_from(request_log(false, true)).await;
    let page = j.step2_page().await;
    let label = page.select(".dominant-phase").concat();
    assert!(label.starts_with("Decode step ("), "{label}");
    assert!(page
        .select(".per-token-basis")
        .concat()
        .contains("the median request's TPOT"));
    let shown = percentages(&page);
    assert!(shown.iter().all(|p| *p <= 100.0), "{shown:?}");
}
