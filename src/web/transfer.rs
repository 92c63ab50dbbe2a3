//! Export and import pages: the whole journal, one entry or one investigation as
//! Markdown (the journal format) or JSON; an import form for editors; and the Atom
//! feed of published entries, which feed readers fetch with an API token.

use crate::extract::Path;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Form, Json, Router};
use serde::Deserialize;

use super::{render, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::recall::atom::{self, FeedEntry};
use crate::core::recall::bundle::parse_import;
use crate::core::FieldError;
use crate::error::{ApiError, AppError, ErrorBody, ErrorDetail, Result};
use crate::investigations::{self as inv, journal};
use crate::search::transfer::{self, ExportFormat};
use crate::state::AppState;

/// Routes behind the login.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/journal/export.md", get(journal_markdown))
        .route("/journal/export.json", get(journal_json))
        .route("/journal/{id}/json", get(entry_json))
        .route("/journal/import", get(import_form).post(import_entries))
        .route("/investigations/{id}/markdown", get(investigation_markdown))
        .route("/investigations/{id}/json", get(investigation_json))
}

/// The feed authenticates by token itself (feed readers keep no session).
pub fn public_routes() -> Router<AppState> {
    Router::new().route("/journal/feed.atom", get(atom_feed))
}

fn today() -> String {
    chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string()
}

/// The whole journal, streamed as it is read (see [`transfer::journal_export`]).
async fn journal_markdown(State(state): State<AppState>) -> Response {
    let stream = transfer::journal_export(state.pool.clone(), ExportFormat::Markdown);
    super::download(
        "text/markdown; charset=utf-8",
        "journal.md",
        axum::body::Body::from_stream(stream),
    )
}

async fn journal_json(State(state): State<AppState>) -> Response {
    let stream = transfer::journal_export(state.pool.clone(), ExportFormat::Json);
    super::download(
        "application/json",
        "journal.json",
        axum::body::Body::from_stream(stream),
    )
}

async fn entry_json(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Response> {
    let e = journal::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))?;
    Ok(Json(transfer::exported(&e)).into_response())
}

async fn investigation_markdown(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response> {
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let (title, entry, _) = transfer::investigation_entry(&state.pool, &loaded, &today()).await?;
    Ok(super::download(
        "text/markdown; charset=utf-8",
        &format!("investigation-{id}.md"),
        entry.to_markdown(&title),
    ))
}

async fn investigation_json(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response> {
    let loaded = inv::load_or_404(&state.pool, id).await?;
    Ok(Json(transfer::investigation_export(&state.pool, &loaded, &today()).await?).into_response())
}

#[derive(Template)]
#[template(path = "search/import.html")]
struct ImportPage {
    ctx: PageCtx,
    markdown: String,
    publish: bool,
    errors: Vec<FieldError>,
    imported: Vec<(i64, String)>,
}

async fn import_form(me: CurrentUser, ctx: PageCtx) -> Result<Response> {
    me.require(Role::Editor)?;
    Ok(render(&ImportPage {
        ctx,
        markdown: String::new(),
        publish: true,
        errors: Vec::new(),
        imported: Vec::new(),
    })?
    .into_response())
}

#[derive(Deserialize)]
pub struct ImportForm {
    #[serde(default)]
    markdown: String,
    #[serde(default)]
    publish: Option<String>,
}

async fn import_entries(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<ImportForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let publish = form.publish.is_some();
    match parse_import(&form.markdown) {
        Ok(entries) => {
            let ids = transfer::import(&state.pool, me.0.id, &entries, publish).await?;
            let imported = ids
                .into_iter()
                .zip(entries.into_iter().map(|(t, _)| t))
                .collect();
            Ok(render(&ImportPage {
                ctx,
                markdown: String::new(),
                publish,
                errors: Vec::new(),
                imported,
            })?
            .into_response())
        }
        Err(errors) => Ok((
            StatusCode::UNPROCESSABLE_ENTITY,
            render(&ImportPage {
                ctx,
                markdown: form.markdown,
                publish,
                errors,
                imported: Vec::new(),
            })?,
        )
            .into_response()),
    }
}

#[derive(Deserialize)]
pub struct FeedQuery {
    token: Option<String>,
}

/// Newest published entries in the feed.
const FEED_ENTRIES: usize = 50;

/// Atom feed of published entries, newest publication first. Authenticated by an API
/// token in `Authorization: Bearer …`, or in `?token=` for readers that cannot send
/// headers (a read-only viewer's token is enough, and the URL should be kept private).
async fn atom_feed(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<FeedQuery>,
) -> std::result::Result<Response, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_string());
    let Some(token) = bearer.or(q.token) else {
        return Ok(feed_unauthorized());
    };
    if crate::auth::tokens::authenticate(&state.pool, &token)
        .await?
        .is_none()
    {
        return Ok(feed_unauthorized());
    }
    let entries = journal::recently_published(&state.pool, FEED_ENTRIES as i64).await?;
    let feed_entries: Vec<FeedEntry> = entries
        .iter()
        .map(|e| FeedEntry {
            id: e.id,
            title: e.title.clone(),
            author: e.author.clone(),
            published: e.published_at.unwrap_or(e.created_at),
            updated: e.updated_at,
            summary: e.entry.symptom.clone(),
            content: e.entry.to_markdown(&e.title),
        })
        .collect();
    let base = public_base(&state.config, &headers);
    let body = atom::feed(&base, &feed_entries, chrono::Utc::now());
    Ok((
        [(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")],
        body,
    )
        .into_response())
}

/// The feed's 401: it says what the feed accepts, which is an API token only (feed
/// readers keep no session), not the API's "token or session cookie".
fn feed_unauthorized() -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            status: StatusCode::UNAUTHORIZED.as_u16(),
            message: "authentication required: the feed takes an API token (from Settings), \
                      as `Authorization: Bearer …` or `?token=…`; a session cookie is not \
                      accepted here"
                .into(),
            fields: Vec::new(),
        },
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer realm=\"perfjournal\"")],
        Json(body),
    )
        .into_response()
}

/// Without --public-url: the address the request came to (behind a proxy, its
/// X-Forwarded-Proto). Host is the client's word, so links built from it are only as good
/// as the proxy in front; README says to set --public-url there.
/// The address users reach the app by: `--public-url`, else guessed from the request.
pub(crate) fn public_base(config: &crate::config::Config, headers: &HeaderMap) -> String {
    match &config.public_url {
        Some(url) => url.clone(),
        None => base_url(headers),
    }
}

fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            h.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}
