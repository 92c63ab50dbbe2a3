//! Which PostgreSQL to use (DATABASE_URL or the embedded cluster), the pool, migrations.

pub mod embedded;
pub mod supervisor;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

pub use embedded::EmbeddedCluster;

/// The database name the embedded cluster holds the app's data in.
pub const EMBEDDED_DATABASE: &str = "perfjournal";

/// An open pool, plus the embedded cluster when the app runs its own.
pub struct Database {
    pub pool: PgPool,
    pub cluster: Option<EmbeddedCluster>,
}

impl Database {
    /// Opens the database `database_url` names (or, when it is `None`, the embedded
    /// cluster under `data_dir`), creating it if needed, and migrates it.
    pub async fn open(database_url: Option<&str>, data_dir: &Path) -> anyhow::Result<Database> {
        let (options, cluster) = match database_url {
            Some(url) => (
                PgConnectOptions::from_str(url)
                    .context("DATABASE_URL is not a valid PostgreSQL URL")?,
                None,
            ),
            None => {
                let dir = data_dir.to_path_buf();
                let cluster = tokio::task::spawn_blocking(move || EmbeddedCluster::start(&dir))
                    .await
                    .context("embedded cluster start-up task")??;
                (cluster.connect_options(EMBEDDED_DATABASE), Some(cluster))
            }
        };
        let pool = match connect(options).await {
            Ok(pool) => pool,
            Err(e) => {
                if let Some(c) = &cluster {
                    stop_cluster(c).await;
                }
                return Err(e);
            }
        };
        Ok(Database { pool, cluster })
    }

    /// Closes the pool, then stops the embedded cluster if this process started it.
    pub async fn close(self) {
        self.pool.close().await;
        if let Some(cluster) = &self.cluster {
            stop_cluster(cluster).await;
        }
    }
}

async fn stop_cluster(cluster: &EmbeddedCluster) {
    if !cluster.started_here() {
        return;
    }
    let dir = cluster.cluster_dir().to_path_buf();
    let c = cluster.clone();
    let result = tokio::task::spawn_blocking(move || c.stop()).await;
    match result
        .map_err(|e| embedded::ClusterError::Command {
            what: "pg_ctl stop".into(),
            detail: e.to_string(),
        })
        .and_then(|r| r)
    {
        Ok(()) => tracing::info!(dir = %dir.display(), "embedded PostgreSQL stopped"),
        Err(e) => tracing::error!(error = %e, "stopping the embedded PostgreSQL"),
    }
}

/// Creates the database if missing, runs migrations, returns a pool.
pub async fn connect(options: PgConnectOptions) -> anyhow::Result<PgPool> {
    ensure_database(&options).await?;
    let pool = pool_options()
        .connect_with(
            options
                .clone()
                .log_statements(tracing::log::LevelFilter::Trace),
        )
        .await
        .context("connecting to PostgreSQL")?;
    migrate(&pool).await?;
    Ok(pool)
}

/// The pool settings: a short acquire timeout, so an exhausted pool is answered with
/// 503 + Retry-After rather than a hung request.
pub fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
}

/// Creates the database named in `options` when it does not exist, connecting to the
/// server's `postgres` maintenance database to do so.
pub async fn ensure_database(options: &PgConnectOptions) -> anyhow::Result<()> {
    let name = options.get_database().unwrap_or("postgres").to_string();
    let maintenance = options.clone().database("postgres");
    let mut conn = sqlx::PgConnection::connect_with(&maintenance)
        .await
        .context("connecting to the PostgreSQL server")?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        match sqlx::query(&format!("CREATE DATABASE {quoted}"))
            .execute(&mut conn)
            .await
        {
            Ok(_) => tracing::info!(database = %name, "created database"),
            // Another process created it between our check and now.
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P04") => {}
            Err(e) => return Err(e).context(format!("creating database {name}")),
        }
    }
    conn.close().await.ok();
    Ok(())
}

/// Runs the app's migrations (the session store's table is one of them).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::migrate!("../../migrations")
        .run(pool)
        .await
        .context("running migrations")?;
    Ok(())
}

/// Claims one run of the periodic job `name` for this replica: true when no replica ran it
/// within `every` (the claim records now as its last run), false when another already did.
/// Atomic, so of several replicas ticking at once exactly one gets the run.
pub async fn claim_periodic(
    pool: &PgPool,
    name: &str,
    every: std::time::Duration,
) -> sqlx::Result<bool> {
    let claimed: Option<String> = sqlx::query_scalar(
        "INSERT INTO periodic_jobs (name, last_run) VALUES ($1, now())
         ON CONFLICT (name) DO UPDATE SET last_run = now()
           WHERE periodic_jobs.last_run <= now() - make_interval(secs => $2)
         RETURNING name",
    )
    .bind(name)
    .bind(every.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    Ok(claimed.is_some())
}
