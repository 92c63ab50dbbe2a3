//! Drill pages: estimator drills (single step or whole chain), "which regime" and the
//! ranking drill. A drill is posed from its seed (GET, nothing written); the answer is a
//! plain form POST that stores the attempt and shows the worked chain beside it.

use std::collections::BTreeMap;

use crate::extract::Path;
use askama::Template;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;

use super::estimators::ChainView;
use super::{render, FormErrors, PageCtx};
use crate::auth::CurrentUser;
use crate::core::estimate::{self, EstimatorInfo};
use crate::core::fmt::{bytes, ByteStyle};
use crate::core::method::regime::{HIGH_PCT, LOW_PCT};
use crate::core::quantity::Unit;
use crate::core::training::drills::{self, Drill, Grade, Level};
use crate::core::training::progress::{self, Progress};
use crate::core::training::{ranking, regime, TOLERANCE};
use crate::error::{AppError, Result};
use crate::state::AppState;
use crate::training;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/drills", get(index))
        .route("/drills/regime", get(regime_drill))
        .route("/drills/regime/answer", post(regime_answer))
        .route("/drills/ranking", get(ranking_drill))
        .route("/drills/ranking/answer", post(ranking_answer))
        .route("/drills/{estimator}", get(estimator_drill))
        .route("/drills/{drill_id}/answer", post(estimator_answer))
}

/// Form fields minus the CSRF token.
pub(crate) fn form_pairs(body: &Bytes) -> Result<BTreeMap<String, String>> {
    let raw: Vec<(String, String)> = serde_urlencoded::from_bytes(body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    Ok(raw
        .into_iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .collect())
}

/// An amount with its unit as people read it; bytes also in GB/MB.
pub(crate) fn amount(value: f64, unit: Unit) -> String {
    let number = estimate::display(&Value::from(value));
    match unit {
        Unit::Bytes => format!("{number} B ({})", bytes(value, ByteStyle::Size)),
        Unit::Usd => format!("${number}"),
        Unit::Ratio | Unit::Count => number,
        other => format!("{number} {}", other.slug()),
    }
}

fn today() -> chrono::NaiveDate {
    chrono::Utc::now().date_naive()
}

async fn my_progress(state: &AppState, user: i64) -> Result<Progress> {
    let attempts = training::attempts(&state.pool, user).await?;
    Ok(progress::progress(&attempts, today()))
}

// ---------- index ----------

pub struct DrillLink {
    pub name: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    pub has_step: bool,
    pub tally: String,
}

#[derive(Template)]
#[template(path = "learn/drills.html")]
struct IndexPage {
    ctx: PageCtx,
    drills: Vec<DrillLink>,
    progress: Progress,
}

async fn index(State(state): State<AppState>, user: CurrentUser, ctx: PageCtx) -> Result<Response> {
    let progress = my_progress(&state, user.0.id).await?;
    let drills = estimate::registry()
        .iter()
        .map(|e: &EstimatorInfo| {
            let t = progress.per_estimator.iter().find(|t| t.name == e.name);
            DrillLink {
                name: e.name,
                title: e.title,
                summary: e.summary,
                has_step: drills::has_level(e.name, Level::Step),
                tally: t.map_or(String::new(), |t| {
                    format!("{} of {} right", t.right, t.attempts)
                }),
            }
        })
        .collect();
    Ok(render(&IndexPage {
        ctx,
        drills,
        progress,
    })?
    .into_response())
}

// ---------- estimator drills ----------

pub struct StepField {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub value: String,
    pub error: Option<String>,
}

pub struct StepRow {
    pub label: String,
    pub typed: String,
    pub expected: String,
    pub correct: bool,
    pub first_wrong: bool,
}

pub struct GradeView {
    pub correct: bool,
    pub given: String,
    pub expected: String,
    pub error_pct: String,
    pub steps: Vec<StepRow>,
    pub first_wrong: Option<String>,
    pub chain: ChainView,
}

#[derive(Template)]
#[template(path = "learn/drill.html")]
struct DrillPage {
    ctx: PageCtx,
    info: &'static EstimatorInfo,
    drill_id: String,
    seed: u64,
    level: Level,
    has_step: bool,
    inputs: Vec<(String, String)>,
    asks_key: String,
    asks_unit: String,
    command: String,
    tolerance_pct: String,
    value: String,
    steps: Vec<StepField>,
    errors: FormErrors,
    grade: Option<GradeView>,
    next_seed: u64,
}

fn drill_page(
    ctx: PageCtx,
    drill: &Drill,
    typed: &BTreeMap<String, String>,
    errors: FormErrors,
    grade: Option<GradeView>,
) -> Result<DrillPage> {
    let info = estimate::find(drill.estimator)
        .ok_or_else(|| AppError::not_found(format!("no estimator {}", drill.estimator)))?;
    let steps = drill
        .steps()
        .into_iter()
        .filter(|l| l.key != drill.asks.key)
        .map(|l| {
            let name = format!("steps.{}", l.key);
            StepField {
                value: typed.get(&name).cloned().unwrap_or_default(),
                error: errors.get(&name).map(str::to_string),
                key: l.key.clone(),
                label: l.label.clone(),
                unit: l.unit.clone(),
            }
        })
        .collect();
    Ok(DrillPage {
        ctx,
        info,
        drill_id: drill.id(),
        seed: drill.seed,
        level: drill.level,
        has_step: drills::has_level(drill.estimator, Level::Step),
        inputs: drill
            .inputs
            .iter()
            .map(|(k, v)| (k.clone(), estimate::display(v)))
            .collect(),
        asks_key: drill.asks.key.clone(),
        asks_unit: drill.asks.unit.name().to_string(),
        command: drill.command(),
        tolerance_pct: format!("{:.0} %", TOLERANCE * 100.0),
        value: typed.get("value").cloned().unwrap_or_default(),
        steps,
        errors,
        grade,
        next_seed: training::random_seed(),
    })
}

async fn estimator_drill(
    ctx: PageCtx,
    Path(estimator): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let (seed, level) = training::read_drill_query(raw.as_deref())?;
    let Some(seed) = seed else {
        // A fresh drill gets its seed in the address, so it can be shared.
        training::pose(&estimator, 0, level)?;
        return Ok(Redirect::to(&format!(
            "/drills/{estimator}?seed={}&level={}",
            training::random_seed(),
            level.slug()
        ))
        .into_response());
    };
    let drill = training::pose(&estimator, seed, level)?;
    let page = drill_page(ctx, &drill, &BTreeMap::new(), FormErrors::default(), None)?;
    Ok(render(&page)?.into_response())
}

fn grade_view(drill: &Drill, grade: &Grade) -> GradeView {
    let line_amount = |v: f64, unit: &str| {
        let n = estimate::display(&Value::from(v));
        if unit.is_empty() {
            n
        } else {
            format!("{n} {unit}")
        }
    };
    GradeView {
        correct: grade.correct,
        given: amount(grade.given, drill.asks.unit),
        expected: amount(grade.expected, drill.asks.unit),
        error_pct: format!("{:+.1} %", grade.error * 100.0),
        steps: grade
            .steps
            .iter()
            .map(|s| StepRow {
                label: s.label.clone(),
                typed: line_amount(s.typed, &s.unit),
                expected: line_amount(s.expected, &s.unit),
                correct: s.correct,
                first_wrong: grade.first_wrong_step.as_deref() == Some(s.key.as_str()),
            })
            .collect(),
        first_wrong: grade.first_wrong_step.as_ref().and_then(|k| {
            drill
                .chain()
                .lines
                .iter()
                .find(|l| &l.key == k)
                .map(|l| l.label.clone())
        }),
        chain: ChainView::from(drill.chain()),
    }
}

async fn estimator_answer(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    Path(drill_id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let drill = training::pose_id(&drill_id)?;
    let typed = form_pairs(&body)?;
    let steps: BTreeMap<String, String> = typed
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("steps.").map(|k| (k.to_string(), v.clone())))
        .collect();
    let value = typed.get("value").cloned().unwrap_or_default();
    match drills::read_answer(&drill, &value, &steps) {
        Ok(answer) => {
            let grade = training::submit_drill(&state.pool, user.0.id, &drill, &answer).await?;
            let view = grade_view(&drill, &grade);
            let page = drill_page(ctx, &drill, &typed, FormErrors::default(), Some(view))?;
            Ok(render(&page)?.into_response())
        }
        Err(errors) => {
            let page = drill_page(ctx, &drill, &typed, FormErrors::from(errors), None)?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

// ---------- which regime ----------

pub struct RegimeChoice {
    pub slug: &'static str,
    pub label: &'static str,
    pub checked: bool,
}

pub struct RegimeResult {
    pub correct: bool,
    pub given: &'static str,
    pub expected: &'static str,
    pub reason: String,
    pub helps: Vec<&'static str>,
}

#[derive(Template)]
#[template(path = "learn/regime.html")]
struct RegimePage {
    ctx: PageCtx,
    seed: u64,
    kernel: &'static str,
    sm: String,
    dram: String,
    high: String,
    low: String,
    choices: Vec<RegimeChoice>,
    error: Option<String>,
    result: Option<RegimeResult>,
    next_seed: u64,
}

fn regime_page(
    ctx: PageCtx,
    d: &regime::RegimeDrill,
    given: Option<&str>,
    error: Option<String>,
    result: Option<RegimeResult>,
) -> RegimePage {
    RegimePage {
        ctx,
        seed: d.seed,
        kernel: d.kernel,
        sm: format!("{:.0} %", d.sm_pct),
        dram: format!("{:.0} %", d.dram_pct),
        high: format!("{HIGH_PCT:.0} %"),
        low: format!("{LOW_PCT:.0} %"),
        choices: regime::CHOICES
            .iter()
            .map(|r| RegimeChoice {
                slug: regime::slug(*r),
                label: r.label(),
                checked: given == Some(regime::slug(*r)),
            })
            .collect(),
        error,
        result,
        next_seed: training::random_seed(),
    }
}

/// A seed from a query or form, or a redirect to a fresh one.
fn seed_or_redirect(raw: Option<&str>, path: &str) -> Result<std::result::Result<u64, Response>> {
    let (seed, _) = training::read_drill_query(raw)?;
    Ok(seed.ok_or_else(|| {
        Redirect::to(&format!("{path}?seed={}", training::random_seed())).into_response()
    }))
}

fn form_seed(form: &BTreeMap<String, String>) -> Result<u64> {
    let raw = form.get("seed").map(String::as_str).unwrap_or("");
    let query = format!("seed={}", crate::error::urlencode(raw));
    training::read_drill_query(Some(&query))?
        .0
        .ok_or_else(|| AppError::field("seed", "the form lost its seed; open the drill again"))
}

async fn regime_drill(ctx: PageCtx, RawQuery(raw): RawQuery) -> Result<Response> {
    let seed = match seed_or_redirect(raw.as_deref(), "/drills/regime")? {
        Ok(s) => s,
        Err(redirect) => return Ok(redirect),
    };
    let d = regime::generate(seed);
    Ok(render(&regime_page(ctx, &d, None, None, None))?.into_response())
}

async fn regime_answer(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    body: Bytes,
) -> Result<Response> {
    let form = form_pairs(&body)?;
    let d = regime::generate(form_seed(&form)?);
    let typed = form.get("regime").map(String::as_str).unwrap_or("");
    let Some(given) = regime::parse(typed) else {
        let page = regime_page(
            ctx,
            &d,
            None,
            Some("choose one of the four regimes".to_string()),
            None,
        );
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response());
    };
    let g = regime::grade(&d, given);
    training::record_attempt(
        &state.pool,
        user.0.id,
        "regime",
        None,
        &format!("regime.{}", d.seed),
        &serde_json::json!({"regime": regime::slug(given)}),
        Some(g.correct),
    )
    .await?;
    let result = RegimeResult {
        correct: g.correct,
        given: g.given.label(),
        expected: g.expected.label(),
        reason: g.reason,
        helps: g.helps,
    };
    let page = regime_page(ctx, &d, Some(regime::slug(given)), None, Some(result));
    Ok(render(&page)?.into_response())
}

// ---------- ranking ----------

pub struct FindingRow {
    pub name: String,
    pub share: String,
    pub speedup: String,
    pub effort: String,
    pub rank: String,
    pub error: Option<String>,
}

pub struct RankedRow {
    pub place: usize,
    pub name: String,
    pub ceiling: String,
    pub gain: String,
    pub per_day: String,
    pub yours: String,
    pub right: bool,
}

pub struct RankingResult {
    pub correct: bool,
    pub places_right: usize,
    pub rows: Vec<RankedRow>,
}

#[derive(Template)]
#[template(path = "learn/ranking.html")]
struct RankingPage {
    ctx: PageCtx,
    seed: u64,
    findings: Vec<FindingRow>,
    places: Vec<usize>,
    result: Option<RankingResult>,
    next_seed: u64,
}

fn ranking_page(
    ctx: PageCtx,
    d: &ranking::RankingDrill,
    ranks: &BTreeMap<String, String>,
    errors: FormErrors,
    result: Option<RankingResult>,
) -> RankingPage {
    let findings = d
        .findings
        .iter()
        .map(|f| FindingRow {
            name: f.name.clone(),
            share: format!("{:.0} %", f.share * 100.0),
            speedup: format!("{}×", estimate::display(&Value::from(f.speedup))),
            effort: format!("{} days", estimate::display(&Value::from(f.effort_days))),
            rank: ranks.get(&f.name).cloned().unwrap_or_default(),
            error: errors.get(&format!("rank.{}", f.name)).map(str::to_string),
        })
        .collect();
    RankingPage {
        ctx,
        seed: d.seed,
        findings,
        places: (1..=d.findings.len()).collect(),
        result,
        next_seed: training::random_seed(),
    }
}

async fn ranking_drill(ctx: PageCtx, RawQuery(raw): RawQuery) -> Result<Response> {
    let seed = match seed_or_redirect(raw.as_deref(), "/drills/ranking")? {
        Ok(s) => s,
        Err(redirect) => return Ok(redirect),
    };
    let d = ranking::generate(seed);
    let page = ranking_page(ctx, &d, &BTreeMap::new(), FormErrors::default(), None);
    Ok(render(&page)?.into_response())
}

async fn ranking_answer(
    State(state): State<AppState>,
    user: CurrentUser,
    ctx: PageCtx,
    body: Bytes,
) -> Result<Response> {
    let form = form_pairs(&body)?;
    let d = ranking::generate(form_seed(&form)?);
    let ranks: BTreeMap<String, String> = form
        .iter()
        .filter_map(|(k, v)| k.strip_prefix("rank.").map(|k| (k.to_string(), v.clone())))
        .collect();
    let order = match ranking::read_order(&d, &ranks) {
        Ok(o) => o,
        Err(errors) => {
            let page = ranking_page(ctx, &d, &ranks, FormErrors::from(errors), None);
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response());
        }
    };
    let g = ranking::grade(&d, &order);
    training::record_attempt(
        &state.pool,
        user.0.id,
        "ranking",
        None,
        &format!("ranking.{}", d.seed),
        &serde_json::json!({"order": order}),
        Some(g.correct),
    )
    .await?;
    let rows = g
        .expected
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let yours = order.iter().position(|n| n == &r.name).map_or(0, |p| p + 1);
            RankedRow {
                place: i + 1,
                name: r.name.clone(),
                ceiling: format!("{}×", estimate::display(&Value::from(r.ceiling))),
                gain: format!("{:.1} %", r.gain_percent),
                per_day: format!("{:.2} %/day", r.gain_per_day),
                yours: yours.to_string(),
                right: yours == i + 1,
            }
        })
        .collect();
    let result = RankingResult {
        correct: g.correct,
        places_right: g.places_right,
        rows,
    };
    let page = ranking_page(ctx, &d, &ranks, FormErrors::default(), Some(result));
    Ok(render(&page)?.into_response())
}
