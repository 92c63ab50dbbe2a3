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

use super::drills::form_pairs;
use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::method::record::{evaluate, Evaluation, Records, StepRecord};
use crate::core::method::record_view::{record_view, RecordView};
use crate::documents::replay::{replay_doc, ReplayAnswer, ReplayDoc, ReplayEntry};
use crate::error::{AppError, Result};
use crate::state::AppState;
use crate::training::{self, Replayable};
use crate::web::bubbles::BubblesView;
use crate::web::investigations::{step_results, StepResults};

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

/// One revealed step: its record labelled as people read it; the page adds what was
/// computed from it with the investigation page's own results view.
pub struct StepView {
    pub number: u8,
    pub title: &'static str,
    pub state: &'static str,
    pub record: Option<RecordView>,
}

/// The shown steps, and the records they hold (only those: what the replay hides is
/// not in the document, so nothing computed from it can show).
fn step_views(doc: &ReplayDoc) -> (Vec<StepView>, Records) {
    let mut records = Records::default();
    let steps = doc
        .steps
        .iter()
        .map(|s| {
            let record = StepRecord::from_json(s.number, s.data.clone());
            let unit = records.metric.map(|m| m.unit);
            let view = record.as_ref().map(|r| record_view(r, unit));
            records.set_some(record);
            StepView {
                number: s.number,
                title: s.title,
                state: s.state,
                record: view,
            }
        })
        .collect();
    (steps, records)
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
    records: Records,
    eval: Evaluation,
    /// Always none: the bubble attribution stays on the investigation's page.
    bubbles: Option<BubblesView>,
    journal_id: Option<i64>,
    hidden: Vec<u8>,
    answer: Option<ReplayAnswer>,
    entry: Option<ReplayEntry>,
    marked: bool,
    can_mark: bool,
    diagnosis: String,
    next_measurement: String,
    errors: FormErrors,
}

step_results!(ReplayPage, id);

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
    let (steps, records) = step_views(&doc);
    Ok(ReplayPage {
        ctx,
        id,
        steps,
        eval: evaluate(&records),
        records,
        bubbles: None,
        journal_id: doc.journal_entry.as_ref().map(|e| e.id),
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
