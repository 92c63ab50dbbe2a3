//! The command line against a real database: accounts and tokens made from a terminal.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use axum::http::StatusCode;
use common::{fresh_db, spawn_app};

fn perfjournal(database_url: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfjournal"));
    cmd.env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn");
    run(cmd, args, stdin)
}

/// Runs the binary with `args`, writing `stdin` to it, and collects what it printed.
fn run(mut cmd: Command, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = cmd
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn help_lists_the_subcommands() {
    let out = Command::new(env!("CARGO_BIN_EXE_perfjournal"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in ["serve", "migrate", "user", "token"] {
        assert!(text.contains(sub), "--help lacks {sub}: {text}");
    }
}

#[tokio::test]
async fn user_add_reads_the_password_from_stdin_and_token_create_prints_a_working_token() {
    let mut app = spawn_app().await;
    let url = app.database_url.clone();
    let out = tokio::task::spawn_blocking(move || {
        perfjournal(
            &url,
            &["user", "add", "carol", "--role", "admin"],
            "a long enough password\n",
        )
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("added carol (admin)"));

    let url = app.database_url.clone();
    let out = tokio::task::spawn_blocking(move || {
        perfjournal(&url, &["token", "create", "--user", "carol"], "")
    })
    .await
    .unwrap();
    assert!(out.status.success());
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let me = app.api("GET", "/api/v1/me", &token, None).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.json()["name"], "carol");

    // The account signs in on the web too.
    let r = app
        .post_form(
            "/login",
            &[("name", "carol"), ("password", "a long enough password")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn cli_refuses_bad_input_with_a_message_and_changes_nothing() {
    let (pool, url) = fresh_db().await;
    let u = url.clone();
    let short =
        tokio::task::spawn_blocking(move || perfjournal(&u, &["user", "add", "dave"], "short\n"))
            .await
            .unwrap();
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 10 characters"));
    let u = url.clone();
    let nobody = tokio::task::spawn_blocking(move || {
        perfjournal(&u, &["token", "create", "--user", "nobody"], "")
    })
    .await
    .unwrap();
    assert!(!nobody.status.success());
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no user named nobody"));
    assert_eq!(perfjournal::auth::users::count(&pool).await.unwrap(), 0);
}

#[tokio::test]
async fn migrate_creates_a_missing_database() {
    let (_pool, url) = fresh_db().await;
    // A database name nobody made yet, on the same server.
    let fresh = format!("pjt_{}", uuid::Uuid::new_v4().simple());
    let url = match url.split_once('?') {
        Some((base, q)) => format!("{}/{fresh}?{q}", base.rsplit_once('/').unwrap().0),
        None => format!("{}/{fresh}", url.rsplit_once('/').unwrap().0),
    };
    let u = url.clone();
    let out = tokio::task::spawn_blocking(move || perfjournal(&u, &["migrate"], ""))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    pool.close().await;
    let admin = sqlx::PgPool::connect(&url.replace(&fresh, "postgres"))
        .await
        .unwrap();
    sqlx::query(&format!("DROP DATABASE \"{fresh}\" WITH (FORCE)"))
        .execute(&admin)
        .await
        .unwrap();
}

/// `TOKEN=$(perfjournal token create …)` in embedded mode: the cluster's start-up log goes to
/// stderr (without colour codes, since stderr is not a terminal), so stdout is the token alone.
#[test]
fn embedded_mode_prints_only_the_token_on_stdout() {
    let dir = tempfile::Builder::new()
        .prefix("pj-cli-embedded-")
        .tempdir()
        .unwrap();
    let data = dir.path().join("data");
    let run = |args: &[&str], stdin: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfjournal"));
        cmd.env_remove("DATABASE_URL")
            .env("PERFJOURNAL_DATA_DIR", &data)
            .env("RUST_LOG", "info");
        run(cmd, args, stdin)
    };
    let added = run(
        &["user", "add", "erin", "--role", "editor"],
        "a long enough password\n",
    );
    let stderr = String::from_utf8_lossy(&added.stderr).to_string();
    assert!(added.status.success(), "{stderr}");
    assert!(stderr.contains("embedded PostgreSQL"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr}"
    );
    let out = run(&["token", "create", "--user", "erin"], "");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "stdout: {stdout:?}");
    assert!(!stdout.contains("INFO") && !stdout.contains("PostgreSQL"));
    assert!(stdout.trim().len() >= 20, "stdout: {stdout:?}");
    // Stop the cluster the CLI left running (a later command adopts it; nothing else will).
    let cluster = perfjournal::db::EmbeddedCluster::start(&data).unwrap();
    cluster.stop().unwrap();
    if let Some(home) = cluster.cluster_dir().parent() {
        if !home.starts_with(dir.path()) {
            let _ = std::fs::remove_dir_all(home);
        }
    }
}

/// Asks `GET /healthz` on `addr` over a plain connection; the status line, if any.
fn healthz(addr: &str) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    s.write_all(
        format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_string)
}

/// README's configuration table: `perfjournal --data-dir D --bind ADDR` serves, without
/// naming `serve`; the same flags before `serve` work too, and a server flag given to
/// another subcommand is refused with a message naming it.
#[tokio::test]
async fn server_flags_work_without_serve() {
    let (_pool, url) = fresh_db().await;
    let dir = tempfile::Builder::new()
        .prefix("pj-cli-bind-")
        .tempdir()
        .unwrap();
    let data = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        for before_serve in [false, true] {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let addr = format!("127.0.0.1:{port}");
            let mut args = vec![
                "--data-dir".to_string(),
                data.display().to_string(),
                "--bind".to_string(),
                addr.clone(),
            ];
            if before_serve {
                args.push("serve".to_string());
            }
            let mut child = Command::new(env!("CARGO_BIN_EXE_perfjournal"))
                .env("DATABASE_URL", &url)
                .env("RUST_LOG", "warn")
                .env_remove("PERFJOURNAL_BIND")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let started = std::time::Instant::now();
            let mut status = None;
            while started.elapsed() < std::time::Duration::from_secs(60) {
                if let Some(line) = healthz(&addr) {
                    status = Some(line);
                    break;
                }
                if let Some(exit) = child.try_wait().unwrap() {
                    let out = child.wait_with_output().unwrap();
                    panic!(
                        "{args:?} exited with {exit}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            child.kill().unwrap();
            child.wait().unwrap();
            let status = status.unwrap_or_else(|| panic!("{args:?}: no answer on {addr}"));
            assert!(status.contains(" 200 "), "{args:?}: {status}");
            assert!(data.join("blobs").is_dir(), "uploads go under --data-dir");
        }
        let refused = perfjournal(&url, &["--bind", "127.0.0.1:1", "migrate"], "");
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("--bind only set the server"), "{stderr}");
    })
    .await
    .unwrap();
}

/// An install from before the session table was a migration: the session store made the
/// table at start-up. Migrating it again keeps the table and the sessions in it.
#[tokio::test]
async fn a_session_table_made_by_the_session_store_is_kept_by_the_migration() {
    let (pool, _url) = fresh_db().await;
    // Back to the older state: the table as the session store creates it, holding a
    // session, and the migration that now makes it not yet run.
    sqlx::query("DROP SCHEMA tower_sessions CASCADE")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 20261207000000")
        .execute(&pool)
        .await
        .unwrap();
    tower_sessions_sqlx_store::PostgresStore::new(pool.clone())
        .migrate()
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO tower_sessions.session (id, data, expiry_date) \
         VALUES ('kept', '\\x00', now() + interval '1 hour')",
    )
    .execute(&pool)
    .await
    .unwrap();

    perfjournal::db::migrate(&pool).await.unwrap();

    let kept: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session WHERE id = 'kept'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        kept, 1,
        "the session saved before the migration is still there"
    );
    let ran: bool =
        sqlx::query_scalar("SELECT success FROM _sqlx_migrations WHERE version = 20261207000000")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(ran);
}
