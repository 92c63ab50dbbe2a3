//! CSRF: every state-changing request that rides on a session cookie must carry the
//! session's token (form field `_csrf`, or header `X-CSRF-Token` which htmx sends),
//! and must not come from another site. Bearer-token API calls, and API calls with no
//! session cookie, carry no ambient credential, so they are exempt.

use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;
use subtle::ConstantTimeEq;
use tower_sessions::Session;

use super::SESSION_CSRF;
use crate::config::Config;
use crate::error::{ApiError, AppError};

pub const HEADER: &str = "x-csrf-token";
pub const FIELD: &str = "_csrf";
/// The session cookie's name: the ambient credential this check protects.
pub const SESSION_COOKIE: &str = "perfjournal_session";

/// Whether the request carries a session cookie at all.
fn has_session_cookie(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|c| {
            c.trim_start()
                .strip_prefix(SESSION_COOKIE)
                .is_some_and(|rest| rest.starts_with('='))
        })
}

/// The session's CSRF token, created on first use.
pub async fn token(session: &Session) -> Result<String, AppError> {
    let err = |e: tower_sessions::session::Error| AppError::Internal(e.into());
    if let Some(t) = session.get::<String>(SESSION_CSRF).await.map_err(err)? {
        return Ok(t);
    }
    rotate(session).await
}

/// Replaces the token (at login, so a token seen before login is worthless after).
pub async fn rotate(session: &Session) -> Result<String, AppError> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let t = hex::encode(bytes);
    session
        .insert(SESSION_CSRF, &t)
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    Ok(t)
}

fn refuse(path: &str, why: &str) -> Response {
    let e = AppError::Forbidden(format!(
        "request refused: {why}. Reload the page and try again."
    ));
    if path.starts_with("/api/") {
        ApiError(e).into_response()
    } else {
        e.into_response()
    }
}

/// A request from another site, judged by the Fetch metadata and Origin headers.
fn cross_site(headers: &HeaderMap) -> Option<&'static str> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if site.eq_ignore_ascii_case("cross-site") {
            return Some("it came from another site");
        }
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())?;
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok())?;
    let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or(origin);
    (!origin_host.eq_ignore_ascii_case(host)).then_some("its Origin is another site")
}

pub async fn verify(State(config): State<Arc<Config>>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    let (parts, body) = req.into_parts();
    // An API call with a bearer token, or with no credential at all (which the API's
    // sign-in check then answers 401), carries nothing a forged request could ride on.
    if path.starts_with("/api/")
        && (super::extract::bearer(&parts).is_some() || !has_session_cookie(&parts.headers))
    {
        return next.run(Request::from_parts(parts, body)).await;
    }
    if let Some(why) = cross_site(&parts.headers) {
        return refuse(&path, why);
    }
    let Some(session) = parts.extensions.get::<Session>().cloned() else {
        return refuse(&path, "no session");
    };
    let expected = match session.get::<String>(SESSION_CSRF).await {
        Ok(Some(t)) => t,
        Ok(None) => {
            return refuse(
                &path,
                "the form has expired (no CSRF token in this session)",
            )
        }
        Err(e) => return AppError::Internal(e.into()).into_response(),
    };

    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut presented = parts
        .headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = body;
    if presented.is_none() && content_type.starts_with("application/x-www-form-urlencoded") {
        // Forms are small: buffer, read the field, hand the same bytes on.
        let bytes = match to_bytes(body, config.body_limit).await {
            Ok(b) => b,
            Err(_) => {
                return AppError::PayloadTooLarge(format!(
                    "the form is larger than {} bytes",
                    config.body_limit
                ))
                .into_response()
            }
        };
        presented = form_field(&bytes, FIELD);
        body = Body::from(bytes);
    } else if presented.is_none() && content_type.starts_with("multipart/form-data") {
        // A file upload without JavaScript puts the token in the action URL.
        presented = parts
            .uri
            .query()
            .and_then(|q| form_field(q.as_bytes(), FIELD));
    }
    match presented {
        Some(p) if bool::from(p.as_bytes().ct_eq(expected.as_bytes())) => {
            next.run(Request::from_parts(parts, body)).await
        }
        Some(_) => refuse(&path, "the CSRF token does not match this session"),
        None => refuse(&path, "the CSRF token is missing"),
    }
}

fn form_field(bytes: &[u8], name: &str) -> Option<String> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}
