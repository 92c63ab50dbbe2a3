//! One step's page: the form with its stored or submitted values, the computed
//! results, expected vs observed, and the load-sweep lines of steps 1 and 7.

use crate::core::analyze::Kind;
use crate::extract::Path;
use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::auth::CurrentUser;
use crate::core::estimate;
use crate::core::fmt::format_number;
use crate::core::method::bubbles::suspects_with;
use crate::core::method::order::{skip_warning, StepInfo, STEPS};
use crate::core::method::per_token::StepFigure;
use crate::core::method::record::{
    observed_at, step_pairs, Evaluation, Records, StepRecord, MAX_ROWS,
};
use crate::core::method::reproduce::{FieldKind, FrozenConfig, CONFIG_FIELDS, CONFIG_GROUPS};
use crate::core::method::{evidence, load_sweep};
use crate::core::method::{Band, Boundness, Dominance, Phase, Verdict};
use crate::core::metric::{Metric, Percentile};
use crate::core::pairs::Pairs;
use crate::core::FieldError;
use crate::error::Result;
use crate::investigations::db::{self, ArtifactLink, Investigation};
use crate::investigations::{self as inv, Loaded, Recorded, StepConflict};
use crate::state::AppState;
use crate::web::bubbles::{self, BubblesView, Echo, Sources};
use crate::web::{render, FormErrors, PageCtx};

use super::fill::{filled_values, FillNotice, VERSION_FIELD};
use super::{rail, ExpectedView, RailItem};

/// Where one phase row of step 2 came from: an artifact (`id` > 0) or typing.
pub struct RowSource {
    pub phase: &'static str,
    /// 0 when the numbers were typed.
    pub id: i64,
    pub name: String,
    /// What the artifact is ("Prometheus window, bucket estimates").
    pub what: String,
    pub edited: bool,
}

/// Step 2: each row holding numbers, with its source from the form's values; the
/// artifact is named from the investigation's artifacts when it is among them.
fn row_sources(step: u8, values: &Pairs, known: &[&ArtifactLink]) -> Vec<RowSource> {
    if step != 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let slugs = Phase::ALL
        .iter()
        .map(|p| p.slug())
        .chain(StepFigure::ALL.iter().map(|f| f.slug()));
    for slug in slugs {
        let f = |c: &str| format!("{slug}.{c}");
        if values.get(&f("p50")).is_none() {
            continue;
        }
        let id = values
            .get(&f("source"))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        let link = known.iter().find(|a| a.id == id);
        out.push(RowSource {
            phase: slug,
            id,
            name: link.map_or_else(|| format!("artifact {id}"), |a| a.name.clone()),
            what: link.map_or_else(String::new, |a| evidence::source_noun(a.kind()).to_string()),
            edited: matches!(values.get(&f("edited")), Some("on" | "true")),
        });
    }
    out
}

/// Submitted or stored values of a step form, with their errors.
pub struct StepForm {
    values: Pairs,
    errors: FormErrors,
    sources: Vec<RowSource>,
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

    /// The value of a per-token figure's column (`itl_p50.p99`).
    pub fn fv(&self, figure: impl Copied<StepFigure>, col: &str) -> &str {
        self.v(&format!("{}.{col}", figure.value().slug()))
    }

    pub fn fe(&self, figure: impl Copied<StepFigure>, col: &str) -> Option<&str> {
        self.e(&format!("{}.{col}", figure.value().slug()))
    }

    /// Where a phase row's numbers came from, when it holds numbers.
    pub fn row_source(&self, phase: impl Copied<Phase>) -> Option<&RowSource> {
        let slug = phase.value().slug();
        self.sources.iter().find(|s| s.phase == slug)
    }

    /// Where a per-token figure's numbers came from, when it holds numbers.
    pub fn figure_source(&self, figure: impl Copied<StepFigure>) -> Option<&RowSource> {
        let slug = figure.value().slug();
        self.sources.iter().find(|s| s.phase == slug)
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
    pub(super) estimator: String,
    #[serde(default)]
    pub(super) inputs: String,
    #[serde(default)]
    pub(super) result_key: String,
    #[serde(default)]
    pub(super) observed: String,
}

#[derive(Template)]
#[template(path = "investigations/step.html")]
pub(super) struct StepPage {
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
    figures: [StepFigure; 3],
    verdicts: [Verdict; 6],
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
    /// Step 7: the investigation's trace diffs, (page, sentence).
    trace_diff_lines: Vec<(String, String)>,
    /// Steps 3, 5 and 7: the investigation's trace sets; in 3 and 5 with their
    /// all-reduce time offered to hold against tp-allreduce.
    trace_sets: Vec<SetOffer>,
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
        evidence::kinds_named(self.step.number)
    }
}

/// What `investigations/results.html` asks of the page that includes it: the step
/// page, and the replay page that shows the same results.
pub trait StepResults {
    fn eval(&self) -> &Evaluation;
    fn records(&self) -> &Records;
    fn bubbles(&self) -> Option<&BubblesView>;
    fn inv_id(&self) -> i64;

    fn dominant_label(&self) -> Option<String> {
        self.eval()
            .phases
            .as_ref()
            .map(|p| p.dominant_label.clone())
    }

    fn nothing_reason(&self) -> Option<&str> {
        match self.eval().phases.as_ref().map(|p| &p.dominance) {
            Some(Dominance::Nothing { reason }) => Some(reason),
            _ => None,
        }
    }

    /// A waiting window's suspects, read against the bubble attribution when there is one.
    fn suspects(&self) -> Vec<&'static str> {
        let suspects = match self.eval().resources.as_ref().map(|c| &c.bound) {
            Some(Boundness::Waiting { suspects }) => suspects.clone(),
            _ => Vec::new(),
        };
        match self.bubbles() {
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

    /// A number the person typed, shown as typed (0.25 stays 0.25, 3 stays 3).
    fn typed(&self, value: impl Copied<f64>) -> String {
        crate::core::fmt::num(value.value())
    }

    fn reproducible_label(&self) -> &'static str {
        self.records()
            .reproduce
            .as_ref()
            .map_or("unanswered", |c| c.reproducible.label())
    }

    fn band_class(&self, band: impl Copied<Band>) -> &'static str {
        band.value().label()
    }

    fn band_thresholds(&self) -> String {
        crate::core::estimate::expected_cost::thresholds()
    }
}

/// Implements [`StepResults`] for a page with `records`, `eval` and `bubbles` fields;
/// the investigation's id is read at the given field path.
macro_rules! step_results {
    ($page:ty, $($id:ident).+) => {
        impl $crate::web::investigations::StepResults for $page {
            fn eval(&self) -> &$crate::core::method::record::Evaluation {
                &self.eval
            }

            fn records(&self) -> &$crate::core::method::record::Records {
                &self.records
            }

            fn bubbles(&self) -> Option<&$crate::web::bubbles::BubblesView> {
                self.bubbles.as_ref()
            }

            fn inv_id(&self) -> i64 {
                self.$($id).+
            }
        }
    };
}
pub(crate) use step_results;

step_results!(StepPage, inv.id);

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
copied!(f64, Phase, Band, StepFigure);

impl<T: Copy, R: Copied<T> + ?Sized> Copied<T> for &R {
    fn value(&self) -> T {
        (**self).value()
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
pub(super) fn stored_values(step: u8, records: &Records) -> Pairs {
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
        (_, Some(json)) => step_pairs(step, &json),
        (7, None) => {
            let before = records.reproduce.clone().unwrap_or_default();
            let after = FrozenConfig {
                reproducible: Default::default(),
                notes: String::new(),
                ..before
            };
            step_pairs(7, &serde_json::json!({ "after_config": after }))
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

pub(super) struct StepView {
    pub(super) warning: Option<&'static str>,
    pub(super) notice: Option<FillNotice>,
    pub(super) fillers: Vec<ArtifactLink>,
    /// Artifacts whose analysis filled this step before.
    pub(super) evidence: Vec<ArtifactLink>,
    pub(super) sweep_lines: Vec<String>,
    pub(super) trace_diff_lines: Vec<(String, String)>,
    pub(super) trace_sets: Vec<SetOffer>,
    pub(super) values: Pairs,
    pub(super) errors: Vec<FieldError>,
    pub(super) attach: AttachForm,
    pub(super) attach_errors: Vec<FieldError>,
    pub(super) bubbles: Option<BubblesView>,
    pub(super) bubble_sources: Sources,
    /// Set when a save was refused because someone saved the step first.
    pub(super) conflict: Option<StepConflict>,
}

pub(super) fn step_page(ctx: PageCtx, loaded: Loaded, step: u8, view: StepView) -> StepPage {
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
            sources: row_sources(
                step,
                &view.values,
                &view
                    .fillers
                    .iter()
                    .chain(&view.evidence)
                    .collect::<Vec<_>>(),
            ),
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
        figures: StepFigure::ALL,
        verdicts: [
            Verdict::Confirmed,
            Verdict::Improved,
            Verdict::Inconclusive,
            Verdict::NoChange,
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
        trace_diff_lines: view.trace_diff_lines,
        trace_sets: view.trace_sets,
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

pub(super) async fn show_step(
    State(state): State<AppState>,
    _me: CurrentUser,
    ctx: PageCtx,
    Path((id, step)): Path<(i64, u32)>,
    Query(query): Query<StepQuery>,
) -> Result<Response> {
    let step = inv::step_number(step)?;
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
                .filter(|(_, analysis)| evidence::fill(step, analysis).is_some())
                .map(|(artifact, _)| artifact)
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
    let trace_diff_lines = trace_diff_lines(state, id, step).await?;
    let trace_sets = trace_set_offers(state, &loaded, step).await?;
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
            trace_diff_lines,
            trace_sets,
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

/// Step 7: one line per trace diff of the investigation, ready for the write-up ("the
/// change moved 30.8 ms into cudaMemcpyAsync, +764 calls").
pub(super) async fn trace_diff_lines(
    state: &AppState,
    investigation: i64,
    step: u8,
) -> Result<Vec<(String, String)>> {
    if step != 7 {
        return Ok(Vec::new());
    }
    Ok(
        crate::trace_diffs::for_investigation(&state.pool, investigation)
            .await?
            .into_iter()
            .map(|d| {
                let what = match (d.headline(), d.status.as_str()) {
                    (Some(h), _) => format!("{h}."),
                    (None, "done") => "no op or kernel moved time.".to_string(),
                    (None, status) => format!("{status}."),
                };
                (
                    d.url(),
                    format!(
                        "Trace diff {} ({} → {}): {what}",
                        d.id, d.control_name, d.test_name
                    ),
                )
            })
            .collect(),
    )
}

/// A trace set as a step shows it.
pub struct SetOffer {
    pub url: String,
    pub line: String,
    /// Steps 3 and 5, when the set measured all-reduces: the attach form's values.
    pub observed: Option<String>,
    pub inputs: String,
    pub note: Option<String>,
}

/// Steps 3, 5 and 7: the investigation's trace sets in a sentence; in 3 and 5, the
/// all-reduce time per step each measured, ready to hold against `tp-allreduce` for step
/// 0's model, TP, batch and GPU link.
pub(super) async fn trace_set_offers(
    state: &AppState,
    loaded: &Loaded,
    step: u8,
) -> Result<Vec<SetOffer>> {
    use crate::core::method::allreduce::allreduce_offer;
    if !matches!(step, 3 | 5 | 7) {
        return Ok(Vec::new());
    }
    let sets = crate::trace_sets::for_investigation(&state.pool, loaded.investigation.id).await?;
    Ok(sets
        .into_iter()
        .map(|t| {
            let Some(sum) = t.summary() else {
                return SetOffer {
                    line: format!("Trace set {}: {}.", t.name, t.status),
                    url: t.url(),
                    observed: None,
                    inputs: String::new(),
                    note: None,
                };
            };
            let straggler = match sum.straggler.rank {
                Some(r) => format!(
                    "straggler rank {r} (+{:.2} ms, {:.1} % of a step)",
                    sum.straggler.skew_ms, sum.straggler.skew_pct
                ),
                None => "no straggler".to_string(),
            };
            let offer = (step != 7)
                .then(|| allreduce_offer(sum, loaded.records.reproduce.as_ref()))
                .flatten();
            let ar = offer.as_ref().map_or(String::new(), |o| {
                let calls = o.calls_per_step;
                format!(
                    ", all-reduce {} ms per step ({} call{}{})",
                    format_number(o.observed_ms, 3),
                    format_number(calls, if calls.fract() == 0.0 { 0 } else { 1 }),
                    if calls == 1.0 { "" } else { "s" },
                    o.bytes_per_step
                        .map(|b| format!(", {} MB", format_number(b / 1e6, 2)))
                        .unwrap_or_default()
                )
            });
            SetOffer {
                line: format!(
                    "Trace set {}: {} ranks, {straggler}{ar}.",
                    t.name,
                    sum.ranks.len()
                ),
                url: t.url(),
                observed: offer
                    .as_ref()
                    .map(|o| format!("{} ms", format_number(o.observed_ms, 4))),
                inputs: offer.as_ref().map(|o| o.inputs.clone()).unwrap_or_default(),
                note: offer.and_then(|o| o.note),
            }
        })
        .collect())
}

/// Steps 1 and 7: the investigation's load sweeps (oldest first, the first series of
/// each) against the step-1 metric and target read as an SLO.
pub(super) async fn sweep_lines(
    state: &AppState,
    loaded: &Loaded,
    step: u8,
) -> Result<Vec<String>> {
    if !matches!(step, 1 | 7) || loaded.records.metric.is_none() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    let mut links = db::artifacts(&state.pool, Some(loaded.investigation.id), None).await?;
    links.sort_by_key(|a| a.id);
    for link in links
        .iter()
        .filter(|a| matches!(a.kind(), Kind::Sweep | Kind::VllmBench))
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
