//! Highlighted snippets made safe: PostgreSQL's `ts_headline` marks matches with two
//! private-use characters that cannot come from stored text (they are stripped when
//! documents are built); everything is HTML-escaped, then only those marks become
//! `<mark>` tags.

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
}
