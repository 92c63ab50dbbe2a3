//! Bubble attribution over the API: classify a trace's GPU idle intervals against a
//! queue (request log or Prometheus capture). Inside an investigation the result is
//! kept as step 3's evidence.

use axum::body::Bytes;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiUser, Role};
use crate::bubbles::{self, Ask};
use crate::core::method::bubbles::{advise, Attribution, Classified, DEFAULT_MIN_IDLE_US};
use crate::core::FieldError;
use crate::error::{ApiResult, AppError};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(attribute_bubbles))
}

/// One GPU idle interval and what it was.
#[derive(Serialize, ToSchema)]
pub struct IntervalDoc {
    pub device: i64,
    pub stream: i64,
    /// Start on the trace's absolute clock (Unix epoch µs).
    pub start_us: f64,
    pub dur_us: f64,
    /// runtime_bubble, insufficient_load, upstream or unknown
    pub class: String,
    /// sync, step_end, memcpy, host_wait, launch_gap or other
    pub preceded_by: String,
    /// The part of the interval with work queued (µs).
    pub recoverable_us: f64,
    /// Most requests waiting at once during the interval.
    pub waiting_max: f64,
}

/// Idle time per class (µs).
#[derive(Serialize, ToSchema)]
pub struct TotalsDoc {
    pub runtime_bubble: f64,
    pub insufficient_load: f64,
    pub upstream: f64,
    pub unknown: f64,
}

#[derive(Serialize, ToSchema)]
pub struct BubblesDoc {
    /// Added to queue times to put them on the trace clock.
    pub offset_ms: f64,
    pub min_idle_us: f64,
    /// How the clocks were aligned, in words.
    pub alignment: String,
    /// request_log or prometheus
    pub source: String,
    pub window_start_us: f64,
    pub window_end_us: f64,
    pub intervals: Vec<IntervalDoc>,
    pub totals_us: TotalsDoc,
    /// Per class: total_us, share (of window × devices), count, preceded_by counts.
    #[schema(value_type = Vec<Object>)]
    pub classes: Value,
    /// Σ recoverable time of the runtime bubbles (µs).
    pub recoverable_us: f64,
    /// Runtime bubbles by recoverable time, most first (at most 20).
    pub ranked: Vec<IntervalDoc>,
    /// What it means for the method: `finding` (no_idle, unknown, all_insufficient_load,
    /// upstream or runtime_bubbles), `headline`, `dominant`, `recoverable`, `ruled_out`,
    /// `next_experiment`, and `no_tuning` (true when scheduler, batching and kernel
    /// changes must not be recommended).
    #[schema(value_type = Object)]
    pub advice: Value,
    /// Most requests waiting (and in tokenization) per bucket of the trace window; null
    /// where no queue data covers it.
    #[schema(value_type = Vec<Object>)]
    pub queue_depth: Value,
    pub notes: Vec<String>,
    /// The investigation whose step 3 keeps this result (the trace's), if any.
    pub investigation: Option<i64>,
    /// Its step-3 page.
    pub step_url: Option<String>,
}

fn interval(i: &Classified) -> IntervalDoc {
    IntervalDoc {
        device: i.device,
        stream: i.stream,
        start_us: i.start_us,
        dur_us: i.dur_us,
        class: i.class.slug().to_string(),
        preceded_by: i.preceded_by.slug().to_string(),
        recoverable_us: i.recoverable_us,
        waiting_max: i.waiting_max,
    }
}

fn doc(a: &Attribution, investigation: Option<i64>) -> BubblesDoc {
    BubblesDoc {
        offset_ms: a.offset_ms,
        min_idle_us: a.min_idle_us,
        alignment: a.alignment.clone(),
        source: a.source.slug().to_string(),
        window_start_us: a.window_start_us,
        window_end_us: a.window_end_us,
        intervals: a.intervals.iter().map(interval).collect(),
        totals_us: TotalsDoc {
            runtime_bubble: a.totals_us.runtime_bubble,
            insufficient_load: a.totals_us.insufficient_load,
            upstream: a.totals_us.upstream,
            unknown: a.totals_us.unknown,
        },
        classes: json(&a.classes),
        recoverable_us: a.recoverable_us,
        ranked: a.ranked.iter().map(interval).collect(),
        advice: json(&advise(a)),
        queue_depth: json(&a.queue_depth),
        notes: a.notes.clone(),
        investigation,
        step_url: investigation.map(|i| format!("/investigations/{i}/steps/3")),
    }
}

/// Our own plain types as JSON (they always serialize).
fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Reads `{trace, queue, offset_ms?, min_idle_us?}`; every problem is named by field.
fn ask_from_json(v: &Value) -> Result<Ask, Vec<FieldError>> {
    let mut errors = Vec::new();
    if !v.is_object() {
        return Err(vec![FieldError::new(
            "body",
            "must be a JSON object: {\"trace\": artifact id, \"queue\": artifact id, \"offset_ms\"?: number, \"min_idle_us\"?: number}",
        )]);
    }
    let mut id = |field: &str, what: &str| match v.get(field) {
        Some(Value::Number(n)) if n.as_i64().is_some_and(|i| i > 0) => n.as_i64().unwrap_or(0),
        None | Some(Value::Null) => {
            errors.push(FieldError::new(field, format!("is required: {what}")));
            0
        }
        Some(other) => {
            errors.push(FieldError::new(
                field,
                format!("must be an artifact id (a positive integer), not {other}"),
            ));
            0
        }
    };
    let trace = id(
        "trace",
        "the id of an analyzed PyTorch trace or Nsight Systems SQLite export artifact",
    );
    let queue = id(
        "queue",
        "the id of an analyzed request log or Prometheus capture artifact",
    );
    let mut number = |field: &str, default: f64| match v.get(field) {
        None | Some(Value::Null) => default,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            errors.push(FieldError::new(
                field,
                format!("must be a number, not {other}"),
            ));
            default
        }
    };
    let offset_ms = number("offset_ms", 0.0);
    let min_idle_us = number("min_idle_us", DEFAULT_MIN_IDLE_US);
    Ask::read(trace, queue, offset_ms, min_idle_us, errors)
}

/// For each GPU idle interval of a trace (per device, at least `min_idle_us`, default
/// 100 µs), was eligible work queued? Body: `{"trace": artifact id (PyTorch trace or Nsight Systems SQLite export),
/// "queue": artifact id (request log, or a Prometheus capture of timestamped scrapes),
/// "offset_ms"?: number added to queue times to put them on the trace clock (default 0:
/// both are Unix epoch clocks), "min_idle_us"?: number ≥ 50}`. Classes: runtime_bubble
/// (work queued during the interval), upstream (queue empty, requests in tokenization),
/// insufficient_load (queue empty throughout), unknown (no queue data covers it). When
/// the trace belongs to an investigation the result is kept as its step 3's evidence.
#[utoipa::path(post, path = "/bubbles", tag = "investigations",
    request_body(content = Object, description = "{\"trace\": 12, \"queue\": 13, \"offset_ms\": 0, \"min_idle_us\": 100}"),
    responses(
        (status = 200, body = BubblesDoc),
        (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn attribute_bubbles(
    user: ApiUser,
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<Json<BubblesDoc>> {
    user.require(Role::Editor)?;
    let ask = ask_from_json(&super::json_body(&body)?).map_err(AppError::Invalid)?;
    let (result, investigation) = bubbles::run(&state.pool, &ask).await?;
    if let Some(inv) = investigation {
        bubbles::store(&state.pool, inv, &ask, &result, user.0.id).await?;
    }
    Ok(Json(doc(&result, investigation)))
}
