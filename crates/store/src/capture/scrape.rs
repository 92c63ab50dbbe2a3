//! One scrape of a `/metrics` URL, with the limits every capture keeps: no redirects
//! followed, a time limit, a size limit. Used by the server's capture task and the CLI.

use std::time::Duration;

use bytes::Bytes;
use chrono::{SecondsFormat, Utc};

use crate::core::analyze::prometheus::capture_marker;
use crate::core::capture::{MAX_SCRAPE_BYTES, SCRAPE_TIMEOUT_S};

/// A client that never follows redirects and gives up on a scrape after the time limit.
pub fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(SCRAPE_TIMEOUT_S))
        .connect_timeout(Duration::from_secs(SCRAPE_TIMEOUT_S))
        .user_agent(concat!("perfjournal-capture/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Fetches `url` once and returns the scrape as it goes into a capture file: the
/// marker line (the time the scrape started, the URL), then the body, ending in a
/// newline. Errors say what happened in words a person can act on.
pub async fn scrape(client: &reqwest::Client, url: &reqwest::Url) -> Result<Bytes, String> {
    let at = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/plain; version=0.0.4")
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                format!("{url} did not answer within {SCRAPE_TIMEOUT_S} s")
            } else {
                format!("could not fetch {url}: {}", error_chain(&e))
            }
        })?;
    let status = response.status();
    if status.is_redirection() {
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("elsewhere");
        return Err(format!(
            "{url} answered {status}, a redirect to {to}; redirects are not followed: \
             capture the final address instead (its host:port must be allowed too)"
        ));
    }
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let too_large = || {
        format!(
            "the response from {url} is larger than {} MiB, the limit for one scrape",
            MAX_SCRAPE_BYTES >> 20
        )
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_SCRAPE_BYTES)
    {
        return Err(too_large());
    }
    let mut out = capture_marker(&at, url.as_str()).into_bytes();
    let head = out.len();
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            if e.is_timeout() {
                format!("{url} did not finish its answer within {SCRAPE_TIMEOUT_S} s")
            } else {
                format!("reading the answer of {url} failed: {}", error_chain(&e))
            }
        })?;
        let Some(chunk) = chunk else { break };
        if (out.len() - head + chunk.len()) as u64 > MAX_SCRAPE_BYTES {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    if out.len() == head {
        return Err(format!("{url} answered with an empty body"));
    }
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    Ok(Bytes::from(out))
}

/// An error with its causes ("connection refused" is usually two levels down).
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
