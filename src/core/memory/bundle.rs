//! Journal exports and imports. Markdown is the journal's own format
//! ([`JournalEntry::to_markdown`]); JSON carries the same fields plus bookkeeping.
//! An import is checked completely before anything is stored, and every problem
//! names where it is (a line of the document, or an entry and its field).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::core::method::journal::{from_markdown, JournalEntry};
use crate::core::FieldError;

/// The `format` value of a JSON export.
pub const FORMAT: &str = "perfjournal-journal";
/// Most entries one import may hold.
pub const MAX_ENTRIES: usize = 10_000;

/// One entry in a JSON export. On import only `title` and the entry fields are read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    pub title: String,
    #[serde(flatten)]
    pub entry: JournalEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub investigation_id: Option<i64>,
}

/// A JSON export: `{"format": "perfjournal-journal", "version": 1, "entries": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalExport {
    pub format: String,
    pub version: u32,
    pub entries: Vec<ExportedEntry>,
}

impl JournalExport {
    pub fn new(entries: Vec<ExportedEntry>) -> Self {
        JournalExport {
            format: FORMAT.to_string(),
            version: 1,
            entries,
        }
    }
}

/// Entries read from an import, each with the line its title is on (Markdown) or its
/// position (JSON), checked as the journal's editor checks them.
pub fn parse_import(text: &str) -> Result<Vec<(String, JournalEntry)>, Vec<FieldError>> {
    let entries: Vec<(String, JournalEntry)> = if text.trim_start().starts_with('{') {
        let export: JournalExport = serde_json::from_str(text)
            .map_err(|e| vec![FieldError::new("json", format!("line {}: {e}", e.line()))])?;
        if export.format != FORMAT {
            return Err(vec![FieldError::new(
                "format",
                format!(
                    "'{}' is not a journal export (expected \"{FORMAT}\")",
                    export.format
                ),
            )]);
        }
        export
            .entries
            .into_iter()
            .map(|e| (e.title, e.entry))
            .collect()
    } else {
        from_markdown(text).map_err(|e| {
            vec![FieldError::new(
                "markdown",
                format!("line {}: {}", e.line, e.message),
            )]
        })?
    };
    if entries.is_empty() {
        return Err(vec![FieldError::new(
            "markdown",
            "The document holds no entries: each starts with a '# title' line followed by ## DATE … ## EFFORT sections",
        )]);
    }
    if entries.len() > MAX_ENTRIES {
        return Err(vec![FieldError::new(
            "markdown",
            format!(
                "{} entries is more than one import takes ({MAX_ENTRIES})",
                entries.len()
            ),
        )]);
    }
    let title_lines = title_lines(text);
    let mut errors = Vec::new();
    for (i, (title, entry)) in entries.iter().enumerate() {
        let place = match title_lines.get(i) {
            Some(line) => format!("entry '{}' (line {line})", title.trim()),
            None => format!("entry '{}'", title.trim()),
        };
        let t = title.trim();
        if t.is_empty() || t.chars().count() > 200 {
            errors.push(FieldError::new(
                format!("entries[{i}].title"),
                format!("{place}: the title must be 1–200 characters"),
            ));
        }
        for e in entry.validate() {
            errors.push(FieldError::new(
                format!("entries[{i}].{}", e.field),
                format!("{place}: {}", e.message),
            ));
        }
    }
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

/// 1-based numbers of the `# title` lines of a Markdown document (same rule as the
/// parser: `#` alone or `# ` at the start of the line).
fn title_lines(text: &str) -> Vec<usize> {
    if text.trim_start().starts_with('{') {
        return Vec::new();
    }
    text.split('\n')
        .enumerate()
        .filter(|(_, l)| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            l.len() == 1 && l.starts_with('#') || l.starts_with("# ")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::method::journal::entries_to_markdown;

    fn entry(symptom: &str) -> JournalEntry {
        JournalEntry {
            date: "2026-03-14".into(),
            symptom: symptom.into(),
            workload: "w".into(),
            baseline: "b".into(),
            diagnosis: "d\n# not a title".into(),
            change: "c".into(),
            result: "r".into(),
            quality: "q".into(),
            effort: "e".into(),
        }
    }

    #[test]
    fn markdown_and_json_round_trip() {
        let entries = vec![
            ("One".to_string(), entry("p95 TTFT")),
            ("Two".to_string(), entry("x")),
        ];
        assert_eq!(
            parse_import(&entries_to_markdown(&entries)).unwrap(),
            entries
        );
        let export = JournalExport::new(
            entries
                .iter()
                .map(|(t, e)| ExportedEntry {
                    id: Some(1),
                    title: t.clone(),
                    entry: e.clone(),
                    author: Some("ada".into()),
                    published_at: None,
                    investigation_id: None,
                })
                .collect(),
        );
        let json = serde_json::to_string_pretty(&export).unwrap();
        assert_eq!(parse_import(&json).unwrap(), entries);
    }

    #[test]
    fn problems_name_the_line_or_entry() {
        let err = parse_import("# T\n\n## DATE\n\n## MOOD\n").unwrap_err();
        assert_eq!(err[0].field, "markdown");
        assert!(err[0].message.starts_with("line 5: unknown section 'MOOD'"));

        let bad = vec![
            ("Fine".to_string(), entry("s")),
            (
                "Bad".to_string(),
                JournalEntry {
                    date: "2026-02-30".into(),
                    ..entry("s")
                },
            ),
        ];
        let md = entries_to_markdown(&bad);
        let err = parse_import(&md).unwrap_err();
        assert_eq!(err[0].field, "entries[1].date");
        let line = md.lines().position(|l| l == "# Bad").unwrap() + 1;
        assert!(
            err[0]
                .message
                .starts_with(&format!("entry 'Bad' (line {line})")),
            "{}",
            err[0].message
        );

        assert_eq!(parse_import("").unwrap_err()[0].field, "markdown");
        assert_eq!(parse_import("{\"format\": 1").unwrap_err()[0].field, "json");
        let wrong = r#"{"format": "other", "version": 1, "entries": []}"#;
        assert_eq!(parse_import(wrong).unwrap_err()[0].field, "format");
    }
}
