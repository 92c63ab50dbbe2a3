//! Live /metrics capture end to end: a metrics server the test starts (real SGLang text
//! from the fixtures, counters advancing at every scrape), the admin's allowlist, the
//! API's 202 and the background scraping, refusals, limits, a restart mid-window, the
//! form, and the CLI.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use common::{spawn_app, TestApp};
use serde_json::{json, Value};

/// The fixture's text with every cumulative sample (counters, buckets, sums, counts)
/// multiplied by `1 + n`: scrape n of a server that keeps serving.
fn advanced(text: &str, n: u64) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let cumulative = !line.starts_with('#')
            && line.split(['{', ' ']).next().is_some_and(|name| {
                ["_total", "_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| name.ends_with(s))
            });
        match line.rsplit_once(' ') {
            Some((head, value)) if cumulative => {
                let v: f64 = value.parse().unwrap();
                out.push_str(&format!("{head} {}\n", v * (1 + n) as f64));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

struct MetricsServer {
    addr: std::net::SocketAddr,
    hits: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn fixture() -> Option<String> {
    let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES") else {
        common::skip(&current(), "PERFJOURNAL_REAL_FIXTURES unset");
        return None;
    };
    let path =
        std::path::Path::new(&root).join("prometheus/sglang_docs_production_metrics_example.prom");
    Some(std::fs::read_to_string(path).expect("the SGLang metrics fixture"))
}

fn current() -> String {
    std::thread::current()
        .name()
        .unwrap_or("capture")
        .to_string()
}

/// `/metrics` advances at every request; `/moved` redirects to it; `/huge` answers
/// 9 MiB; `/slow` waits longer than a scrape may take.
async fn metrics_server(text: String) -> MetricsServer {
    let hits = Arc::new(AtomicU64::new(0));
    let text = Arc::new(text);
    let router = axum::Router::new()
        .route(
            "/metrics",
            get({
                let (hits, text) = (hits.clone(), text.clone());
                move || async move {
                    let n = hits.fetch_add(1, Ordering::SeqCst);
                    advanced(&text, n)
                }
            }),
        )
        .route("/moved", get(|| async { Redirect::temporary("/metrics") }))
        .route(
            "/huge",
            get(|| async { "x 1\n".repeat(9 << 18).into_response() }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    MetricsServer { addr, hits, task }
}

async fn admin_app() -> (TestApp, String, i64) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let inv = app.open_investigation(&token, "TTFT up after deploy").await;
    (app, token, inv)
}

async fn allow(app: &mut TestApp, host_port: &str) {
    let r = app
        .post_form(
            "/admin/capture-hosts",
            &[("host_port", host_port), ("note", "test engine")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

async fn start(app: &mut TestApp, token: &str, inv: i64, body: Value) -> common::Reply {
    app.api(
        "POST",
        &format!("/api/v1/investigations/{inv}/captures"),
        token,
        Some(body),
    )
    .await
}

/// Polls the artifact until it leaves `capturing`/`queued`/`analyzing`.
async fn settled(app: &mut TestApp, token: &str, id: i64) -> Value {
    for _ in 0..200 {
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

async fn artifact_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_capture_answers_at_once_then_holds_the_window_deltas_and_a_series() {
    let Some(text) = fixture() else { return };
    let server = metrics_server(text).await;
    let (mut app, token, inv) = admin_app().await;
    allow(&mut app, &server.addr.to_string()).await;
    let url = format!("http://{}/metrics", server.addr);
    let begun = std::time::Instant::now();
    let r = start(
        &mut app,
        &token,
        inv,
        json!({"url": url, "seconds": 2, "interval_s": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    // The answer does not wait for the window.
    assert!(begun.elapsed() < Duration::from_millis(1500));
    let id = r.json()["artifact_id"].as_i64().unwrap();
    assert_eq!(r.json()["status"], "capturing");
    let during = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(during.select("#status"), vec!["capturing"]);
    assert_eq!(during.select("#source-url"), vec![url.clone()]);

    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "done", "{a}");
    assert_eq!(a["kind"], "prometheus");
    assert_eq!(a["investigation"], inv);
    assert_eq!(a["source_url"], url);
    let scrapes = server.hits.load(Ordering::SeqCst);
    assert_eq!(scrapes, 3, "start, 1 s, end");
    let analysis = &a["analysis"];
    assert_eq!(analysis["window"], true);
    assert_eq!(analysis["engine"], "sglang");
    // Counters grew by the fixture's value at every scrape: first to last is twice it.
    assert_eq!(
        analysis["counters"]["generation_tokens"].as_f64().unwrap(),
        7_557_572.0 * 2.0
    );
    assert_eq!(
        analysis["quantiles"]["ttft_s"]["count"].as_f64().unwrap(),
        11008.0 * 2.0
    );
    // Gauges as sampled.
    assert_eq!(analysis["gauges"]["running"].as_f64().unwrap(), 162.0);
    let capture = &analysis["capture"];
    assert_eq!(capture["snapshots"], 3);
    assert_eq!(capture["url"], url);
    let series = capture["series"].as_array().unwrap();
    assert_eq!(series.len(), 3);
    let secs = capture["seconds"].as_f64().unwrap();
    assert!((1.8..3.5).contains(&secs), "{secs}");
    // About one fixture's worth of generated tokens per second.
    let rate = series[1]["rates"]["generation_tokens"].as_f64().unwrap();
    assert!(
        rate > 7_557_572.0 * 0.5 && rate < 7_557_572.0 * 2.0,
        "{rate}"
    );

    // The page shows the series and offers step 2; the original downloads.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert_eq!(page.select("#status"), vec!["done"]);
    assert_eq!(
        page.select("#section-capture table tbody tr").len(),
        3,
        "{}",
        page.body
    );
    // SGLang's page has TTFT but no queue/prefill/decode histograms: step 1 only.
    let use_in = page.select_attr("#use-in a", "href");
    assert_eq!(
        use_in,
        vec![format!("/investigations/{inv}/steps/1?from_artifact={id}")]
    );
    let file = app.get(&format!("/artifacts/{id}/download")).await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(file.body.matches("# perfjournal-capture ts=").count(), 3);
    assert!(file
        .body
        .starts_with(&"# perfjournal-capture ts=".to_string()));
}

/// vLLM's phase histograms (queue, prefill, decode), cumulative.
fn vllm_phases() -> String {
    let mut text = String::new();
    for (family, fast) in [
        ("vllm:request_queue_time_seconds", 30),
        ("vllm:request_prefill_time_seconds", 60),
        ("vllm:request_decode_time_seconds", 10),
    ] {
        text.push_str(&format!("# TYPE {family} histogram\n"));
        for (le, count) in [("0.1", fast), ("1.0", 90), ("+Inf", 100)] {
            text.push_str(&format!(
                "{family}_bucket{{le=\"{le}\",model_name=\"m\"}} {count}\n"
            ));
        }
        text.push_str(&format!("{family}_sum{{model_name=\"m\"}} 40\n"));
        text.push_str(&format!("{family}_count{{model_name=\"m\"}} 100\n"));
    }
    text
}

#[tokio::test]
async fn a_vllm_capture_is_offered_to_step_2() {
    let server = metrics_server(vllm_phases()).await;
    let (mut app, token, inv) = admin_app().await;
    allow(&mut app, &server.addr.to_string()).await;
    let url = format!("http://{}/metrics", server.addr);
    let r = start(&mut app, &token, inv, json!({"url": url, "seconds": "1 s"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let id = r.json()["artifact_id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "done", "{a}");
    // Scraped twice (start and end): the window holds one scrape's worth.
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
    assert_eq!(
        a["analysis"]["quantiles"]["queue_s"]["count"]
            .as_f64()
            .unwrap(),
        100.0
    );
    let page = app.get(&format!("/artifacts/{id}")).await;
    let use_in = page.select_attr("#use-in a", "href");
    assert!(
        use_in.contains(&format!("/investigations/{inv}/steps/2?from_artifact={id}")),
        "{use_in:?}"
    );
    let step = app
        .get(&format!("/investigations/{inv}/steps/2?from_artifact={id}"))
        .await;
    assert_eq!(step.status, StatusCode::OK);
}

#[tokio::test]
async fn hosts_off_the_allowlist_are_refused_naming_the_rule_and_nothing_is_stored() {
    let Some(text) = fixture() else { return };
    let server = metrics_server(text).await;
    let (mut app, token, inv) = admin_app().await;
    let url = format!("http://{}/metrics", server.addr);
    // Empty list: the refusal names the admin page.
    let r = start(&mut app, &token, inv, json!({"url": url, "seconds": 2})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let field = &r.json()["error"]["fields"][0];
    assert_eq!(field["field"], "url");
    assert!(field["message"]
        .as_str()
        .unwrap()
        .contains("/admin/capture-hosts"));
    // Another port of the same host is another pair.
    let other = format!("127.0.0.1:{}", server.addr.port() + 1);
    allow(&mut app, &other).await;
    let r = start(&mut app, &token, inv, json!({"url": url, "seconds": 2})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let message = r.json()["error"]["fields"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(&format!("{} is not in the capture allowlist", server.addr)),
        "{message}"
    );
    // Bad window and interval are named too, all at once.
    let r = start(
        &mut app,
        &token,
        inv,
        json!({"url": "not a url", "seconds": 7200, "interval_s": 0}),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<String> = r.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, vec!["url", "seconds", "interval_s"]);
    assert_eq!(artifact_count(&app).await, 0);
    assert_eq!(server.hits.load(Ordering::SeqCst), 0, "nothing was fetched");
    // A missing investigation is a 404; a viewer may not capture.
    let r = start(
        &mut app,
        &token,
        inv + 100,
        json!({"url": url, "seconds": 2}),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    app.add_user("vic", perfjournal::auth::Role::Viewer).await;
    let viewer = app.api_token("vic").await;
    let r = start(&mut app, &viewer, inv, json!({"url": url, "seconds": 2})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(artifact_count(&app).await, 0);
}

#[tokio::test]
async fn redirects_are_not_followed_and_oversized_scrapes_fail_with_the_reason() {
    let (mut app, token, inv) = admin_app().await;
    let server = metrics_server("x 1\n".into()).await;
    allow(&mut app, &server.addr.to_string()).await;
    let moved = format!("http://{}/moved", server.addr);
    let r = start(&mut app, &token, inv, json!({"url": moved, "seconds": 1})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let a = settled(&mut app, &token, r.json()["artifact_id"].as_i64().unwrap()).await;
    assert_eq!(a["status"], "failed");
    let error = a["error"].as_str().unwrap();
    assert!(
        error.contains("redirect") && error.contains("not followed"),
        "{error}"
    );
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        0,
        "the redirect was not followed"
    );

    let huge = format!("http://{}/huge", server.addr);
    let r = start(&mut app, &token, inv, json!({"url": huge, "seconds": 1})).await;
    let id = r.json()["artifact_id"].as_i64().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed");
    let error = a["error"].as_str().unwrap();
    assert!(error.contains("larger than 8 MiB"), "{error}");
    // The page says why, and offers no download of a file that does not exist.
    let page = app.get(&format!("/artifacts/{id}")).await;
    assert!(page.select("#analysis-error")[0].contains("larger than 8 MiB"));
    assert!(page.select("#download").is_empty());
    let r = app
        .api(
            "GET",
            &format!("/api/v1/artifacts/{id}/download"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("nothing to download"));
}

#[tokio::test]
async fn a_capture_cut_off_by_a_restart_ends_failed_not_stuck() {
    let (mut app, token, inv) = admin_app().await;
    // A capture whose process died: still `capturing`, no heartbeat for a minute.
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO artifacts (investigation_id, name, kind, sha256, size_bytes, status,
                                source_url, updated_at)
         VALUES ($1, 'metrics-capture.prom', 'prometheus', repeat('0', 64), 0, 'capturing',
                 'http://10.0.0.5:8000/metrics', now() - interval '1 minute')
         RETURNING id",
    )
    .bind(inv)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // A live one (fresh heartbeat) is left alone.
    let live: i64 = sqlx::query_scalar(
        "INSERT INTO artifacts (investigation_id, name, kind, sha256, size_bytes, status)
         VALUES ($1, 'live.prom', 'prometheus', repeat('0', 64), 0, 'capturing') RETURNING id",
    )
    .bind(inv)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        perfjournal::capture::fail_abandoned(&app.pool)
            .await
            .unwrap(),
        1
    );
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["status"], "failed");
    assert!(
        a["error"].as_str().unwrap().contains("server stopped"),
        "{a}"
    );
    let r = app
        .api("GET", &format!("/api/v1/artifacts/{live}"), &token, None)
        .await;
    assert_eq!(r.json()["status"], "capturing");
    // Its download is refused while it runs, and it cannot be re-analyzed.
    let r = app
        .api(
            "GET",
            &format!("/api/v1/artifacts/{live}/download"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}

#[tokio::test]
async fn the_form_and_the_admin_page() {
    let (mut app, _token, inv) = admin_app().await;
    let form = app
        .get(&format!("/investigations/{inv}/captures/new"))
        .await;
    assert_eq!(form.status, StatusCode::OK);
    let notice = form.select("#no-capture-hosts");
    assert!(notice[0].contains("No hosts are allowed"), "{notice:?}");
    assert_eq!(
        form.select_attr("#no-capture-hosts a", "href"),
        vec!["/admin/capture-hosts"]
    );
    let overview = app.get(&format!("/investigations/{inv}")).await;
    assert_eq!(
        overview.select_attr("#capture-link", "href"),
        vec![format!("/investigations/{inv}/captures/new")]
    );
    // The admin page refuses an entry without a port, keeping what was typed.
    let r = app
        .post_form("/admin/capture-hosts", &[("host_port", "10.0.0.5")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.select("[data-field=host_port]")[0].contains("needs a port"));
    assert_eq!(r.select_attr("#host_port", "value"), vec!["10.0.0.5"]);
    allow(&mut app, "10.0.0.5:8000").await;
    let list = app.get("/admin/capture-hosts").await;
    assert_eq!(list.select("#capture-hosts td code"), vec!["10.0.0.5:8000"]);
    // A refused capture comes back on the form with the field's message and the input.
    let r = app
        .post_form(
            &format!("/investigations/{inv}/captures"),
            &[
                ("url", "http://10.0.0.6:8000/metrics"),
                ("seconds", "60"),
                ("interval_s", "5"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.select("[data-field=url]")[0].contains("10.0.0.6:8000 is not in the capture allowlist")
    );
    assert_eq!(
        r.select_attr("#url", "value"),
        vec!["http://10.0.0.6:8000/metrics"]
    );
    // The server's configuration may seed the list (once; a bad entry is refused).
    let seeded = perfjournal::capture::seed_hosts(
        &app.pool,
        &[
            "VLLM-0.internal:8000".into(),
            "10.0.0.5:8000".into(),
            " ".into(),
        ],
    )
    .await
    .unwrap();
    assert_eq!(seeded, 1);
    let e = perfjournal::capture::seed_hosts(&app.pool, &["10.0.0.7".into()])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("needs a port"), "{e}");
    let list = app.get("/admin/capture-hosts").await;
    assert_eq!(
        list.select("#capture-hosts td code"),
        vec!["10.0.0.5:8000", "vllm-0.internal:8000"]
    );
    // Removing both empties the list again; editors cannot reach the page.
    for host_port in ["vllm-0.internal:8000", "10.0.0.5:8000"] {
        let r = app
            .post_form("/admin/capture-hosts/remove", &[("host_port", host_port)])
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
    }
    assert_eq!(
        app.get("/admin/capture-hosts")
            .await
            .select("#no-hosts")
            .len(),
        1
    );
    app.add_user("eve", perfjournal::auth::Role::Editor).await;
    let mut editor = app.new_client();
    editor.login("eve").await;
    assert_eq!(
        editor.get("/admin/capture-hosts").await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn the_cli_captures_locally_and_uploads_to_the_investigation() {
    let Some(text) = fixture() else { return };
    let metrics = metrics_server(text).await;
    let (mut app, token, inv) = admin_app().await;
    let (addr, server) = app.serve_on_port().await;
    let url = format!("http://{}/metrics", metrics.addr);
    let args = vec![
        "capture".to_string(),
        url.clone(),
        "--seconds".into(),
        "2".into(),
        "--interval".into(),
        "1".into(),
        "--investigation".into(),
        inv.to_string(),
        "--server".into(),
        format!("http://{addr}"),
        "--token".into(),
        token.clone(),
    ];
    let out = common::uploads::run_cli(args).await;
    server.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // No allowlist applies to a capture taken where the engine runs.
    assert!(stdout.contains("\tprometheus\tdone\t"), "{stdout}");
    assert!(stderr.contains("scrape 3 of 3"), "{stderr}");
    let id: i64 = stdout.split('\t').next().unwrap().trim().parse().unwrap();
    let a = settled(&mut app, &token, id).await;
    assert_eq!(a["investigation"], inv);
    assert_eq!(a["analysis"]["capture"]["snapshots"], 3);
    assert_eq!(
        a["analysis"]["counters"]["generation_tokens"]
            .as_f64()
            .unwrap(),
        7_557_572.0 * 2.0
    );

    // Bad flags are refused before anything is fetched.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .args([
            "capture",
            &url,
            "--seconds",
            "0",
            "--interval",
            "0",
            "--token",
            "t",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--seconds") && stderr.contains("--interval"),
        "{stderr}"
    );
    assert_eq!(metrics.hits.load(Ordering::SeqCst), 3);
}
