//! Single sign-on in a real browser: "Sign in with …" on the sign-in page, the OpenID
//! provider's own login and consent pages (node-oidc-provider), and back signed in.

use crate::common;

use common::oidc::{settings, Provider};
use common::{browser, spawn_app_with};
use perfjournal::auth::external::Policy;
use perfjournal::auth::Role;
use perfjournal::config::{Config, SignIn};
use perfjournal::core::sso::RoleMap;

#[tokio::test]
async fn signs_in_through_the_providers_own_login_page() {
    let test = "signs_in_through_the_providers_own_login_page";
    // The app needs the issuer, the provider the app's address: its port is chosen first.
    let port = common::free_port();
    let app = spawn_app_with(Config {
        sign_in: SignIn {
            oidc: Some(settings(&format!("http://127.0.0.1:{port}"))),
            policy: Policy {
                role_map: Some(RoleMap::parse("editor=perf-eng").unwrap()),
                ..Policy::default()
            },
            ..SignIn::default()
        },
        ..Config::default()
    })
    .await;
    app.add_user("root", Role::Admin).await;
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    let accounts = serde_json::json!({"ada": {"groups": ["perf-eng"]}});
    let callback = format!("{}/auth/oidc/callback", b.base);
    let Some(idp) = Provider::start_on(port, test, &[callback], accounts, &[]).await else {
        b.quit().await;
        return;
    };

    b.goto("/login?next=/journal").await;
    b.wait_text("#sso-sign-in", "Sign in with Test IdP").await;
    b.screenshot("sso-login").await;
    b.click("#sso-sign-in").await;

    // The provider's login page: any password does for its development accounts.
    b.wait_text("button[type=submit]", "Sign-in").await;
    assert!(
        b.driver
            .current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with(&idp.issuer),
        "not on the provider's page"
    );
    b.fill("input[name=login]", "ada").await;
    b.fill("input[name=password]", "any password").await;
    b.click("button[type=submit]").await;

    // Its consent page, then back to the app, signed in, where the sign-in was asked from.
    b.wait_text("button[type=submit]", "Continue").await;
    b.click("button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;
    assert_eq!(b.path().await, "/journal");
    assert_eq!(b.text(".user-menu .badge").await, "editor");
    // (The provider's pages are its own; the app's logged nothing.)
    let errors: Vec<String> = b
        .console_errors()
        .await
        .into_iter()
        .filter(|e| e.contains(&b.base))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    b.quit().await;
}
