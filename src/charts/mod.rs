//! Server-rendered SVG pictures from core results (plotters' SVG backend: presentation
//! attributes only, no inline style, so the pages' CSP holds).

pub mod bubbles;
pub mod sweep;

use plotters::prelude::*;

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

/// The i-th series colour.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn finish(buf: String) -> String {
    // Let CSS size the picture: keep the viewBox, drop fixed width/height.
    buf.replacen("<svg ", "<svg class=\"chart\" role=\"img\" ", 1)
}

/// Empirical CDFs of one or more latency samples (same unit), overlaid.
pub fn cdf(title: &str, unit: &str, series: &[(&str, &[f64])]) -> Option<String> {
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
            Some((name.to_string(), points))
        })
        .collect();
    let max = curves
        .iter()
        .filter_map(|(_, p)| p.last().map(|(x, _)| *x))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    line_chart(
        title,
        (unit, 0.0..max * 1.02),
        ("fraction of requests", 0.0..1.0),
        &curves,
        SeriesLabelPosition::LowerRight,
    )
}

/// Overlaid lines with a legend; the shared body of `cdf` and `lines`.
fn line_chart(
    title: &str,
    (x_desc, x_range): (&str, std::ops::Range<f64>),
    (y_desc, y_range): (&str, std::ops::Range<f64>),
    series: &[(String, Vec<(f64, f64)>)],
    legend: SeriesLabelPosition,
) -> Option<String> {
    if series.iter().all(|(_, p)| p.is_empty()) {
        return None;
    }
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, 320)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(x_range, y_range)
            .ok()?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
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
        chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .draw()
            .ok()?;
        root.present().ok()?;
    }
    Some(finish(buf))
}

/// Horizontal bars, largest first as given (phase shares, kernel totals).
pub fn bars(title: &str, unit: &str, items: &[(String, f64)]) -> Option<String> {
    let items: Vec<&(String, f64)> = items
        .iter()
        .filter(|(_, v)| v.is_finite() && *v >= 0.0)
        .collect();
    if items.is_empty() {
        return None;
    }
    let max = items
        .iter()
        .map(|(_, v)| *v)
        .fold(0.0f64, f64::max)
        .max(1e-12);
    let n = items.len();
    let height = 60 + 26 * n as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(0)
            .build_cartesian_2d(0.0..max * 1.05, 0.0..n as f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc(unit)
            .light_line_style(RGBColor(235, 238, 243))
            .draw()
            .ok()?;
        for (i, (label, v)) in items.iter().enumerate() {
            let top = (n - i) as f64 - 0.15;
            let bottom = (n - i - 1) as f64 + 0.15;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, bottom), (*v, top)],
                    colour(0).mix(0.75).filled(),
                )))
                .ok()?;
            let short: String = if label.chars().count() > 70 {
                label.chars().take(67).chain("…".chars()).collect()
            } else {
                label.clone()
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    short,
                    (max * 0.01, (n - i - 1) as f64 + 0.5),
                    ("sans-serif", 12).into_font().color(&BLACK),
                )))
                .ok()?;
        }
        root.present().ok()?;
    }
    Some(finish(buf))
}

/// One stacked bar of shares summing to at most 1 (a phase decomposition), with before
/// and after rows when two are given.
pub fn share_bar(title: &str, rows: &[(&str, Vec<(String, f64)>)]) -> Option<String> {
    if rows.iter().all(|(_, parts)| parts.is_empty()) {
        return None;
    }
    let height = 90 + 50 * rows.len() as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
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
            .x_desc("share")
            .draw()
            .ok()?;
        let mut names: Vec<String> = Vec::new();
        for (r, (_, parts)) in rows.iter().enumerate() {
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
                if w > 0.08 {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            format!("{name} {:.0}%", share * 100.0),
                            (x + 0.005, (y0 + y1) / 2.0),
                            ("sans-serif", 11).into_font().color(&WHITE),
                        )))
                        .ok()?;
                }
                x += w;
            }
        }
        root.present().ok()?;
    }
    Some(finish(buf))
}

/// A value over time per series (GPU utilisation from nvidia-smi/DCGM).
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
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
    line_chart(
        title,
        (x_desc, x0..x1.max(x0 + 1e-9)),
        (y_desc, 0.0..y1 * 1.05),
        series,
        SeriesLabelPosition::UpperRight,
    )
}

/// Busy/idle over time, one row per stream: each bucket shaded by its busy fraction
/// (dark = busy, white = idle).
pub fn timeline(
    title: &str,
    start_us: f64,
    bucket_us: f64,
    rows: &[(String, Vec<f64>)],
) -> Option<String> {
    let buckets = rows.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
    if rows.is_empty() || buckets == 0 || bucket_us <= 0.0 {
        return None;
    }
    let x0 = start_us;
    let x1 = start_us + bucket_us * buckets as f64;
    let n = rows.len();
    let height = 80 + 28 * n as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, height)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(0)
            .build_cartesian_2d(x0..x1, 0.0..n as f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_x_mesh()
            .disable_y_axis()
            .x_desc("trace time (µs)")
            .draw()
            .ok()?;
        for (r, (label, busy)) in rows.iter().enumerate() {
            let y0 = (n - r - 1) as f64 + 0.08;
            let y1 = y0 + 0.5;
            chart
                .draw_series(std::iter::once(Text::new(
                    label.clone(),
                    (x0, y1 + 0.38),
                    ("sans-serif", 11).into_font().color(&BLACK),
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
        }
        root.present().ok()?;
    }
    Some(finish(buf))
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
        let svg = bars(
            "kernels",
            "µs",
            &[("void k<float>(int)".into(), 3.0), ("b".into(), 1.0)],
        )
        .unwrap();
        assert!(svg.contains("void k&lt;float&gt;(int)"));
        assert!(!svg.contains("style="));
        let svg = share_bar(
            "phases",
            &[("TTFT", vec![("queue".into(), 0.7), ("prefill".into(), 0.3)])],
        )
        .unwrap();
        assert!(svg.contains("queue 70%"));
        assert!(cdf("empty", "ms", &[("x", &[])]).is_none());
        let svg = lines(
            "sm",
            "s",
            "%",
            &[("gpu0".into(), vec![(0.0, 10.0), (1.0, 50.0)])],
        )
        .unwrap();
        assert!(svg.contains("gpu0"));
        let svg = timeline(
            "busy",
            0.0,
            1.0,
            &[("GPU 0 / stream 7".into(), vec![1.0, 0.0, 0.5])],
        )
        .unwrap();
        assert!(svg.contains("stream 7") && !svg.contains("style="));
    }
}
