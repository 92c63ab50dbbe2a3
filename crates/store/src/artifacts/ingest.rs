//! The background worker: claims queued artifacts (SKIP LOCKED, so replicas share the
//! queue), streams each blob through its analyzer off the async threads, reports
//! progress, stores the result; request logs are also stored as column chunks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::spool::{self, Spool};
use super::{columns, ArtifactStore};
use crate::core::analyze::{self, otlp, request_columns, request_log, AnalyzeError, Kind, Options};
use crate::core::blob::BlobEncoding;
use crate::storage::BlobStore;

/// A claimed job.
#[derive(sqlx::FromRow)]
pub(crate) struct Job {
    id: i64,
    kind: String,
    sha256: String,
    /// How the blob is stored (identity or zstd); readers hand out the original bytes.
    blob_encoding: String,
    options: sqlx::types::Json<Options>,
    /// Which start of the analysis this is: the claim's fence. Heartbeats and the
    /// outcome are written only while the row is still on this start, so a worker that
    /// lost its lease (stalled past it, then woke) cannot overwrite its successor.
    attempts: i32,
}

/// Runs forever: processes jobs as they are queued (woken by `store.jobs`), and at
/// least every few seconds in case another replica queued one or stopped mid-analysis.
///
/// `after_pass` runs at the start of every pass, after stale analyses are requeued: the
/// layers above use it for what follows analyses (trace sets summarised once their last
/// rank is done), so this worker needs to know nothing of them.
pub async fn run_worker<F, Fut>(state: ArtifactStore, after_pass: F)
where
    F: Fn(PgPool) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    loop {
        // Every pass, in every replica: an analysis whose worker died (kill -9, out of
        // memory, a lost machine) is taken over once its lease runs out.
        match requeue_stale(&state.pool).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(requeued = n, "took over analyses whose worker stopped"),
            Err(e) => tracing::error!(error = %e, "requeueing interrupted analyses"),
        }
        after_pass(state.pool.clone()).await;
        match process_next(&state).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "analysis worker"),
        }
        tokio::select! {
            _ = state.jobs.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

/// How often an idle worker looks for work queued or abandoned by another replica.
const POLL: Duration = Duration::from_secs(2);

/// How often a running analysis renews its lease (its heartbeat, with the progress).
const HEARTBEAT: Duration = Duration::from_millis(500);

/// An analysis whose heartbeat is older than this is taken to have lost its worker: 20
/// missed heartbeats, so a busy database does not hand a live job to a second worker.
pub const LEASE: Duration = Duration::from_secs(10);

/// Analyses left 'analyzing' by a worker that stopped (no heartbeat for [`LEASE`]) are
/// queued again, up to [`MAX_ATTEMPTS`] starts; after that they end `failed` with the reason.
pub async fn requeue_stale(pool: &PgPool) -> sqlx::Result<u64> {
    // Those given up are announced (artifact.failed) in the same transaction.
    let mut tx = pool.begin().await?;
    let rows: Vec<(i64, String, String, String, Option<String>)> = sqlx::query_as(
        "UPDATE artifacts SET progress_bytes = 0, updated_at = now(),
                status = CASE WHEN attempts >= $1 THEN 'failed' ELSE 'queued' END,
                error = CASE WHEN attempts >= $1 THEN $2 ELSE error END
         WHERE status = 'analyzing' AND updated_at < now() - make_interval(secs => $3)
         RETURNING id, status, name, kind, error",
    )
    .bind(MAX_ATTEMPTS)
    .bind(format!(
        "the analysis stopped {MAX_ATTEMPTS} times without finishing (the server was restarted \
         or ran out of memory while analysing this file); it is not retried automatically. \
         The file is kept: download it, or press \"Analyze again\" to try once more"
    ))
    .bind(LEASE.as_secs_f64())
    .fetch_all(&mut *tx)
    .await?;
    for (id, status, name, kind, error) in &rows {
        if status == "failed" {
            let error = error.as_deref().unwrap_or_default();
            announce_failed(&mut tx, *id, name, kind, error).await?;
        }
    }
    tx.commit().await?;
    Ok(rows.len() as u64)
}

/// Queues `artifact.failed` for the endpoints subscribed to it.
async fn announce_failed(
    conn: &mut sqlx::PgConnection,
    id: i64,
    name: &str,
    kind: &str,
    error: &str,
) -> sqlx::Result<()> {
    let url = format!("/artifacts/{id}");
    let text = format!("Artifact {name} could not be analysed: {error} ({url})");
    let data = serde_json::json!({
        "id": id, "url": url, "name": name, "kind": kind, "error": error,
    });
    crate::webhooks::enqueue(conn, "artifact.failed", &text, &data).await?;
    Ok(())
}

/// Starts of one analysis before it is given up (see [`requeue_stale`]).
pub const MAX_ATTEMPTS: i32 = 3;

/// The largest analysis kept per artifact (the analyzers bound what they keep, so only a
/// new analyzer's bug could come near it; PostgreSQL's own jsonb limit is far higher).
pub const MAX_STORED_ANALYSIS_BYTES: usize = 16 << 20;

/// Claims and processes one queued artifact; false when the queue is empty.
pub async fn process_next(state: &ArtifactStore) -> anyhow::Result<bool> {
    // One of the server's analysis places, shared with uploads analysed before their
    // answer (see artifacts::analysis_places).
    let _place = state.analyses.acquire().await?;
    match claim(&state.pool, None).await? {
        Some(job) => {
            process(state, job).await?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Analyzes one queued artifact now, on the request path (small uploads). Returns the
/// failure message when the content is malformed.
pub async fn analyze_now(state: &ArtifactStore, id: i64) -> anyhow::Result<Option<String>> {
    match claim(&state.pool, Some(id)).await? {
        Some(job) => process(state, job).await,
        None => Ok(None),
    }
}

/// Marks a queued artifact (the given one, or the oldest) as being analyzed by us.
pub(crate) async fn claim(pool: &PgPool, id: Option<i64>) -> sqlx::Result<Option<Job>> {
    sqlx::query_as(
        "UPDATE artifacts SET status = 'analyzing', progress_bytes = 0, updated_at = now(),
                attempts = attempts + 1
         WHERE id = (SELECT id FROM artifacts WHERE status = 'queued'
                       AND ($1::bigint IS NULL OR id = $1)
                     ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
         RETURNING id, kind, sha256, blob_encoding, options, attempts",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// Runs the analyzer on a claimed job and stores the outcome; returns the failure
/// message when the analysis failed.
async fn process(state: &ArtifactStore, job: Job) -> anyhow::Result<Option<String>> {
    process_with(state, job, None).await
}

/// Stores the outcome of an analysis that ran while the upload arrived (claimed `job`).
pub(crate) async fn process_streamed(
    state: &ArtifactStore,
    job: Job,
    analysis: Streamed,
) -> anyhow::Result<Option<String>> {
    process_with(state, job, Some(analysis)).await
}

/// Runs the analyzer on a claimed job, or takes the outcome of the one that ran on the
/// upload's bytes, and stores it.
async fn process_with(
    state: &ArtifactStore,
    job: Job,
    streamed: Option<Streamed>,
) -> anyhow::Result<Option<String>> {
    let kind: Kind = job.kind.parse().unwrap_or(Kind::Unknown);
    let progress = Arc::new(AtomicU64::new(0));
    let ticker = tokio::spawn(report_progress(
        state.pool.clone(),
        job.id,
        job.attempts,
        progress.clone(),
    ));
    let options = job.options.0.clone();
    let blob = (job.sha256.as_str(), job.blob_encoding.as_str());
    let started = Instant::now();
    let mut timing = Timing::default();
    // Request logs (and request spans) are loaded into the database and analyzed in the
    // same pass.
    let streamed = match streamed {
        Some(streamed) => {
            let waited = Instant::now();
            let (outcome, split) = streamed.outcome(job.id).await;
            match split {
                Some(split) => timing = split,
                None => timing.parse += waited.elapsed(),
            }
            Some(outcome)
        }
        None => None,
    };
    let outcome = if let Some(outcome) =
        streamed.filter(|outcome| !matches!(outcome, Err(Failure::Deferred)))
    {
        outcome
    } else if kind.has_request_rows() {
        match blob_reader(&state.blobs, blob).await {
            Ok(reader) => {
                load_request_rows(
                    state,
                    job.id,
                    kind,
                    reader,
                    options,
                    progress,
                    None,
                    &mut timing,
                )
                .await
            }
            Err(e) => Err(e),
        }
    } else {
        let spool = state.spool();
        analyze_blob(
            &state.blobs,
            blob,
            kind,
            options,
            spool,
            progress,
            &mut timing,
        )
        .await
    };
    ticker.abort();
    let outcome = outcome.and_then(|analysis| {
        if let Some((path, x)) = analyze::first_out_of_range(&analysis) {
            return Err(Failure::Failed(format!(
                "a value out of range: the result's \"{path}\" came to {x:e} (numbers beyond \
                 ±{:e} are refused: a fault in the tool that wrote the file, or an edited \
                 file)",
                analyze::MAX_MAGNITUDE
            )));
        }
        let size = analysis.to_string().len();
        if size > MAX_STORED_ANALYSIS_BYTES {
            return Err(Failure::Failed(format!(
                "the analysis came to {} MB, more than the {} MB kept per artifact; the file \
                 is kept and can be downloaded",
                size >> 20,
                MAX_STORED_ANALYSIS_BYTES >> 20
            )));
        }
        Ok(analysis)
    });

    // The outcome is ours to write only while the row is still on our start.
    const OURS: &str = "id = $1 AND status = 'analyzing' AND attempts = $2";
    let kept = match outcome {
        Ok(analysis) => {
            let stored = Instant::now();
            let kept = sqlx::query(&format!(
                "UPDATE artifacts SET status = 'done', error = NULL, analysis = $3,
                        analyzer_version = $4, progress_bytes = size_bytes,
                        analyzed_at = now(), updated_at = now()
                 WHERE {OURS}"
            ))
            .bind(job.id)
            .bind(job.attempts)
            .bind(analysis)
            .bind(kind.analyzer_version() as i32)
            .execute(&state.pool)
            .await?
            .rows_affected();
            timing.db += stored.elapsed();
            // Where the time went, for operators and the end-to-end benchmarks.
            tracing::info!(
                id = job.id,
                kind = kind.slug(),
                total_s = started.elapsed().as_secs_f64(),
                parse_s = timing.parse.as_secs_f64(),
                db_s = timing.db.as_secs_f64(),
                "artifact analyzed"
            );
            kept
        }
        Err(Failure::NotAnalyzed) => sqlx::query(&format!(
            "UPDATE artifacts SET status = 'not_analyzed', updated_at = now() WHERE {OURS}"
        ))
        .bind(job.id)
        .bind(job.attempts)
        .execute(&state.pool)
        .await?
        .rows_affected(),
        Err(failure @ (Failure::Failed(_) | Failure::Deferred)) => {
            let message = match failure {
                Failure::Failed(message) => message,
                _ => "the rows could not be loaded from the stored file".to_string(),
            };
            tracing::warn!(id = job.id, kind = kind.slug(), %message, "artifact analysis failed");
            // The failure and its notice commit together.
            let mut tx = state.pool.begin().await?;
            let name: Option<String> = sqlx::query_scalar(&format!(
                "UPDATE artifacts SET status = 'failed', error = $3, analysis = NULL,
                        updated_at = now() WHERE {OURS} RETURNING name"
            ))
            .bind(job.id)
            .bind(job.attempts)
            .bind(&message)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(name) = name {
                announce_failed(&mut tx, job.id, &name, kind.slug(), &message).await?;
                tx.commit().await?;
                state.compactions.notify_one();
                return Ok(Some(message));
            }
            tx.commit().await?;
            0
        }
    };
    // Its blob, kept as uploaded until now, can be compressed (see `compact`).
    state.compactions.notify_one();
    // What the analysis left (its result and buffers, dropped by now) goes back to the
    // system, with the free pages of threads that have ended since (src/memory.rs).
    crate::memory::release_thread_heap();
    if kept == 0 {
        tracing::warn!(
            id = job.id,
            "an analysis outlived its lease and was taken over (or the artifact was deleted); \
             its outcome is dropped"
        );
    }
    Ok(None)
}

/// Where an analysis spent its time: `parse` is the analyzer's own work (decompression
/// included; time spent waiting for the database is not), `db` the time the worker
/// waited on PostgreSQL (writing the rows' chunks, storing the result).
#[derive(Default)]
struct Timing {
    parse: Duration,
    db: Duration,
}

enum Failure {
    NotAnalyzed,
    Failed(String),
    /// A load of rows beside its upload that was given up because the body arrived
    /// more slowly than [`ArtifactStore::streamed_load_budget`] allows (rolled back);
    /// the rows are loaded from the stored file instead.
    Deferred,
}

impl From<AnalyzeError> for Failure {
    fn from(e: AnalyzeError) -> Self {
        match e {
            AnalyzeError::NotAnalyzed => Failure::NotAnalyzed,
            other => Failure::Failed(other.to_string()),
        }
    }
}

/// Writes the bytes read so far twice a second; also the worker's heartbeat, which
/// renews its lease on the job (see [`LEASE`]) while the row is still on its start.
async fn report_progress(pool: PgPool, id: i64, attempts: i32, progress: Arc<AtomicU64>) {
    let mut tick = tokio::time::interval(HEARTBEAT);
    loop {
        tick.tick().await;
        let read = progress.load(Ordering::Relaxed) as i64;
        let _ = sqlx::query(
            "UPDATE artifacts SET progress_bytes = $3, updated_at = now() \
             WHERE id = $1 AND status = 'analyzing' AND attempts = $2",
        )
        .bind(id)
        .bind(attempts)
        .bind(read)
        .execute(&pool)
        .await;
    }
}

// ---------- analysis while the bytes arrive ----------

/// Chunks handed to an analyzer running beside an upload; the upload waits when they
/// are all taken (back-pressure from the slower of the disk and the analyzer).
const STREAM_CHUNKS: usize = 8;

/// Request-row loads that may run beside their uploads at once in this process. Each
/// holds a database connection and an open transaction for as long as its body takes
/// to arrive, so they are few; an upload that finds none free is loaded from its blob
/// once stored, as before.
static STREAMED_LOADS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Feeds an upload's bytes to its analyzer as they arrive. It holds the first
/// [`crate::storage::HEAD_BYTES`] until it can tell the content's kind (as the stored
/// row will), then starts the analyzer on a blocking thread and hands it every chunk.
/// Kinds whose rows go to the database (request logs, spans) are parsed and their
/// chunks written as they arrive, in a transaction that commits only once the upload is
/// stored and its row written (under an id reserved now); an upload that breaks off
/// rolls it back. Dropping the feed ends the analyzer's input.
pub struct StreamFeed {
    head: Vec<u8>,
    options: Options,
    store: ArtifactStore,
    tx: Option<tokio::sync::mpsc::Sender<bytes::Bytes>>,
    /// Stopped: the kind is not analyzed this way, or the analyzer stopped reading.
    off: bool,
    started: Arc<std::sync::Mutex<Option<Streamed>>>,
}

/// The analyzer started by a [`StreamFeed`], once started.
pub struct StreamedSlot(Arc<std::sync::Mutex<Option<Streamed>>>);

/// An analysis running on an upload's bytes: its kind and the task computing it.
pub struct Streamed {
    kind: Kind,
    handle: tokio::task::JoinHandle<(Result<serde_json::Value, Failure>, Option<Timing>)>,
    /// For a load of request rows: the artifact id its rows carry (the stored row must
    /// be given it), and the word that the row exists, on which the load commits; the
    /// load rolls back when this is dropped instead.
    load: Option<(i64, tokio::sync::oneshot::Sender<i64>)>,
}

impl StreamFeed {
    pub fn new(store: ArtifactStore, options: Options) -> (StreamFeed, StreamedSlot) {
        let started = Arc::new(std::sync::Mutex::new(None));
        (
            StreamFeed {
                head: Vec::new(),
                options,
                store,
                tx: None,
                off: false,
                started: started.clone(),
            },
            StreamedSlot(started),
        )
    }

    /// Hands a chunk to the analyzer (waiting while its queue is full).
    pub async fn push(&mut self, chunk: &bytes::Bytes) {
        if self.off {
            return;
        }
        if let Some(tx) = &self.tx {
            if tx.send(chunk.clone()).await.is_err() {
                // The analyzer ended early (its error is in its outcome).
                self.tx = None;
                self.off = true;
            }
            return;
        }
        self.head.extend_from_slice(chunk);
        if self.head.len() < crate::storage::HEAD_BYTES {
            return;
        }
        let (kind, _) = super::detect_head(&self.head[..crate::storage::HEAD_BYTES]);
        let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(STREAM_CHUNKS);
        let started = match kind {
            Kind::Unknown => None,
            kind if kind.has_request_rows() => self.start_load(kind, rx).await,
            kind => Some(self.start_analysis(kind, rx)),
        };
        let Some(started) = started else {
            self.off = true;
            self.head = Vec::new();
            return;
        };
        if let Ok(mut slot) = self.started.lock() {
            *slot = Some(started);
        }
        let head = bytes::Bytes::from(std::mem::take(&mut self.head));
        if tx.send(head).await.is_ok() {
            self.tx = Some(tx);
        } else {
            self.off = true;
        }
    }
}

impl StreamFeed {
    /// The analyzer on a blocking thread, reading the chunks from `rx`.
    fn start_analysis(
        &self,
        kind: Kind,
        rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    ) -> Streamed {
        let options = self.options.clone();
        let spool = self.store.spool();
        let analysis = crate::memory::spawn_blocking(move || {
            // An SQLite export is written to a file as it arrives, and read once complete.
            spool::analyze(kind, ChannelReader::new(rx), &options, &|_| {}, &spool)
        });
        let handle = tokio::spawn(async move {
            let outcome = match analysis.await {
                Ok(Ok(analysis)) => Ok(analysis.to_json()),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(internal_failure("the analyzer", e)),
            };
            (outcome, None)
        });
        Streamed {
            kind,
            handle,
            load: None,
        }
    }

    /// The load of request rows, when one of [`STREAMED_LOADS`] is free and an id could be
    /// reserved; else nothing (the rows are loaded from the blob once stored).
    async fn start_load(
        &self,
        kind: Kind,
        rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    ) -> Option<Streamed> {
        let permit = STREAMED_LOADS.try_acquire().ok()?;
        let id: i64 =
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('artifacts', 'id'))")
                .fetch_one(&self.store.pool)
                .await
                .map_err(|e| tracing::warn!(error = %e, "reserving an artifact id"))
                .ok()?;
        let (stored, gate) = tokio::sync::oneshot::channel();
        let store = self.store.clone();
        let options = self.options.clone();
        let handle = tokio::spawn(async move {
            let _permit = permit;
            let mut timing = Timing::default();
            let progress = Arc::new(AtomicU64::new(0));
            let reader = ChannelReader::new(rx);
            let outcome = load_request_rows(
                &store,
                id,
                kind,
                reader,
                options,
                progress,
                Some(gate),
                &mut timing,
            )
            .await;
            (outcome, Some(timing))
        });
        Some(Streamed {
            kind,
            handle,
            load: Some((id, stored)),
        })
    }
}

impl StreamedSlot {
    /// The analysis started while the body arrived, when it read `kind` (the kind the
    /// stored row was given); any other is dropped (a load of rows then rolls back).
    pub fn take(&self, kind: Kind) -> Option<Streamed> {
        let started = self.0.lock().ok()?.take()?;
        (started.kind == kind).then_some(started)
    }

    /// The id reserved for the upload's row when its request rows are being loaded as
    /// they arrive: the row must be stored under it for the load to commit.
    pub fn reserved_id(&self) -> Option<i64> {
        let started = self.0.lock().ok()?;
        started.as_ref()?.load.as_ref().map(|(id, _)| *id)
    }
}

impl Streamed {
    /// Waits for the analysis (its input ended when the feed was dropped); a load of
    /// request rows is told that artifact `id` is stored, and commits. The split of a
    /// load's time comes with it.
    async fn outcome(mut self, id: i64) -> (Result<serde_json::Value, Failure>, Option<Timing>) {
        if let Some((reserved, stored)) = self.load.take() {
            if reserved != id {
                // Not the row its rows were loaded for: dropping the word rolls the load back.
                drop(stored);
                let _ = self.handle.await;
                return (
                    Err(internal_failure(
                        "loading rows into the database",
                        format!("the rows were loaded for id {reserved}, the row is {id}"),
                    )),
                    None,
                );
            }
            let _ = stored.send(id);
        }
        match self.handle.await {
            Ok(done) => done,
            Err(e) => (Err(internal_failure("the analyzer", e)), None),
        }
    }
}

/// The chunks of a channel as a blocking `Read` (for an analyzer on a blocking thread).
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    chunk: bytes::Bytes,
}

impl ChannelReader {
    fn new(rx: tokio::sync::mpsc::Receiver<bytes::Bytes>) -> Self {
        ChannelReader {
            rx,
            chunk: bytes::Bytes::new(),
        }
    }
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                Some(next) => self.chunk = next,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        bytes::Buf::advance(&mut self.chunk, n);
        Ok(n)
    }
}

/// The blob's original bytes (decompressed when stored as zstd) as a blocking `Read`,
/// for analyzers that run on a blocking thread. `blob` is (sha256, encoding).
async fn blob_reader(
    blobs: &BlobStore,
    (sha256, encoding): (&str, &str),
) -> Result<impl std::io::Read + Send + 'static, Failure> {
    let encoding = BlobEncoding::parse(encoding)
        .map_err(|e| Failure::Failed(format!("the stored file cannot be read: {e}")))?;
    blobs
        .reader(sha256, encoding)
        .await
        .map_err(|e| Failure::Failed(format!("the stored file cannot be read: {e}")))
}

async fn analyze_blob(
    blobs: &BlobStore,
    blob: (&str, &str),
    kind: Kind,
    options: Options,
    spool: Spool,
    progress: Arc<AtomicU64>,
    timing: &mut Timing,
) -> Result<serde_json::Value, Failure> {
    let reader = blob_reader(blobs, blob).await?;
    let started = Instant::now();
    let result = crate::memory::spawn_blocking(move || {
        let report = |n: u64| progress.store(n, Ordering::Relaxed);
        spool::analyze(kind, reader, &options, &report, &spool)
    })
    .await
    .map_err(|e| internal_failure("the analyzer", e))?;
    let json = result?.to_json();
    timing.parse += started.elapsed();
    Ok(json)
}

/// Loads every request row into the artifact's column chunks (replacing earlier rows of
/// the same artifact) and builds the request-log analysis from the same rows. Rows are
/// parsed on blocking threads (one per core, [`request_log::for_each_request`]) and each
/// chunk of 16,384 rows is handed over through a small channel as it fills, so memory
/// stays bounded and parsing overlaps the database's writes. `reader` gives the original
/// bytes: the stored blob, or the upload's body as it arrives; then `stored` says when
/// artifact `id`'s row exists, and the load commits only on that word (rolls back when
/// it never comes).
#[allow(clippy::too_many_arguments)]
async fn load_request_rows(
    state: &ArtifactStore,
    id: i64,
    kind: Kind,
    reader: impl std::io::Read + Send + 'static,
    options: Options,
    progress: Arc<AtomicU64>,
    stored: Option<tokio::sync::oneshot::Receiver<i64>>,
    timing: &mut Timing,
) -> Result<serde_json::Value, Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<request_columns::Encoded>(2);
    // Beside an upload, the load (its connection and open transaction) may last only so
    // long; past that it is given up and the parser told to stop at its next row.
    let deadline = stored
        .is_some()
        .then(|| tokio::time::Instant::now() + state.streamed_load_budget);
    let given_up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = given_up.clone();
    let producer = crate::memory::spawn_blocking(move || {
        let started = Instant::now();
        let mut blocked = Duration::ZERO;
        let report = |n: u64| progress.store(n, Ordering::Relaxed);
        let counted = analyze::CountingReader::new(reader, &report);
        let input = analyze::decompressing_reader(counted, options.max_decompressed_bytes);
        let mut acc = request_log::Accumulator::new(&options);
        let mut columns = request_columns::ColumnBuilder::new();
        let mut spans = otlp::SpanCounts::default();
        let mut send = |chunk: request_columns::Chunk| -> Result<(), AnalyzeError> {
            let waited = Instant::now();
            tx.blocking_send(chunk.into_encoded())
                .map_err(|_| AnalyzeError::malformed("the database load stopped"))?;
            blocked += waited.elapsed();
            Ok(())
        };
        let each_row = |row: &request_log::RequestRow| -> Result<(), AnalyzeError> {
            if stop.load(Ordering::Relaxed) {
                return Err(AnalyzeError::malformed("the load was given up"));
            }
            acc.add(row);
            match columns.add(row) {
                Some(full) => send(full),
                None => Ok(()),
            }
        };
        if kind == Kind::OtlpSpans {
            otlp::for_each_request(input, options.max_decompressed_bytes, &mut spans, each_row)?;
        } else {
            request_log::for_each_request(input, each_row)?;
        }
        let (rows, last) = columns.finish();
        if let Some(last) = last {
            send(last)?;
        }
        let analysis = if kind == Kind::OtlpSpans {
            analyze::Analysis::OtlpSpans(otlp::OtlpSpansAnalysis {
                requests: acc.finish(),
                spans,
            })
        } else {
            analyze::Analysis::RequestLog(acc.finish())
        }
        .to_json();
        let busy = started.elapsed().saturating_sub(blocked);
        Ok::<_, AnalyzeError>((analysis, rows, busy))
    });

    let db = |e: sqlx::Error| internal_failure("loading rows into the database", e);
    // The chunks go in one transaction: an abort (a malformed line, a body cut short)
    // leaves nothing, and readers see the artifact's earlier rows until the commit.
    let mut tx = state.pool.begin().await.map_err(db)?;
    columns::begin(&mut tx, id).await.map_err(db)?;
    let mut seq = 0i32;
    let mut send_error = None;
    loop {
        let next = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    // The body is arriving too slowly: roll back and free the connection;
                    // the rows are loaded from the stored file once the upload completes.
                    given_up.store(true, Ordering::Relaxed);
                    drop(rx);
                    let _ = tx.rollback().await;
                    tracing::info!(
                        id,
                        budget_s = state.streamed_load_budget.as_secs(),
                        "the body is still arriving: its rows will be loaded from the stored file"
                    );
                    return Err(Failure::Deferred);
                }
            },
            None => rx.recv().await,
        };
        let Some(chunk) = next else { break };
        let sending = Instant::now();
        let sent = columns::put(&mut tx, id, seq, &chunk).await;
        seq += 1;
        timing.db += sending.elapsed();
        if let Err(e) = sent {
            send_error = Some(e);
            break;
        }
    }
    drop(rx);
    let produced = producer
        .await
        .map_err(|e| internal_failure("the row reader", e))?;
    match (send_error, produced) {
        (None, Ok((analysis, rows, busy))) => {
            timing.parse += busy;
            let finishing = Instant::now();
            columns::finish(&mut tx, id, rows).await.map_err(db)?;
            if let Some(stored) = stored {
                // Rows of an upload that broke off (or was refused) are never committed.
                if stored.await.ok() != Some(id) {
                    return Err(Failure::Failed("the upload did not complete".into()));
                }
            }
            // The artifact cannot be deleted until these rows commit (its deletion takes
            // them along); one that went while they were read gets none.
            let present = sqlx::query("SELECT 1 FROM artifacts WHERE id = $1 FOR KEY SHARE")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
            if present.is_none() {
                return Err(Failure::Failed(
                    "the artifact was deleted while it was being analysed".into(),
                ));
            }
            tx.commit().await.map_err(db)?;
            timing.db += finishing.elapsed();
            Ok(analysis)
        }
        (Some(e), _) => Err(db(e)),
        (None, Err(e)) => Err(e.into()),
    }
}

/// An internal fault during analysis (a panic in an analyzer, a database error): the details
/// go to the log under a reference; the artifact says only that, with the reference.
fn internal_failure(what: &str, detail: impl std::fmt::Display) -> Failure {
    let reference = crate::error::new_reference();
    tracing::error!(what, error = %detail, %reference, "analysis failed on an internal error");
    Failure::Failed(format!(
        "{what} failed on an internal error (reference {reference}); the details are in the \
         server log"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_failure_names_a_reference_not_the_panic_text() {
        let Failure::Failed(message) = internal_failure(
            "the analyzer",
            "task 7 panicked with message \"byte index 27 is not a char boundary\"",
        ) else {
            panic!("expected Failed");
        };
        assert!(message.starts_with("the analyzer failed on an internal error (reference "));
        assert!(!message.contains("panicked") && !message.contains("char boundary"));
    }
}
