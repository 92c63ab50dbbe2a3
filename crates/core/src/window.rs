//! Time windows as people type them: an incident's start and end, a Prometheus window,
//! a filter on request arrivals. One reading of a time for every form and the API.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};

use crate::FieldError;

/// A time as typed: RFC 3339 (`2026-12-02T14:00:00Z`), `YYYY-MM-DD HH:MM[:SS]` in UTC
/// (also with `T`), or Unix seconds; in Unix seconds.
pub fn parse_time(field: &str, raw: &str) -> Result<f64, FieldError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(FieldError::new(
            field,
            "a time (UTC), e.g. 2026-12-02 14:00",
        ));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.timestamp_millis() as f64 / 1000.0);
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(raw, fmt) {
            return Ok(Utc.from_utc_datetime(&t).timestamp() as f64);
        }
    }
    match raw.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t < 1e11 => Ok(t),
        _ => Err(FieldError::new(
            field,
            format!(
                "'{raw}' is not a time: write 2026-12-02 14:00 (UTC), RFC 3339 or Unix seconds"
            ),
        )),
    }
}

/// An optional time: blank is `None`.
pub fn parse_optional_time(field: &str, raw: &str) -> Result<Option<f64>, FieldError> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    parse_time(field, raw).map(Some)
}

/// The time as forms show it (UTC, to the second).
pub fn show_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// The start and end of a window as typed (fields `start` and `end`), in Unix seconds:
/// both must read as times, the end after the start, at most `max_s` apart.
pub fn parse_window(start: &str, end: &str, max_s: f64) -> Result<(f64, f64), Vec<FieldError>> {
    let mut errors = Vec::new();
    let s = parse_time("start", start).map_err(|e| errors.push(e)).ok();
    let e = parse_time("end", end).map_err(|e| errors.push(e)).ok();
    match (s, e) {
        (Some(s), Some(e)) if e <= s => {
            errors.push(FieldError::new("end", "the end comes after the start"));
        }
        (Some(s), Some(e)) if e - s > max_s => {
            errors.push(FieldError::new(
                "end",
                format!("a window of at most {}", span(max_s)),
            ));
        }
        _ => {}
    }
    match (s, e) {
        (Some(s), Some(e)) if errors.is_empty() => Ok((s, e)),
        _ => Err(errors),
    }
}

/// Longest incident window: a month and a day.
pub const MAX_INCIDENT_S: f64 = 32.0 * 86_400.0;

/// An incident's window as typed, checked against `now` (Unix seconds): a window
/// ([`parse_window`]) of at most [`MAX_INCIDENT_S`] that starts before now (an incident
/// that has not begun is a typo, often the year).
pub fn parse_incident(start: &str, end: &str, now: f64) -> Result<(f64, f64), Vec<FieldError>> {
    let (s, e) = parse_window(start, end, MAX_INCIDENT_S)?;
    if s > now {
        return Err(vec![FieldError::new(
            "start",
            "the incident starts in the future; check the date (times are UTC)",
        )]);
    }
    Ok((s, e))
}

/// "31 days", "6 hours", "90 minutes": a span for a sentence.
pub fn span(seconds: f64) -> String {
    let whole = |v: f64, unit: &str| {
        let n = crate::fmt::format_number(v, if v.fract() == 0.0 { 0 } else { 1 });
        format!("{n} {unit}{}", if v == 1.0 { "" } else { "s" })
    };
    if seconds >= 86_400.0 && seconds % 3_600.0 == 0.0 {
        whole(seconds / 86_400.0, "day")
    } else if seconds >= 3_600.0 {
        whole(seconds / 3_600.0, "hour")
    } else if seconds >= 60.0 {
        whole(seconds / 60.0, "minute")
    } else {
        whole(seconds, "second")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_typed() {
        assert_eq!(
            parse_time("start", "2026-12-02 14:00").unwrap(),
            1_796_220_000.0
        );
        assert_eq!(
            parse_time("start", "2026-12-02T14:00:00Z").unwrap(),
            1_796_220_000.0
        );
        assert_eq!(
            parse_time("start", "2026-12-02T15:00:00+01:00").unwrap(),
            1_796_220_000.0
        );
        assert_eq!(parse_time("start", "1796220000").unwrap(), 1_796_220_000.0);
        let e = parse_time("start", "yesterday").unwrap_err();
        assert_eq!(e.field, "start");
        assert!(parse_time("start", "-5").is_err());
        assert_eq!(parse_optional_time("from", " ").unwrap(), None);
    }

    #[test]
    fn windows_are_ordered_and_bounded() {
        assert_eq!(
            parse_window("2026-12-02 14:00", "2026-12-02 15:00", 3600.0).unwrap(),
            (1_796_220_000.0, 1_796_223_600.0)
        );
        let e = parse_window("2026-12-02 15:00", "2026-12-02 14:00", 3600.0).unwrap_err();
        assert_eq!((e[0].field.as_str(), e.len()), ("end", 1));
        let e = parse_window("2026-12-01 14:00", "2026-12-02 15:00", 86_400.0).unwrap_err();
        assert!(e[0].message.contains("at most 1 day"), "{}", e[0].message);
        let e = parse_window("x", "", 60.0).unwrap_err();
        assert_eq!(e.len(), 2, "both fields are named");
        let now = 1_796_223_600.0;
        assert!(parse_incident("2026-12-02 14:00", "2026-12-02 15:00", now).is_ok());
        let e = parse_incident("2027-12-02 14:00", "2027-12-02 15:00", now).unwrap_err();
        assert!(e[0].message.contains("future"));
        assert_eq!(span(31.0 * 86_400.0), "31 days");
        assert_eq!(span(5400.0), "1.5 hours");
    }
}
