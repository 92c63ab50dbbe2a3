//! An artifact's bytes as HTTP carries them, for both the API and the pages. In: the
//! query naming the owner, the declared length checked before any byte is read, and the
//! parts of a multipart body handed to the areas as byte streams (an artifact's file
//! here, a trace set's files in [`trace_set`]). Out: the download ([`download`]). The
//! areas below never see a request, a multipart field or a response.

pub mod download;
pub mod trace_set;

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::artifacts::{self, Artifact, ArtifactStore, Owner};
use crate::core::FieldError;
use crate::error::AppError;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// Investigation to attach the file to.
    pub investigation: Option<String>,
    /// Journal entry to attach the file to.
    pub journal_entry: Option<String>,
    /// File name (required for a raw body; a multipart part's filename is used otherwise).
    pub name: Option<String>,
}

fn optional_id(field: &str, raw: Option<&str>) -> Result<Option<i64>, FieldError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => crate::core::json_input::typed_id(s)
            .map(Some)
            .ok_or_else(|| FieldError::new(field, format!("expected a positive id, got {s:?}"))),
    }
}

pub fn parse_upload_query(raw: Option<&str>) -> Result<(UploadQuery, Owner), AppError> {
    let q: UploadQuery = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
    let mut errors = Vec::new();
    let investigation_id = optional_id("investigation", q.investigation.as_deref())
        .map_err(|e| errors.push(e))
        .ok()
        .flatten();
    let journal_entry_id = optional_id("journal_entry", q.journal_entry.as_deref())
        .map_err(|e| errors.push(e))
        .ok()
        .flatten();
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    Ok((
        q,
        Owner {
            investigation_id,
            journal_entry_id,
        },
    ))
}

/// Refuses a declared body over the limit before reading any of it.
pub fn check_declared_length(req: &Request, limit: u64) -> Result<(), AppError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > limit => Err(AppError::PayloadTooLarge(format!(
            "the file ({n} bytes) is larger than the upload limit of {limit} bytes; nothing was stored"
        ))),
        _ => Ok(()),
    }
}

/// Receives the file part of a multipart body (the first part with a filename, or the
/// part named `file`).
pub async fn receive_multipart(
    store: &ArtifactStore,
    req: Request,
    owner: Owner,
    name: Option<&str>,
    user_id: i64,
    idempotency_key: Option<&str>,
) -> Result<Artifact, AppError> {
    let mut form = Multipart::from_request(req, &())
        .await
        .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?;
    loop {
        let field = form
            .next_field()
            .await
            .map_err(|e| AppError::BadRequest(format!("the multipart body is malformed: {e}")))?;
        let Some(field) = field else {
            return Err(AppError::field(
                "file",
                "no file in the form: choose a file to upload",
            ));
        };
        if field.file_name().is_none() && field.name() != Some("file") {
            continue;
        }
        let file_name = artifacts::clean_name(name.or(field.file_name()))
            .map_err(|e| AppError::Invalid(vec![e]))?;
        return Ok(
            artifacts::receive(store, owner, &file_name, field, user_id, idempotency_key).await?,
        );
    }
}
