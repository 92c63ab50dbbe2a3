//! Investigation pages: the list, opening one from a symptom, its overview with the
//! progress rail and history, and one page per step (form, computed results, expected
//! vs observed). Handlers stay thin: parsing and computing happen in the core, storing
//! in `crate::investigations`. This file holds the routes, the list, the overview and
//! the rail; `step.rs` the step page, `fill.rs` filling a step from an artifact,
//! `forms.rs` what the step forms post (save, attach an estimate, run an attribution).

mod fill;
mod forms;
mod step;

pub(crate) use step::step_results;
pub use step::StepResults;

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::fmt::{bytes, format_number, ByteStyle};
use crate::core::method::expected::Expected;
use crate::core::method::order::{StepInfo, STEPS};
use crate::core::method::record::Opening;
use crate::core::quantity::Unit;
use crate::error::{AppError, Result};
use crate::investigations::db::{self, ArtifactLink, Event, Investigation, Listed, STATUSES};
use crate::investigations::{self as inv, Loaded, StepState};
use crate::state::AppState;

use forms::{attach_expected, run_attribution, save_step};
use step::show_step;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/investigations",
            get(list_investigations).post(create_investigation),
        )
        .route("/investigations/new", get(new_investigation))
        .route("/investigations/{id}", get(show_investigation))
        .route("/investigations/{id}/status", post(change_status))
        .route(
            "/investigations/{id}/steps/{step}",
            get(show_step).post(save_step),
        )
        .route(
            "/investigations/{id}/steps/{step}/expected",
            post(attach_expected),
        )
        .route("/investigations/{id}/journal", post(draft_journal))
        .route("/investigations/{id}/bubbles", post(run_attribution))
}

// ---------- list and create ----------

#[derive(Template)]
#[template(path = "investigations/list.html")]
struct ListPage {
    ctx: PageCtx,
    investigations: Vec<Listed>,
    pager: Pager,
}

async fn list_investigations(
    State(state): State<AppState>,
    ctx: PageCtx,
    paging: Paging,
) -> Result<Response> {
    let mut investigations = db::list(&state.pool, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut investigations, |l| l.investigation.id);
    Ok(render(&ListPage {
        ctx,
        investigations,
        pager: paging.pager(next),
    })?
    .into_response())
}

#[derive(Template)]
#[template(path = "investigations/new.html")]
struct NewPage {
    ctx: PageCtx,
    form: OpeningForm,
    errors: FormErrors,
}

#[derive(Deserialize, Default)]
pub struct OpeningForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    service: String,
    #[serde(default)]
    symptom: String,
    #[serde(default)]
    tags: String,
}

async fn new_investigation(me: CurrentUser, ctx: PageCtx) -> Result<Response> {
    me.require(Role::Editor)?;
    Ok(render(&NewPage {
        ctx,
        form: OpeningForm::default(),
        errors: FormErrors::default(),
    })?
    .into_response())
}

async fn create_investigation(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<OpeningForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    match Opening::parse(&form.title, &form.service, &form.symptom, &form.tags) {
        Ok(opening) => {
            let id = db::create(&state.pool, me.0.id, &opening, None).await?;
            Ok(Redirect::to(&format!("/investigations/{id}")).into_response())
        }
        Err(errors) => {
            let page = NewPage {
                ctx,
                form,
                errors: errors.into(),
            };
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

// ---------- the rail ----------

/// One step on the progress rail.
pub struct RailItem {
    pub number: u8,
    pub title: &'static str,
    /// done, skipped or not_started
    pub state: &'static str,
    pub state_label: &'static str,
    pub current: bool,
    pub reason: Option<String>,
    pub href: String,
}

fn rail(loaded: &Loaded, current: u8) -> Vec<RailItem> {
    loaded
        .states()
        .into_iter()
        .zip(STEPS.iter())
        .map(|(state, info)| RailItem {
            number: info.number,
            title: info.title,
            state: state.slug(),
            state_label: match state {
                StepState::Done => "done",
                StepState::Skipped { .. } => "skipped",
                StepState::NotStarted => "not started",
            },
            current: info.number == current,
            reason: match state {
                StepState::Skipped { reason } => Some(reason),
                _ => None,
            },
            href: format!("{}/steps/{}", loaded.url(), info.number),
        })
        .collect()
}

// ---------- overview ----------

/// An attached estimate as shown: expected, observed, and their ratio.
pub struct ExpectedView {
    pub step: u8,
    pub estimator: String,
    pub result_key: String,
    pub expected: String,
    pub observed: Option<String>,
    pub ratio: Option<String>,
    /// Why there is no ratio: the expected value is of another dimension than the
    /// observed one (attached before units were checked).
    pub problem: Option<String>,
    pub href: String,
}

impl ExpectedView {
    pub fn new(step: u8, e: &Expected, step_unit: Option<Unit>) -> ExpectedView {
        let with_unit = |v: f64| {
            let decimals = if v.abs() >= 100.0 { 0 } else { 2 };
            format!("{} {}", format_number(v, decimals), e.unit)
                .trim_end()
                .to_string()
        };
        ExpectedView {
            step,
            estimator: e.estimator.clone(),
            result_key: e.result_key.clone(),
            expected: with_unit(e.expected),
            observed: e.observed.map(with_unit),
            ratio: e
                .ratio(step_unit)
                .ok()
                .flatten()
                .map(|r| format!("{}×", format_number(r, 2))),
            problem: e.unit_problem(step_unit),
            href: crate::core::method::record::estimator_href(&e.estimator, &e.inputs),
        }
    }
}

#[derive(Template)]
#[template(path = "investigations/show.html")]
struct ShowPage {
    ctx: PageCtx,
    inv: Investigation,
    rail: Vec<RailItem>,
    next: StepInfo,
    all_done: bool,
    summaries: Vec<(u8, String)>,
    expected: Vec<ExpectedView>,
    events: Vec<Event>,
    statuses: [&'static str; 4],
    journal_id: Option<i64>,
    /// The entry is published while the investigation is open or diagnosed.
    offer_resolve: bool,
    change_done: bool,
    artifacts: Vec<ArtifactLink>,
    /// For the shared upload form: uploads from here hang on this investigation.
    upload_investigation: Option<i64>,
    upload_limit: String,
    /// Its Grafana annotations (CHANGE, entry) and their sync state.
    annotations: Vec<crate::grafana::Annotation>,
    grafana_configured: bool,
    /// The Prometheus window form (editors): sources and the window it starts with.
    prom_investigation: i64,
    prom_sources: Vec<(i64, String)>,
    prom_form: crate::prometheus_range::WindowFields,
    prom_errors: super::FormErrors,
    /// The incident window card.
    win_investigation: i64,
    win: Option<crate::investigations::window::IncidentWindow>,
    win_telemetry: Vec<crate::investigations::window::WindowTelemetry>,
    win_form: super::incident_window::WindowForm,
    win_errors: super::FormErrors,
    /// The request-spans form (editors): the services that sent spans, starting values.
    span_investigation: i64,
    span_services: Vec<String>,
    span_form: crate::otlp::TakeFields,
    span_errors: super::FormErrors,
}

async fn show_investigation(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let done = loaded.done_steps();
    let summaries = done
        .iter()
        .map(|&s| (s, inv::step_summary(s, &loaded.records, &loaded.evaluation)))
        .collect();
    let next = loaded.next_step();
    let offer_resolve = match loaded.journal_id {
        Some(j) => crate::investigations::journal::get(&state.pool, j)
            .await?
            .is_some_and(|e| e.offers_resolve()),
        None => false,
    };
    let offer = super::prometheus::offer(&state, &loaded.investigation).await?;
    let card = super::incident_window::card(&state, id).await?;
    let (span_services, span_form) = super::otlp::offer(&state, &loaded.investigation).await?;
    let page = ShowPage {
        win_investigation: id,
        win: card.win,
        win_telemetry: card.win_telemetry,
        win_form: card.win_form,
        win_errors: Vec::new().into(),
        span_investigation: id,
        span_services,
        span_form,
        span_errors: Vec::new().into(),
        prom_investigation: id,
        prom_sources: offer.sources,
        prom_form: crate::prometheus_range::WindowFields {
            start: offer.start,
            end: offer.end,
            engine: "vllm".into(),
            ..Default::default()
        },
        prom_errors: Vec::new().into(),
        offer_resolve,
        ctx,
        rail: rail(&loaded, next),
        next: STEPS[next as usize],
        all_done: done.len() == STEPS.len(),
        summaries,
        expected: loaded
            .expected
            .iter()
            .map(|(s, e)| ExpectedView::new(*s, e, loaded.observed_unit(*s)))
            .collect(),
        events: db::events(&state.pool, id).await?,
        statuses: STATUSES,
        journal_id: loaded.journal_id,
        change_done: loaded.records.change.is_some(),
        artifacts: db::artifacts(&state.pool, Some(id), None).await?,
        upload_investigation: Some(id),
        upload_limit: bytes(state.config.upload_limit as f64, ByteStyle::Size),
        annotations: crate::grafana::of_investigation(&state.pool, id).await?,
        grafana_configured: state.config.grafana.is_some(),
        inv: loaded.investigation,
    };
    Ok(render(&page)?.into_response())
}

#[derive(Deserialize)]
pub struct StatusForm {
    #[serde(default)]
    status: String,
}

async fn change_status(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
    Form(form): Form<StatusForm>,
) -> Result<Redirect> {
    me.require(Role::Editor)?;
    if !STATUSES.contains(&form.status.as_str()) {
        return Err(AppError::field(
            "status",
            "choose open, diagnosed, resolved or abandoned",
        ));
    }
    db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no investigation {id}")))?;
    db::set_status(&state.pool, id, me.0.id, &form.status).await?;
    Ok(Redirect::to(&format!("/investigations/{id}")))
}

async fn draft_journal(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Redirect> {
    me.require(Role::Editor)?;
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let entry = inv::draft_journal(&state.pool, &loaded, &me.0).await?;
    Ok(Redirect::to(&format!("/journal/{entry}/edit")))
}
