//! The rules for capturing a live server's `/metrics`: how long, how often, and which
//! `host:port` pairs the server may fetch from (the admin's allowlist). The shell
//! (`src/capture`) parses the URL and does the fetching; the checks live here so the
//! API, the page and the tests share them.
//!
//! Hosts are compared as written in the URL (after the usual URL normalisation: lower
//! case, IPv6 in brackets, the scheme's default port when none is given). A DNS name
//! is allowed when the allowlist names it; the address it resolves to is not checked,
//! so list names only for servers whose DNS you trust.

use super::quantity::{self, Unit};
use super::FieldError;

/// Longest window, seconds.
pub const MAX_SECONDS: u32 = 3600;
/// Shortest interval between scrapes, seconds.
pub const MIN_INTERVAL_S: u32 = 1;
/// Largest body of one scrape, bytes (a busy vLLM `/metrics` page is a few hundred KB).
pub const MAX_SCRAPE_BYTES: u64 = 8 << 20;
/// How long one scrape may take, seconds.
pub const SCRAPE_TIMEOUT_S: u64 = 10;

/// Where the page points the admin (named in every refusal).
pub const ALLOWLIST_PAGE: &str = "/admin/capture-hosts";

/// What the server is asked to fetch, split by the shell's URL parser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: String,
    /// As the URL parser wrote it: lower case, IPv6 in brackets.
    pub host: String,
    /// Explicit, or the scheme's default.
    pub port: u16,
    /// The URL carried a user name or password.
    pub has_credentials: bool,
}

impl Target {
    /// `host:port`, the form the allowlist holds.
    pub fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// Refuses a target the server must not fetch: not http(s), credentials in the URL, or
/// a `host:port` missing from `allowed`.
pub fn check_target(target: &Target, allowed: &[String]) -> Result<(), FieldError> {
    if target.scheme != "http" && target.scheme != "https" {
        return Err(FieldError::new(
            "url",
            format!(
                "only http and https URLs can be captured, not {}:",
                target.scheme
            ),
        ));
    }
    if target.has_credentials {
        return Err(FieldError::new(
            "url",
            "leave user names and passwords out of the URL (it is recorded with the capture)",
        ));
    }
    let wanted = target.host_port();
    if allowed.is_empty() {
        return Err(FieldError::new(
            "url",
            format!(
                "no hosts are allowed for capture yet: an admin adds host:port pairs on \
                 {ALLOWLIST_PAGE} (the server fetches only from those)"
            ),
        ));
    }
    if !allowed.iter().any(|a| a.eq_ignore_ascii_case(&wanted)) {
        return Err(FieldError::new(
            "url",
            format!(
                "{wanted} is not in the capture allowlist (the server fetches only from \
                 host:port pairs an admin listed on {ALLOWLIST_PAGE})"
            ),
        ));
    }
    Ok(())
}

/// Reads an allowlist entry: `host:port` with an explicit port (`[v6]:port` for IPv6);
/// returns it in lower case.
pub fn parse_allow_entry(raw: &str) -> Result<String, FieldError> {
    let err = |m: String| FieldError::new("host_port", m);
    let text = raw.trim().to_ascii_lowercase();
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(err(format!(
            "'{}' needs a port: write host:port, e.g. 10.0.0.5:8000",
            raw.trim()
        )));
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| err(format!("'{port}' is not a port (1–65535)")))?;
    let ipv6 = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
    let plain = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_');
    if !(ipv6 || plain) {
        return Err(err(format!(
            "'{host}' is not a host name or address (write host:port, IPv6 as [::1]:9000)"
        )));
    }
    Ok(format!("{host}:{port}"))
}

/// How long and how often to scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub seconds: u32,
    pub interval_s: u32,
}

impl Window {
    /// Reads the window fields as typed ("60", "60 s", "2 s"; an empty interval
    /// scrapes only at the start and the end).
    pub fn parse(seconds: &str, interval_s: &str) -> Result<Window, Vec<FieldError>> {
        let mut errors = Vec::new();
        let whole = |field: &str, raw: &str, errors: &mut Vec<FieldError>| -> Option<u32> {
            match quantity::read(raw, Unit::S) {
                Ok(v) if v.fract() == 0.0 && v >= 0.0 && v <= u32::MAX as f64 => Some(v as u32),
                Ok(_) => {
                    errors.push(FieldError::new(field, "a whole number of seconds"));
                    None
                }
                Err(e) => {
                    errors.push(FieldError::new(field, e.to_string()));
                    None
                }
            }
        };
        let secs = whole("seconds", seconds, &mut errors);
        let interval = if interval_s.trim().is_empty() {
            secs
        } else {
            whole("interval_s", interval_s, &mut errors)
        };
        if let Some(s) = secs {
            if !(1..=MAX_SECONDS).contains(&s) {
                errors.push(FieldError::new(
                    "seconds",
                    format!("the window is 1 to {MAX_SECONDS} seconds, not {s}"),
                ));
            }
        }
        if let Some(i) = interval {
            if i < MIN_INTERVAL_S {
                errors.push(FieldError::new(
                    "interval_s",
                    format!("scrape at most once a second (interval ≥ {MIN_INTERVAL_S} s)"),
                ));
            }
        }
        match (secs, interval, errors.is_empty()) {
            (Some(seconds), Some(interval_s), true) => Ok(Window {
                seconds,
                interval_s: interval_s.min(seconds).max(MIN_INTERVAL_S),
            }),
            _ => Err(errors),
        }
    }

    /// Seconds after the start at which to scrape: the start, every interval, the end.
    pub fn offsets(&self) -> Vec<u32> {
        let step = self.interval_s.max(MIN_INTERVAL_S) as usize;
        let mut out: Vec<u32> = (0..self.seconds).step_by(step).collect();
        out.push(self.seconds);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16) -> Target {
        Target {
            scheme: "http".into(),
            host: host.into(),
            port,
            has_credentials: false,
        }
    }

    #[test]
    fn only_listed_host_ports_pass() {
        let allowed = vec![
            "10.0.0.5:8000".to_string(),
            "vllm.internal:9000".to_string(),
        ];
        assert!(check_target(&target("10.0.0.5", 8000), &allowed).is_ok());
        assert!(check_target(&target("vllm.internal", 9000), &allowed).is_ok());
        let e = check_target(&target("10.0.0.5", 8001), &allowed).unwrap_err();
        assert_eq!(e.field, "url");
        assert!(e
            .message
            .contains("10.0.0.5:8001 is not in the capture allowlist"));
        assert!(e.message.contains(ALLOWLIST_PAGE));
        let e = check_target(&target("10.0.0.5", 8000), &[]).unwrap_err();
        assert!(
            e.message.starts_with("no hosts are allowed"),
            "{}",
            e.message
        );
        let mut ftp = target("10.0.0.5", 8000);
        ftp.scheme = "file".into();
        assert!(check_target(&ftp, &allowed)
            .unwrap_err()
            .message
            .contains("file:"));
        let mut creds = target("10.0.0.5", 8000);
        creds.has_credentials = true;
        assert!(check_target(&creds, &allowed).is_err());
    }

    #[test]
    fn allow_entries_need_a_port() {
        assert_eq!(
            parse_allow_entry(" VLLM.internal:9000 ").unwrap(),
            "vllm.internal:9000"
        );
        assert_eq!(parse_allow_entry("[::1]:9000").unwrap(), "[::1]:9000");
        assert!(parse_allow_entry("10.0.0.5")
            .unwrap_err()
            .message
            .contains("needs a port"));
        assert!(parse_allow_entry("10.0.0.5:0").is_err());
        assert!(parse_allow_entry("10.0.0.5:http").is_err());
        assert!(parse_allow_entry("http://h:80").is_err());
        assert!(parse_allow_entry("a b:80").is_err());
        assert!(parse_allow_entry(":80").is_err());
    }

    #[test]
    fn windows_and_their_scrapes() {
        let w = Window::parse("2", "1").unwrap();
        assert_eq!(w.offsets(), vec![0, 1, 2]);
        assert_eq!(
            Window::parse("5 s", "2").unwrap().offsets(),
            vec![0, 2, 4, 5]
        );
        // No interval: the start and the end only.
        assert_eq!(Window::parse("60", "").unwrap().offsets(), vec![0, 60]);
        // An interval longer than the window is the window.
        assert_eq!(Window::parse("3", "10").unwrap().offsets(), vec![0, 3]);
        let e = Window::parse("3601", "0").unwrap_err();
        let fields: Vec<&str> = e.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, vec!["seconds", "interval_s"]);
        assert!(Window::parse("1.5", "1").is_err());
        assert!(Window::parse("60", "2 GiB").unwrap_err()[0]
            .message
            .contains("GiB"));
        assert_eq!(Window::parse("1", "1").unwrap().offsets(), vec![0, 1]);
        assert_eq!(Window::parse("3600", "1").unwrap().offsets().len(), 3601);
    }
}
