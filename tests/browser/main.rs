//! Browser tests: the pages in headless Chromium (Debian's chromium and chromium-driver),
//! one module per area. A binary of their own, so `cargo test --test browser` runs them
//! alone.

#[path = "../common/mod.rs"]
mod common;

mod artifacts;
mod bubbles;
mod capture;
mod comparison;
mod fleet_history;
mod fp8_incident;
mod grafana;
mod incident_window;
mod investigation;
mod itl_incident;
mod layout;
mod learn;
mod nsys_sqlite;
mod otlp_spans;
mod prometheus_window;
mod proposal;
mod search;
mod sign_in;
mod sso;
mod sweeps;
mod trace_diffs;
mod trace_sets;
mod trust;
mod webhooks;
