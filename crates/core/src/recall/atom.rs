//! An Atom (RFC 4287) feed of published journal entries, written by hand: the format
//! is small, and every piece of text goes through one escaping function.

use chrono::{DateTime, Utc};

use super::snippet::escape_html;

/// One published entry.
#[derive(Debug, Clone)]
pub struct FeedEntry {
    pub id: i64,
    pub title: String,
    pub author: String,
    pub published: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    /// The symptom line.
    pub summary: String,
    /// The whole entry as Markdown (sent as plain text).
    pub content: String,
}

/// Escapes text for XML content and attributes (the HTML escapes are valid XML),
/// dropping the control characters XML 1.0 forbids.
pub fn escape_xml(text: &str) -> String {
    let allowed: String = text
        .chars()
        .filter(|&c| {
            matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
        })
        .collect();
    escape_html(&allowed)
}

/// The feed document. `base` is the app's address ("https://perf.example.com"); entry
/// ids are tag URIs so they stay the same if the address changes.
pub fn feed(base: &str, entries: &[FeedEntry], generated: DateTime<Utc>) -> String {
    let base = base.trim_end_matches('/');
    let updated = entries.iter().map(|e| e.updated).max().unwrap_or(generated);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    out.push_str("<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str("  <id>tag:perfjournal,2026:journal</id>\n");
    out.push_str("  <title>perfjournal — journal</title>\n");
    out.push_str(&format!("  <updated>{}</updated>\n", updated.to_rfc3339()));
    out.push_str(&format!(
        "  <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n",
        escape_xml(&format!("{base}/journal"))
    ));
    out.push_str(&format!(
        "  <link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\n",
        escape_xml(&format!("{base}/journal/feed.atom"))
    ));
    out.push_str("  <generator>perfjournal</generator>\n");
    for e in entries {
        out.push_str("  <entry>\n");
        out.push_str(&format!(
            "    <id>tag:perfjournal,2026:journal/{}</id>\n",
            e.id
        ));
        out.push_str(&format!("    <title>{}</title>\n", escape_xml(&e.title)));
        out.push_str(&format!(
            "    <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n",
            escape_xml(&format!("{base}/journal/{}", e.id))
        ));
        out.push_str(&format!(
            "    <published>{}</published>\n",
            e.published.to_rfc3339()
        ));
        out.push_str(&format!(
            "    <updated>{}</updated>\n",
            e.updated.to_rfc3339()
        ));
        out.push_str(&format!(
            "    <author><name>{}</name></author>\n",
            escape_xml(&e.author)
        ));
        out.push_str(&format!(
            "    <summary>{}</summary>\n",
            escape_xml(&e.summary)
        ));
        out.push_str(&format!(
            "    <content type=\"text\">{}</content>\n",
            escape_xml(&e.content)
        ));
        out.push_str("  </entry>\n");
    }
    out.push_str("</feed>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_text_and_drops_forbidden_characters() {
        assert_eq!(
            escape_xml("a<b>&\"'\u{1}c\n"),
            "a&lt;b&gt;&amp;&quot;&#39;c\n"
        );
        let at = DateTime::parse_from_rfc3339("2026-03-14T10:00:00Z")
            .unwrap()
            .to_utc();
        let xml = feed(
            "http://x/",
            &[FeedEntry {
                id: 7,
                title: "</title><script>".into(),
                author: "ada".into(),
                published: at,
                updated: at,
                summary: "p95 TTFT & more".into(),
                content: "# T".into(),
            }],
            at,
        );
        assert!(xml.contains("<title>&lt;/title&gt;&lt;script&gt;</title>"));
        assert!(xml.contains("href=\"http://x/journal/7\""));
        assert!(xml.contains("<updated>2026-03-14T10:00:00+00:00</updated>"));
    }
}
