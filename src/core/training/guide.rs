//! The guide's pages (placeholder while the text is written).
