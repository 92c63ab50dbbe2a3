//! A search request as the page's URL or the API's query string states it, checked:
//! `q` (web-search syntax: "quoted phrases", OR, -exclude), one value per facet,
//! `from`/`to` dates and `page`. Anything else is named back as an error.

use chrono::NaiveDate;
use serde::Serialize;

use crate::method::{Phase, Verdict};
use crate::metric::Metric;
use crate::FieldError;

/// Longest accepted query text, in characters.
pub const MAX_QUERY: usize = 500;
/// Results per page.
pub const PAGE_SIZE: i64 = 20;

/// A facet: its URL parameter, its heading, and the document column it narrows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Facet {
    pub name: &'static str,
    pub label: &'static str,
    pub column: &'static str,
}

/// Every facet, in the order pages show them. `tag` matches one of a document's tags.
pub const FACETS: [Facet; 12] = [
    Facet {
        name: "kind",
        label: "Kind",
        column: "kind",
    },
    Facet {
        name: "metric",
        label: "Metric",
        column: "metric",
    },
    Facet {
        name: "phase",
        label: "Dominant phase",
        column: "phase",
    },
    Facet {
        name: "regime",
        label: "Regime",
        column: "regime",
    },
    Facet {
        name: "verdict",
        label: "Verdict",
        column: "verdict",
    },
    Facet {
        name: "model",
        label: "Model",
        column: "model",
    },
    Facet {
        name: "gpu",
        label: "GPU",
        column: "gpu",
    },
    Facet {
        name: "engine",
        label: "Engine",
        column: "engine",
    },
    Facet {
        name: "version",
        label: "Engine version",
        column: "engine_version",
    },
    Facet {
        name: "tag",
        label: "Tag",
        column: "tags",
    },
    Facet {
        name: "status",
        label: "Status",
        column: "status",
    },
    Facet {
        name: "author",
        label: "Author",
        column: "author",
    },
];

pub const KINDS: [&str; 5] = [
    "journal",
    "investigation",
    "artifact",
    "comparison",
    "proposal",
];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SearchQuery {
    pub q: String,
    /// (facet name, value), in [`FACETS`] order, at most one per facet.
    pub filters: Vec<(&'static str, String)>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Newest first instead of best match first (`sort=newest`).
    pub newest: bool,
    /// 1-based.
    pub page: i64,
}

impl SearchQuery {
    /// Reads query-string pairs; blank values are ignored, the last value wins.
    pub fn parse<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<SearchQuery, Vec<FieldError>> {
        let mut query = SearchQuery {
            page: 1,
            ..SearchQuery::default()
        };
        let mut errors = Vec::new();
        let mut filters: Vec<(&'static str, String)> = Vec::new();
        for (name, raw) in pairs {
            let value = raw.trim();
            match name {
                "q" => {
                    if value.chars().count() > MAX_QUERY {
                        errors.push(FieldError::new(
                            "q",
                            format!("The query is longer than {MAX_QUERY} characters"),
                        ));
                    }
                    query.q = value.to_string();
                }
                "from" | "to" if value.is_empty() => {}
                "from" | "to" => match NaiveDate::parse_from_str(value, "%Y-%m-%d") {
                    Ok(d) if name == "from" => query.from = Some(d),
                    Ok(d) => query.to = Some(d),
                    Err(_) => errors.push(FieldError::new(
                        name,
                        format!("'{value}' is not a date: use YYYY-MM-DD"),
                    )),
                },
                "sort" => match value {
                    "" | "relevance" => query.newest = false,
                    "newest" => query.newest = true,
                    other => errors.push(FieldError::new(
                        "sort",
                        format!("'{other}' is not an order: use relevance or newest"),
                    )),
                },
                "page" if value.is_empty() => {}
                "page" => match value.parse::<i64>() {
                    Ok(p) if (1..=500).contains(&p) => query.page = p,
                    _ => errors.push(FieldError::new(
                        "page",
                        "The page is a whole number from 1 to 500",
                    )),
                },
                _ => match FACETS.iter().find(|f| f.name == name) {
                    Some(_) if value.is_empty() => {}
                    Some(f) => match check_value(f.name, value) {
                        Ok(v) => {
                            filters.retain(|(n, _)| *n != f.name);
                            filters.push((f.name, v));
                        }
                        Err(e) => errors.push(e),
                    },
                    None => errors.push(FieldError::new(
                        name,
                        format!(
                            "'{name}' is not a search parameter: use q, from, to, sort, page or a facet ({})",
                            FACETS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
                        ),
                    )),
                },
            }
        }
        if let (Some(f), Some(t)) = (query.from, query.to) {
            if f > t {
                errors.push(FieldError::new(
                    "to",
                    "The end date comes before the start date",
                ));
            }
        }
        filters.sort_by_key(|(n, _)| FACETS.iter().position(|f| f.name == *n));
        query.filters = filters;
        if errors.is_empty() {
            Ok(query)
        } else {
            Err(errors)
        }
    }

    pub fn filter(&self, facet: &str) -> Option<&str> {
        self.filters
            .iter()
            .find(|(n, _)| *n == facet)
            .map(|(_, v)| v.as_str())
    }

    /// The query string for this search with `facet` set to `value` (or removed when
    /// `None`); the page goes back to 1.
    pub fn href_with(&self, facet: &str, value: Option<&str>) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if !self.q.is_empty() {
            pairs.push(("q", self.q.clone()));
        }
        for f in FACETS {
            let v = if f.name == facet {
                value.map(str::to_string)
            } else {
                self.filter(f.name).map(str::to_string)
            };
            if let Some(v) = v {
                pairs.push((f.name, v));
            }
        }
        if let Some(d) = self.from {
            pairs.push(("from", d.to_string()));
        }
        if let Some(d) = self.to {
            pairs.push(("to", d.to_string()));
        }
        if self.newest {
            pairs.push(("sort", "newest".to_string()));
        }
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        if query.is_empty() {
            "/search".to_string()
        } else {
            format!("/search?{query}")
        }
    }

    /// The same search in the other order (from page 1).
    pub fn href_sorted(&self, newest: bool) -> String {
        SearchQuery {
            newest,
            ..self.clone()
        }
        .href_with("", None)
    }

    /// The same search on another page.
    pub fn href_page(&self, page: i64) -> String {
        let base = self.href_with("", None);
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}page={page}")
    }
}

/// Facet values are stored lower-case; slugs must name something that exists.
fn check_value(facet: &str, value: &str) -> Result<String, FieldError> {
    let v = value.to_lowercase();
    let known = match facet {
        "metric" => Metric::from_slug(&v).map(|m| m.slug().to_string()),
        "phase" => Phase::ALL
            .into_iter()
            .map(|p| p.slug())
            .chain(["nothing"])
            .find(|s| *s == v.replace(['-', ' '], "_"))
            .map(str::to_string),
        "verdict" => Verdict::from_slug(&v.replace(['-', ' '], "_")).map(|x| x.slug().to_string()),
        "kind" => KINDS.iter().find(|k| **k == v).map(|k| k.to_string()),
        _ if v.chars().count() > 200 => None,
        _ => Some(v),
    };
    known.ok_or_else(|| FieldError::new(facet, format!("'{value}' is not a known {facet}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_facets_dates_and_rejects_unknowns() {
        let q = SearchQuery::parse([
            ("q", " chunked prefill "),
            ("metric", "TTFT"),
            ("gpu", "H100-SXM"),
            ("model", ""),
            ("from", "2026-01-01"),
            ("page", "2"),
        ])
        .unwrap();
        assert_eq!(q.q, "chunked prefill");
        assert_eq!(
            q.filters,
            vec![
                ("metric", "ttft".to_string()),
                ("gpu", "h100-sxm".to_string())
            ]
        );
        assert_eq!(q.page, 2);
        assert_eq!(q.from, NaiveDate::from_ymd_opt(2026, 1, 1));

        let errs = SearchQuery::parse([("mood", "sad"), ("metric", "speed"), ("to", "yesterday")])
            .unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["mood", "metric", "to"]);
        let errs = SearchQuery::parse([("from", "2026-02-01"), ("to", "2026-01-01")]).unwrap_err();
        assert_eq!(errs[0].field, "to");
    }

    #[test]
    fn links_keep_the_rest_of_the_search() {
        let q = SearchQuery::parse([("q", "a&b"), ("phase", "prefill")]).unwrap();
        assert_eq!(
            q.href_with("metric", Some("ttft")),
            "/search?q=a%26b&metric=ttft&phase=prefill"
        );
        assert_eq!(q.href_with("phase", None), "/search?q=a%26b");
        assert_eq!(q.href_page(3), "/search?q=a%26b&phase=prefill&page=3");
        assert_eq!(SearchQuery::default().href_with("", None), "/search");
        let newest = SearchQuery::parse([("q", "x"), ("sort", "newest"), ("page", "2")]).unwrap();
        assert!(newest.newest);
        assert_eq!(newest.href_page(3), "/search?q=x&sort=newest&page=3");
        assert_eq!(newest.href_sorted(false), "/search?q=x");
        assert_eq!(
            q.href_sorted(true),
            "/search?q=a%26b&phase=prefill&sort=newest"
        );
        let bad = SearchQuery::parse([("sort", "oldest")]).unwrap_err();
        assert_eq!(bad[0].field, "sort");
    }
}
