//! Search, similar symptoms, export and import: the SQL side of institutional memory.
//! Documents live in `search_documents`; triggers queue what changed and [`refresh`]
//! rebuilds those documents before any search reads them.

pub mod documents;
pub mod find;
pub mod similar;
pub mod transfer;

pub use documents::refresh;
pub use find::{SearchOutcome, Searcher};
pub use similar::{similar_to, SimilarItem};
