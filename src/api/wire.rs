//! The API's own shapes of the store's rows: what a client receives and what the OpenAPI
//! document states. Each is built from its row (`From`), so a column the store adds does
//! not change the API until it is added here, and the store needs no schema derive.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

/// A lock on a user name, as the admin page and API list it.
#[derive(Serialize, ToSchema)]
pub struct LockedName {
    pub name: String,
    /// The client address the name is locked for (absent when the address was unknown).
    pub address: Option<String>,
    pub seconds_left: u64,
}

impl From<crate::auth::throttle::LockedName> for LockedName {
    fn from(r: crate::auth::throttle::LockedName) -> Self {
        LockedName {
            name: r.name,
            address: r.address,
            seconds_left: r.seconds_left,
        }
    }
}

/// A field of a step as the other save left it and as this save sent it.
#[derive(Serialize, ToSchema)]
pub struct ChangedField {
    pub name: String,
    pub theirs: String,
    pub yours: String,
}

impl From<crate::investigations::ChangedField> for ChangedField {
    fn from(r: crate::investigations::ChangedField) -> Self {
        ChangedField {
            name: r.name,
            theirs: r.theirs,
            yours: r.yours,
        }
    }
}

/// The window as recorded, with who set it.
#[derive(Serialize, ToSchema)]
pub struct IncidentWindow {
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// Who set it last.
    pub set_by: String,
    pub set_at: DateTime<Utc>,
}

impl From<crate::investigations::window::IncidentWindow> for IncidentWindow {
    fn from(r: crate::investigations::window::IncidentWindow) -> Self {
        IncidentWindow {
            starts_at: r.starts_at,
            ends_at: r.ends_at,
            set_by: r.set_by,
            set_at: r.set_at,
        }
    }
}

/// Telemetry of the investigation read over a time window (a Prometheus window, OTLP
/// spans), with its range and how it sits against the incident window.
#[derive(Serialize, ToSchema)]
pub struct WindowTelemetry {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub status: String,
    /// The range it covers, Unix seconds, from its analysis: a Prometheus window's start
    /// and end, the first and last request arrival of spans.
    pub start: Option<f64>,
    pub end: Option<f64>,
}

impl From<crate::investigations::window::WindowTelemetry> for WindowTelemetry {
    fn from(r: crate::investigations::window::WindowTelemetry) -> Self {
        WindowTelemetry {
            id: r.id,
            name: r.name,
            kind: r.kind,
            status: r.status,
            start: r.start,
            end: r.end,
        }
    }
}

/// A registered endpoint with its latest deliveries, as the page and the API show it
/// (its secret is never read back).
#[derive(Serialize, ToSchema)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub slack: bool,
    pub created_at: DateTime<Utc>,
    /// Its latest deliveries, newest first (at most 20).
    pub deliveries: Vec<WebhookDelivery>,
}

impl From<crate::webhooks::Webhook> for Webhook {
    fn from(r: crate::webhooks::Webhook) -> Self {
        Webhook {
            id: r.id,
            url: r.url,
            events: r.events,
            slack: r.slack,
            created_at: r.created_at,
            deliveries: r.deliveries.into_iter().map(Into::into).collect(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WebhookDelivery {
    pub id: i64,
    pub event: String,
    /// pending, delivered or failed (gave up after the last attempt).
    pub status: String,
    pub attempts: i32,
    /// The receiver's last HTTP status, if it answered.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<crate::webhooks::WebhookDelivery> for WebhookDelivery {
    fn from(r: crate::webhooks::WebhookDelivery) -> Self {
        WebhookDelivery {
            id: r.id,
            event: r.event,
            status: r.status,
            attempts: r.attempts,
            last_status: r.last_status,
            last_error: r.last_error,
            created_at: r.created_at,
            next_attempt_at: r.next_attempt_at,
            delivered_at: r.delivered_at,
        }
    }
}

/// A registered server, as listed (its secret is never sent back: `has_secret` says
/// whether one is kept).
#[derive(Serialize, ToSchema)]
pub struct Source {
    pub id: i64,
    pub name: String,
    /// The server's base URL (the API is under `/api/v1`).
    pub url: String,
    /// `none`, `bearer` or `basic`.
    pub auth: String,
    /// The basic-auth user name (empty otherwise).
    pub username: String,
    pub has_secret: bool,
    pub added_by: Option<String>,
    pub added_at: DateTime<Utc>,
}

impl From<crate::prometheus_range::Source> for Source {
    fn from(r: crate::prometheus_range::Source) -> Self {
        Source {
            id: r.id,
            name: r.name,
            url: r.url,
            auth: r.auth,
            username: r.username,
            has_secret: r.has_secret,
            added_by: r.added_by,
            added_at: r.added_at,
        }
    }
}

/// A window as listed.
#[derive(Serialize, ToSchema)]
pub struct Window {
    pub id: i64,
    pub service: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    /// Request spans kept.
    pub spans: i64,
    /// Spans received but not kept.
    pub ignored: i64,
    /// Spans not kept, by reason.
    #[schema(value_type = Object)]
    pub ignored_reasons: serde_json::Value,
    /// The window's artifact, once built.
    pub artifact_id: Option<i64>,
    /// `open` (still receiving), `closed` (waiting for its artifact), or the artifact's
    /// status (`queued`, `analyzing`, `done`, `failed`).
    pub status: String,
}

impl From<crate::otlp::Window> for Window {
    fn from(r: crate::otlp::Window) -> Self {
        Window {
            id: r.id,
            service: r.service,
            window_start: r.window_start,
            window_end: r.window_end,
            spans: r.spans,
            ignored: r.ignored,
            ignored_reasons: r.ignored_reasons,
            artifact_id: r.artifact_id,
            status: r.status,
        }
    }
}
