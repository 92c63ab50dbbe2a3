//! Blind replays: any investigation with a published journal entry, shown as the
//! symptom and steps 0–2 until the learner writes a diagnosis and the next measurement
//! they would take; then steps 3–7 and the entry appear beside their answer. The replay
//! pages are built from the same document as the replay API, so what one hides the
//! other hides too.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;

use super::drills::form_pairs;
use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::estimate;
use crate::error::{AppError, Result};
use crate::investigations::replay::{replay_doc, ReplayDoc, ReplayEntry};
use crate::state::AppState;
use crate::training::{self, ReplayAnswer, Replayable};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/replays", get(list))
        .route("/replays/{id}", get(show))
        .route("/replays/{id}/answer", post(answer))
        .route("/replays/{id}/mark", post(mark))
}

#[derive(Template)]
#[template(path = "learn/replays.html")]
struct ListPage {
    ctx: PageCtx,
    replays: Vec<Replayable>,
    pager: Pager,
}

async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    paging: Paging,
) -> Result<Response> {
    let mut replays =
        training::replayable(&state.pool, user.0.id, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut replays, |r| r.id);
    Ok(render(&ListPage {
        ctx,
        replays,
        pager: paging.pager(next),
    })?
    .into_response())
}

/// One step as label/value rows.
pub struct StepView {
    pub number: u8,
    pub title: &'static str,
    pub state: &'static str,
    pub rows: Vec<(String, String)>,
}

/// At most this many rows per step; a replay is a sketch, the investigation has it all.
const MAX_ROWS: usize = 80;

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            if !items.is_empty() {
                let text: Vec<String> = items.iter().map(estimate::display).collect();
                out.push((prefix.to_string(), text.join(", ")));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{}]", i + 1), item, out);
            }
        }
        Value::String(s) if s.is_empty() => {}
        other => out.push((prefix.to_string(), estimate::display(other))),
    }
}

fn step_views(doc: &ReplayDoc) -> Vec<StepView> {
    doc.steps
        .iter()
        .map(|s| {
            let mut rows = Vec::new();
            flatten("", &s.data, &mut rows);
            flatten("computed", &s.results, &mut rows);
            rows.truncate(MAX_ROWS);
            StepView {
                number: s.number,
                title: s.title,
                state: s.state,
                rows,
            }
        })
        .collect()
}

#[derive(Template)]
#[template(path = "learn/replay.html")]
struct ReplayPage {
    ctx: PageCtx,
    id: i64,
    title: String,
    service: String,
    symptom: String,
    steps: Vec<StepView>,
    hidden: Vec<u8>,
    answer: Option<ReplayAnswer>,
    entry: Option<ReplayEntry>,
    marked: bool,
    can_mark: bool,
    diagnosis: String,
    next_measurement: String,
    errors: FormErrors,
}

async fn can_mark(state: &AppState, user: &CurrentUser, id: i64) -> Result<bool> {
    // Roles first, then ownership: an author since demoted to viewer may not.
    if user.0.role < Role::Editor {
        return Ok(false);
    }
    if user.0.role >= Role::Admin {
        return Ok(true);
    }
    let owner: Option<i64> =
        sqlx::query_scalar("SELECT owner_id FROM investigations WHERE id = $1")
            .bind(id)
            .fetch_optional(&state.pool)
            .await?;
    Ok(owner == Some(user.0.id))
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    ctx: PageCtx,
    id: i64,
    typed: (String, String),
    errors: FormErrors,
) -> Result<ReplayPage> {
    let doc = replay_doc(&state.pool, &user.0, id).await?;
    Ok(ReplayPage {
        ctx,
        id,
        steps: step_views(&doc),
        title: doc.title,
        service: doc.service,
        symptom: doc.symptom,
        hidden: doc.hidden_steps,
        answer: doc.answer,
        entry: doc.journal_entry,
        marked: doc.good_for_training,
        can_mark: can_mark(state, user, id).await?,
        diagnosis: typed.0,
        next_measurement: typed.1,
        errors,
    })
}

async fn show(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    let p = page(
        &state,
        &user,
        ctx,
        id,
        Default::default(),
        FormErrors::default(),
    )
    .await?;
    Ok(render(&p)?.into_response())
}

async fn answer(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    training::require_replayable(&state.pool, id).await?;
    let form = form_pairs(&body)?;
    let diagnosis = form.get("diagnosis").cloned().unwrap_or_default();
    let next = form.get("next_measurement").cloned().unwrap_or_default();
    if let Err(errors) = training::check_replay_answer(&diagnosis, &next) {
        let p = page(
            &state,
            &user,
            ctx,
            id,
            (diagnosis, next),
            FormErrors::from(errors),
        )
        .await?;
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&p)?).into_response());
    }
    training::answer_replay(&state.pool, user.0.id, id, &diagnosis, &next).await?;
    Ok(Redirect::to(&format!("/replays/{id}#reveal")).into_response())
}

/// Sets or clears "good for training": the investigation's author or an admin only, and
/// only with a role that may write at all (an author demoted to viewer may not).
async fn mark(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    training::require_replayable(&state.pool, id).await?;
    if !can_mark(&state, &user, id).await? {
        return Err(AppError::Forbidden(
            "only the investigation's author (or an admin) can mark it good for training"
                .to_string(),
        ));
    }
    let form = form_pairs(&body)?;
    let on = match form.get("on").map(String::as_str) {
        Some("1") => true,
        Some("0") => false,
        _ => return Err(AppError::field("on", "must be 1 (mark) or 0 (unmark)")),
    };
    training::set_mark(&state.pool, id, user.0.id, on).await?;
    Ok(Redirect::to(&format!("/replays/{id}")).into_response())
}
