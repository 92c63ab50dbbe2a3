//! Static files, compiled into the binary so a copied binary needs no asset folder.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/htmx.min.js"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/app.js"),
    ),
    (
        "perfetto.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/perfetto.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../../static/favicon.svg"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../static/app.css"),
    ),
];

pub async fn serve(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such static file").into_response(),
    }
}
