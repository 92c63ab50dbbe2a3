//! The pages: one module per area, each owning its routes, handlers, forms and
//! template structs.

pub mod account;
pub mod areas;
pub mod artifacts;
pub mod assets;
pub mod bubbles;
pub mod captures;
pub mod comparisons;
pub mod ctx;
pub mod drills;
pub mod estimators;
pub mod investigations;
pub mod journal;
pub mod learn;
pub mod ops;
pub mod proposals;
pub mod replays;
pub mod search;
pub mod transfer;

use askama::Template;
use axum::response::Html;
use axum::Router;

pub use ctx::{FormErrors, PageCtx};

use crate::error::Result;
use crate::state::AppState;

/// Routes anyone may reach: login, setup, health, static files are added by the server.
pub fn public_routes() -> Router<AppState> {
    Router::new()
        .merge(account::public_routes())
        .merge(ops::public_routes())
        .merge(transfer::public_routes())
}

/// Routes that need a signed-in user (the server wraps them in `require_login`).
pub fn private_routes() -> Router<AppState> {
    Router::new()
        .merge(account::private_routes())
        .merge(areas::routes())
        .merge(estimators::routes())
        .merge(drills::routes())
        .merge(artifacts::routes())
        .merge(bubbles::routes())
        .merge(captures::routes())
        .merge(comparisons::routes())
        .merge(investigations::routes())
        .merge(journal::routes())
        .merge(learn::routes())
        .merge(replays::routes())
        .merge(proposals::routes())
        .merge(search::routes())
        .merge(transfer::routes())
}

/// Routes that stream large bodies (the server exempts them from the request timeout
/// and the default body limit).
pub fn upload_routes() -> Router<AppState> {
    artifacts::upload_routes()
}

/// Renders a template, turning a template failure into a logged 500.
pub fn render(t: &impl Template) -> Result<Html<String>> {
    Ok(Html(t.render()?))
}

/// A text export the browser saves as a file (`Content-Disposition: attachment`) rather
/// than opening as raw text.
pub(crate) fn download(
    content_type: &'static str,
    filename: &str,
    body: impl Into<axum::body::Body>,
) -> axum::response::Response {
    use axum::http::{header, HeaderValue};
    use axum::response::IntoResponse;
    let body: axum::body::Body = body.into();
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let safe: String = filename
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
        .collect();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, v);
    }
    response
}
