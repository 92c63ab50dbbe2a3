//! The real server for end-to-end benchmarks: the release binary started as a child
//! process on a scratch database, driven over HTTP the way a user's client drives it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgPool};

/// The release binary running as a child process on a database, its log in a file.
pub struct Process {
    pub base: String,
    pub pid: u32,
    pub client: reqwest::Client,
    pub started: Instant,
    child: tokio::process::Child,
    log: PathBuf,
    data: tempfile::TempDir,
}

impl Process {
    /// Starts the server on `db_url` with its data directory under `work` and the extra
    /// environment given; waits until `/healthz` answers.
    pub async fn spawn(db_url: &str, work: &Path, env: &[(&str, &str)]) -> anyhow::Result<Process> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        // `PJ_SERVER_DIR` puts the server's data (its blob store) elsewhere, e.g. on the
        // slowed disk of `benches/slow-disk.sh`.
        let parent = std::env::var_os("PJ_SERVER_DIR").map_or(work.to_path_buf(), PathBuf::from);
        let data = tempfile::Builder::new()
            .prefix("pj-bench-server-")
            .tempdir_in(parent)?;
        let log = data.path().join("server.log");
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"));
        cmd.env("DATABASE_URL", db_url)
            .env("PERFJOURNAL_BIND", format!("127.0.0.1:{port}"))
            .env("PERFJOURNAL_DATA_DIR", data.path())
            .env("PERFJOURNAL_LOG_JSON", "true")
            // The worker's timing lines; not the slow-statement warnings of queries timed on purpose.
            .env(
                "RUST_LOG",
                "warn,sqlx::query=error,perfjournal_store::artifacts=info",
            )
            .env("RUST_BACKTRACE", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn()?;
        let pid = child.id().unwrap_or(0);
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let started = Instant::now();
        while !client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(60),
                "the server did not start; its log: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Process {
            base,
            pid,
            client,
            started,
            child,
            log,
            data,
        })
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// A running server with a signed-in API token, on a database of its own that is
/// dropped when the server goes.
pub struct Server {
    pub process: Process,
    pub token: String,
    pub pool: PgPool,
    /// The scratch database's URL (for psql).
    pub db_url: String,
    admin: PgConnectOptions,
    db_name: String,
}

impl Server {
    /// Creates a scratch database (migrated, with an admin and a token), then starts the
    /// release binary on it (see [`Process::spawn`]).
    pub async fn start(url: &str, work: &Path, env: &[(&str, &str)]) -> anyhow::Result<Server> {
        let admin = PgConnectOptions::from_str(url)?;
        let db_name = format!("pj_bench_{}", uuid::Uuid::new_v4().simple());
        let pool = perfjournal::db::connect(admin.clone().database(&db_name)).await?;
        let user = perfjournal::auth::users::create(
            &pool,
            "bench",
            perfjournal::auth::password::decoy_hash(),
            perfjournal::auth::Role::Admin,
            false,
        )
        .await
        .map_err(|e| anyhow::anyhow!("creating the bench user: {e}"))?;
        let (_, token) = perfjournal::auth::tokens::create(&pool, user.id, "bench").await?;
        let db_url = crate::common::url_with_database(url, &db_name);
        let process = Process::spawn(&db_url, work, env).await?;
        Ok(Server {
            process,
            token,
            pool,
            db_url,
            admin,
            db_name,
        })
    }

    /// Resets the server's peak resident memory (VmHWM), so the next reading covers
    /// only what follows.
    pub fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.process.pid), "5");
    }

    /// (VmRSS, VmHWM) of the server, MiB.
    pub fn rss_mib(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.pid))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
                .map_or(f64::NAN, |kb| kb / 1024.0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Uploads a file as a raw body streamed from disk (as `curl --data-binary @file`
    /// would); returns the artifact id and the time until the server answered.
    pub async fn upload(&self, path: &Path, name: &str) -> anyhow::Result<(i64, Duration)> {
        let t = Instant::now();
        let file = tokio::fs::File::open(path).await?;
        let len = file.metadata().await?.len();
        let body =
            reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::with_capacity(file, 1 << 20));
        let reply = self
            .process
            .client
            .post(format!(
                "{}/api/v1/artifacts?name={name}",
                self.process.base
            ))
            .bearer_auth(&self.token)
            .header("content-type", "application/octet-stream")
            .header("content-length", len)
            .body(body)
            .send()
            .await?;
        let status = reply.status();
        let v: Value = serde_json::from_str(&reply.text().await?)
            .map_err(|e| anyhow::anyhow!("upload answered {status} with a non-JSON body: {e}"))?;
        anyhow::ensure!(status.is_success(), "upload answered {status}: {v}");
        let id = v["id"]
            .as_i64()
            .ok_or_else(|| anyhow::anyhow!("no id in {v}"))?;
        Ok((id, t.elapsed()))
    }

    /// Polls the artifact every 5 ms until its analysis ends (a coarser poll adds half its period to
    /// the time measured); the artifact as JSON.
    pub async fn wait_analyzed(&self, id: i64, timeout: Duration) -> anyhow::Result<Value> {
        let t = Instant::now();
        loop {
            let v = self.get_json(&format!("/api/v1/artifacts/{id}")).await?;
            match v["status"].as_str() {
                Some("queued") | Some("analyzing") => {}
                Some("done") => return Ok(v),
                other => {
                    let log = std::fs::read_to_string(&self.process.log).unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(20).collect();
                    anyhow::bail!(
                        "the analysis ended {other:?}: {}\nthe server's last log lines:\n{}",
                        v["error"],
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    )
                }
            }
            anyhow::ensure!(t.elapsed() < timeout, "no result after {timeout:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn get_json(&self, path: &str) -> anyhow::Result<Value> {
        let reply = self
            .process
            .client
            .get(format!("{}{path}", self.process.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let status = reply.status();
        let text = reply.text().await?;
        anyhow::ensure!(status.is_success(), "GET {path}: {status}: {text}");
        Ok(serde_json::from_str(&text)?)
    }

    /// The worker's timing line for an artifact (`artifact analyzed`, JSON log): its
    /// fields, e.g. `parse_s`, `db_s`.
    pub fn timing(&self, id: i64) -> Option<Value> {
        let log = std::fs::read_to_string(&self.process.log).ok()?;
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["fields"]["message"] == "artifact analyzed")
            .find(|v| v["fields"]["id"] == id)
            .map(|v| v["fields"].clone())
    }

    /// Bytes the blob store holds on disk (finished blobs, not uploads in progress):
    /// what the uploads so far cost the disk, after compression.
    pub fn blob_store_bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let mut total = 0;
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                match entry.metadata() {
                    Ok(m) if m.is_dir() => total += walk(&path),
                    Ok(m) => total += m.len(),
                    Err(_) => {}
                }
            }
            total
        }
        walk(&self.process.data_dir().join("blobs").join("sha256"))
    }

    /// Deletes an artifact through the API (its rows, and its blob when no other row
    /// uses it), so the next upload of the same file is stored and analysed anew.
    pub async fn delete_artifact(&self, id: i64) -> anyhow::Result<()> {
        let reply = self
            .process
            .client
            .delete(format!("{}/api/v1/artifacts/{id}", self.process.base))
            .bearer_auth(&self.token)
            .send()
            .await?;
        anyhow::ensure!(
            reply.status().is_success(),
            "deleting artifact {id} answered {}",
            reply.status()
        );
        Ok(())
    }

    /// Stops the server and drops its database.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.process.kill().await;
        self.pool.close().await;
        let mut conn =
            sqlx::PgConnection::connect_with(&self.admin.clone().database("postgres")).await?;
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            self.db_name
        ))
        .execute(&mut conn)
        .await?;
        Ok(())
    }
}

/// Reads a whole file once, so it is in the page cache for the next reader.
pub fn warm(path: &Path) -> anyhow::Result<()> {
    let mut f = std::fs::File::open(path)?;
    std::io::copy(&mut f, &mut std::io::sink())?;
    Ok(())
}

/// A Python virtual environment under `dir` with `packages` installed from PyPI (made
/// once, reused after); its python, or why it could not be made.
pub fn python_venv(dir: &Path, packages: &[&str]) -> Result<PathBuf, String> {
    let python = dir.join("bin/python");
    let stamp = dir.join(format!(
        "installed-{}",
        packages.join("+").replace('/', "_")
    ));
    if python.exists() && stamp.exists() {
        return Ok(python);
    }
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ))
        }
    };
    println!(
        "making {} with {} (once) …",
        dir.display(),
        packages.join(" ")
    );
    run(std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(dir))?;
    run(std::process::Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(packages))?;
    std::fs::write(&stamp, "").map_err(|e| e.to_string())?;
    Ok(python)
}
