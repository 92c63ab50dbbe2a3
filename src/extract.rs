//! Extractors whose refusals use the app's own error answers: the styled page for pages, the
//! JSON envelope under `/api/`, never axum's plain-text rejection.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, AppError};

/// Path parameters, like `axum::extract::Path`; a part of the address that does not parse
/// (`/investigations/abc`, an id past i64) answers 404 naming it.
pub struct Path<T>(pub T);

/// Why the path did not parse, and which face answers.
pub struct PathError {
    api: bool,
    error: AppError,
}

impl IntoResponse for PathError {
    fn into_response(self) -> Response {
        if self.api {
            ApiError(self.error).into_response()
        } else {
            self.error.into_response()
        }
    }
}

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = PathError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PathError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(rejection) => {
                let full = parts
                    .extensions
                    .get::<OriginalUri>()
                    .map(|u| u.0.path().to_string())
                    .unwrap_or_else(|| parts.uri.path().to_string());
                let api = full.starts_with("/api/");
                if !matches!(rejection, PathRejection::FailedToDeserializePathParams(_)) {
                    return Err(PathError {
                        api,
                        error: AppError::Internal(anyhow::anyhow!("path extraction: {rejection}")),
                    });
                }
                Err(PathError {
                    api,
                    error: AppError::NotFound(format!(
                        "no such address: {full} (a part of it is not a valid id or name here)"
                    )),
                })
            }
        }
    }
}
