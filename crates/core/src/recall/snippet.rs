//! Highlighted snippets: cut here for queries of plain words ([`headline`]), by
//! PostgreSQL's `ts_headline` for the rest. Both mark matches with two private-use
//! characters that cannot come from stored text (they are stripped when documents are
//! built); everything is HTML-escaped, then only those marks become `<mark>` tags.

/// Opens a highlighted match in `ts_headline` output.
pub const START: char = '\u{E000}';
/// Closes it.
pub const STOP: char = '\u{E001}';

/// Removes the marker characters from stored text.
pub fn strip_markers(text: &str) -> String {
    text.replace([START, STOP], "")
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A headline as HTML: escaped text with balanced `<mark>` elements.
pub fn to_html(headline: &str) -> String {
    let mut out = String::with_capacity(headline.len() + 32);
    let mut open = false;
    for part in headline.split_inclusive([START, STOP]) {
        let (text, marker) = match part.chars().last() {
            Some(c @ (START | STOP)) => (&part[..part.len() - c.len_utf8()], Some(c)),
            _ => (part, None),
        };
        out.push_str(&escape_html(text));
        match marker {
            Some(START) if !open => {
                out.push_str("<mark>");
                open = true;
            }
            Some(STOP) if open => {
                out.push_str("</mark>");
                open = false;
            }
            _ => {}
        }
    }
    if open {
        out.push_str("</mark>");
    }
    out
}

/// Words of context shown before a fragment's first match.
const LEAD: usize = 8;
/// Matches considered as fragment starts (a long text naming a word thousands of times
/// costs no more than this).
const STARTS: usize = 512;

/// The text's words: runs of letters and digits, as byte ranges.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// Calls `visit` with each word of the text (runs of letters and digits, as [`headline`]
/// reads them).
pub fn each_word(text: &str, mut visit: impl FnMut(&str)) {
    for (s, e) in words(text) {
        visit(&text[s..e]);
    }
}

/// A headline for a query of plain words, cut from `text`: `term` says which query term
/// (by number) a word matches, if any. Up to `fragments` fragments of at most
/// `max_words` words, chosen to show as many different terms as possible (then as many
/// matches), in text order, joined by ` … `, each match between [`START`] and [`STOP`].
/// Without a match, the text's first `max_words` words.
pub fn headline(
    text: &str,
    mut term: impl FnMut(&str) -> Option<usize>,
    max_words: usize,
    fragments: usize,
) -> String {
    let spans = words(text);
    let n = spans.len();
    if n == 0 || max_words == 0 {
        return String::new();
    }
    // (word number, term number) of every match, in text order.
    let hits: Vec<(usize, usize)> = spans
        .iter()
        .enumerate()
        .filter_map(|(i, &(s, e))| term(&text[s..e]).map(|t| (i, t)))
        .collect();
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    if hits.is_empty() {
        chosen.push((0, max_words.min(n)));
    }
    let mut shown: Vec<usize> = Vec::new();
    for _ in 0..fragments.max(1) {
        // (new terms, terms, matches), then the earliest start; with the word range.
        type Score = (usize, usize, usize);
        let mut best: Option<(Score, (usize, usize))> = None;
        for &(i, _) in hits.iter().take(STARTS) {
            let lead = LEAD.min(max_words - 1);
            let from = i.saturating_sub(lead).min(n.saturating_sub(max_words));
            let to = (from + max_words).min(n);
            if chosen.iter().any(|&(f, t)| from < t && f < to) {
                continue;
            }
            let first = hits.partition_point(|(w, _)| *w < from);
            let inside: Vec<usize> = hits[first..]
                .iter()
                .take_while(|(w, _)| *w < to)
                .map(|&(_, t)| t)
                .collect();
            let mut distinct = inside.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let new = distinct.iter().filter(|t| !shown.contains(t)).count();
            let score = (new, distinct.len(), inside.len());
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, (from, to)));
            }
        }
        let Some((_, (from, to))) = best else { break };
        shown.extend(
            hits.iter()
                .filter(|(w, _)| (from..to).contains(w))
                .map(|&(_, t)| t),
        );
        chosen.push((from, to));
    }
    chosen.sort_unstable();
    let mut out = String::new();
    let mut next_hit = hits.iter().peekable();
    for (k, &(from, to)) in chosen.iter().enumerate() {
        if k > 0 {
            out.push_str(" … ");
        }
        let mut at = spans[from].0;
        for (w, &(s, e)) in spans.iter().enumerate().take(to).skip(from) {
            while next_hit.peek().is_some_and(|(h, _)| *h < w) {
                next_hit.next();
            }
            if next_hit.peek().is_some_and(|(h, _)| *h == w) {
                out.push_str(&text[at..s]);
                out.push(START);
                out.push_str(&text[s..e]);
                out.push(STOP);
                at = e;
            }
        }
        out.push_str(&text[at..spans[to - 1].1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_but_the_marks() {
        let h = format!("a <script>&{START}prefill{STOP} \"x\" {STOP}{START}b");
        assert_eq!(
            to_html(&h),
            "a &lt;script&gt;&amp;<mark>prefill</mark> &quot;x&quot; <mark>b</mark>"
        );
        assert_eq!(strip_markers(&format!("x{START}y{STOP}")), "xy");
    }

    fn marked(h: &str) -> String {
        h.replace(START, "[").replace(STOP, "]")
    }

    fn by_list<'a>(terms: &'a [&'a str]) -> impl FnMut(&str) -> Option<usize> + 'a {
        move |w: &str| terms.iter().position(|t| w.eq_ignore_ascii_case(t))
    }

    #[test]
    fn a_headline_marks_matches_and_keeps_the_text_between() {
        let text = "Prefill stalls: the KV-cache (prefill) fills up, then decode waits.";
        let h = headline(text, by_list(&["prefill", "decode"]), 30, 2);
        assert_eq!(
            marked(&h),
            "[Prefill] stalls: the KV-cache ([prefill]) fills up, then [decode] waits"
        );
    }

    #[test]
    fn fragments_show_different_terms_in_text_order() {
        let filler: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let mut words_: Vec<&str> = filler.iter().map(String::as_str).collect();
        words_[10] = "alpha";
        words_[12] = "alpha";
        words_[80] = "beta";
        let text = words_.join(" ");
        let h = marked(&headline(&text, by_list(&["alpha", "beta"]), 10, 2));
        let parts: Vec<&str> = h.split(" … ").collect();
        assert_eq!(parts.len(), 2, "{h}");
        assert!(
            parts[0].contains("[alpha]") && parts[1].contains("[beta]"),
            "{h}"
        );
        assert!(parts.iter().all(|p| p.split(' ').count() <= 10), "{h}");
        // One fragment when one is asked for: the one with the most terms.
        let one = marked(&headline(&text, by_list(&["alpha", "beta"]), 10, 1));
        assert!(
            !one.contains(" … ") && one.contains("[alpha] w11 [alpha]"),
            "{one}"
        );
    }

    #[test]
    fn without_a_match_the_beginning_and_never_a_panic() {
        let text = "one two three four five";
        assert_eq!(headline(text, |_| None, 3, 2), "one two three");
        assert_eq!(headline("", |_| Some(0), 3, 2), "");
        assert_eq!(headline("... !!", |_| Some(0), 3, 2), "");
        // Multibyte text and a match at the very end.
        let h = marked(&headline("café über naïve déjà", by_list(&["déjà"]), 2, 2));
        assert_eq!(h, "naïve [déjà]");
    }
}
