//! Grafana annotations: each investigation's recorded CHANGE (step 7) and its published
//! journal entry appear on the team's dashboards, tagged `perfjournal`, the service and
//! the metric, spanning the incident (from when the investigation was opened to when the
//! change or entry was recorded), with a link back. [`note`] queues one in the caller's
//! transaction; [`run_worker`] creates it in Grafana (`POST /api/annotations`) and updates
//! it (`PUT /api/annotations/{id}`) whenever its text changes. A failure is retried (10 s
//! doubling to an hour) for as long as it takes and shown on the investigation's page:
//! nothing is dropped.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sqlx::{PgConnection, PgPool};

use crate::core::webhook::backoff_seconds;

/// Where annotations go.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// Grafana's base URL, without a trailing slash.
    pub url: String,
    /// A service-account token, sent as `Authorization: Bearer …`.
    pub token: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("token", &"…")
            .finish()
    }
}

/// Queues (or re-queues, with new text) the investigation's annotation of `kind`
/// ("change" or "entry"); `path` is the page it links to.
pub async fn note(
    conn: &mut PgConnection,
    investigation: i64,
    kind: &str,
    path: &str,
    text: &str,
) -> sqlx::Result<()> {
    let (opened, service, metric): (DateTime<Utc>, String, Option<String>) = sqlx::query_as(
        "SELECT i.created_at, i.service, s.data->>'metric' FROM investigations i \
         LEFT JOIN investigation_steps s ON s.investigation_id = i.id AND s.step = 1 \
         WHERE i.id = $1",
    )
    .bind(investigation)
    .fetch_one(&mut *conn)
    .await?;
    let mut tags = vec!["perfjournal".to_string(), kind.to_string()];
    for t in [Some(service), metric] {
        if let Some(t) = t.filter(|t| !t.trim().is_empty()) {
            tags.push(t.trim().to_string());
        }
    }
    let payload = json!({
        "time": opened.timestamp_millis(),
        "timeEnd": Utc::now().timestamp_millis(),
        "tags": tags,
        "text": text,
    });
    sqlx::query(
        "INSERT INTO grafana_annotations (investigation_id, kind, path, payload) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (investigation_id, kind) DO UPDATE SET \
         path = EXCLUDED.path, payload = EXCLUDED.payload, status = 'pending', attempts = 0, \
         next_attempt_at = now(), updated_at = now()",
    )
    .bind(investigation)
    .bind(kind)
    .bind(path)
    .bind(payload)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// An investigation's annotations as its page shows them.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Annotation {
    pub kind: String,
    pub grafana_id: Option<i64>,
    pub status: String,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub synced_at: Option<DateTime<Utc>>,
    pub next_attempt_at: DateTime<Utc>,
}

pub async fn of_investigation(pool: &PgPool, investigation: i64) -> sqlx::Result<Vec<Annotation>> {
    sqlx::query_as(
        "SELECT kind, grafana_id, status, attempts, last_error, synced_at, next_attempt_at \
         FROM grafana_annotations WHERE investigation_id = $1 ORDER BY kind",
    )
    .bind(investigation)
    .fetch_all(pool)
    .await
}

const LEASE_S: f64 = 60.0;
const POLL: Duration = Duration::from_secs(1);

/// The same outbound client as webhooks: no redirects, a timeout per call.
pub fn client() -> reqwest::Result<reqwest::Client> {
    crate::webhooks::client()
}

/// Syncs due annotations for ever.
pub async fn run_worker(pool: PgPool, target: Target, public_url: Option<String>) {
    let client = match client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "Grafana client; no annotations will be sent");
            return;
        }
    };
    loop {
        match sync_due(&pool, &client, &target, public_url.as_deref()).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "Grafana annotation worker"),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends one due annotation; false when none was due.
pub async fn sync_due(
    pool: &PgPool,
    client: &reqwest::Client,
    target: &Target,
    public_url: Option<&str>,
) -> sqlx::Result<bool> {
    #[derive(sqlx::FromRow)]
    struct Due {
        id: i64,
        grafana_id: Option<i64>,
        path: String,
        payload: Value,
        attempts: i32,
        updated_at: DateTime<Utc>,
    }
    let claimed: Option<Due> = sqlx::query_as(
        "UPDATE grafana_annotations SET next_attempt_at = now() + make_interval(secs => $1), \
         attempts = attempts + 1 WHERE id = ( \
           SELECT id FROM grafana_annotations WHERE status = 'pending' AND next_attempt_at <= now() \
           ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING id, grafana_id, path, payload, attempts, updated_at",
    )
    .bind(LEASE_S)
    .fetch_optional(pool)
    .await?;
    let Some(Due {
        id,
        grafana_id,
        path,
        mut payload,
        attempts,
        updated_at: version,
    }) = claimed
    else {
        return Ok(false);
    };
    let link = format!("{}{path}", public_url.unwrap_or(""));
    let text = format!(
        "{} <a href=\"{link}\">{link}</a>",
        payload["text"].as_str().unwrap_or_default()
    );
    payload["text"] = Value::String(text);
    let request = match grafana_id {
        None => client.post(format!("{}/api/annotations", target.url)),
        Some(g) => client.put(format!("{}/api/annotations/{g}", target.url)),
    };
    let sent = request
        .bearer_auth(&target.token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(payload.to_string())
        .send()
        .await;
    // An annotation deleted in Grafana is posted again rather than updated for ever.
    let gone = grafana_id.is_some()
        && matches!(&sent, Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND);
    let outcome: Result<Option<i64>, String> = match sent {
        Ok(r) if r.status().is_success() => {
            let status = r.status();
            let parsed = r
                .bytes()
                .await
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()));
            match parsed {
                Ok(v) => match (grafana_id, v["id"].as_i64()) {
                    (None, None) => Err(format!("answered {status} without an annotation id")),
                    (_, id) => Ok(id),
                },
                Err(_) if grafana_id.is_some() => Ok(None),
                Err(e) => Err(format!("answered {status} without an annotation id: {e}")),
            }
        }
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            let e = format!("answered {status}: {}", body.trim());
            Err(e.chars().take(300).collect())
        }
        Err(e) => Err(crate::webhooks::describe(&e)),
    };
    match outcome {
        Ok(new_id) => {
            // Synced only if the text did not change meanwhile (then it goes again).
            sqlx::query(
                "UPDATE grafana_annotations SET grafana_id = COALESCE(grafana_id, $2), \
                 status = CASE WHEN updated_at = $3 THEN 'synced' ELSE 'pending' END, \
                 attempts = 0, next_attempt_at = now(), last_error = NULL, synced_at = now() \
                 WHERE id = $1",
            )
            .bind(id)
            .bind(new_id)
            .bind(version)
            .execute(pool)
            .await?;
        }
        Err(error) if gone => {
            sqlx::query(
                "UPDATE grafana_annotations SET grafana_id = NULL, attempts = 0, \
                 next_attempt_at = now(), last_error = $2 WHERE id = $1",
            )
            .bind(id)
            .bind(format!("{error} (deleted in Grafana: it is posted again)"))
            .execute(pool)
            .await?;
        }
        Err(error) => {
            sqlx::query(
                "UPDATE grafana_annotations SET last_error = $2, \
                 next_attempt_at = now() + make_interval(secs => $3) WHERE id = $1",
            )
            .bind(id)
            .bind(&error)
            .bind(backoff_seconds(attempts) as f64)
            .execute(pool)
            .await?;
            tracing::warn!(annotation = id, attempts, %error, "Grafana annotation not sent");
        }
    }
    Ok(true)
}
