//! `/api/v1/investigations`: open one from an alert or a script, read every step's
//! record and computed results, record a step with the same validation as the form.

use std::collections::BTreeMap;

use crate::extract::{Paging, Path};
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::wire::ChangedField;
use crate::auth::{ApiUser, Role};
use crate::core::method::record::{parse_step_in, step_pairs, Records, StepRecord};
use crate::core::FieldError;
use crate::documents::step::{step_json, StepJson};
use crate::error::{ApiError, ApiResult, AppError, ErrorBody, ErrorDetail};
use crate::investigations::db::{self, Investigation};
use crate::investigations::{self as inv, Loaded, StepState};
use crate::state::AppState;

/// What a new investigation starts from: the symptom as reported.
#[derive(Deserialize)]
pub struct NewInvestigation {
    /// 1–200 characters, not only spaces.
    pub title: String,
    /// At most 100 characters.
    #[serde(default)]
    pub service: String,
    /// Free text: what was seen, where, when.
    #[serde(default)]
    pub symptom: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Steps to record at once, by number: `{"1": {"metric": "ttft", "percentile":
    /// "p95", "observed": 3200, "target": 800}}`, each validated like
    /// `PUT /investigations/{id}/steps/{step}`. One invalid step refuses the whole
    /// request (422, fields named `steps.1.observed`), and nothing is created.
    #[serde(default)]
    pub steps: BTreeMap<String, serde_json::Value>,
}

impl utoipa::PartialSchema for NewInvestigation {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        super::body::schema(serde_json::json!({
            "type": "object",
            "required": ["title"],
            "description": "What a new investigation starts from: the symptom as reported.",
            "properties": {
                "title": super::body::some_text(Some(200)),
                "service": {"type": "string", "maxLength": 100},
                "symptom": {"type": "string", "description": "Free text: what was seen, where, when."},
                "tags": {"type": "array", "maxItems": 12, "items": {"type": "string",
                    "pattern": "^\\s*[\\w.:/-]{1,40}\\s*$",
                    "description": "one tag: up to 40 letters, digits, '-', '_', '.', ':' or '/'"}},
                "steps": {"type": "object",
                    "propertyNames": {"type": "string", "pattern": "^[0-7]$"},
                    "additionalProperties": {"type": "object"},
                    "description": "Steps to record at once, by number: {\"1\": {\"metric\": \
                        \"ttft\", \"percentile\": \"p95\", \"observed\": 3200, \"target\": 800}}, \
                        each validated like PUT /investigations/{id}/steps/{step}. One invalid \
                        step refuses the whole request (422, fields named steps.1.observed), and \
                        nothing is created."}
            }
        }))
    }
}

impl ToSchema for NewInvestigation {}

#[derive(Serialize, ToSchema)]
pub struct Created {
    pub id: i64,
    /// The investigation's page.
    pub url: String,
}

#[derive(Serialize, ToSchema)]
pub struct InvestigationSummary {
    pub id: i64,
    pub url: String,
    pub title: String,
    pub service: String,
    pub symptom: String,
    pub tags: Vec<String>,
    /// open, diagnosed, resolved or abandoned
    pub status: String,
    pub owner: String,
    /// Steps with a record.
    pub steps_recorded: Vec<i16>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl InvestigationSummary {
    fn new(i: Investigation, steps_recorded: Vec<i16>) -> Self {
        InvestigationSummary {
            url: format!("/investigations/{}", i.id),
            id: i.id,
            title: i.title,
            service: i.service,
            symptom: i.symptom,
            tags: i.tags,
            status: i.status,
            owner: i.owner,
            steps_recorded,
            created_at: i.created_at,
            updated_at: i.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct EntryLink {
    pub id: i64,
    pub url: String,
}

#[derive(Serialize, ToSchema)]
pub struct InvestigationDetail {
    #[serde(flatten)]
    pub summary: InvestigationSummary,
    pub steps: Vec<StepJson>,
    pub journal_entry: Option<EntryLink>,
}

fn detail(loaded: Loaded) -> InvestigationDetail {
    let steps: Vec<StepJson> = loaded
        .states()
        .into_iter()
        .enumerate()
        .map(|(n, s)| step_json(&loaded, n as u8, s))
        .collect();
    let recorded = loaded
        .recorded
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_some())
        .map(|(n, _)| n as i16)
        .collect();
    InvestigationDetail {
        steps,
        journal_entry: loaded.journal_id.map(|id| EntryLink {
            id,
            url: format!("/journal/{id}"),
        }),
        summary: InvestigationSummary::new(loaded.investigation, recorded),
    }
}

fn bad_body(e: JsonRejection) -> ApiError {
    ApiError(AppError::field("body", e.body_text()))
}

/// Opens an investigation from a symptom (editor role).
#[utoipa::path(post, path = "/investigations", tag = "investigations",
    request_body = NewInvestigation,
    responses((status = 201, body = Created), (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create_investigation(
    State(state): State<AppState>,
    me: ApiUser,
    body: Result<Json<NewInvestigation>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<Created>)> {
    me.require(Role::Editor)?;
    let Json(body) = body.map_err(bad_body)?;
    // The page takes tags as one comma-separated line; the API takes one tag per item.
    let mut tag_errors: Vec<FieldError> = body
        .tags
        .iter()
        .enumerate()
        .filter(|(_, t)| t.trim().is_empty() || t.contains(','))
        .map(|(i, _)| {
            FieldError::new(
                format!("tags[{i}]"),
                "one tag per item: not empty, no commas",
            )
        })
        .collect();
    if body.tags.len() > 12 {
        tag_errors.push(FieldError::new("tags", "At most 12 tags"));
    }
    if !tag_errors.is_empty() {
        return Err(AppError::Invalid(tag_errors).into());
    }
    let opening = crate::core::method::record::Opening::parse(
        &body.title,
        &body.service,
        &body.symptom,
        &body.tags.join(","),
    )
    .map_err(AppError::Invalid)?;
    let records = prefilled_steps(&body.steps).map_err(AppError::Invalid)?;
    let id = db::create(&state.pool, me.0.id, &opening, None).await?;
    let mut recorded = Records::default();
    for record in records {
        inv::store(&state.pool, id, me.0.id, &mut recorded, record, None, None).await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(Created {
            id,
            url: format!("/investigations/{id}"),
        }),
    ))
}

/// Parses every prefilled step before anything is stored, in step order.
fn prefilled_steps(
    steps: &BTreeMap<String, serde_json::Value>,
) -> Result<Vec<StepRecord>, Vec<FieldError>> {
    let mut records = Vec::new();
    let mut earlier = Records::default();
    let mut errors = Vec::new();
    for (key, body) in steps {
        let Some(n) = key.parse::<u8>().ok().filter(|n| *n < 8) else {
            errors.push(FieldError::new(
                format!("steps.{key}"),
                "steps are numbered 0 to 7",
            ));
            continue;
        };
        if !body.is_object() {
            errors.push(FieldError::new(
                format!("steps.{key}"),
                "send the step's fields as a JSON object",
            ));
            continue;
        }
        match parse_step_in(n, &step_pairs(n, body), &earlier) {
            Ok(StepRecord::Phases(t)) if t.rows.iter().any(|r| r.source.is_some()) => {
                // A new investigation holds no artifact a row could have come from.
                for row in t.rows.iter().filter(|r| r.source.is_some()) {
                    errors.push(FieldError::new(
                        format!("steps.2.{}.source", row.phase.slug()),
                        "a new investigation has no artifacts yet: leave the source out, \
                         or save step 2 with its source after attaching the artifact",
                    ));
                }
            }
            Ok(r) => {
                earlier.set(r.clone());
                records.push(r)
            }
            Err(es) => errors.extend(
                es.into_iter()
                    .map(|e| FieldError::new(format!("steps.{n}.{}", e.field), e.message)),
            ),
        }
    }
    records.sort_by_key(StepRecord::step);
    if errors.is_empty() {
        Ok(records)
    } else {
        Err(errors)
    }
}

/// Investigations, most recently changed first, a page at a time.
#[utoipa::path(get, path = "/investigations", tag = "investigations",
    params(crate::extract::Paging),
    responses((status = 200, body = super::Page<InvestigationSummary>), (status = 422, body = ErrorBody)))]
pub async fn list_investigations(
    State(state): State<AppState>,
    _me: ApiUser,
    paging: Paging,
) -> ApiResult<Json<super::Page<InvestigationSummary>>> {
    super::no_filters(&paging)?;
    let rows = db::list(&state.pool, paging.after, paging.fetch()).await?;
    Ok(super::Page::new(
        &paging,
        rows,
        |l| l.investigation.id,
        |l| InvestigationSummary::new(l.investigation, l.steps),
    ))
}

/// One investigation: every step's record and computed results.
#[utoipa::path(get, path = "/investigations/{id}", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    responses((status = 200, body = InvestigationDetail), (status = 404, body = ErrorBody)))]
pub async fn get_investigation(
    State(state): State<AppState>,
    _me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<Json<InvestigationDetail>> {
    let loaded = inv::load_or_404(&state.pool, id).await?;
    Ok(Json(detail(loaded)))
}

/// Records a step (editor role). The body uses the form's field names, nested:
/// step 1 `{"metric": "ttft", "percentile": "p95", "observed": 3200, "target": 800}`,
/// step 2 `{"queue_wait": {"p50": 900, "p95": 2300, "p99": 2900}, …}`, step 5
/// `{"kernels": [{"name": "…", "share": 0.4}]}`, step 7 `{"change": "…",
/// "after_config": {…}, "after_value": 780, "quality": "…"}`. Invalid input → 422
/// naming each field, and nothing is stored.
#[utoipa::path(put, path = "/investigations/{id}/steps/{step}", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id"),
        ("step" = u8, Path, description = "step number, 0 to 7")),
    request_body(content = Object, description = "the step's fields, and optionally \
        `version`: the step's version the change starts from (0 when not yet recorded); \
        a save from an older version is refused with 409"),
    responses((status = 200, body = StepJson), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = StepConflictJson),
        (status = 422, body = ErrorBody)))]
pub async fn put_step(
    State(state): State<AppState>,
    me: ApiUser,
    Path((id, step)): Path<(i64, u32)>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> ApiResult<Response> {
    me.require(Role::Editor)?;
    let step = inv::step_number(step)?;
    let Json(mut body) = body.map_err(bad_body)?;
    let Some(fields) = body.as_object_mut() else {
        return Err(AppError::field("body", "send the step's fields as a JSON object").into());
    };
    let base = match fields.remove("version") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(
            crate::core::json_input::whole_number(&v)
                .and_then(|v| i32::try_from(v).ok())
                .filter(|v| *v >= 0)
                .ok_or_else(|| {
                    AppError::field(
                        "version",
                        "the step's version is a whole number (0 when not yet recorded)",
                    )
                })?,
        ),
    };
    let evidence = match fields.remove(inv::EVIDENCE_FIELD) {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(crate::core::json_input::positive_id(&v).ok_or_else(|| {
            AppError::field(
                inv::EVIDENCE_FIELD,
                "the id of the artifact whose analysis filled this step (a whole number)",
            )
        })?),
    };
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let pairs = step_pairs(step, &body);
    if let Err(conflict) =
        inv::save_step(&state.pool, &loaded, &me.0, step, base, &pairs, evidence).await?
    {
        let body = StepConflictJson {
            error: ErrorDetail {
                status: StatusCode::CONFLICT.as_u16(),
                message: conflict.message(step),
                fields: Vec::new(),
            },
            version: conflict.current,
            saved_by: conflict.by,
            changed: conflict.changed.into_iter().map(Into::into).collect(),
        };
        return Ok((StatusCode::CONFLICT, Json(body)).into_response());
    }
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let state_now = loaded
        .states()
        .into_iter()
        .nth(step as usize)
        .unwrap_or(StepState::NotStarted);
    Ok(Json(step_json(&loaded, step, state_now)).into_response())
}

/// The investigation's journal entry (editor role): the one it has, or a new draft
/// written from its steps, as the page's "Write the journal entry" makes it. Publish it
/// with `PUT /journal/{id}`.
#[utoipa::path(post, path = "/investigations/{id}/journal", tag = "investigations",
    params(("id" = i64, Path, description = "investigation id")),
    responses((status = 201, body = EntryLink), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn draft_journal_entry(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<(StatusCode, Json<EntryLink>)> {
    me.require(Role::Editor)?;
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let entry = inv::draft_journal(&state.pool, &loaded, &me.0).await?;
    Ok((
        StatusCode::CREATED,
        Json(EntryLink {
            id: entry,
            url: format!("/journal/{entry}"),
        }),
    ))
}

/// A step save refused because the step changed since the version it started from.
#[derive(Serialize, ToSchema)]
pub struct StepConflictJson {
    pub error: ErrorDetail,
    /// The step's version now: send it as `version` to replace the other save.
    pub version: i32,
    pub saved_by: String,
    /// Each field the other save changed: its value now (`theirs`) and yours.
    pub changed: Vec<ChangedField>,
}
