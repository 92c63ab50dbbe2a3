//! Test harness: a real PostgreSQL (DATABASE_URL, or the same embedded cluster code the
//! app uses, in a temporary directory), a fresh database per test, and a small client
//! that drives `app(state)` without a port, keeping cookies like a browser.
#![allow(dead_code)]

pub mod browser;
pub mod bubble_data;
pub mod incident;
pub mod oidc;
#[path = "../../crates/core/src/test_skip.rs"]
pub mod test_skip;
pub use test_skip::skip;
pub mod seeded;
pub mod tables;
pub mod uploads;

use std::str::FromStr;
use std::sync::{Mutex, OnceLock};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use perfjournal::config::Config;
use perfjournal::db::EmbeddedCluster;
use perfjournal::state::AppState;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;
use tower::ServiceExt;

struct Server {
    options: PgConnectOptions,
    /// A URL form of the options, for running the CLI binary against the same server.
    url_base: String,
}

static SERVER: OnceLock<Server> = OnceLock::new();
static CREATED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static CLUSTER: Mutex<Option<(EmbeddedCluster, std::path::PathBuf)>> = Mutex::new(None);
/// Per-test blob directories, removed when the test binary exits.
static BLOB_DIRS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

extern "C" fn cleanup_at_exit() {
    if let Ok(mut dirs) = BLOB_DIRS.lock() {
        for dir in dirs.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let names: Vec<String> = CREATED
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    if let Ok(mut guard) = CLUSTER.lock() {
        if let Some((cluster, dir)) = guard.take() {
            let _ = cluster.stop();
            // A cluster kept outside the temp dir (its user could not reach it) goes too.
            if let Some(home) = cluster.cluster_dir().parent() {
                if !home.starts_with(&dir) {
                    let _ = std::fs::remove_dir_all(home);
                }
            }
            let _ = std::fs::remove_dir_all(dir);
            return;
        }
    }
    let Some(server) = SERVER.get() else { return };
    if names.is_empty() {
        return;
    }
    let options = server.options.clone().database("postgres");
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        use sqlx::Connection;
        if let Ok(mut conn) = sqlx::PgConnection::connect_with(&options).await {
            for name in names {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut conn)
                    .await;
            }
        }
    });
}

fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe { libc::atexit(cleanup_at_exit) };
        if let Ok(url) = std::env::var("DATABASE_URL") {
            let options = PgConnectOptions::from_str(&url).expect("DATABASE_URL parses");
            let base = url.split('?').next().unwrap_or(&url);
            let base = base
                .rsplit_once('/')
                .map(|(b, _)| b.to_string())
                .unwrap_or(base.into());
            return Server {
                options,
                url_base: base,
            };
        }
        let dir = tempfile::Builder::new()
            .prefix("pj-test-")
            .tempdir()
            .expect("temp dir")
            .keep();
        // When we are root the server runs as the `postgres` user; if it cannot reach this
        // private (mode 700) dir, the cluster start keeps the cluster where it can.
        let cluster = EmbeddedCluster::start(&dir).expect(
            "DATABASE_URL is unset, so the tests start a private PostgreSQL cluster; that failed",
        );
        let options = cluster.connect_options("postgres");
        let socket = cluster.socket_dir().display().to_string();
        let url_base = format!(
            "postgres://{}@localhost",
            perfjournal::db::embedded::SUPERUSER
        );
        *CLUSTER.lock().unwrap() = Some((cluster, dir));
        Server {
            options,
            url_base: format!("{url_base}|{socket}"),
        }
    })
}

/// A fresh, migrated database for one test.
pub async fn fresh_db() -> (PgPool, String) {
    let server = server();
    let name = format!("pjt_{}", uuid::Uuid::new_v4().simple());
    CREATED.lock().unwrap().push(name.clone());
    let pool = perfjournal::db::connect(server.options.clone().database(&name))
        .await
        .expect("create and migrate a test database");
    let url = match server.url_base.split_once('|') {
        Some((base, socket)) => format!("{base}/{name}?host={socket}"),
        None => format!("{}/{name}", server.url_base),
    };
    (pool, url)
}

pub struct TestApp {
    pub app: Router,
    pub state: AppState,
    pub pool: PgPool,
    pub database_url: String,
    pub blob_dir: std::path::PathBuf,
    pub cookie: Option<String>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
    }

    pub fn html(&self) -> scraper::Html {
        scraper::Html::parse_document(&self.body)
    }

    /// Texts of the elements matching a CSS selector.
    pub fn select(&self, css: &str) -> Vec<String> {
        let sel = scraper::Selector::parse(css).expect("valid selector");
        self.html()
            .select(&sel)
            .map(|e| e.text().collect::<String>().trim().to_string())
            .collect()
    }

    /// An attribute of each element matching a CSS selector.
    pub fn select_attr(&self, css: &str, attr: &str) -> Vec<String> {
        let sel = scraper::Selector::parse(css).expect("valid selector");
        self.html()
            .select(&sel)
            .filter_map(|e| e.value().attr(attr).map(str::to_string))
            .collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A fresh app with an admin (admins are editors too) signed in, and one investigation
/// opened through the pages; returns the investigation's address.
pub async fn app_with_investigation(title: &str) -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let r = app
        .post_form(
            "/investigations",
            &[
                ("title", title),
                ("service", "chat"),
                ("symptom", "Alert fired at 14:05"),
                ("tags", "ttft, vllm"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let url = r.location().unwrap().to_string();
    (app, url)
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Config::default()).await
}

pub async fn spawn_app_with(config: Config) -> TestApp {
    let (pool, database_url) = fresh_db().await;
    let blob_dir = tempfile::Builder::new()
        .prefix("pj-blobs-")
        .tempdir()
        .unwrap()
        .keep();
    BLOB_DIRS.lock().unwrap().push(blob_dir.clone());
    app_on(pool, database_url, blob_dir, config)
}

/// The app over a given database and blob directory (tests that bring their own server
/// or storage: a cluster they stop and start, a tiny file system).
pub fn app_on(
    pool: PgPool,
    database_url: String,
    blob_dir: std::path::PathBuf,
    config: Config,
) -> TestApp {
    let blobs = perfjournal::storage::BlobStore::local(&blob_dir).unwrap();
    let state = AppState::new(pool.clone(), config, blobs);
    TestApp {
        app: perfjournal::server::app(state.clone()),
        state,
        pool,
        database_url,
        blob_dir,
        cookie: None,
    }
}

impl TestApp {
    /// Sends a request as this client (with its session cookie), keeping any new cookie.
    pub async fn send(&mut self, mut req: Request<Body>) -> Reply {
        // The server's background indexer keeps search within a second of the database;
        // here it runs before each request instead, so tests see every earlier write.
        // (When the database is down, as in the fault tests, the request meets that itself.)
        let _ = self.state.search.catch_up(&self.pool).await;
        if let Some(c) = &self.cookie {
            if !req.headers().contains_key(header::COOKIE) {
                req.headers_mut().insert(header::COOKIE, c.parse().unwrap());
            }
        }
        let res = self
            .app
            .clone()
            .oneshot(req)
            .await
            .expect("infallible router");
        let status = res.status();
        let headers = res.headers().clone();
        for v in headers.get_all(header::SET_COOKIE) {
            let v = v.to_str().unwrap();
            let pair = v.split(';').next().unwrap().to_string();
            if v.contains("Max-Age=0") || pair.ends_with('=') {
                self.cookie = None;
            } else {
                self.cookie = Some(pair);
            }
        }
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Reply {
        self.send(Request::get(path).body(Body::empty()).unwrap())
            .await
    }

    /// The CSRF token of this client's session (from the hidden field of a page).
    pub async fn csrf(&mut self) -> String {
        let page = self.get("/login").await;
        let page = match page.location() {
            Some("/setup") => self.get("/setup").await,
            Some(_) => self.get("/settings").await,
            None => page,
        };
        let sel = scraper::Selector::parse("input[name=_csrf]").unwrap();
        let html = page.html();
        html.select(&sel)
            .next()
            .and_then(|e| e.value().attr("value"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no CSRF field on the page: {}", page.body))
    }

    /// Posts a form with this session's CSRF token added.
    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Reply {
        let token = self.csrf().await;
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("_csrf", &token));
        self.post_form_raw(path, &all).await
    }

    /// Posts exactly these fields (no CSRF token added).
    pub async fn post_form_raw(&mut self, path: &str, fields: &[(&str, &str)]) -> Reply {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let req = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        self.send(req).await
    }

    /// Creates the first admin through the setup page; the client is then signed in.
    pub async fn setup_admin(&mut self, name: &str) {
        let r = self
            .post_form(
                "/setup",
                &[
                    ("name", name),
                    ("password", PASSWORD),
                    ("confirm", PASSWORD),
                ],
            )
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "setup failed: {}", r.body);
    }

    /// Adds a user directly (as an admin would) and returns its id.
    /// The id of the user with this name.
    pub async fn user_id(&self, name: &str) -> i64 {
        sqlx::query_scalar("SELECT id FROM users WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    pub async fn add_user(&self, name: &str, role: perfjournal::auth::Role) -> i64 {
        let hash = perfjournal::auth::password::hash(PASSWORD.into())
            .await
            .unwrap();
        perfjournal::auth::users::create(&self.pool, name, &hash, role, false)
            .await
            .unwrap()
            .id
    }

    pub async fn login(&mut self, name: &str) -> Reply {
        self.post_form("/login", &[("name", name), ("password", PASSWORD)])
            .await
    }

    /// Another client (no cookies) on the same app and database.
    pub fn new_client(&self) -> TestApp {
        TestApp {
            app: self.app.clone(),
            state: self.state.clone(),
            pool: self.pool.clone(),
            database_url: self.database_url.clone(),
            blob_dir: self.blob_dir.clone(),
            cookie: None,
        }
    }

    pub async fn api_token(&self, user: &str) -> String {
        let (u, _) = perfjournal::auth::users::credentials(&self.pool, user)
            .await
            .unwrap()
            .unwrap();
        perfjournal::auth::tokens::create(&self.pool, u.id, "test")
            .await
            .unwrap()
            .1
    }

    /// Runs the analysis queue to the end without the background worker; how many it did.
    pub async fn drain_queue(&self) -> usize {
        let store = self.state.artifacts();
        let mut n = 0;
        while perfjournal::artifacts::ingest::process_next(&store)
            .await
            .unwrap()
        {
            n += 1;
        }
        // As the worker does on each pass: trace sets whose ranks have all finished.
        perfjournal::trace_sets::settle_all(&self.pool)
            .await
            .unwrap();
        n
    }

    /// Compresses the stored uploads whose analysis is over, as the background
    /// compactor does; how many contents it compressed.
    pub async fn compact_blobs(&self) -> usize {
        perfjournal::artifacts::compact::compact_pending(&self.state.artifacts())
            .await
            .unwrap()
    }

    /// Opens an investigation through the API and returns its id.
    pub async fn open_investigation(&mut self, token: &str, title: &str) -> i64 {
        let r = self
            .api(
                "POST",
                "/api/v1/investigations",
                token,
                Some(serde_json::json!({ "title": title })),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.json()["id"].as_i64().unwrap()
    }

    /// Serves the app on a loopback port, for clients that need a real socket (the CLI,
    /// a browser, raw TCP); abort the handle to stop it.
    pub async fn serve_on_port(&self) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = self.app.clone();
        let server = tokio::spawn(async move {
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
            .unwrap();
        });
        (addr, server)
    }

    pub async fn api(
        &mut self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<serde_json::Value>,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let saved = self.cookie.take();
        let reply = self.send(req.body(body).unwrap()).await;
        self.cookie = saved;
        reply
    }
}

pub const PASSWORD: &str = "correct horse battery";

/// A valid capacity proposal (chat-api at 45 req/s on one H100), as the API takes it.
pub fn chat_api_proposal() -> serde_json::Value {
    serde_json::json!({
        "title": "chat-api on H100",
        "question": "serve chat-api at 45 req/s with p95 TTFT < 800 ms and p99 ITL < 60 ms",
        "model": "llama-3.1-8b", "gpu_type": "h100-sxm", "gpus_per_replica": 1, "tp": 1,
        "weight_dtype": "bf16", "kv_dtype": "bf16", "engine": "vllm", "engine_version": "0.6.3",
        "max_num_seqs": 256, "max_num_batched_tokens": 1536, "arrival_rate": 45,
        "prompt_tokens_mean": 1500, "prompt_tokens_p95": 4000,
        "output_tokens_mean": 300, "output_tokens_p95": 800,
        "shared_prefix_tokens": 600, "prefix_hit_rate": 0.8,
        "slo_ttft_p95_ms": 800, "slo_itl_p99_ms": 60, "gpu_hour_usd": 2.5, "headroom": 0.2
    })
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An admin "ada" (password [`PASSWORD`]) made straight in the database, and an API token
/// of hers, for tests that start the server binary.
pub async fn admin_with_token(pool: &PgPool, label: &str) -> String {
    let hash = perfjournal::auth::password::hash(PASSWORD.into())
        .await
        .unwrap();
    let user =
        perfjournal::auth::users::create(pool, "ada", &hash, perfjournal::auth::Role::Admin, false)
            .await
            .unwrap();
    perfjournal::auth::tokens::create(pool, user.id, label)
        .await
        .unwrap()
        .1
}

/// The server binary running as a process of its own on a free port, over `database_url`
/// with a data directory of its own; killed when dropped.
pub struct ServerProcess {
    pub child: tokio::process::Child,
    pub base: String,
    pub pid: u32,
    pub data: tempfile::TempDir,
}

impl ServerProcess {
    /// Starts it (with `env` added) and waits until `/healthz` answers.
    pub async fn start(database_url: &str, env: &[(&str, &str)]) -> ServerProcess {
        let port = free_port();
        let data = tempfile::Builder::new()
            .prefix("pj-server-")
            .tempdir()
            .unwrap();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"));
        cmd.env("DATABASE_URL", database_url)
            .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
            .env("PERFJOURNAL_DATA_DIR", data.path())
            .env("RUST_LOG", "warn")
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Its log goes to a file the test can read (`log`), not into the test's output.
        let log = std::fs::File::create(data.path().join("server.log")).unwrap();
        cmd.stdout(log.try_clone().unwrap()).stderr(log);
        let child = cmd.spawn().expect("start the server");
        let pid = child.id().expect("running");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let started = std::time::Instant::now();
        while !http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(started.elapsed().as_secs() < 30, "the server did not start");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        ServerProcess {
            child,
            base,
            pid,
            data,
        }
    }
}

impl ServerProcess {
    /// What the server has logged so far (stdout and stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("server.log")).unwrap_or_default()
    }
}

/// Peak resident memory (VmHWM) of a process, `self` or a pid, in MiB.
pub fn peak_rss_mib(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// The value a form field holds on a page (a textarea's text, an input's value).
pub fn form_value(reply: &Reply, css: &str) -> String {
    let html = reply.html();
    let sel = scraper::Selector::parse(css).unwrap();
    let el = html
        .select(&sel)
        .next()
        .unwrap_or_else(|| panic!("no {css}"));
    match el.value().name() {
        "textarea" => el.text().collect(),
        _ => el.value().attr("value").unwrap_or_default().to_string(),
    }
}

/// The edit form's fields as they are, with some replaced.
pub fn journal_edit_fields(
    page: &Reply,
    changes: &[(&str, &str)],
    action: &str,
) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = [
        "title",
        "date",
        "symptom",
        "workload",
        "baseline",
        "diagnosis",
        "change",
        "result",
        "quality",
        "effort",
        "version",
    ]
    .iter()
    .map(|n| {
        let css = format!("[name={n}]");
        (n.to_string(), form_value(page, &css))
    })
    .collect();
    for (k, v) in changes {
        fields.iter_mut().find(|(n, _)| n == k).unwrap().1 = v.to_string();
    }
    fields.push(("action".into(), action.into()));
    fields
}
