//! Moving the journal in and out: exports in the journal's Markdown and as JSON, and
//! imports that store nothing unless every entry is valid.

use serde::Serialize;
use sqlx::PgPool;

use crate::core::method::record::draft_entry;
use crate::core::method::JournalEntry;
use crate::core::recall::bundle::ExportedEntry;
use crate::investigations::db::Investigation;
use crate::investigations::journal::{self, Revision, StoredEntry};
use crate::investigations::Loaded;

pub fn exported(e: &StoredEntry) -> ExportedEntry {
    ExportedEntry {
        id: Some(e.id),
        title: e.title.clone(),
        entry: e.entry.clone(),
        author: Some(e.author.clone()),
        published_at: e.published_at,
        investigation_id: e.investigation_id,
    }
}

/// The journal export's two shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The journal's Markdown: `# title`, then `## DATE` … `## EFFORT`, entry after entry.
    Markdown,
    /// `{"format": "perfjournal-journal", "version": 1, "entries": [...]}`.
    Json,
}

/// Entries read per round trip while exporting.
const EXPORT_BATCH: i64 = 500;

/// Every published entry, oldest first (so an import recreates them in order), as a stream
/// of chunks read [`EXPORT_BATCH`] entries at a time: memory stays flat however long the
/// journal is, and the first bytes go out before the last entry is read.
pub fn journal_export(
    pool: PgPool,
    format: ExportFormat,
) -> impl futures::Stream<Item = sqlx::Result<bytes::Bytes>> + Send + 'static {
    enum At {
        Start,
        After(Option<i64>),
        End,
    }
    futures::stream::try_unfold(At::Start, move |at| {
        let pool = pool.clone();
        async move {
            let after = match at {
                At::End => return Ok(None),
                At::Start if format == ExportFormat::Json => {
                    let head = format!(
                        "{{\"format\":\"{}\",\"version\":1,\"entries\":[",
                        crate::core::recall::bundle::FORMAT
                    );
                    return Ok(Some((bytes::Bytes::from(head), At::After(None))));
                }
                At::Start => None,
                At::After(after) => after,
            };
            let batch = journal::published_oldest_first(&pool, after, EXPORT_BATCH).await?;
            let Some(last) = batch.last().map(|e| e.id) else {
                let tail = if format == ExportFormat::Json {
                    "\n]}\n"
                } else {
                    ""
                };
                return Ok(Some((bytes::Bytes::from(tail), At::End)));
            };
            let mut chunk = String::new();
            for (i, e) in batch.iter().enumerate() {
                match format {
                    ExportFormat::Markdown => chunk.push_str(&e.entry.to_markdown(&e.title)),
                    ExportFormat::Json => {
                        if after.is_some() || i > 0 {
                            chunk.push(',');
                        }
                        chunk.push('\n');
                        chunk.push_str(&serde_json::to_string(&exported(e)).unwrap_or_default());
                    }
                }
            }
            Ok(Some((bytes::Bytes::from(chunk), At::After(Some(last)))))
        }
    })
}

/// Stores checked entries (see [`crate::core::recall::bundle::parse_import`]) as
/// `author`'s, published or as drafts, all in one transaction (all or none); returns
/// their ids in document order.
pub async fn import(
    pool: &PgPool,
    author: i64,
    entries: &[(String, JournalEntry)],
    publish: bool,
) -> sqlx::Result<Vec<i64>> {
    let revisions: Vec<Revision> = entries
        .iter()
        .map(|(title, entry)| Revision {
            title: title.trim().to_string(),
            entry: entry.clone(),
        })
        .collect();
    journal::create_many(pool, author, &revisions, publish).await
}

/// An investigation as a journal entry: its own entry when it has one, otherwise the
/// draft its steps give today.
pub async fn investigation_entry(
    pool: &PgPool,
    loaded: &Loaded,
    today: &str,
) -> sqlx::Result<(String, JournalEntry, Option<StoredEntry>)> {
    if let Some(id) = loaded.journal_id {
        if let Some(stored) = journal::get(pool, id).await? {
            return Ok((stored.title.clone(), stored.entry.clone(), Some(stored)));
        }
    }
    Ok((
        loaded.investigation.title.clone(),
        draft_entry(&loaded.records, &loaded.evaluation, today),
        None,
    ))
}

/// An investigation as JSON: its record, every step's stored data and computed
/// results, and its journal entry (stored or drafted).
#[derive(Serialize)]
pub struct InvestigationExport {
    pub format: &'static str,
    pub version: u32,
    pub investigation: Investigation,
    pub steps: Vec<StepExport>,
    pub journal: ExportedEntry,
}

#[derive(Serialize)]
pub struct StepExport {
    pub step: u8,
    pub data: serde_json::Value,
    pub results: serde_json::Value,
}

pub async fn investigation_export(
    pool: &PgPool,
    loaded: &Loaded,
    today: &str,
) -> sqlx::Result<InvestigationExport> {
    let (title, entry, stored) = investigation_entry(pool, loaded, today).await?;
    let steps = crate::investigations::db::steps(pool, loaded.investigation.id)
        .await?
        .into_iter()
        .map(|s| StepExport {
            step: s.step as u8,
            results: loaded.evaluation.step_json(s.step as u8),
            data: s.data,
        })
        .collect();
    let journal = match stored {
        Some(s) => exported(&s),
        None => ExportedEntry {
            id: None,
            title,
            entry,
            author: None,
            published_at: None,
            investigation_id: Some(loaded.investigation.id),
        },
    };
    Ok(InvestigationExport {
        format: "perfjournal-investigation",
        version: 1,
        investigation: loaded.investigation.clone(),
        steps,
        journal,
    })
}
