//! `/api/v1/journal`: published entries for scripts, exports and search tools, and
//! writing entries with the page's rules (drafts may be partial; publishing needs
//! SYMPTOM, DIAGNOSIS, CHANGE and RESULT; an edit names the version it started from).

use crate::extract::{Paging, Path};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::investigations::EntryLink;
use crate::auth::{ApiUser, Role};
use crate::core::method::JournalEntry;
use crate::documents::step::ExpectedJson;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::investigations::journal::{self, Revision, SaveError, StoredEntry};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct EntrySummary {
    pub id: i64,
    pub url: String,
    pub title: String,
    /// YYYY-MM-DD
    pub date: String,
    /// The symptom line: metric, percentile, observed vs target.
    pub symptom: String,
    pub investigation_id: Option<i64>,
    pub published_at: Option<DateTime<Utc>>,
}

impl EntrySummary {
    fn new(e: &StoredEntry) -> Self {
        EntrySummary {
            id: e.id,
            url: format!("/journal/{}", e.id),
            title: e.title.clone(),
            date: e.entry.date.clone(),
            symptom: e.entry.symptom.clone(),
            investigation_id: e.investigation_id,
            published_at: e.published_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ArtifactJson {
    pub id: i64,
    /// The artifact's page.
    pub url: String,
    pub name: String,
    pub kind: String,
    pub status: String,
}

#[derive(Serialize, ToSchema)]
pub struct EntryDetail {
    #[serde(flatten)]
    pub summary: EntrySummary,
    pub workload: String,
    pub baseline: String,
    pub diagnosis: String,
    pub change: String,
    pub result: String,
    pub quality: String,
    pub effort: String,
    pub author: String,
    /// Bumped by every save; edits name the version they started from.
    pub version: i32,
    pub published: bool,
    pub investigation: Option<EntryLink>,
    /// Estimates attached to the investigation's steps.
    pub estimates: Vec<ExpectedJson>,
    /// Uploads hanging on the entry or its investigation.
    pub artifacts: Vec<ArtifactJson>,
    /// The entry as Markdown.
    pub markdown: String,
}

/// Published entries, newest first (by entry date), a page at a time.
#[utoipa::path(get, path = "/journal", tag = "journal",
    params(crate::extract::Paging),
    responses((status = 200, body = super::Page<EntrySummary>), (status = 422, body = ErrorBody)))]
pub async fn list_entries(
    State(state): State<AppState>,
    _me: ApiUser,
    paging: Paging,
) -> ApiResult<Json<super::Page<EntrySummary>>> {
    super::no_filters(&paging)?;
    let rows = journal::published_page(&state.pool, paging.after, paging.fetch()).await?;
    Ok(super::Page::new(
        &paging,
        rows,
        |e| e.id,
        |e| EntrySummary::new(&e),
    ))
}

/// One entry with all its fields, its investigation and estimates.
#[utoipa::path(get, path = "/journal/{id}", tag = "journal",
    params(("id" = i64, Path, description = "entry id")),
    responses((status = 200, body = EntryDetail), (status = 404, body = ErrorBody)))]
pub async fn get_entry(
    State(state): State<AppState>,
    _me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<Json<EntryDetail>> {
    Ok(Json(detail(&state, id).await?))
}

/// An entry to write: the form's fields. Absent text fields are empty.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryInput {
    #[serde(default)]
    pub title: String,
    /// YYYY-MM-DD
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub symptom: String,
    #[serde(default)]
    pub workload: String,
    #[serde(default)]
    pub baseline: String,
    #[serde(default)]
    pub diagnosis: String,
    #[serde(default)]
    pub change: String,
    #[serde(default)]
    pub result: String,
    #[serde(default)]
    pub quality: String,
    #[serde(default)]
    pub effort: String,
    /// true publishes (a published entry stays published); false keeps a draft.
    #[serde(default)]
    pub publish: bool,
    /// For `PUT`: the version the edit started from (as `GET` returned it).
    #[serde(default, deserialize_with = "crate::core::json_input::de_version")]
    pub version: Option<i32>,
}

impl EntryInput {
    /// The body read with the same trimming the form applies; not this shape is a 422
    /// on `body`.
    fn read(body: &[u8]) -> Result<EntryInput, AppError> {
        let value = super::json_body(body)?;
        serde_json::from_value(value).map_err(|e| AppError::field("body", e.to_string()))
    }

    fn revision(&self) -> Revision {
        Revision::typed(
            &self.title,
            JournalEntry {
                date: self.date.clone(),
                symptom: self.symptom.clone(),
                workload: self.workload.clone(),
                baseline: self.baseline.clone(),
                diagnosis: self.diagnosis.clone(),
                change: self.change.clone(),
                result: self.result.clone(),
                quality: self.quality.clone(),
                effort: self.effort.clone(),
            },
        )
    }

    /// The checked revision, or 422 naming each field (`published`: the entry edited is
    /// already published).
    fn checked(&self, published: bool) -> Result<Revision, AppError> {
        let revision = self.revision();
        let errors = revision.check(published || self.publish);
        if errors.is_empty() {
            Ok(revision)
        } else {
            Err(AppError::Invalid(errors))
        }
    }
}

/// Writes an entry (not linked to an investigation) as a draft, or publishes it with
/// `"publish": true`. The page's rules: a title and a YYYY-MM-DD date always; publishing
/// needs SYMPTOM, DIAGNOSIS, CHANGE and RESULT. A refusal is a 422 naming each field;
/// nothing is stored.
#[utoipa::path(post, path = "/journal", tag = "journal",
    request_body(content = EntryInput, description = "{\"title\": \"Chunked prefill starved decode\", \"date\": \"2026-11-20\", \"symptom\": \"p99 ITL 140 ms vs 60 ms\", \"diagnosis\": \"…\", \"change\": \"max_num_batched_tokens 2048\", \"result\": \"p99 ITL 55 ms\", \"publish\": true}"),
    responses(
        (status = 201, body = EntryDetail),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create_entry(
    State(state): State<AppState>,
    me: ApiUser,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<EntryDetail>)> {
    me.require(Role::Editor)?;
    let input = EntryInput::read(&body)?;
    if input.version.is_some() {
        return Err(AppError::field(
            "version",
            "a new entry has no version: send it with PUT to edit",
        )
        .into());
    }
    let revision = input.checked(false)?;
    let id = journal::create(&state.pool, me.0.id, None, &revision, input.publish, None).await?;
    Ok((StatusCode::CREATED, Json(detail(&state, id).await?)))
}

/// Saves an entry over the `version` the edit started from; `"publish": true` publishes
/// a draft. A save from an older version answers 409 and changes nothing; the rules and
/// the 422 are those of `POST`, a published entry keeping a published entry's rules.
#[utoipa::path(put, path = "/journal/{id}", tag = "journal",
    params(("id" = i64, Path, description = "entry id")),
    request_body(content = EntryInput, description = "all the fields, as for POST, with \"version\""),
    responses(
        (status = 200, body = EntryDetail),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn put_entry(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Json<EntryDetail>> {
    me.require(Role::Editor)?;
    let input = EntryInput::read(&body)?;
    let current = journal::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))?;
    let Some(base) = input.version else {
        return Err(AppError::field(
            "version",
            format!(
                "say which version the edit started from (the entry is at version {})",
                current.version
            ),
        )
        .into());
    };
    let revision = input.checked(current.is_published())?;
    match journal::save(&state.pool, id, me.0.id, base, &revision, input.publish).await {
        Ok(_) => Ok(Json(detail(&state, id).await?)),
        Err(SaveError::Stale { yours, current }) => Err(AppError::Conflict(format!(
            "the entry was saved by someone else since version {yours}; it is now at version \
             {current}: read it again, merge, and send the new version"
        ))
        .into()),
        Err(SaveError::NotFound(_)) => {
            Err(AppError::not_found(format!("there is no journal entry {id}")).into())
        }
        Err(SaveError::Db(e)) => Err(AppError::from(e).into()),
    }
}

/// The entry as the API shows it.
async fn detail(state: &AppState, id: i64) -> Result<EntryDetail, AppError> {
    let e = journal::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))?;
    let estimates = match e.investigation_id {
        Some(i) => match crate::investigations::load(&state.pool, i).await? {
            Some(loaded) => loaded
                .expected
                .iter()
                .map(|(s, x)| ExpectedJson::new(x, loaded.observed_unit(*s)))
                .collect(),
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    let artifacts = crate::investigations::db::artifacts(&state.pool, e.investigation_id, Some(id))
        .await?
        .into_iter()
        .map(|a| ArtifactJson {
            url: format!("/artifacts/{}", a.id),
            id: a.id,
            name: a.name,
            kind: a.kind,
            status: a.status,
        })
        .collect();
    let entry = e.entry.clone();
    Ok(EntryDetail {
        artifacts,
        summary: EntrySummary::new(&e),
        markdown: entry.to_markdown(&e.title),
        workload: entry.workload,
        baseline: entry.baseline,
        diagnosis: entry.diagnosis,
        change: entry.change,
        result: entry.result,
        quality: entry.quality,
        effort: entry.effort,
        author: e.author.clone(),
        version: e.version,
        published: e.is_published(),
        investigation: e.investigation_id.map(|i| EntryLink {
            id: i,
            url: format!("/investigations/{i}"),
        }),
        estimates,
    })
}
