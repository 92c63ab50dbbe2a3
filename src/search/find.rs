//! The search itself: PostgreSQL reads the words (web-search syntax, stemming), the
//! in-memory index ([`crate::core::memory::index`]) matches, ranks and counts facets,
//! PostgreSQL cuts highlighted snippets for the page shown, and a trigram-corrected
//! second try runs when the words match nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use chrono::NaiveDate;
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::{PgPool, Postgres, QueryBuilder};

use crate::core::memory::index::{Answer, DocInput, Index, IndexBuilder, Request};
use crate::core::memory::query::{SearchQuery, PAGE_SIZE};
use crate::core::memory::snippet::{self, START, STOP};
use crate::core::memory::tsquery;

/// One result, its snippet already safe HTML (escaped text, `<mark>` around matches).
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub kind: String,
    pub id: i64,
    pub title: String,
    pub url: String,
    pub date: NaiveDate,
    pub score: f32,
    #[serde(rename = "snippet")]
    pub snippet_html: String,
}

/// A facet value and how many results have it.
#[derive(Debug, Clone, Serialize)]
pub struct FacetCount {
    pub value: String,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchOutcome {
    pub results: Vec<Hit>,
    pub total: i64,
    /// Facet name → values with counts, largest first (at most 12 per facet).
    pub facets: Vec<(&'static str, Vec<FacetCount>)>,
    /// The query actually run when the words as typed matched nothing.
    pub corrected: Option<String>,
}

/// Which state of the documents: the instance's epoch (a random number each database
/// gets once, so a restored backup of another instance is never mistaken for this one)
/// and the generation every rebuild advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Stamp {
    pub epoch: i64,
    pub generation: i64,
}

/// The in-memory index and the generation of the documents it holds. One per app
/// (it lives in the app state); it catches up with the database before each search.
pub struct Searcher {
    index: Arc<RwLock<Index>>,
    /// The state the index reflects; `None` before the first load.
    synced: Mutex<Option<Stamp>>,
    loading: tokio::sync::Mutex<()>,
    /// Answers by query, each with the generation it was computed at: a search page
    /// asked again before anything changes is answered without searching.
    answers: Mutex<HashMap<String, (Stamp, Arc<SearchOutcome>)>>,
    /// Wakes the background indexer when a search sees queued changes.
    wake: tokio::sync::Notify,
}

const CACHED_ANSWERS: usize = 1024;

impl Default for Searcher {
    fn default() -> Self {
        Searcher {
            index: Arc::new(RwLock::new(Index::new())),
            synced: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
            answers: Mutex::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
        }
    }
}

/// The documents' current state and how many changes still wait to be indexed. Reads
/// only: queued documents are rebuilt by the background indexer ([`Searcher::run_indexer`]),
/// never on a request's path.
pub(crate) async fn current_state(pool: &PgPool) -> sqlx::Result<(Stamp, i64)> {
    let (epoch, generation, pending): (i64, i64, i64) = sqlx::query_as(
        "SELECT epoch, generation, (SELECT count(*) FROM search_stale) FROM search_state",
    )
    .fetch_one(pool)
    .await?;
    Ok((Stamp { epoch, generation }, pending))
}

/// Documents loaded per step of a full load.
const LOAD_CHUNK: usize = 5_000;

type DocRow = (
    String,
    i64,
    Vec<u8>,
    NaiveDate,
    [Option<String>; 10],
    Vec<String>,
);

const DOC_COLUMNS: &str = "kind, source_id, tsvectorsend(doc), doc_date, \
     ARRAY[metric, phase, regime, verdict, model, gpu, engine, engine_version, status, author], tags";

fn doc_input(row: DocRow) -> DocInput {
    let (kind, source_id, vector, date, values, tags) = row;
    let [metric, phase, regime, verdict, model, gpu, engine, version, status, author] = values;
    DocInput {
        kind,
        source_id,
        date,
        // In FACETS order; the kind goes in by itself and tags are a list.
        facets: [
            None, metric, phase, regime, verdict, model, gpu, engine, version, None, status, author,
        ],
        tags,
        vector,
    }
}

fn index_error(e: String) -> sqlx::Error {
    sqlx::Error::Decode(format!("search index: {e}").into())
}

impl Searcher {
    pub fn new() -> Searcher {
        Searcher::default()
    }

    /// Documents the index holds, and the bytes it holds them in.
    pub fn size(&self) -> (usize, usize) {
        self.index
            .read()
            .map(|i| (i.len(), i.heap_bytes()))
            .unwrap_or((0, 0))
    }

    /// Rebuilds queued documents and loads the index; returns its size (at start-up).
    pub async fn warm(&self, pool: &PgPool) -> sqlx::Result<(usize, usize)> {
        super::refresh(pool).await?;
        self.prepare(pool, "").await?;
        Ok(self.size())
    }

    /// The background indexer: rebuilds queued documents when a search saw some (woken at
    /// once) and at least every second (changes made through another replica), then loads
    /// them into the index. Runs until the task is dropped.
    pub async fn run_indexer(self: Arc<Self>, pool: PgPool) {
        loop {
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            }
            match self.catch_up(&pool).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(documents = n, "search index caught up"),
                Err(e) => tracing::warn!("search index catch-up: {e}"),
            }
        }
    }

    /// Rebuilds every queued document and loads the result; returns how many were rebuilt.
    /// With nothing queued (the usual tick) it is one read and no transaction.
    pub async fn catch_up(&self, pool: &PgPool) -> sqlx::Result<usize> {
        let (mut stamp, pending) = current_state(pool).await?;
        let mut n = 0;
        if pending > 0 {
            n = super::refresh(pool).await?;
            stamp = current_state(pool).await?.0;
        }
        self.sync(pool, stamp).await?;
        Ok(n)
    }

    /// Loads what changed since the index's generation: everything on the first call
    /// (or when the database went back in time, as after a restore), else only the
    /// documents rebuilt or removed since.
    pub async fn sync(&self, pool: &PgPool, seen: Stamp) -> sqlx::Result<()> {
        let synced = || *self.synced.lock().expect("search stamp lock");
        if synced() == Some(seen) {
            return Ok(());
        }
        let _one_at_a_time = self.loading.lock().await;
        let mut tx = pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        // Read again inside the snapshot: `seen` may be older than what another search
        // loaded meanwhile, which is not the database going back in time.
        let now: Stamp = sqlx::query_as("SELECT epoch, generation FROM search_state")
            .fetch_one(&mut *tx)
            .await?;
        let have = synced();
        if have == Some(now) {
            return tx.commit().await;
        }
        // Everything, the first time or when the documents are not a later state of
        // the ones held (another instance's backup, or an older one restored).
        let full = match have {
            Some(have) => have.epoch != now.epoch || now.generation < have.generation,
            None => true,
        };
        let since = match have {
            Some(have) if !full => have.generation,
            _ => -1,
        };
        let sql = format!("SELECT {DOC_COLUMNS} FROM search_documents WHERE generation > $1");
        if full {
            // Built aside, chunk by chunk, and swapped in whole.
            let mut fresh = IndexBuilder::default();
            let mut rows = sqlx::query_as::<_, DocRow>(&sql)
                .bind(since)
                .fetch(&mut *tx);
            let mut chunk = Vec::with_capacity(LOAD_CHUNK);
            loop {
                let row = rows.try_next().await?;
                let done = row.is_none();
                chunk.extend(row.map(doc_input));
                if chunk.len() == LOAD_CHUNK || (done && !chunk.is_empty()) {
                    let docs = std::mem::replace(&mut chunk, Vec::with_capacity(LOAD_CHUNK));
                    fresh = tokio::task::spawn_blocking(move || fresh.add(docs).map(|()| fresh))
                        .await
                        .map_err(|e| index_error(e.to_string()))?
                        .map_err(index_error)?;
                }
                if done {
                    break;
                }
            }
            drop(rows);
            tx.commit().await?;
            let fresh = tokio::task::spawn_blocking(move || fresh.finish())
                .await
                .map_err(|e| index_error(e.to_string()))?;
            *self.index.write().expect("search index lock") = fresh;
        } else {
            let docs: Vec<DocRow> = sqlx::query_as(&sql).bind(since).fetch_all(&mut *tx).await?;
            let removed: Vec<(String, i64)> =
                sqlx::query_as("SELECT kind, source_id FROM search_removed WHERE generation > $1")
                    .bind(since)
                    .fetch_all(&mut *tx)
                    .await?;
            tx.commit().await?;
            let docs: Vec<DocInput> = docs.into_iter().map(doc_input).collect();
            let index = self.index.clone();
            tokio::task::spawn_blocking(move || {
                index
                    .write()
                    .expect("search index lock")
                    .apply(docs, &removed)
            })
            .await
            .map_err(|e| index_error(e.to_string()))?
            .map_err(index_error)?;
        }
        *self.synced.lock().expect("search stamp lock") = Some(now);
        Ok(())
    }

    /// One round trip for the documents' state, how many changes wait to be indexed, and
    /// PostgreSQL's reading of the words (stemmed, stop words dropped; `None` without
    /// words); the index is brought up to what is built. Queued changes wake the indexer
    /// and are reported, never rebuilt here: a search only reads.
    async fn prepare(&self, pool: &PgPool, q: &str) -> sqlx::Result<(Stamp, i64, Option<String>)> {
        let (epoch, generation, pending, tsquery): (i64, i64, i64, Option<String>) =
            sqlx::query_as(
                "SELECT epoch, generation, (SELECT count(*) FROM search_stale), \
                 CASE WHEN $1 = '' THEN NULL ELSE websearch_to_tsquery('english', $1)::text END \
                 FROM search_state",
            )
            .bind(q)
            .fetch_one(pool)
            .await?;
        if pending > 0 {
            self.wake.notify_one();
        }
        let stamp = Stamp { epoch, generation };
        self.sync(pool, stamp).await?;
        Ok((stamp, pending, tsquery))
    }

    /// The search, answered from the cache when nothing changed since the same query
    /// was last answered, with how many changes are still being indexed.
    pub async fn search(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
    ) -> sqlx::Result<(Arc<SearchOutcome>, i64)> {
        let (stamp, pending, tsquery) = self.prepare(pool, &query.q).await?;
        let key = serde_json::to_string(query).unwrap_or_default();
        let cached = self.answers.lock().ok().and_then(|a| a.get(&key).cloned());
        if let Some((at, answer)) = cached {
            if at == stamp {
                return Ok((answer, pending));
            }
        }
        let answer = Arc::new(self.answer(pool, query, tsquery).await?);
        if let Ok(mut answers) = self.answers.lock() {
            if answers.len() >= CACHED_ANSWERS {
                answers.clear();
            }
            answers.insert(key, (stamp, answer.clone()));
        }
        Ok((answer, pending))
    }

    /// The search without the cache (the search benchmark measures this; built only
    /// with the `bench` feature, which that benchmark requires).
    #[cfg(feature = "bench")]
    pub async fn search_uncached(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
    ) -> sqlx::Result<SearchOutcome> {
        let (_, _, tsquery) = self.prepare(pool, &query.q).await?;
        self.answer(pool, query, tsquery).await
    }

    /// The words as typed, then, when they match nothing, once more with misspelt
    /// words corrected.
    async fn answer(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
        tsquery: Option<String>,
    ) -> sqlx::Result<SearchOutcome> {
        let outcome = self.run(pool, query, tsquery).await?;
        if outcome.total == 0 && !query.q.is_empty() {
            if let Some(corrected) = correct(pool, &query.q).await? {
                let retry = SearchQuery {
                    q: corrected.clone(),
                    ..query.clone()
                };
                let (_, _, tsquery) = self.prepare(pool, &retry.q).await?;
                let mut outcome = self.run(pool, &retry, tsquery).await?;
                outcome.corrected = Some(corrected);
                return Ok(outcome);
            }
        }
        Ok(outcome)
    }

    async fn run(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
        tsquery: Option<String>,
    ) -> sqlx::Result<SearchOutcome> {
        let node = match tsquery.as_deref() {
            Some(text) => tsquery::parse(text).map_err(index_error)?,
            None => None,
        };
        let answer = {
            let index = self.index.read().expect("search index lock");
            index.search(&Request {
                text: node.as_ref(),
                empty_text: tsquery.is_some() && node.is_none(),
                filters: &query.filters,
                from: query.from,
                to: query.to,
                newest: query.newest,
                offset: ((query.page - 1) * PAGE_SIZE) as usize,
                limit: PAGE_SIZE as usize,
            })
        };
        let results = page_texts(pool, query, &answer).await?;
        let facets = answer
            .facets
            .into_iter()
            .map(|(name, values)| {
                let values = values
                    .into_iter()
                    .map(|(value, count)| FacetCount { value, count })
                    .collect();
                (name, values)
            })
            .collect();
        Ok(SearchOutcome {
            results,
            total: answer.total,
            facets,
            corrected: None,
        })
    }
}

/// Titles, links and highlighted snippets for the page shown (ts_headline, the costly
/// part, runs on these 20 only).
async fn page_texts(pool: &PgPool, query: &SearchQuery, answer: &Answer) -> sqlx::Result<Vec<Hit>> {
    if answer.page.is_empty() {
        return Ok(Vec::new());
    }
    let kinds: Vec<&str> = answer.page.iter().map(|p| p.kind.as_str()).collect();
    let ids: Vec<i64> = answer.page.iter().map(|p| p.source_id).collect();
    let mut qb = QueryBuilder::<Postgres>::new("SELECT x.kind, x.source_id, x.title, x.url, ");
    if query.q.is_empty() {
        qb.push("left(x.text_a, 240)");
    } else {
        qb.push(
            "ts_headline('english', concat_ws(' · ', nullif(x.text_a, ''), nullif(x.text_b, ''), \
             nullif(x.text_c, ''), nullif(x.text_d, '')), websearch_to_tsquery('english', ",
        )
        .push_bind(query.q.clone())
        .push("), ")
        .push_bind(format!(
            "StartSel={START}, StopSel={STOP}, MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=\" … \""
        ))
        .push(")");
    }
    qb.push(" FROM unnest(")
        .push_bind(kinds)
        .push("::text[], ")
        .push_bind(ids)
        .push(
            "::bigint[]) WITH ORDINALITY AS p(kind, source_id, ord) \
             JOIN search_texts x USING (kind, source_id) ORDER BY p.ord",
        );
    let texts: Vec<(String, i64, String, String, String)> =
        qb.build_query_as().fetch_all(pool).await?;
    // In page order; a document removed since the index loaded has no texts and is
    // simply not shown.
    Ok(texts
        .into_iter()
        .filter_map(|(kind, id, title, url, snippet)| {
            let found = answer
                .page
                .iter()
                .find(|f| f.kind == kind && f.source_id == id)?;
            Some(Hit {
                score: found.score,
                date: found.date,
                snippet_html: snippet::to_html(&snippet),
                kind,
                id,
                title,
                url,
            })
        })
        .collect())
}

/// The query with each unknown word replaced by the closest word the documents use
/// (trigram similarity ≥ 0.3); `None` when nothing would change.
async fn correct(pool: &PgPool, q: &str) -> sqlx::Result<Option<String>> {
    let words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && *w != "OR")
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Ok(None);
    }
    let pairs: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT w.input, (SELECT s.word FROM search_words s WHERE s.word % w.input \
         ORDER BY s.word <-> w.input, s.word LIMIT 1) FROM unnest($1::text[]) AS w(input)",
    )
    .bind(&words)
    .fetch_all(pool)
    .await?;
    let fixes: HashMap<String, String> = pairs
        .into_iter()
        .filter_map(|(input, best)| best.filter(|b| *b != input).map(|b| (input, b)))
        .collect();
    if fixes.is_empty() {
        return Ok(None);
    }
    // Rebuild the text token by token, so quotes, OR and minus signs stay where they were.
    let mut out = String::with_capacity(q.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            match fixes.get(&word.to_lowercase()) {
                Some(fix) => out.push_str(fix),
                None => out.push_str(word),
            }
            word.clear();
        }
    };
    for c in q.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    Ok(Some(out))
}
