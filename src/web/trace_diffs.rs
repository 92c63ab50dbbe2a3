//! Trace diff pages: one diff (class counts, the top movers as a chart, the rows by time
//! moved, a page at a time), and the form on a PyTorch trace's page that starts one.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;

use super::{render, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::charts;
use crate::core::analyze::pytorch_trace::trace_diff::{OpDiff, SideInfo};
use crate::core::fmt::{format_number, grouped};
use crate::error::{AppError, Result};
use crate::extract::Path;
use crate::state::AppState;
use crate::trace_diffs::{self, Ask, TraceDiff};

/// Rows per page of the table.
pub const ROWS_PER_PAGE: usize = 100;
/// Bars in the top-movers chart.
pub const CHART_BARS: usize = 15;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/trace-diffs", post(create_trace_diff))
        .route("/trace-diffs/{id}", get(show_trace_diff))
}

/// Milliseconds from µs, with grouping.
fn ms(us: f64) -> String {
    let t = format_number(us / 1000.0, 3);
    if us < 0.0 {
        format!("−{t}")
    } else {
        t
    }
}

fn signed_ms(us: f64) -> String {
    if us > 0.0 {
        format!("+{}", ms(us))
    } else {
        ms(us)
    }
}

fn signed_count(n: i64) -> String {
    match n {
        n if n > 0 => format!("+{}", grouped(n as u64)),
        n if n < 0 => format!("−{}", grouped(n.unsigned_abs())),
        _ => "0".into(),
    }
}

/// One row as shown.
pub struct Row {
    pub name: String,
    pub change: &'static str,
    pub control_count: String,
    pub control_ms: String,
    pub test_count: String,
    pub test_ms: String,
    pub diff_count: String,
    pub diff_ms: String,
}

fn row(o: &OpDiff) -> Row {
    Row {
        name: o.name.clone(),
        change: o.change.slug(),
        control_count: grouped(o.control_count),
        control_ms: ms(o.control_us),
        test_count: grouped(o.test_count),
        test_ms: ms(o.test_us),
        diff_count: signed_count(o.diff_count),
        diff_ms: signed_ms(o.diff_us),
    }
}

/// One side's facts in words.
fn side_text(s: &SideInfo) -> String {
    let scope = match s.iteration {
        Some(n) => format!("ProfilerStep#{n}"),
        None => "the whole trace".into(),
    };
    format!(
        "{scope}: {} events, {} names, {} ms summed{}",
        grouped(s.events),
        grouped(s.names),
        ms(s.dur_us),
        if s.rounded {
            " (times rounded to whole µs, as HTA does)"
        } else {
            ""
        }
    )
}

#[derive(Template)]
#[template(path = "trace_diffs/show.html")]
struct ShowPage {
    ctx: PageCtx,
    d: TraceDiff,
    /// Each side's traces (id, name), when a side has several (ranks).
    control_traces: Vec<(i64, String)>,
    test_traces: Vec<(i64, String)>,
    headline: Option<String>,
    /// (class, count) in HTA's order.
    summary: Vec<(&'static str, u64)>,
    control: String,
    test: String,
    notes: Vec<String>,
    chart: Option<String>,
    rows: Vec<Row>,
    /// 1-based position of the first row shown, the rows kept, the rows not kept.
    first: usize,
    total: usize,
    not_kept: u64,
    prev: Option<usize>,
    next: Option<usize>,
}

#[derive(Deserialize)]
pub struct ShowQuery {
    /// The first row shown (0-based).
    #[serde(default)]
    from: Option<usize>,
}

async fn show_trace_diff(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Query(q): Query<ShowQuery>,
) -> Result<impl IntoResponse> {
    let d = trace_diffs::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no trace diff {id}")))?;
    let (control_traces, test_traces) = trace_diffs::sides(&state.pool, id).await?;
    let several = |v: Vec<(i64, String)>| if v.len() > 1 { v } else { Vec::new() };
    let mut page = ShowPage {
        control_traces: several(control_traces),
        test_traces: several(test_traces),
        ctx,
        headline: d.headline(),
        summary: Vec::new(),
        control: String::new(),
        test: String::new(),
        notes: Vec::new(),
        chart: None,
        rows: Vec::new(),
        first: 0,
        total: 0,
        not_kept: 0,
        prev: None,
        next: None,
        d,
    };
    if let Some(r) = page.d.result.as_ref().map(|r| &r.0) {
        let s = &r.summary;
        page.summary = vec![
            ("added", s.added),
            ("deleted", s.deleted),
            ("increased", s.increased),
            ("decreased", s.decreased),
            ("unchanged", s.unchanged),
        ];
        page.control = side_text(&r.control);
        page.test = side_text(&r.test);
        page.notes = r
            .control
            .notes
            .iter()
            .map(|n| format!("Control: {n}"))
            .chain(r.test.notes.iter().map(|n| format!("Test: {n}")))
            .collect();
        let movers: Vec<(String, f64)> = r
            .ops
            .iter()
            .filter(|o| o.diff_us != 0.0)
            .take(CHART_BARS)
            .map(|o| (o.name.clone(), o.diff_us / 1000.0))
            .collect();
        page.chart = charts::signed_bars(
            "Top movers: time in test − time in control",
            ("time moved", "ms"),
            &movers,
        );
        page.total = r.ops.len();
        let from = q.from.unwrap_or(0).min(page.total.saturating_sub(1));
        let from = from - from % ROWS_PER_PAGE;
        page.rows = r
            .ops
            .iter()
            .skip(from)
            .take(ROWS_PER_PAGE)
            .map(row)
            .collect();
        page.first = from + 1;
        page.prev = from.checked_sub(ROWS_PER_PAGE);
        page.next = Some(from + ROWS_PER_PAGE).filter(|n| *n < page.total);
        page.not_kept = r.ops_not_kept;
    }
    render(&page)
}

/// The form on a trace's page: `control`, `test`, `investigation`? → the diff's page.
async fn create_trace_diff(
    State(state): State<AppState>,
    user: CurrentUser,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    let ask = Ask::from_form(&pairs).map_err(AppError::Invalid)?;
    let (id, _) = trace_diffs::start(
        &state.pool,
        &state.blobs,
        state.config.max_decompressed_bytes,
        &ask,
        user.0.id,
    )
    .await?;
    Ok(Redirect::to(&format!("/trace-diffs/{id}")).into_response())
}
