//! Live captures: the server scrapes a `/metrics` URL at the start of a window, every
//! interval, and at the end, and stores the scrapes as one Prometheus artifact (the
//! capture file format is in `core::analyze::prometheus`). The request answers at once;
//! a background task does the scraping, with a heartbeat on the artifact row so a
//! capture whose process died ends `failed` (see [`fail_abandoned`]) instead of
//! `capturing` for ever. Only `host:port` pairs on the admin's allowlist are fetched.

pub mod scrape;

use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::artifacts::{ingest, insert_row, ArtifactRow, ArtifactStore, Owner};
use crate::core::analyze::{Kind, Options};
use crate::core::capture::{self, Target, Window};
use crate::core::FieldError;
use crate::storage::StoreError;

/// A checked capture request.
#[derive(Clone, Debug)]
pub struct CaptureRequest {
    pub url: reqwest::Url,
    pub window: Window,
}

/// The parts of a URL the allowlist is checked against.
pub fn target_of(url: &reqwest::Url) -> Target {
    Target {
        scheme: url.scheme().to_string(),
        host: url.host_str().unwrap_or("").to_ascii_lowercase(),
        port: url.port_or_known_default().unwrap_or(0),
        has_credentials: !url.username().is_empty() || url.password().is_some(),
    }
}

/// Reads the three fields as typed (the page's form and the API's JSON both arrive
/// here as text), checking the URL against `allowed`. Every problem is reported.
pub fn parse_request(
    url: &str,
    seconds: &str,
    interval_s: &str,
    allowed: &[String],
) -> Result<CaptureRequest, Vec<FieldError>> {
    let mut errors = Vec::new();
    let url = match reqwest::Url::parse(url.trim()) {
        Ok(u) if u.host_str().is_some() => match capture::check_target(&target_of(&u), allowed) {
            Ok(()) => Some(u),
            Err(e) => {
                errors.push(e);
                None
            }
        },
        Ok(_) => {
            errors.push(FieldError::new("url", "the URL needs a host"));
            None
        }
        Err(e) => {
            errors.push(FieldError::new(
                "url",
                format!(
                    "'{}' is not a URL ({e}); write e.g. http://10.0.0.5:8000/metrics",
                    url.trim()
                ),
            ));
            None
        }
    };
    let window = Window::parse(seconds, interval_s)
        .map_err(|e| errors.extend(e))
        .ok();
    match (url, window) {
        (Some(url), Some(window)) if errors.is_empty() => Ok(CaptureRequest { url, window }),
        _ => Err(errors),
    }
}

// ---------- the allowlist ----------

/// One allowed `host:port`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AllowedHost {
    pub host_port: String,
    pub note: String,
    pub added_by: Option<String>,
    pub added_at: DateTime<Utc>,
}

pub async fn allowed(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT host_port FROM capture_hosts ORDER BY host_port")
        .fetch_all(pool)
        .await
}

pub async fn list_hosts(pool: &PgPool) -> sqlx::Result<Vec<AllowedHost>> {
    sqlx::query_as(
        "SELECT c.host_port, c.note, u.name AS added_by, c.added_at
         FROM capture_hosts c LEFT JOIN users u ON u.id = c.added_by ORDER BY c.host_port",
    )
    .fetch_all(pool)
    .await
}

/// Adds an entry (already normalised by `core::capture::parse_allow_entry`); false when
/// it was listed already.
pub async fn add_host(
    pool: &PgPool,
    host_port: &str,
    note: &str,
    by: Option<i64>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO capture_hosts (host_port, note, added_by) VALUES ($1, $2, $3)
         ON CONFLICT (host_port) DO NOTHING",
    )
    .bind(host_port)
    .bind(note)
    .bind(by)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Adds the configured `host:port` pairs (`--capture-host`, `PERFJOURNAL_CAPTURE_HOSTS`)
/// that are not listed yet; a malformed one stops start-up naming it. Returns how many
/// were added.
pub async fn seed_hosts(pool: &PgPool, configured: &[String]) -> anyhow::Result<usize> {
    let mut added = 0;
    for raw in configured.iter().filter(|r| !r.trim().is_empty()) {
        let entry = capture::parse_allow_entry(raw)
            .map_err(|e| anyhow::anyhow!("--capture-host {raw:?}: {}", e.message))?;
        if add_host(pool, &entry, "from the server's configuration", None).await? {
            added += 1;
        }
    }
    Ok(added)
}

pub async fn remove_host(pool: &PgPool, host_port: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM capture_hosts WHERE host_port = $1")
        .bind(host_port)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

// ---------- running a capture ----------

/// How often a running capture touches its row, and how old that touch may get before
/// the capture counts as abandoned.
const HEARTBEAT: Duration = Duration::from_secs(2);
const ABANDONED_AFTER_S: i64 = 30;

/// Records the artifact (status `capturing`) and starts the scraping in the background;
/// returns the artifact's id at once.
pub async fn start(
    store: &ArtifactStore,
    investigation_id: i64,
    request: CaptureRequest,
    user_id: i64,
) -> sqlx::Result<i64> {
    let name = format!(
        "metrics-capture-{}-{}s.prom",
        Utc::now().format("%Y%m%dT%H%M%SZ"),
        request.window.seconds
    );
    let id = insert_capturing(
        store,
        investigation_id,
        &name,
        Kind::Prometheus,
        user_id,
        request.url.as_str(),
    )
    .await?;
    tokio::spawn(run(store.clone(), id, request));
    Ok(id)
}

/// Records an artifact whose bytes are still being gathered (status `capturing`, empty
/// blob) from `source_url`; [`settle`] later stores or fails it. Live captures and
/// Prometheus windows start this way.
pub(crate) async fn insert_capturing(
    store: &ArtifactStore,
    investigation_id: i64,
    name: &str,
    kind: Kind,
    user_id: i64,
    source_url: &str,
) -> sqlx::Result<i64> {
    let options = Options {
        max_decompressed_bytes: store.max_decompressed_bytes,
        ..Options::default()
    };
    let row = ArtifactRow {
        id: None,
        owner: Owner {
            investigation_id: Some(investigation_id),
            journal_entry_id: None,
        },
        name,
        kind,
        blob: None,
        gzip: false,
        status: "capturing",
        error: None,
        uploaded_by: Some(user_id),
        options: &options,
        idempotency_key: None,
        source_url: Some(source_url),
    };
    insert_row(&store.pool, &row).await
}

/// Scrapes while keeping the row's heartbeat; stops early when the row stops being
/// `capturing` (failed by [`fail_abandoned`], or deleted). Then stores and analyzes.
async fn run(store: ArtifactStore, id: i64, request: CaptureRequest) {
    settle(
        &store,
        id,
        scrape_into_store(&store, &request),
        "capture failed",
    )
    .await;
}

/// Runs `work` (which stores the artifact's blob) for a `capturing` row while keeping
/// its heartbeat, then queues and analyzes the blob, or ends the row `failed` with
/// "`failed`: reason". Used by live captures and by Prometheus windows.
pub(crate) async fn settle(
    store: &ArtifactStore,
    id: i64,
    work: impl std::future::Future<Output = Result<crate::storage::StoredBlob, String>>,
    failed: &str,
) {
    let watch = async {
        loop {
            tokio::time::sleep(HEARTBEAT).await;
            let touched = sqlx::query(
                "UPDATE artifacts SET updated_at = now() WHERE id = $1 AND status = 'capturing'",
            )
            .bind(id)
            .execute(&store.pool)
            .await;
            if matches!(touched, Ok(r) if r.rows_affected() == 0) {
                return;
            }
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = watch => {
            tracing::warn!(id, "capture no longer wanted; stopped");
            return;
        }
    };
    let settled = match outcome {
        Ok(blob) => {
            let queued = sqlx::query(
                "UPDATE artifacts SET sha256 = $2, size_bytes = $3, gzip = false, status = 'queued',
                        error = NULL, progress_bytes = 0, updated_at = now(),
                        blob_encoding = $4, stored_bytes = $5, compress_pending = $6
                 WHERE id = $1 AND status = 'capturing'",
            )
            .bind(id)
            .bind(&blob.sha256)
            .bind(blob.size as i64)
            .bind(blob.encoding.slug())
            .bind(blob.stored_size as i64)
            .bind(blob.compress_later)
            .execute(&store.pool)
            .await;
            match queued {
                Ok(r) if r.rows_affected() == 1 => ingest::analyze_now(store, id).await.map(|_| ()),
                Ok(_) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Err(reason) => {
            tracing::info!(id, %reason, "capture failed");
            sqlx::query(
                "UPDATE artifacts SET status = 'failed', error = $2, updated_at = now()
                 WHERE id = $1 AND status = 'capturing'",
            )
            .bind(id)
            .bind(format!("{failed}: {reason}"))
            .execute(&store.pool)
            .await
            .map(|_| ())
            .map_err(Into::into)
        }
    };
    if let Err(e) = settled {
        // The row stays `capturing` without a heartbeat; fail_abandoned settles it.
        tracing::error!(id, error = %e, "recording the capture's outcome");
    }
}

/// Scrapes at every offset of the window and streams the scrapes into blob storage as
/// they arrive (nothing is held beyond one scrape); any failed scrape fails the capture.
async fn scrape_into_store(
    store: &ArtifactStore,
    request: &CaptureRequest,
) -> Result<crate::storage::StoredBlob, String> {
    let client = scrape::client().map_err(|e| format!("no HTTP client: {e}"))?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, String>>(2);
    let body = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let put = store.blobs.put_stream(body, store.upload_limit);
    let offsets = request.window.offsets();
    let total = offsets.len();
    let scraping = async move {
        let start = tokio::time::Instant::now();
        for (n, offset) in offsets.into_iter().enumerate() {
            tokio::time::sleep_until(start + Duration::from_secs(offset.into())).await;
            match scrape::scrape(&client, &request.url).await {
                Ok(bytes) => {
                    if tx.send(Ok(bytes)).await.is_err() {
                        // The store stopped reading: it says why below.
                        return Ok(());
                    }
                }
                Err(reason) => {
                    let reason = format!("scrape {} of {total} (at {offset} s): {reason}", n + 1);
                    let _ = tx.send(Err(reason.clone())).await;
                    return Err(reason);
                }
            }
        }
        Ok(())
    };
    let (stored, scraped) = tokio::join!(put, scraping);
    scraped?;
    stored.map_err(|e| match e {
        StoreError::TooLarge { limit } => format!(
            "the capture grew past the upload limit of {}; nothing was kept",
            crate::core::fmt::bytes(limit as f64, crate::core::fmt::ByteStyle::Size)
        ),
        StoreError::Full => "the server's storage is full; nothing was kept".to_string(),
        other => format!("storing the capture failed: {other}"),
    })
}

/// Runs [`fail_abandoned`] every few seconds, for ever (the server spawns it).
pub async fn settle_abandoned(pool: PgPool) {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    loop {
        tick.tick().await;
        if let Err(e) = fail_abandoned(&pool).await {
            tracing::warn!(error = %e, "settling abandoned captures");
        }
    }
}

/// Captures whose heartbeat stopped (the process restarted or died mid-window) end
/// `failed` with the reason.
pub async fn fail_abandoned(pool: &PgPool) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE artifacts SET status = 'failed', updated_at = now(),
                error = 'capture failed: the server stopped (restart or crash) during the \
                         window, so the scrapes were not kept; start the capture again'
         WHERE status = 'capturing' AND updated_at < now() - make_interval(secs => $1)",
    )
    .bind(ABANDONED_AFTER_S as f64)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Starts a capture for an investigation from the fields as typed (page or API): 404
/// for a missing investigation, 422 naming each refused field (nothing is stored).
pub async fn begin(
    store: &ArtifactStore,
    investigation_id: i64,
    fields: [&str; 3],
    user_id: i64,
) -> Result<i64, crate::error::Error> {
    use crate::error::Error;
    if crate::investigations::db::get(&store.pool, investigation_id)
        .await?
        .is_none()
    {
        return Err(Error::not_found(format!(
            "no investigation {investigation_id}"
        )));
    }
    let [url, seconds, interval_s] = fields;
    let allowed = allowed(&store.pool).await?;
    let request = parse_request(url, seconds, interval_s, &allowed).map_err(Error::Invalid)?;
    Ok(start(store, investigation_id, request, user_id).await?)
}
