//! Webhook endpoints over the API (admins): the same checks and queue as the admin page.

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::body;
use super::wire::Webhook;
use crate::auth::{ApiUser, Role};
use crate::core::webhook;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::state::AppState;
use crate::webhooks as hooks;

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub items: Vec<Webhook>,
}

/// The body of `POST /webhooks`. Its schema states the bounds [`webhook::check`] applies.
#[derive(Deserialize)]
pub struct WebhookInput {
    #[serde(default, deserialize_with = "body::string")]
    pub url: String,
    #[serde(default, deserialize_with = "event_names")]
    pub events: Vec<String>,
    #[serde(default, deserialize_with = "body::string")]
    pub secret: String,
    #[serde(default, deserialize_with = "body::switch")]
    pub slack: bool,
}

impl utoipa::PartialSchema for WebhookInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let events: Vec<&str> = webhook::EVENTS.iter().map(|(n, _)| *n).collect();
        body::schema(serde_json::json!({
            "type": "object",
            "required": ["url", "events", "secret"],
            "properties": {
                "url": {"type": "string", "maxLength": 2000,
                    "description": "http:// or https://, with a host and no credentials",
                    "pattern": "^https?://[^\\s\\x00-\\x1f\\x7f-\\x9f/?#@]+([/?#][^\\s\\x00-\\x1f\\x7f-\\x9f]*)?$"},
                "events": {"type": "array", "minItems": 1, "maxItems": 50,
                    "items": {"type": "string", "enum": events}},
                "secret": {"type": "string", "minLength": 16, "maxLength": 200,
                    "description": "16–200 characters, no space at either end, no control characters",
                    "pattern": "^[^\\s\\x00-\\x1f\\x7f-\\x9f]([^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f])?$"},
                "slack": {"type": ["boolean", "null"]}
            }
        }))
    }
}

impl ToSchema for WebhookInput {}

fn event_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    body::strings(d, "a list of event names")
}

fn read(body: &[u8], allowed: &crate::webhooks::Allowed) -> Result<webhook::Endpoint, AppError> {
    let input: WebhookInput = body::parse(body, "{url, events, secret, slack?}")?;
    webhook::check(
        &input.url,
        &input.events,
        &input.secret,
        input.slack,
        &|ip| allowed.contains(ip),
    )
    .map_err(AppError::Invalid)
}

/// Every endpoint with its latest deliveries (admins).
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, body = WebhookList), (status = 403, body = ErrorBody)))]
pub async fn list_webhooks(
    State(state): State<AppState>,
    me: ApiUser,
) -> ApiResult<Json<WebhookList>> {
    me.require(Role::Admin)?;
    let items = hooks::list(&state.pool).await?;
    Ok(Json(WebhookList {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// Adds an endpoint (admins). Deliveries are signed with `secret`:
/// `X-Perfjournal-Signature: sha256=<hex HMAC-SHA256 of the body>`.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks",
    request_body(content = WebhookInput, description = "{\"url\": \"https://hooks.example.com/pj\", \"events\": [\"journal.published\"], \"secret\": \"a-secret-of-24-characters\"}"),
    responses(
        (status = 201, body = Webhook),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create_webhook(
    State(state): State<AppState>,
    me: ApiUser,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<Webhook>)> {
    me.require(Role::Admin)?;
    let endpoint = read(&body, &state.config.webhook_allowed)?;
    let id = hooks::add(&state.pool, &endpoint, me.0.id).await?;
    let hook = hooks::list(&state.pool)
        .await?
        .into_iter()
        .find(|h| h.id == id)
        .ok_or_else(|| AppError::not_found(format!("webhook {id} was removed meanwhile")))?;
    Ok((StatusCode::CREATED, Json(hook.into())))
}

/// Removes an endpoint and its delivery log (admins).
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = i64, Path, description = "webhook id")),
    responses(
        (status = 204),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn delete_webhook(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    me.require(Role::Admin)?;
    if !hooks::remove(&state.pool, id).await? {
        return Err(AppError::not_found(format!("there is no webhook {id}")).into());
    }
    Ok(StatusCode::NO_CONTENT)
}
