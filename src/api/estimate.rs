//! `POST /api/v1/estimate/{name}`: the same chain as the CLI and the page.

use crate::extract::Path;
use axum::body::Bytes;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ApiUser;
use crate::core::estimate::{self, Chain, EstimateError, FieldSpec, Inputs};
use crate::core::FieldError;
use crate::error::{ApiResult, AppError};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_estimators))
        .routes(routes!(run_estimator))
}

#[derive(Serialize, ToSchema)]
pub struct EstimatorDoc {
    pub name: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    #[schema(value_type = Vec<Object>)]
    pub fields: &'static [FieldSpec],
}

/// The estimators and the inputs each accepts.
#[utoipa::path(get, path = "/estimate", tag = "estimators",
    responses((status = 200, body = Vec<EstimatorDoc>)))]
async fn list_estimators(_: ApiUser) -> Json<Vec<EstimatorDoc>> {
    Json(
        estimate::registry()
            .iter()
            .map(|e| EstimatorDoc {
                name: e.name,
                title: e.title,
                summary: e.summary,
                fields: e.fields,
            })
            .collect(),
    )
}

/// Runs an estimator. The body is a JSON object of its inputs (numbers or strings;
/// `config` may be a config.json object). Answers the worked chain
/// `{estimator, inputs, results, lines, sanity, units}` (the unit of every numeric result), or 422 naming each bad field.
#[utoipa::path(post, path = "/estimate/{name}", tag = "estimators",
    params(("name" = String, Path, description = "e.g. decode-floor")),
    request_body(content = Object, description = "inputs, e.g. {\"model\": \"llama-3.1-8b\", \"batch\": 64, \"context\": 4096}"),
    responses(
        (status = 200, description = "the worked chain", body = Object),
        (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
async fn run_estimator(
    _: ApiUser,
    Path(name): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Chain>> {
    let inputs = inputs_from_json(&body)?;
    match estimate::run(&name, &inputs) {
        Ok(chain) => Ok(Json(chain)),
        Err(EstimateError::UnknownEstimator(n)) => Err(AppError::not_found(format!(
            "no estimator named {n}; GET /api/v1/estimate lists them"
        ))
        .into()),
        Err(EstimateError::Invalid(errors)) => Err(AppError::Invalid(errors).into()),
    }
}

/// A JSON object into the raw inputs the core takes: numbers and booleans as text,
/// objects (a config.json) re-serialized, null as absent.
fn inputs_from_json(body: &[u8]) -> Result<Inputs, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Inputs::new());
    }
    let value: Value = super::json_body(body)?;
    let Value::Object(map) = value else {
        return Err(AppError::field("body", "expected a JSON object of inputs"));
    };
    let mut inputs = Inputs::new();
    let mut errors = Vec::new();
    for (key, v) in map {
        let text = match v {
            Value::Null => continue,
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Object(_) if key == "config" => v.to_string(),
            Value::Object(_) | Value::Array(_) => {
                errors.push(FieldError::new(
                    &key,
                    "expected a number or a string (phases and findings are strings like \"prefill:0.4:1,decode:0.6:1.2\")",
                ));
                continue;
            }
        };
        inputs.insert(key, text);
    }
    if errors.is_empty() {
        Ok(inputs)
    } else {
        Err(AppError::Invalid(errors))
    }
}
