//! The original bytes of an artifact as a download, for the API, the pages and the
//! Perfetto hand-off (which fetches this download) alike.

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::artifacts::Artifact;
use crate::error::AppError;
use crate::storage::BlobStore;

/// Streams the original bytes, as uploaded (a blob stored as zstd is decompressed on the
/// way, never held whole); never rendered inline.
pub async fn download(blobs: &BlobStore, artifact: &Artifact) -> Result<Response, AppError> {
    if !artifact.has_file() {
        return Err(AppError::Conflict(if artifact.status == "capturing" {
            "this capture is still running; its file exists once the window ends".into()
        } else {
            "this capture failed before it kept a file, so there is nothing to download".into()
        }));
    }
    let stream = blobs
        .open(&artifact.sha256, artifact.blob_encoding)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    let safe_name: String = artifact
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{safe_name}\""),
            ),
            (header::CONTENT_LENGTH, artifact.size_bytes.to_string()),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}
