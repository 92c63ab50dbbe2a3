//! The text exposition format: sample lines (name, labels, value, timestamp) read into
//! a [`Snapshot`], one scrape, with its `# TYPE` lines.

use super::super::readers::{read_line_bounded, Line};
use super::super::AnalyzeError;
use std::collections::HashMap;
use std::io::{BufReader, Read};

/// A scrape with more samples than this is refused (a `/metrics` page has
/// thousands; millions means something else was uploaded).
pub const MAX_SAMPLES: usize = 500_000;
/// Model names and finish reasons kept in the analysis (label values a scrape may
/// repeat without end).
pub(super) const MAX_LABEL_VALUES: usize = 64;

const MAX_LINE: usize = 1 << 20;

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// The exposition format's optional timestamp (ms since the Unix epoch).
    pub timestamp_ms: Option<f64>,
}

impl Sample {
    /// Value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parse a Prometheus value: a float, `+Inf`, `-Inf` or `NaN`.
pub(super) fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => s.parse::<f64>().ok(),
    }
}

/// Parse one sample line (not a comment). `None` when it isn't one.
pub fn parse_sample_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    let mut chars = line.char_indices();
    let (_, first) = chars.next()?;
    if !is_name_start(first) {
        return None;
    }
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(body)?;
        labels = parsed;
        rest = after;
    }
    // Value must be separated by whitespace; an optional timestamp and an
    // OpenMetrics exemplar (`# {…} v`) may follow.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next()?)?;
    let mut timestamp_ms = None;
    match fields.next() {
        None => {}
        Some("#") => {}
        Some(ts) => {
            timestamp_ms = Some(ts.parse::<f64>().ok()?).filter(|t| t.is_finite());
            if let Some(next) = fields.next() {
                if next != "#" {
                    return None;
                }
            }
        }
    }
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp_ms,
    })
}

/// Parse `k="v",k2="v2"}` (after the `{`), returning the labels and the rest.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let key_end = s.find(|c: char| !is_name_char(c))?;
        let key = &s[..key_end];
        if key.is_empty() {
            return None;
        }
        s = s[key_end..].trim_start().strip_prefix('=')?.trim_start();
        s = s.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => {
                    let (_, e) = chars.next()?;
                    value.push(match e {
                        'n' => '\n',
                        other => other,
                    });
                }
                c => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = s[end + 1..].trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// One parsed scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub samples: Vec<Sample>,
    /// Family name → declared `# TYPE`.
    pub types: HashMap<String, String>,
}

/// Builds one [`Snapshot`] from its lines.
#[derive(Default)]
pub(super) struct SnapshotBuilder {
    pub(super) snap: Snapshot,
}

impl SnapshotBuilder {
    /// Takes one trimmed, non-empty line that is not a capture marker.
    pub(super) fn line(&mut self, line: &str, line_no: u64) -> Result<(), AnalyzeError> {
        if let Some(c) = line.strip_prefix('#') {
            let mut parts = c.split_whitespace();
            if parts.next() == Some("TYPE") {
                if let (Some(name), Some(kind)) = (parts.next(), parts.next()) {
                    let name = unescaped(name).unwrap_or_else(|| name.to_string());
                    self.snap.types.insert(name, kind.to_string());
                }
            }
            return Ok(());
        }
        match parse_sample_line(line) {
            Some(mut s) => {
                if let Some(name) = unescaped(&s.name) {
                    s.name = name;
                }
                if self.snap.samples.len() >= MAX_SAMPLES {
                    return Err(AnalyzeError::at_line(
                        line_no,
                        format!("more than {MAX_SAMPLES} samples; this is not one /metrics scrape"),
                    ));
                }
                self.snap.samples.push(s);
                Ok(())
            }
            None => {
                let shown: String = line.chars().take(120).collect();
                Err(AnalyzeError::at_line(
                    line_no,
                    format!("not a Prometheus sample line: {shown}"),
                ))
            }
        }
    }
}

/// vLLM's and SGLang's names as the engines write them, for names written escaped
/// (`vllm_num_requests_running` for `vllm:num_requests_running`: OpenMetrics' underscore
/// escaping, as a Prometheus that stored them so, or an exporter asked to escape, writes
/// them). Neither engine names a metric with that prefix otherwise.
pub(super) fn unescaped(name: &str) -> Option<String> {
    ["vllm", "sglang"].iter().find_map(|engine| {
        let rest = name.strip_prefix(engine)?.strip_prefix('_')?;
        Some(format!("{engine}:{rest}"))
    })
}

/// Calls `each` with every trimmed, non-empty line and its 1-based number.
pub(super) fn for_each_line<R: Read>(
    reader: R,
    mut each: impl FnMut(&str, u64) -> Result<(), AnalyzeError>,
) -> Result<(), AnalyzeError> {
    let mut r = BufReader::with_capacity(64 << 10, reader);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        match read_line_bounded(&mut r, &mut buf, MAX_LINE)? {
            Line::Eof => return Ok(()),
            Line::TooLong => {
                return Err(AnalyzeError::at_line(line_no + 1, "line longer than 1 MiB"))
            }
            Line::Got => {}
        }
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim();
        if !line.is_empty() {
            each(line, line_no)?;
        }
    }
}

/// Parse a scrape. Malformed sample lines are errors naming the line.
pub fn parse_snapshot<R: Read>(reader: R) -> Result<Snapshot, AnalyzeError> {
    let mut b = SnapshotBuilder::default();
    for_each_line(reader, |line, n| b.line(line, n))?;
    if b.snap.samples.is_empty() {
        return Err(AnalyzeError::malformed("no Prometheus samples found"));
    }
    Ok(b.snap)
}
