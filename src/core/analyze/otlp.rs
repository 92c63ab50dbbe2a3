//! OpenTelemetry request spans as request-log rows.
//!
//! vLLM (`--otlp-traces-endpoint`) ends every request with one `llm_request` span whose
//! attributes carry the request's latencies in seconds (`gen_ai.latency.*`) and its token
//! counts; SGLang (`--enable-trace`) opens a root span per request (`Req <rid>`, attribute
//! `rid`) spanning its life. Both map to the columns of a request log ([`map_span`]);
//! spans of any other shape (HTTP server spans, SGLang's per-stage slices, …) are counted
//! by reason and left out.
//!
//! The messages are the OpenTelemetry protocol's own (`opentelemetry-proto`, prost for
//! protobuf, its serde mapping for OTLP/JSON). A kept span is stored as one line of OTLP
//! JSON holding only the attributes read here ([`kept_line`]), so a window's file is an
//! OTLP JSON file like the ones the Collector's file exporter writes, and [`for_each_request`]
//! reads both.

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
pub const ANALYZER_VERSION: u32 = 1;

/// The service of spans whose resource names none (the SDKs' own default).
pub const UNKNOWN_SERVICE: &str = "unknown_service";

/// Longest service name kept (longer ones are cut).
const MAX_SERVICE_CHARS: usize = 255;

/// Longest text attribute kept (request ids, model names); longer ones are cut.
const MAX_TEXT_CHARS: usize = 512;

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
    row.request_id = get(id_key).and_then(text);
    row.model_version = get(RESPONSE_MODEL).and_then(text);
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

fn cut(s: &str, max: usize) -> String {
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
        .map(|s| cut(&s, MAX_SERVICE_CHARS))
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

/// Reads an OTLP/HTTP protobuf body.
pub fn decode_protobuf(body: &[u8]) -> Result<ExportTraceServiceRequest, String> {
    ExportTraceServiceRequest::decode(body)
        .map_err(|e| format!("the body is not an OTLP ExportTraceServiceRequest in protobuf: {e}"))
}

/// Reads an OTLP/HTTP JSON body.
pub fn decode_json(body: &[u8]) -> Result<ExportTraceServiceRequest, String> {
    serde_json::from_slice(body).map_err(|e| {
        format!(
            "the body is not an OTLP ExportTraceServiceRequest in JSON: {}",
            super::json_reason(&e)
        ) + &format!(" (line {}, column {})", e.line(), e.column())
    })
}

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

/// Sorts the spans of one export request into (service, window) groups of `window_s`
/// seconds, by each span's start (a span without one falls in the window of `now_s`).
/// Groups come in a stable order (service, then window start).
pub fn split(request: &ExportTraceServiceRequest, window_s: i64, now_s: f64) -> Vec<Group> {
    let window_s = window_s.max(1);
    let mut groups: BTreeMap<(String, i64), Group> = BTreeMap::new();
    for rs in &request.resource_spans {
        let service = service_name(rs.resource.as_ref());
        for ss in &rs.scope_spans {
            for span in &ss.spans {
                let at = if span.start_time_unix_nano > 0 {
                    span.start_time_unix_nano as f64 / 1e9
                } else {
                    now_s
                };
                let start = (at as i64).div_euclid(window_s) * window_s;
                let group = groups
                    .entry((service.clone(), start))
                    .or_insert_with(|| Group {
                        service: service.clone(),
                        window_start: start,
                        ..Group::default()
                    });
                match map_span(span) {
                    Ok((_, row)) => group
                        .kept
                        .push((row.arrival_ts.unwrap_or(at), kept_line(&service, span))),
                    Err(why) => *group.ignored.entry(why).or_default() += 1,
                }
            }
        }
    }
    groups.into_values().collect()
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
    mut cb: impl FnMut(RequestRow) -> Result<(), E>,
) -> Result<u64, E> {
    let input = std::io::BufReader::with_capacity(
        256 << 10,
        decompressing_reader(reader, max_decompressed_bytes),
    );
    let stream =
        serde_json::Deserializer::from_reader(input).into_iter::<ExportTraceServiceRequest>();
    let mut rows = 0u64;
    for (n, doc) in stream.enumerate() {
        let doc = doc.map_err(|e| {
            if e.is_io() {
                AnalyzeError::from(std::io::Error::from(e))
            } else {
                AnalyzeError::Malformed {
                    line: Some(e.line() as u64),
                    byte: None,
                    message: format!(
                        "column {}: document {} is not OTLP JSON ({{\"resourceSpans\": …}}): {}",
                        e.column(),
                        n + 1,
                        super::json_reason(&e)
                    ),
                }
            }
        })?;
        for rs in &doc.resource_spans {
            let service = service_name(rs.resource.as_ref());
            if !counts.services.contains(&service) && counts.services.len() < MAX_SERVICES {
                counts.services.push(service);
            }
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    counts.spans += 1;
                    match map_span(span) {
                        Ok((engine, mut row)) => {
                            counts.requests += 1;
                            let engine = match engine {
                                Engine::Vllm => "vllm",
                                Engine::Sglang => "sglang",
                            };
                            *counts.engines.entry(engine.into()).or_default() += 1;
                            rows += 1;
                            row.line = rows;
                            cb(row)?;
                        }
                        Err(why) => counts.ignore(why),
                    }
                }
            }
        }
    }
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
            acc.add(&row);
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
                        start_time_unix_nano: 7_400_000_000_000,
                        ..Span::default()
                    },
                ],
            )
            .resource_spans,
        );
        let groups = split(&req, 3600, 0.0);
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
        let back = decode_json(line.as_bytes()).unwrap();
        let got = &back.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(got.trace_id, span.trace_id);
        assert_eq!(map_span(got).unwrap().1, map_span(&span).unwrap().1);
        assert_eq!(
            service_name(back.resource_spans[0].resource.as_ref()),
            "vllm-a"
        );
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
        assert_eq!(decode_protobuf(&bytes).unwrap(), req);
        assert!(decode_protobuf(b"\xff\xff\xff").is_err());
        assert!(decode_json(b"{\"resourceSpans\": [").is_err());
    }
}
