//! Faults a running server meets: its database going away and coming back under write load,
//! the blob store's disk filling up, and SIGTERM while uploads are in flight.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::uploads::files_under;
use perfjournal::config::Config;
use perfjournal::db::EmbeddedCluster;

/// Says why the test cannot run here (a failure under PERFJOURNAL_REQUIRE_ALL); false.
fn must_run(test: &str, why: &str) -> bool {
    common::skip(test, why);
    false
}

async fn start_cluster(dir: std::path::PathBuf) -> EmbeddedCluster {
    tokio::task::spawn_blocking(move || EmbeddedCluster::start(&dir))
        .await
        .unwrap()
        .expect("start the test's own cluster")
}

/// The database is stopped (immediate shutdown, as a crash would) while four clients keep
/// creating investigations, then started again. While it is down the API answers 503 with
/// Retry-After, never another 5xx; afterwards writes succeed again without restarting the
/// app; every write that was acknowledged with 201 is in the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_survive_a_database_restart_and_the_outage_is_503() {
    if EmbeddedCluster::find_binaries().is_err()
        && !must_run(
            "writes_survive_a_database_restart",
            "no PostgreSQL server binaries",
        )
    {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("pj-faults-")
        .tempdir()
        .unwrap();
    let cluster = start_cluster(dir.path().join("data")).await;
    let pool = perfjournal::db::connect(cluster.connect_options("faults"))
        .await
        .unwrap();
    let blob_dir = dir.path().join("blobs");
    let mut app = common::app_on(pool.clone(), String::new(), blob_dir, Config::default());
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;

    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let unavailable = Arc::new(AtomicUsize::new(0));
    let other_errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let after_restart_ok = Arc::new(AtomicUsize::new(0));
    let restarted = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(14);
    let mut writers = Vec::new();
    for w in 0..4 {
        let mut client = app.new_client();
        let token = token.clone();
        let (acknowledged, unavailable, other_errors, after_restart_ok, restarted) = (
            acknowledged.clone(),
            unavailable.clone(),
            other_errors.clone(),
            after_restart_ok.clone(),
            restarted.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                let title = format!("writer {w} write {i}");
                let r = client
                    .api(
                        "POST",
                        "/api/v1/investigations",
                        &token,
                        Some(serde_json::json!({ "title": title })),
                    )
                    .await;
                match r.status {
                    StatusCode::CREATED => {
                        acknowledged.lock().unwrap().push(title);
                        if restarted.load(Ordering::SeqCst) {
                            after_restart_ok.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    StatusCode::SERVICE_UNAVAILABLE => {
                        assert!(
                            r.headers.contains_key("retry-after"),
                            "503 without Retry-After"
                        );
                        unavailable.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    other => other_errors
                        .lock()
                        .unwrap()
                        .push(format!("{other}: {}", r.body)),
                }
            }
        }));
    }

    tokio::time::sleep(Duration::from_secs(2)).await;
    let before_outage = acknowledged.lock().unwrap().len();
    let data = cluster.cluster_dir().to_path_buf();
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.stop_immediately())
        .await
        .unwrap()
        .expect("stop the database");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let again = start_cluster(data.parent().unwrap().to_path_buf()).await;
    restarted.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }

    let acknowledged = acknowledged.lock().unwrap().clone();
    let others = other_errors.lock().unwrap().clone();
    let in_db: Vec<String> = sqlx::query_scalar("SELECT title FROM investigations")
        .fetch_all(&pool)
        .await
        .expect("the app's pool reconnects after the restart");
    let missing: Vec<&String> = acknowledged.iter().filter(|t| !in_db.contains(t)).collect();
    println!(
        "writes acknowledged: {} ({} before the outage, {} after the restart); 503 answers \
         during the outage: {}; other errors: {}; acknowledged but missing: {}",
        acknowledged.len(),
        before_outage,
        after_restart_ok.load(Ordering::SeqCst),
        unavailable.load(Ordering::SeqCst),
        others.len(),
        missing.len()
    );
    assert!(others.is_empty(), "answers other than 201/503: {others:?}");
    assert!(missing.is_empty(), "acknowledged writes lost: {missing:?}");
    assert!(before_outage > 0, "writes went through before the outage");
    assert!(
        unavailable.load(Ordering::SeqCst) > 0,
        "the outage was answered 503"
    );
    assert!(
        after_restart_ok.load(Ordering::SeqCst) > 0,
        "writes succeed again after the restart, without restarting the app"
    );
    pool.close().await;
    tokio::task::spawn_blocking(move || again.stop())
        .await
        .unwrap()
        .unwrap();
}

/// A tiny file system under the blob store: an upload that does not fit is refused with
/// 507 and a clear message, and leaves no row, no blob and no temporary file; a file that
/// fits is stored as usual afterwards.
#[tokio::test]
async fn a_full_disk_refuses_the_upload_and_leaves_nothing_half_written() {
    let root = unsafe { libc::geteuid() } == 0;
    if !root
        && !must_run(
            "a_full_disk_refuses_the_upload",
            "mounting a tmpfs needs root",
        )
    {
        return;
    }
    let mount = tempfile::Builder::new()
        .prefix("pj-small-disk-")
        .tempdir()
        .unwrap();
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(mount.path())
        .status()
        .expect("run mount");
    assert!(status.success(), "mount a 1 MiB tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.path().to_path_buf());

    let (pool, url) = common::fresh_db().await;
    let mut app = common::app_on(pool, url, mount.path().to_path_buf(), Config::default());
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let upload = |body: Vec<u8>, name: &str| {
        axum::http::Request::post(format!("/api/v1/artifacts?name={name}"))
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::from(body))
            .unwrap()
    };
    // Bytes that do not compress (text would be stored zstd-compressed, and a repeating
    // pattern would fit): 3 MiB of a xorshift sequence.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let big: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let r = app.send(upload(big, "big.bin")).await;
    assert_eq!(r.status, StatusCode::INSUFFICIENT_STORAGE, "{}", r.body);
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("storage is full"), "{message}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
    let leftovers = files_under(mount.path());
    assert!(leftovers.is_empty(), "half-written files: {leftovers:?}");

    let small = b"hello, small file\n".to_vec();
    let r = app.send(upload(small, "small.txt")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

/// SIGTERM while an upload is streaming: the server stops accepting, lets the upload
/// finish (201, row and blob present), then exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_an_upload_in_flight() {
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "drain").await;
    let port = common::free_port();
    let data = tempfile::Builder::new()
        .prefix("pj-drain-")
        .tempdir()
        .unwrap();
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .env("DATABASE_URL", &url)
        .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
        .env("PERFJOURNAL_DATA_DIR", data.path())
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // 40 chunks of 16 KiB, one every 50 ms: about two seconds of upload.
    let line = b"{\"request_id\":\"r\",\"queue_wait_ms\":1,\"prefill_ms\":2,\"decode_ms\":3}\n";
    let chunk: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(line.len() * 240)
        .collect();
    let body = futures::stream::unfold(0, move |i| {
        let chunk = chunk.clone();
        async move {
            if i == 40 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            Some((Ok::<_, std::io::Error>(chunk), i + 1))
        }
    });
    let request = http
        .post(format!("{base}/api/v1/artifacts?name=slow.jsonl"))
        .bearer_auth(&token)
        .body(reqwest::Body::wrap_stream(body))
        .send();
    let upload = tokio::spawn(request);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let pid = server.id().expect("running") as i32;
    // SAFETY: sending a signal to the child we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);

    let reply = upload.await.unwrap().expect("the upload is answered");
    let status = reply.status();
    let text = reply.text().await.unwrap_or_default();
    assert_eq!(status, reqwest::StatusCode::CREATED, "{text}");
    let exit = tokio::time::timeout(Duration::from_secs(30), server.wait())
        .await
        .expect("the server exits after draining")
        .unwrap();
    assert!(exit.success(), "clean exit after SIGTERM: {exit}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE name = 'slow.jsonl'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 1, "the drained upload was recorded");
}

/// A server process started on `url` with its blobs in `data` (replicas given the same
/// directory share the blobs), answering on its port once this returns.
async fn start_server(url: &str, data: &std::path::Path) -> (tokio::process::Child, String) {
    let port = common::free_port();
    let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .env("DATABASE_URL", url)
        .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
        .env("PERFJOURNAL_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await {
            if r.status().is_success() {
                return (server, base);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kill -9 of the server analysing an upload: another replica, already running, takes
/// the analysis over once its lease runs out (seconds, not minutes, and without a
/// restart) and finishes it; every request row is loaded exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_finishes_an_analysis_whose_server_was_killed() {
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "takeover").await;
    let data = tempfile::Builder::new()
        .prefix("pj-takeover-")
        .tempdir()
        .unwrap();
    let (mut first, base) = start_server(&url, data.path()).await;

    // Above the size analysed on the request path, so the background worker takes it.
    let line = b"{\"request_id\":\"r\",\"queue_wait_ms\":1,\"prefill_ms\":2,\"decode_ms\":3}\n";
    let rows = (perfjournal::artifacts::INLINE_ANALYSIS_BYTES as usize) / line.len() + 100_000;
    let body: Vec<u8> = line.repeat(rows);
    let http = reqwest::Client::new();
    let reply = http
        .post(format!("{base}/api/v1/artifacts?name=big.jsonl"))
        .bearer_auth(&token)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = reply.status();
    assert_eq!(
        status,
        reqwest::StatusCode::CREATED,
        "{}",
        reply.text().await.unwrap_or_default()
    );
    let artifact: i64 = sqlx::query_scalar("SELECT id FROM artifacts WHERE name = 'big.jsonl'")
        .fetch_one(&pool)
        .await
        .unwrap();
    let state = || async {
        sqlx::query_as::<_, (String, i32)>("SELECT status, attempts FROM artifacts WHERE id = $1")
            .bind(artifact)
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let waited = Instant::now();
    while state().await.0 != "analyzing" {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "{:?}",
            state().await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The second replica is up and idle before the first dies: it must notice by itself.
    let (_second, _) = start_server(&url, data.path()).await;
    assert_eq!(
        state().await,
        ("analyzing".to_string(), 1),
        "the first server is still analysing (make the file larger if this machine is fast)"
    );
    let pid = first.id().expect("running") as i32;
    // SAFETY: signalling the child we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    first.wait().await.unwrap();
    let killed = Instant::now();

    // Taken over within the lease and a couple of polls...
    let lease = perfjournal::artifacts::ingest::LEASE;
    while state().await.1 < 2 {
        assert!(
            killed.elapsed() < lease + Duration::from_secs(15),
            "no replica took the analysis over {:?} after the kill: {:?}",
            killed.elapsed(),
            state().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and finished.
    loop {
        let (status, attempts) = state().await;
        if status == "done" {
            assert_eq!(attempts, 2, "finished by the second start");
            break;
        }
        assert_eq!(status, "analyzing");
        assert!(
            killed.elapsed() < Duration::from_secs(180),
            "still {status} {:?} after the kill",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let loaded = common::uploads::stored_rows(&pool, artifact).await;
    assert_eq!(loaded, rows as i64);
}

/// kill -9 in the middle of an upload leaves its partial file; the next start removes
/// it before serving, instead of a sweep a day later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_removes_the_partial_file_of_an_upload_cut_off_by_kill_9() {
    killed_mid_upload_and_restarted(
        "/api/v1/artifacts?name=cut.json",
        None,
        vec![b' '; 1 << 20],
        "blobs/tmp",
    )
    .await;
}

/// The same for a trace set's archive, kept in the data dir's spool while it arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_removes_the_spooled_archive_of_a_set_upload_cut_off_by_kill_9() {
    let boundary = "pjCutBoundary";
    let mut head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
         filename=\"prof.tar.gz\"\r\n\r\n"
    )
    .into_bytes();
    head.extend(vec![0x1f; 1 << 20]);
    killed_mid_upload_and_restarted(
        "/api/v1/trace-sets/upload?name=cut",
        Some(format!("multipart/form-data; boundary={boundary}")),
        head,
        "blobs/spool",
    )
    .await;
}

/// Sends `head` to `path`, then a trickle that never ends; once a file appears under
/// `watched` (in the data dir) the server is killed; the restart must remove it, and no
/// row is left.
async fn killed_mid_upload_and_restarted(
    path: &str,
    content_type: Option<String>,
    head: Vec<u8>,
    watched: &str,
) {
    let (pool, url) = common::fresh_db().await;
    let token = common::admin_with_token(&pool, "partial").await;
    let data = tempfile::Builder::new()
        .prefix("pj-partial-")
        .tempdir()
        .unwrap();
    let (mut server, base) = start_server(&url, data.path()).await;
    let body = futures::stream::unfold((0u32, head), |(i, head)| async move {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let chunk = if i == 0 { head.clone() } else { vec![0x1f; 16] };
        Some((Ok::<_, std::io::Error>(chunk), (i + 1, head)))
    });
    let http = reqwest::Client::new();
    let mut request = http
        .post(format!("{base}{path}"))
        .bearer_auth(&token)
        .body(reqwest::Body::wrap_stream(body));
    if let Some(t) = content_type {
        request = request.header("content-type", t);
    }
    let upload = tokio::spawn(request.send());
    let tmp = data.path().join(watched);
    let started = Instant::now();
    while files_under(&tmp).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no partial file appeared under {}",
            tmp.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = server.id().expect("running") as i32;
    // SAFETY: signalling the child we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    server.wait().await.unwrap();
    assert!(
        upload.await.unwrap().is_err(),
        "the cut-off upload got no answer"
    );
    assert!(
        !files_under(&tmp).is_empty(),
        "the kill left the partial file"
    );

    let (_restarted, _) = start_server(&url, data.path()).await;
    assert_eq!(
        files_under(&tmp),
        Vec::<std::path::PathBuf>::new(),
        "the restart removed the partial file"
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

/// kill -9 of the postmaster of the server's own embedded cluster (no DATABASE_URL): the
/// server notices, starts the cluster again without being restarted itself, writes go
/// through again within seconds, and `/healthz` says a restart happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_restarts_its_embedded_cluster_after_kill_9_of_the_postmaster() {
    if EmbeddedCluster::find_binaries().is_err()
        && !must_run(
            "the_server_restarts_its_embedded_cluster",
            "no PostgreSQL server binaries",
        )
    {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("pj-supervise-")
        .tempdir()
        .unwrap();
    // Reachable for the `postgres` user when the tests run as root, so the cluster lives
    // under this directory and goes with it.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let data = dir.path().join("data");
    let port = common::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .env_remove("DATABASE_URL")
        .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
        .env("PERFJOURNAL_DATA_DIR", &data)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let http = reqwest::Client::new();
    let health = |http: reqwest::Client, base: String| async move {
        let r = http.get(format!("{base}/healthz")).send().await.ok()?;
        let status = r.status();
        Some((status, r.json::<serde_json::Value>().await.ok()?))
    };
    let started = Instant::now();
    let first = loop {
        if let Some((status, body)) = health(http.clone(), base.clone()).await {
            if status.is_success() {
                break body;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server did not start on its embedded cluster"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(first["database"], "ok", "{first}");
    assert_eq!(first["embedded_restarts"], 0, "{first}");
    assert!(first["last_restart"].is_null(), "{first}");

    // The test reaches the same cluster (adopting the running server) to make a token.
    // Should the test fail, the guard kills the server first (so it restarts nothing),
    // then stops the cluster; on success the server has stopped it on SIGTERM.
    let cluster = start_cluster(data.clone()).await;
    assert!(
        !cluster.started_here(),
        "the test adopted the server's cluster"
    );
    struct StopBoth(i32, EmbeddedCluster);
    impl Drop for StopBoth {
        fn drop(&mut self) {
            // SAFETY: kill has no memory preconditions; the pid is our child's.
            if self.0 > 0 && unsafe { libc::kill(self.0, libc::SIGKILL) } == 0 {
                std::thread::sleep(Duration::from_millis(300));
            }
            if self.1.is_running() {
                self.1.stop_immediately().ok();
            }
        }
    }
    let mut guard = StopBoth(server.id().expect("running") as i32, cluster.clone());
    let pool =
        perfjournal::db::connect(cluster.connect_options(perfjournal::db::EMBEDDED_DATABASE))
            .await
            .unwrap();
    let token = common::admin_with_token(&pool, "supervise").await;
    pool.close().await;
    let create = |title: &'static str| {
        let (http, base, token) = (http.clone(), base.clone(), token.clone());
        async move {
            http.post(format!("{base}/api/v1/investigations"))
                .bearer_auth(token)
                .json(&serde_json::json!({ "title": title }))
                .send()
                .await
                .map(|r| r.status())
        }
    };
    assert_eq!(
        create("before the kill").await.unwrap(),
        StatusCode::CREATED
    );

    let postmaster = cluster
        .postmaster_pid()
        .expect("postmaster.pid names the server");
    assert_eq!(unsafe { libc::kill(postmaster, libc::SIGKILL) }, 0);
    let killed = Instant::now();

    // Writes work again within a bound, with no restart of the server process.
    let mut statuses = Vec::new();
    loop {
        match create("after the kill").await {
            Ok(StatusCode::CREATED) => break,
            Ok(s) => statuses.push(s),
            Err(e) => panic!("the server stopped answering: {e}"),
        }
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "writes still fail {:?} after the kill: {statuses:?}",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let recovered = killed.elapsed();
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::SERVICE_UNAVAILABLE),
        "the outage answered other than 503: {statuses:?}"
    );
    assert!(
        server.try_wait().unwrap().is_none(),
        "the server process itself stayed up"
    );
    assert_ne!(
        cluster.postmaster_pid(),
        Some(postmaster),
        "a new postmaster runs"
    );

    let (status, body) = health(http.clone(), base.clone())
        .await
        .expect("healthz answers");
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["database"], "ok", "{body}");
    assert_eq!(body["embedded_restarts"], 1, "{body}");
    assert!(body["last_restart"].is_string(), "{body}");
    // Recovered: no current error; what the restart recovered from is kept apart (the
    // dead postmaster, or a restart attempt that failed before the one that worked).
    assert!(body["last_error"].is_null(), "{body}");
    let reason = body["last_restart_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!("pid {postmaster}")) || reason.starts_with("restart attempt"),
        "last_restart_reason says what happened: {body}"
    );
    eprintln!("writes recovered {recovered:?} after kill -9 of the postmaster; healthz: {body}");

    // A deliberate stop is not mistaken for a crash: SIGTERM stops the server and then
    // its cluster, with no restart in between.
    assert_eq!(unsafe { libc::kill(guard.0, libc::SIGTERM) }, 0);
    let exit = tokio::time::timeout(Duration::from_secs(60), server.wait())
        .await
        .expect("the server stops on SIGTERM")
        .unwrap();
    guard.0 = 0; // reaped: the pid is no longer the server's
    assert!(exit.success(), "{exit:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !cluster.is_running(),
        "the cluster stayed stopped after the server's shutdown"
    );
    drop(guard);
}
