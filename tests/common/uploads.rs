//! Uploading generated or fixture files through the API and waiting for nothing:
//! small files are analyzed before the upload answers.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};

use super::TestApp;

/// Uploads `body` as `name` with a bearer token; asserts it was stored (201).
pub async fn upload(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> super::Reply {
    let req = Request::post(format!("/api/v1/artifacts?name={name}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.body);
    r
}

/// Uploads `body` as `name` with a bearer token; asserts it was analyzed, returns its id.
pub async fn upload_analyzed(app: &mut TestApp, token: &str, name: &str, body: Vec<u8>) -> i64 {
    let r = upload(app, token, name, body).await;
    assert_eq!(r.json()["status"], "done", "{}", r.body);
    r.json()["id"].as_i64().unwrap()
}

/// Every file under a directory, at any depth (blobs and temporary files alike).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// How many artifact rows the database holds.
pub async fn artifact_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}
