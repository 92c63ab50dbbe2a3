//! The search page (search-as-you-type with htmx; the URL holds the query and the
//! facets), and the "seen before" / "related" lists other pages load into themselves.

use crate::extract::Path;
use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use axum_htmx::{HxHistoryRestoreRequest, HxRequest};
use perfjournal_store::Error as StoreError;
use serde::Deserialize;

use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::recall::query::{SearchQuery, FACETS, PAGE_SIZE};
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::search::find::Hit;
use crate::search::{self, query_pairs, thesaurus, SimilarItem};
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/search", get(search_page))
        .route("/investigations/{id}/similar", get(seen_before))
        .route("/journal/{id}/related", get(related_entries))
        .route("/admin/thesaurus", get(thesaurus_page).post(add_group))
        .route("/admin/thesaurus/{id}", post(save_group))
        .route("/admin/thesaurus/{id}/remove", post(remove_group))
}

// ---------- the thesaurus (admins) ----------

#[derive(Template)]
#[template(path = "admin/thesaurus.html")]
struct ThesaurusPage {
    ctx: PageCtx,
    groups: Vec<thesaurus::Group>,
    errors: FormErrors,
    /// Which form the errors and `text` belong to: "new" or a group's id.
    editing: String,
    text: String,
}

#[derive(Deserialize)]
pub struct GroupForm {
    #[serde(default)]
    terms: String,
}

impl GroupForm {
    fn terms(&self) -> Vec<String> {
        if self.terms.trim().is_empty() {
            return Vec::new();
        }
        self.terms.split(',').map(str::to_string).collect()
    }
}

async fn render_thesaurus(
    state: &AppState,
    ctx: PageCtx,
    errors: Vec<FieldError>,
    editing: String,
    text: String,
) -> Result<Response> {
    let status = super::form_page::status(&errors);
    let page = ThesaurusPage {
        ctx,
        groups: thesaurus::list(&state.pool).await?,
        errors: errors.into(),
        editing,
        text,
    };
    Ok((status, render(&page)?).into_response())
}

async fn thesaurus_page(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
) -> Result<Response> {
    me.require(Role::Admin)?;
    render_thesaurus(&state, ctx, Vec::new(), String::new(), String::new()).await
}

async fn add_group(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<GroupForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    match thesaurus::create(&state.pool, &form.terms(), me.0.id).await {
        Ok(_) => Ok(Redirect::to("/admin/thesaurus").into_response()),
        Err(StoreError::Invalid(errors)) => {
            render_thesaurus(&state, ctx, errors, "new".into(), form.terms).await
        }
        Err(e) => Err(e.into()),
    }
}

async fn save_group(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<GroupForm>,
) -> Result<Response> {
    me.require(Role::Admin)?;
    match thesaurus::update(&state.pool, id, &form.terms(), me.0.id).await {
        Ok(true) => Ok(Redirect::to("/admin/thesaurus").into_response()),
        Ok(false) => Err(AppError::not_found(format!(
            "there is no synonym group {id}"
        ))),
        Err(StoreError::Invalid(errors)) => {
            render_thesaurus(&state, ctx, errors, id.to_string(), form.terms).await
        }
        Err(e) => Err(e.into()),
    }
}

async fn remove_group(
    State(state): State<AppState>,
    me: CurrentUser,
    Path(id): Path<i64>,
) -> Result<Redirect> {
    me.require(Role::Admin)?;
    if !thesaurus::delete(&state.pool, id).await? {
        return Err(AppError::not_found(format!(
            "there is no synonym group {id}"
        )));
    }
    Ok(Redirect::to("/admin/thesaurus"))
}

pub struct FacetValueView {
    pub value: String,
    pub count: i64,
    pub href: String,
    pub selected: bool,
}

pub struct FacetView {
    pub name: &'static str,
    pub label: &'static str,
    pub values: Vec<FacetValueView>,
}

#[derive(Template)]
#[template(path = "search/page.html")]
struct SearchPage {
    ctx: PageCtx,
    view: ResultsView,
}

#[derive(Template)]
#[template(path = "search/results.html")]
struct ResultsPartial {
    view: ResultsView,
}

/// What the results region shows (the page and the htmx partial share it).
struct ResultsView {
    query: SearchQuery,
    results: Vec<Hit>,
    total: i64,
    facets: Vec<FacetView>,
    corrected: Option<String>,
    /// No result has every word: these are the best partial matches over `words`.
    partial: bool,
    words: Vec<String>,
    /// Words the thesaurus widened, with the other terms searched for each.
    synonyms: Vec<(String, Vec<String>)>,
    /// Changes saved but not yet in the index (the background indexer is on them).
    pending: i64,
    errors: Vec<FieldError>,
    prev: Option<String>,
    next: Option<String>,
}

impl ResultsView {
    /// (facet name, value, link that removes it) for the filters in force.
    fn active(&self) -> Vec<(&'static str, &str, String)> {
        self.query
            .filters
            .iter()
            .map(|(n, v)| (*n, v.as_str(), self.query.href_with(n, None)))
            .collect()
    }

    fn start_date(&self) -> String {
        self.query.from.map(|d| d.to_string()).unwrap_or_default()
    }

    fn end_date(&self) -> String {
        self.query.to.map(|d| d.to_string()).unwrap_or_default()
    }
}

async fn search_page(
    State(state): State<AppState>,
    ctx: PageCtx,
    HxRequest(htmx): HxRequest,
    HxHistoryRestoreRequest(restore): HxHistoryRestoreRequest,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let pairs = query_pairs(raw.as_deref())?;
    let parsed = SearchQuery::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let view = match parsed {
        Ok(query) => {
            let (outcome, pending) = state.search.search(&state.pool, &query).await?;
            let facets = FACETS
                .iter()
                .filter_map(|f| {
                    let (_, values) = outcome.facets.iter().find(|(n, _)| *n == f.name)?;
                    let selected = query.filter(f.name);
                    Some(FacetView {
                        name: f.name,
                        label: f.label,
                        values: values
                            .iter()
                            .map(|v| FacetValueView {
                                href: query.href_with(f.name, Some(&v.value)),
                                selected: selected == Some(v.value.as_str()),
                                value: v.value.clone(),
                                count: v.count,
                            })
                            .collect(),
                    })
                })
                .collect();
            let pages = (outcome.total + PAGE_SIZE - 1) / PAGE_SIZE;
            ResultsView {
                prev: (query.page > 1).then(|| query.href_page(query.page - 1)),
                next: (query.page < pages).then(|| query.href_page(query.page + 1)),
                results: outcome.results.clone(),
                total: outcome.total,
                corrected: outcome.corrected.clone(),
                partial: outcome.partial,
                words: outcome.words.clone(),
                synonyms: outcome.synonyms.clone(),
                pending,
                facets,
                errors: Vec::new(),
                query,
            }
        }
        Err(errors) => ResultsView {
            query: SearchQuery {
                q: pairs
                    .iter()
                    .rev()
                    .find(|(k, _)| k == "q")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                page: 1,
                ..SearchQuery::default()
            },
            results: Vec::new(),
            total: 0,
            facets: Vec::new(),
            corrected: None,
            partial: false,
            words: Vec::new(),
            synonyms: Vec::new(),
            pending: 0,
            errors,
            prev: None,
            next: None,
        },
    };
    let status = if view.errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    // Going back in history, htmx asks for the whole page to put in place of the body.
    let html = if htmx && !restore {
        render(&ResultsPartial { view })?
    } else {
        render(&SearchPage { ctx, view })?
    };
    Ok((status, html).into_response())
}

#[derive(Template)]
#[template(path = "search/similar.html")]
struct SimilarPartial {
    heading: &'static str,
    /// The element id, so a link can point at the list.
    anchor: &'static str,
    /// Why there is no list yet, when there is not.
    not_ready: Option<&'static str>,
    empty: &'static str,
    items: Vec<SimilarItem>,
    /// The subject's incident window shape in words, when it has one.
    shape: Option<String>,
    /// While the subject's last change waits for the indexer: the address to ask again
    /// in a second (the fragment replaces itself), at most [`POLLS`] times.
    poll: Option<String>,
}

/// How often a "seen before" or "related" fragment asks again while the index catches up
/// (it does within about a second of a save).
const POLLS: u32 = 10;

/// How many times the fragment has asked (`?poll=N`, set by the fragment itself; anything
/// unreadable counts as the last time).
fn polls_done(raw: Option<&str>) -> u32 {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw.unwrap_or(""))
        .ok()
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "poll"))
        .map_or(0, |(_, v)| v.parse().unwrap_or(POLLS))
}

/// The next address to poll while the subject is being indexed, if any polls are left.
async fn next_poll(
    state: &AppState,
    kind: &str,
    id: i64,
    path: String,
    done: u32,
) -> Result<Option<String>> {
    let indexing = search::is_indexing(&state.pool, kind, id).await?;
    Ok((indexing && done < POLLS).then(|| format!("{path}?poll={}", done + 1)))
}

async fn seen_before(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let (profile, items) = search::similar_to(&state.pool, "investigation", id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no investigation {id}")))?;
    let not_ready = (profile.metric.is_none() || profile.phase.is_none()).then_some(
        "Once step 1 (the metric) and step 2 (the phases) are recorded, past investigations with the same symptom show here.",
    );
    let poll = next_poll(
        &state,
        "investigation",
        id,
        format!("/investigations/{id}/similar"),
        polls_done(raw.as_deref()),
    )
    .await?;
    let shape = profile
        .window_shape
        .as_deref()
        .map(crate::core::recall::window_shape::describe);
    Ok(render(&SimilarPartial {
        shape,
        heading: "Seen before",
        anchor: "seen-before",
        not_ready,
        empty: "Nothing like it on record: no past investigation or entry shares this metric and dominant phase.",
        items,
        poll,
    })?
    .into_response())
}

async fn related_entries(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let (profile, items) = search::similar_to(&state.pool, "journal", id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))?;
    let not_ready = profile.metric.is_none().then_some(
        "The symptom names no metric the app recognises (TTFT, ITL, TPOT, E2E latency, throughput, queue wait, cost), so there is nothing to compare.",
    );
    let shape = profile
        .window_shape
        .as_deref()
        .map(crate::core::recall::window_shape::describe);
    Ok(render(&SimilarPartial {
        shape,
        heading: "Related",
        anchor: "related",
        not_ready,
        empty: "No other investigation or entry shares this symptom yet.",
        items,
        poll: next_poll(
            &state,
            "journal",
            id,
            format!("/journal/{id}/related"),
            polls_done(raw.as_deref()),
        )
        .await?,
    })?
    .into_response())
}
