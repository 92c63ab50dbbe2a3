//! Every reworked page at a desktop (1400 px) and a phone (390 px) width, in headless
//! Chromium: no sideways scrolling, nothing in the console, chart text at least 11 px as
//! rendered, and the areas behind a Menu button on the phone. Screenshots go to
//! `$PERFJOURNAL_SCREENSHOTS` (or target/screenshots) for a person to look at.

use crate::common;

use std::time::Duration;

use common::{browser, spawn_app, TestApp};
use thirtyfour::prelude::*;

/// A C++ kernel name as Nsight and PyTorch traces print it: one unbroken token.
const LONG_KERNEL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>>(int, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>)";

async fn upload(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> i64 {
    let r = common::uploads::upload(app, token, name, body).await;
    r.json()["id"].as_i64().unwrap()
}

/// The pages to check, seeded: the demo investigations, one with a long kernel name in
/// step 5, and analysed artifacts (real fixtures when available) with charts.
async fn seed(app: &mut TestApp) -> Vec<(String, String)> {
    app.seed_demo().await;
    let r = app
        .post_form(
            "/investigations",
            &[("title", "Decode slower after the kernel upgrade")],
        )
        .await;
    let inv = r.location().unwrap().to_string();
    let r = app
        .post_form(
            &format!("{inv}/steps/5"),
            &[
                ("kernels[0].name", LONG_KERNEL),
                ("kernels[0].share", "0.62"),
                (
                    "kernels[1].name",
                    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                ),
                ("kernels[1].share", "0.2"),
            ],
        )
        .await;
    assert!(r.status.is_redirection(), "step 5: {}", r.body);
    let entry: i64 = sqlx::query_scalar(
        "SELECT id FROM journal_entries WHERE published_at IS NOT NULL ORDER BY id LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut pages = vec![
        ("investigation".to_string(), inv.clone()),
        ("step-5".into(), format!("{inv}/steps/5")),
        ("journal-entry".into(), format!("/journal/{entry}")),
        (
            "estimator-memory-fit".into(),
            "/estimators/memory-fit?model=llama-3.3-70b&gpu=h100-sxm&tp=2&max_model_len=32768"
                .into(),
        ),
        ("search".into(), "/search?q=kv+cache".into()),
        ("admin-webhooks".into(), "/admin/webhooks".into()),
        ("estimator-accuracy".into(), "/estimators/accuracy".into()),
    ];
    // A webhook with a long URL and a delivery in its log, for the admin page.
    sqlx::query(
        "WITH w AS (INSERT INTO webhooks (url, events, secret, slack) VALUES \
         ('https://hooks.example.com/services/T000000/B000000/a-very-long-path-segment-xxxxxxxxxxxxxxxxxxxx', \
          '{journal.published,artifact.failed}', 'a-secret-of-24-characters', true) RETURNING id) \
         INSERT INTO webhook_deliveries (webhook_id, event, body, attempts, last_status, last_error) \
         SELECT id, 'journal.published', '{}', 2, 500, 'answered 500 Internal Server Error' FROM w",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let token = app.api_token("ada").await;
    let ncu = format!(
        "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
         \"0\",\"{LONG_KERNEL}\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"18.5\"\n\
         \"0\",\"{LONG_KERNEL}\",\"GPU Speed Of Light Throughput\",\"DRAM Throughput\",\"%\",\"87.1\"\n"
    );
    let ncu = upload(app, &token, "long-names.ncu.csv", ncu.into_bytes()).await;
    if let Some(root) = std::env::var_os("PERFJOURNAL_REAL_FIXTURES") {
        let root = std::path::PathBuf::from(root);
        for (label, file) in [
            (
                "artifact-trace",
                "pytorch_trace/hta__trace_file_list__inference_rank_1.json.gz",
            ),
            (
                "artifact-nsys",
                "nsys/llmperfopt__decode__summary_cuda_gpu_kern_sum.csv",
            ),
            (
                "artifact-bench",
                "vllm_bench/llmk8s__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_04.json",
            ),
        ] {
            let bytes = std::fs::read(root.join(file)).unwrap();
            let name = file.rsplit('/').next().unwrap();
            let id = upload(app, &token, name, bytes).await;
            pages.push((label.into(), format!("/artifacts/{id}")));
        }
    } else {
        common::skip(
            "browser_layout (artifact charts)",
            "PERFJOURNAL_REAL_FIXTURES unset: the trace, nsys and bench pages are not checked",
        );
    }
    app.drain_queue().await;
    pages.push(("artifact-ncu".into(), format!("/artifacts/{ncu}")));
    pages.push(("artifacts".into(), "/artifacts".into()));
    pages
}

async fn settle(b: &browser::Browser) {
    for _ in 0..50 {
        let ready = b
            .driver
            .execute("return document.readyState", vec![])
            .await
            .unwrap();
        if ready.json() == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // htmx fragments that load on page load (similar investigations, related entries).
    tokio::time::sleep(Duration::from_millis(400)).await;
}

async fn number(b: &browser::Browser, script: &str) -> f64 {
    b.driver
        .execute(script, vec![])
        .await
        .unwrap()
        .json()
        .as_f64()
        .unwrap_or_else(|| panic!("{script} gave no number"))
}

async fn attr(b: &browser::Browser, css: &str, name: &str) -> Option<String> {
    let el = b.driver.find(By::Css(css)).await.unwrap();
    el.attr(name).await.unwrap()
}

/// A full-length screenshot of the page at this width.
async fn screenshot(b: &browser::Browser, name: &str, width: u32) {
    let dir = std::env::var_os("PERFJOURNAL_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots")
        });
    std::fs::create_dir_all(&dir).unwrap();
    let height = number(b, "return document.documentElement.scrollHeight").await;
    b.driver
        .set_window_rect(0, 0, width, (height as u32).clamp(600, 6000))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = b
        .driver
        .screenshot(&dir.join(format!("{name}-{width}.png")))
        .await;
    b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
}

const SMALLEST_CHART_TEXT: &str = "let min = 1e9;
for (const svg of document.querySelectorAll('svg.chart')) {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll('text')) {
    if (!t.textContent.trim()) continue;
    min = Math.min(min, parseFloat(t.getAttribute('font-size')) * scale);
  }
}
return min;";

#[tokio::test]
async fn pages_fit_a_phone_and_a_desktop_without_console_errors() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let test = "pages_fit_a_phone_and_a_desktop_without_console_errors";
    let pages = seed(&mut app).await;
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    b.console_errors().await;

    for width in [1400u32, 390] {
        b.driver.set_window_rect(0, 0, width, 900).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let inner = number(&b, "return window.innerWidth").await;
        assert!(
            (inner - f64::from(width)).abs() <= 16.0,
            "the window is {inner} px wide, wanted {width}"
        );
        for (name, path) in &pages {
            b.goto(path).await;
            settle(&b).await;
            let overflow = number(
                &b,
                "return document.documentElement.scrollWidth - window.innerWidth",
            )
            .await;
            assert!(
                overflow <= 0.0,
                "{name} at {width} px scrolls sideways by {overflow} px ({path})"
            );
            let errors = b.console_errors().await;
            assert!(errors.is_empty(), "{name} at {width} px: {errors:?}");
            let charts = number(&b, "return document.querySelectorAll('svg.chart').length").await;
            if charts > 0.0 {
                let smallest = number(&b, SMALLEST_CHART_TEXT).await;
                assert!(
                    smallest >= 11.0,
                    "{name} at {width} px: chart text renders at {smallest:.1} px"
                );
            }
            screenshot(&b, name, width).await;
        }
    }

    // The folded kernel name, with the full one on hover and in a details row.
    let inv = &pages[0].1;
    b.goto(&format!("{inv}/steps/5")).await;
    settle(&b).await;
    let shown = b.text(".ranked-kernels .kernel").await;
    assert_eq!(shown, "at::native::vectorized_elementwise_kernel<…>");
    let title = attr(&b, ".ranked-kernels .kernel", "title").await;
    assert_eq!(title.as_deref(), Some(LONG_KERNEL));

    // On the phone the areas hide behind the Menu button, which opens them.
    b.goto(inv).await;
    settle(&b).await;
    let areas = b.driver.find(By::Css("nav.areas")).await.unwrap();
    assert!(!areas.is_displayed().await.unwrap());
    b.click(".nav-toggle").await;
    assert!(areas.is_displayed().await.unwrap());
    let expanded = attr(&b, ".nav-toggle", "aria-expanded").await;
    assert_eq!(expanded.as_deref(), Some("true"));
    b.click("nav.areas a[href='/journal']").await;
    b.wait_text("main h1", "Journal").await;
    assert!(b.console_errors().await.is_empty());
    b.quit().await;
}

/// At 390 px, step 6's ranked fixes show every column (Gain per day included) as a card
/// per fix, inside the screen; the journal's conflict table gives "Your text" room: the
/// full width on a phone, an even share beside "Now saved" on a desktop.
#[tokio::test]
async fn step_6_and_the_conflict_table_show_every_column_on_a_phone() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let test = "step_6_and_the_conflict_table_show_every_column_on_a_phone";
    app.seed_demo().await;
    let inv: i64 = sqlx::query_scalar(
        "SELECT investigation_id FROM investigation_steps WHERE step = 6 ORDER BY investigation_id LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let entry: i64 = sqlx::query_scalar("SELECT id FROM journal_entries ORDER BY id LIMIT 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;

    b.driver.set_window_rect(0, 0, 390, 900).await.unwrap();
    b.goto(&format!("/investigations/{inv}/steps/6")).await;
    settle(&b).await;
    let outside = number(
        &b,
        "const cells = [...document.querySelectorAll('table.ranked-fixes td.gain-per-day')];
         if (!cells.length) return -1;
         return cells.filter(c => { const r = c.getBoundingClientRect();
           return r.width === 0 || r.right > window.innerWidth + 1 || r.left < 0; }).length;",
    )
    .await;
    assert_eq!(
        outside, 0.0,
        "every fix's Gain per day is on screen (-1: no fixes shown)"
    );
    let label = b
        .driver
        .execute(
            "const c = document.querySelector('table.ranked-fixes td.gain-per-day');
             return getComputedStyle(c, '::before').content;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        label.json().as_str().unwrap_or("").contains("Gain per day"),
        "{:?}",
        label.json()
    );

    // A conflict: the page is opened, someone else saves, then this form is sent.
    b.driver.set_window_rect(0, 0, 1400, 900).await.unwrap();
    b.goto(&format!("/journal/{entry}/edit")).await;
    settle(&b).await;
    let edit = app.get(&format!("/journal/{entry}/edit")).await;
    let diagnosis = format!(
        "{} (edited elsewhere)",
        common::form_value(&edit, "[name=diagnosis]")
    );
    let fields = common::journal_edit_fields(&edit, &[("diagnosis", &diagnosis)], "save");
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = app.post_form(&format!("/journal/{entry}"), &pairs).await;
    assert!(
        r.status.is_redirection(),
        "the other save: {} {}",
        r.status,
        r.body
    );
    let diagnosis = b.driver.find(By::Css("[name='diagnosis']")).await.unwrap();
    diagnosis
        .send_keys(" Mine: a much longer explanation of what the step showed and why.")
        .await
        .unwrap();
    b.driver
        .find(By::Css("form.entry-form button[value=save]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    settle(&b).await;
    let share = number(
        &b,
        "const t = document.querySelector('table.conflict-fields');
         const y = t && t.querySelector('td.yours');
         return y ? y.getBoundingClientRect().width / t.getBoundingClientRect().width : -1;",
    )
    .await;
    assert!(
        share >= 0.35,
        "Your text takes {share} of the table at 1400 px"
    );
    b.driver.set_window_rect(0, 0, 390, 900).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let width = number(
        &b,
        "return document.querySelector('table.conflict-fields td.yours').getBoundingClientRect().width",
    )
    .await;
    assert!(width >= 250.0, "Your text is {width} px wide at 390 px");
}
