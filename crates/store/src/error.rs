//! What the store can answer besides a result. It knows nothing of HTTP: the binary maps
//! each variant to a status and a page or a JSON body (`Error`, in the binary's
//! `error.rs`), and logs server faults there.

use crate::core::FieldError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What was asked for does not exist (or is not this user's to see).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    /// A request the store cannot act on, as a whole.
    #[error("{0}")]
    BadRequest(String),
    /// Input that fails its checks, field by field.
    #[error("{}", summarize(.0))]
    Invalid(Vec<FieldError>),
    /// The change clashes with the state it was meant for (a stale version, a duplicate).
    #[error("{0}")]
    Conflict(String),
    /// A body over the limit it was sent against.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The blob store has no room left.
    #[error("{0}")]
    StorageFull(String),
    /// A body that stopped arriving.
    #[error("{0}")]
    RequestTimeout(String),
    /// This user already has as many uploads running as allowed.
    #[error("{0}")]
    TooManyUploads(String),
    /// The server already receives as many uploads as allowed.
    #[error("{0}")]
    UploadsBusy(String),
    /// A service the store depends on (the OpenID provider) failed or cannot be reached;
    /// the message says which.
    #[error("{0}")]
    BadGateway(String),
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

/// The one line an `Invalid` reads as: every field's message.
pub fn summarize(errors: &[FieldError]) -> String {
    let parts: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    format!("invalid input: {}", parts.join("; "))
}

impl Error {
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound(what.into())
    }

    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Error::Invalid(vec![FieldError::new(field, message)])
    }
}

/// A short random reference that ties what a user was told to the log line with the details.
pub fn new_reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}
