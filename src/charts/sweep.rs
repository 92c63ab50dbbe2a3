//! Load-sweep pictures, drawn as plain SVG so every mark can carry a `<title>` (the
//! browser shows it on hover; screen readers read it): latency percentiles against
//! achieved throughput with the SLO line, and achieved against offered load (the
//! saturation bend). Presentation attributes only, no inline style (CSP).

use std::fmt::Write;

use crate::core::analyze::sweep::{LatencyOf, Slo, SweepPoint};
use crate::core::fmt::format_number;
use crate::core::metric::{Metric, Percentile};

const W: f64 = 640.0;
const H: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
const COLOURS: [&str; 4] = ["#2456c7", "#d66c14", "#1e7b4a", "#b42318"];
const GREY: &str = "#5d6677";

/// Text safe inside SVG elements and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label: few digits, separators.
fn tick_text(v: f64) -> String {
    let decimals = if v.abs() >= 10.0 || v == 0.0 {
        0
    } else if v.abs() >= 1.0 {
        1
    } else {
        2
    };
    let s = format_number(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// About five round ticks from 0 to at least `max`.
fn ticks(max: f64) -> (f64, Vec<f64>) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let top = (max / step).ceil() * step;
    let n = (top / step).round() as usize;
    (top, (0..=n).map(|i| i as f64 * step).collect())
}

/// The frame: background, title, axes with ticks, grid and labels; returns the
/// scales (x, y) → pixels.
struct Frame {
    x_max: f64,
    y_max: f64,
}

impl Frame {
    /// Scales from 0 to a little above the largest values, with their ticks.
    fn fit(x_max: f64, y_max: f64) -> (Frame, Vec<f64>, Vec<f64>) {
        let (x_top, x_ticks) = ticks(x_max * 1.05);
        let (y_top, y_ticks) = ticks(y_max * 1.08);
        let frame = Frame {
            x_max: x_top,
            y_max: y_top,
        };
        (frame, x_ticks, y_ticks)
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + x / self.x_max * (W - LEFT - RIGHT)
    }
    fn py(&self, y: f64) -> f64 {
        H - BOTTOM - y / self.y_max * (H - TOP - BOTTOM)
    }

    fn open(out: &mut String, title: &str, label: &str) {
        let _ = write!(
            out,
            r##"<svg class="chart sweep-chart" role="img" aria-label="{l}" viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg"><title>{l}</title><rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/><text x="{cx}" y="22" text-anchor="middle" font-family="sans-serif" font-size="15" fill="#1f2430">{t}</text>"##,
            l = esc(label),
            t = esc(title),
            cx = W / 2.0
        );
    }

    fn axes(&self, out: &mut String, x_ticks: &[f64], y_ticks: &[f64], x_desc: &str, y_desc: &str) {
        for &t in y_ticks {
            let y = self.py(t);
            let _ = write!(
                out,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{x2}" y2="{y:.1}" stroke="#ebeef3"/><text x="{tx}" y="{ty:.1}" text-anchor="end" font-family="sans-serif" font-size="12" fill="{GREY}">{v}</text>"##,
                x2 = W - RIGHT,
                tx = LEFT - 6.0,
                ty = y + 4.0,
                v = esc(&tick_text(t))
            );
        }
        for &t in x_ticks {
            let x = self.px(t);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{y2}" stroke="#ebeef3"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-family="sans-serif" font-size="12" fill="{GREY}">{v}</text>"##,
                y2 = H - BOTTOM,
                ty = H - BOTTOM + 16.0,
                v = esc(&tick_text(t))
            );
        }
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{yb}" x2="{xr}" y2="{yb}" stroke="{GREY}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{yb}" stroke="{GREY}"/><text class="axis-x" x="{cx}" y="{xl}" text-anchor="middle" font-family="sans-serif" font-size="13" fill="#1f2430">{xd}</text><text class="axis-y" x="16" y="{cy}" transform="rotate(-90 16 {cy})" text-anchor="middle" font-family="sans-serif" font-size="13" fill="#1f2430">{yd}</text>"##,
            yb = H - BOTTOM,
            xr = W - RIGHT,
            cx = LEFT + (W - LEFT - RIGHT) / 2.0,
            xl = H - 14.0,
            cy = TOP + (H - TOP - BOTTOM) / 2.0,
            xd = esc(x_desc),
            yd = esc(y_desc)
        );
    }

    fn polyline(&self, out: &mut String, pts: &[(f64, f64)], colour: &str, dashed: bool) {
        if pts.len() < 2 {
            return;
        }
        let d: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", self.px(*x), self.py(*y)))
            .collect();
        let dash = if dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
            d.join(" ")
        );
    }

    fn mark(&self, out: &mut String, x: f64, y: f64, colour: &str, class: &str, title: &str) {
        let _ = write!(
            out,
            r##"<circle class="{class}" cx="{:.1}" cy="{:.1}" r="5" fill="{colour}" stroke="#ffffff" stroke-width="1.5"><title>{}</title></circle>"##,
            self.px(x),
            self.py(y),
            esc(title)
        );
    }

    fn legend(out: &mut String, items: &[(String, &str, bool)]) {
        let mut x = LEFT + 8.0;
        for (name, colour, dashed) in items {
            let dash = if *dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = write!(
                out,
                r#"<line x1="{x:.1}" y1="{y}" x2="{x2:.1}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/><text x="{tx:.1}" y="{ty}" font-family="sans-serif" font-size="12" fill="{colour}">{n}</text>"#,
                y = TOP + 10.0,
                x2 = x + 18.0,
                tx = x + 22.0,
                ty = TOP + 14.0,
                n = esc(name)
            );
            x += 30.0 + 7.0 * name.chars().count() as f64;
        }
    }
}

/// A plotted point: (index into the points, x, y).
type Mark = (usize, f64, f64);

/// Latency percentiles (of `latency.metric`) against achieved requests/s, one mark
/// per point in load order, the SLO as a dashed horizontal line and the knee ringed.
/// `None` when fewer than two points have both numbers.
pub fn latency_vs_throughput(
    points: &[&SweepPoint],
    latency: LatencyOf,
    slo: Option<&Slo>,
    knee: Option<usize>,
) -> Option<String> {
    let metric = latency.metric;
    let series: Vec<(Percentile, Vec<Mark>)> = Percentile::ALL
        .into_iter()
        .map(|pc| {
            let pts = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let x = p.achieved_rps.filter(|x| x.is_finite())?;
                    let y = p.latency(metric)?.at(pc)?;
                    Some((i, x, y))
                })
                .collect::<Vec<_>>();
            (pc, pts)
        })
        .filter(|(_, pts)| pts.len() >= 2)
        .collect();
    if series.is_empty() {
        return None;
    }
    let x_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|t| t.1))
        .fold(0.0f64, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|t| t.2))
        .chain(slo.filter(|s| s.metric == metric).map(|s| s.max_ms))
        .fold(0.0f64, f64::max);
    let (frame, x_ticks, y_ticks) = Frame::fit(x_max, y_max);
    let name = metric_name(metric);
    let mut out = String::new();
    Frame::open(
        &mut out,
        &format!("{name} against throughput"),
        &format!("{name} percentiles against achieved throughput, one mark per load level"),
    );
    frame.axes(
        &mut out,
        &x_ticks,
        &y_ticks,
        "achieved throughput (req/s)",
        &format!("{name} (ms)"),
    );
    let mut legend = Vec::new();
    for (k, (pc, pts)) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let line: Vec<(f64, f64)> = pts.iter().map(|t| (t.1, t.2)).collect();
        frame.polyline(&mut out, &line, colour, false);
        legend.push((pc.slug().to_string(), colour, false));
    }
    if let Some(s) = slo.filter(|s| s.metric == metric) {
        let y = frame.py(s.max_ms);
        let _ = write!(
            out,
            r##"<line class="slo-line" x1="{LEFT}" y1="{y:.1}" x2="{x2}" y2="{y:.1}" stroke="#b42318" stroke-width="2" stroke-dasharray="6 4"><title>SLO: {t}</title></line><text x="{tx}" y="{ty:.1}" text-anchor="end" font-family="sans-serif" font-size="12" fill="#b42318">SLO {t}</text>"##,
            x2 = W - RIGHT,
            tx = W - RIGHT - 4.0,
            ty = y - 5.0,
            t = esc(&s.label())
        );
    }
    for (k, (pc, pts)) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        for &(i, x, y) in pts {
            let p = points[i];
            let title = format!(
                "{}: {} req/s achieved, {} {} {} ms",
                p.load_text(),
                tick_text(x),
                pc.slug(),
                metric.short_label(),
                format_number(y, if y >= 100.0 { 0 } else { 1 })
            );
            frame.mark(&mut out, x, y, colour, "point", &title);
        }
    }
    if let Some(k) = knee {
        let hit = points
            .get(k)
            .and_then(|p| Some((p, p.achieved_rps?, latency.value_of(p)?)));
        if let Some((p, x, y)) = hit {
            let _ = write!(
                out,
                r##"<circle class="knee" cx="{:.1}" cy="{:.1}" r="10" fill="none" stroke="#1f2430" stroke-width="2"><title>Knee: latency turns up sharply after {}</title></circle>"##,
                frame.px(x),
                frame.py(y),
                esc(&p.load_text())
            );
        }
    }
    Frame::legend(&mut out, &legend);
    out.push_str("</svg>");
    Some(out)
}

/// "TTFT", "E2E latency".
fn metric_name(m: Metric) -> &'static str {
    m.short_label()
}

/// Achieved requests/s against the offered rate (or concurrency), with the
/// "achieved = offered" diagonal for rate sweeps; an unbounded run shows as a dashed
/// ceiling. `None` when fewer than two points have an offered load and a throughput.
pub fn achieved_vs_offered(points: &[&SweepPoint]) -> Option<String> {
    let by_rate = points.iter().any(|p| p.offered_rate.is_some());
    let load = |p: &SweepPoint| {
        if by_rate {
            p.offered_rate
        } else {
            p.concurrency
        }
    };
    let pts: Vec<(usize, f64, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, load(p)?, p.achieved_rps.filter(|y| y.is_finite())?)))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let ceiling: Option<(&SweepPoint, f64)> = points
        .iter()
        .filter(|p| p.unbounded)
        .find_map(|p| Some((*p, p.achieved_rps?)));
    let x_max = pts.iter().map(|t| t.1).fold(0.0f64, f64::max);
    let y_max = pts
        .iter()
        .map(|t| t.2)
        .chain(ceiling.map(|c| c.1))
        .chain(by_rate.then_some(x_max))
        .fold(0.0f64, f64::max);
    let (frame, x_ticks, y_ticks) = Frame::fit(x_max, y_max);
    let mut out = String::new();
    let x_desc = if by_rate {
        "offered request rate (req/s)"
    } else {
        "concurrency (requests in flight)"
    };
    Frame::open(
        &mut out,
        "Achieved against offered load",
        "Achieved throughput against offered load: where it bends away, the server is saturated",
    );
    frame.axes(
        &mut out,
        &x_ticks,
        &y_ticks,
        x_desc,
        "achieved throughput (req/s)",
    );
    let mut legend = vec![("achieved".to_string(), COLOURS[0], false)];
    if by_rate {
        let top = frame.x_max.min(frame.y_max);
        frame.polyline(&mut out, &[(0.0, 0.0), (top, top)], GREY, true);
        legend.push(("achieved = offered".to_string(), GREY, true));
    }
    if let Some((p, y)) = ceiling {
        let py = frame.py(y);
        let _ = write!(
            out,
            r##"<line class="ceiling" x1="{LEFT}" y1="{py:.1}" x2="{x2}" y2="{py:.1}" stroke="{c}" stroke-width="2" stroke-dasharray="2 4"><title>{t}</title></line>"##,
            x2 = W - RIGHT,
            c = COLOURS[1],
            t = esc(&format!(
                "{}: {} req/s achieved with every request sent at once",
                p.load_text(),
                tick_text(y)
            ))
        );
        legend.push(("unbounded".to_string(), COLOURS[1], true));
    }
    let line: Vec<(f64, f64)> = pts.iter().map(|t| (t.1, t.2)).collect();
    frame.polyline(&mut out, &line, COLOURS[0], false);
    for &(i, x, y) in &pts {
        let title = format!("{}: {} req/s achieved", points[i].load_text(), tick_text(y));
        frame.mark(&mut out, x, y, COLOURS[0], "point", &title);
    }
    Frame::legend(&mut out, &legend);
    out.push_str("</svg>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::analyze::sweep::LatencyStats;

    fn pt(rate: Option<f64>, rps: f64, p50: f64, p99: f64) -> SweepPoint {
        SweepPoint {
            label: "x".into(),
            offered_rate: rate,
            unbounded: rate.is_none(),
            achieved_rps: Some(rps),
            ttft_ms: LatencyStats {
                p50: Some(p50),
                p99: Some(p99),
                ..LatencyStats::default()
            },
            ..SweepPoint::default()
        }
    }

    #[test]
    fn latency_chart_marks_points_slo_and_knee() {
        let pts = [
            pt(Some(1.0), 1.0, 40.0, 90.0),
            pt(Some(4.0), 3.9, 50.0, 120.0),
            pt(Some(8.0), 6.0, 300.0, 900.0),
            pt(None, 6.2, 800.0, 2400.0),
        ];
        let refs: Vec<&SweepPoint> = pts.iter().collect();
        let lat = LatencyOf {
            metric: Metric::Ttft,
            percentile: Percentile::P99,
        };
        let slo = Slo {
            metric: Metric::Ttft,
            percentile: Percentile::P99,
            max_ms: 200.0,
        };
        let svg = latency_vs_throughput(&refs, lat, Some(&slo), Some(1)).unwrap();
        assert!(svg.starts_with("<svg class=\"chart sweep-chart\""));
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 8);
        assert!(svg.contains("class=\"slo-line\""));
        assert!(svg.contains("SLO p99 TTFT ≤ 200 ms"));
        assert!(svg.contains("<title>4 req/s: 3.9 req/s achieved, p99 TTFT 120 ms</title>"));
        assert!(svg.contains("unbounded rate: 6.2 req/s achieved"));
        assert!(svg.contains("class=\"knee\""));
        assert!(svg.contains("achieved throughput (req/s)") && svg.contains("TTFT (ms)"));
        assert!(!svg.contains("style="));
        // Every font at least 11 px.
        for part in svg.split("font-size=\"").skip(1) {
            let size: f64 = part.split('"').next().unwrap().parse().unwrap();
            assert!(size >= 11.0, "{size}");
        }
        let bend = achieved_vs_offered(&refs).unwrap();
        assert_eq!(bend.matches("<circle class=\"point\"").count(), 3);
        assert!(bend.contains("class=\"ceiling\""));
        assert!(bend.contains("offered request rate (req/s)"));
    }

    #[test]
    fn too_few_points_draw_nothing_and_text_is_escaped() {
        let one = [pt(Some(1.0), 1.0, 40.0, 90.0)];
        let refs: Vec<&SweepPoint> = one.iter().collect();
        let lat = LatencyOf {
            metric: Metric::Ttft,
            percentile: Percentile::P99,
        };
        assert!(latency_vs_throughput(&refs, lat, None, None).is_none());
        assert!(achieved_vs_offered(&refs).is_none());
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        let (top, t) = ticks(7.3);
        assert_eq!(top, 8.0);
        assert_eq!(t.len(), 5);
    }
}
