//! Artifact pages: upload (file input or drag-and-drop, with progress), the list, one
//! artifact with live analysis progress and its results (tables and SVG pictures), the
//! request-log decomposition with filters, and the download.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::extract::{RawQuery, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use axum_htmx::HxRequest;
use serde::Deserialize;

use super::{render, PageCtx};
use crate::artifacts::{self, decomposition, Artifact};
use crate::auth::{CurrentUser, Role};
use crate::core::analyze::Options;
use crate::core::fmt::{bytes, ByteStyle};
use crate::error::{AppError, Result};
use crate::files::download::download;
use crate::files::{check_declared_length, parse_upload_query, receive_multipart};
use crate::state::AppState;

pub mod views;
pub use views::{Section, Table};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/artifacts", get(list_artifacts))
        .route("/artifacts/{id}", get(show_artifact))
        .route("/artifacts/{id}/status", get(artifact_status))
        .route("/artifacts/{id}/download", get(download_original))
        .route("/artifacts/{id}/reanalyze", post(reanalyze))
        .route("/artifacts/{id}/delete", post(delete_artifact))
        .route("/artifacts/{id}/requests", get(request_breakdown))
}

/// The upload route (no request timeout; streams up to the upload limit).
pub fn upload_routes() -> Router<AppState> {
    Router::new().route("/artifacts", post(upload))
}

#[derive(Template)]
#[template(path = "artifacts/list.html")]
struct ListPage {
    ctx: PageCtx,
    artifacts: Vec<Artifact>,
    pager: Pager,
    upload_limit: String,
}

async fn list_artifacts(
    State(state): State<AppState>,
    ctx: PageCtx,
    paging: Paging,
) -> Result<impl IntoResponse> {
    let mut list = artifacts::list(&state.pool, None, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut list, |a| a.id);
    render(&ListPage {
        ctx,
        artifacts: list,
        pager: paging.pager(next),
        upload_limit: bytes(state.config.upload_limit as f64, ByteStyle::Size),
    })
}

/// Multipart upload from the page (the `_csrf` token rides in the query string or the
/// htmx header). Answers with the artifact page, where analysis progress shows.
async fn upload(
    State(state): State<AppState>,
    user: CurrentUser,
    HxRequest(htmx): HxRequest,
    RawQuery(raw): RawQuery,
    req: Request,
) -> Result<Response> {
    let received = async {
        user.require(Role::Editor)?;
        let (_, owner) = parse_upload_query(raw.as_deref())?;
        check_declared_length(&req, state.config.upload_limit)?;
        receive_multipart(&state.artifacts(), req, owner, None, user.0.id, None).await
    }
    .await;
    let artifact = match received {
        Ok(a) => a,
        // htmx shows the reason inside the form instead of replacing the page.
        Err(e) if htmx => {
            let partial = UploadError {
                message: e.public_message(),
                fields: e.fields().to_vec(),
            };
            return Ok((e.status(), render(&partial)?).into_response());
        }
        Err(e) => return Err(e),
    };
    let target = format!("/artifacts/{}", artifact.id);
    if htmx {
        // htmx follows with a full navigation to the new artifact.
        return Ok(([("HX-Redirect", target)], StatusCode::CREATED).into_response());
    }
    Ok(Redirect::to(&target).into_response())
}

#[derive(Template)]
#[template(path = "artifacts/upload_error.html")]
struct UploadError {
    message: String,
    fields: Vec<crate::core::FieldError>,
}

#[derive(Template)]
#[template(path = "artifacts/show.html")]
struct ShowPage {
    ctx: PageCtx,
    a: Artifact,
    size: String,
    sections: Vec<Section>,
    /// Steps of its investigation this artifact's analysis can fill: (number, title).
    use_in: Vec<(u8, &'static str)>,
    /// The SLO form, for an artifact that holds a load sweep.
    sweep_form: Option<SweepForm>,
    /// The viewer is an admin or the editor who uploaded it.
    can_delete: bool,
    /// A PyTorch trace: the diffs it takes part in, and the other traces it can be
    /// diffed against (id, name).
    diffs: Vec<crate::trace_diffs::TraceDiff>,
    diff_choices: Vec<(i64, String)>,
    /// The trace sets it is in (the ranks of one run); the same choices make one.
    sets: Vec<crate::trace_sets::TraceSet>,
    /// Spans received over OTLP: the window this artifact was built from, in words
    /// (with the spans not kept and why).
    span_window: Option<String>,
}

/// The window a span artifact was built from, as its page says it.
async fn span_window(state: &AppState, a: &Artifact) -> Result<Option<String>> {
    if a.kind() != crate::core::analyze::Kind::OtlpSpans {
        return Ok(None);
    }
    let Some(w) = crate::otlp::of_artifact(&state.pool, a.id).await? else {
        return Ok(None);
    };
    let mut text = format!(
        "service {} from {} to {} UTC: {} request spans kept",
        w.service,
        w.window_start.format("%Y-%m-%d %H:%M"),
        w.window_end.format("%Y-%m-%d %H:%M"),
        w.spans
    );
    if w.ignored > 0 {
        let reasons: Vec<String> = w
            .ignored_reasons
            .as_object()
            .into_iter()
            .flatten()
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        text.push_str(&format!(
            "; {} spans were ignored ({})",
            w.ignored,
            reasons.join("; ")
        ));
    }
    Ok(Some(text))
}

/// The SLO asked of a sweep on its artifact page (`?slo_metric=ttft&slo_percentile=p99&slo_max=200 ms`).
#[derive(Deserialize, Default)]
pub struct SweepForm {
    #[serde(flatten)]
    slo: crate::sweeps::SloFields,
    #[serde(skip)]
    errors: super::FormErrors,
}

/// The steps an analyzed artifact of an investigation can fill.
/// The steps this artifact's analysis can fill (offered as "use in step N" links):
/// not every file of a kind carries what a step needs.
fn fillable_steps(a: &Artifact) -> Vec<(u8, &'static str)> {
    let (Some(analysis), true, Some(_)) = (&a.analysis, a.status == "done", a.investigation_id)
    else {
        return Vec::new();
    };
    crate::core::method::order::STEPS
        .iter()
        .filter(|s| crate::core::method::evidence::fill(s.number, analysis).is_some())
        .map(|s| (s.number, s.title))
        .collect()
}

#[derive(Template)]
#[template(path = "artifacts/status.html")]
struct StatusPartial {
    a: Artifact,
    size: String,
    sections: Vec<Section>,
}

async fn find(state: &AppState, id: i64) -> Result<Artifact> {
    artifacts::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no artifact {id}")))
}

async fn show_artifact(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let a = find(&state, id).await?;
    let mut status = StatusCode::OK;
    let mut slo = None;
    let sweep_form = if crate::sweeps::points_of(&a).is_some() {
        let mut form: SweepForm = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
            .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
        if form.slo.asked() {
            match form.slo.parse() {
                Ok(s) => slo = Some(s),
                Err(errors) => {
                    status = StatusCode::UNPROCESSABLE_ENTITY;
                    form.errors = errors.into();
                }
            }
        }
        Some(form)
    } else {
        None
    };
    let can_delete = ctx
        .user
        .as_ref()
        .is_some_and(|u| artifacts::may_delete(&a, u));
    let (diffs, diff_choices) = if a.kind() == crate::core::analyze::Kind::PytorchTrace {
        let choices = if a.status == "done" && ctx.can_edit() {
            crate::trace_diffs::candidates(&state.pool, a.id, a.investigation_id).await?
        } else {
            Vec::new()
        };
        (
            crate::trace_diffs::for_artifact(&state.pool, a.id).await?,
            choices,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let span_window = span_window(&state, &a).await?;
    let sets = if a.kind() == crate::core::analyze::Kind::PytorchTrace {
        crate::trace_sets::for_artifact(&state.pool, a.id).await?
    } else {
        Vec::new()
    };
    let page = ShowPage {
        sets,
        span_window,
        diffs,
        diff_choices,
        ctx,
        size: bytes(a.size_bytes as f64, ByteStyle::Size),
        sections: views::sections_with_slo(&a, slo.as_ref()),
        use_in: fillable_steps(&a),
        sweep_form,
        can_delete,
        a,
    };
    Ok((status, render(&page)?).into_response())
}

/// The status block, polled by htmx while the analysis runs; once finished it carries
/// the results and no more polling trigger.
async fn artifact_status(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<impl IntoResponse> {
    let a = find(&state, id).await?;
    render(&StatusPartial {
        size: bytes(a.size_bytes as f64, ByteStyle::Size),
        sections: views::sections(&a),
        a,
    })
}

async fn download_original(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Response> {
    let a = find(&state, id).await?;
    download(&state.blobs, &a).await
}

#[derive(Deserialize)]
pub struct ReanalyzeForm {
    #[serde(default)]
    include_last_profiler_step: Option<String>,
}

/// Runs the analysis again (a newer analyzer, or with the last profiler step kept).
async fn reanalyze(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    Form(form): Form<ReanalyzeForm>,
) -> Result<Redirect> {
    user.require(Role::Editor)?;
    let a = find(&state, id).await?;
    let options = Options {
        include_last_profiler_step: form.include_last_profiler_step.is_some(),
        max_decompressed_bytes: state.config.max_decompressed_bytes,
        ..Options::default()
    };
    if !artifacts::requeue(&state.pool, a.id, &options).await? {
        return Err(AppError::Conflict(
            "this artifact is being analyzed already, or its kind is not analyzed".into(),
        ));
    }
    state.jobs.notify_one();
    Ok(Redirect::to(&format!("/artifacts/{id}")))
}

/// Deletes an artifact (its owner or an admin), then goes where it hung.
async fn delete_artifact(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Redirect> {
    let gone = artifacts::delete(&state.pool, &state.blobs, id, &user.0).await?;
    Ok(Redirect::to(&match gone.investigation_id {
        Some(inv) => format!("/investigations/{inv}"),
        None => "/artifacts".to_string(),
    }))
}

// ---------- request-log decomposition ----------

#[derive(Deserialize, Default)]
pub struct BreakdownQuery {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    model_version: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    by: String,
}

#[derive(Template)]
#[template(path = "artifacts/requests.html")]
struct BreakdownPage {
    ctx: PageCtx,
    a: Artifact,
    q: BreakdownQuery,
    errors: super::FormErrors,
    table: Option<Table>,
    grouped: Option<Table>,
    tenants: Vec<String>,
    models: Vec<String>,
    share_definition: &'static str,
}

async fn request_breakdown(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let a = find(&state, id).await?;
    if !a.kind().has_request_rows() {
        return Err(AppError::not_found(
            "only request logs and request spans have a per-request breakdown",
        ));
    }
    let q: BreakdownQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
    let filter =
        decomposition::RequestFilter::parse(&q.tenant, &q.model_version, &q.from, &q.to, &q.by);
    let (tenants, models) = decomposition::facets(&state.pool, a.id).await?;
    let (table, grouped, errors, status) = match filter {
        Ok(f) => {
            let (table, grouped) = views::decomposition(&state.pool, a.id, &f).await?;
            (Some(table), grouped, Vec::new(), StatusCode::OK)
        }
        Err(errors) => (None, None, errors, StatusCode::UNPROCESSABLE_ENTITY),
    };
    let page = BreakdownPage {
        ctx,
        a,
        q,
        errors: errors.into(),
        table,
        grouped,
        tenants,
        models,
        share_definition: crate::core::analyze::request_log::SHARE_DEFINITION,
    };
    Ok((status, render(&page)?).into_response())
}
