//! The pages: one module per area, each owning its routes, handlers, forms and
//! template structs.

pub mod account;
pub mod artifacts;
pub mod assets;
pub mod bubbles;
pub mod captures;
pub mod comparisons;
pub mod csp;
pub mod ctx;
pub mod drills;
pub mod estimators;
pub mod form_page;
pub mod home;
pub mod incident_window;
pub mod investigations;
pub mod journal;
pub mod learn;
pub mod ops;
pub mod otlp;
pub mod prometheus;
pub mod proposals;
pub mod replays;
pub mod search;
pub mod sso;
pub mod trace_diffs;
pub mod trace_sets;
pub mod transfer;
pub mod webhooks;

use askama::Template;
use axum::http::{Method, Uri};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Router;

pub use ctx::{FormErrors, PageCtx};

use crate::error::{AppError, Result};
use crate::state::AppState;

/// Routes anyone may reach: login, setup, health, static files are added by the server.
pub fn public_routes() -> Router<AppState> {
    Router::new()
        .merge(account::public_routes())
        .merge(sso::public_routes())
        .merge(ops::public_routes())
        .merge(transfer::public_routes())
}

/// Routes that need a signed-in user (the server wraps them in `require_login`).
pub fn private_routes() -> Router<AppState> {
    Router::new()
        .merge(account::private_routes())
        .merge(home::routes())
        .merge(estimators::routes())
        .merge(drills::routes())
        .merge(artifacts::routes())
        .merge(captures::routes())
        .merge(comparisons::routes())
        .merge(trace_diffs::routes())
        .merge(trace_sets::routes())
        .merge(investigations::routes())
        .merge(journal::routes())
        .merge(learn::routes())
        .merge(replays::routes())
        .merge(proposals::routes())
        .merge(search::routes())
        .merge(transfer::routes())
        .merge(webhooks::routes())
        .merge(prometheus::routes())
        .merge(incident_window::routes())
        .merge(otlp::routes())
}

/// Routes that stream large bodies (the server exempts them from the request timeout
/// and the default body limit).
pub fn upload_routes() -> Router<AppState> {
    artifacts::upload_routes().merge(trace_sets::upload_routes())
}

/// The page whose form posts to a POST-only address: a GET there (a reload after a
/// refused form, a pasted link) goes back to that page instead of a bare 405.
pub fn form_page(path: &str) -> String {
    let path = path.trim_end_matches('/');
    if path.starts_with("/settings/") {
        return "/settings".into();
    }
    if path.starts_with("/admin/users/") {
        return "/admin/users".into();
    }
    match path.rsplit_once('/') {
        Some((parent, _)) if !parent.is_empty() => parent.to_string(),
        _ => "/".into(),
    }
}

/// 405 for the pages: a GET or HEAD goes to the page the form lives on (post/redirect/get
/// holds even when someone reloads a form's address); any other method gets the styled
/// error page.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    if method == Method::GET || method == Method::HEAD {
        return Redirect::to(&form_page(uri.path())).into_response();
    }
    AppError::MethodNotAllowed(format!(
        "{method} is not accepted at {}; use the form on its page",
        uri.path()
    ))
    .into_response()
}

/// Renders a template, turning a template failure into a logged 500.
pub fn render(t: &impl Template) -> Result<Html<String>> {
    let html = t
        .render()
        .map_err(|e| AppError::Internal(anyhow::Error::new(e).context("rendering a page")))?;
    Ok(Html(html))
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

#[cfg(test)]
mod tests {
    use super::form_page;

    #[test]
    fn post_only_addresses_lead_back_to_their_form() {
        assert_eq!(
            form_page("/investigations/7/steps/4/expected"),
            "/investigations/7/steps/4"
        );
        assert_eq!(form_page("/investigations/7/status"), "/investigations/7");
        assert_eq!(form_page("/settings/tokens/3/revoke"), "/settings");
        assert_eq!(form_page("/admin/users/3/role"), "/admin/users");
        assert_eq!(form_page("/logout"), "/");
        assert_eq!(form_page("/artifacts/9/reanalyze/"), "/artifacts/9");
    }
}
