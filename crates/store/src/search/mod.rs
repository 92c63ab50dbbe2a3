//! Search, similar symptoms, export and import: the SQL side of institutional memory.
//! Documents live in `search_documents`; triggers queue what changed and [`refresh`]
//! rebuilds those documents before any search reads them.

pub mod documents;
pub mod find;
pub mod similar;
pub mod thesaurus;
pub mod transfer;

pub use documents::refresh;
pub use find::{SearchOutcome, Searcher};
pub use similar::{is_indexing, similar_to, SimilarItem};

use crate::core::recall::query::SearchQuery;
use crate::error::{Error, Result};

/// Query-string pairs in order (the last value of a name wins when parsed).
pub fn query_pairs(raw: Option<&str>) -> Result<Vec<(String, String)>> {
    serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|_| Error::BadRequest("the query string is not valid URL encoding".into()))
}

/// The search query a query string asks for; 422 naming each bad parameter.
pub fn parse_query(raw: Option<&str>) -> Result<SearchQuery> {
    let pairs = query_pairs(raw)?;
    SearchQuery::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(Error::Invalid)
}
