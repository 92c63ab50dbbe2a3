//! `/api/v1/journal`: published entries for scripts, exports and search tools.

use crate::extract::{Paging, Path};
use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::investigations::{EntryLink, ExpectedJson};
use crate::auth::ApiUser;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::investigations::journal::{self, StoredEntry};
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
    params(super::PageParams),
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
    Ok(Json(EntryDetail {
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
    }))
}
