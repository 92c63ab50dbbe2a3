//! Investigations through the pages: opening one, each step's computation as the page
//! shows it, bad input, permissions, skipping ahead, history, expected vs observed.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use perfjournal::auth::Role;

/// An admin signed in (admins are editors too), with one investigation opened.
async fn app_with_investigation() -> (TestApp, String) {
    common::app_with_investigation("p95 TTFT above target after deploy").await
}

const STEP0: &[(&str, &str)] = &[
    ("reproducible", "yes"),
    ("model", "llama-3.1-8b"),
    ("gpu_type", "h100-sxm"),
    ("gpu_count", "1"),
    ("tp", "1"),
    ("max_num_seqs", "256"),
    ("max_num_batched_tokens", "8192"),
    ("chunked_prefill", "off"),
    ("concurrency", "64"),
    ("prompt_len_dist", "mean 1,800 tokens"),
    ("output_len_dist", "mean 250 tokens"),
    ("arrival_rate", "45"),
];

const ITL_24_MS: &[(&str, &str)] = &[
    ("metric", "itl"),
    ("percentile", "p50"),
    ("observed", "24"),
    ("target", "16"),
];

async fn save(app: &mut TestApp, url: &str, step: u8, fields: &[(&str, &str)]) {
    let r = app.post_form(&format!("{url}/steps/{step}"), fields).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "step {step}: {}", r.body);
}

async fn step_rows(app: &TestApp, url: &str) -> i64 {
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    sqlx::query_scalar("SELECT count(*) FROM investigation_steps WHERE investigation_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn each_step_computes_what_it_promises() {
    let (mut app, url) = app_with_investigation().await;
    let page = app.get(&url).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(
        page.select("h1.inv-title"),
        ["p95 TTFT above target after deploy"]
    );
    assert_eq!(page.select(".rail-step.state-not_started").len(), 8);

    save(&mut app, &url, 0, STEP0).await;
    let p = app.get(&format!("{url}/steps/0")).await;
    assert!(p.select(".reproducible strong")[0].contains("yes"));

    save(
        &mut app,
        &url,
        1,
        &[
            ("metric", "ttft"),
            ("percentile", "p95"),
            ("observed", "3,200"),
            ("target", "800"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/1")).await;
    assert_eq!(p.select(".gap-ratio .value"), ["4.00×"]);
    assert_eq!(
        p.select(".symptom-line"),
        ["p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"]
    );

    save(
        &mut app,
        &url,
        2,
        &[
            ("tokenize.p50", "10"),
            ("tokenize.p95", "20"),
            ("tokenize.p99", "30"),
            ("queue_wait.p50", "900"),
            ("queue_wait.p95", "2300"),
            ("queue_wait.p99", "2900"),
            ("prefill.p50", "120"),
            ("prefill.p95", "180"),
            ("prefill.p99", "240"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/2")).await;
    let dom = p.select(".dominant-phase");
    assert!(dom[0].starts_with("Queue wait (72%"), "{dom:?}");
    let checks = p.select(".next-checks li");
    assert!(checks[0].contains("running batch"), "{checks:?}");
    assert_eq!(p.select(".shares tbody tr").len(), 3);

    save(
        &mut app,
        &url,
        3,
        &[("gpu_total", "35"), ("cpu_total", "20"), ("wall", "100")],
    )
    .await;
    let p = app.get(&format!("{url}/steps/3")).await;
    let html = p.html();
    let sel = scraper::Selector::parse(".classification").unwrap();
    let c = html.select(&sel).next().unwrap();
    assert_eq!(c.value().attr("data-kind"), Some("waiting"));
    assert!(p
        .select(".suspects li")
        .iter()
        .any(|s| s.contains(".item()")));

    save(
        &mut app,
        &url,
        4,
        &[
            ("kernels[0].name", "paged_attention"),
            ("kernels[0].sm_pct", "20"),
            ("kernels[0].dram_pct", "85"),
            ("kernels[1].name", "gemm"),
            ("kernels[1].sm_pct", "80"),
            ("kernels[1].dram_pct", "30"),
            ("decode.measured_ms", "24"),
            ("decode.batch", "64"),
            ("decode.context", "4096"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/4")).await;
    assert_eq!(
        p.select(".regimes td.regime"),
        ["memory-bound", "compute-bound"]
    );
    // decode-floor from the step-0 setup: 15.05 ms of a 24 ms step → 63%.
    let band = p.select(".decode-band")[0].clone();
    assert!(band.contains("The floor is 15.05 ms"), "{band}");
    // and against what a well-run server of the setup takes
    assert!(band.contains("expected 17.61 ms"), "{band}");
    assert_eq!(p.select(".decode-band .over-expected"), ["1.36× expected"]);
    assert!(p.select(".band-thresholds")[0].contains("healthy up to 1.2×"));
    assert_eq!(
        p.select(".decode-band .ratio"),
        ["63% of the physical limit"]
    );
    assert_eq!(p.select(".decode-band.band-overhead").len(), 1);
    let html = p.html();
    let sel = scraper::Selector::parse(".decode-band a").unwrap();
    let chain = html
        .select(&sel)
        .next()
        .unwrap()
        .value()
        .attr("href")
        .unwrap()
        .to_string();
    assert!(chain.contains("context=4096"), "{chain}");
    assert_eq!(app.get(&chain).await.status, StatusCode::OK);

    save(
        &mut app,
        &url,
        5,
        &[
            ("kernels[0].name", "rmsnorm"),
            ("kernels[0].time_ms", "1"),
            ("kernels[1].name", "flash_attn"),
            ("kernels[1].time_ms", "6"),
            ("kernels[2].name", "gemm"),
            ("kernels[2].time_ms", "3"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/5")).await;
    assert_eq!(
        p.select(".ranked-kernels td.name"),
        ["flash_attn", "gemm", "rmsnorm"]
    );
    assert_eq!(p.select(".ranked-kernels td.share"), ["60%", "30%", "10%"]);

    save(
        &mut app,
        &url,
        6,
        &[
            ("candidates[0].description", "fused rmsnorm"),
            ("candidates[0].share", "4%"),
            ("candidates[0].speedup", "3"),
            ("candidates[0].effort_days", "1"),
            ("candidates[1].description", "chunked prefill"),
            ("candidates[1].share", "0.7"),
            ("candidates[1].speedup", "3"),
            ("candidates[1].effort_days", "0.25"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/6")).await;
    // Effort and speedup are shown as typed: 0.25 days, not 0.2.
    let effort = p.select(".ranked-fixes td[data-label='Effort (days)']");
    assert_eq!(effort, ["0.25", "1"]);
    assert_eq!(
        p.select(".ranked-fixes td.name")[0],
        "chunked prefill",
        "ranked by gain per day"
    );
    // 1 / (0.3 + 0.7/3) = 1.875
    assert_eq!(p.select(".ranked-fixes td.ceiling")[0], "1.875×");
    let warn = p.select(".ranked-fixes .fix-warning");
    assert_eq!(warn.len(), 1);
    assert!(warn[0].starts_with("Touches under 5% of the time"));

    // Step 7 starts from the step-0 configuration.
    let p = app.get(&format!("{url}/steps/7")).await;
    let html = p.html();
    let sel = scraper::Selector::parse("input[name='after_config.model']").unwrap();
    assert_eq!(
        html.select(&sel).next().unwrap().value().attr("value"),
        Some("llama-3.1-8b")
    );
    let mut after: Vec<(&str, &str)> = STEP0
        .iter()
        .filter(|(k, _)| *k != "reproducible")
        .map(|(k, v)| match *k {
            "chunked_prefill" => ("after_config.chunked_prefill", "on"),
            "model" => ("after_config.model", *v),
            "gpu_type" => ("after_config.gpu_type", *v),
            "gpu_count" => ("after_config.gpu_count", *v),
            "tp" => ("after_config.tp", *v),
            "max_num_seqs" => ("after_config.max_num_seqs", *v),
            "max_num_batched_tokens" => ("after_config.max_num_batched_tokens", *v),
            "concurrency" => ("after_config.concurrency", *v),
            "prompt_len_dist" => ("after_config.prompt_len_dist", *v),
            "output_len_dist" => ("after_config.output_len_dist", *v),
            _ => ("after_config.arrival_rate", *v),
        })
        .collect();
    after.extend([
        ("change", "enable chunked prefill"),
        ("after_value", "780"),
        ("verdict", "confirmed"),
        ("quality", "200 paired generations identical"),
        ("effort", "30 minutes"),
    ]);
    after.extend([
        ("tradeoff.metric", "itl"),
        ("tradeoff.percentile", "p99"),
        ("tradeoff.before", "52"),
        ("tradeoff.after", "61 ms"),
        ("tradeoff.scope", "all requests"),
    ]);
    save(&mut app, &url, 7, &after).await;
    let p = app.get(&format!("{url}/steps/7")).await;
    assert_eq!(
        p.select(".tradeoff-line"),
        ["Trade-off: p99 ITL (all requests) 52.0 ms → 61.0 ms (+17.3%, worse)"]
    );
    // The form gives the trade-off back for an edit.
    let sel = scraper::Selector::parse("input[name='tradeoff.after']").unwrap();
    assert_eq!(
        p.html().select(&sel).next().unwrap().value().attr("value"),
        Some("61")
    );
    assert_eq!(p.select(".config-diff-ok").len(), 1, "{}", p.body);
    assert_eq!(p.select(".config-diff-warning").len(), 0);
    assert_eq!(p.select(".verdict"), ["Confirmed"]);
    assert!(p.select(".before-after")[0].contains("p95 TTFT 780 ms after (-75.6%)"));

    // The drafted RESULT carries it; the API saves and returns the same shape.
    let r = app.post_form(&format!("{url}/journal"), &[]).await;
    let draft = app.get(r.location().unwrap()).await;
    assert!(
        draft
            .body
            .contains("trade-off: p99 ITL (all requests) 52.0 ms → 61.0 ms (+17.3%, worse)"),
        "{}",
        draft.body
    );
    let token = app.api_token("ada").await;
    let id = url.rsplit('/').next().unwrap();
    let mut body = serde_json::json!({
        "change": "enable chunked prefill", "after_value": 780, "quality": "identical",
        "tradeoff": {"metric": "ttft", "percentile": "p95", "before": "1.9 s", "after": "2.6 s"}
    });
    for (k, v) in &after {
        if let Some(field) = k.strip_prefix("after_config.") {
            body["after_config"][field] = serde_json::json!(v);
        }
    }
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/investigations/{id}/steps/7"),
            &token,
            Some(body),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let p = app.get(&format!("{url}/steps/7")).await;
    assert_eq!(
        p.select(".tradeoff-line"),
        ["Trade-off: p95 TTFT 1,900 ms → 2,600 ms (+36.8%, worse)"]
    );

    // Every step done, and the overview lists what each found.
    let p = app.get(&url).await;
    assert_eq!(p.select(".rail-step.state-done").len(), 8);
    assert_eq!(p.select(".findings li").len(), 8);
    assert_eq!(p.select(".next-step h2"), ["All eight steps are recorded"]);
}

#[tokio::test]
async fn step_7_warns_when_more_than_the_declared_setting_changed() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(
        &mut app,
        &url,
        7,
        &[
            ("change", "chunked prefill"),
            ("after_config.model", "llama-3.1-8b"),
            ("after_config.gpu_type", "h100-sxm"),
            ("after_config.gpu_count", "1"),
            ("after_config.tp", "2"),
            ("after_config.max_num_seqs", "256"),
            ("after_config.max_num_batched_tokens", "8192"),
            ("after_config.chunked_prefill", "on"),
            ("after_config.concurrency", "64"),
            ("after_config.prompt_len_dist", "mean 1,800 tokens"),
            ("after_config.output_len_dist", "mean 250 tokens"),
            ("after_config.arrival_rate", "45"),
            ("after_value", "700"),
            ("verdict", "confirmed"),
            ("quality", "spot checks"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/7")).await;
    let warning = p.select(".config-diff-warning li");
    assert!(
        warning.iter().any(|w| w.contains("Tensor parallelism")),
        "{warning:?}"
    );
    assert_eq!(
        p.select(".config-diff tr.undeclared td:first-child"),
        ["Tensor parallelism"]
    );
    // An invalid comparison cannot be confirmed, whatever was chosen.
    assert_eq!(p.select(".verdict"), ["Invalid comparison"]);
}

#[tokio::test]
async fn bad_input_is_refused_beside_its_field_and_nothing_is_saved() {
    let (mut app, url) = app_with_investigation().await;
    let r = app
        .post_form(
            &format!("{url}/steps/1"),
            &[
                ("metric", "ttft"),
                ("percentile", "p95"),
                ("observed", "slow"),
                ("target", "800"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let err = r.select(".field-error[data-field=observed]");
    assert_eq!(err.len(), 1, "{}", r.body);
    assert!(err[0].starts_with("'slow' is not a measurement"), "{err:?}");
    // What was typed stays in the form.
    let html = r.html();
    let sel = scraper::Selector::parse("input[name=observed]").unwrap();
    assert_eq!(
        html.select(&sel).next().unwrap().value().attr("value"),
        Some("slow")
    );
    assert_eq!(step_rows(&app, &url).await, 0);

    let r = app
        .post_form(
            &format!("{url}/steps/6"),
            &[
                ("candidates[1].description", "x"),
                ("candidates[1].share", "150"),
                ("candidates[1].speedup", "2"),
                ("candidates[1].effort_days", "1"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.select(".field-error[data-field='candidates[1].share']")
            .len(),
        1
    );

    let r = app
        .post_form(&format!("{url}/steps/0"), &[("tp", "0")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select(".field-error[data-field=reproducible]").len(), 1);
    assert_eq!(r.select(".field-error[data-field=tp]").len(), 1);
    assert_eq!(step_rows(&app, &url).await, 0);

    let r = app
        .post_form(
            "/investigations",
            &[("title", " "), ("tags", "no spaces allowed!")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select(".field-error[data-field=title]").len(), 1);
    assert_eq!(r.select(".field-error[data-field=tags]").len(), 1);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigations")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn viewers_read_but_cannot_create_or_edit() {
    let (app, url) = app_with_investigation().await;
    app.add_user("vic", Role::Viewer).await;
    let mut vic = app.new_client();
    vic.login("vic").await;

    assert_eq!(vic.get("/investigations").await.status, StatusCode::OK);
    let page = vic.get(&url).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.select(".status-form").is_empty());
    assert_eq!(
        vic.get("/investigations/new").await.status,
        StatusCode::FORBIDDEN
    );
    let r = vic.post_form("/investigations", &[("title", "mine")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = vic
        .post_form(
            &format!("{url}/steps/3"),
            &[("gpu_total", "1"), ("cpu_total", "1"), ("wall", "2")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = vic
        .post_form(&format!("{url}/status"), &[("status", "resolved")])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = vic
        .post_form(
            &format!("{url}/steps/4/expected"),
            &[("estimator", "decode-floor")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        vic.post_form(&format!("{url}/journal"), &[]).await.status,
        StatusCode::FORBIDDEN
    );

    // A viewer's visit to a later step warns but records nothing, and shows no save button.
    let p = vic.get(&format!("{url}/steps/5")).await;
    assert_eq!(p.status, StatusCode::OK);
    assert_eq!(p.select(".skip-warning").len(), 1);
    assert!(p.select(".step-form button[type=submit]").is_empty());
    let skips: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_skips")
        .fetch_one(&vic.pool)
        .await
        .unwrap();
    assert_eq!(skips, 0);
    assert_eq!(step_rows(&vic, &url).await, 0);
}

#[tokio::test]
async fn skipping_ahead_warns_on_the_page_and_is_recorded_only_when_the_step_is_saved() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    let skips = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM investigation_skips")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let events = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM investigation_events")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let events_before = events(app.pool.clone()).await;
    let p = app.get(&format!("{url}/steps/5")).await;
    let w = p.select(".skip-warning");
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("Kernel work is the most expensive place to start"),
        "{w:?}"
    );
    assert_eq!(
        p.select(".rail-step.current .title"),
        ["Which kernel and why"]
    );
    // Opening the page (or previewing other steps) as an editor changes nothing.
    app.get(&format!("{url}/steps/6")).await;
    app.get(&format!("{url}/steps/7")).await;
    assert_eq!(skips(app.pool.clone()).await, 0);
    assert_eq!(events(app.pool.clone()).await, events_before);
    assert!(app
        .get(&url)
        .await
        .select(".history li.event-skipped")
        .is_empty());
    let p = app.get(&format!("{url}/steps/5")).await;
    assert!(p.select(".rail-step.state-skipped").is_empty());

    // Saving step 5 records the skip once, on the rail and in the history.
    save(
        &mut app,
        &url,
        5,
        &[
            ("kernels[0].name", "flash_fwd"),
            ("kernels[0].share", "40%"),
        ],
    )
    .await;
    save(
        &mut app,
        &url,
        5,
        &[
            ("kernels[0].name", "flash_fwd"),
            ("kernels[0].share", "45%"),
        ],
    )
    .await;
    assert_eq!(skips(app.pool.clone()).await, 1);
    let p = app.get(&format!("{url}/steps/5")).await;
    assert_eq!(p.select(".rail-step.state-skipped").len(), 4, "steps 1–4");
    assert!(p.select(".rail-step.state-skipped .skip-reason")[0].starts_with("Kernel work"));
    let overview = app.get(&url).await;
    let history = overview.select(".history li.event-skipped .what");
    assert_eq!(history.len(), 1);
    assert!(
        history[0].contains("skipped ahead to step 5 with steps 1, 2, 3, 4 not recorded"),
        "{history:?}"
    );

    // In order, nothing is skipped.
    let p = app.get(&format!("{url}/steps/1")).await;
    assert!(p.select(".skip-warning").is_empty());
}

#[tokio::test]
async fn history_says_who_changed_what() {
    let (mut app, url) = app_with_investigation().await;
    app.add_user("eve", Role::Editor).await;
    let mut eve = app.new_client();
    eve.login("eve").await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut eve, &url, 1, ITL_24_MS).await;
    save(
        &mut eve,
        &url,
        1,
        &[
            ("metric", "itl"),
            ("percentile", "p50"),
            ("observed", "25"),
            ("target", "16"),
        ],
    )
    .await;
    let r = app
        .post_form(&format!("{url}/status"), &[("status", "diagnosed")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let r = app
        .post_form(&format!("{url}/status"), &[("status", "bogus")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    let p = app.get(&url).await;
    let who = p.select(".history li .who");
    let what = p.select(".history li .what");
    // Newest first.
    assert_eq!(who, ["ada", "eve", "eve", "ada", "ada"]);
    assert_eq!(what[0], "changed the status from open to diagnosed");
    assert!(
        what[1].starts_with("step 1 (Define the metric): p50 ITL 25"),
        "{what:?}"
    );
    assert_eq!(p.select(".history li.event-step_updated").len(), 1);
    assert_eq!(p.select(".history li.event-step_recorded").len(), 2);
    assert!(what[4].starts_with("opened"));
    assert_eq!(p.select(".inv-meta .status"), ["diagnosed"]);
    assert_eq!(p.select(".rail-step[data-step='1'] .state"), ["done"]);
}

/// Back and the same form sent again (with the version it was opened at), or the same
/// save twice, changes nothing: one history line, version 1, no conflict.
#[tokio::test]
async fn saving_a_step_again_unchanged_adds_no_history_line() {
    let (mut app, url) = app_with_investigation().await;
    let mut fields = ITL_24_MS.to_vec();
    fields.push(("version", "0"));
    save(&mut app, &url, 1, &fields).await;
    save(&mut app, &url, 1, &fields).await;
    save(&mut app, &url, 1, ITL_24_MS).await;
    let p = app.get(&url).await;
    assert_eq!(p.select(".history li.event-step_recorded").len(), 1);
    assert_eq!(p.select(".history li.event-step_updated").len(), 0);
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let version: i32 = sqlx::query_scalar(
        "SELECT version FROM investigation_steps WHERE investigation_id = $1 AND step = 1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(version, 1);
    // A real change from the old version is still a conflict, and nothing is lost.
    let mut changed = fields.clone();
    changed[2] = ("observed", "30");
    let r = app.post_form(&format!("{url}/steps/1"), &changed).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
}

#[tokio::test]
async fn an_estimate_attached_to_a_step_shows_the_gap_to_explain() {
    let (mut app, url) = app_with_investigation().await;
    save(
        &mut app,
        &url,
        4,
        &[("decode.measured_ms", "24"), ("decode.floor_ms", "15")],
    )
    .await;
    let p = app.get(&format!("{url}/steps/4")).await;
    // The observed value is offered from the step's own measurement, with its unit.
    let html = p.html();
    let sel = scraper::Selector::parse("input[name=observed]").unwrap();
    assert_eq!(
        html.select(&sel).next().unwrap().value().attr("value"),
        Some("24.00 ms")
    );

    let r = app
        .post_form(
            &format!("{url}/steps/4/expected"),
            &[
                ("estimator", ""),
                ("inputs", "/estimators/decode-floor?model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096"),
                ("result_key", "floor_ms"),
                ("observed", "24"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let p = app.get(&format!("{url}/steps/4")).await;
    assert_eq!(
        p.select(".expected-figures .expected-value")[0]
            .split(" (")
            .next(),
        Some("15.05 ms")
    );
    assert_eq!(p.select(".expected-figures .observed-value"), ["24.00 ms"]);
    assert_eq!(p.select(".expected-figures .gap-ratio-cell"), ["1.59×"]);
    let overview = app.get(&url).await;
    assert_eq!(overview.select("table.expected .gap-ratio-cell"), ["1.59×"]);

    let r = app
        .post_form(
            &format!("{url}/steps/4/expected"),
            &[
                ("estimator", "decode-floor"),
                ("inputs", "model=llama-3.1-8b"),
                ("result_key", ""),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!r.select(".field-error[data-field=inputs]").is_empty());
}

#[tokio::test]
async fn step_2_offers_decode_floor_prefilled_from_step_0() {
    let (mut app, url) = app_with_investigation().await;
    save(&mut app, &url, 0, STEP0).await;
    save(&mut app, &url, 1, ITL_24_MS).await;
    save(
        &mut app,
        &url,
        2,
        &[
            ("decode.p50", "24"),
            ("decode.p95", "30"),
            ("decode.p99", "41"),
        ],
    )
    .await;
    let p = app.get(&format!("{url}/steps/2")).await;
    let html = p.html();
    let sel = scraper::Selector::parse("a.estimator-link").unwrap();
    let link = html.select(&sel).next().expect("estimator link");
    assert_eq!(
        link.value().attr("href"),
        Some(
            "/estimators/decode-floor?batch=64&gpu=h100-sxm&measured_itl_ms=24\
             &model=llama-3.1-8b&tp=1"
        ),
        "the measured ITL step 2 holds is passed along"
    );
    assert_eq!(
        p.select(".dominant-phase"),
        ["Decode step (100% of the metric)"]
    );
    // The estimator page opens with the step-0 setup filled in; only the context is
    // left to give.
    let href = link.value().attr("href").unwrap().to_string();
    let est = app.get(&href).await;
    assert_eq!(est.status, StatusCode::UNPROCESSABLE_ENTITY);
    let html = est.html();
    let sel = scraper::Selector::parse("[name=model] option[selected]").unwrap();
    assert_eq!(
        html.select(&sel).next().unwrap().value().attr("value"),
        Some("llama-3.1-8b")
    );
}

#[tokio::test]
async fn unknown_investigations_and_steps_are_404() {
    let (mut app, url) = app_with_investigation().await;
    assert_eq!(
        app.get("/investigations/999999").await.status,
        StatusCode::NOT_FOUND
    );
    for step in ["8", "300"] {
        assert_eq!(
            app.get(&format!("{url}/steps/{step}")).await.status,
            StatusCode::NOT_FOUND
        );
    }
}

#[tokio::test]
async fn step_2_fills_from_an_uploaded_request_log() {
    let (mut app, url) = app_with_investigation().await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let p = app.get(&format!("{url}/steps/2")).await;
    assert!(
        p.select(".artifact-fill select").is_empty(),
        "nothing to fill from yet"
    );

    let log: String = (0..40)
        .map(|i| {
            let queue = 2000 + i * 10;
            format!(
                "{{\"request_id\":\"r{i}\",\"tokenize_ms\":2,\"queue_wait_ms\":{queue},\"prefill_ms\":180,\"first_token_ms\":{},\"decode_ms\":4000}}\n",
                queue + 182
            )
        })
        .collect();
    let artifact = upload(&mut app, id, "requests.jsonl", log.into_bytes()).await;

    let p = app.get(&format!("{url}/steps/2")).await;
    let options = p.select(".artifact-fill option");
    assert_eq!(options.len(), 1);
    assert!(options[0].starts_with("requests.jsonl ("), "{options:?}");
    let p = app
        .get(&format!("{url}/steps/2?from_artifact={artifact}"))
        .await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.select(".fill-notice")[0].starts_with("Filled from requests.jsonl (40 requests)"));
    let html = p.html();
    let value = |name: &str| {
        let sel = scraper::Selector::parse(&format!("input[name='{name}']")).unwrap();
        html.select(&sel)
            .next()
            .unwrap()
            .value()
            .attr("value")
            .unwrap()
            .to_string()
    };
    assert_eq!(value("prefill.p95"), "180");
    assert_eq!(value("tokenize.p50"), "2");
    assert!(
        value("queue_wait.p99").starts_with("23"),
        "{}",
        value("queue_wait.p99")
    );
    assert_eq!(value("network.p50"), "");
    // Filling is a suggestion: nothing is stored until the form is saved.
    assert_eq!(step_rows(&app, &url).await, 0);

    // Someone else's artifact cannot be pulled in through this investigation.
    let r = app
        .get(&format!("{url}/steps/2?from_artifact=999999"))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Uploads an artifact onto an investigation through the API, analyzed at once.
async fn upload(app: &mut TestApp, investigation: i64, name: &str, body: Vec<u8>) -> i64 {
    use axum::body::Body;
    use axum::http::{header, Request};
    let token = app.api_token("ada").await;
    let req = Request::post(format!(
        "/api/v1/artifacts?name={name}&investigation={investigation}"
    ))
    .header(header::AUTHORIZATION, format!("Bearer {token}"))
    .header(header::CONTENT_TYPE, "application/octet-stream")
    .body(Body::from(body))
    .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    app.drain_queue().await;
    r.json()["id"].as_i64().unwrap()
}

#[tokio::test]
async fn step_5_fills_from_a_kernel_summary_and_saves_the_ranking() {
    let (mut app, url) = app_with_investigation().await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let csv =
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
               20.0,2000000,100,20000,20000,19000,21000,100,rmsnorm_kernel\n\
               80.0,8000000,400,20000,20000,19000,21000,100,\"gemv_kernel<bf16>\"\n";
    let artifact = upload(&mut app, id, "kern_sum.csv", csv.as_bytes().to_vec()).await;
    let p = app.get(&format!("{url}/steps/5")).await;
    assert_eq!(p.select(".artifact-fill option").len(), 1);
    let p = app
        .get(&format!("{url}/steps/5?from_artifact={artifact}"))
        .await;
    assert!(p.select(".fill-notice")[0].starts_with("Filled from kern_sum.csv (2 kernels)"));
    // Submit the filled form as it is.
    let html = p.html();
    let sel = scraper::Selector::parse(".step-form input[name^='kernels']").unwrap();
    let fields: Vec<(String, String)> = html
        .select(&sel)
        .map(|e| {
            let v = e.value();
            (
                v.attr("name").unwrap().to_string(),
                v.attr("value").unwrap_or("").to_string(),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    save(&mut app, &url, 5, &refs).await;
    let p = app.get(&format!("{url}/steps/5")).await;
    // Template arguments folded, the full name on hover and in the details row.
    assert_eq!(
        p.select(".ranked-kernels td.name .kernel"),
        ["gemv_kernel<…>", "rmsnorm_kernel"]
    );
    assert_eq!(
        p.select_attr(".ranked-kernels td.name .kernel[title]", "title"),
        ["gemv_kernel<bf16>"]
    );
    assert_eq!(
        p.select(".ranked-kernels td.name .kernel-full code"),
        ["gemv_kernel<bf16>"]
    );
    assert_eq!(p.select(".ranked-kernels td.share"), ["80%", "20%"]);

    // A kernel summary cannot fill the phase table.
    let p = app
        .get(&format!("{url}/steps/2?from_artifact={artifact}"))
        .await;
    assert!(p.select(".fill-notice")[0].starts_with("kern_sum.csv cannot fill step 2"));
}

/// The hidden version field of a step's form.
fn form_version(page: &common::Reply) -> String {
    page.select_attr(".step-form input[name=version]", "value")
        .pop()
        .expect("the step form names its version")
}

fn step1(observed: &str, version: &str) -> Vec<(&'static str, String)> {
    vec![
        ("metric", "ttft".into()),
        ("percentile", "p95".into()),
        ("observed", observed.into()),
        ("target", "800".into()),
        ("version", version.into()),
    ]
}

async fn post_step(
    app: &mut TestApp,
    url: &str,
    fields: &[(&'static str, String)],
) -> common::Reply {
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    app.post_form(&format!("{url}/steps/1"), &fields).await
}

async fn stored_observed(app: &TestApp, url: &str) -> serde_json::Value {
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    sqlx::query_scalar(
        "SELECT data -> 'observed' FROM investigation_steps WHERE investigation_id = $1 AND step = 1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Two editors open the same step; the second save, from the version both started
/// from, is refused with what the first changed, and nothing is overwritten.
#[tokio::test]
async fn a_stale_step_save_is_refused_with_what_changed_and_nothing_is_lost() {
    let (mut ada, url) = app_with_investigation().await;
    ada.add_user("bob", Role::Editor).await;
    let mut bob = ada.new_client();
    bob.login("bob").await;
    let seen_by_ada = ada.get(&format!("{url}/steps/1")).await;
    let seen_by_bob = bob.get(&format!("{url}/steps/1")).await;
    assert_eq!(form_version(&seen_by_ada), "0");
    assert_eq!(form_version(&seen_by_bob), "0");

    let r = post_step(&mut ada, &url, &step1("3200", "0")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let r = post_step(&mut bob, &url, &step1("3300", "0")).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(
        r.select(".conflict-fields tr[data-field=observed]").len(),
        1,
        "{}",
        r.body
    );
    let theirs = r.select(".conflict-fields tr[data-field=observed] .theirs");
    let yours = r.select(".conflict-fields tr[data-field=observed] .yours");
    assert!(theirs[0].contains("3200"), "{theirs:?}");
    assert!(yours[0].contains("3300"), "{yours:?}");
    // Unchanged fields are not listed.
    assert!(r
        .select(".conflict-fields tr[data-field=target]")
        .is_empty());
    assert!(
        r.select(".conflict strong")[0].contains("ada"),
        "{}",
        r.body
    );
    // Bob's value stays in the form, now on the current version; ada's save stands.
    assert_eq!(
        r.select_attr(".step-form input[name=observed]", "value"),
        ["3300"],
        "{}",
        r.body
    );
    assert_eq!(form_version(&r), "1");
    assert_eq!(stored_observed(&ada, &url).await, 3200.0);

    // Saving again after seeing the difference is deliberate, and goes through.
    let r = post_step(&mut bob, &url, &step1("3300", "1")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(stored_observed(&ada, &url).await, 3300.0);
    let page = ada.get(&format!("{url}/steps/1")).await;
    assert_eq!(form_version(&page), "2");

    // A version that is no version is refused and changes nothing.
    let r = post_step(&mut ada, &url, &step1("1", "two")).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(stored_observed(&ada, &url).await, 3300.0);
}

/// Saves from the same version at the same moment: exactly one wins, every time.
#[tokio::test]
async fn simultaneous_step_saves_from_one_version_let_exactly_one_through() {
    let (mut ada, url) = app_with_investigation().await;
    ada.add_user("bob", Role::Editor).await;
    let mut bob = ada.new_client();
    bob.login("bob").await;
    for round in 0..10 {
        let page = ada.get(&format!("{url}/steps/1")).await;
        let version = form_version(&page);
        let a = step1(&format!("{}", 1000 + round), &version);
        let b = step1(&format!("{}", 2000 + round), &version);
        let (ra, rb) = tokio::join!(post_step(&mut ada, &url, &a), post_step(&mut bob, &url, &b));
        let mut statuses = [ra.status, rb.status];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::SEE_OTHER, StatusCode::CONFLICT],
            "round {round}"
        );
        let kept = stored_observed(&ada, &url).await.as_f64().unwrap();
        let winner = if ra.status == StatusCode::SEE_OTHER {
            1000
        } else {
            2000
        };
        assert_eq!(kept, f64::from(winner + round), "round {round}");
    }
}

/// An ITL target of "60 s" is a slip for 60 ms: step 1 asks to confirm it (the page shows
/// the table of such targets), stores it only once confirmed, and a plausible one passes.
#[tokio::test]
async fn an_implausible_target_is_asked_to_be_confirmed() {
    let (mut app, url) = app_with_investigation().await;
    let slip = [
        ("metric", "itl"),
        ("percentile", "p99"),
        ("observed", "140 ms"),
        ("target", "60 s"),
    ];
    let r = app.post_form(&format!("{url}/steps/1"), &slip).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let error = r.select(".field-error[data-field=target]");
    assert!(
        error[0].starts_with("The ITL target of 60 s is implausible (ITL targets ≥ 1 s"),
        "{error:?}"
    );
    assert_eq!(
        r.select(".target-limits tr[data-metric=itl] td")[1],
        "≥ 1 s"
    );
    assert_eq!(
        r.select(".target-limits tr[data-metric=ttft] td")[1],
        "≥ 60 s"
    );
    assert_eq!(
        r.select_attr("input[name=confirm_target]", "type"),
        ["checkbox"]
    );
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigation_steps")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);

    let mut confirmed = slip.to_vec();
    confirmed.push(("confirm_target", "on"));
    save(&mut app, &url, 1, &confirmed).await;
    save(
        &mut app,
        &url,
        1,
        &[
            ("metric", "itl"),
            ("percentile", "p99"),
            ("observed", "140"),
            ("target", "60"),
        ],
    )
    .await;
}

/// The named inputs of the step form (the one that saves the step), as a browser would
/// send them.
fn step_form_fields(page: &common::Reply, url: &str, step: u8) -> Vec<(String, String)> {
    let html = page.html();
    let form = scraper::Selector::parse(&format!(
        "form[method=post][action='{url}/steps/{step}'] input[name]"
    ))
    .unwrap();
    html.select(&form)
        .filter(|e| !matches!(e.value().attr("type"), Some("checkbox" | "radio")))
        .map(|e| {
            let v = e.value();
            (
                v.attr("name").unwrap().to_string(),
                v.attr("value").unwrap_or_default().to_string(),
            )
        })
        .collect()
}

async fn stored_step(app: &TestApp, url: &str, step: i16) -> serde_json::Value {
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    sqlx::query_scalar(
        "SELECT data FROM investigation_steps WHERE investigation_id = $1 AND step = $2",
    )
    .bind(id)
    .bind(step)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn step_2_says_where_each_rows_numbers_came_from() {
    let (mut app, url) = app_with_investigation().await;
    let id: i64 = url.rsplit('/').next().unwrap().parse().unwrap();
    let log: String = (0..40)
        .map(|i| {
            format!(
                "{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{},\"prefill_ms\":180,\"first_token_ms\":{},\"decode_ms\":4000}}\n",
                2000 + i * 10,
                2182 + i * 10
            )
        })
        .collect();
    let artifact = upload(&mut app, id, "requests.jsonl", log.into_bytes()).await;
    let filled = app
        .get(&format!("{url}/steps/2?from_artifact={artifact}"))
        .await;
    let mut fields = step_form_fields(&filled, &url, 2);
    assert!(
        fields.contains(&("prefill.source".to_string(), artifact.to_string())),
        "{fields:?}"
    );
    // A row typed by hand beside the filled ones.
    fields.retain(|(k, _)| !k.starts_with("network."));
    fields.push(("network.p50".into(), "3".into()));
    fields.push(("network.p95".into(), "9".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    save(&mut app, &url, 2, &pairs).await;

    let data = stored_step(&app, &url, 2).await;
    let row = |phase: &str| {
        data["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == phase)
            .cloned()
            .unwrap_or_else(|| panic!("no {phase} row in {data}"))
    };
    assert_eq!(row("prefill")["source"], artifact);
    assert_eq!(row("prefill").get("edited"), None);
    assert_eq!(row("network").get("source"), None, "typed by hand");

    let page = app.get(&format!("{url}/steps/2")).await;
    let sources = page.select(".phase-table .row-source");
    assert!(
        sources
            .iter()
            .any(|s| s == "from requests.jsonl (per-request log)"),
        "{sources:?}"
    );
    assert!(sources.iter().any(|s| s == "typed"), "{sources:?}");

    // A number changed after the fill: the row says so, and keeps its source.
    let mut fields = step_form_fields(&page, &url, 2);
    for (k, v) in &mut fields {
        if k == "prefill.p50" {
            *v = "170".into();
        }
    }
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    save(&mut app, &url, 2, &pairs).await;
    let data = stored_step(&app, &url, 2).await;
    let prefill = data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == "prefill")
        .unwrap()
        .clone();
    assert_eq!(prefill["source"], artifact);
    assert_eq!(prefill["edited"], true);
    let page = app.get(&format!("{url}/steps/2")).await;
    assert!(page
        .select(".phase-table .row-source")
        .iter()
        .any(|s| s == "edited after filling from requests.jsonl (per-request log)"));

    // A source that is not this investigation's artifact is refused on its row;
    // nothing changes.
    let before = stored_step(&app, &url, 2).await;
    let mut fields = step_form_fields(&page, &url, 2);
    fields.push(("decode.source".into(), "999999".into()));
    fields.push(("queue_wait.source".into(), "abc".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form(&format!("{url}/steps/2"), &pairs).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.contains("is not an artifact id"), "{}", r.body);
    let mut fields = step_form_fields(&page, &url, 2);
    fields.push(("decode.source".into(), "999999".into()));
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form(&format!("{url}/steps/2"), &pairs).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(
        r.body.contains("artifact 999999, is not attached"),
        "{}",
        r.body
    );
    assert_eq!(stored_step(&app, &url, 2).await, before);
}

/// The demo's own results stay within the Amdahl ceilings their step 6 computes: no
/// step-7 page and no journal entry of the examples says a result beat its ceiling.
#[tokio::test]
async fn demo_results_stay_within_their_amdahl_ceilings() {
    let (mut app, _) = app_with_investigation().await;
    app.seed_demo().await;
    let ids: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM investigations WHERE demo_key IS NOT NULL ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(ids.len(), 3);
    for id in ids {
        let p = app.get(&format!("/investigations/{id}/steps/7")).await;
        assert_eq!(p.status, StatusCode::OK);
        assert!(
            p.select(".ceiling-flag").is_empty(),
            "investigation {id}: {:?}",
            p.select(".ceiling-flag")
        );
    }
    let results: Vec<String> =
        sqlx::query_scalar("SELECT result FROM journal_entries WHERE demo_key IS NOT NULL")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert!(!r.contains("Amdahl ceiling"), "{r}");
    }
}
