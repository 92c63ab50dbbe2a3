//! Compression of uploads after their analysis. An upload is stored as it came (see
//! `BlobStore::put_stream`), so the person waits for the analysis only, not for zstd as
//! well; once the rows of a blob are no longer queued or being analysed, this pass
//! writes its zstd blob, points every row of that content at it, and removes the
//! uncompressed one. Readers that opened the old blob keep reading it; one that looked
//! at a row just before the switch finds the other encoding (`BlobStore::open`).
//!
//! Replicas may run this at once: two compressing the same content write the same
//! blob under the same name, and the row update and removal are idempotent.

use std::time::Duration;

use super::{blob_in_use, ArtifactStore};
use crate::core::blob::BlobEncoding;

/// How often an idle compactor looks for work left by another replica or a restart.
const POLL: Duration = Duration::from_secs(2);

/// Runs forever: compresses what is waiting whenever an analysis ends (woken by
/// `store.compactions`), and at least every few seconds.
pub async fn run_compactor(state: ArtifactStore) {
    loop {
        if let Err(e) = compact_pending(&state).await {
            tracing::error!(error = %e, "compressing stored uploads");
        }
        tokio::select! {
            _ = state.compactions.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

/// Compresses, one content at a time, every blob waiting for it whose rows have
/// finished their analysis; returns how many contents were compressed.
pub async fn compact_pending(state: &ArtifactStore) -> sqlx::Result<usize> {
    let mut compressed = 0;
    loop {
        let next: Option<String> = sqlx::query_scalar(
            "SELECT sha256 FROM artifacts
             WHERE compress_pending AND status NOT IN ('queued', 'analyzing', 'capturing')
             ORDER BY id LIMIT 1",
        )
        .fetch_optional(&state.pool)
        .await?;
        let Some(sha256) = next else {
            return Ok(compressed);
        };
        if compact(state, &sha256).await? {
            compressed += 1;
        }
    }
}

/// Compresses one content's blob and points its rows at it; false when it could not
/// be compressed (the rows keep the uncompressed blob, and are not tried again).
async fn compact(state: &ArtifactStore, sha256: &str) -> sqlx::Result<bool> {
    let started = std::time::Instant::now();
    let blob = match state.blobs.compress(sha256).await {
        Ok(blob) => blob,
        Err(e) => {
            tracing::warn!(
                sha256,
                error = %e,
                "a stored upload could not be compressed: it stays as it was uploaded"
            );
            sqlx::query(
                "UPDATE artifacts SET compress_pending = false
                 WHERE sha256 = $1 AND compress_pending",
            )
            .bind(sha256)
            .execute(&state.pool)
            .await?;
            return Ok(false);
        }
    };
    // Every row of this content waiting for it (each leaves the queue here, so the
    // pass always ends).
    let switched = sqlx::query(
        "UPDATE artifacts SET blob_encoding = $2, stored_bytes = $3, compress_pending = false
         WHERE sha256 = $1 AND compress_pending",
    )
    .bind(sha256)
    .bind(blob.encoding.slug())
    .bind(blob.stored_size as i64)
    .execute(&state.pool)
    .await?
    .rows_affected();
    // What no row points at any more goes now (the hourly sweep would, a day later).
    for encoding in [BlobEncoding::Identity, blob.encoding] {
        if !blob_in_use(&state.pool, sha256, encoding).await? {
            if let Err(e) = state.blobs.delete(sha256, encoding).await {
                tracing::warn!(sha256, error = %e, "a blob stays until the sweep");
            }
        }
    }
    tracing::info!(
        sha256,
        rows = switched,
        size = blob.size,
        stored = blob.stored_size,
        seconds = started.elapsed().as_secs_f64(),
        "stored upload compressed"
    );
    Ok(true)
}
