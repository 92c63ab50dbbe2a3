//! Single sign-on against a real OpenID provider (node-oidc-provider, started per test):
//! the round trip through its login and consent pages, a wrong state, a replayed code, an
//! expired and a foreign-signed ID token, groups that change, known-users-only, password
//! sign-in turned off; and the trusted reverse-proxy mode against the server binary.

use crate::common;

use axum::http::StatusCode;
use common::oidc::{authorize, Provider};
use common::{spawn_app_with, Reply, TestApp};
use perfjournal::auth::external::Policy;
use perfjournal::auth::Role;
use perfjournal::config::{Config, SignIn};
use perfjournal::core::sso::RoleMap;

/// The app's public address in these tests (the provider sends the browser back there).
const APP: &str = "http://perfjournal.test";

fn callback() -> String {
    format!("{APP}/auth/oidc/callback")
}

fn accounts() -> serde_json::Value {
    serde_json::json!({
        "ada": {"groups": ["perf-eng"]},
        "mallory": {"groups": ["perf-admins"]},
    })
}

fn mapped() -> Policy {
    Policy {
        role_map: Some(RoleMap::parse("admin=perf-admins,editor=perf-eng").unwrap()),
        ..Policy::default()
    }
}

async fn provider(test: &str) -> Option<Provider> {
    Provider::start(test, &[callback()], accounts(), &[]).await
}

async fn sso_app(provider: &Provider, policy: Policy, password: bool) -> TestApp {
    spawn_app_with(Config {
        public_url: Some(APP.into()),
        sign_in: SignIn {
            oidc: Some(provider.settings()),
            proxy: None,
            policy,
            password,
        },
        ..Config::default()
    })
    .await
}

/// "Sign in with …" on the app, then the provider's pages as `login`: the callback's path
/// and query on the app.
async fn through_provider(app: &mut TestApp, login: &str) -> String {
    let r = app
        .post_form("/auth/oidc/start", &[("next", "/journal")])
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let auth = r.location().unwrap().to_string();
    for part in [
        "code_challenge_method=S256",
        "code_challenge=",
        "nonce=",
        "state=",
        "client_id=perfjournal",
    ] {
        assert!(auth.contains(part), "{part} missing from {auth}");
    }
    let back = authorize(&auth, login, APP).await;
    back.strip_prefix(APP).unwrap().to_string()
}

async fn sign_in(app: &mut TestApp, login: &str) -> Reply {
    let path = through_provider(app, login).await;
    app.get(&path).await
}

async fn role_of(app: &TestApp, name: &str) -> Option<String> {
    sqlx::query_scalar("SELECT role FROM users WHERE name = $1")
        .bind(name)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// A refused callback: its status, the message on the page, and nothing written.
async fn assert_refused(app: &mut TestApp, path: &str, status: StatusCode, says: &str) {
    let (users, identities) = (
        count(app, "users").await,
        count(app, "external_identities").await,
    );
    let r = app.get(path).await;
    assert_eq!(r.status, status, "{path}: {}", r.body);
    assert!(
        r.body.contains(says),
        "{path}: expected {says:?} in {}",
        r.body
    );
    assert_eq!(
        count(app, "users").await,
        users,
        "a refused sign-in made a user"
    );
    assert_eq!(
        count(app, "external_identities").await,
        identities,
        "a refused sign-in tied an identity"
    );
    // And the browser is not signed in.
    let home = app.get("/").await;
    assert!(
        home.location().is_some_and(|l| l.starts_with("/login")),
        "{home:?}",
        home = home.status
    );
}

#[tokio::test]
async fn sign_in_through_the_provider_makes_the_user_and_follows_their_groups() {
    let Some(idp) =
        provider("sign_in_through_the_provider_makes_the_user_and_follows_their_groups").await
    else {
        return;
    };
    let mut app = sso_app(&idp, mapped(), true).await;

    // The sign-in page offers the provider, and lets its form lead there.
    let page = app.get("/login").await;
    let page = if page.location() == Some("/setup") {
        // (no account yet: the setup page comes first when passwords are on)
        app.add_user("root", Role::Admin).await;
        app.get("/login").await
    } else {
        page
    };
    assert_eq!(page.select("#sso-sign-in"), vec!["Sign in with Test IdP"]);
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains(&format!("form-action 'self' {}", idp.issuer)),
        "{csp}"
    );

    // First sign-in: the account is made, an editor by the perf-eng group.
    let path = through_provider(&mut app, "ada").await;
    let started = std::time::Instant::now();
    let r = app.get(&path).await;
    println!(
        "callback (code exchange, ID token checks, account made, session): {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.location(), Some("/journal"));
    let home = app.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert_eq!(home.select(".user-name"), vec!["ada"]);
    assert_eq!(role_of(&app, "ada").await.as_deref(), Some("editor"));
    let (issuer, groups): (String, Vec<String>) = sqlx::query_as(
        "SELECT e.issuer, e.groups FROM external_identities e JOIN users u ON u.id = e.user_id
         WHERE u.name = 'ada'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(issuer, idp.issuer);
    assert_eq!(groups, vec!["perf-eng"]);

    // Sessions work as any: sign out ends it.
    let r = app.post_form("/logout", &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(app
        .get("/")
        .await
        .location()
        .is_some_and(|l| l.starts_with("/login")));

    // Promoted at the provider: admin at the next sign-in (same account, no new one).
    idp.set_groups("ada", &["perf-eng", "perf-admins"]);
    let mut other = app.new_client();
    let r = sign_in(&mut other, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(role_of(&app, "ada").await.as_deref(), Some("admin"));
    assert_eq!(other.get("/admin/users").await.status, StatusCode::OK);

    // Out of every mapped group: a viewer, from the next sign-in on.
    idp.set_groups("ada", &["sales"]);
    let mut third = app.new_client();
    let r = sign_in(&mut third, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(role_of(&app, "ada").await.as_deref(), Some("viewer"));
    assert_eq!(
        third.get("/admin/users").await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(count(&app, "users").await, 2, "root and ada, no duplicate");

    // Disabling the account ends its sessions and refuses the provider's sign-in.
    let ada = app.user_id("ada").await;
    perfjournal::auth::users::set_disabled(&app.pool, &app.state.users, ada, true)
        .await
        .unwrap();
    assert!(third
        .get("/")
        .await
        .location()
        .is_some_and(|l| l.starts_with("/login")));
    let mut fourth = app.new_client();
    let path = through_provider(&mut fourth, "ada").await;
    assert_refused(
        &mut fourth,
        &path,
        StatusCode::FORBIDDEN,
        "the account ada is disabled",
    )
    .await;

    // The account made by sign-on has no password that works.
    let mut stranger = app.new_client();
    let r = stranger.login("ada").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let r = stranger
        .post_form("/login", &[("name", "ada"), ("password", "!external")])
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
}

#[tokio::test]
async fn a_wrong_state_a_replayed_code_and_an_error_answer_are_refused() {
    let Some(idp) = provider("a_wrong_state_a_replayed_code_and_an_error_answer_are_refused").await
    else {
        return;
    };
    let mut app = sso_app(&idp, mapped(), true).await;

    // A callback whose state is not the one this browser's sign-in started with.
    let path = through_provider(&mut app, "ada").await;
    let forged = rewrite_param(&path, "state", "not-the-state");
    assert_refused(
        &mut app,
        &forged,
        StatusCode::BAD_REQUEST,
        "state did not match",
    )
    .await;
    // That used the sign-in up: the genuine answer is now refused too.
    assert_refused(
        &mut app,
        &path,
        StatusCode::BAD_REQUEST,
        "no sign-in with Test IdP is under way",
    )
    .await;

    // A code used once, replayed in a sign-in of its own (state right, code spent).
    let mut first = app.new_client();
    let used = through_provider(&mut first, "ada").await;
    assert_eq!(first.get(&used).await.status, StatusCode::SEE_OTHER);
    let mut replay = app.new_client();
    let fresh = through_provider(&mut replay, "ada").await;
    let code = param(&used, "code");
    let replayed = rewrite_param(&fresh, "code", &code);
    assert_refused(
        &mut replay,
        &replayed,
        StatusCode::BAD_REQUEST,
        "it was already used",
    )
    .await;

    // The provider's own refusal (the person said no at its consent page).
    let mut denied = app.new_client();
    let path = through_provider(&mut denied, "ada").await;
    let state = param(&path, "state");
    let answer = format!(
        "/auth/oidc/callback?error=access_denied&error_description=End-User+aborted+interaction&state={state}"
    );
    assert_refused(&mut denied, &answer, StatusCode::FORBIDDEN, "access_denied").await;

    // A callback nobody started.
    let mut nobody = app.new_client();
    nobody.get("/login").await;
    assert_refused(
        &mut nobody,
        "/auth/oidc/callback?code=x&state=y",
        StatusCode::BAD_REQUEST,
        "no sign-in with Test IdP is under way",
    )
    .await;
}

#[tokio::test]
async fn expired_and_foreign_signed_id_tokens_are_refused_and_rotated_keys_are_read_again() {
    let Some(idp) = provider(
        "expired_and_foreign_signed_id_tokens_are_refused_and_rotated_keys_are_read_again",
    )
    .await
    else {
        return;
    };
    let mut app = sso_app(&idp, mapped(), true).await;

    idp.set_id_token("expired");
    let path = through_provider(&mut app, "ada").await;
    assert_refused(&mut app, &path, StatusCode::BAD_REQUEST, "ID token expired").await;

    idp.set_id_token("foreign");
    let path = through_provider(&mut app, "ada").await;
    assert_refused(
        &mut app,
        &path,
        StatusCode::BAD_REQUEST,
        "ID token signature not from the issuer&#39;s keys",
    )
    .await;

    // A provider that rotated its keys since the app read them: the app reads them again.
    idp.set_id_token("rotated");
    let r = sign_in(&mut app, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let mut other = app.new_client();
    let r = sign_in(&mut other, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);

    // The same provider, behaving again: the sign-in goes through.
    idp.set_id_token("normal");
    let r = sign_in(&mut app, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
}

#[tokio::test]
async fn known_users_only_refuses_strangers_and_ties_existing_accounts() {
    let Some(idp) = provider("known_users_only_refuses_strangers_and_ties_existing_accounts").await
    else {
        return;
    };
    let policy = Policy {
        known_users_only: true,
        ..mapped()
    };
    let mut app = sso_app(&idp, policy, true).await;
    let ada = app.add_user("ada", Role::Viewer).await;

    let path = through_provider(&mut app, "mallory").await;
    assert_refused(
        &mut app,
        &path,
        StatusCode::FORBIDDEN,
        "there is no perfjournal account named &#34;mallory&#34;",
    )
    .await;

    let r = sign_in(&mut app, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let tied: i64 = sqlx::query_scalar("SELECT user_id FROM external_identities")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(tied, ada, "the identity is tied to the existing account");
    assert_eq!(role_of(&app, "ada").await.as_deref(), Some("editor"));
    assert_eq!(count(&app, "users").await, 1);
}

#[tokio::test]
async fn with_password_sign_in_off_only_the_provider_signs_in() {
    let Some(idp) = provider("with_password_sign_in_off_only_the_provider_signs_in").await else {
        return;
    };
    let mut app = sso_app(&idp, mapped(), false).await;
    app.add_user("ada", Role::Admin).await;

    let page = app.get("/login").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.select("input[type=password]").is_empty(),
        "{}",
        page.body
    );
    assert_eq!(page.select("#sso-sign-in"), vec!["Sign in with Test IdP"]);
    assert!(page.body.contains("Password sign-in is turned off"));

    let r = app.login("ada").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(
        r.body
            .contains("password sign-in is turned off on this server"),
        "{}",
        r.body
    );
    assert!(app
        .get("/")
        .await
        .location()
        .is_some_and(|l| l.starts_with("/login")));

    // The provider still signs people in (a new account: the local ada is not tied).
    let r = sign_in(&mut app, "ada").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(app.get("/").await.select(".user-name"), vec!["ada-2"]);
}

#[tokio::test]
async fn groups_from_the_userinfo_endpoint_when_the_id_token_has_none() {
    let test = "groups_from_the_userinfo_endpoint_when_the_id_token_has_none";
    let Some(idp) = Provider::start(
        test,
        &[callback()],
        accounts(),
        &[("GROUPS_IN_USERINFO", "1")],
    )
    .await
    else {
        return;
    };
    let mut app = sso_app(&idp, mapped(), true).await;
    let r = sign_in(&mut app, "mallory").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(role_of(&app, "mallory").await.as_deref(), Some("admin"));
}

#[tokio::test]
async fn a_provider_that_is_down_is_a_clear_error_page() {
    let port = common::free_port();
    let settings = perfjournal::auth::oidc::OidcSettings {
        issuer: format!("http://127.0.0.1:{port}"),
        client_id: "perfjournal".into(),
        client_secret: None,
        scopes: vec!["openid".into()],
        groups_claim: "groups".into(),
        name: "Nowhere".into(),
    };
    let mut app = spawn_app_with(Config {
        public_url: Some(APP.into()),
        sign_in: SignIn {
            oidc: Some(settings),
            ..SignIn::default()
        },
        ..Config::default()
    })
    .await;
    app.add_user("ada", Role::Admin).await;
    let r = app.post_form("/auth/oidc/start", &[("next", "/")]).await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY, "{}", r.body);
    assert!(
        r.body.contains("Nowhere cannot be reached to sign in"),
        "{}",
        r.body
    );
}

/// The trusted reverse-proxy mode, against the server binary: the header from the trusted
/// address signs in (groups mapped to a role), from any other address it is refused.
#[tokio::test]
async fn the_proxy_header_signs_in_from_the_trusted_proxy_only() {
    let (pool, url) = common::fresh_db().await;
    let server = common::ServerProcess::start(
        &url,
        &[
            ("PERFJOURNAL_AUTH_PROXY_HEADER", "X-Forwarded-User"),
            ("PERFJOURNAL_AUTH_PROXY_GROUPS_HEADER", "X-Forwarded-Groups"),
            ("PERFJOURNAL_AUTH_PROXY_TRUSTED", "127.0.0.1"),
            ("PERFJOURNAL_OIDC_ROLE_MAP", "editor=perf-eng"),
        ],
    )
    .await;
    let via_proxy = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address("127.0.0.1".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    // Another machine on the network, as far as the server can tell.
    let elsewhere = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();

    let r = elsewhere
        .get(format!("{}/journal", server.base))
        .header("X-Forwarded-User", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("accepted only from the trusted proxies")
            && body.contains("came from 127.0.0.2"),
        "{body}"
    );
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(users, 0, "a refused header made a user");
    assert!(
        server.log().contains("proxy sign-in refused"),
        "{}",
        server.log()
    );

    // From the proxy: signed in, as an editor by the group header.
    let r = via_proxy
        .get(format!("{}/journal", server.base))
        .header("X-Forwarded-User", "ada")
        .header("X-Forwarded-Groups", "staff, perf-eng")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = r
        .headers()
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let body = r.text().await.unwrap();
    assert!(body.contains("class=\"user-name\">ada<"), "{body}");
    let role: String = sqlx::query_scalar("SELECT role FROM users WHERE name = 'ada'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(role, "editor");

    // The proxy's session cookie, presented from elsewhere without the header: an ordinary
    // session; with the header, refused even so.
    let r = elsewhere
        .get(format!("{}/journal", server.base))
        .header("cookie", &cookie)
        .header("X-Forwarded-User", "mallory")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    // Without the header nothing changes: the login page as usual.
    let r = elsewhere
        .get(format!("{}/journal", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

/// The server refuses to start on settings that cannot work, naming the flag.
#[tokio::test]
async fn bad_sign_on_settings_stop_the_server_with_a_clear_message() {
    let (_pool, url) = common::fresh_db().await;
    for (env, says) in [
        (
            vec![("PERFJOURNAL_AUTH_PROXY_HEADER", "X-Forwarded-User")],
            "--auth-proxy-header X-Forwarded-User needs --auth-proxy-trusted",
        ),
        (
            vec![
                ("PERFJOURNAL_OIDC_ISSUER", "https://login.example.com"),
                ("PERFJOURNAL_OIDC_CLIENT_ID", "perfjournal"),
                (
                    "PERFJOURNAL_OIDC_ROLE_MAP",
                    "admin=perf-admins,boss=perf-eng",
                ),
            ],
            "--oidc-role-map: \"boss=perf-eng\": \"boss\" is not a role",
        ),
        (
            vec![("PERFJOURNAL_OIDC_ISSUER", "https://login.example.com")],
            "--oidc-issuer is set but --oidc-client-id is not",
        ),
        (
            vec![("PERFJOURNAL_PASSWORD_SIGN_IN", "false")],
            "--password-sign-in false leaves no way to sign in",
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_perfjournal"))
            .env("DATABASE_URL", &url)
            .env("PERFJOURNAL_DATA_DIR", data.path())
            .env(
                "PERFJOURNAL_BIND",
                format!("127.0.0.1:{}", common::free_port()),
            )
            .envs(env.iter().copied())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{env:?} started");
        assert!(stderr.contains(says), "{env:?}: {stderr}");
    }
}

fn param(path: &str, name: &str) -> String {
    let query = path.split_once('?').unwrap().1;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap()
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {path}"))
        .1
}

fn rewrite_param(path: &str, name: &str, value: &str) -> String {
    let (base, query) = path.split_once('?').unwrap();
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap()
        .into_iter()
        .map(|(k, v)| {
            if k == name {
                (k, value.to_string())
            } else {
                (k, v)
            }
        })
        .collect();
    format!("{base}?{}", serde_urlencoded::to_string(pairs).unwrap())
}

/// Two first sign-ins of one person at once (two tabs, two replicas) end with one account.
#[tokio::test]
async fn simultaneous_first_sign_ins_make_one_account() {
    let app = common::spawn_app().await;
    let identity = perfjournal::auth::external::Identity {
        issuer: "https://login.example.com".into(),
        subject: "248289761001".into(),
        preferred_username: Some("grace".into()),
        email: None,
        groups: Some(vec!["perf-eng".into()]),
    };
    let policy = mapped();
    let sign_in =
        || perfjournal::auth::external::sign_in(&app.pool, &app.state.users, &identity, &policy);
    let (a, b, c) = tokio::join!(sign_in(), sign_in(), sign_in());
    let ids = [a.unwrap().id, b.unwrap().id, c.unwrap().id];
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(count(&app, "users").await, 1);
    assert_eq!(count(&app, "external_identities").await, 1);
    assert_eq!(role_of(&app, "grace").await.as_deref(), Some("editor"));
}
