//! OpenTelemetry request spans as request-log rows.
//!
//! vLLM (`--otlp-traces-endpoint`) ends every request with one `llm_request` span whose
//! attributes carry the request's latencies in seconds (`gen_ai.latency.*`) and its token
//! counts; SGLang (`--enable-trace`) opens a root span per request (`Req <rid>`, attribute
//! `rid`) spanning its life. Both map to the columns of a request log ([`map_span`]);
//! spans of any other shape (HTTP server spans, SGLang's per-stage slices, …) are counted
//! by reason and left out.
//!
//! Bodies and files are read by two streaming readers of our own ([`wire`] for protobuf,
//! [`json`] for OTLP/JSON) that build only what is kept of each span, one span at a time:
//! the protocol's generic decoders build every message a body names, and a few kilobytes
//! of gzip can name millions of empty spans. Spans become the protocol's own `Span`
//! type (`opentelemetry-proto`). A kept span is stored as one line of OTLP JSON holding
//! only the attributes read here ([`kept_line`]), so a window's file is an OTLP JSON file
//! like the ones the Collector's file exporter writes, and [`for_each_request`] reads both.

pub mod json;
pub mod wire;

use std::collections::BTreeMap;
use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::request_log::{RequestLogAnalysis, RequestRow};
use super::{decompressing_reader, in_range, AnalyzeError, Options};

/// The protocol's message types, for callers that build exports (benchmarks, tests).
pub use opentelemetry_proto::tonic as proto;
pub use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
pub use prost::Message;

/// Bump when the JSON output of [`analyze`] changes.
pub const ANALYZER_VERSION: u32 = 2;

/// The service of spans whose resource names none (the SDKs' own default).
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// Longest service name kept (longer ones are cut).
const MAX_SERVICE_CHARS: usize = 255;

/// Longest text attribute kept (request ids, model names); longer ones are cut.
pub(crate) const MAX_TEXT_CHARS: usize = 512;

// vLLM's attribute names (vllm/tracing.py, SpanAttributes); values in seconds.
pub const TIME_IN_QUEUE: &str = "gen_ai.latency.time_in_queue";
pub const TIME_TO_FIRST_TOKEN: &str = "gen_ai.latency.time_to_first_token";
pub const E2E: &str = "gen_ai.latency.e2e";
pub const TIME_IN_SCHEDULER: &str = "gen_ai.latency.time_in_scheduler";
pub const TIME_IN_MODEL_FORWARD: &str = "gen_ai.latency.time_in_model_forward";
pub const TIME_IN_MODEL_EXECUTE: &str = "gen_ai.latency.time_in_model_execute";
pub const TIME_IN_MODEL_PREFILL: &str = "gen_ai.latency.time_in_model_prefill";
pub const TIME_IN_MODEL_DECODE: &str = "gen_ai.latency.time_in_model_decode";
pub const TIME_IN_MODEL_INFERENCE: &str = "gen_ai.latency.time_in_model_inference";
pub const PROMPT_TOKENS: &str = "gen_ai.usage.prompt_tokens";
pub const COMPLETION_TOKENS: &str = "gen_ai.usage.completion_tokens";
pub const REQUEST_ID: &str = "gen_ai.request.id";
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
pub const MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// SGLang's request id on its request root span.
pub const SGLANG_RID: &str = "rid";

/// A latency attribute (seconds) and the request-log column it fills (milliseconds).
pub const LATENCY_COLUMNS: &[(&str, &str)] = &[
    (TIME_IN_QUEUE, "queue_wait_ms"),
    (TIME_IN_MODEL_PREFILL, "prefill_ms"),
    (TIME_TO_FIRST_TOKEN, "first_token_ms"),
    (TIME_IN_MODEL_DECODE, "decode_ms"),
    (E2E, "total_ms"),
];

/// Latency attributes without a column of their own: kept in the row's `extra` (ms).
pub const LATENCY_EXTRAS: &[(&str, &str)] = &[
    (TIME_IN_SCHEDULER, "scheduler_ms"),
    (TIME_IN_MODEL_FORWARD, "model_forward_ms"),
    (TIME_IN_MODEL_EXECUTE, "model_execute_ms"),
    (TIME_IN_MODEL_INFERENCE, "model_inference_ms"),
];

/// Every attribute read (the others are dropped before a span is stored).
pub const KNOWN_ATTRIBUTES: &[&str] = &[
    TIME_IN_QUEUE,
    TIME_TO_FIRST_TOKEN,
    E2E,
    TIME_IN_SCHEDULER,
    TIME_IN_MODEL_FORWARD,
    TIME_IN_MODEL_EXECUTE,
    TIME_IN_MODEL_PREFILL,
    TIME_IN_MODEL_DECODE,
    TIME_IN_MODEL_INFERENCE,
    PROMPT_TOKENS,
    COMPLETION_TOKENS,
    REQUEST_ID,
    RESPONSE_MODEL,
    MAX_TOKENS,
    SGLANG_RID,
];

/// Why a span was not kept (the keys of the counts shown to users).
pub mod reason {
    /// Neither a vLLM `llm_request` span nor an SGLang request root.
    pub const OTHER_SHAPE: &str =
        "other shape (not a vLLM llm_request span or an SGLang request root span)";
    /// No start time: the request's arrival is unknown.
    pub const NO_START: &str = "no start time";
    /// A latency or count beyond what can be true (NaN, infinite, negative time …).
    pub const OUT_OF_RANGE: &str = "a value out of range";
    /// A text attribute holding a NUL character (PostgreSQL cannot store it).
    pub const NUL_TEXT: &str = "a text attribute with a NUL character";
    /// The window already holds the most spans it may.
    pub const OVER_LIMIT: &str = "over the window's span limit";
    /// A trace id that is not 16 bytes, a span id not 8 (or all zeroes), or an id
    /// written in neither hex nor base64.
    pub const BAD_ID: &str = "an invalid id (a trace id is 16 bytes and a span id 8, not all \
         zero, written in hex as OTLP/JSON requires, or in base64)";
    /// A start time too far in the past (beyond the spans' retention) or in the future.
    pub const OUT_OF_TIME: &str = "a start time outside the accepted range (from the \
         retention period ago to 5 minutes ahead)";
    /// More spans in one export than one export may carry.
    pub const OVER_EXPORT: &str = "over the limit of spans in one export (send smaller \
         batches: OTEL_BSP_MAX_EXPORT_BATCH_SIZE)";
    /// A service not yet known when the most services are already kept.
    pub const NEW_SERVICE: &str = "a new service past the limit of services (a span's \
         resource names its service.name)";
    /// A window not yet known when the most windows are already kept.
    pub const NEW_WINDOW: &str = "a new window past the limit of windows";

    /// Whether spans for this reason are worth an exporter's warning: spans of other
    /// shapes (HTTP server spans beside vLLM's) are a healthy server's normal traffic,
    /// counted on the window but not reported as rejected.
    pub fn is_rejection(why: &str) -> bool {
        why != OTHER_SHAPE
    }
}

/// What a reader calls for each span: (service, span, why its ids make it invalid).
pub type OnSpan<'a, E> = dyn FnMut(&str, Span, Option<&'static str>) -> Result<(), E> + 'a;

/// Where a reader hands the spans it reads: at most `max_spans` of them (more are only
/// counted), each with its ids checked.
pub struct Sink<'a, E> {
    max_spans: u64,
    pub(crate) read: u64,
    over: u64,
    on_span: &'a mut OnSpan<'a, E>,
    failed: Option<E>,
}

impl<'a, E> Sink<'a, E> {
    /// `on_span(service, span, problem)` is called for each span; `problem` says why
    /// it cannot be kept whatever it holds (its ids).
    pub fn new(max_spans: u64, on_span: &'a mut OnSpan<'a, E>) -> Self {
        Sink {
            max_spans,
            read: 0,
            over: 0,
            on_span,
            failed: None,
        }
    }

    /// Spans not read because the limit was reached.
    pub fn over(&self) -> u64 {
        self.over
    }

    pub(crate) fn full(&self) -> bool {
        self.read >= self.max_spans
    }

    pub(crate) fn over_limit(&mut self) {
        self.over += 1;
    }

    /// Hands a span on; `Err` when the callback failed (its error is kept).
    pub(crate) fn give(
        &mut self,
        service: &str,
        span: Span,
        problem: Option<&'static str>,
    ) -> Result<(), ()> {
        self.read += 1;
        let problem = problem.or_else(|| id_problem(&span));
        (self.on_span)(service, span, problem).map_err(|e| {
            self.failed = Some(e);
        })
    }
}

/// Why a span's ids make it invalid, as the OTLP specification says: a trace id of 16
/// bytes and a span id of 8, neither all zeroes; a parent id empty or 8 bytes.
fn id_problem(span: &Span) -> Option<&'static str> {
    let zero = |b: &[u8]| b.iter().all(|x| *x == 0);
    let bad = span.trace_id.len() != 16
        || zero(&span.trace_id)
        || span.span_id.len() != 8
        || zero(&span.span_id)
        || !(span.parent_span_id.is_empty() || span.parent_span_id.len() == 8);
    bad.then_some(reason::BAD_ID)
}

/// Adds a kept attribute to a span; a key given twice keeps its last value.
pub(crate) fn keep_attribute(span: &mut Span, key: String, value: Option<any_value::Value>) {
    let value = value.map(|v| AnyValue { value: Some(v) });
    match span.attributes.iter_mut().find(|kv| kv.key == key) {
        Some(kv) => kv.value = value,
        None => span.attributes.push(KeyValue {
            key,
            value,
            ..KeyValue::default()
        }),
    }
}

/// The two encodings of OTLP/HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

/// Why an export could not be read: the body is not one, or the callback stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    Malformed(String),
    Stopped(E),
}

/// Reads an export request body, handing each of its first `max_spans` spans to
/// `on_span` (see [`Sink::new`]); returns how many more there were (counted, not read).
pub fn read_export<E>(
    body: &[u8],
    encoding: Encoding,
    max_spans: u64,
    on_span: &mut OnSpan<'_, E>,
) -> Result<u64, ReadError<E>> {
    let mut sink = Sink::new(max_spans, on_span);
    let read = match encoding {
        Encoding::Protobuf => wire::read(body, &mut sink),
        Encoding::Json => {
            let mut de = serde_json::Deserializer::from_slice(body);
            json::document(&mut de, &mut sink)
                .and_then(|()| de.end())
                .map_err(|e| {
                    format!(
                        "the body is not an OTLP ExportTraceServiceRequest in JSON: {} (line {}, \
                         column {})",
                        super::json_reason(&e),
                        e.line(),
                        e.column()
                    )
                })
        }
    };
    if let Some(e) = sink.failed.take() {
        return Err(ReadError::Stopped(e));
    }
    read.map_err(ReadError::Malformed)?;
    Ok(sink.over())
}

/// The engine a request span came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
}

/// One span as a request row, or why not.
pub fn map_span(span: &Span) -> Result<(Engine, RequestRow), &'static str> {
    let get = |key: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.as_ref())
    };
    let engine =
        if LATENCY_COLUMNS.iter().any(|(k, _)| get(k).is_some()) || get(REQUEST_ID).is_some() {
            Engine::Vllm
        } else if get(SGLANG_RID).is_some() && span.name.contains("Req") {
            Engine::Sglang
        } else {
            return Err(reason::OTHER_SHAPE);
        };
    if span.start_time_unix_nano == 0 {
        return Err(reason::NO_START);
    }
    let mut row = RequestRow {
        arrival_ts: Some(span.start_time_unix_nano as f64 / 1e9),
        ..RequestRow::default()
    };
    let seconds = |key: &str| get(key).and_then(number);
    let ms = |key: &str| -> Result<Option<f64>, &'static str> {
        match seconds(key) {
            None => Ok(None),
            Some(s) if in_range(s * 1000.0) && s >= 0.0 => Ok(Some(s * 1000.0)),
            Some(_) => Err(reason::OUT_OF_RANGE),
        }
    };
    let count = |key: &str| -> Result<Option<i64>, &'static str> {
        match get(key).and_then(number) {
            None => Ok(None),
            Some(n) if (0.0..1e15).contains(&n) && n.fract() == 0.0 => Ok(Some(n as i64)),
            Some(_) => Err(reason::OUT_OF_RANGE),
        }
    };
    row.queue_wait_ms = ms(TIME_IN_QUEUE)?;
    row.prefill_ms = ms(TIME_IN_MODEL_PREFILL)?;
    row.first_token_ms = ms(TIME_TO_FIRST_TOKEN)?;
    row.decode_ms = ms(TIME_IN_MODEL_DECODE)?;
    row.total_ms = ms(E2E)?;
    if row.total_ms.is_none() && span.end_time_unix_nano > span.start_time_unix_nano {
        // SGLang's root span lasts the request; vLLM's without `e2e` too.
        row.total_ms = Some((span.end_time_unix_nano - span.start_time_unix_nano) as f64 / 1e6);
    }
    row.prompt_tokens = count(PROMPT_TOKENS)?;
    row.output_tokens = count(COMPLETION_TOKENS)?;
    let mut extra = Map::new();
    for (key, name) in LATENCY_EXTRAS {
        if let Some(v) = ms(key)? {
            extra.insert((*name).to_string(), Value::from(v));
        }
    }
    if let Some(n) = count(MAX_TOKENS)? {
        extra.insert("max_tokens".into(), Value::from(n));
    }
    row.extra = extra;
    let id_key = match engine {
        Engine::Vllm => REQUEST_ID,
        Engine::Sglang => SGLANG_RID,
    };
    row.request_id = get(id_key).and_then(text).map(Into::into);
    row.model_version = get(RESPONSE_MODEL).and_then(text).map(Into::into);
    if row.field_with_nul().is_some() {
        return Err(reason::NUL_TEXT);
    }
    Ok((engine, row))
}

/// An attribute's number: a double, an int, or a decimal string.
fn number(v: &any_value::Value) -> Option<f64> {
    match v {
        any_value::Value::DoubleValue(x) => Some(*x),
        any_value::Value::IntValue(i) => Some(*i as f64),
        any_value::Value::StringValue(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An attribute's text (numbers written out), cut to [`MAX_TEXT_CHARS`].
fn text(v: &any_value::Value) -> Option<String> {
    let s = match v {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        _ => return None,
    };
    Some(cut(&s, MAX_TEXT_CHARS))
}

/// A service name as kept: cut, and safe to show ([`crate::fmt::safe_name`]).
pub(crate) fn service(s: &str) -> String {
    crate::fmt::safe_name(&cut(s, MAX_SERVICE_CHARS))
}

pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// The `service.name` of a resource, or [`UNKNOWN_SERVICE`].
pub fn service_name(resource: Option<&Resource>) -> String {
    resource
        .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
        .and_then(|v| match v {
            any_value::Value::StringValue(s) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|s| !s.is_empty() && !s.contains('\0'))
        .map(|s| service(&s))
        .unwrap_or_else(|| UNKNOWN_SERVICE.to_string())
}

/// The span as one line of OTLP JSON (`{"resourceSpans":[…]}`), under its service, with
/// only the attributes in [`KNOWN_ATTRIBUTES`] (events, links and the rest dropped).
pub fn kept_line(service: &str, span: &Span) -> String {
    let kept = Span {
        trace_id: span.trace_id.clone(),
        span_id: span.span_id.clone(),
        parent_span_id: span.parent_span_id.clone(),
        name: cut(&span.name, MAX_TEXT_CHARS),
        kind: span.kind,
        start_time_unix_nano: span.start_time_unix_nano,
        end_time_unix_nano: span.end_time_unix_nano,
        attributes: span
            .attributes
            .iter()
            .filter(|kv| KNOWN_ATTRIBUTES.contains(&kv.key.as_str()))
            .cloned()
            .collect(),
        ..Span::default()
    };
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(service.to_string())),
                    }),
                    ..KeyValue::default()
                }],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![kept],
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    };
    // Plain structs of strings and numbers: serializing cannot fail.
    serde_json::to_string(&request).unwrap_or_default()
}

/// The error body of OTLP/HTTP (`google.rpc.Status`): code 3 (INVALID_ARGUMENT) for a
/// body that cannot be read. JSON bodies get `{"code": 3, "message": …}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// `google.rpc.Code.INVALID_ARGUMENT`.
pub const INVALID_ARGUMENT: i32 = 3;

/// Spans received for one service in one window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    pub service: String,
    /// The window's start, seconds since the epoch (a multiple of the window length).
    pub window_start: i64,
    /// The kept spans: (arrival, seconds since the epoch; [`kept_line`]).
    pub kept: Vec<(f64, String)>,
    /// Spans not kept, by reason.
    pub ignored: BTreeMap<&'static str, u64>,
}

/// How far ahead of the server's clock a span may start (clocks differ a little).
pub const MAX_AHEAD_S: f64 = 300.0;

/// Windows (service × window) one export may touch: an exporter's batch spans a
/// window or two; a replay of a day of hourly windows fits.
pub const MAX_WINDOWS_PER_EXPORT: usize = 32;

/// Sorts the spans of one export request into (service, window) groups of `window_s`
/// seconds, by each span's start (a span without one falls in the window of `now_s`).
/// A span starting before `now_s − retention_s` or more than [`MAX_AHEAD_S`] ahead falls
/// in no window: it is refused (a window for every hour of five centuries is not
/// opened for anyone), as is a span with invalid ids, and one that would open more than
/// [`MAX_WINDOWS_PER_EXPORT`] windows.
pub struct Sorter {
    window_s: i64,
    now_s: f64,
    earliest_s: f64,
    groups: BTreeMap<(String, i64), Group>,
    refused: BTreeMap<&'static str, u64>,
}

impl Sorter {
    pub fn new(window_s: i64, now_s: f64, retention_s: f64) -> Sorter {
        Sorter {
            window_s: window_s.max(1),
            now_s,
            earliest_s: now_s - retention_s.max(0.0),
            groups: BTreeMap::new(),
            refused: BTreeMap::new(),
        }
    }

    /// One span as a reader hands it ([`Sink::new`]).
    pub fn add(&mut self, service: &str, span: Span, problem: Option<&'static str>) {
        let at = if span.start_time_unix_nano > 0 {
            span.start_time_unix_nano as f64 / 1e9
        } else {
            self.now_s
        };
        // A span with bad ids, or starting out of range, opens no window.
        let out_of_time = at < self.earliest_s || at > self.now_s + MAX_AHEAD_S;
        if let Some(why) = problem.or(out_of_time.then_some(reason::OUT_OF_TIME)) {
            *self.refused.entry(why).or_default() += 1;
            return;
        }
        let start = (at as i64).div_euclid(self.window_s) * self.window_s;
        let key = (service.to_string(), start);
        if !self.groups.contains_key(&key) && self.groups.len() >= MAX_WINDOWS_PER_EXPORT {
            *self.refused.entry(reason::NEW_WINDOW).or_default() += 1;
            return;
        }
        let group = self.groups.entry(key).or_insert_with(|| Group {
            service: service.to_string(),
            window_start: start,
            ..Group::default()
        });
        match map_span(&span) {
            Ok((_, row)) => group
                .kept
                .push((row.arrival_ts.unwrap_or(at), kept_line(service, &span))),
            Err(why) => *group.ignored.entry(why).or_default() += 1,
        }
    }

    /// Spans past the export's limit, counted.
    pub fn over_export(&mut self, n: u64) {
        if n > 0 {
            *self.refused.entry(reason::OVER_EXPORT).or_default() += n;
        }
    }

    /// The groups in a stable order (service, then window start), and the spans that
    /// fell in none, by reason.
    pub fn finish(self) -> (Vec<Group>, BTreeMap<&'static str, u64>) {
        (self.groups.into_values().collect(), self.refused)
    }
}

/// Counts of the spans in a file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpanCounts {
    /// Every span read.
    pub spans: u64,
    /// Spans that became request rows.
    pub requests: u64,
    /// Spans left out.
    pub ignored: u64,
    /// Spans left out, by reason.
    pub ignored_reasons: BTreeMap<String, u64>,
    /// Request rows by engine (`vllm`, `sglang`).
    pub engines: BTreeMap<String, u64>,
    /// Services seen.
    pub services: Vec<String>,
}

impl SpanCounts {
    fn ignore(&mut self, why: &str) {
        self.ignored += 1;
        *self.ignored_reasons.entry(why.to_string()).or_default() += 1;
    }
}

/// The result for an `otlp_spans` artifact: the request-log analysis of its request
/// spans, and what became of every span.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OtlpSpansAnalysis {
    #[serde(flatten)]
    pub requests: RequestLogAnalysis,
    pub spans: SpanCounts,
}

/// Most services listed in [`SpanCounts::services`].
const MAX_SERVICES: usize = 100;

/// Streams every request span of an OTLP JSON file (one `{"resourceSpans": …}` object,
/// or one per line as the Collector's file exporter writes) to `cb`, counting all spans
/// in `counts`. Gzip is undone. A document that is not OTLP JSON stops with its position.
pub fn for_each_request<R: Read, E: From<AnalyzeError>>(
    reader: R,
    max_decompressed_bytes: u64,
    counts: &mut SpanCounts,
    mut cb: impl FnMut(&RequestRow) -> Result<(), E>,
) -> Result<u64, E> {
    let input = std::io::BufReader::with_capacity(
        256 << 10,
        decompressing_reader(reader, max_decompressed_bytes),
    );
    let mut rows = 0u64;
    // A file's spans are read whatever their ids: the analysis does not use them.
    let mut on_span = |service: &str, span: Span, _ids: Option<&'static str>| -> Result<(), E> {
        if !counts.services.iter().any(|s| s == service) && counts.services.len() < MAX_SERVICES {
            counts.services.push(service.to_string());
        }
        counts.spans += 1;
        match map_span(&span) {
            Ok((engine, mut row)) => {
                counts.requests += 1;
                let engine = match engine {
                    Engine::Vllm => "vllm",
                    Engine::Sglang => "sglang",
                };
                *counts.engines.entry(engine.into()).or_default() += 1;
                rows += 1;
                row.line = rows;
                cb(&row)
            }
            Err(why) => {
                counts.ignore(why);
                Ok(())
            }
        }
    };
    let mut sink = Sink::new(u64::MAX, &mut on_span);
    let mut document = 0;
    let read = json::documents(input, &mut sink, |n| document = n);
    if let Some(e) = sink.failed.take() {
        return Err(e);
    }
    drop(sink);
    read.map_err(|e| {
        if e.is_io() {
            E::from(AnalyzeError::from(std::io::Error::from(e)))
        } else {
            E::from(AnalyzeError::Malformed {
                line: Some(e.line() as u64),
                byte: None,
                message: format!(
                    "column {}: document {document} is not OTLP JSON ({{\"resourceSpans\": …}}): {}",
                    e.column(),
                    super::json_reason(&e)
                ),
            })
        }
    })?;
    Ok(rows)
}

/// Analyzes an OTLP JSON file with the request-log analysis.
pub fn analyze<R: Read>(reader: R, opts: &Options) -> Result<OtlpSpansAnalysis, AnalyzeError> {
    let mut acc = super::request_log::Accumulator::new(opts);
    let mut counts = SpanCounts::default();
    for_each_request(
        reader,
        opts.max_decompressed_bytes,
        &mut counts,
        |row| -> Result<(), AnalyzeError> {
            acc.add(row);
            Ok(())
        },
    )?;
    Ok(OtlpSpansAnalysis {
        requests: acc.finish(),
        spans: counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..KeyValue::default()
        }
    }

    /// The groups of an export as the receiver makes them (through its protobuf).
    fn sorted(req: &ExportTraceServiceRequest, window_s: i64, now_s: f64) -> Vec<Group> {
        let mut sorter = Sorter::new(window_s, now_s, f64::INFINITY);
        let body = req.encode_to_vec();
        let over = read_export(&body, Encoding::Protobuf, u64::MAX, &mut |s, span, p| {
            sorter.add(s, span, p);
            Ok::<(), ()>(())
        })
        .unwrap();
        sorter.over_export(over);
        sorter.finish().0
    }

    fn vllm_span(id: &str, start_s: f64) -> Span {
        use any_value::Value::*;
        Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "llm_request".into(),
            kind: 2,
            start_time_unix_nano: (start_s * 1e9) as u64,
            end_time_unix_nano: (start_s * 1e9) as u64 + 900_000_000,
            attributes: vec![
                kv(REQUEST_ID, StringValue(id.into())),
                kv(RESPONSE_MODEL, StringValue("llama-3-8b".into())),
                kv(TIME_IN_QUEUE, DoubleValue(0.012)),
                kv(TIME_IN_MODEL_PREFILL, DoubleValue(0.05)),
                kv(TIME_TO_FIRST_TOKEN, DoubleValue(0.075)),
                kv(TIME_IN_MODEL_DECODE, DoubleValue(0.8)),
                kv(E2E, DoubleValue(0.9)),
                kv(TIME_IN_SCHEDULER, DoubleValue(0.001)),
                kv(PROMPT_TOKENS, IntValue(512)),
                kv(COMPLETION_TOKENS, IntValue(128)),
                kv(MAX_TOKENS, IntValue(256)),
                kv("gen_ai.request.temperature", DoubleValue(0.7)),
                kv("http.route", StringValue("/v1/completions".into())),
            ],
            ..Span::default()
        }
    }

    fn request(service: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv(
                        "service.name",
                        any_value::Value::StringValue(service.into()),
                    )],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        }
    }

    #[test]
    fn a_vllm_span_maps_seconds_to_milliseconds() {
        let (engine, row) = map_span(&vllm_span("cmpl-1", 1_796_220_000.5)).unwrap();
        assert_eq!(engine, Engine::Vllm);
        assert_eq!(row.request_id.as_deref(), Some("cmpl-1"));
        assert_eq!(row.model_version.as_deref(), Some("llama-3-8b"));
        assert_eq!(row.arrival_ts, Some(1_796_220_000.5));
        assert_eq!(row.queue_wait_ms, Some(12.0));
        assert_eq!(row.prefill_ms, Some(50.0));
        assert_eq!(row.first_token_ms, Some(75.0));
        assert_eq!(row.decode_ms, Some(800.0));
        assert_eq!(row.total_ms, Some(900.0));
        assert_eq!(row.prompt_tokens, Some(512));
        assert_eq!(row.output_tokens, Some(128));
        assert_eq!(row.extra["scheduler_ms"], serde_json::json!(1.0));
        assert_eq!(row.extra["max_tokens"], serde_json::json!(256));
        assert!(row.extra.get("http.route").is_none());
    }

    #[test]
    fn an_sglang_root_span_takes_its_rid_and_duration() {
        let span = Span {
            name: "Req 5f2a9c1e".into(),
            start_time_unix_nano: 2_000_000_000,
            end_time_unix_nano: 2_250_000_000,
            attributes: vec![kv(
                SGLANG_RID,
                any_value::Value::StringValue("5f2a9c1e77".into()),
            )],
            ..Span::default()
        };
        let (engine, row) = map_span(&span).unwrap();
        assert_eq!(engine, Engine::Sglang);
        assert_eq!(row.request_id.as_deref(), Some("5f2a9c1e77"));
        assert_eq!(row.total_ms, Some(250.0));
        assert_eq!(row.arrival_ts, Some(2.0));
    }

    #[test]
    fn other_shapes_and_bad_values_are_ignored_with_a_reason() {
        let http = Span {
            name: "POST /v1/completions".into(),
            start_time_unix_nano: 1,
            attributes: vec![kv(
                "http.method",
                any_value::Value::StringValue("POST".into()),
            )],
            ..Span::default()
        };
        assert_eq!(map_span(&http).unwrap_err(), reason::OTHER_SHAPE);
        let mut negative = vllm_span("x", 10.0);
        negative.attributes[2] = kv(TIME_IN_QUEUE, any_value::Value::DoubleValue(-1.0));
        assert_eq!(map_span(&negative).unwrap_err(), reason::OUT_OF_RANGE);
        let mut nan = vllm_span("x", 10.0);
        nan.attributes[6] = kv(E2E, any_value::Value::DoubleValue(f64::NAN));
        assert_eq!(map_span(&nan).unwrap_err(), reason::OUT_OF_RANGE);
        let mut no_start = vllm_span("x", 10.0);
        no_start.start_time_unix_nano = 0;
        assert_eq!(map_span(&no_start).unwrap_err(), reason::NO_START);
        let mut nul = vllm_span("a\0b", 10.0);
        nul.attributes.truncate(1);
        assert_eq!(map_span(&nul).unwrap_err(), reason::NUL_TEXT);
    }

    #[test]
    fn spans_split_by_service_and_window() {
        let mut req = request(
            "vllm-a",
            vec![
                vllm_span("1", 7200.0),
                vllm_span("2", 10_799.0),
                vllm_span("3", 10_800.0),
            ],
        );
        req.resource_spans.extend(
            request(
                "vllm-b",
                vec![
                    vllm_span("4", 7300.0),
                    Span {
                        name: "other".into(),
                        trace_id: vec![1; 16],
                        span_id: vec![3; 8],
                        start_time_unix_nano: 7_400_000_000_000,
                        ..Span::default()
                    },
                ],
            )
            .resource_spans,
        );
        let groups = sorted(&req, 3600, 20_000.0);
        let shape: Vec<_> = groups
            .iter()
            .map(|g| (g.service.as_str(), g.window_start, g.kept.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("vllm-a", 7200, 2),
                ("vllm-a", 10_800, 1),
                ("vllm-b", 7200, 1)
            ]
        );
        assert_eq!(groups[2].ignored[reason::OTHER_SHAPE], 1);
        assert_eq!(groups[0].kept[1].0, 10_799.0);
    }

    #[test]
    fn a_kept_line_is_otlp_json_that_reads_back_to_the_same_row() {
        let span = vllm_span("cmpl-7", 1_796_220_000.25);
        let line = kept_line("vllm-a", &span);
        assert!(line.starts_with("{\"resourceSpans\":"), "{line}");
        assert!(!line.contains("http.route") && !line.contains("temperature"));
        let mut back = Vec::new();
        read_export(line.as_bytes(), Encoding::Json, 10, &mut |s, span, p| {
            back.push((s.to_string(), span, p));
            Ok::<(), ()>(())
        })
        .unwrap();
        let (service, got, problem) = &back[0];
        assert_eq!((service.as_str(), *problem), ("vllm-a", None));
        assert_eq!(got.trace_id, span.trace_id);
        assert_eq!(map_span(got).unwrap().1, map_span(&span).unwrap().1);
        // The same line detects as an OTLP spans file.
        assert_eq!(
            super::super::detect(line.as_bytes()),
            super::super::Kind::OtlpSpans
        );
    }

    #[test]
    fn files_of_one_object_or_one_per_line_are_read() {
        let a = kept_line("s", &vllm_span("1", 100.0));
        let b = serde_json::to_string_pretty(&request(
            "s",
            vec![
                vllm_span("2", 101.0),
                Span {
                    name: "db".into(),
                    start_time_unix_nano: 5,
                    ..Span::default()
                },
            ],
        ))
        .unwrap();
        let file = format!("{a}\n{b}\n");
        let result = analyze(file.as_bytes(), &Options::default()).unwrap();
        assert_eq!(result.requests.rows, 2);
        assert_eq!(result.spans.spans, 3);
        assert_eq!(result.spans.ignored, 1);
        assert_eq!(result.spans.ignored_reasons[reason::OTHER_SHAPE], 1);
        assert_eq!(result.spans.engines["vllm"], 2);
        let err = analyze(&b"{\"resourceSpans\": 7}"[..], &Options::default()).unwrap_err();
        assert!(err.to_string().contains("not OTLP JSON"), "{err}");
    }

    #[test]
    fn protobuf_bodies_decode_and_garbage_is_refused() {
        let req = request("s", vec![vllm_span("1", 100.0)]);
        let bytes = req.encode_to_vec();
        let mut got = Vec::new();
        read_export(&bytes, Encoding::Protobuf, 10, &mut |s, span, p| {
            got.push((s.to_string(), span, p));
            Ok::<(), ()>(())
        })
        .unwrap();
        let mut want = vllm_span("1", 100.0);
        // Only the attributes read are kept.
        want.attributes
            .retain(|kv| KNOWN_ATTRIBUTES.contains(&kv.key.as_str()));
        assert_eq!(got, vec![("s".to_string(), want, None)]);
        let none = &mut |_: &str, _: Span, _: Option<&'static str>| Ok::<(), ()>(());
        for garbage in [&b"\xff\xff\xff"[..], b"\x0a\x05ab", b"\x0b"] {
            let e = read_export(garbage, Encoding::Protobuf, 10, none).unwrap_err();
            assert!(matches!(e, ReadError::Malformed(m) if m.contains("not an OTLP")));
        }
        let e = read_export(b"{\"resourceSpans\": [", Encoding::Json, 10, none).unwrap_err();
        assert!(matches!(e, ReadError::Malformed(m) if m.contains("line 1")));
    }

    /// An export of `n` empty spans in protobuf, as a hostile sender writes it:
    /// resource_spans { scope_spans { spans: {} × n } }.
    fn empty_spans(n: usize) -> Vec<u8> {
        let spans: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], n).flatten().collect();
        let mut resource_spans = vec![0x12];
        put_len(&mut resource_spans, spans.len());
        resource_spans.extend(spans);
        let mut body = vec![0x0a];
        put_len(&mut body, resource_spans.len());
        body.extend(resource_spans);
        body
    }

    fn put_len(out: &mut Vec<u8>, mut n: usize) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn spans_past_the_limit_are_counted_not_read() {
        let body = empty_spans(100_000);
        let mut seen = 0;
        let over = read_export(&body, Encoding::Protobuf, 1_000, &mut |_, _, p| {
            assert_eq!(p, Some(reason::BAD_ID));
            seen += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!((seen, over), (1_000, 99_000));
        let json = format!(
            "{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{}{{}}]}}]}}]}}",
            "{},".repeat(99_999)
        );
        let mut seen = 0;
        let over = read_export(json.as_bytes(), Encoding::Json, 1_000, &mut |s, _, _| {
            assert_eq!(s, UNKNOWN_SERVICE);
            seen += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!((seen, over), (1_000, 99_000));
    }

    #[test]
    fn ids_must_be_of_their_length_and_attributes_are_cut_and_kept_once() {
        let mut span = vllm_span("x".repeat(10_000).as_str(), 100.0);
        for _ in 0..1_000 {
            span.attributes.push(kv(
                REQUEST_ID,
                any_value::Value::StringValue("y".repeat(2_000)),
            ));
        }
        let mut long_id = span.clone();
        long_id.trace_id = vec![7; 60_000];
        let mut zero = span.clone();
        zero.span_id = vec![0; 8];
        let body = request("s", vec![span, long_id, zero]).encode_to_vec();
        let mut got = Vec::new();
        read_export(&body, Encoding::Protobuf, 10, &mut |_, span, p| {
            got.push((span, p));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(got[0].1, None);
        let ids: Vec<_> = got[0]
            .0
            .attributes
            .iter()
            .filter(|kv| kv.key == REQUEST_ID)
            .collect();
        assert_eq!(ids.len(), 1, "a key given many times is kept once");
        let Some(any_value::Value::StringValue(text)) = &ids[0].value.as_ref().unwrap().value
        else {
            panic!("a string id")
        };
        assert_eq!(text.chars().count(), MAX_TEXT_CHARS);
        assert_eq!(got[1].1, Some(reason::BAD_ID));
        assert_eq!(got[2].1, Some(reason::BAD_ID));
        assert!(kept_line("s", &got[0].0).len() < 4_000);
    }

    #[test]
    fn json_as_the_sdk_printers_write_it_is_read() {
        // Python's json_format / Go's protojson: enum names, base64 ids, 64-bit
        // integers as strings, the proto's own field names also accepted.
        let json = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name",
            "value":{"stringValue":"vllm-a"}}]},"scopeSpans":[{"scope":{"name":"x"},"spans":[
            {"traceId":"AQEBAQEBAQEBAQEBAQEBAQ==","spanId":"AgICAgICAgI=","kind":"SPAN_KIND_SERVER",
             "name":"llm_request","startTimeUnixNano":"100000000000","endTimeUnixNano":"100900000000",
             "status":{"code":"STATUS_CODE_OK"},
             "attributes":[{"key":"gen_ai.latency.e2e","value":{"doubleValue":0.9}},
                           {"key":"gen_ai.usage.prompt_tokens","value":{"intValue":"512"}},
                           {"key":"gen_ai.request.id","value":{"stringValue":"r1"}},
                           {"key":"other","value":{"arrayValue":{"values":[{"intValue":1}]}}}]},
            {"trace_id":"01010101010101010101010101010101","span_id":"0202020202020202",
             "kind":2,"name":"llm_request","start_time_unix_nano":100000000000,
             "attributes":[{"key":"gen_ai.request.id","value":{"string_value":"r2"}}]},
            {"traceId":"not an id","spanId":"0202020202020202","name":"x"}]}]}]}"#;
        let mut got = Vec::new();
        read_export(json.as_bytes(), Encoding::Json, 10, &mut |s, span, p| {
            got.push((s.to_string(), span, p));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(got.len(), 3);
        let (service, first, problem) = &got[0];
        assert_eq!((service.as_str(), *problem), ("vllm-a", None));
        assert_eq!(first.trace_id, vec![1; 16]);
        assert_eq!(first.span_id, vec![2; 8]);
        assert_eq!(first.kind, 2);
        assert_eq!(first.start_time_unix_nano, 100_000_000_000);
        let row = map_span(first).unwrap().1;
        assert_eq!((row.total_ms, row.prompt_tokens), (Some(900.0), Some(512)));
        assert_eq!(got[1].1.trace_id, vec![1; 16]);
        assert_eq!(got[1].2, None);
        assert_eq!(
            map_span(&got[1].1).unwrap().1.request_id.as_deref(),
            Some("r2")
        );
        assert_eq!(got[2].2, Some(reason::BAD_ID));
        let bad_kind =
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_NONE"}]}]}]}"#;
        let none = &mut |_: &str, _: Span, _: Option<&'static str>| Ok::<(), ()>(());
        let e = read_export(bad_kind.as_bytes(), Encoding::Json, 10, none).unwrap_err();
        assert!(
            matches!(&e, ReadError::Malformed(m) if m.contains("SPAN_KIND_NONE")),
            "{e:?}"
        );
    }

    #[test]
    fn spans_outside_the_time_range_fall_in_no_window() {
        let now = 1_796_220_000.0;
        let mut sorter = Sorter::new(3600, now, 7.0 * 86_400.0);
        sorter.add("s", vllm_span("past", now - 8.0 * 86_400.0), None);
        sorter.add("s", vllm_span("future", 17_800_000_000.0), None);
        sorter.add("s", vllm_span("soon", now + 200.0), None);
        sorter.add("s", vllm_span("now", now), None);
        let (groups, refused) = sorter.finish();
        assert_eq!(refused[reason::OUT_OF_TIME], 2);
        assert_eq!(groups.iter().map(|g| g.kept.len()).sum::<usize>(), 2);
    }

    #[test]
    fn an_export_opens_a_bounded_number_of_windows() {
        let now = 1_796_220_000.0;
        let mut sorter = Sorter::new(3600, now, 30.0 * 86_400.0);
        for hour in 0..100 {
            sorter.add("s", vllm_span("h", now - 3600.0 * hour as f64), None);
        }
        sorter.add("s", vllm_span("h", now), Some(reason::BAD_ID));
        let (groups, refused) = sorter.finish();
        assert_eq!(groups.len(), MAX_WINDOWS_PER_EXPORT);
        assert_eq!(
            refused[reason::NEW_WINDOW],
            100 - MAX_WINDOWS_PER_EXPORT as u64
        );
        assert_eq!(refused[reason::BAD_ID], 1);
    }
}
