//! Capture files: several scrapes of one server, each opened by a marker line, folded
//! as they are read into the window from the first to the last and a time series of
//! gauges and counter rates.

use super::super::AnalyzeError;
use super::model::{build_model, scalar_mean, scalar_sum, COUNTERS, KV_USAGE, RUNNING, WAITING};
use super::summary::{analyze_snapshot, window};
use super::text::Snapshot;
use super::{CaptureSummary, PrometheusAnalysis, SeriesPoint, MAX_SERIES_POINTS};
use std::collections::BTreeMap;

/// The comment that opens each scrape in a capture file.
pub const CAPTURE_MARKER: &str = "# perfjournal-capture";

/// Most scrapes a capture file may hold (an hour at one per second, and some).
pub const MAX_CAPTURE_SNAPSHOTS: u64 = 4000;

/// The marker line (with its newline) for a scrape taken at `ts` (RFC 3339) from
/// `url`. Whitespace in the URL is percent-encoded so the line stays one token each.
pub fn capture_marker(ts: &str, url: &str) -> String {
    let url = url.replace(' ', "%20").replace(['\n', '\r', '\t'], "");
    format!("{CAPTURE_MARKER} ts={ts} url={url}\n")
}

/// A parsed marker line: its time and URL.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Mark {
    pub(super) at: String,
    pub(super) time: chrono::DateTime<chrono::FixedOffset>,
    pub(super) url: Option<String>,
}

pub(super) fn parse_marker(line: &str, line_no: u64) -> Result<Mark, AnalyzeError> {
    let rest = line.strip_prefix(CAPTURE_MARKER).unwrap_or("");
    let mut at = None;
    let mut url = None;
    for token in rest.split_whitespace() {
        if let Some(v) = token.strip_prefix("ts=") {
            at = Some(v.to_string());
        } else if let Some(v) = token.strip_prefix("url=") {
            url = Some(v.to_string());
        }
    }
    let at = at.ok_or_else(|| {
        AnalyzeError::at_line(line_no, "capture marker without ts=<RFC 3339 time>")
    })?;
    let time = chrono::DateTime::parse_from_rfc3339(&at).map_err(|e| {
        AnalyzeError::at_line(
            line_no,
            format!("capture marker time {at:?} is not RFC 3339: {e}"),
        )
    })?;
    Ok(Mark { at, time, url })
}

/// Folds the scrapes of a capture file as they are read: keeps the first and the
/// latest scrape and the previous counter totals, so memory stays at two scrapes.
#[derive(Default)]
pub(super) struct CaptureFold {
    pub(super) first: Option<(Mark, Snapshot)>,
    pub(super) last: Option<(Mark, Snapshot)>,
    pub(super) previous_totals: BTreeMap<String, f64>,
    pub(super) summary: CaptureSummary,
    pub(super) resets: bool,
}

impl CaptureFold {
    pub(super) fn push(&mut self, mark: Mark, snap: Snapshot) -> Result<(), AnalyzeError> {
        if snap.samples.is_empty() {
            return Err(AnalyzeError::malformed(format!(
                "the scrape at {} holds no Prometheus samples",
                mark.at
            )));
        }
        self.summary.snapshots += 1;
        if self.summary.snapshots > MAX_CAPTURE_SNAPSHOTS {
            return Err(AnalyzeError::malformed(format!(
                "more than {MAX_CAPTURE_SNAPSHOTS} scrapes in one capture"
            )));
        }
        let m = build_model(&snap);
        let totals: BTreeMap<String, f64> = COUNTERS
            .iter()
            .filter_map(|(key, names)| Some((key.to_string(), scalar_sum(&m, names)?)))
            .collect();
        let start = self.first.as_ref().map_or(mark.time, |(f, _)| f.time);
        let offset_s = (mark.time - start).num_milliseconds() as f64 / 1000.0;
        let mut rates = BTreeMap::new();
        let previous = self.last.as_ref().or(self.first.as_ref());
        if let Some((prev, _)) = previous {
            let dt = (mark.time - prev.time).num_milliseconds() as f64 / 1000.0;
            for (key, now) in &totals {
                match self.previous_totals.get(key) {
                    Some(before) if now < before => self.resets = true,
                    Some(before) if dt > 0.0 => {
                        rates.insert(key.clone(), (now - before) / dt);
                    }
                    _ => {}
                }
            }
        }
        self.summary.series.push(SeriesPoint {
            at: mark.at.clone(),
            offset_s,
            running: scalar_sum(&m, RUNNING),
            waiting: scalar_sum(&m, WAITING),
            kv_usage: scalar_mean(&m, KV_USAGE),
            rates,
        });
        self.previous_totals = totals;
        if self.first.is_none() {
            self.first = Some((mark, snap));
        } else {
            self.last = Some((mark, snap));
        }
        Ok(())
    }

    pub(super) fn finish(self) -> Result<PrometheusAnalysis, AnalyzeError> {
        let CaptureFold {
            first,
            last,
            mut summary,
            resets,
            ..
        } = self;
        let Some((first_mark, first)) = first else {
            return Err(AnalyzeError::malformed("no Prometheus samples found"));
        };
        let mut out = match &last {
            Some((_, last)) => window(&first, last),
            None => analyze_snapshot(&first),
        };
        let end_mark = last.as_ref().map_or(&first_mark, |(m, _)| m);
        summary.url = first_mark.url.clone();
        summary.started = first_mark.at.clone();
        summary.ended = end_mark.at.clone();
        summary.seconds = (end_mark.time - first_mark.time).num_milliseconds() as f64 / 1000.0;
        if resets {
            out.notes.push(
                "a counter went down between two scrapes (server restart?); no rate is shown for that interval"
                    .to_string(),
            );
        }
        if summary.snapshots == 1 {
            out.notes
                .push("the capture holds one scrape, so there is no window".to_string());
        }
        // The scrapes' waiting gauge over time, for bubble attribution.
        out.waiting_series = summary
            .series
            .iter()
            .filter_map(|p| {
                let at = chrono::DateTime::parse_from_rfc3339(&p.at).ok()?;
                Some([at.timestamp_millis() as f64, p.waiting?])
            })
            .take(MAX_SERIES_POINTS)
            .collect();
        out.capture = Some(summary);
        Ok(out)
    }
}
