//! Comparison pages: the list with the form that creates one (plain POST, works
//! without JavaScript), one comparison with its verdict, reasons, metrics table,
//! intervals and pictures, and the record of predictions.

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use perfjournal_store::Error as StoreError;

use super::{render, FormErrors, PageCtx};
use crate::artifacts::Artifact;
use crate::auth::{CurrentUser, Role};
use crate::charts;
use crate::comparisons::{self, Comparison, Listed, NewComparison, ScoredPrediction};
use crate::core::analyze::sweep::{self, Slo, SloAnswer, SweepPoint};
use crate::core::method::comparison::{ttft_phase_shares, Report, Run, Series};
use crate::core::method::comparison_pick::pick_pair;
use crate::core::method::verdict::DEFAULT_MIN_EFFECT_PCT;
use crate::core::method::Verdict;
use crate::core::metric::format_value;
use crate::core::metric::{Percentile, Unit};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::state::AppState;
use crate::sweeps;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/comparisons",
            get(list_comparisons).post(create_comparison),
        )
        .route("/comparisons/predictions", get(prediction_record))
        .route("/comparisons/sweeps", get(compare_sweeps))
        .route("/comparisons/windows", get(compare_windows))
        .route("/comparisons/{id}", get(show_comparison))
}

/// The submitted form, kept so a refused form comes back as it was typed.
#[derive(Default)]
pub struct FormState {
    pairs: Vec<(String, String)>,
}

impl FormState {
    pub fn value(&self, name: &str) -> &str {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str, id: &i64) -> bool {
        let id = id.to_string();
        self.pairs.iter().any(|(n, v)| n == name && *v == id)
    }

    /// The chosen option of a select, or `default` when nothing was sent.
    pub fn selected(&self, name: &str, option: &str, default: &str) -> bool {
        match self.value(name) {
            "" => option == default,
            v => v == option,
        }
    }
}

#[derive(Template)]
#[template(path = "comparisons/list.html")]
struct ListPage {
    ctx: PageCtx,
    comparisons: Vec<Listed>,
    pager: Pager,
    artifacts: Vec<Artifact>,
    form: FormState,
    errors: FormErrors,
    series: Vec<(&'static str, &'static str)>,
    percentiles: Vec<&'static str>,
    /// The minimum effect the form starts from (the investigation's, or the default).
    min_effect_default: String,
    /// Why the runs are (or are not) ticked in advance.
    pick_note: Option<String>,
}

fn series_options() -> Vec<(&'static str, &'static str)> {
    Series::ALL.iter().map(|s| (s.key(), s.label())).collect()
}

fn percentile_options() -> Vec<&'static str> {
    Percentile::ALL.iter().map(|p| p.slug()).collect()
}

/// A fresh form for an investigation ticks a before/after pair only when the
/// investigation's runs name it (see `core::method::comparison_pick`); upload order
/// says nothing about which run came first in the experiment.
fn preselect(form: &mut FormState, artifacts: &[Artifact]) -> Option<String> {
    let inv = crate::core::json_input::typed_id(form.value("investigation"))?;
    if !form.value("baseline").is_empty() || !form.value("candidate").is_empty() {
        return None;
    }
    let own: Vec<(i64, &str)> = artifacts
        .iter()
        .filter(|a| a.investigation_id == Some(inv))
        .map(|a| (a.id, a.name.as_str()))
        .collect();
    if own.is_empty() {
        return None;
    }
    Some(match pick_pair(&own) {
        Some((b, c)) => {
            let name = |id: i64| own.iter().find(|(i, _)| *i == id).map_or("", |x| x.1);
            let note = format!(
                "Ticked from their names: {} as the baseline (before) and {} as the candidate (after). Check them before comparing.",
                name(b),
                name(c)
            );
            form.pairs.push(("baseline".into(), b.to_string()));
            form.pairs.push(("candidate".into(), c.to_string()));
            note
        }
        None => "Nothing is ticked: the names of this investigation's runs do not say which is before and which after the change (upload order does not tell). Choose each side.".to_string(),
    })
}

async fn list_page(
    state: &AppState,
    ctx: PageCtx,
    mut form: FormState,
    errors: FormErrors,
    paging: Option<&Paging>,
) -> Result<ListPage> {
    let (after, fetch) = paging.map_or((None, Paging::DEFAULT + 1), |p| (p.after, p.fetch()));
    let mut list = comparisons::list(&state.pool, after, fetch).await?;
    let pager = match paging {
        Some(p) => {
            let next = p.finish(&mut list, |c| c.id);
            p.pager(next)
        }
        None => {
            list.truncate(Paging::DEFAULT as usize);
            Pager {
                paged: false,
                first: "/comparisons".into(),
                next: None,
            }
        }
    };
    let artifacts = comparisons::candidates(&state.pool, 300).await?;
    let pick_note = if errors.is_empty() {
        preselect(&mut form, &artifacts)
    } else {
        None
    };
    let min_effect = match crate::core::json_input::typed_id(form.value("investigation")) {
        Some(inv) => comparisons::investigation_min_effect(&state.pool, inv)
            .await
            .unwrap_or(DEFAULT_MIN_EFFECT_PCT),
        None => DEFAULT_MIN_EFFECT_PCT,
    };
    Ok(ListPage {
        ctx,
        comparisons: list,
        pager,
        artifacts,
        form,
        errors,
        series: series_options(),
        percentiles: percentile_options(),
        min_effect_default: crate::core::fmt::format_number(min_effect, 2)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
        pick_note,
    })
}

/// The list and the form; `?investigation=ID&variable=…` prefills the form (the
/// investigation's step 7 links here).
async fn list_comparisons(
    State(state): State<AppState>,
    ctx: PageCtx,
    paging: Paging,
) -> Result<impl IntoResponse> {
    let pairs = paging
        .filters()
        .iter()
        .filter(|(k, _)| k == "investigation" || k == "variable")
        .cloned()
        .collect();
    let form = FormState { pairs };
    render(&list_page(&state, ctx, form, FormErrors::default(), Some(&paging)).await?)
}

/// Creates a comparison from the form; a refused form is shown again with each
/// problem beside its field (422).
async fn create_comparison(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    let created = match NewComparison::from_form(&pairs) {
        Ok(input) => crate::investigations::record_comparison(&state.pool, input, user.0.id).await,
        Err(errors) => Err(StoreError::Invalid(errors)),
    };
    match created {
        Ok(id) => Ok(Redirect::to(&format!("/comparisons/{id}")).into_response()),
        Err(StoreError::Invalid(errors)) => {
            let page = list_page(&state, ctx, FormState { pairs }, errors.into(), None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// One line of the metrics table, formatted.
pub struct MetricLine {
    pub series: &'static str,
    pub percentile: &'static str,
    pub before: String,
    pub after: String,
    pub diff: String,
    pub ratio: String,
    pub ci: String,
    pub p_value: String,
    pub verdict: &'static str,
    pub verdict_label: &'static str,
    pub runs: String,
    pub more: String,
    pub headline: bool,
}

fn ms(v: f64) -> String {
    format_value(v, Unit::Ms)
}

fn signed(v: f64, unit: Unit) -> String {
    let t = format_value(v, unit);
    if v > 0.0 {
        format!("+{t}")
    } else {
        t
    }
}

/// "< 0.001" or three significant figures.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("—".into(), |r| format!("×{r:.3}"))
}

fn metric_lines(r: &Report) -> Vec<MetricLine> {
    let mut out = Vec::new();
    for m in &r.metrics {
        for row in &m.rows {
            let runs = match (row.before_run_range, row.after_run_range) {
                (None, None) => String::new(),
                (b, a) => format!(
                    "{} / {}",
                    b.map_or("—".into(), ms),
                    a.map_or("—".into(), ms)
                ),
            };
            out.push(MetricLine {
                series: m.series.label(),
                percentile: row.percentile.slug(),
                before: ms(row.before),
                after: ms(row.after),
                diff: signed(row.diff, Unit::Ms),
                ratio: ratio_text(row.ratio),
                ci: format!(
                    "[{}, {}]",
                    signed(row.ci_low, Unit::Ms),
                    signed(row.ci_high, Unit::Ms)
                ),
                p_value: p_text(row.p_value),
                verdict: row.verdict.slug(),
                verdict_label: row.verdict.label(),
                runs,
                more: if row.verdict == Verdict::Inconclusive {
                    row.more_requests_per_side.map_or(
                        String::new(),
                        crate::core::method::verdict::more_requests_text,
                    )
                } else {
                    String::new()
                },
                headline: m.series == r.headline && row.percentile == r.percentile,
            });
        }
    }
    out
}

/// Output throughput, formatted.
pub struct ThroughputLine {
    pub before: String,
    pub after: String,
    pub diff: String,
    pub ratio: String,
    pub runs: String,
    pub ci: String,
    pub p_value: String,
    pub verdict: &'static str,
    pub verdict_label: &'static str,
    pub note: String,
}

fn throughput_line(r: &Report) -> Option<ThroughputLine> {
    let t = r.throughput.as_ref()?;
    let tok = |v: f64| format_value(v, Unit::TokPerS);
    let list = |v: &[f64]| v.iter().map(|x| tok(*x)).collect::<Vec<_>>().join(", ");
    Some(ThroughputLine {
        before: tok(t.before),
        after: tok(t.after),
        diff: signed(t.diff, Unit::TokPerS),
        ratio: ratio_text(t.ratio),
        runs: format!(
            "before: {}; after: {}",
            list(&t.before_runs),
            list(&t.after_runs)
        ),
        ci: t.judged.as_ref().map_or("—".into(), |j| {
            format!(
                "[{}, {}]",
                signed(j.ci_low, Unit::TokPerS),
                signed(j.ci_high, Unit::TokPerS)
            )
        }),
        p_value: t.judged.as_ref().map_or("—".into(), |j| p_text(j.p_value)),
        verdict: t.judged.as_ref().map_or("none", |j| j.verdict.slug()),
        verdict_label: t
            .judged
            .as_ref()
            .map_or("not judged", |j| j.verdict.label()),
        note: t.note.clone().unwrap_or_default(),
    })
}

/// Overlaid before/after CDFs per series, and the TTFT phase bar for request logs.
fn pictures(report: &Report, before: &[Run], after: &[Run]) -> Vec<String> {
    let pool = |runs: &[Run], s: Series| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.series.get(&s))
            .flatten()
            .copied()
            .collect()
    };
    let mut out = Vec::new();
    for m in &report.metrics {
        let (b, a) = (pool(before, m.series), pool(after, m.series));
        let title = format!("{} CDF, before vs after", m.series.label());
        if let Some(svg) = charts::cdf(&title, "ms", &[("before", &b), ("after", &a)]) {
            out.push(svg);
        }
    }
    if let (Some(b), Some(a)) = (ttft_phase_shares(before), ttft_phase_shares(after)) {
        if let Some(svg) = charts::share_bar(
            "Where TTFT goes (share of mean TTFT)",
            &[("before", b), ("after", a)],
        ) {
            out.push(svg);
        }
    }
    out
}

#[derive(Template)]
#[template(path = "comparisons/show.html")]
struct ShowPage {
    ctx: PageCtx,
    c: Comparison,
    verdict: Verdict,
    baseline: Vec<(i64, String)>,
    candidate: Vec<(i64, String)>,
    lines: Vec<MetricLine>,
    /// Show the run-to-run range column (a side measured more than once).
    several_runs: bool,
    throughput: Option<ThroughputLine>,
    charts: Vec<String>,
    charts_note: Option<String>,
    journal_result: String,
    prediction: Option<String>,
    /// "2%": the minimum effect the verdicts used.
    min_effect: String,
    /// Where ITL came from, when compared.
    itl_source: Option<&'static str>,
}

/// A percentage as the page writes it: "2%", "0.5%".
pub fn percent_text(v: f64) -> String {
    let t = crate::core::fmt::format_number(v, 2);
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    format!("{t}%")
}

async fn show_comparison(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<impl IntoResponse> {
    let c = comparisons::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no comparison {id}")))?;
    let (b_ids, c_ids) = comparisons::sides(&state.pool, id).await?;
    let report = &c.report.0;
    // The pictures are redrawn from the artifacts; when one is being re-analyzed,
    // the stored numbers still show.
    let (charts, charts_note, names) =
        match comparisons::load_runs(&state.pool, &b_ids, &c_ids).await {
            Ok((before, after, _)) => {
                let names: Vec<(i64, String)> = before
                    .iter()
                    .chain(after.iter())
                    .map(|r| (r.artifact_id, r.name.clone()))
                    .collect();
                (pictures(report, &before, &after), None, names)
            }
            Err(StoreError::Invalid(errors)) => {
                (
                    Vec::new(),
                    Some(format!(
                "The pictures need the artifacts' analyses, which are not available now: {}",
                errors.iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("; ")
            )),
                    Vec::new(),
                )
            }
            Err(e) => return Err(e.into()),
        };
    let name_of = |id: &i64| -> (i64, String) {
        let name = names
            .iter()
            .find(|(i, _)| i == id)
            .map_or_else(|| format!("artifact {id}"), |(_, n)| n.clone());
        (*id, name)
    };
    let prediction = report.prediction.as_ref().map(|p| {
        format!(
            "Predicted {} {} change {:+.1}% … {:+.1}%{}; observed {:+.1}%: {}{}.",
            p.prediction.percentile.slug(),
            p.prediction.series.label(),
            p.prediction.low_pct,
            p.prediction.high_pct,
            if p.prediction.source.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.prediction.source)
            },
            p.observed_pct,
            comparisons::score_slug(p.score),
            if p.counted {
                ""
            } else {
                " — not counted in the record, because the comparison is invalid"
            }
        )
    });
    render(&ShowPage {
        verdict: report.verdict,
        baseline: b_ids.iter().map(name_of).collect(),
        candidate: c_ids.iter().map(name_of).collect(),
        lines: metric_lines(report),
        several_runs: report.runs_before > 1 || report.runs_after > 1,
        throughput: throughput_line(report),
        charts,
        charts_note,
        journal_result: c.journal_result(),
        prediction,
        min_effect: percent_text(report.min_effect_pct),
        itl_source: report.itl_source.map(|s| s.describe()),
        ctx,
        c,
    })
}

#[derive(Template)]
#[template(path = "comparisons/predictions.html")]
struct PredictionPage {
    ctx: PageCtx,
    record: Vec<ScoredPrediction>,
    inside: usize,
    counted: usize,
    rate: String,
}

async fn prediction_record(
    State(state): State<AppState>,
    ctx: PageCtx,
) -> Result<impl IntoResponse> {
    let record = comparisons::predictions(&state.pool, 500).await?;
    let (inside, counted) = comparisons::hit_rate(&record);
    let rate = if counted == 0 {
        "—".to_string()
    } else {
        format!("{:.0}%", inside as f64 * 100.0 / counted as f64)
    };
    render(&PredictionPage {
        ctx,
        record,
        inside,
        counted,
        rate,
    })
}

// ---------- two load sweeps: SLO capacity before and after ----------

/// `?before=ID&after=ID&slo_metric=ttft&slo_percentile=p99&slo_max=200 ms`
/// (`before_series` / `after_series` pick a test in a file holding several).
#[derive(serde::Deserialize, Default)]
pub struct SweepCompareQuery {
    #[serde(default)]
    before: String,
    #[serde(default)]
    after: String,
    #[serde(default)]
    before_series: String,
    #[serde(default)]
    after_series: String,
    #[serde(flatten)]
    slo: sweeps::SloFields,
}

impl SweepCompareQuery {
    fn asked(&self) -> bool {
        self.slo.asked()
            || [&self.before, &self.after]
                .iter()
                .any(|s| !s.trim().is_empty())
    }
}

/// One side's picture.
pub struct SidePicture {
    pub side: &'static str,
    pub name: String,
    pub svg: String,
}

pub struct SweepCompareView {
    pub sentence: String,
    /// (what, before, after)
    pub rows: Vec<(String, String, String)>,
    pub pictures: Vec<SidePicture>,
}

#[derive(Template)]
#[template(path = "comparisons/sweeps.html")]
struct SweepComparePage {
    ctx: PageCtx,
    q: SweepCompareQuery,
    candidates: Vec<Artifact>,
    errors: FormErrors,
    result: Option<SweepCompareView>,
}

fn side_id(field: &str, raw: &str) -> std::result::Result<i64, FieldError> {
    crate::core::json_input::typed_id(raw)
        .ok_or_else(|| FieldError::new(field, "choose a load sweep"))
}

/// Errors of one side's loading, renamed to that side's fields.
fn side_errors(side: &str, e: AppError) -> std::result::Result<Vec<FieldError>, AppError> {
    match e {
        AppError::Invalid(errors) => Ok(errors
            .into_iter()
            .map(|f| {
                let field = match f.field.as_str() {
                    "series" => format!("{side}_series"),
                    "slo" => "slo_percentile".to_string(),
                    _ => side.to_string(),
                };
                FieldError::new(field, f.message)
            })
            .collect()),
        other => Err(other),
    }
}

/// One side: the artifact's points of the chosen series.
async fn side_points(
    state: &AppState,
    side: &str,
    id: i64,
    series: &str,
) -> Result<std::result::Result<(Artifact, Vec<SweepPoint>), Vec<FieldError>>> {
    let points = match sweeps::load_points(&state.pool, &sweeps::Source::Artifact(id)).await {
        Ok(p) => p,
        Err(e) => return Ok(Err(side_errors(side, e.into())?)),
    };
    let series = Some(series.trim()).filter(|s| !s.is_empty());
    let answer = match sweeps::answer(&points, series, None) {
        Ok(a) => a,
        Err(errors) => return Ok(Err(side_errors(side, AppError::Invalid(errors))?)),
    };
    let a = crate::artifacts::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no artifact {id}")))?;
    Ok(Ok((a, answer.points)))
}

fn capacity_text(a: &SloAnswer, points: &[&SweepPoint]) -> String {
    match &a.best {
        None => "no point meets it".into(),
        Some(b) => format!(
            "{} at {}",
            format_value(b.achieved_rps, Unit::ReqPerS),
            points[b.index].load_text()
        ),
    }
}

/// Two load sweeps side by side against one SLO. A GET: nothing is stored.
async fn compare_sweeps(
    State(state): State<AppState>,
    ctx: PageCtx,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<Response> {
    let q: SweepCompareQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
    let candidates: Vec<Artifact> = crate::artifacts::list(&state.pool, None, None, 300)
        .await?
        .into_iter()
        .filter(|a| sweeps::points_of(a).is_some())
        .collect();
    let mut errors = Vec::new();
    let mut result = None;
    if q.asked() {
        let before = side_id("before", &q.before)
            .map_err(|e| errors.push(e))
            .ok();
        let after = side_id("after", &q.after).map_err(|e| errors.push(e)).ok();
        let slo = q.slo.parse().map_err(|e| errors.extend(e)).ok();
        let mut sides = Vec::new();
        for (side, id, series) in [
            ("before", before, &q.before_series),
            ("after", after, &q.after_series),
        ] {
            if let Some(id) = id {
                match side_points(&state, side, id, series).await? {
                    Ok(x) => sides.push(x),
                    Err(e) => errors.extend(e),
                }
            }
        }
        if let (Some(slo), [(a_before, p_before), (a_after, p_after)]) = (slo, sides.as_slice()) {
            let rb: Vec<&SweepPoint> = p_before.iter().collect();
            let ra: Vec<&SweepPoint> = p_after.iter().collect();
            match sweep::capacity_change(&rb, &ra, slo) {
                Ok(c) => result = Some(sweep_view(&c, slo, (a_before, &rb), (a_after, &ra))),
                Err(problems) => errors.extend(
                    problems
                        .into_iter()
                        .map(|p| FieldError::new("slo_percentile", p)),
                ),
            }
        }
    }
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let page = SweepComparePage {
        ctx,
        q,
        candidates,
        errors: errors.into(),
        result,
    };
    Ok((status, render(&page)?).into_response())
}

fn sweep_view(
    c: &sweep::CapacityChange,
    slo: Slo,
    before: (&Artifact, &[&SweepPoint]),
    after: (&Artifact, &[&SweepPoint]),
) -> SweepCompareView {
    let knee_text = |k: &Option<sweep::Knee>, pts: &[&SweepPoint]| match k {
        Some(k) => format!("after {}", pts[k.index].load_text()),
        None => "none".into(),
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let mut rows = vec![
        (
            format!("Throughput within {}", slo.label()),
            capacity_text(&c.before, before.1),
            capacity_text(&c.after, after.1),
        ),
        (
            "Highest load measured meets the SLO (the limit may be higher)".into(),
            yes_no(c.before.meets_slo_at_last_point),
            yes_no(c.after.meets_slo_at_last_point),
        ),
        (
            format!("Knee ({})", slo.latency().label()),
            knee_text(&c.knee_before, before.1),
            knee_text(&c.knee_after, after.1),
        ),
    ];
    if let Some(r) = c.capacity_ratio {
        rows.push((
            "Capacity at the SLO, after ÷ before".into(),
            String::new(),
            format!("{}×", crate::core::fmt::format_number(r, 2)),
        ));
    }
    let mut pictures = Vec::new();
    for (side, (a, pts), knee) in [
        ("Before", before, &c.knee_before),
        ("After", after, &c.knee_after),
    ] {
        let svg = charts::sweep::latency_vs_throughput(
            pts,
            slo.latency(),
            Some(&slo),
            knee.as_ref().map(|k| k.index),
        );
        if let Some(svg) = svg {
            pictures.push(SidePicture {
                side,
                name: a.name.clone(),
                svg,
            });
        }
    }
    SweepCompareView {
        sentence: c.sentence.clone(),
        rows,
        pictures,
    }
}

// ---------- two Prometheus windows ----------

#[derive(serde::Deserialize, Default)]
pub struct WindowCompareQuery {
    #[serde(default)]
    before: String,
    #[serde(default)]
    after: String,
}

/// One row of the window comparison, ready to show.
pub struct WindowRow {
    pub series: String,
    pub quantile: String,
    pub before: String,
    pub after: String,
    pub change: String,
    /// "within one bucket", "lower bound", or "".
    pub caveat: &'static str,
}

#[derive(Template)]
#[template(path = "comparisons/windows.html")]
struct WindowComparePage {
    ctx: PageCtx,
    q: WindowCompareQuery,
    candidates: Vec<(i64, String)>,
    errors: FormErrors,
    /// The two artifacts compared, the rows, the gauges' means and the notes.
    result: Option<WindowResult>,
}

struct WindowResult {
    before: (i64, String),
    after: (i64, String),
    rows: Vec<WindowRow>,
    gauges: Vec<(String, String, String)>,
    notes: Vec<String>,
}

/// Two Prometheus windows (before and after a change) side by side, quantile by
/// quantile, with the bucket resolution stated; a read (GET), so it writes nothing.
async fn compare_windows(
    State(state): State<AppState>,
    ctx: PageCtx,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<Response> {
    let q: WindowCompareQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
    let candidates: Vec<(i64, String)> = sqlx::query_as(
        "SELECT id, name FROM artifacts WHERE kind = $1 AND status = 'done' \
         ORDER BY id DESC LIMIT 300",
    )
    .bind(crate::core::analyze::Kind::PrometheusRange.slug())
    .fetch_all(&state.pool)
    .await?;
    let mut errors = Vec::new();
    let mut result = None;
    if !q.before.trim().is_empty() || !q.after.trim().is_empty() {
        let id = |field: &str, raw: &str| {
            crate::core::json_input::typed_id(raw)
                .ok_or_else(|| FieldError::new(field, "choose a Prometheus window"))
        };
        let before = id("before", &q.before).map_err(|e| errors.push(e)).ok();
        let after = id("after", &q.after).map_err(|e| errors.push(e)).ok();
        if let (Some(b), Some(a)) = (before, after) {
            match comparisons::compare_windows(&state.pool, b, a).await {
                Ok(c) => {
                    let name = |id: i64| {
                        candidates
                            .iter()
                            .find(|(c, _)| *c == id)
                            .map_or_else(|| format!("artifact {id}"), |(_, n)| n.clone())
                    };
                    result = Some(window_result((b, name(b)), (a, name(a)), &c));
                }
                Err(StoreError::Invalid(e)) => errors.extend(e),
                Err(e) => return Err(e.into()),
            }
        }
    }
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let page = WindowComparePage {
        ctx,
        q,
        candidates,
        errors: errors.into(),
        result,
    };
    Ok((status, render(&page)?).into_response())
}

fn window_result(
    before: (i64, String),
    after: (i64, String),
    c: &crate::core::analyze::prometheus::range::WindowComparison,
) -> WindowResult {
    let ms = |v: f64| format_value(v, Unit::Ms);
    let rows = c
        .deltas
        .iter()
        .map(|d| WindowRow {
            series: d.series.trim_end_matches("_ms").replace('_', " "),
            quantile: d.quantile.clone(),
            before: ms(d.before),
            after: ms(d.after),
            change: d
                .change_pct
                .map_or_else(|| "–".to_string(), |p| format!("{p:+.1} %")),
            caveat: if d.lower_bound {
                "lower bound: above the last bucket"
            } else if d.same_bucket {
                "within one bucket: not told apart"
            } else {
                ""
            },
        })
        .collect();
    let mean = |v: Option<f64>| {
        v.map_or_else(
            || "–".to_string(),
            |x| crate::core::fmt::format_number(x, 2),
        )
    };
    let gauges = c
        .gauge_means
        .iter()
        .map(|(k, [b, a])| (k.replace('_', " "), mean(*b), mean(*a)))
        .collect();
    WindowResult {
        before,
        after,
        rows,
        gauges,
        notes: c.notes.clone(),
    }
}
