//! `POST /v1/traces`: the OTLP/HTTP trace receiver. vLLM's `--otlp-traces-endpoint`
//! (with `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`) or a Collector's `otlphttp`
//! exporter sends here, with an API token of an editor as `Authorization: Bearer …`.
//!
//! Protobuf (`application/x-protobuf`) and JSON (`application/json`) bodies, optionally
//! gzip (`Content-Encoding: gzip`). The answer is an `ExportTraceServiceResponse` in the
//! body's encoding, with `partialSuccess` naming the spans not kept and why; errors are a
//! `google.rpc.Status` (`{"code": 3, "message": …}` for JSON).

use std::io::Read;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::Role;
use crate::core::analyze::otlp::{
    self, ExportTracePartialSuccess, ExportTraceServiceResponse, Message, Status,
};
use crate::error::AppError;
use crate::state::AppState;

/// The two encodings of OTLP/HTTP.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

/// An OTLP error answer.
struct Refusal {
    status: StatusCode,
    message: String,
    encoding: Encoding,
}

impl Refusal {
    fn new(status: StatusCode, encoding: Encoding, message: impl Into<String>) -> Self {
        Refusal {
            status,
            message: message.into(),
            encoding,
        }
    }

    fn from_app(e: AppError, encoding: Encoding) -> Self {
        let status = e.status();
        let message = match e {
            AppError::LoginRequired { .. } => {
                "authentication required: send an API token as Authorization: Bearer <token>"
                    .to_string()
            }
            other => other.log_and_describe(),
        };
        Refusal::new(status, encoding, message)
    }
}

/// The gRPC code matching an HTTP status, as OTLP/HTTP's Status carries it.
fn grpc_code(status: StatusCode) -> i32 {
    match status.as_u16() {
        400 | 415 => otlp::INVALID_ARGUMENT,
        401 => 16,      // UNAUTHENTICATED
        403 => 7,       // PERMISSION_DENIED
        413 | 429 => 8, // RESOURCE_EXHAUSTED
        503 => 14,      // UNAVAILABLE
        _ => 13,        // INTERNAL
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = Status {
            code: grpc_code(self.status),
            message: self.message,
        };
        let mut response = encoded(
            self.status,
            self.encoding,
            &body,
            || serde_json::json!({"code": body.code, "message": body.message}),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"perfjournal\""),
            );
        }
        response
    }
}

/// A message in the request's encoding.
fn encoded<M: Message>(
    status: StatusCode,
    encoding: Encoding,
    message: &M,
    json: impl FnOnce() -> serde_json::Value,
) -> Response {
    match encoding {
        Encoding::Protobuf => (
            status,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            message.encode_to_vec(),
        )
            .into_response(),
        Encoding::Json => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            json().to_string(),
        )
            .into_response(),
    }
}

fn encoding_of(headers: &HeaderMap) -> Result<Encoding, Refusal> {
    let raw = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Encoding::Json,
            format!(
                "Content-Type {:?} is not OTLP/HTTP: send application/x-protobuf or \
                 application/json",
                raw
            ),
        )),
    }
}

/// The body as sent, then gunzipped when it says so, within the configured limits.
async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    encoding: Encoding,
) -> Result<Vec<u8>, Refusal> {
    let limits = &state.config.otlp;
    let too_large = |what: &str, limit: usize| {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            encoding,
            format!(
                "the export is larger than {limit} bytes {what}; nothing was stored (send \
                 smaller batches: OTEL_BSP_MAX_EXPORT_BATCH_SIZE)"
            ),
        )
    };
    let raw: Bytes = axum::body::to_bytes(body, limits.body_limit)
        .await
        .map_err(|_| too_large("as sent", limits.body_limit))?;
    let coding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match coding.as_str() {
        "" | "identity" => Ok(raw.to_vec()),
        "gzip" => {
            let mut out = Vec::new();
            let cap = limits.max_decompressed as u64;
            flate2::read::MultiGzDecoder::new(&raw[..])
                .take(cap + 1)
                .read_to_end(&mut out)
                .map_err(|e| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        encoding,
                        format!("the body is not valid gzip ({e}); nothing was stored"),
                    )
                })?;
            if out.len() as u64 > cap {
                return Err(too_large("once decompressed", limits.max_decompressed));
            }
            Ok(out)
        }
        other => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            encoding,
            format!("Content-Encoding {other:?} is not supported: send gzip or none"),
        )),
    }
}

/// `POST /v1/traces`.
pub async fn receive(State(state): State<AppState>, request: Request) -> Response {
    match handle(&state, request).await {
        Ok(r) => r,
        Err(refusal) => refusal.into_response(),
    }
}

async fn handle(state: &AppState, request: Request) -> Result<Response, Refusal> {
    let (parts, body) = request.into_parts();
    // Who asks comes first (a caller without a token learns nothing else); refusals
    // before the content type is known are in JSON.
    let declared = encoding_of(&parts.headers);
    let early = declared.as_ref().map_or(Encoding::Json, |e| *e);
    let app = |e: AppError| Refusal::from_app(e, early);
    let user = match crate::auth::extract::bearer(&parts) {
        Some(token) => crate::auth::tokens::authenticate(&state.pool, token)
            .await
            .map_err(|e| app(e.into()))?,
        None => None,
    }
    .ok_or_else(|| {
        app(AppError::LoginRequired {
            next: String::new(),
        })
    })?;
    crate::auth::ApiUser(user)
        .require(Role::Editor)
        .map_err(|e| app(e.0))?;
    let encoding = declared?;
    let app = |e: AppError| Refusal::from_app(e, encoding);
    let bytes = read_body(state, &parts.headers, body, encoding).await?;
    let export = match encoding {
        Encoding::Protobuf => otlp::decode_protobuf(&bytes),
        Encoding::Json => otlp::decode_json(&bytes),
    }
    .map_err(|m| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            encoding,
            format!("{m}; nothing was stored"),
        )
    })?;
    let limits = &state.config.otlp;
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let groups = otlp::split(&export, limits.window_s, now);
    let stored = super::store(
        &state.pool,
        groups,
        limits.window_s,
        limits.max_rows_per_window,
    )
    .await
    .map_err(|e| app(e.into()))?;
    let rejected = stored.rejected_spans();
    let answer = ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: rejected as i64,
            error_message: stored.message(),
        }),
    };
    Ok(encoded(
        StatusCode::OK,
        encoding,
        &answer,
        || match &answer.partial_success {
            Some(p) => serde_json::json!({
                "partialSuccess": {
                    "rejectedSpans": p.rejected_spans.to_string(),
                    "errorMessage": p.error_message,
                }
            }),
            None => serde_json::json!({}),
        },
    ))
}
