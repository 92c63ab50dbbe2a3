//! Training on real PostgreSQL: drills posed by seed and graded against the estimator
//! (API and form), blind replays that hide steps 3–7 until the answer, the good-for-
//! training mark, guide self-checks, progress, and that training never touches the
//! journal or the investigations.

use crate::common;

use std::collections::BTreeMap;

use axum::http::StatusCode;
use common::{spawn_app, tables::row_counts, TestApp};
use perfjournal::auth::Role;
use serde_json::{json, Value};

/// ada (admin, owns the demo investigations), vic (viewer); with tokens.
async fn app() -> (TestApp, String, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.add_user("vic", Role::Viewer).await;
    let ada = app.api_token("ada").await;
    let vic = app.api_token("vic").await;
    (app, ada, vic)
}

async fn seed_demo(app: &TestApp) -> Vec<i64> {
    app.seed_demo().await;
    sqlx::query_scalar("SELECT id FROM investigations WHERE demo_key IS NOT NULL ORDER BY id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// Row counts of every table except training's own.
async fn non_training_counts(app: &TestApp) -> BTreeMap<String, i64> {
    row_counts(&app.pool)
        .await
        .into_iter()
        .filter(|(t, _)| !t.starts_with("training_"))
        .collect()
}

#[tokio::test]
async fn a_drill_is_posed_by_seed_without_its_answer_and_reproduces_with_the_estimator() {
    let (mut app, _, vic) = app().await;
    let r = app
        .api("GET", "/api/v1/drills/decode-floor?seed=42", &vic, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let d = r.json();
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    for k in ["drill_id", "estimator", "seed", "inputs", "asks"] {
        assert!(d.get(k).is_some(), "{k} missing in {keys:?}");
    }
    for k in ["expected", "chain", "results", "correct"] {
        assert!(d.get(k).is_none(), "{k} leaks the answer: {}", r.body);
    }
    assert_eq!(d["drill_id"], "decode-floor.42");
    assert_eq!(d["seed"], 42);
    assert_eq!(d["asks"]["key"], "floor_ms");
    assert_eq!(d["asks"]["unit"], "ms");
    for (k, v) in d["inputs"].as_object().unwrap() {
        assert!(v.is_string() || v.is_number(), "{k}: {v}");
    }
    // The same seed gives the same drill.
    let again = app
        .api("GET", "/api/v1/drills/decode-floor?seed=42", &vic, None)
        .await;
    assert_eq!(again.json(), d);

    // The inputs run through the estimator give the expected value.
    let chain = app
        .api(
            "POST",
            "/api/v1/estimate/decode-floor",
            &vic,
            Some(d["inputs"].clone()),
        )
        .await;
    assert_eq!(chain.status, StatusCode::OK, "{}", chain.body);
    let want = chain.json()["results"]["floor_ms"].as_f64().unwrap();

    let right = app
        .api(
            "POST",
            "/api/v1/drills/decode-floor.42/answer",
            &vic,
            Some(json!({"value": want * 1.04})),
        )
        .await;
    assert_eq!(right.status, StatusCode::OK, "{}", right.body);
    let g = right.json();
    assert_eq!(g["correct"], true);
    assert_eq!(g["tolerance"], 0.05);
    assert!((g["expected"].as_f64().unwrap() - want).abs() < 1e-9);
    assert_eq!(g["chain"]["estimator"], "decode-floor");
    assert!(g["chain"]["lines"].as_array().unwrap().len() >= 3);

    // Off by 10 %, with the working: the weights right, the KV per token wrong.
    let lines = g["chain"]["lines"].as_array().unwrap();
    let line = |k: &str| lines.iter().find(|l| l["key"] == k).unwrap().clone();
    let weights = line("weight_bytes_per_gpu");
    let kv = line("kv_bytes_per_token_per_gpu");
    let wrong = app
        .api(
            "POST",
            "/api/v1/drills/decode-floor.42/answer",
            &vic,
            Some(json!({
                "value": format!("{} s", want * 1.1 / 1000.0),
                "steps": {
                    "weight_bytes_per_gpu": format!("{} {}", weights["value"], weights["unit"].as_str().unwrap()),
                    "kv_bytes_per_token_per_gpu": kv["value"].as_f64().unwrap() * 3.0,
                }
            })),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::OK, "{}", wrong.body);
    let g = wrong.json();
    assert_eq!(g["correct"], false);
    assert_eq!(g["first_wrong_step"], "kv_bytes_per_token_per_gpu");
    assert_eq!(g["steps"][0]["correct"], true);

    // Single-step level: weights per GPU, in bytes, same inputs.
    let step = app
        .api(
            "GET",
            "/api/v1/drills/decode-floor?seed=42&level=step",
            &vic,
            None,
        )
        .await
        .json();
    assert_eq!(step["drill_id"], "decode-floor.42.step");
    assert_eq!(step["asks"]["key"], "weight_bytes_per_gpu");
    assert_eq!(step["asks"]["unit"], "B");
    assert_eq!(step["inputs"], d["inputs"]);
}

#[tokio::test]
async fn bad_drill_requests_say_what_and_where() {
    let (mut app, _, vic) = app().await;
    let before = row_counts(&app.pool).await;
    for (path, status, needle) in [
        (
            "/api/v1/drills/decode-flor?seed=1",
            StatusCode::NOT_FOUND,
            "decode-floor",
        ),
        (
            "/api/v1/drills/cost?seed=-1",
            StatusCode::UNPROCESSABLE_ENTITY,
            "seed",
        ),
        (
            "/api/v1/drills/cost?seed=1&level=hard",
            StatusCode::UNPROCESSABLE_ENTITY,
            "level",
        ),
        (
            "/api/v1/drills/cost?seed=1&level=step",
            StatusCode::NOT_FOUND,
            "single-step",
        ),
    ] {
        let r = app.api("GET", path, &vic, None).await;
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(r.body.contains(needle), "{path}: {}", r.body);
    }
    for (path, body, field) in [
        ("/api/v1/drills/cost.1/answer", json!({}), "value"),
        (
            "/api/v1/drills/cost.1/answer",
            json!({"value": "3 ms"}),
            "value",
        ),
        (
            "/api/v1/drills/cost.1/answer",
            json!({"value": true}),
            "value",
        ),
        ("/api/v1/drills/cost.1/answer", json!([1]), "body"),
        (
            "/api/v1/drills/cost.1/answer",
            json!({"value": 4, "steps": {"nope": 1}}),
            "steps.nope",
        ),
    ] {
        let r = app.api("POST", path, &vic, Some(body.clone())).await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        let fields = r.json()["error"]["fields"].clone();
        assert!(
            fields
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["field"] == field),
            "{body}: {fields}"
        );
    }
    let r = app
        .api(
            "POST",
            "/api/v1/drills/nothing.1/answer",
            &vic,
            Some(json!({"value": 1})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        row_counts(&app.pool).await,
        before,
        "a refused answer stores nothing"
    );
}

#[tokio::test]
async fn a_viewer_answers_a_drill_through_the_form_and_sees_the_chain() {
    let (app, _, _) = app().await;
    let mut vic = app.new_client();
    vic.login("vic").await;
    let fresh = vic.get("/drills/cost").await;
    assert_eq!(fresh.status, StatusCode::SEE_OTHER);
    assert!(fresh.location().unwrap().starts_with("/drills/cost?seed="));

    let page = vic.get("/drills/cost?seed=1").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#seed"), ["1"]);
    assert_eq!(page.select("#asks"), ["usd_per_million_output_tokens"]);
    assert!(
        page.select("#chain-result").is_empty(),
        "no chain before the answer"
    );
    let inputs = page.select("#drill-inputs td");
    assert!(inputs.contains(&"2,700".to_string()), "{inputs:?}");

    // $4.93 × 8 GPUs / (2,700 tok/s × 3,600 s) × 1e6 = $4.058 per million.
    let wrong_unit = vic
        .post_form("/drills/cost.1/answer", &[("value", "4 ms")])
        .await;
    assert_eq!(wrong_unit.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(wrong_unit.select("#value-error")[0].contains("ms"));

    let right = vic
        .post_form("/drills/cost.1/answer", &[("value", "4.1")])
        .await;
    assert_eq!(right.status, StatusCode::OK, "{}", right.body);
    assert!(right.select("#verdict .verdict-label")[0].starts_with("Right"));
    assert!(
        right.select("#expected")[0].contains("4.058"),
        "{:?}",
        right.select("#expected")
    );
    assert!(!right.select("#chain-lines tr").is_empty());

    let wrong = vic
        .post_form("/drills/cost.1/answer", &[("value", "5")])
        .await;
    assert!(wrong.select("#verdict .verdict-label")[0].starts_with("Not within 5 %"));

    // Progress counts both, per estimator and per drill type.
    let progress = vic.get("/learn/progress").await;
    assert_eq!(progress.status, StatusCode::OK);
    let row = progress.select("#by-estimator tr[data-name=cost] td");
    assert_eq!(row[1..], ["2", "1", "50 %"]);
    let row = progress.select("#by-kind tr[data-name=chain] td");
    assert_eq!(row[1..], ["2", "1", "50 %"]);
    assert_eq!(progress.select("#streak"), ["1"]);
}

#[tokio::test]
async fn regime_and_ranking_drills_grade_and_count() {
    let (app, _, _) = app().await;
    let mut vic = app.new_client();
    vic.login("vic").await;
    let regime = perfjournal::core::training::regime::generate(5);
    let page = vic.get("/drills/regime?seed=5").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#sm"), [format!("{:.0} %", regime.sm_pct)]);
    let right = perfjournal::core::training::regime::slug(regime.answer());
    let r = vic
        .post_form("/drills/regime/answer", &[("seed", "5"), ("regime", right)])
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.select("#verdict .verdict-label")[0].starts_with("Right"));
    let r = vic
        .post_form(
            "/drills/regime/answer",
            &[("seed", "5"), ("regime", "fast")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    let ranking = perfjournal::core::training::ranking::generate(8);
    let order = ranking.order();
    let mut fields: Vec<(String, String)> = vec![("seed".into(), "8".into())];
    // Swap the first two: three of five right.
    for (i, r) in order.iter().enumerate() {
        let place = match i {
            0 => 2,
            1 => 1,
            n => n + 1,
        };
        fields.push((format!("rank.{}", r.name), place.to_string()));
    }
    let refs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = vic.post_form("/drills/ranking/answer", &refs).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.select("#verdict .verdict-label"),
        ["3 of 5 in the right place"]
    );
    let first = r.select("#correct-order tbody tr:first-child td");
    assert_eq!(first[1], order[0].name);
    assert!(first[2].ends_with('×'), "{first:?}");
    // A rank used twice is refused, naming the finding.
    let mut twice = refs.clone();
    twice[2].1 = "2";
    let r = vic.post_form("/drills/ranking/answer", &twice).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    let progress = vic.get("/learn/progress").await;
    assert_eq!(
        progress.select("#by-kind tr[data-name=regime] td")[1..],
        ["1", "1", "100 %"]
    );
    assert_eq!(
        progress.select("#by-kind tr[data-name=ranking] td")[1..],
        ["1", "0", "0 %"]
    );
}

/// Every text leaf of `v` at least `min` characters long.
fn leaves(v: &Value, min: usize, out: &mut Vec<String>) {
    match v {
        Value::String(s) if s.chars().count() >= min => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, min, out)),
        Value::Object(m) => m.values().for_each(|x| leaves(x, min, out)),
        _ => {}
    }
}

#[tokio::test]
async fn a_replay_hides_steps_three_to_seven_and_the_entry_until_the_answer() {
    let (mut app, ada, vic) = app().await;
    let ids = seed_demo(&app).await;
    let id = ids[0];
    let full = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &ada, None)
        .await
        .json();
    let entry_id = full["journal_entry"]["id"].as_i64().unwrap();
    let entry = app
        .api("GET", &format!("/api/v1/journal/{entry_id}"), &ada, None)
        .await
        .json();
    // Text only the later steps and the entry carry (not repeated in steps 0-2).
    let early = serde_json::to_string(&full["steps"].as_array().unwrap()[..3]).unwrap();
    let mut secrets = Vec::new();
    for s in &full["steps"].as_array().unwrap()[3..] {
        leaves(&s["data"], 12, &mut secrets);
    }
    secrets.push(entry["diagnosis"].as_str().unwrap().to_string());
    secrets.push(entry["change"].as_str().unwrap().to_string());
    secrets.retain(|s| {
        !early.contains(s.as_str()) && !full["symptom"].as_str().unwrap().contains(s.as_str())
    });
    secrets.retain(|s| {
        s.chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '.')
    });
    assert!(secrets.len() >= 2, "{secrets:?}");

    let before = app
        .api("GET", &format!("/api/v1/replays/{id}"), &vic, None)
        .await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.body);
    let doc = before.json();
    let shown: Vec<i64> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["number"].as_i64().unwrap())
        .collect();
    assert_eq!(shown, [0, 1, 2]);
    assert_eq!(doc["hidden_steps"], json!([3, 4, 5, 6, 7]));
    assert!(doc["journal_entry"].is_null());
    assert!(doc["answer"].is_null());
    for s in &secrets {
        assert!(!before.body.contains(s.as_str()), "API leaks {s:?}");
    }

    let mut page_client = app.new_client();
    page_client.login("vic").await;
    let page = page_client.get(&format!("/replays/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select("#step-0, #step-1, #step-2").len(), 3);
    assert!(page.select("#step-3").is_empty());
    assert!(page.select("#journal-entry").is_empty());
    for s in &secrets {
        assert!(!page.body.contains(s.as_str()), "page leaks {s:?}");
    }

    // An empty answer is refused and reveals nothing.
    let refused = page_client
        .post_form(&format!("/replays/{id}/answer"), &[("diagnosis", "queue")])
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!refused.select("#next_measurement-error").is_empty());
    assert!(refused.select("#step-3").is_empty());
    let r = app
        .api(
            "POST",
            &format!("/api/v1/replays/{id}/answer"),
            &vic,
            Some(json!({"diagnosis": "x"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    // The answer reveals all eight steps, as the investigation API gives them, and the entry.
    let answered = app
        .api(
            "POST",
            &format!("/api/v1/replays/{id}/answer"),
            &vic,
            Some(
                json!({"diagnosis": "prefix cache misses after the template change",
                        "next_measurement": "prefix cache hit rate before and after"}),
            ),
        )
        .await;
    assert_eq!(answered.status, StatusCode::OK, "{}", answered.body);
    let doc = answered.json();
    assert_eq!(doc["steps"], full["steps"]);
    assert_eq!(doc["hidden_steps"], json!([]));
    assert_eq!(doc["journal_entry"]["id"], entry_id);
    assert_eq!(doc["journal_entry"]["diagnosis"], entry["diagnosis"]);
    assert_eq!(
        doc["answer"]["diagnosis"],
        "prefix cache misses after the template change"
    );

    // The page now shows the answer beside the entry, and every step.
    let page = page_client.get(&format!("/replays/{id}")).await;
    assert_eq!(
        page.select("#your-answer .journal-result")[0],
        "prefix cache misses after the template change"
    );
    assert!(!page.select("#journal-entry #entry-diagnosis").is_empty());
    assert_eq!(page.select(".replay-step").len(), 8);
    assert!(page.select("#replay-form").is_empty());

    // A second answer keeps the first.
    let again = app
        .api(
            "POST",
            &format!("/api/v1/replays/{id}/answer"),
            &vic,
            Some(json!({"diagnosis": "something else", "next_measurement": "anything"})),
        )
        .await;
    assert_eq!(
        again.json()["answer"]["diagnosis"],
        "prefix cache misses after the template change"
    );

    // ada has not answered: still hidden for her.
    let hers = app
        .api("GET", &format!("/api/v1/replays/{id}"), &ada, None)
        .await
        .json();
    assert_eq!(hers["steps"].as_array().unwrap().len(), 3);

    // An investigation without a published entry cannot be replayed.
    let open = app.open_investigation(&ada, "Not finished").await;
    let r = app
        .api("GET", &format!("/api/v1/replays/{open}"), &vic, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.body.contains("published"), "{}", r.body);
    let r = app.api("GET", "/api/v1/replays/999999", &vic, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Flattened record keys in a page's text (`rows[1].p50`, `computed.estimator_href`):
/// the lines holding one, where a word starts with `computed.` or a key has an index.
fn raw_keys(body: &str) -> Vec<&str> {
    body.lines()
        .filter(|l| {
            l.match_indices("].").any(|(i, _)| {
                l[..i].ends_with(|c: char| c.is_ascii_digit())
                    && l[i + 2..].starts_with(|c: char| c.is_ascii_lowercase())
            }) || l.match_indices("computed.").any(|(i, _)| {
                !l[..i].ends_with(|c: char| c.is_alphanumeric())
                    && l[i + 9..].starts_with(|c: char| c.is_ascii_lowercase())
            })
        })
        .collect()
}

#[tokio::test]
async fn a_replay_shows_each_step_as_the_investigation_page_does() {
    let (mut app, ada, _) = app().await;
    let id = seed_demo(&app).await[0];
    let full = app
        .api("GET", &format!("/api/v1/investigations/{id}"), &ada, None)
        .await
        .json();
    // The hidden answer: the cause step 7 found and its verdict.
    let findings = full["steps"][7]["data"]["findings"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(findings.len() > 12, "{findings}");
    let mut vic = app.new_client();
    vic.login("vic").await;

    let page = vic.get(&format!("/replays/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(raw_keys(&page.body), Vec::<&str>::new());
    // Step 1: labelled values with their units.
    let labels = page.select("#step-1 .record-fields dt");
    for l in ["Metric", "Percentile", "Observed", "Target"] {
        assert!(labels.contains(&l.to_string()), "{labels:?}");
    }
    let values = page.select("#step-1 .record-fields dd");
    assert!(values.iter().any(|v| v.ends_with(" ms")), "{values:?}");
    // Step 2: the phase table with its heads, in milliseconds.
    assert_eq!(
        page.select("#step-2 .record-table th"),
        ["Phase", "p50", "p90", "p95", "p99", "Share"]
    );
    let cells = page.select("#step-2 .record-table td");
    assert!(cells.iter().any(|c| c == "Prefill"), "{cells:?}");
    assert!(cells.iter().any(|c| c.ends_with(" ms")), "{cells:?}");
    // What was computed, as the investigation's own step pages show it.
    for (step, css) in [
        (1, ".results-card .gap-ratio"),
        (2, ".results-card .dominant-phase"),
        (2, ".results-card .shares tbody tr"),
    ] {
        let shown = page.select(&format!("#step-{step} {css}"));
        assert!(!shown.is_empty(), "step {step} {css}");
        let own = vic
            .get(&format!("/investigations/{id}/steps/{step}"))
            .await
            .select(css);
        assert_eq!(shown, own, "step {step} {css}");
    }
    // Nothing of the answer before answering, not even out of sight.
    assert!(page.select("#step-3, #step-7, .verdict").is_empty());
    assert!(!page.body.contains(findings.as_str()));
    assert!(!page.body.contains("data-verdict"));

    vic.post_form(
        &format!("/replays/{id}/answer"),
        &[
            ("diagnosis", "prefix cache misses"),
            ("next_measurement", "prefix cache hit rate"),
        ],
    )
    .await;
    let page = vic.get(&format!("/replays/{id}")).await;
    assert_eq!(raw_keys(&page.body), Vec::<&str>::new());
    let fields = page.select("#step-7 .record-fields dd");
    assert!(fields.contains(&findings), "{fields:?}");
    // The after-value in the step-1 metric's unit.
    let after = full["steps"][7]["data"]["after_value"].as_f64().unwrap();
    assert!(fields.contains(&format!("{after} ms")), "{fields:?}");
    let own = vic.get(&format!("/investigations/{id}/steps/7")).await;
    assert_eq!(page.select("#step-7 .verdict"), own.select(".verdict"));
    assert!(!page.select("#step-7 .verdict").is_empty());
    assert_eq!(
        page.select("#step-5 .ranked-kernels tbody tr"),
        vic.get(&format!("/investigations/{id}/steps/5"))
            .await
            .select(".ranked-kernels tbody tr")
    );
}

#[tokio::test]
async fn only_the_author_marks_good_for_training_and_marked_replays_come_first() {
    let (app, _, _) = app().await;
    let ids = seed_demo(&app).await;
    let oldest = ids[0];
    let mut vic = app.new_client();
    vic.login("vic").await;
    let list = vic.get("/replays").await;
    let links = list.select_attr("#replays a", "href");
    assert_eq!(links.len(), 3);
    assert_eq!(links[0], format!("/replays/{}", ids[2]), "newest first");

    let r = vic
        .post_form(&format!("/replays/{oldest}/mark"), &[("on", "1")])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(vic
        .get(&format!("/replays/{oldest}"))
        .await
        .select("#mark-button")
        .is_empty());

    // ada seeded them: she is the author.
    let mut ada = app.new_client();
    ada.login("ada").await;
    let r = ada
        .post_form(&format!("/replays/{oldest}/mark"), &[("on", "1")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let list = vic.get("/replays").await;
    let links = list.select_attr("#replays a", "href");
    assert_eq!(links[0], format!("/replays/{oldest}"), "marked first");
    assert_eq!(list.select("#replays .good-for-training").len(), 1);
    // Two a page: the marked one, then the rest newest first, each exactly once.
    let mut seen = Vec::new();
    let mut next = Some("/replays?limit=2".to_string());
    while let Some(url) = next {
        let page = vic.get(&url).await;
        assert_eq!(page.status, StatusCode::OK, "{url}");
        seen.extend(page.select_attr("#replays a", "href"));
        next = page.select_attr(".pager a[rel=next]", "href").pop();
    }
    let want: Vec<String> = [oldest, ids[2], ids[1]]
        .iter()
        .map(|i| format!("/replays/{i}"))
        .collect();
    assert_eq!(seen, want);
    let r = ada
        .post_form(&format!("/replays/{oldest}/mark"), &[("on", "maybe")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = vic.get("/replays?after=nonsense").await;
    assert!(r.body.contains("after"), "{}", r.body);
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn guide_self_checks_reveal_the_model_answer_after_the_learners() {
    let (app, _, _) = app().await;
    let mut vic = app.new_client();
    vic.login("vic").await;
    let index = vic.get("/learn").await;
    assert_eq!(index.status, StatusCode::OK);
    assert_eq!(index.select("#guide-pages li").len(), 8);
    let page = vic.get("/learn/estimation").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.select(".model-answer").is_empty());
    assert!(!page.select("#practice a[href='/drills']").is_empty());

    let empty = vic
        .post_form(
            "/learn/estimation/check",
            &[("question", "1"), ("answer", " ")],
        )
        .await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!empty.select("#answer-1-error").is_empty());
    assert!(empty.select(".model-answer").is_empty());

    let r = vic
        .post_form(
            "/learn/estimation/check",
            &[("question", "1"), ("answer", "about 6 %")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let page = vic.get("/learn/estimation").await;
    assert_eq!(page.select("#check-1 .your-answer"), ["about 6 %"]);
    assert!(page.select("#check-1 .model-answer")[0].contains("1.064"));
    assert!(page.select("#check-2 .model-answer").is_empty());
    let r = vic
        .post_form(
            "/learn/estimation/check",
            &[("question", "9"), ("answer", "x")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(vic.get("/learn/nope").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn viewers_train_without_changing_the_journal_or_investigations() {
    let (mut app, _, vic_token) = app().await;
    let ids = seed_demo(&app).await;
    let mut vic = app.new_client();
    vic.login("vic").await;
    vic.get("/learn").await;
    let before = non_training_counts(&app).await;
    vic.post_form("/drills/cost.3/answer", &[("value", "1")])
        .await;
    vic.post_form(
        "/learn/procedure/check",
        &[("question", "1"), ("answer", "a baseline")],
    )
    .await;
    let r = vic
        .post_form(
            &format!("/replays/{}/answer", ids[1]),
            &[
                ("diagnosis", "decode overhead"),
                ("next_measurement", "floor ratio"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    app.api(
        "POST",
        "/api/v1/drills/amdahl.2/answer",
        &vic_token,
        Some(json!({"value": 1.2})),
    )
    .await;
    vic.get(&format!("/replays/{}", ids[1])).await;
    assert_eq!(non_training_counts(&app).await, before);
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM training_attempts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(attempts, 3, "two drills and a replay");

    // The path shows the replay done; the team page is for leads only.
    let progress = vic.get("/learn/progress").await;
    assert!(progress
        .select("#learning-path li.path-done a")
        .contains(&"Blind replay".to_string()));
    assert_eq!(vic.get("/learn/team").await.status, StatusCode::FORBIDDEN);
    let mut ada = app.new_client();
    ada.login("ada").await;
    let team = ada.get("/learn/team").await;
    assert_eq!(team.status, StatusCode::OK);
    let row = team.select("#team tr[data-name=vic] td");
    assert_eq!(row[2], "3");
    assert_eq!(row[3], "1 of 13");
}

/// Roles first, then ownership: an author demoted to viewer can no longer mark (or
/// unmark) their investigation, and is not offered the button.
#[tokio::test]
async fn an_author_demoted_to_viewer_cannot_mark_good_for_training() {
    let (app, _, _) = app().await;
    let eddy = app.add_user("eddy", Role::Editor).await;
    perfjournal::investigations::seed::seed_demo(&app.pool, eddy)
        .await
        .unwrap();
    let id: i64 = sqlx::query_scalar(
        "SELECT id FROM investigations WHERE demo_key IS NOT NULL ORDER BY id LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut ed = app.new_client();
    ed.login("eddy").await;
    assert_eq!(
        ed.get(&format!("/replays/{id}"))
            .await
            .select("#mark-button")
            .len(),
        1,
        "the author, as an editor, is offered the mark"
    );
    let mut ada = app.new_client();
    ada.login("ada").await;
    let r = ada
        .post_form(&format!("/admin/users/{eddy}/role"), &[("role", "viewer")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    let r = ed
        .post_form(&format!("/replays/{id}/mark"), &[("on", "1")])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(
        r.body.contains("viewer"),
        "the refusal names the role: {}",
        r.body
    );
    assert!(ed
        .get(&format!("/replays/{id}"))
        .await
        .select("#mark-button")
        .is_empty());
    assert!(!perfjournal::training::is_marked(&app.pool, id)
        .await
        .unwrap());
}
