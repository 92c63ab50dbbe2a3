//! PostgreSQL's `tsquery` as text (what `websearch_to_tsquery(...)::text` returns), read
//! into a tree the in-memory index evaluates. PostgreSQL does the language work
//! (parsing the web-search syntax, stemming, dropping stop words); this only reads its
//! answer back.
//!
//! Grammar, loosest first: `a | b`, `a & b`, `a <-> b` / `a <N> b`, `!a`, `( … )`, and
//! quoted lexemes `'word'` with optional `:*` (prefix) and `:ABCD` (weights).

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A lexeme; `weights` is a bit set over classes (bit 3 = A … bit 0 = D), 0 for any.
    Term {
        lexeme: String,
        prefix: bool,
        weights: u8,
    },
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// `left <distance> right`: right starts `distance` positions after left ends.
    Phrase(Box<Node>, Box<Node>, u16),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Term(String, bool, u8),
    Not,
    And,
    Or,
    Phrase(u16),
    Open,
    Close,
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '!' => {
                out.push(Token::Not);
                i += 1;
            }
            '&' => {
                out.push(Token::And);
                i += 1;
            }
            '|' => {
                out.push(Token::Or);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            '<' => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '>')
                    .ok_or_else(|| format!("unclosed '<' at {i}"))?;
                let inner: String = chars[i + 1..i + end].iter().collect();
                let distance = if inner == "-" {
                    1
                } else {
                    inner
                        .parse::<u16>()
                        .map_err(|_| format!("bad distance <{inner}>"))?
                };
                out.push(Token::Phrase(distance));
                i += end + 1;
            }
            '\'' => {
                let mut lexeme = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unclosed quote".into()),
                        Some('\\') => {
                            if let Some(&next) = chars.get(i + 1) {
                                lexeme.push(next);
                            }
                            i += 2;
                        }
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            lexeme.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&c) => {
                            lexeme.push(c);
                            i += 1;
                        }
                    }
                }
                let (mut prefix, mut weights) = (false, 0u8);
                if chars.get(i) == Some(&':') {
                    i += 1;
                    while let Some(&c) = chars.get(i) {
                        match c.to_ascii_uppercase() {
                            '*' => prefix = true,
                            'A' => weights |= 1 << 3,
                            'B' => weights |= 1 << 2,
                            'C' => weights |= 1 << 1,
                            'D' => weights |= 1,
                            _ => break,
                        }
                        i += 1;
                    }
                }
                out.push(Token::Term(lexeme, prefix, weights));
            }
            other => return Err(format!("unexpected '{other}' at {i}")),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn binding(token: &Token) -> Option<u8> {
        match token {
            Token::Or => Some(1),
            Token::And => Some(2),
            Token::Phrase(_) => Some(3),
            _ => None,
        }
    }

    fn expression(&mut self, min: u8) -> Result<Node, String> {
        let mut left = self.unary()?;
        while let Some(power) = self.peek().and_then(Self::binding) {
            if power < min {
                break;
            }
            let op = self.tokens[self.at].clone();
            self.at += 1;
            let right = self.expression(power + 1)?;
            left = match op {
                Token::Or => Node::Or(Box::new(left), Box::new(right)),
                Token::And => Node::And(Box::new(left), Box::new(right)),
                Token::Phrase(d) => Node::Phrase(Box::new(left), Box::new(right), d),
                _ => unreachable!("only binary operators bind"),
            };
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, String> {
        let token = self.peek().cloned().ok_or("the query ends too early")?;
        self.at += 1;
        match token {
            Token::Not => Ok(Node::Not(Box::new(self.unary()?))),
            Token::Open => {
                let inner = self.expression(0)?;
                match self.peek() {
                    Some(Token::Close) => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => Err("missing ')'".into()),
                }
            }
            Token::Term(lexeme, prefix, weights) => Ok(Node::Term {
                lexeme,
                prefix,
                weights,
            }),
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

/// Reads a tsquery's text; `Ok(None)` for the empty query (only stop words were typed).
pub fn parse(text: &str) -> Result<Option<Node>, String> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut parser = Parser { tokens, at: 0 };
    let node = parser.expression(0)?;
    if parser.at != parser.tokens.len() {
        return Err(format!("unexpected text after token {}", parser.at));
    }
    Ok(Some(node))
}

/// The words of a query PostgreSQL reads one by one: only ASCII letters and digits,
/// separated by white space, none of them the web-search operator `or`, none longer than
/// [`PLAIN_WORD_MAX`]. For such a query `websearch_to_tsquery` is the `&` of its words'
/// own readings (stop words dropped), so the words can be read once and remembered.
/// Lowercased (PostgreSQL lowercases them before stemming); `None` for any other query
/// (quotes, minus signs, punctuation, other scripts), which is read whole.
pub fn plain_words(q: &str) -> Option<Vec<String>> {
    let words: Vec<String> = q.split_whitespace().map(str::to_ascii_lowercase).collect();
    let plain = !words.is_empty()
        && words.iter().all(|w| {
            w.len() <= PLAIN_WORD_MAX && w != "or" && w.bytes().all(|b| b.is_ascii_alphanumeric())
        });
    plain.then_some(words)
}

/// Longest word [`plain_words`] accepts (PostgreSQL drops words over 2,047 bytes with a
/// notice; words this long are read whole instead).
pub const PLAIN_WORD_MAX: usize = 64;

/// The query's reading from its words' readings, as `websearch_to_tsquery` prints it:
/// the non-empty ones joined by ` & `. `None` when a word's reading is not one plain
/// lexeme (then the query is read whole).
pub fn join_readings<'a>(readings: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out = String::new();
    for reading in readings {
        if reading.is_empty() {
            continue;
        }
        let single = matches!(
            parse(reading),
            Ok(Some(Node::Term {
                prefix: false,
                weights: 0,
                ..
            }))
        );
        if !single {
            return None;
        }
        if !out.is_empty() {
            out.push_str(" & ");
        }
        out.push_str(reading);
    }
    Some(out)
}

/// The lexemes of a query that is only plain words joined by `&` (what a query of plain
/// words reads as): each of ASCII letters and digits, without prefix or weights. `None`
/// for anything else (phrases, `|`, `!`, other characters), whose highlighting is left
/// to PostgreSQL.
pub fn conjunction_terms(node: &Node) -> Option<Vec<&str>> {
    fn walk<'a>(node: &'a Node, out: &mut Vec<&'a str>) -> bool {
        match node {
            Node::Term {
                lexeme,
                prefix: false,
                weights: 0,
            } if !lexeme.is_empty() && lexeme.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                if !out.contains(&lexeme.as_str()) {
                    out.push(lexeme);
                }
                true
            }
            Node::And(a, b) => walk(a, out) && walk(b, out),
            _ => false,
        }
    }
    let mut out = Vec::new();
    walk(node, &mut out).then_some(out)
}

/// The lexeme of a reading that is one plain lexeme (`'run'` → `run`).
pub fn single_lexeme(reading: &str) -> Option<&str> {
    let inner = reading.strip_prefix('\'')?.strip_suffix('\'')?;
    (!inner.is_empty() && !inner.contains(['\'', '\\'])).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(s: &str) -> Node {
        Node::Term {
            lexeme: s.into(),
            prefix: false,
            weights: 0,
        }
    }

    #[test]
    fn reads_what_websearch_to_tsquery_prints() {
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("'prefil'").unwrap(), Some(term("prefil")));
        assert_eq!(
            parse("'token' & !'python'").unwrap(),
            Some(Node::And(
                Box::new(term("token")),
                Box::new(Node::Not(Box::new(term("python"))))
            ))
        );
        assert_eq!(
            parse("'prefix' <-> 'cach' | 'kv'").unwrap(),
            Some(Node::Or(
                Box::new(Node::Phrase(
                    Box::new(term("prefix")),
                    Box::new(term("cach")),
                    1
                )),
                Box::new(term("kv"))
            ))
        );
        // & binds tighter than |, and parentheses override.
        assert_eq!(
            parse("'a' | 'b' & 'c'").unwrap(),
            Some(Node::Or(
                Box::new(term("a")),
                Box::new(Node::And(Box::new(term("b")), Box::new(term("c"))))
            ))
        );
        assert_eq!(
            parse("( 'a' | 'b' ) & 'c'").unwrap(),
            Some(Node::And(
                Box::new(Node::Or(Box::new(term("a")), Box::new(term("b")))),
                Box::new(term("c"))
            ))
        );
        // Phrases chain to the left, with explicit distances.
        assert_eq!(
            parse("'a' <-> 'b' <2> 'c'").unwrap(),
            Some(Node::Phrase(
                Box::new(Node::Phrase(Box::new(term("a")), Box::new(term("b")), 1)),
                Box::new(term("c")),
                2
            ))
        );
    }

    #[test]
    fn quotes_escapes_prefixes_and_weights() {
        assert_eq!(parse("'it''s'").unwrap(), Some(term("it's")));
        assert_eq!(parse(r"'back\\slash'").unwrap(), Some(term(r"back\slash")));
        assert_eq!(
            parse("'pref':*AB").unwrap(),
            Some(Node::Term {
                lexeme: "pref".into(),
                prefix: true,
                weights: 0b1100
            })
        );
        assert!(parse("'café' & 'über'").unwrap().is_some());
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for bad in ["'open", "'a' &", "( 'a'", "'a' 'b'", "<x>", "'a' <->", "#"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plain_queries_are_read_word_by_word() {
        assert_eq!(
            plain_words("KV cache h100").unwrap(),
            ["kv", "cache", "h100"]
        );
        assert_eq!(
            plain_words("  prefill \t decode ").unwrap(),
            ["prefill", "decode"]
        );
        // Operators, punctuation, other scripts and the empty query are read whole.
        for whole in [
            "",
            "   ",
            "a OR b",
            "a or b",
            "-python",
            "\"kv cache\"",
            "fp8,",
            "café",
            "1_000",
        ] {
            assert_eq!(plain_words(whole), None, "{whole:?}");
        }
        assert_eq!(plain_words(&"x".repeat(PLAIN_WORD_MAX + 1)), None);
        assert!(plain_words(&"x".repeat(PLAIN_WORD_MAX)).is_some());
    }

    #[test]
    fn readings_join_like_websearch_to_tsquery() {
        assert_eq!(
            join_readings(["'kv'", "", "'cach'"]).unwrap(),
            "'kv' & 'cach'"
        );
        assert_eq!(join_readings(["", ""]).unwrap(), "");
        assert_eq!(join_readings(["'a'", "'a'"]).unwrap(), "'a' & 'a'");
        // A word PostgreSQL splits, or anything but one plain lexeme, sends the query whole.
        assert_eq!(join_readings(["'1' <-> '000'", "'a'"]), None);
        assert_eq!(join_readings(["'a':*"]), None);
    }

    #[test]
    fn conjunctions_of_plain_lexemes_are_recognised() {
        let terms = |t: &str| {
            parse(t)
                .unwrap()
                .map(|n| conjunction_terms(&n).map(|v| v.join(",")))
        };
        assert_eq!(terms("'kv' & 'cach' & 'kv'"), Some(Some("kv,cach".into())));
        assert_eq!(terms("'h100'"), Some(Some("h100".into())));
        for other in [
            "'a' | 'b'",
            "'a' & !'b'",
            "'a' <-> 'b'",
            "'a':*",
            "'vllm.ai'",
            "'a':A",
        ] {
            assert_eq!(terms(other), Some(None), "{other}");
        }
        assert_eq!(single_lexeme("'run'"), Some("run"));
        for not in ["", "''", "'it''s'", "'a' & 'b'", "run"] {
            assert_eq!(single_lexeme(not), None, "{not}");
        }
    }
}
