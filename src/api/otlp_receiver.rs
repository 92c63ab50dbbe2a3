//! `POST /v1/traces`: the OTLP/HTTP trace receiver. vLLM's `--otlp-traces-endpoint`
//! (with `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`) or a Collector's `otlphttp`
//! exporter sends here, with an API token of an editor as `Authorization: Bearer …`.
//!
//! Protobuf (`application/x-protobuf`) and JSON (`application/json`) bodies, optionally
//! gzip (`Content-Encoding: gzip`). The answer is an `ExportTraceServiceResponse` in the
//! body's encoding, with `partialSuccess` naming the spans not kept and why; errors are a
//! `google.rpc.Status` (`{"code": 3, "message": …}` for JSON).

use std::io::Read;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::auth::Role;
use crate::core::analyze::otlp::{
    self, Encoding, ExportTracePartialSuccess, ExportTraceServiceResponse, Message, ReadError,
    Sorter, Status,
};
use crate::error::AppError;
use crate::state::AppState;

/// Exports read at once in this process (the reading is CPU work, and each holds its
/// decompressed body): more wait for a place, up to [`DECODE_WAIT`].
pub static DECODING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// How long an export waits for a place to be read before it is answered 503.
const DECODE_WAIT: Duration = Duration::from_secs(20);

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
        if matches!(self.status.as_u16(), 429 | 503) {
            // OTLP exporters retry these after the delay.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
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

/// The body as sent, within the limit, each chunk arriving within the uploads' idle
/// timeout (a sender that stops is dropped with 408, its memory freed).
async fn read_body(state: &AppState, body: Body, encoding: Encoding) -> Result<Vec<u8>, Refusal> {
    let limit = state.config.otlp.body_limit;
    let idle = state.config.upload_idle_timeout;
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(chunk))) => {
                if out.len() + chunk.len() > limit {
                    return Err(too_large(encoding, "as sent", limit));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(Some(Err(e))) => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    encoding,
                    format!("the body broke off ({e}); nothing was stored"),
                ))
            }
            Ok(None) => return Ok(out),
            Err(_) => {
                return Err(Refusal::new(
                    StatusCode::REQUEST_TIMEOUT,
                    encoding,
                    format!(
                        "the body sent nothing for {} s, so the export was dropped; nothing was \
                         stored",
                        idle.as_secs().max(1)
                    ),
                ))
            }
        }
    }
}

fn too_large(encoding: Encoding, what: &str, limit: usize) -> Refusal {
    Refusal::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        encoding,
        format!(
            "the export is larger than {limit} bytes {what}; nothing was stored (send \
             smaller batches: OTEL_BSP_MAX_EXPORT_BATCH_SIZE)"
        ),
    )
}

/// The content coding the body declares: gzip or none.
fn gzipped(headers: &HeaderMap, encoding: Encoding) -> Result<bool, Refusal> {
    let coding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match coding.as_str() {
        "" | "identity" => Ok(false),
        "gzip" => Ok(true),
        other => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            encoding,
            format!("Content-Encoding {other:?} is not supported: send gzip or none"),
        )),
    }
}

/// Gunzips (within the limit) and reads the export into windows: on a blocking thread,
/// since a body of many spans is seconds of work.
fn sort_export(
    raw: Vec<u8>,
    gzip: bool,
    encoding: Encoding,
    limits: &crate::otlp::OtlpLimits,
) -> Result<
    (
        Vec<otlp::Group>,
        std::collections::BTreeMap<&'static str, u64>,
    ),
    Refusal,
> {
    let body = if gzip {
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
            return Err(too_large(
                encoding,
                "once decompressed",
                limits.max_decompressed,
            ));
        }
        drop(raw);
        out
    } else {
        raw
    };
    let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let mut sorter = Sorter::new(limits.window_s, now, limits.retention_s as f64);
    let over = otlp::read_export(
        &body,
        encoding,
        limits.max_spans_per_export,
        &mut |service, span, problem| {
            sorter.add(service, span, problem);
            Ok::<(), std::convert::Infallible>(())
        },
    )
    .map_err(|e| match e {
        ReadError::Malformed(m) => Refusal::new(
            StatusCode::BAD_REQUEST,
            encoding,
            format!("{m}; nothing was stored"),
        ),
        ReadError::Stopped(never) => match never {},
    })?;
    sorter.over_export(over);
    Ok(sorter.finish())
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
    let user_id = user.id;
    crate::auth::ApiUser(user)
        .require(Role::Editor)
        .map_err(|e| app(e.0))?;
    let encoding = declared?;
    let app = |e: AppError| Refusal::from_app(e, encoding);
    let gzip = gzipped(&parts.headers, encoding)?;
    // An export is an upload: it takes one of the user's and the server's upload places
    // while its body arrives and is read.
    let _slot = state
        .upload_slots
        .acquire(user_id)
        .map_err(|e| app(e.into()))?;
    let raw = read_body(state, body, encoding).await?;
    let _reading = tokio::time::timeout(DECODE_WAIT, DECODING.acquire())
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                encoding,
                "the server is reading other exports; send again shortly (nothing was stored)",
            )
        })?;
    let limits = state.config.otlp.clone();
    let (groups, refused) =
        crate::memory::spawn_blocking(move || sort_export(raw, gzip, encoding, &limits))
            .await
            .map_err(|e| {
                app(AppError::Internal(anyhow::anyhow!(
                    "reading an export: {e}"
                )))
            })??;
    let stored = crate::otlp::store(&state.pool, groups, refused, &state.config.otlp, user_id)
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
