//! Journal exports and imports. Markdown is the journal's own format
//! ([`JournalEntry::to_markdown`]); JSON carries the same fields plus bookkeeping.
//! An import is checked completely before anything is stored, and every problem
//! names where it is (a line of the document, or an entry and its field).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::method::journal::{from_markdown, JournalEntry};
use crate::FieldError;

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

/// Most problems one import reports (the rest are counted).
const MAX_REPORTED: usize = 50;

/// Entries read from an import held in memory (the page's form), checked as the journal's
/// editor checks them; at most [`MAX_ENTRIES`]. See [`read_import`].
pub fn parse_import(text: &str) -> Result<Vec<(String, JournalEntry)>, Vec<FieldError>> {
    let mut entries = Vec::new();
    read_import(text.as_bytes(), &mut |title, entry| {
        entries.push((title, entry))
    })?;
    if entries.len() > MAX_ENTRIES {
        return Err(vec![FieldError::new(
            "markdown",
            format!(
                "{} entries is more than one import takes ({MAX_ENTRIES})",
                entries.len()
            ),
        )]);
    }
    Ok(entries)
}

/// Reads an import (the journal's Markdown, or a JSON export) from `reader` one entry at a
/// time and hands each entry that passes the editor's checks to `each`, in document order:
/// memory holds one entry, not the file. Returns how many entries the document holds, or
/// its problems, each naming where it is (a line of the document, or an entry and its
/// field). When there are problems, the entries already handed over are the caller's to
/// discard: check a file with a first pass before storing anything from a second.
pub fn read_import(
    mut reader: impl std::io::BufRead,
    each: &mut dyn FnMut(String, JournalEntry),
) -> Result<usize, Vec<FieldError>> {
    let io_error = |e: std::io::Error| {
        vec![FieldError::new(
            "file",
            format!("cannot read the file: {e}"),
        )]
    };
    // JSON when the first non-blank byte is `{`.
    let json = loop {
        let buf = reader.fill_buf().map_err(io_error)?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let first = buf[i];
                reader.consume(i);
                break first == b'{';
            }
            None if buf.is_empty() => break false,
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    };
    let mut problems = Problems::default();
    let mut count = 0;
    let mut check =
        |title: String, entry: JournalEntry, line: Option<usize>, problems: &mut Problems| {
            let before = problems.total;
            problems.entry(count, &title, &entry, line);
            if problems.total == before {
                each(title, entry);
            }
            count += 1;
        };
    if json {
        let mut format = None;
        let mut de = serde_json::Deserializer::from_reader(reader);
        let read = serde::de::DeserializeSeed::deserialize(
            Top {
                format: &mut format,
                each: &mut |e: ExportedEntry| check(e.title, e.entry, None, &mut problems),
            },
            &mut de,
        )
        .and_then(|()| de.end());
        if let Err(e) = read {
            problems.push(FieldError::new("json", format!("line {}: {e}", e.line())));
        } else if format.as_deref() != Some(FORMAT) {
            problems.push(FieldError::new(
                "format",
                format!(
                    "'{}' is not a journal export (expected \"{FORMAT}\")",
                    format.unwrap_or_default()
                ),
            ));
        }
    } else {
        // Entry by entry: a chunk runs from one `# title` line to the next (the parser's own
        // rule), and its line numbers are shifted to the document's.
        let mut chunk = String::new();
        let (mut chunk_start, mut line_no, mut titled) = (1usize, 0usize, false);
        let mut flush = |chunk: &mut String, start: usize, problems: &mut Problems| {
            match from_markdown(chunk) {
                Ok(entries) => {
                    for (title, entry) in entries {
                        check(title, entry, Some(start), problems);
                    }
                }
                Err(e) => problems.push(FieldError::new(
                    "markdown",
                    format!("line {}: {}", start - 1 + e.line, e.message),
                )),
            }
            chunk.clear();
        };
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(io_error)? == 0 {
                break;
            }
            line_no += 1;
            let bare = line.trim_end_matches(['\n', '\r']);
            if bare == "#" || bare.starts_with("# ") {
                if titled {
                    flush(&mut chunk, chunk_start, &mut problems);
                    chunk_start = line_no;
                } else if chunk.trim().is_empty() {
                    chunk.clear();
                    chunk_start = line_no;
                }
                titled = true;
            }
            chunk.push_str(&line);
        }
        if titled || !chunk.trim().is_empty() {
            flush(&mut chunk, chunk_start, &mut problems);
        }
    }
    if count == 0 && problems.total == 0 {
        problems.push(FieldError::new(
            "markdown",
            "The document holds no entries: each starts with a '# title' line followed by ## DATE … ## EFFORT sections",
        ));
    }
    problems.finish().map(|()| count)
}

/// Problems found so far, the first [`MAX_REPORTED`] kept.
#[derive(Default)]
struct Problems {
    kept: Vec<FieldError>,
    total: usize,
}

impl Problems {
    fn push(&mut self, e: FieldError) {
        self.total += 1;
        if self.kept.len() < MAX_REPORTED {
            self.kept.push(e);
        }
    }

    /// The editor's checks of entry `i` (its title on `line` of a Markdown document).
    fn entry(&mut self, i: usize, title: &str, entry: &JournalEntry, line: Option<usize>) {
        let t = title.trim();
        let place = match line {
            Some(line) => format!("entry '{t}' (line {line})"),
            None => format!("entry '{t}'"),
        };
        if t.is_empty() || t.chars().count() > 200 {
            self.push(FieldError::new(
                format!("entries[{i}].title"),
                format!("{place}: the title must be 1–200 characters"),
            ));
        }
        for e in entry.validate() {
            self.push(FieldError::new(
                format!("entries[{i}].{}", e.field),
                format!("{place}: {}", e.message),
            ));
        }
    }

    fn finish(mut self) -> Result<(), Vec<FieldError>> {
        if self.total == 0 {
            return Ok(());
        }
        if self.total > self.kept.len() {
            let more = self.total - self.kept.len();
            self.kept.push(FieldError::new(
                "import",
                format!("… and {more} more problems"),
            ));
        }
        Err(self.kept)
    }
}

/// The JSON export's top level, read key by key; `entries` goes to [`Entries`].
struct Top<'a> {
    format: &'a mut Option<String>,
    each: &'a mut dyn FnMut(ExportedEntry),
}

impl<'de> serde::de::DeserializeSeed<'de> for Top<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a journal export object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => *self.format = Some(map.next_value()?),
                "entries" => map.next_value_seed(Entries(&mut *self.each))?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `entries` array, one entry at a time.
struct Entries<'a>(&'a mut dyn FnMut(ExportedEntry));

impl<'de> serde::de::DeserializeSeed<'de> for Entries<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Entries<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<ExportedEntry>()? {
            (self.0)(entry);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::journal::entries_to_markdown;

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

    #[test]
    fn a_reader_is_read_entry_by_entry_whatever_its_buffer() {
        let entries: Vec<(String, JournalEntry)> = (0..40)
            .map(|i| (format!("Entry {i}"), entry("s")))
            .collect();
        let md = format!("\n\n{}", entries_to_markdown(&entries));
        for capacity in [7, 64, 8192] {
            let mut seen = Vec::new();
            let reader = std::io::BufReader::with_capacity(capacity, md.as_bytes());
            let n = read_import(reader, &mut |t, e| seen.push((t, e))).unwrap();
            assert_eq!((n, &seen), (40, &entries), "buffer of {capacity} bytes");
        }
        // JSON whose keys come in another order, with fields the import does not read.
        let json = serde_json::json!({
            "entries": entries.iter().map(|(t, e)| {
                let mut v = serde_json::to_value(e).unwrap();
                v["title"] = t.clone().into();
                v["author"] = "ada".into();
                v
            }).collect::<Vec<_>>(),
            "exported_by": "someone",
            "version": 1,
            "format": FORMAT,
        })
        .to_string();
        let mut seen = Vec::new();
        let reader = std::io::BufReader::with_capacity(16, json.as_bytes());
        assert_eq!(
            read_import(reader, &mut |t, e| seen.push((t, e))).unwrap(),
            40
        );
        assert_eq!(seen, entries);
    }

    #[test]
    fn many_problems_are_summarised() {
        let bad: Vec<(String, JournalEntry)> = (0..80)
            .map(|i| {
                let e = JournalEntry {
                    date: "yesterday".into(),
                    ..entry("s")
                };
                (format!("Bad {i}"), e)
            })
            .collect();
        let mut handed = 0;
        let err = read_import(entries_to_markdown(&bad).as_bytes(), &mut |_, _| {
            handed += 1
        })
        .unwrap_err();
        assert_eq!(handed, 0, "no invalid entry is handed over");
        assert_eq!(err.len(), 51);
        assert_eq!(err[50].message, "… and 30 more problems");
    }
}
