//! Moving the journal in and out: exports in the journal's Markdown and as JSON, and
//! imports that store nothing unless every entry is valid.

use serde::Serialize;
use sqlx::PgPool;

use crate::core::memory::bundle::{ExportedEntry, JournalExport};
use crate::core::method::record::draft_entry;
use crate::core::method::JournalEntry;
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

/// Every published entry, oldest first (so an import recreates them in order).
pub async fn journal_export(pool: &PgPool) -> sqlx::Result<JournalExport> {
    let mut entries = journal::published(pool).await?;
    entries.reverse();
    Ok(JournalExport::new(entries.iter().map(exported).collect()))
}

pub fn export_markdown(export: &JournalExport) -> String {
    let pairs: Vec<(String, JournalEntry)> = export
        .entries
        .iter()
        .map(|e| (e.title.clone(), e.entry.clone()))
        .collect();
    crate::core::method::journal::entries_to_markdown(&pairs)
}

/// Stores checked entries (see [`crate::core::memory::bundle::parse_import`]) as
/// `author`'s, published or as drafts; returns their ids in document order.
pub async fn import(
    pool: &PgPool,
    author: i64,
    entries: &[(String, JournalEntry)],
    publish: bool,
) -> sqlx::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(entries.len());
    for (title, entry) in entries {
        let revision = Revision {
            title: title.trim().to_string(),
            entry: entry.clone(),
        };
        ids.push(journal::create(pool, author, None, &revision, publish, None).await?);
    }
    Ok(ids)
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
