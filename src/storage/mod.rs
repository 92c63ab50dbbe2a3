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
    pub sha256: String,
    pub size: u64,
    /// The first bytes, as uploaded (maybe gzip), for detection.
    pub head: Vec<u8>,
    /// True when the same content was already stored.
    pub existed: bool,
}

#[derive(Clone)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    /// The directory of a local store: analyzers read its files directly (the
    /// object_store stream hands out 8 KiB chunks, each through a blocking task).
    local_root: Option<std::path::PathBuf>,
}

fn blob_path(sha256: &str) -> Path {
    Path::from(format!("sha256/{}/{}", &sha256[..2], sha256))
}

impl BlobStore {
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        BlobStore {
            store,
            local_root: None,
        }
    }

    /// Blobs in a local directory (created if missing).
    pub fn local(dir: &std::path::Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir)?
            .with_automatic_cleanup(true);
        Ok(BlobStore {
            store: Arc::new(fs),
            local_root: Some(std::fs::canonicalize(dir)?),
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

    /// Streams `body` into the store, hashing on the way. Over `limit` bytes, or when the
    /// body fails mid-way, the partial object is removed and nothing is kept.
    pub async fn put_stream<S, E>(&self, mut body: S, limit: u64) -> Result<StoredBlob, StoreError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let temp = Path::from(format!("tmp/{}", uuid::Uuid::new_v4()));
        let upload = self.store.put_multipart(&temp).await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, 8 * 1024 * 1024);
        // The hash is computed on a thread of its own while this task receives and writes,
        // so the upload runs at the speed of the slower of the two, not of their sum.
        // Chunks go over in groups of about 1 MiB (the body's chunks can be a few KiB), so
        // the thread wakes rarely.
        let (to_hasher, mut groups) = tokio::sync::mpsc::channel::<Vec<Bytes>>(8);
        let hasher = tokio::task::spawn_blocking(move || {
            let mut hasher = Sha256::new();
            while let Some(group) = groups.blocking_recv() {
                for chunk in group {
                    hasher.update(&chunk);
                }
            }
            hasher.finalize()
        });
        let mut group: Vec<Bytes> = Vec::new();
        let mut grouped = 0usize;
        let mut size: u64 = 0;
        let mut head = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    writer.abort().await.ok();
                    return Err(StoreError::Body(e.to_string()));
                }
            };
            size += chunk.len() as u64;
            if size > limit {
                writer.abort().await.ok();
                return Err(StoreError::TooLarge { limit });
            }
            if head.len() < HEAD_BYTES {
                let take = (HEAD_BYTES - head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
            }
            // Back-pressure: at most a few parts in flight, so memory stays bounded.
            if let Err(e) = writer.wait_for_capacity(2).await {
                writer.abort().await.ok();
                return Err(e.into());
            }
            grouped += chunk.len();
            group.push(chunk.clone());
            if grouped >= 1 << 20 {
                grouped = 0;
                if to_hasher.send(std::mem::take(&mut group)).await.is_err() {
                    writer.abort().await.ok();
                    return Err(StoreError::Body("the hashing thread stopped".into()));
                }
            }
            writer.put(chunk);
        }
        if !group.is_empty() && to_hasher.send(group).await.is_err() {
            writer.abort().await.ok();
            return Err(StoreError::Body("the hashing thread stopped".into()));
        }
        drop(to_hasher);
        writer.finish().await?;
        let digest = hasher
            .await
            .map_err(|e| StoreError::Body(format!("the hashing thread failed: {e}")))?;
        let sha256 = hex::encode(digest);
        let target = blob_path(&sha256);
        let existed = self.store.head(&target).await.is_ok();
        // Moving over an existing blob refreshes its age, so the sweeper cannot take a
        // blob a new row is about to point at.
        self.store.rename(&temp, &target).await?;
        Ok(StoredBlob {
            sha256,
            size,
            head,
            existed,
        })
    }

    /// The blob's bytes as a stream of chunks.
    pub async fn open(
        &self,
        sha256: &str,
    ) -> Result<impl Stream<Item = Result<Bytes, object_store::Error>> + Send + 'static, StoreError>
    {
        Ok(self.store.get(&blob_path(sha256)).await?.into_stream())
    }

    /// The blob as a blocking reader, for an analyzer on a blocking thread: the file
    /// itself for a local store, else the object's stream bridged to `Read` (call this
    /// on the runtime; read from a blocking thread).
    pub async fn reader(
        &self,
        sha256: &str,
    ) -> Result<Box<dyn std::io::Read + Send + 'static>, StoreError> {
        if let Some(root) = &self.local_root {
            let path = root.join(blob_path(sha256).as_ref());
            return match std::fs::File::open(&path) {
                Ok(f) => Ok(Box::new(f)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Err(StoreError::Store(object_store::Error::NotFound {
                        path: path.display().to_string(),
                        source: Box::new(e),
                    }))
                }
                Err(e) => Err(StoreError::Store(object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: Box::new(e),
                })),
            };
        }
        use futures::TryStreamExt;
        let stream = self.open(sha256).await?;
        let reader = tokio_util::io::StreamReader::new(stream.map_err(std::io::Error::other));
        Ok(Box::new(tokio_util::io::SyncIoBridge::new(reader)))
    }

    pub async fn delete(&self, sha256: &str) -> Result<(), StoreError> {
        match self.store.delete(&blob_path(sha256)).await {
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
        let Some(root) = &self.local_root else {
            return Ok(0);
        };
        let entries = match std::fs::read_dir(root.join("tmp")) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            entries => entries?,
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes blobs no row points to and leftovers of interrupted uploads, once they
    /// are older than `grace`. `referenced` answers whether a hash is still in use.
    pub async fn sweep<F, Fut>(&self, grace: Duration, referenced: F) -> Result<usize, StoreError>
    where
        F: Fn(String) -> Fut,
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
            } else if let Some(sha) = location
                .rsplit('/')
                .next()
                .filter(|_| location.starts_with("sha256/"))
            {
                if !referenced(sha.to_string()).await {
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
