//! The JSON API under `/api/v1`, described by an OpenAPI document generated from the
//! handlers themselves (utoipa), so the document cannot drift from the code.

pub(crate) mod artifacts;
mod body;
mod bubbles;
mod captures;
pub(crate) mod comparisons;
mod contract;
mod estimate;
mod incident_window;
mod investigations;
mod journal;
mod otlp;
pub(crate) mod otlp_receiver;
mod prometheus;
pub(crate) mod proposals;
mod search;
pub(crate) mod sweeps;
pub(crate) mod trace_diffs;
pub(crate) mod trace_sets;
pub(crate) mod training;
mod webhooks;
mod wire;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ApiUser;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "perfjournal API",
        description = "Investigations, estimators and the journal for LLM serving performance. \
                       Authenticate with `Authorization: Bearer <token>` (tokens are created on \
                       the settings page)."
    ),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// One page of a list, newest first. `next` is the address of the following page (the
/// same filters, `after` = the last item's id), `null` on the last page; follow it until
/// it is `null` to read the whole list.
#[derive(Serialize, ToSchema)]
pub struct Page<T: ToSchema> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

impl<T: ToSchema> Page<T> {
    /// The page from rows fetched with [`Paging::fetch`](crate::extract::Paging::fetch).
    pub fn new<R>(
        paging: &crate::extract::Paging,
        mut rows: Vec<R>,
        id: impl Fn(&R) -> i64,
        item: impl FnMut(R) -> T,
    ) -> Json<Page<T>> {
        let next = paging.finish(&mut rows, id);
        Json(Page {
            items: rows.into_iter().map(item).collect(),
            next,
        })
    }
}

/// Refuses parameters a list does not know (422 naming the first).
pub(crate) fn no_filters(paging: &crate::extract::Paging) -> Result<(), crate::error::ApiError> {
    match paging.filters().first() {
        Some((key, _)) => {
            Err(crate::error::AppError::field(key, "unknown parameter (after, limit)").into())
        }
        None => Ok(()),
    }
}

/// Routes that stream large bodies (no timeout, no default body limit).
pub fn upload_router() -> OpenApiRouter<AppState> {
    artifacts::upload_router().merge(trace_sets::upload_router())
}

/// All other API routes (paths relative to `/api/v1`) and their OpenAPI description.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(whoami))
        .merge(estimate::router())
        .merge(artifacts::router())
        .merge(bubbles::router())
        .merge(captures::router())
        .merge(comparisons::router())
        .merge(proposals::router())
        .merge(training::router())
        .merge(sweeps::router())
        .merge(trace_diffs::router())
        .merge(trace_sets::router())
        .merge(otlp::router())
        .routes(routes!(
            investigations::create_investigation,
            investigations::list_investigations
        ))
        .routes(routes!(investigations::get_investigation))
        .routes(routes!(investigations::put_step))
        .routes(routes!(investigations::draft_journal_entry))
        .routes(routes!(journal::list_entries, journal::create_entry))
        .routes(routes!(journal::get_entry, journal::put_entry))
        .routes(routes!(search::search_documents))
        .routes(routes!(search::list_synonyms, search::create_synonyms))
        .routes(routes!(search::put_synonyms, search::delete_synonyms))
        .routes(routes!(search::similar_investigations))
        .routes(routes!(webhooks::list_webhooks, webhooks::create_webhook))
        .routes(routes!(webhooks::delete_webhook))
        .routes(routes!(prometheus::list_sources, prometheus::create_source))
        .routes(routes!(prometheus::delete_source))
        .routes(routes!(prometheus::start_window))
        .routes(routes!(
            incident_window::get_window,
            incident_window::put_window,
            incident_window::delete_window
        ))
        .routes(routes!(list_login_locks))
        .routes(routes!(clear_login_locks))
}

/// User names locked out of signing in now, per client address (admins).
#[utoipa::path(get, path = "/admin/login-locks", tag = "account",
    responses(
        (status = 200, body = Vec<wire::LockedName>),
        (status = 403, body = crate::error::ErrorBody)))]
async fn list_login_locks(
    State(state): State<AppState>,
    me: ApiUser,
) -> crate::error::ApiResult<Json<Vec<wire::LockedName>>> {
    me.require(crate::auth::Role::Admin)?;
    Ok(Json(
        state
            .throttle
            .locked_names()
            .into_iter()
            .map(Into::into)
            .collect(),
    ))
}

#[derive(Serialize, ToSchema)]
pub struct ClearedLocks {
    /// How many (name, address) locks ended.
    pub cleared: usize,
}

/// Ends every sign-in lock of a user name, from any address (admins).
#[utoipa::path(delete, path = "/admin/login-locks/{name}", tag = "account",
    params(("name" = String, Path, description = "user name")),
    responses(
        (status = 200, body = ClearedLocks),
        (status = 403, body = crate::error::ErrorBody)))]
async fn clear_login_locks(
    State(state): State<AppState>,
    me: ApiUser,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> crate::error::ApiResult<Json<ClearedLocks>> {
    me.require(crate::auth::Role::Admin)?;
    let cleared = state.throttle.clear_name(&name);
    tracing::info!(admin = %me.0.name, user = %name, cleared, "sign-in lock cleared by an admin");
    Ok(Json(ClearedLocks { cleared }))
}

#[derive(Serialize, ToSchema)]
pub struct Me {
    pub id: i64,
    pub name: String,
    /// viewer, editor or admin
    pub role: String,
}

/// The account the token or session belongs to.
#[utoipa::path(get, path = "/me", tag = "account",
    responses((status = 200, body = Me), (status = 401, body = crate::error::ErrorBody)))]
async fn whoami(ApiUser(user): ApiUser) -> Json<Me> {
    Json(Me {
        id: user.id,
        name: user.name,
        role: user.role.to_string(),
    })
}

/// Finishes the merged document so standard tools accept it and clients resolve it: the
/// base path as `servers`, a description on every response (the status's meaning in this
/// API where the annotation gave none), the statuses every route can answer (400 for a malformed query string, 401 without a
/// valid token, 503 while the database is unreachable), and binary bodies as binary strings
/// rather than arrays of integers; then the exact body and parameter shapes of
/// [`contract`].
pub fn complete(mut doc: utoipa::openapi::OpenApi) -> serde_json::Value {
    use utoipa::openapi::{
        schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type},
        Ref, RefOr, ResponseBuilder, Server,
    };
    doc.servers = Some(vec![Server::new("/api/v1")]);
    let error = || {
        RefOr::T(
            ResponseBuilder::new()
                .content(
                    "application/json",
                    utoipa::openapi::ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build(),
        )
    };
    let binary = || {
        RefOr::T(utoipa::openapi::Schema::Object(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
                .build(),
        ))
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let has_path_params = path.contains('{');
        let operations = [
            (false, &mut item.get),
            (true, &mut item.put),
            (true, &mut item.post),
            (true, &mut item.delete),
            (true, &mut item.patch),
        ];
        for (writes, op) in operations {
            let Some(op) = op else { continue };
            let responses = &mut op.responses.responses;
            // Any query string can be malformed (a repeated parameter, bad escapes).
            responses.entry("400".into()).or_insert_with(error);
            responses.entry("401".into()).or_insert_with(error);
            responses.entry("503".into()).or_insert_with(error);
            if writes {
                responses.entry("403".into()).or_insert_with(error);
                responses.entry("422".into()).or_insert_with(error);
            }
            if has_path_params {
                responses.entry("404".into()).or_insert_with(error);
            }
            for (status, response) in responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                if response.description.is_empty() {
                    response.description = describe_status(status).to_string();
                }
                for (content_type, content) in response.content.iter_mut() {
                    if let (true, RefOr::T(content)) =
                        (content_type == "application/octet-stream", content)
                    {
                        content.schema = Some(binary());
                    }
                }
            }
            if let Some(RefOr::T(body)) = &mut op.request_body {
                for (content_type, content) in body.content.iter_mut() {
                    if let (true, RefOr::T(content)) =
                        (content_type == "application/octet-stream", content)
                    {
                        content.schema = Some(binary());
                    }
                }
            }
        }
    }
    // The document is plain data: it always serializes.
    let mut doc = serde_json::to_value(&doc).unwrap_or_default();
    contract::apply(&mut doc);
    doc
}

/// What a status means from this API, for responses documented without a description.
fn describe_status(status: &str) -> &'static str {
    match status {
        "200" => "OK",
        "201" => "Created; the body names the new record and its address",
        "204" => "Done; no body",
        "400" => "The request could not be read (the message says what)",
        "401" => "No valid API token: send `Authorization: Bearer <token>`",
        "403" => {
            "Your role does not allow this (viewers read; editors write), or a browser \
             session's request came without its CSRF token"
        }
        "404" => "No such record, or a part of the address is not a valid id or name",
        "409" => "The record changed since you read it: reload, then save again",
        "413" => "The body is larger than the configured limit; nothing was stored",
        "422" => "The input was refused; `error.fields` names each field and what is wrong",
        "429" => "Too many attempts; wait for `Retry-After` seconds",
        "503" => "The database is unreachable right now; retry after `Retry-After` seconds",
        _ => "See the message in the body",
    }
}

/// A request body as JSON; not JSON is a 422 on `body` naming the line and column.
pub(crate) fn json_body(body: &[u8]) -> Result<serde_json::Value, crate::error::AppError> {
    serde_json::from_slice(body).map_err(|e| {
        crate::error::AppError::field(
            "body",
            format!(
                "not valid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        )
    })
}
