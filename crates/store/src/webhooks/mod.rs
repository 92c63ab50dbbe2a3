//! Webhook endpoints and their delivery queue in PostgreSQL. [`enqueue`] writes one
//! delivery per subscribed endpoint inside the caller's transaction, so a change and its
//! notice commit together and the request never waits on the network; [`run_worker`]
//! sends them (no redirects followed, a timeout per call), at least once, retrying with
//! backoff until [`MAX_ATTEMPTS`]; the rows are the delivery log.

use std::net::IpAddr;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};

use crate::core::webhook::{self, backoff_seconds, Endpoint, MAX_ATTEMPTS};

/// A registered endpoint with its latest deliveries, as the page and the API show it
/// (its secret is never read back).
#[derive(Debug, Clone, Serialize)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub slack: bool,
    pub created_at: DateTime<Utc>,
    /// Its latest deliveries, newest first (at most [`LOG_ROWS`]).
    pub deliveries: Vec<WebhookDelivery>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
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

/// Deliveries shown per endpoint on the admin page.
pub const LOG_ROWS: i64 = 20;

pub async fn add(pool: &PgPool, e: &Endpoint, by: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO webhooks (url, events, secret, slack, created_by) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id",
    )
    .bind(&e.url)
    .bind(&e.events)
    .bind(&e.secret)
    .bind(e.slack)
    .bind(by)
    .fetch_one(pool)
    .await
}

/// Removes an endpoint and its log; false when there was none.
pub async fn remove(pool: &PgPool, id: i64) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM webhooks WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Every endpoint (admins keep a handful), each with its latest [`LOG_ROWS`] deliveries.
pub async fn list(pool: &PgPool) -> sqlx::Result<Vec<Webhook>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: i64,
        url: String,
        events: Vec<String>,
        slack: bool,
        created_at: DateTime<Utc>,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, url, events, slack, created_at FROM webhooks ORDER BY id LIMIT 200",
    )
    .fetch_all(pool)
    .await?;
    let mut hooks = Vec::with_capacity(rows.len());
    for Row {
        id,
        url,
        events,
        slack,
        created_at,
    } in rows
    {
        let deliveries = sqlx::query_as(
            "SELECT id, event, status, attempts, last_status, last_error, created_at, \
             next_attempt_at, delivered_at FROM webhook_deliveries WHERE webhook_id = $1 \
             ORDER BY id DESC LIMIT $2",
        )
        .bind(id)
        .bind(LOG_ROWS)
        .fetch_all(pool)
        .await?;
        hooks.push(Webhook {
            id,
            url,
            events,
            slack,
            created_at,
            deliveries,
        });
    }
    Ok(hooks)
}

/// Queues `event` for every endpoint subscribed to it, in the caller's transaction.
pub async fn enqueue(
    conn: &mut PgConnection,
    event: &str,
    text: &str,
    data: &Value,
) -> sqlx::Result<u64> {
    debug_assert!(webhook::EVENTS.iter().any(|(n, _)| *n == event));
    let hooks: Vec<(i64, bool)> =
        sqlx::query_as("SELECT id, slack FROM webhooks WHERE $1 = ANY (events)")
            .bind(event)
            .fetch_all(&mut *conn)
            .await?;
    let at = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (id, slack) in &hooks {
        let body = webhook::body(event, &at, text, data, *slack).to_string();
        sqlx::query("INSERT INTO webhook_deliveries (webhook_id, event, body) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(event)
            .bind(body)
            .execute(&mut *conn)
            .await?;
    }
    Ok(hooks.len() as u64)
}

/// How long a claimed delivery is held before another worker may take it.
const LEASE_S: i64 = 60;
/// Per call: connect and answer within this.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle worker looks for due deliveries.
const POLL: Duration = Duration::from_secs(1);

/// The client for calls to the systems the app notifies (webhook endpoints, Grafana):
/// no redirects followed, [`TIMEOUT`] to connect and to answer.
pub fn client() -> reqwest::Result<reqwest::Client> {
    builder().build()
}

fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .user_agent(concat!("perfjournal/", env!("CARGO_PKG_VERSION")))
}

/// Networks an admin allowed webhooks to reach although they are link-local
/// (`PERFJOURNAL_WEBHOOK_ALLOW_CIDRS`).
#[derive(Clone, Debug, Default)]
pub struct Allowed(pub Vec<crate::auth::throttle::ProxyNet>);

impl Allowed {
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(ip))
    }

    /// May a delivery connect to `ip`?
    fn reachable(&self, ip: IpAddr) -> bool {
        !webhook::forbidden_address(ip) || self.contains(ip)
    }
}

/// Resolves endpoint names, keeping only the addresses a webhook may reach: a name that
/// resolves to a metadata address (now, whatever it resolved to when the endpoint was
/// saved) is not called.
struct Resolver(Allowed);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allowed = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<std::net::SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allowed.reachable(a.ip()))
                .collect();
            if kept.is_empty() && !found.is_empty() {
                return Err(format!(
                    "{host} resolves only to link-local or cloud-metadata addresses, which \
                     webhooks do not reach"
                )
                .into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// The client for webhook deliveries: [`client`]'s settings, and names resolved to
/// reachable addresses only.
fn delivery_client(allowed: &Allowed) -> reqwest::Result<reqwest::Client> {
    builder().dns_resolver(Resolver(allowed.clone())).build()
}

/// Sends due deliveries for ever (one at a time per replica; any replica may take any).
pub async fn run_worker(pool: PgPool, allowed: Allowed) {
    let client = match delivery_client(&allowed) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "webhook client; no deliveries will be sent");
            return;
        }
    };
    loop {
        match send_due(&pool, &client, &allowed).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "webhook worker"),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Claims and sends one due delivery; false when none was due.
pub async fn send_due(
    pool: &PgPool,
    client: &reqwest::Client,
    allowed: &Allowed,
) -> sqlx::Result<bool> {
    let claimed: Option<(i64, String, String, String, i32)> = sqlx::query_as(
        "UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $1), \
         attempts = d.attempts + 1 \
         FROM webhooks w WHERE w.id = d.webhook_id AND d.id = ( \
           SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now() \
           ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING d.id, w.url, w.secret, d.body, d.attempts",
    )
    .bind(LEASE_S as f64)
    .fetch_optional(pool)
    .await?;
    let Some((id, url, secret, body, attempts)) = claimed else {
        return Ok(false);
    };
    let event = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v["event"].as_str().map(str::to_string))
        .unwrap_or_default();
    // An endpoint saved before a network was disallowed is checked again, by address.
    let literal = reqwest::Url::parse(&url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?;
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .ok()
        })
        .filter(|ip| !allowed.reachable(*ip));
    let sent = match literal {
        Some(ip) => Err(format!(
            "{ip} is a link-local or cloud-metadata address, which webhooks do not reach"
        )),
        None => client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Perfjournal-Event", &event)
            .header("X-Perfjournal-Delivery", id.to_string())
            .header(
                "X-Perfjournal-Signature",
                webhook::signature(&secret, body.as_bytes()),
            )
            .body(body)
            .send()
            .await
            .map_err(|e| describe(&e)),
    };
    let (code, error) = match sent {
        Ok(r) if r.status().is_success() => (Some(r.status().as_u16() as i32), None),
        Ok(r) => (
            Some(r.status().as_u16() as i32),
            Some(if r.status().is_redirection() {
                format!("answered {} (redirects are not followed)", r.status())
            } else {
                format!("answered {}", r.status())
            }),
        ),
        Err(e) => (None, Some(e)),
    };
    match error {
        None => {
            sqlx::query(
                "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), \
                 last_status = $2, last_error = NULL WHERE id = $1",
            )
            .bind(id)
            .bind(code)
            .execute(pool)
            .await?;
        }
        Some(error) => {
            let gave_up = attempts >= MAX_ATTEMPTS;
            sqlx::query(
                "UPDATE webhook_deliveries SET status = CASE WHEN $4 THEN 'failed' ELSE 'pending' END, \
                 last_status = $2, last_error = $3, \
                 next_attempt_at = now() + make_interval(secs => $5) WHERE id = $1",
            )
            .bind(id)
            .bind(code)
            .bind(&error)
            .bind(gave_up)
            .bind(backoff_seconds(attempts) as f64)
            .execute(pool)
            .await?;
            tracing::warn!(delivery = id, attempts, %error, "webhook delivery failed");
        }
    }
    Ok(true)
}

/// A failed call in a few words, for the logs the pages show.
pub fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs())
    } else if e.is_connect() {
        "could not connect".to_string()
    } else {
        e.to_string().chars().take(300).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::dns::Resolve;

    #[tokio::test]
    async fn names_resolve_to_reachable_addresses_only() {
        let resolve = |allowed: Allowed, name: &str| {
            Resolver(allowed).resolve(name.parse::<reqwest::dns::Name>().unwrap())
        };
        let refused = resolve(Allowed::default(), "169.254.169.254").await;
        let e = refused.err().expect("refused").to_string();
        assert!(e.contains("link-local"), "{e}");
        let kept: Vec<_> = resolve(Allowed::default(), "localhost")
            .await
            .unwrap()
            .collect();
        assert!(!kept.is_empty());
        let lab = Allowed(vec!["169.254.0.0/16".parse().unwrap()]);
        assert_eq!(resolve(lab, "169.254.169.254").await.unwrap().count(), 1);
    }
}
