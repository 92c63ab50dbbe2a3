//! Keeps the embedded PostgreSQL running: a task that notices its postmaster is gone
//! (killed, crashed, out of memory) and starts it again with backoff, and the record of
//! what happened that `/healthz` reports.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::EmbeddedCluster;

/// How often the postmaster is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The first wait between failed restarts; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What the supervisor knows about the embedded cluster, shared with `/healthz`.
#[derive(Debug, Default)]
pub struct ClusterHealth {
    inner: Mutex<HealthRecord>,
}

/// A copy of the record at one moment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HealthRecord {
    /// True from noticing the postmaster gone until a restart succeeded.
    pub restarting: bool,
    /// Successful restarts since this process started.
    pub restarts: u64,
    /// When the last successful restart finished.
    pub last_restart: Option<DateTime<Utc>>,
    /// The failure being recovered from now (of the postmaster, or of a restart attempt);
    /// cleared once a restart succeeds, so a monitor never reads an old error as current.
    /// One line: `/healthz` is public, so the server log's tail stays in the app's log.
    pub last_error: Option<String>,
    /// What the last successful restart recovered from (the error it cleared).
    pub last_restart_reason: Option<String>,
}

impl ClusterHealth {
    pub fn snapshot(&self) -> HealthRecord {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HealthRecord> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Watches `cluster` until aborted: every second it checks that the postmaster named in
/// the cluster's lock file is alive; when it is not, it starts the server again, waiting
/// 0.5 s, 1 s, 2 s … (at most 30 s) between failed attempts. Every step is logged.
pub async fn supervise(cluster: EmbeddedCluster, health: Arc<ClusterHealth>) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let c = cluster.clone();
        let alive = tokio::task::spawn_blocking(move || c.postmaster_alive())
            .await
            .unwrap_or(true);
        if alive {
            continue;
        }
        let gone = match cluster.postmaster_pid() {
            Some(pid) => format!("the embedded PostgreSQL (postmaster pid {pid}) is gone"),
            None => "the embedded PostgreSQL is not running (no postmaster.pid)".to_string(),
        };
        tracing::error!(dir = %cluster.cluster_dir().display(), "{gone}; restarting it");
        {
            let mut h = health.lock();
            h.restarting = true;
            h.last_error = Some(gone);
        }
        restart(&cluster, &health).await;
    }
}

/// Starts the server until it runs, with backoff between failed attempts.
async fn restart(cluster: &EmbeddedCluster, health: &ClusterHealth) {
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 1u32;
    loop {
        let c = cluster.clone();
        let result = tokio::task::spawn_blocking(move || {
            // Another process (a second app on the same data dir) may have started it.
            if c.postmaster_alive() {
                return Ok(());
            }
            c.start_server()
        })
        .await;
        let error = match result {
            Ok(Ok(())) => {
                let mut h = health.lock();
                h.restarting = false;
                h.restarts += 1;
                h.last_restart = Some(Utc::now());
                h.last_restart_reason = h.last_error.take();
                tracing::warn!(
                    attempt,
                    restarts = h.restarts,
                    "embedded PostgreSQL restarted"
                );
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("restart task: {e}"),
        };
        tracing::error!(
            attempt,
            retry_in_ms = backoff.as_millis() as u64,
            error = %error,
            "restarting the embedded PostgreSQL failed"
        );
        health.lock().last_error = Some(format!(
            "restart attempt {attempt} failed: {}",
            first_line(&error)
        ));
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        attempt += 1;
    }
}

/// The first telling line of an error, at most 200 characters: pg_ctl's warning about the
/// dead server's stale lock file ("another server might be running; trying to start
/// server anyway") comes before the reason it gave up.
fn first_line(error: &str) -> String {
    let mut lines = error.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let line = if first.contains("trying to start server anyway") {
        lines.next().unwrap_or(first)
    } else {
        first
    };
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::first_line;

    #[test]
    fn the_reported_error_skips_pg_ctls_stale_lock_file_warning() {
        let error = "pg_ctl start failed: pg_ctl: another server might be running; trying to \
                     start server anyway\npg_ctl: could not start server\nserver log: FATAL: x";
        assert_eq!(first_line(error), "pg_ctl: could not start server");
        assert_eq!(first_line("one\ntwo"), "one");
        assert_eq!(first_line(&"x".repeat(500)).len(), 200);
    }
}
