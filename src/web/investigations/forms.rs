//! What the step forms post: a step saved (or refused with the form as sent), an
//! estimate attached as the expected value, a bubble attribution run from step 3.

use crate::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use perfjournal_store::Error as StoreError;

use crate::auth::{CurrentUser, Role};
use crate::core::method::expected::{self, Expected};
use crate::core::method::order::skip_warning;
use crate::core::pairs::Pairs;
use crate::core::quantity::{self, Unit};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::investigations::db;
use crate::investigations::{self as inv, Loaded, EVIDENCE_FIELD};
use crate::state::AppState;
use crate::web::bubbles::{self, Echo, Sources};
use crate::web::{render, PageCtx};

use super::fill::VERSION_FIELD;
use super::step::{step_page, step_with, stored_values, AttachForm, StepView};

/// Runs a bubble attribution from the step-3 form and keeps it for this investigation;
/// a refusal comes back as step 3 with the form as sent and its errors (422, nothing
/// kept).
pub(super) async fn run_attribution(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<bubbles::RunForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    db::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no investigation {id}")))?;
    match bubbles::attribute_for(&state.pool, id, &form, me.0.id).await {
        Ok(()) => {
            Ok(Redirect::to(&format!("/investigations/{id}/steps/3#bubbles")).into_response())
        }
        Err(AppError::Invalid(errors)) => {
            let echo = Echo::of(form, errors);
            let page = step_with(&state, ctx, id, 3, None, Some(echo)).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
        Err(e) => Err(e),
    }
}

pub(super) async fn save_step(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let step = inv::step_number(step)?;
    let loaded = inv::load_or_404(&state.pool, id).await?;
    let pairs = Pairs::new(fields);
    // Absent for a client that does not know about versions: the save then just wins.
    let base = match pairs.get(VERSION_FIELD) {
        None => None,
        Some(v) => Some(v.parse::<i32>().ok().filter(|v| *v >= 0).ok_or_else(|| {
            AppError::field(
                VERSION_FIELD,
                "the form's version is not a version number; reload the step and edit again",
            )
        })?),
    };
    // The numbers came from an artifact (the fill put its id in the form): it becomes
    // the step's evidence, in the save's own transaction.
    let evidence = match pairs.get(EVIDENCE_FIELD).map(str::trim) {
        None | Some("") => None,
        Some(v) => Some(crate::core::json_input::typed_id(v).ok_or_else(|| {
            AppError::field(
                EVIDENCE_FIELD,
                "the evidence artifact is not an artifact id",
            )
        })?),
    };
    match inv::save_step(&state.pool, &loaded, &me.0, step, base, &pairs, evidence).await {
        Ok(Ok(_)) => {
            Ok(Redirect::to(&format!("/investigations/{id}/steps/{step}")).into_response())
        }
        Ok(Err(conflict)) => {
            // The page as it is now, with the person's values kept, but on the current
            // version: saving again is a deliberate choice made after seeing what changed.
            let loaded = inv::load_or_404(&state.pool, id).await?;
            let values = pairs.with(VERSION_FIELD, conflict.current.to_string());
            let page = step_page(
                ctx,
                loaded,
                step,
                StepView {
                    warning: None,
                    notice: None,
                    fillers: Vec::new(),
                    evidence: db::evidence(&state.pool, id, step).await?,
                    sweep_lines: Vec::new(),
                    trace_diff_lines: Vec::new(),
                    trace_sets: Vec::new(),
                    values,
                    errors: Vec::new(),
                    attach: AttachForm::default(),
                    attach_errors: Vec::new(),
                    bubbles: None,
                    bubble_sources: Sources::default(),
                    conflict: Some(conflict),
                },
            );
            Ok((StatusCode::CONFLICT, render(&page)?).into_response())
        }
        Err(StoreError::Invalid(errors)) => refused(
            ctx,
            loaded,
            step,
            pairs,
            errors,
            AttachForm::default(),
            Vec::new(),
        ),
        Err(e) => Err(e.into()),
    }
}

/// The step page again with what was submitted and why it was refused (422). The
/// skip warning is shown but not recorded again.
pub(super) fn refused(
    ctx: PageCtx,
    loaded: Loaded,
    step: u8,
    values: Pairs,
    errors: Vec<FieldError>,
    attach: AttachForm,
    attach_errors: Vec<FieldError>,
) -> Result<Response> {
    let warning = skip_warning(step, &loaded.done_steps());
    let page = step_page(
        ctx,
        loaded,
        step,
        StepView {
            warning,
            notice: None,
            fillers: Vec::new(),
            evidence: Vec::new(),
            sweep_lines: Vec::new(),
            trace_diff_lines: Vec::new(),
            trace_sets: Vec::new(),
            values,
            errors,
            attach,
            attach_errors,
            bubbles: None,
            bubble_sources: Sources::default(),
            conflict: None,
        },
    );
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
}

pub(super) async fn attach_expected(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Form(form): Form<AttachForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let step = inv::step_number(step)?;
    let loaded = inv::load_or_404(&state.pool, id).await?;
    match read_attachment(&form, loaded.observed_unit(step)) {
        Ok(e) => {
            db::attach_expected(&state.pool, id, me.0.id, step, &e).await?;
            Ok(Redirect::to(&format!("/investigations/{id}/steps/{step}")).into_response())
        }
        Err(errors) => {
            let values = stored_values(step, &loaded.records);
            refused(ctx, loaded, step, values, Vec::new(), form, errors)
        }
    }
}

/// The attach form → an expected value, through the core. A bare observed number is
/// in `step_unit`, the unit of the value the step observes.
pub fn read_attachment(
    form: &AttachForm,
    step_unit: Option<Unit>,
) -> std::result::Result<Expected, Vec<FieldError>> {
    let (linked, inputs) = expected::parse_inputs(&form.inputs).map_err(|e| vec![e])?;
    let name = match (form.estimator.trim(), linked) {
        ("", Some(n)) => n,
        ("", None) => {
            return Err(vec![FieldError::new(
                "estimator",
                "Choose the estimator, or paste a link to its page",
            )])
        }
        (n, _) => n.to_string(),
    };
    let observed = match form.observed.trim() {
        "" => None,
        raw => {
            let (value, typed) = quantity::split(raw)
                .map_err(|e| vec![FieldError::new("observed", e.to_string())])?;
            Some(expected::Observed {
                value,
                unit: typed.or(step_unit),
            })
        }
    };
    expected::attach(&name, inputs, &form.result_key, observed)
}
