//! The journal tables. Saves carry the version the editor started from; a save from an
//! older version is refused, and the revisions table tells what changed since.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgPool, Row};

use super::db;
use crate::core::method::JournalEntry;

/// A stored entry with its bookkeeping.
#[derive(Debug, Clone, Serialize)]
pub struct StoredEntry {
    pub id: i64,
    pub investigation_id: Option<i64>,
    pub investigation_title: Option<String>,
    /// The linked investigation's status (open, diagnosed, resolved, abandoned).
    pub investigation_status: Option<String>,
    pub title: String,
    pub entry: JournalEntry,
    pub published_at: Option<DateTime<Utc>>,
    pub author: String,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl StoredEntry {
    pub fn is_published(&self) -> bool {
        self.published_at.is_some()
    }

    /// Published while its investigation is still open or diagnosed: the page offers to
    /// resolve the investigation.
    pub fn offers_resolve(&self) -> bool {
        self.is_published()
            && matches!(
                self.investigation_status.as_deref(),
                Some("open" | "diagnosed")
            )
    }
}

impl<'r> sqlx::FromRow<'r, PgRow> for StoredEntry {
    fn from_row(row: &'r PgRow) -> sqlx::Result<Self> {
        let text = |name: &str| row.try_get::<String, _>(name);
        Ok(StoredEntry {
            id: row.try_get("id")?,
            investigation_id: row.try_get("investigation_id")?,
            investigation_title: row.try_get("investigation_title")?,
            investigation_status: row.try_get("investigation_status")?,
            title: text("title")?,
            entry: JournalEntry {
                date: text("entry_date")?,
                symptom: text("symptom")?,
                workload: text("workload")?,
                baseline: text("baseline")?,
                diagnosis: text("diagnosis")?,
                change: text("change")?,
                result: text("result")?,
                quality: text("quality")?,
                effort: text("effort")?,
            },
            published_at: row.try_get("published_at")?,
            author: text("author")?,
            version: row.try_get("version")?,
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
        })
    }
}

/// The fields a revision keeps, to show what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Revision {
    pub title: String,
    pub entry: JournalEntry,
}

impl Revision {
    /// A revision as typed on the page or sent to the API: every field trimmed and
    /// Windows line ends made `\n`, so both save the same text.
    pub fn typed(title: &str, entry: JournalEntry) -> Revision {
        let t = |s: &str| s.trim().replace("\r\n", "\n");
        Revision {
            title: t(title),
            entry: JournalEntry {
                date: t(&entry.date),
                symptom: t(&entry.symptom),
                workload: t(&entry.workload),
                baseline: t(&entry.baseline),
                diagnosis: t(&entry.diagnosis),
                change: t(&entry.change),
                result: t(&entry.result),
                quality: t(&entry.quality),
                effort: t(&entry.effort),
            },
        }
    }

    /// The rules every save follows, page or API: a title of 1–200 characters and the
    /// entry's checks; `publishing` (publishing now, or saving an entry already published)
    /// adds the sections a published entry needs.
    pub fn check(&self, publishing: bool) -> Vec<crate::core::FieldError> {
        let mut errors = Vec::new();
        if self.title.is_empty() || self.title.chars().count() > 200 {
            errors.push(crate::core::FieldError::new(
                "title",
                "Give the entry a title of 1–200 characters",
            ));
        }
        errors.extend(self.entry.validate_for(publishing));
        errors
    }
}

const SELECT: &str = "SELECT j.id, j.investigation_id, i.title AS investigation_title, \
     i.status AS investigation_status, j.title, \
     j.entry_date::text AS entry_date, j.symptom, j.workload, j.baseline, j.diagnosis, j.change, \
     j.result, j.quality, j.effort, j.published_at, u.name AS author, j.version, j.created_at, \
     j.updated_at FROM journal_entries j JOIN users u ON u.id = j.author_id \
     LEFT JOIN investigations i ON i.id = j.investigation_id";

/// Why a save did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("no journal entry {0}")]
    NotFound(i64),
    /// Someone saved since `yours`; the entry is now at `current`.
    #[error("the entry was changed since version {yours}")]
    Stale { yours: i32, current: i32 },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// A new entry; `investigation` links it (one entry per investigation).
pub async fn create(
    pool: &PgPool,
    author: i64,
    investigation: Option<i64>,
    revision: &Revision,
    publish: bool,
    demo_key: Option<&str>,
) -> sqlx::Result<i64> {
    let mut tx = pool.begin().await?;
    let query = sqlx::query_scalar(
        "INSERT INTO journal_entries (investigation_id, title, entry_date, symptom, workload, \
         baseline, diagnosis, change, result, quality, effort, published_at, author_id, demo_key) \
         VALUES ($1, $2, $3::date, $4, $5, $6, $7, $8, $9, $10, $11, \
         CASE WHEN $12 THEN now() END, $13, $14) RETURNING id",
    )
    .bind(investigation);
    let id: i64 = bind_revision(query, revision, publish)
        .bind(author)
        .bind(demo_key)
        .fetch_one(&mut *tx)
        .await?;
    insert_revision(&mut tx, id, 1, revision, author).await?;
    if publish && demo_key.is_none() {
        announce_published(&mut tx, id, investigation, revision).await?;
        annotate(&mut tx, id, investigation, revision).await?;
    }
    if let Some(inv) = investigation {
        let what = if publish { "published" } else { "drafted" };
        db::log(
            &mut tx,
            inv,
            author,
            "journal",
            None,
            &format!("{what} the journal entry “{}”", revision.title),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// Queues `journal.published` for the endpoints subscribed to it, in the publishing
/// transaction.
async fn announce_published(
    conn: &mut sqlx::PgConnection,
    id: i64,
    investigation: Option<i64>,
    revision: &Revision,
) -> sqlx::Result<()> {
    let url = format!("/journal/{id}");
    let text = format!(
        "Journal entry published: {} — {} ({url})",
        revision.title, revision.entry.symptom
    );
    let data = serde_json::json!({
        "id": id,
        "url": url,
        "title": revision.title,
        "investigation_id": investigation,
        "date": revision.entry.date,
        "symptom": revision.entry.symptom,
        "diagnosis": revision.entry.diagnosis,
        "change": revision.entry.change,
        "result": revision.entry.result,
    });
    crate::webhooks::enqueue(conn, "journal.published", &text, &data).await?;
    Ok(())
}

/// Queues the Grafana annotation of a published entry of an investigation (entries
/// without one have no service or incident window to place it in).
async fn annotate(
    conn: &mut sqlx::PgConnection,
    id: i64,
    investigation: Option<i64>,
    revision: &Revision,
) -> sqlx::Result<()> {
    let Some(inv) = investigation else {
        return Ok(());
    };
    let text = format!(
        "{} — SYMPTOM: {} · CHANGE: {} · RESULT: {}",
        revision.title, revision.entry.symptom, revision.entry.change, revision.entry.result
    );
    crate::grafana::note(conn, inv, "entry", &format!("/journal/{id}"), &text).await
}

/// Entries per [`insert_batch`] statement.
pub const BATCH: usize = 1_000;

/// Stores many direct entries (no investigation) as `author`'s, in one transaction: all of
/// them or, on any error, none. Returns the ids in the order given.
pub async fn create_many(
    pool: &PgPool,
    author: i64,
    revisions: &[Revision],
    publish: bool,
) -> sqlx::Result<Vec<i64>> {
    let mut tx = pool.begin().await?;
    let mut ids = Vec::with_capacity(revisions.len());
    for batch in revisions.chunks(BATCH) {
        ids.extend(insert_batch(&mut tx, author, batch, publish).await?);
    }
    tx.commit().await?;
    Ok(ids)
}

/// Inserts up to a few thousand direct entries and their first revisions with two
/// statements (arrays bound once, `UNNEST`ed): an import of 10,000 entries is a few
/// round trips, not 20,000. Returns the ids in the order given.
pub async fn insert_batch(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    author: i64,
    batch: &[Revision],
    publish: bool,
) -> sqlx::Result<Vec<i64>> {
    let column = |f: fn(&Revision) -> &str| -> Vec<&str> { batch.iter().map(f).collect() };
    let mut ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO journal_entries (title, entry_date, symptom, workload, baseline, \
         diagnosis, change, result, quality, effort, published_at, author_id) \
         SELECT t, d::date, s, w, b, g, c, r, q, e, CASE WHEN $11 THEN now() END, $12 \
         FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], \
                     $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) \
              WITH ORDINALITY AS u(t, d, s, w, b, g, c, r, q, e, n) \
         ORDER BY n RETURNING id",
    )
    .bind(column(|r| &r.title))
    .bind(column(|r| &r.entry.date))
    .bind(column(|r| &r.entry.symptom))
    .bind(column(|r| &r.entry.workload))
    .bind(column(|r| &r.entry.baseline))
    .bind(column(|r| &r.entry.diagnosis))
    .bind(column(|r| &r.entry.change))
    .bind(column(|r| &r.entry.result))
    .bind(column(|r| &r.entry.quality))
    .bind(column(|r| &r.entry.effort))
    .bind(publish)
    .bind(author)
    .fetch_all(&mut **tx)
    .await?;
    // Ids come from the sequence in the order the rows were inserted (ORDER BY n).
    ids.sort_unstable();
    let fields: Vec<sqlx::types::Json<&Revision>> = batch.iter().map(sqlx::types::Json).collect();
    sqlx::query(
        "INSERT INTO journal_revisions (entry_id, version, fields, user_id) \
         SELECT id, 1, f, $3 FROM UNNEST($1::bigint[], $2::jsonb[]) AS u(id, f)",
    )
    .bind(&ids)
    .bind(fields)
    .bind(author)
    .execute(&mut **tx)
    .await?;
    Ok(ids)
}

type Scalar<'q, T> = sqlx::query::QueryScalar<'q, sqlx::Postgres, T, sqlx::postgres::PgArguments>;

/// Binds the title, the nine fields and the publish flag, in that order ($2–$12 in
/// both the insert and the update).
fn bind_revision<'q, T>(
    query: Scalar<'q, T>,
    revision: &'q Revision,
    publish: bool,
) -> Scalar<'q, T> {
    let e = &revision.entry;
    query
        .bind(&revision.title)
        .bind(&e.date)
        .bind(&e.symptom)
        .bind(&e.workload)
        .bind(&e.baseline)
        .bind(&e.diagnosis)
        .bind(&e.change)
        .bind(&e.result)
        .bind(&e.quality)
        .bind(&e.effort)
        .bind(publish)
}

async fn insert_revision(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: i64,
    version: i32,
    revision: &Revision,
    user: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO journal_revisions (entry_id, version, fields, user_id) VALUES ($1, $2, $3, $4)",
    )
    .bind(id)
    .bind(version)
    .bind(sqlx::types::Json(revision))
    .bind(user)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Saves over version `base`; `publish` publishes a draft (a published entry stays
/// published). Returns the new version.
pub async fn save(
    pool: &PgPool,
    id: i64,
    user: i64,
    base: i32,
    revision: &Revision,
    publish: bool,
) -> Result<i32, SaveError> {
    let mut tx = pool.begin().await?;
    // Lock the row so two saves from the same version cannot both pass the check.
    let row: Option<(i32, bool, Option<i64>)> = sqlx::query_as(
        "SELECT version, published_at IS NOT NULL, investigation_id FROM journal_entries \
         WHERE id = $1 FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((current, was_published, investigation)) = row else {
        return Err(SaveError::NotFound(id));
    };
    if current != base {
        return Err(SaveError::Stale {
            yours: base,
            current,
        });
    }
    let query = sqlx::query_scalar(
        "UPDATE journal_entries SET title = $2, entry_date = $3::date, symptom = $4, workload = $5, \
         baseline = $6, diagnosis = $7, change = $8, result = $9, quality = $10, effort = $11, \
         published_at = CASE WHEN published_at IS NULL AND $12 THEN now() ELSE published_at END, \
         version = version + 1, updated_at = now() WHERE id = $1 RETURNING version",
    )
    .bind(id);
    let version: i32 = bind_revision(query, revision, publish)
        .fetch_one(&mut *tx)
        .await?;
    let published_now = publish && !was_published;
    insert_revision(&mut tx, id, version, revision, user).await?;
    if published_now {
        announce_published(&mut tx, id, investigation, revision).await?;
    }
    // A published entry's annotation follows its edits.
    if publish || was_published {
        annotate(&mut tx, id, investigation, revision).await?;
    }
    if let Some(inv) = investigation {
        let what = if published_now { "published" } else { "edited" };
        db::log(
            &mut tx,
            inv,
            user,
            "journal",
            None,
            &format!("{what} the journal entry (version {version})"),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(version)
}

pub async fn get(pool: &PgPool, id: i64) -> sqlx::Result<Option<StoredEntry>> {
    sqlx::query_as(&format!("{SELECT} WHERE j.id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// The entry and the artifacts attached to it or to its investigation (newest first), in
/// one round trip: what the entry page shows (its profile is in docs/pages.md).
pub async fn with_artifacts(
    pool: &PgPool,
    id: i64,
) -> sqlx::Result<Option<(StoredEntry, Vec<db::ArtifactLink>)>> {
    let row = sqlx::query(&format!(
        "{} WHERE j.id = $1",
        SELECT.replacen(
            " FROM journal_entries j",
            &format!(", ({}) AS artifacts FROM journal_entries j", ARTIFACTS_JSON),
            1
        )
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    row.map(|row| {
        let entry = StoredEntry::from_row(&row)?;
        let sqlx::types::Json(artifacts) = row.try_get("artifacts")?;
        Ok((entry, artifacts))
    })
    .transpose()
}

/// The artifacts of entry `j` as a JSON array, in the order of
/// [`db::artifacts`].
const ARTIFACTS_JSON: &str = "SELECT coalesce(json_agg(json_build_object('id', a.id, \
     'name', a.name, 'kind', a.kind, 'status', a.status, 'created_at', a.created_at, \
     'profile_error', a.analysis->>'profile_error') ORDER BY a.created_at DESC, a.id DESC), '[]') \
     FROM artifacts a WHERE a.investigation_id = j.investigation_id OR a.journal_entry_id = j.id";

pub async fn by_investigation(pool: &PgPool, investigation: i64) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT id FROM journal_entries WHERE investigation_id = $1")
        .bind(investigation)
        .fetch_optional(pool)
        .await
}

/// One page of published entries in the list's order (entry date, then publication,
/// newest first): the `limit` after the entry `after` (keyset, so a page is stable when
/// new entries arrive).
pub async fn published_page(
    pool: &PgPool,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<StoredEntry>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE j.published_at IS NOT NULL AND ($1::bigint IS NULL OR \
         (j.entry_date, j.published_at, j.id) < (SELECT entry_date, published_at, id \
          FROM journal_entries WHERE id = $1)) \
         ORDER BY j.entry_date DESC, j.published_at DESC, j.id DESC LIMIT $2"
    ))
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Published entries oldest first (the export's order): `limit` of them after the one with
/// id `after`.
pub async fn published_oldest_first(
    pool: &PgPool,
    after: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<StoredEntry>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE j.published_at IS NOT NULL AND ($1::bigint IS NULL OR \
         (j.entry_date, j.published_at, j.id) > (SELECT entry_date, published_at, id \
          FROM journal_entries WHERE id = $1)) \
         ORDER BY j.entry_date, j.published_at, j.id LIMIT $2"
    ))
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The `limit` most recently published entries, newest first (the Atom feed).
pub async fn recently_published(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<StoredEntry>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE j.published_at IS NOT NULL ORDER BY j.published_at DESC, j.id DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The most recently edited drafts (at most `limit`), and how many there are in all.
pub async fn recent_drafts(pool: &PgPool, limit: i64) -> sqlx::Result<(Vec<StoredEntry>, i64)> {
    let rows = sqlx::query_as(&format!(
        "{SELECT} WHERE j.published_at IS NULL ORDER BY j.updated_at DESC, j.id DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let total: i64 =
        sqlx::query_scalar("SELECT count(*) FROM journal_entries WHERE published_at IS NULL")
            .fetch_one(pool)
            .await?;
    Ok((rows, total))
}

/// A saved version of an entry, with who saved it.
pub async fn revision(
    pool: &PgPool,
    id: i64,
    version: i32,
) -> sqlx::Result<Option<(Revision, String, DateTime<Utc>)>> {
    let row: Option<(sqlx::types::Json<Revision>, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT r.fields, u.name, r.at FROM journal_revisions r JOIN users u ON u.id = r.user_id \
         WHERE r.entry_id = $1 AND r.version = $2",
    )
    .bind(id)
    .bind(version)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(f, name, at)| (f.0, name, at)))
}
