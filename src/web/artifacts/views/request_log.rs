//! A request log: phases, the slowest tenants and model versions, and the decomposition
//! table over filtered rows (its numbers come from `artifacts::decomposition`).

use sqlx::PgPool;

use super::{num, opt, pct, summary_cells, Section, Table};
use crate::artifacts::decomposition::{self, RequestFilter};
use crate::charts;
use crate::core::analyze::request_columns::{GroupNumbers, PHASES, TTFT_PARTS};
use crate::core::analyze::request_log::{share_of, RequestLogAnalysis, SHARE_DEFINITION};

fn phase_label(key: &str) -> String {
    let name = key.trim_end_matches("_ms").replace('_', " ");
    // Each request's own ITL and TPOT are per generated token, not per request.
    if matches!(key, "itl_p50_ms" | "itl_p99_ms" | "tpot_ms") {
        format!("{name} (ms per token)")
    } else {
        name
    }
}

pub(super) fn sections(id: i64, x: &RequestLogAnalysis) -> Vec<Section> {
    let mut out = Vec::new();
    let mut head = Section::new("phases", "Phases (ms)");
    head.lead = Some(format!(
        "{} requests{}. Dominant phase of TTFT: {}.",
        num(x.rows as f64),
        if x.rows != x.rows_total {
            format!(" of {}", num(x.rows_total as f64))
        } else {
            String::new()
        },
        match (&x.dominant_phase, x.dominant_share) {
            (Some(p), Some(s)) => format!("{} ({} of TTFT)", phase_label(p), pct(s)),
            (Some(p), None) => phase_label(p),
            _ => "nothing dominates".into(),
        }
    ));
    let mut t = Table::new(&[
        "phase",
        "p50",
        "p90",
        "p95",
        "p99",
        "mean",
        "count",
        "share of TTFT",
        "share of E2E",
    ]);
    for (phase, s) in &x.phases {
        let mut cells = vec![phase_label(phase)];
        cells.extend(summary_cells(s));
        cells.push(
            x.share_of_ttft
                .get(phase)
                .map(|v| pct(*v))
                .unwrap_or_default(),
        );
        cells.push(
            x.share_of_e2e
                .get(phase)
                .map(|v| pct(*v))
                .unwrap_or_default(),
        );
        t.row(cells);
    }
    head.table = Some(t);
    let parts = |m: &std::collections::BTreeMap<String, f64>| -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = m.iter().map(|(k, s)| (phase_label(k), *s)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    };
    if let Some(svg) = charts::share_bar(
        "Where the time goes",
        &[
            ("TTFT", parts(&x.share_of_ttft)),
            ("E2E", parts(&x.share_of_e2e)),
        ],
    ) {
        head.charts.push(svg);
    }
    head.notes = x.notes.clone();
    head.notes.push(SHARE_DEFINITION.to_string());
    head.notes.push(format!(
        "Filter by tenant, model version or time window, and group by tenant, on the decomposition page: /artifacts/{id}/requests"
    ));
    out.push(head);
    if !x.by_tenant.is_empty() {
        let mut s = Section::new("tenants", "By tenant");
        let mut t = Table::new(&[
            "tenant",
            "requests",
            "TTFT p95",
            "E2E p95",
            "dominant phase of TTFT",
        ]);
        for b in &x.by_tenant {
            t.row(vec![
                b.tenant.clone(),
                num(b.rows as f64),
                opt(b.first_token_ms.p95),
                opt(b.total_ms.p95),
                b.dominant_phase
                    .as_deref()
                    .map(phase_label)
                    .unwrap_or_else(|| "nothing dominates".into()),
            ]);
        }
        s.table = Some(t);
        out.push(s);
    }
    out
}

fn phase_rows(g: &GroupNumbers, t: &mut Table, label: Option<&str>) {
    for (i, (p, n)) in PHASES.iter().zip(&g.phases).enumerate() {
        // One definition of a share (see SHARE_DEFINITION), as the stored analysis.
        let in_ttft = TTFT_PARTS
            .iter()
            .position(|&part| part == i)
            .and_then(|k| g.in_ttft[k]);
        let share = match (in_ttft, g.ttft_total) {
            (Some(part), Some(total)) => share_of(part, total).map(pct).unwrap_or_default(),
            _ => String::new(),
        };
        let q = |k: usize| n.quantiles.map(|q| q[k]);
        let mut cells = Vec::new();
        if let Some(l) = label {
            cells.push(l.to_string());
        }
        cells.extend([
            phase_label(p),
            opt(q(0)),
            opt(q(1)),
            opt(q(2)),
            opt(q(3)),
            opt(n.mean),
            share,
        ]);
        t.row(cells);
    }
}

const DECOMPOSITION_COLUMNS: [&str; 7] = [
    "phase (ms)",
    "p50",
    "p90",
    "p95",
    "p99",
    "mean",
    "share of TTFT",
];

/// The method's question — where does p95 TTFT go — over the filtered rows, and the same
/// per tenant or model version when the filter groups.
pub async fn decomposition(
    pool: &PgPool,
    id: i64,
    f: &RequestFilter,
) -> sqlx::Result<(Table, Option<Table>)> {
    let (all, grouped) = decomposition::numbers(pool, id, f).await?;
    let mut t = Table::new(&DECOMPOSITION_COLUMNS);
    if let Some(g) = all.first() {
        phase_rows(g, &mut t, None);
        t.headers[0] = format!("phase (ms) — {} requests", num(g.rows as f64));
    }
    let grouped = grouped.zip(f.by).map(|(groups, col)| {
        let mut headers = vec![col];
        headers.extend(DECOMPOSITION_COLUMNS);
        let mut t = Table::new(&headers);
        t.numeric[1] = false;
        for g in &groups {
            let label = format!(
                "{} ({} requests)",
                g.group.as_deref().unwrap_or("(none)"),
                num(g.rows as f64)
            );
            phase_rows(g, &mut t, Some(&label));
        }
        t
    });
    Ok((t, grouped))
}

/// What became of the spans of an OTLP file: request rows by engine, the rest by reason.
pub(super) fn span_counts(c: &crate::core::analyze::otlp::SpanCounts) -> Section {
    let mut s = Section::new("spans", "Spans");
    s.lead = Some(format!(
        "{} spans read: {} request spans became rows, {} ignored. Services: {}.",
        num(c.spans as f64),
        num(c.requests as f64),
        num(c.ignored as f64),
        if c.services.is_empty() {
            "none".to_string()
        } else {
            c.services.join(", ")
        }
    ));
    let mut t = Table::new(&["spans", "count"]);
    for (engine, n) in &c.engines {
        t.row(vec![format!("request rows ({engine})"), num(*n as f64)]);
    }
    for (why, n) in &c.ignored_reasons {
        t.row(vec![format!("ignored: {why}"), num(*n as f64)]);
    }
    s.table = Some(t);
    s.notes.push(
        "Only vLLM llm_request spans and SGLang request root spans carry a request's \
         latencies; other spans are counted here and left out."
            .into(),
    );
    s
}
