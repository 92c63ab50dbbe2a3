//! Prometheus servers over an incident window: the sources an admin registered (URL and
//! optional bearer token or basic auth, the host:port on the capture allowlist), and the
//! fetch an investigation asks for. The request answers at once with a `capturing`
//! artifact of kind `prometheus_range`; a background task asks the server what
//! `core::analyze::prometheus::range` plans, stores the answers as the blob, and the
//! usual analysis follows. A failure ends the artifact `failed` with the reason (the
//! capture heartbeat settles one whose process died).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;

use crate::artifacts::ArtifactStore;
use crate::capture::target_of;
use crate::core::analyze::prometheus::range::{
    self, Answer, CounterFetch, GaugeFetch, HistogramFetch, RangeFetch, ENGINES, MAX_WINDOW_S,
};
use crate::core::analyze::Kind;
use crate::core::capture::check_target;
use crate::core::FieldError;
use crate::error::Error;

/// How long one question to the server may take.
const QUERY_TIMEOUT_S: u64 = 30;
/// How long a whole fetch may take.
const FETCH_TIMEOUT_S: u64 = 300;
/// Largest answer to one question (aggregated series of at most 11,000 points are far
/// smaller; a label-values list of a big server is a few MiB).
const MAX_ANSWER_BYTES: usize = 32 << 20;

// ---------- sources ----------

/// A registered server, as listed (its secret is never sent back: `has_secret` says
/// whether one is kept).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// A checked source to register.
#[derive(Debug, Clone)]
pub struct NewSource {
    pub name: String,
    pub url: reqwest::Url,
    pub auth: String,
    pub username: String,
    pub secret: String,
}

/// How to authenticate to a server.
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct Credentials {
    pub auth: String,
    pub username: String,
    pub secret: String,
}

/// Reads a Prometheus base URL: http(s), no credentials in it, its host:port allowed.
pub fn parse_url(raw: &str, allowed: &[String]) -> Result<reqwest::Url, FieldError> {
    let url = reqwest::Url::parse(raw.trim()).map_err(|e| {
        FieldError::new(
            "url",
            format!(
                "'{}' is not a URL ({e}); write e.g. http://10.0.0.9:9090",
                raw.trim()
            ),
        )
    })?;
    if url.host_str().is_none() {
        return Err(FieldError::new("url", "the URL needs a host"));
    }
    check_target(&target_of(&url), allowed)?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(FieldError::new(
            "url",
            "give the server's base URL (e.g. http://10.0.0.9:9090), without a query",
        ));
    }
    Ok(url)
}

/// Checks a source as typed (admin page or API); every problem is reported.
pub fn check_source(
    name: &str,
    url: &str,
    auth: &str,
    username: &str,
    secret: &str,
    allowed: &[String],
) -> Result<NewSource, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        errors.push(FieldError::new("name", "a name of 1 to 100 characters"));
    }
    let url = parse_url(url, allowed).map_err(|e| errors.push(e)).ok();
    let auth = match auth.trim() {
        "" | "none" => "none",
        "bearer" => "bearer",
        "basic" => "basic",
        other => {
            errors.push(FieldError::new(
                "auth",
                format!("'{other}' is not none, bearer or basic"),
            ));
            "none"
        }
    };
    let username = username.trim();
    if auth == "basic" && username.is_empty() {
        errors.push(FieldError::new("username", "basic auth needs a user name"));
    }
    if auth != "none" && secret.is_empty() {
        errors.push(FieldError::new(
            "secret",
            if auth == "bearer" {
                "bearer auth needs the token"
            } else {
                "basic auth needs the password"
            },
        ));
    }
    if username.chars().count() > 200 || secret.len() > 4000 {
        errors.push(FieldError::new(
            "secret",
            "at most 200 characters of user name and 4,000 of secret",
        ));
    }
    match url {
        Some(url) if errors.is_empty() => Ok(NewSource {
            name: name.to_string(),
            url,
            auth: auth.to_string(),
            username: if auth == "basic" {
                username.to_string()
            } else {
                String::new()
            },
            secret: if auth == "none" {
                String::new()
            } else {
                secret.to_string()
            },
        }),
        _ => Err(errors),
    }
}

pub async fn list_sources(pool: &PgPool) -> sqlx::Result<Vec<Source>> {
    sqlx::query_as(
        "SELECT s.id, s.name, s.url, s.auth, s.username, s.secret <> '' AS has_secret,
                u.name AS added_by, s.added_at
         FROM prometheus_sources s LEFT JOIN users u ON u.id = s.added_by ORDER BY s.name",
    )
    .fetch_all(pool)
    .await
}

/// Registers a source; a name taken already is a field error.
pub async fn add_source(pool: &PgPool, s: &NewSource, by: i64) -> Result<i64, Error> {
    let id: Option<i64> = sqlx::query_scalar(
        "INSERT INTO prometheus_sources (name, url, auth, username, secret, added_by)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING RETURNING id",
    )
    .bind(&s.name)
    .bind(s.url.as_str())
    .bind(&s.auth)
    .bind(&s.username)
    .bind(&s.secret)
    .bind(by)
    .fetch_optional(pool)
    .await?;
    id.ok_or_else(|| Error::field("name", format!("a source named {} exists already", s.name)))
}

pub async fn remove_source(pool: &PgPool, id: i64) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM prometheus_sources WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A source by id (digits) or name, with its credentials.
async fn find_source(pool: &PgPool, key: &str) -> sqlx::Result<Option<(String, Credentials)>> {
    let id: Option<i64> = key.parse().ok();
    let row: Option<(String, String, String, String)> = sqlx::query_as(
        "SELECT url, auth, username, secret FROM prometheus_sources
         WHERE ($1::bigint IS NOT NULL AND id = $1) OR name = $2",
    )
    .bind(id)
    .bind(key)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(url, auth, username, secret)| {
        (
            url,
            Credentials {
                auth,
                username,
                secret,
            },
        )
    }))
}

// ---------- the window ----------

/// The fields of a window request as typed (form or JSON).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct WindowFields {
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub start: String,
    #[serde(default)]
    pub end: String,
    #[serde(default)]
    pub step: String,
    #[serde(default)]
    pub engine: String,
}

/// A checked window request.
#[derive(Clone, Debug)]
pub struct WindowRequest {
    pub base: reqwest::Url,
    pub credentials: Credentials,
    pub engine: String,
    pub start: f64,
    pub end: f64,
    pub step: f64,
}

/// Reads a window request; `source` (id or name) wins over `url`.
pub async fn parse_request(
    pool: &PgPool,
    f: &WindowFields,
) -> Result<Result<WindowRequest, Vec<FieldError>>, Error> {
    let allowed = crate::capture::allowed(pool).await?;
    let mut errors = Vec::new();
    let base = if !f.source.trim().is_empty() {
        match find_source(pool, f.source.trim()).await? {
            Some((url, credentials)) => match parse_url(&url, &allowed) {
                Ok(u) => Some((u, credentials)),
                Err(e) => {
                    errors.push(FieldError::new("source", e.message));
                    None
                }
            },
            None => {
                errors.push(FieldError::new(
                    "source",
                    format!("there is no Prometheus source '{}'", f.source.trim()),
                ));
                None
            }
        }
    } else if !f.url.trim().is_empty() {
        match parse_url(&f.url, &allowed) {
            Ok(u) => Some((u, Credentials::default())),
            Err(e) => {
                errors.push(e);
                None
            }
        }
    } else {
        errors.push(FieldError::new(
            "source",
            "choose a registered source or give a URL",
        ));
        None
    };
    let (start, end) =
        match crate::core::window::parse_window(&f.start, &f.end, MAX_WINDOW_S as f64) {
            Ok((s, e)) => (Some(s), Some(e)),
            Err(e) => {
                errors.extend(e);
                (None, None)
            }
        };
    let step = match f.step.trim() {
        "" => None,
        raw => match crate::core::quantity::read(raw, crate::core::quantity::Unit::S) {
            Ok(v) if v >= 1.0 && v <= MAX_WINDOW_S as f64 => Some(v),
            Ok(_) => {
                errors.push(FieldError::new("step", "a step of at least 1 s"));
                None
            }
            Err(e) => {
                errors.push(FieldError::new("step", e.to_string()));
                None
            }
        },
    };
    let engine = match f.engine.trim() {
        "" => "vllm".to_string(),
        e if ENGINES.contains(&e) => e.to_string(),
        other => {
            errors.push(FieldError::new(
                "engine",
                format!("'{other}' is not one of {}", ENGINES.join(", ")),
            ));
            String::new()
        }
    };
    Ok(match (base, start, end) {
        (Some((base, credentials)), Some(start), Some(end)) if errors.is_empty() => {
            let window = (end - start).round() as i64;
            Ok(WindowRequest {
                base,
                credentials,
                engine,
                start,
                end,
                step: range::step_for(window, step),
            })
        }
        _ => Err(errors),
    })
}

/// Starts fetching a window for an investigation: 404 for a missing investigation, 422
/// naming each refused field (nothing is stored); else the artifact's id, at once.
pub async fn begin(
    store: &ArtifactStore,
    investigation_id: i64,
    fields: &WindowFields,
    user_id: i64,
) -> Result<i64, Error> {
    if crate::investigations::db::get(&store.pool, investigation_id)
        .await?
        .is_none()
    {
        return Err(Error::not_found(format!(
            "no investigation {investigation_id}"
        )));
    }
    let request = parse_request(&store.pool, fields)
        .await?
        .map_err(Error::Invalid)?;
    Ok(start(store, investigation_id, request, user_id).await?)
}

async fn start(
    store: &ArtifactStore,
    investigation_id: i64,
    request: WindowRequest,
    user_id: i64,
) -> sqlx::Result<i64> {
    let at = |t: f64| {
        DateTime::from_timestamp(t as i64, 0)
            .map(|d| d.format("%Y%m%dT%H%M%SZ").to_string())
            .unwrap_or_default()
    };
    let name = format!(
        "prometheus-{}-{}-{}.json",
        request.engine,
        at(request.start),
        at(request.end)
    );
    let id = crate::capture::insert_capturing(
        store,
        investigation_id,
        &name,
        Kind::PrometheusRange,
        user_id,
        request.base.as_str(),
    )
    .await?;
    let store = store.clone();
    tokio::spawn(async move {
        let work = async {
            let fetched =
                tokio::time::timeout(Duration::from_secs(FETCH_TIMEOUT_S), fetch(&request))
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "the server took longer than {FETCH_TIMEOUT_S} s in all"
                        ))
                    })?;
            let body = serde_json::to_vec(&fetched).map_err(|e| e.to_string())?;
            let chunks = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from(body))]);
            store
                .blobs
                .put_stream(chunks, store.upload_limit)
                .await
                .map_err(|e| format!("storing the answers failed: {e}"))
        };
        crate::capture::settle(&store, id, work, "Prometheus fetch failed").await;
    });
    Ok(id)
}

// ---------- asking the server ----------

fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(QUERY_TIMEOUT_S))
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("perfjournal/", env!("CARGO_PKG_VERSION")))
        .build()
}

struct Server<'a> {
    client: reqwest::Client,
    request: &'a WindowRequest,
}

impl Server<'_> {
    /// GET an API path; the `data` of a `success` answer, else why not, in words.
    async fn get(&self, path: &str, params: &[(&str, String)]) -> Result<Value, String> {
        let mut url = self.request.base.clone();
        let base_path = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{base_path}{path}"));
        let shown = url.clone();
        url.query_pairs_mut()
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())));
        let mut call = self.client.get(url);
        let c = &self.request.credentials;
        call = match c.auth.as_str() {
            "bearer" => call.bearer_auth(&c.secret),
            "basic" => call.basic_auth(&c.username, Some(&c.secret)),
            _ => call,
        };
        let mut response = call.send().await.map_err(|e| {
            if e.is_timeout() {
                format!("{shown} did not answer within {QUERY_TIMEOUT_S} s")
            } else {
                format!("could not reach {shown}: {}", error_chain(&e))
            }
        })?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!(
                "{shown} answered {status}, a redirect; redirects are not followed: register \
                 the final address"
            ));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
        {
            return Err(too_large(&shown));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading the answer of {shown} failed: {}", error_chain(&e)))?
        {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(too_large(&shown));
            }
            body.extend_from_slice(&chunk);
        }
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        let said = |v: &Value| {
            let kind = v
                .get("errorType")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let text = v.get("error").and_then(Value::as_str).unwrap_or("");
            format!("{kind}: {}", cut(text, 300))
        };
        match parsed {
            Some(v) if status.is_success() && v.get("status") == Some(&Value::from("success")) => {
                Ok(v.get("data").cloned().unwrap_or(Value::Null))
            }
            Some(v) if v.get("status") == Some(&Value::from("error")) => {
                Err(format!("{shown} answered {status}: {}", said(&v)))
            }
            _ if !status.is_success() => Err(format!("{shown} answered {status}")),
            _ => Err(format!(
                "{shown} did not answer as a Prometheus API does (JSON with a status)"
            )),
        }
    }

    async fn instant(&self, query: String) -> Result<Answer, String> {
        let data = self
            .get(
                "/api/v1/query",
                &[("query", query.clone()), ("time", secs(self.request.end))],
            )
            .await?;
        Ok(Answer { query, data })
    }

    async fn range(&self, query: String) -> Result<Answer, String> {
        let r = self.request;
        let data = self
            .get(
                "/api/v1/query_range",
                &[
                    ("query", query.clone()),
                    ("start", secs(r.start)),
                    ("end", secs(r.end)),
                    ("step", secs(r.step)),
                ],
            )
            .await?;
        Ok(Answer { query, data })
    }
}

fn secs(t: f64) -> String {
    format!("{t:.3}")
}

fn too_large(url: &reqwest::Url) -> String {
    format!(
        "the answer of {url} is larger than {} MiB, the limit for one answer",
        MAX_ANSWER_BYTES >> 20
    )
}

fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Asks the server for everything the window's analysis reads.
pub async fn fetch(request: &WindowRequest) -> Result<RangeFetch, String> {
    let server = Server {
        client: client().map_err(|e| format!("no HTTP client: {e}"))?,
        request,
    };
    let names = server
        .get(
            "/api/v1/label/__name__/values",
            &[
                ("match[]", range::names_selector(&request.engine)),
                ("start", secs(request.start)),
                ("end", secs(request.end)),
            ],
        )
        .await?;
    let names: Vec<String> = serde_json::from_value(names)
        .map_err(|_| "the list of metric names is not a list of strings".to_string())?;
    let plan = range::plan(&request.engine, &names);
    if !plan.reads_engine() {
        return Err(range::no_engine_metrics(
            request.base.as_str(),
            &request.engine,
        ));
    }
    let window_s = (request.end - request.start).round() as i64;
    let rate_s = range::rate_window_s(request.step);
    let mut histograms = Vec::new();
    for h in plan.histograms {
        let buckets = server.instant(h.buckets_query(window_s)).await?;
        let sum = server.instant(h.sum_query(window_s)).await?;
        histograms.push(HistogramFetch {
            plan: h,
            buckets,
            sum,
        });
    }
    let mut counters = Vec::new();
    for c in plan.counters {
        let increase = server.instant(c.increase_query(window_s)).await?;
        let rate = server.range(c.rate_query(rate_s)).await?;
        counters.push(CounterFetch {
            plan: c,
            increase,
            rate,
        });
    }
    let mut gauges = Vec::new();
    for g in plan.gauges {
        let range = server.range(g.gauge_query()).await?;
        gauges.push(GaugeFetch { plan: g, range });
    }
    Ok(RangeFetch {
        format: range::FORMAT.to_string(),
        source: request.base.to_string(),
        engine: request.engine.clone(),
        start: request.start,
        end: request.end,
        step: request.step,
        window_s,
        rate_window_s: rate_s,
        names,
        histograms,
        counters,
        gauges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_checked_against_the_allowlist() {
        let allowed = vec!["127.0.0.1:9090".to_string()];
        let ok = check_source(
            "fleet",
            "http://127.0.0.1:9090",
            "bearer",
            "",
            "t0k",
            &allowed,
        )
        .unwrap();
        assert_eq!(ok.auth, "bearer");
        let e =
            check_source("fleet", "http://10.1.1.1:9090", "none", "", "", &allowed).unwrap_err();
        assert!(
            e[0].message.contains("not in the capture allowlist"),
            "{e:?}"
        );
        let e = check_source("", "http://127.0.0.1:9090", "basic", "", "", &allowed).unwrap_err();
        let fields: Vec<_> = e.iter().map(|x| x.field.as_str()).collect();
        assert_eq!(fields, ["name", "username", "secret"]);
    }
}
