//! The integration tests, one binary: each module an area of the app, all against a real
//! PostgreSQL (a fresh database per test) through `app(state)` or the server binary.

#[path = "../common/mod.rs"]
mod common;

mod access_matrix;
mod api_investigations;
mod artifacts;
mod blob_storage;
mod bounded;
mod bubbles;
mod capture;
mod cli;
mod comparison_effects;
mod comparisons;
mod embedded;
mod estimators;
mod foundation;
mod grafana;
mod hostile_editor;
mod hostile_uploads;
mod incident_window;
mod investigations;
mod itl_incident;
mod itl_steps;
mod journal;
mod learn;
mod nsys_sqlite;
mod openapi;
mod otlp;
mod paging;
mod perfetto;
mod prometheus_window;
mod prop_inputs;
mod proposals;
mod real_fixtures;
mod replicas;
mod search;
mod search_cli;
mod seed;
mod slow_clients;
mod sso;
mod sweeps;
mod trace_diffs;
mod trace_sets;
mod trust;
mod ux;
mod webhooks;
