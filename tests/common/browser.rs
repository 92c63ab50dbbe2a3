//! Headless Chromium for page tests: the app served on a loopback port, chromedriver on
//! another, thirtyfour driving it. Without Chromium the tests say they skipped — except
//! in CI, where the browser is installed by `.ci/run` and a missing one is a failure.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use thirtyfour::common::command::{Command as WdCommand, ExtensionCommand};
use thirtyfour::prelude::*;
use thirtyfour::ChromiumLikeCapabilities;

use super::TestApp;

pub struct Browser {
    pub driver: WebDriver,
    pub base: String,
    chromedriver: Child,
    server: tokio::task::JoinHandle<()>,
    indexer: tokio::task::JoinHandle<()>,
}

fn find(candidates: &[&str]) -> Option<String> {
    candidates
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| p.to_string())
}

use super::free_port;

/// Starts the app on a loopback port and a headless browser; `None` means skipped.
pub async fn start(app: &TestApp, test: &str) -> Option<Browser> {
    let chromium = find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
    let driver_bin = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
    let (Some(chromium), Some(driver_bin)) = (chromium, driver_bin) else {
        super::skip(
            test,
            "Chromium or chromedriver is not installed (apt-get install chromium chromium-driver)",
        );
        return None;
    };

    // As in the real server, search catches up in the background.
    let indexer = tokio::spawn(app.state.search.clone().run_indexer(app.pool.clone()));
    let (addr, server) = app.serve_on_port().await;

    let port = free_port();
    let chromedriver = Command::new(driver_bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let mut caps = DesiredCapabilities::chrome();
    caps.set_binary(&chromium).unwrap();
    // Keep the browser console so tests can assert a page logged no errors.
    caps.set("goog:loggingPrefs", serde_json::json!({ "browser": "ALL" }))
        .unwrap();
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
    ] {
        caps.add_arg(arg).unwrap();
    }
    let url = format!("http://127.0.0.1:{port}");
    let mut last_err = None;
    for _ in 0..50 {
        match WebDriver::new(&url, caps.clone()).await {
            Ok(driver) => {
                return Some(Browser {
                    driver,
                    base: format!("http://{addr}"),
                    chromedriver,
                    server,
                    indexer,
                })
            }
            Err(e) => {
                last_err = Some(e);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    panic!("chromedriver did not start: {last_err:?}");
}

impl Browser {
    pub async fn goto(&self, path: &str) {
        self.driver
            .goto(format!("{}{path}", self.base))
            .await
            .unwrap();
    }

    pub async fn path(&self) -> String {
        let url = self.driver.current_url().await.unwrap();
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        }
    }

    pub async fn fill(&self, css: &str, text: &str) {
        let el = self.driver.find(By::Css(css)).await.unwrap();
        el.clear().await.unwrap();
        el.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.driver
            .find(By::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    pub async fn text(&self, css: &str) -> String {
        self.driver
            .find(By::Css(css))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The current value of the form field matching `css`.
    pub async fn value(&self, css: &str) -> String {
        self.driver
            .find(By::Css(css))
            .await
            .unwrap()
            .value()
            .await
            .unwrap()
            .unwrap_or_default()
    }

    /// Whether the checkbox or radio button matching `css` is ticked.
    pub async fn is_ticked(&self, css: &str) -> bool {
        self.driver
            .find(By::Css(css))
            .await
            .unwrap()
            .is_selected()
            .await
            .unwrap()
    }

    /// Waits until an element matching `css` has text containing `needle`.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let mut last = String::new();
        for _ in 0..100 {
            if let Ok(el) = self.driver.find(By::Css(css)).await {
                last = el.text().await.unwrap_or_default();
                if last.contains(needle) {
                    return last;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never contained {needle:?}; last text: {last:?}");
    }

    /// Signs `name` in through the login form (every test user has [`super::PASSWORD`]).
    pub async fn sign_in(&self, name: &str) {
        self.goto("/login").await;
        self.fill("#name", name).await;
        self.fill("#password", super::PASSWORD).await;
        self.click("form[action='/login'] button[type=submit]")
            .await;
        self.wait_text(".user-name", name).await;
    }

    /// Saves a screenshot under target/screenshots for a person to look at.
    pub async fn screenshot(&self, name: &str) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).ok();
        let _ = self
            .driver
            .screenshot(&dir.join(format!("{name}.png")))
            .await;
    }

    /// Errors the browser console logged since the last call (script errors, CSP
    /// violations, failed loads), from chromedriver's log endpoint.
    pub async fn console_errors(&self) -> Vec<String> {
        let reply = self
            .driver
            .handle()
            .cmd(WdCommand::ExtensionCommand(Box::new(BrowserLog)))
            .await
            .expect("chromedriver's log endpoint");
        let entries: Vec<serde_json::Value> = reply.value().unwrap_or_default();
        entries
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    pub async fn quit(mut self) {
        let _ = self.driver.quit().await;
        let _ = self.chromedriver.kill();
        let _ = self.chromedriver.wait();
        self.server.abort();
        self.indexer.abort();
    }
}

/// chromedriver's `POST /session/{id}/se/log` for the browser console.
#[derive(Debug)]
struct BrowserLog;

impl ExtensionCommand for BrowserLog {
    fn parameters_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "type": "browser" }))
    }

    fn method(&self) -> axum::http::Method {
        axum::http::Method::POST
    }

    fn endpoint(&self) -> std::sync::Arc<str> {
        "/se/log".into()
    }
}
