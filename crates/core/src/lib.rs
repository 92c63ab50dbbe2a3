//! The pure core: plain data in, plain data out. Nothing here knows about HTTP, SQL,
//! files or the clock; the shell (web, CLI, db) calls it.

pub mod accuracy;
pub mod analyze;
pub mod blob;
pub mod capture;
pub mod estimate;
pub mod fmt;
pub mod json_input;
pub mod method;
pub mod metric;
pub mod pairs;
pub mod proposal;
pub mod quantity;
pub mod recall;
pub mod settings;
pub mod sso;
pub mod stats;
pub mod training;
pub mod webhook;
pub mod window;

#[cfg(test)]
mod test_skip;

use serde::{Deserialize, Serialize};

/// One problem with one input, named so a form can put it beside its field and an API
/// client can point at the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
