//! Small things a person notices: a reload on a form's address, errors that are the
//! app's own page, a failed profile that says so in the list.

use crate::common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};

#[tokio::test]
async fn a_get_on_a_form_address_goes_back_to_the_form_and_other_methods_get_a_styled_405() {
    let (mut app, url) = common::app_with_investigation("reload after a failed attach").await;

    // Reloading the address a step form posted to lands back on the step.
    for (post_only, form_page) in [
        (format!("{url}/steps/4/expected"), format!("{url}/steps/4")),
        (format!("{url}/status"), url.clone()),
        (format!("{url}/journal"), url.clone()),
        ("/settings/tokens/1/revoke".to_string(), "/settings".into()),
        ("/admin/users/1/role".to_string(), "/admin/users".into()),
    ] {
        let r = app.get(&post_only).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{post_only}: {}", r.body);
        assert_eq!(r.location(), Some(form_page.as_str()), "{post_only}");
        let page = app.get(&form_page).await;
        assert_eq!(page.status, StatusCode::OK, "{form_page}");
    }

    // Another method on a page address: the app's error page, not a bare 405.
    let token = app.csrf().await;
    let r = app
        .send(
            Request::put(format!("{url}/status"))
                .header("X-CSRF-Token", &token)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(r.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(r.select(".error-page .status"), ["405"]);
    assert!(!r.select("header.topbar").is_empty(), "the styled page");

    // The API answers JSON.
    let api_token = app.api_token("ada").await;
    let r = app
        .api("DELETE", "/api/v1/investigations", &api_token, None)
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.json()["error"]["status"], 405);
}

#[tokio::test]
async fn an_ncu_file_holding_only_errors_is_a_failed_profile_in_the_list() {
    let (mut app, url) = common::app_with_investigation("ncu run crashed").await;
    let id = url.rsplit('/').next().unwrap().to_string();
    let token = app.api_token("ada").await;
    for (name, body) in [
        (
            "errors.csv",
            "==PROF== Connected\n==ERROR== The application returned an error code (1).\n",
        ),
        ("ok.log", "not a profile at all\n"),
    ] {
        let query = format!("{name}&investigation={id}");
        common::uploads::upload(&mut app, &token, &query, body.as_bytes().to_vec()).await;
    }
    app.drain_queue().await;
    let list = app.get("/artifacts").await;
    let rows: Vec<String> = list.select("#artifacts tbody tr td:nth-child(3)");
    assert_eq!(rows, ["not_analyzed", "failed profile"]);
    assert_eq!(list.select("#artifacts .status-failed"), ["failed profile"]);
    // The investigation's own list says the same.
    let page = app.get(&url).await;
    assert_eq!(
        page.select(".artifact-links .status"),
        ["not_analyzed", "failed profile"]
    );
}

#[tokio::test]
async fn estimator_results_read_in_their_units_with_human_labels_and_no_e_notation() {
    let mut app = common::spawn_app().await;
    app.setup_admin("ada").await;
    for query in [
        "memory-fit?model=llama-3.3-70b&gpu=h100-sxm&tp=2&max_model_len=32768",
        "decode-floor?model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096",
        "mixed-step?model=llama-3.1-8b&gpu=h100-sxm&batch=64&context=4096&chunk_tokens=2048&mfu=0.5",
    ] {
        let r = app.get(&format!("/estimators/{query}")).await;
        assert_eq!(r.status, StatusCode::OK, "{query}");
        // Only the visible text: the permalink and data-value keep exact numbers.
        let text = r.select("#chain-result .results, #chain-result details tbody, #chain-lines .value").join(" ");
        let e_notation = text
            .split_whitespace()
            .any(|w| w.contains("e9") || w.contains("e12") || w.contains("e15"));
        assert!(!e_notation, "{query}: {text}");
    }
    let r = app
        .get("/estimators/memory-fit?model=llama-3.3-70b&gpu=h100-sxm&tp=2&max_model_len=32768")
        .await;
    let budget = "#results .result[data-key=budget_bytes_per_gpu]";
    assert_eq!(r.select(&format!("{budget} .label")), ["Budget per GPU"]);
    assert_eq!(r.select(&format!("{budget} .v")), ["78.22 GB"]);
    assert_eq!(
        r.select(&format!("{budget} .k")),
        ["budget_bytes_per_gpu"],
        "the key stays for API users"
    );
    assert_eq!(
        r.select("details tr[data-key=hbm_bytes] .input-value"),
        ["85.02 GB"]
    );
}
