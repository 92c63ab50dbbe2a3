//! Blobs: uploaded files, content-addressed by sha256, through `object_store` — a local
//! directory by default, any S3-compatible store by configuration (so replicas share).
//! A body is streamed to a temporary object while it is hashed, then moved to its final
//! name; identical content ends up in one blob.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use sha2::{Digest, Sha256};

use crate::core::blob::BlobEncoding;

/// How many leading bytes an upload keeps in memory for kind detection.
pub const HEAD_BYTES: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the upload is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the upload was interrupted: {0}")]
    Body(String),
    #[error("the server's storage is full")]
    Full,
    #[error("blob storage: {0}")]
    Store(object_store::Error),
}

impl From<object_store::Error> for StoreError {
    /// A write that failed for want of space is `Full` (the person can do something about
    /// it: free space, or upload later); anything else stays a storage fault.
    fn from(e: object_store::Error) -> Self {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::StorageFull
                    || io.raw_os_error() == Some(libc::ENOSPC)
                    || io.raw_os_error() == Some(libc::EDQUOT)
                {
                    return StoreError::Full;
                }
            }
            cause = c.source();
        }
        if e.to_string().contains("No space left on device") {
            return StoreError::Full;
        }
        StoreError::Store(e)
    }
}

/// A body safely stored under its hash.
#[derive(Debug, Clone)]
pub struct StoredBlob {
    /// The sha256 of the bytes as uploaded (whatever the encoding on disk).
    pub sha256: String,
    /// Bytes as uploaded.
    pub size: u64,
    /// How the bytes are kept on disk.
    pub encoding: BlobEncoding,
    /// Bytes the blob store holds for them (after compression).
    pub stored_size: u64,
    /// The first bytes, as uploaded (maybe gzip), for detection.
    pub head: Vec<u8>,
    /// True when the same content was already stored.
    pub existed: bool,
    /// Stored as uploaded for now, to be compressed once its analysis is over (see
    /// [`BlobStore::put_stream`]); the row that points at it says so, and the
    /// compactor (`artifacts::compact`) takes it from there.
    pub compress_later: bool,
}

#[derive(Clone)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    /// The directory of a local store: analyzers read its files directly (the
    /// object_store stream hands out 8 KiB chunks, each through a blocking task).
    local_root: Option<std::path::PathBuf>,
    /// The server's own spool folder (`spool/` in the data directory), emptied at start.
    spool: Option<std::path::PathBuf>,
}

/// Where a blob lives: named by the sha256 of the original bytes, with `.zst` after it
/// when stored compressed, so the two encodings of one content never overwrite each other.
fn blob_path(sha256: &str, encoding: BlobEncoding) -> Path {
    Path::from(format!(
        "sha256/{}/{}{}",
        &sha256[..2],
        sha256,
        encoding.suffix()
    ))
}

/// The original bytes from a blob's stored bytes, as a stream; blocks of decompressed
/// output are at most [`DECODED_CHUNK`] bytes, so a highly compressible blob never
/// expands into memory at once.
pub type OriginalBytes = futures::stream::BoxStream<'static, std::io::Result<Bytes>>;

/// The largest piece of decompressed output [`BlobStore::open`] hands out at once.
pub const DECODED_CHUNK: usize = 128 * 1024;

/// Chunks of the body travel in groups of about this size between the receiving task,
/// the hashing and compressing threads and the writer, so each thread wakes rarely.
const GROUP_BYTES: usize = 1 << 20;

/// Compressed bytes are handed to the writer in pieces of about this size.
const EMIT_BYTES: usize = 256 * 1024;

/// Groups waiting in each channel between stages: memory stays bounded and the slowest
/// stage sets the pace.
const GROUPS_IN_FLIGHT: usize = 4;

/// Bytes read at a time from a blob in a local store.
const READ_CHUNK_BYTES: usize = 1 << 20;

/// A local blob's read failing, as the store's other errors are.
fn local_read_error(e: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    }
}

impl BlobStore {
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        BlobStore {
            store,
            local_root: None,
            spool: None,
        }
    }

    /// Spooled files (archives being unpacked, SQLite exports being read) go to `dir`,
    /// which belongs to this server: start-up empties it.
    pub fn with_spool(mut self, dir: std::path::PathBuf) -> Self {
        self.spool = Some(dir);
        self
    }

    /// Blobs in a local directory (created if missing).
    pub fn local(dir: &std::path::Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir)?
            .with_automatic_cleanup(true);
        let root = std::fs::canonicalize(dir)?;
        Ok(BlobStore {
            store: Arc::new(fs),
            spool: Some(root.join("spool")),
            local_root: Some(root),
        })
    }

    /// Blobs in an S3-compatible bucket; credentials, region and endpoint come from the
    /// usual AWS_* environment variables.
    pub fn s3(bucket: &str) -> anyhow::Result<Self> {
        let s3 = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()?;
        Ok(BlobStore::new(Arc::new(s3)))
    }

    /// Streams `body` into the store as it comes, hashing the original bytes on the way.
    /// Over `limit` bytes, or when the body fails mid-way, the partial object is removed
    /// and nothing is kept.
    ///
    /// Compression waits: zstd costs about a CPU-second per 400 MB, as much as parsing
    /// the rows, and an upload's analysis runs beside its body on the same cores. So a
    /// body whose first bytes show no compressed format is kept as it came, marked
    /// [`StoredBlob::compress_later`], and compressed by [`BlobStore::compress`] once its
    /// analysis is over.
    pub async fn put_stream<S, E>(&self, body: S, limit: u64) -> Result<StoredBlob, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        self.store_stream(body, limit, false).await
    }

    /// The zstd blob of content stored as uploaded (`sha256`), written beside it: the
    /// original is read back, hashed again and compressed on the way. The new blob is
    /// returned only when the bytes still hash to their name; a damaged original is an
    /// error and nothing is kept. The caller points its rows at the new blob and then
    /// removes the original.
    pub async fn compress(&self, sha256: &str) -> Result<StoredBlob, StoreError> {
        let original = self.open(sha256, BlobEncoding::Identity).await?;
        let stored = self.store_stream(original, u64::MAX, true).await?;
        if stored.sha256 != sha256 {
            if !stored.existed {
                self.delete(&stored.sha256, stored.encoding).await?;
            }
            return Err(StoreError::Body(format!(
                "the stored file {sha256} no longer hashes to its name (it reads as {}); \
                 it is kept as it is",
                stored.sha256
            )));
        }
        Ok(stored)
    }

    /// Streams `body` into the store, hashed on the way; compressed with zstd as it
    /// comes when `compress_now` and its first bytes show no compressed format.
    ///
    /// Up to four stages run at once, joined by small channels so the slowest sets the
    /// pace: this task receives the body; a thread hashes it; another compresses it
    /// (when compressing now); and the writer puts the stored bytes into the object.
    async fn store_stream<S, E>(
        &self,
        mut body: S,
        limit: u64,
        compress_now: bool,
    ) -> Result<StoredBlob, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let temp = Path::from(format!("tmp/{}", uuid::Uuid::new_v4()));
        let upload = self.store.put_multipart(&temp).await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, 8 * 1024 * 1024);

        let (to_hasher, mut hashed) = tokio::sync::mpsc::channel::<Vec<Bytes>>(GROUPS_IN_FLIGHT);
        let hasher = crate::memory::spawn_blocking(move || {
            let mut hasher = Sha256::new();
            while let Some(group) = hashed.blocking_recv() {
                for chunk in group {
                    hasher.update(&chunk);
                }
            }
            hasher.finalize()
        });
        let (to_writer, mut to_write) = tokio::sync::mpsc::channel::<Vec<Bytes>>(GROUPS_IN_FLIGHT);
        let receiving = async move {
            // Started when the first group shows the body is worth compressing.
            let mut compressor: Option<Compressor> = None;
            let received = async {
                let mut group: Vec<Bytes> = Vec::new();
                let mut grouped = 0usize;
                let mut size: u64 = 0;
                let mut head = Vec::new();
                let mut encoding = None;
                let stopped = || StoreError::Body("the storing threads stopped".into());
                loop {
                    let chunk = match body.next().await {
                        Some(Ok(c)) => Some(c),
                        Some(Err(e)) => return Err(StoreError::Body(e.to_string())),
                        None => None,
                    };
                    if let Some(chunk) = &chunk {
                        size += chunk.len() as u64;
                        if size > limit {
                            return Err(StoreError::TooLarge { limit });
                        }
                        if head.len() < HEAD_BYTES {
                            let take = (HEAD_BYTES - head.len()).min(chunk.len());
                            head.extend_from_slice(&chunk[..take]);
                        }
                        grouped += chunk.len();
                        group.push(chunk.clone());
                    }
                    let last = chunk.is_none();
                    if (grouped >= GROUP_BYTES || last) && !group.is_empty() {
                        grouped = 0;
                        let group = std::mem::take(&mut group);
                        let chosen = *encoding.get_or_insert_with(|| {
                            let chosen = crate::core::blob::encoding_for(&head);
                            if chosen == BlobEncoding::Zstd && compress_now {
                                compressor = Some(spawn_compressor(to_writer.clone()));
                            }
                            chosen
                        });
                        to_hasher.send(group.clone()).await.map_err(|_| stopped())?;
                        match (&compressor, chosen) {
                            (Some((to_compressor, _)), BlobEncoding::Zstd) => {
                                to_compressor.send(group).await.map_err(|_| stopped())?
                            }
                            _ => to_writer.send(group).await.map_err(|_| stopped())?,
                        }
                    }
                    if last {
                        return Ok((size, head, encoding.unwrap_or(BlobEncoding::Identity)));
                    }
                }
            }
            .await;
            // The stages after this one end once their inputs close.
            drop(to_hasher);
            drop(to_writer);
            let compressed = match compressor {
                Some((to_compressor, handle)) => {
                    drop(to_compressor);
                    Some(handle.await)
                }
                None => None,
            };
            (received, compressed)
        };
        // Owns its channel's end: when a write fails, the stages before it see it closed
        // and stop instead of waiting on a full channel.
        let parts = &mut writer;
        let writing = async move {
            let mut stored: u64 = 0;
            while let Some(group) = to_write.recv().await {
                for chunk in group {
                    // Back-pressure: at most a few parts in flight.
                    parts.wait_for_capacity(2).await?;
                    stored += chunk.len() as u64;
                    parts.put(chunk);
                }
            }
            Ok::<u64, object_store::Error>(stored)
        };
        let ((received, compressed), written) = tokio::join!(receiving, writing);
        // The first fault in the chain names the cause: a failed write (a full disk)
        // makes the stages before it stop too.
        let outcome = match (written, received, compressed) {
            (Err(e), _, _) => Err(StoreError::from(e)),
            (_, _, Some(Err(e))) => Err(StoreError::Body(format!(
                "the compressing thread failed: {e}"
            ))),
            (_, _, Some(Ok(Err(e)))) => Err(StoreError::Body(format!("compressing: {e}"))),
            (_, Err(e), _) => Err(e),
            (Ok(stored), Ok(received), _) => Ok((stored, received)),
        };
        let (stored_size, (size, head, encoding)) = match outcome {
            Ok(done) => done,
            Err(e) => {
                writer.abort().await.ok();
                return Err(e);
            }
        };
        writer.finish().await?;
        let digest = hasher
            .await
            .map_err(|e| StoreError::Body(format!("the hashing thread failed: {e}")))?;
        let sha256 = hex::encode(digest);
        // Compressible content not compressed now is kept as it came, for later.
        let compress_later = encoding == BlobEncoding::Zstd && !compress_now;
        let encoding = if compress_later {
            BlobEncoding::Identity
        } else {
            encoding
        };
        let target = blob_path(&sha256, encoding);
        let existed = self.store.head(&target).await.is_ok();
        // Moving over an existing blob refreshes its age, so the sweeper cannot take a
        // blob a new row is about to point at.
        self.store.rename(&temp, &target).await?;
        Ok(StoredBlob {
            sha256,
            size,
            encoding,
            stored_size,
            head,
            existed,
            compress_later,
        })
    }

    /// The blob's bytes exactly as stored (compressed for a zstd blob).
    async fn open_stored(
        &self,
        sha256: &str,
        encoding: BlobEncoding,
    ) -> Result<impl Stream<Item = Result<Bytes, object_store::Error>> + Send + 'static, StoreError>
    {
        use futures::TryStreamExt;
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let got = self.store.get(&blob_path(sha256, encoding)).await?;
        let range = got.range.clone();
        Ok(match got.payload {
            // object_store reads a local file 8 KiB at a time, each read a task on the
            // blocking pool (56,000 of them for a 452 MB log, which took 2.4 CPU-s to
            // compress after its analysis): read it a MiB at a time instead.
            object_store::GetResultPayload::File(file, _) => {
                let mut file = tokio::fs::File::from_std(file);
                file.seek(std::io::SeekFrom::Start(range.start))
                    .await
                    .map_err(local_read_error)?;
                tokio_util::io::ReaderStream::with_capacity(
                    file.take(range.end - range.start),
                    READ_CHUNK_BYTES,
                )
                .map_err(local_read_error)
                .boxed()
            }
            object_store::GetResultPayload::Stream(stream) => stream,
        })
    }

    /// The original bytes of a blob, as uploaded, streamed (a zstd blob is decompressed
    /// on the way, a block at a time). Every reader of blobs goes through here or
    /// through [`BlobStore::reader`], which is this for a remote store.
    ///
    /// A blob is asked for in the encoding its row named when it was read; when that
    /// object is gone, the content's other encoding is read instead. Both hold the same
    /// original bytes (the name is their hash), and the compactor removes a blob stored
    /// as uploaded right after its rows point at the compressed one: a reader that
    /// looked at the row just before then still gets the file.
    pub async fn open(
        &self,
        sha256: &str,
        encoding: BlobEncoding,
    ) -> Result<OriginalBytes, StoreError> {
        match self.open_as(sha256, encoding).await {
            Err(e) if is_not_found(&e) => {
                self.open_as(sha256, encoding.other()).await.map_err(|_| e)
            }
            opened => opened,
        }
    }

    async fn open_as(
        &self,
        sha256: &str,
        encoding: BlobEncoding,
    ) -> Result<OriginalBytes, StoreError> {
        use futures::TryStreamExt;
        let stored = self
            .open_stored(sha256, encoding)
            .await?
            .map_err(std::io::Error::other);
        Ok(match encoding {
            BlobEncoding::Identity => stored.boxed(),
            BlobEncoding::Zstd => zstd_decoded(stored).boxed(),
        })
    }

    /// The original bytes as a blocking reader, for an analyzer on a blocking thread:
    /// the file itself for a local store (through a zstd decoder when compressed), else
    /// [`BlobStore::open`]'s stream bridged to `Read` (call this on the runtime; read
    /// from a blocking thread).
    pub async fn reader(
        &self,
        sha256: &str,
        encoding: BlobEncoding,
    ) -> Result<Box<dyn std::io::Read + Send + 'static>, StoreError> {
        // The other encoding when this one is gone, as in `open`.
        match self.reader_as(sha256, encoding).await {
            Err(e) if is_not_found(&e) => self
                .reader_as(sha256, encoding.other())
                .await
                .map_err(|_| e),
            opened => opened,
        }
    }

    async fn reader_as(
        &self,
        sha256: &str,
        encoding: BlobEncoding,
    ) -> Result<Box<dyn std::io::Read + Send + 'static>, StoreError> {
        if let Some(root) = &self.local_root {
            let path = root.join(blob_path(sha256, encoding).as_ref());
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(StoreError::Store(object_store::Error::NotFound {
                        path: path.display().to_string(),
                        source: Box::new(e),
                    }))
                }
                Err(e) => {
                    return Err(StoreError::Store(object_store::Error::Generic {
                        store: "LocalFileSystem",
                        source: Box::new(e),
                    }))
                }
            };
            return Ok(match encoding {
                BlobEncoding::Identity => Box::new(file),
                BlobEncoding::Zstd => {
                    Box::new(zstd::stream::read::Decoder::new(file).map_err(|e| {
                        StoreError::Store(object_store::Error::Generic {
                            store: "LocalFileSystem",
                            source: Box::new(e),
                        })
                    })?)
                }
            });
        }
        let reader = tokio_util::io::StreamReader::new(self.open_as(sha256, encoding).await?);
        Ok(Box::new(tokio_util::io::SyncIoBridge::new(reader)))
    }

    /// Removes the blob of this content stored this way.
    pub async fn delete(&self, sha256: &str, encoding: BlobEncoding) -> Result<(), StoreError> {
        match self.store.delete(&blob_path(sha256, encoding)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes what uploads cut off by a crash (kill -9, power loss) left in a local
    /// store's `tmp/`, where a part being written is named `tmp/<id>#<n>` and no listing
    /// shows it. Run at start-up, before anything is accepted: a local directory belongs
    /// to one server (replicas share a bucket, whose leftovers the hourly sweep removes),
    /// so nothing there is still being written. Returns how many files went.
    pub fn remove_interrupted_uploads(&self) -> std::io::Result<usize> {
        // Spooled files too, when the spool is this server's own folder (not the
        // system's temporary directory, which replicas of a bucket may share).
        let dirs = self
            .local_root
            .iter()
            .map(|root| root.join("tmp"))
            .chain(self.spool.clone());
        let mut removed = 0;
        for dir in dirs {
            let entries = match std::fs::read_dir(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                entries => entries?,
            };
            for entry in entries {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    std::fs::remove_file(entry.path())?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Where analyses that need a file on disk (an SQLite export, an archive) write the
    /// upload's bytes while they read it: the server's spool folder (`spool/` beside a
    /// local store's blobs, or as set by [`BlobStore::with_spool`]; start-up empties it),
    /// else a folder in the system's temporary directory.
    pub fn spool_dir(&self) -> std::path::PathBuf {
        match &self.spool {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir().join("perfjournal-spool"),
        }
    }

    /// Removes blobs no row points to and leftovers of interrupted uploads, once they
    /// are older than `grace`. `referenced` answers whether a hash stored in an encoding
    /// is still in use.
    pub async fn sweep<F, Fut>(&self, grace: Duration, referenced: F) -> Result<usize, StoreError>
    where
        F: Fn(String, BlobEncoding) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::from_std(grace).unwrap_or_else(|_| chrono::Duration::hours(1));
        let mut removed = 0;
        let mut listing = self.store.list(None);
        let mut stale = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = meta?;
            if meta.last_modified > cutoff {
                continue;
            }
            let location = meta.location.to_string();
            if location.starts_with("tmp/") {
                stale.push(meta.location);
            } else if let Some((sha, encoding)) = location
                .rsplit('/')
                .next()
                .filter(|_| location.starts_with("sha256/"))
                .and_then(BlobEncoding::from_file_name)
            {
                if !referenced(sha.to_string(), encoding).await {
                    stale.push(meta.location);
                }
            }
        }
        for location in stale {
            match self.store.delete(&location).await {
                Ok(()) => removed += 1,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(removed)
    }
}

/// Whether the error says the object is not there.
fn is_not_found(e: &StoreError) -> bool {
    matches!(e, StoreError::Store(object_store::Error::NotFound { .. }))
}

/// The compressing thread: where its input goes, and its outcome.
type Compressor = (
    tokio::sync::mpsc::Sender<Vec<Bytes>>,
    tokio::task::JoinHandle<std::io::Result<()>>,
);

/// Starts the thread that compresses groups of the original bytes with zstd and hands
/// the compressed bytes on to the writer about a MiB at a time.
fn spawn_compressor(to_writer: tokio::sync::mpsc::Sender<Vec<Bytes>>) -> Compressor {
    use std::io::Write;
    let (to_compressor, mut groups) = tokio::sync::mpsc::channel::<Vec<Bytes>>(GROUPS_IN_FLIGHT);
    let handle = crate::memory::spawn_blocking(move || {
        let stopped = || std::io::Error::other("the writer stopped");
        let mut encoder = zstd::stream::write::Encoder::new(
            Vec::with_capacity(2 * EMIT_BYTES),
            crate::core::blob::ZSTD_LEVEL,
        )?;
        while let Some(group) = groups.blocking_recv() {
            for chunk in group {
                encoder.write_all(&chunk)?;
            }
            // What the encoder has emitted so far is final: it can go, copied out so the
            // encoder's buffer is reused rather than a new one made each time.
            if encoder.get_ref().len() >= EMIT_BYTES {
                let out = Bytes::copy_from_slice(encoder.get_ref());
                encoder.get_mut().clear();
                to_writer.blocking_send(vec![out]).map_err(|_| stopped())?;
            }
        }
        let rest = encoder.finish()?;
        if !rest.is_empty() {
            to_writer
                .blocking_send(vec![Bytes::from(rest)])
                .map_err(|_| stopped())?;
        }
        Ok(())
    });
    (to_compressor, handle)
}

/// A zstd stream's decompressed bytes, a block of at most [`DECODED_CHUNK`] at a time. A
/// stream that ends inside a frame is an error, never a short file passed off as whole.
fn zstd_decoded<S>(stored: S) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static
where
    S: Stream<Item = std::io::Result<Bytes>> + Send + Unpin + 'static,
{
    use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
    struct State<S> {
        stored: S,
        decoder: Option<Decoder<'static>>,
        input: Bytes,
        pos: usize,
        /// The decoder may hold more output than the last block took.
        pending: bool,
        ended: bool,
        /// The decoder's last answer: 0 once a frame is complete.
        hint: usize,
    }
    let state = State {
        stored,
        decoder: None,
        input: Bytes::new(),
        pos: 0,
        pending: false,
        ended: false,
        hint: 1,
    };
    futures::stream::try_unfold(state, |mut st| async move {
        loop {
            if st.pos < st.input.len() || st.pending {
                let decoder = match &mut st.decoder {
                    Some(d) => d,
                    None => st.decoder.insert(Decoder::new()?),
                };
                let mut out = vec![0u8; DECODED_CHUNK];
                let mut input = InBuffer::around(&st.input[st.pos..]);
                let mut output = OutBuffer::around(&mut out[..]);
                let hint = decoder.run(&mut input, &mut output)?;
                let produced = output.pos();
                // A call that did nothing (the last, to drain) answers for the next
                // frame's header; the answer that counts is the last one that worked.
                if produced > 0 || input.pos() > 0 {
                    st.hint = hint;
                }
                st.pos += input.pos();
                st.pending = produced == DECODED_CHUNK;
                if produced > 0 {
                    out.truncate(produced);
                    return Ok(Some((Bytes::from(out), st)));
                }
                if st.pos < st.input.len() {
                    continue;
                }
            }
            if st.ended {
                if st.hint != 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the stored blob ends inside its zstd stream",
                    ));
                }
                return Ok(None);
            }
            match st.stored.next().await {
                Some(chunk) => {
                    st.input = chunk?;
                    st.pos = 0;
                }
                None => {
                    st.ended = true;
                    st.pending = true;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trip(original: Vec<u8>, chunk: usize) -> (StoredBlob, Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::local(dir.path()).unwrap();
        let chunks: Vec<Result<Bytes, String>> = original
            .chunks(chunk.max(1))
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut blob = store
            .put_stream(futures::stream::iter(chunks), u64::MAX)
            .await
            .unwrap();
        if blob.compress_later {
            // Kept as it came, then compressed as the compactor does it.
            assert_eq!(blob.encoding, BlobEncoding::Identity);
            assert_eq!(blob.stored_size, blob.size);
            let compressed = store.compress(&blob.sha256).await.unwrap();
            assert_eq!(
                (&compressed.sha256, compressed.size),
                (&blob.sha256, blob.size)
            );
            assert!(!compressed.compress_later);
            store
                .delete(&blob.sha256, BlobEncoding::Identity)
                .await
                .unwrap();
            blob = compressed;
        }
        let mut streamed = Vec::new();
        let mut s = store.open(&blob.sha256, blob.encoding).await.unwrap();
        while let Some(c) = s.next().await {
            let c = c.unwrap();
            assert!(c.len() <= DECODED_CHUNK.max(8 << 20));
            streamed.extend_from_slice(&c);
        }
        let mut reader = store.reader(&blob.sha256, blob.encoding).await.unwrap();
        let read = crate::memory::spawn_blocking(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut v).unwrap();
            v
        })
        .await
        .unwrap();
        (blob, streamed, read)
    }

    fn text(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0u64;
        while out.len() < n {
            out.extend_from_slice(
                format!(
                    "{{\"name\":\"kernel_{}\",\"ts\":{},\"dur\":{}}},\n",
                    i % 97,
                    i * 13,
                    i % 31
                )
                .as_bytes(),
            );
            i += 1;
        }
        out.truncate(n);
        out
    }

    #[tokio::test]
    async fn text_is_stored_compressed_and_read_back_byte_for_byte() {
        let original = text(5 << 20);
        let (blob, streamed, read) = round_trip(original.clone(), 64 * 1024).await;
        assert_eq!(blob.encoding, BlobEncoding::Zstd);
        assert_eq!(blob.size, original.len() as u64);
        assert!(blob.stored_size * 5 < blob.size, "{blob:?}");
        assert_eq!(blob.sha256, hex::encode(Sha256::digest(&original)));
        assert!(streamed == original, "the stream gives the original bytes");
        assert!(read == original, "the reader gives the original bytes");
    }

    #[tokio::test]
    async fn a_highly_compressible_blob_streams_in_bounded_blocks() {
        let original = vec![b'a'; 40 << 20];
        let (blob, streamed, _) = round_trip(original.clone(), 1 << 20).await;
        assert!(blob.stored_size < 64 * 1024, "{blob:?}");
        assert_eq!(streamed.len(), original.len());
        assert!(streamed == original);
    }

    #[tokio::test]
    async fn compressed_uploads_and_tiny_ones_are_handled() {
        let gz = {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&text(100_000)).unwrap();
            e.finish().unwrap()
        };
        let (blob, streamed, read) = round_trip(gz.clone(), 3).await;
        assert_eq!(blob.encoding, BlobEncoding::Identity);
        assert_eq!(blob.stored_size, gz.len() as u64);
        assert!(streamed == gz && read == gz);
        let (blob, streamed, read) = round_trip(b"x".to_vec(), 1).await;
        assert_eq!(blob.encoding, BlobEncoding::Zstd);
        assert_eq!(
            (streamed.as_slice(), read.as_slice()),
            (&b"x"[..], &b"x"[..])
        );
    }

    #[tokio::test]
    async fn the_sweep_asks_about_each_blob_by_hash_and_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::local(dir.path()).unwrap();
        let put = |body: Vec<u8>| {
            let store = store.clone();
            async move {
                let chunk: Result<Bytes, String> = Ok(Bytes::from(body));
                store
                    .put_stream(futures::stream::iter([chunk]), u64::MAX)
                    .await
                    .unwrap()
            }
        };
        let text = put(text(100_000)).await;
        assert!(text.compress_later);
        let text = store.compress(&text.sha256).await.unwrap();
        let gz = put({
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(b"kept as it came").unwrap();
            e.finish().unwrap()
        })
        .await;
        assert_eq!(text.encoding, BlobEncoding::Zstd);
        assert_eq!(gz.encoding, BlobEncoding::Identity);
        assert!(!gz.compress_later, "a compressed format is kept as it came");
        // Only the zstd blob of the text is in use: the gzip one and the text as
        // uploaded go.
        let keep = (text.sha256.clone(), BlobEncoding::Zstd);
        let removed = store
            .sweep(Duration::ZERO, |sha, encoding| {
                let keep = keep.clone();
                async move { (sha, encoding) == keep }
            })
            .await
            .unwrap();
        assert_eq!(removed, 2);
        assert!(store.open(&text.sha256, text.encoding).await.is_ok());
        assert!(store.open(&gz.sha256, gz.encoding).await.is_err());
    }

    #[tokio::test]
    async fn a_cut_zstd_stream_is_an_error_not_a_short_file() {
        let compressed = zstd::encode_all(&text(1 << 20)[..], 1).unwrap();
        let cut = Bytes::copy_from_slice(&compressed[..compressed.len() / 2]);
        let mut s = Box::pin(zstd_decoded(futures::stream::iter([Ok(cut)])));
        let mut failed = false;
        while let Some(c) = s.next().await {
            if let Err(e) = c {
                assert!(e.to_string().contains("ends inside"), "{e}");
                failed = true;
            }
        }
        assert!(failed);
    }
}
