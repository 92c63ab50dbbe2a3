//! Drills and blind replays over the API. A drill is posed from its estimator and seed
//! (no answer in it) and graded against the estimator's own chain; a replay shows steps
//! 0–2 of a published investigation until the caller has answered, then everything.

use std::collections::BTreeMap;

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ApiUser;
use crate::core::estimate::Chain;
use crate::core::training::drills::{self, Drill};
use crate::core::training::TOLERANCE;
use crate::documents::replay::{replay_doc, ReplayDoc};
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::state::AppState;
use crate::training;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_drill))
        .routes(routes!(answer_drill))
        .routes(routes!(get_replay))
        .routes(routes!(answer_replay))
}

/// What a drill asks for: a numeric key of the estimator's `results` and its unit.
#[derive(Serialize, ToSchema)]
pub struct AsksJson {
    pub key: String,
    /// ms, B, tok/s, usd, ratio, count, …
    pub unit: String,
}

/// A posed drill: the inputs, the result asked for, no answer.
#[derive(Serialize, ToSchema)]
pub struct DrillJson {
    /// Post answers to `/drills/{drill_id}/answer`.
    pub drill_id: String,
    pub estimator: String,
    pub seed: u64,
    /// chain (the end result) or step (one step of the chain)
    pub level: String,
    /// The estimator's own input keys with scalar values.
    #[schema(value_type = Object)]
    pub inputs: BTreeMap<String, Value>,
    pub asks: AsksJson,
    /// Relative tolerance of a right answer (0.05 = within 5 %).
    pub tolerance: f64,
    /// The same drill from the command line.
    pub command: String,
}

impl DrillJson {
    pub fn new(d: &Drill) -> Self {
        DrillJson {
            drill_id: d.id(),
            estimator: d.estimator.to_string(),
            seed: d.seed,
            level: d.level.slug().to_string(),
            inputs: d.inputs.clone(),
            asks: AsksJson {
                key: d.asks.key.clone(),
                unit: serde_json::to_value(d.asks.unit)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            },
            tolerance: TOLERANCE,
            command: d.command(),
        }
    }
}

/// A drill for `estimator` from `seed` (a random seed when none is given; the answer
/// names it). The same seed always gives the same drill.
#[utoipa::path(get, path = "/drills/{estimator}", tag = "training",
    params(("estimator" = String, Path, description = "e.g. decode-floor"),
        ("seed" = Option<u32>, Query, maximum = 999_999_999, description = "0 to 999999999"),
        ("level" = Option<String>, Query, description = "chain (default) or step")),
    responses((status = 200, body = DrillJson), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn get_drill(
    _: ApiUser,
    Path(estimator): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<DrillJson>> {
    let (seed, level) = training::read_drill_query(raw.as_deref())?;
    let seed = seed.unwrap_or_else(training::random_seed);
    Ok(Json(DrillJson::new(&training::pose(
        &estimator, seed, level,
    )?)))
}

/// The grade of a drill answer.
#[derive(Serialize, ToSchema)]
pub struct DrillGradeJson {
    pub correct: bool,
    /// The estimator's result for the drill's inputs, in `unit`.
    pub expected: f64,
    pub unit: String,
    pub tolerance: f64,
    /// (given − expected) / expected
    pub error: f64,
    /// The worked chain `{estimator, inputs, results, lines, sanity, units}`.
    #[schema(value_type = Object)]
    pub chain: Chain,
    /// Each intermediate value sent, against the chain's line, in chain order.
    #[schema(value_type = Vec<Object>)]
    pub steps: Vec<drills::StepCheck>,
    /// The key of the first intermediate value off by more than the tolerance.
    pub first_wrong_step: Option<String>,
}

/// Grades an answer: `{"value": 15.1}` (a number in the asked unit, or text with a unit
/// of the same dimension such as "16 GB"), optionally `"steps": {"weight_bytes_per_gpu":
/// "16 GB", …}` with intermediate values by chain line key, each in its line's unit.
/// Within 5 % counts as right; the attempt is stored for the caller's progress.
#[utoipa::path(post, path = "/drills/{drill_id}/answer", tag = "training",
    params(("drill_id" = String, Path, description = "e.g. decode-floor.42 or decode-floor.42.step")),
    request_body(content = Object, description = "{\"value\": 15.1, \"steps\": {\"weight_bytes_per_gpu\": \"16.06 GB\"}}"),
    responses((status = 200, body = DrillGradeJson), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn answer_drill(
    ApiUser(user): ApiUser,
    State(state): State<AppState>,
    Path(drill_id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<DrillGradeJson>> {
    let drill = training::pose_id(&drill_id)?;
    let body = super::json_body(&body)?;
    let Some(obj) = body.as_object() else {
        return Err(AppError::field("body", "send a JSON object: {\"value\": 15.1}").into());
    };
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let value = match obj.get("value") {
        None | Some(Value::Null) => String::new(),
        Some(v) => text(v).ok_or_else(|| {
            AppError::field("value", "must be a number, or text such as \"16 GB\"")
        })?,
    };
    let mut steps = BTreeMap::new();
    match obj.get("steps") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let t = text(v).ok_or_else(|| {
                    AppError::field(&format!("steps.{k}"), "must be a number or text")
                })?;
                steps.insert(k.clone(), t);
            }
        }
        Some(_) => {
            return Err(
                AppError::field("steps", "must be an object of chain line keys to values").into(),
            )
        }
    }
    let answer = drills::read_answer(&drill, &value, &steps).map_err(AppError::Invalid)?;
    let grade = training::submit_drill(&state.pool, user.id, &drill, &answer).await?;
    Ok(Json(DrillGradeJson {
        correct: grade.correct,
        expected: grade.expected,
        unit: DrillJson::new(&drill).asks.unit,
        tolerance: grade.tolerance,
        error: grade.error,
        chain: drill.chain().clone(),
        steps: grade.steps,
        first_wrong_step: grade.first_wrong_step,
    }))
}

/// A replay of a published investigation: the symptom and steps 0–2 until you have
/// posted an answer, then every step and the journal entry.
#[utoipa::path(get, path = "/replays/{investigation_id}", tag = "training",
    params(("investigation_id" = i64, Path)),
    responses((status = 200, body = ReplayDoc), (status = 404, body = ErrorBody)))]
async fn get_replay(
    ApiUser(user): ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> ApiResult<Json<ReplayDoc>> {
    Ok(Json(replay_doc(&state.pool, &user, id).await?))
}

/// Stores your diagnosis and the measurement you would take next (`{"diagnosis": "…",
/// "next_measurement": "…"}`, both required), then answers the full replay: steps 0–7
/// and the journal entry beside your answer. Your first answer stands; a second post
/// returns it unchanged.
#[utoipa::path(post, path = "/replays/{investigation_id}/answer", tag = "training",
    params(("investigation_id" = i64, Path)),
    request_body(content = Object, description = "{\"diagnosis\": \"queue-bound: the batch is capped\", \"next_measurement\": \"running batch vs max_num_seqs\"}"),
    responses((status = 200, body = ReplayDoc), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn answer_replay(
    ApiUser(user): ApiUser,
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Json<ReplayDoc>> {
    training::require_replayable(&state.pool, id).await?;
    let body = super::json_body(&body)?;
    let field = |k: &str| -> std::result::Result<String, AppError> {
        match body.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(AppError::field(k, "must be text")),
        }
    };
    if !body.is_object() {
        return Err(AppError::field("body", "send a JSON object").into());
    }
    let (diagnosis, next) = (field("diagnosis")?, field("next_measurement")?);
    training::answer_replay(&state.pool, user.id, id, &diagnosis, &next).await?;
    Ok(Json(replay_doc(&state.pool, &user, id).await?))
}
