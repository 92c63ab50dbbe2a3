//! Journal pages: published entries newest first, one entry with its investigation and
//! estimates, writing an entry directly, and editing with optimistic concurrency (a
//! save from an older version gets 409 and a page showing what changed since).

use crate::extract::{Pager, Paging, Path};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use serde::Deserialize;

use super::investigations::ExpectedView;
use super::{render, FormErrors, PageCtx};
use crate::auth::{CurrentUser, Role};
use crate::core::method::journal::{estimates_markdown, EstimateRow};
use crate::core::method::JournalEntry;
use crate::core::FieldError;
use crate::error::{AppError, Result};
use crate::investigations::db::ArtifactLink;
use crate::investigations::journal::{self, Revision, SaveError, StoredEntry};
use crate::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/journal", get(list_entries).post(create_entry))
        .route("/journal/new", get(new_entry))
        .route("/journal/{id}", get(show_entry).post(save_entry))
        .route("/journal/{id}/edit", get(edit_entry))
        .route("/journal/{id}/markdown", get(entry_markdown))
}

#[derive(Template)]
#[template(path = "journal/list.html")]
struct ListPage {
    ctx: PageCtx,
    entries: Vec<StoredEntry>,
    pager: Pager,
    drafts: Vec<StoredEntry>,
    drafts_total: i64,
}

async fn list_entries(
    State(state): State<AppState>,
    ctx: PageCtx,
    paging: Paging,
) -> Result<Response> {
    let mut entries = journal::published_page(&state.pool, paging.after, paging.fetch()).await?;
    let next = paging.finish(&mut entries, |e| e.id);
    let (drafts, drafts_total) = journal::recent_drafts(&state.pool, 20).await?;
    let page = ListPage {
        entries,
        pager: paging.pager(next),
        drafts,
        drafts_total,
        ctx,
    };
    Ok(render(&page)?.into_response())
}

#[derive(Template)]
#[template(path = "journal/show.html")]
struct ShowPage {
    ctx: PageCtx,
    entry: StoredEntry,
    sections: Vec<(&'static str, String)>,
    expected: Vec<ExpectedView>,
    artifacts: Vec<ArtifactLink>,
    /// The investigation's incident window and the telemetry read over windows.
    win: Option<crate::investigations::window::IncidentWindow>,
    win_telemetry: Vec<crate::investigations::window::WindowTelemetry>,
}

async fn load_entry(state: &AppState, id: i64) -> Result<StoredEntry> {
    journal::get(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))
}

fn sections(e: &JournalEntry) -> Vec<(&'static str, String)> {
    vec![
        ("SYMPTOM", e.symptom.clone()),
        ("WORKLOAD", e.workload.clone()),
        ("BASELINE", e.baseline.clone()),
        ("DIAGNOSIS", e.diagnosis.clone()),
        ("CHANGE", e.change.clone()),
        ("RESULT", e.result.clone()),
        ("QUALITY", e.quality.clone()),
        ("EFFORT", e.effort.clone()),
    ]
}

async fn show_entry(
    State(state): State<AppState>,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    let (entry, artifacts) = journal::with_artifacts(&state.pool, id)
        .await?
        .ok_or_else(|| AppError::not_found(format!("there is no journal entry {id}")))?;
    let expected = expected_of(&state, entry.investigation_id).await?;
    let (win, win_telemetry) = match entry.investigation_id {
        Some(i) => {
            use crate::investigations::window;
            (
                window::get(&state.pool, i).await?,
                window::telemetry(&state.pool, i).await?,
            )
        }
        None => (None, Vec::new()),
    };
    let page = ShowPage {
        ctx,
        win,
        win_telemetry,
        artifacts,
        sections: sections(&entry.entry),
        entry,
        expected,
    };
    Ok(render(&page)?.into_response())
}

/// The estimates of the entry's investigation, as its page and its Markdown show them.
async fn expected_of(state: &AppState, investigation: Option<i64>) -> Result<Vec<ExpectedView>> {
    let Some(i) = investigation else {
        return Ok(Vec::new());
    };
    Ok(match crate::investigations::load(&state.pool, i).await? {
        Some(loaded) => loaded
            .expected
            .iter()
            .map(|(s, e)| ExpectedView::new(*s, e, loaded.observed_unit(*s)))
            .collect(),
        None => Vec::new(),
    })
}

/// The entry as Markdown: its sections, then the table of estimates its page shows
/// (skipped when the file is imported again).
async fn entry_markdown(State(state): State<AppState>, Path(id): Path<i64>) -> Result<Response> {
    let entry = load_entry(&state, id).await?;
    let rows: Vec<EstimateRow> = expected_of(&state, entry.investigation_id)
        .await?
        .into_iter()
        .map(|x| EstimateRow {
            step: x.step,
            estimate: format!("{} {}", x.estimator, x.result_key),
            expected: x.expected,
            observed: x.observed,
            gap: x
                .ratio
                .or(x.problem.map(|p| format!("not comparable: {p}"))),
        })
        .collect();
    Ok(super::download(
        "text/markdown; charset=utf-8",
        &format!("journal-{id}.md"),
        format!(
            "{}{}",
            entry.entry.to_markdown(&entry.title),
            estimates_markdown(&rows)
        ),
    ))
}

// ---------- writing and editing ----------

#[derive(Deserialize, Default, Clone)]
pub struct EntryForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    date: String,
    #[serde(default)]
    symptom: String,
    #[serde(default)]
    workload: String,
    #[serde(default)]
    baseline: String,
    #[serde(default)]
    diagnosis: String,
    #[serde(default)]
    change: String,
    #[serde(default)]
    result: String,
    #[serde(default)]
    quality: String,
    #[serde(default)]
    effort: String,
    /// The version the editor started from (absent for a new entry).
    #[serde(default)]
    version: Option<i32>,
    /// "publish" publishes; anything else saves (a draft stays a draft).
    #[serde(default)]
    action: String,
}

impl EntryForm {
    fn from_stored(e: &StoredEntry) -> EntryForm {
        let j = e.entry.clone();
        EntryForm {
            title: e.title.clone(),
            date: j.date,
            symptom: j.symptom,
            workload: j.workload,
            baseline: j.baseline,
            diagnosis: j.diagnosis,
            change: j.change,
            result: j.result,
            quality: j.quality,
            effort: j.effort,
            version: Some(e.version),
            action: String::new(),
        }
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

    /// The title and the core's checks of the entry; `published` says the entry being
    /// edited is already published (it stays so, and keeps a published entry's rules).
    fn validate(&self, published: bool) -> std::result::Result<Revision, Vec<FieldError>> {
        let r = self.revision();
        let errors = r.check(published || self.publish());
        if errors.is_empty() {
            Ok(r)
        } else {
            Err(errors)
        }
    }

    fn publish(&self) -> bool {
        self.action == "publish"
    }

    /// (name, label, value, multi-line) for the form, in document order.
    fn fields(&self) -> Vec<(&'static str, &'static str, &str, bool)> {
        vec![
            (
                "symptom",
                "SYMPTOM — metric, percentile, observed vs target",
                &self.symptom,
                true,
            ),
            (
                "workload",
                "WORKLOAD — prompt and output tokens, request rate",
                &self.workload,
                true,
            ),
            (
                "baseline",
                "BASELINE — the key metrics before",
                &self.baseline,
                true,
            ),
            ("diagnosis", "DIAGNOSIS", &self.diagnosis, true),
            (
                "change",
                "CHANGE — the one thing changed",
                &self.change,
                true,
            ),
            ("result", "RESULT — the metrics after", &self.result, true),
            (
                "quality",
                "QUALITY — how output quality was checked",
                &self.quality,
                true,
            ),
            ("effort", "EFFORT", &self.effort, false),
        ]
    }
}

/// A field that differs between the version an editor started from and now.
pub struct Changed {
    pub name: &'static str,
    pub theirs: String,
    pub yours: String,
}

#[derive(Template)]
#[template(path = "journal/edit.html")]
struct EditPage {
    ctx: PageCtx,
    /// None for a new entry.
    entry: Option<StoredEntry>,
    form: EntryForm,
    errors: FormErrors,
    /// Set when a save was refused because someone saved first.
    conflict: Option<Conflict>,
}

pub struct Conflict {
    pub yours: i32,
    pub current: i32,
    pub by: String,
    pub changed: Vec<Changed>,
}

async fn new_entry(me: CurrentUser, ctx: PageCtx) -> Result<Response> {
    me.require(Role::Editor)?;
    let form = EntryForm {
        date: chrono::Utc::now()
            .date_naive()
            .format("%Y-%m-%d")
            .to_string(),
        ..EntryForm::default()
    };
    Ok(render(&EditPage {
        ctx,
        entry: None,
        form,
        errors: FormErrors::default(),
        conflict: None,
    })?
    .into_response())
}

async fn create_entry(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Form(form): Form<EntryForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    match form.validate(false) {
        Ok(revision) => {
            let id = journal::create(&state.pool, me.0.id, None, &revision, form.publish(), None)
                .await?;
            Ok(Redirect::to(&format!("/journal/{id}")).into_response())
        }
        Err(errors) => {
            let page = EditPage {
                ctx,
                entry: None,
                form,
                errors: errors.into(),
                conflict: None,
            };
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

async fn edit_entry(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let entry = load_entry(&state, id).await?;
    Ok(render(&EditPage {
        ctx,
        form: EntryForm::from_stored(&entry),
        entry: Some(entry),
        errors: FormErrors::default(),
        conflict: None,
    })?
    .into_response())
}

async fn save_entry(
    State(state): State<AppState>,
    me: CurrentUser,
    ctx: PageCtx,
    Path(id): Path<i64>,
    Form(form): Form<EntryForm>,
) -> Result<Response> {
    me.require(Role::Editor)?;
    let entry = load_entry(&state, id).await?;
    let Some(base) = form.version else {
        return Err(AppError::field(
            "version",
            "the form lost the version it was editing; reload the entry and edit again",
        ));
    };
    let revision = match form.validate(entry.is_published()) {
        Ok(r) => r,
        Err(errors) => {
            let page = EditPage {
                ctx,
                entry: Some(entry),
                form,
                errors: errors.into(),
                conflict: None,
            };
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response());
        }
    };
    match journal::save(&state.pool, id, me.0.id, base, &revision, form.publish()).await {
        Ok(_) => Ok(Redirect::to(&format!("/journal/{id}")).into_response()),
        Err(SaveError::Stale { yours, current }) => {
            let conflict = conflict(&state, &entry, &revision, yours, current).await?;
            // Keep the person's text, but on the current version: saving again is a
            // deliberate choice made after seeing what changed.
            let form = EntryForm {
                version: Some(current),
                ..form
            };
            let page = EditPage {
                ctx,
                entry: Some(entry),
                form,
                errors: FormErrors::default(),
                conflict: Some(conflict),
            };
            Ok((StatusCode::CONFLICT, render(&page)?).into_response())
        }
        Err(SaveError::NotFound(_)) => Err(AppError::not_found(format!(
            "there is no journal entry {id}"
        ))),
        Err(SaveError::Db(e)) => Err(e.into()),
    }
}

/// What changed between the version the editor started from and the current one.
async fn conflict(
    state: &AppState,
    current: &StoredEntry,
    yours: &Revision,
    base: i32,
    now: i32,
) -> Result<Conflict> {
    let theirs = Revision {
        title: current.title.clone(),
        entry: current.entry.clone(),
    };
    let by = journal::revision(&state.pool, current.id, now)
        .await?
        .map_or_else(|| current.author.clone(), |(_, name, _)| name);
    let before = journal::revision(&state.pool, current.id, base)
        .await?
        .map(|(r, _, _)| r);
    let pairs = |r: &Revision| -> Vec<(&'static str, String)> {
        let mut v = vec![("TITLE", r.title.clone()), ("DATE", r.entry.date.clone())];
        v.extend(sections(&r.entry));
        v
    };
    let theirs_fields = pairs(&theirs);
    let yours_fields = pairs(yours);
    let before_fields = before.as_ref().map(pairs);
    let changed = theirs_fields
        .into_iter()
        .zip(yours_fields)
        .enumerate()
        .filter(|(i, ((_, t), _))| match &before_fields {
            // Changed by the other save: differs from the version you started from.
            Some(b) => b[*i].1 != *t,
            None => true,
        })
        .map(|(_, ((name, t), (_, y)))| Changed {
            name,
            theirs: t,
            yours: y,
        })
        .collect();
    Ok(Conflict {
        yours: base,
        current: now,
        by,
        changed,
    })
}
