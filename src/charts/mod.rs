//! Server-rendered SVG pictures from core results (plotters' SVG backend: presentation
//! attributes only, no inline style, so the pages' CSP holds).
//!
//! Conventions every chart follows (new chart files use the helpers below):
//! - the drawing is [`WIDTH`] units wide and CSS scales it to the column; text is
//!   [`TEXT_PX`] units, so it renders at ≥ [`MIN_READABLE_PX`] px even when a 390 px
//!   phone gives the chart only [`NARROWEST_SHOWN_PX`] px ([`text`], [`caption`]);
//! - each axis names its quantity and unit, "latency (ms)" ([`axis_label`]), and tick
//!   labels are plain grouped numbers, never `1e9` ([`tick`]);
//! - each mark carries a `<title>` tooltip with its exact value ([`Mark`], [`finish`]),
//!   and the picture itself a `<title>` naming it.

pub mod bubbles;
pub mod sweep;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::core::fmt::{format_number, short_kernel_name};

const BLUE: RGBColor = RGBColor(36, 86, 199);
const ORANGE: RGBColor = RGBColor(214, 108, 20);
const GREY: RGBColor = RGBColor(93, 102, 119);
const PALETTE: [RGBColor; 6] = [
    BLUE,
    ORANGE,
    RGBColor(30, 123, 74),
    RGBColor(180, 35, 24),
    RGBColor(120, 80, 170),
    GREY,
];

/// Width of every chart's viewBox, in SVG units.
pub const WIDTH: u32 = 480;
/// The narrowest a page shows a chart: a 390 px phone less the page's and card's padding
/// (static/app.css keeps that true).
pub const NARROWEST_SHOWN_PX: u32 = 320;
/// The smallest text a page may show.
pub const MIN_READABLE_PX: u32 = 11;
/// Text size in SVG units: `TEXT_PX × NARROWEST_SHOWN_PX / WIDTH ≥ MIN_READABLE_PX`.
pub const TEXT_PX: u32 = 17;
/// The chart's caption, a little larger than its text.
pub const CAPTION_PX: u32 = 19;
const _: () = assert!(TEXT_PX * NARROWEST_SHOWN_PX >= MIN_READABLE_PX * WIDTH);

/// Room right of the plot for the last tick label, which plotters centres on the axis end.
const RIGHT_MARGIN: u32 = 28;

/// The i-th series colour.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// plotters' SVG backend writes `font-size` as the style's size / 1.24; this undoes it so
/// the drawing's text is exactly the size named here.
fn font(px: u32) -> TextStyle<'static> {
    ("sans-serif", f64::from(px) * 1.24 + 0.01)
        .into_font()
        .color(&BLACK)
}

/// Font for tick labels, axis names, legends and labels on marks ([`TEXT_PX`]).
pub fn text() -> TextStyle<'static> {
    font(TEXT_PX)
}

/// Font for a chart's caption ([`CAPTION_PX`]).
pub fn caption() -> TextStyle<'static> {
    font(CAPTION_PX)
}

/// An axis name with its unit: `axis_label("latency", "ms")` → "latency (ms)".
pub fn axis_label(quantity: &str, unit: &str) -> String {
    if unit.is_empty() {
        quantity.to_string()
    } else {
        format!("{quantity} ({unit})")
    }
}

/// A tick or tooltip number: grouped digits and as many decimals as its size needs
/// (`12,500`, `37.5`, `0.042`), never scientific notation.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // Two significant digits below 1.
        (-(a.log10().floor()) as usize + 1).min(9)
    };
    let s = format_number(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A hoverable area on a chart, in the drawing's pixel coordinates, with the tooltip
/// that says exactly what the mark shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    Rect {
        x: i32,
        y: i32,
        w: i32,
        h: i32,
        title: String,
    },
    Dot {
        x: i32,
        y: i32,
        title: String,
    },
}

impl Mark {
    /// The rectangle between two pixel corners (any order).
    pub fn rect((x0, y0): (i32, i32), (x1, y1): (i32, i32), title: String) -> Mark {
        Mark::Rect {
            x: x0.min(x1),
            y: y0.min(y1),
            w: (x1 - x0).abs().max(1),
            h: (y1 - y0).abs().max(1),
            title,
        }
    }

    fn svg(&self) -> String {
        // Transparent but painted, so the pointer finds it and the browser shows the title.
        match self {
            Mark::Rect { x, y, w, h, title } => format!(
                "<rect class=\"mark\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"#fff\" fill-opacity=\"0\"><title>{}</title></rect>",
                xml_escape(title)
            ),
            Mark::Dot { x, y, title } => format!(
                "<circle class=\"mark\" cx=\"{x}\" cy=\"{y}\" r=\"7\" fill=\"#fff\" fill-opacity=\"0\"><title>{}</title></circle>",
                xml_escape(title)
            ),
        }
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// A blank drawing [`WIDTH`] wide and `height` tall on `buf`.
pub fn canvas(buf: &mut String, height: u32) -> DrawingArea<SVGBackend<'_>, Shift> {
    SVGBackend::with_string(buf, (WIDTH, height)).into_drawing_area()
}

/// Let CSS size the picture (keep the viewBox), name it with a `<title>` and lay the
/// marks' tooltips over the drawing.
pub fn finish(buf: String, title: &str, marks: &[Mark]) -> String {
    let open = format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{}\" ",
        xml_escape(title)
    );
    let mut svg = buf.replacen("<svg ", &open, 1);
    if let Some(end) = svg.find('>') {
        svg.insert_str(end + 1, &format!("\n<title>{}</title>", xml_escape(title)));
    }
    if !marks.is_empty() {
        let layer: String = marks.iter().map(Mark::svg).collect::<Vec<_>>().join("\n");
        if let Some(close) = svg.rfind("</svg>") {
            svg.insert_str(close, &format!("<g class=\"marks\">\n{layer}\n</g>\n"));
        }
    }
    svg
}

/// The sample value at fraction `q` of a sorted sample (nearest rank).
fn at_fraction(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Empirical CDFs of one or more latency samples (same unit), overlaid; p50, p90 and p99
/// of each carry a tooltip.
pub fn cdf(title: &str, unit: &str, series: &[(&str, &[f64])]) -> Option<String> {
    let mut marks_at: Vec<(usize, f64, f64, String)> = Vec::new();
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .filter_map(|(name, v)| {
            let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            if s.is_empty() {
                return None;
            }
            s.sort_by(f64::total_cmp);
            // At most ~400 points per curve: enough for the eye, small pages.
            let step = (s.len() / 400).max(1);
            let n = s.len() as f64;
            let points = s
                .iter()
                .enumerate()
                .filter(|(j, _)| j % step == 0 || *j == s.len() - 1)
                .map(|(j, x)| (*x, (j + 1) as f64 / n))
                .collect();
            Some((name.to_string(), points, s))
        })
        .enumerate()
        .map(|(i, (name, points, s))| {
            for (q, label) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
                let x = at_fraction(&s, q);
                marks_at.push((
                    i,
                    x,
                    q,
                    format!("{name} {label}: {} {unit} ({} samples)", tick(x), s.len()),
                ));
            }
            (name, points)
        })
        .collect();
    let max = curves
        .iter()
        .filter_map(|(_, p)| p.last().map(|(x, _)| *x))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    line_chart(
        title,
        (&axis_label("latency", unit), 0.0..max * 1.02),
        ("fraction of requests", 0.0..1.0),
        &curves,
        SeriesLabelPosition::LowerRight,
        &marks_at,
    )
}

/// Overlaid lines with a legend; the shared body of `cdf` and `lines`. `dots` are
/// (series, x, y, tooltip) drawn as small markers with their tooltip.
fn line_chart(
    title: &str,
    (x_desc, x_range): (&str, std::ops::Range<f64>),
    (y_desc, y_range): (&str, std::ops::Range<f64>),
    series: &[(String, Vec<(f64, f64)>)],
    legend: SeriesLabelPosition,
    dots: &[(usize, f64, f64, String)],
) -> Option<String> {
    if series.iter().all(|(_, p)| p.is_empty()) {
        return None;
    }
    let mut buf = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut buf, 340);
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, caption())
            .margin(10)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(50)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range, y_range)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(5)
            .y_labels(5)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .label_style(text())
            .axis_desc_style(text())
            .light_line_style(RGBColor(235, 238, 243))
            .draw()
            .ok()?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .ok()?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        for (i, x, y, tip) in dots {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (*x, *y),
                    3,
                    colour(*i).filled(),
                )))
                .ok()?;
            let (px, py) = chart.backend_coord(&(*x, *y));
            marks.push(Mark::Dot {
                x: px,
                y: py,
                title: tip.clone(),
            });
        }
        chart
            .configure_series_labels()
            .position(legend)
            .label_font(text())
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(finish(buf, title, &marks))
}

/// Horizontal bars, largest first as given (kernel totals). Labels are shown folded by
/// [`short_kernel_name`] (plain words pass unchanged); each bar's tooltip has the full
/// label and the value with its unit. `axis` is (quantity, unit) of the values.
pub fn bars(title: &str, axis: (&str, &str), items: &[(String, f64)]) -> Option<String> {
    horizontal_bars(title, axis, items, false)
}

/// Horizontal bars that go right for a gain and left for a loss (a trace diff's top
/// movers: test − control), in the order given. Labels are folded as in [`bars`]; each
/// bar's tooltip has the full label and the signed value with its unit.
pub fn signed_bars(title: &str, axis: (&str, &str), items: &[(String, f64)]) -> Option<String> {
    horizontal_bars(title, axis, items, true)
}

/// [`bars`] (values ≥ 0, from zero) and [`signed_bars`] (either sign, around a zero line).
fn horizontal_bars(
    title: &str,
    axis: (&str, &str),
    items: &[(String, f64)],
    signed: bool,
) -> Option<String> {
    let items: Vec<&(String, f64)> = items
        .iter()
        .filter(|(_, v)| v.is_finite() && (signed || *v >= 0.0))
        .collect();
    if items.is_empty() {
        return None;
    }
    let hi = items.iter().map(|(_, v)| *v).fold(0.0f64, f64::max);
    let lo = items.iter().map(|(_, v)| *v).fold(0.0f64, f64::min);
    // The x range, and where labels start.
    let (x0, x1, label_x) = if signed {
        let span = (hi - lo).max(1e-12);
        let x0 = lo - span * 0.05;
        (x0, hi + span * 0.05, x0 + span * 0.01)
    } else {
        let max = hi.max(1e-12);
        (0.0, max * 1.05, max * 0.01)
    };
    let n = items.len();
    let height = 90 + 30 * n as u32;
    let mut buf = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut buf, height);
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, caption())
            .margin(10)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(50)
            .y_label_area_size(0)
            .build_cartesian_2d(x0..x1, 0.0..n as f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(if signed { 5 } else { 4 })
            .x_label_formatter(&|v| tick(*v))
            .x_desc(axis_label(axis.0, axis.1))
            .label_style(text())
            .axis_desc_style(text())
            .light_line_style(RGBColor(235, 238, 243))
            .draw()
            .ok()?;
        if signed {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, 0.0), (0.0, n as f64)],
                    GREY,
                )))
                .ok()?;
        }
        for (i, (label, v)) in items.iter().enumerate() {
            let top = (n - i) as f64 - 0.1;
            let bottom = (n - i - 1) as f64 + 0.1;
            let fill = if signed && *v >= 0.0 {
                colour(1)
            } else {
                colour(0)
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0_f64.min(*v), bottom), (0.0_f64.max(*v), top)],
                    fill.mix(0.35).filled(),
                )))
                .ok()?;
            let short = short_kernel_name(label);
            let short: String = if short.chars().count() > 44 {
                short.chars().take(43).chain("…".chars()).collect()
            } else {
                short
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    short,
                    (label_x, (n - i - 1) as f64 + 0.75),
                    text(),
                )))
                .ok()?;
            let sign = if signed && *v > 0.0 { "+" } else { "" };
            marks.push(Mark::rect(
                chart.backend_coord(&(x0, bottom)),
                chart.backend_coord(&(x1, top)),
                format!("{label}: {sign}{} {}", tick(*v), axis.1),
            ));
        }
        root.present().ok()?;
    }
    Some(finish(buf, title, &marks))
}

/// One stacked bar of shares summing to at most 1 (a phase decomposition), with before
/// and after rows when two are given.
pub fn share_bar(title: &str, rows: &[(&str, Vec<(String, f64)>)]) -> Option<String> {
    if rows.iter().all(|(_, parts)| parts.is_empty()) {
        return None;
    }
    let height = 110 + 56 * rows.len() as u32;
    let mut buf = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut buf, height);
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, caption())
            .margin(10)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..1.0, 0.0..rows.len() as f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len())
            .y_label_formatter(&|y| {
                let i = rows.len() as f64 - y - 0.5;
                rows.get(i.round() as usize)
                    .map(|r| r.0.to_string())
                    .unwrap_or_default()
            })
            .x_labels(5)
            .x_label_formatter(&|v: &f64| format!("{:.0}", v * 100.0))
            .x_desc(axis_label("share", "%"))
            .label_style(text())
            .axis_desc_style(text())
            .draw()
            .ok()?;
        let mut names: Vec<String> = Vec::new();
        for (r, (row, parts)) in rows.iter().enumerate() {
            let y0 = (rows.len() - r - 1) as f64 + 0.2;
            let y1 = y0 + 0.6;
            let mut x = 0.0;
            for (name, share) in parts {
                let idx = names.iter().position(|n| n == name).unwrap_or_else(|| {
                    names.push(name.clone());
                    names.len() - 1
                });
                let w = share.clamp(0.0, 1.0 - x);
                let c = colour(idx);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y0), (x + w, y1)],
                        c.filled(),
                    )))
                    .ok()?;
                // A label only where it fits; every segment has its tooltip.
                let label = format!("{name} {:.0}%", share * 100.0);
                if w * f64::from(WIDTH - 80) > label.chars().count() as f64 * 9.5 {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            label.clone(),
                            (x + 0.005, (y0 + y1) / 2.0 + 0.12),
                            text().color(&WHITE),
                        )))
                        .ok()?;
                }
                marks.push(Mark::rect(
                    chart.backend_coord(&(x, y0)),
                    chart.backend_coord(&(x + w, y1)),
                    format!("{row}: {name} {}%", tick(share * 100.0)),
                ));
                x += w;
            }
        }
        root.present().ok()?;
    }
    Some(finish(buf, title, &marks))
}

/// A value over time per series (GPU utilisation from nvidia-smi/DCGM). `x_axis` and
/// `y_axis` are (quantity, unit); up to 24 points per series carry a tooltip.
pub fn lines(
    title: &str,
    x_axis: (&str, &str),
    y_axis: (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
) -> Option<String> {
    let points: Vec<&(f64, f64)> = series.iter().flat_map(|(_, p)| p.iter()).collect();
    if points.is_empty() {
        return None;
    }
    let (x0, x1) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| {
        (a.min(*x), b.max(*x))
    });
    let y1 = points
        .iter()
        .map(|(_, y)| *y)
        .fold(0.0f64, f64::max)
        .max(1.0);
    let dots: Vec<(usize, f64, f64, String)> = series
        .iter()
        .enumerate()
        .flat_map(|(i, (name, pts))| {
            let step = pts.len().div_ceil(24).max(1);
            pts.iter().step_by(step).map(move |(x, y)| {
                (
                    i,
                    *x,
                    *y,
                    format!(
                        "{name} at {} {}: {} {}",
                        tick(*x),
                        x_axis.1,
                        tick(*y),
                        y_axis.1
                    ),
                )
            })
        })
        .collect();
    line_chart(
        title,
        (&axis_label(x_axis.0, x_axis.1), x0..x1.max(x0 + 1e-9)),
        (&axis_label(y_axis.0, y_axis.1), 0.0..y1 * 1.05),
        series,
        SeriesLabelPosition::UpperRight,
        &dots,
    )
}

/// Busy/idle over time from the trace's start, one row per stream: each bucket shaded by
/// its busy fraction (dark = busy, white = idle); each row's tooltip gives its busy share
/// of the window.
pub fn timeline(title: &str, bucket_us: f64, rows: &[(String, Vec<f64>)]) -> Option<String> {
    let buckets = rows.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
    if rows.is_empty() || buckets == 0 || bucket_us <= 0.0 {
        return None;
    }
    // Time from the trace's start: absolute trace clocks (µs since the epoch) make
    // thirteen-digit tick labels that overlap.
    let x0 = 0.0;
    let x1 = bucket_us * buckets as f64;
    let n = rows.len();
    let height = 100 + 40 * n as u32;
    let mut buf = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut buf, height);
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, caption())
            .margin(10)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(50)
            .y_label_area_size(0)
            .build_cartesian_2d(x0..x1, 0.0..n as f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_x_mesh()
            .disable_y_axis()
            .x_labels(4)
            .x_label_formatter(&|v| tick(*v))
            .x_desc(axis_label("time from the trace start", "µs"))
            .label_style(text())
            .axis_desc_style(text())
            .draw()
            .ok()?;
        for (r, (label, busy)) in rows.iter().enumerate() {
            let y0 = (n - r - 1) as f64 + 0.05;
            let y1 = y0 + 0.45;
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (x0, y1 + 0.45),
                    text(),
                )))
                .ok()?;
            chart
                .draw_series(
                    busy.iter()
                        .enumerate()
                        .filter(|(_, v)| **v > 0.0)
                        .map(|(b, v)| {
                            let lo = x0 + b as f64 * bucket_us;
                            Rectangle::new(
                                [(lo, y0), (lo + bucket_us, y1)],
                                BLUE.mix(v.clamp(0.05, 1.0)).filled(),
                            )
                        }),
                )
                .ok()?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, y0), (x1, y1)],
                    GREY.stroke_width(1),
                )))
                .ok()?;
            let share = busy.iter().sum::<f64>() / buckets as f64;
            marks.push(Mark::rect(
                chart.backend_coord(&(x0, y0)),
                chart.backend_coord(&(x1, y1)),
                format!(
                    "{label}: busy {}% of {} µs",
                    tick(share * 100.0),
                    tick(x1 - x0)
                ),
            ));
        }
        root.present().ok()?;
    }
    Some(finish(buf, title, &marks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_without_inline_style_and_escape_text() {
        let a = [1.0, 2.0, 3.0, 10.0];
        let b = [0.5, 1.0, 1.5];
        let svg = cdf("TTFT", "ms", &[("before", &a), ("after", &b)]).unwrap();
        assert!(svg.starts_with("<svg class=\"chart\""));
        assert!(!svg.contains("style="));
        assert!(svg.contains("latency (ms)"), "the axis names its unit");
        assert!(svg.contains("<title>before p90: 10 ms (4 samples)</title>"));
        let svg = bars(
            "kernels",
            ("total time", "µs"),
            &[("void k<float>(int)".into(), 3.0), ("b".into(), 1.0)],
        )
        .unwrap();
        assert!(svg.contains("k&lt;…&gt;"), "the drawn label is folded");
        assert!(svg.contains("<title>void k&lt;float&gt;(int): 3 µs</title>"));
        assert!(!svg.contains("style="));
        let svg = share_bar(
            "phases",
            &[("TTFT", vec![("queue".into(), 0.7), ("prefill".into(), 0.3)])],
        )
        .unwrap();
        assert!(svg.contains("queue 70%"));
        assert!(svg.contains("<title>TTFT: prefill 30%</title>"));
        assert!(cdf("empty", "ms", &[("x", &[])]).is_none());
        let svg = lines(
            "sm",
            ("time", "s"),
            ("SM utilisation", "%"),
            &[("gpu0".into(), vec![(0.0, 10.0), (1.0, 50.0)])],
        )
        .unwrap();
        assert!(svg.contains("gpu0") && svg.contains("time (s)"));
        assert!(svg.contains("<title>gpu0 at 1 s: 50 %</title>"));
        let svg = timeline(
            "busy",
            1.0,
            &[("GPU 0 / stream 7".into(), vec![1.0, 0.0, 0.5])],
        )
        .unwrap();
        assert!(svg.contains("stream 7") && !svg.contains("style="));
        assert!(svg.contains("<title>GPU 0 / stream 7: busy 50% of 3 µs</title>"));
    }

    #[test]
    fn text_is_sized_for_the_narrowest_column() {
        let svg = bars("k", ("time", "ms"), &[("a".into(), 1.0)]).unwrap();
        assert!(svg.contains(&format!("viewBox=\"0 0 {WIDTH} ")));
        assert!(svg.contains(&format!("font-size=\"{TEXT_PX}")));
        assert!(!svg.contains("font-size=\"12"));
    }

    #[test]
    fn ticks_are_plain_numbers() {
        assert_eq!(tick(76_518_000_000.0), "76,518,000,000");
        assert_eq!(tick(37.5), "37.5");
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(0.042), "0.042");
        assert_eq!(tick(0.0), "0");
        assert_eq!(axis_label("latency", "ms"), "latency (ms)");
        assert_eq!(axis_label("requests", ""), "requests");
    }
}
