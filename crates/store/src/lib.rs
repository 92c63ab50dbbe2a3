//! perfjournal's store: each area's service (its SQL, its checks, its events), the
//! workers that run beside requests, blob storage and the database. It sits between the
//! pure core (`perfjournal-core`, below) and the binary's HTTP shell (above): nothing here
//! names a request, a response, a page or the API's schema.

pub use perfjournal_core as core;

pub mod artifacts;
pub mod auth;
pub mod bubbles;
pub mod capture;
pub mod comparisons;
pub mod db;
pub mod error;
pub mod grafana;
pub mod investigations;
pub mod memory;
pub mod otlp;
pub mod prometheus_range;
pub mod proposals;
pub mod search;
pub mod storage;
pub mod sweeps;
pub mod trace_diffs;
pub mod trace_sets;
pub mod training;
pub mod webhooks;

pub use error::{Error, Result};
