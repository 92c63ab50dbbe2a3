//! A load sweep (a vllm bench sweep or a sweep table): per series, the knee and SLO
//! answer, the points and the two pictures.

use super::{opt, Section, Table};
use crate::charts;
use crate::core::analyze::sweep::{self, Slo, SweepPoint};

/// One section per series of a load sweep: the knee and SLO sentences, the points
/// and the two pictures. Empty when there are no points.
pub fn sweep_sections(points: &[SweepPoint], slo: Option<&Slo>) -> Vec<Section> {
    let names = sweep::series_names(points);
    let many = names.len() > 1;
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = sweep::series_points(points, name);
            let id = if many {
                format!("sweep-{}", i + 1)
            } else {
                "sweep".into()
            };
            let title = if name.is_empty() {
                "Load sweep".to_string()
            } else {
                format!("Load sweep: {name}")
            };
            sweep_section(&id, &title, &pts, slo)
        })
        .collect()
}

fn sweep_section(id: &str, title: &str, pts: &[&SweepPoint], slo: Option<&Slo>) -> Section {
    let mut s = Section::new(id, title);
    let latency = slo
        .map(Slo::latency)
        .or_else(|| sweep::default_latency(pts));
    let knee = latency.and_then(|l| sweep::knee(pts, l));
    let mut lead = Vec::new();
    match (&knee, latency) {
        (Some(k), _) => lead.push(k.sentence.clone()),
        (None, Some(l)) => lead.push(format!(
            "No knee: {} never rose sharply against throughput between neighbouring points.",
            l.label()
        )),
        (None, None) => {}
    }
    let answer = slo.map(|slo| sweep::slo_answer(pts, *slo));
    match &answer {
        Some(Ok(a)) => lead.push(a.sentence.clone()),
        Some(Err(why)) => s
            .warnings
            .push(format!("The SLO cannot be answered: {why}.")),
        None => {}
    }
    if !lead.is_empty() {
        s.lead = Some(lead.join(" "));
    }
    let mut headers = vec![
        "load",
        "achieved req/s",
        "output tok/s",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "ITL p99 (ms)",
        "E2E p99 (ms)",
    ];
    if slo.is_some() {
        headers.push("meets SLO");
    }
    let mut t = Table::new(&headers);
    for p in pts {
        let mut row = vec![
            p.load_text(),
            opt(p.achieved_rps),
            opt(p.output_tps),
            opt(p.ttft_ms.p50),
            opt(p.ttft_ms.p99),
            opt(p.tpot_ms.p50),
            opt(p.itl_ms.p99),
            opt(p.e2el_ms.p99),
        ];
        if let Some(slo) = slo {
            row.push(
                match slo.latency().value_of(p) {
                    Some(v) if v <= slo.max_ms => "yes",
                    Some(_) => "no",
                    None => "not measured",
                }
                .into(),
            );
        }
        t.row(row);
    }
    s.table = Some(t);
    if let Some(l) = latency {
        if let Some(svg) =
            charts::sweep::latency_vs_throughput(pts, l, slo, knee.as_ref().map(|k| k.index))
        {
            s.charts.push(svg);
        }
    }
    if let Some(svg) = charts::sweep::achieved_vs_offered(pts) {
        s.charts.push(svg);
    }
    s.notes.push(format!(
        "The knee is the last point before latency turns up sharply: between neighbouring points latency rose by more than {:.0}% while throughput rose by less than {:.0}%, or latency rose more than {} times faster than throughput (relative changes).",
        sweep::KNEE_MIN_RISE * 100.0,
        sweep::KNEE_FLAT_THROUGHPUT * 100.0,
        sweep::KNEE_ELASTICITY
    ));
    s.notes.push(
        "A point meets an SLO when its latency is at most the limit (exactly at the limit counts as meeting)."
            .into(),
    );
    s
}
