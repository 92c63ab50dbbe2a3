//! Slow clients against a real server process: a client that never finishes its headers is
//! disconnected, an upload whose body stops arriving gets 408, and uploads past the per-user
//! and total caps are refused at once with 429 / 503. The limits are set small here.

use crate::common;

use std::time::Duration;

use common::{fresh_db, ServerProcess};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A user with the editor role and an API token of theirs.
async fn editor_token(pool: &sqlx::PgPool, name: &str) -> String {
    let hash = perfjournal::auth::password::hash(common::PASSWORD.into())
        .await
        .unwrap();
    let user =
        perfjournal::auth::users::create(pool, name, &hash, perfjournal::auth::Role::Editor, false)
            .await
            .unwrap();
    perfjournal::auth::tokens::create(pool, user.id, "slow")
        .await
        .unwrap()
        .1
}

async fn connect(base: &str) -> TcpStream {
    TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Starts an upload of `length` bytes and sends only the first ten.
async fn start_upload(base: &str, token: &str, length: usize) -> TcpStream {
    let mut s = connect(base).await;
    let head = format!(
        "POST /api/v1/artifacts?name=slow.jsonl HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {length}\r\n\r\n{{\"a\": 1}}\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// What the server sends before it closes (or within `wait`): the status line and body.
async fn answer(s: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = tokio::time::timeout(wait, async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf);
                    // A whole answer with a body is enough.
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= len {
                            break;
                        }
                    }
                }
            }
        }
    })
    .await;
    read.ok()
        .map(|_| String::from_utf8_lossy(&buf).into_owned())
}

#[tokio::test]
async fn headers_sent_too_slowly_end_the_connection() {
    let (_pool, url) = fresh_db().await;
    let server = ServerProcess::start(&url, &[("PERFJOURNAL_HEADER_READ_TIMEOUT", "1")]).await;
    let mut s = connect(&server.base).await;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // The rest of the headers never comes: the server hangs up well before 20 s.
    let got = answer(&mut s, Duration::from_secs(20)).await;
    assert!(got.is_some(), "the connection was still held after 20 s");
    // A client that sends its headers in time is served as before.
    let r = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert!(r.status().is_success());
}

#[tokio::test]
async fn an_upload_whose_body_stops_gets_408() {
    let (pool, url) = fresh_db().await;
    let token = editor_token(&pool, "ed").await;
    let server = ServerProcess::start(&url, &[("PERFJOURNAL_UPLOAD_IDLE_TIMEOUT", "1")]).await;
    let mut s = start_upload(&server.base, &token, 1_000).await;
    let got = answer(&mut s, Duration::from_secs(20))
        .await
        .expect("no answer within 20 s");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("sent nothing for 1 s,"), "{got}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn uploads_past_the_caps_are_refused_with_429_and_503() {
    let (pool, url) = fresh_db().await;
    let ed = editor_token(&pool, "ed").await;
    let flo = editor_token(&pool, "flo").await;
    let gus = editor_token(&pool, "gus").await;
    let server = ServerProcess::start(
        &url,
        &[
            ("PERFJOURNAL_MAX_UPLOADS_PER_USER", "1"),
            ("PERFJOURNAL_MAX_UPLOADS", "2"),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    let upload = |token: &str| {
        http.post(format!("{}/api/v1/artifacts?name=x.jsonl", server.base))
            .bearer_auth(token)
            .header("content-type", "application/octet-stream")
            .body("{\"a\": 1}\n")
            .send()
    };
    // A held upload takes its slot once the server reads its headers; wait for that by
    // retrying a second upload of the same user until it is refused.
    let mut _ed_held = start_upload(&server.base, &ed, 1_000_000).await;
    if let Some(early) = answer(&mut _ed_held, Duration::from_secs(2)).await {
        panic!("the held upload was answered instead of held: {early}");
    }
    let mut second = upload(&ed).await.unwrap();
    // Up to 30 s: on a loaded machine the server may take a while to reach the held upload.
    for _ in 0..300 {
        if second.status() == 429 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        second = upload(&ed).await.unwrap();
    }
    assert_eq!(second.status(), 429);
    assert!(second.headers().contains_key("retry-after"));
    let text = second.text().await.unwrap();
    assert!(text.contains("1 upload(s) running"), "{text}");

    // flo's held upload must hold its slot before gus asks: otherwise a gus upload in
    // flight takes the second slot and it is flo who is (rightly) refused.
    let mut _flo_held = start_upload(&server.base, &flo, 1_000_000).await;
    if let Some(early) = answer(&mut _flo_held, Duration::from_secs(2)).await {
        panic!("the held upload was answered instead of held: {early}");
    }
    let mut third = upload(&gus).await.unwrap();
    // Up to 30 s: on a loaded machine the server may take a while to reach the held upload.
    for _ in 0..300 {
        if third.status() == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        third = upload(&gus).await.unwrap();
    }
    assert_eq!(third.status(), 503);
    let text = third.text().await.unwrap();
    assert!(text.contains("already receiving 2 uploads"), "{text}");

    // Once the held uploads go, a slot is free again.
    drop(_ed_held);
    drop(_flo_held);
    let mut after = upload(&gus).await.unwrap();
    // Up to 30 s: on a loaded machine the server may take a while to reach the held upload.
    for _ in 0..300 {
        if after.status() == 201 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = upload(&gus).await.unwrap();
    }
    assert_eq!(after.status(), 201, "{}", after.text().await.unwrap());
}
