//! perfjournal: guided performance investigations for LLM serving, with a journal.
//!
//! This crate is the HTTP shell: the JSON API, the pages, the server and the CLI. The
//! areas' services live in `perfjournal-store` and the pure computations in
//! `perfjournal-core`; both are re-exported under the names the shell has always used.

pub use perfjournal_core as core;
pub use perfjournal_store::{
    artifacts, bubbles, capture, comparisons, db, grafana, investigations, memory, otlp,
    prometheus_range, proposals, search, storage, sweeps, trace_diffs, trace_sets, training,
    webhooks,
};

pub mod api;
pub mod auth;
pub mod charts;
pub mod cli;
pub mod config;
pub mod documents;
pub mod error;
pub mod extract;
pub mod files;
pub mod http_metrics;
pub mod server;
pub mod state;
pub mod web;

#[cfg(test)]
#[path = "../crates/core/src/test_skip.rs"]
mod test_skip;
