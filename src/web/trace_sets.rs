//! Trace set pages: one set (straggler callout, per-rank table, a rank × time busy
//! heatmap, kernel types and collectives), and the form on a trace's page that groups
//! traces into a set.

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use super::{render, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::analyze::trace_set::{RankRow, SetSummary, MAX_RANKS};
use crate::core::fmt::format_number;
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::extract::{PageLinks, PageNumber, Path};
use crate::state::AppState;
use crate::trace_sets::{self, Ask, MemberRow, TraceSet};

/// The upload of a whole set (streams large bodies: no timeout, no body limit).
pub fn upload_routes() -> Router<AppState> {
    Router::new().route("/trace-sets/upload", post(upload_trace_set))
}

/// The form on the artifacts page: rank traces or archives, and the set's name → the
/// set's page.
async fn upload_trace_set(
    State(state): State<AppState>,
    user: CurrentUser,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    req: axum::extract::Request,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let id =
        crate::files::trace_set::upload(&state.artifacts(), req, raw.as_deref(), &user.0).await?;
    Ok(Redirect::to(&format!("/trace-sets/{id}")).into_response())
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/trace-sets", post(create_trace_set))
        .route("/trace-sets/{id}", get(show_trace_set))
}

fn ms(us: f64) -> String {
    format_number(us / 1000.0, 2)
}

fn pct(x: f64) -> String {
    format!("{x:.1}")
}

/// One rank as shown.
pub struct RankLine {
    pub rank: i64,
    pub artifact_id: i64,
    pub name: String,
    pub span_ms: String,
    pub busy_pct: String,
    pub compute_pct: String,
    pub idle_pct: String,
    pub overlap_pct: String,
    pub step_ms: String,
    pub compute_ms: String,
    pub comm_ms: String,
    pub straggler: bool,
}

#[derive(Template)]
#[template(path = "trace_sets/show.html")]
struct ShowPage {
    ctx: PageCtx,
    s: TraceSet,
    members: Vec<MemberRow>,
    pending: usize,
    /// This page's ranks.
    ranks: Vec<RankLine>,
    links: PageLinks,
    /// The straggler's row and its page, when it is on another page than this one.
    pinned: Option<(RankLine, usize)>,
    /// The straggler's page.
    straggler_page: usize,
    /// Which ranks this page shows, when there are several pages.
    shown_text: String,
    /// (class, ms, %)
    kernel_types: Vec<(String, String, String)>,
    /// (name, calls, ms, MB or "—", ranks) per step
    collectives: Vec<(String, String, String, String, u64)>,
    straggler_rank: Option<i64>,
    straggler_text: String,
    straggler_skew: String,
    heatmap: Option<String>,
    summary: Option<SetSummary>,
}

/// Ranks per page of the ranks table.
pub const RANKS_PER_PAGE: usize = 100;

/// Rows drawn in the heatmap at most (a row per rank); past it, rows are sampled evenly.
const HEATMAP_ROWS: usize = 64;

/// A rank × time heatmap of busy fractions as inline SVG: one row per rank, each over
/// its own GPU window (darker = busier).
fn heatmap(summary: &SetSummary) -> Option<String> {
    let rows: Vec<_> = summary
        .ranks
        .iter()
        .filter(|r| !r.busy.is_empty())
        .collect();
    if rows.is_empty() {
        return None;
    }
    let step = rows.len().div_ceil(HEATMAP_ROWS).max(1);
    let shown: Vec<_> = rows.iter().step_by(step).collect();
    let buckets = shown.iter().map(|r| r.busy.len()).max().unwrap_or(1);
    let (label_w, cell_h) = (56.0, 14.0);
    let width = 600.0;
    let cell_w = (width - label_w) / buckets as f64;
    let height = cell_h * shown.len() as f64 + 18.0;
    let mut svg = format!(
        r#"<svg viewBox="0 0 {width} {height}" role="img" aria-label="Busy fraction of each rank's GPUs over its trace" preserveAspectRatio="none" class="heatmap">"#
    );
    for (i, r) in shown.iter().enumerate() {
        let y = i as f64 * cell_h;
        svg.push_str(&format!(
            r#"<text x="0" y="{:.1}" font-size="10" class="hm-label">rank {}</text>"#,
            y + cell_h - 3.0,
            r.rank
        ));
        for (k, b) in r.busy.iter().enumerate() {
            svg.push_str(&format!(
                r##"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="#1f6feb" fill-opacity="{:.3}"><title>rank {}: {:.0} % busy</title></rect>"##,
                label_w + k as f64 * cell_w,
                cell_w + 0.05,
                cell_h - 1.0,
                b.clamp(0.0, 1.0),
                r.rank,
                100.0 * b
            ));
        }
    }
    svg.push_str(&format!(
        r#"<text x="{label_w}" y="{:.1}" font-size="10">start of each rank's GPU work</text><text x="{width}" y="{:.1}" font-size="10" text-anchor="end">its end</text></svg>"#,
        height - 4.0,
        height - 4.0
    ));
    Some(svg)
}

fn rank_line(r: &RankRow, lead: Option<i64>) -> RankLine {
    let t = r.temporal.as_ref();
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or("—".into());
    RankLine {
        rank: r.rank,
        artifact_id: r.artifact_id,
        name: r.name.clone(),
        span_ms: opt(t.map(|t| t.span_us), ms),
        busy_pct: opt(
            t.filter(|t| t.span_us > 0.0)
                .map(|t| 100.0 * t.busy_us / t.span_us),
            pct,
        ),
        compute_pct: opt(t.map(|t| t.compute_pct), pct),
        idle_pct: opt(t.map(|t| t.idle_pct), pct),
        overlap_pct: opt(r.comm_comp_overlap_pct, pct),
        step_ms: opt(r.step_us, ms),
        compute_ms: opt(r.compute_per_step_us, ms),
        comm_ms: opt(r.comm_per_step_us, ms),
        straggler: lead == Some(r.rank),
    }
}

/// `?page=N`: the ranks table shows [`RANKS_PER_PAGE`] ranks a page; the straggler's row is
/// pinned above it on the other pages.
async fn show_trace_set(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<impl IntoResponse> {
    let number = PageNumber::parse(raw.as_deref())?;
    let s = trace_sets::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("no trace set {id}")))?;
    let members = trace_sets::members(&state.pool, id).await?;
    let pending = members
        .iter()
        .filter(|m| matches!(m.2.as_str(), "queued" | "analyzing"))
        .count();
    let summary = s.summary().cloned();
    let base = format!("/trace-sets/{id}");
    let mut page = ShowPage {
        ctx,
        members,
        pending,
        ranks: Vec::new(),
        links: number.links(&base, 0, RANKS_PER_PAGE),
        pinned: None,
        straggler_page: 1,
        shown_text: String::new(),
        kernel_types: Vec::new(),
        collectives: Vec::new(),
        straggler_rank: None,
        straggler_text: String::new(),
        straggler_skew: String::new(),
        heatmap: None,
        summary: None,
        s,
    };
    if let Some(sum) = summary {
        let lead = sum.straggler.rank;
        let total = sum.ranks.len();
        let shown = number.rows(total, RANKS_PER_PAGE)?;
        page.links = number.links(&base, total, RANKS_PER_PAGE);
        page.shown_text = format!(
            "Ranks {}–{} of the {total} in rank order, {RANKS_PER_PAGE} a page.",
            shown.start + 1,
            shown.end
        );
        page.ranks = sum.ranks[shown.clone()]
            .iter()
            .map(|r| rank_line(r, lead))
            .collect();
        if let Some(at) = lead.and_then(|l| sum.ranks.iter().position(|r| r.rank == l)) {
            page.straggler_page = at / RANKS_PER_PAGE + 1;
            if !shown.contains(&at) {
                page.pinned = Some((rank_line(&sum.ranks[at], lead), page.straggler_page));
            }
        }
        page.kernel_types = sum
            .kernel_types
            .iter()
            .map(|k| (k.kernel_type.clone(), ms(k.us), pct(k.pct)))
            .collect();
        page.collectives = sum
            .collectives
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    format_number(c.count, 1),
                    format_number(c.us / 1000.0, 3),
                    c.bytes
                        .map(|b| format_number(b / 1e6, 2))
                        .unwrap_or_else(|| "—".into()),
                    c.ranks,
                )
            })
            .collect();
        page.straggler_rank = lead;
        // A sentence of its own on the page.
        let mut chars = sum.straggler.evidence.chars();
        page.straggler_text = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        page.straggler_skew = format!(
            "{} ms ({:.1} % of a step)",
            format_number(sum.straggler.skew_ms, 2),
            sum.straggler.skew_pct
        );
        page.heatmap = heatmap(&sum);
        page.summary = Some(sum);
    }
    render(&page)
}

/// The form on a trace's page: `name`, `artifact` (repeated), `investigation`? → the
/// set's page.
async fn create_trace_set(
    State(state): State<AppState>,
    user: CurrentUser,
    body: Bytes,
) -> Result<Response> {
    user.require(Role::Editor)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body)
        .map_err(|e| AppError::BadRequest(format!("the form is malformed: {e}")))?;
    let mut errors = Vec::new();
    let mut ids: Vec<serde_json::Value> = Vec::new();
    for (k, v) in pairs.iter().filter(|(k, _)| k == "artifact") {
        match crate::core::json_input::typed_id(v.trim()) {
            Some(id) => ids.push(id.into()),
            None => errors.push(FieldError::new(
                k,
                format!("must be an artifact id (a positive integer), not \"{v}\""),
            )),
        }
    }
    if ids.len() > MAX_RANKS {
        errors.push(FieldError::new(
            "artifact",
            format!("at most {MAX_RANKS} traces, not {}", ids.len()),
        ));
    }
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.trim());
    let investigation = get("investigation").filter(|v| !v.is_empty());
    let mut body = serde_json::json!({"name": get("name").unwrap_or(""), "artifacts": ids});
    if let Some(i) = investigation {
        match crate::core::json_input::typed_id(i) {
            Some(id) => body["investigation"] = id.into(),
            None => errors.push(FieldError::new(
                "investigation",
                format!("must be an investigation id, not \"{i}\""),
            )),
        }
    }
    let ask = Ask::from_json(&body);
    let ask = match (ask, errors.is_empty()) {
        (Ok(a), true) => a,
        (Ok(_), false) => return Err(AppError::Invalid(errors)),
        (Err(mut e), _) => {
            e.extend(errors);
            // The form's field is `artifact`, one per trace.
            for f in &mut e {
                if f.field == "artifacts" {
                    f.field = "artifact".into();
                }
            }
            return Err(AppError::Invalid(e));
        }
    };
    let id = trace_sets::create(&state.pool, &ask, user.0.id).await?;
    state.jobs.notify_one();
    Ok(Redirect::to(&format!("/trace-sets/{id}")).into_response())
}
