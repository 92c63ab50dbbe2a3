//! Institutional memory against a real database: ranking, web-search syntax, facets,
//! trigram correction, similar symptoms, export → import fidelity, the Atom feed and
//! the 422s.

use crate::common;

use axum::http::StatusCode;
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;
use serde_json::{json, Value};

async fn admin() -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    (app, token)
}

/// A published entry written through the journal page; returns its id.
async fn entry(app: &mut TestApp, title: &str, fields: &[(&str, &str)]) -> i64 {
    let mut all: Vec<(&str, &str)> = vec![
        ("title", title),
        ("date", "2026-03-14"),
        ("symptom", "slow"),
        ("diagnosis", "cause found"),
        ("change", "a change"),
        ("result", "fixed"),
        ("action", "publish"),
    ];
    for (k, v) in fields {
        all.retain(|(n, _)| n != k);
        all.push((k, v));
    }
    let r = app.post_form("/journal", &all).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    r.location()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

async fn search(app: &mut TestApp, token: &str, query: &str) -> Value {
    let r = app
        .api("GET", &format!("/api/v1/search?{query}"), token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.body);
    r.json()
}

fn titles(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_exact_repeat_symptom_ranks_first_with_highlights() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Notes mention it",
        &[
            ("date", "2026-05-01"),
            ("quality", "checked chunked prefill budget notes"),
            ("symptom", "p95 TTFT 900 ms"),
        ],
    )
    .await;
    entry(
        &mut app,
        "Result mentions it",
        &[
            ("result", "chunked prefill budget raised, TTFT fine"),
            ("symptom", "p99 ITL 80 ms"),
        ],
    )
    .await;
    entry(
        &mut app,
        "The repeat",
        &[
            (
                "symptom",
                "p95 TTFT 3,200 ms vs target 800 ms: long prompts without chunked prefill budget",
            ),
            (
                "diagnosis",
                "chunked prefill was off; 22k-token prompts blocked decode",
            ),
        ],
    )
    .await;
    entry(
        &mut app,
        "Unrelated",
        &[("symptom", "throughput dropped after the driver update")],
    )
    .await;

    let v = search(&mut app, &token, "q=chunked+prefill+budget").await;
    assert_eq!(titles(&v)[0], "The repeat", "{v}");
    assert_eq!(v["total"], 3);
    let first = &v["results"][0];
    assert_eq!(first["kind"], "journal");
    assert!(first["score"].as_f64().unwrap() > v["results"][1]["score"].as_f64().unwrap());
    assert!(
        first["snippet"]
            .as_str()
            .unwrap()
            .contains("<mark>chunked</mark>"),
        "{first}"
    );

    // Newest first on request; the link on the page keeps the words.
    let newest = search(&mut app, &token, "q=chunked+prefill+budget&sort=newest").await;
    assert_eq!(newest["total"], 3);
    assert_eq!(
        titles(&newest),
        ["Notes mention it", "The repeat", "Result mentions it"],
        "by date; on the same date the later entry first"
    );
    let page = app.get("/search?q=chunked+prefill+budget").await;
    let href = page.select_attr(".sort-newest", "href");
    assert_eq!(href, ["/search?q=chunked+prefill+budget&sort=newest"]);
    let sorted = app.get(&href[0]).await;
    assert_eq!(sorted.select(".result-title")[0], "Notes mention it");
    assert_eq!(sorted.select_attr("input[name=sort]", "value"), ["newest"]);

    // The page shows the same order, with the highlight as markup and the rest escaped.
    let page = app.get("/search?q=chunked+prefill+budget").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select(".search-result .result-title")[0], "The repeat");
    assert!(!page.select(".snippet mark").is_empty());
    assert_eq!(page.select("#q").len(), 1);
}

#[tokio::test]
async fn results_follow_edits_and_removals_at_once() {
    let (mut app, token) = admin().await;
    let id = entry(
        &mut app,
        "Stall",
        &[("symptom", "p95 TTFT doubled: zanzibar scheduler stall")],
    )
    .await;
    entry(&mut app, "Other", &[("symptom", "p99 ITL 80 ms")]).await;
    assert_eq!(
        titles(&search(&mut app, &token, "q=zanzibar").await),
        ["Stall"]
    );
    // Asked again unchanged: the same answer (from the cache).
    assert_eq!(search(&mut app, &token, "q=zanzibar").await["total"], 1);

    // An edit: the old words stop matching and the new ones match, on the next search.
    let form = app.get(&format!("/journal/{id}/edit")).await;
    let version = form.select_attr("[name=version]", "value").remove(0);
    let r = app
        .post_form(
            &format!("/journal/{id}"),
            &[
                ("title", "Stall"),
                ("date", "2026-03-14"),
                ("symptom", "p95 TTFT doubled: kilimanjaro scheduler stall"),
                ("diagnosis", "cause found"),
                ("change", "a change"),
                ("result", "fixed"),
                ("version", version.as_str()),
                ("action", "publish"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(search(&mut app, &token, "q=zanzibar").await["total"], 0);
    let v = search(&mut app, &token, "q=kilimanjaro").await;
    assert_eq!(titles(&v), ["Stall"]);
    assert_eq!(search(&mut app, &token, "").await["total"], 2);

    // A row removed behind the app's back (an admin in psql) leaves the results too.
    sqlx::query("DELETE FROM journal_entries WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(search(&mut app, &token, "q=kilimanjaro").await["total"], 0);
    let all = search(&mut app, &token, "").await;
    assert_eq!(titles(&all), ["Other"]);
    assert_eq!(all["facets"]["kind"][0]["count"], 1);

    // Another instance's backup restored underneath (documents replaced wholesale, a
    // different epoch, the same generation): the index starts over.
    sqlx::query("DELETE FROM search_documents")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE search_state SET epoch = epoch + 1")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(search(&mut app, &token, "").await["total"], 0);
}

#[tokio::test]
async fn an_entry_written_directly_gets_model_gpu_and_engine_facets_from_its_text() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Direct",
        &[
            ("symptom", "p95 TTFT 2,900 ms vs target 900 ms"),
            (
                "baseline",
                "Llama 3.1 8B Instruct on 2×H100 SXM, vLLM v0.6.3",
            ),
        ],
    )
    .await;
    entry(
        &mut app,
        "Elsewhere",
        &[("baseline", "on an A100 80GB, SGLang 0.3.2")],
    )
    .await;
    let v = search(&mut app, &token, "gpu=h100-sxm").await;
    assert_eq!(titles(&v), ["Direct"]);
    for (facet, value) in [
        ("model", "llama-3.1-8b"),
        ("engine", "vllm"),
        ("version", "0.6.3"),
    ] {
        assert_eq!(v["facets"][facet][0]["value"], value, "{facet}: {v}");
    }
    let all = search(&mut app, &token, "").await;
    let gpus: Vec<&str> = all["facets"]["gpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["value"].as_str().unwrap())
        .collect();
    assert_eq!(gpus, ["a100-80gb", "h100-sxm"]);
}

#[tokio::test]
async fn snippets_escape_stored_markup() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "<b>bold</b> title",
        &[("symptom", "prefill <script>alert(1)</script> stalls")],
    )
    .await;
    let v = search(&mut app, &token, "q=prefill").await;
    let snippet = v["results"][0]["snippet"].as_str().unwrap();
    // ts_headline leaves tag-shaped words out; whatever remains is escaped text.
    assert!(
        snippet.contains("<mark>prefill</mark>") && snippet.contains("alert(1)"),
        "{snippet}"
    );
    assert!(!snippet.contains("<script>"));
    let v = search(&mut app, &token, "q=%22a+%3C+b%22+OR+prefill").await;
    assert!(!v["results"][0]["snippet"]
        .as_str()
        .unwrap()
        .contains("<script"));
    let page = app.get("/search?q=prefill").await;
    assert!(!page.body.contains("<script>alert"));
    assert_eq!(page.select(".result-title"), ["<b>bold</b> title"]);
    assert!(!page.body.contains("<b>bold"));
}

#[tokio::test]
async fn websearch_syntax_quotes_or_and_exclusion() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "A",
        &[("symptom", "prefix cache misses after deploy")],
    )
    .await;
    entry(
        &mut app,
        "B",
        &[("symptom", "chunked prefill blocks decode")],
    )
    .await;
    entry(
        &mut app,
        "C",
        &[("symptom", "prefix cache and chunked prefill both changed")],
    )
    .await;
    entry(
        &mut app,
        "D",
        &[("symptom", "cache of the prefix tree grew")],
    )
    .await;

    let mut t = titles(&search(&mut app, &token, "q=%22prefix+cache%22").await);
    t.sort();
    assert_eq!(t, ["A", "C"]);
    let t = titles(&search(&mut app, &token, "q=%22prefix+cache%22+-chunked").await);
    assert_eq!(t, ["A"]);
    let mut t = titles(&search(&mut app, &token, "q=misses+OR+blocks").await);
    t.sort();
    assert_eq!(t, ["A", "B"]);
}

#[tokio::test]
async fn facets_count_and_narrow() {
    let (mut app, token) = admin().await;
    app.seed_demo().await;
    entry(
        &mut app,
        "Direct TTFT entry",
        &[
            ("symptom", "p95 TTFT 2,000 ms vs target 600 ms"),
            ("diagnosis", "Prefill dominates the p95 TTFT (70%)."),
        ],
    )
    .await;
    entry(
        &mut app,
        "Direct ITL entry",
        &[("symptom", "p50 ITL 22 ms vs target 16 ms")],
    )
    .await;

    let all = search(&mut app, &token, "").await;
    let total = all["total"].as_i64().unwrap();
    // 3 demo investigations + their 3 entries + 2 demo proposals + 2 direct entries.
    assert_eq!(total, 10, "{all}");
    let kinds = &all["facets"]["kind"];
    let count = |facet: &Value, value: &str| {
        facet
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["value"] == value)
            .map_or(0, |f| f["count"].as_i64().unwrap())
    };
    assert_eq!(count(kinds, "journal"), 5);
    assert_eq!(count(kinds, "investigation"), 3);
    assert_eq!(count(kinds, "proposal"), 2);
    let ttft = count(&all["facets"]["metric"], "ttft");
    assert!(ttft >= 3, "{}", all["facets"]["metric"]);

    // Narrowing by a facet: the total is that facet's count, and every count shrinks.
    let narrowed = search(&mut app, &token, "metric=ttft").await;
    assert_eq!(narrowed["total"].as_i64().unwrap(), ttft);
    assert_eq!(narrowed["facets"]["metric"].as_array().unwrap().len(), 1);
    let journal_ttft = count(&narrowed["facets"]["kind"], "journal");
    let both = search(&mut app, &token, "metric=ttft&kind=journal").await;
    assert_eq!(both["total"].as_i64().unwrap(), journal_ttft);
    assert!(both["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["kind"] == "journal"));

    // Demo facets come from the steps: model, GPU, engine version, phase, status, author.
    for facet in [
        "model", "gpu", "engine", "version", "phase", "status", "author", "tag",
    ] {
        assert!(
            !all["facets"][facet].as_array().unwrap().is_empty(),
            "no {facet} facet: {all}"
        );
    }
    assert_eq!(count(&all["facets"]["model"], "llama-3.1-8b"), 7);
    assert_eq!(count(&all["facets"]["author"], "ada"), 10);

    // Date range.
    let none = search(&mut app, &token, "from=2030-01-01").await;
    assert_eq!(none["total"], 0);

    // The page: facet links narrow, selected facets show as removable chips.
    let page = app.get("/search?metric=ttft").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.select(".active-filter").len(), 1);
    assert_eq!(
        page.select(".facet[data-facet=metric] .facet-value.selected .count")[0],
        ttft.to_string()
    );
    // htmx asks for the results region only.
    let mut req = axum::http::Request::get("/search?metric=ttft");
    req = req.header("HX-Request", "true");
    let partial = app.send(req.body(axum::body::Body::empty()).unwrap()).await;
    assert!(!partial.body.contains("<html"));
    let restore = axum::http::Request::get("/search?metric=ttft")
        .header("HX-Request", "true")
        .header("HX-History-Restore-Request", "true");
    let full = app
        .send(restore.body(axum::body::Body::empty()).unwrap())
        .await;
    assert!(full.body.contains("<html"));
    assert!(partial.body.contains("search-results"));
    assert!(partial.headers.get("vary").is_some_and(|v| v
        .to_str()
        .unwrap()
        .to_lowercase()
        .contains("hx-request")));
}

#[tokio::test]
async fn a_typo_falls_back_to_trigram_correction() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Prefill",
        &[("symptom", "chunked prefill blocks decode")],
    )
    .await;
    let v = search(&mut app, &token, "q=chunkd+prefil").await;
    assert_eq!(v["corrected"], "chunked prefill");
    assert_eq!(titles(&v), ["Prefill"]);
    let page = app.get("/search?q=chunkd+prefil").await;
    assert_eq!(page.select(".corrected-query"), ["chunked prefill"]);
    // Nothing near: no correction, no results.
    let v = search(&mut app, &token, "q=zzzzqqq").await;
    assert_eq!(v["total"], 0);
    assert!(v["corrected"].is_null());
}

/// A correctly spelled word is never rewritten, even when no document uses it yet:
/// "ITL regression MoE" stays as typed (it once became "ITL revision MoE", the nearest
/// word of another entry); a misspelt word is still corrected.
#[tokio::test]
async fn a_correct_word_no_document_uses_is_not_rewritten() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "ITL after the vLLM upgrade",
        &[(
            "symptom",
            "ITL p50 14 → 23 ms after a vLLM upgrade; Qwen3-30B-A3B MoE BF16 on 2×H100 TP 2",
        )],
    )
    .await;
    entry(
        &mut app,
        "Prefix cache misses",
        &[("change", "code revision: the date after the shared prefix")],
    )
    .await;
    let v = search(&mut app, &token, "q=ITL+regression+MoE").await;
    assert!(v["corrected"].is_null(), "{v}");
    assert!(!v.to_string().contains("revision"), "{v}");
    // The best partial match is the ITL entry (two of the three words).
    assert_eq!(titles(&v), ["ITL after the vLLM upgrade"]);
    let page = app.get("/search?q=ITL+regression+MoE").await;
    assert!(page.select(".corrected-query").is_empty());
    // A typo is still corrected towards the documents' words.
    let v = search(&mut app, &token, "q=ITL+upgarde").await;
    assert_eq!(v["corrected"], "ITL upgrade", "{v}");
    assert_eq!(titles(&v), ["ITL after the vLLM upgrade"]);
}

#[tokio::test]
async fn bad_search_parameters_are_422s_naming_the_field() {
    let (mut app, token) = admin().await;
    for (query, field) in [
        ("mood=sad", "mood"),
        ("metric=speed", "metric"),
        ("from=yesterday", "from"),
        ("page=0", "page"),
        ("sort=oldest", "sort"),
    ] {
        let r = app
            .api("GET", &format!("/api/v1/search?{query}"), &token, None)
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(r.json()["error"]["fields"][0]["field"], field, "{query}");
        let page = app.get(&format!("/search?{query}")).await;
        assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(page.select(".search-errors li code"), [field]);
    }
}

/// An investigation through the API with steps 0–2; returns its id.
async fn investigation(
    app: &mut TestApp,
    token: &str,
    title: &str,
    setup: Value,
    metric: &str,
    phases: Value,
) -> i64 {
    let id = app.open_investigation(token, title).await;
    let mut step0 = json!({"reproducible": "yes", "engine": "vllm", "engine_version": "0.6.3"});
    for (k, v) in setup.as_object().unwrap() {
        step0[k] = v.clone();
    }
    for (step, body) in [
        (0, step0),
        (
            1,
            json!({"metric": metric, "percentile": "p95", "observed": 3200, "target": 800}),
        ),
        (2, phases),
    ] {
        let r = app
            .api(
                "PUT",
                &format!("/api/v1/investigations/{id}/steps/{step}"),
                token,
                Some(body),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "step {step}: {}", r.body);
    }
    id
}

#[tokio::test]
async fn seen_before_ranks_the_closest_past_investigation_first() {
    let (mut app, token) = admin().await;
    let queue = json!({"queue_wait": {"p50": 1000, "p95": 2900, "p99": 3400}, "prefill": {"p50": 50, "p95": 90, "p99": 120}});
    let prefill = json!({"prefill": {"p50": 1000, "p95": 2900, "p99": 3400}});
    let h100 =
        json!({"model": "llama-3.1-8b", "gpu_type": "h100-sxm", "prompt_len_dist": "mean 1,800"});
    let other = json!({"model": "qwen-2.5-72b", "gpu_type": "a100-80gb", "prompt_len_dist": "mean 300", "engine_version": "0.5.0"});
    let same_hw = investigation(
        &mut app,
        &token,
        "Queue at peak on H100",
        h100.clone(),
        "ttft",
        queue.clone(),
    )
    .await;
    let other_hw = investigation(
        &mut app,
        &token,
        "Queue on A100",
        other,
        "ttft",
        queue.clone(),
    )
    .await;
    let other_phase = investigation(
        &mut app,
        &token,
        "Prefill-bound",
        h100.clone(),
        "ttft",
        prefill,
    )
    .await;
    let other_metric =
        investigation(&mut app, &token, "ITL", h100.clone(), "e2e", queue.clone()).await;
    let fresh = app
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(json!({"title": "Just opened"})),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    let subject = investigation(&mut app, &token, "Queue again", h100, "ttft", queue).await;

    let r = app
        .api(
            "GET",
            &format!("/api/v1/investigations/{subject}/similar"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = r.json();
    assert_eq!(v["ready"], true);
    let ids: Vec<i64> = v["similar"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [same_hw, other_hw], "{v}");
    assert!(!ids.contains(&other_phase) && !ids.contains(&other_metric));
    assert!(
        v["similar"][0]["score"].as_f64().unwrap() > v["similar"][1]["score"].as_f64().unwrap()
    );
    assert!(v["similar"][0]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("Queue wait dominates"));

    // The page's partial shows the same list; a fresh investigation says what it needs.
    let partial = app.get(&format!("/investigations/{subject}/similar")).await;
    assert_eq!(
        partial.select(".similar-item a"),
        ["Queue at peak on H100", "Queue on A100"]
    );
    let empty = app.get(&format!("/investigations/{fresh}/similar")).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("step 1"));
    let r = app
        .api("GET", "/api/v1/investigations/999999/similar", &token, None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // The overview loads the list into itself.
    let overview = app.get(&format!("/investigations/{subject}")).await;
    assert!(overview
        .body
        .contains(&format!("hx-get=\"/investigations/{subject}/similar\"")));

    // A journal entry's "related" list works the same way.
    let a = entry(
        &mut app,
        "Entry queue",
        &[
            ("symptom", "p95 TTFT 3,000 ms vs target 800 ms"),
            ("diagnosis", "Queue wait dominates the p95 TTFT (90%)."),
        ],
    )
    .await;
    let related = app.get(&format!("/journal/{a}/related")).await;
    let titles = related.select(".similar-item a");
    assert!(titles.contains(&"Queue again".to_string()), "{titles:?}");
}

fn tricky_fields() -> Vec<(&'static str, &'static str)> {
    vec![
        ("date", "2025-02-28"),
        ("symptom", "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"),
        ("workload", "prompt tokens mean 1,800; output tokens mean 250; 45 req/s"),
        ("baseline", "p95 TTFT 3,200 ms\np99 ITL 145 ms"),
        ("diagnosis", "# looks like a title\n## DATE\n\\escaped backslash\nQueue-bound: running batch 58 of 175."),
        ("change", "Enabled chunked prefill (4,096-token budget) & <nothing> else"),
        ("result", "p95 TTFT 780 ms; verdict: confirmed"),
        ("quality", "200 paired generations identical"),
        ("effort", "30 minutes"),
    ]
}

#[tokio::test]
async fn export_then_import_keeps_every_field() {
    let (mut source, token) = admin().await;
    let first = entry(&mut source, "Chunked prefill fixes TTFT", &tricky_fields()).await;
    entry(
        &mut source,
        "Second",
        &[("symptom", "p50 ITL 22 ms"), ("effort", "")],
    )
    .await;
    let md = source.get("/journal/export.md").await;
    assert_eq!(md.status, StatusCode::OK);
    assert!(md.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    for heading in [
        "## DATE",
        "## SYMPTOM",
        "## WORKLOAD",
        "## BASELINE",
        "## DIAGNOSIS",
        "## CHANGE",
        "## RESULT",
        "## QUALITY",
        "## EFFORT",
    ] {
        assert!(md.body.contains(heading));
    }
    let json_export = source.get("/journal/export.json").await.json();
    assert_eq!(json_export["format"], "perfjournal-journal");
    assert_eq!(json_export["entries"].as_array().unwrap().len(), 2);
    let one = source.get(&format!("/journal/{first}/json")).await.json();
    assert_eq!(one["diagnosis"], tricky_fields()[4].1);

    // Into another instance through the import form.
    let (mut target, _) = admin().await;
    let r = target
        .post_form(
            "/journal/import",
            &[("markdown", &md.body), ("publish", "on")],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.select(".imported li").len(), 2);
    let again = target.get("/journal/export.md").await;
    assert_eq!(again.body, md.body);
    let target_json = target.get("/journal/export.json").await.json();
    let fields = |v: &Value| -> Vec<Value> {
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let mut e = e.clone();
                for k in ["id", "published_at", "author", "investigation_id"] {
                    e.as_object_mut().unwrap().remove(k);
                }
                e
            })
            .collect()
    };
    assert_eq!(fields(&target_json), fields(&json_export));
    let imported = &target_json["entries"][0];
    for (k, v) in tricky_fields() {
        assert_eq!(imported[k], v, "{k}");
    }

    // JSON imports too.
    let (mut third, _) = admin().await;
    let r = third
        .post_form(
            "/journal/import",
            &[("markdown", &json_export.to_string()), ("publish", "on")],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(third.get("/journal/export.md").await.body, md.body);

    // An investigation exports in the same format (its draft until it has an entry).
    let inv = source
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(json!({"title": "Drafted"})),
        )
        .await
        .json()["id"]
        .as_i64()
        .unwrap();
    let md = source.get(&format!("/investigations/{inv}/markdown")).await;
    assert!(
        md.body.starts_with("# Drafted\n\n## DATE\n\n"),
        "{}",
        md.body
    );
    let js = source
        .get(&format!("/investigations/{inv}/json"))
        .await
        .json();
    assert_eq!(js["investigation"]["title"], "Drafted");
    assert_eq!(js["journal"]["title"], "Drafted");
}

#[tokio::test]
async fn a_bad_import_is_a_422_naming_the_line_and_stores_nothing() {
    let (mut app, _) = admin().await;
    let count = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM journal_entries")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let good = "# Good\n\n## DATE\n\n2026-01-02\n\n## SYMPTOM\n\nslow\n\n## WORKLOAD\n\n\n## BASELINE\n\n\n## DIAGNOSIS\n\n\n## CHANGE\n\nx\n\n## RESULT\n\n\n## QUALITY\n\n\n## EFFORT\n\n\n";
    let bad_section = format!("{good}# Bad\n\n## DATE\n\n2026-01-02\n\n## MOOD\n\nfine\n");
    let r = app
        .post_form("/journal/import", &[("markdown", &bad_section)])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let line = bad_section.lines().position(|l| l == "## MOOD").unwrap() + 1;
    let errors = r.select(".form-errors li");
    assert!(errors[0].contains(&format!("line {line}")), "{errors:?}");
    assert_eq!(r.select("#markdown")[0], bad_section.trim_end());

    let bad_date = good.replace("2026-01-02", "2026-02-30");
    let r = app
        .post_form("/journal/import", &[("markdown", &bad_date)])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("entries[0].date"));
    assert_eq!(count(app.pool.clone()).await, 0);

    // Viewers read and export; they do not import.
    app.add_user("vic", Role::Viewer).await;
    let mut viewer = app.new_client();
    viewer.login("vic").await;
    assert_eq!(
        viewer.get("/journal/export.md").await.status,
        StatusCode::OK
    );
    assert_eq!(viewer.get("/search?q=x").await.status, StatusCode::OK);
    let r = viewer
        .post_form("/journal/import", &[("markdown", good)])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(count(app.pool.clone()).await, 0);
}

/// With --public-url set, the feed's links use it, whatever Host the request claims.
#[tokio::test]
async fn feed_links_come_from_the_public_url_not_the_host_header() {
    let config = perfjournal::config::Config {
        public_url: Some("https://perf.example.org".into()),
        ..perfjournal::config::Config::default()
    };
    let mut app = common::spawn_app_with(config).await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let id = entry(&mut app, "Linked entry", &[]).await;
    let req = axum::http::Request::get("/journal/feed.atom")
        .header("host", "evil.example.com")
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.body.contains("evil.example.com"), "{}", r.body);
    assert!(
        r.body
            .contains(&format!("https://perf.example.org/journal/{id}")),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn the_atom_feed_is_valid_and_needs_a_token() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Feed <one> & \"two\"",
        &[("symptom", "p95 TTFT & <more>")],
    )
    .await;
    entry(&mut app, "Second entry", &[]).await;
    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "Draft only"),
                ("date", "2026-01-01"),
                ("symptom", "s"),
                ("change", "c"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);

    let mut anonymous = app.new_client();
    let r = anonymous.get("/journal/feed.atom").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = anonymous.get("/journal/feed.atom?token=pj_wrong").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = anonymous
        .get(&format!("/journal/feed.atom?token={token}"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/atom+xml"));
    let bearer = anonymous
        .api("GET", "/journal/feed.atom", &token, None)
        .await;
    assert_eq!(bearer.status, StatusCode::OK);

    // Parse it: well-formed XML, the Atom namespace, one <entry> per published entry.
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(&r.body);
    let (mut entries, mut titles, mut in_title, mut depth, mut root_ns) =
        (0, Vec::new(), false, 0, None);
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => {
                depth += 1;
                if e.name().as_ref() == b"feed" {
                    root_ns = e
                        .try_get_attribute("xmlns")
                        .unwrap()
                        .map(|a| String::from_utf8(a.value.to_vec()).unwrap());
                }
                if e.name().as_ref() == b"entry" {
                    entries += 1;
                }
                in_title = e.name().as_ref() == b"title" && depth == 3;
            }
            Event::Text(t) if in_title => titles.push(t.decode().unwrap().into_owned()),
            Event::GeneralRef(_) if in_title => {}
            Event::End(_) => {
                depth -= 1;
                in_title = false;
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(root_ns.as_deref(), Some("http://www.w3.org/2005/Atom"));
    assert_eq!(entries, 2);
    assert!(
        r.body
            .contains("<title>Feed &lt;one&gt; &amp; &quot;two&quot;</title>"),
        "{}",
        r.body
    );
    assert!(!r.body.contains("Draft only"));
    assert!(r.body.contains("/journal/"));
}

/// A small vLLM `bench serve --save-result` file: `n` requests with TTFTs around
/// `ttft_ms`.
fn bench_run(tag: &str, n: usize, ttft_ms: f64) -> Vec<u8> {
    let ttfts: Vec<f64> = (0..n)
        .map(|i| ttft_ms * (1.0 + 0.3 * ((i * 37 % n) as f64 / n as f64)) / 1000.0)
        .collect();
    json!({
        "date": format!("20261129-{tag}"), "backend": "vllm",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": n,
        "request_rate": "inf", "max_concurrency": 16, "completed": n, "failed": 0,
        "total_output_tokens": n * 8, "request_throughput": 100.0, "output_throughput": 800.0,
        "input_lens": vec![200; n], "output_lens": vec![8; n],
        "ttfts": ttfts, "itls": vec![vec![0.02; 7]; n], "errors": vec![""; n]
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn comparisons_and_artifacts_are_searchable() {
    let (mut app, token) = admin().await;
    let before = common::uploads::upload_analyzed(
        &mut app,
        &token,
        "baseline-h100.json",
        bench_run("a", 60, 900.0),
    )
    .await;
    let after = common::uploads::upload_analyzed(
        &mut app,
        &token,
        "candidate-h100.json",
        bench_run("b", 60, 400.0),
    )
    .await;
    let r = app
        .api(
            "POST",
            "/api/v1/comparisons",
            &token,
            Some(json!({"baseline": [before], "candidate": [after], "variable": "enable chunked prefill"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();

    let v = search(&mut app, &token, "q=chunked+prefill&kind=comparison").await;
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["results"][0]["id"], id);
    assert_eq!(v["results"][0]["url"], format!("/comparisons/{id}"));
    let metrics = &v["facets"]["metric"];
    assert_eq!(metrics[0]["value"], "ttft", "{v}");
    // File names are searchable by their parts.
    let v = search(&mut app, &token, "q=h100&kind=artifact").await;
    assert_eq!(v["total"], 2, "{v}");
}

/// A search never rebuilds documents on its request: with changes queued it answers at
/// once from the index it has and says how many changes are pending; the background
/// indexer then brings them in within a second or two.
#[tokio::test]
async fn a_search_with_pending_changes_answers_at_once_and_says_so() {
    use tower::ServiceExt;
    let (mut app, token) = admin().await;
    entry(&mut app, "Tokenizer stall under burst", &[]).await;
    // Straight to the router, past the harness's catch-up: the entry is still queued.
    let ask = |app: &TestApp| {
        let req = axum::http::Request::get("/api/v1/search?q=tokenizer")
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .unwrap();
        let router = app.app.clone();
        async move {
            let res = router.oneshot(req).await.unwrap();
            let bytes = http_body_util::BodyExt::collect(res.into_body())
                .await
                .unwrap()
                .to_bytes();
            serde_json::from_slice::<Value>(&bytes).unwrap()
        }
    };
    let stale: i64 = sqlx::query_scalar("SELECT count(*) FROM search_stale")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(stale >= 1, "the new entry is queued for the index");
    let answer = ask(&app).await;
    assert_eq!(answer["total"], 0, "{answer}");
    assert!(answer["pending_changes"].as_i64().unwrap() >= 1, "{answer}");
    let still: i64 = sqlx::query_scalar("SELECT count(*) FROM search_stale")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(still, stale, "the search itself rebuilt nothing");

    let indexer = tokio::spawn(app.state.search.clone().run_indexer(app.pool.clone()));
    let started = std::time::Instant::now();
    loop {
        let answer = ask(&app).await;
        if answer["total"] == 1 && answer["pending_changes"] == 0 {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the indexer did not catch up: {answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    println!("indexed {:?} after the first search", started.elapsed());
    indexer.abort();
}

/// Queries of plain words are read word by word and the words' readings remembered;
/// the reading must be exactly PostgreSQL's reading of the whole query, whatever the
/// mix of stop words, case, digits and repeats (and any other query is read whole).
#[tokio::test]
async fn a_query_read_word_by_word_reads_as_postgresql_reads_it_whole() {
    let app = spawn_app().await;
    let searcher = perfjournal::search::Searcher::new();
    // Every word of this file, in the case written, plus stop words, numbers and a few
    // that PostgreSQL splits or treats as operators.
    let mut words: Vec<String> = include_str!("search.rs")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    words.sort();
    words.dedup();
    for extra in [
        "the", "AND", "Not", "or", "OR", "H100", "1e5", "0x1f", "2048", "fp8", "Running",
    ] {
        words.push(extra.to_string());
    }
    assert!(words.len() > 300, "{} words", words.len());
    let mut queries: Vec<String> = Vec::new();
    let mut seed: u64 = 12345;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for _ in 0..1500 {
        let n = 1 + next(4);
        let q: Vec<&str> = (0..n).map(|_| words[next(words.len())].as_str()).collect();
        queries.push(q.join(if next(2) == 0 { " " } else { "  " }));
    }
    for whole in [
        "\"kv cache\" -python",
        "prefill or decode",
        "1_000 tokens",
        "café latte",
        "a,b",
    ] {
        queries.push(whole.to_string());
    }
    let mut checked = 0;
    for q in &queries {
        let ours = searcher.reading(&app.pool, q).await.unwrap();
        let theirs: String = sqlx::query_scalar("SELECT websearch_to_tsquery('english', $1)::text")
            .bind(q)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert_eq!(ours.as_deref(), Some(theirs.as_str()), "query {q:?}");
        checked += 1;
    }
    assert_eq!(searcher.reading(&app.pool, "").await.unwrap(), None);
    println!(
        "{checked} queries read as PostgreSQL reads them ({} distinct words)",
        words.len()
    );
}

/// Snippets for plain words are cut in the app: a word is highlighted when PostgreSQL
/// reads it as one of the query's lexemes (so every inflection of a word, and nothing
/// that merely starts like it); phrase queries are still cut by PostgreSQL.
#[tokio::test]
async fn snippets_highlight_every_form_of_the_words_and_nothing_else() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Batches stall",
        &[(
            "symptom",
            "Prefilled batches stall while prefill runs long; the prefix cache missed and caching H100 nodes idled.",
        )],
    )
    .await;
    let v = search(&mut app, &token, "q=prefilling+caches+h100").await;
    assert_eq!(v["total"], 1, "{v}");
    let snippet = v["results"][0]["snippet"].as_str().unwrap().to_string();
    for marked in ["Prefilled", "prefill", "cache", "caching", "H100"] {
        assert!(
            snippet.contains(&format!("<mark>{marked}</mark>")),
            "{marked}: {snippet}"
        );
    }
    for plain in ["prefix", "batches", "stall"] {
        assert!(
            !snippet.contains(&format!("<mark>{plain}</mark>")),
            "{plain}: {snippet}"
        );
    }
    // A phrase goes to ts_headline, which marks the phrase's words.
    let v = search(&mut app, &token, "q=%22prefix+cache%22").await;
    let snippet = v["results"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("<mark>prefix</mark>"), "{snippet}");
    // Asked again once the words are known: the same snippet.
    let again = search(&mut app, &token, "q=h100+prefilling+caches").await;
    let first = search(&mut app, &token, "q=prefilling+caches+h100").await;
    assert_eq!(
        again["results"][0]["snippet"],
        first["results"][0]["snippet"]
    );
}

/// After a burst of changes (here 1,200 entries written straight to the table) the
/// background indexer brings them into search and then vacuums its queue, which every
/// search counts: the queue's table is empty again on disk, not 1,200 dead rows.
#[tokio::test]
async fn the_indexer_vacuums_its_queue_after_a_burst() {
    let (mut app, token) = admin().await;
    let author = app.user_id("ada").await;
    sqlx::query(
        "INSERT INTO journal_entries (title, entry_date, symptom, change, published_at, author_id) \
         SELECT 'Burst entry ' || g, DATE '2026-03-14', 'queue burst symptom', 'a change', now(), $1 \
         FROM generate_series(1, 1200) g",
    )
    .bind(author)
    .execute(&app.pool)
    .await
    .unwrap();
    let size = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i64>("SELECT pg_relation_size('search_stale')")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    assert!(size(app.pool.clone()).await > 0, "the burst is queued");
    let indexer = tokio::spawn(app.state.search.clone().run_indexer(app.pool.clone()));
    let started = std::time::Instant::now();
    loop {
        let v = search(&mut app, &token, "q=burst").await;
        let empty = size(app.pool.clone()).await == 0;
        if v["total"] == 1200 && v["pending_changes"] == 0 && empty {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "not indexed and vacuumed: total {}, pending {}, queue table {} bytes",
            v["total"],
            v["pending_changes"],
            size(app.pool.clone()).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    println!(
        "1,200 entries indexed and the queue vacuumed after {:?}",
        started.elapsed()
    );
    indexer.abort();
}

/// The feed's 401 says what it takes (an API token), not the API's "or a session
/// cookie": a signed-in browser without a token is refused with that sentence.
#[tokio::test]
async fn the_feed_refusal_names_only_what_the_feed_accepts() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    // Signed in, with a session cookie: still refused, and told to use a token.
    let r = app.get("/journal/feed.atom").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers.contains_key("www-authenticate"));
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("token"), "{message}");
    assert!(
        message.contains("session cookie is not accepted"),
        "must not offer a cookie it refuses: {message}"
    );
}

/// A model and GPU spelled as a team types them ("meta-llama/Llama-3.1-8B-Instruct",
/// "H100 SXM 80GB") are stored as catalog ids beside the typed text: one facet value per
/// thing, and "seen before" counts them as the same model and GPU.
#[tokio::test]
async fn models_and_gpus_are_one_catalog_id_whatever_the_spelling() {
    let (mut app, token) = admin().await;
    let queue = json!({"queue_wait": {"p50": 1000, "p95": 2900, "p99": 3400}});
    let typed = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu_type": "H100 SXM 80GB",
        "prompt_len_dist": "mean 1,800"});
    let catalog =
        json!({"model": "llama-3.1-8b", "gpu_type": "h100-sxm", "prompt_len_dist": "mean 1,800"});
    let past = investigation(
        &mut app,
        &token,
        "Queue, typed names",
        typed,
        "ttft",
        queue.clone(),
    )
    .await;
    let subject = investigation(
        &mut app,
        &token,
        "Queue, catalog names",
        catalog,
        "ttft",
        queue,
    )
    .await;

    let all = search(&mut app, &token, "").await;
    let values = |facet: &str| -> Vec<(String, i64)> {
        all["facets"][facet]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["value"].as_str().unwrap().to_string(),
                    g["count"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(values("gpu"), [("h100-sxm".to_string(), 2)]);
    assert_eq!(values("model"), [("llama-3.1-8b".to_string(), 2)]);
    let (model_typed, gpu_typed): (Option<String>, Option<String>) = sqlx::query_as(
        "SELECT model_typed, gpu_typed FROM search_documents WHERE kind = 'investigation' \
         AND source_id = $1",
    )
    .bind(past)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        model_typed.as_deref(),
        Some("meta-llama/llama-3.1-8b-instruct")
    );
    assert_eq!(gpu_typed.as_deref(), Some("h100 sxm 80gb"));

    let v = app
        .api(
            "GET",
            &format!("/api/v1/investigations/{subject}/similar"),
            &token,
            None,
        )
        .await
        .json();
    assert_eq!(v["similar"][0]["id"], past, "{v}");
    let why = v["similar"][0]["why"].as_str().unwrap();
    assert!(why.contains("model 1.00, GPU 1.00"), "{why}");
}

#[tokio::test]
async fn repeat_tail_symptoms_are_found_through_the_thesaurus_and_partial_matches() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Chunked prefill stalls decode on chat-api",
        &[
            (
                "symptom",
                "p99 inter-token latency 140 ms against a 60 ms SLO on chat-api since Tuesday's deploy",
            ),
            (
                "diagnosis",
                "22k-token prompts arrive every 5 s; their 8192-token prefill chunks stall the decode steps around them",
            ),
            ("change", "max_num_batched_tokens 2048"),
            ("result", "p99 inter-token latency 55 ms"),
        ],
    )
    .await;
    entry(
        &mut app,
        "Prompts queue behind a slow tokenizer",
        &[("symptom", "TTFT grows with long prompts")],
    )
    .await;
    entry(
        &mut app,
        "Throughput after the driver update",
        &[("symptom", "throughput dropped after the driver update")],
    )
    .await;

    // ITL = inter-token latency, spike ≈ p99: every word matches through the thesaurus.
    let v = search(&mut app, &token, "q=ITL+spikes").await;
    assert_eq!(
        titles(&v),
        ["Chunked prefill stalls decode on chat-api"],
        "{v}"
    );
    assert_eq!(v["partial"], false);
    let used: Vec<&str> = v["synonyms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["word"].as_str().unwrap())
        .collect();
    assert_eq!(used, ["ITL", "spikes"], "{v}");
    assert!(
        v["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("<mark>latency</mark>"),
        "{v}"
    );

    // No entry has all five words ("long" is missing from the case): the best partial
    // matches, the ITL case first with four of five words.
    let v = search(&mut app, &token, "q=p99+ITL+spikes+long+prompts").await;
    assert_eq!(v["partial"], true, "{v}");
    assert_eq!(
        v["words"],
        json!(["p99", "ITL", "spikes", "long", "prompts"])
    );
    assert_eq!(
        titles(&v),
        [
            "Chunked prefill stalls decode on chat-api",
            "Prompts queue behind a slow tokenizer"
        ],
        "{v}"
    );
    assert_eq!(v["total"], 2);
    assert_eq!(
        v["results"][0]["matched_words"],
        json!(["p99", "ITL", "spikes", "prompts"])
    );
    assert_eq!(v["results"][1]["matched_words"], json!(["long", "prompts"]));
    // The page says so, and which words each result matches.
    let page = app.get("/search?q=p99+ITL+spikes+long+prompts").await;
    assert_eq!(page.select(".partial-note").len(), 1, "{}", page.body);
    assert_eq!(
        page.select(".search-result:first-child .matched-word"),
        ["p99", "ITL", "spikes", "prompts"]
    );
    // A query whose words all match is not partial, and words matching nothing at all
    // still find nothing.
    let v = search(&mut app, &token, "q=long+prompts").await;
    assert_eq!(v["partial"], false);
    assert_eq!(titles(&v), ["Prompts queue behind a slow tokenizer"]);
    let v = search(&mut app, &token, "q=zzzzqqq+xxxyyyk").await;
    assert_eq!(v["total"], 0);
    assert_eq!(v["partial"], false);
}

fn error_fields(v: &Value) -> Vec<String> {
    v["error"]["fields"]
        .as_array()
        .unwrap_or_else(|| panic!("no fields: {v}"))
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn admins_extend_the_thesaurus_on_the_page_and_through_the_api() {
    let (mut app, token) = admin().await;
    entry(
        &mut app,
        "Requests swapped out under memory pressure",
        &[(
            "symptom",
            "p95 e2e latency doubled; requests swapped out every minute",
        )],
    )
    .await;
    assert_eq!(search(&mut app, &token, "q=preemption").await["total"], 0);

    // The groups the app ships with are listed to anyone signed in.
    app.add_user("vera", Role::Viewer).await;
    let viewer = app.api_token("vera").await;
    let r = app
        .api("GET", "/api/v1/search/synonyms", &viewer, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let shipped: Vec<Value> = r.json()["items"].as_array().unwrap().clone();
    assert!(shipped
        .iter()
        .any(|g| g["terms"] == json!(["TTFT", "time to first token"])));

    // Only admins change it.
    let group = json!({"terms": ["preemption", "swapped out"]});
    let r = app
        .api(
            "POST",
            "/api/v1/search/synonyms",
            &viewer,
            Some(group.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // Bad input names the field.
    for (body, field) in [
        (json!({"terms": ["preemption"]}), "terms"),
        (json!({"terms": "preemption"}), "terms"),
        (json!({}), "terms"),
        (json!(["preemption", "swap"]), "body"),
        (json!({"terms": ["preemption", "the"]}), "terms[1]"),
        (json!({"terms": ["preemption", "a, b"]}), "terms[1]"),
        (json!({"terms": ["preemption", "Preemption"]}), "terms[1]"),
    ] {
        let r = app
            .api(
                "POST",
                "/api/v1/search/synonyms",
                &token,
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.body
        );
        assert_eq!(error_fields(&r.json()), [field], "{body}");
    }
    let r = app
        .api("POST", "/api/v1/search/synonyms", &token, Some(group))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["updated_by"], "ada");

    // The next search uses it.
    let v = search(&mut app, &token, "q=preemption").await;
    assert_eq!(
        titles(&v),
        ["Requests swapped out under memory pressure"],
        "{v}"
    );
    assert_eq!(v["synonyms"][0]["also"], json!(["swapped out"]));

    // Edited and removed through the API (admins only; an unknown group is a 404).
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/search/synonyms/{id}"),
            &viewer,
            Some(json!({"terms": ["preempted", "evicted"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api(
            "PUT",
            &format!("/api/v1/search/synonyms/{id}"),
            &token,
            Some(json!({"terms": ["preemption", "evicted"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(search(&mut app, &token, "q=preemption").await["total"], 0);
    let r = app
        .api(
            "PUT",
            "/api/v1/search/synonyms/999999",
            &token,
            Some(json!({"terms": ["a1", "b1"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app
        .api(
            "DELETE",
            &format!("/api/v1/search/synonyms/{id}"),
            &viewer,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api(
            "DELETE",
            &format!("/api/v1/search/synonyms/{id}"),
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    // The admin page: add a group, a bad one is refused naming the term.
    let page = app.get("/admin/thesaurus").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.select("#thesaurus tr[data-group]").len() >= shipped.len());
    let r = app
        .post_form("/admin/thesaurus", &[("terms", "preemption, of the")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.select_attr(".form-errors li", "data-field"), ["terms[1]"]);
    let r = app
        .post_form("/admin/thesaurus", &[("terms", "preemption, swapped out")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(search(&mut app, &token, "q=preemption").await["total"], 1);
    // Viewers cannot open it.
    let mut other = app.new_client();
    other.login("vera").await;
    assert_eq!(
        other.get("/admin/thesaurus").await.status,
        StatusCode::FORBIDDEN
    );
}

/// Right after a save, "seen before" may be built before the index has the change: the
/// fragment then asks again by itself a second later (no reload), at most ten times, and
/// stops asking once the index has caught up.
#[tokio::test]
async fn seen_before_asks_again_while_the_index_catches_up() {
    use tower::ServiceExt;
    let (mut app, token) = admin().await;
    let queue = json!({"queue_wait": {"p50": 1000, "p95": 2900, "p99": 3400}, "prefill": {"p50": 50, "p95": 90, "p99": 120}});
    let setup = json!({"model": "llama-3.1-8b", "gpu_type": "h100-sxm"});
    investigation(
        &mut app,
        &token,
        "Queue at peak",
        setup.clone(),
        "ttft",
        queue.clone(),
    )
    .await;
    let subject = investigation(&mut app, &token, "Queue again", setup, "ttft", queue).await;
    // The subject's last save waits for the indexer (the app's requests would catch up
    // first, so this one goes to the router as it is).
    sqlx::query("INSERT INTO search_stale (kind, source_id) VALUES ('investigation', $1) ON CONFLICT DO NOTHING")
        .bind(subject)
        .execute(&app.pool)
        .await
        .unwrap();
    let fragment = |query: &str| {
        axum::http::Request::get(format!("/investigations/{subject}/similar{query}"))
            .header(axum::http::header::COOKIE, app.cookie.clone().unwrap())
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let read = |res: axum::response::Response| async move {
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    let busy = read(app.app.clone().oneshot(fragment("")).await.unwrap()).await;
    assert!(
        busy.contains(&format!(
            "hx-get=\"/investigations/{subject}/similar?poll=1\""
        )) && busy.contains("hx-trigger=\"load delay:1s\""),
        "{busy}"
    );
    let last = read(app.app.clone().oneshot(fragment("?poll=10")).await.unwrap()).await;
    assert!(
        !last.contains("hx-get"),
        "polling stops after ten asks: {last}"
    );
    // Caught up: the list, and no more asking.
    let page = app
        .get(&format!("/investigations/{subject}/similar?poll=1"))
        .await;
    assert!(!page.body.contains("hx-get"), "{}", page.body);
    assert_eq!(page.select(".similar-item a"), ["Queue at peak"]);
}

/// Attaches an analyzed Prometheus window to an investigation: recorded `analyzing`,
/// then `done`, as the fetch does.
async fn analyzed_window(
    app: &TestApp,
    investigation: i64,
    analysis: &perfjournal::core::analyze::prometheus::range::PrometheusRangeAnalysis,
) {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO artifacts (investigation_id, name, kind, sha256, size_bytes, status)
         VALUES ($1, 'prometheus-vllm.json', 'prometheus_range', repeat('0', 64), 0, 'analyzing')
         RETURNING id",
    )
    .bind(investigation)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query("UPDATE artifacts SET status = 'done', analysis = $2 WHERE id = $1")
        .bind(id)
        .bind(serde_json::to_value(analysis).unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn seen_before_matches_on_the_incident_windows_shape() {
    use perfjournal::core::analyze::prometheus::range::{PrometheusRangeAnalysis, WindowQuantiles};
    let window = |waiting: &[f64], kv: f64, preempted: f64, p99: f64| {
        let series = |vs: &[f64]| {
            vs.iter()
                .enumerate()
                .map(|(i, v)| [1_796_220_000_000.0 + i as f64 * 15_000.0, *v])
                .collect::<Vec<_>>()
        };
        let mut a = PrometheusRangeAnalysis {
            start: 1_796_220_000.0,
            end: 1_796_223_600.0,
            waiting_series: series(waiting),
            ..Default::default()
        };
        a.gauges.insert("kv_usage".into(), series(&[0.3, kv, kv]));
        a.totals.insert("preemptions".into(), preempted);
        a.quantiles.insert(
            "e2e_ms".into(),
            WindowQuantiles {
                p50: Some(900.0),
                p99: Some(p99),
                ..Default::default()
            },
        );
        a
    };
    let saturating = window(&[0.0, 2.0, 4.0, 9.0, 15.0, 30.0], 0.98, 40.0, 7000.0);
    let calm = window(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.35, 0.0, 1400.0);

    let (mut app, token) = admin().await;
    let queue = json!({"queue_wait": {"p50": 1000, "p95": 2900, "p99": 3400}});
    let setup = json!({"model": "llama-3.1-8b", "gpu_type": "h100-sxm"});
    // The calm one is opened first: on every other part the two tie, and a tie goes to
    // the one opened first.
    let calm_past = investigation(
        &mut app,
        &token,
        "Queue with a calm window",
        setup.clone(),
        "ttft",
        queue.clone(),
    )
    .await;
    analyzed_window(&app, calm_past, &calm).await;
    let alike_past = investigation(
        &mut app,
        &token,
        "Queue while the KV cache filled",
        setup.clone(),
        "ttft",
        queue.clone(),
    )
    .await;
    analyzed_window(&app, alike_past, &saturating).await;
    let subject = investigation(&mut app, &token, "Queue again", setup, "ttft", queue).await;
    analyzed_window(&app, subject, &saturating).await;

    let v = app
        .api(
            "GET",
            &format!("/api/v1/investigations/{subject}/similar"),
            &token,
            None,
        )
        .await
        .json();
    let ids: Vec<i64> = v["similar"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [alike_past, calm_past], "{v}");
    assert!(
        v["similar"][0]["why"]
            .as_str()
            .unwrap()
            .contains("window 1.00"),
        "{v}"
    );
    assert!(
        v["similar"][1]["why"]
            .as_str()
            .unwrap()
            .contains("window 0.00"),
        "{v}"
    );

    let partial = app.get(&format!("/investigations/{subject}/similar")).await;
    assert_eq!(
        partial.select(".subject-shape"),
        ["Incident window: queue rising, KV cache full, preemptions, heavy tail"]
    );
    assert_eq!(
        partial.select(".similar-item .window-shape"),
        [
            "window: queue rising, KV cache full, preemptions, heavy tail",
            "window: no queue, KV cache with room, no preemptions, tight tail"
        ]
    );
}
