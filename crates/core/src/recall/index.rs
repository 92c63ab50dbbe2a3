//! The search index, in memory: PostgreSQL makes each document's `tsvector` (weighted,
//! stemmed, stop words dropped) and parses each query (`websearch_to_tsquery`); this
//! holds the vectors and answers a query — matching, ranking, facet counts, the page —
//! in a few milliseconds however many documents match. Done row by row in the
//! database, a query matching most of 100,000 documents costs a quarter of a second,
//! because every matched row is read, decompressed, ranked and grouped.
//!
//! Ranking (documented in docs/memory.md) is BM25 over weighted term frequency: a
//! position counts 1.0 in class A (title, symptom, diagnosis), 0.4 in B (change,
//! result), 0.2 in C (workload, baseline, step records), 0.1 in D (notes) — the weights
//! PostgreSQL's `ts_rank` uses — and rare words count more than common ones.

use std::cmp::Ordering;
use std::collections::HashMap;

use chrono::NaiveDate;

use super::query::FACETS;
use super::tsquery::Node;

/// No value for a facet.
const NONE: u32 = u32::MAX;
/// Where `tag` sits in [`FACETS`] (its values are a list, kept apart).
const TAG: usize = 9;
/// A position's weight in tenths, by class D, C, B, A.
const WEIGHT_TENTHS: [u16; 4] = [1, 2, 4, 10];
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Values listed per facet.
pub const FACET_VALUES: usize = 12;

fn position(raw: u16) -> u16 {
    raw & 0x3fff
}

fn class(raw: u16) -> u8 {
    (raw >> 14) as u8
}

/// One document as the database holds it.
#[derive(Debug, Clone)]
pub struct DocInput {
    pub kind: String,
    pub source_id: i64,
    pub date: NaiveDate,
    /// Values by [`FACETS`] position (`kind` included; the `tag` slot is ignored).
    pub facets: [Option<String>; 12],
    pub tags: Vec<String>,
    /// `tsvectorsend(doc)`: lexemes with their raw positions (class in the top two
    /// bits, position below).
    pub vector: Vec<u8>,
}

/// What every search reads for each match, kept in one array by slot so counting
/// and sorting stream through memory.
#[derive(Clone)]
struct Hot {
    source_id: i64,
    date: NaiveDate,
    /// Sum of position weights, for length normalisation.
    length: f32,
    facets: [u32; 12],
    tags: Box<[u32]>,
}

/// What phrase checks and updates read.
struct Doc {
    /// Term ids, ascending.
    terms: Box<[u32]>,
    /// For each term in order: how many positions, then the positions (PostgreSQL keeps
    /// at most 256 per lexeme).
    positions: Box<[u16]>,
}

impl Doc {
    /// (term, positions) in term order.
    fn groups(&self) -> impl Iterator<Item = (u32, &[u16])> + '_ {
        let mut at = 0;
        self.terms.iter().map(move |&term| {
            let n = self.positions[at] as usize;
            let group = &self.positions[at + 1..at + 1 + n];
            at += 1 + n;
            (term, group)
        })
    }

    fn positions_of(&self, term: u32) -> &[u16] {
        match self.terms.binary_search(&term) {
            Ok(i) => self.groups().nth(i).map_or(&[], |(_, p)| p),
            Err(_) => &[],
        }
    }
}

#[derive(Default)]
struct Postings {
    /// Slots holding the term, ascending.
    slots: Vec<u32>,
    /// Weighted term frequency in tenths, beside each slot.
    tf: Vec<u16>,
}

/// Facet values seen so far, each with a code.
#[derive(Default)]
struct Dictionary {
    values: Vec<String>,
    codes: HashMap<String, u32>,
}

impl Dictionary {
    fn code(&mut self, value: &str) -> u32 {
        if let Some(&c) = self.codes.get(value) {
            return c;
        }
        let c = self.values.len() as u32;
        self.values.push(value.to_string());
        self.codes.insert(value.to_string(), c);
        c
    }
}

/// A result: which document, its score and date.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub kind: String,
    pub source_id: i64,
    pub score: f32,
    pub date: NaiveDate,
    /// In a partial search, which of [`Request::any_of`] it matches (bit i for part i).
    pub matched: u64,
}

/// What a search finds: one page, the number of matches, and facet counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    pub page: Vec<Found>,
    pub total: i64,
    /// Facet name → (value, count), largest first, at most [`FACET_VALUES`]; facets
    /// without values are left out.
    pub facets: Vec<(&'static str, Vec<(String, i64)>)>,
}

/// What to look for: the parsed text (`None` to browse everything), the facet
/// filters, a date range, and which slice of the ranking to return.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub text: Option<&'a Node>,
    /// True when words were typed but PostgreSQL kept none (only stop words): nothing
    /// matches.
    pub empty_text: bool,
    pub filters: &'a [(&'static str, String)],
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Newest first (scores still computed and reported).
    pub newest: bool,
    pub offset: usize,
    pub limit: usize,
    /// Partial matching when not empty (at most [`MAX_PARTS`]): a document matches
    /// when it matches at least one of these parts (and `text`, when given, entirely);
    /// the most parts matched rank first, then the score.
    pub any_of: &'a [Node],
}

/// Parts a partial search counts, at most.
pub const MAX_PARTS: usize = 64;

#[derive(Default)]
pub struct Index {
    docs: Vec<Option<Doc>>,
    hot: Vec<Hot>,
    live: Bits,
    free: Vec<u32>,
    slot_of: HashMap<(u32, i64), u32>,
    lexicon: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    dictionaries: Vec<Dictionary>,
    count: usize,
    total_length: f64,
}

/// Reads `tsvectorsend(doc)`: a count, then per lexeme its text, a zero byte, the
/// number of positions and the positions (big-endian 16-bit), handing each lexeme to `f`.
pub fn read_tsvector(bytes: &[u8], mut f: impl FnMut(&str, &[u16])) -> Result<(), String> {
    fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], String> {
        let out = bytes
            .get(*at..*at + n)
            .ok_or_else(|| format!("tsvector ends early at byte {at}"))?;
        *at += n;
        Ok(out)
    }
    let mut at = 0;
    let count = u32::from_be_bytes(take(bytes, &mut at, 4)?.try_into().unwrap()) as usize;
    let mut positions = Vec::new();
    for _ in 0..count {
        let end = bytes[at..]
            .iter()
            .position(|&b| b == 0)
            .ok_or("a lexeme without its end")?;
        let lexeme = std::str::from_utf8(&bytes[at..at + end])
            .map_err(|e| format!("a lexeme is not UTF-8: {e}"))?;
        at += end + 1;
        let n = u16::from_be_bytes(take(bytes, &mut at, 2)?.try_into().unwrap()) as usize;
        let raw = take(bytes, &mut at, 2 * n)?;
        positions.clear();
        positions.extend(
            raw.chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]])),
        );
        f(lexeme, &positions);
    }
    if at != bytes.len() {
        return Err(format!("{} bytes after the last lexeme", bytes.len() - at));
    }
    Ok(())
}

/// The binary form [`read_tsvector`] reads (tests build documents with it).
#[cfg(test)]
pub fn encode_tsvector(lexemes: &[(&str, Vec<u16>)]) -> Vec<u8> {
    let mut bytes = (lexemes.len() as u32).to_be_bytes().to_vec();
    for (lexeme, positions) in lexemes {
        bytes.extend(lexeme.as_bytes());
        bytes.push(0);
        bytes.extend((positions.len() as u16).to_be_bytes());
        for p in positions {
            bytes.extend(p.to_be_bytes());
        }
    }
    bytes
}

/// A whole index loaded in pieces, its posting lists built once at the end.
pub struct IndexBuilder(Index);

impl Default for IndexBuilder {
    fn default() -> Self {
        IndexBuilder(Index::new())
    }
}

impl IndexBuilder {
    pub fn add(&mut self, docs: Vec<DocInput>) -> Result<(), String> {
        self.0.change(docs, &[], false)
    }

    pub fn finish(mut self) -> Index {
        self.0.repost_all();
        self.0
    }
}

/// A set of slots.
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn empty(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn grow(&mut self, n: usize) {
        self.0.resize(n.div_ceil(64), 0);
    }
    fn set(&mut self, i: u32) {
        self.0[i as usize / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: u32) {
        self.0[i as usize / 64] &= !(1 << (i % 64));
    }
    fn get(&self, i: u32) -> bool {
        self.0[i as usize / 64] & (1 << (i % 64)) != 0
    }
    fn and(mut self, other: &Bits) -> Bits {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= b);
        self
    }
    fn or(mut self, other: &Bits) -> Bits {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
        self
    }
    fn and_not(mut self, other: &Bits) -> Bits {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= !b);
        self
    }
    fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let bit = word.trailing_zeros();
                word &= word - 1;
                Some(w as u32 * 64 + bit)
            })
        })
    }
}

/// Where a phrase part matches in one document: (first, last) positions, or
/// anywhere (a negation that does not occur).
enum Spans {
    Anywhere,
    At(Vec<(u16, u16)>),
}

impl Spans {
    fn is_empty(&self) -> bool {
        matches!(self, Spans::At(v) if v.is_empty())
    }
}

impl Index {
    pub fn new() -> Index {
        Index {
            dictionaries: (0..FACETS.len()).map(|_| Dictionary::default()).collect(),
            ..Index::default()
        }
    }

    /// Bytes the index holds on the heap (capacities, not counting the allocator's own
    /// overhead).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let docs = self.docs.capacity() * size_of::<Option<Doc>>()
            + self
                .docs
                .iter()
                .flatten()
                .map(|d| d.terms.len() * 4 + d.positions.len() * 2)
                .sum::<usize>();
        let hot = self.hot.capacity() * size_of::<Hot>()
            + self.hot.iter().map(|h| h.tags.len() * 4).sum::<usize>();
        let postings = self.postings.capacity() * size_of::<Postings>()
            + self
                .postings
                .iter()
                .map(|p| p.slots.capacity() * 4 + p.tf.capacity() * 2)
                .sum::<usize>();
        let lexicon = self.lexicon.capacity() * (size_of::<Box<str>>() + 4 + 1)
            + self.lexicon.keys().map(|k| k.len()).sum::<usize>();
        let keys = self.slot_of.capacity() * (size_of::<(u32, i64)>() + 4 + 1);
        docs + hot + postings + lexicon + keys + self.live.0.capacity() * 8
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn term_id(&mut self, lexeme: &str) -> u32 {
        if let Some(&id) = self.lexicon.get(lexeme) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.postings.push(Postings::default());
        self.lexicon.insert(lexeme.into(), id);
        id
    }

    fn build(&mut self, input: DocInput) -> Result<((u32, i64), Hot, Doc), String> {
        let kind = self.dictionaries[0].code(&input.kind);
        let mut facets = [NONE; 12];
        for (i, value) in input.facets.iter().enumerate().skip(1) {
            if i != TAG {
                if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
                    facets[i] = self.dictionaries[i].code(v);
                }
            }
        }
        facets[0] = kind;
        let mut tags: Vec<u32> = input
            .tags
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| self.dictionaries[TAG].code(t))
            .collect();
        tags.sort_unstable();
        tags.dedup();
        // (term, where its positions start in `read`, how many), then in term order.
        let mut lexemes: Vec<(u32, usize, usize)> = Vec::new();
        let mut read: Vec<u16> = Vec::new();
        read_tsvector(&input.vector, |l, p| {
            let p = &p[..p.len().min(u16::MAX as usize)];
            lexemes.push((self.term_id(l), read.len(), p.len()));
            read.extend_from_slice(p);
        })
        .map_err(|e| format!("{} {}: {e}", input.kind, input.source_id))?;
        lexemes.sort_by_key(|(id, ..)| *id);
        lexemes.dedup_by_key(|(id, ..)| *id);
        let mut positions = Vec::with_capacity(lexemes.iter().map(|(.., n)| 1 + n).sum());
        let mut length = 0.0f32;
        for &(_, start, n) in &lexemes {
            let p = &read[start..start + n];
            positions.push(n as u16);
            positions.extend_from_slice(p);
            length += tf_tenths(p) as f32 / 10.0;
        }
        let hot = Hot {
            source_id: input.source_id,
            date: input.date,
            length,
            facets,
            tags: tags.into(),
        };
        let doc = Doc {
            terms: lexemes.iter().map(|(id, ..)| *id).collect(),
            positions: positions.into(),
        };
        Ok(((kind, input.source_id), hot, doc))
    }

    /// Takes a document out of its slot; postings are the caller's to fix.
    fn take(&mut self, key: (u32, i64)) -> Option<(u32, Doc)> {
        let slot = self.slot_of.remove(&key)?;
        let doc = self.docs[slot as usize].take()?;
        self.free.push(slot);
        self.count -= 1;
        self.live.clear(slot);
        self.total_length -= self.hot[slot as usize].length as f64;
        Some((slot, doc))
    }

    fn place(&mut self, key: (u32, i64), hot: Hot, doc: Doc) -> u32 {
        self.count += 1;
        self.total_length += hot.length as f64;
        let slot = match self.free.pop() {
            Some(s) => {
                self.hot[s as usize] = hot;
                self.docs[s as usize] = Some(doc);
                s
            }
            None => {
                self.hot.push(hot);
                self.docs.push(Some(doc));
                self.live.grow(self.docs.len());
                self.docs.len() as u32 - 1
            }
        };
        self.live.set(slot);
        self.slot_of.insert(key, slot);
        slot
    }

    fn unpost(&mut self, slot: u32, doc: &Doc) {
        for &term in doc.terms.iter() {
            let p = &mut self.postings[term as usize];
            if let Ok(i) = p.slots.binary_search(&slot) {
                p.slots.remove(i);
                p.tf.remove(i);
            }
        }
    }

    fn post(&mut self, slot: u32) {
        let doc = self.docs[slot as usize]
            .as_ref()
            .expect("a placed document");
        for (term, positions) in doc.groups() {
            let tf = tf_tenths(positions);
            let p = &mut self.postings[term as usize];
            if let Err(at) = p.slots.binary_search(&slot) {
                p.slots.insert(at, slot);
                p.tf.insert(at, tf);
            }
        }
    }

    /// Every posting list again, from the documents (after large changes), each
    /// allocated at its exact length.
    fn repost_all(&mut self) {
        let mut lengths = vec![0u32; self.postings.len()];
        for doc in self.docs.iter().flatten() {
            for &term in doc.terms.iter() {
                lengths[term as usize] += 1;
            }
        }
        for (p, &n) in self.postings.iter_mut().zip(&lengths) {
            *p = Postings {
                slots: Vec::with_capacity(n as usize),
                tf: Vec::with_capacity(n as usize),
            };
        }
        for (slot, doc) in self.docs.iter().enumerate() {
            let Some(doc) = doc else { continue };
            for (term, positions) in doc.groups() {
                let p = &mut self.postings[term as usize];
                p.slots.push(slot as u32);
                p.tf.push(tf_tenths(positions));
            }
        }
    }

    /// Adds documents, replacing any with the same kind and id, and removes the
    /// documents named by `removed`. A vector that cannot be read changes nothing.
    pub fn apply(&mut self, docs: Vec<DocInput>, removed: &[(String, i64)]) -> Result<(), String> {
        // Many changes at once: patch the documents, then rebuild the posting lists
        // in one pass (cheaper than thousands of sorted inserts).
        let bulk = (docs.len() + removed.len()) * 8 > self.count.max(64);
        self.change(docs, removed, !bulk)?;
        if bulk {
            self.repost_all();
        }
        Ok(())
    }

    fn change(
        &mut self,
        docs: Vec<DocInput>,
        removed: &[(String, i64)],
        patch: bool,
    ) -> Result<(), String> {
        let mut built = Vec::with_capacity(docs.len());
        for input in docs {
            built.push(self.build(input)?);
        }
        let bulk = !patch;
        for (kind, id) in removed {
            let Some(&code) = self.dictionaries[0].codes.get(kind) else {
                continue;
            };
            if let Some((slot, doc)) = self.take((code, *id)) {
                if !bulk {
                    self.unpost(slot, &doc);
                }
            }
        }
        for (key, hot, doc) in built {
            if let Some((slot, old)) = self.take(key) {
                if !bulk {
                    self.unpost(slot, &old);
                }
            }
            let slot = self.place(key, hot, doc);
            if !bulk {
                self.post(slot);
            }
        }
        Ok(())
    }

    /// Term ids a query term stands for (every lexeme starting with it, for a prefix).
    fn terms_for(&self, lexeme: &str, prefix: bool) -> Vec<u32> {
        if prefix {
            self.lexicon
                .iter()
                .filter(|(l, _)| l.starts_with(lexeme))
                .map(|(_, &id)| id)
                .collect()
        } else {
            self.lexicon
                .get(lexeme)
                .map(|&id| vec![id])
                .unwrap_or_default()
        }
    }

    fn doc(&self, slot: u32) -> &Doc {
        self.docs[slot as usize].as_ref().expect("a live slot")
    }

    /// The query with each lexeme looked up once.
    fn resolve(&self, node: &Node) -> Q {
        let pair = |a: &Node, b: &Node| (Box::new(self.resolve(a)), Box::new(self.resolve(b)));
        match node {
            Node::Term {
                lexeme,
                prefix,
                weights,
            } => Q::Terms {
                ids: self.terms_for(lexeme, *prefix),
                weights: *weights,
            },
            Node::Not(inner) => Q::Not(Box::new(self.resolve(inner))),
            Node::And(a, b) => {
                let (a, b) = pair(a, b);
                Q::And(a, b)
            }
            Node::Or(a, b) => {
                let (a, b) = pair(a, b);
                Q::Or(a, b)
            }
            Node::Phrase(a, b, d) => {
                let (a, b) = pair(a, b);
                Q::Phrase(a, b, *d)
            }
        }
    }

    /// Documents matching a query (phrases checked position by position).
    fn eval(&self, q: &Q, live: &Bits) -> Bits {
        match q {
            Q::Terms { ids, weights } => {
                let mut bits = Bits::empty(self.docs.len());
                for &term in ids {
                    for &slot in &self.postings[term as usize].slots {
                        if *weights == 0
                            || self
                                .doc(slot)
                                .positions_of(term)
                                .iter()
                                .any(|&p| weights & (1 << class(p)) != 0)
                        {
                            bits.set(slot);
                        }
                    }
                }
                bits
            }
            Q::Not(inner) => live.clone().and_not(&self.eval(inner, live)),
            Q::And(a, b) => self.eval(a, live).and(&self.eval(b, live)),
            Q::Or(a, b) => self.eval(a, live).or(&self.eval(b, live)),
            Q::Phrase(a, b, _) => {
                let mut bits = self.eval(a, live).and(&self.eval(b, live));
                let candidates: Vec<u32> = bits.ones().collect();
                for slot in candidates {
                    if spans(q, self.doc(slot)).is_empty() {
                        bits.clear(slot);
                    }
                }
                bits
            }
        }
    }

    /// Answers a request. Results are ordered by score (skipped when newest first is
    /// asked for), then newest first, then kind and id, so equal scores page stably.
    pub fn search(&self, request: &Request<'_>) -> Answer {
        if !request.any_of.is_empty() {
            return self.search_partial(request);
        }
        let text = request.text.map(|node| self.resolve(node));
        let slots = self.matching_slots(request, text.as_ref());
        let scores = match &text {
            Some(q) => self.bm25_scores(&[q], &slots),
            None => Vec::new(),
        };
        let facets = self.facet_counts(&slots);
        let total = slots.len() as i64;
        Answer {
            page: self.ranked_page(request, slots, &scores, &[]),
            total,
            facets,
        }
    }

    /// The documents matching some of the parts ([`Request::any_of`]), ranked by how
    /// many they match, then by the score over every part's words.
    fn search_partial(&self, request: &Request<'_>) -> Answer {
        let live = &self.live;
        let parts: Vec<Q> = request
            .any_of
            .iter()
            .take(MAX_PARTS)
            .map(|node| self.resolve(node))
            .collect();
        let hits: Vec<Bits> = parts.iter().map(|q| self.eval(q, live)).collect();
        let mut matched = hits
            .iter()
            .fold(Bits::empty(self.docs.len()), |all, b| all.or(b))
            .and(live);
        if let Some(required) = request.text {
            matched = matched.and(&self.eval(&self.resolve(required), live));
        }
        if request.empty_text {
            matched = Bits::empty(self.docs.len());
        }
        let slots = self.filtered(request, matched);
        let mut counts = vec![0u8; self.docs.len()];
        for &slot in &slots {
            counts[slot as usize] = hits.iter().filter(|b| b.get(slot)).count() as u8;
        }
        let scored: Vec<&Q> = parts.iter().collect();
        let scores = self.bm25_scores(&scored, &slots);
        let facets = self.facet_counts(&slots);
        let total = slots.len() as i64;
        let mut page = self.ranked_page(request, slots, &scores, &counts);
        for found in &mut page {
            if let Some(&slot) = self.dictionaries[0]
                .codes
                .get(&found.kind)
                .and_then(|&kind| self.slot_of.get(&(kind, found.source_id)))
            {
                found.matched = hits
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.get(slot))
                    .fold(0u64, |m, (i, _)| m | 1 << i);
            }
        }
        Answer {
            page,
            total,
            facets,
        }
    }

    /// The live documents the text matches that pass every filter (facet values,
    /// dates); a facet value never seen matches nothing.
    fn matching_slots(&self, request: &Request<'_>, text: Option<&Q>) -> Vec<u32> {
        let live = &self.live;
        let matched = match text {
            _ if request.empty_text => Bits::empty(self.docs.len()),
            Some(q) => self.eval(q, live).and(live),
            None => live.clone(),
        };
        self.filtered(request, matched)
    }

    /// The slots of `matched` that pass every filter (facet values, dates).
    fn filtered(&self, request: &Request<'_>, mut matched: Bits) -> Vec<u32> {
        let mut wanted: Vec<(usize, u32)> = Vec::new();
        for (name, value) in request.filters {
            let Some(f) = FACETS.iter().position(|f| f.name == *name) else {
                continue;
            };
            match self.dictionaries[f].codes.get(value.as_str()) {
                Some(&code) => wanted.push((f, code)),
                None => matched = Bits::empty(self.docs.len()),
            }
        }
        let keep = |doc: &Hot| {
            wanted.iter().all(|&(f, code)| {
                if f == TAG {
                    doc.tags.binary_search(&code).is_ok()
                } else {
                    doc.facets[f] == code
                }
            }) && request.from.is_none_or(|d| doc.date >= d)
                && request.to.is_none_or(|d| doc.date <= d)
        };
        matched
            .ones()
            .filter(|&slot| keep(&self.hot[slot as usize]))
            .collect()
    }

    /// BM25 of each matching slot over the weighted term frequency of the terms
    /// searched for (indexed by slot; zero for the rest).
    fn bm25_scores(&self, qs: &[&Q], slots: &[u32]) -> Vec<f32> {
        let mut scores = vec![0f32; self.docs.len()];
        let mut terms = Vec::new();
        for q in qs {
            scoring_terms(q, false, &mut terms);
        }
        let n = self.count.max(1) as f32;
        let average = (self.total_length / self.count.max(1) as f64).max(0.1) as f32;
        let mut matched = Bits::empty(self.docs.len());
        for &slot in slots {
            matched.set(slot);
        }
        for (term, weights) in terms {
            let p = &self.postings[term as usize];
            let df = p.slots.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (&slot, &tf) in p.slots.iter().zip(&p.tf) {
                if !matched.get(slot) {
                    continue;
                }
                let tf = if weights == 0 {
                    tf
                } else {
                    let kept: Vec<u16> = self
                        .doc(slot)
                        .positions_of(term)
                        .iter()
                        .copied()
                        .filter(|&p| weights & (1 << class(p)) != 0)
                        .collect();
                    tf_tenths(&kept)
                } as f32
                    / 10.0;
                let norm = K1 * (1.0 - B + B * self.hot[slot as usize].length / average);
                scores[slot as usize] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }

    /// Facet counts over every match: per facet, its values largest first.
    fn facet_counts(&self, slots: &[u32]) -> Vec<(&'static str, Vec<(String, i64)>)> {
        let mut counts: Vec<Vec<i64>> = self
            .dictionaries
            .iter()
            .map(|d| vec![0; d.values.len()])
            .collect();
        for &slot in slots {
            let doc = &self.hot[slot as usize];
            for (f, &code) in doc.facets.iter().enumerate() {
                if code != NONE {
                    counts[f][code as usize] += 1;
                }
            }
            for &tag in doc.tags.iter() {
                counts[TAG][tag as usize] += 1;
            }
        }
        FACETS
            .iter()
            .enumerate()
            .filter_map(|(f, facet)| {
                let mut values: Vec<(String, i64)> = counts[f]
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(code, &n)| (self.dictionaries[f].values[code].clone(), n))
                    .collect();
                if values.is_empty() {
                    return None;
                }
                values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                values.truncate(FACET_VALUES);
                Some((facet.name, values))
            })
            .collect()
    }

    /// The requested page of the matches in order: a partial sort, only as far as
    /// the page reaches.
    /// `counts` (by slot, empty outside partial searches) goes before everything else.
    fn ranked_page(
        &self,
        request: &Request<'_>,
        slots: Vec<u32>,
        scores: &[f32],
        counts: &[u8],
    ) -> Vec<Found> {
        let kinds = &self.dictionaries[0].values;
        let score = |slot: u32| scores.get(slot as usize).copied().unwrap_or(0.0);
        let count = |slot: u32| counts.get(slot as usize).copied().unwrap_or(0);
        let order = |a: &u32, b: &u32| -> Ordering {
            let (da, db) = (&self.hot[*a as usize], &self.hot[*b as usize]);
            let by_count = count(*b).cmp(&count(*a));
            let by_score = if request.newest {
                Ordering::Equal
            } else {
                score(*b).total_cmp(&score(*a))
            };
            by_count
                .then(by_score)
                .then(db.date.cmp(&da.date))
                .then_with(|| kinds[da.facets[0] as usize].cmp(&kinds[db.facets[0] as usize]))
                .then(db.source_id.cmp(&da.source_id))
        };
        let wanted_len = request.offset + request.limit;
        let mut ranked = slots;
        if wanted_len == 0 {
            ranked.clear();
        } else if ranked.len() > wanted_len {
            ranked.select_nth_unstable_by(wanted_len - 1, order);
            ranked.truncate(wanted_len);
        }
        ranked.sort_by(order);
        ranked
            .into_iter()
            .skip(request.offset)
            .map(|slot| {
                let doc = &self.hot[slot as usize];
                Found {
                    kind: kinds[doc.facets[0] as usize].clone(),
                    source_id: doc.source_id,
                    score: score(slot),
                    date: doc.date,
                    matched: 0,
                }
            })
            .collect()
    }
}

/// A query with its lexemes looked up: each term stands for the term ids it matches
/// (several for a prefix, none for a word no document has).
enum Q {
    Terms { ids: Vec<u32>, weights: u8 },
    Not(Box<Q>),
    And(Box<Q>, Box<Q>),
    Or(Box<Q>, Box<Q>),
    Phrase(Box<Q>, Box<Q>, u16),
}

/// Where a query matches inside one document, for phrase checks.
fn spans(q: &Q, doc: &Doc) -> Spans {
    match q {
        Q::Terms { ids, weights } => {
            let mut at: Vec<(u16, u16)> = ids
                .iter()
                .flat_map(|&t| doc.positions_of(t).iter().copied())
                .filter(|&p| *weights == 0 || weights & (1 << class(p)) != 0)
                .map(|p| (position(p), position(p)))
                .collect();
            if ids.len() > 1 {
                at.sort_unstable();
                at.dedup();
            }
            Spans::At(at)
        }
        Q::Not(inner) => {
            if spans(inner, doc).is_empty() {
                Spans::Anywhere
            } else {
                Spans::At(Vec::new())
            }
        }
        Q::And(a, b) | Q::Or(a, b) => {
            let both = matches!(q, Q::And(..));
            match (spans(a, doc), spans(b, doc)) {
                (Spans::Anywhere, other) | (other, Spans::Anywhere) => other,
                (Spans::At(x), Spans::At(y)) if both && (x.is_empty() || y.is_empty()) => {
                    Spans::At(Vec::new())
                }
                (Spans::At(mut x), Spans::At(y)) => {
                    x.extend(y);
                    x.sort_unstable();
                    x.dedup();
                    Spans::At(x)
                }
            }
        }
        Q::Phrase(a, b, distance) => match (spans(a, doc), spans(b, doc)) {
            (Spans::Anywhere, other) | (other, Spans::Anywhere) => other,
            (Spans::At(left), Spans::At(right)) => {
                let mut at = Vec::new();
                for &(ls, le) in &left {
                    for &(rs, re) in &right {
                        if rs as i32 - le as i32 == *distance as i32 {
                            at.push((ls, re));
                        }
                    }
                }
                at.sort_unstable();
                at.dedup();
                Spans::At(at)
            }
        },
    }
}

/// Terms that count towards the score (those not under a negation), with their
/// weight restriction.
fn scoring_terms(q: &Q, negated: bool, out: &mut Vec<(u32, u8)>) {
    match q {
        Q::Terms { ids, weights } if !negated => out.extend(ids.iter().map(|&t| (t, *weights))),
        Q::Terms { .. } => {}
        Q::Not(inner) => scoring_terms(inner, !negated, out),
        Q::And(a, b) | Q::Or(a, b) | Q::Phrase(a, b, _) => {
            scoring_terms(a, negated, out);
            scoring_terms(b, negated, out);
        }
    }
}

/// Weighted term frequency, in tenths.
fn tf_tenths(positions: &[u16]) -> u16 {
    positions.iter().fold(0u16, |sum, &p| {
        sum.saturating_add(WEIGHT_TENTHS[class(p) as usize])
    })
}

#[cfg(test)]
mod tests {
    use super::super::tsquery::parse;
    use super::*;

    /// A document from words: `("word", "A")` puts it at the next position in class A.
    fn doc(
        kind: &str,
        id: i64,
        day: u32,
        words: &[(&str, char)],
        facets: &[(usize, &str)],
    ) -> DocInput {
        let mut lexemes: Vec<(&str, Vec<u16>)> = Vec::new();
        for (i, (w, c)) in words.iter().enumerate() {
            let class = match c {
                'A' => 3u16,
                'B' => 2,
                'C' => 1,
                _ => 0,
            };
            let raw = (class << 14) | (i as u16 + 1);
            match lexemes.iter_mut().find(|(l, _)| l == w) {
                Some((_, p)) => p.push(raw),
                None => lexemes.push((w, vec![raw])),
            }
        }
        let mut values: [Option<String>; 12] = Default::default();
        for (f, v) in facets {
            values[*f] = Some(v.to_string());
        }
        DocInput {
            kind: kind.into(),
            source_id: id,
            date: NaiveDate::from_ymd_opt(2026, 1, day).unwrap(),
            facets: values,
            tags: Vec::new(),
            vector: encode_tsvector(&lexemes),
        }
    }

    fn ask(index: &Index, q: &str) -> Answer {
        let node = parse(q).unwrap();
        index.search(&Request {
            text: node.as_ref(),
            limit: 20,
            ..Request::default()
        })
    }

    fn ids(a: &Answer) -> Vec<i64> {
        a.page.iter().map(|f| f.source_id).collect()
    }

    fn sample() -> Index {
        let mut index = Index::new();
        index
            .apply(
                vec![
                    doc(
                        "journal",
                        1,
                        1,
                        &[("prefix", 'A'), ("cach", 'A'), ("miss", 'A')],
                        &[(1, "ttft")],
                    ),
                    doc(
                        "journal",
                        2,
                        2,
                        &[("cach", 'D'), ("prefix", 'D')],
                        &[(1, "ttft")],
                    ),
                    doc(
                        "journal",
                        3,
                        3,
                        &[("decod", 'A'), ("batch", 'B')],
                        &[(1, "itl")],
                    ),
                    doc(
                        "investigation",
                        4,
                        4,
                        &[("prefix", 'C'), ("decod", 'C')],
                        &[(1, "itl"), (5, "llama")],
                    ),
                ],
                &[],
            )
            .unwrap();
        index
    }

    #[test]
    fn boolean_phrase_and_exclusion() {
        let index = sample();
        assert_eq!(ask(&index, "'prefix'").total, 3);
        assert_eq!(ids(&ask(&index, "'prefix' <-> 'cach'")), [1]);
        assert_eq!(ids(&ask(&index, "'cach' <-> 'prefix'")), [2]);
        let mut both = ids(&ask(&index, "'prefix' & 'cach'"));
        both.sort();
        assert_eq!(both, [1, 2]);
        assert_eq!(ids(&ask(&index, "'prefix' & !'cach'")), [4]);
        assert_eq!(ask(&index, "'decod' | 'miss'").total, 3);
        assert_eq!(ask(&index, "'nowher'").total, 0);
        assert_eq!(ids(&ask(&index, "'pref':*A")), [1]);
        assert_eq!(ids(&ask(&index, "'prefix' <2> 'miss'")), [1]);
    }

    #[test]
    fn title_words_outrank_notes_and_ties_go_to_the_newest() {
        let index = sample();
        // 1 has both words in class A, 2 in class D: 1 first despite being older.
        assert_eq!(ids(&ask(&index, "'prefix' & 'cach'")), [1, 2]);
        let a = ask(&index, "'prefix' & 'cach'");
        assert!(a.page[0].score > a.page[1].score);
        // Asked for newest first, the date decides and the scores stay.
        let node = parse("'prefix' & 'cach'").unwrap();
        let newest = index.search(&Request {
            text: node.as_ref(),
            newest: true,
            limit: 20,
            ..Request::default()
        });
        assert_eq!(ids(&newest), [2, 1]);
        assert!(newest.page[1].score > newest.page[0].score);
        // Browsing: no score, newest first.
        let all = index.search(&Request {
            limit: 20,
            ..Request::default()
        });
        assert_eq!(ids(&all), [4, 3, 2, 1]);
        assert_eq!(all.page[0].kind, "investigation");
    }

    #[test]
    fn facets_count_every_match_and_filters_narrow() {
        let index = sample();
        let all = index.search(&Request {
            limit: 1,
            ..Request::default()
        });
        assert_eq!(all.total, 4);
        assert_eq!(all.page.len(), 1);
        let kind = &all.facets.iter().find(|f| f.0 == "kind").unwrap().1;
        assert_eq!(
            kind,
            &[("journal".to_string(), 3), ("investigation".to_string(), 1)]
        );
        let metric = &all.facets.iter().find(|f| f.0 == "metric").unwrap().1;
        assert_eq!(metric, &[("itl".to_string(), 2), ("ttft".to_string(), 2)]);
        let filters = [("metric", "itl".to_string())];
        let narrowed = index.search(&Request {
            filters: &filters,
            limit: 20,
            ..Request::default()
        });
        assert_eq!(ids(&narrowed), [4, 3]);
        let unknown = [("model", "gpt-9".to_string())];
        let none = index.search(&Request {
            filters: &unknown,
            limit: 20,
            ..Request::default()
        });
        assert_eq!(none.total, 0);
        assert!(none.facets.is_empty());
        let dated = index.search(&Request {
            from: NaiveDate::from_ymd_opt(2026, 1, 2),
            to: NaiveDate::from_ymd_opt(2026, 1, 3),
            limit: 20,
            ..Request::default()
        });
        assert_eq!(ids(&dated), [3, 2]);
    }

    #[test]
    fn replacing_and_removing_documents_keeps_answers_exact() {
        let mut index = sample();
        // Small changes take the incremental path (patching posting lists).
        for i in 10..100 {
            index
                .apply(vec![doc("journal", i, 5, &[("filler", 'D')], &[])], &[])
                .unwrap();
        }
        index
            .apply(vec![doc("journal", 1, 1, &[("decod", 'A')], &[])], &[])
            .unwrap();
        assert_eq!(ask(&index, "'miss'").total, 0);
        assert_eq!(ask(&index, "'decod'").total, 3);
        index
            .apply(
                Vec::new(),
                &[("investigation".into(), 4), ("journal".into(), 77)],
            )
            .unwrap();
        assert_eq!(ask(&index, "'decod'").total, 2);
        assert_eq!(ask(&index, "'filler'").total, 89);
        assert_eq!(index.len(), 92);
        // A freed slot is reused without leaking old postings.
        index
            .apply(vec![doc("comparison", 5, 9, &[("batch", 'A')], &[])], &[])
            .unwrap();
        assert_eq!(ask(&index, "'batch'").total, 2);
        assert_eq!(ask(&index, "'prefix'").total, 1);
    }

    #[test]
    fn partial_matches_rank_by_parts_matched() {
        let index = sample();
        let parts: Vec<Node> = ["'prefix'", "'cach'", "'decod'", "'nowher'"]
            .iter()
            .map(|t| parse(t).unwrap().unwrap())
            .collect();
        let a = index.search(&Request {
            any_of: &parts,
            limit: 20,
            ..Request::default()
        });
        // 1, 2 and 4 match two parts each (1 in its title, 4 in class C, 2 in notes),
        // 3 one.
        assert_eq!(ids(&a), [1, 4, 2, 3]);
        assert_eq!(a.total, 4);
        assert_eq!(a.page[0].matched, 0b011);
        assert_eq!(a.page[1].matched, 0b101);
        assert_eq!(a.page[2].matched, 0b011);
        assert_eq!(a.page[3].matched, 0b100);
        // A condition kept whole: not cach.
        let not_cach = parse("!'cach'").unwrap().unwrap();
        let a = index.search(&Request {
            text: Some(&not_cach),
            any_of: &parts,
            limit: 20,
            ..Request::default()
        });
        assert_eq!(ids(&a), [4, 3]);
    }

    #[test]
    fn pages_follow_the_ranking() {
        let mut index = Index::new();
        let docs = (0..50)
            .map(|i| doc("journal", i, 1 + (i % 28) as u32, &[("word", 'A')], &[]))
            .collect();
        index.apply(docs, &[]).unwrap();
        let mut seen = Vec::new();
        for page in 0..3 {
            let node = parse("'word'").unwrap();
            let a = index.search(&Request {
                text: node.as_ref(),
                offset: page * 20,
                limit: 20,
                ..Request::default()
            });
            assert_eq!(a.total, 50);
            seen.extend(ids(&a));
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 50, "every match once across pages");
    }

    #[test]
    fn reads_postgres_binary_tsvectors() {
        let bytes = encode_tsvector(&[
            ("cach", vec![(3 << 14) | 2]),
            ("prefix", vec![(3 << 14) | 1, 5]),
        ]);
        // count, then per lexeme text\0, number of positions, positions.
        assert_eq!(&bytes[..9], &[0, 0, 0, 2, b'c', b'a', b'c', b'h', 0]);
        let mut read = Vec::new();
        read_tsvector(&bytes, |l, p| read.push((l.to_string(), p.to_vec()))).unwrap();
        assert_eq!(read[0], ("cach".to_string(), vec![(3 << 14) | 2]));
        assert_eq!(read[1].1, vec![(3 << 14) | 1, 5]);
        assert!(read_tsvector(&bytes[..bytes.len() - 1], |_, _| {}).is_err());
        assert!(read_tsvector(&[0, 0, 0, 1, b'a'], |_, _| {}).is_err());
        let mut index = Index::new();
        let bad = DocInput {
            vector: bytes[..7].to_vec(),
            ..doc("journal", 1, 1, &[], &[])
        };
        assert!(index
            .apply(vec![doc("journal", 2, 1, &[("a", 'A')], &[]), bad], &[])
            .is_err());
        assert!(index.is_empty(), "nothing applied");
    }
}
