//! Extractors whose refusals use the app's own error answers: the styled page for pages, the
//! JSON envelope under `/api/`, never axum's plain-text rejection.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, AppError};

/// Path parameters, like `axum::extract::Path`; a part of the address that does not parse
/// (`/investigations/abc`, an id past i64) answers 404 naming it.
pub struct Path<T>(pub T);

/// Why the path did not parse, and which face answers.
pub struct PathError {
    api: bool,
    error: AppError,
}

impl IntoResponse for PathError {
    fn into_response(self) -> Response {
        if self.api {
            ApiError(self.error).into_response()
        } else {
            self.error.into_response()
        }
    }
}

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = PathError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PathError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(rejection) => {
                let full = parts
                    .extensions
                    .get::<OriginalUri>()
                    .map(|u| u.0.path().to_string())
                    .unwrap_or_else(|| parts.uri.path().to_string());
                let api = full.starts_with("/api/");
                if !matches!(rejection, PathRejection::FailedToDeserializePathParams(_)) {
                    return Err(PathError {
                        api,
                        error: AppError::Internal(anyhow::anyhow!("path extraction: {rejection}")),
                    });
                }
                Err(PathError {
                    api,
                    error: AppError::NotFound(format!(
                        "no such address: {full} (a part of it is not a valid id or name here)"
                    )),
                })
            }
        }
    }
}

/// `?after=ID&limit=N` on a list: the rows that come after the row `ID` (the last of the
/// previous page) in the list's own order, at most `limit` of them (default
/// [`Paging::DEFAULT`], at most [`Paging::MAX`]). A value that does not parse answers 422
/// naming the parameter; the list's other parameters (its filters) are the handler's and are
/// carried into the next page's link. The same type documents the two parameters in the
/// API's document (`params(Paging)`), so what is read and what is declared are one list.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// The id of the last item of the previous page (as in `next`).
    #[param(minimum = 1)]
    pub after: Option<i64>,
    /// Items per page, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200, required = false, default = 50)]
    pub limit: i64,
    #[param(ignore)]
    path: String,
    #[param(ignore)]
    others: Vec<(String, String)>,
}

impl Paging {
    pub const DEFAULT: i64 = 50;
    pub const MAX: i64 = 200;

    /// Rows to ask the database for: one more than a page, to know whether another follows.
    pub fn fetch(&self) -> i64 {
        self.limit + 1
    }

    /// Drops the extra row and answers the next page's address (`None` on the last page).
    pub fn finish<T>(&self, rows: &mut Vec<T>, id: impl Fn(&T) -> i64) -> Option<String> {
        if rows.len() as i64 <= self.limit {
            return None;
        }
        rows.truncate(self.limit as usize);
        let last = id(rows.last()?);
        let mut pairs = self.others.clone();
        pairs.push(("after".into(), last.to_string()));
        if self.limit != Self::DEFAULT {
            pairs.push(("limit".into(), self.limit.to_string()));
        }
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        Some(format!("{}?{query}", self.path))
    }

    /// True past the first page (pages show a link back to the newest).
    pub fn paged(&self) -> bool {
        self.after.is_some()
    }

    /// The first page with the same filters.
    pub fn first(&self) -> String {
        match serde_urlencoded::to_string(&self.others) {
            Ok(q) if !q.is_empty() => format!("{}?{q}", self.path),
            _ => self.path.clone(),
        }
    }

    /// The list's filters (every parameter but `after` and `limit`).
    pub fn filters(&self) -> &[(String, String)] {
        &self.others
    }

    /// What a page's pager shows, given the next page's address from [`Paging::finish`].
    pub fn pager(&self, next: Option<String>) -> Pager {
        Pager {
            paged: self.paged(),
            first: self.first(),
            next,
        }
    }

    /// `api`: the JSON API takes `after` and `limit` exactly as its document declares them
    /// (digits, nothing around them); pages also take an empty `after` (a form's blank
    /// choice) and spaces.
    fn parse(path: String, raw: Option<&str>, api: bool) -> Result<Paging, AppError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
            .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
        let mut paging = Paging {
            after: None,
            limit: Self::DEFAULT,
            path,
            others: Vec::new(),
        };
        for (key, value) in pairs {
            if api && matches!(key.as_str(), "after" | "limit") && !is_digits(&value) {
                return Err(AppError::field(
                    &key,
                    format!("expected a positive whole number, got {value:?}"),
                ));
            }
            match key.as_str() {
                "after" if value.trim().is_empty() => {}
                "after" => {
                    let id = crate::core::json_input::typed_id(&value);
                    paging.after = Some(id.ok_or_else(|| {
                        AppError::field(
                            "after",
                            format!("expected the id of the last row of the previous page, got {value:?}"),
                        )
                    })?);
                }
                "limit" => {
                    let n = value.trim().parse::<i64>().ok();
                    paging.limit = n.filter(|n| (1..=Self::MAX).contains(n)).ok_or_else(|| {
                        AppError::field(
                            "limit",
                            format!(
                                "expected a page size from 1 to {}, got {value:?}",
                                Self::MAX
                            ),
                        )
                    })?;
                }
                _ => paging.others.push((key, value)),
            }
        }
        Ok(paging)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Paging {
    type Rejection = PathError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, PathError> {
        let path = parts
            .extensions
            .get::<OriginalUri>()
            .map(|u| u.0.path().to_string())
            .unwrap_or_else(|| parts.uri.path().to_string());
        let api = path.starts_with("/api/");
        Paging::parse(path, parts.uri.query(), api).map_err(|error| PathError { api, error })
    }
}

fn is_digits(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())
}

/// The links under a paged list (templates/pager.html).
pub struct Pager {
    /// Past the first page: a link back to the newest is shown.
    pub paged: bool,
    pub first: String,
    pub next: Option<String>,
}

/// `?page=N` on a page that shows a bounded list held in memory (a set's ranks), `per_page`
/// rows at a time, 1-based. Missing or blank: the first page. Anything but a positive whole
/// number answers 422 naming `page`, as the other lists' paging parameters do; the other
/// parameters are the handler's.
pub struct PageNumber(pub usize);

impl PageNumber {
    pub fn parse(raw: Option<&str>) -> Result<PageNumber, AppError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
            .map_err(|e| AppError::BadRequest(format!("the query string is malformed: {e}")))?;
        let mut page = 1;
        for (key, value) in pairs.iter().filter(|(k, _)| k == "page") {
            if value.trim().is_empty() {
                continue;
            }
            page = value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    AppError::field(
                        key,
                        format!("must be a page number (a positive whole number), not {value:?}"),
                    )
                })?;
        }
        Ok(PageNumber(page))
    }

    /// The pages `rows` rows fill (at least one, so an empty list has its page).
    pub fn pages(rows: usize, per_page: usize) -> usize {
        rows.div_ceil(per_page).max(1)
    }

    /// The range of rows this page shows, or a 404 past the last page.
    pub fn rows(&self, rows: usize, per_page: usize) -> Result<std::ops::Range<usize>, AppError> {
        let pages = Self::pages(rows, per_page);
        if self.0 > pages {
            return Err(AppError::NotFound(format!(
                "no page {}: the {rows} rows here fill {pages} page{}",
                self.0,
                if pages == 1 { "" } else { "s" }
            )));
        }
        let start = (self.0 - 1) * per_page;
        Ok(start..(start + per_page).min(rows))
    }

    /// The links under the list: the previous and next pages' addresses, `base` being the
    /// page's own path.
    pub fn links(&self, base: &str, rows: usize, per_page: usize) -> PageLinks {
        let pages = Self::pages(rows, per_page);
        let href = |n: usize| {
            if n == 1 {
                base.to_string()
            } else {
                format!("{base}?page={n}")
            }
        };
        PageLinks {
            page: self.0,
            pages,
            prev: (self.0 > 1).then(|| href(self.0 - 1)),
            next: (self.0 < pages).then(|| href(self.0 + 1)),
        }
    }
}

/// Previous and next links of a numbered page (templates/page_links.html).
pub struct PageLinks {
    pub page: usize,
    pub pages: usize,
    pub prev: Option<String>,
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{PageNumber, Paging};

    #[test]
    fn page_numbers_parse_slice_and_link() {
        for q in ["page=abc", "page=0", "page=-1", "page=1.5", "x=1&page=2x"] {
            let err = PageNumber::parse(Some(q)).err().expect(q);
            // A 422 naming the parameter, as the other lists' paging answers.
            let fields: Vec<&str> = err.fields().iter().map(|f| f.field.as_str()).collect();
            assert_eq!(fields, ["page"], "{q}: {err}");
        }
        assert_eq!(PageNumber::parse(None).unwrap().0, 1);
        assert_eq!(PageNumber::parse(Some("page=")).unwrap().0, 1);
        let p = PageNumber::parse(Some("page=10")).unwrap();
        assert_eq!(p.rows(1000, 100).unwrap(), 900..1000);
        assert!(p.rows(950, 100).unwrap() == (900..950));
        assert!(p.rows(900, 100).is_err());
        let l = p.links("/s/1", 1000, 100);
        assert_eq!((l.prev.as_deref(), l.next), (Some("/s/1?page=9"), None));
        let l = PageNumber(2).links("/s/1", 1000, 100);
        assert_eq!(l.prev.as_deref(), Some("/s/1"));
        assert_eq!(l.next.as_deref(), Some("/s/1?page=3"));
        assert_eq!(PageNumber(1).rows(0, 100).unwrap(), 0..0);
    }

    #[test]
    fn next_page_keeps_filters_and_limit() {
        let p = Paging::parse(
            "/artifacts".into(),
            Some("investigation=4&limit=2&after="),
            false,
        )
        .unwrap();
        assert_eq!((p.after, p.limit, p.fetch()), (None, 2, 3));
        let mut rows = vec![9, 8, 7];
        let next = p.finish(&mut rows, |r| *r);
        assert_eq!(rows, vec![9, 8]);
        assert_eq!(
            next.as_deref(),
            Some("/artifacts?investigation=4&after=8&limit=2")
        );
        let mut last = vec![1];
        assert_eq!(p.finish(&mut last, |r| *r), None);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (q, field) in [
            ("after=abc", "after"),
            ("after=-3", "after"),
            ("limit=0", "limit"),
            ("limit=201", "limit"),
        ] {
            let err = Paging::parse("/x".into(), Some(q), false).err().expect(q);
            assert!(format!("{err:?}").contains(field), "{q}: {err:?}");
        }
    }

    #[test]
    fn the_api_takes_paging_values_only_as_digits() {
        for q in ["after=", "after=%205", "limit=+5", "limit=1.0"] {
            let err = Paging::parse("/api/v1/x".into(), Some(q), true)
                .err()
                .expect(q);
            assert!(format!("{err:?}").contains("whole number"), "{q}: {err:?}");
        }
        assert!(Paging::parse("/x".into(), Some("after=&limit=%205"), false).is_ok());
    }
}
