"""Sends spans to an OTLP/HTTP endpoint the way a serving engine's OpenTelemetry SDK does.

Usage: otlp_send.py ENDPOINT TOKEN MODE GZIP < spans.json

spans.json is a list of {"service", "name", "start_ns", "end_ns", "attributes"}. The spans
are recorded with the OpenTelemetry SDK (one TracerProvider per service, as each engine
process has one), then sent:

- MODE "exporter": by the SDK's own OTLPSpanExporter (http/protobuf), as vLLM does with
  --otlp-traces-endpoint and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf;
- MODE "protobuf": the SDK's encoding of the same export request, posted as is;
- MODE "json": that request in OTLP/JSON (protobuf's JSON mapping with trace and span
  ids in hex and enums as integers, as the OTLP specification requires);
- MODE "sdk_json": that request as protobuf's JSON printer writes it by default
  (`json_format.MessageToJson`, as Go's `protojson` does too): enums by name
  ("SPAN_KIND_SERVER"), ids in base64, 64-bit integers as strings;
- MODE "dump": that OTLP/JSON printed on one line instead of sent (a file line).

Prints one JSON object: {"result": ...} for the exporter, else {"status", "body",
"response"} with the response decoded.
"""

import base64
import gzip
import json
import sys

import requests
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind


def record(specs):
    finished = []
    by_service = {}
    for spec in specs:
        by_service.setdefault(spec["service"], []).append(spec)
    for service, items in by_service.items():
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracer = provider.get_tracer("vllm.llm_engine")
        for spec in items:
            span = tracer.start_span(
                spec["name"],
                start_time=int(spec["start_ns"]),
                attributes=spec.get("attributes") or {},
                kind=SpanKind.SERVER,
            )
            span.end(end_time=int(spec["end_ns"]))
        finished.extend(memory.get_finished_spans())
        provider.shutdown()
    return finished


def hex_ids(value):
    """protobuf's JSON mapping writes bytes in base64; OTLP/JSON wants ids in hex."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                out[k] = base64.b64decode(v).hex()
            else:
                out[k] = hex_ids(v)
        return out
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value


def main():
    endpoint, token, mode, use_gzip = sys.argv[1:5]
    use_gzip = use_gzip == "gzip"
    spans = record(json.load(sys.stdin))
    headers = {"Authorization": f"Bearer {token}"}
    if mode == "exporter":
        exporter = OTLPSpanExporter(
            endpoint=endpoint,
            headers=headers,
            compression=Compression.Gzip if use_gzip else Compression.NoCompression,
            timeout=30,
        )
        result = exporter.export(spans)
        exporter.shutdown()
        print(json.dumps({"result": result.name}))
        return
    message = encode_spans(spans)
    if mode == "dump":
        # The export request in OTLP/JSON on one line, as the Collector's file exporter
        # writes each batch.
        print(json.dumps(hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))))
        return
    if mode == "sdk_json":
        body = json_format.MessageToJson(message).encode()
        headers["Content-Type"] = "application/json"
    elif mode == "json":
        body = json.dumps(hex_ids(json_format.MessageToDict(message, use_integers_for_enums=True))).encode()
        headers["Content-Type"] = "application/json"
    else:
        body = message.SerializeToString()
        headers["Content-Type"] = "application/x-protobuf"
    if use_gzip:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    r = requests.post(endpoint, data=body, headers=headers, timeout=30)
    out = {"status": r.status_code, "content_type": r.headers.get("Content-Type", "")}
    if out["content_type"].startswith("application/json"):
        out["body"] = r.json()
    else:
        response = ExportTraceServiceResponse()
        try:
            response.ParseFromString(r.content)
            out["response"] = json_format.MessageToDict(response)
        except Exception as e:  # an error body is a Status, not a response
            out["error"] = str(e)
        out["raw_hex"] = r.content.hex()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
