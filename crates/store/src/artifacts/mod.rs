//! Artifacts: uploaded files attached to an investigation or a journal entry, their
//! detected kind, and the analysis a background worker stores next to them.

pub mod columns;
pub mod compact;
pub mod decomposition;
pub mod ingest;
pub mod spool;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use tokio::sync::Notify;

use crate::core::analyze::{self, Analysis, Kind, Of};
use crate::core::blob::BlobEncoding;
use crate::storage::{BlobStore, StoredBlob};

/// What storing and analyzing artifacts needs: the rows, the blobs, the analysis
/// worker's wake-up and the size limits (the app's state hands these out).
#[derive(Clone)]
pub struct ArtifactStore {
    pub pool: PgPool,
    pub blobs: BlobStore,
    /// Wakes the analysis worker when an upload is queued.
    pub jobs: Arc<Notify>,
    /// Wakes the compactor when an analysis ends, its blob maybe waiting to be
    /// compressed ([`compact`]).
    pub compactions: Arc<Notify>,
    /// Largest upload, bytes.
    pub upload_limit: u64,
    /// Gzip-bomb guard for analysis, bytes.
    pub max_decompressed_bytes: u64,
    /// An upload whose body sends nothing for this long is dropped with 408.
    pub upload_idle_timeout: std::time::Duration,
    /// How long a request log's rows may go to the database while its body arrives; a
    /// slower body is loaded from its stored file instead, once complete.
    pub streamed_load_budget: std::time::Duration,
    /// Uploads being received now, per user and in total.
    pub upload_slots: Arc<UploadSlots>,
    /// Places for analyses from stored files: the worker takes one per job, and a small
    /// upload analysed before its answer takes one too (see [`analysis_places`]).
    pub analyses: Arc<tokio::sync::Semaphore>,
}

/// Analyses of stored files that run at once in one server: one per core, at least two.
/// An upload analysed before its answer waits for a place no longer than the inline
/// budget, else it is left queued for the worker; one that outlives the budget keeps
/// its place until it ends, so analyses never pile up beside the worker.
pub fn analysis_places() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2)
}

impl ArtifactStore {
    /// Where analyses read from a file spool the upload, and how large it may grow.
    pub fn spool(&self) -> spool::Spool {
        spool::Spool {
            dir: self.blobs.spool_dir(),
            limit: self.upload_limit,
        }
    }
}

/// Caps the uploads received at once, per user and in total, so slow senders cannot hold
/// every file handle and buffer: past a cap the upload is refused at once (429 for the
/// user's own cap, 503 for the server's) instead of waiting.
pub struct UploadSlots {
    per_user: usize,
    total: usize,
    held: std::sync::Mutex<(usize, std::collections::HashMap<i64, usize>)>,
}

/// One upload being received; its slot is given back when dropped.
pub struct UploadSlot {
    slots: Arc<UploadSlots>,
    user: i64,
}

impl UploadSlots {
    pub fn new(per_user: usize, total: usize) -> Self {
        UploadSlots {
            per_user: per_user.max(1),
            total: total.max(1),
            held: std::sync::Mutex::new((0, std::collections::HashMap::new())),
        }
    }

    pub fn acquire(self: &Arc<Self>, user: i64) -> Result<UploadSlot, UploadError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mine = held.1.get(&user).copied().unwrap_or(0);
        if mine >= self.per_user {
            return Err(UploadError::TooManyOfYours(self.per_user));
        }
        if held.0 >= self.total {
            return Err(UploadError::ServerBusy(self.total));
        }
        held.0 += 1;
        *held.1.entry(user).or_default() += 1;
        Ok(UploadSlot {
            slots: self.clone(),
            user,
        })
    }
}

impl Drop for UploadSlot {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().unwrap_or_else(|e| e.into_inner());
        held.0 = held.0.saturating_sub(1);
        if let Some(n) = held.1.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                held.1.remove(&self.user);
            }
        }
    }
}

/// Where an artifact hangs: an investigation, a journal entry, or nothing yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Owner {
    pub investigation_id: Option<i64>,
    pub journal_entry_id: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Artifact {
    pub id: i64,
    pub investigation_id: Option<i64>,
    pub journal_entry_id: Option<i64>,
    pub name: String,
    pub kind: String,
    pub sha256: String,
    pub size_bytes: i64,
    /// How the blob is kept on disk, and how many bytes that takes.
    pub blob_encoding: BlobEncoding,
    pub stored_bytes: i64,
    /// Kept as uploaded until its analysis is over, then compressed ([`compact`]).
    pub compress_pending: bool,
    pub gzip: bool,
    pub status: String,
    pub error: Option<String>,
    pub progress_bytes: i64,
    /// The stored result, read back once as its kind's type.
    pub analysis: Option<Analysis>,
    pub analyzer_version: Option<i32>,
    pub uploaded_by: Option<i64>,
    pub uploader: Option<String>,
    pub created_at: DateTime<Utc>,
    pub analyzed_at: Option<DateTime<Utc>>,
    /// Where a capture scraped its bytes from (`None` for uploads).
    pub source_url: Option<String>,
    /// Why the stored analysis could not be read back (then `analysis` is `None`): a row
    /// written by an older server, or edited by hand, must not take a list down with it.
    pub damaged: Option<String>,
}

impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for Artifact {
    fn from_row(row: &'r sqlx::postgres::PgRow) -> sqlx::Result<Self> {
        use sqlx::Row;
        // The analysis arrives as text and is parsed here, so a value no f64 holds (or
        // any other surprise in the stored JSON) marks this one row, not the query.
        let text: Option<String> = row.try_get("analysis_text")?;
        let kind: String = row.try_get("kind")?;
        let (analysis, damaged) = match text {
            None => (None, None),
            Some(t) => match serde_json::from_str::<serde_json::Value>(&t) {
                Ok(v) => match kind.parse().ok().and_then(|k| Analysis::read(k, &v)) {
                    Some(a) => (Some(a), None),
                    None => (
                        None,
                        Some(format!(
                            "the stored analysis does not read as a {kind} analysis of this \
                             version; re-analyze or delete it"
                        )),
                    ),
                },
                Err(e) => (
                    None,
                    Some(format!(
                        "the stored analysis cannot be read back ({e}); re-analyze or delete it"
                    )),
                ),
            },
        };
        Ok(Artifact {
            id: row.try_get("id")?,
            investigation_id: row.try_get("investigation_id")?,
            journal_entry_id: row.try_get("journal_entry_id")?,
            name: row.try_get("name")?,
            kind,
            sha256: row.try_get("sha256")?,
            size_bytes: row.try_get("size_bytes")?,
            blob_encoding: BlobEncoding::parse(row.try_get::<&str, _>("blob_encoding")?).map_err(
                |e| sqlx::Error::ColumnDecode {
                    index: "blob_encoding".into(),
                    source: e.into(),
                },
            )?,
            stored_bytes: row.try_get("stored_bytes")?,
            compress_pending: row.try_get("compress_pending")?,
            gzip: row.try_get("gzip")?,
            status: row.try_get("status")?,
            error: row.try_get("error")?,
            progress_bytes: row.try_get("progress_bytes")?,
            analysis,
            analyzer_version: row.try_get("analyzer_version")?,
            uploaded_by: row.try_get("uploaded_by")?,
            uploader: row.try_get("uploader")?,
            created_at: row.try_get("created_at")?,
            analyzed_at: row.try_get("analyzed_at")?,
            source_url: row.try_get("source_url")?,
            damaged,
        })
    }
}

impl Artifact {
    /// The size as people read it ("1.1 MB").
    pub fn size_human(&self) -> String {
        crate::core::fmt::bytes(self.size_bytes as f64, crate::core::fmt::ByteStyle::Size)
    }

    /// What the disk holds, when it is not the file as uploaded: "stored as zstd, 1.2 MB
    /// on disk (8% of the original)".
    pub fn stored_note(&self) -> Option<String> {
        if !self.has_file() {
            return None;
        }
        if self.compress_pending {
            return Some("stored as uploaded until its analysis is over, then with zstd".into());
        }
        crate::core::blob::stored_note(
            self.blob_encoding,
            self.size_bytes.max(0) as u64,
            self.stored_bytes.max(0) as u64,
        )
    }

    /// The status as lists show it (label, extra CSS class): "failed profile" for an
    /// Nsight Compute file holding only errors.
    pub fn shown_status(&self) -> (&str, &'static str) {
        if self.damaged.is_some() {
            return ("damaged", "damaged");
        }
        let profile_error = match self.kind() {
            Kind::NcuCsv => self
                .analysis
                .as_ref()
                .and_then(analyze::ncu::NcuAnalysis::of)
                .and_then(|x| x.profile_error.clone()),
            _ => None,
        };
        analyze::ncu::listed_status(&self.kind, &self.status, profile_error.as_deref())
    }

    pub fn kind(&self) -> Kind {
        self.kind.parse().unwrap_or(Kind::Unknown)
    }

    /// False for a live capture still running, or one that failed before it kept a file
    /// (its row names the empty content): there is nothing to download or re-analyze.
    pub fn has_file(&self) -> bool {
        self.status != "capturing" && self.sha256 != EMPTY_SHA256
    }

    pub fn in_progress(&self) -> bool {
        matches!(self.status.as_str(), "queued" | "analyzing" | "capturing")
    }

    /// Read progress in percent (of the bytes as uploaded, maybe gzip).
    pub fn percent(&self) -> i64 {
        if self.size_bytes <= 0 {
            return 0;
        }
        (self.progress_bytes * 100 / self.size_bytes).clamp(0, 100)
    }
}

/// The SHA-256 of no bytes: what a capture's row names until its scrapes are stored
/// (uploads of empty files are refused, so no uploaded artifact has it).
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const COLUMNS: &str = "a.id, a.investigation_id, a.journal_entry_id, a.name, a.kind, a.sha256, \
     a.size_bytes, a.blob_encoding, COALESCE(a.stored_bytes, a.size_bytes) AS stored_bytes, a.compress_pending, a.gzip, a.status, a.error, a.progress_bytes, a.analysis::text AS analysis_text, a.analyzer_version, \
     a.uploaded_by, u.name AS uploader, a.created_at, a.analyzed_at, a.source_url";

/// The kind of a stored upload, from its first bytes (gunzipped when gzip).
pub fn detect_kind(blob: &StoredBlob) -> (Kind, bool) {
    detect_head(&blob.head)
}

/// The kind of content that starts with `head` (the first [`crate::storage::HEAD_BYTES`]
/// bytes as uploaded), and whether it is gzip.
pub fn detect_head(raw: &[u8]) -> (Kind, bool) {
    let gzip = analyze::is_gzip(raw);
    let head = if gzip {
        // A prefix of a gzip stream decodes up to where it was cut (the reader then fails
        // on the cut, keeping what it decoded): enough to detect.
        let mut out = Vec::new();
        let reader = analyze::decompressing_reader(raw, u64::MAX);
        let _ = std::io::Read::read_to_end(
            &mut std::io::Read::take(reader, analyze::DETECT_HEAD_BYTES as u64),
            &mut out,
        );
        out
    } else {
        raw.to_vec()
    };
    (analyze::detect(&head), gzip)
}

/// A stored blob about to become an artifact row.
#[derive(Clone, Copy)]
pub struct NewArtifact<'a> {
    /// An id reserved before (a request log loaded while it arrived), else a new one.
    pub id: Option<i64>,
    pub owner: Owner,
    pub name: &'a str,
    pub blob: &'a StoredBlob,
    /// The uploader; `None` for rows the server makes (a span window's file).
    pub uploaded_by: Option<i64>,
    pub options: &'a analyze::Options,
    /// The upload's `Idempotency-Key`, unique per uploader.
    pub idempotency_key: Option<&'a str>,
}

/// Every column an artifact row starts with. [`insert_row`] is the one place a row is
/// made: uploads ([`insert`]), span windows' files and captures all come through it.
pub struct ArtifactRow<'a> {
    /// An id reserved before (a request log loaded while it arrived), else a new one.
    pub id: Option<i64>,
    pub owner: Owner,
    pub name: &'a str,
    pub kind: Kind,
    /// `None` while the bytes are still being gathered (a capture): the empty blob.
    pub blob: Option<&'a StoredBlob>,
    pub gzip: bool,
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub uploaded_by: Option<i64>,
    pub options: &'a analyze::Options,
    pub idempotency_key: Option<&'a str>,
    /// Where the server fetched the bytes from (captures, Prometheus windows).
    pub source_url: Option<&'a str>,
}

/// Inserts `row` through `executor` (a pool or an open transaction); returns its id.
pub async fn insert_row<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    row: &ArtifactRow<'_>,
) -> sqlx::Result<i64> {
    let (sha256, size, encoding, stored, compress_pending) = match row.blob {
        Some(b) => (
            b.sha256.as_str(),
            b.size as i64,
            b.encoding.slug(),
            Some(b.stored_size as i64),
            b.compress_later,
        ),
        None => (EMPTY_SHA256, 0, BlobEncoding::Identity.slug(), None, false),
    };
    sqlx::query_scalar(
        "INSERT INTO artifacts (investigation_id, journal_entry_id, name, kind, sha256, size_bytes,
                                gzip, status, error, uploaded_by, options, blob_encoding,
                                stored_bytes, id, idempotency_key, source_url, compress_pending)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                 COALESCE($14, nextval(pg_get_serial_sequence('artifacts', 'id'))), $15, $16,
                 $17)
         RETURNING id",
    )
    .bind(row.owner.investigation_id)
    .bind(row.owner.journal_entry_id)
    .bind(row.name)
    .bind(row.kind.slug())
    .bind(sha256)
    .bind(size)
    .bind(row.gzip)
    .bind(row.status)
    .bind(row.error)
    .bind(row.uploaded_by)
    .bind(sqlx::types::Json(row.options))
    .bind(encoding)
    .bind(stored)
    .bind(row.id)
    .bind(row.idempotency_key)
    .bind(row.source_url)
    .bind(compress_pending)
    .fetch_one(executor)
    .await
}

/// Records an upload (under `id` when one was reserved for it). Unknown content is kept
/// but marked "not analyzed".
pub async fn insert(pool: &PgPool, new: &NewArtifact<'_>) -> sqlx::Result<Artifact> {
    let (kind, gzip) = detect_kind(new.blob);
    let (status, error) = if kind == Kind::Unknown {
        (
            "not_analyzed",
            Some(
                "not analyzed: the content matches none of the supported kinds; the file is \
                 stored and downloadable",
            ),
        )
    } else {
        ("queued", None)
    };
    let row = ArtifactRow {
        id: new.id,
        owner: new.owner,
        name: new.name,
        kind,
        blob: Some(new.blob),
        gzip,
        status,
        error,
        uploaded_by: new.uploaded_by,
        options: new.options,
        idempotency_key: new.idempotency_key,
        source_url: None,
    };
    let id = insert_row(pool, &row).await?;
    Ok(get(pool, id).await?.expect("the row was just inserted"))
}

/// The artifact `user` uploaded under an `Idempotency-Key`, if any.
pub async fn by_idempotency_key(
    pool: &PgPool,
    user: i64,
    key: &str,
) -> sqlx::Result<Option<Artifact>> {
    let id: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM artifacts WHERE uploaded_by = $1 AND idempotency_key = $2",
    )
    .bind(user)
    .bind(key)
    .fetch_optional(pool)
    .await?;
    match id {
        Some(id) => get(pool, id).await,
        None => Ok(None),
    }
}

/// The analyses of an investigation's finished artifacts of these kinds, in one query:
/// (id, kind, analysis). One that cannot be read back is left out (its page says why).
pub async fn analyses_of(
    pool: &PgPool,
    investigation: i64,
    kinds: &[Kind],
) -> sqlx::Result<Vec<(i64, Analysis)>> {
    let slugs: Vec<&str> = kinds.iter().map(|k| k.slug()).collect();
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT id, kind, analysis::text FROM artifacts
         WHERE investigation_id = $1 AND status = 'done' AND analysis IS NOT NULL
           AND kind = ANY($2) ORDER BY id",
    )
    .bind(investigation)
    .bind(&slugs)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, kind, text)| {
            let value = serde_json::from_str(&text).ok()?;
            Analysis::read(kind.parse().ok()?, &value).map(|a| (id, a))
        })
        .collect())
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<Artifact>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM artifacts a LEFT JOIN users u ON u.id = a.uploaded_by WHERE a.id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// Newest first, optionally only those of one investigation: `limit` of them after the
/// one with id `after` (keyset).
pub async fn list(
    pool: &PgPool,
    investigation_id: Option<i64>,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Artifact>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM artifacts a LEFT JOIN users u ON u.id = a.uploaded_by
         WHERE ($1::bigint IS NULL OR a.investigation_id = $1)
           AND ($2::bigint IS NULL OR (a.created_at, a.id) < (SELECT created_at, id FROM artifacts WHERE id = $2))
         ORDER BY a.created_at DESC, a.id DESC LIMIT $3"
    ))
    .bind(investigation_id)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Whether any row points at the blob of this content stored this way (the sweeper
/// keeps those).
pub async fn blob_in_use(
    pool: &PgPool,
    sha256: &str,
    encoding: BlobEncoding,
) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM artifacts WHERE sha256 = $1 AND blob_encoding = $2)",
    )
    .bind(sha256)
    .bind(encoding.slug())
    .fetch_one(pool)
    .await
}

/// Queues a fresh analysis (a newer analyzer, or other options).
pub async fn requeue(pool: &PgPool, id: i64, options: &analyze::Options) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE artifacts SET status = 'queued', error = NULL, progress_bytes = 0, options = $2,
                attempts = 0, updated_at = now()
         WHERE id = $1 AND kind <> 'unknown' AND status NOT IN ('queued', 'analyzing', 'capturing')
               AND sha256 <> $3",
    )
    .bind(id)
    .bind(sqlx::types::Json(options))
    .bind(EMPTY_SHA256)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Why an upload was refused; each says what and where.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("{0}")]
    Field(crate::core::FieldError),
    #[error(transparent)]
    Store(#[from] crate::storage::StoreError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Other(anyhow::Error),
    #[error("the upload sent nothing for {0} s")]
    Idle(u64),
    #[error("you already have {0} uploads running")]
    TooManyOfYours(usize),
    #[error("the server already receives {0} uploads")]
    ServerBusy(usize),
}

impl From<UploadError> for crate::error::Error {
    fn from(e: UploadError) -> Self {
        use crate::error::Error;
        use crate::storage::StoreError;
        match e {
            UploadError::Field(f) => Error::Invalid(vec![f]),
            UploadError::Store(StoreError::TooLarge { limit }) => Error::PayloadTooLarge(format!(
                "the file is larger than the upload limit of {limit} bytes; nothing was stored"
            )),
            UploadError::Store(StoreError::Body(m)) => Error::BadRequest(format!(
                "the upload was interrupted ({m}); nothing was stored"
            )),
            UploadError::Store(StoreError::Full) => Error::StorageFull(
                "the server's storage is full, so the file was not stored (nothing was kept); \
                 ask an admin to free space, then upload again"
                    .into(),
            ),
            UploadError::Store(other) => Error::Internal(other.into()),
            UploadError::Db(e) => Error::Database(e),
            UploadError::Other(e) => Error::Internal(e),
            UploadError::Idle(secs) => Error::RequestTimeout(format!(
                "the upload sent nothing for {secs} s, so it was dropped; nothing was stored"
            )),
            UploadError::TooManyOfYours(n) => Error::TooManyUploads(format!(
                "you already have {n} upload(s) running, the most one user may have at once; \
                 wait for one to finish, then upload again (nothing was stored)"
            )),
            UploadError::ServerBusy(n) => Error::UploadsBusy(format!(
                "the server is already receiving {n} uploads, the most it takes at once; \
                 try again shortly (nothing was stored)"
            )),
        }
    }
}

/// A file name as given, without any directory part; 1–255 characters.
pub fn clean_name(raw: Option<&str>) -> Result<String, crate::core::FieldError> {
    let raw = raw.unwrap_or("").trim();
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("").trim();
    if base.is_empty() {
        return Err(crate::core::FieldError::new(
            "name",
            "name the file (e.g. ?name=trace.json.gz, or a multipart filename)",
        ));
    }
    if base.chars().count() > 255 || base.chars().any(crate::core::fmt::unsafe_in_name) {
        return Err(crate::core::FieldError::new(
            "name",
            "a file name of at most 255 printable characters (no control or text-direction \
             characters)",
        ));
    }
    Ok(base.to_string())
}

/// Streams a body into blob storage and records it; the worker is woken to analyze it.
/// Nothing is recorded when the body is too large or breaks off.
pub async fn receive<S, E>(
    state: &ArtifactStore,
    owner: Owner,
    name: &str,
    body: S,
    uploaded_by: i64,
    idempotency_key: Option<&str>,
) -> Result<Artifact, UploadError>
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let slot = state.upload_slots.acquire(uploaded_by)?;
    let idle = state.upload_idle_timeout;
    let stalled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let options = analyze::Options {
        max_decompressed_bytes: state.max_decompressed_bytes,
        ..analyze::Options::default()
    };
    // The analysis runs on the bytes as they arrive (see ingest::StreamFeed).
    let (feed, streamed) = ingest::StreamFeed::new(state.clone(), options.clone());
    let body = Box::pin(futures::stream::unfold(
        (body, false, stalled.clone(), feed),
        move |(mut body, ended, stalled, mut feed)| async move {
            use futures::StreamExt;
            if ended {
                return None;
            }
            match tokio::time::timeout(idle, body.next()).await {
                Ok(Some(Ok(chunk))) => {
                    feed.push(&chunk).await;
                    Some((Ok(chunk), (body, false, stalled, feed)))
                }
                Ok(Some(Err(e))) => Some((Err(e.to_string()), (body, true, stalled, feed))),
                Ok(None) => None,
                Err(_) => {
                    stalled.store(true, std::sync::atomic::Ordering::Relaxed);
                    Some((
                        Err("the body stopped arriving".to_string()),
                        (body, true, stalled, feed),
                    ))
                }
            }
        },
    ));
    let stored = state.blobs.put_stream(body, state.upload_limit).await;
    drop(slot);
    let blob = match stored {
        Ok(blob) => blob,
        Err(_) if stalled.load(std::sync::atomic::Ordering::Relaxed) => {
            return Err(UploadError::Idle(idle.as_secs().max(1)));
        }
        Err(e) => return Err(e.into()),
    };
    if blob.size == 0 {
        forget_blob(state, &blob).await;
        return Err(UploadError::Field(crate::core::FieldError::new(
            "file",
            format!("{name} is empty (0 bytes); nothing was stored"),
        )));
    }
    // Under the id its request rows were loaded for while it arrived, if they were.
    let id = streamed.reserved_id();
    let inserted = insert(
        &state.pool,
        &NewArtifact {
            id,
            owner,
            name,
            blob: &blob,
            uploaded_by: Some(uploaded_by),
            options: &options,
            idempotency_key,
        },
    )
    .await;
    let artifact = match inserted {
        Ok(a) => a,
        Err(e) => {
            forget_blob(state, &blob).await;
            // The same key sent twice at once: the first stored it.
            if let (Some(key), Some(db)) = (idempotency_key, e.as_database_error()) {
                if db.constraint() == Some("artifacts_idempotency") {
                    if let Some(first) = by_idempotency_key(&state.pool, uploaded_by, key).await? {
                        return Ok(first);
                    }
                }
            }
            return Err(owner_error(e));
        }
    };
    // The analysis that ran while the body arrived, when it read this artifact's kind.
    let streamed = streamed.take(artifact.kind());
    if artifact.status == "queued" && blob.size <= INLINE_ANALYSIS_BYTES {
        let answered = analyze_inline(state, &artifact, name, streamed).await;
        if answered.is_err() {
            // An error answer leaves nothing behind: no row, no blob.
            let _ = sqlx::query("DELETE FROM artifacts WHERE id = $1")
                .bind(artifact.id)
                .execute(&state.pool)
                .await;
            forget_blob(state, &blob).await;
        }
        return answered;
    }
    if let (true, Some(analysis)) = (artifact.status == "queued", streamed) {
        // Claimed now, so the answer says `analyzing` and no worker takes it; the
        // outcome, nearly ready when the last byte was stored, is written when it is.
        if let Some(job) = ingest::claim(&state.pool, Some(artifact.id)).await? {
            let store = state.clone();
            tokio::spawn(async move {
                if let Err(e) = ingest::process_streamed(&store, job, analysis).await {
                    tracing::error!(error = %e, "storing a streamed analysis");
                }
            });
            return Ok(get(&state.pool, artifact.id)
                .await?
                .unwrap_or_else(|| artifact.clone()));
        }
    }
    state.jobs.notify_one();
    Ok(artifact)
}

/// Small files are analyzed before answering, so malformed content is refused with the
/// line and the problem (the caller then removes the row and blob). An analysis that
/// takes longer than the budget carries on in the background, holding its place among
/// the worker's (the answer says `analyzing`); a failure then ends the artifact
/// `failed` with the reason.
async fn analyze_inline(
    state: &ArtifactStore,
    artifact: &Artifact,
    name: &str,
    streamed: Option<ingest::Streamed>,
) -> Result<Artifact, UploadError> {
    // An analysis from the stored file takes one of the worker's places; none free
    // within the budget, the worker takes the upload when one is.
    let place = match streamed {
        Some(_) => None,
        None => match tokio::time::timeout(
            INLINE_ANALYSIS_BUDGET,
            state.analyses.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(place)) => Some(place),
            _ => {
                state.jobs.notify_one();
                return Ok(artifact.clone());
            }
        },
    };
    let mut inline = tokio::spawn({
        let state = state.clone();
        let id = artifact.id;
        async move {
            let _place = place;
            match streamed {
                Some(analysis) => match ingest::claim(&state.pool, Some(id)).await? {
                    Some(job) => ingest::process_streamed(&state, job, analysis).await,
                    None => Ok(None),
                },
                None => ingest::analyze_now(&state, id).await,
            }
        }
    });
    let finished = match tokio::time::timeout(INLINE_ANALYSIS_BUDGET, &mut inline).await {
        Ok(joined) => joined.map_err(|e| UploadError::Other(e.into()))?,
        Err(_) => {
            tracing::info!(id = artifact.id, "analysis continues in the background");
            return Ok(get(&state.pool, artifact.id)
                .await?
                .unwrap_or_else(|| artifact.clone()));
        }
    };
    if let Some(message) = finished.map_err(UploadError::Other)? {
        return Err(UploadError::Field(crate::core::FieldError::new(
            "file",
            format!("{name}: {message}"),
        )));
    }
    Ok(get(&state.pool, artifact.id)
        .await?
        .unwrap_or_else(|| artifact.clone()))
}

/// Who may delete an artifact: an admin, or the editor who uploaded it (the role is
/// checked first, so an uploader demoted to viewer can no longer delete).
pub fn may_delete(a: &Artifact, user: &crate::auth::User) -> bool {
    use crate::auth::Role;
    user.role >= Role::Admin || (user.role >= Role::Editor && a.uploaded_by == Some(user.id))
}

/// Why a deletion was refused.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    #[error("no artifact {0}")]
    NotFound(i64),
    #[error("only an admin or the editor who uploaded artifact {0} can delete it")]
    Forbidden(i64),
    #[error("artifact {id} is compared in {}; delete or edit those comparisons first", .comparisons.iter().map(|c| format!("comparison {c}")).collect::<Vec<_>>().join(", "))]
    InComparisons { id: i64, comparisons: Vec<i64> },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl From<DeleteError> for crate::error::Error {
    fn from(e: DeleteError) -> Self {
        use crate::error::Error;
        match e {
            DeleteError::NotFound(_) => Error::not_found(e.to_string()),
            DeleteError::Forbidden(_) => Error::Forbidden(e.to_string()),
            DeleteError::InComparisons { .. } => Error::Conflict(e.to_string()),
            DeleteError::Db(db) => db.into(),
        }
    }
}

/// Deletes an artifact for good: its row, request rows and their partition (the
/// table's trigger), its links as step evidence and bubble attributions (cascades), and
/// its blob when no other artifact holds the same bytes. One transaction records who
/// did it, in `artifact_deletions` and in the history of every investigation that
/// held or cited it.
pub async fn delete(
    pool: &PgPool,
    blobs: &BlobStore,
    id: i64,
    user: &crate::auth::User,
) -> Result<Artifact, DeleteError> {
    let mut tx = pool.begin().await?;
    // Locks the row: an analysis storing its result waits, then finds it gone.
    let locked: Option<i64> =
        sqlx::query_scalar("SELECT id FROM artifacts WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    if locked.is_none() {
        return Err(DeleteError::NotFound(id));
    }
    let a = sqlx::query_as::<_, Artifact>(&format!(
        "SELECT {COLUMNS} FROM artifacts a LEFT JOIN users u ON u.id = a.uploaded_by WHERE a.id = $1"
    ))
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    if !may_delete(&a, user) {
        return Err(DeleteError::Forbidden(id));
    }
    let comparisons: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT comparison_id FROM comparison_artifacts WHERE artifact_id = $1 ORDER BY 1",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    if !comparisons.is_empty() {
        return Err(DeleteError::InComparisons { id, comparisons });
    }
    let investigations: Vec<i64> = sqlx::query_scalar(
        "SELECT investigation_id FROM artifacts WHERE id = $1 AND investigation_id IS NOT NULL
         UNION SELECT investigation_id FROM step_evidence WHERE artifact_id = $1
         UNION SELECT investigation_id FROM bubble_attributions
               WHERE trace_artifact_id = $1 OR queue_artifact_id = $1
         ORDER BY 1",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO artifact_deletions (artifact_id, name, kind, sha256, investigation_id,
                                         uploaded_by, deleted_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(a.id)
    .bind(&a.name)
    .bind(&a.kind)
    .bind(&a.sha256)
    .bind(a.investigation_id)
    .bind(a.uploaded_by)
    .bind(user.id)
    .execute(&mut *tx)
    .await?;
    let summary = format!(
        "deleted artifact {} ({}, {}); its file, rows and links are gone",
        a.id, a.name, a.kind
    );
    for inv in investigations {
        crate::investigations::db::log(&mut tx, inv, user.id, "artifact_deleted", None, &summary)
            .await?;
    }
    sqlx::query("DELETE FROM artifacts WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if a.sha256 != EMPTY_SHA256
        && !blob_in_use(pool, &a.sha256, a.blob_encoding)
            .await
            .unwrap_or(true)
    {
        if let Err(e) = blobs.delete(&a.sha256, a.blob_encoding).await {
            // The periodic sweep removes an unreferenced blob later.
            tracing::warn!(id, error = %e, "deleted artifact: its blob stays until the sweep");
        }
    }
    tracing::info!(id, by = user.id, name = %a.name, "artifact deleted");
    Ok(a)
}

/// Files up to this size are analyzed on the request path; larger ones in the background.
pub const INLINE_ANALYSIS_BYTES: u64 = 32 * 1024 * 1024;

/// How long an upload waits for its inline analysis before answering `analyzing`.
pub const INLINE_ANALYSIS_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// Removes a just-stored blob that no row points to (unless it was there before).
async fn forget_blob(state: &ArtifactStore, blob: &StoredBlob) {
    if !blob.existed
        && !blob_in_use(&state.pool, &blob.sha256, blob.encoding)
            .await
            .unwrap_or(true)
    {
        state.blobs.delete(&blob.sha256, blob.encoding).await.ok();
    }
}

/// A foreign-key failure means the investigation or entry named does not exist.
fn owner_error(e: sqlx::Error) -> UploadError {
    if let sqlx::Error::Database(db) = &e {
        if db.is_foreign_key_violation() {
            let field = if db.constraint().unwrap_or("").contains("journal") {
                "journal_entry"
            } else {
                "investigation"
            };
            return UploadError::Field(crate::core::FieldError::new(
                field,
                format!("no such {}", field.replace('_', " ")),
            ));
        }
    }
    UploadError::Db(e)
}
