//! OTLP/JSON read as a stream.
//!
//! The reader walks the document with serde's visitors and hands each span to the
//! [`Sink`] as soon as it is read: nothing of the export is held but the span at hand,
//! with only the attributes in [`KNOWN_ATTRIBUTES`](super::KNOWN_ATTRIBUTES) and text cut
//! to its limit. So a file or body of millions of spans takes the memory of one.
//!
//! It reads what the specification and the SDKs' JSON printers write (protobuf's JSON
//! mapping): lowerCamelCase keys or the proto's own names; trace and span ids in hex (as
//! OTLP/JSON requires) or in base64 (as protobuf's mapping writes bytes, e.g. Python's
//! `json_format` and Go's `protojson`); enums as numbers or by name
//! (`"SPAN_KIND_SERVER"`); 64-bit integers as numbers or strings.

use std::fmt;

use base64::Engine as _;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{cut, reason, Sink, MAX_TEXT_CHARS, UNKNOWN_SERVICE};

/// Spans a `resourceSpans` entry may list before its `resource` (they wait for the
/// service name); the SDKs write the resource first.
const MAX_WAITING: usize = 10_000;

/// The marker error of a sink that stopped the read (its own error is in the sink).
const STOPPED: &str = "the reader was stopped";

/// Reads one OTLP/JSON document (an `ExportTraceServiceRequest`, or `TracesData` as
/// files hold it) from `de`, handing each span to `sink`.
pub fn document<'de, D, E>(de: D, sink: &mut Sink<'_, E>) -> Result<(), D::Error>
where
    D: de::Deserializer<'de>,
{
    de.deserialize_map(Export { sink })
}

/// Reads every document of a JSON text (one object, or one per line as the Collector's
/// file exporter writes) from `reader`; `each` is told when a document starts.
pub fn documents<R: std::io::Read, E>(
    reader: R,
    sink: &mut Sink<'_, E>,
    mut each: impl FnMut(u64),
) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut n = 0;
    while de.end().is_err() {
        n += 1;
        each(n);
        document(&mut de, sink)?;
    }
    Ok(())
}

/// Whether a JSON error is the sink's stop marker.
pub fn stopped(e: &serde_json::Error) -> bool {
    e.is_data() && e.to_string().starts_with(STOPPED)
}

fn is(key: &str, camel: &str, snake: &str) -> bool {
    key == camel || key == snake
}

struct Export<'s, 'a, E> {
    sink: &'s mut Sink<'a, E>,
}

impl<'de, E> Visitor<'de> for Export<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP export object {\"resourceSpans\": [...]}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if is(&key.0, "resourceSpans", "resource_spans") {
                map.next_value_seed(List(ResourceSpans {
                    sink: &mut *self.sink,
                }))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// A key, cut: keys compared with a few known names never need more.
struct Key(String);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_str(Cut(64)).map(Key)
    }
}

/// A string cut to at most this many characters (the rest is never kept).
#[derive(Clone, Copy)]
struct Cut(usize);

impl<'de> Visitor<'de> for Cut {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<String, Er> {
        Ok(cut(v, self.0))
    }
}

impl<'de> DeserializeSeed<'de> for Cut {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

/// A JSON array, each element read by the seed `T` (cloned per element).
struct List<T>(T);

impl<'de, T> DeserializeSeed<'de> for List<T>
where
    T: Element<'de>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T> Visitor<'de> for List<T>
where
    T: Element<'de>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while self.0.next(&mut seq)? {}
        Ok(())
    }

    fn visit_unit<Er: de::Error>(self) -> Result<(), Er> {
        Ok(())
    }
}

/// Reads one element of a list; false at the list's end.
trait Element<'de> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error>;
}

struct ResourceSpans<'s, 'a, E> {
    sink: &'s mut Sink<'a, E>,
}

impl<'de, E> Element<'de> for ResourceSpans<'_, '_, E> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        Ok(seq
            .next_element_seed(OneResourceSpans {
                sink: &mut *self.sink,
            })?
            .is_some())
    }
}

struct OneResourceSpans<'s, 'a, E> {
    sink: &'s mut Sink<'a, E>,
}

impl<'de, E> DeserializeSeed<'de> for OneResourceSpans<'_, '_, E> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// Where the spans of a `resourceSpans` entry go: to the sink under the service, or
/// held until the resource names it.
struct Target<'s, 'a, E> {
    sink: &'s mut Sink<'a, E>,
    service: Option<String>,
    waiting: Vec<(Span, Option<&'static str>)>,
}

impl<E> Target<'_, '_, E> {
    /// Hands on the spans that waited for the service (already counted).
    fn flush<Er: de::Error>(&mut self) -> Result<(), Er> {
        let service = self.service.clone().unwrap_or_default();
        for (span, problem) in std::mem::take(&mut self.waiting) {
            self.sink.read -= 1;
            self.sink
                .give(&service, span, problem)
                .map_err(|_| Er::custom(STOPPED))?;
        }
        Ok(())
    }

    fn give<Er: de::Error>(&mut self, span: Span, problem: Option<&'static str>) -> Result<(), Er> {
        match &self.service {
            Some(service) => self
                .sink
                .give(service, span, problem)
                .map_err(|_| Er::custom(STOPPED)),
            None if self.waiting.len() < MAX_WAITING => {
                // Counted now against the limit, handed on once the service is known.
                self.sink.read += 1;
                self.waiting.push((span, problem));
                Ok(())
            }
            None => Err(Er::custom(format!(
                "a resourceSpans entry lists more than {MAX_WAITING} spans before its resource; \
                 write the resource first"
            ))),
        }
    }
}

impl<'de, E> Visitor<'de> for OneResourceSpans<'_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resourceSpans object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut target = Target {
            sink: self.sink,
            service: None,
            waiting: Vec::new(),
        };
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "resource" {
                let service = map.next_value_seed(Resource)?;
                target.service = Some(service.unwrap_or_else(|| UNKNOWN_SERVICE.to_string()));
                target.flush()?;
            } else if is(&key.0, "scopeSpans", "scope_spans") {
                map.next_value_seed(List(ScopeSpans {
                    target: &mut target,
                }))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if target.service.is_none() {
            target.service = Some(UNKNOWN_SERVICE.to_string());
            target.flush()?;
        }
        Ok(())
    }
}

/// A resource: its `service.name`, if it has a usable one.
struct Resource;

impl<'de> DeserializeSeed<'de> for Resource {
    type Value = Option<String>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Resource {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut service = None;
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "attributes" {
                let mut found = Vec::new();
                map.next_value_seed(List(Attributes {
                    keep: |k: &str| k == "service.name",
                    out: &mut found,
                }))?;
                for (_, value) in found {
                    if let Some(any_value::Value::StringValue(s)) = value {
                        let s = s.trim();
                        if !s.is_empty() && !s.contains('\0') {
                            service = Some(super::service(s));
                        }
                    }
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(service)
    }

    fn visit_unit<Er: de::Error>(self) -> Result<Option<String>, Er> {
        Ok(None)
    }
}

struct ScopeSpans<'t, 's, 'a, E> {
    target: &'t mut Target<'s, 'a, E>,
}

impl<'de, E> Element<'de> for ScopeSpans<'_, '_, '_, E> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        Ok(seq
            .next_element_seed(OneScopeSpans {
                target: &mut *self.target,
            })?
            .is_some())
    }
}

struct OneScopeSpans<'t, 's, 'a, E> {
    target: &'t mut Target<'s, 'a, E>,
}

impl<'de, E> DeserializeSeed<'de> for OneScopeSpans<'_, '_, '_, E> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, E> Visitor<'de> for OneScopeSpans<'_, '_, '_, E> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scopeSpans object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "spans" {
                map.next_value_seed(List(Spans {
                    target: &mut *self.target,
                }))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct Spans<'t, 's, 'a, E> {
    target: &'t mut Target<'s, 'a, E>,
}

impl<'de, E> Element<'de> for Spans<'_, '_, '_, E> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        if self.target.sink.full() {
            // Past the limit: counted, skipped unread.
            let more = seq.next_element::<IgnoredAny>()?.is_some();
            if more {
                self.target.sink.over_limit();
            }
            return Ok(more);
        }
        match seq.next_element_seed(OneSpan)? {
            Some((span, problem)) => {
                self.target.give(span, problem)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// One span with only what is kept, and the problem with its ids if any.
struct OneSpan;

impl<'de> DeserializeSeed<'de> for OneSpan {
    type Value = (Span, Option<&'static str>);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OneSpan {
    type Value = (Span, Option<&'static str>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a span object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut span = Span::default();
        let mut problem = None;
        let id = |raw: Option<Vec<u8>>, problem: &mut Option<&'static str>| {
            raw.unwrap_or_else(|| {
                *problem = Some(reason::BAD_ID);
                Vec::new()
            })
        };
        while let Some(key) = map.next_key::<Key>()? {
            let k = key.0.as_str();
            if is(k, "traceId", "trace_id") {
                span.trace_id = id(map.next_value_seed(Id)?, &mut problem);
            } else if is(k, "spanId", "span_id") {
                span.span_id = id(map.next_value_seed(Id)?, &mut problem);
            } else if is(k, "parentSpanId", "parent_span_id") {
                span.parent_span_id = id(map.next_value_seed(Id)?, &mut problem);
            } else if k == "name" {
                span.name = map.next_value_seed(Cut(MAX_TEXT_CHARS))?;
            } else if k == "kind" {
                span.kind = map.next_value_seed(Kind)?;
            } else if is(k, "startTimeUnixNano", "start_time_unix_nano") {
                span.start_time_unix_nano = map.next_value_seed(Unsigned)?;
            } else if is(k, "endTimeUnixNano", "end_time_unix_nano") {
                span.end_time_unix_nano = map.next_value_seed(Unsigned)?;
            } else if k == "attributes" {
                let mut found = Vec::new();
                map.next_value_seed(List(Attributes {
                    keep: |k: &str| super::KNOWN_ATTRIBUTES.contains(&k),
                    out: &mut found,
                }))?;
                for (key, value) in found {
                    super::keep_attribute(&mut span, key, value);
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok((span, problem))
    }
}

/// A trace or span id: hex (OTLP/JSON) or base64 (protobuf's JSON mapping) → bytes;
/// `None` when it is neither (the span is refused for it, not the export).
struct Id;

impl<'de> DeserializeSeed<'de> for Id {
    type Value = Option<Vec<u8>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Id {
    type Value = Option<Vec<u8>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an id in hex or base64")
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<Self::Value, Er> {
        Ok(id_bytes(v))
    }

    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok(Some(Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_u64<Er: de::Error>(self, _: u64) -> Result<Self::Value, Er> {
        Ok(None)
    }

    fn visit_i64<Er: de::Error>(self, _: i64) -> Result<Self::Value, Er> {
        Ok(None)
    }

    fn visit_f64<Er: de::Error>(self, _: f64) -> Result<Self::Value, Er> {
        Ok(None)
    }

    fn visit_bool<Er: de::Error>(self, _: bool) -> Result<Self::Value, Er> {
        Ok(None)
    }
}

/// An id's bytes: 32 or 16 hex digits, else base64 (standard or URL-safe, padded or
/// not) of 16 or 8 bytes; an empty string is an empty id. Anything else: `None`.
pub fn id_bytes(v: &str) -> Option<Vec<u8>> {
    if v.is_empty() {
        return Some(Vec::new());
    }
    if (v.len() == 32 || v.len() == 16) && v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return hex::decode(v).ok();
    }
    if v.len() > 24 {
        return None;
    }
    let bare = v.trim_end_matches('=');
    let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(bare)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(bare))
        .ok()?;
    matches!(decoded.len(), 16 | 8).then_some(decoded)
}

/// A span kind: its number, or its name as protobuf's JSON mapping writes it.
struct Kind;

/// The span kinds by name (OTLP's `Span.SpanKind`).
const KINDS: [&str; 6] = [
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
];

impl<'de> DeserializeSeed<'de> for Kind {
    type Value = i32;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<i32, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Kind {
    type Value = i32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a span kind (0 to 5, or one of {})", KINDS.join(", "))
    }

    fn visit_u64<Er: de::Error>(self, v: u64) -> Result<i32, Er> {
        i32::try_from(v).map_err(|_| Er::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<Er: de::Error>(self, v: i64) -> Result<i32, Er> {
        i32::try_from(v).map_err(|_| Er::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<i32, Er> {
        if let Some(i) = KINDS.iter().position(|k| *k == v) {
            return Ok(i as i32);
        }
        v.parse::<i32>()
            .map_err(|_| Er::invalid_value(de::Unexpected::Str(&cut(v, 40)), &self))
    }

    fn visit_unit<Er: de::Error>(self) -> Result<i32, Er> {
        Ok(0)
    }
}

/// A 64-bit unsigned integer: a number, or a string of digits (protobuf's JSON mapping
/// writes 64-bit integers as strings).
struct Unsigned;

impl<'de> DeserializeSeed<'de> for Unsigned {
    type Value = u64;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unsigned {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative whole number of nanoseconds (a number or a string)")
    }

    fn visit_u64<Er: de::Error>(self, v: u64) -> Result<u64, Er> {
        Ok(v)
    }

    fn visit_i64<Er: de::Error>(self, v: i64) -> Result<u64, Er> {
        u64::try_from(v).map_err(|_| Er::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_f64<Er: de::Error>(self, v: f64) -> Result<u64, Er> {
        if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
            Ok(v as u64)
        } else {
            Err(Er::invalid_value(de::Unexpected::Float(v), &self))
        }
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<u64, Er> {
        v.trim()
            .parse()
            .map_err(|_| Er::invalid_value(de::Unexpected::Str(&cut(v, 40)), &self))
    }

    fn visit_unit<Er: de::Error>(self) -> Result<u64, Er> {
        Ok(0)
    }
}

/// An attribute list: the pairs whose key `keep` accepts go to `out` (keys and values
/// of the others are skipped unread).
struct Attributes<'o, F> {
    keep: F,
    out: &'o mut Vec<(String, Option<any_value::Value>)>,
}

impl<'de, F: Fn(&str) -> bool + Copy> Element<'de> for Attributes<'_, F> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        match seq.next_element_seed(Attribute { keep: self.keep })? {
            Some(Some(pair)) => {
                // A key given twice keeps its last value (never a growing list).
                match self.out.iter_mut().find(|(k, _)| *k == pair.0) {
                    Some(slot) => *slot = pair,
                    None => self.out.push(pair),
                }
                Ok(true)
            }
            Some(None) => Ok(true),
            None => Ok(false),
        }
    }
}

struct Attribute<F> {
    keep: F,
}

impl<'de, F: Fn(&str) -> bool> DeserializeSeed<'de> for Attribute<F> {
    type Value = Option<(String, Option<any_value::Value>)>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: Fn(&str) -> bool> Visitor<'de> for Attribute<F> {
    type Value = Option<(String, Option<any_value::Value>)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute {\"key\": …, \"value\": {…}}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key = None;
        let mut value = None;
        while let Some(k) = map.next_key::<Key>()? {
            match k.0.as_str() {
                // Longer than any name kept: cut, it matches none.
                "key" => key = Some(map.next_value_seed(Cut(128))?),
                "value" => value = map.next_value_seed(Scalar)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(key.filter(|k| (self.keep)(k)).map(|k| (k, value)))
    }
}

/// An `AnyValue`'s scalar (strings cut to [`MAX_TEXT_CHARS`]); arrays, lists and bytes
/// read as no value.
struct Scalar;

impl<'de> DeserializeSeed<'de> for Scalar {
    type Value = Option<any_value::Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scalar {
    type Value = Option<any_value::Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute value object ({\"stringValue\": …}, {\"intValue\": …} …)")
    }

    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = None;
        while let Some(k) = map.next_key::<Key>()? {
            let k = k.0.as_str();
            out = if is(k, "stringValue", "string_value") {
                Some(any_value::Value::StringValue(
                    map.next_value_seed(Cut(MAX_TEXT_CHARS))?,
                ))
            } else if is(k, "boolValue", "bool_value") {
                Some(any_value::Value::BoolValue(map.next_value()?))
            } else if is(k, "intValue", "int_value") {
                Some(any_value::Value::IntValue(map.next_value_seed(Signed)?))
            } else if is(k, "doubleValue", "double_value") {
                Some(any_value::Value::DoubleValue(map.next_value_seed(Double)?))
            } else {
                map.next_value::<IgnoredAny>()?;
                out
            };
        }
        Ok(out)
    }
}

/// A 64-bit integer, number or string.
struct Signed;

impl<'de> DeserializeSeed<'de> for Signed {
    type Value = i64;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<i64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Signed {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number (a number or a string)")
    }

    fn visit_i64<Er: de::Error>(self, v: i64) -> Result<i64, Er> {
        Ok(v)
    }

    fn visit_u64<Er: de::Error>(self, v: u64) -> Result<i64, Er> {
        i64::try_from(v).map_err(|_| Er::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<i64, Er> {
        v.trim()
            .parse()
            .map_err(|_| Er::invalid_value(de::Unexpected::Str(&cut(v, 40)), &self))
    }
}

/// A double: a number, or a string (`"NaN"`, `"Infinity"`, `"-Infinity"` or digits) as
/// protobuf's JSON mapping writes the values a JSON number cannot hold.
struct Double;

impl<'de> DeserializeSeed<'de> for Double {
    type Value = f64;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<f64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Double {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<Er: de::Error>(self, v: f64) -> Result<f64, Er> {
        Ok(v)
    }

    fn visit_i64<Er: de::Error>(self, v: i64) -> Result<f64, Er> {
        Ok(v as f64)
    }

    fn visit_u64<Er: de::Error>(self, v: u64) -> Result<f64, Er> {
        Ok(v as f64)
    }

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<f64, Er> {
        match v.trim() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            s => s
                .parse()
                .map_err(|_| Er::invalid_value(de::Unexpected::Str(&cut(v, 40)), &self)),
        }
    }
}
