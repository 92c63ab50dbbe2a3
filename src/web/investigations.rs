//! Investigation pages: the list, opening one from a symptom, its overview with the
//! progress rail and history, and one page per step (form, computed results, expected
//! vs observed). Handlers stay thin: parsing and computing happen in the core, storing
//! in `crate::investigations`.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::bubbles::{self, BubblesView, Echo, Sources};
use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::estimate;
use crate::core::fmt::format_number;
use crate::core::method::bubbles::suspects_with;
use crate::core::method::expected::{self, Expected};
use crate::core::method::order::{skip_warning, StepInfo, STEPS};
use crate::core::method::record::{
    observed_at, pairs_from_json, Evaluation, Opening, Pairs, Records, StepRecord, MAX_ROWS,
};
use crate::core::method::reproduce::{
    FieldKind, FrozenConfig, Reproducible, CONFIG_FIELDS, CONFIG_GROUPS,
};
use crate::core::method::{evidence, load_sweep, setup_check};
use crate::core::method::{Band, Boundness, Dominance, Phase, Verdict};
use crate::core::metric::{Metric, Percentile};
use crate::core::quantity::{self, Unit};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::investigations::db::{self, ArtifactLink, Event, Investigation, Listed, STATUSES};
use crate::investigations::{
    self as inv, Loaded, Recorded, StepConflict, StepState, EVIDENCE_FIELD,
};
use crate::state::AppState;

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

/// Runs a bubble attribution from the step-3 form and keeps it for this investigation;
/// a refusal comes back as step 3 with the form as sent and its errors (422, nothing
/// kept).
async fn run_attribution(
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
    let page = ShowPage {
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
        upload_limit: super::artifacts::human_bytes(state.config.upload_limit as f64),
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

// ---------- one step ----------

/// Submitted or stored values of a step form, with their errors.
pub struct StepForm {
    values: Pairs,
    errors: FormErrors,
    /// The version of the step this form edits (0: not yet recorded); a save names it.
    version: i32,
}

impl StepForm {
    pub fn v(&self, name: &str) -> &str {
        self.values.get(name).unwrap_or_default()
    }

    pub fn e(&self, name: &str) -> Option<&str> {
        self.errors.get(name)
    }

    /// The value of `prefix[i].field`.
    pub fn rv(&self, prefix: &str, i: &usize, field: &str) -> &str {
        self.v(&format!("{prefix}[{i}].{field}"))
    }

    pub fn re(&self, prefix: &str, i: &usize, field: &str) -> Option<&str> {
        self.e(&format!("{prefix}[{i}].{field}"))
    }

    /// The value of a phase row's column (`prefill.p95`).
    pub fn pv(&self, phase: impl Copied<Phase>, col: &str) -> &str {
        self.v(&format!("{}.{col}", phase.value().slug()))
    }

    /// The histogram bucket a filled value fell in ("in the 500–1,000 ms bucket"), or
    /// "" when the value did not come from a histogram.
    pub fn bucket(&self, name: &str) -> &str {
        self.v(&format!("{name}.bucket"))
    }

    pub fn pb(&self, phase: impl Copied<Phase>, col: &str) -> &str {
        self.bucket(&format!("{}.{col}", phase.value().slug()))
    }

    pub fn pe(&self, phase: impl Copied<Phase>, col: &str) -> Option<&str> {
        self.e(&format!("{}.{col}", phase.value().slug()))
    }

    /// `selected` when the field holds `option` (matching the way the core reads it).
    pub fn sel(&self, name: &str, option: &str) -> &'static str {
        if self.v(name).eq_ignore_ascii_case(option) {
            "selected"
        } else {
            ""
        }
    }
}

/// A configuration input for steps 0 and 7, grouped like the form.
pub struct ConfigInput {
    pub name: String,
    pub label: &'static str,
    pub flag: bool,
    /// The id of the catalog datalist offered while typing ("" for none).
    pub list: &'static str,
    /// A pasted document (config.json): a text area.
    pub wide: bool,
}

pub struct ConfigGroup {
    pub name: &'static str,
    pub inputs: Vec<ConfigInput>,
}

fn config_groups(prefix: &str) -> Vec<ConfigGroup> {
    CONFIG_GROUPS
        .iter()
        .map(|g| ConfigGroup {
            name: g,
            inputs: CONFIG_FIELDS
                .iter()
                .filter(|f| f.group == *g)
                .map(|f| ConfigInput {
                    name: format!("{prefix}{}", f.name),
                    label: f.label,
                    flag: f.kind == FieldKind::Flag,
                    list: match f.name {
                        "model" => "catalog-models",
                        "gpu_type" => "catalog-gpus",
                        _ => "",
                    },
                    wide: f.name == "model_config",
                })
                .collect(),
        })
        .collect()
}

/// The attach-an-estimate form.
#[derive(Deserialize, Default)]
pub struct AttachForm {
    #[serde(default)]
    estimator: String,
    #[serde(default)]
    inputs: String,
    #[serde(default)]
    result_key: String,
    #[serde(default)]
    observed: String,
}

#[derive(Template)]
#[template(path = "investigations/step.html")]
struct StepPage {
    ctx: PageCtx,
    inv: Investigation,
    rail: Vec<RailItem>,
    step: StepInfo,
    prev: Option<StepInfo>,
    next: Option<StepInfo>,
    warning: Option<&'static str>,
    form: StepForm,
    /// Row indices of the table forms (steps 4–6).
    rows: Vec<usize>,
    config: Vec<ConfigGroup>,
    records: Records,
    eval: Evaluation,
    recorded: Option<Recorded>,
    expected: Option<ExpectedView>,
    attach: AttachForm,
    attach_errors: FormErrors,
    estimators: Vec<(&'static str, &'static str)>,
    metrics: [Metric; 7],
    percentiles: [Percentile; 4],
    phases: [Phase; 6],
    verdicts: [Verdict; 5],
    journal_id: Option<i64>,
    /// Analyzed artifacts of this investigation that can fill this step's form.
    fillers: Vec<ArtifactLink>,
    evidence: Vec<ArtifactLink>,
    notice: Option<FillNotice>,
    /// Step 3: the latest bubble attribution, and what one can be run from.
    bubbles: Option<BubblesView>,
    bubble_sources: Sources,
    /// Steps 1 and 7: what the investigation's load sweeps say against the step-1 SLO.
    sweep_lines: Vec<String>,
    /// A save refused because someone saved first: what they changed.
    conflict: Option<StepConflict>,
}

impl StepPage {
    /// Catalog names offered while typing step 0's model and GPU.
    fn catalog_models(&self) -> Vec<&'static str> {
        estimate::models::CATALOG.iter().map(|m| m.name).collect()
    }

    /// Step 1: the targets asked to be confirmed, per metric.
    fn target_limits(&self) -> &'static [crate::core::metric::TargetLimit] {
        &crate::core::metric::IMPLAUSIBLE_TARGETS
    }

    fn catalog_gpus(&self) -> Vec<&'static str> {
        estimate::gpus::GPUS.iter().map(|g| g.name).collect()
    }

    /// The artifact kinds that can fill this step, for the help text.
    fn filler_kinds(&self) -> String {
        evidence::kinds_for(self.step.number).join(" or ")
    }

    fn dominant_label(&self) -> Option<String> {
        self.eval.phases.as_ref().map(|p| match &p.dominance {
            Dominance::Phase { phase, share } => {
                format!("{} ({:.0}% of the metric)", phase.label(), share * 100.0)
            }
            Dominance::Nothing { .. } => "Nothing dominates".into(),
        })
    }

    fn nothing_reason(&self) -> Option<&str> {
        match self.eval.phases.as_ref().map(|p| &p.dominance) {
            Some(Dominance::Nothing { reason }) => Some(reason),
            _ => None,
        }
    }

    /// A waiting window's suspects, read against the bubble attribution when there is one.
    fn suspects(&self) -> Vec<&'static str> {
        let suspects = match self.eval.resources.as_ref().map(|c| &c.bound) {
            Some(Boundness::Waiting { suspects }) => suspects.clone(),
            _ => Vec::new(),
        };
        match &self.bubbles {
            Some(b) => suspects_with(suspects, &b.advice),
            None => suspects,
        }
    }

    fn pct(&self, fraction: impl Copied<f64>) -> String {
        format!("{:.0}%", fraction.value() * 100.0)
    }

    fn num(&self, value: impl Copied<f64>, decimals: usize) -> String {
        format_number(value.value(), decimals)
    }

    fn reproducible_label(&self) -> &'static str {
        match self.records.reproduce.as_ref().map(|c| c.reproducible) {
            Some(Reproducible::Yes) => "yes",
            Some(Reproducible::NotYet) => "not yet",
            Some(Reproducible::No) => "no",
            _ => "unanswered",
        }
    }

    fn band_class(&self, band: impl Copied<Band>) -> &'static str {
        match band.value() {
            Band::NearLimit => "near-limit",
            Band::Overhead => "overhead",
            Band::Structural => "structural",
        }
    }
}

/// Templates hand values through one or more references; this reads the value
/// whatever the depth.
pub trait Copied<T: Copy> {
    fn value(&self) -> T;
}

macro_rules! copied {
    ($($t:ty),*) => {$(
        impl Copied<$t> for $t {
            fn value(&self) -> $t {
                *self
            }
        }
    )*};
}
copied!(f64, Phase, Band);

impl<T: Copy, R: Copied<T> + ?Sized> Copied<T> for &R {
    fn value(&self) -> T {
        (**self).value()
    }
}

fn parse_step_number(step: u32) -> Result<u8> {
    if step < 8 {
        Ok(step as u8)
    } else {
        Err(AppError::not_found(format!(
            "there is no step {step}: steps are numbered 0 to 7"
        )))
    }
}

/// Rows a table form shows: every stored row plus blanks, at least four.
fn table_rows(step: u8, records: &Records, values: &Pairs) -> Vec<usize> {
    let stored = match step {
        4 => records.regime.as_ref().map_or(0, |r| r.kernels.len()),
        5 => records.kernels.as_ref().map_or(0, |k| k.kernels.len()),
        6 => records.fixes.as_ref().map_or(0, |f| f.candidates.len()),
        _ => 0,
    };
    let submitted = values
        .iter()
        .filter_map(|(k, _)| {
            let (_, rest) = k.split_once('[')?;
            rest.split_once(']')?.0.parse::<usize>().ok()
        })
        .max()
        .map_or(0, |m| m + 1);
    let n = (stored.max(submitted) + 2).clamp(4, MAX_ROWS);
    (0..n).collect()
}

/// Values a step's form starts with: the stored record, or (step 7) the step-0 setup
/// so only the changed setting needs editing.
fn stored_values(step: u8, records: &Records) -> Pairs {
    let json = match step {
        0 => records.reproduce.clone().map(StepRecord::Reproduce),
        1 => records.metric.map(StepRecord::Metric),
        2 => records.phases.clone().map(StepRecord::Phases),
        3 => records.resources.map(StepRecord::Resources),
        4 => records.regime.clone().map(StepRecord::Regime),
        5 => records.kernels.clone().map(StepRecord::Kernels),
        6 => records.fixes.clone().map(StepRecord::Fixes),
        _ => records.change.clone().map(StepRecord::Change),
    }
    .map(|r| r.to_json());
    match (step, json) {
        (_, Some(json)) => pairs_from_json(step, &json),
        (7, None) => {
            let before = records.reproduce.clone().unwrap_or_default();
            let after = FrozenConfig {
                reproducible: Default::default(),
                notes: String::new(),
                ..before
            };
            pairs_from_json(7, &serde_json::json!({ "after_config": after }))
        }
        (4, None) => {
            // Offer the decode batch from the step-0 setup.
            let batch = records
                .reproduce
                .as_ref()
                .and_then(|c| c.concurrency.or(c.max_num_seqs));
            Pairs::new(
                batch
                    .map(|b| ("decode.batch".to_string(), b.to_string()))
                    .into_iter()
                    .collect(),
            )
        }
        _ => Pairs::default(),
    }
}

struct StepView {
    warning: Option<&'static str>,
    notice: Option<FillNotice>,
    fillers: Vec<ArtifactLink>,
    /// Artifacts whose analysis filled this step before.
    evidence: Vec<ArtifactLink>,
    sweep_lines: Vec<String>,
    values: Pairs,
    errors: Vec<FieldError>,
    attach: AttachForm,
    attach_errors: Vec<FieldError>,
    bubbles: Option<BubblesView>,
    bubble_sources: Sources,
    /// Set when a save was refused because someone saved the step first.
    conflict: Option<StepConflict>,
}

fn step_page(ctx: PageCtx, loaded: Loaded, step: u8, view: StepView) -> StepPage {
    let rows = table_rows(step, &loaded.records, &view.values);
    let config = match step {
        0 => config_groups(""),
        7 => config_groups("after_config."),
        _ => Vec::new(),
    };
    let mut attach = view.attach;
    if attach.observed.is_empty() {
        if let Some(o) = observed_at(step, &loaded.records) {
            let value = format_number(o.value, 2).replace(',', "");
            attach.observed = format!("{value} {}", o.unit.slug()).trim_end().to_string();
        }
    }
    // A form sent back keeps the version it was editing (a refused save must not
    // silently move it onto a newer one).
    let version = view
        .values
        .get(VERSION_FIELD)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            loaded.recorded[step as usize]
                .as_ref()
                .map_or(0, |r| r.version)
        });
    StepPage {
        ctx,
        conflict: view.conflict,
        rail: rail(&loaded, step),
        step: STEPS[step as usize],
        prev: step.checked_sub(1).map(|s| STEPS[s as usize]),
        next: STEPS.get(step as usize + 1).copied(),
        warning: view.warning,
        form: StepForm {
            values: view.values,
            errors: view.errors.into(),
            version,
        },
        rows,
        config,
        recorded: loaded.recorded[step as usize].clone(),
        expected: loaded
            .expected_at(step)
            .map(|e| ExpectedView::new(step, e, loaded.observed_unit(step))),
        attach,
        attach_errors: view.attach_errors.into(),
        estimators: estimate::registry()
            .iter()
            .map(|e| (e.name, e.title))
            .collect(),
        metrics: Metric::ALL,
        percentiles: Percentile::ALL,
        phases: Phase::ALL,
        verdicts: [
            Verdict::Confirmed,
            Verdict::Improved,
            Verdict::Inconclusive,
            Verdict::Regressed,
            Verdict::InvalidComparison,
        ],
        journal_id: loaded.journal_id,
        fillers: view.fillers,
        evidence: view.evidence,
        notice: view.notice,
        bubbles: view.bubbles,
        bubble_sources: view.bubble_sources,
        sweep_lines: view.sweep_lines,
        records: loaded.records,
        eval: loaded.evaluation,
        inv: loaded.investigation,
    }
}

#[derive(Deserialize)]
pub struct StepQuery {
    /// Fill the form from this analyzed artifact (steps 2, 4 and 5).
    from_artifact: Option<i64>,
}

async fn show_step(
    State(state): State<AppState>,
    _me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Query(query): Query<StepQuery>,
) -> Result<Response> {
    let step = parse_step_number(step)?;
    Ok(step_with(&state, ctx, id, step, query.from_artifact, None)
        .await?
        .into_response())
}

/// A step's page, filled from `from_artifact` when given; on step 3 `bubble_echo`
/// brings back a refused attribution form with its errors.
pub(super) async fn step_with(
    state: &AppState,
    ctx: PageCtx,
    id: i64,
    step: u8,
    from_artifact: Option<i64>,
    bubble_echo: Option<Echo>,
) -> Result<axum::response::Html<String>> {
    let loaded = inv::load_or_404(&state.pool, id).await?;
    // Shown, not recorded: the skip is recorded when this step is saved.
    let warning = skip_warning(step, &loaded.done_steps());
    let mut values = stored_values(step, &loaded.records);
    let mut notice = None;
    let kinds = evidence::kinds_for(step);
    let mut fillers = Vec::new();
    if !kinds.is_empty() {
        // Only artifacts whose analysis can actually fill this step are offered; their
        // analyses come in one query.
        let fill: std::collections::HashSet<i64> =
            crate::artifacts::analyses_of(&state.pool, id, kinds)
                .await?
                .into_iter()
                .filter(|(_, kind, analysis)| evidence::fill(step, kind, analysis).is_some())
                .map(|(artifact, ..)| artifact)
                .collect();
        for a in db::artifacts(&state.pool, Some(id), None).await? {
            if fill.contains(&a.id) {
                fillers.push(a);
            }
        }
        if let Some(artifact) = from_artifact {
            let fill = filled_values(state, &loaded, step, artifact).await?;
            if let Some(filled) = &fill.filled {
                let merged = evidence::merge(&values, filled);
                values = merged.values;
                notice = Some(FillNotice {
                    changed: merged.changed,
                    kept: merged.kept,
                    ..fill.notice
                });
            } else {
                notice = Some(fill.notice);
            }
        }
    }
    let (bubbles, bubble_sources) = if step == 3 {
        let mut sources = bubbles::sources(&state.pool, id).await?;
        sources.echo = bubble_echo.unwrap_or_default();
        (bubbles::latest_view(&state.pool, id).await?, sources)
    } else {
        (None, Sources::default())
    };
    let sweep_lines = sweep_lines(state, &loaded, step).await?;
    let page = step_page(
        ctx,
        loaded,
        step,
        StepView {
            warning,
            notice,
            fillers,
            evidence: db::evidence(&state.pool, id, step).await?,
            sweep_lines,
            values,
            errors: Vec::new(),
            attach: AttachForm::default(),
            attach_errors: Vec::new(),
            bubbles,
            bubble_sources,
            conflict: None,
        },
    );
    render(&page)
}

/// Steps 1 and 7: the investigation's load sweeps (oldest first, the first series of
/// each) against the step-1 metric and target read as an SLO.
async fn sweep_lines(state: &AppState, loaded: &Loaded, step: u8) -> Result<Vec<String>> {
    if !matches!(step, 1 | 7) || loaded.records.metric.is_none() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    let mut links = db::artifacts(&state.pool, Some(loaded.investigation.id), None).await?;
    links.sort_by_key(|a| a.id);
    for link in links
        .iter()
        .filter(|a| matches!(a.kind.as_str(), "sweep" | "vllm_bench"))
    {
        let Some(a) = crate::artifacts::get(&state.pool, link.id).await? else {
            continue;
        };
        if let Some(points) = crate::sweeps::points_of(&a) {
            found.push((a.name, points));
        }
    }
    let named: Vec<load_sweep::NamedSweep> = found
        .iter()
        .map(|(name, points)| {
            let first = points[0].series.clone();
            load_sweep::NamedSweep {
                name,
                points: points.iter().filter(|p| p.series == first).collect(),
            }
        })
        .collect();
    Ok(load_sweep::step_lines(
        step,
        loaded.records.metric.as_ref(),
        &named,
    ))
}

/// The hidden form field naming the artifact a form was filled from.
/// The hidden field naming the version of the step the form was opened on.
const VERSION_FIELD: &str = "version";

/// What a fill did, shown above the form: where the numbers came from, which fields
/// changed and which were kept, and any way the artifact's setup differs from step 0.
pub struct FillNotice {
    pub ok: bool,
    pub text: String,
    pub changed: Vec<String>,
    pub kept: Vec<String>,
    pub setup_warnings: Vec<String>,
}

struct Fill {
    filled: Option<Pairs>,
    notice: FillNotice,
}

/// A step's form values from one of this investigation's analyzed artifacts, with a
/// sentence saying where the numbers came from (or why there are none).
async fn filled_values(state: &AppState, loaded: &Loaded, step: u8, artifact: i64) -> Result<Fill> {
    let investigation = loaded.investigation.id;
    let found = crate::artifacts::get(&state.pool, artifact)
        .await?
        .filter(|a| a.investigation_id == Some(investigation))
        .ok_or_else(|| {
            AppError::not_found(format!(
                "artifact {artifact} is not attached to this investigation"
            ))
        })?;
    let metric = loaded.records.metric.map(|m| m.metric);
    let filled = found
        .analysis
        .as_ref()
        .and_then(|a| evidence::fill_for(step, &found.kind, a, metric));
    let setup_warnings = match (&loaded.records.reproduce, &found.analysis) {
        (Some(step0), Some(analysis)) => {
            setup_check::mismatches(step0, &evidence::claimed_setup(&found.kind, analysis))
                .iter()
                .map(|m| {
                    format!(
                        "{} was measured on another setup than step 0 — {}.",
                        found.name,
                        m.sentence()
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(match filled {
        Some((pairs, what)) => Fill {
            filled: Some(pairs.with(EVIDENCE_FIELD, artifact.to_string())),
            notice: FillNotice {
                ok: true,
                text: format!(
                    "Filled from {} ({what}). Review the numbers, then save the step.",
                    found.name
                ),
                changed: Vec::new(),
                kept: Vec::new(),
                setup_warnings,
            },
        },
        None => Fill {
            filled: None,
            notice: FillNotice {
                ok: false,
                text: format!(
                    "{} cannot fill step {step} (kind {}, status {}): nothing was changed.",
                    found.name, found.kind, found.status
                ),
                changed: Vec::new(),
                kept: Vec::new(),
                setup_warnings,
            },
        },
    })
}

async fn save_step(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let step = parse_step_number(step)?;
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
        Some(v) => Some(v.parse::<i64>().ok().filter(|v| *v > 0).ok_or_else(|| {
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
        Err(AppError::Invalid(errors)) => refused(
            ctx,
            loaded,
            step,
            pairs,
            errors,
            AttachForm::default(),
            Vec::new(),
        ),
        Err(e) => Err(e),
    }
}

/// The step page again with what was submitted and why it was refused (422). The
/// skip warning is shown but not recorded again.
fn refused(
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

async fn attach_expected(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Form(form): Form<AttachForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let step = parse_step_number(step)?;
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
