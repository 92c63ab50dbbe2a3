//! The OpenAPI document as outside tools read it: a standard validator accepts it, and a
//! client that knows the API only from the document uploads a file and reads it back, with
//! every response matching what the document says (tests/app/openapi_client.py). schemathesis
//! then fuzzes every operation for a bounded number of examples: no 5xx, no response
//! outside the document.
//!
//! The Python side needs openapi-spec-validator, openapi-core, requests, schemathesis,
//! openapi-python-client and datamodel-code-generator; `.ci/run` installs them in a venv
//! and points PERFJOURNAL_PYTHON at it.

use crate::common;

use std::process::Command;

use common::{spawn_app, TestApp};

/// The venv's python, or `None` (a skip, which fails under PERFJOURNAL_REQUIRE_ALL).
fn python(test: &str) -> Option<String> {
    match std::env::var("PERFJOURNAL_PYTHON") {
        Ok(p) if std::path::Path::new(&p).exists() => Some(p),
        _ => {
            common::skip(
                test,
                "set PERFJOURNAL_PYTHON to a python with openapi-spec-validator, openapi-core, \
                 requests and schemathesis (.ci/run makes one)",
            );
            None
        }
    }
}

/// An app with an admin and their token, served on a loopback port.
async fn served_admin() -> (TestApp, String, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let base = serve(&app).await;
    (app, token, base)
}

/// Serves the app on a loopback port; returns the base URL.
async fn serve(app: &TestApp) -> String {
    let (addr, _server) = app.serve_on_port().await;
    format!("http://{addr}")
}

fn run(python: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(python)
        .args(args)
        .output()
        .expect("run python");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_validates_and_a_client_made_from_it_uploads_a_file() {
    let Some(python) = python("the_document_validates_and_a_client_made_from_it_uploads_a_file")
    else {
        return;
    };
    let (_app, token, base) = served_admin().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/app/openapi_client.py");
    let (ok, text) = tokio::task::spawn_blocking(move || run(&python, &[script, &base, &token]))
        .await
        .unwrap();
    println!("{text}");
    assert!(ok, "{text}");
    assert!(text.contains("client round trip ok"), "{text}");
}

/// Two generators read the document (fetched without a token from `/api/openapi.json`):
/// openapi-python-client's client package and datamodel-code-generator's pydantic models
/// each open an investigation, record steps 1 and 7 through the steps' own schemas, draft
/// the journal entry and publish it (tests/app/openapi_generated.py).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_clients_drive_an_investigation_to_a_published_entry() {
    let test = "generated_clients_drive_an_investigation_to_a_published_entry";
    let Some(python) = python(test) else {
        return;
    };
    let (_app, token, base) = served_admin().await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/app/openapi_generated.py"
    );
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_str().unwrap().to_string();
    let (ok, text) =
        tokio::task::spawn_blocking(move || run(&python, &[script, &base, &token, &dir]))
            .await
            .unwrap();
    println!("{text}");
    assert!(ok, "{text}");
    assert!(text.contains("generated clients ok"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_undocumented_response() {
    let Some(python) = python("schemathesis_finds_no_server_error_and_no_undocumented_response")
    else {
        return;
    };
    let (_app, token, base) = served_admin().await;
    let examples = std::env::var("PERFJOURNAL_FUZZ_EXAMPLES").unwrap_or_else(|_| "25".into());
    let seed = std::env::var("PERFJOURNAL_FUZZ_SEED").unwrap_or_else(|_| "1".into());
    let (ok, text) = tokio::task::spawn_blocking(move || {
        let schemathesis = std::path::Path::new(&python).with_file_name("schemathesis");
        // Its cache goes in a temp dir, not the checkout.
        let scratch = tempfile::tempdir().unwrap();
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/app/schemathesis.toml");
        let out = Command::new(schemathesis)
            .current_dir(scratch.path())
            .args([
                "--config-file",
                config,
                "run",
                &format!("{base}/api/v1/openapi.json"),
                "--url",
                &format!("{base}/api/v1"),
                "-H",
                &format!("Authorization: Bearer {token}"),
                "--checks",
                "all",
                "--max-examples",
                &examples,
                "--seed",
                &seed,
                "--no-color",
                "--suppress-health-check",
                "all",
            ])
            .output()
            .expect("run schemathesis");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    })
    .await
    .unwrap();
    println!("{text}");
    assert!(ok, "schemathesis found problems:\n{text}");
}
