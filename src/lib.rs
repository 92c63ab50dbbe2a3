//! perfjournal: guided performance investigations for LLM serving, with a journal.

pub mod api;
pub mod artifacts;
pub mod auth;
pub mod bubbles;
pub mod capture;
pub mod charts;
pub mod cli;
pub mod comparisons;
pub mod config;
pub use perfjournal_core as core;
pub mod db;
pub mod error;
pub mod extract;
pub mod files;
pub mod grafana;
pub mod http_metrics;
pub mod investigations;
pub mod memory;
pub mod otlp;
pub mod prometheus_range;
pub mod proposals;
pub mod search;
pub mod server;
pub mod state;
pub mod storage;
pub mod sweeps;
pub mod trace_diffs;
pub mod trace_sets;
pub mod training;
pub mod web;
pub mod webhooks;

#[cfg(test)]
#[path = "../crates/core/src/test_skip.rs"]
mod test_skip;
