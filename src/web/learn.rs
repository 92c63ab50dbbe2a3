//! The guide (`/learn`): the method in short pages, each linking into the part of the app
//! that practises it and ending with self-check questions (the model answer shows once
//! the learner has written theirs); a learner's progress; the team page for leads.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use super::drills::form_pairs;
use super::{render, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::training::guide::{Page, Question, PAGES};
use crate::core::training::progress::{self, Progress};
use crate::error::{AppError, Result};
use crate::state::AppState;
use crate::training;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/learn", get(index))
        .route("/learn/progress", get(my_progress))
        .route("/learn/team", get(team))
        .route("/learn/{slug}", get(show_page))
        .route("/learn/{slug}/check", post(answer_check))
}

fn today() -> chrono::NaiveDate {
    chrono::Utc::now().date_naive()
}

#[derive(Template)]
#[template(path = "learn/index.html")]
struct IndexPage {
    ctx: PageCtx,
    pages: &'static [Page],
    progress: Progress,
}

async fn index(State(state): State<AppState>, user: CurrentUser, ctx: PageCtx) -> Result<Response> {
    let attempts = training::attempts(&state.pool, user.0.id).await?;
    Ok(render(&IndexPage {
        ctx,
        pages: PAGES,
        progress: progress::progress(&attempts, today()),
    })?
    .into_response())
}

pub struct CheckView {
    pub n: usize,
    pub question: &'static Question,
    pub answer: Option<String>,
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "learn/page.html")]
struct GuidePage {
    ctx: PageCtx,
    page: &'static Page,
    checks: Vec<CheckView>,
    prev: Option<&'static Page>,
    next: Option<&'static Page>,
}

fn find(slug: &str) -> Result<(usize, &'static Page)> {
    PAGES
        .iter()
        .enumerate()
        .find(|(_, p)| p.slug == slug)
        .ok_or_else(|| AppError::not_found(format!("the guide has no page {slug:?}")))
}

async fn guide_page(
    state: &AppState,
    user: i64,
    ctx: PageCtx,
    slug: &str,
    error: Option<(usize, String)>,
) -> Result<GuidePage> {
    let (i, page) = find(slug)?;
    let answers = training::checks(&state.pool, user, page.slug).await?;
    let checks = page
        .questions
        .iter()
        .enumerate()
        .map(|(n, q)| CheckView {
            n: n + 1,
            question: q,
            answer: answers
                .iter()
                .find(|(k, _)| *k as usize == n + 1)
                .map(|(_, a)| a.clone()),
            error: error
                .as_ref()
                .filter(|(k, _)| *k == n + 1)
                .map(|(_, e)| e.clone()),
        })
        .collect();
    Ok(GuidePage {
        ctx,
        page,
        checks,
        prev: i.checked_sub(1).map(|j| &PAGES[j]),
        next: PAGES.get(i + 1),
    })
}

async fn show_page(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(slug): Path<String>,
) -> Result<Response> {
    let p = guide_page(&state, user.0.id, ctx, &slug, None).await?;
    Ok(render(&p)?.into_response())
}

/// Stores the learner's answer to one question, then shows the page with the model
/// answer beside it.
async fn answer_check(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let (_, page) = find(&slug)?;
    let form = form_pairs(&body)?;
    let n = form
        .get("question")
        .and_then(|q| q.trim().parse::<usize>().ok())
        .filter(|n| (1..=page.questions.len()).contains(n))
        .ok_or_else(|| {
            AppError::field(
                "question",
                format!(
                    "must be a question number from 1 to {}",
                    page.questions.len()
                ),
            )
        })?;
    let answer = form.get("answer").map(|a| a.trim()).unwrap_or("");
    let problem = if answer.is_empty() {
        Some("write your answer first; the model answer shows once you have".to_string())
    } else if answer.chars().count() > 4000 {
        Some("keep it under 4,000 characters".to_string())
    } else {
        None
    };
    if let Some(msg) = problem {
        let p = guide_page(&state, user.0.id, ctx, &slug, Some((n, msg))).await?;
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&p)?).into_response());
    }
    training::save_check(&state.pool, user.0.id, page.slug, n as i16, answer).await?;
    Ok(Redirect::to(&format!("/learn/{}#check-{n}", page.slug)).into_response())
}

#[derive(Template)]
#[template(path = "learn/progress.html")]
struct ProgressPage {
    ctx: PageCtx,
    name: String,
    progress: Progress,
    is_lead: bool,
}

async fn my_progress(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
) -> Result<Response> {
    let attempts = training::attempts(&state.pool, user.0.id).await?;
    Ok(render(&ProgressPage {
        ctx,
        name: user.0.name.clone(),
        progress: progress::progress(&attempts, today()),
        is_lead: user.0.role >= Role::Editor,
    })?
    .into_response())
}

pub struct TeamRow {
    pub name: String,
    pub role: String,
    pub attempts: usize,
    pub done: usize,
    pub total: usize,
    pub finished: bool,
    pub streak: u32,
    pub next: String,
}

#[derive(Template)]
#[template(path = "learn/team.html")]
struct TeamPage {
    ctx: PageCtx,
    rows: Vec<TeamRow>,
    pager: Pager,
}

/// Who finished the learning path (editors and admins: the team's leads).
async fn team(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    paging: Paging,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let mut people = training::team(&state.pool, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut people, |(u, _)| u.id);
    let today = today();
    let rows: Vec<TeamRow> = people
        .into_iter()
        .map(|(u, attempts)| {
            let p = progress::progress(&attempts, today);
            TeamRow {
                name: u.name,
                role: u.role.to_string(),
                attempts: attempts.len(),
                done: p.done_count(),
                total: p.path.len(),
                finished: p.finished,
                streak: p.streak,
                next: p.next().map_or(String::new(), |n| n.title.clone()),
            }
        })
        .collect();
    Ok(render(&TeamPage {
        ctx,
        rows,
        pager: paging.pager(next),
    })?
    .into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_guide_page_is_reachable_by_its_slug() {
        for p in super::PAGES {
            assert_eq!(super::find(p.slug).unwrap().1.slug, p.slug);
            assert!(crate::core::training::guide::find(p.slug).is_some());
        }
    }
}
