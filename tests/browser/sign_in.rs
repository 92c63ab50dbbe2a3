//! The foundation in a real browser: setup → a page → logout → login.

use crate::common;

use common::{browser, spawn_app, PASSWORD};

#[tokio::test]
async fn setup_login_page_and_logout_in_a_browser() {
    let app = spawn_app().await;
    let Some(b) = browser::start(&app, "setup_login_page_and_logout_in_a_browser").await else {
        return;
    };

    // First visit: no account yet, so the app asks for the admin.
    b.goto("/").await;
    assert_eq!(b.path().await, "/setup");
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.fill("#confirm", PASSWORD).await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;
    assert_eq!(b.path().await, "/");
    b.screenshot("home").await;

    // A page of the app, through the navigation.
    b.click(".areas a[href='/journal']").await;
    b.wait_text("main h1", "Journal").await;

    // htmx loaded from our own origin and the CSP let it run.
    let htmx: bool = b
        .driver
        .execute("return typeof window.htmx === 'object';", vec![])
        .await
        .unwrap()
        .convert()
        .unwrap();
    assert!(htmx, "htmx did not load");

    // Sign out through the user menu.
    b.click(".user-menu summary").await;
    b.click(".user-menu button[type=submit]").await;
    b.wait_text("main h1", "Sign in").await;
    assert_eq!(b.path().await, "/login");

    // And back in.
    b.fill("#name", "ada").await;
    b.fill("#password", PASSWORD).await;
    b.click("form[action='/login'] button[type=submit]").await;
    b.wait_text(".user-name", "ada").await;
    b.quit().await;
}
