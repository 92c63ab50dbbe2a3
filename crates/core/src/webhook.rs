//! Webhooks as pure rules: which events exist, what an endpoint may be, how a delivery is
//! signed and shaped, and how long to wait before trying again. The queue and the HTTP
//! calls live in the app's `webhooks` module.

use std::net::{IpAddr, Ipv4Addr};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::FieldError;

/// Every event an endpoint can subscribe to, with what it means.
pub const EVENTS: &[(&str, &str)] = &[
    ("journal.published", "a journal entry was published"),
    (
        "investigation.resolved",
        "an investigation was marked resolved",
    ),
    (
        "proposal.review_requested",
        "a proposal was sent for review",
    ),
    ("proposal.approved", "a proposal was approved"),
    (
        "proposal.changes_requested",
        "a reviewer asked for changes to a proposal",
    ),
    (
        "artifact.failed",
        "an uploaded artifact could not be analysed",
    ),
    (
        "comparison.regression",
        "a matched comparison found a regression",
    ),
];

/// The most event names one request may list (there are seven; repeats count once).
pub const MAX_EVENT_NAMES: usize = 50;

/// Deliveries are tried this many times, then marked failed (and kept in the log).
pub const MAX_ATTEMPTS: i32 = 8;

/// The wait before attempt `attempt + 1` after `attempt` failed ones: 10 s doubling, at
/// most an hour (10 s, 20 s, 40 s … about 21 minutes before the last).
pub fn backoff_seconds(attempt: i32) -> i64 {
    let n = attempt.clamp(1, 20) - 1;
    (10_i64 << n).min(3600)
}

/// `sha256=<hex HMAC-SHA256 of the body with the secret>`, the signature header's value.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any size");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// An endpoint as an admin types it, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub url: String,
    pub events: Vec<String>,
    pub secret: String,
    pub slack: bool,
}

/// Addresses a webhook never reaches unless allowed: link-local ones (169.254.0.0/16,
/// fe80::/10, where clouds answer their instance metadata at 169.254.169.254), the
/// metadata services' other addresses (AWS fd00:ec2::254, Alibaba 100.100.100.200) and
/// the unspecified address. The delivery log says whether a port answered, so such a
/// target would let an admin's mistake, or a stolen admin session, read the machine's
/// cloud credentials.
pub fn forbidden_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_link_local() || v4.is_unspecified() || v4 == Ipv4Addr::new(100, 100, 100, 200)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_address(IpAddr::V4(v4));
            }
            (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.is_unspecified()
                || v6 == "fd00:ec2::254".parse::<std::net::Ipv6Addr>().unwrap_or(v6)
        }
    }
}

/// Host names of metadata services.
const METADATA_NAMES: &[&str] = &["metadata.google.internal", "metadata", "instance-data"];

/// The host of a URL's authority (`user@host:port`, `[v6]:port`).
fn host_of(authority: &str) -> &str {
    let hostport = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(rest) = hostport.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    hostport.split(':').next().unwrap_or(hostport)
}

/// Why a host may not be a webhook target, if it may not.
fn refused_host(host: &str, allowed: &dyn Fn(IpAddr) -> bool) -> Option<String> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let forbidden = match host.parse::<IpAddr>() {
        Ok(ip) => forbidden_address(ip) && !allowed(ip),
        Err(_) => METADATA_NAMES.contains(&host.as_str()),
    };
    forbidden.then(|| {
        format!(
            "{host} is a link-local or cloud-metadata address, which webhooks do not reach \
             (an admin can allow a network with PERFJOURNAL_WEBHOOK_ALLOW_CIDRS)"
        )
    })
}

/// Checks the URL (http or https, a host, no credentials, spaces or control characters),
/// the events (known, at least one; repeats count once) and the secret (16 to 200
/// characters, no space at either end, no control characters); every problem is named
/// against its field. Nothing is trimmed: what is stored is what was sent.
///
/// A host that is a link-local or cloud-metadata address ([`forbidden_address`]), or a
/// metadata service's name, is refused unless `allowed` accepts the address (an admin's
/// `PERFJOURNAL_WEBHOOK_ALLOW_CIDRS`); names are checked again when a delivery resolves
/// them.
pub fn check(
    url: &str,
    events: &[String],
    secret: &str,
    slack: bool,
    allowed: &dyn Fn(IpAddr) -> bool,
) -> Result<Endpoint, Vec<FieldError>> {
    let mut errors = Vec::new();
    match url.split_once("://") {
        Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            if let Some(why) = refused_host(host_of(authority), allowed) {
                errors.push(FieldError::new("url", why));
            }
            if authority.is_empty() {
                errors.push(FieldError::new(
                    "url",
                    "the URL has no host, e.g. https://hooks.example.com/perfjournal",
                ));
            } else if authority.contains('@') {
                errors.push(FieldError::new(
                    "url",
                    "credentials do not belong in the URL; the secret signs every delivery",
                ));
            }
            if url.chars().count() > 2000
                || url.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                errors.push(FieldError::new(
                    "url",
                    "a URL of at most 2,000 characters without spaces",
                ));
            }
        }
        _ => errors.push(FieldError::new(
            "url",
            "an http:// or https:// URL, e.g. https://hooks.example.com/perfjournal",
        )),
    }
    let mut chosen: Vec<String> = Vec::new();
    if events.len() > MAX_EVENT_NAMES {
        errors.push(FieldError::new(
            "events",
            format!("at most {MAX_EVENT_NAMES} event names"),
        ));
    }
    for e in events.iter().take(MAX_EVENT_NAMES) {
        let e = e.as_str();
        if !EVENTS.iter().any(|(name, _)| *name == e) {
            let known: Vec<&str> = EVENTS.iter().map(|(n, _)| *n).collect();
            errors.push(FieldError::new(
                "events",
                format!("no event named {e}; one of {}", known.join(", ")),
            ));
        } else if !chosen.iter().any(|c| c == e) {
            chosen.push(e.to_string());
        }
    }
    if chosen.is_empty() && !errors.iter().any(|e| e.field == "events") {
        errors.push(FieldError::new("events", "at least one event"));
    }
    let n = secret.chars().count();
    if !(16..=200).contains(&n) {
        errors.push(FieldError::new(
            "secret",
            "a secret of 16 to 200 characters (the receiver checks the signature with it)",
        ));
    } else if secret.trim() != secret || secret.chars().any(char::is_control) {
        errors.push(FieldError::new(
            "secret",
            "no space at either end and no control characters or line breaks (they are easily \
             lost when the receiver is set up)",
        ));
    }
    if errors.is_empty() {
        Ok(Endpoint {
            url: url.to_string(),
            events: chosen,
            secret: secret.to_string(),
            slack,
        })
    } else {
        Err(errors)
    }
}

/// The JSON body of one delivery: the event, when, a one-line text and the event's data.
/// A Slack-compatible endpoint gets `text` and a section block instead, with the event
/// named beside them.
pub fn body(event: &str, at: &str, text: &str, data: &Value, slack: bool) -> Value {
    if slack {
        json!({
            "event": event,
            "text": text,
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        })
    } else {
        json!({"event": event, "at": at, "text": text, "data": data})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff_seconds(1), 10);
        assert_eq!(backoff_seconds(2), 20);
        assert_eq!(backoff_seconds(7), 640);
        assert_eq!(backoff_seconds(20), 3600);
    }

    const NONE: &dyn Fn(IpAddr) -> bool = &|_| false;

    #[test]
    fn endpoints_are_checked_field_by_field() {
        let ev = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ok = check(
            "https://hooks.example.com/x",
            &ev(&["journal.published", "journal.published"]),
            "0123456789abcdef",
            false,
            NONE,
        )
        .unwrap();
        assert_eq!(ok.events, vec!["journal.published"]);
        let errs = check("ftp://x", &ev(&["nope"]), "short", false, NONE).unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["url", "events", "secret"]);
        let errs = check(
            "https://user:pw@x.example/",
            &ev(&[]),
            "0123456789abcdef",
            false,
            NONE,
        )
        .unwrap_err();
        assert!(
            errs[0].message.contains("credentials") && errs[1].message.contains("at least one")
        );
        let errs = check(
            " https://x.example/",
            &ev(&["artifact.failed"]),
            " 0123456789abcdef",
            false,
            NONE,
        )
        .unwrap_err();
        assert_eq!(errs.len(), 2, "nothing is trimmed: {errs:?}");
        assert!(errs[1].message.contains("either end"));
    }

    #[test]
    fn link_local_and_metadata_targets_are_refused_unless_allowed() {
        let ev = vec!["journal.published".to_string()];
        let secret = "0123456789abcdef";
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]:8080/x",
            "http://[::ffff:169.254.169.254]/",
            "http://[fd00:ec2::254]/",
            "http://100.100.100.200/",
            "http://metadata.google.internal./computeMetadata/v1/",
            "http://0.0.0.0:22/",
        ] {
            let errs = check(url, &ev, secret, false, NONE).unwrap_err();
            assert!(errs[0].message.contains("link-local"), "{url}: {errs:?}");
        }
        let lab: &dyn Fn(IpAddr) -> bool = &|ip| ip.to_string().starts_with("169.254.10.");
        assert!(check("http://169.254.10.5:9000/hook", &ev, secret, false, lab).is_ok());
        // Private and loopback receivers (a relay on the same host) stay allowed.
        for url in [
            "http://127.0.0.1:9000/",
            "http://10.0.0.7/hook",
            "https://hooks.example.com/",
        ] {
            assert!(check(url, &ev, secret, false, NONE).is_ok(), "{url}");
        }
    }

    #[test]
    fn slack_endpoints_get_text_and_blocks() {
        let b = body(
            "journal.published",
            "2026-12-02T00:00:00Z",
            "Published: p99 ITL",
            &json!({"id": 1}),
            true,
        );
        assert_eq!(b["text"], "Published: p99 ITL");
        assert_eq!(b["blocks"][0]["text"]["text"], "Published: p99 ITL");
        let b = body("journal.published", "t", "x", &json!({"id": 1}), false);
        assert_eq!(b["data"]["id"], 1);
        assert_eq!(b["event"], "journal.published");
    }
}
