//! What the pages with a form of their own share: a form on its own page belongs to an
//! investigation, and the page answers 422 when the form's fields were refused.

use axum::http::StatusCode;

use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::state::AppState;

/// The investigation a form on its own page belongs to (404 when there is none), and
/// the page's status: 422 when fields were refused.
pub async fn investigation_form(
    state: &AppState,
    id: i64,
    errors: &[FieldError],
) -> Result<(crate::investigations::db::Investigation, StatusCode)> {
    let inv = crate::investigations::db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no investigation {id}")))?;
    let status = status(errors);
    Ok((inv, status))
}

/// A form page's status: 200, or 422 when any of its fields were refused.
pub fn status(errors: &[FieldError]) -> StatusCode {
    if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    }
}
