//! Webhook endpoints over the API (admins): the same checks and queue as the admin page.

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{ApiUser, Role};
use crate::core::webhook;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::state::AppState;
use crate::webhooks::{self as hooks, Hook};

/// An endpoint; its secret is never returned.
#[derive(Serialize, ToSchema)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub slack: bool,
    pub created_at: DateTime<Utc>,
    /// Its latest deliveries, newest first (at most 20).
    pub deliveries: Vec<WebhookDelivery>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookDelivery {
    pub id: i64,
    pub event: String,
    /// pending, delivered or failed (gave up after the last attempt).
    pub status: String,
    pub attempts: i32,
    /// The receiver's last HTTP status, if it answered.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

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

fn json(h: Hook) -> Webhook {
    Webhook {
        id: h.id,
        url: h.url,
        events: h.events,
        slack: h.slack,
        created_at: h.created_at,
        deliveries: h
            .deliveries
            .into_iter()
            .map(|d| WebhookDelivery {
                id: d.id,
                event: d.event,
                status: d.status,
                attempts: d.attempts,
                last_status: d.last_status,
                last_error: d.last_error,
                created_at: d.created_at,
                next_attempt_at: d.next_attempt_at,
                delivered_at: d.delivered_at,
            })
            .collect(),
    }
}

fn read(body: &[u8]) -> Result<webhook::Endpoint, AppError> {
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
    webhook::check(&url, &events, &secret, slack).map_err(AppError::Invalid)
}

/// Every endpoint with its latest deliveries (admins).
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, body = WebhookList), (status = 403, body = ErrorBody)))]
pub async fn list_webhooks(
    State(state): State<AppState>,
    me: ApiUser,
) -> ApiResult<Json<WebhookList>> {
    me.require(Role::Admin)?;
    let items = hooks::list(&state.pool)
        .await?
        .into_iter()
        .map(json)
        .collect();
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
    let endpoint = read(&body)?;
    let id = hooks::add(&state.pool, &endpoint, me.0.id).await?;
    let hook = hooks::list(&state.pool)
        .await?
        .into_iter()
        .find(|h| h.id == id)
        .ok_or_else(|| AppError::not_found(format!("webhook {id} was removed meanwhile")))?;
    Ok((StatusCode::CREATED, Json(json(hook))))
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
