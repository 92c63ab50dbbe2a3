//! A real OpenID provider for the sign-on tests: node-oidc-provider running
//! tests/oidc/provider.mjs (node_modules from `PERFJOURNAL_OIDC_PROVIDER_DIR`, which
//! `.ci/run` fills with `npm install`), killed when dropped; and a small user agent that
//! signs in on the provider's own login and consent pages.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use perfjournal::auth::oidc::OidcSettings;

pub const CLIENT_ID: &str = "perfjournal";
pub const CLIENT_SECRET: &str = "perfjournal-test-secret";

pub struct Provider {
    pub issuer: String,
    child: tokio::process::Child,
    dir: tempfile::TempDir,
}

impl Provider {
    /// Starts the provider with the client's redirect URIs and the accounts
    /// (`{"ada": {"groups": [...]}}`); `None` when the test is skipped (no provider
    /// installed here).
    pub async fn start(
        test: &str,
        redirect_uris: &[String],
        accounts: serde_json::Value,
        env: &[(&str, &str)],
    ) -> Option<Provider> {
        Provider::start_on(super::free_port(), test, redirect_uris, accounts, env).await
    }

    /// [`Provider::start`] on a given port (when the app must know the issuer before the
    /// provider can know the app's address).
    pub async fn start_on(
        port: u16,
        test: &str,
        redirect_uris: &[String],
        accounts: serde_json::Value,
        env: &[(&str, &str)],
    ) -> Option<Provider> {
        let Some(modules) = std::env::var_os("PERFJOURNAL_OIDC_PROVIDER_DIR")
            .map(PathBuf::from)
            .filter(|d| d.join("node_modules/oidc-provider/package.json").exists())
        else {
            super::skip(
                test,
                "no OpenID provider: set PERFJOURNAL_OIDC_PROVIDER_DIR to a directory where \
                 `npm install oidc-provider@8.8.1` ran (.ci/run does)",
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("pj-oidc-")
            .tempdir()
            .unwrap();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs");
        let log = std::fs::File::create(dir.path().join("provider.log")).unwrap();
        let provider_state = dir.path().join("state.json");
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(script)
            .env("PROVIDER_DIR", modules)
            .env("PORT", port.to_string())
            .env("REDIRECT_URIS", redirect_uris.join(","))
            .env("STATE_FILE", &provider_state)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let provider = Provider {
            issuer: format!("http://127.0.0.1:{port}"),
            child: cmd.spawn().expect("start node (the OpenID provider)"),
            dir,
        };
        provider.write_state(&serde_json::json!({"accounts": accounts, "id_token": "normal"}));
        let http = reqwest::Client::new();
        let started = Instant::now();
        let discovery = format!("{}/.well-known/openid-configuration", provider.issuer);
        while !http
            .get(&discovery)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the OpenID provider did not start: {}",
                provider.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(provider)
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }

    fn write_state(&self, state: &serde_json::Value) {
        let tmp = self.dir.path().join("state.json.new");
        std::fs::write(&tmp, state.to_string()).unwrap();
        std::fs::rename(tmp, self.state_path()).unwrap();
    }

    fn read_state(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    /// Sets one account's groups (the next sign-in sees them).
    pub fn set_groups(&self, account: &str, groups: &[&str]) {
        let mut state = self.read_state();
        state["accounts"][account]["groups"] = serde_json::json!(groups);
        self.write_state(&state);
    }

    /// How the provider signs the ID tokens it hands out: "normal", "expired", "foreign".
    pub fn set_id_token(&self, mode: &str) {
        let mut state = self.read_state();
        state["id_token"] = serde_json::json!(mode);
        self.write_state(&state);
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("provider.log")).unwrap_or_default()
    }

    /// The app's settings for this provider.
    pub fn settings(&self) -> OidcSettings {
        settings(&self.issuer)
    }
}

/// The app's settings for the test provider at `issuer`.
pub fn settings(issuer: &str) -> OidcSettings {
    {
        OidcSettings {
            issuer: issuer.to_string(),
            client_id: CLIENT_ID.into(),
            client_secret: Some(CLIENT_SECRET.into()),
            scopes: ["openid", "profile", "email", "groups"]
                .map(String::from)
                .to_vec(),
            groups_claim: "groups".into(),
            name: "Test IdP".into(),
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A browser-like client for the provider's pages: keeps the provider's cookies, follows
/// its redirects, fills its login form and accepts its consent, and stops at the first
/// redirect that leaves for `app_base` (the app's callback), which it returns.
pub async fn authorize(auth_url: &str, login: &str, app_base: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let mut url = reqwest::Url::parse(auth_url).unwrap();
    let mut form: Option<Vec<(String, String)>> = None;
    for _ in 0..20 {
        let jar: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let request = match form.take() {
            Some(fields) => http
                .post(url.clone())
                .header("content-type", "application/x-www-form-urlencoded")
                .body(serde_urlencoded::to_string(&fields).unwrap()),
            None => http.get(url.clone()),
        };
        let response = request
            .header("cookie", jar.join("; "))
            .send()
            .await
            .unwrap();
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let pair = set.split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                let expired = set
                    .to_ascii_lowercase()
                    .contains("expires=thu, 01 jan 1970")
                    || v.is_empty();
                if expired {
                    cookies.remove(k.trim());
                } else {
                    cookies.insert(k.trim().to_string(), v.to_string());
                }
            }
        }
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers()["location"].to_str().unwrap().to_string();
            let next = url.join(&location).unwrap();
            if next.as_str().starts_with(app_base) {
                return next.to_string();
            }
            url = next;
            continue;
        }
        let body = response.text().await.unwrap();
        assert!(status.is_success(), "{url} → {status}: {body}");
        let page = scraper::Html::parse_document(&body);
        let form_sel = scraper::Selector::parse("form[method=post]").unwrap();
        let input_sel = scraper::Selector::parse("input").unwrap();
        let Some(f) = page.select(&form_sel).next() else {
            panic!("{url}: the provider's page has no form: {body}");
        };
        let mut fields = Vec::new();
        for input in f.select(&input_sel) {
            let name = input.value().attr("name").unwrap_or_default().to_string();
            let value = match name.as_str() {
                "login" => login.to_string(),
                "password" => "any password".to_string(),
                _ => input.value().attr("value").unwrap_or_default().to_string(),
            };
            fields.push((name, value));
        }
        url = url.join(f.value().attr("action").unwrap()).unwrap();
        form = Some(fields);
    }
    panic!("the provider did not send the browser back to {app_base}");
}
