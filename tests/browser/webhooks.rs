//! The webhooks page in a real browser: an admin adds an endpoint through the form (a bad
//! URL is refused beside its field, the form keeps what was ticked) and sees the endpoint
//! listed with its events and an empty delivery log.

use crate::common;

use common::{browser, spawn_app};

#[tokio::test]
async fn an_admin_adds_an_endpoint_through_the_form() {
    let mut app = spawn_app().await;
    app.setup_admin("ada").await;
    let test = "an_admin_adds_an_endpoint_through_the_form";
    let Some(b) = browser::start(&app, test).await else {
        return;
    };
    b.sign_in("ada").await;
    b.goto("/admin/users").await;
    b.click("a[href='/admin/webhooks']").await;
    b.wait_text("main h1", "Webhooks").await;
    b.wait_text("#no-webhooks", "No endpoints yet").await;

    b.fill("#url", "hooks.example.com/perfjournal").await;
    b.click("input[name=events][value='journal.published']")
        .await;
    b.click("input[name=events][value='artifact.failed']").await;
    b.fill("#secret", "a-secret-of-24-characters").await;
    b.click("#add-webhook button[type=submit]").await;
    b.wait_text(".field-error[data-field=url]", "http:// or https://")
        .await;
    // What was ticked is still ticked; the secret is typed again.
    let ticked = b
        .driver
        .execute(
            "return [...document.querySelectorAll('input[name=events]:checked')].map(e => e.value)",
            vec![],
        )
        .await
        .unwrap()
        .json()
        .clone();
    assert_eq!(
        ticked,
        serde_json::json!(["journal.published", "artifact.failed"])
    );

    b.fill("#url", "https://hooks.example.com/perfjournal")
        .await;
    b.fill("#secret", "a-secret-of-24-characters").await;
    b.click("#add-webhook button[type=submit]").await;
    let card = b
        .wait_text(".webhook h2", "https://hooks.example.com/perfjournal")
        .await;
    assert!(!card.contains("Slack"), "{card}");
    let events = b.text(".webhook p").await;
    assert!(
        events.contains("journal.published") && events.contains("artifact.failed"),
        "{events}"
    );
    assert!(b.text(".webhook").await.contains("No deliveries yet"));
    b.screenshot("webhooks-added").await;
    b.quit().await;
}
