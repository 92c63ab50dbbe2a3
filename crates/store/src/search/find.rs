//! The search itself: PostgreSQL reads the words (web-search syntax, stemming; each
//! plain word once, then remembered), the in-memory index ([`crate::core::recall::index`])
//! matches, ranks and counts facets, one statement brings the shown page's texts with the
//! index's state, highlighted snippets are cut here for plain words (by PostgreSQL's
//! `ts_headline` for the rest), and a trigram-corrected second try runs when the words
//! match nothing.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use chrono::NaiveDate;
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::PgPool;

use crate::core::recall::index::{self, Answer, DocInput, Index, IndexBuilder, Request};
use crate::core::recall::query::{SearchQuery, PAGE_SIZE};
use crate::core::recall::snippet::{self, START, STOP};
use crate::core::recall::thesaurus::{self, Part, Thesaurus};
use crate::core::recall::tsquery;
use crate::core::recall::vocabulary;

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
    /// In a partial answer, the query's words (or phrases) this result matches.
    pub matched_words: Vec<String>,
}

/// A facet value and how many results have it.
#[derive(Debug, Clone, Serialize)]
pub struct FacetCount {
    pub value: String,
    pub count: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SearchOutcome {
    pub results: Vec<Hit>,
    pub total: i64,
    /// Facet name → values with counts, largest first (at most 12 per facet).
    pub facets: Vec<(&'static str, Vec<FacetCount>)>,
    /// The query actually run when the words as typed matched nothing.
    pub corrected: Option<String>,
    /// True when no document matched every word and these are the best partial
    /// matches, ranked by how many of the query's words they match.
    pub partial: bool,
    /// The query's words (a thesaurus phrase counts as one), as a partial answer counts
    /// them; empty otherwise.
    pub words: Vec<String>,
    /// Query words the thesaurus widened: (the word as typed, the other terms searched).
    pub synonyms: Vec<(String, Vec<String>)>,
}

/// How a query's words are searched: all of them, or the best partial matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    All,
    Partial,
}

/// PostgreSQL's reading of a query: the tsquery text and, for a query of plain words,
/// each word as typed with whether it was kept (stop words are not).
#[derive(Debug, Clone)]
struct Reading {
    text: String,
    typed: Option<Vec<(String, bool)>>,
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
/// (it lives in the app state); a search that finds the database ahead of it loads the change.
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
    /// Single words as PostgreSQL reads them (`websearch_to_tsquery`), at most
    /// [`WORD_READINGS`]: the readings depend only on the text search configuration.
    readings: Mutex<HashMap<String, String>>,
    /// Words the documents use (`search_words`), as the spelling correction found them;
    /// at most [`WORD_READINGS`], forgotten when the index reloads whole (a restore).
    known_words: Mutex<HashSet<String>>,
    /// Documents rebuilt since the queue was last vacuumed.
    since_vacuum: AtomicUsize,
    /// The thesaurus (`search_synonyms`), read again whenever the index loads a change
    /// (a thesaurus edit advances the generation).
    thesaurus: RwLock<Arc<Thesaurus>>,
}

const CACHED_ANSWERS: usize = 1024;
/// Documents rebuilt after which a catch-up that finds the queue empty vacuums it.
const VACUUM_AFTER: usize = 1_000;
/// Word readings remembered (a few MB at most; emptied when full).
const WORD_READINGS: usize = 50_000;

impl Default for Searcher {
    fn default() -> Self {
        Searcher {
            index: Arc::new(RwLock::new(Index::new())),
            synced: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
            answers: Mutex::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
            readings: Mutex::new(HashMap::new()),
            known_words: Mutex::new(HashSet::new()),
            since_vacuum: AtomicUsize::new(0),
            thesaurus: RwLock::new(Arc::new(Thesaurus::default())),
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
        let (stamp, _) = current_state(pool).await?;
        self.sync(pool, stamp).await?;
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
            self.since_vacuum.fetch_add(n, Ordering::Relaxed);
        } else if self.since_vacuum.load(Ordering::Relaxed) >= VACUUM_AFTER {
            // A burst of changes is over. Every search counts the queue, and its dead
            // rows would slow each count until autovacuum came by (or for good where it
            // is off).
            self.since_vacuum.store(0, Ordering::Relaxed);
            if let Err(e) = sqlx::raw_sql("VACUUM (SKIP_LOCKED) search_stale")
                .execute(pool)
                .await
            {
                tracing::warn!("vacuuming the search queue: {e}");
            }
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
        let synonyms: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT s.id, t.term, phraseto_tsquery('english', t.term)::text \
             FROM search_synonyms s CROSS JOIN LATERAL unnest(s.terms) WITH ORDINALITY AS t(term, n) \
             ORDER BY s.id, t.n",
        )
        .fetch_all(&mut *tx)
        .await?;
        let fresh_thesaurus = Arc::new(Thesaurus::new(synonyms));
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
            // Another database, or this one restored: its words may be fewer.
            if let Ok(mut known) = self.known_words.lock() {
                known.clear();
            }
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
            *self.thesaurus.write().expect("thesaurus lock") = fresh_thesaurus;
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
            *self.thesaurus.write().expect("thesaurus lock") = fresh_thesaurus;
        }
        *self.synced.lock().expect("search stamp lock") = Some(now);
        Ok(())
    }

    /// The documents' state and how many changes wait to be indexed; queued changes wake
    /// the background indexer (a search only reads, it never rebuilds).
    async fn state(&self, pool: &PgPool) -> sqlx::Result<(Stamp, i64)> {
        let (stamp, pending) = current_state(pool).await?;
        if pending > 0 {
            self.wake.notify_one();
        }
        Ok((stamp, pending))
    }

    /// PostgreSQL's reading of the words (web-search syntax, stemming, stop words
    /// dropped); `None` without words. A query of plain words is read word by word and each
    /// word's reading is remembered (see [`tsquery::plain_words`]), so a new combination of
    /// known words costs no round trip; any other query is read whole.
    pub async fn reading(&self, pool: &PgPool, q: &str) -> sqlx::Result<Option<String>> {
        Ok(self.read_query(pool, q).await?.map(|r| r.text))
    }

    /// [`Searcher::reading`] with, for a query of plain words, which words were kept.
    async fn read_query(&self, pool: &PgPool, q: &str) -> sqlx::Result<Option<Reading>> {
        if q.is_empty() {
            return Ok(None);
        }
        if let Some(words) = tsquery::plain_words(q) {
            let known = self.readings_of(pool, words.clone(), usize::MAX).await?;
            let readings: Option<Vec<&str>> = words
                .iter()
                .map(|w| known.get(w).map(String::as_str))
                .collect();
            if let Some(readings) = readings {
                if let Some(text) = tsquery::join_readings(readings.iter().copied()) {
                    let typed = q
                        .split_whitespace()
                        .zip(&readings)
                        .map(|(w, r)| (w.to_string(), !r.is_empty()))
                        .collect();
                    return Ok(Some(Reading {
                        text,
                        typed: Some(typed),
                    }));
                }
            }
        }
        let (text,): (String,) = sqlx::query_as("SELECT websearch_to_tsquery('english', $1)::text")
            .bind(q)
            .fetch_one(pool)
            .await?;
        Ok(Some(Reading { text, typed: None }))
    }

    /// The search, answered from the cache when nothing changed since the same query
    /// was last answered, with how many changes are still being indexed.
    pub async fn search(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
    ) -> sqlx::Result<(Arc<SearchOutcome>, i64)> {
        let key = serde_json::to_string(query).unwrap_or_default();
        let cached = self.answers.lock().ok().and_then(|a| a.get(&key).cloned());
        if let Some((at, answer)) = cached {
            let (stamp, pending) = self.state(pool).await?;
            if at == stamp {
                return Ok((answer, pending));
            }
        }
        let (answer, fresh, pending) = self.answer(pool, query).await?;
        let answer = Arc::new(answer);
        if let (Some(stamp), Ok(mut answers)) = (fresh, self.answers.lock()) {
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
        Ok(self.answer(pool, query).await?.0)
    }

    /// The words as typed, then, when they match nothing, once more with misspelt
    /// words corrected; with the state the answer is true of (see [`Searcher::run`]).
    async fn answer(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
    ) -> sqlx::Result<(SearchOutcome, Option<Stamp>, i64)> {
        let reading = self.read_query(pool, &query.q).await?;
        let first = self.run(pool, query, reading.clone(), Mode::All).await?;
        if first.0.total > 0 || query.q.is_empty() {
            return Ok(first);
        }
        // Nothing has every word: the spelling corrected, then the best partial matches
        // (of the corrected words when there was a correction).
        let thesaurus = self.thesaurus();
        let (mut best, mut query_now, mut reading_now) = (first, query.clone(), reading);
        if let Some(corrected) = correct(pool, &self.known_words, &thesaurus, &query.q).await? {
            let retry = SearchQuery {
                q: corrected.clone(),
                ..query.clone()
            };
            let reading = self.read_query(pool, &retry.q).await?;
            let (mut outcome, fresh, pending) =
                self.run(pool, &retry, reading.clone(), Mode::All).await?;
            outcome.corrected = Some(corrected);
            if outcome.total > 0 {
                return Ok((outcome, fresh, pending));
            }
            (best, query_now, reading_now) = ((outcome, fresh, pending), retry, reading);
        }
        let (mut partial, fresh, pending) = self
            .run(pool, &query_now, reading_now, Mode::Partial)
            .await?;
        if partial.total > 0 {
            partial.corrected = best.0.corrected.clone();
            return Ok((partial, fresh, pending));
        }
        Ok(best)
    }

    fn thesaurus(&self) -> Arc<Thesaurus> {
        self.thesaurus
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Searches the index as it is, then reads the page's texts together with the
    /// documents' state in one round trip. When the state has moved past what the index
    /// held (a change made here or on another replica), the index loads the change and
    /// the search runs again, so an answer always reflects the state it reports (after
    /// three tries under a stream of changes, the last answer is returned and reported as
    /// not fresh: `None`, so it is not cached).
    async fn run(
        &self,
        pool: &PgPool,
        query: &SearchQuery,
        reading: Option<Reading>,
        mode: Mode,
    ) -> sqlx::Result<(SearchOutcome, Option<Stamp>, i64)> {
        let typed_node = match reading.as_ref() {
            Some(r) => tsquery::parse(&r.text).map_err(index_error)?,
            None => None,
        };
        let typed = reading.as_ref().and_then(|r| r.typed.as_deref());
        // Plain words joined by `&` are highlighted here; anything else by PostgreSQL.
        let plain = typed_node
            .as_ref()
            .and_then(tsquery::conjunction_terms)
            .is_some();
        let mut tries = 0;
        loop {
            tries += 1;
            let (answer, held, parts) = {
                let index = self.index.read().expect("search index lock");
                // Read under the index's lock: `sync` stores the stamp after swapping
                // the index, so the stamp read here is never newer than the index.
                let held = *self.synced.lock().expect("search stamp lock");
                // The thesaurus is the one loaded with that state.
                let parts = match &typed_node {
                    Some(node) => self.thesaurus().parts(node, typed),
                    None => Vec::new(),
                };
                let (required, counted): (Vec<&Part>, Vec<&Part>) =
                    parts.iter().partition(|p| p.negated);
                let partial = mode == Mode::Partial
                    && counted.len() >= 2
                    && counted.len() <= index::MAX_PARTS;
                if mode == Mode::Partial && !partial {
                    return Ok((SearchOutcome::default(), None, 0));
                }
                let (text, any_of) = if partial {
                    let required = thesaurus::and_all(required.iter().map(|p| p.node.clone()));
                    let any_of = counted.iter().map(|p| p.node.clone()).collect();
                    (required, any_of)
                } else {
                    (
                        thesaurus::and_all(parts.iter().map(|p| p.node.clone())),
                        Vec::new(),
                    )
                };
                let answer = index.search(&Request {
                    text: text.as_ref(),
                    empty_text: reading.is_some() && typed_node.is_none(),
                    filters: &query.filters,
                    from: query.from,
                    to: query.to,
                    newest: query.newest,
                    offset: ((query.page - 1) * PAGE_SIZE) as usize,
                    limit: PAGE_SIZE as usize,
                    any_of: &any_of,
                });
                (answer, held, parts)
            };
            let widened = parts.iter().any(|p| !p.also.is_empty());
            let all = thesaurus::and_all(parts.iter().map(|p| p.node.clone()));
            let terms: Option<Vec<String>> = match &all {
                Some(node) if plain => thesaurus::plain_lexemes(node),
                _ => None,
            };
            let cut_text = match (&terms, &all) {
                (Some(_), _) => None,
                (None, Some(node)) if widened => Some(thesaurus::to_text(node)),
                (None, _) => reading.as_ref().map(|r| r.text.clone()),
            };
            let (texts, stamp, pending) = page_texts(pool, cut_text.as_deref(), &answer).await?;
            if pending > 0 {
                self.wake.notify_one();
            }
            let fresh = held == Some(stamp);
            if fresh || tries == 3 {
                let term_refs: Option<Vec<&str>> = terms
                    .as_ref()
                    .map(|t| t.iter().map(String::as_str).collect());
                let counted: Vec<&Part> = parts.iter().filter(|p| !p.negated).collect();
                let partial = answer.page.iter().any(|f| f.matched != 0);
                let mut results = self
                    .hits(pool, texts, term_refs.as_deref(), &answer)
                    .await?;
                if partial {
                    for hit in &mut results {
                        let matched = answer
                            .page
                            .iter()
                            .find(|f| f.kind == hit.kind && f.source_id == hit.id)
                            .map_or(0, |f| f.matched);
                        hit.matched_words = counted
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| matched & (1 << i) != 0)
                            .map(|(_, p)| p.label.clone())
                            .collect();
                    }
                }
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
                let outcome = SearchOutcome {
                    results,
                    total: answer.total,
                    facets,
                    corrected: None,
                    partial: mode == Mode::Partial,
                    words: match mode {
                        Mode::Partial => counted.iter().map(|p| p.label.clone()).collect(),
                        Mode::All => Vec::new(),
                    },
                    synonyms: parts
                        .iter()
                        .filter(|p| !p.also.is_empty())
                        .map(|p| (p.label.clone(), p.also.clone()))
                        .collect(),
                };
                return Ok((outcome, fresh.then_some(stamp), pending));
            }
            self.sync(pool, stamp).await?;
        }
    }

    /// Each word's reading as PostgreSQL gives it (`websearch_to_tsquery('english', word)`):
    /// the remembered ones, and the rest (at most `new` of them) read in one statement and
    /// remembered. A word left out by `new` has no entry.
    async fn readings_of(
        &self,
        pool: &PgPool,
        mut words: Vec<String>,
        new: usize,
    ) -> sqlx::Result<HashMap<String, String>> {
        words.sort_unstable();
        words.dedup();
        let mut known = HashMap::with_capacity(words.len());
        let mut missing = Vec::new();
        {
            let cache = self.readings.lock().unwrap_or_else(PoisonError::into_inner);
            for word in words {
                match cache.get(&word) {
                    Some(reading) => {
                        known.insert(word, reading.clone());
                    }
                    None => missing.push(word),
                }
            }
        }
        missing.truncate(new);
        if missing.is_empty() {
            return Ok(known);
        }
        let read: Vec<(String, String)> = sqlx::query_as(
            "SELECT w, websearch_to_tsquery('english', w)::text FROM unnest($1::text[]) AS w",
        )
        .bind(&missing)
        .fetch_all(pool)
        .await?;
        let mut cache = self.readings.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() + read.len() > WORD_READINGS {
            cache.clear();
        }
        cache.extend(read.iter().cloned());
        known.extend(read);
        Ok(known)
    }

    /// The page's results in order, each with its snippet: the start of the text when
    /// browsing, a headline cut here for plain words ([`snippet::headline`]: a word
    /// matches when PostgreSQL reads it as one of the query's lexemes), else the one
    /// PostgreSQL cut. Words that could match and were never read are read first, in
    /// one round trip, and remembered.
    async fn hits(
        &self,
        pool: &PgPool,
        texts: Vec<PageText>,
        terms: Option<&[&str]>,
        answer: &Answer,
    ) -> sqlx::Result<Vec<Hit>> {
        let mut readings = HashMap::new();
        if let Some(terms) = terms {
            let mut candidates = Vec::new();
            for text in &texts {
                snippet::each_word(&text.body, |w| candidates.extend(needs_reading(w, terms)));
            }
            readings = self.readings_of(pool, candidates, READ_PER_PAGE).await?;
        }
        let term_of = |terms: &[&str], word: &str| -> Option<usize> {
            if !could_match(word, terms) {
                return None;
            }
            let lower = word.to_lowercase();
            let lexeme = if lower.chars().all(char::is_alphabetic) {
                if lower.len() > tsquery::PLAIN_WORD_MAX {
                    return None;
                }
                let reading = readings.get(&lower)?;
                tsquery::single_lexeme(reading)?
            } else {
                // Letters with digits, or digits: PostgreSQL's `simple` dictionary,
                // which only lowercases.
                lower.as_str()
            };
            terms.iter().position(|t| *t == lexeme)
        };
        Ok(texts
            .into_iter()
            .filter_map(|text| {
                let found = answer
                    .page
                    .iter()
                    .find(|f| f.kind == text.kind && f.source_id == text.source_id)?;
                let cut = match (terms, text.headline) {
                    (_, Some(cut)) => cut,
                    (Some(terms), None) => snippet::headline(
                        &text.body,
                        |w| term_of(terms, w),
                        HEADLINE_WORDS,
                        HEADLINE_FRAGMENTS,
                    ),
                    (None, None) => text.body.chars().take(BROWSE_CHARS).collect(),
                };
                Some(Hit {
                    score: found.score,
                    date: found.date,
                    snippet_html: snippet::to_html(&cut),
                    kind: text.kind,
                    id: text.source_id,
                    title: text.title,
                    url: text.url,
                    matched_words: Vec::new(),
                })
            })
            .collect())
    }
}

/// Words per headline fragment, fragments per headline (as `MaxWords`, `MaxFragments`
/// for `ts_headline`), and characters shown of a result when browsing without words.
const HEADLINE_WORDS: usize = 30;
const HEADLINE_FRAGMENTS: usize = 2;
const BROWSE_CHARS: usize = 240;
/// Words read for one page's headlines at most (the rest are read by later pages).
const READ_PER_PAGE: usize = 5_000;

/// Whether a word could be one of the terms at all: the English stemmer keeps a word's
/// first letter and the `simple` dictionary only lowercases, so a word can only match
/// a term that starts like it (the terms are ASCII). Cheap, and most words stop here.
fn could_match(word: &str, terms: &[&str]) -> bool {
    let first = word.as_bytes().first().map(u8::to_ascii_lowercase);
    terms.iter().any(|t| t.as_bytes().first() == first.as_ref())
}

/// A word of letters only that could be read as one of the terms, lowercased: only
/// those are asked about.
fn needs_reading(word: &str, terms: &[&str]) -> Option<String> {
    let fits = could_match(word, terms)
        && word.len() <= tsquery::PLAIN_WORD_MAX
        && word.chars().all(char::is_alphabetic);
    fits.then(|| word.to_lowercase())
}

/// One result's texts as stored: `body` is the four text classes joined as documents
/// are, `headline` PostgreSQL's cut when it made one.
struct PageText {
    kind: String,
    source_id: i64,
    title: String,
    url: String,
    body: String,
    headline: Option<String>,
}

/// Titles, links and texts of the page shown (with PostgreSQL's headlines when it cuts
/// them: `cut_by_postgres` is the tsquery), the documents' state and how many changes
/// wait to be indexed, in one statement (a page with no results still reads the state).
async fn page_texts(
    pool: &PgPool,
    cut_by_postgres: Option<&str>,
    answer: &Answer,
) -> sqlx::Result<(Vec<PageText>, Stamp, i64)> {
    let kinds: Vec<&str> = answer.page.iter().map(|p| p.kind.as_str()).collect();
    let ids: Vec<i64> = answer.page.iter().map(|p| p.source_id).collect();
    type Row = (
        i64,
        i64,
        i64,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    // ts_headline is strict: without a tsquery it returns NULL without parsing anything.
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT s.epoch, s.generation, (SELECT count(*) FROM search_stale), \
         t.kind, t.source_id, t.title, t.url, t.body, t.headline FROM search_state s \
         LEFT JOIN LATERAL (SELECT p.ord, x.kind, x.source_id, x.title, x.url, b.body, \
         ts_headline('english', b.body, $1::tsquery, $2) AS headline \
         FROM unnest($3::text[], $4::bigint[]) WITH ORDINALITY AS p(kind, source_id, ord) \
         JOIN search_texts x USING (kind, source_id) \
         CROSS JOIN LATERAL (SELECT concat_ws(' · ', nullif(x.text_a, ''), nullif(x.text_b, ''), \
         nullif(x.text_c, ''), nullif(x.text_d, '')) AS body) b) t ON true ORDER BY t.ord",
    )
    .bind(cut_by_postgres)
    .bind(format!(
        "StartSel={START}, StopSel={STOP}, MaxWords={HEADLINE_WORDS}, MinWords=12, \
         MaxFragments={HEADLINE_FRAGMENTS}, FragmentDelimiter=\" … \""
    ))
    .bind(kinds)
    .bind(ids)
    .fetch_all(pool)
    .await?;
    let (epoch, generation, pending) = rows
        .first()
        .map(|r| (r.0, r.1, r.2))
        .ok_or_else(|| index_error("the search state row is missing".into()))?;
    // In page order; a document removed since the index loaded has no texts and is
    // simply not shown.
    let texts = rows
        .into_iter()
        .filter_map(|(_, _, _, kind, source_id, title, url, body, headline)| {
            Some(PageText {
                kind: kind?,
                source_id: source_id?,
                title: title.unwrap_or_default(),
                url: url.unwrap_or_default(),
                body: body.unwrap_or_default(),
                headline,
            })
        })
        .collect();
    Ok((texts, Stamp { epoch, generation }, pending))
}

/// The query with each unknown word replaced by the closest word the documents use
/// (trigram similarity ≥ 0.3); `None` when nothing would change. A word is known when
/// the documents use it, the thesaurus holds it or it is one of the domain's words
/// (`core::recall::vocabulary`). Words found among the
/// documents' words are remembered in `known` (that list only grows), so a query of
/// known words costs no round trip.
async fn correct(
    pool: &PgPool,
    known: &Mutex<HashSet<String>>,
    thesaurus: &Thesaurus,
    q: &str,
) -> sqlx::Result<Option<String>> {
    // Words of the thesaurus and the domain's vocabulary are spelled right: never
    // "corrected" into others, whether or not a document uses them yet.
    let mut words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && *w != "OR")
        .map(str::to_lowercase)
        .filter(|w| !thesaurus.knows_word(w) && !vocabulary::is_domain_word(w))
        .collect();
    if let Ok(known) = known.lock() {
        words.retain(|w| !known.contains(w));
    }
    words.sort_unstable();
    words.dedup();
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
    if let Ok(mut known) = known.lock() {
        if known.len() + pairs.len() > WORD_READINGS {
            known.clear();
        }
        known.extend(
            pairs
                .iter()
                .filter(|(input, best)| best.as_ref() == Some(input))
                .map(|(input, _)| input.clone()),
        );
    }
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
