//! Search and recall over past investigations and entries (the house's institutional
//! memory), pure: what an investigation or entry looks like as a symptom (its
//! profile), how alike two symptoms are, the search request a page or the API sends,
//! the in-memory search index that answers it, safe highlighted snippets, import
//! bundles and the Atom feed. No SQL here.

pub mod atom;
pub mod bundle;
pub mod index;
pub mod profile;
pub mod query;
pub mod similarity;
pub mod snippet;
pub mod thesaurus;
pub mod tsquery;
pub mod vocabulary;
pub mod window_shape;

pub use profile::Profile;
pub use query::{Facet, SearchQuery, FACETS};
pub use similarity::{similarity, Similarity};
