//! A blind replay as one document: the symptom and steps 0–2 until the learner answers,
//! then every step and the published entry. The API and the pages show the same one, so
//! what one hides the other hides too.

use serde::Serialize;
use sqlx::PgPool;

use super::step::{step_json, StepJson};
use crate::auth::User;
use crate::error::Result;
use crate::investigations::{self as inv, journal};
use crate::training;

/// What a learner wrote before the reveal.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReplayAnswer {
    pub diagnosis: String,
    pub next_measurement: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

impl From<training::ReplayAnswer> for ReplayAnswer {
    fn from(a: training::ReplayAnswer) -> Self {
        ReplayAnswer {
            diagnosis: a.diagnosis,
            next_measurement: a.next_measurement,
            at: a.at,
        }
    }
}

/// The journal entry a replay reveals.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReplayEntry {
    pub id: i64,
    pub url: String,
    pub title: String,
    pub date: String,
    pub symptom: String,
    pub workload: String,
    pub baseline: String,
    pub diagnosis: String,
    pub change: String,
    pub result: String,
    pub quality: String,
    pub effort: String,
}

/// A blind replay of a published investigation.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReplayDoc {
    pub investigation_id: i64,
    pub title: String,
    pub service: String,
    /// The symptom as first reported.
    pub symptom: String,
    /// Steps 0–2 until you answer; then 0–7, as `GET /investigations/{id}` gives them.
    pub steps: Vec<StepJson>,
    /// Steps held back until you answer (3–7), empty after.
    pub hidden_steps: Vec<u8>,
    /// Your answer, once given.
    pub answer: Option<ReplayAnswer>,
    /// The published entry, once you have answered.
    pub journal_entry: Option<ReplayEntry>,
    /// Marked "good for training" by its author.
    pub good_for_training: bool,
}

/// Steps a replay shows before the learner answers.
pub const SHOWN_BEFORE_ANSWER: u8 = 3;

/// The replay of investigation `id` as `user` may see it now.
pub async fn replay_doc(pool: &PgPool, user: &User, id: i64) -> Result<ReplayDoc> {
    training::require_replayable(pool, id).await?;
    let loaded = inv::load_or_404(pool, id).await?;
    let answer = training::replay_answer(pool, user.id, id).await?;
    let shown = if answer.is_some() {
        8
    } else {
        SHOWN_BEFORE_ANSWER
    };
    let steps = loaded
        .states()
        .into_iter()
        .enumerate()
        .take(shown as usize)
        .map(|(n, s)| step_json(&loaded, n as u8, s))
        .collect();
    let journal_entry = match (&answer, loaded.journal_id) {
        (Some(_), Some(entry_id)) => journal::get(pool, entry_id)
            .await?
            .filter(|e| e.is_published())
            .map(|e| ReplayEntry {
                url: format!("/journal/{}", e.id),
                id: e.id,
                title: e.title,
                date: e.entry.date,
                symptom: e.entry.symptom,
                workload: e.entry.workload,
                baseline: e.entry.baseline,
                diagnosis: e.entry.diagnosis,
                change: e.entry.change,
                result: e.entry.result,
                quality: e.entry.quality,
                effort: e.entry.effort,
            }),
        _ => None,
    };
    Ok(ReplayDoc {
        investigation_id: id,
        title: loaded.investigation.title.clone(),
        service: loaded.investigation.service.clone(),
        symptom: loaded.investigation.symptom.clone(),
        steps,
        hidden_steps: (shown..8).collect(),
        answer: answer.map(Into::into),
        journal_entry,
        good_for_training: training::is_marked(pool, id).await?,
    })
}
