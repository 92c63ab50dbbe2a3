//! The foundation as a user meets it: setup, login, access rules, CSRF, throttling,
//! headers, tokens, health and metrics — against a real PostgreSQL.

use crate::common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::{spawn_app, spawn_app_with, PASSWORD};
use perfjournal::auth::Role;
use perfjournal::config::Config;

#[tokio::test]
async fn first_visit_leads_to_setup_which_creates_the_admin_and_signs_in() {
    let mut app = spawn_app().await;
    let home = app.get("/").await;
    assert_eq!(home.status, StatusCode::SEE_OTHER);
    assert_eq!(home.location(), Some("/login?next=%2F"));
    let login = app.get("/login").await;
    assert_eq!(login.location(), Some("/setup"));
    let setup = app.get("/setup").await;
    assert_eq!(setup.status, StatusCode::OK);
    assert_eq!(setup.select("h1"), vec!["Welcome to perfjournal"]);

    app.setup_admin("ada").await;
    let home = app.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert_eq!(home.select(".user-name"), vec!["ada"]);
    assert_eq!(home.select(".topbar .badge"), vec!["admin"]);

    // Setup is closed once an account exists, for everyone.
    let mut other = app.new_client();
    assert_eq!(other.get("/setup").await.location(), Some("/login"));
    let again = other
        .post_form(
            "/setup",
            &[
                ("name", "eve"),
                ("password", PASSWORD),
                ("confirm", PASSWORD),
            ],
        )
        .await;
    assert_eq!(again.status, StatusCode::FORBIDDEN);
    assert_eq!(perfjournal::auth::users::count(&app.pool).await.unwrap(), 1);
}

#[tokio::test]
async fn setup_form_errors_name_the_field_and_create_nothing() {
    let mut app = spawn_app().await;
    let r = app
        .post_form(
            "/setup",
            &[
                ("name", "bad name!"),
                ("password", "short"),
                ("confirm", "short"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let errors = r.select(".field-error");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("letters, digits"));
    assert!(errors[1].contains("at least 10"));
    let r = app
        .post_form(
            "/setup",
            &[
                ("name", "ada"),
                ("password", PASSWORD),
                ("confirm", "different one"),
            ],
        )
        .await;
    assert_eq!(r.select(".field-error"), vec!["the two passwords differ"]);
    assert_eq!(perfjournal::auth::users::count(&app.pool).await.unwrap(), 0);
    // The "load example investigations" tick survives a refused form.
    let r = app
        .post_form(
            "/setup",
            &[
                ("name", "ada"),
                ("password", "short"),
                ("confirm", "short"),
                ("demo", "on"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.select_attr("input[name=demo][checked]", "value"),
        vec!["on"]
    );
}

#[tokio::test]
async fn login_follows_next_and_logout_ends_the_session() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    admin.add_user("bob", Role::Editor).await;

    let mut bob = admin.new_client();
    assert_eq!(
        bob.get("/settings").await.location(),
        Some("/login?next=%2Fsettings")
    );
    let token = bob.csrf().await;
    let r = bob
        .post_form_raw(
            "/login",
            &[
                ("name", "bob"),
                ("password", PASSWORD),
                ("next", "/settings"),
                ("_csrf", &token),
            ],
        )
        .await;
    assert_eq!(r.location(), Some("/settings"));
    assert_eq!(bob.get("/settings").await.status, StatusCode::OK);

    // An off-site "next" is not followed.
    let mut eve = admin.new_client();
    let token = eve.csrf().await;
    let r = eve
        .post_form_raw(
            "/login",
            &[
                ("name", "bob"),
                ("password", PASSWORD),
                ("next", "//evil.example"),
                ("_csrf", &token),
            ],
        )
        .await;
    assert_eq!(r.location(), Some("/"));

    let r = bob.post_form("/logout", &[]).await;
    assert_eq!(r.location(), Some("/login"));
    assert_eq!(bob.get("/settings").await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn wrong_password_is_refused_with_the_same_message_as_an_unknown_name() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let mut c = app.new_client();
    let wrong = c
        .post_form(
            "/login",
            &[("name", "ada"), ("password", "not the password")],
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let unknown = c
        .post_form("/login", &[("name", "nobody"), ("password", "whatever123")])
        .await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong.select(".alert.error"), unknown.select(".alert.error"));
}

#[tokio::test]
async fn anonymous_requests_to_private_routes_are_redirected_or_get_401() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let mut anon = app.new_client();
    for path in [
        "/",
        "/investigations",
        "/journal",
        "/estimators",
        "/proposals",
        "/drills",
        "/search",
        "/artifacts",
        "/comparisons",
        "/settings",
        "/admin/users",
        "/no/such/page",
    ] {
        let r = anon.get(path).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        assert!(r.location().unwrap().starts_with("/login?next="), "{path}");
    }
    // The API document is public (it describes the API, it holds no data), so client
    // generators can read it; /api/openapi.json leads to it.
    let doc = anon.get("/api/v1/openapi.json").await;
    assert_eq!(doc.status, StatusCode::OK);
    assert!(doc.json()["paths"]["/investigations"].is_object());
    let short = anon.get("/api/openapi.json").await;
    assert_eq!(short.status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(short.location(), Some("/api/v1/openapi.json"));
    for path in ["/api/v1/me", "/api/v1/nothing", "/metrics"] {
        let r = anon.get(path).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("token"),
            "{path}"
        );
    }
    // Public routes stay public.
    assert_eq!(anon.get("/healthz").await.status, StatusCode::OK);
    assert_eq!(anon.get("/static/htmx.min.js").await.status, StatusCode::OK);
    assert_eq!(anon.get("/login").await.status, StatusCode::OK);
}

#[tokio::test]
async fn state_changes_without_the_csrf_token_are_refused_and_change_nothing() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;

    let r = app
        .post_form_raw("/settings/tokens", &[("label", "sneaky")])
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.select(".message")[0].contains("CSRF token is missing"));
    let r = app
        .post_form_raw(
            "/settings/tokens",
            &[("label", "sneaky"), ("_csrf", "0000")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // The right token from another site is refused too.
    let token = app.csrf().await;
    let body =
        serde_urlencoded::to_string([("label", "sneaky"), ("_csrf", token.as_str())]).unwrap();
    let cross = Request::post("/settings/tokens")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("sec-fetch-site", "cross-site")
        .body(Body::from(body.clone()))
        .unwrap();
    assert_eq!(app.send(cross).await.status, StatusCode::FORBIDDEN);
    let foreign_origin = Request::post("/settings/tokens")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::HOST, "perfjournal.local")
        .header(header::ORIGIN, "https://evil.example")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(app.send(foreign_origin).await.status, StatusCode::FORBIDDEN);

    let uid = perfjournal::auth::users::credentials(&app.pool, "ada")
        .await
        .unwrap()
        .unwrap()
        .0
        .id;
    assert!(perfjournal::auth::tokens::list(&app.pool, uid)
        .await
        .unwrap()
        .is_empty());

    // The header form (what htmx sends) works.
    let token = app.csrf().await;
    let ok = Request::post("/settings/tokens")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("x-csrf-token", token)
        .body(Body::from("label=laptop"))
        .unwrap();
    let r = app.send(ok).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        perfjournal::auth::tokens::list(&app.pool, uid)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn repeated_failed_logins_are_rate_limited_per_user() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let mut attacker = app.new_client();
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let r = attacker
            .post_form("/login", &[("name", "ada"), ("password", "guess-guess")])
            .await;
        statuses.push(r.status);
    }
    assert_eq!(statuses[0], StatusCode::UNAUTHORIZED);
    let limited = attacker
        .post_form("/login", &[("name", "ada"), ("password", PASSWORD)])
        .await;
    assert_eq!(
        limited.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{statuses:?}"
    );
    assert!(limited.headers.contains_key(header::RETRY_AFTER));
    assert!(limited.select(".message")[0].contains("too many attempts"));
}

/// Signing in several times in a row (new tabs, a second browser) is not an attack: only
/// failed attempts count toward the lock-out.
#[tokio::test]
async fn successful_logins_never_lock_a_user_out() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    for i in 0..12 {
        let mut browser = app.new_client();
        let r = browser
            .post_form("/login", &[("name", "ada"), ("password", PASSWORD)])
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "sign-in {i}");
    }
    // Four failures are still under the limit of five; the right password then works.
    let mut typo = app.new_client();
    for _ in 0..4 {
        let r = typo
            .post_form("/login", &[("name", "ada"), ("password", "typo")])
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    let r = typo
        .post_form("/login", &[("name", "ada"), ("password", PASSWORD)])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

fn assert_security_headers(r: &common::Reply, what: &str) {
    let csp = r
        .headers
        .get(header::CONTENT_SECURITY_POLICY)
        .unwrap_or_else(|| panic!("CSP on {what}"));
    let csp = csp.to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{what}: {csp}"
    );
    assert_eq!(
        r.headers.get(header::X_CONTENT_TYPE_OPTIONS).unwrap(),
        "nosniff",
        "{what}"
    );
    assert!(r.headers.contains_key(header::REFERRER_POLICY), "{what}");
}

#[tokio::test]
async fn security_headers_are_on_200_404_and_500() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let ok = app.get("/").await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_security_headers(&ok, "200");
    let missing = app.get("/no/such/page").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.select("h1"), vec!["Not Found"]);
    assert_security_headers(&missing, "404");

    // With the database gone, a page that needs it fails without leaking anything: while
    // the process's copy of the session is fresh (a second, src/auth/cache.rs), the page's
    // own query finds the pool closed and answers 503 to retry; after it, reading the
    // session fails and the page is a 500 with a reference.
    app.pool.close().await;
    let busy = app.get("/admin/users").await;
    assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_security_headers(&busy, "503");
    assert!(busy.headers.contains_key(header::RETRY_AFTER));
    assert!(!busy.body.to_lowercase().contains("pool"));
    tokio::time::sleep(perfjournal::auth::cache::FRESH_FOR).await;
    let broken = app.get("/admin/users").await;
    assert_eq!(broken.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_security_headers(&broken, "500");
    assert!(broken.body.contains("details are in the server log"));
    assert!(!broken.body.to_lowercase().contains("pool"));
    let health = app.get("/healthz").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(health.json()["status"], "unavailable");
}

#[tokio::test]
async fn a_viewer_is_refused_writes_and_admin_pages() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    admin.add_user("vic", Role::Viewer).await;
    let mut vic = admin.new_client();
    assert_eq!(vic.login("vic").await.status, StatusCode::SEE_OTHER);
    assert_eq!(vic.get("/admin/users").await.status, StatusCode::FORBIDDEN);
    let r = vic
        .post_form(
            "/admin/users",
            &[
                ("name", "mallory"),
                ("password", PASSWORD),
                ("role", "admin"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.select(".message")[0].contains("admin role"));
    assert!(
        perfjournal::auth::users::credentials(&admin.pool, "mallory")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn admins_add_users_and_change_roles_but_keep_one_admin() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    let r = admin
        .post_form(
            "/admin/users",
            &[("name", "bob"), ("password", PASSWORD), ("role", "viewer")],
        )
        .await;
    assert_eq!(r.location(), Some("/admin/users"));
    let dup = admin
        .post_form(
            "/admin/users",
            &[("name", "BOB"), ("password", PASSWORD), ("role", "viewer")],
        )
        .await;
    assert_eq!(dup.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(dup.select(".field-error")[0].contains("already exists"));

    let list = admin.get("/admin/users").await;
    assert_eq!(
        list.select("#users tbody tr td:first-child"),
        vec!["ada", "bob"]
    );
    let bob = perfjournal::auth::users::credentials(&admin.pool, "bob")
        .await
        .unwrap()
        .unwrap()
        .0;
    let r = admin
        .post_form(
            &format!("/admin/users/{}/role", bob.id),
            &[("role", "editor")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(
        perfjournal::auth::users::by_id(&admin.pool, bob.id)
            .await
            .unwrap()
            .unwrap()
            .role,
        Role::Editor
    );

    let ada = perfjournal::auth::users::credentials(&admin.pool, "ada")
        .await
        .unwrap()
        .unwrap()
        .0;
    let r = admin
        .post_form(
            &format!("/admin/users/{}/role", ada.id),
            &[("role", "viewer")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn api_tokens_authenticate_until_revoked() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let r = app.post_form("/settings/tokens", &[("label", "ci")]).await;
    let secret = r.select("#new-token")[0].clone();
    assert!(secret.starts_with("pj_"));

    let mut script = app.new_client();
    let me = script.api("GET", "/api/v1/me", &secret, None).await;
    assert_eq!(me.status, StatusCode::OK);
    assert_eq!(me.json()["name"], "ada");
    assert_eq!(me.json()["role"], "admin");
    let bad = script
        .api("GET", "/api/v1/me", "pj_nottherealtoken", None)
        .await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);

    // The list shows a prefix, never the secret.
    let page = app.get("/settings").await;
    assert!(!page.body.contains(&secret));
    let uid = me.json()["id"].as_i64().unwrap();
    let id = perfjournal::auth::tokens::list(&app.pool, uid)
        .await
        .unwrap()[0]
        .id;
    let r = app
        .post_form(&format!("/settings/tokens/{id}/revoke"), &[])
        .await;
    assert_eq!(r.location(), Some("/settings"));
    let after = script.api("GET", "/api/v1/me", &secret, None).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn openapi_document_describes_the_api() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let doc = app.api("GET", "/api/v1/openapi.json", &token, None).await;
    assert_eq!(doc.status, StatusCode::OK);
    let doc = doc.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert!(doc["paths"]["/me"]["get"].is_object(), "{doc}");
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

/// A path part that does not parse (`abc` for an id, an id past i64) answers the JSON error
/// envelope with 404, not axum's plain-text "Cannot parse".
#[tokio::test]
async fn bad_path_parameters_answer_the_json_envelope() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    for (method, path) in [
        ("GET", "/api/v1/investigations/abc"),
        ("GET", "/api/v1/artifacts/9223372036854775808"),
        ("PUT", "/api/v1/investigations/1/steps/-1"),
    ] {
        let body = (method == "PUT").then(|| serde_json::json!({}));
        let r = app.api(method, path, &token, body).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.body);
        assert!(
            r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{path}"
        );
        assert!(!r.body.contains("Cannot parse"), "{}", r.body);
        assert!(r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such address"));
    }
}

/// The same on pages: the app's styled 404, never axum's plain text.
#[tokio::test]
async fn a_page_address_that_does_not_parse_is_the_styled_404() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    for path in [
        "/investigations/abc",
        "/journal/99999999999999999999",
        "/artifacts/x",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.body);
        assert!(
            r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        assert!(!r.body.contains("Cannot parse"), "{}", r.body);
        assert!(r.body.contains("no such address"), "{path}: {}", r.body);
    }
}

/// A NUL character (valid JSON, not storable text) is the client's mistake: 422, nothing saved.
#[tokio::test]
async fn text_with_a_nul_character_is_refused_and_nothing_is_saved() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let token = app.api_token("ada").await;
    let r = app
        .api(
            "POST",
            "/api/v1/investigations",
            &token,
            Some(serde_json::json!({ "title": "ok", "symptom": "bad\u{0}byte" })),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("NUL"));
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM investigations")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn metrics_need_an_admin_or_a_token_and_count_requests_by_route() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    admin.add_user("vic", Role::Viewer).await;
    admin.get("/settings").await;
    let m = admin.get("/metrics").await;
    assert_eq!(m.status, StatusCode::OK);
    assert!(
        m.body.contains(
            "perfjournal_http_requests_total{method=\"GET\",route=\"/settings\",status=\"200\"}"
        ),
        "{}",
        m.body
    );
    assert!(m
        .body
        .contains("perfjournal_http_request_duration_seconds_bucket"));

    let mut vic = admin.new_client();
    vic.login("vic").await;
    assert_eq!(vic.get("/metrics").await.status, StatusCode::FORBIDDEN);
    let token = admin.api_token("vic").await;
    assert_eq!(
        vic.new_client()
            .api("GET", "/metrics", &token, None)
            .await
            .status,
        StatusCode::OK
    );
}

/// A scanner's made-up methods and paths must not mint new metric series: methods outside
/// the standard set count as OTHER and unknown paths as one "unmatched" route.
#[tokio::test]
async fn metric_labels_stay_bounded_under_odd_methods_and_paths() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    for (i, method) in ["FOOBAR", "PROPFIND", "X-SCAN-1"].iter().enumerate() {
        for uri in [format!("/no/such/path/{i}"), "/settings".to_string()] {
            let req = Request::builder()
                .method(*method)
                .uri(uri)
                .body(Body::empty())
                .unwrap();
            admin.send(req).await;
        }
    }
    let m = admin.get("/metrics").await;
    assert_eq!(m.status, StatusCode::OK);
    for raw in ["FOOBAR", "PROPFIND", "X-SCAN-1", "/no/such/path"] {
        assert!(
            !m.body.contains(raw),
            "{raw} leaked into a label:\n{}",
            m.body
        );
    }
    // Every method label is one of the fixed set.
    for line in m.body.lines().filter(|l| l.contains("method=\"")) {
        let method = line
            .split("method=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(
            ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"].contains(&method),
            "{line}"
        );
    }
}

#[tokio::test]
async fn sessions_end_after_their_absolute_lifetime() {
    let config = Config {
        session_max_age: chrono::Duration::seconds(1),
        ..Config::default()
    };
    let mut app = spawn_app_with(config).await;
    app.setup_admin("ada").await;
    assert_eq!(app.get("/").await.status, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(app.get("/").await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn session_cookie_is_http_only_lax_and_renewed_at_login() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let mut c = app.new_client();
    let page = c.get("/login").await;
    let before = page
        .headers
        .get(header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        before.contains("HttpOnly") && before.contains("SameSite=Lax"),
        "{before}"
    );
    assert!(!before.contains("Secure"));
    let r = c.login("ada").await;
    let after = r
        .headers
        .get(header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_ne!(
        before.split(';').next(),
        after.split(';').next(),
        "session id must change at login"
    );

    let secure = spawn_app_with(Config {
        secure_cookies: true,
        ..Config::default()
    })
    .await;
    let mut s = secure.new_client();
    let page = s.get("/login").await;
    assert!(page
        .headers
        .get(header::SET_COOKIE)
        .unwrap()
        .to_str()
        .unwrap()
        .contains("Secure"));
}

#[tokio::test]
async fn password_change_needs_the_current_password() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let r = app
        .post_form(
            "/settings/password",
            &[
                ("current", "wrong-wrong"),
                ("password", "a new long password"),
                ("confirm", "a new long password"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.select(".field-error"),
        vec!["that is not your current password"]
    );
    let r = app
        .post_form(
            "/settings/password",
            &[
                ("current", PASSWORD),
                ("password", "a new long password"),
                ("confirm", "a new long password"),
            ],
        )
        .await;
    assert!(r.select(".alert.ok")[0].starts_with("Password changed."));
    let mut c = app.new_client();
    let r = c
        .post_form(
            "/login",
            &[("name", "ada"), ("password", "a new long password")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

/// A password change ends every other session and gives this one a new id; the old id is
/// worth nothing. Ticking the box also revokes the user's API tokens.
#[tokio::test]
async fn a_password_change_ends_other_sessions_and_rotates_this_one() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let mut laptop = app.new_client();
    assert_eq!(laptop.login("ada").await.status, StatusCode::SEE_OTHER);
    assert_eq!(laptop.get("/settings").await.status, StatusCode::OK);
    let token = app.api_token("ada").await;
    let old_cookie = app.cookie.clone().expect("signed in");

    let r = app
        .post_form(
            "/settings/password",
            &[
                ("current", PASSWORD),
                ("password", "a new long password"),
                ("confirm", "a new long password"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let notice = &r.select(".alert.ok")[0];
    assert!(
        notice.contains("other sessions were signed out"),
        "{notice}"
    );
    assert!(notice.contains("1 active API token"), "{notice}");
    let new_cookie = app.cookie.clone().expect("still signed in");
    assert_ne!(new_cookie, old_cookie, "the session id rotates");
    assert_eq!(app.get("/settings").await.status, StatusCode::OK);

    // The other browser is signed out, and so is anyone holding the old id.
    assert_eq!(laptop.get("/settings").await.status, StatusCode::SEE_OTHER);
    let mut thief = app.new_client();
    thief.cookie = Some(old_cookie);
    assert_eq!(thief.get("/settings").await.status, StatusCode::SEE_OTHER);
    // Tokens survive unless asked.
    let me = app
        .new_client()
        .api("GET", "/api/v1/me", &token, None)
        .await;
    assert_eq!(me.status, StatusCode::OK);
    let r = app
        .post_form(
            "/settings/password",
            &[
                ("current", "a new long password"),
                ("password", "a third long password"),
                ("confirm", "a third long password"),
                ("revoke_tokens", "on"),
            ],
        )
        .await;
    assert!(r.select(".alert.ok")[0].contains("1 API token(s) revoked"));
    let me = app
        .new_client()
        .api("GET", "/api/v1/me", &token, None)
        .await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED);
}

/// An admin's reset ends the user's sessions; disabling ends them and stops their tokens,
/// and enabling lets them sign in again. The last admin cannot be disabled.
#[tokio::test]
async fn an_admin_reset_or_disable_ends_the_users_sessions() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    let bob_id = admin.add_user("bob", Role::Editor).await;
    let mut bob = admin.new_client();
    assert_eq!(bob.login("bob").await.status, StatusCode::SEE_OTHER);
    let token = admin.api_token("bob").await;

    let short = admin
        .post_form(
            &format!("/admin/users/{bob_id}/password"),
            &[("password", "short")],
        )
        .await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        bob.get("/settings").await.status,
        StatusCode::OK,
        "refusal changes nothing"
    );
    let r = admin
        .post_form(
            &format!("/admin/users/{bob_id}/password"),
            &[("password", "reset by the admin")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(bob.get("/settings").await.status, StatusCode::SEE_OTHER);
    let r = bob
        .post_form(
            "/login",
            &[("name", "bob"), ("password", "reset by the admin")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);

    let r = admin
        .post_form(
            &format!("/admin/users/{bob_id}/disabled"),
            &[("disabled", "true")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(bob.get("/settings").await.status, StatusCode::SEE_OTHER);
    let me = admin
        .new_client()
        .api("GET", "/api/v1/me", &token, None)
        .await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED);
    let r = bob
        .post_form(
            "/login",
            &[("name", "bob"), ("password", "reset by the admin")],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body.contains("disabled"));
    assert!(admin.get("/admin/users").await.body.contains("disabled"));

    admin
        .post_form(
            &format!("/admin/users/{bob_id}/disabled"),
            &[("disabled", "false")],
        )
        .await;
    let r = bob
        .post_form(
            "/login",
            &[("name", "bob"), ("password", "reset by the admin")],
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let me = admin
        .new_client()
        .api("GET", "/api/v1/me", &token, None)
        .await;
    assert_eq!(
        me.status,
        StatusCode::OK,
        "an enabled user's tokens work again"
    );

    // The admin cannot disable themselves.
    let ada_id = admin.user_id("ada").await;
    let r = admin
        .post_form(
            &format!("/admin/users/{ada_id}/disabled"),
            &[("disabled", "true")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_exhausted_database_pool_is_answered_503_with_retry_after() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    // A pool of one connection with a short wait, and that connection held elsewhere.
    let tight = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(std::time::Duration::from_millis(300))
        .connect(&app.database_url)
        .await
        .unwrap();
    let state = perfjournal::state::AppState::new(
        tight.clone(),
        Config::default(),
        app.state.blobs.clone(),
    );
    let mut busy = app.new_client();
    busy.app = perfjournal::server::app(state);
    let held = tight.acquire().await.unwrap();
    let r = busy.get("/healthz").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    let r = busy.get("/login").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers.get(header::RETRY_AFTER).unwrap(), "5");
    assert!(r.select(".message")[0].contains("busy"));
    drop(held);
    assert_eq!(busy.get("/login").await.status, StatusCode::OK);
}

#[tokio::test]
async fn an_oversized_form_is_refused_with_413_and_changes_nothing() {
    let config = Config {
        body_limit: 4096,
        ..Config::default()
    };
    let mut app = spawn_app_with(config).await;
    let big = "x".repeat(10_000);
    let r = app
        .post_form(
            "/setup",
            &[("name", "ada"), ("password", &big), ("confirm", &big)],
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(perfjournal::auth::users::count(&app.pool).await.unwrap(), 0);
}

/// Small things a person notices: the favicon is served (no 404 on every page), a refusal
/// says "an editor", the add-user form defaults to the least role, and Markdown exports
/// download as files instead of opening as raw text.
#[tokio::test]
async fn favicon_wording_defaults_and_downloads() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let icon = app.get("/static/favicon.svg").await;
    assert_eq!(icon.status, StatusCode::OK);
    assert_eq!(icon.headers["content-type"], "image/svg+xml");
    assert!(app
        .get("/")
        .await
        .body
        .contains(r#"<link rel="icon" href="/static/favicon.svg""#));

    let users = app.get("/admin/users").await;
    assert_eq!(
        users.select_attr("#new-role option[selected]", "value"),
        vec!["viewer"]
    );

    app.add_user("eve", Role::Editor).await;
    let mut eve = app.new_client();
    eve.login("eve").await;
    let refused = eve.get("/admin/users").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("is an editor"), "{}", refused.body);

    let r = app
        .post_form(
            "/journal",
            &[
                ("title", "Export me"),
                ("date", "2026-03-14"),
                ("symptom", "slow"),
                ("diagnosis", "cause found"),
                ("change", "a change"),
                ("result", "fixed"),
                ("action", "publish"),
            ],
        )
        .await;
    let entry = r.location().unwrap().to_string();
    let md = app.get(&format!("{entry}/markdown")).await;
    assert_eq!(md.status, StatusCode::OK);
    let disposition = md.headers["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment;"), "{disposition}");
    assert!(disposition.contains(".md"), "{disposition}");
}

/// After sign-in only same-origin paths are followed, judged as a browser reads
/// `Location` (tabs and newlines dropped, backslashes as slashes, escapes decoded); a
/// value that cannot be a header (a newline) falls back to `/` instead of a raw 500.
#[tokio::test]
async fn next_after_sign_in_stays_on_this_site_whatever_its_encoding() {
    let mut admin = spawn_app().await;
    admin.setup_admin("ada").await;
    let hostile = [
        "/\t/evil.example",
        "/\n/evil.example",
        "/\r\n/evil.example",
        "\t//evil.example",
        " //evil.example",
        "/\\evil.example",
        "\\/evil.example",
        "\\\\evil.example",
        "/%09/evil.example",
        "/%2F/evil.example",
        "/%2f%2fevil.example",
        "/%5Cevil.example",
        "/%252F/evil.example",
        "%2F%2Fevil.example",
        "https://evil.example/",
        "javascript:alert(1)",
        "/settings\nSet-Cookie: x=1",
        "/a\u{0}b",
    ];
    for next in hostile {
        let mut eve = admin.new_client();
        let token = eve.csrf().await;
        let r = eve
            .post_form_raw(
                "/login",
                &[
                    ("name", "ada"),
                    ("password", PASSWORD),
                    ("next", next),
                    ("_csrf", &token),
                ],
            )
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{next:?}: {}", r.body);
        assert_eq!(r.location(), Some("/"), "{next:?}");
        // Signed in, the login page sends "next" on at once: the same rule.
        let r = eve
            .get(&format!(
                "/login?next={}",
                perfjournal::error::urlencode(next)
            ))
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{next:?}: {}", r.body);
        assert_eq!(r.location(), Some("/"), "{next:?}");
    }
    // Ordinary paths still go where they asked, escaped where a header needs it.
    let mut eve = admin.new_client();
    for (next, location) in [
        ("/settings", "/settings"),
        ("/search?q=kv%2Fcache&page=2", "/search?q=kv%2Fcache&page=2"),
        (
            "/search?q=débit élevé",
            "/search?q=d%C3%A9bit%20%C3%A9lev%C3%A9",
        ),
    ] {
        let token = eve.csrf().await;
        let r = eve
            .post_form_raw(
                "/login",
                &[
                    ("name", "ada"),
                    ("password", PASSWORD),
                    ("next", next),
                    ("_csrf", &token),
                ],
            )
            .await;
        assert_eq!(r.location(), Some(location), "{next:?}");
    }
}

/// Signs in as `name` through a proxy at `peer` that reports the client as `forwarded`.
async fn login_via(
    client: &mut common::TestApp,
    name: &str,
    password: &str,
    peer: &str,
    forwarded: Option<&str>,
) -> common::Reply {
    let token = client.csrf().await;
    let body = serde_urlencoded::to_string([
        ("name", name),
        ("password", password),
        ("_csrf", token.as_str()),
    ])
    .unwrap();
    let mut req = Request::post("/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    if let Some(f) = forwarded {
        req.headers_mut()
            .insert("x-forwarded-for", f.parse().unwrap());
    }
    let peer: std::net::SocketAddr = format!("{peer}:40000").parse().unwrap();
    req.extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    client.send(req).await
}

/// A guesser cannot lock a colleague out: failures count per (name, client address), the
/// client address comes from X-Forwarded-For only when a configured proxy sent it, and an
/// admin can clear a lock (page and API; others get 403).
#[tokio::test]
async fn lockout_is_per_name_and_client_address_behind_a_trusted_proxy() {
    let config = Config {
        trusted_proxies: vec!["127.0.0.1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()],
        ..Config::default()
    };
    let mut app = spawn_app_with(config).await;
    app.setup_admin("ada").await;
    app.add_user("vic", Role::Viewer).await;

    // Through the proxy, a guesser at 203.0.113.9 fails five times on "ada" and is locked…
    let mut attacker = app.new_client();
    for _ in 0..5 {
        let r = login_via(
            &mut attacker,
            "ada",
            "guess-guess",
            "127.0.0.1",
            Some("6.6.6.6, 203.0.113.9, 10.0.0.2"),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    let r = login_via(
        &mut attacker,
        "ada",
        PASSWORD,
        "127.0.0.1",
        Some("203.0.113.9"),
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // …a forged left-most entry does not make the guesser someone else…
    let r = login_via(
        &mut attacker,
        "ada",
        PASSWORD,
        "127.0.0.1",
        Some("198.51.100.7, 203.0.113.9"),
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // …while ada, behind the same proxy at another address, still signs in.
    let mut ada = app.new_client();
    let r = login_via(&mut ada, "ada", PASSWORD, "127.0.0.1", Some("198.51.100.7")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    // A peer that is not a configured proxy cannot pick its address with the header.
    let mut direct = app.new_client();
    for i in 0..5 {
        let forged = format!("192.0.2.{i}");
        let r = login_via(
            &mut direct,
            "vic",
            "wrong-wrong",
            "172.16.0.5",
            Some(&forged),
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
    let r = login_via(
        &mut direct,
        "vic",
        PASSWORD,
        "172.16.0.5",
        Some("192.0.2.99"),
    )
    .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);

    // The admin page lists both locks; a viewer may not clear them.
    let page = ada.get("/admin/users").await;
    let locked = page.select("#login-locks td");
    assert!(
        locked.iter().any(|t| t.contains("203.0.113.9")),
        "{locked:?}"
    );
    assert!(
        locked.iter().any(|t| t.contains("172.16.0.5")),
        "{locked:?}"
    );
    let viewer_token = app.api_token("vic").await;
    let r = app
        .api(
            "DELETE",
            "/api/v1/admin/login-locks/ada",
            &viewer_token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app
        .api("GET", "/api/v1/admin/login-locks", &viewer_token, None)
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // The admin clears ada's lock from the page, vic's through the API.
    let r = ada
        .post_form("/admin/login-locks/clear", &[("name", "ada")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let r = login_via(
        &mut attacker,
        "ada",
        PASSWORD,
        "127.0.0.1",
        Some("203.0.113.9"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let admin_token = app.api_token("ada").await;
    let r = app
        .api("GET", "/api/v1/admin/login-locks", &admin_token, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()[0]["name"], "vic");
    let r = app
        .api(
            "DELETE",
            "/api/v1/admin/login-locks/vic",
            &admin_token,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["cleared"], 1);
    let r = login_via(&mut direct, "vic", PASSWORD, "172.16.0.5", None).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

/// Signing in through a real server process logs no warning (the session layer used to
/// warn on every new session that its store had no `create` of its own).
#[tokio::test]
async fn signing_in_logs_no_warning() {
    let (pool, url) = common::fresh_db().await;
    common::admin_with_token(&pool, "ada").await;
    let server = common::ServerProcess::start(&url, &[("RUST_LOG", "info")]).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = http
        .get(format!("{}/login", server.base))
        .send()
        .await
        .unwrap();
    let cookie = page
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_string))
        .collect::<Vec<_>>()
        .join("; ");
    let html = page.text().await.unwrap();
    let csrf = html
        .split("name=\"_csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF field on the sign-in page");
    let signed_in = http
        .post(format!("{}/login", server.base))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            serde_urlencoded::to_string([
                ("name", "ada"),
                ("password", common::PASSWORD),
                ("_csrf", csrf),
            ])
            .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        signed_in.status(),
        303,
        "{}",
        signed_in.text().await.unwrap()
    );
    let log = server.log();
    assert!(log.contains("listening"), "the log is read: {log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
}
