//! Prometheus over an incident window, end to end: a real Prometheus (Debian's package,
//! started here with its own config, port and data directory) scrapes an exporter in this
//! process whose vLLM histograms advance at every scrape (and restart once, a counter
//! reset); an investigation reads a window from it; our quantiles equal Prometheus's own
//! `histogram_quantile` over `increase(…[window])`. Also: sources are admin-managed,
//! refusals, an unreachable server ends `failed` with the reason, steps 1 and 2 fill.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use serde_json::{json, Value};

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// TTFT buckets (s); the other histograms scale them.
const BOUNDS: [f64; 7] = [0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

/// Observations added to bucket `i` (non-cumulative) at scrape `k`: a spread that moves
/// with `k`, so the window's distribution differs from the total's.
fn added(k: u64, i: usize, seed: u64) -> u64 {
    (k * 7 + i as u64 * 3 + seed) % 11 + u64::from(i == 3) * 5
}

/// The exposition at scrape `n`. The exporter "restarts" at scrape 8: counters start
/// again from zero (a reset `increase()` must handle).
fn exposition(n: u64) -> String {
    let n = if n >= 8 { n - 8 } else { n };
    let mut text = String::new();
    for (family, scale, seed) in [
        ("vllm:time_to_first_token_seconds", 1.0, 0),
        // vLLM's old name for the inter-token latency histogram.
        ("vllm:time_per_output_token_seconds", 0.1, 2),
        ("vllm:request_queue_time_seconds", 0.5, 4),
        ("vllm:request_prefill_time_seconds", 1.0, 5),
        ("vllm:request_decode_time_seconds", 4.0, 6),
        ("vllm:e2e_request_latency_seconds", 8.0, 1),
    ] {
        text.push_str(&format!("# TYPE {family} histogram\n"));
        let mut cumulative = 0;
        let mut sum = 0.0;
        for (i, le) in BOUNDS.iter().enumerate() {
            let in_bucket: u64 = (0..=n).map(|k| added(k, i, seed)).sum();
            cumulative += in_bucket;
            sum += in_bucket as f64 * le * scale * 0.8;
            text.push_str(&format!(
                "{family}_bucket{{le=\"{}\",model_name=\"m\"}} {cumulative}\n",
                le * scale
            ));
        }
        // A few above the last bound.
        let over: u64 = (0..=n).map(|k| k % 2).sum();
        cumulative += over;
        text.push_str(&format!(
            "{family}_bucket{{le=\"+Inf\",model_name=\"m\"}} {cumulative}\n\
             {family}_sum{{model_name=\"m\"}} {sum}\n\
             {family}_count{{model_name=\"m\"}} {cumulative}\n"
        ));
    }
    text.push_str(&format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} {}\n\
         # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"m\"}} {}\n\
         # TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{{model_name=\"m\"}} {}\n\
         # TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{{model_name=\"m\"}} {}\n\
         # TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{{model_name=\"m\"}} {}\n\
         # TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{model_name=\"m\"}} {}\n",
        5 + n % 3,
        n % 4,
        0.1 * (n % 10) as f64,
        n,
        100 * n,
        50 * n,
    ));
    text
}

struct Exporter {
    addr: std::net::SocketAddr,
    scrapes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn exporter() -> Exporter {
    exporter_of(exposition).await
}

/// An exporter whose scrape `n` answers `body(n)`.
async fn exporter_of(body: fn(u64) -> String) -> Exporter {
    let scrapes = Arc::new(AtomicU64::new(0));
    let counter = scrapes.clone();
    let router = axum::Router::new().route(
        "/metrics",
        get(move || {
            let counter = counter.clone();
            async move { body(counter.fetch_add(1, Ordering::SeqCst)) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    Exporter {
        addr,
        scrapes,
        task,
    }
}

/// A Prometheus server of our own, stopped (and its data removed) on drop.
struct Prometheus {
    base: String,
    child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn prometheus(target: std::net::SocketAddr) -> Option<Prometheus> {
    if !Path::new(PROMETHEUS).exists() {
        common::skip(
            &current(),
            "no /usr/bin/prometheus (apt-get install prometheus)",
        );
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: engine\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = common::free_port();
    let child = tokio::process::Command::new(PROMETHEUS)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start prometheus");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if let Ok(r) = client.get(format!("{base}/-/ready")).send().await {
            if r.status().is_success() {
                return Some(Prometheus {
                    base,
                    child,
                    _dir: dir,
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("prometheus did not become ready on port {port}");
}

impl Prometheus {
    /// Our window quantiles (`x`, an analysis) equal, within 1 %, Prometheus's own
    /// `histogram_quantile` over `increase(…[window_s])` of each (key, family), at `end`.
    async fn agrees_on_quantiles(
        &self,
        x: &Value,
        series: &[(&str, &str)],
        window_s: i64,
        end: f64,
    ) {
        for (key, family) in series {
            for (q, name) in [(0.5, "p50"), (0.9, "p90"), (0.95, "p95"), (0.99, "p99")] {
                let query = format!(
                    "histogram_quantile({q}, sum by (le) (increase({family}_bucket[{window_s}s])))"
                );
                let theirs = self.scalar(&query, end).await * 1000.0;
                let ours = x["quantiles"][key][name]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no {key}.{name}: {x}"));
                assert!(
                    (ours - theirs).abs() <= 0.01 * theirs.abs(),
                    "{key} {name}: ours {ours} ms, Prometheus {theirs} ms"
                );
            }
        }
    }

    /// Prometheus's own answer to an instant query: the single sample's value.
    async fn scalar(&self, query: &str, time: f64) -> f64 {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/query", self.base),
            &[("query", query.to_string()), ("time", format!("{time:.3}"))],
        )
        .unwrap();
        let body = reqwest::get(url).await.unwrap().bytes().await.unwrap();
        let r: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(r["status"], "success", "{r}");
        let v = r["data"]["result"][0]["value"][1]
            .as_str()
            .unwrap_or_else(|| panic!("no sample for {query}: {r}"));
        v.parse().unwrap()
    }
}

fn current() -> String {
    std::thread::current()
        .name()
        .unwrap_or("prometheus_window")
        .to_string()
}

async fn admin_app() -> (TestApp, String, i64) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app
        .open_investigation(&token, "TTFT up during yesterday's incident")
        .await;
    (app, token, inv)
}

async fn allow(app: &mut TestApp, host_port: &str) {
    let r = app
        .post_form(
            "/admin/capture-hosts",
            &[("host_port", host_port), ("note", "the fleet's Prometheus")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

async fn read_window(app: &mut TestApp, token: &str, inv: i64, body: Value) -> common::Reply {
    app.api(
        "POST",
        &format!("/api/v1/investigations/{inv}/prometheus"),
        token,
        Some(body),
    )
    .await
}

async fn settled(app: &mut TestApp, token: &str, id: i64) -> Value {
    for _ in 0..600 {
        let r = app
            .api("GET", &format!("/api/v1/artifacts/{id}"), token, None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let a = r.json();
        if !["capturing", "queued", "analyzing"].contains(&a["status"].as_str().unwrap()) {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("artifact {id} never settled");
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[tokio::test]
async fn window_quantiles_equal_prometheus_histogram_quantile_over_the_window() {
    let engine = exporter().await;
    let Some(prom) = prometheus(engine.addr).await else {
        return;
    };
    let (mut app, token, inv) = admin_app().await;
    let prom_addr = prom.base.trim_start_matches("http://").to_string();
    allow(&mut app, &prom_addr).await;
    // A registered source with a bearer token (Prometheus ignores it; the fetch sends it).
    let r = app
        .api(
            "POST",
            "/api/v1/prometheus-sources",
            &token,
            Some(json!({"name": "fleet", "url": prom.base, "auth": "bearer", "secret": "s3cret-token"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // Let Prometheus scrape the exporter through its restart (scrape 8) and beyond.
    for _ in 0..400 {
        if engine.scrapes.load(Ordering::SeqCst) >= 16 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        engine.scrapes.load(Ordering::SeqCst) >= 16,
        "Prometheus never scraped enough"
    );
    // The window: the last 12 s, ending a second ago (ingested by now).
    let end = (now_s() - 1.0).floor();
    let start = end - 12.0;
    let began = std::time::Instant::now();
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"source": "fleet", "start": start.to_string(), "end": end.to_string(), "step": 1, "engine": "vllm"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "the POST answers at once"
    );
    let id = r.json()["artifact_id"].as_i64().unwrap();
    assert_eq!(r.json()["artifact"], format!("/api/v1/artifacts/{id}"));
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "done", "{a}");
    assert_eq!(a["kind"], "prometheus_range");
    let x = &a["analysis"];
    assert_eq!(x["window_s"], 12);

    // The renamed metric is found under vLLM's old name.
    assert_eq!(x["metrics"]["itl_s"], "vllm:time_per_output_token_seconds");
    assert_eq!(x["metrics"]["kv_usage"], "vllm:gpu_cache_usage_perc");

    // Our quantiles against Prometheus's own histogram_quantile over the same window.
    prom.agrees_on_quantiles(
        x,
        &[
            ("ttft_ms", "vllm:time_to_first_token_seconds"),
            ("itl_ms", "vllm:time_per_output_token_seconds"),
            ("queue_ms", "vllm:request_queue_time_seconds"),
            ("prefill_ms", "vllm:request_prefill_time_seconds"),
            ("decode_ms", "vllm:request_decode_time_seconds"),
            ("e2e_ms", "vllm:e2e_request_latency_seconds"),
        ],
        12,
        end,
    )
    .await;
    // The bucket each quantile fell in is stated.
    assert!(x["quantiles"]["ttft_ms"]["buckets"]["p95"]["lo"].is_number());

    // Gauges over time, counter rates, the waiting series for bubble attribution.
    let waiting = x["waiting_series"].as_array().unwrap();
    assert!(waiting.len() >= 10, "{waiting:?}");
    assert!(x["gauges"]["kv_usage"].as_array().unwrap().len() >= 10);
    assert!(x["rates"]["prompt_tokens"].as_array().unwrap().len() >= 10);
    assert!(x["totals"]["prompt_tokens"].as_f64().unwrap() > 0.0);

    // The artifact page states the bucket resolution and draws the gauges.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#status"), vec!["done"]);
    assert!(
        page.body.contains("only as fine as the bucket"),
        "{}",
        page.body
    );
    assert!(
        !page.select("#section-gauges svg").is_empty(),
        "{}",
        page.body
    );

    // Two windows compare quantile by quantile (the earlier half against the whole).
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": prom.base, "start": start.to_string(), "end": (end - 6.0).to_string(), "step": "1 s"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let half = r.json()["artifact_id"].as_i64().unwrap();
    assert_eq!(settled(&mut app, &token, half).await["status"], "done");
    let r = app
        .api(
            "GET",
            &format!("/api/v1/comparisons/windows?before={half}&after={id}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let deltas = r.json()["deltas"].as_array().unwrap().clone();
    assert_eq!(deltas.len(), 6 * 4, "{}", r.body);
    let ttft_p95 = deltas
        .iter()
        .find(|d| d["series"] == "ttft_ms" && d["quantile"] == "p95")
        .unwrap();
    assert_eq!(
        ttft_p95["after"].as_f64().unwrap(),
        x["quantiles"]["ttft_ms"]["p95"].as_f64().unwrap()
    );
    // The same comparison as a page, reached from the window's artifact page.
    let page = app.get(&format!("/artifacts/{half}")).await;
    assert_eq!(
        page.select_attr("#compare-window", "href"),
        [format!("/comparisons/windows?before={half}")]
    );
    let page = app
        .get(&format!("/comparisons/windows?before={half}&after={id}"))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#window-deltas tbody tr").len(), 6 * 4);
    let row = page.select("#window-deltas tr[data-series='ttft'][data-quantile='p95'] td");
    assert_eq!(row[0], "ttft");
    let shown: f64 = row[3]
        .trim_end_matches(" ms")
        .replace(',', "")
        .parse()
        .unwrap();
    let p95 = x["quantiles"]["ttft_ms"]["p95"].as_f64().unwrap();
    assert!((shown - p95).abs() <= 0.01 * p95 + 0.5, "{row:?} vs {p95}");
    let refused = app
        .get(&format!("/comparisons/windows?before={half}&after=abc"))
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        refused.select("p.field-error[data-field=after]").len(),
        1,
        "{}",
        refused.body
    );
    let r = app
        .api(
            "GET",
            &format!("/api/v1/comparisons/windows?before={half}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Steps 1 and 2 fill from the window.
    let p95 = x["quantiles"]["ttft_ms"]["p95"].as_f64().unwrap();
    let step1 = app
        .get(&format!("/investigations/{inv}/steps/1?from_artifact={id}"))
        .await;
    assert_eq!(step1.status, StatusCode::OK);
    let observed: f64 = common::form_value(&step1, "input[name=observed]")
        .parse()
        .unwrap();
    assert!((observed - p95).abs() < 0.01, "{observed} vs {p95}");
    let step2 = app
        .get(&format!("/investigations/{inv}/steps/2?from_artifact={id}"))
        .await;
    assert_eq!(step2.status, StatusCode::OK);
    let prefill_p50: f64 = common::form_value(&step2, "input[name='prefill.p50']")
        .parse()
        .unwrap();
    let ours = x["quantiles"]["prefill_ms"]["p50"].as_f64().unwrap();
    assert!((prefill_p50 - ours).abs() < 0.01, "{prefill_p50} vs {ours}");
    // Each row says it came from the window (kept through the save as its source).
    let sources = step2.select(".phase-table .row-source");
    assert!(
        sources.iter().any(|s| s.starts_with("from prometheus-")
            && s.ends_with("(Prometheus window, bucket estimates)")),
        "{sources:?}"
    );
}

/// [`exposition`] with vLLM's names escaped as an exporter that escapes names with
/// underscores writes them (`prometheus_client` 0.26 does for a scraper that asks for
/// it): every `:` becomes `_`. Prometheus stores them so.
fn escaped_exposition(n: u64) -> String {
    exposition(n).replace("vllm:", "vllm_")
}

/// Scrapes of a host with no engine: only a GPU exporter's gauge and process metrics.
fn no_engine_exposition(n: u64) -> String {
    format!(
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{gpu=\"0\"}} {}\n\
         # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {n}\n",
        n % 100
    )
}

/// Lets Prometheus scrape `engine` `n` times; the window of the last `len` s, ending a
/// second ago (ingested by now).
async fn scraped(engine: &Exporter, n: u64, len: f64) -> (f64, f64) {
    for _ in 0..400 {
        if engine.scrapes.load(Ordering::SeqCst) >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        engine.scrapes.load(Ordering::SeqCst) >= n,
        "Prometheus never scraped enough"
    );
    let end = (now_s() - 1.0).floor();
    (end - len, end)
}

#[tokio::test]
async fn escaped_names_are_read_and_a_window_without_the_engine_fails() {
    let engine = exporter_of(escaped_exposition).await;
    let Some(prom) = prometheus(engine.addr).await else {
        return;
    };
    let (mut app, token, inv) = admin_app().await;
    allow(&mut app, prom.base.trim_start_matches("http://")).await;
    let (start, end) = scraped(&engine, 8, 6.0).await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": prom.base, "start": start.to_string(), "end": end.to_string(), "step": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let a = settled(&mut app, &token, r.json()["artifact_id"].as_i64().unwrap()).await;
    assert_eq!(a["status"], "done", "{a}");
    let x = &a["analysis"];
    assert_eq!(x["metrics"]["ttft_s"], "vllm_time_to_first_token_seconds");
    assert_eq!(x["metrics"]["waiting"], "vllm_num_requests_waiting");
    assert!(
        x["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("names escaped")),
        "{x}"
    );
    prom.agrees_on_quantiles(
        x,
        &[
            ("ttft_ms", "vllm_time_to_first_token_seconds"),
            ("e2e_ms", "vllm_e2e_request_latency_seconds"),
        ],
        6,
        end,
    )
    .await;
    assert!(x["window"]["gauges"]["waiting"].is_number(), "{x}");
    assert!(
        x["totals"]["generation_tokens"].as_f64().unwrap() > 0.0,
        "{x}"
    );
    drop(prom);

    // A Prometheus that scraped no engine (only a GPU exporter): `failed`, saying so.
    let other = exporter_of(no_engine_exposition).await;
    let Some(prom) = prometheus(other.addr).await else {
        return;
    };
    allow(&mut app, prom.base.trim_start_matches("http://")).await;
    let (start, end) = scraped(&other, 4, 3.0).await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": prom.base, "start": start.to_string(), "end": end.to_string()}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let a = settled(&mut app, &token, r.json()["artifact_id"].as_i64().unwrap()).await;
    assert_eq!(a["status"], "failed", "{a}");
    let error = a["error"].as_str().unwrap();
    assert!(
        error.contains("has no vllm metrics (vllm:* or vllm_*)"),
        "{error}"
    );
}

#[tokio::test]
async fn sources_are_registered_by_admins_and_their_secrets_never_shown() {
    let (mut app, token, _) = admin_app().await;
    allow(&mut app, "127.0.0.1:9090").await;
    app.add_user("ed", Role::Editor).await;
    let editor = app.api_token("ed").await;
    let body = json!({"name": "fleet", "url": "http://127.0.0.1:9090", "auth": "basic", "username": "pj", "secret": "hunter2-password"});
    let r = app
        .api(
            "POST",
            "/api/v1/prometheus-sources",
            &editor,
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = app
        .api("GET", "/api/v1/prometheus-sources", &editor, None)
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    let r = app
        .api(
            "POST",
            "/api/v1/prometheus-sources",
            &token,
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["has_secret"], true);
    assert!(!r.body.contains("hunter2"));
    // The same name twice is refused.
    let r = app
        .api("POST", "/api/v1/prometheus-sources", &token, Some(body))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Outside the allowlist: 422 naming the rule.
    let r = app
        .api(
            "POST",
            "/api/v1/prometheus-sources",
            &token,
            Some(json!({"name": "other", "url": "http://127.0.0.1:9091"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(
        r.body.contains("not in the capture allowlist"),
        "{}",
        r.body
    );

    let r = app
        .api("GET", "/api/v1/prometheus-sources", &token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 1);
    assert!(!r.body.contains("hunter2"));
    // The admin page lists it, without the secret; an editor may not see the page.
    let page = app.get("/admin/prometheus").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#sources .source .name"), vec!["fleet"]);
    assert!(!page.body.contains("hunter2"));
    let r = app
        .api(
            "DELETE",
            &format!("/api/v1/prometheus-sources/{id}"),
            &editor,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api(
            "DELETE",
            &format!("/api/v1/prometheus-sources/{id}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = app
        .api(
            "DELETE",
            &format!("/api/v1/prometheus-sources/{id}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // The admin page's form adds one; a refused one comes back with the reason.
    let r = app
        .post_form(
            "/admin/prometheus",
            &[
                ("name", "page"),
                ("url", "http://127.0.0.1:9090"),
                ("auth", "bearer"),
                ("secret", "tok"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let r = app
        .post_form(
            "/admin/prometheus",
            &[
                ("name", "bad"),
                ("url", "http://10.9.9.9:9090"),
                ("auth", "none"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select("p.field-error[data-field=url]").len(), 1);
    let mut ed = app.new_client();
    ed.login("ed").await;
    assert_eq!(
        ed.get("/admin/prometheus").await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn a_url_outside_the_allowlist_is_refused_and_nothing_is_stored() {
    let (mut app, token, inv) = admin_app().await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": "http://127.0.0.1:9090", "start": "2026-12-02 14:00", "end": "2026-12-02 15:00"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.json()["error"]["fields"][0]["field"], "url");
    // Bad times, step and engine are all named at once.
    allow(&mut app, "127.0.0.1:9090").await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": "http://127.0.0.1:9090", "start": "yesterday", "end": "2026-12-02 15:00", "step": "0", "engine": "llama.cpp"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, ["start", "step", "engine"]);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn an_unreachable_server_ends_as_a_failed_artifact_with_the_reason() {
    let (mut app, token, inv) = admin_app().await;
    // An allowed port where nothing listens: the connection is refused.
    let port = common::free_port();
    allow(&mut app, &format!("127.0.0.1:{port}")).await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": format!("http://127.0.0.1:{port}"), "start": "2026-12-02 14:00", "end": "2026-12-02 15:00"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let id = r.json()["artifact_id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed", "{a}");
    let error = a["error"].as_str().unwrap();
    assert!(
        error.starts_with("Prometheus fetch failed: could not reach"),
        "{error}"
    );
    assert!(error.to_lowercase().contains("refused"), "{error}");

    // A server that answers but is not Prometheus fails too, saying so.
    let engine = exporter().await;
    allow(&mut app, &engine.addr.to_string()).await;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": format!("http://{}", engine.addr), "start": "2026-12-02 14:00", "end": "2026-12-02 15:00"}),
    )
    .await;
    let id = r.json()["artifact_id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed", "{a}");
    assert!(a["error"].as_str().unwrap().contains("404"), "{a}");
}

/// A stand-in for a Prometheus server's API holding only the waiting-requests gauge: 2
/// waiting from 10 to 12 ms after the bubble trace's zero, none otherwise (sub-second
/// samples, so the 50 ms trace can be read against them).
async fn waiting_only_prometheus() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use axum::Json;
    let zero = common::bubble_data::BASE_S;
    let router = axum::Router::new()
        .route(
            "/api/v1/label/__name__/values",
            get(|| async {
                Json(json!({"status": "success", "data": ["vllm:num_requests_waiting"]}))
            }),
        )
        .route(
            "/api/v1/query_range",
            get(move || async move {
                let values: Vec<Value> = [(0.0, 0), (10.0, 2), (12.0, 0), (40.0, 0), (60.0, 0)]
                    .iter()
                    .map(|(ms, w)| json!([zero + ms / 1000.0, w.to_string()]))
                    .collect();
                Json(json!({"status": "success", "data": {"resultType": "matrix",
                    "result": [{"metric": {}, "values": values}]}}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (addr, task)
}

#[tokio::test]
async fn a_window_is_the_queue_of_a_bubble_attribution() {
    let (mut app, token, inv) = admin_app().await;
    let (addr, server) = waiting_only_prometheus().await;
    allow(&mut app, &addr.to_string()).await;
    let zero = common::bubble_data::BASE_S;
    let r = read_window(
        &mut app,
        &token,
        inv,
        json!({"url": format!("http://{addr}"), "start": zero - 60.0, "end": zero + 60.0}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let queue = r.json()["artifact_id"].as_i64().unwrap();
    let a = settled(&mut app, &token, queue).await;
    assert_eq!(a["status"], "done", "{a}");
    let trace = common::bubble_data::upload(
        &mut app,
        &token,
        "trace.json",
        Some(inv),
        common::bubble_data::trace(),
    )
    .await;
    let r = app
        .api(
            "POST",
            "/api/v1/bubbles",
            &token,
            Some(json!({"trace": trace, "queue": queue})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let doc = r.json();
    assert_eq!(doc["source"], "prometheus");
    let classes: Vec<&str> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["runtime_bubble", "insufficient_load"]);
    assert_eq!(doc["intervals"][0]["waiting_max"], 2.0);
    server.abort();
}
