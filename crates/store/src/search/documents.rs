//! Building documents. Investigations are evaluated with the method's own code, so
//! the dominant phase, regime and verdict facets are exactly what the pages show.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sqlx::PgPool;

use crate::core::method::Dominance;
use crate::core::method::JournalEntry;
use crate::core::recall::snippet::strip_markers;
use crate::core::recall::Profile;
use crate::investigations::{self, step_summary};

/// Documents rebuilt per transaction.
const BATCH: i64 = 2_000;

/// One row of `search_documents`.
#[derive(Debug, Clone, Serialize)]
struct Document {
    kind: &'static str,
    source_id: i64,
    title: String,
    url: String,
    text_a: String,
    text_b: String,
    text_c: String,
    text_d: String,
    diagnosis: String,
    change: String,
    #[serde(flatten)]
    profile: Profile,
    tags: Vec<String>,
    status: Option<String>,
    author: Option<String>,
    doc_date: NaiveDate,
    investigation_id: Option<i64>,
}

/// A document as stored: the facets' model and GPU are catalog ids, and the names as
/// typed are kept beside them (`model_typed`, `gpu_typed`).
#[derive(Serialize)]
struct Stored<'d> {
    #[serde(flatten)]
    doc: Document,
    model_typed: Option<&'d str>,
    gpu_typed: Option<&'d str>,
}

impl<'d> Stored<'d> {
    fn new(doc: &'d Document) -> Stored<'d> {
        Stored {
            doc: Document {
                profile: doc.profile.clone().with_catalog_ids(),
                ..doc.clone()
            },
            model_typed: doc.profile.model.as_deref(),
            gpu_typed: doc.profile.gpu.as_deref(),
        }
    }
}

fn join(parts: &[&str]) -> String {
    let kept: Vec<&str> = parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    strip_markers(&kept.join("\n"))
}

/// Rebuilds every queued document; returns how many were rebuilt or removed.
pub async fn refresh(pool: &PgPool) -> sqlx::Result<usize> {
    let mut total = 0;
    loop {
        let mut tx = pool.begin().await?;
        // SKIP LOCKED: concurrent searches share the queue instead of waiting.
        let batch: Vec<(String, i64)> = sqlx::query_as(
            "DELETE FROM search_stale WHERE (kind, source_id) IN (SELECT kind, source_id \
             FROM search_stale ORDER BY kind, source_id FOR UPDATE SKIP LOCKED LIMIT $1) \
             RETURNING kind, source_id",
        )
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
        if batch.is_empty() {
            tx.rollback().await?;
            return Ok(total);
        }
        // Taken first: the row lock orders concurrent rebuilds, so generations commit
        // in order and an index that has seen generation G has seen everything before.
        let generation: i64 = sqlx::query_scalar(
            "UPDATE search_state SET generation = generation + 1 RETURNING generation",
        )
        .fetch_one(&mut *tx)
        .await?;
        let ids = |k: &str| -> Vec<i64> {
            batch
                .iter()
                .filter(|(kind, _)| kind == k)
                .map(|(_, id)| *id)
                .collect()
        };
        let mut docs = Vec::new();
        let mut profiles = HashMap::new();
        for id in ids("investigation") {
            if let Some((doc, profile)) = investigation_document(pool, id).await? {
                profiles.insert(id, profile);
                docs.push(doc);
            }
        }
        docs.extend(journal_documents(pool, &ids("journal"), &mut profiles).await?);
        docs.extend(artifact_documents(pool, &ids("artifact")).await?);
        docs.extend(comparison_documents(pool, &ids("comparison")).await?);
        docs.extend(proposal_documents(pool, &ids("proposal")).await?);

        let kinds: Vec<&str> = batch.iter().map(|(k, _)| k.as_str()).collect();
        let sources: Vec<i64> = batch.iter().map(|(_, id)| *id).collect();
        sqlx::query(
            "DELETE FROM search_documents d USING unnest($1::text[], $2::bigint[]) AS g(kind, id) \
             WHERE d.kind = g.kind AND d.source_id = g.id",
        )
        .bind(&kinds)
        .bind(&sources)
        .execute(&mut *tx)
        .await?;
        let stored: Vec<Stored> = docs.iter().map(Stored::new).collect();
        let json = sqlx::types::Json(&stored);
        sqlx::query(
            "INSERT INTO search_documents (kind, source_id, doc, metric, percentile, phase, regime, \
             verdict, model, gpu, engine, engine_version, tags, status, author, doc_date, \
             prompt_tokens, output_tokens, investigation_id, generation, model_typed, gpu_typed, \
             window_shape) \
             SELECT kind, source_id, \
             setweight(to_tsvector('english', title || ' ' || text_a), 'A') || \
             setweight(to_tsvector('english', text_b), 'B') || \
             setweight(to_tsvector('english', text_c), 'C') || \
             setweight(to_tsvector('english', text_d), 'D'), \
             metric, percentile, phase, regime, verdict, model, gpu, engine, engine_version, \
             tags, status, author, doc_date, prompt_tokens, output_tokens, investigation_id, $2, \
             model_typed, gpu_typed, window_shape \
             FROM jsonb_to_recordset($1) AS d(kind text, source_id bigint, title text, \
             text_a text, text_b text, text_c text, text_d text, metric text, percentile text, \
             phase text, regime text, verdict text, model text, gpu text, engine text, \
             engine_version text, tags text[], status text, author text, doc_date date, \
             prompt_tokens float8, output_tokens float8, investigation_id bigint, \
             model_typed text, gpu_typed text, window_shape text)",
        )
        .bind(json)
        .bind(generation)
        .execute(&mut *tx)
        .await?;
        // Keys left without a document are removals the in-memory index must hear of.
        sqlx::query(
            "INSERT INTO search_removed (kind, source_id, generation) \
             SELECT g.kind, g.id, $3 FROM unnest($1::text[], $2::bigint[]) AS g(kind, id) \
             WHERE NOT EXISTS (SELECT 1 FROM search_documents d \
                 WHERE d.kind = g.kind AND d.source_id = g.id) \
             ON CONFLICT (kind, source_id) DO UPDATE SET generation = EXCLUDED.generation",
        )
        .bind(&kinds)
        .bind(&sources)
        .bind(generation)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM search_removed r USING search_documents d \
             WHERE d.kind = r.kind AND d.source_id = r.source_id AND d.generation = $1",
        )
        .bind(generation)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO search_texts (kind, source_id, title, url, text_a, text_b, text_c, \
             text_d, diagnosis, change) \
             SELECT kind, source_id, title, url, text_a, text_b, text_c, text_d, diagnosis, change \
             FROM jsonb_to_recordset($1) AS d(kind text, source_id bigint, title text, url text, \
             text_a text, text_b text, text_c text, text_d text, diagnosis text, change text)",
        )
        .bind(json)
        .execute(&mut *tx)
        .await?;
        let words: BTreeSet<String> = docs
            .iter()
            .flat_map(|d| vocabulary(&[&d.title, &d.text_a, &d.text_b, &d.text_c]))
            .collect();
        let words: Vec<String> = words.into_iter().collect();
        sqlx::query(
            "INSERT INTO search_words (word) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(&words)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        total += batch.len();
    }
}

/// Words worth correcting a query towards: letters (and digits) only, 3–30 long.
fn vocabulary(texts: &[&str]) -> BTreeSet<String> {
    texts
        .iter()
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| (3..=30).contains(&w.chars().count()) && w.chars().any(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect()
}

async fn investigation_document(
    pool: &PgPool,
    id: i64,
) -> sqlx::Result<Option<(Document, Profile)>> {
    let loaded = match investigations::load(pool, id).await {
        Ok(Some(l)) => l,
        Ok(None) => return Ok(None),
        Err(crate::error::Error::Database(e)) => return Err(e),
        Err(e) => {
            tracing::warn!(investigation = id, error = %e, "search document skipped");
            return Ok(None);
        }
    };
    let inv = &loaded.investigation;
    let r = &loaded.records;
    let e = &loaded.evaluation;
    let profile = Profile {
        window_shape: crate::investigations::window::shape_of(pool, id).await?,
        ..Profile::from_records(r, e)
    };
    let symptom_line = e
        .metric
        .as_ref()
        .map(|m| m.symptom_line.clone())
        .unwrap_or_default();
    let dominance = e
        .phases
        .as_ref()
        .map(|p| match &p.dominance {
            Dominance::Phase { share, .. } | Dominance::Step { share, .. } => format!(
                "{} dominates ({:.0}%)",
                p.dominance.name().unwrap_or_default(),
                share * 100.0
            ),
            Dominance::Nothing { reason } => format!("No phase dominates: {reason}"),
        })
        .unwrap_or_default();
    let change = r.change.as_ref();
    let findings = change.map_or("", |c| c.findings.as_str());
    let summaries: Vec<String> = loaded
        .done_steps()
        .into_iter()
        .map(|s| step_summary(s, r, e))
        .collect();
    let config = r.reproduce.as_ref();
    let config_text = config
        .map(|c| {
            [
                &c.engine,
                &c.engine_version,
                &c.model,
                &c.gpu_type,
                &c.prompt_len_dist,
                &c.output_len_dist,
                &c.sampling,
                &c.success_criteria,
            ]
            .iter()
            .filter_map(|v| v.as_deref())
            .collect::<Vec<_>>()
            .join("; ")
        })
        .unwrap_or_default();
    let kernels: Vec<String> = r
        .kernels
        .iter()
        .flat_map(|k| {
            k.kernels
                .iter()
                .map(|row| format!("{} {}", row.name, row.notes))
        })
        .chain(
            r.regime
                .iter()
                .flat_map(|g| g.kernels.iter().map(|k| k.name.clone())),
        )
        .chain(
            r.fixes
                .iter()
                .flat_map(|f| f.candidates.iter().map(|c| c.description.clone())),
        )
        .collect();
    let diagnosis = if findings.trim().is_empty() {
        dominance.clone()
    } else {
        findings.trim().to_string()
    };
    let doc = Document {
        kind: "investigation",
        source_id: id,
        title: inv.title.clone(),
        url: format!("/investigations/{id}"),
        text_a: join(&[&inv.symptom, &symptom_line, &dominance, findings]),
        text_b: join(&[
            change.map_or("", |c| c.change.as_str()),
            &profile.verdict.clone().unwrap_or_default(),
        ]),
        text_c: join(&[
            &inv.service,
            &summaries.join("\n"),
            &config_text,
            &kernels.join("\n"),
        ]),
        text_d: join(&[
            config.map_or("", |c| c.notes.as_str()),
            change.map_or("", |c| c.quality.as_str()),
            change.map_or("", |c| c.effort.as_str()),
        ]),
        diagnosis: one_line(&diagnosis),
        change: one_line(change.map_or("", |c| c.change.as_str())),
        profile: profile.clone(),
        tags: inv.tags.clone(),
        status: Some(inv.status.clone()),
        author: Some(inv.owner.clone()),
        doc_date: inv.created_at.date_naive(),
        investigation_id: Some(id),
    };
    Ok(Some((doc, profile)))
}

#[derive(sqlx::FromRow)]
struct JournalRow {
    id: i64,
    investigation_id: Option<i64>,
    title: String,
    entry_date: NaiveDate,
    symptom: String,
    workload: String,
    baseline: String,
    diagnosis: String,
    change: String,
    result: String,
    quality: String,
    effort: String,
    published_at: Option<DateTime<Utc>>,
    author: String,
    tags: Option<Vec<String>>,
}

async fn journal_documents(
    pool: &PgPool,
    ids: &[i64],
    profiles: &mut HashMap<i64, Profile>,
) -> sqlx::Result<Vec<Document>> {
    let rows: Vec<JournalRow> = rows_by_ids(
        pool,
        "SELECT j.id, j.investigation_id, j.title, j.entry_date, j.symptom, j.workload, \
         j.baseline, j.diagnosis, j.change, j.result, j.quality, j.effort, j.published_at, \
         u.name AS author, i.tags FROM journal_entries j JOIN users u ON u.id = j.author_id \
         LEFT JOIN investigations i ON i.id = j.investigation_id WHERE j.id = ANY($1)",
        ids,
    )
    .await?;
    let mut docs = Vec::with_capacity(rows.len());
    for j in rows {
        let entry = JournalEntry {
            date: j.entry_date.to_string(),
            symptom: j.symptom,
            workload: j.workload,
            baseline: j.baseline,
            diagnosis: j.diagnosis,
            change: j.change,
            result: j.result,
            quality: j.quality,
            effort: j.effort,
        };
        let own = Profile::from_entry(&entry);
        // The steps are better evidence than the prose; the prose fills the gaps.
        let profile = match j.investigation_id {
            Some(inv) => {
                if let std::collections::hash_map::Entry::Vacant(slot) = profiles.entry(inv) {
                    if let Some((_, p)) = investigation_document(pool, inv).await? {
                        slot.insert(p);
                    }
                }
                match profiles.get(&inv) {
                    Some(p) => p.clone().or(own),
                    None => own,
                }
            }
            None => own,
        };
        docs.push(Document {
            kind: "journal",
            source_id: j.id,
            url: format!("/journal/{}", j.id),
            text_a: join(&[&entry.symptom, &entry.diagnosis]),
            text_b: join(&[&entry.change, &entry.result]),
            text_c: join(&[&entry.workload, &entry.baseline]),
            text_d: join(&[&entry.quality, &entry.effort]),
            diagnosis: one_line(&entry.diagnosis),
            change: one_line(&entry.change),
            title: strip_markers(&j.title),
            profile,
            tags: j.tags.unwrap_or_default(),
            status: Some(
                if j.published_at.is_some() {
                    "published"
                } else {
                    "draft"
                }
                .into(),
            ),
            author: Some(j.author),
            doc_date: j.entry_date,
            investigation_id: j.investigation_id,
        });
    }
    Ok(docs)
}

#[derive(sqlx::FromRow)]
struct ArtifactRow {
    id: i64,
    name: String,
    kind: String,
    investigation_id: Option<i64>,
    created_at: DateTime<Utc>,
    author: Option<String>,
}

async fn artifact_documents(pool: &PgPool, ids: &[i64]) -> sqlx::Result<Vec<Document>> {
    let rows: Vec<ArtifactRow> = rows_by_ids(
        pool,
        "SELECT a.id, a.name, a.kind, a.investigation_id, a.created_at, u.name AS author \
         FROM artifacts a LEFT JOIN users u ON u.id = a.uploaded_by WHERE a.id = ANY($1)",
        ids,
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|a| Document {
            kind: "artifact",
            source_id: a.id,
            url: format!("/artifacts/{}", a.id),
            // File names split on punctuation, so "vllm_bench-h100.json" finds "h100".
            text_a: join(&[&a.name, &a.name.replace(['_', '-', '.', '/'], " ")]),
            text_b: String::new(),
            text_c: a.kind.replace('_', " "),
            text_d: String::new(),
            diagnosis: String::new(),
            change: String::new(),
            title: strip_markers(&a.name),
            profile: Profile::default(),
            tags: Vec::new(),
            status: None,
            author: a.author,
            doc_date: a.created_at.date_naive(),
            investigation_id: a.investigation_id,
        })
        .collect())
}

#[derive(sqlx::FromRow)]
struct ComparisonRow {
    id: i64,
    investigation_id: Option<i64>,
    variable: String,
    metric: String,
    percentile: String,
    verdict: String,
    baseline_config: Option<sqlx::types::Json<crate::core::method::FrozenConfig>>,
    author: Option<String>,
    created_at: DateTime<Utc>,
}

async fn comparison_documents(pool: &PgPool, ids: &[i64]) -> sqlx::Result<Vec<Document>> {
    let rows: Vec<ComparisonRow> = rows_by_ids(
        pool,
        "SELECT c.id, c.investigation_id, c.variable, c.metric, c.percentile, c.verdict, \
         c.baseline_config, u.name AS author, c.created_at FROM comparisons c \
         LEFT JOIN users u ON u.id = c.created_by WHERE c.id = ANY($1)",
        ids,
    )
    .await?;
    let mut docs = Vec::with_capacity(rows.len());
    for c in rows {
        // The report's own sentence (verdict, before/after, checks) is the text to find.
        let result = match crate::comparisons::get(pool, c.id).await? {
            Some(full) => full.journal_result(),
            None => continue,
        };
        let config = c.baseline_config.as_ref().map(|j| &j.0);
        let clean = |v: Option<&Option<String>>| {
            v.and_then(|v| v.as_deref())
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty())
        };
        docs.push(Document {
            kind: "comparison",
            source_id: c.id,
            title: strip_markers(&format!("Comparison: {}", c.variable)),
            url: format!("/comparisons/{}", c.id),
            text_a: join(&[&c.variable]),
            text_b: join(&[&result]),
            text_c: String::new(),
            text_d: String::new(),
            diagnosis: String::new(),
            change: one_line(&c.variable),
            profile: Profile {
                metric: series_metric(&c.metric),
                percentile: Some(c.percentile),
                verdict: Some(c.verdict),
                model: clean(config.map(|c| &c.model)),
                gpu: clean(config.map(|c| &c.gpu_type)),
                engine: clean(config.map(|c| &c.engine)),
                engine_version: clean(config.map(|c| &c.engine_version)),
                ..Profile::default()
            },
            tags: Vec::new(),
            status: None,
            author: c.author,
            doc_date: c.created_at.date_naive(),
            investigation_id: c.investigation_id,
        });
    }
    Ok(docs)
}

async fn proposal_documents(pool: &PgPool, ids: &[i64]) -> sqlx::Result<Vec<Document>> {
    let mut docs = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(p) = crate::proposals::get(pool, *id).await? {
            docs.push(proposal_document(&p));
        }
    }
    Ok(docs)
}

/// A proposal: found by its title, question and deployment; its facets are the model,
/// GPU and engine it sizes, and the SLO that bounded its batch as the metric (so it
/// shows among "seen before" for that symptom).
fn proposal_document(p: &crate::proposals::Proposal) -> Document {
    let i = &p.input;
    let s = &p.sizing;
    let metric = match s.limited_by.as_str() {
        "itl_slo" => "itl",
        "ttft_slo" => "ttft",
        "e2e_slo" => "e2e",
        _ => "throughput",
    };
    let sizing = format!(
        "{} replicas of {} × {} ({} {}), ${}/h, {} tokens/s per replica",
        s.replicas_needed,
        i.gpus_per_replica,
        i.gpu_type,
        i.engine,
        i.engine_version,
        (s.cost_per_hour_usd * 100.0).round() / 100.0,
        s.tokens_per_s_per_replica.round()
    );
    Document {
        kind: "proposal",
        source_id: p.id,
        title: strip_markers(&format!("Proposal: {}", p.title)),
        url: format!("/proposals/{}", p.id),
        text_a: join(&[&p.title, &i.question]),
        text_b: join(&[&sizing]),
        text_c: join(&[
            &i.model_name(),
            &i.gpu_type,
            &i.engine,
            &i.weight_dtype,
            &i.kv_dtype,
        ]),
        text_d: String::new(),
        diagnosis: one_line(&i.question),
        change: one_line(&sizing),
        profile: Profile {
            metric: Some(metric.to_string()),
            model: Some(i.model_name().to_lowercase()),
            gpu: Some(i.gpu_type.clone()),
            engine: Some(i.engine.clone()),
            engine_version: Some(i.engine_version.to_lowercase()),
            prompt_tokens: Some(i.prompt_tokens_mean as f64),
            output_tokens: Some(i.output_tokens_mean as f64),
            ..Profile::default()
        },
        tags: vec!["proposal".to_string()],
        status: Some(p.state.slug().to_string()),
        author: Some(p.owner.clone()),
        doc_date: p.updated_at.date_naive(),
        investigation_id: None,
    }
}

/// A comparison's latency series ("ttft_ms", "e2el_ms") as the metric facet knows it;
/// phase series (prefill_ms, decode_ms) name no metric.
fn series_metric(series: &str) -> Option<String> {
    let name = series.trim_end_matches("_ms").replace("e2el", "e2e");
    crate::core::metric::Metric::from_slug(&name).map(|m| m.slug().to_string())
}

/// Rows of one source table for the queued ids (`$1`), none when there are none.
async fn rows_by_ids<T>(pool: &PgPool, sql: &str, ids: &[i64]) -> sqlx::Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query_as(sql).bind(ids).fetch_all(pool).await
}

/// The first line, at most 200 characters: one line in a list.
pub fn one_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() <= 200 {
        line.to_string()
    } else {
        let cut: String = line.chars().take(199).collect();
        format!("{cut}…")
    }
}
