//! Investigations and the journal as the pages, the API and the CLI share them: load an
//! investigation with every step evaluated, save a step, record a skip, draft the
//! entry. The computations are the core's; this module stores and fetches.

pub mod db;
pub mod journal;
pub mod seed;
pub mod window;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::auth::User;
use crate::comparisons::{self, NewComparison};
use crate::core::analyze::Analysis;
use crate::core::fmt::{format_number, short_kernel_name};
use crate::core::method::bubbles::with_report;
use crate::core::method::expected::Expected;
use crate::core::method::order::{missing_before, skip_warning, STEPS};
use crate::core::method::record::{
    draft_entry, evaluate, observed_at, parse_step_in, reconcile_result, step_pairs, Evaluation,
    Measured, Records, StepRecord,
};
use crate::core::method::Dominance;
use crate::core::pairs::Pairs;
use crate::core::quantity::Unit;
use crate::error::{Error, Result};
use db::{Investigation, Skip};
use journal::Revision;

/// Who recorded a step, and when.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub by: String,
    pub at: DateTime<Utc>,
    /// The version a save of this step names to say what it started from.
    pub version: i32,
}

/// A step's place on the progress rail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepState {
    Done,
    /// Not recorded, and a later step was opened first; the sentence says why that matters.
    Skipped {
        reason: String,
    },
    NotStarted,
}

impl StepState {
    pub fn slug(&self) -> &'static str {
        match self {
            StepState::Done => "done",
            StepState::Skipped { .. } => "skipped",
            StepState::NotStarted => "not_started",
        }
    }
}

/// An investigation with everything recorded and computed.
pub struct Loaded {
    pub investigation: Investigation,
    pub records: Records,
    pub recorded: [Option<Recorded>; 8],
    pub evaluation: Evaluation,
    pub skips: Vec<Skip>,
    pub expected: Vec<(u8, Expected)>,
    pub journal_id: Option<i64>,
}

impl Loaded {
    pub fn done_steps(&self) -> Vec<u8> {
        self.records.done_steps()
    }

    pub fn states(&self) -> Vec<StepState> {
        let done = self.done_steps();
        (0u8..8)
            .map(|n| {
                if done.contains(&n) {
                    return StepState::Done;
                }
                match self
                    .skips
                    .iter()
                    .find(|s| s.missing.contains(&i16::from(n)))
                {
                    Some(s) => StepState::Skipped {
                        reason: s.reason.clone(),
                    },
                    None => StepState::NotStarted,
                }
            })
            .collect()
    }

    /// The first step not yet done (7 when all are).
    pub fn next_step(&self) -> u8 {
        let done = self.done_steps();
        (0u8..8).find(|s| !done.contains(s)).unwrap_or(7)
    }

    pub fn expected_at(&self, step: u8) -> Option<&Expected> {
        self.expected
            .iter()
            .find(|(s, _)| *s == step)
            .map(|(_, e)| e)
    }

    /// The unit of the value `step` observes, which its expected value must share.
    pub fn observed_unit(&self, step: u8) -> Option<Unit> {
        observed_at(step, &self.records).map(|q| q.unit)
    }

    pub fn url(&self) -> String {
        format!("/investigations/{}", self.investigation.id)
    }
}

/// Step `step` of the method (the page's and the API's path say which), or 404.
pub fn step_number(step: u32) -> Result<u8> {
    u8::try_from(step).ok().filter(|s| *s < 8).ok_or_else(|| {
        Error::not_found(format!(
            "there is no step {step}: steps are numbered 0 to 7"
        ))
    })
}

pub async fn load(pool: &PgPool, id: i64) -> Result<Option<Loaded>> {
    let Some(investigation) = db::get(pool, id).await? else {
        return Ok(None);
    };
    let mut records = Records::default();
    let mut recorded: [Option<Recorded>; 8] = Default::default();
    for row in db::steps(pool, id).await? {
        let step = row.step as u8;
        match StepRecord::from_json(step, row.data) {
            Some(record) => records.set(record),
            // A record a newer version can no longer read is shown as not recorded.
            None => {
                tracing::warn!(investigation = id, step, "unreadable step record");
                continue;
            }
        }
        if let Some(slot) = recorded.get_mut(step as usize) {
            *slot = Some(Recorded {
                by: row.updated_by,
                at: row.updated_at,
                version: row.version,
            });
        }
    }
    let mut evaluation = evaluate(&records);
    if let Some(history) = fleet_history(pool, id, &records).await? {
        evaluation.apply_fleet(history);
    }
    Ok(Some(Loaded {
        investigation,
        evaluation,
        records,
        recorded,
        skips: db::skips(pool, id).await?,
        expected: db::expected(pool, id).await?,
        journal_id: journal::by_investigation(pool, id).await?,
    }))
}

/// This investigation's setup on the team's fleet: the decode steps past investigations
/// of the same setup measured, against what was expected of them. Only looked up when
/// step 4 has a measured decode step to hold against it.
async fn fleet_history(
    pool: &PgPool,
    id: i64,
    records: &Records,
) -> Result<Option<crate::core::method::fleet::FleetHistory>> {
    use crate::core::method::fleet;
    let measured = records.regime.as_ref().is_some_and(|r| r.decode.is_some());
    let Some(key) = records.reproduce.as_ref().and_then(fleet::setup_key) else {
        return Ok(None);
    };
    if !measured {
        return Ok(None);
    }
    let rows = db::fleet_rows(pool, id).await?;
    let mut points = Vec::new();
    for chunk in rows.chunk_by(|a, b| a.investigation_id == b.investigation_id) {
        let mut past = Records::default();
        for row in chunk {
            if let Some(record) = StepRecord::from_json(row.step as u8, row.data.clone()) {
                past.set(record);
            }
        }
        if past.reproduce.as_ref().and_then(fleet::setup_key).as_ref() == Some(&key) {
            points.extend(fleet::points(
                chunk[0].investigation_id,
                &chunk[0].title,
                past.reproduce.as_ref(),
                crate::core::method::record::fleet_measured(&past),
            ));
        }
    }
    Ok(fleet::history(key, points))
}

pub async fn load_or_404(pool: &PgPool, id: i64) -> Result<Loaded> {
    load(pool, id)
        .await?
        .ok_or_else(|| Error::not_found(format!("there is no investigation {id}")))
}

/// A step save refused because someone saved the step after the version it started
/// from: who, and each field that save changed, beside what this save sent.
#[derive(Debug, Clone)]
pub struct StepConflict {
    pub yours: i32,
    pub current: i32,
    pub by: String,
    pub changed: Vec<ChangedField>,
}

/// A field of a step as the other save left it and as this save sent it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChangedField {
    pub name: String,
    pub theirs: String,
    pub yours: String,
}

impl StepConflict {
    /// The 409 as one sentence, for the API.
    pub fn message(&self, step: u8) -> String {
        format!(
            "step {step} was saved by {} since your version {} (it is at version {}); \
             nothing was saved. Send it again with \"version\": {} to replace theirs",
            self.by, self.yours, self.current, self.current
        )
    }
}

/// Where the form and the API name the artifact whose analysis filled a step.
pub const EVIDENCE_FIELD: &str = "evidence_artifact";

/// Parses and stores one step (422 with field errors when the input is wrong), linking
/// `evidence` (an artifact of this investigation whose numbers filled it) in the same
/// transaction. With `base`, the version the editor started from (0: not yet recorded),
/// a save over a newer version is refused with what changed since. The page and the
/// API both save through here.
pub async fn save_step(
    pool: &PgPool,
    loaded: &Loaded,
    user: &User,
    step: u8,
    base: Option<i32>,
    pairs: &Pairs,
    evidence: Option<i64>,
) -> Result<std::result::Result<i32, StepConflict>> {
    let mut record = parse_step_in(step, pairs, &loaded.records).map_err(Error::Invalid)?;
    if let StepRecord::Phases(table) = &mut record {
        mark_row_sources(pool, loaded, table).await?;
    }
    if let Some(artifact) = evidence {
        let attached: Option<i64> =
            sqlx::query_scalar("SELECT id FROM artifacts WHERE id = $1 AND investigation_id = $2")
                .bind(artifact)
                .bind(loaded.investigation.id)
                .fetch_optional(pool)
                .await?;
        if attached.is_none() {
            return Err(Error::field(
                EVIDENCE_FIELD,
                format!(
                    "artifact {artifact} is not attached to investigation {}; attach it, then \
                     save the step with it as evidence",
                    loaded.investigation.id
                ),
            ));
        }
    }
    let mut records = loaded.records.clone();
    let yours = record.to_json();
    match store(
        pool,
        loaded.investigation.id,
        user.id,
        &mut records,
        record,
        base,
        evidence,
    )
    .await?
    {
        db::StepSaved::Saved(version) => Ok(Ok(version)),
        db::StepSaved::Stale { current } => {
            let base = base.unwrap_or_default();
            let conflict =
                step_conflict(pool, loaded.investigation.id, step, base, current, &yours).await?;
            Ok(Err(conflict))
        }
    }
}

/// Checks each phase row's source (an artifact of this investigation, else a 422 on
/// that row) and marks the rows whose numbers differ from what the artifact's analysis
/// gives as edited, so step 2 says truly where each number came from.
async fn mark_row_sources(
    pool: &PgPool,
    loaded: &Loaded,
    table: &mut crate::core::method::PhaseTable,
) -> Result<()> {
    let metric = loaded.records.metric.map(|m| m.metric);
    for row in &mut table.rows {
        let Some(artifact) = row.source else {
            continue;
        };
        let found: Option<(String, Option<serde_json::Value>)> = sqlx::query_as(
            "SELECT kind, analysis FROM artifacts WHERE id = $1 AND investigation_id = $2",
        )
        .bind(artifact)
        .bind(loaded.investigation.id)
        .fetch_optional(pool)
        .await?;
        let Some((kind, analysis)) = found else {
            return Err(Error::field(
                &format!("{}.source", row.phase.slug()),
                format!(
                    "{}: the source, artifact {artifact}, is not attached to investigation {}; \
                     attach it, or leave the source out for numbers typed by hand",
                    row.phase.label(),
                    loaded.investigation.id
                ),
            ));
        };
        let analysis = analysis
            .zip(kind.parse().ok())
            .and_then(|(v, k)| Analysis::read(k, &v));
        row.edited = !analysis
            .is_some_and(|a| crate::core::method::evidence::row_as_filled(row, &a, metric));
    }
    Ok(())
}

/// What changed between version `base` of a step and version `current`, beside `yours`.
async fn step_conflict(
    pool: &PgPool,
    id: i64,
    step: u8,
    base: i32,
    current: i32,
    yours: &serde_json::Value,
) -> Result<StepConflict> {
    let (theirs, by) = db::step_revision(pool, id, step, current)
        .await?
        .unwrap_or((serde_json::Value::Null, "someone".into()));
    let before = match base {
        0 => Some(Pairs::default()),
        v => db::step_revision(pool, id, step, v)
            .await?
            .map(|(data, _)| step_pairs(step, &data)),
    };
    let theirs = step_pairs(step, &theirs);
    let yours = step_pairs(step, yours);
    let mut names: Vec<&str> = theirs.iter().chain(yours.iter()).map(|(k, _)| k).collect();
    names.sort_unstable();
    names.dedup();
    let changed = names
        .into_iter()
        // A field the other save changed (it differs from the version you started
        // from) to something other than what you sent: where the two saves disagree.
        .filter(|name| {
            theirs.get(name) != yours.get(name)
                && before
                    .as_ref()
                    .is_none_or(|b| b.get(name) != theirs.get(name))
        })
        .map(|name| ChangedField {
            name: name.to_string(),
            theirs: theirs.text(name),
            yours: yours.text(name),
        })
        .collect();
    Ok(StepConflict {
        yours: base,
        current,
        by,
        changed,
    })
}

/// Stores a parsed record with its history line; `records` holds what was recorded
/// before and gains the new record (the summary is computed from all of them). `base`
/// as in [`save_step`].
pub async fn store(
    pool: &PgPool,
    investigation: i64,
    user: i64,
    records: &mut Records,
    record: StepRecord,
    base: Option<i32>,
    evidence: Option<i64>,
) -> Result<db::StepSaved> {
    let step = record.step();
    let data = record.to_json();
    // Saving a step ahead of the ones it builds on is what records the skip (opening
    // the page only shows the warning: a GET changes nothing).
    let done = records.done_steps();
    let missing = missing_before(step, &done);
    let skip = skip_warning(step, &done).map(|reason| db::SkipNote {
        missing: &missing,
        reason,
    });
    records.set(record);
    let summary = step_summary(step, records, &evaluate(records));
    Ok(db::save_step(
        pool,
        investigation,
        user,
        step,
        base,
        &data,
        &summary,
        skip,
        evidence,
    )
    .await?)
}

/// Stores a comparison; the investigation it names must exist, its diagnosis may prove the
/// cause, and its step 0 decides whether the runs are of the same setup. Nothing is stored
/// when the input is refused.
pub async fn record_comparison(
    pool: &PgPool,
    mut input: NewComparison,
    user_id: i64,
) -> Result<i64> {
    let mut step0 = None;
    if let Some(inv) = input.investigation {
        let loaded = load(pool, inv).await?.ok_or_else(|| {
            Error::field("investigation", format!("there is no investigation {inv}"))
        })?;
        input.cause_proven = input.cause_proven
            || crate::core::method::comparison::diagnosis_names_change(
                &loaded.records,
                &input.variable,
            );
        step0 = loaded.records.reproduce;
    }
    comparisons::create(pool, input, step0.as_ref(), user_id).await
}

/// The investigation's journal entry: the existing one, or a new draft from the steps.
pub async fn draft_journal(pool: &PgPool, loaded: &Loaded, user: &User) -> Result<i64> {
    if let Some(id) = loaded.journal_id {
        return Ok(id);
    }
    let today = Utc::now().date_naive().format("%Y-%m-%d").to_string();
    let mut entry = draft_entry(&loaded.records, &loaded.evaluation, &today);
    // A measured comparison is the RESULT (with its intervals and a link) unless step 7
    // recorded one: then both are kept, see `reconcile_result`.
    if let Some(c) = comparisons::latest_for_investigation(pool, loaded.investigation.id).await? {
        // Checked against step 0 again: a comparison stored before that check existed
        // (or before step 0 was recorded) is caught here.
        let reasons = loaded
            .records
            .reproduce
            .as_ref()
            .map(|step0| c.setup_reasons(step0))
            .unwrap_or_default();
        let invalid = c.report.0.invalid || !reasons.is_empty();
        let measured_text = if c.report.0.invalid || reasons.is_empty() {
            c.journal_result()
        } else {
            format!(
                "Invalid comparison for this investigation: {} (comparison: {})",
                reasons.join(" "),
                c.url()
            )
        };
        let recorded = loaded.records.change.as_ref().map(|_| {
            let verdict = loaded.evaluation.change.as_ref().and_then(|e| e.verdict);
            (entry.result.as_str(), verdict)
        });
        entry.result = reconcile_result(
            recorded,
            Measured {
                verdict: c.report.0.verdict,
                invalid,
                result: &measured_text,
            },
        );
    }
    // Step 3's bubble attribution adds the method's report fields after the RESULT.
    if let Some(b) = crate::bubbles::latest(pool, loaded.investigation.id).await? {
        entry.result = with_report(&entry.result, &b.result);
    }
    let revision = Revision {
        title: loaded.investigation.title.clone(),
        entry,
    };
    let id = journal::create(
        pool,
        user.id,
        Some(loaded.investigation.id),
        &revision,
        false,
        None,
    )
    .await?;
    Ok(id)
}

/// One history line for a recorded step: what the app concluded from it.
pub fn step_summary(step: u8, records: &Records, e: &Evaluation) -> String {
    let title = STEPS[step as usize].title;
    let detail = match step {
        0 => records.reproduce.as_ref().map(|c| {
            format!(
                "froze the configuration (reproducible: {})",
                c.reproducible.slug().replace('_', " ")
            )
        }),
        1 => e.metric.as_ref().map(|m| m.symptom_line.clone()),
        2 => e.phases.as_ref().map(|p| match &p.dominance {
            Dominance::Phase { share, .. } | Dominance::Step { share, .. } => format!(
                "{} dominates ({:.0}%)",
                p.dominance.name().unwrap_or_default(),
                share * 100.0
            ),
            Dominance::Nothing { .. } => "nothing dominates".into(),
        }),
        3 => e.resources.as_ref().map(|c| c.line()),
        4 => e.regime.as_ref().map(|r| {
            let mut parts: Vec<String> = r
                .kernels
                .iter()
                .map(|k| format!("{} {}", short_kernel_name(&k.name), k.regime.label()))
                .collect();
            if let Some(d) = &r.decode {
                parts.push(match d.band.over_expected {
                    Some(o) => format!(
                        "decode {} at {o:.2}× expected ({:.0}% of its floor)",
                        d.band.band.label(),
                        d.band.ratio * 100.0
                    ),
                    None => format!("decode at {:.0}% of its floor", d.band.ratio * 100.0),
                });
            }
            parts.join("; ")
        }),
        5 => e.kernels.as_ref().and_then(|k| {
            k.first().map(|top| {
                format!(
                    "top kernel {} ({:.0}%)",
                    short_kernel_name(&top.name),
                    top.share * 100.0
                )
            })
        }),
        6 => e.fixes.as_ref().and_then(|f| {
            f.first().map(|best| {
                format!(
                    "best candidate {} (ceiling {}×)",
                    best.candidate.description,
                    format_number(best.ceiling, 2)
                )
            })
        }),
        7 => e.change.as_ref().map(|c| {
            let verdict = c
                .verdict
                .map_or("no verdict".into(), |v| v.label().to_lowercase());
            format!(
                "changed “{}”: {verdict}",
                records.change.as_ref().map_or("", |c| c.change.as_str())
            )
        }),
        _ => None,
    };
    match detail {
        Some(d) if !d.is_empty() => format!("step {step} ({title}): {d}"),
        _ => format!("step {step} ({title})"),
    }
}
