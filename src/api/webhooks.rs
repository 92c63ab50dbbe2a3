//! Webhook endpoints over the API (admins): the same checks and queue as the admin page.

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{ApiUser, Role};
use crate::core::webhook;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::state::AppState;
use crate::webhooks::{self as hooks, Webhook};

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub items: Vec<Webhook>,
}

/// The body of `POST /webhooks` (read by [`read`]; its exact shape is in the document).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct WebhookInput {
    pub url: String,
    pub events: Vec<String>,
    pub secret: String,
    pub slack: Option<bool>,
}

fn read(body: &[u8], allowed: &crate::webhooks::Allowed) -> Result<webhook::Endpoint, AppError> {
    let v = crate::api::json_body(body)?;
    if !v.is_object() {
        return Err(AppError::field(
            "body",
            "a JSON object {url, events, secret, slack?}",
        ));
    }
    let text = |k: &str| -> Result<String, AppError> {
        match v.get(k) {
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            None => Ok(String::new()),
            Some(_) => Err(AppError::field(k, "a string")),
        }
    };
    let url = text("url")?;
    let secret = text("secret")?;
    let events = match v.get("events") {
        None => Vec::new(),
        Some(e) => serde_json::from_value::<Vec<String>>(e.clone())
            .map_err(|_| AppError::field("events", "a list of event names"))?,
    };
    let slack = match v.get("slack") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(_) => return Err(AppError::field("slack", "true or false")),
    };
    webhook::check(&url, &events, &secret, slack, &|ip| allowed.contains(ip))
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
    Ok(Json(WebhookList { items }))
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
    Ok((StatusCode::CREATED, Json(hook)))
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
