//! Operations: health for load balancers, Prometheus metrics for the team's scraper.

use std::time::Duration;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::auth::{ApiUser, Role};
use crate::state::AppState;

pub fn public_routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
}

/// 200 when the database answers within two seconds, 503 otherwise:
/// `{"status": "ok" | "unavailable", "database": "ok" | "unreachable" | "restarting"}`.
/// When the app runs its own embedded cluster it adds what its supervisor did:
/// `embedded_restarts` (since start), `last_restart` (RFC 3339 or null),
/// `last_restart_reason` (what that restart recovered from) and `last_error` (the failure
/// being recovered from now, null once recovered); `database` is `restarting` while the
/// supervisor restarts it.
async fn healthz(State(state): State<AppState>) -> Response {
    let probe = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&state.pool);
    let reachable = match tokio::time::timeout(Duration::from_secs(2), probe).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: database error");
            false
        }
        Err(_) => {
            tracing::warn!("health check: database timed out");
            false
        }
    };
    let record = state.embedded.as_ref().map(|h| h.snapshot());
    let database = match (&record, reachable) {
        (_, true) => "ok",
        (Some(r), false) if r.restarting => "restarting",
        _ => "unreachable",
    };
    let mut body = if reachable {
        json!({"status": "ok", "database": database})
    } else {
        json!({"status": "unavailable", "database": database})
    };
    if let Some(r) = record {
        body["embedded_restarts"] = json!(r.restarts);
        body["last_restart"] = json!(r.last_restart);
        body["last_restart_reason"] = json!(r.last_restart_reason);
        body["last_error"] = json!(r.last_error);
    }
    if reachable {
        Json(body).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            Json(body),
        )
            .into_response()
    }
}

/// Prometheus text. An API token of any user (a scraper's), or an admin's session.
async fn metrics(State(state): State<AppState>, req: Request) -> Response {
    let (mut parts, _) = req.into_parts();
    let is_token = crate::auth::extract::bearer(&parts).is_some();
    let user = match ApiUser::from_request_parts(&mut parts, &state).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    if !is_token {
        if let Err(e) = user.require(Role::Admin) {
            return e.into_response();
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}
