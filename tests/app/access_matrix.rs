//! Route × role access matrix, generated from the router itself: every `.route("…", …)`
//! call in the source under src/ (read at test time, so a new route is checked without
//! touching this file) plus every path of the served OpenAPI document, requested as
//! anonymous, viewer, editor and admin with the path parameters filled by records that
//! exist. The rule: anonymous callers are sent to /login (pages) or answered 401 (API,
//! and the routes that check a token themselves) except on the public routes; viewers
//! never succeed at a write nor open a write form; editors are refused the admin pages;
//! everyone signed in reads the rest, blob downloads included; nobody gets a 5xx; the
//! reads write nothing. Then the CSRF matrix over every write route.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use common::tables::{row_counts, write_counters};
use common::{spawn_app, TestApp};
use perfjournal::auth::Role;

/// Routes anyone may call without signing in.
const PUBLIC: &[&str] = &[
    "/login",
    "/setup",
    "/logout",
    "/healthz",
    "/static/",
    // Single sign-on: starting it and the provider's callback come before any session.
    "/auth/oidc/",
    // The API document (it describes the API, it holds no data) and the short address
    // that leads to it: client generators read it without a token.
    "/api/v1/openapi.json",
    "/api/openapi.json",
];

/// Routes outside the login wall that check a token (or session) themselves, for
/// scrapers and feed readers: anonymous callers get 401, not a login redirect.
const OWN_AUTH: &[&str] = &["/metrics", "/journal/feed.atom", "/v1/traces"];

/// Routes that take a bearer token only (machines send to them; a session is never
/// read, so a forged browser request has nothing to ride on): called with the role's
/// token, and left out of the CSRF matrix.
const TOKEN_ONLY: &[&str] = &["/v1/traces"];

/// Writes every signed-in user may make on their own account (or that only compute).
const SELF_SERVICE: &[(&str, &str)] = &[
    ("POST", "/login"),
    ("POST", "/auth/oidc/start"),
    ("POST", "/setup"),
    ("POST", "/logout"),
    ("POST", "/settings/tokens"),
    ("POST", "/settings/tokens/{id}/revoke"),
    ("POST", "/settings/password"),
    ("POST", "/api/v1/estimate/{name}"),
    // Training: anyone signed in may train; it writes only their own attempts and answers.
    ("POST", "/drills/{drill_id}/answer"),
    ("POST", "/drills/regime/answer"),
    ("POST", "/drills/ranking/answer"),
    ("POST", "/learn/{slug}/check"),
    ("POST", "/replays/{id}/answer"),
    ("POST", "/api/v1/drills/{drill_id}/answer"),
    ("POST", "/api/v1/replays/{investigation_id}/answer"),
    // Computes a load sweep's answer from stored analyses; stores nothing.
    ("POST", "/api/v1/sweeps"),
];

/// Pages for the team's leads (editors and admins): viewers are refused them.
const LEADS_ONLY: &[&str] = &["/learn/team"];

fn is_public(path: &str) -> bool {
    PUBLIC
        .iter()
        .any(|p| path == *p || (p.ends_with('/') && path.starts_with(p)))
}

fn is_admin_route(path: &str) -> bool {
    path.starts_with("/admin/")
        || path.starts_with("/api/v1/admin/")
        || path == "/api/v1/webhooks"
        || path.starts_with("/api/v1/webhooks/")
        || path == "/api/v1/prometheus-sources"
        || path.starts_with("/api/v1/prometheus-sources/")
}

/// API routes whose writes only admins make (everyone signed in reads them).
const ADMIN_API_WRITES: &[&str] = &["/api/v1/search/synonyms", "/api/v1/search/synonyms/{id}"];

/// The `.route("path", get(..).post(..))` calls of one Rust source text: path and methods.
fn routes_in(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(".route(") {
        rest = &rest[at + ".route(".len()..];
        let trimmed = rest.trim_start();
        let Some(after_quote) = trimmed.strip_prefix('"') else {
            continue;
        };
        let Some(end) = after_quote.find('"') else {
            break;
        };
        let path = after_quote[..end].to_string();
        // The handler expression: up to the parenthesis closing `.route(`.
        let expr = &after_quote[end + 1..];
        let mut depth = 1usize;
        let mut close = expr.len();
        for (i, c) in expr.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let expr = &expr[..close];
        let mut methods = Vec::new();
        for m in ["get", "post", "put", "patch", "delete"] {
            let needle = format!("{m}(");
            let found = expr.match_indices(&needle).any(|(i, _)| {
                i == 0 || {
                    let prev = expr.as_bytes()[i - 1];
                    !(prev.is_ascii_alphanumeric() || prev == b'_')
                }
            });
            if found {
                methods.push(m.to_ascii_uppercase());
            }
        }
        out.push((path, methods));
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every route the source declares, keyed by path, with its methods.
fn source_routes() -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut all: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (path, methods) in routes_in(&text) {
            let entry = all.entry(path).or_default();
            for m in methods {
                if !entry.contains(&m) {
                    entry.push(m);
                }
            }
        }
    }
    all
}

struct Ids {
    investigation: i64,
    entry: i64,
    artifact: i64,
    comparison: i64,
    trace_diff: i64,
    trace_set: i64,
    proposal: i64,
    token: i64,
    user: i64,
    synonyms: i64,
    webhook: i64,
    prometheus_source: i64,
    otlp_window: i64,
}

/// The path with each parameter replaced by the id of a record that exists.
fn fill(path: &str, ids: &Ids) -> String {
    let bare = path.strip_prefix("/api/v1").unwrap_or(path);
    let id = if bare.starts_with("/investigations/") || bare.starts_with("/replays/") {
        // (the first investigation is a demo one, with a published entry: replayable)
        ids.investigation
    } else if bare.starts_with("/journal/") {
        ids.entry
    } else if bare.starts_with("/artifacts/") {
        ids.artifact
    } else if bare.starts_with("/comparisons/") {
        ids.comparison
    } else if bare.starts_with("/trace-diffs/") {
        ids.trace_diff
    } else if bare.starts_with("/trace-sets/") {
        ids.trace_set
    } else if bare.starts_with("/proposals/") {
        ids.proposal
    } else if bare.starts_with("/settings/tokens/") {
        ids.token
    } else if bare.starts_with("/admin/users/") {
        ids.user
    } else if bare.starts_with("/admin/thesaurus/") || bare.starts_with("/search/synonyms/") {
        ids.synonyms
    } else if bare.starts_with("/admin/webhooks/") || bare.starts_with("/webhooks/") {
        ids.webhook
    } else if bare.starts_with("/admin/prometheus/") || bare.starts_with("/prometheus-sources/") {
        ids.prometheus_source
    } else if bare.starts_with("/otlp/windows/") {
        ids.otlp_window
    } else {
        assert!(
            !path.contains("{id}"),
            "{path}: the access matrix does not know which record fills {{id}}; add it to fill()"
        );
        0
    };
    let filled = path
        .replace("{id}", &id.to_string())
        .replace("{step}", "1")
        .replace("{name}", "memory-fit")
        .replace("{investigation_id}", &ids.investigation.to_string())
        .replace("{estimator}", "decode-floor")
        .replace("{drill_id}", "decode-floor.1")
        .replace("{slug}", "procedure")
        .replace("{*file}", "htmx.min.js");
    assert!(
        !filled.contains('{'),
        "{path}: a path parameter the access matrix cannot fill; add it to fill()"
    );
    filled
}

fn request_log(n: usize, shift: f64) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let queue = 20.0 + shift + i as f64;
        out.push_str(&format!(
            "{{\"request_id\":\"r{i}\",\"arrival_ts\":{},\"queue_wait_ms\":{queue},\"prefill_ms\":150,\"first_token_ms\":{},\"decode_ms\":4000,\"total_ms\":{},\"prompt_tokens\":1800,\"output_tokens\":250,\"tenant\":\"chat\"}}\n",
            1_764_400_000.0 + i as f64,
            queue + 150.0,
            queue + 4150.0
        ));
    }
    out.into_bytes()
}

async fn first_id(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT id FROM {table} ORDER BY id LIMIT 1"))
        .fetch_optional(&app.pool)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no row in {table} to fill a path with"))
}

/// One caller: a browser session (with its CSRF token) for pages, a bearer token for the API.
struct Caller {
    role: &'static str,
    client: TestApp,
    csrf: Option<String>,
    token: Option<String>,
}

impl Caller {
    async fn send(&mut self, method: &str, path: &str) -> common::Reply {
        let write = method != "GET";
        let mut req = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).unwrap())
            .uri(path);
        let api = path.starts_with("/api/") || TOKEN_ONLY.contains(&path);
        let body = if api {
            if let Some(t) = &self.token {
                req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
            }
            if path == "/api/v1/artifacts" && write {
                req = req.header(header::CONTENT_TYPE, "application/octet-stream");
                Body::empty()
            } else if write {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from("{}")
            } else {
                Body::empty()
            }
        } else {
            if write {
                req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                if let Some(t) = &self.csrf {
                    req = req.header("x-csrf-token", t);
                }
            }
            Body::empty()
        };
        if api {
            // Bearer calls carry no session, as a script's would.
            let saved = self.client.cookie.take();
            let r = self.client.send(req.body(body).unwrap()).await;
            self.client.cookie = saved;
            r
        } else {
            self.client.send(req.body(body).unwrap()).await
        }
    }
}

/// A seeded app with one user per role (plus a victim whose token and account fill the
/// path parameters), the records every path needs, and the full route list.
async fn matrix_app() -> (TestApp, Ids, BTreeMap<String, Vec<String>>) {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    app.seed_demo().await;
    app.add_user("vera", Role::Viewer).await;
    app.add_user("ed", Role::Editor).await;
    let victim = app.add_user("victor", Role::Viewer).await;
    let victim_token = perfjournal::auth::tokens::create(&app.pool, victim, "victim")
        .await
        .unwrap()
        .0;

    // An uploaded artifact (so blob downloads are in the matrix) and a comparison of two.
    let admin_token = app.api_token("ada").await;
    let base = common::uploads::upload_analyzed(
        &mut app,
        &admin_token,
        "base.jsonl",
        request_log(30, 0.0),
    )
    .await;
    let cand = common::uploads::upload_analyzed(
        &mut app,
        &admin_token,
        "cand.jsonl",
        request_log(30, 500.0),
    )
    .await;
    let r = app
        .api(
            "POST",
            "/api/v1/comparisons",
            &admin_token,
            Some(serde_json::json!({"baseline": [base], "candidate": [cand], "variable": "queue"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // A trace diff row (its page and document render a failed one as well as a done one).
    let trace_diff: i64 = sqlx::query_scalar(
        "INSERT INTO trace_diffs (control_artifact_id, test_artifact_id, status, error)
         VALUES ($1, $2, 'failed', 'the control trace: not a trace') RETURNING id",
    )
    .bind(base)
    .bind(cand)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // A trace set row (failed, as one whose ranks were named twice).
    let trace_set: i64 = sqlx::query_scalar(
        "INSERT INTO trace_sets (name, status, error)
         VALUES ('tp4', 'failed', 'rank 0 is in two traces') RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO webhooks (url, events, secret) \
         VALUES ('http://127.0.0.1:9/hook', '{journal.published}', 'a-secret-of-24-characters')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO prometheus_sources (name, url) VALUES ('fleet', 'http://127.0.0.1:9/')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    // A span window (as /v1/traces leaves one), with a span in it.
    let otlp_window: i64 = sqlx::query_scalar(
        "INSERT INTO otlp_windows (service, window_start, window_end, spans)
         VALUES ('vllm-a', '2026-12-02 14:00Z', '2026-12-02 15:00Z', 1) RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO otlp_span_rows (window_id, arrival_ts, line) VALUES ($1, 1796220001, $2)",
    )
    .bind(otlp_window)
    .bind(r#"{"resourceSpans":[]}"#)
    .execute(&app.pool)
    .await
    .unwrap();
    let ids = Ids {
        otlp_window,
        prometheus_source: first_id(&app, "prometheus_sources").await,
        trace_diff,
        trace_set,
        investigation: first_id(&app, "investigations").await,
        entry: first_id(&app, "journal_entries").await,
        artifact: base,
        comparison: r.json()["id"].as_i64().unwrap(),
        proposal: first_id(&app, "proposals").await,
        token: victim_token.id,
        user: victim,
        synonyms: first_id(&app, "search_synonyms").await,
        webhook: first_id(&app, "webhooks").await,
    };

    // Every route: the source's, then the API document's.
    let mut routes = source_routes();
    let doc = app
        .api("GET", "/api/v1/openapi.json", &admin_token, None)
        .await
        .json();
    let base_url = doc["servers"][0]["url"].as_str().unwrap().to_string();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let entry = routes.entry(format!("{base_url}{path}")).or_default();
        for m in item.as_object().unwrap().keys() {
            let m = m.to_ascii_uppercase();
            if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&m.as_str())
                && !entry.contains(&m)
            {
                entry.push(m);
            }
        }
    }
    assert!(routes.len() > 60, "the route reader found {}", routes.len());
    for must in [
        "/admin/users",
        "/artifacts/{id}/download",
        "/api/v1/artifacts/{id}/download",
    ] {
        assert!(routes.contains_key(must), "{must} missing from {routes:?}");
    }

    (app, ids, routes)
}

/// Every (method, path template) pair: reads first, then writes, signing out last (it
/// ends the session).
fn plan(routes: &BTreeMap<String, Vec<String>>) -> Vec<(String, String)> {
    let mut plan: Vec<(String, String)> = routes
        .iter()
        .flat_map(|(p, ms)| ms.iter().map(move |m| (m.clone(), p.clone())))
        .collect();
    plan.sort_by_key(|(m, p)| (m != "GET", p == "/logout"));
    plan
}

/// The access rule a reply breaks, if any (server errors are checked before this).
fn broken_rule(role: &str, method: &str, template: &str, r: &common::Reply) -> Option<String> {
    let s = r.status;
    let write = method != "GET";
    if role == "anonymous" && OWN_AUTH.contains(&template) {
        return (s != StatusCode::UNAUTHORIZED).then(|| "expected 401".to_string());
    }
    if template == "/metrics" && role != "admin" {
        // A scraper's token, or an admin's session: other sessions are refused.
        return (s != StatusCode::FORBIDDEN)
            .then(|| "metrics by session are admin-only".to_string());
    }
    if role == "anonymous" && !is_public(template) {
        if template.starts_with("/api/") {
            return (s != StatusCode::UNAUTHORIZED).then(|| "expected 401".to_string());
        }
        let to_login = s.is_redirection() && r.location().is_some_and(|l| l.starts_with("/login"));
        return (!to_login)
            .then(|| format!("expected a redirect to /login, got {:?}", r.location()));
    }
    if template == "/settings/tokens/{id}/revoke" {
        // The token in the path is another user's: nobody but its owner may revoke it.
        return (s != StatusCode::NOT_FOUND).then(|| "another's token must be 404".to_string());
    }
    if role == "viewer" && write && !SELF_SERVICE.contains(&(method, template)) {
        return (s != StatusCode::FORBIDDEN).then(|| "a viewer's write must get 403".to_string());
    }
    if role == "viewer" && LEADS_ONLY.contains(&template) {
        return (s != StatusCode::FORBIDDEN)
            .then(|| "a leads' page must refuse viewers".to_string());
    }
    if role == "editor" && write && ADMIN_API_WRITES.contains(&template) {
        return (s != StatusCode::FORBIDDEN).then(|| "an admin write must get 403".to_string());
    }
    if (role == "viewer" || role == "editor") && is_admin_route(template) {
        return (s != StatusCode::FORBIDDEN).then(|| "an admin route must get 403".to_string());
    }
    let write_form =
        template.ends_with("/new") || template.ends_with("/edit") || template == "/journal/import";
    if role == "viewer" && write_form {
        // The forms of writes a viewer may not make are refused up front.
        return (s != StatusCode::FORBIDDEN)
            .then(|| "a viewer's write form must get 403".to_string());
    }
    if !write && role != "anonymous" && !OWN_AUTH.contains(&template) {
        // Everyone signed in reads everything outside the admin pages, downloads included.
        let refused = s == StatusCode::UNAUTHORIZED || s == StatusCode::FORBIDDEN;
        return refused.then(|| "a signed-in reader was refused".to_string());
    }
    None
}

#[tokio::test]
async fn every_route_answers_each_role_by_the_access_rule() {
    let (app, ids, routes) = matrix_app().await;
    let plan = plan(&routes);

    let mut callers = Vec::new();
    for (role, name) in [
        ("anonymous", None),
        ("viewer", Some("vera")),
        ("editor", Some("ed")),
        ("admin", Some("ada")),
    ] {
        let mut client = app.new_client();
        let mut token = None;
        if let Some(name) = name {
            let r = client.login(name).await;
            assert_eq!(
                r.status,
                StatusCode::SEE_OTHER,
                "{name} signs in: {}",
                r.body
            );
            token = Some(app.api_token(name).await);
        }
        // Anonymous callers have a session too (the login page's), so the CSRF check
        // passes and what is tested is the sign-in rule itself.
        let csrf = Some(client.csrf().await);
        callers.push(Caller {
            role,
            client,
            csrf,
            token,
        });
    }

    let mut failures = Vec::new();
    let mut checked = 0usize;
    let reads = plan.iter().filter(|(m, _)| m == "GET").count();
    for caller in &mut callers {
        app.state.search.catch_up(&app.pool).await.unwrap();
        let mut counters = write_counters(&app.pool).await;
        for (n, (method, template)) in plan.iter().enumerate() {
            if n == reads {
                // Every read is done: none of them wrote. (A bearer token's last use is
                // recorded on each API call by design: api_tokens updates are left out.)
                let mut after = write_counters(&app.pool).await;
                for c in [&mut counters, &mut after] {
                    if let Some(t) = c.get_mut("api_tokens") {
                        t.1 = 0;
                    }
                }
                if after != counters {
                    let changed: Vec<_> = after
                        .iter()
                        .filter(|(t, v)| counters.get(*t) != Some(v))
                        .map(|(t, v)| format!("{t}: {:?} → {v:?}", counters.get(t)))
                        .collect();
                    failures.push(format!(
                        "{}: the {reads} GET requests wrote (inserts, updates, deletes): {changed:?}",
                        caller.role
                    ));
                }
            }
            let path = fill(template, &ids);
            let r = caller.send(method, &path).await;
            checked += 1;
            let s = r.status;
            let what = format!("{} {method} {path} → {s}", caller.role);
            if s.is_server_error() {
                failures.push(format!("{what}: a server error: {}", r.body));
                continue;
            }
            if let Some(rule) = broken_rule(caller.role, method, template, &r) {
                failures.push(format!("{what}: {rule}"));
            }
        }
    }
    let live: bool = sqlx::query_scalar("SELECT revoked_at IS NULL FROM api_tokens WHERE id = $1")
        .bind(ids.token)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(
        live,
        "another user's API token was revoked during the matrix"
    );
    println!(
        "access matrix: {} routes ({} route × method pairs) × {} roles = {checked} requests checked",
        routes.len(),
        plan.len(),
        callers.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} requests broke the access rule:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The CSRF matrix: every write route (pages and the API alike) sent from the admin's
/// browser session without the token, with a wrong one, marked cross-site, and from a
/// foreign Origin is refused with 403 and changes no row; with the session's token it
/// passes the check (the handler may still refuse the empty form on its own terms).
#[tokio::test]
async fn every_write_route_refuses_forged_requests_and_accepts_the_token() {
    let (app, ids, routes) = matrix_app().await;
    let mut admin = app.new_client();
    let r = admin.login("ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let token = admin.csrf().await;

    let writes: Vec<(String, String)> = plan(&routes)
        .into_iter()
        .filter(|(m, p)| m != "GET" && !TOKEN_ONLY.contains(&p.as_str()))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for (method, template) in &writes {
        let path = fill(template, &ids);
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let form = |extra: &[(&str, &str)]| {
            let mut req = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
            for (k, v) in extra {
                req = req.header(*k, *v);
            }
            req
        };
        let variants: Vec<(&str, Request<Body>)> = vec![
            ("no token", form(&[]).body(Body::empty()).unwrap()),
            (
                "a wrong token",
                form(&[])
                    .body(Body::from(format!("_csrf={}", "0".repeat(64))))
                    .unwrap(),
            ),
            (
                "a cross-site fetch",
                form(&[("sec-fetch-site", "cross-site"), ("x-csrf-token", &token)])
                    .body(Body::empty())
                    .unwrap(),
            ),
            (
                "a foreign Origin",
                form(&[
                    ("host", "perfjournal.local"),
                    ("origin", "https://evil.example"),
                    ("x-csrf-token", &token),
                ])
                .body(Body::empty())
                .unwrap(),
            ),
        ];
        // What the previous route's accepted request queued for the search index (a new
        // artifact, say) is indexed now, not counted as this route's write.
        app.state.search.catch_up(&app.pool).await.unwrap();
        let before = row_counts(&app.pool).await;
        for (variant, req) in variants {
            let r = admin.send(req).await;
            checked += 1;
            if r.status != StatusCode::FORBIDDEN || !r.body.contains("request refused") {
                failures.push(format!(
                    "{method} {path} with {variant} → {} (expected a CSRF 403)",
                    r.status
                ));
            }
        }
        let after = row_counts(&app.pool).await;
        if before != after {
            let changed: Vec<_> = after
                .iter()
                .filter(|(t, n)| before.get(*t) != Some(n))
                .map(|(t, n)| format!("{t}: {} → {n}", before.get(t).copied().unwrap_or(0)))
                .collect();
            failures.push(format!(
                "{method} {path}: refused requests changed rows: {changed:?}"
            ));
        }
        let r = admin
            .send(
                form(&[("x-csrf-token", &token)])
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        checked += 1;
        if r.body.contains("request refused") || r.status.is_server_error() {
            failures.push(format!(
                "{method} {path} with the session's token → {}: {}",
                r.status, r.body
            ));
        }
    }
    println!(
        "CSRF matrix: {} write routes × 5 variants = {checked} requests checked",
        writes.len()
    );
    assert!(
        failures.is_empty(),
        "{} CSRF failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
