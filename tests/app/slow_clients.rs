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

/// Item 8's input as the attack ran it: 1,000 uploads that each send a byte a second,
/// from 20 users, against a server with its default caps (4 uploads per user, 64 in
/// all). At most 64 are held; every other one is answered 429 or 503 at once, the server
/// closes those connections, and its peak memory stays small (read from /proc).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_uploads_at_a_byte_a_second_stay_within_the_caps_and_memory() {
    const UPLOADS: usize = 1_000;
    const USERS: usize = 20;
    const TOTAL_CAP: usize = 64;
    let (pool, url) = fresh_db().await;
    let mut tokens = Vec::new();
    for i in 0..USERS {
        tokens.push(editor_token(&pool, &format!("slow{i}")).await);
    }
    let server = ServerProcess::start(&url, &[]).await;
    let rss_before = common::peak_rss_mib(&server.pid.to_string());

    let mut clients = tokio::task::JoinSet::new();
    for i in 0..UPLOADS {
        let base = server.base.clone();
        let token = tokens[i % USERS].clone();
        clients.spawn(async move {
            let mut s = start_upload(&base, &token, 1_000_000).await;
            // Eight seconds at a byte a second; an answer ends it.
            for _ in 0..8 {
                if let Some(text) = answer(&mut s, Duration::from_secs(1)).await {
                    return (Some(text), s);
                }
                if s.write_all(b" ").await.is_err() {
                    return (Some("closed".to_string()), s);
                }
            }
            (None, s)
        });
    }
    let mut held = Vec::new();
    let (mut per_user, mut total, mut other) = (0, 0, Vec::new());
    while let Some(done) = clients.join_next().await {
        match done.unwrap() {
            (None, s) => held.push(s),
            (Some(text), _) if text.starts_with("HTTP/1.1 429") => per_user += 1,
            (Some(text), _) if text.starts_with("HTTP/1.1 503") => total += 1,
            (Some(text), _) => other.push(text),
        }
    }
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid))
        .map(|d| d.count())
        .unwrap_or(0);
    let peak = common::peak_rss_mib(&server.pid.to_string());
    println!(
        "{UPLOADS} slow uploads: {} held, {per_user} refused per user (429), {total} refused \
         in all (503); server peak RSS {peak} MiB (at start {rss_before} MiB), {fds} open files",
        held.len()
    );
    assert!(
        other.is_empty(),
        "unexpected answers: {:?}",
        &other[..other.len().min(3)]
    );
    assert!(held.len() <= TOTAL_CAP, "{} uploads held", held.len());
    assert_eq!(held.len() + per_user + total, UPLOADS);
    assert!(per_user > 0 && total > 0, "{per_user} 429s, {total} 503s");
    assert!(peak < 300, "the server's peak RSS reached {peak} MiB");
    // The held uploads, the listener, the pool and the runtime: not a file per attempt.
    assert!(
        fds < TOTAL_CAP + 150,
        "{fds} open files while {} uploads are held",
        held.len()
    );
    // A normal request still gets through while they are held.
    let health = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert!(health.status().is_success());
}
