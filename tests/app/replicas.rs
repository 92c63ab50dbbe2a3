//! Two app processes on one PostgreSQL database and one S3-compatible bucket (the moto
//! server from PyPI, started here): a session made on one replica is good on the other; an
//! upload to one is analysed exactly once and readable, byte for byte, from the other (whose
//! own data directory holds no blobs); a change saved through one shows in the other's
//! search within a few seconds.
//!
//! Needs `PERFJOURNAL_PYTHON` pointing at a python with `moto[server]` (`bash .ci/run` puts
//! it in `target/py-venv`); says it skipped otherwise.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::StatusCode;
use tokio::process::{Child, Command};

async fn wait_for(http: &reqwest::Client, url: &str, what: &str) {
    let started = Instant::now();
    loop {
        if let Ok(r) = http.get(url).send().await {
            if r.status().is_success() {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} did not start"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// The moto S3 server on a free port, with one bucket made.
async fn start_s3(python: &str, http: &reqwest::Client) -> (Child, String) {
    let port = common::free_port();
    let child = Command::new(python)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the moto server");
    let endpoint = format!("http://127.0.0.1:{port}");
    wait_for(http, &format!("{endpoint}/moto-api/"), "the S3 server").await;
    // moto takes an unsigned CreateBucket.
    let r = http
        .put(format!("{endpoint}/perfjournal-test"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "create the bucket: {}", r.status());
    (child, endpoint)
}

struct Replica {
    _child: Child,
    base: String,
    _data: tempfile::TempDir,
}

async fn start_replica(http: &reqwest::Client, database_url: &str, s3: &str) -> Replica {
    let port = common::free_port();
    let data = tempfile::Builder::new()
        .prefix("pj-replica-")
        .tempdir()
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .env("DATABASE_URL", database_url)
        .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
        .env("PERFJOURNAL_DATA_DIR", data.path())
        .env("PERFJOURNAL_S3_BUCKET", "perfjournal-test")
        .env("AWS_ENDPOINT", s3)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("start a replica");
    let base = format!("http://127.0.0.1:{port}");
    wait_for(http, &format!("{base}/healthz"), "a replica").await;
    Replica {
        _child: child,
        base,
        _data: data,
    }
}

/// The `name=value` pairs of a reply's cookies, merged into `jar`.
fn keep_cookies(jar: &mut Vec<(String, String)>, reply: &reqwest::Response) {
    for value in reply.headers().get_all(SET_COOKIE) {
        let pair = value.to_str().unwrap().split(';').next().unwrap();
        if let Some((name, v)) = pair.split_once('=') {
            jar.retain(|(n, _)| n != name);
            jar.push((name.to_string(), v.to_string()));
        }
    }
}

async fn json_of(reply: reqwest::Response) -> serde_json::Value {
    let text = reply.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The CSRF token a page's forms carry.
fn csrf_of(page: &str) -> String {
    scraper::Html::parse_document(page)
        .select(&scraper::Selector::parse("input[name=_csrf]").unwrap())
        .next()
        .and_then(|e| e.value().attr("value").map(str::to_string))
        .expect("the page's CSRF token")
}

fn cookie_header(jar: &[(String, String)]) -> String {
    jar.iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_sessions_jobs_blobs_and_search() {
    let Some(python) = std::env::var("PERFJOURNAL_PYTHON").ok().filter(|p| {
        std::process::Command::new(p)
            .args(["-c", "import moto.server"])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        common::skip(
            "two_replicas_share_sessions_jobs_blobs_and_search",
            "PERFJOURNAL_PYTHON is unset or has no moto[server] (bash .ci/run installs it)",
        );
        return;
    };
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (_s3, endpoint) = start_s3(&python, &http).await;

    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "replicas").await;

    let a = start_replica(&http, &url, &endpoint).await;
    let b = start_replica(&http, &url, &endpoint).await;
    println!("replicas at {} and {}; S3 at {endpoint}", a.base, b.base);

    // A session made on A is good on B.
    let mut jar = Vec::new();
    let login = http.get(format!("{}/login", a.base)).send().await.unwrap();
    keep_cookies(&mut jar, &login);
    let page = login.text().await.unwrap();
    let csrf = csrf_of(&page);
    let signed_in = http
        .post(format!("{}/login", a.base))
        .header(COOKIE, cookie_header(&jar))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(
            serde_urlencoded::to_string([
                ("_csrf", csrf.as_str()),
                ("name", "ada"),
                ("password", common::PASSWORD),
            ])
            .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER, "signed in on A");
    keep_cookies(&mut jar, &signed_in);
    let on_b = http
        .get(format!("{}/investigations", b.base))
        .header(COOKIE, cookie_header(&jar))
        .send()
        .await
        .unwrap();
    assert_eq!(on_b.status(), StatusCode::OK, "A's session is good on B");
    assert!(
        on_b.text().await.unwrap().contains("ada"),
        "B knows who is signed in"
    );

    // An upload to A: analysed once (by one of the two), bytes readable from B.
    let jsonl: String = (0..500)
        .map(|i| {
            format!(
                "{{\"request_id\":\"r{i}\",\"queue_wait_ms\":{},\"prefill_ms\":40,\"decode_ms\":300,\"ttft_ms\":{}}}\n",
                i % 7,
                45 + i % 7
            )
        })
        .collect();
    let created = http
        .post(format!("{}/api/v1/artifacts?name=requests.jsonl", a.base))
        .bearer_auth(&token)
        .body(jsonl.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = json_of(created).await["id"].as_i64().unwrap();
    let started = Instant::now();
    let status = loop {
        let doc = json_of(
            http.get(format!("{}/api/v1/artifacts/{id}", b.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        let status = doc["status"].as_str().unwrap().to_string();
        // Compressed by a replica's compactor once the analysis is over.
        if (status == "done" || status == "failed") && doc["compress_pending"] == false {
            break (status, doc);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "analysis or compression never ended: {doc}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.0, "done", "{}", status.1);
    // Kept compressed in the bucket too, once compressed; both replicas read it back
    // through zstd.
    assert_eq!(status.1["blob_encoding"], "zstd", "{}", status.1);
    assert!(
        status.1["stored_bytes"].as_i64().unwrap() < status.1["size_bytes"].as_i64().unwrap(),
        "{}",
        status.1
    );
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM artifacts WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        attempts, 1,
        "claimed and analysed once across the two replicas"
    );
    let rows = common::uploads::stored_rows(&pool, id).await;
    assert_eq!(rows, 500, "the rows were loaded once");
    let bytes = http
        .get(format!("{}/api/v1/artifacts/{id}/download", b.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(
        bytes.as_ref(),
        jsonl.as_bytes(),
        "B reads A's upload from the bucket"
    );

    // A change saved through B shows in A's search within a few seconds.
    let opened = http
        .post(format!("{}/api/v1/investigations", b.base))
        .bearer_auth(&token)
        .json(
            &serde_json::json!({"title": "Zanzibar prefill stall", "symptom": "p95 TTFT doubled"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), StatusCode::CREATED);
    let saved = Instant::now();
    loop {
        let found = json_of(
            http.get(format!("{}/api/v1/search?q=zanzibar", a.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        if found["total"] == 1 {
            println!("A's search saw B's change after {:?}", saved.elapsed());
            break;
        }
        assert!(
            saved.elapsed() < Duration::from_secs(10),
            "A's search never saw B's change: {found}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Signing out on A ends the session on B too: at once on A, within the second for
    // which B may use its copy of the session (src/auth/cache.rs).
    let get = |base: String| {
        http.get(format!("{base}/investigations"))
            .header(COOKIE, cookie_header(&jar))
            .send()
    };
    assert_eq!(get(b.base.clone()).await.unwrap().status(), StatusCode::OK);
    let page = get(a.base.clone()).await.unwrap().text().await.unwrap();
    let csrf = csrf_of(&page);
    let signed_out = http
        .post(format!("{}/logout", a.base))
        .header(COOKIE, cookie_header(&jar))
        .header(reqwest::header::ORIGIN, &a.base)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(serde_urlencoded::to_string([("_csrf", csrf.as_str())]).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        signed_out.status(),
        StatusCode::SEE_OTHER,
        "signed out on A"
    );
    let out = Instant::now();
    assert_eq!(
        get(a.base.clone()).await.unwrap().status(),
        StatusCode::SEE_OTHER,
        "A refuses the session at once"
    );
    loop {
        let status = get(b.base.clone()).await.unwrap().status();
        if status == StatusCode::SEE_OTHER {
            println!("B refused the signed-out session after {:?}", out.elapsed());
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            out.elapsed() < Duration::from_secs(3),
            "B still accepts a session signed out on A after {:?}",
            out.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The hourly blob sweep runs on one replica: of claims made at once, one wins, and none
/// again until the interval has passed.
#[tokio::test]
async fn a_periodic_job_is_claimed_by_one_replica() {
    let (pool, _) = common::fresh_db().await;
    let hour = Duration::from_secs(3600);
    let claims = futures::future::join_all(
        (0..4).map(|_| perfjournal::db::claim_periodic(&pool, "blob_sweep", hour)),
    )
    .await;
    let won = claims.into_iter().filter(|c| *c.as_ref().unwrap()).count();
    assert_eq!(
        won, 1,
        "exactly one of four simultaneous claims runs the job"
    );
    assert!(!perfjournal::db::claim_periodic(&pool, "blob_sweep", hour)
        .await
        .unwrap());
    sqlx::query("UPDATE periodic_jobs SET last_run = now() - interval '61 minutes'")
        .execute(&pool)
        .await
        .unwrap();
    assert!(
        perfjournal::db::claim_periodic(&pool, "blob_sweep", hour)
            .await
            .unwrap(),
        "due again after the hour"
    );
}
