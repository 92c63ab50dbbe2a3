//! The search thesaurus, applied to a query's reading: groups of words and phrases that
//! mean the same thing to this domain ("ITL" = "inter-token latency" = "TPOT"; "spike"
//! ≈ "tail" ≈ "p99"). A query word or phrase found in a group also searches for the
//! group's other terms. The query is also cut into its parts (its top-level `&`
//! operands, a thesaurus phrase kept whole), which partial matching counts.
//!
//! The terms are matched as PostgreSQL reads them (`phraseto_tsquery`), so "spikes"
//! finds the group of "spike" and "Inter-Token latency" that of "inter-token latency".

use std::collections::{HashMap, HashSet};

use super::tsquery::{self, Node};
use crate::FieldError;

/// Terms in a group, at most; characters in a term, at most.
pub const MAX_TERMS: usize = 12;
pub const MAX_TERM_CHARS: usize = 60;

/// A group's terms as entered, tidied (spaces collapsed) and checked: 2 to
/// [`MAX_TERMS`] terms, each with a letter or digit, at most [`MAX_TERM_CHARS`]
/// characters, no commas (the page lists terms separated by commas), none repeated
/// (ignoring case). Errors name `terms` or `terms[i]` (counted from 0).
pub fn check_terms(terms: &[String]) -> Result<Vec<String>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let tidy: Vec<String> = terms
        .iter()
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    if !(2..=MAX_TERMS).contains(&tidy.len()) {
        errors.push(FieldError::new(
            "terms",
            format!(
                "a group needs 2 to {MAX_TERMS} terms (words or phrases that mean the same); {} given",
                tidy.len()
            ),
        ));
    }
    for (i, term) in tidy.iter().enumerate() {
        let field = format!("terms[{i}]");
        let problem = if term.is_empty() {
            Some("an empty term".to_string())
        } else if term.chars().count() > MAX_TERM_CHARS {
            Some(format!("at most {MAX_TERM_CHARS} characters"))
        } else if term.contains(',') {
            Some("no commas in a term (each term is a word or a phrase)".to_string())
        } else if !term.chars().any(char::is_alphanumeric) {
            Some("a term needs a letter or a digit".to_string())
        } else {
            tidy[..i]
                .iter()
                .position(|t| t.to_lowercase() == term.to_lowercase())
                .map(|j| format!("\"{term}\" repeats terms[{j}]"))
        };
        if let Some(message) = problem {
            errors.push(FieldError::new(field, message));
        }
    }
    if errors.is_empty() {
        Ok(tidy)
    } else {
        Err(errors)
    }
}

/// One term of a group: its text, its reading and the lexemes of that reading in order.
#[derive(Debug, Clone)]
struct Term {
    text: String,
    node: Node,
}

/// The groups, with each term's lexeme sequence for matching queries.
#[derive(Debug, Clone, Default)]
pub struct Thesaurus {
    /// Terms by group.
    groups: Vec<Vec<Term>>,
    /// Lexemes joined by a space → (group, term) pairs.
    by_lexemes: HashMap<String, Vec<(usize, usize)>>,
    /// Most lexemes in one term.
    longest: usize,
    /// Every word of every term, lowercased (the spelling correction leaves them alone).
    words: HashSet<String>,
}

/// One part of a query: what it shows as (the words typed, or the lexemes), its node
/// with the thesaurus applied, the other terms searched for it, and whether it is a
/// negation (which partial matching keeps as a condition rather than counting).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub label: String,
    pub node: Node,
    pub also: Vec<String>,
    pub negated: bool,
}

/// The lexemes of a plain term or a chain of plain terms joined by `<->`/`<N>`, in order.
fn lexemes(node: &Node, out: &mut Vec<String>) -> bool {
    match node {
        Node::Term {
            lexeme,
            prefix: false,
            weights: 0,
        } => {
            out.push(lexeme.clone());
            true
        }
        Node::Phrase(a, b, _) => lexemes(a, out) && lexemes(b, out),
        _ => false,
    }
}

/// The `&` operands of a node, left to right.
fn conjuncts<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
    match node {
        Node::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// A node as words to show: lexemes with spaces, `or` between alternatives, `-` before
/// an exclusion.
fn label(node: &Node) -> String {
    match node {
        Node::Term { lexeme, .. } => lexeme.clone(),
        Node::Not(inner) => format!("-{}", label(inner)),
        Node::And(a, b) | Node::Phrase(a, b, _) => format!("{} {}", label(a), label(b)),
        Node::Or(a, b) => format!("{} or {}", label(a), label(b)),
    }
}

/// The `&` of nodes (`None` for none).
pub fn and_all(nodes: impl IntoIterator<Item = Node>) -> Option<Node> {
    nodes
        .into_iter()
        .reduce(|a, b| Node::And(Box::new(a), Box::new(b)))
}

impl Thesaurus {
    /// The thesaurus from `(group, term, reading)` rows, the reading being
    /// `phraseto_tsquery('english', term)::text`. Terms that read as nothing (only stop
    /// words) or as something other than plain lexemes are left out, as are groups left
    /// with fewer than two terms.
    pub fn new(rows: impl IntoIterator<Item = (i64, String, String)>) -> Thesaurus {
        let mut by_group: Vec<(i64, Vec<Term>)> = Vec::new();
        for (group, text, reading) in rows {
            let Ok(Some(node)) = tsquery::parse(&reading) else {
                continue;
            };
            if !lexemes(&node, &mut Vec::new()) {
                continue;
            }
            match by_group.last_mut() {
                Some((g, terms)) if *g == group => terms.push(Term { text, node }),
                _ => by_group.push((group, vec![Term { text, node }])),
            }
        }
        let mut thesaurus = Thesaurus::default();
        for (_, terms) in by_group.into_iter().filter(|(_, t)| t.len() >= 2) {
            let g = thesaurus.groups.len();
            for (t, term) in terms.iter().enumerate() {
                let mut seq = Vec::new();
                lexemes(&term.node, &mut seq);
                thesaurus.longest = thesaurus.longest.max(seq.len());
                thesaurus
                    .by_lexemes
                    .entry(seq.join(" "))
                    .or_default()
                    .push((g, t));
                thesaurus.words.extend(
                    term.text
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|w| !w.is_empty())
                        .map(str::to_lowercase),
                );
            }
            thesaurus.groups.push(terms);
        }
        thesaurus
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether a lowercased word appears in a term.
    pub fn knows_word(&self, word: &str) -> bool {
        self.words.contains(word)
    }

    /// The query's parts with the thesaurus applied. `typed` holds, for a query of plain
    /// words, each word as typed and whether PostgreSQL kept it (stop words are dropped),
    /// so parts show as typed; otherwise parts show as lexemes.
    pub fn parts(&self, node: &Node, typed: Option<&[(String, bool)]>) -> Vec<Part> {
        let mut items = Vec::new();
        conjuncts(node, &mut items);
        let seqs: Vec<Option<Vec<String>>> = items
            .iter()
            .map(|n| {
                let mut seq = Vec::new();
                lexemes(n, &mut seq).then_some(seq)
            })
            .collect();
        // Where each kept word sits among the typed ones (when they line up).
        let kept: Option<Vec<usize>> = typed.and_then(|typed| {
            let at: Vec<usize> = typed
                .iter()
                .enumerate()
                .filter(|(_, (_, kept))| *kept)
                .map(|(i, _)| i)
                .collect();
            (at.len() == items.len()).then_some(at)
        });
        let mut parts = Vec::new();
        let mut i = 0;
        while i < items.len() {
            // The longest run of plain operands from `i` that is a thesaurus term.
            let mut found: Option<(usize, &[(usize, usize)])> = None;
            let mut joined: Vec<String> = Vec::new();
            for (j, seq) in seqs.iter().enumerate().skip(i) {
                let Some(seq) = seq else { break };
                joined.extend(seq.iter().cloned());
                if joined.len() > self.longest {
                    break;
                }
                if let Some(terms) = self.by_lexemes.get(&joined.join(" ")) {
                    found = Some((j + 1, terms.as_slice()));
                }
            }
            let end = found.map_or(i + 1, |(end, _)| end);
            let typed_label = kept.as_ref().zip(typed).map(|(at, typed)| {
                typed[at[i]..=at[end - 1]]
                    .iter()
                    .map(|(w, _)| w.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            let original = and_all(items[i..end].iter().map(|n| (*n).clone()))
                .expect("a run of at least one operand");
            let label = typed_label.unwrap_or_else(|| label(&original));
            let negated = matches!(original, Node::Not(_));
            let mut node = original;
            let mut also = Vec::new();
            if let Some((_, matched)) = found {
                let mut seen: Vec<&Node> = Vec::new();
                for &(g, t) in matched {
                    for (u, other) in self.groups[g].iter().enumerate() {
                        if u == t
                            || matched.contains(&(g, u))
                            || seen.contains(&&other.node)
                            || also.contains(&other.text)
                        {
                            continue;
                        }
                        seen.push(&other.node);
                        also.push(other.text.clone());
                        node = Node::Or(Box::new(node), Box::new(other.node.clone()));
                    }
                }
            }
            parts.push(Part {
                label,
                node,
                also,
                negated,
            });
            i = end;
        }
        parts
    }
}

/// A node as PostgreSQL's tsquery text (what [`tsquery::parse`] reads back), every
/// operator in parentheses.
pub fn to_text(node: &Node) -> String {
    match node {
        Node::Term {
            lexeme,
            prefix,
            weights,
        } => {
            let mut out = format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"));
            if *prefix || *weights != 0 {
                out.push(':');
                if *prefix {
                    out.push('*');
                }
                for (bit, c) in [(3, 'A'), (2, 'B'), (1, 'C'), (0, 'D')] {
                    if weights & (1 << bit) != 0 {
                        out.push(c);
                    }
                }
            }
            out
        }
        Node::Not(inner) => format!("!( {} )", to_text(inner)),
        Node::And(a, b) => format!("( {} & {} )", to_text(a), to_text(b)),
        Node::Or(a, b) => format!("( {} | {} )", to_text(a), to_text(b)),
        Node::Phrase(a, b, 1) => format!("( {} <-> {} )", to_text(a), to_text(b)),
        Node::Phrase(a, b, d) => format!("( {} <{d}> {} )", to_text(a), to_text(b)),
    }
}

/// The lexemes of a node that are plain ASCII letters and digits and not under a
/// negation, once each: what a snippet cut in the app highlights.
pub fn plain_lexemes(node: &Node) -> Option<Vec<String>> {
    fn walk(node: &Node, out: &mut Vec<String>) -> bool {
        match node {
            Node::Term {
                lexeme,
                prefix: false,
                weights: 0,
            } if !lexeme.is_empty() && lexeme.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                if !out.contains(lexeme) {
                    out.push(lexeme.clone());
                }
                true
            }
            // Alternatives from the thesaurus may hold phrases and hyphenated words:
            // their plain words are highlighted, the rest is not.
            Node::Term { .. } => true,
            Node::And(a, b) | Node::Or(a, b) | Node::Phrase(a, b, _) => {
                walk(a, out) && walk(b, out)
            }
            Node::Not(_) => false,
        }
    }
    let mut out = Vec::new();
    walk(node, &mut out).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Thesaurus {
        Thesaurus::new([
            (1, "ITL".into(), "'itl'".into()),
            (
                1,
                "inter-token latency".into(),
                "'inter-token' <-> 'inter' <-> 'token' <-> 'latenc'".into(),
            ),
            (1, "TPOT".into(), "'tpot'".into()),
            (2, "spike".into(), "'spike'".into()),
            (2, "tail".into(), "'tail'".into()),
            (2, "p99".into(), "'p99'".into()),
            (3, "the".into(), "".into()),
            (3, "lonely".into(), "'lone'".into()),
            (
                4,
                "time to first token".into(),
                "'time' <2> 'first' <-> 'token'".into(),
            ),
            (4, "TTFT".into(), "'ttft'".into()),
        ])
    }

    #[test]
    fn groups_are_checked_naming_the_term() {
        let terms = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            check_terms(&terms(&["  KV ", "KV   cache"])).unwrap(),
            ["KV", "KV cache"]
        );
        let fields = |t: &[&str]| -> Vec<String> {
            check_terms(&terms(t))
                .unwrap_err()
                .into_iter()
                .map(|e| e.field)
                .collect()
        };
        assert_eq!(fields(&["ITL"]), ["terms"]);
        assert_eq!(fields(&["ITL", " "]), ["terms[1]"]);
        assert_eq!(
            fields(&["ITL", "a, b", "--", "itl"]),
            ["terms[1]", "terms[2]", "terms[3]"]
        );
        assert_eq!(fields(&["x", &"y".repeat(61)]), ["terms[1]"]);
    }

    fn read(text: &str) -> Node {
        tsquery::parse(text).unwrap().unwrap()
    }

    #[test]
    fn a_query_word_also_searches_its_group() {
        let t = sample();
        let typed = [("ITL".to_string(), true), ("spikes".to_string(), true)];
        let parts = t.parts(&read("'itl' & 'spike'"), Some(&typed));
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].label, "ITL");
        assert_eq!(parts[0].also, ["inter-token latency", "TPOT"]);
        assert_eq!(
            to_text(&parts[0].node),
            "( ( 'itl' | ( ( ( 'inter-token' <-> 'inter' ) <-> 'token' ) <-> 'latenc' ) ) | 'tpot' )"
        );
        assert_eq!(parts[1].label, "spikes");
        assert_eq!(parts[1].also, ["tail", "p99"]);
        // The text reads back as the same tree.
        assert_eq!(
            tsquery::parse(&to_text(&parts[0].node)).unwrap().unwrap(),
            parts[0].node
        );
        // A group left with one term that reads as something is dropped.
        assert!(t.parts(&read("'lone'"), None)[0].also.is_empty());
        assert!(t.knows_word("itl") && t.knows_word("latency") && !t.knows_word("lone"));
    }

    #[test]
    fn phrases_are_found_across_words_and_labelled_as_typed() {
        let t = sample();
        let typed: Vec<(String, bool)> = ["time", "to", "first", "token", "p99", "decode"]
            .iter()
            .map(|w| (w.to_string(), *w != "to"))
            .collect();
        let parts = t.parts(
            &read("'time' & 'first' & 'token' & 'p99' & 'decod'"),
            Some(&typed),
        );
        let labels: Vec<&str> = parts.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["time to first token", "p99", "decode"]);
        assert_eq!(parts[0].also, ["TTFT"]);
        assert_eq!(parts[1].also, ["spike", "tail"]);
        assert!(parts[2].also.is_empty());
        // A hyphenated phrase read whole, and an exclusion kept as a condition.
        let parts = t.parts(
            &read("'inter-token' <-> 'inter' <-> 'token' & 'latenc' & !'prefil'"),
            None,
        );
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].also, ["ITL", "TPOT"]);
        assert_eq!(parts[1].label, "-prefil");
        assert!(parts[1].negated);
        assert_eq!(
            plain_lexemes(&parts[0].node).unwrap(),
            ["inter", "token", "latenc", "itl", "tpot"]
        );
        assert_eq!(plain_lexemes(&parts[1].node), None);
    }
}
