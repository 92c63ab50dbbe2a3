//! OTLP/HTTP protobuf bodies read field by field.
//!
//! A generic decoder (prost's own) builds every message the body names: an empty span
//! costs two bytes on the wire and a few hundred in memory, so a 64 MiB body of empty
//! spans would become gigabytes. This reader walks the wire format instead and builds
//! only what is kept: each span with its ids, name, kind, times and the attributes in
//! [`KNOWN_ATTRIBUTES`](super::KNOWN_ATTRIBUTES), text cut to its limit. Anything else
//! (events, links, unknown attributes, nested values) is skipped over without being
//! allocated, so memory stays at one span whatever the body holds.

use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;

use super::{cut, Sink, MAX_TEXT_CHARS, UNKNOWN_SERVICE};

/// One field's value as the wire carries it.
#[derive(Clone, Copy, Debug)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    /// 32-bit fixed fields (a span's flags) carry nothing read here.
    Fixed32,
    Bytes(&'a [u8]),
}

/// Why a body is not an OTLP export in protobuf.
fn malformed(what: &str) -> String {
    format!("the body is not an OTLP ExportTraceServiceRequest in protobuf: {what}")
}

fn varint(buf: &mut &[u8]) -> Result<u64, String> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(malformed("a number breaks off at the end of the body"));
        };
        *buf = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(malformed("a number longer than ten bytes"))
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if buf.len() < n {
        return Err(malformed("a field is longer than what is left of the body"));
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

/// The fields of one message, in order: (field number, value).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        Some(self.field())
    }
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<(u32, Wire<'a>), String> {
        let key = varint(&mut self.0)?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| malformed("a field number out of range"))?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(&mut self.0)?),
            1 => {
                let b = take(&mut self.0, 8)?;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or_default()))
            }
            2 => {
                let n = varint(&mut self.0)?;
                let n = usize::try_from(n).map_err(|_| malformed("a length out of range"))?;
                Wire::Bytes(take(&mut self.0, n)?)
            }
            5 => {
                take(&mut self.0, 4)?;
                Wire::Fixed32
            }
            other => {
                return Err(malformed(&format!(
                    "wire type {other} (groups are not OTLP)"
                )))
            }
        };
        Ok((number, value))
    }
}

/// A length-delimited field's bytes; another wire type where the schema has a message
/// or a string is a malformed body, as prost would say.
fn bytes<'a>(value: Wire<'a>, what: &str) -> Result<&'a [u8], String> {
    match value {
        Wire::Bytes(b) => Ok(b),
        _ => Err(malformed(&format!("{what} is not length-delimited"))),
    }
}

fn text<'a>(value: Wire<'a>, what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes(value, what)?)
        .map_err(|_| malformed(&format!("{what} is not valid UTF-8")))
}

/// Reads an export request (`ExportTraceServiceRequest`), handing each span to `sink`
/// under its resource's `service.name`. A body that is not one ends with the reason; a
/// sink that fails ends the read (its error stays in the sink).
pub fn read<E>(body: &[u8], sink: &mut Sink<'_, E>) -> Result<(), String> {
    for field in Fields(body) {
        let (number, value) = field?;
        if number == 1 {
            resource_spans(bytes(value, "resource_spans")?, sink)?;
        }
    }
    Ok(())
}

fn resource_spans<E>(msg: &[u8], sink: &mut Sink<'_, E>) -> Result<(), String> {
    // The resource may come after its spans: find it first.
    let mut service: Option<String> = None;
    for field in Fields(msg) {
        let (number, value) = field?;
        if number == 1 {
            service = service_of(bytes(value, "resource")?)?;
        }
    }
    let service = service.unwrap_or_else(|| UNKNOWN_SERVICE.to_string());
    for field in Fields(msg) {
        let (number, value) = field?;
        if number != 2 {
            continue;
        }
        // ScopeSpans: field 2 holds the spans.
        for field in Fields(bytes(value, "scope_spans")?) {
            let (number, value) = field?;
            if number != 2 {
                continue;
            }
            let raw = bytes(value, "a span")?;
            if sink.full() {
                sink.over_limit();
                continue;
            }
            let span = span(raw)?;
            if sink.give(&service, span, None).is_err() {
                return Err("stopped".into());
            }
        }
    }
    Ok(())
}

/// The `service.name` attribute of a `Resource`, cut to its limit.
fn service_of(msg: &[u8]) -> Result<Option<String>, String> {
    let mut found = None;
    for field in Fields(msg) {
        let (number, value) = field?;
        if number != 1 {
            continue;
        }
        if let Some((_, Some(any_value::Value::StringValue(s)))) =
            key_value(bytes(value, "a resource attribute")?, |k| {
                k == "service.name"
            })?
        {
            let s = s.trim();
            if !s.is_empty() && !s.contains('\0') {
                found = Some(super::service(s));
            }
        }
    }
    Ok(found)
}

/// A `KeyValue` whose key `keep` accepts: its key and scalar value (strings cut to
/// [`MAX_TEXT_CHARS`]; arrays, lists and bytes read as no value). Other keys: `None`,
/// their values skipped unread.
fn key_value(
    msg: &[u8],
    keep: impl Fn(&str) -> bool,
) -> Result<Option<(String, Option<any_value::Value>)>, String> {
    let mut key: Option<&str> = None;
    let mut raw_value: Option<&[u8]> = None;
    for field in Fields(msg) {
        let (number, value) = field?;
        match number {
            1 => key = Some(text(value, "an attribute key")?),
            2 => raw_value = Some(bytes(value, "an attribute value")?),
            _ => {}
        }
    }
    let Some(key) = key.filter(|k| keep(k)) else {
        return Ok(None);
    };
    let value = match raw_value {
        Some(v) => any_value(v)?,
        None => None,
    };
    Ok(Some((key.to_string(), value)))
}

fn any_value(msg: &[u8]) -> Result<Option<any_value::Value>, String> {
    let mut out = None;
    for field in Fields(msg) {
        let (number, value) = field?;
        out = match (number, value) {
            (1, v) => Some(any_value::Value::StringValue(cut(
                text(v, "a string value")?,
                MAX_TEXT_CHARS,
            ))),
            (2, Wire::Varint(b)) => Some(any_value::Value::BoolValue(b != 0)),
            (3, Wire::Varint(i)) => Some(any_value::Value::IntValue(i as i64)),
            (4, Wire::Fixed64(d)) => Some(any_value::Value::DoubleValue(f64::from_bits(d))),
            (2..=4, _) => return Err(malformed("a scalar attribute value of the wrong wire type")),
            // Arrays, key-value lists and bytes: not read here.
            _ => None,
        };
    }
    Ok(out)
}

/// One span with only what is kept.
fn span(msg: &[u8]) -> Result<Span, String> {
    let mut span = Span::default();
    for field in Fields(msg) {
        let (number, value) = field?;
        match (number, value) {
            (1, v) => span.trace_id = bytes(v, "trace_id")?.to_vec(),
            (2, v) => span.span_id = bytes(v, "span_id")?.to_vec(),
            (4, v) => span.parent_span_id = bytes(v, "parent_span_id")?.to_vec(),
            (5, v) => span.name = cut(text(v, "a span name")?, MAX_TEXT_CHARS),
            (6, Wire::Varint(k)) => span.kind = k as i32,
            (7, Wire::Fixed64(t)) => span.start_time_unix_nano = t,
            (8, Wire::Fixed64(t)) => span.end_time_unix_nano = t,
            (6..=8, _) => return Err(malformed("a span's kind or time of the wrong wire type")),
            (9, v) => {
                let kv = key_value(bytes(v, "a span attribute")?, |k| {
                    super::KNOWN_ATTRIBUTES.contains(&k)
                })?;
                if let Some((key, value)) = kv {
                    super::keep_attribute(&mut span, key, value);
                }
            }
            _ => {}
        }
    }
    Ok(span)
}
