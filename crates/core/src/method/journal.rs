//! The journal entry: the team's memory of one investigation, kept as plain
//! Markdown so it can be searched, linked and exported without the app.

use serde::{Deserialize, Serialize};

use super::phases::{Dominance, Phase};
use super::regime::{Band, DecodeBand, Regime};
use super::reproduce::FrozenConfig;
use super::resources::Classification;
use super::verdict::Verdict;
use super::FieldError;
use crate::metric::{format_value, MetricReading, MetricTarget, Percentile, Unit};

/// One investigation, in the method's fixed shape. Every field is free text;
/// [`draft`] fills them from the steps' data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JournalEntry {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Metric, percentile, observed vs target.
    pub symptom: String,
    /// Prompt and output lengths, request rate.
    pub workload: String,
    /// Key metrics before the change.
    pub baseline: String,
    pub diagnosis: String,
    pub change: String,
    /// Key metrics after the change.
    pub result: String,
    /// How output quality was checked to be unchanged.
    pub quality: String,
    pub effort: String,
}

/// Section headings in document order.
pub const SECTIONS: [&str; 9] = [
    "DATE",
    "SYMPTOM",
    "WORKLOAD",
    "BASELINE",
    "DIAGNOSIS",
    "CHANGE",
    "RESULT",
    "QUALITY",
    "EFFORT",
];

impl JournalEntry {
    fn field(&self, i: usize) -> &str {
        [
            &self.date,
            &self.symptom,
            &self.workload,
            &self.baseline,
            &self.diagnosis,
            &self.change,
            &self.result,
            &self.quality,
            &self.effort,
        ][i]
    }

    fn field_mut(&mut self, i: usize) -> &mut String {
        match i {
            0 => &mut self.date,
            1 => &mut self.symptom,
            2 => &mut self.workload,
            3 => &mut self.baseline,
            4 => &mut self.diagnosis,
            5 => &mut self.change,
            6 => &mut self.result,
            7 => &mut self.quality,
            _ => &mut self.effort,
        }
    }

    /// Render as `# title` followed by one `## SECTION` per field.
    ///
    /// Layout: every heading is followed by one blank line, the value, and
    /// one blank line. Value lines starting with `#` or `\` get a leading
    /// `\` (a Markdown escape) so no value can be read as a heading; line
    /// breaks inside the title become spaces. [`from_markdown`] reverses
    /// this exactly.
    pub fn to_markdown(&self, title: &str) -> String {
        let mut out = format!("# {}\n\n", title.replace(['\r', '\n'], " "));
        for (i, name) in SECTIONS.iter().enumerate() {
            out.push_str("## ");
            out.push_str(name);
            out.push_str("\n\n");
            for (n, line) in self.field(i).split('\n').enumerate() {
                if n > 0 {
                    out.push('\n');
                }
                if line.starts_with('#') || line.starts_with('\\') {
                    out.push('\\');
                }
                out.push_str(line);
            }
            out.push_str("\n\n");
        }
        out
    }

    /// Date must be a real calendar date in `YYYY-MM-DD` form; symptom and
    /// change must be filled in.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if !is_iso_date(&self.date) {
            errors.push(FieldError::new(
                "date",
                format!(
                    "'{}' is not a date: use YYYY-MM-DD, e.g. 2025-03-14",
                    self.date.trim()
                ),
            ));
        }
        if self.symptom.trim().is_empty() {
            errors.push(FieldError::new(
                "symptom",
                "Say what was slow: metric, percentile, observed vs target",
            ));
        }
        if self.change.trim().is_empty() {
            errors.push(FieldError::new(
                "change",
                "Say what was changed (one thing)",
            ));
        }
        errors
    }
}

/// The sections a published entry must fill: what was slow, why, what was changed and
/// what it did. A draft may leave any of them empty.
pub const REQUIRED_TO_PUBLISH: [(&str, &str); 4] = [
    ("symptom", "SYMPTOM"),
    ("diagnosis", "DIAGNOSIS"),
    ("change", "CHANGE"),
    ("result", "RESULT"),
];

impl JournalEntry {
    /// The checks of an entry being saved: the date always; a published entry (or one
    /// being published) also needs every section of [`REQUIRED_TO_PUBLISH`], each
    /// refused by its own name. A draft may be partial.
    pub fn validate_for(&self, publishing: bool) -> Vec<FieldError> {
        let mut errors: Vec<FieldError> = self
            .validate()
            .into_iter()
            .filter(|e| e.field == "date")
            .collect();
        if publishing {
            for (field, section) in REQUIRED_TO_PUBLISH {
                let value = match field {
                    "symptom" => &self.symptom,
                    "diagnosis" => &self.diagnosis,
                    "change" => &self.change,
                    _ => &self.result,
                };
                if value.trim().is_empty() {
                    errors.push(FieldError::new(
                        field,
                        format!(
                            "{section} is empty: a published entry needs SYMPTOM, DIAGNOSIS, \
                             CHANGE and RESULT (save it as a draft to finish later)"
                        ),
                    ));
                }
            }
        }
        errors
    }
}

/// Several entries as one Markdown document.
pub fn entries_to_markdown(entries: &[(String, JournalEntry)]) -> String {
    entries
        .iter()
        .map(|(title, e)| e.to_markdown(title))
        .collect()
}

/// A Markdown document that is not a sequence of journal entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

struct Open<'t> {
    title: String,
    title_line: usize,
    bodies: [Option<Vec<&'t str>>; 9],
    current: Option<usize>,
}

/// The heading of the table of estimates an export adds after an entry's sections.
const ESTIMATES_HEADING: &str = "ESTIMATES";
/// Where the lines of a section that is not read back go.
const SKIPPED: usize = usize::MAX;

/// One row of an entry's table of estimates: what an estimator said the step should
/// have cost, against what was observed (figures as shown on the entry's page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EstimateRow {
    pub step: u8,
    /// The estimator and its result key, e.g. `decode-floor step_ms`.
    pub estimate: String,
    pub expected: String,
    pub observed: Option<String>,
    /// Observed ÷ expected, or why there is none.
    pub gap: Option<String>,
}

/// The entry's estimates as a Markdown section to append to [`JournalEntry::to_markdown`]
/// (empty without rows). [`from_markdown`] skips it: the figures come from the
/// investigation, not from the entry.
pub fn estimates_markdown(rows: &[EstimateRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cell = |s: &str| s.replace('|', "\\|").replace(['\r', '\n'], " ");
    let mut out = format!(
        "## {ESTIMATES_HEADING} (from the investigation; not read back on import)\n\n\
         | Step | Estimate | Expected | Observed | Gap to explain |\n|---|---|--:|--:|--:|\n"
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.step,
            cell(&r.estimate),
            cell(&r.expected),
            cell(r.observed.as_deref().unwrap_or("—")),
            cell(r.gap.as_deref().unwrap_or("—")),
        ));
    }
    out.push('\n');
    out
}

/// Parse a document of one or more entries written by
/// [`JournalEntry::to_markdown`] (or by hand in the same shape). Headings
/// are matched case-insensitively; every section must appear exactly once
/// per entry, in any order. CRLF line endings are accepted.
pub fn from_markdown(text: &str) -> Result<Vec<(String, JournalEntry)>, ParseError> {
    // A document saved with CRLF everywhere is read as LF. The writer never
    // produces that (its blank lines are bare), so values holding "\r\n"
    // still come back exactly.
    let lf;
    let text = if text.contains("\r\n") && !text.replace("\r\n", "").contains('\n') {
        lf = text.replace("\r\n", "\n");
        lf.as_str()
    } else {
        text
    };
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop(); // the terminator, not an empty last line
    }
    let mut entries = Vec::new();
    let mut open: Option<Open> = None;
    for (i, &line) in lines.iter().enumerate() {
        let number = i + 1;
        let bare = line.strip_suffix('\r').unwrap_or(line);
        if bare == "#" || bare.starts_with("# ") {
            if let Some(done) = open.take() {
                entries.push(close(done)?);
            }
            open = Some(Open {
                title: bare.get(2..).unwrap_or("").to_string(),
                title_line: number,
                bodies: Default::default(),
                current: None,
            });
        } else if bare == "##" || bare.starts_with("## ") {
            let Some(entry) = open.as_mut() else {
                return Err(error(
                    number,
                    "a ## section comes before the first '# title' line",
                ));
            };
            let name = bare.get(3..).unwrap_or("").trim().to_uppercase();
            if name.starts_with(ESTIMATES_HEADING) {
                // Written by the export from the investigation; not part of the entry.
                entry.current = Some(SKIPPED);
                continue;
            }
            let Some(idx) = SECTIONS.iter().position(|s| *s == name) else {
                return Err(error(
                    number,
                    format!(
                        "unknown section '{name}': expected one of {}",
                        SECTIONS.join(", ")
                    ),
                ));
            };
            if entry.bodies[idx].is_some() {
                return Err(error(
                    number,
                    format!("## {name} appears twice in '{}'", entry.title),
                ));
            }
            entry.bodies[idx] = Some(Vec::new());
            entry.current = Some(idx);
        } else {
            let blank = bare.trim().is_empty();
            match open.as_mut() {
                None if blank => {}
                None => return Err(error(number, "text before the first '# title' line")),
                Some(Open { current: None, .. }) if blank => {}
                Some(Open { current: None, .. }) => {
                    return Err(error(
                        number,
                        "text between the title and the first ## section",
                    ));
                }
                Some(Open {
                    current: Some(idx),
                    bodies,
                    ..
                }) => {
                    if let Some(body) = bodies.get_mut(*idx).and_then(Option::as_mut) {
                        body.push(line);
                    }
                }
            }
        }
    }
    if let Some(done) = open.take() {
        entries.push(close(done)?);
    }
    Ok(entries)
}

fn close(open: Open) -> Result<(String, JournalEntry), ParseError> {
    let mut entry = JournalEntry::default();
    for (idx, body) in open.bodies.into_iter().enumerate() {
        let Some(mut body) = body else {
            return Err(error(
                open.title_line,
                format!("entry '{}' has no ## {} section", open.title, SECTIONS[idx]),
            ));
        };
        // Drop the one blank line the writer puts after the heading and
        // before the next one.
        let is_blank = |l: &&str| l.is_empty() || *l == "\r";
        if body.first().is_some_and(is_blank) {
            body.remove(0);
        }
        if body.last().is_some_and(is_blank) {
            body.pop();
        }
        let value: Vec<&str> = body
            .iter()
            .map(|l| l.strip_prefix('\\').unwrap_or(l))
            .collect();
        *entry.field_mut(idx) = value.join("\n");
    }
    Ok((open.title, entry))
}

fn is_iso_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        text.get(r.clone())
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// What the steps produced, for drafting an entry. Everything is optional:
/// a draft is written from whatever has been recorded so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct DraftInput<'a> {
    /// `YYYY-MM-DD`, supplied by the caller (no clock here).
    pub date: &'a str,
    /// Step 0: the workload shape.
    pub config: Option<&'a FrozenConfig>,
    /// Step 1: the symptom; its observed value also opens the baseline.
    pub target: Option<&'a MetricTarget>,
    /// Steps 1–2: other key metrics before the change.
    pub baseline: &'a [MetricReading],
    /// Step 2.
    pub dominance: Option<&'a Dominance>,
    /// Step 2's table: the dominant phase's median against its tail.
    pub phases: Option<&'a crate::method::phases::PhaseTable>,
    /// Step 3.
    pub resources: Option<&'a Classification>,
    /// Step 4.
    pub regime: Option<Regime>,
    pub decode: Option<&'a DecodeBand>,
    /// The cause in the engineer's own words.
    pub findings: &'a str,
    /// Step 7: the one change.
    pub change: &'a str,
    /// Step 7: the same metrics after the change.
    pub after: &'a [MetricReading],
    pub verdict: Option<Verdict>,
    pub quality: &'a str,
    pub effort: &'a str,
    /// Step 7: a second metric the change moved.
    pub tradeoff: Option<&'a crate::metric::TradeOff>,
}

/// Build an entry from the steps' data; the engineer edits it afterwards.
pub fn draft(input: &DraftInput) -> JournalEntry {
    let symptom = input
        .target
        .map(MetricTarget::symptom_line)
        .unwrap_or_default();

    let before: Vec<MetricReading> = input
        .target
        .map(MetricTarget::reading)
        .into_iter()
        .chain(input.baseline.iter().copied().filter(|r| {
            // The target's own reading is already first.
            input
                .target
                .is_none_or(|t| (t.metric, t.percentile) != (r.metric, r.percentile))
        }))
        .collect();
    let baseline = before
        .iter()
        .map(MetricReading::line)
        .collect::<Vec<_>>()
        .join("; ");

    let mut result: Vec<String> = input
        .after
        .iter()
        .map(|a| {
            match before
                .iter()
                .find(|b| (b.metric, b.percentile) == (a.metric, a.percentile))
            {
                Some(b) if b.value != 0.0 => format!(
                    "{} (was {}, {:+.1}%)",
                    a.line(),
                    format_value(b.value, b.unit),
                    (a.value - b.value) / b.value * 100.0
                ),
                _ => a.line(),
            }
        })
        .collect();
    if let Some(v) = input.verdict {
        result.push(format!("verdict: {}", v.label().to_lowercase()));
    }
    if let Some(t) = input.tradeoff {
        result.push(format!("trade-off: {}", t.line()));
    }

    JournalEntry {
        date: input.date.to_string(),
        symptom,
        workload: input.config.map(workload_line).unwrap_or_default(),
        baseline,
        diagnosis: diagnosis_line(input),
        change: input.change.trim().to_string(),
        result: result.join("; "),
        quality: input.quality.trim().to_string(),
        effort: input.effort.trim().to_string(),
    }
}

fn workload_line(config: &FrozenConfig) -> String {
    let mut parts = Vec::new();
    let text = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(p) = text(&config.prompt_len_dist) {
        parts.push(format!("prompt tokens {p}"));
    }
    if let Some(o) = text(&config.output_len_dist) {
        parts.push(format!("output tokens {o}"));
    }
    if let Some(r) = config.arrival_rate {
        parts.push(format!("{r} req/s"));
    }
    if let Some(c) = config.concurrency {
        parts.push(format!("concurrency {c}"));
    }
    if let Some(s) = text(&config.sampling) {
        parts.push(format!("sampling {s}"));
    }
    if let Some(c) = text(&config.cache_state) {
        parts.push(format!("cache {c}"));
    }
    parts.join("; ")
}

/// How far a tail metric's dominant phase stands from its median, when step 1 chose a
/// tail percentile and step 2's table holds both: (phase, percentile, p50, tail) in ms.
/// Only a spread of 1.5× or more is worth a sentence.
fn tail_spread(input: &DraftInput) -> Option<(Phase, Percentile, f64, f64)> {
    let t = input.target?;
    let percentile = t.percentile?;
    if percentile == Percentile::P50 {
        return None;
    }
    let (median, tail) = match input.dominance? {
        // A per-token metric: the step figures against the typical step, never a
        // request's whole decode time.
        Dominance::Step { .. } => {
            let d = crate::method::per_token::decompose(input.phases?, t).ok()?;
            (d.typical_ms, d.at_percentile_ms.unwrap_or(d.observed_ms))
        }
        Dominance::Phase { phase, .. } => {
            let row = input.phases?.rows.iter().find(|r| r.phase == *phase)?;
            (row.p50, row.at(percentile)?)
        }
        Dominance::Nothing { .. } => return None,
    };
    let phase = input.dominance?.phase()?;
    (median > 0.0 && tail / median >= 1.5).then_some((phase, percentile, median, tail))
}

fn diagnosis_line(input: &DraftInput) -> String {
    let mut sentences = Vec::new();
    match (input.dominance, input.target) {
        (Some(Dominance::Phase { phase, share }), Some(t)) => sentences.push(format!(
            "{} dominates the {} ({:.0}%).",
            phase.label(),
            crate::metric::metric_name(t.metric, t.percentile),
            share * 100.0
        )),
        (Some(Dominance::Step { part, share }), Some(t)) => {
            let step = input
                .phases
                .and_then(|table| crate::method::per_token::decompose(table, t).ok());
            let detail = step.map_or(String::new(), |d| {
                format!(
                    ": a typical step of {} per token, of the observed {}",
                    format_value(d.typical_ms, Unit::Ms),
                    format_value(d.observed_ms, Unit::Ms)
                )
            });
            sentences.push(format!(
                "{} dominates the {} ({:.0}%{detail}).",
                part.label(),
                crate::metric::metric_name(t.metric, t.percentile),
                share * 100.0
            ));
        }
        (Some(d @ (Dominance::Phase { .. } | Dominance::Step { .. })), None) => {
            sentences.push(format!("{} dominates.", d.name().unwrap_or_default()));
        }
        (Some(Dominance::Nothing { reason }), _) => {
            sentences.push(format!("No phase dominates: {reason}"));
        }
        (None, _) => {}
    }
    if let Some(c) = input.resources {
        sentences.push(format!("The window is {}.", c.line()));
    }
    if let Some(r) = input.regime {
        sentences.push(format!("The top kernels are {}.", r.label()));
    }
    // Only findings about the chosen metric: a decode band says nothing about a TTFT.
    let decode_counts = input
        .target
        .is_none_or(|t| Phase::counted_in(t.metric).contains(&Phase::Decode));
    // A tail metric: how far the dominant phase's tail is from its median, before any
    // sentence about the typical step.
    let tail = tail_spread(input);
    if let Some((phase, percentile, p50, tail_ms)) = tail {
        sentences.push(format!(
            "At the {}, {} is {:.1}× its median ({} → {}): the tail comes from a minority \
             of slow steps or requests, not from the typical one.",
            percentile.slug(),
            phase.label().to_lowercase(),
            tail_ms / p50,
            format_value(p50, Unit::Ms),
            format_value(tail_ms, Unit::Ms),
        ));
    }
    if let Some(d) = input.decode.filter(|_| decode_counts) {
        let band = match d.band {
            Band::Healthy => "what a well-run server of this setup takes",
            Band::Overhead => "overhead a well-run server does not pay",
            Band::Structural => "a structural problem",
        };
        let step = if tail.is_some() {
            "The typical (median) decode step"
        } else {
            "The measured decode step"
        };
        sentences.push(format!("{step} is {} ({band}).", d.reading()));
    }
    let findings = input.findings.trim();
    if !findings.is_empty() {
        sentences.push(findings.to_string());
    }
    sentences.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::phases::Phase;
    use crate::method::resources::classify;
    use crate::metric::{Metric, Percentile, Unit};

    #[test]
    fn publishing_needs_the_four_sections_and_drafts_may_be_partial() {
        let draft = JournalEntry {
            date: "2025-03-14".into(),
            symptom: "p99 ITL 140 ms vs 60 ms".into(),
            change: "max_num_batched_tokens 2048".into(),
            ..JournalEntry::default()
        };
        assert!(draft.validate_for(false).is_empty());
        let fields: Vec<String> = draft
            .validate_for(true)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["diagnosis", "result"]);
        assert!(draft.validate_for(true)[0]
            .message
            .starts_with("DIAGNOSIS is empty"));
        let bad_date = JournalEntry {
            date: "soon".into(),
            ..JournalEntry::default()
        };
        assert_eq!(bad_date.validate_for(false)[0].field, "date");
        assert!(example().validate_for(true).is_empty());
    }

    fn example() -> JournalEntry {
        JournalEntry {
            date: "2025-03-14".into(),
            symptom: "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)".into(),
            workload: "prompt tokens mean 1,800; output tokens mean 250; 45 req/s".into(),
            baseline: "p95 TTFT 3,200 ms; p99 ITL 145 ms".into(),
            diagnosis: "Queue-bound, running batch 58 of 175.\nChunked prefill was off: 22k-token prompts blocked decode for 400+ ms.".into(),
            change: "Enabled chunked prefill with a 4,096-token budget.".into(),
            result: "p95 TTFT 780 ms; p99 ITL 52 ms; throughput +8%".into(),
            quality: "200 paired generations identical".into(),
            effort: "30 minutes".into(),
        }
    }

    #[test]
    fn markdown_shape() {
        let md = example().to_markdown("Chunked prefill fixes TTFT");
        assert!(md.starts_with(
            "# Chunked prefill fixes TTFT\n\n## DATE\n\n2025-03-14\n\n## SYMPTOM\n\n"
        ));
        assert!(md.ends_with("## EFFORT\n\n30 minutes\n\n"));
        let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(headings.len(), 9);
    }

    #[test]
    fn the_estimates_table_is_written_after_the_sections_and_skipped_on_import() {
        let rows = vec![
            EstimateRow {
                step: 4,
                estimate: "decode-floor step_ms".into(),
                expected: "7.84 ms".into(),
                observed: Some("23 ms".into()),
                gap: Some("2.93×".into()),
            },
            EstimateRow {
                step: 6,
                estimate: "cost a|b".into(),
                expected: "$0.41".into(),
                observed: None,
                gap: None,
            },
        ];
        let table = estimates_markdown(&rows);
        assert!(table.starts_with("## ESTIMATES"), "{table}");
        assert!(table.contains("| 4 | decode-floor step_ms | 7.84 ms | 23 ms | 2.93× |"));
        assert!(
            table.contains("| 6 | cost a\\|b | $0.41 | — | — |"),
            "{table}"
        );
        assert_eq!(estimates_markdown(&[]), "");
        let one = example();
        let md = format!("{}{table}", one.to_markdown("Title"));
        assert_eq!(
            from_markdown(&md).unwrap(),
            vec![("Title".to_string(), one.clone())]
        );
        // Two entries each with their table.
        let two = format!("{md}{md}");
        assert_eq!(from_markdown(&two).unwrap().len(), 2);
    }

    #[test]
    fn round_trip_single_and_multiple() {
        let one = example();
        let parsed = from_markdown(&one.to_markdown("Title")).unwrap();
        assert_eq!(parsed, vec![("Title".to_string(), one.clone())]);

        let tricky = JournalEntry {
            date: String::new(),
            symptom: "\n".into(),
            workload: "a\n".into(),
            baseline: "\nleading blank".into(),
            diagnosis: "# looks like a title\n## DATE\n\\escaped\n### sub".into(),
            change: "windows\r\nline endings\r\n".into(),
            result: "  indented\n\n\nthree blanks  ".into(),
            quality: "\n\n".into(),
            effort: "#".into(),
        };
        let entries = vec![
            ("First".to_string(), one),
            ("  Second, with spaces ".to_string(), tricky),
            (String::new(), JournalEntry::default()),
        ];
        let md = entries_to_markdown(&entries);
        assert_eq!(from_markdown(&md).unwrap(), entries);
    }

    #[test]
    fn hand_written_variants_parse() {
        // CRLF throughout, lower-case headings, no blank lines, any order.
        let md = "\r\n# Entry\r\n\r\n## effort\r\n1 day\r\n## date\r\n2025-01-02\r\n## Symptom\r\nslow\r\n\
                  ## WORKLOAD\r\n## BASELINE\r\n## DIAGNOSIS\r\n## CHANGE\r\n## RESULT\r\n## QUALITY";
        let parsed = from_markdown(md).unwrap();
        assert_eq!(parsed[0].0, "Entry");
        assert_eq!(parsed[0].1.date, "2025-01-02");
        assert_eq!(parsed[0].1.symptom, "slow");
        assert_eq!(parsed[0].1.effort, "1 day");
        assert_eq!(from_markdown("").unwrap(), vec![]);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let err = from_markdown("intro\n# T\n").unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (1, "text before the first '# title' line")
        );
        let err = from_markdown("# T\n\n## DATE\n\n## MOOD\n").unwrap_err();
        assert_eq!(err.line, 5);
        assert!(err.message.starts_with("unknown section 'MOOD'"));
        let err = from_markdown("# T\n## DATE\n## DATE\n").unwrap_err();
        assert_eq!(err.line, 3);
        let err = from_markdown("# T\nstray\n").unwrap_err();
        assert_eq!(err.line, 2);
        let missing = from_markdown("# T\n## DATE\nx\n").unwrap_err();
        assert_eq!(missing.line, 1);
        assert_eq!(
            missing.to_string(),
            "line 1: entry 'T' has no ## SYMPTOM section"
        );
    }

    #[test]
    fn date_validation() {
        let mut e = example();
        assert!(e.validate().is_empty());
        for bad in [
            "2025-02-29",
            "2025-13-01",
            "25-01-01",
            "2025/01/01",
            "yesterday",
        ] {
            e.date = bad.into();
            assert_eq!(e.validate()[0].field, "date", "{bad}");
        }
        e.date = "2024-02-29".into();
        assert!(e.validate().is_empty());
    }

    #[test]
    fn draft_from_steps() {
        let target = MetricTarget {
            metric: Metric::Ttft,
            percentile: Some(Percentile::P95),
            observed: 3200.0,
            target: 800.0,
            unit: Unit::Ms,
        };
        let config = FrozenConfig {
            prompt_len_dist: Some("mean 1,800".into()),
            output_len_dist: Some("mean 250".into()),
            arrival_rate: Some(45.0),
            ..FrozenConfig::default()
        };
        let itl = |value| MetricReading {
            metric: Metric::Itl,
            percentile: Some(Percentile::P99),
            value,
            unit: Unit::Ms,
        };
        let after = [
            MetricReading {
                value: 780.0,
                ..target.reading()
            },
            itl(52.0),
        ];
        let dominance = Dominance::Phase {
            phase: Phase::QueueWait,
            share: 0.92,
        };
        let resources = classify(35.0, Some(20.0), 100.0).unwrap();
        let entry = draft(&DraftInput {
            date: "2025-03-14",
            config: Some(&config),
            target: Some(&target),
            baseline: &[itl(145.0), target.reading()],
            dominance: Some(&dominance),
            resources: Some(&resources),
            findings: "Chunked prefill was off; 22k-token prompts blocked decode for 400+ ms.",
            change: "Enabled chunked prefill with a 4,096-token budget.",
            after: &after,
            verdict: Some(Verdict::Confirmed),
            quality: "200 paired generations identical",
            effort: "30 minutes",
            ..DraftInput::default()
        });
        assert_eq!(
            entry.symptom,
            "p95 TTFT 3,200 ms vs target 800 ms (4.0× over)"
        );
        assert_eq!(
            entry.workload,
            "prompt tokens mean 1,800; output tokens mean 250; 45 req/s"
        );
        assert_eq!(entry.baseline, "p95 TTFT 3,200 ms; p99 ITL 145 ms");
        assert_eq!(
            entry.diagnosis,
            "Queue wait dominates the p95 TTFT (92%). The window is waiting (GPU busy 35% of wall, CPU 20%). \
             Chunked prefill was off; 22k-token prompts blocked decode for 400+ ms."
        );
        assert_eq!(
            entry.result,
            "p95 TTFT 780 ms (was 3,200 ms, -75.6%); p99 ITL 52.0 ms (was 145 ms, -64.1%); verdict: confirmed"
        );
        assert!(entry.validate().is_empty());
        let md = entry.to_markdown("TTFT: chunked prefill");
        assert_eq!(from_markdown(&md).unwrap()[0].1, entry);
    }

    /// The issue's FP8 incident: p99 ITL 140 ms, decode p50 23 ms and p99 136 ms, the
    /// median step 3× its 7.6 ms floor. The draft speaks of the p99 first, and the floor
    /// sentence says which way the ratio runs.
    #[test]
    fn a_tail_metric_draft_names_the_spread_and_the_floor_the_right_way_round() {
        let target = MetricTarget {
            metric: Metric::Itl,
            percentile: Some(Percentile::P99),
            observed: 140.0,
            target: 60.0,
            unit: Unit::Ms,
        };
        let table = crate::method::phases::PhaseTable {
            rows: vec![crate::method::phases::PhaseRow {
                phase: Phase::Decode,
                p50: 23.0,
                p90: None,
                p95: None,
                p99: Some(136.0),
                share: None,
                source: None,
                edited: false,
            }],
            steps: Vec::new(),
        };
        let dominance = crate::method::phases::dominant(&table, &target);
        let band = crate::method::regime::decode_band(7.6, None, 23.0).unwrap();
        let entry = draft(&DraftInput {
            date: "2026-12-01",
            target: Some(&target),
            dominance: Some(&dominance),
            phases: Some(&table),
            decode: Some(&band),
            ..DraftInput::default()
        });
        assert_eq!(
            entry.diagnosis,
            "Above the typical decode step dominates the p99 ITL (84%: a typical step of 23.0 ms \
             per token, of the observed 140 ms). At the p99, decode is 5.9× its median \
             (23.0 ms → 136 ms): the tail comes from a minority of slow steps or requests, \
             not from the typical one. The typical (median) decode step is 3.0× its bandwidth \
             floor (33% of the memory-bandwidth limit) (a structural problem)."
        );
    }
}
