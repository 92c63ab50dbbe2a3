//! The shell's error: what the store can say (`perfjournal_store::Error`, converted one
//! to one) plus what only a request can meet (no session, a wrong method, a throttle).
//! Pages render it as an HTML error page, the JSON API as `{"error": {...}}` (through
//! [`ApiError`]); 5xx details are logged, never sent.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Json;
use serde::Serialize;

use crate::core::FieldError;
pub use perfjournal_store::error::new_reference;
use perfjournal_store::error::{summarize, Error as StoreError};

pub type Result<T, E = AppError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    NotFound(String),
    /// No session (pages redirect to the login page; the API answers 401).
    #[error("sign in to continue")]
    LoginRequired { next: String },
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{}", summarize(.0))]
    Invalid(Vec<FieldError>),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("too many attempts; try again in {retry_after} seconds")]
    TooManyRequests { retry_after: u64 },
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("the service is busy; try again shortly")]
    Unavailable,
    #[error("{0}")]
    StorageFull(String),
    /// A body that stopped arriving (408).
    #[error("{0}")]
    RequestTimeout(String),
    /// This user already has as many uploads running as allowed (429).
    #[error("{0}")]
    TooManyUploads(String),
    /// The server already receives as many uploads as allowed (503).
    #[error("{0}")]
    UploadsBusy(String),
    /// A service the request depends on (the OpenID provider) failed or cannot be reached
    /// (502); the message says which and is shown.
    #[error("{0}")]
    BadGateway(String),
    #[error("database error")]
    Database(sqlx::Error),
    #[error("internal error")]
    Internal(anyhow::Error),
}

/// What the store said, as the shell answers it: the same kinds, one to one. Whatever
/// the store's error is made from (a database error, an upload's or a deletion's refusal,
/// `anyhow`) comes through it, so a handler's `?` takes all of them.
impl<E: Into<StoreError>> From<E> for AppError {
    fn from(e: E) -> Self {
        match e.into() {
            StoreError::NotFound(m) => AppError::NotFound(m),
            StoreError::Forbidden(m) => AppError::Forbidden(m),
            StoreError::BadRequest(m) => AppError::BadRequest(m),
            StoreError::Invalid(f) => AppError::Invalid(f),
            StoreError::Conflict(m) => AppError::Conflict(m),
            StoreError::PayloadTooLarge(m) => AppError::PayloadTooLarge(m),
            StoreError::StorageFull(m) => AppError::StorageFull(m),
            StoreError::RequestTimeout(m) => AppError::RequestTimeout(m),
            StoreError::TooManyUploads(m) => AppError::TooManyUploads(m),
            StoreError::UploadsBusy(m) => AppError::UploadsBusy(m),
            StoreError::BadGateway(m) => AppError::BadGateway(m),
            StoreError::Database(e) => AppError::Database(e),
            StoreError::Internal(e) => AppError::Internal(e),
        }
    }
}

impl AppError {
    pub fn not_found(what: impl Into<String>) -> Self {
        AppError::NotFound(what.into())
    }

    pub fn field(field: &str, message: impl Into<String>) -> Self {
        AppError::Invalid(vec![FieldError::new(field, message)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::LoginRequired { .. } => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            AppError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            AppError::StorageFull(_) => StatusCode::INSUFFICIENT_STORAGE,
            AppError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            AppError::TooManyUploads(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::UploadsBusy(_) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            AppError::Database(e) if database_unreachable(e) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Database(e) if unstorable_text(e) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Internal(e) if wraps_unreachable_database(e) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::Database(sqlx::Error::RowNotFound) => StatusCode::NOT_FOUND,
            AppError::Database(_) | AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The text a user may see: for server errors, a generic sentence (details go to the log).
    pub fn public_message(&self) -> String {
        match self {
            AppError::Database(sqlx::Error::RowNotFound) => "not found".into(),
            AppError::Database(e) if unstorable_text(e) => "a text value contains a character \
                that cannot be stored (a NUL, \\u0000, or an invalid byte sequence); remove it \
                and send again: nothing was saved"
                .into(),
            AppError::UploadsBusy(m) | AppError::BadGateway(m) => m.clone(),
            e if e.status() == StatusCode::SERVICE_UNAVAILABLE => AppError::Unavailable.to_string(),
            e if e.status().is_server_error()
                && !matches!(e, AppError::Unavailable | AppError::StorageFull(_)) =>
            {
                "something went wrong on our side; the details are in the server log".into()
            }
            e => e.to_string(),
        }
    }

    pub fn fields(&self) -> &[FieldError] {
        match self {
            AppError::Invalid(f) => f,
            _ => &[],
        }
    }

    /// Logs a server error under a new reference and returns the text a client sees: the
    /// generic sentence with that reference for faults (never the internal message), the
    /// public message otherwise.
    pub(crate) fn log_and_describe(&self) -> String {
        let status = self.status();
        if !status.is_server_error() {
            return self.public_message();
        }
        if let AppError::BadGateway(m) = self {
            tracing::warn!(error = %m, %status, "an upstream service failed");
            return m.clone();
        }
        if matches!(self, AppError::StorageFull(_)) {
            tracing::error!(error = ?self, %status, "the blob store is full");
            return self.public_message();
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(error = ?self, %status, "request failed");
            return self.public_message();
        }
        let reference = new_reference();
        tracing::error!(error = ?self, %status, %reference, "request failed");
        format!(
            "something went wrong on our side (reference {reference}); the details are in the \
             server log"
        )
    }

    fn extra_headers(&self, response: &mut Response) {
        let retry = match self {
            AppError::TooManyRequests { retry_after } => Some(*retry_after),
            AppError::TooManyUploads(_) => Some(5),
            e if e.status() == StatusCode::SERVICE_UNAVAILABLE => Some(5),
            _ => None,
        };
        if let Some(secs) = retry {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
    }
}

#[derive(askama::Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: u16,
    reason: &'a str,
    message: &'a str,
    fields: &'a [FieldError],
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        if let AppError::LoginRequired { next } = &self {
            let target = format!("/login?next={}", urlencode(next));
            return Redirect::to(&target).into_response();
        }
        let status = self.status();
        let message = self.log_and_describe();
        let page = ErrorPage {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("Error"),
            message: &message,
            fields: self.fields(),
        };
        let body = askama::Template::render(&page).unwrap_or_else(|e| {
            tracing::error!(error = %e, "rendering the error page");
            format!(
                "{} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
        });
        let mut response = (status, Html(body)).into_response();
        self.extra_headers(&mut response);
        response
    }
}

/// The JSON face of [`AppError`], for `/api/v1/*` handlers.
#[derive(Debug)]
pub struct ApiError(pub AppError);

pub type ApiResult<T> = std::result::Result<T, ApiError>;

impl<E: Into<AppError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError(e.into())
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    pub status: u16,
    pub message: String,
    #[schema(value_type = Vec<Object>)]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldError>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let described = e.log_and_describe();
        let status = e.status();
        let body = ErrorBody {
            error: ErrorDetail {
                status: status.as_u16(),
                message: match &e {
                    AppError::LoginRequired { .. } => {
                        "authentication required: send a bearer API token or a session cookie"
                            .into()
                    }
                    _ => described,
                },
                fields: e.fields().to_vec(),
            },
        };
        let mut response = (status, Json(body)).into_response();
        e.extra_headers(&mut response);
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"perfjournal\""),
            );
        }
        response
    }
}

/// Percent-encodes a value for a query string.
pub fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)])
        .map(|q| q.trim_start_matches('=').to_string())
        .unwrap_or_default()
}

/// Errors that mean the database cannot be reached right now (a pool timeout, a refused or
/// dropped connection, a server shutting down or starting up), as opposed to a fault in a
/// query: they answer 503 with Retry-After, so clients retry instead of reporting a bug.
fn database_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // Class 08: connection exceptions; 57P01-57P03: admin/crash shutdown, cannot
            // connect now (starting up or in recovery).
            code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

/// PostgreSQL refused a text value (a NUL character, or bytes that are not UTF-8): the
/// client's input, so a 422, and the statement (with its transaction) changed nothing.
fn unstorable_text(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| matches!(code.as_ref(), "22021" | "22P05")),
        _ => false,
    }
}

fn wraps_unreachable_database(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|cause| cause.downcast_ref::<sqlx::Error>())
        .any(database_unreachable)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn internal_messages_never_reach_the_client() {
        let secret = "thread 'worker' panicked at src/core/analyze/x.rs:12: index out of bounds";
        let page = AppError::Internal(anyhow::anyhow!(secret)).into_response();
        assert_eq!(page.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let text = body_of(page).await;
        assert!(
            !text.contains("panicked") && !text.contains("x.rs"),
            "{text}"
        );
        assert!(text.contains("reference "), "{text}");

        let api = ApiError(AppError::Internal(anyhow::anyhow!(secret))).into_response();
        let json: serde_json::Value = serde_json::from_str(&body_of(api).await).unwrap();
        let message = json["error"]["message"].as_str().unwrap();
        assert!(!message.contains("panicked"), "{message}");
        assert!(message.contains("reference "), "{message}");
    }

    #[tokio::test]
    async fn a_lost_database_connection_is_503_with_retry_after() {
        let lost = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        for e in [
            AppError::Database(sqlx::Error::Io(lost)),
            AppError::Database(sqlx::Error::PoolClosed),
            AppError::Internal(anyhow::Error::new(sqlx::Error::PoolTimedOut).context("loading")),
        ] {
            let r = ApiError(e).into_response();
            assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(r.headers()[header::RETRY_AFTER], "5");
            let text = body_of(r).await;
            assert!(text.contains("busy"), "{text}");
        }
    }
}
