//! The bubble picture: each GPU's busy/idle timeline with its idle intervals coloured by
//! class, and the queue depth beneath on the same time axis. Written as SVG text (not
//! plotters) so every mark carries a `<title>` a reader can hover; presentation
//! attributes only, for the pages' CSP.

use std::fmt::Write;

use crate::core::fmt::format_number;
use crate::core::method::bubbles::{Attribution, BubbleClass, Classified};

const WIDTH: f64 = 760.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 16.0;
const LANE: f64 = 26.0;
const DEPTH_HEIGHT: f64 = 90.0;
/// Idle intervals drawn one by one; the longest are kept.
const DRAWN: usize = 3_000;
const BUSY: &str = "#c9d2e3";
const AXIS: &str = "#5d6677";
const WAITING: &str = "#2456c7";
const UPSTREAM: &str = "#7850aa";
const NO_DATA: &str = "#eef0f4";

/// The fill of a class.
pub fn class_colour(c: BubbleClass) -> &'static str {
    match c {
        BubbleClass::RuntimeBubble => "#b42318",
        BubbleClass::Upstream => "#d66c14",
        BubbleClass::InsufficientLoad => "#1e7b4a",
        BubbleClass::Unknown => "#8a94a6",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn ms(us: f64) -> String {
    format_number(us / 1000.0, if us < 10_000.0 { 2 } else { 1 })
}

/// How an interval reads in its tooltip.
fn describe(i: &Classified, w0: f64) -> String {
    let mut s = format!(
        "{}: GPU {} idle {} ms from +{} ms (stream {}), after {}",
        i.class.label(),
        i.device,
        ms(i.dur_us),
        ms(i.start_us - w0),
        i.stream,
        i.preceded_by.label()
    );
    if i.class == BubbleClass::RuntimeBubble {
        let _ = write!(
            s,
            "; work queued for {} ms of it (up to {} waiting)",
            ms(i.recoverable_us),
            format_number(i.waiting_max, 0)
        );
    }
    s
}

/// The picture, or `None` for an empty window.
pub fn bubbles(a: &Attribution) -> Option<String> {
    let (w0, w1) = (a.window_start_us, a.window_end_us);
    if w1 <= w0 {
        return None;
    }
    let plot = WIDTH - LEFT - RIGHT;
    let x = |t: f64| LEFT + ((t - w0) / (w1 - w0)).clamp(0.0, 1.0) * plot;
    let mut devices: Vec<i64> = a.intervals.iter().map(|i| i.device).collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.is_empty() {
        devices.push(0);
    }
    let legend_y = 22.0;
    let lanes_top = 58.0;
    let depth_top = lanes_top + LANE * devices.len() as f64 + 22.0;
    let axis_y = depth_top + DEPTH_HEIGHT;
    let height = axis_y + 44.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart bubbles-chart" role="img" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12" shape-rendering="crispEdges"><title>GPU idle intervals by class, with the queue depth beneath on the same time axis</title>"#
    );
    // Legend: two classes a row.
    for (k, c) in BubbleClass::ALL.into_iter().enumerate() {
        let lx = LEFT + (k % 2) as f64 * 330.0;
        let ly = legend_y + (k / 2) as f64 * 18.0;
        let _ = write!(
            svg,
            r#"<g class="legend-item" data-class="{}"><rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{ly:.1}" fill="{AXIS}">{}</text></g>"#,
            c.slug(),
            ly - 10.0,
            class_colour(c),
            lx + 16.0,
            esc(c.label())
        );
    }
    // GPU lanes: busy underneath, idle intervals over it.
    let mut drawn: Vec<&Classified> = a.intervals.iter().collect();
    if drawn.len() > DRAWN {
        drawn.sort_by(|p, q| q.dur_us.total_cmp(&p.dur_us));
        drawn.truncate(DRAWN);
    }
    for (row, dev) in devices.iter().enumerate() {
        let y = lanes_top + row as f64 * LANE;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="{AXIS}">GPU {dev}</text><rect class="busy" x="{LEFT:.1}" y="{y:.1}" width="{plot:.1}" height="{:.1}" fill="{BUSY}"><title>GPU {dev}: busy or idle for less than {} µs</title></rect>"#,
            LEFT - 8.0,
            y + LANE / 2.0 + 4.0,
            LANE - 6.0,
            format_number(a.min_idle_us, 0)
        );
        for i in drawn.iter().filter(|i| i.device == *dev) {
            let x0 = x(i.start_us);
            let w = (x(i.start_us + i.dur_us) - x0).max(0.8);
            let _ = write!(
                svg,
                r#"<rect class="idle" data-class="{}" x="{x0:.2}" y="{y:.1}" width="{w:.2}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                i.class.slug(),
                LANE - 6.0,
                class_colour(i.class),
                esc(&describe(i, w0))
            );
        }
    }
    // Queue depth beneath.
    let max = a
        .queue_depth
        .iter()
        .flat_map(|b| [b.waiting, b.upstream])
        .flatten()
        .fold(0.0f64, f64::max);
    let scale = if max > 0.0 { max } else { 1.0 };
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="{AXIS}">waiting</text><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{AXIS}">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{AXIS}">0</text>"#,
        LEFT - 8.0,
        depth_top + DEPTH_HEIGHT / 2.0,
        LEFT - 8.0,
        depth_top + 10.0,
        format_number(scale, 0),
        LEFT - 8.0,
        axis_y
    );
    let n = a.queue_depth.len().max(1) as f64;
    let bw = plot / n;
    for (k, b) in a.queue_depth.iter().enumerate() {
        let bx = LEFT + k as f64 * bw;
        let from = ms(b.start_us - w0);
        match b.waiting {
            None => {
                let _ = write!(
                    svg,
                    r#"<rect class="no-data" x="{bx:.2}" y="{depth_top:.1}" width="{bw:.2}" height="{DEPTH_HEIGHT:.1}" fill="{NO_DATA}"><title>+{from} ms: no queue data</title></rect>"#
                );
            }
            Some(w) => {
                let h = w / scale * DEPTH_HEIGHT;
                let up = b
                    .upstream
                    .map(|u| format!(", {} in tokenization", format_number(u, 0)))
                    .unwrap_or_default();
                let _ = write!(
                    svg,
                    r#"<rect class="depth" x="{bx:.2}" y="{:.2}" width="{bw:.2}" height="{:.2}" fill="{WAITING}"><title>+{from} ms: up to {} waiting{up}</title></rect>"#,
                    axis_y - h,
                    h.max(0.0),
                    format_number(w, 0)
                );
                if let Some(u) = b.upstream.filter(|u| *u > 0.0) {
                    let uh = u / scale * DEPTH_HEIGHT;
                    let _ = write!(
                        svg,
                        r#"<rect class="upstream" x="{bx:.2}" y="{:.2}" width="{bw:.2}" height="2" fill="{UPSTREAM}"><title>+{from} ms: {} in tokenization</title></rect>"#,
                        axis_y - uh,
                        format_number(u, 0)
                    );
                }
            }
        }
    }
    // The shared time axis.
    let _ = write!(
        svg,
        r#"<line x1="{LEFT:.1}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="{AXIS}"/>"#,
        LEFT + plot
    );
    let tick_decimals = if w1 - w0 < 10_000.0 { 2 } else { 1 };
    for q in 0..=4 {
        let t = w0 + (w1 - w0) * q as f64 / 4.0;
        let tx = x(t);
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            svg,
            r#"<line x1="{tx:.1}" y1="{axis_y:.1}" x2="{tx:.1}" y2="{:.1}" stroke="{AXIS}"/><text class="tick" x="{tx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{AXIS}">{} ms</text>"#,
            axis_y + 5.0,
            axis_y + 18.0,
            format_number((t - w0) / 1000.0, tick_decimals)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{AXIS}">time since the first GPU work (ms)</text></svg>"#,
        LEFT + plot / 2.0,
        axis_y + 36.0
    );
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::analyze::pytorch_trace::Preceded;
    use crate::core::method::bubbles::{DepthBucket, QueueSource, Totals};

    #[test]
    fn every_mark_has_a_title_and_classes_are_coloured() {
        let iv = |start_us: f64, class| Classified {
            device: 0,
            stream: 7,
            start_us,
            dur_us: 2_000.0,
            class,
            preceded_by: Preceded::HostWait,
            recoverable_us: 1_500.0,
            waiting_max: 1.0,
        };
        let a = Attribution {
            source: QueueSource::RequestLog,
            offset_ms: 0.0,
            min_idle_us: 100.0,
            alignment: String::new(),
            window_start_us: 0.0,
            window_end_us: 50_000.0,
            devices: 1,
            intervals: vec![
                iv(10_000.0, BubbleClass::RuntimeBubble),
                iv(30_000.0, BubbleClass::InsufficientLoad),
            ],
            totals_us: Totals::default(),
            classes: Vec::new(),
            recoverable_us: 1_500.0,
            ranked: Vec::new(),
            queue_depth: vec![
                DepthBucket {
                    start_us: 0.0,
                    waiting: Some(2.0),
                    upstream: None,
                },
                DepthBucket {
                    start_us: 25_000.0,
                    waiting: None,
                    upstream: None,
                },
            ],
            notes: Vec::new(),
        };
        let svg = bubbles(&a).unwrap();
        assert_eq!(svg.matches("<rect class=\"idle\"").count(), 2);
        assert!(svg.contains("data-class=\"runtime_bubble\""));
        assert!(svg.contains("fill=\"#b42318\""));
        assert!(svg.contains("work queued for 1.50 ms of it (up to 1 waiting)"));
        assert!(svg.contains("no queue data"));
        // Every rect but the legend swatches carries a title.
        let rects = svg.matches("<rect").count();
        let legend = svg.matches("class=\"legend-item\"").count();
        assert_eq!(svg.matches("</rect>").count(), rects - legend);
        assert!(svg.contains("font-size=\"12\""), "labels at 12 px");
    }
}
