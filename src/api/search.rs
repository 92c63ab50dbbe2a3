//! `/api/v1/search` and `/api/v1/investigations/{id}/similar`: the search page and the
//! "seen before" list for scripts and chat bots.

use std::collections::BTreeMap;

use crate::extract::Path;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::{ApiUser, Role};
use crate::core::recall::query::PAGE_SIZE;
use crate::error::{ApiResult, AppError, ErrorBody};
use crate::search;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct SearchResult {
    /// journal, investigation, comparison or artifact
    pub kind: String,
    pub id: i64,
    pub title: String,
    /// The page of the result.
    pub url: String,
    /// YYYY-MM-DD
    pub date: String,
    /// HTML: escaped text with `<mark>` around the matched words.
    pub snippet: String,
    /// Full-text rank (title, symptom and diagnosis weigh most); 0 without a query.
    pub score: f32,
    /// In a partial answer (`partial: true`), the query's words this result matches
    /// (a thesaurus phrase such as "time to first token" counts as one word); empty
    /// otherwise.
    pub matched_words: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SynonymsUsed {
    /// The word or phrase as typed.
    pub word: String,
    /// The thesaurus terms searched for it as well.
    pub also: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct FacetValue {
    pub value: String,
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
pub struct SearchResponse {
    /// Ranked, best first; 20 per page.
    pub results: Vec<SearchResult>,
    /// How many documents match in all.
    pub total: i64,
    /// Facet name (kind, metric, phase, regime, verdict, model, gpu, engine, version,
    /// tag, status, author) → values among the matches with their counts.
    pub facets: BTreeMap<String, Vec<FacetValue>>,
    /// Set when the words matched nothing and a corrected spelling was searched.
    pub corrected: Option<String>,
    /// True when no document matches every word: the results are the best partial
    /// matches, ranked by how many of `words` they match (each result's
    /// `matched_words`), then by score.
    pub partial: bool,
    /// The words a partial answer counts (empty when `partial` is false).
    pub words: Vec<String>,
    /// Words the thesaurus widened (`GET /search/synonyms`).
    pub synonyms: Vec<SynonymsUsed>,
    /// Changes saved but not yet indexed (they appear within a second or two).
    pub pending_changes: i64,
    /// The next page of the same search (`null` on the last page).
    pub next: Option<String>,
}

/// Search journal entries, investigations, comparisons and artifacts.
///
/// `q` takes web-search syntax ("quoted phrase", `OR`, `-word`); each facet narrows
/// (`?q=prefill&metric=ttft&gpu=h100-sxm`); `from`/`to` bound the date (YYYY-MM-DD);
/// `sort=newest` orders by date instead of best match; `page` pages. An unknown
/// parameter or value is a 422 naming it.
#[utoipa::path(get, path = "/search", tag = "search",
    params(
        ("q" = Option<String>, Query, description = "words, \"phrases\", OR, -exclusions"),
        ("metric" = Option<String>, Query, description = "ttft, itl, tpot, e2e, throughput, queue_wait, cost_per_million"),
        ("phase" = Option<String>, Query, description = "dominant phase: tokenize, queue_wait, prefill, decode, detokenize, network, nothing"),
        ("from" = Option<String>, Query, description = "YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "YYYY-MM-DD"),
        ("sort" = Option<String>, Query, description = "relevance (default) or newest"),
        ("page" = Option<i64>, Query, description = "1-based", minimum = 1, maximum = 500),
    ),
    responses((status = 200, body = SearchResponse), (status = 422, body = ErrorBody)))]
pub async fn search_documents(
    State(state): State<AppState>,
    _me: ApiUser,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<SearchResponse>> {
    let query = crate::search::parse_query(raw.as_deref())?;
    let (outcome, pending) = state.search.search(&state.pool, &query).await?;
    Ok(Json(SearchResponse {
        results: outcome
            .results
            .iter()
            .map(|h| SearchResult {
                kind: h.kind.clone(),
                id: h.id,
                title: h.title.clone(),
                url: h.url.clone(),
                date: h.date.to_string(),
                snippet: h.snippet_html.clone(),
                score: h.score,
                matched_words: h.matched_words.clone(),
            })
            .collect(),
        total: outcome.total,
        facets: outcome
            .facets
            .iter()
            .map(|(name, values)| {
                (
                    name.to_string(),
                    values
                        .iter()
                        .map(|v| FacetValue {
                            value: v.value.clone(),
                            count: v.count,
                        })
                        .collect(),
                )
            })
            .collect(),
        corrected: outcome.corrected.clone(),
        partial: outcome.partial,
        words: outcome.words.clone(),
        synonyms: outcome
            .synonyms
            .iter()
            .map(|(word, also)| SynonymsUsed {
                word: word.clone(),
                also: also.clone(),
            })
            .collect(),
        pending_changes: pending,
        next: (query.page * PAGE_SIZE < outcome.total && query.page < 500)
            .then(|| format!("/api/v1{}", query.href_page(query.page + 1))),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct SimilarJson {
    /// journal or investigation
    pub kind: String,
    pub id: i64,
    pub title: String,
    pub url: String,
    pub date: String,
    /// One line each.
    pub diagnosis: String,
    pub change: String,
    /// 0–1; see the similarity formula in the documentation.
    pub score: f64,
    /// The parts of the score.
    pub why: String,
}

#[derive(Serialize, ToSchema)]
pub struct SimilarResponse {
    /// False until steps 1 and 2 give the metric and dominant phase.
    pub ready: bool,
    /// Most similar first, at most 5.
    pub similar: Vec<SimilarJson>,
}

/// Past investigations and entries with the same metric and dominant phase, ranked by
/// similarity (metric, phase, regime, model, GPU, engine version, workload, wording).
#[utoipa::path(get, path = "/investigations/{id}/similar", tag = "search",
    params(("id" = i64, Path, description = "investigation id")),
    responses((status = 200, body = SimilarResponse), (status = 404, body = ErrorBody)))]
pub async fn similar_investigations(
    State(state): State<AppState>,
    _me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<Json<SimilarResponse>> {
    let (profile, items) = search::similar_to(&state.pool, "investigation", id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no investigation {id}")))?;
    Ok(Json(SimilarResponse {
        ready: profile.metric.is_some() && profile.phase.is_some(),
        similar: items
            .into_iter()
            .map(|i| SimilarJson {
                kind: i.kind,
                id: i.id,
                title: i.title,
                url: i.url,
                date: i.date.to_string(),
                diagnosis: i.diagnosis,
                change: i.change,
                score: i.score,
                why: i.why,
            })
            .collect(),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct SynonymGroup {
    pub id: i64,
    /// Words and phrases a search treats as one ("ITL", "inter-token latency", "TPOT").
    pub terms: Vec<String>,
    pub updated_at: DateTime<Utc>,
    /// Who last changed the group (`null` for the groups the app ships with).
    pub updated_by: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SynonymList {
    pub items: Vec<SynonymGroup>,
}

/// A group's terms (the body of POST and PUT; read by [`SynonymInput::read`]).
#[derive(Deserialize)]
pub struct SynonymInput {
    /// 2–12 words or phrases (each at most 60 characters, no commas).
    #[serde(default, deserialize_with = "terms")]
    pub terms: Option<Vec<String>>,
}

impl utoipa::PartialSchema for SynonymInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use crate::core::recall::thesaurus::{MAX_TERMS, MAX_TERM_CHARS};
        crate::api::body::schema(serde_json::json!({
            "type": "object",
            "required": ["terms"],
            "properties": {"terms": {
                "type": "array",
                "minItems": 2,
                "maxItems": MAX_TERMS,
                "uniqueItems": true,
                "description": "2–12 words or phrases, each with a letter or digit, at most \
                    60 characters, no commas, none repeated (ignoring case)",
                "items": {"type": "string", "maxLength": MAX_TERM_CHARS,
                    "pattern": "^[^,]*[^\\W_][^,]*$"}
            }}
        }))
    }
}

impl ToSchema for SynonymInput {}

fn terms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    crate::api::body::strings(d, "a list of strings (words or phrases)").map(Some)
}

impl SynonymInput {
    /// The body's `terms`; anything but a list of strings is a 422 naming `terms`.
    fn read(body: &[u8]) -> Result<Vec<String>, AppError> {
        let input: SynonymInput = crate::api::body::parse(body, "{terms}")?;
        input
            .terms
            .ok_or_else(|| AppError::field("terms", "a list of words or phrases is required"))
    }
}

fn group_json(g: search::thesaurus::Group) -> SynonymGroup {
    SynonymGroup {
        id: g.id,
        terms: g.terms,
        updated_at: g.updated_at,
        updated_by: g.updated_by,
    }
}

async fn group(state: &AppState, id: i64) -> Result<SynonymGroup, AppError> {
    search::thesaurus::list(&state.pool)
        .await?
        .into_iter()
        .find(|g| g.id == id)
        .map(group_json)
        .ok_or_else(|| AppError::not_found(format!("there is no synonym group {id}")))
}

/// The search thesaurus: groups of words and phrases a search treats as the same
/// ("ITL" also searches "inter-token latency" and "TPOT"). Anyone signed in may read it.
#[utoipa::path(get, path = "/search/synonyms", tag = "search",
    responses((status = 200, body = SynonymList)))]
pub async fn list_synonyms(
    State(state): State<AppState>,
    _me: ApiUser,
) -> ApiResult<Json<SynonymList>> {
    let items = search::thesaurus::list(&state.pool)
        .await?
        .into_iter()
        .map(group_json)
        .collect();
    Ok(Json(SynonymList { items }))
}

/// Adds a group to the thesaurus (admins). The next search uses it.
#[utoipa::path(post, path = "/search/synonyms", tag = "search",
    request_body(content = SynonymInput, description = "{\"terms\": [\"preemption\", \"swapped out\"]}"),
    responses(
        (status = 201, body = SynonymGroup),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn create_synonyms(
    State(state): State<AppState>,
    me: ApiUser,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<SynonymGroup>)> {
    me.require(Role::Admin)?;
    let terms = SynonymInput::read(&body)?;
    let id = search::thesaurus::create(&state.pool, &terms, me.0.id).await?;
    Ok((StatusCode::CREATED, Json(group(&state, id).await?)))
}

/// Replaces a group's terms (admins).
#[utoipa::path(put, path = "/search/synonyms/{id}", tag = "search",
    params(("id" = i64, Path, description = "group id")),
    request_body(content = SynonymInput, description = "{\"terms\": [\"OOM\", \"out of memory\", \"CUDA out of memory\"]}"),
    responses(
        (status = 200, body = SynonymGroup),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn put_synonyms(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Json<SynonymGroup>> {
    me.require(Role::Admin)?;
    let terms = SynonymInput::read(&body)?;
    if !search::thesaurus::update(&state.pool, id, &terms, me.0.id).await? {
        return Err(AppError::not_found(format!("there is no synonym group {id}")).into());
    }
    Ok(Json(group(&state, id).await?))
}

/// Removes a group from the thesaurus (admins).
#[utoipa::path(delete, path = "/search/synonyms/{id}", tag = "search",
    params(("id" = i64, Path, description = "group id")),
    responses(
        (status = 204),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn delete_synonyms(
    State(state): State<AppState>,
    me: ApiUser,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    me.require(Role::Admin)?;
    if !search::thesaurus::delete(&state.pool, id).await? {
        return Err(AppError::not_found(format!("there is no synonym group {id}")).into());
    }
    Ok(StatusCode::NO_CONTENT)
}
