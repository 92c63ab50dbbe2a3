//! Request spans received over OTLP/HTTP (`POST /v1/traces`): stored per service and
//! window, turned into `otlp_spans` artifacts when a window closes (a background sweep),
//! on demand, or for an investigation over any stretch of time.
//!
//! A window's spans are rows of `otlp_span_rows` (each one line of OTLP JSON with only the
//! attributes read, see `core::analyze::otlp::kept_line`). Building a window's artifact
//! writes those rows, read in one snapshot under the window's row lock, to a blob; the
//! artifact (created, or pointed at the new blob and queued again) is then analysed by
//! the request-log pipeline like an uploaded file. The analysis reads only that blob, so
//! it sees exactly the spans counted in `built_spans`, never a half-received export.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::PgPool;

use crate::artifacts::ArtifactStore;
use crate::core::analyze::otlp::{reason, Group};
use crate::core::analyze::{Kind, Options};
use crate::core::FieldError;
use crate::error::Error;

/// What an export request came to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stored {
    /// Request spans kept.
    pub accepted: u64,
    /// Spans not kept, by reason.
    pub rejected: BTreeMap<&'static str, u64>,
}

impl Stored {
    /// Spans refused for a reason worth the sender's warning (spans of other shapes are
    /// counted on their window, not reported: see [`reason::is_rejection`]).
    pub fn rejected_spans(&self) -> u64 {
        self.rejections().map(|(_, n)| n).sum()
    }

    fn rejections(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.rejected
            .iter()
            .filter(|(why, _)| reason::is_rejection(why))
            .map(|(why, n)| (*why, *n))
    }

    /// The partial-success message: each reason and its count.
    pub fn message(&self) -> String {
        let parts: Vec<String> = self
            .rejections()
            .map(|(why, n)| format!("{n} span(s) refused: {why}"))
            .collect();
        parts.join("; ")
    }
}

/// Adds `add` to the counts in `counts` (a JSON object of reason → count).
fn merged_reasons(
    counts: &serde_json::Value,
    add: &BTreeMap<&'static str, u64>,
) -> serde_json::Value {
    let mut out = counts.as_object().cloned().unwrap_or_default();
    for (why, n) in add {
        let before = out
            .get(*why)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        out.insert((*why).to_string(), serde_json::Value::from(before + n));
    }
    serde_json::Value::Object(out)
}

/// Stores the groups of one export request in one transaction: all of it or nothing.
/// A window keeps at most `max_rows_per_window` spans; the rest are counted as over the
/// limit. A group that would open a window of a service not yet known past
/// `max_services`, or a window past `max_windows` (in all) or `max_windows_per_user`
/// (opened by `user`'s tokens), all counted over the retention period, is refused whole.
/// `refused` are the spans that fell in no window, by reason.
pub async fn store(
    pool: &PgPool,
    groups: Vec<Group>,
    refused: BTreeMap<&'static str, u64>,
    limits: &OtlpLimits,
    user: i64,
) -> sqlx::Result<Stored> {
    let mut out = Stored {
        rejected: refused,
        ..Stored::default()
    };
    let mut tx = pool.begin().await?;
    let services: Vec<&str> = groups.iter().map(|g| g.service.as_str()).collect();
    let starts: Vec<f64> = groups.iter().map(|g| g.window_start as f64).collect();
    let known: Vec<(String, i64)> = sqlx::query_as(
        "SELECT w.service, extract(epoch FROM w.window_start)::bigint FROM otlp_windows w
         JOIN UNNEST($1::text[], $2::float8[]) AS k(service, start)
           ON w.service = k.service AND w.window_start = to_timestamp(k.start)",
    )
    .bind(&services)
    .bind(&starts)
    .fetch_all(&mut *tx)
    .await?;
    let is_new = |g: &Group| {
        !known
            .iter()
            .any(|(s, t)| *s == g.service && *t == g.window_start)
    };
    let mut room = None;
    if groups.iter().any(is_new) {
        // New windows are counted under one lock: two exports cannot both take the last
        // place.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('perfjournal.otlp_windows'))")
            .execute(&mut *tx)
            .await?;
        let (windows, mine): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE opened_by = $2) FROM otlp_windows
             WHERE window_end > now() - make_interval(secs => $1)",
        )
        .bind(limits.retention_s as f64)
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        let live: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT service FROM otlp_windows
             WHERE window_end > now() - make_interval(secs => $1)",
        )
        .bind(limits.retention_s as f64)
        .fetch_all(&mut *tx)
        .await?;
        room = Some((windows, mine, live));
    }
    for g in groups {
        if let (true, Some((windows, mine, live))) = (is_new(&g), room.as_mut()) {
            let refusal = if !live.contains(&g.service) && live.len() as i64 >= limits.max_services
            {
                Some(reason::NEW_SERVICE)
            } else if *windows >= limits.max_windows || *mine >= limits.max_windows_per_user {
                Some(reason::NEW_WINDOW)
            } else {
                None
            };
            if let Some(why) = refusal {
                let n = g.kept.len() as u64 + g.ignored.values().sum::<u64>();
                *out.rejected.entry(why).or_default() += n;
                continue;
            }
            *windows += 1;
            *mine += 1;
            if !live.contains(&g.service) {
                live.push(g.service.clone());
            }
        }
        // The upsert locks the window's row until the commit: exports into one window
        // take turns, so the limit holds.
        let (id, spans, reasons): (i64, i64, serde_json::Value) = sqlx::query_as(
            "INSERT INTO otlp_windows (service, window_start, window_end, opened_by)
             VALUES ($1, to_timestamp($2), to_timestamp($3), $4)
             ON CONFLICT (service, window_start) DO UPDATE SET updated_at = now()
             RETURNING id, spans, ignored_reasons",
        )
        .bind(&g.service)
        .bind(g.window_start as f64)
        .bind((g.window_start + limits.window_s) as f64)
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        let room = (limits.max_rows_per_window - spans).max(0) as usize;
        let take = g.kept.len().min(room);
        let mut ignored = g.ignored.clone();
        if g.kept.len() > take {
            *ignored.entry(reason::OVER_LIMIT).or_default() += (g.kept.len() - take) as u64;
        }
        let (arrivals, lines): (Vec<f64>, Vec<String>) = g.kept.into_iter().take(take).unzip();
        if !lines.is_empty() {
            sqlx::query(
                "INSERT INTO otlp_span_rows (window_id, arrival_ts, line)
                 SELECT $1, a, l FROM UNNEST($2::float8[], $3::text[]) AS t(a, l)",
            )
            .bind(id)
            .bind(&arrivals)
            .bind(&lines)
            .execute(&mut *tx)
            .await?;
        }
        let ignored_n: u64 = ignored.values().sum();
        sqlx::query(
            "UPDATE otlp_windows SET spans = spans + $2, ignored = ignored + $3,
                    ignored_reasons = $4, updated_at = now()
             WHERE id = $1",
        )
        .bind(id)
        .bind(lines.len() as i64)
        .bind(ignored_n as i64)
        .bind(merged_reasons(&reasons, &ignored))
        .execute(&mut *tx)
        .await?;
        out.accepted += lines.len() as u64;
        for (why, n) in ignored {
            *out.rejected.entry(why).or_default() += n;
        }
    }
    tx.commit().await?;
    Ok(out)
}

/// A window as listed.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Window {
    pub id: i64,
    pub service: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    /// Request spans kept.
    pub spans: i64,
    /// Spans received but not kept.
    pub ignored: i64,
    /// Spans not kept, by reason.
    pub ignored_reasons: serde_json::Value,
    /// The window's artifact, once built.
    pub artifact_id: Option<i64>,
    /// `open` (still receiving), `closed` (waiting for its artifact), or the artifact's
    /// status (`queued`, `analyzing`, `done`, `failed`).
    pub status: String,
}

const WINDOW_COLUMNS: &str = "w.id, w.service, w.window_start, w.window_end, w.spans, w.ignored,
     w.ignored_reasons, w.artifact_id,
     CASE WHEN w.window_end > now() THEN 'open'
          WHEN a.id IS NULL OR w.built_spans IS DISTINCT FROM w.spans THEN 'closed'
          ELSE a.status END AS status";

/// Windows, newest first (then by id), optionally of one service: `limit` after `after`.
pub async fn list(
    pool: &PgPool,
    service: Option<&str>,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Window>> {
    sqlx::query_as(&format!(
        "SELECT {WINDOW_COLUMNS} FROM otlp_windows w LEFT JOIN artifacts a ON a.id = w.artifact_id
         WHERE ($1::text IS NULL OR w.service = $1)
           AND ($2::bigint IS NULL OR w.id < $2)
         ORDER BY w.id DESC LIMIT $3"
    ))
    .bind(service)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<Window>> {
    one(pool, "w.id", id).await
}

/// The window an artifact was built from.
pub async fn of_artifact(pool: &PgPool, artifact_id: i64) -> sqlx::Result<Option<Window>> {
    one(pool, "w.artifact_id", artifact_id).await
}

/// The window whose `column` (a fixed name, never input) is `value`.
async fn one(pool: &PgPool, column: &str, value: i64) -> sqlx::Result<Option<Window>> {
    sqlx::query_as(&format!(
        "SELECT {WINDOW_COLUMNS} FROM otlp_windows w LEFT JOIN artifacts a ON a.id = w.artifact_id
         WHERE {column} = $1"
    ))
    .bind(value)
    .fetch_optional(pool)
    .await
}

/// The services that sent spans, by name.
pub async fn services(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT service FROM otlp_windows ORDER BY service LIMIT 200")
        .fetch_all(pool)
        .await
}

fn file_name(service: &str, start: f64, end: f64) -> String {
    let at = |t: f64| {
        DateTime::from_timestamp(t.floor() as i64, 0)
            .map(|d| d.format("%Y%m%dT%H%M%SZ").to_string())
            .unwrap_or_default()
    };
    let safe: String = service
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    format!("otlp-{safe}-{}-{}.jsonl", at(start), at(end))
}

/// Lines read from the database go to the blob store in chunks of about this size.
const LINE_CHUNK: usize = 1 << 20;

/// Stores a stream of lines as one blob (a line each), a chunk at a time: a window of
/// many spans is never held whole.
async fn put_lines<S>(store: &ArtifactStore, lines: S) -> Result<crate::storage::StoredBlob, Error>
where
    S: futures::Stream<Item = Result<String, sqlx::Error>> + Unpin,
{
    let chunks = futures::stream::unfold((lines, false), |(mut lines, ended)| async move {
        if ended {
            return None;
        }
        let mut chunk = Vec::with_capacity(LINE_CHUNK + 4096);
        loop {
            match lines.try_next().await {
                Ok(Some(line)) => {
                    chunk.extend_from_slice(line.as_bytes());
                    chunk.push(b'\n');
                    if chunk.len() >= LINE_CHUNK {
                        return Some((Ok(bytes::Bytes::from(chunk)), (lines, false)));
                    }
                }
                Ok(None) if chunk.is_empty() => return None,
                Ok(None) => return Some((Ok(bytes::Bytes::from(chunk)), (lines, true))),
                Err(e) => return Some((Err(e.to_string()), (lines, true))),
            }
        }
    });
    store
        .blobs
        .put_stream(Box::pin(chunks), store.upload_limit)
        .await
        .map_err(|e| crate::artifacts::UploadError::Store(e).into())
}

/// A window's service, start, end, spans kept and artifact, as a build reads them.
type WindowToBuild = (String, DateTime<Utc>, DateTime<Utc>, i64, Option<i64>);

/// Builds (or rebuilds) a window's artifact from its spans now and queues its analysis.
/// `None` when the window has no spans yet.
pub async fn build(store: &ArtifactStore, window_id: i64) -> Result<Option<i64>, Error> {
    let mut tx = store.pool.begin().await?;
    // The row lock holds exports into this window back until the artifact points at the
    // blob: `built_spans` is exactly what the blob holds.
    let row: Option<WindowToBuild> = sqlx::query_as(
        "SELECT service, window_start, window_end, spans, artifact_id FROM otlp_windows
         WHERE id = $1 FOR UPDATE",
    )
    .bind(window_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((service, start, end, spans, artifact_id)) = row else {
        return Err(Error::not_found(format!(
            "there is no span window {window_id}"
        )));
    };
    if spans == 0 {
        return Ok(None);
    }
    if let Some(id) = artifact_id {
        // Locked until the commit, so no worker claims it meanwhile; one that is analysing
        // the previous file finishes first (its rows would otherwise replace the new ones).
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM artifacts WHERE id = $1 FOR UPDATE")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        if status.as_deref() == Some("analyzing") {
            return Err(Error::Conflict(format!(
                "the window's artifact {id} is being analysed now; ask again when it is done"
            )));
        }
    }
    let blob = {
        let lines = sqlx::query_scalar(
            "SELECT line FROM otlp_span_rows WHERE window_id = $1 ORDER BY arrival_ts",
        )
        .bind(window_id)
        .fetch(&mut *tx);
        put_lines(store, lines).await?
    };
    let options = Options {
        max_decompressed_bytes: store.max_decompressed_bytes,
        ..Options::default()
    };
    let name = file_name(&service, start.timestamp() as f64, end.timestamp() as f64);
    let updated: Option<i64> = match artifact_id {
        Some(id) => {
            sqlx::query_scalar(
                "UPDATE artifacts SET sha256 = $2, size_bytes = $3, stored_bytes = $4,
                    blob_encoding = $5, gzip = false, status = 'queued', error = NULL,
                    progress_bytes = 0, attempts = 0, updated_at = now(),
                    compress_pending = $6
             WHERE id = $1 RETURNING id",
            )
            .bind(id)
            .bind(&blob.sha256)
            .bind(blob.size as i64)
            .bind(blob.stored_size as i64)
            .bind(blob.encoding.slug())
            .bind(blob.compress_later)
            .fetch_optional(&mut *tx)
            .await?
        }
        None => None,
    };
    let artifact = match updated {
        Some(id) => id,
        None => {
            crate::artifacts::insert_row(
                &mut *tx,
                &crate::artifacts::ArtifactRow {
                    id: None,
                    owner: crate::artifacts::Owner {
                        investigation_id: None,
                        journal_entry_id: None,
                    },
                    name: &name,
                    kind: Kind::OtlpSpans,
                    blob: Some(&blob),
                    gzip: false,
                    status: "queued",
                    error: None,
                    uploaded_by: None,
                    options: &options,
                    idempotency_key: None,
                    source_url: None,
                },
            )
            .await?
        }
    };
    sqlx::query(
        "UPDATE otlp_windows SET artifact_id = $2, built_spans = spans, updated_at = now()
         WHERE id = $1",
    )
    .bind(window_id)
    .bind(artifact)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    store.jobs.notify_one();
    Ok(Some(artifact))
}

/// Builds the artifacts of windows that closed with spans not yet in one; returns how
/// many were built.
pub async fn build_closed(store: &ArtifactStore) -> Result<usize, Error> {
    let due: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM otlp_windows
         WHERE window_end <= now() AND built_spans IS DISTINCT FROM spans AND spans > 0
         ORDER BY window_end LIMIT 50",
    )
    .fetch_all(&store.pool)
    .await?;
    let mut built = 0;
    for id in due {
        match build(store, id).await {
            Ok(Some(_)) => built += 1,
            Ok(None) => {}
            // Being analysed: the next pass builds it.
            Err(Error::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(built)
}

/// How often the sweep looks for closed windows.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Runs forever: analyses each window once it closes (and again when late spans arrive).
pub async fn sweep(store: ArtifactStore) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    loop {
        tick.tick().await;
        match build_closed(&store).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(windows = n, "span windows closed and queued for analysis"),
            Err(e) => tracing::error!(error = %e, "building span windows"),
        }
    }
}

/// The fields of "the spans of service X between T1 and T2" as typed.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct TakeFields {
    #[serde(default)]
    pub service: String,
    #[serde(default)]
    pub start: String,
    #[serde(default)]
    pub end: String,
}

/// Reads the fields: a service, and a start before the end (every problem reported).
pub fn check_take(f: &TakeFields) -> Result<(String, f64, f64), Vec<FieldError>> {
    let mut errors = Vec::new();
    let service = f.service.trim();
    if service.is_empty() || service.chars().count() > 255 {
        errors.push(FieldError::new(
            "service",
            "the service.name the spans were sent under (1 to 255 characters)",
        ));
    }
    let (start, end) = match crate::core::window::parse_window(
        &f.start,
        &f.end,
        crate::core::window::MAX_INCIDENT_S,
    ) {
        Ok((s, e)) => (Some(s), Some(e)),
        Err(e) => {
            errors.extend(e);
            (None, None)
        }
    };
    match (start, end) {
        (Some(s), Some(e)) if errors.is_empty() => Ok((service.to_string(), s, e)),
        _ => Err(errors),
    }
}

/// Puts the spans of a service between two times into an investigation as an
/// `otlp_spans` artifact, queued for analysis. 404 for a missing investigation; 422 for
/// bad fields or when no span of that service falls in the stretch (nothing stored).
pub async fn take(
    store: &ArtifactStore,
    investigation_id: i64,
    fields: &TakeFields,
    max_rows: i64,
    user_id: i64,
) -> Result<i64, Error> {
    if crate::investigations::db::get(&store.pool, investigation_id)
        .await?
        .is_none()
    {
        return Err(Error::not_found(format!(
            "no investigation {investigation_id}"
        )));
    }
    let (service, start, end) = check_take(fields).map_err(Error::Invalid)?;
    const STRETCH: &str = "FROM otlp_span_rows r JOIN otlp_windows w ON w.id = r.window_id
         WHERE w.service = $1 AND w.window_end > to_timestamp($2)
           AND w.window_start < to_timestamp($3)
           AND r.arrival_ts >= $2 AND r.arrival_ts < $3";
    // Counted first (at most one past the limit), then streamed to the blob.
    let found: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM (SELECT 1 {STRETCH} LIMIT $4) AS t"
    ))
    .bind(&service)
    .bind(start)
    .bind(end)
    .bind(max_rows + 1)
    .fetch_one(&store.pool)
    .await?;
    if found == 0 {
        let known = services(&store.pool).await?;
        return Err(Error::field(
            "service",
            if known.contains(&service) {
                format!("no spans of service {service} arrived between the start and the end")
            } else if known.is_empty() {
                format!("no service has sent spans yet (there is none named {service})")
            } else {
                format!(
                    "no service named {service} has sent spans; the services are: {}",
                    known.join(", ")
                )
            },
        ));
    }
    if found > max_rows {
        return Err(Error::field(
            "end",
            format!(
                "more than {max_rows} spans fall between the start and the end; choose a \
                 shorter stretch"
            ),
        ));
    }
    let blob = {
        let sql = format!("SELECT r.line {STRETCH} ORDER BY r.arrival_ts LIMIT $4");
        let lines = sqlx::query_scalar(&sql)
            .bind(&service)
            .bind(start)
            .bind(end)
            .bind(max_rows)
            .fetch(&store.pool);
        put_lines(store, lines).await?
    };
    let options = Options {
        max_decompressed_bytes: store.max_decompressed_bytes,
        ..Options::default()
    };
    let owner = crate::artifacts::Owner {
        investigation_id: Some(investigation_id),
        journal_entry_id: None,
    };
    let a = crate::artifacts::insert(
        &store.pool,
        &crate::artifacts::NewArtifact {
            id: None,
            owner,
            name: &file_name(&service, start, end),
            blob: &blob,
            uploaded_by: Some(user_id),
            options: &options,
            idempotency_key: None,
        },
    )
    .await?;
    store.jobs.notify_one();
    Ok(a.id)
}

/// How OTLP spans are received and kept.
#[derive(Debug, Clone)]
pub struct OtlpLimits {
    /// Seconds of one window.
    pub window_s: i64,
    pub max_rows_per_window: i64,
    pub body_limit: usize,
    pub max_decompressed: usize,
    /// Spans read from one export.
    pub max_spans_per_export: u64,
    /// Seconds back a span may start; the limits below count over it.
    pub retention_s: i64,
    pub max_services: i64,
    pub max_windows: i64,
    pub max_windows_per_user: i64,
}

impl Default for OtlpLimits {
    fn default() -> Self {
        OtlpLimits {
            window_s: 3600,
            max_rows_per_window: 200_000,
            body_limit: 16 << 20,
            max_decompressed: 64 << 20,
            max_spans_per_export: 16_384,
            retention_s: 30 * 86_400,
            max_services: 100,
            max_windows: 20_000,
            max_windows_per_user: 5_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_add_up_and_read_as_one_message() {
        let mut add = BTreeMap::new();
        add.insert(reason::OVER_LIMIT, 2);
        add.insert(reason::OTHER_SHAPE, 1);
        let merged = merged_reasons(&serde_json::json!({ reason::OVER_LIMIT: 3 }), &add);
        assert_eq!(merged[reason::OVER_LIMIT], 5);
        assert_eq!(merged[reason::OTHER_SHAPE], 1);
        let s = Stored {
            accepted: 1,
            rejected: add,
        };
        // Spans of other shapes are normal traffic, not a rejection.
        assert_eq!(s.rejected_spans(), 2);
        assert_eq!(
            s.message(),
            "2 span(s) refused: over the window's span limit"
        );
    }

    #[test]
    fn names_are_safe_file_names() {
        assert_eq!(
            file_name("vllm a/b", 1_796_220_000.0, 1_796_223_600.0),
            "otlp-vllm_a_b-20261202T140000Z-20261202T150000Z.jsonl"
        );
    }
}
