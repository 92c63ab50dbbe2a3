//! Proposal pages: the list with the running error record, the form that writes or
//! edits one (plain POST, the same parse as the API), one proposal with its worked
//! sizing, sensitivity, evidence, review and after-rollout scores, and the exports.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use perfjournal_store::Error as StoreError;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::estimate::fmt;
use crate::core::pairs::Pairs;
use crate::core::proposal::markdown::{self, EvidenceLine, Export, ReviewLine};
use crate::core::proposal::outcome::{self, ErrorRecord, FIGURES};
use crate::core::proposal::review::SECTIONS;
use crate::core::proposal::FIELDS;
use crate::error::{AppError, Result};
use crate::proposals::{self, Event, EvidenceItem, Observation, Proposal};
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/proposals", get(list).post(create))
        .route("/proposals/new", get(new_form))
        .route("/proposals/{id}", get(show))
        .route("/proposals/{id}/edit", get(edit_form).post(edit))
        .route("/proposals/{id}/review", post(review))
        .route("/proposals/{id}/evidence", post(evidence))
        .route("/proposals/{id}/use-measurement", post(use_measurement))
        .route("/proposals/{id}/observed", post(observed))
        .route("/proposals/{id}/export.md", get(export_md))
        .route("/proposals/{id}/export.json", get(export_json))
}

/// Form fields, minus the CSRF token and the version (kept apart).
fn form_pairs(body: &Bytes) -> Result<(Pairs, Option<i32>)> {
    let raw: Vec<(String, String)> = serde_urlencoded::from_bytes(body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    let mut pairs = Pairs::default();
    let mut version = None;
    for (k, v) in raw {
        if k == "version" {
            version = v.trim().parse().ok();
        } else if !k.starts_with('_') {
            pairs.insert(k, v);
        }
    }
    Ok((pairs, version))
}

/// A form that acts on a version of the proposal (review, measurement): 422 without one.
fn versioned_form(body: &Bytes) -> Result<(Pairs, i32)> {
    let (pairs, version) = form_pairs(body)?;
    let version = version.ok_or_else(|| {
        AppError::field(
            "version",
            "the form lost the version it was opened at; reload the proposal",
        )
    })?;
    Ok((pairs, version))
}

/// The evidence id a form names.
fn source_id(pairs: &Pairs) -> Result<i64> {
    pairs
        .raw("source_id")
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| {
            AppError::field(
                "source_id",
                "must be the id of the entry, comparison or artifact, e.g. 12",
            )
        })
}

async fn load(state: &AppState, id: i64) -> Result<Proposal> {
    proposals::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no proposal {id}")))
}

// ---------- list ----------

pub struct RecordRow {
    pub estimator: String,
    pub figure: String,
    pub n: usize,
    pub mean_abs: String,
    pub bias: String,
    pub worst: String,
}

/// Error records as tables show them (proposal figures by their labels).
pub fn record_rows(record: Vec<ErrorRecord>) -> Vec<RecordRow> {
    record
        .into_iter()
        .map(|r| RecordRow {
            figure: FIGURES
                .iter()
                .find(|f| f.0 == r.figure)
                .map_or(r.figure.clone(), |f| f.1.to_string()),
            estimator: r.estimator,
            n: r.n,
            mean_abs: format!("{:.1} %", r.mean_abs_error_pct),
            bias: format!("{:+.1} %", r.mean_error_pct),
            worst: format!("{:+.1} %", r.worst_error_pct),
        })
        .collect()
}

#[derive(Template)]
#[template(path = "proposals/list.html")]
struct ListPage {
    ctx: PageCtx,
    proposals: Vec<Proposal>,
    record: Vec<RecordRow>,
    pager: Pager,
}

async fn list(State(state): State<AppState>, ctx: PageCtx, paging: Paging) -> Result<Response> {
    let mut proposals = proposals::list(&state.pool, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut proposals, |p| p.id);
    let record = record_rows(proposals::error_record(&state.pool).await?);
    Ok(render(&ListPage {
        ctx,
        proposals,
        record,
        pager: paging.pager(next),
    })?
    .into_response())
}

// ---------- form ----------

pub struct FormField {
    pub name: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub help: &'static str,
    pub placeholder: &'static str,
    pub required: bool,
    pub value: String,
    pub error: Option<String>,
    /// true/false fields are a select.
    pub flag: bool,
}

pub struct FormSection {
    pub title: &'static str,
    pub fields: Vec<FormField>,
}

fn sections(pairs: &Pairs, errors: &FormErrors) -> Vec<FormSection> {
    let mut out: Vec<FormSection> = Vec::new();
    for (section, spec) in FIELDS {
        let field = FormField {
            name: spec.name,
            label: spec.label,
            unit: spec.unit,
            help: spec.help,
            placeholder: spec.default.unwrap_or(""),
            required: spec.required,
            value: pairs.raw(spec.name).unwrap_or_default().to_string(),
            error: errors.get(spec.name).map(str::to_string),
            flag: matches!(spec.default, Some("true") | Some("false")),
        };
        match out.last_mut() {
            Some(s) if s.title == section.title() => s.fields.push(field),
            _ => out.push(FormSection {
                title: section.title(),
                fields: vec![field],
            }),
        }
    }
    out
}

#[derive(Template)]
#[template(path = "proposals/form.html")]
struct FormPage {
    ctx: PageCtx,
    /// None: a new proposal.
    id: Option<i64>,
    version: i32,
    sections: Vec<FormSection>,
    errors: FormErrors,
    /// A save from an older version: what changed since (the form keeps your text on
    /// the current version, so saving again applies it over theirs).
    conflict: Option<String>,
}

impl FormPage {
    /// Errors not shown beside a form field (e.g. `body`).
    fn loose_errors(&self) -> Vec<&crate::core::FieldError> {
        self.errors
            .all()
            .iter()
            .filter(|e| !FIELDS.iter().any(|(_, s)| s.name == e.field))
            .collect()
    }
}

async fn new_form(user: CurrentUser, ctx: PageCtx) -> Result<Response> {
    user.require(Role::Editor)?;
    let errors = FormErrors::default();
    Ok(render(&FormPage {
        ctx,
        id: None,
        version: 0,
        sections: sections(&Pairs::default(), &errors),
        errors,
        conflict: None,
    })?
    .into_response())
}

fn refused(
    ctx: PageCtx,
    id: Option<i64>,
    version: i32,
    pairs: &Pairs,
    errors: Vec<crate::core::FieldError>,
) -> Result<Response> {
    let errors = FormErrors::from(errors);
    let page = FormPage {
        ctx,
        id,
        version,
        sections: sections(pairs, &errors),
        errors,
        conflict: None,
    };
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
}

/// Writes a proposal from the form; nothing is saved until it parses and sizes.
async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (pairs, _) = form_pairs(&body)?;
    match proposals::prepare(&pairs) {
        Ok((input, sizing, sensitivity)) => {
            let id =
                proposals::create(&state.pool, user.0.id, &input, &sizing, &sensitivity).await?;
            Ok(Redirect::to(&format!("/proposals/{id}")).into_response())
        }
        Err(errors) => refused(ctx, None, 0, &pairs, errors),
    }
}

async fn edit_form(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let p = load(&state, id).await?;
    let errors = FormErrors::default();
    Ok(render(&FormPage {
        ctx,
        id: Some(id),
        version: p.version,
        sections: sections(&p.input.to_pairs(), &errors),
        errors,
        conflict: None,
    })?
    .into_response())
}

/// Saves edited inputs (re-sized) over the version the form was opened at; an older
/// version gets 409 naming what changed since.
async fn edit(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (pairs, version) = versioned_form(&body)?;
    match proposals::prepare(&pairs) {
        Ok(prepared) => match proposals::edit(&state.pool, id, user.0.id, version, &prepared).await
        {
            Ok(_) => Ok(Redirect::to(&format!("/proposals/{id}")).into_response()),
            Err(StoreError::Conflict(what)) => {
                // Keep the person's inputs, on the current version.
                let current = load(&state, id).await?;
                let errors = FormErrors::default();
                let page = FormPage {
                    ctx,
                    id: Some(id),
                    version: current.version,
                    sections: sections(&pairs, &errors),
                    errors,
                    conflict: Some(what),
                };
                Ok((StatusCode::CONFLICT, render(&page)?).into_response())
            }
            Err(e) => Err(e.into()),
        },
        Err(errors) => refused(ctx, Some(id), version, &pairs, errors),
    }
}

// ---------- one proposal ----------

pub struct ScoreRow {
    pub label: String,
    pub expected: String,
    pub observed: String,
    pub error: String,
    pub estimator: String,
}

pub struct ObservationView {
    pub by: String,
    pub when: String,
    pub rows: Vec<ScoreRow>,
    pub artifact_ids: Vec<i64>,
    pub note: String,
}

fn observation_view(o: &Observation) -> ObservationView {
    ObservationView {
        by: o.by.clone().unwrap_or_default(),
        when: o.created_at.format("%Y-%m-%d %H:%M").to_string(),
        rows: o
            .scores
            .iter()
            .map(|s| ScoreRow {
                label: s.label.clone(),
                expected: format!("{} {}", fmt::num(s.expected), s.unit),
                observed: format!("{} {}", fmt::num(s.observed), s.unit),
                error: format!("{:+.1} %", s.error_pct),
                estimator: s.estimator.clone(),
            })
            .collect(),
        artifact_ids: o.artifact_ids.clone(),
        note: o.note.clone(),
    }
}

pub struct RunView {
    pub estimator: String,
    pub purpose: String,
    pub text: String,
    pub inputs: String,
}

pub struct VariantRow {
    pub label: String,
    pub replicas: String,
    pub change: String,
    pub per_hour: String,
    pub per_million: String,
    pub problem: String,
}

#[derive(Template)]
#[template(path = "proposals/show.html")]
struct ShowPage {
    ctx: PageCtx,
    p: Proposal,
    figures: Vec<crate::core::proposal::Figure>,
    runs: Vec<RunView>,
    variants: Vec<VariantRow>,
    evidence: Vec<EvidenceItem>,
    suggestions: Vec<EvidenceItem>,
    history: Vec<Event>,
    observations: Vec<ObservationView>,
    next_states: Vec<(&'static str, &'static str)>,
    sections: &'static [&'static str],
    observed_fields: Vec<(&'static str, &'static str, &'static str)>,
    headline: String,
    is_owner: bool,
    review_form: ReviewForm,
}

/// The review form as last submitted: kept when the review is refused, with why.
#[derive(Default)]
pub struct ReviewForm {
    pub state: String,
    pub section: String,
    pub comment: String,
    /// The refusal: which field and why (or the version conflict's account).
    pub error: Option<String>,
}

async fn show(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    Ok(render(&show_page(&state, ctx, id, ReviewForm::default()).await?)?.into_response())
}

async fn show_page(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    review_form: ReviewForm,
) -> Result<ShowPage> {
    let p = load(state, id).await?;
    let evidence = proposals::evidence(&state.pool, &p).await?;
    let suggestions = proposals::suggestions(&state.pool, &p).await?;
    let history = proposals::events(&state.pool, id, 0).await?;
    let observations = proposals::observations(&state.pool, id)
        .await?
        .iter()
        .map(observation_view)
        .collect();
    let s = &p.sizing;
    let headline = format!(
        "{} replicas × {} {} = {} GPUs · ${}/h · ${} per million output tokens",
        s.replicas_needed,
        p.input.gpus_per_replica,
        p.input.gpu_type,
        s.gpus,
        fmt::num(s.cost_per_hour_usd),
        fmt::num(s.cost_per_million_tokens_usd)
    );
    let runs = s
        .runs
        .iter()
        .map(|r| RunView {
            estimator: r.estimator.clone(),
            purpose: r.purpose.clone(),
            text: r.chain.to_page_text(),
            inputs: r
                .inputs
                .iter()
                .filter(|(k, _)| k.as_str() != "config")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        })
        .collect();
    let variants = p
        .sensitivity
        .iter()
        .map(|v| VariantRow {
            label: v.label.clone(),
            replicas: v.replicas_needed.map_or("—".into(), |r| r.to_string()),
            change: v.replicas_change.map_or("—".into(), |c| format!("{c:+}")),
            per_hour: v
                .cost_per_hour_usd
                .map_or("—".into(), |c| format!("${}", fmt::num(c))),
            per_million: v
                .cost_per_million_tokens_usd
                .map_or("—".into(), |c| format!("${}", fmt::num(c))),
            problem: v.problem.clone().unwrap_or_default(),
        })
        .collect();
    let is_owner = ctx.user.as_ref().map(|u| u.id) == p.owner_id && p.owner_id.is_some();
    let next_states = p
        .state
        .offered(is_owner)
        .into_iter()
        .map(|s| (s.slug(), s.label()))
        .collect();
    Ok(ShowPage {
        ctx,
        figures: s.figures.clone(),
        runs,
        variants,
        evidence,
        suggestions,
        history,
        observations,
        next_states,
        sections: &SECTIONS,
        observed_fields: FIGURES.iter().map(|f| (f.0, f.1, f.2)).collect(),
        headline,
        is_owner,
        review_form,
        p,
    })
}

/// A review from the page: a state change and/or a comment over the page's version.
/// A refused one (422: not allowed or incomplete; 409: the proposal changed meanwhile)
/// shows the page again with the form as typed and why it was refused.
async fn review(
    State(state): State<AppState>,
    ctx: PageCtx,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (pairs, version) = versioned_form(&body)?;
    let outcome = proposals::review(
        &state.pool,
        id,
        user.0.id,
        version,
        pairs.raw("state"),
        pairs.raw("comment").unwrap_or(""),
        pairs.raw("section"),
    )
    .await;
    let (status, error) = match outcome {
        Ok(_) => return Ok(Redirect::to(&format!("/proposals/{id}#history")).into_response()),
        Err(StoreError::Invalid(errors)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(StoreError::Conflict(what)) => (StatusCode::CONFLICT, what),
        Err(e) => return Err(e.into()),
    };
    let form = ReviewForm {
        state: pairs.raw("state").unwrap_or("").to_string(),
        section: pairs.raw("section").unwrap_or("").to_string(),
        comment: pairs.raw("comment").unwrap_or("").to_string(),
        error: Some(error),
    };
    let page = show_page(&state, ctx, id, form).await?;
    Ok((status, render(&page)?).into_response())
}

/// Links (or unlinks) evidence by kind and id.
async fn evidence(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (pairs, _) = form_pairs(&body)?;
    let p = load(&state, id).await?;
    let source = source_id(&pairs)?;
    proposals::link_evidence(
        &state.pool,
        &p,
        user.0.id,
        pairs.raw("kind").unwrap_or(""),
        source,
        pairs.raw("note").unwrap_or(""),
        pairs.raw("remove").is_some(),
    )
    .await?;
    Ok(Redirect::to(&format!("/proposals/{id}#evidence")).into_response())
}

/// Sizes from the throughput a linked benchmark measured (an edit: re-sized, versioned).
async fn use_measurement(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (pairs, version) = versioned_form(&body)?;
    let p = load(&state, id).await?;
    let kind = pairs.raw("kind").unwrap_or("");
    let source = source_id(&pairs)?;
    let item = proposals::evidence(&state.pool, &p)
        .await?
        .into_iter()
        .find(|e| e.kind == kind && e.id == source);
    // The bench's own concurrency where it holds one (its limit, or Little's law from
    // what it achieved); a number typed beside the button takes precedence.
    let bench_concurrency = item.as_ref().and_then(|e| e.concurrency_in_flight());
    let measured = item.and_then(|e| e.measured_tokens_per_s).ok_or_else(|| {
        AppError::field(
            "source_id",
            "names no linked benchmark with a measured output throughput; link a vLLM bench \
                 artifact or a comparison of benches first",
        )
    })?;
    let mut pairs_in = p.input.to_pairs();
    pairs_in.insert("measured_tokens_per_s_per_replica", measured.to_string());
    pairs_in.insert("use_measured", "true");
    // The bench's concurrency as typed beside the button, else as the bench holds it;
    // with neither, a 422 naming it.
    pairs_in.remove("measured_concurrency");
    match pairs
        .raw("measured_concurrency")
        .filter(|c| !c.trim().is_empty())
    {
        Some(c) => pairs_in.insert("measured_concurrency", c),
        None => {
            if let Some(c) = bench_concurrency {
                pairs_in.insert("measured_concurrency", c.to_string());
            }
        }
    }
    let prepared = proposals::prepare(&pairs_in).map_err(AppError::Invalid)?;
    proposals::edit(&state.pool, id, user.0.id, version, &prepared).await?;
    Ok(Redirect::to(&format!("/proposals/{id}#headline")).into_response())
}

/// Observed figures typed after rollout (any subset), with artifact ids.
async fn observed(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let (mut pairs, _) = form_pairs(&body)?;
    let note = pairs.remove("note").unwrap_or_default();
    let ids_text = pairs.remove("artifact_ids").unwrap_or_default();
    let mut artifact_ids = Vec::new();
    for part in ids_text.split([',', ' ']).filter(|s| !s.trim().is_empty()) {
        artifact_ids.push(
            crate::core::json_input::typed_id(part.trim().trim_start_matches('#')).ok_or_else(
                || {
                    AppError::field(
                        "artifact_ids",
                        format!("`{part}` is not an artifact id; write e.g. 12, 13"),
                    )
                },
            )?,
        );
    }
    let observed = outcome::parse_observed(&pairs).map_err(AppError::Invalid)?;
    let p = load(&state, id).await?;
    proposals::observe(&state.pool, &p, user.0.id, &observed, &artifact_ids, &note).await?;
    Ok(Redirect::to(&format!("/proposals/{id}#after-rollout")).into_response())
}

async fn export_md(
    State(state): State<AppState>,
    _: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    let p = load(&state, id).await?;
    let evidence = proposals::evidence(&state.pool, &p).await?;
    let history = proposals::events(&state.pool, id, 0).await?;
    let observations = proposals::observations(&state.pool, id).await?;
    let latest: Vec<_> = observations
        .last()
        .map(|o| o.scores.clone())
        .unwrap_or_default();
    let md = markdown::markdown(&Export {
        id,
        url: format!("/proposals/{id}"),
        owner: p.owner.clone(),
        state: p.state.label(),
        input: &p.input,
        sizing: &p.sizing,
        sensitivity: &p.sensitivity,
        evidence: &evidence
            .iter()
            .map(|e| EvidenceLine {
                title: e.title.clone(),
                url: e.url.clone(),
                stale: e.stale.clone(),
            })
            .collect::<Vec<_>>(),
        reviews: &history
            .iter()
            .filter(|e| e.kind == "review")
            .map(|e| ReviewLine {
                who: e.actor.clone().unwrap_or_default(),
                what: e.describe(),
                section: e.section.clone().unwrap_or_default(),
                comment: e.comment.clone(),
            })
            .collect::<Vec<_>>(),
        scores: &latest,
    });
    Ok(super::download(
        "text/markdown; charset=utf-8",
        &format!("proposal-{id}.md"),
        md,
    ))
}

async fn export_json(
    State(state): State<AppState>,
    _: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    Ok(Json(crate::documents::proposal::load(&state.pool, id).await?).into_response())
}
